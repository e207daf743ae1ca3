#!/usr/bin/env bash
# How the scheduler treats the two load clients: for each run, the client process's busy
# threads (over 5 ms of CPU) are read from /proc/PID/task/*/schedstat 1.8 s into a 3 s step:
# CPU time, time spent runnable but waiting for a CPU (run_delay), and timeslices.
# Prints: client threads busy_threads cpu_ms run_delay_ms slices delay_per_slice_us load1
# Usage: docs/bench/sweep_client_sched.sh SOCKET [THREADS] [REPEATS]   (a server prepared with
# `sweep prepare`; needs a build with --client, i.e. branch client (docs/PERFORMANCE.md, issue 17
# §4): target/release/spinscope by default or $BIN)
set -euo pipefail
SOCK=$1; T=${2:-8}; REPS=${3:-3}
BIN=${BIN:-$(cd "$(dirname "$0")/../.." && pwd)/target/release/spinscope}
for r in $(seq "$REPS"); do
  for c in threads tasks; do
    "$BIN" sweep run -S "$SOCK" -u root --no-defaults --workload point-select --threads "$T" \
      --warmup 0 --duration 3 --client $c --json > /dev/null 2>&1 &
    pid=$!
    sleep 1.8
    python3 - "$pid" "$c" "$T" <<'PY'
import os, sys
pid, client, t = sys.argv[1:4]
tot = [0, 0, 0]; n = 0
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        a = list(map(int, open(f"/proc/{pid}/task/{tid}/schedstat").read().split()))
    except OSError:
        continue
    if a[0] < 5e6:
        continue
    n += 1
    tot = [x + y for x, y in zip(tot, a)]
load = open("/proc/loadavg").read().split()[0]
print(client, t, n, tot[0] // 10**6, tot[1] // 10**6, tot[2], round(tot[1] / max(tot[2], 1) / 1000, 1), load)
PY
    wait "$pid"
  done
done
