#!/usr/bin/env bash
# Part of make bench-api (also runs alone): the limits under load, on a
# fresh node of its own (127.0.0.1 only).
# (b runs first: the flood leaves the address rate-limited.)
#   a. a sign-in flood from one address (wrong passwords, 8 connections)
#      while another user reads GET /api/projects (2 connections): that
#      user's p99 with and without the flood (target < 50 ms);
#   b. 10 concurrent 1 GiB chunked bodies (no Content-Length) to sign-in and
#      10 to upload: the server's RSS growth (target < 100 MB);
#   c. 10 concurrent avatar uploads of a 4096x4096 16-bit RGBA PNG (about
#      130 KB that decodes to 128 MiB), one per account: the server's RSS
#      growth (target < 100 MB).
# BENCH_SECS (default 10) and BENCH_UPLOAD_MB (the free plan's upload limit
# on this node, default 100) change the sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
SECS="${BENCH_SECS:-10}"
UPLOAD_MB="${BENCH_UPLOAD_MB:-100}"
BIN="$CARGO_TARGET_DIR/release/clipforge"
[ -x "$BIN" ] || cargo build --release --locked --workspace --bins >/dev/null
command -v wrk >/dev/null || {
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y -q wrk >/dev/null
}

WORK=$(mktemp -d /tmp/clipforge-bench-hardening.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

echo "== hardening: a fresh node (free plan upload limit $UPLOAD_MB MB)"
CLIPFORGE_PLANS_FREE_UPLOAD_MAX_MB=$UPLOAD_MB RUST_LOG=error "$BIN" serve --port 0 \
  --config /nonexistent.toml --data-dir "$WORK/data" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
for _ in $(seq 1 100); do
  # The server may not have created its output file yet (a loaded machine).
  PORT=$(sed -n 's/^clipforge listening on port //p' "$WORK/server.out" 2>/dev/null || true)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { cat "$WORK/server.err"; echo "server did not start"; exit 1; }
BASE="http://127.0.0.1:$PORT"
sign_up() {
  curl -fsS -H 'content-type: application/json' \
    -d "{\"email\":\"$1\",\"password\":\"correct horse\",\"name\":\"B\"}" \
    "$BASE/api/auth/sign-up/email" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
READER=$(sign_up reader@example.com)
UPLOADER=$(sign_up uploader@example.com)

rss_mb() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$SERVER/status"; }
p99() {
  python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", t)
rps = re.search(r"Requests/sec:\s+([\d.]+)", t).group(1)
print(f"{float(m.group(1)) * {'us': 0.001, 'ms': 1, 's': 1000}[m.group(2)]:.2f} {float(rps):.0f}")
PY
}
echo "== b. 10 + 10 concurrent 1 GiB chunked bodies to sign-in and upload"
python3 - "$PORT" "$SERVER" "$UPLOADER" <<'PY'
import asyncio, sys, threading, time
port, pid, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
GIB, CHUNK = 1 << 30, 1 << 20
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
base = rss(); peak = [base]; stop = False
def sample():
    while not stop:
        peak[0] = max(peak[0], rss()); time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
async def one(path, headers, prefix):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    head = f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    w.write(head.encode())
    sent, answer = 0, None
    async def read():
        nonlocal answer
        answer = (await r.readline()).decode().strip()
    reader = asyncio.ensure_future(read())
    data = b" " * CHUNK
    frame = f"{CHUNK:x}\r\n".encode() + data + b"\r\n"
    try:
        w.write(f"{len(prefix):x}\r\n".encode() + prefix + b"\r\n")
        while sent < GIB and not reader.done():
            w.write(frame); await w.drain(); sent += CHUNK
        if not reader.done():
            w.write(b"0\r\n\r\n"); await w.drain()
    except (ConnectionError, OSError):
        pass
    try:
        await asyncio.wait_for(reader, 30)
    except Exception:
        pass
    w.close()
    return answer, sent
async def main():
    sign = [one("/api/auth/sign-in/email", [("content-type", "application/json")], b'{"email":"a@b.c","password":"') for _ in range(10)]
    mp = b'--B\r\ncontent-disposition: form-data; name="file"; filename="v.mp4"\r\ncontent-type: video/mp4\r\n\r\n'
    up = [one("/api/upload", [("content-type", "multipart/form-data; boundary=B"), ("authorization", f"Bearer {token}")], mp) for _ in range(10)]
    return await asyncio.gather(*sign, *up)
start = time.time()
results = asyncio.run(main())
time.sleep(1); stop = True
for name, rs in (("sign-in", results[:10]), ("upload", results[10:])):
    answers = sorted(set(a for a, _ in rs))
    mb = sum(s for _, s in rs) / len(rs) / (1 << 20)
    print(f"   {name}: answers {answers}; a client had sent {mb:.0f} MiB on average when answered or cut off")
g = peak[0] - base
print(f"   RSS before {base:.1f} MB, peak {peak[0]:.1f} MB: growth {g:.1f} MB in {time.time() - start:.1f} s (target < 100 MB: {'met' if g < 100 else 'NOT met'})")
PY
echo "== c. 10 concurrent 4096x4096 16-bit RGBA PNG avatar uploads"
AVATAR_TOKENS=$(for i in $(seq 1 10); do sign_up "avatar$i@example.com"; done | tr '\n' ' ')
python3 - "$PORT" "$SERVER" "$WORK/deep.png" $AVATAR_TOKENS <<'PY'
import struct, sys, threading, time, urllib.request, zlib
from concurrent.futures import ThreadPoolExecutor
port, pid, png_path, tokens = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
z, row, idat = zlib.compressobj(9), b"\0" + b"\0" * (4096 * 8), b""
for _ in range(4096):
    idat += z.compress(row)
idat += z.flush()
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4096, 4096, 16, 6, 0, 0, 0)) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
base = rss(); peak = [base]; stop = False
def sample():
    while not stop:
        peak[0] = max(peak[0], rss()); time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
