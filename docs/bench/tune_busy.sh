#!/usr/bin/env bash
# Issue 25 §3 target, by hand (not CI): a throwaway MariaDB started with
# innodb_spin_wait_delay=6000, a 2-thread sysbench read-write load on another schema running
# beside it, and `spinscope tune` with its default budget. Prints tune's report, the delay
# afterwards (must be 6000 again) and the load average. Usage:
#   docs/bench/tune_busy.sh [BIN] [extra tune flags...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
bin=${1:-target/release/spinscope}
shift || true
dir=$(mktemp -d /tmp/tune_busy.XXXXXX)
trap 'kill $bg 2>/dev/null || true; mdb_stop "$dir"; rm -rf "$dir"' EXIT
bg=""
mdb_start "$dir" --innodb-spin-wait-delay=6000 --innodb-flush-log-at-trx-commit=0
sql() { mariadb --no-defaults -S "$dir/sock" -uroot -N -e "$1"; }
sql "CREATE DATABASE bg"
sb="sysbench oltp_read_write --db-driver=mysql --mysql-socket=$dir/sock --mysql-user=root --mysql-db=bg --tables=1 --table-size=10000"
$sb prepare > /dev/null
"$bin" sweep prepare -S "$dir/sock" -u root --tables 4 --table-size 10000 > /dev/null
$sb --threads=2 --time=3600 run > "$dir/bg.log" 2>&1 &
bg=$!
echo "delay before: $(sql 'SELECT @@innodb_spin_wait_delay'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
"$bin" tune -S "$dir/sock" -u root --workload write-only --threads 16 "$@" || echo "tune exited $?"
echo "wall $(( $(date +%s) - start )) s; delay after: $(sql 'SELECT @@innodb_spin_wait_delay'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
kill $bg 2>/dev/null || true
wait $bg 2>/dev/null || true
grep -E "transactions:" "$dir/bg.log" || true
