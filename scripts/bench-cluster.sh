#!/usr/bin/env bash
# make bench-cluster:
#   1. the same batch of projects through a cluster with one worker node
#      pinned to one core (taskset), then with two worker nodes pinned to
#      one core each; prints the throughput ratio (target >= 1.7).
#      Each run: PostgreSQL (the shared records), moto_server (S3), an api
#      node (api,scheduler; no stages) and the worker nodes, all on
#      127.0.0.1, started fresh and stopped after;
#   2. API requests/s (wrk, authenticated GET /api/credits) on two api
#      nodes pinned to one core each: at the account's owner, then through
#      the other node (forwarded over the cluster); prints the ratio
#      (target >= 0.5).
#   3. a request's read of PostgreSQL (`clipforge bench-store`): the
#      store's async side against the blocking pool (how request reads
#      went before it), reads/s and p99 with 32 readers, p50 with one.
# BENCH_PROJECTS, BENCH_SECS, BENCH_CONNS change the sizes; BENCH_ONLY_API=1
# runs only part 2, BENCH_ONLY_STORE=1 only part 3.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
PROJECTS="${BENCH_PROJECTS:-6}"
SECS="${BENCH_SECS:-10}"
CONNS="${BENCH_CONNS:-16}"
# BENCH_BUILD=0: use the binary already in $CARGO_TARGET_DIR.
[ "${BENCH_BUILD:-1}" = 0 ] || cargo build --release --locked --bin clipforge >/dev/null
BIN="$CARGO_TARGET_DIR/release/clipforge"
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed"; exit 1; }
command -v wrk >/dev/null || {
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing wrk"
  $SUDO apt-get install -y -q wrk >/dev/null
}
command -v moto_server >/dev/null || { echo "moto_server is needed: make setup-test"; exit 1; }
PG_BIN="${CLIPFORGE_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
[ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL is needed: make setup-test"; exit 1; }
CORES=$(nproc)
[ "$CORES" -ge 2 ] || echo "warning: $CORES core(s); two pinned workers share it"

WORK=$(mktemp -d /tmp/clipforge-bench-cluster.XXXXXX)
PIDS=()
# A fresh cluster secret per run (nodes refuse one under 32 characters).
COOKIE=$(od -An -N24 -tx1 /dev/urandom | tr -d " \n")
TOKEN_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d " \n")
# PostgreSQL refuses to run as root: then it runs as `postgres`.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PG_DIR=""
stop_pg() {
  [ -n "$PG_DIR" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  [ -n "$PG_DIR" ] && rm -rf "$PG_DIR"
  PG_DIR=""
}
# start_pg: a fresh server on a free port; sets PG_URL
start_pg() {
  PG_DIR=$(mktemp -d /tmp/clipforge-bench-pg.XXXXXX)
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$PG_DIR"
  local pport; pport=$(port)
  as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w \
    -o "-p $pport -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  PG_URL="postgres://postgres@127.0.0.1:$pport/postgres"
}
stop_all() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  PIDS=()
  stop_pg
}
trap 'stop_all; rm -rf "$WORK"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Part 3, on a fresh PostgreSQL.
store_part() {
  echo "== a request's read of PostgreSQL: the async side against the blocking pool"
  start_pg
  "$BIN" bench-store --postgres-url "$PG_URL"
  stop_pg
}
if [ "${BENCH_ONLY_STORE:-0}" = 1 ]; then store_part; exit 0; fi

echo "== making a 45-second talking video"
python3 - > "$WORK/talk.txt" <<'PY'
s = ("Have you ever wondered why some videos go viral while others are ignored? "
     "The secret is simple, and most creators never learn it. "
     "People decide in the first three seconds whether they will keep watching. "
     "So your opening sentence must promise something valuable. "
     "Here is the biggest mistake I see every single day. "
     "Creators start with a long introduction about themselves. "
     "Nobody cares about your name before they care about your idea. "
     "Instead, open with a question that your viewer really wants answered. ")
print(s * 2)
PY
espeak-ng -v en-us -s 160 -f "$WORK/talk.txt" -w "$WORK/talk.wav"
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=s=1280x720:r=25" -i "$WORK/talk.wav" \
  -shortest -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac "$WORK/talk.mp4"

