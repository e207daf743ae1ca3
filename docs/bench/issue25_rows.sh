#!/usr/bin/env bash
# Issue 25's table, rows tried again beside four busy loops (two per CPU on a 2-vCPU host):
# `spin --server 8.0.36` three times, `tune --threads 4 --budget 1m` from delay 6000, and an
# A/B sweep of two variants, each against a throwaway MariaDB. Prints what each command said.
#   docs/bench/issue25_rows.sh [BIN]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
bin=${1:-target/release/spinscope}
dir=$(mktemp -d /tmp/issue25_rows.XXXXXX)
loops=()
for _ in $(seq $(( 2 * $(nproc) ))); do (while :; do :; done) & loops+=($!); done
trap 'kill ${loops[*]} 2>/dev/null || true; mdb_stop "$dir"; rm -rf "$dir"' EXIT
echo "# $(date -u +%FT%TZ) busy loops: ${#loops[@]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  echo "## spin --server 8.0.36 (run $i)"
  "$bin" spin --server 8.0.36 2>&1 | grep -E "per hint|from run to run|design ratio|within the CPU|no figure|too busy" || true
done
mdb_start "$dir" --innodb-spin-wait-delay=6000 --innodb-flush-log-at-trx-commit=0
"$bin" sweep prepare -S "$dir/sock" -u root --tables 4 --table-size 10000 > /dev/null 2>&1
echo "## tune --threads 4 --budget 1m from innodb_spin_wait_delay=6000; load $(cut -d' ' -f1-3 /proc/loadavg)"
s=$(date +%s)
"$bin" tune -S "$dir/sock" -u root --threads 4 --budget 1m 2>&1 | tail -25 || echo "tune exited $?"
echo "wall $(( $(date +%s) - s )) s; delay after: $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT @@innodb_spin_wait_delay')"
echo "## sweep A/B, d4 vs d6000, threads 4, 3 repeats; load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" sweep run -S "$dir/sock" -u root --workload read-write --threads 4 --warmup 1 --duration 3 --repeat 3 \
  --variant d4:innodb_spin_wait_delay=4 --variant d6000:innodb_spin_wait_delay=6000 2>&1 | grep -iE "higher|lower|significant|too little|CI|verdict" | head -10 || true
echo "delay after: $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT @@innodb_spin_wait_delay'); load $(cut -d' ' -f1-3 /proc/loadavg)"
