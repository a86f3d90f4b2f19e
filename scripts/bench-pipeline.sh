#!/usr/bin/env bash
# make bench-pipeline: a 10-minute 1280x720 talking video through the whole
# pipeline, with per-stage wall times, peak RSS and two ratios measured side
# by side in this run:
#   1. our transcription ÷ faster-whisper's BatchedInferencePipeline
#      (batch 8, word timestamps, int8, same model, audio and threads);
#   2. whole pipeline ÷ the bare tool runs it needs (ffmpeg audio
#      extraction + the Whisper model time + the same clip encodes replayed).
# Then the same ratio per layout (single, split, speaker, screen, fit) on a
# BENCH_LAYOUT_SECS (default 60) two-person video made from the face photo,
# one clip each, BENCH_LAYOUT_RUNS times (default 3, median printed): what
# the face analysis and the layout graphs add.
# Then a 60-minute input for peak RSS. BENCH_LONG=0 skips that part.
# BENCH_ONLY_LAYOUTS=1 runs only the per-layout part (BENCH_LAYOUTS: which
# ones, default all five), printing each run's stage times too.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
THREADS="${BENCH_THREADS:-$(nproc)}"
MODEL_DIR="${CLIPFORGE_MODEL_DIR:-${CLIPFORGE_CACHE_DIR:-$HOME/.cache/clipforge}/models/whisper-base}"
BIN="$CARGO_TARGET_DIR/release/clipforge"

# BENCH_BUILD=0: use the binary already in $CARGO_TARGET_DIR.
[ "${BENCH_BUILD:-1}" = 0 ] || cargo build --release --locked --bin clipforge >/dev/null
python3 -c 'import faster_whisper' 2>/dev/null || python3 -m pip install -q faster-whisper

