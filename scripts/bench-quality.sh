#!/usr/bin/env bash
# make bench-quality: clip quality on real footage (issue 28). Runs
# `clipforge clip` on every file of ../shared/media/manifest.json with the
# defaults, with `--layout speaker` (and `--layout speaker --preset 15-30`)
# on the two-person files and with
# `--aspect 1:1` on one landscape file (the split-screen debate), and prints
# per file and per clip: layout and reason, speaker switches, face kept
# (OpenCV frontal Haar on the clip and the same source instants, 2 samples
# a second), caption/face overlaps, boundary checks (sentence start and end,
# no cut inside a word, trailing breath, audio RMS at each cut), title and
# its length, and the run's wall time against bare encodes of its clips;
# then the issue's targets, PASS/MISS with the figures.
#
# Caption area: the ASS route. The hidden `--replay-dir` keeps each clip's
# own captions file (clip-N.ass, the document the engine burned in); it is
# rendered alone with libass (ffmpeg's ass filter, watermark dropped) on a
# flat grey frame of the clip's size at the sample instants, and the
# non-grey pixels are the caption boxes. Faces (OpenCV frontal Haar, two
# cascades that must agree) are looked for in the clip frame with those
# caption pixels inpainted, so text neither poses as a face nor hides one.
# Details in scripts/bench/quality.py (frames, faces and caption boxes in
# scripts/bench/quality_frames.py).
#
# Pictures of the first 3 face-lost and 3 overlap samples of each clip
# (source | clip, faces green, captions red) go to
# $CARGO_TARGET_DIR/bench-quality/frames/<label>/ (BENCH_QUALITY_LABEL,
# default "latest"; emptied first).
#   CLIPFORGE_BIN=path      the binary to measure (no build then)
#   BENCH_BUILD=0           do not build the default binary first
#   BENCH_QUALITY_ONLY=str  only the corpus files whose name contains str
#   BENCH_QUALITY_SQUARE=f  the landscape file run with --aspect 1:1
#   BENCH_QUALITY_KEEP=1    keep the clip outputs (their folder is printed)
#   BENCH_QUALITY_REUSE=dir measure the kept outputs of an earlier run again
#   BENCH_QUALITY_STRICT=1  exit 1 when a target is missed
#   BENCH_QUALITY_FACE_KEPT the face-kept target (default 0.95)
#   BENCH_QUALITY_MEDIA=dir another corpus folder with a manifest.json
# Python (opencv-python-headless<5, numpy) lives in a venv of its own,
# $CARGO_TARGET_DIR/bench-quality/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
BIN="${CLIPFORGE_BIN:-$CARGO_TARGET_DIR/release/clipforge}"
MEDIA="${BENCH_QUALITY_MEDIA:-../shared/media}"
OUT="$CARGO_TARGET_DIR/bench-quality"
VENV="$OUT/venv"
FRAMES="$OUT/frames/${BENCH_QUALITY_LABEL:-latest}"

if [ -z "${CLIPFORGE_BIN:-}" ] && [ "${BENCH_BUILD:-1}" != 0 ]; then
  cargo build --release --locked --bin clipforge >/dev/null
fi
[ -x "$BIN" ] || { echo "no clipforge binary at $BIN (make build, or CLIPFORGE_BIN=...)" >&2; exit 1; }
[ -f "$MEDIA/manifest.json" ] || { echo "no corpus at $MEDIA (manifest.json)" >&2; exit 1; }

if ! "$VENV/bin/python" -c 'import cv2, numpy' 2>/dev/null; then
  mkdir -p "$OUT"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q "opencv-python-headless<5" numpy
fi

if [ -n "${BENCH_QUALITY_REUSE:-}" ]; then
  WORK="$BENCH_QUALITY_REUSE"
else
  WORK=$(mktemp -d /tmp/clipforge-bench-quality.XXXXXX)
  if [ "${BENCH_QUALITY_KEEP:-0}" = 1 ]; then
    echo "clip outputs: $WORK"
  else
    trap 'rm -rf "$WORK"' EXIT
  fi
fi

"$VENV/bin/python" scripts/bench/quality.py --bin "$BIN" --media "$MEDIA" --work "$WORK" \
  --frames "$FRAMES" --only "${BENCH_QUALITY_ONLY:-}" --square "${BENCH_QUALITY_SQUARE:-debate-split-screen-crosstalk-en.mp4}"
