#!/usr/bin/env bash
# make bench-schedule: 100,000 pending posts re-armed after a restart (time
# and RSS against the bare index scan), then 1,000 posts due in the same
# minute (firing lateness p50/p99 against plain tokio timers).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$HOME/.cache/clipforge/target}"
export CARGO_TARGET_DIR
cargo build --release --locked --bin clipforge >/dev/null
RUST_LOG=error "$CARGO_TARGET_DIR/release/clipforge" bench-schedule \
  --posts "${BENCH_POSTS:-100000}" --burst "${BENCH_BURST:-1000}" --window-secs "${BENCH_WINDOW_SECS:-20}"
