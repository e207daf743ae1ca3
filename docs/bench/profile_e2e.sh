#!/bin/bash
# How long `spinscope profile` takes to answer after its recording ends, and where that time
# goes: a throwaway MariaDB under sysbench oltp_read_write (8 threads), recorded as spinscope
# records it (perf record -e cpu-clock -F HZ, per CPU or per task, -g), then
#   perf script without symbols (-F comm,pid,tid,time,period,event,ip)   -> reading the data
#   perf script with symbols (spinscope's -F ...,sym,symoff,dso)        -> + symbolisation
#   spinscope profile --perf-script (fold, spin-loop search, classes)   -> folding
#   the same with --svg                                                 -> + rendering
#   spinscope profile --pid (the whole thing), wall minus the duration  -> the answer's delay
#   docs/bench/profile_e2e.sh SECONDS HZ ATTACH [REPEATS]   (ATTACH: cpu or task)
set -eu
secs=$1; hz=$2; attach=$3; reps=${4:-1}
here=$(cd "$(dirname "$0")" && pwd)
sp=${SPINSCOPE:-$here/../../target/release/spinscope}
. "$here/throwaway_mariadb.sh"
dir=$(mktemp -d /tmp/spinscope-profile-e2e.XXXXXX)
trap 'mdb_stop "$dir"; rm -rf "$dir"' EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=0
mdb_sysbench_rw "$dir" 8
echo "# $(date -u +%FT%TZ) ${secs}s at ${hz} Hz, attach $attach; load average $(cut -d' ' -f1-3 /proc/loadavg)"
a=(-a); [ "$attach" = task ] && a=(-p "$mdb_pid")
t() { local s; s=$(date +%s.%N); "$@"; python3 -c "print(f'{$(date +%s.%N)-$s:.2f}')"; }
for r in $(seq "$reps"); do
  perf record -q -e cpu-clock -F "$hz" -g "${a[@]}" -o "$dir/perf.data" -- sleep "$secs" 2>/dev/null
  size=$(stat -c %s "$dir/perf.data")
  raw=$(t sh -c "perf script -F comm,pid,tid,time,period,event,ip --pid $mdb_pid -i $dir/perf.data > /dev/null 2>&1")
  sym=$(t sh -c "perf script -F comm,pid,tid,time,period,event,ip,sym,symoff,dso --pid $mdb_pid -i $dir/perf.data > $dir/s.perf 2>/dev/null")
  lines=$(wc -l < "$dir/s.perf")
  fold=$(t sh -c "$sp profile --perf-script $dir/s.perf --folded $dir/f > /dev/null")
  svg=$(t sh -c "$sp profile --perf-script $dir/s.perf --svg $dir/f.svg > /dev/null")
  stacks=$(wc -l < "$dir/f")
  total=$(t sh -c "$sp profile --pid $mdb_pid --attach $attach --hz $hz --duration ${secs}s > /dev/null 2>&1")
  delay=$(python3 -c "print(f'{$total-$secs:.2f}')")
  echo "rep $r: perf.data $size B, script $lines lines, $stacks stacks; perf script raw ${raw}s, with symbols ${sym}s; fold ${fold}s, fold+svg ${svg}s; spinscope profile --pid ${total}s: answer ${delay}s after the recording; load $(cut -d' ' -f1 /proc/loadavg)"
  rm -f "$dir/perf.data" "$dir/s.perf"
done
