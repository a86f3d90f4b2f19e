#!/usr/bin/env bash
# make bench-api: HTTP throughput and idle memory of one node, measured in
# this run against a baseline in the same binary:
#   1. wrk on authenticated GET /api/projects (an account with 1,000
#      projects) and GET /api/credits, and on the bare /healthz route (same
#      middleware, no auth, no storage); requests/s, p99 and the ratio to the
#      bare route (target >= 0.5); GET /api/credits with an API key of the
#      same account (the key gate: lookup, scope, the key's rate — turned
#      off here so wrk is not answered 429; target >= 0.7);
#   2. 100,000 accounts each touched once (one actor activated per account),
#      then left idle: RSS after passivation (target < 500 MB);
#   3. scripts/bench-hardening.sh on a fresh node: a reader's p99 during a
#      sign-in flood from one address (target < 50 ms), and RSS growth under
#      20 concurrent 1 GiB chunked bodies to sign-in and upload (< 100 MB);
#   4. scripts/bench-webhooks.sh on a fresh node: 1,000 webhook events to a
#      local receiver (events/s, delivery latency p50/p99, against the
#      receiver's own rate).
# BENCH_ACCOUNTS, BENCH_PROJECTS, BENCH_SECS, BENCH_CONNS change the sizes;
# BENCH_BUILD=0 measures the binary already in $CARGO_TARGET_DIR/release
# (e.g. the one `cargo test --release --workspace --no-run` built) instead
# of building the binaries first.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
ACCOUNTS="${BENCH_ACCOUNTS:-100000}"
PROJECTS="${BENCH_PROJECTS:-1000}"
SECS="${BENCH_SECS:-10}"
CONNS="${BENCH_CONNS:-32}"
BIN="$CARGO_TARGET_DIR/release/clipforge"

command -v wrk >/dev/null || {
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y -q wrk >/dev/null
}
[ "${BENCH_BUILD:-1}" = 0 ] || cargo build --release --locked --workspace --bins >/dev/null
[ -x "$BIN" ] || { echo "no binary at $BIN"; exit 1; }

WORK=$(mktemp -d /tmp/clipforge-bench-api.XXXXXX)
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

echo "== seeding $ACCOUNTS accounts, $PROJECTS projects on the first"
START=$(date +%s.%N)
"$BIN" bench-seed --data-dir "$WORK/data" --accounts "$ACCOUNTS" --projects "$PROJECTS" --tokens "$WORK/tokens.txt"
python3 -c "print(f'   seeded in {$(date +%s.%N) - $START:.1f} s')"
TOKEN=$(head -1 "$WORK/tokens.txt")

echo "== starting the server (idle actors passivated after 5 s)"
CLIPFORGE_PIPELINE_IDLE_SECS=5 CLIPFORGE_LIMITS_API_KEY_PER_MINUTE=0 RUST_LOG=warn "$BIN" serve --port 0 --config /nonexistent.toml \
  --data-dir "$WORK/data" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER=$!
for _ in $(seq 1 100); do
  # The server may not have created its output file yet (a loaded machine).
  PORT=$(sed -n 's/^clipforge listening on port //p' "$WORK/server.out" 2>/dev/null || true)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { cat "$WORK/server.err"; echo "server did not start"; exit 1; }
BASE="http://127.0.0.1:$PORT"
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$SERVER/status"; }
echo "   listening on $BASE, RSS $(rss_mb) MB"

# wrk, then "requests/s p99-ms" from its --latency report.
run_wrk() {
  local path=$1; shift
  wrk -t2 -c"$CONNS" -d"${SECS}s" --latency "$@" "$BASE$path" >"$WORK/wrk.out"
  python3 - "$WORK/wrk.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", t)
p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", t)
if non2xx:
    sys.exit(f"{non2xx.group(1)} requests failed:\n{t}")
print(f"{rps:.0f} {p99:.2f}")
PY
}

curl -fsS -H "Authorization: Bearer $TOKEN" "$BASE/api/projects?limit=1" | python3 -c \
  "import json,sys; v=json.load(sys.stdin); assert v['total']==$PROJECTS, v['total']; print('   the account lists', v['total'], 'projects')"