# start_node NAME ROLES CORE(or "") SEEDS S3 SLOTS: sets NODE_HTTP, NODE_ADDR
start_node() {
  local name=$1 roles=$2 core=$3 seeds=$4 s3=$5
  local caddr="127.0.0.1:$(port)"
  local log="$WORK/$name.log"
  local pin=()
  [ -n "$core" ] && pin=(taskset -c "$core")
  CLIPFORGE_NODE_NAME="$name" CLIPFORGE_CLUSTER_LISTEN_ADDR="$caddr" \
  CLIPFORGE_CLUSTER_COOKIE="$COOKIE" CLIPFORGE_CLUSTER_SEEDS="$seeds" CLIPFORGE_CLUSTER_ROLES="$roles" \
  CLIPFORGE_CLUSTER_TLS=false \
  CLIPFORGE_NODE_HTTP_ADDR=127.0.0.1:0 CLIPFORGE_AUTH_ADMIN_TOKEN=bench-admin \
  CLIPFORGE_STORAGE_KV=postgres CLIPFORGE_STORAGE_POSTGRES_URL="$PG_URL" \
  CLIPFORGE_AUTH_MEDIA_SECRET="$COOKIE" CLIPFORGE_PUBLISH_TOKEN_KEY="$TOKEN_KEY" \
  CLIPFORGE_PIPELINE_WORKERS="${6:-1}" CLIPFORGE_PIPELINE_THREADS=1 \
  CLIPFORGE_STORAGE_BACKEND=s3 CLIPFORGE_STORAGE_S3_BUCKET=bench CLIPFORGE_STORAGE_S3_ENDPOINT="$s3" \
  CLIPFORGE_STORAGE_S3_ACCESS_KEY_ID=test CLIPFORGE_STORAGE_S3_SECRET_ACCESS_KEY=test \
  RUST_LOG=warn "${pin[@]}" "$BIN" serve --config /nonexistent/cluster.toml --port 0 \
    --data-dir "$WORK/run/$name" > "$log" 2>&1 &
  PIDS+=($!)
  local http=""
  for _ in $(seq 1 300); do
    http=$(sed -n 's/^clipforge listening on port //p' "$log" | head -1)
    [ -n "$http" ] && break
    sleep 0.1
  done
  [ -n "$http" ] || { cat "$log"; exit 1; }
  NODE_HTTP=$http NODE_ADDR=$caddr
}

