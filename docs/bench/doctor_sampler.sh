#!/usr/bin/env bash
# Measure doctor's own time and the burst sampler's cost against a throwaway MariaDB (own
# datadir, socket and port in a temp dir, --user=root, as tests/common/mariadb.rs does),
# idle and under mariadb-slap load. The sampler reports itself in the JSON document's `burst`
# object: rate achieved, longest gap, CPU of its own thread (CLOCK_THREAD_CPUTIME_ID) and the
# server-side round trip of its query. The server is stopped and the temp dir removed at exit.
# Usage: doctor_sampler.sh [WINDOW_S] [RUNS] [CLIENTS]   (defaults 10 3 32)
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
window=${1:-10}; runs=${2:-3}; clients=${3:-32}
sp=$(realpath "${SPINSCOPE:-target/release/spinscope}")
dir=$(mktemp -d /tmp/spinscope-bench-mdb.XXXXXX)
srv=""; slap=""
cleanup() {
  [ -n "$slap" ] && kill "$slap" 2>/dev/null || true
  mdb_stop "$dir"
  rm -rf "$dir"
}
trap cleanup EXIT
mdb_start "$dir" --max-connections=151
srv=$mdb_pid
echo "# server: $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT VERSION()'), pid $srv"
doc() { "$sp" doctor --no-defaults -S "$dir/sock" -u root "$@"; }
# One summary line, then the sampler's whole `burst` object as one JSON line (raw).
burst() {
  python3 -c '
import json, sys
b = json.load(sys.stdin)["burst"]
print("%d samples, %.1f Hz, longest gap %.1f ms, sampler CPU %.2f%% of a core, query p50 %.0f us,"
      " server <= %.1f%% of a core, threads_running p50 %.0f max %.0f"
      % (b["samples"], b["achieved_hz"], b["longest_gap_ms"], b["sampler_cpu_pct"],
         b["sampler_query_p50_us"], b["sampler_server_pct"], b["threads_running"]["p50"],
         b["threads_running"]["max"]))
print("    raw: " + json.dumps(b, separators=(",", ":")))
'
}
# doctor's own time: with its quick CPU probe (~80 ms of spinning), and without it (host facts
# from a probe made beforehand, as for a remote server), i.e. connecting, the queries and the
# rules. hyperfine when installed, else 5 runs of /usr/bin/time.
"$sp" probe --json > "$dir/probe.json" 2> /dev/null
window0() {  # $1 = label
  if command -v hyperfine > /dev/null; then
    hyperfine -N -w 2 -r 20 --style basic -n "$1 doctor --window 0" \
      "$sp doctor --no-defaults -S $dir/sock -u root --window 0" \
      -n "$1 doctor --window 0 --host-facts probe.json" \
      "$sp doctor --no-defaults -S $dir/sock -u root --window 0 --host-facts $dir/probe.json" \
      2>&1 | grep -E "Benchmark|Time|Range"
  else
    for i in 1 2 3 4 5; do
      /usr/bin/time -f "$1 window0 $i %e %U %S" "$sp" doctor --no-defaults -S "$dir/sock" -u root \
        --window 0 2>&1 > /dev/null | tail -1
    done
  fi
}
echo "# doctor's own time"
window0 idle
# The server's own CPU (utime+stime of mariadbd, /proc, clock ticks), % of one core over a span:
# measured directly at idle, where the sampler is the only client (under load it drowns).
hz=$(getconf CLK_TCK)
srv_ticks() { awk '{print $14 + $15}' "/proc/$srv/stat"; }
now() { date +%s.%N; }
pct() { python3 -c "import sys; print('%.2f' % ((($2) - ($1)) / $hz / (($4) - ($3)) * 100))"; }
echo "# idle, --window $window"
c0=$(srv_ticks); t0=$(now); sleep "$window"; c1=$(srv_ticks); t1=$(now)
echo "idle server CPU without doctor over ${window} s: $(pct "$c0" "$c1" "$t0" "$t1")% of a core"
for i in $(seq "$runs"); do
  c0=$(srv_ticks); t0=$(now); out=$(doc --window "$window" --json | burst); c1=$(srv_ticks); t1=$(now)
  echo "idle $i: $out"
  echo "    server CPU during this doctor run: $(pct "$c0" "$c1" "$t0" "$t1")% of a core"
done
echo "# under mariadb-slap --concurrency=$clients (mixed), --window $window"
mariadb-slap --no-defaults -S "$dir/sock" -uroot --concurrency="$clients" --iterations=1000 \
  --number-of-queries=100000000 --auto-generate-sql --auto-generate-sql-load-type=mixed \
  > /dev/null 2>&1 &
slap=$!
sleep 2
window0 loaded
for i in $(seq "$runs"); do
  echo "loaded $i: $(doc --window "$window" --json | burst)  [load $(cut -d' ' -f1 /proc/loadavg)]"
done
