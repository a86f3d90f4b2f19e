#!/usr/bin/env bash
# The clip editor's re-render (issue 29), `make bench-edit`: a fresh node
# (sled, local storage, default settings) processes a real video of
# ../shared/media (BENCH_EDIT_VIDEO, default the 46 s vertical interview,
# preset 30-60), then its longest clip is cut to 30 s in the `single`
# layout (framed from the faces its framing kept) and edited three times with a fixed
# caption word (that framing is reused). Printed: the pipeline's wall time and stage
# seconds (from /metrics), each re-render's wall time from the 202 to
# `ready`, and as the baseline of the same run the bare encode of the same
# source range into the same 1080x1920 H.264/AAC MP4 (ffmpeg: scale/crop,
# no captions, no loudness pass; the median of three) — the ratio is the
# editor's cost over the encode it cannot avoid. The stage counts after
# the edits show nothing was transcribed again.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
BIN="$CARGO_TARGET_DIR/release/clipforge"
VIDEO="${BENCH_EDIT_VIDEO:-../shared/media/vertical-interview-two-people-captions-en.mp4}"
WORK=$(mktemp -d /tmp/clipforge-bench-edit.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

echo "== clip editor: re-render of one clip of $(basename "$VIDEO")"
CLIPFORGE_LIMITS_SIGN_UP_PER_IP=0 RUST_LOG=warn \
  "$BIN" serve --port 0 --config /nonexistent.toml --data-dir "$WORK/data" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
for _ in $(seq 1 100); do
  PORT=$(sed -n 's/^clipforge listening on port //p' "$WORK/server.out" 2>/dev/null || true)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { cat "$WORK/server.err"; echo "server did not start"; exit 1; }

python3 - "http://127.0.0.1:$PORT" "$VIDEO" "$WORK" <<'PY'
import json, re, statistics, subprocess, sys, time, urllib.request

base, video, work = sys.argv[1], sys.argv[2], sys.argv[3]

def call(method, path, token=None, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, json.load(r)

def stage_sums():
    text = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    out = {}
    for kind, stage, v in re.findall(r'clipforge_stage_duration_seconds_(sum|count)\{stage="(\w+)"\} ([0-9.e+-]+)', text):
        out.setdefault(stage, {})[kind] = float(v)
    return out

_, signed = call("POST", "/api/auth/sign-up/email", body={"email": "bench@example.com", "password": "correct horse", "name": "Bench"})
token = signed["token"]
up = json.loads(subprocess.run(["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{video}",
                                base + "/api/upload"], check=True, capture_output=True).stdout)
t0 = time.time()
_, made = call("POST", "/api/projects", token, {"fileKey": up["fileKey"], "title": "Bench", "clipDurationPreset": "30-60"})
pid = made["projectId"]
while True:
    _, p = call("GET", f"/api/projects/{pid}", token)
    if p["project"]["state"] in ("completed", "failed"):
        break
    time.sleep(0.2)
pipeline = time.time() - t0
assert p["project"]["state"] == "completed", p["project"]
before = stage_sums()
clip = max(p["clips"], key=lambda c: c["endSec"] - c["startSec"])
cid, start, end = clip["id"], clip["startSec"], clip["endSec"]
print(f"pipeline: {pipeline:.1f} s wall for {p['project']['durationSec']:.1f} s of video; stage seconds "
      + ", ".join(f"{s} {before[s].get('sum', 0):.1f}" for s in ("download", "transcribe", "cut", "caption") if s in before))
print(f"clip: {end - start:.1f} s ({start:.2f}-{end:.2f}), layout {clip['layout']}")

def edit(body):
    t = time.time()
    s, v = call("PATCH", f"/api/projects/{pid}/clips/{cid}", token, body)
    assert s == 202, (s, v)
    while True:
        _, p = call("GET", f"/api/projects/{pid}", token)
        c = next(c for c in p["clips"] if c["id"] == cid)
        if c["status"] != "rendering":
            assert c["status"] == "ready", c
            return time.time() - t, c
        time.sleep(0.1)

# A 30 s range inside the clip in the single layout (framed from the faces
# the clip's framing kept: nothing decoded for them), then three word fixes
# that reuse that framing.
start, end = start, min(start + 30.0, end)
layout_secs, c = edit({"layout": "single", "startSec": start, "endSec": end})
start, end = c["startSec"], c["endSec"]
renders = []
for i, text in enumerate(["Wordfix", "Fixed", "Again"]):
    secs, c = edit({"words": [{"index": 1 + i, "text": text}]})
    renders.append(secs)
src = f"{work}/source.mp4"
subprocess.run(["cp", video, src], check=True)
bare = []
for _ in range(3):
    t = time.time()
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-ss", f"{start:.3f}", "-t", f"{end - start:.3f}", "-i", src,
                    "-vf", "scale=1080:1920:force_original_aspect_ratio=increase,crop=1080:1920", "-c:v", "libx264",
                    "-preset", "veryfast", "-crf", "21", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-ac", "2",
                    "-ar", "48000", "-movflags", "+faststart", f"{work}/bare.mp4"], check=True)
    bare.append(time.time() - t)
after = stage_sums()
b, r = statistics.median(bare), statistics.median(renders)
print(f"re-render, a word fixed (framing reused): {', '.join(f'{x:.2f}' for x in renders)} s; median {r:.2f} s")
print(f"re-render of {end - start:.1f} s ({start:.2f}-{end:.2f}) as single, framed from the kept faces: {layout_secs:.2f} s")
print(f"bare encode of the same range (baseline): {', '.join(f'{x:.2f}' for x in bare)} s; median {b:.2f} s")
print(f"ratio re-render / bare encode: {r / b:.2f} (target <= 1.15); the range and layout change {layout_secs / b:.2f}")
print(f"re-render / whole pipeline: {r / pipeline:.2f}")
for s in ("transcribe", "cut", "caption"):
    n0, n1 = before.get(s, {}).get("count", 0), after.get(s, {}).get("count", 0)
    print(f"  {s} runs: {n0:.0f} before the edits, {n1:.0f} after")
    assert n0 == n1, f"the edits ran the {s} stage again"
PY
