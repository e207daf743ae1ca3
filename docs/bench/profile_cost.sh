#!/bin/bash
# What `perf record` costs a loaded server: sysbench oltp_read_write (8 threads) against a
# throwaway MariaDB, tps without and with a recording, interleaved (AB, BA, AB, ...), per
# configuration. Prints one line per run and a summary per configuration (median and range
# of the with/without tps ratio) plus the server samples each recording held.
#   docs/bench/profile_cost.sh PAIRS SECONDS CONFIG...
#   CONFIG = ATTACH:CALLGRAPH:HZ, ATTACH = p (perf record -p PID) or a (perf record -a, the
#   server's samples kept by perf script --pid), CALLGRAPH = fp, none or dwarf.
# e.g. docs/bench/profile_cost.sh 3 8 p:fp:99 a:fp:99 p:fp:999 a:fp:999
set -eu
pairs=$1; secs=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
dir=$(mktemp -d /tmp/spinscope-profile-cost.XXXXXX)
trap 'mdb_stop "$dir"; rm -rf "$dir"' EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=0
mariadb --no-defaults -S "$dir/sock" -uroot -e 'CREATE DATABASE sbtest'
sb="sysbench oltp_read_write --mysql-socket=$dir/sock --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=10000"
$sb prepare > /dev/null
$sb --threads=8 --time=5 run > /dev/null   # warm the buffer pool
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# server pid $mdb_pid; $pairs pairs of ${secs}s runs per configuration"
tps() { $sb --threads=8 --time="$secs" run | awk '/transactions:/ {gsub(/\(/,"",$3); print $3}'; }
with_perf() {  # ATTACH CG HZ
  local attach=$1 cg=$2 hz=$3 args=()
  case $cg in fp) args+=(-g) ;; dwarf) args+=(--call-graph dwarf,16384) ;; none) ;; esac
  if [ "$attach" = a ]; then args+=(-a); else args+=(-p "$mdb_pid"); fi
  perf record -q -e cpu-clock -F "$hz" "${args[@]}" -o "$dir/perf.data" > /dev/null 2>&1 &
  local pp=$!
  sleep 0.3
  local t; t=$(tps)
  kill -INT $pp; wait $pp 2>/dev/null || true
  local n; n=$(perf script -F pid --pid "$mdb_pid" -i "$dir/perf.data" 2>/dev/null | wc -l)
  local sz; sz=$(stat -c %s "$dir/perf.data")
  rm -f "$dir/perf.data"
  echo "$t $n $sz"
}
for cfg in "$@"; do
  IFS=: read -r attach cg hz <<< "$cfg"
  ratios=()
  for i in $(seq "$pairs"); do
    if [ $((i % 2)) = 1 ]; then a=$(tps); read -r b n sz <<< "$(with_perf "$attach" "$cg" "$hz")"
    else read -r b n sz <<< "$(with_perf "$attach" "$cg" "$hz")"; a=$(tps); fi
    r=$(python3 -c "print(f'{$b/$a:.4f}')")
    ratios+=("$r")
    echo "run $cfg pair $i: without $a tps, with $b tps, ratio $r, server samples $n, perf.data $sz bytes, load $(cut -d' ' -f1 /proc/loadavg)"
  done
  python3 - "$cfg" "${ratios[@]}" <<'PY'
import statistics, sys
cfg, rs = sys.argv[1], [float(x) for x in sys.argv[2:]]
print(f"summary {cfg}: median ratio {statistics.median(rs):.3f} (range {min(rs):.3f}-{max(rs):.3f}), cost {100*(1-statistics.median(rs)):.1f}%")
PY
done