# run_batch WORKERS: sets BATCH_SECS
run_batch() {
  local workers=$1
  rm -rf "$WORK/run"; mkdir -p "$WORK/run"
  start_pg
  local mport; mport=$(port)
  moto_server -H 127.0.0.1 -p "$mport" > "$WORK/moto.log" 2>&1 &
  PIDS+=($!)
  local s3="http://127.0.0.1:$mport"
  for _ in $(seq 1 300); do curl -fs "$s3" >/dev/null 2>&1 && break; sleep 0.2; done
  start_node front "api,scheduler" "" "" "$s3" 16
  local a_http=$NODE_HTTP a_addr=$NODE_ADDR
  local names=()
  for i in $(seq 1 "$workers"); do
    local core=$(( (i - 1) % CORES ))
    start_node "worker-$i" "worker" "$core" "$a_addr" "$s3" 1
    names+=("worker-$i")
  done
  BATCH_SECS=$(python3 - "$a_http" "$WORK/talk.mp4" "$PROJECTS" "${names[@]}" <<'PY'
import json, subprocess, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
video, n, workers = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def call(method, path, body=None, token=None):
    req = urllib.request.Request(base + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")
# every worker up in the api node's view
deadline = time.time() + 60
while True:
    v = call("GET", "/admin/cluster", token="bench-admin")
    up = {x["name"] for x in v["nodes"] if x["state"] == "up"}
    if all(w in up for w in workers): break
    assert time.time() < deadline, v
    time.sleep(0.2)
time.sleep(1.0)  # worker groups propagate with the first heartbeats
token = call("POST", "/api/auth/sign-up/email", {"email": "bench@example.com", "password": "correct horse", "name": "Bench"})["token"]
up = json.loads(subprocess.run(["curl", "-fsS", "-H", f"authorization: Bearer {token}", "-F", f"file=@{video};filename=talk.mp4",
    base + "/api/upload"], check=True, capture_output=True).stdout)
t0 = time.time()
ids = [call("POST", "/api/projects", {"fileKey": up["fileKey"], "title": f"p{i}", "clipDurationPreset": "15-30"}, token)["projectId"] for i in range(n)]
pending = set(ids)
while pending:
    for pid in list(pending):
        st = call("GET", f"/api/projects/{pid}", token=token)["project"]["state"]
        if st in ("completed", "failed", "cancelled"):
            assert st == "completed", (pid, st)
            pending.discard(pid)
    time.sleep(0.2)
print(f"{time.time() - t0:.2f}")
PY
)
  stop_all
}

T1=0 T2=0
if [ "${BENCH_ONLY_API:-0}" != 1 ]; then
  echo "== $PROJECTS projects, one worker node on one core"
  run_batch 1; T1=$BATCH_SECS
  echo "   $T1 s"
  echo "== $PROJECTS projects, two worker nodes on one core each"
  run_batch 2; T2=$BATCH_SECS
  echo "   $T2 s"
fi

# run_wrk URL TOKEN: "requests/s p99-ms" (fails on any non-2xx answer)
run_wrk() {
  wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -H "Authorization: Bearer $2" "$1" >"$WORK/wrk.out"
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

echo "== API: two api nodes on one core each, GET /api/credits at the owner and through the other"
rm -rf "$WORK/run"; mkdir -p "$WORK/run"
start_pg
MPORT=$(port)
moto_server -H 127.0.0.1 -p "$MPORT" > "$WORK/moto.log" 2>&1 &
PIDS+=($!)
S3="http://127.0.0.1:$MPORT"
for _ in $(seq 1 300); do curl -fs "$S3" >/dev/null 2>&1 && break; sleep 0.2; done
start_node api-1 "api,scheduler" 0 "" "$S3" 1
H1=$NODE_HTTP A1=$NODE_ADDR
start_node api-2 "api,scheduler" $((1 % CORES)) "$A1" "$S3" 1
H2=$NODE_HTTP
read -r OWNER_URL OTHER_URL TOKEN < <(python3 - "$H1" "$H2" <<'PY'
import json, sys, time, urllib.request
h1, h2 = sys.argv[1:]
def call(port, method, path, body=None, token=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(req) as r:
        return r.headers.get("x-clipforge-node"), json.loads(r.read() or b"null")
deadline = time.time() + 60
while True:
    _, v = call(h1, "GET", "/admin/cluster", token="bench-admin")
    if sum(1 for x in v["nodes"] if x["state"] == "up") == 2: break
    assert time.time() < deadline, v
    time.sleep(0.2)
time.sleep(1.0)
_, s = call(h1, "POST", "/api/auth/sign-up/email", {"email": "api@example.com", "password": "correct horse", "name": "Api"})
token = s["token"]
fwd1, _ = call(h1, "GET", "/api/credits", token=token)
fwd2, _ = call(h2, "GET", "/api/credits", token=token)
assert (fwd1 is None) != (fwd2 is None), (fwd1, fwd2)
owner, other = (h1, h2) if fwd1 is None else (h2, h1)
print(f"http://127.0.0.1:{owner}/api/credits http://127.0.0.1:{other}/api/credits {token}")
PY
)
read -r OWN_RPS OWN_P99 < <(run_wrk "$OWNER_URL" "$TOKEN")
read -r FWD_RPS FWD_P99 < <(run_wrk "$OTHER_URL" "$TOKEN")
stop_all

python3 - "$PROJECTS" "$T1" "$T2" "$OWN_RPS" "$OWN_P99" "$FWD_RPS" "$FWD_P99" "$CONNS" <<'PY'
import sys
n, t1, t2 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
own, own99, fwd, fwd99 = map(float, sys.argv[4:8])
print()
if t1 > 0 and t2 > 0:
    print(f"throughput: 1 worker {n / t1 * 60:.2f} projects/min, 2 workers {n / t2 * 60:.2f} projects/min")
    print(f"  ratio (target >= 1.7): {t1 / t2:.3f}")
print(f"API GET /api/credits, {sys.argv[8]} connections: owner {own:.0f} req/s (p99 {own99:.2f} ms), "
      f"through the other node {fwd:.0f} req/s (p99 {fwd99:.2f} ms)")
print(f"  ratio (target >= 0.5): {fwd / own:.3f}")
PY

store_part
