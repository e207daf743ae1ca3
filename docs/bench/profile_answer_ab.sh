#!/bin/bash
# The answer's delay of `spinscope profile --pid` (wall minus the recording) for several builds,
# interleaved, against a throwaway MariaDB under sysbench oltp_read_write (8 threads).
#   docs/bench/profile_answer_ab.sh SECONDS HZ ATTACH PAIRS NAME=BIN [NAME=BIN...]
set -eu
secs=$1; hz=$2; attach=$3; pairs=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
dir=$(mktemp -d /tmp/spinscope-profile-ab.XXXXXX)
sbp=""
trap '[ -n "$sbp" ] && kill $sbp 2>/dev/null; mdb_stop "$dir"; rm -rf "$dir"' EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=0
mariadb --no-defaults -S "$dir/sock" -uroot -e 'CREATE DATABASE sbtest'
sb="sysbench oltp_read_write --mysql-socket=$dir/sock --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=10000"
$sb prepare > /dev/null
$sb --threads=8 --time=100000 run > /dev/null 2>&1 & sbp=$!
sleep 3
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
