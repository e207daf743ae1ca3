#!/usr/bin/env bash
# Run the events client's KILL test (tests/live/sweep_client.rs) N times in a row, after
# `cargo build --release --tests`; one line per run, then the count that passed.
# Usage: docs/bench/sweep_client_kill_loop.sh [N]   (from the repository root)
set -u
BIN=$(ls -t target/release/deps/sweep_client-* | grep -v '\.d$' | head -1)
N=${1:-20}; pass=0; out=$(mktemp)
for i in $(seq "$N"); do
  if "$BIN" killed --test-threads 1 --nocapture > "$out" 2>&1; then
    pass=$((pass+1)); echo "run $i ok: $(grep -h 'killed \|executes:' "$out" | tr '\n' ' ')"
  else
    echo "run $i FAIL: $(grep -h 'sent\|panicked' "$out" | head -2)"
  fi
done
rm -f "$out"
echo "passed $pass of $N"