WORK=$(mktemp -d /tmp/clipforge-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

echo "== making a 10-minute 1280x720 talking video"
python3 scripts/bench/talk_text.py > "$WORK/talk.txt"
espeak-ng -v en-us -s 150 -g 4 -f "$WORK/talk.txt" -w "$WORK/talk.wav"
if [ "${BENCH_ONLY_LAYOUTS:-0}" != 1 ]; then
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=s=1280x720:r=25" -i "$WORK/talk.wav" \
  -af apad -t 600 -c:v libx264 -preset ultrafast -g 250 -pix_fmt yuv420p -c:a aac -b:a 128k "$WORK/talk.mp4"

echo "== clipforge clip (threads $THREADS)"
mkdir -p "$WORK/replay"
t0=$(now)
"$BIN" clip "$WORK/talk.mp4" --out "$WORK/out" --json --replay-dir "$WORK/replay" \
  --threads "$THREADS" --compute-type int8 --batch-size 8 > "$WORK/summary.json" 2> "$WORK/clip.log" \
  || { cat "$WORK/clip.log"; exit 1; }
t1=$(now)
PIPELINE=$(elapsed "$t0" "$t1")

echo "== bare tool runs"
t0=$(now)
ffmpeg -nostdin -v error -i "$WORK/talk.mp4" -vn -ac 1 -ar 16000 -f f32le -y /dev/null
t1=$(now)
EXTRACT=$(elapsed "$t0" "$t1")
t0=$(now)
python3 - "$WORK/replay/commands.jsonl" "$WORK/talk.mp4" <<'PY'
import json, re, subprocess, sys
# `clipforge clip` links the input into a scratch work folder (removed when
# it ends) as source.<ext>: the replay reads the same file from its place.
for line in open(sys.argv[1]):
    args = [sys.argv[2] if re.search(r"/clipforge-work-[^/]+/source\.[^/]+$", a) else a
            for a in json.loads(line)]
    subprocess.run(["ffmpeg"] + args, check=True, stdout=subprocess.DEVNULL)
PY
t1=$(now)
ENCODE=$(elapsed "$t0" "$t1")

echo "== faster-whisper BatchedInferencePipeline (batch 8, int8, word timestamps, $THREADS threads)"
FW=$(python3 - "$MODEL_DIR" "$WORK/talk.mp4" "$THREADS" <<'PY'
import sys, time
from faster_whisper import WhisperModel, BatchedInferencePipeline
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=int(sys.argv[3]))
pipe = BatchedInferencePipeline(model=model)
t = time.perf_counter()
segments, info = pipe.transcribe(sys.argv[2], batch_size=8, word_timestamps=True)
words = sum(len(s.words or []) for s in segments)
print(f"{time.perf_counter() - t:.2f} {words}")
PY
)
FW_SECS=${FW% *}
FW_WORDS=${FW#* }

python3 - "$WORK/summary.json" "$PIPELINE" "$EXTRACT" "$ENCODE" "$FW_SECS" "$FW_WORDS" "$WORK/out/transcript.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
pipeline, extract, encode, fw, fw_words = map(float, sys.argv[2:7])
ours_words = len(json.load(open(sys.argv[7]))["words"])
st = s["stageSeconds"]
print()
print("stage wall times (s):")
for k in ("download", "transcribe", "cut", "caption"):
    print(f"  {k:<11} {st[k]:8.2f}")
print(f"  {'model':<11} {st['transcribeModel']:8.2f}   (inside transcribe)")
print(f"  {'total':<11} {pipeline:8.2f}   clips: {s['clips']}")
print(f"peak RSS (clipforge process): {s['peakRssMb']:.0f} MB")
print()
print(f"transcription: clipforge {st['transcribe']:.2f} s ({ours_words} words) vs faster-whisper {fw:.2f} s ({fw_words:.0f} words)")
print(f"  ratio (target <= 1.0): {st['transcribe'] / fw:.3f}")
bare = extract + st["transcribeModel"] + encode
print(f"bare tools: audio extraction {extract:.2f} + model {st['transcribeModel']:.2f} + encodes {encode:.2f} = {bare:.2f} s")
print(f"  pipeline / bare (target <= 1.15): {pipeline / bare:.3f}")
PY
fi

echo
echo "== per layout: pipeline / bare tools (${BENCH_LAYOUT_SECS:-60} s two-person video, one clip each)"
LSECS="${BENCH_LAYOUT_SECS:-60}"
PHOTO="${CLIPFORGE_CACHE_DIR:-$HOME/.cache/clipforge}/testdata/astronaut.png"
# Two people side by side, the voice on the left channel for 6 s, then on
# the right for 6 s, and so on.
ffmpeg -nostdin -v error -y -i "$WORK/talk.wav" -t "$LSECS" -ar 22050 -ac 1 "$WORK/voice.wav"
ffmpeg -nostdin -v error -y -f lavfi -i "color=c=0x202020:s=1280x720:r=25:d=$LSECS" \
  -loop 1 -i "$PHOTO" -i "$WORK/voice.wav" -filter_complex \
  "[1:v]scale=520:520,split=2[p1][p2];[0:v][p1]overlay=50:100:shortest=1[l];[l][p2]overlay=710:100[vout];\
[2:a]asplit=2[a1][a2];[a1]volume='if(lt(mod(t,12),6),1,0.1)':eval=frame[left];\
[a2]volume='if(lt(mod(t,12),6),0.1,1)':eval=frame[right];[left][right]join=inputs=2:channel_layout=stereo[aout]" \
  -map "[vout]" -map "[aout]" -t "$LSECS" -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac "$WORK/two.mp4"
t0=$(now)
ffmpeg -nostdin -v error -i "$WORK/two.mp4" -vn -ac 1 -ar 16000 -f f32le -y /dev/null
t1=$(now)
LEXTRACT=$(elapsed "$t0" "$t1")
# Each layout BENCH_LAYOUT_RUNS times (default 3), the pipeline and its
# bare replay one after the other, so a moment of load weighs on both; the
# median ratio is the figure (one 20 s run moves by about ±0.1).
RUNS="${BENCH_LAYOUT_RUNS:-3}"
for layout in ${BENCH_LAYOUTS:-single split speaker screen fit}; do
  : > "$WORK/lratios"
  for run in $(seq "$RUNS"); do
    rm -rf "$WORK/lreplay" "$WORK/lout"; mkdir -p "$WORK/lreplay"
    t0=$(now)
    "$BIN" clip "$WORK/two.mp4" --out "$WORK/lout" --json --skip-cuts --layout "$layout" \
      --replay-dir "$WORK/lreplay" --threads "$THREADS" --compute-type int8 --batch-size 8 \
      > "$WORK/lsummary.json" 2> "$WORK/lclip.log" || { cat "$WORK/lclip.log"; exit 1; }
    t1=$(now)
    LPIPE=$(elapsed "$t0" "$t1")
    t0=$(now)
    python3 -c 'import json, re, subprocess, sys
for line in open(sys.argv[1]):
    args = [sys.argv[2] if re.search(r"/clipforge-work-[^/]+/source\.[^/]+$", a) else a
            for a in json.loads(line)]
    subprocess.run(["ffmpeg"] + args, check=True, stdout=subprocess.DEVNULL)' "$WORK/lreplay/commands.jsonl" "$WORK/two.mp4"
    t1=$(now)
    LENC=$(elapsed "$t0" "$t1")
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
layout, run = sys.argv[2], sys.argv[7]
pipe, extract, enc = map(float, sys.argv[3:6])
bare = extract + s["stageSeconds"]["transcribeModel"] + enc
used = ",".join(s["layouts"])
print(f"  {layout:<8} run {run}: pipeline {pipe:7.2f} s, bare {bare:7.2f} s (encode {enc:.2f}), ratio {pipe / bare:.3f}  [used: {used}]")
open(sys.argv[8], "a").write(f"{pipe / bare}\n")
if sys.argv[6] == "1":
    st = s["stageSeconds"]
    print("           stages: " + ", ".join(f"{k} {v:.2f}" for k, v in st.items() if isinstance(v, (int, float))))
    total = s["totalSeconds"]
    print(f"           in the clip command (model load included): {total:.2f}")' \
      "$WORK/lsummary.json" "$layout" "$LPIPE" "$LEXTRACT" "$LENC" "${BENCH_ONLY_LAYOUTS:-0}" "$run" "$WORK/lratios"
  done
  python3 -c 'import statistics, sys
r = sorted(float(x) for x in open(sys.argv[1]))
runs = ", ".join("%.3f" % x for x in r)
print(f"  {sys.argv[2]:<8} median of {len(r)}: ratio (target <= 1.15): {statistics.median(r):.3f}  (runs: {runs})")' \
    "$WORK/lratios" "$layout"
done

if [ "${BENCH_LONG:-1}" != 0 ] && [ "${BENCH_ONLY_LAYOUTS:-0}" != 1 ]; then
  echo
  echo "== 60-minute input: peak RSS"
  ffmpeg -nostdin -v error -y -stream_loop 5 -i "$WORK/talk.mp4" -c copy "$WORK/long.mp4"
  rm -rf "$WORK/replay" "$WORK/out"
  "$BIN" clip "$WORK/long.mp4" --out "$WORK/long-out" --json --max-clips 2 --threads "$THREADS" \
    > "$WORK/long.json" 2> "$WORK/long.log" || { cat "$WORK/long.log"; exit 1; }
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"60-minute input: {s['totalSeconds']:.0f} s, transcribe {s['stageSeconds']['transcribe']:.0f} s, peak RSS {s['peakRssMb']:.0f} MB (target < 1536 MB)\")" "$WORK/long.json"
fi