KEY=$(curl -fsS -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d '{"name": "bench", "scopes": ["read"]}' "$BASE/api/keys" | python3 -c "import json,sys; print(json.load(sys.stdin)['key'])")
echo "== wrk: $CONNS connections, $SECS s each"
read -r BARE_RPS BARE_P99 < <(run_wrk /healthz)
read -r PROJ_RPS PROJ_P99 < <(run_wrk /api/projects -H "Authorization: Bearer $TOKEN")
read -r CRED_RPS CRED_P99 < <(run_wrk /api/credits -H "Authorization: Bearer $TOKEN")
read -r KEY_RPS KEY_P99 < <(run_wrk /api/credits -H "Authorization: Bearer $KEY")
python3 - "$BARE_RPS" "$BARE_P99" "$PROJ_RPS" "$PROJ_P99" "$CRED_RPS" "$CRED_P99" "$KEY_RPS" "$KEY_P99" <<'PY'
import sys
b, bp, p, pp, c, cp, k, kp = map(float, sys.argv[1:])
print(f"   {'route':<28}{'req/s':>10}{'p99 ms':>10}{'ratio':>8}")
print(f"   {'GET /healthz (bare)':<28}{b:>10.0f}{bp:>10.2f}{1:>8.2f}")
print(f"   {'GET /api/projects (1,000)':<28}{p:>10.0f}{pp:>10.2f}{p/b:>8.3f}")
print(f"   {'GET /api/credits':<28}{c:>10.0f}{cp:>10.2f}{c/b:>8.3f}")
worst = min(p, c) / b
print(f"   {'GET /api/credits (API key)':<28}{k:>10.0f}{kp:>10.2f}{k/b:>8.3f}")
print(f"   worst ratio to the bare route: {worst:.3f} (target >= 0.5: {'met' if worst >= 0.5 else 'NOT met'})")
print(f"   API key route: {k/b:.3f} of the bare route (target >= 0.7: {'met' if k / b >= 0.7 else 'NOT met'}), {k/c:.3f} of the session route")
PY

echo "== touching all $ACCOUNTS accounts once (GET /api/notifications with each token: one account actor each)"
cat >"$WORK/each.lua" <<LUA
local tokens, i = {}, 0
for line in io.lines("$WORK/tokens.txt") do tokens[#tokens + 1] = line end
request = function()
  i = i + 1
  if i > #tokens then i = 1 end
  return wrk.format("GET", "/api/notifications", { ["Authorization"] = "Bearer " .. tokens[i] })
end
LUA
served() { curl -fsS "$BASE/metrics" | awk '/^clipforge_http_requests_total.*status="200"/ {n += $2} END {printf "%d", n}'; }
BEFORE=$(served)
# One thread so each token is used once in order before any repeats.
START=$(date +%s.%N)
wrk -t1 -c16 -d600s -s "$WORK/each.lua" "$BASE" >"$WORK/touch.out" &
WRK=$!
python3 - "$BASE" "$ACCOUNTS" "$BEFORE" <<'PY'
import sys, time, urllib.request
base, n, before = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
peak = 0
while True:
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    served = sum(float(l.split()[-1]) for l in text.splitlines()
                 if l.startswith("clipforge_http_requests_total") and 'status="200"' in l)
    live = next(float(l.split()[-1]) for l in text.splitlines() if l.startswith("clipforge_actors{kind=\"user\"}"))
    peak = max(peak, live)
    if served - before >= n + 1:
        break
    time.sleep(0.5)
print(f"   live account actors while touching: up to {peak:.0f}")
PY
kill $WRK 2>/dev/null || true
wait $WRK 2>/dev/null || true
python3 -c "print(f'   touched in {$(date +%s.%N) - $START:.1f} s')"
echo "   RSS with actors live: $(rss_mb) MB"
echo "== waiting for passivation"
for _ in $(seq 1 60); do
  LIVE=$(curl -fsS "$BASE/metrics" | awk '/^clipforge_actors\{kind="user"\}/ {print $2}')
  [ "${LIVE%.*}" = 0 ] && break
  sleep 1
done
sleep 2
RSS=$(rss_mb)
echo "   live account actors: $LIVE"
python3 -c "r=$RSS; print(f'   RSS after passivation of $ACCOUNTS accounts: {r:.1f} MB (target < 500 MB: ' + ('met' if r < 500 else 'NOT met') + ')')"

kill "$SERVER" 2>/dev/null || true
wait "$SERVER" 2>/dev/null || true
SERVER=""
bash scripts/bench-hardening.sh
bash scripts/bench-webhooks.sh
