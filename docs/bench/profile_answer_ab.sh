#!/bin/bash
# The answer's delay of `spinscope profile --pid` (wall minus the recording) for several builds,
# interleaved, against a throwaway MariaDB under sysbench oltp_read_write (8 threads).
#   docs/bench/profile_answer_ab.sh SECONDS HZ ATTACH PAIRS NAME=BIN [NAME=BIN...]
set -eu
secs=$1; hz=$2; attach=$3; pairs=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
dir=$(mktemp -d /tmp/spinscope-profile-ab.XXXXXX)
trap 'mdb_stop "$dir"; rm -rf "$dir"' EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=0
mdb_sysbench_rw "$dir" 8
echo "# $(date -u +%FT%TZ) ${secs}s at ${hz} Hz, attach $attach; load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $(seq "$pairs"); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    s=$(date +%s.%N)
    "$bin" profile --pid "$mdb_pid" --attach "$attach" --hz "$hz" --duration "${secs}s" > "$dir/out" 2>/dev/null
    e=$(date +%s.%N)
    samples=$(grep -o '[0-9,]* samples' "$dir/out" | head -1 | tr -d ',')
    echo "pair $p $name answer $(python3 -c "print(f'{$e-$s-$secs:.2f}')") s after the recording; ${samples:-? samples}; load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
