#!/usr/bin/env bash
# Probe speed and repeatability: N consecutive default runs of `spinscope probe --json`;
# prints each run's wall time (ms, measured outside the tool), the median ns per PAUSE, and
# the difference from the previous run in percent. Usage: probe_repeat.sh [N] [extra args]
set -euo pipefail
n=${1:-20}; shift || true
bin=${SPINSCOPE:-target/release/spinscope}
prev=""
for i in $(seq "$n"); do
  t0=$(date +%s%N)
  ns=$("$bin" probe --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["ns_per_hint"])')
  t1=$(date +%s%N)
  ms=$(( (t1 - t0) / 1000000 ))
  if [ -n "$prev" ]; then
    d=$(python3 -c "print(f'{abs($ns-$prev)/$prev*100:.2f}')")
  else d="-"; fi
  printf '%2d wall_ms=%4d ns_per_pause=%.3f diff_prev_pct=%s\n' "$i" "$ms" "$ns" "$d"
  prev=$ns
done
