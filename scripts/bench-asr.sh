#!/usr/bin/env bash
# make bench-asr: our transcription (`clipforge transcribe`) against
# faster-whisper 1.2.1's BatchedInferencePipeline (batch 8, word timestamps,
# same model, compute type int8 and threads) on every file of
# ../shared/media/manifest.json and on the 10-minute espeak talk of
# bench-pipeline. Per file: the language each found and the manifest's,
# seconds, and the words each lost against the other (neither is ground
# truth); then totals and the ratios. BENCH_ASR_TALK=0 skips the talk;
# BENCH_ASR_MEDIA: another folder with a manifest.json.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
THREADS="${BENCH_THREADS:-$(nproc)}"
MODEL_DIR="${CLIPFORGE_MODEL_DIR:-${CLIPFORGE_CACHE_DIR:-$HOME/.cache/clipforge}/models/whisper-base}"
BIN="$CARGO_TARGET_DIR/release/clipforge"
MEDIA="${BENCH_ASR_MEDIA:-$(cd .. && pwd)/shared/media}"

[ "${BENCH_BUILD:-1}" = 0 ] || cargo build --release --locked --bin clipforge >/dev/null
python3 -c 'import faster_whisper' 2>/dev/null || python3 -m pip install -q "faster-whisper==1.2.1"

WORK=$(mktemp -d /tmp/clipforge-bench-asr.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
python3 - "$MEDIA/manifest.json" "$MEDIA" > "$WORK/files.tsv" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    print(f"{sys.argv[2]}/{e['file']}\t{e['language'].split()[0]}")
PY
if [ "${BENCH_ASR_TALK:-1}" != 0 ]; then
  python3 scripts/bench/talk_text.py > "$WORK/talk.txt"
  espeak-ng -v en-us -s 150 -g 4 -f "$WORK/talk.txt" -w "$WORK/talk.wav"
  printf '%s\t%s\n' "$WORK/talk.wav" en >> "$WORK/files.tsv"
fi

echo "== clipforge transcribe ($THREADS threads, int8, batch 8)"
while IFS=$'\t' read -r file lang; do
  name=$(basename "$file")
  "$BIN" transcribe "$file" --threads "$THREADS" --compute-type int8 --batch-size 8 \
    > "$WORK/$name.ours.json" 2> "$WORK/$name.ours.log" \
    || { cat "$WORK/$name.ours.log"; exit 1; }
  echo "  $name"
done < "$WORK/files.tsv"

echo "== faster-whisper BatchedInferencePipeline ($THREADS threads, int8, batch 8)"
python3 - "$MODEL_DIR" "$THREADS" "$WORK" "$WORK/files.tsv" <<'PY'
import json, os, sys, time
from faster_whisper import WhisperModel, BatchedInferencePipeline
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=int(sys.argv[2]))
pipe = BatchedInferencePipeline(model=model)
for line in open(sys.argv[4]):
    path, _ = line.rstrip("\n").split("\t")
    t = time.perf_counter()
    segments, info = pipe.transcribe(path, batch_size=8, word_timestamps=True)
    words = [{"text": w.word, "start": w.start, "end": w.end}
             for s in segments for w in (s.words or [])]
    out = {"language": info.language, "languageProbability": info.language_probability,
           "seconds": time.perf_counter() - t, "words": words}
    json.dump(out, open(os.path.join(sys.argv[3], os.path.basename(path) + ".fw.json"), "w"))
    print("  " + os.path.basename(path), flush=True)
PY

echo
python3 scripts/bench/asr_compare.py "$WORK" < "$WORK/files.tsv"
