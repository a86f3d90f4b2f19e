#!/usr/bin/env bash
# Webhook delivery (issue 31), part of `make bench-api`: a fresh node with
# one webhook pointing at a local receiver (Python, 127.0.0.1) gets 1,000
# `webhook.test` events (POST /api/webhooks/:id/test, 8 clients); printed:
# events/s from the first event written to the last received, the
# delivery latency (event createdAt → received) p50/p99, and as the
# baseline of the same run the receiver's own rate for 1,000 direct POSTs
# of the same body size from 8 clients (the ratio says how much of the
# receiver's capacity delivery uses). BENCH_EVENTS changes the count.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
BIN="$CARGO_TARGET_DIR/release/clipforge"
EVENTS="${BENCH_EVENTS:-1000}"
WORK=$(mktemp -d /tmp/clipforge-bench-webhooks.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

echo "== webhooks: $EVENTS events to a local receiver"
CLIPFORGE_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true CLIPFORGE_LIMITS_SIGN_UP_PER_IP=0 RUST_LOG=warn \
  "$BIN" serve --port 0 --config /nonexistent.toml --data-dir "$WORK/data" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
for _ in $(seq 1 100); do
  PORT=$(sed -n 's/^clipforge listening on port //p' "$WORK/server.out" 2>/dev/null || true)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { cat "$WORK/server.err"; echo "server did not start"; exit 1; }

python3 - "http://127.0.0.1:$PORT" "$EVENTS" <<'PY'
import datetime as dt, http.server, json, sys, threading, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

base, n = sys.argv[1], int(sys.argv[2])
got, lock = [], threading.Lock()

class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        now = time.time()
        with lock:
            got.append((now, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{srv.server_address[1]}/hook"

def call(method, path, token=None, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)

token = call("POST", "/api/auth/sign-up/email", body={"email": "bench@example.com", "password": "correct horse", "name": "B"})["token"]
hook = call("POST", "/api/webhooks", token, {"url": url, "events": ["project.completed"]})["id"]

# Baseline: the receiver's own rate for direct POSTs of an event's size.
sample = json.dumps({"id": "0" * 36, "type": "webhook.test", "createdAt": "2026-01-01T00:00:00.000Z",
                     "data": {"webhookId": hook, "message": "A test event from Clipforge."}}).encode()
def direct(_):
    req = urllib.request.Request(url, data=sample, method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).read()
t0 = time.time()
with ThreadPoolExecutor(8) as ex:
    list(ex.map(direct, range(n)))
base_rate = n / (time.time() - t0)
with lock:
    got.clear()

t0 = time.time()
with ThreadPoolExecutor(8) as ex:
    list(ex.map(lambda _: call("POST", f"/api/webhooks/{hook}/test", token, {}), range(n)))
written = time.time() - t0
deadline = time.time() + 300
while True:
    with lock:
        k = len(got)
    if k >= n or time.time() > deadline:
        break
    time.sleep(0.05)
with lock:
    hits = list(got)
ids = {json.loads(b)["id"] for _, b in hits}
lat = sorted(t - dt.datetime.fromisoformat(json.loads(b)["createdAt"].replace("Z", "+00:00")).timestamp() for t, b in hits)
span = max(t for t, _ in hits) - t0
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
rate = len(hits) / span
print(f"   {len(hits)} received, {len(ids)} distinct events (of {n}); written in {written:.1f} s ({n / written:.0f} events/s)")
print(f"   delivered: {rate:.0f} events/s (first written to last received); latency p50 {pct(0.5):.0f} ms, p99 {pct(0.99):.0f} ms")
print(f"   receiver baseline (direct POSTs, 8 clients): {base_rate:.0f} req/s; delivery rate / baseline: {rate / base_rate:.3f}")
if len(ids) != n:
    sys.exit(f"lost events: {n - len(ids)}")
PY