def put(token):
    body = (b'--B\r\ncontent-disposition: form-data; name="file"; filename="deep.png"\r\ncontent-type: image/png\r\n\r\n' + png + b"\r\n--B--\r\n")
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/auth/avatar", data=body, method="PUT",
        headers={"content-type": "multipart/form-data; boundary=B", "authorization": f"Bearer {token}"})
    try:
        return urllib.request.urlopen(req, timeout=120).status
    except urllib.error.HTTPError as e:
        return e.code
start = time.time()
with ThreadPoolExecutor(10) as pool:
    statuses = list(pool.map(put, tokens))
time.sleep(0.5); stop = True
g = peak[0] - base
print(f"   {len(png) // 1024} KB PNG; answers {sorted(set(statuses))}")
print(f"   RSS before {base:.1f} MB, peak {peak[0]:.1f} MB: growth {g:.1f} MB in {time.time() - start:.1f} s (target < 100 MB: {'met' if g < 100 else 'NOT met'})")
PY
echo "== a. sign-in flood from one address, another user reading /api/projects ($SECS s)"
wrk -t1 -c2 -d"${SECS}s" --latency -H "Authorization: Bearer $READER" "$BASE/api/projects" >"$WORK/quiet.out"
read -r QUIET_P99 QUIET_RPS < <(p99 "$WORK/quiet.out")
cat >"$WORK/flood.lua" <<'LUA'
local i = 0
request = function()
  i = i + 1
  local body = string.format('{"email":"victim%d@example.com","password":"wrong guess"}', i % 50)
  return wrk.format("POST", "/api/auth/sign-in/email", { ["Content-Type"] = "application/json" }, body)
end
LUA
RSS_BEFORE_FLOOD=$(rss_mb)
wrk -t1 -c8 -d"$((SECS + 2))s" -s "$WORK/flood.lua" "$BASE" >"$WORK/flood.out" &
FLOOD=$!
sleep 1
wrk -t1 -c2 -d"${SECS}s" --latency -H "Authorization: Bearer $READER" "$BASE/api/projects" >"$WORK/loud.out"
wait $FLOOD || true
read -r LOUD_P99 LOUD_RPS < <(p99 "$WORK/loud.out")
python3 - "$WORK/flood.out" "$QUIET_P99" "$QUIET_RPS" "$LOUD_P99" "$LOUD_RPS" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
total = int(re.search(r"(\d+) requests in", t).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", t)
limited = int(non2xx.group(1)) if non2xx else 0
qp, qr, lp, lr = map(float, sys.argv[2:])
print(f"   flood: {total} sign-in requests, {limited} refused (401 wrong password / 429 limited)")
print(f"   reader without flood: p99 {qp:.2f} ms, {qr:.0f} req/s")
print(f"   reader during flood:  p99 {lp:.2f} ms, {lr:.0f} req/s (target p99 < 50 ms: {'met' if lp < 50 else 'NOT met'})")
PY
echo "   RSS before the flood $RSS_BEFORE_FLOOD MB, after $(rss_mb) MB (the few sign-ins let through each verify an argon2id hash of 19 MiB on a blocking thread)"
curl -sS -o /dev/null -w '   a sign-in from the flooding address now: HTTP %{http_code}\n' \
  -H 'content-type: application/json' -d '{"email":"reader@example.com","password":"correct horse"}' \
  "$BASE/api/auth/sign-in/email"

curl -fsS -o /dev/null -w '   the server still answers: HTTP %{http_code}\n' "$BASE/healthz"
