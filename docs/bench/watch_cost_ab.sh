#!/usr/bin/env bash
# watch's cost, two builds interleaved: docs/bench/watch_cost.sh (1 watched server, SECONDS
# long) against one throwaway MariaDB (own datadir, socket and port in a temp dir, --user=root,
# as tests/common/mariadb.rs does), ROUNDS times A then B; with `load` as the fourth argument
# under a 16-thread sysbench oltp_write_only load (the server's whole-process CPU then says
# nothing about watch; watch's own CPU and rates still do). Stopped and removed at exit.
# usage: docs/bench/watch_cost_ab.sh BIN_A BIN_B [SECONDS=20] [ROUNDS=3] [load]
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
a=$(realpath "$1"); b=$(realpath "$2"); secs=${3:-20}; rounds=${4:-3}; mode=${5:-idle}
here=$(dirname "$(realpath "$0")")
dir=$(mktemp -d /tmp/spinscope-bench-mdb.XXXXXX)
srv=""; load=""
cleanup() {
  [ -n "$load" ] && kill "$load" 2>/dev/null || true
  mdb_stop "$dir"
  rm -rf "$dir"
}
trap cleanup EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=2
srv=$mdb_pid
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || true), kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# server: $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT VERSION()'), pid $srv; A=$a B=$b; $mode"
if [ "$mode" = load ]; then
  mariadb --no-defaults -S "$dir/sock" -uroot -e 'CREATE DATABASE sbtest'
  sb=(sysbench --db-driver=mysql --mysql-socket="$dir/sock" --mysql-user=root --mysql-db=sbtest
      --tables=4 --table-size=10000)
  "${sb[@]}" oltp_write_only prepare > /dev/null
  "${sb[@]}" --threads=16 --time=$(( rounds * 2 * (2 * secs + 8) + 20 )) --report-interval=0 \
    oltp_write_only run > "$dir/sb.txt" 2>&1 &
  load=$!
  sleep 2
fi
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    echo "## round $r $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
    SPINSCOPE=$bin bash "$here/watch_cost.sh" "$dir/sock" 1 "$secs"
  done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
