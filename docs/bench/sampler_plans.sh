#!/usr/bin/env bash
# The burst sampler's cost in each of its plans (examples/sampler_cost.rs, `plans` mode: SQL
# counters only at 100 Hz; /proc running threads at 100 Hz with SQL at 10 or ~0 Hz, reading every
# thread's stat at every sample ("_every"), through the schedstat gate ("_sched") or through the
# taskstats group gate (the default; "_nofull" without its every-10th full read)), and what each
# gate changes in the count (`fidelity` mode), against a
# throwaway MariaDB (own datadir, socket and port in a temp dir, --user=root, as
# tests/common/mariadb.rs does): idle, then under a 16-thread sysbench oltp_write_only load.
# The server is stopped and the temp dir removed at exit.
# Then the idle server holding SAMPLER_IDLE_CONNS (150) idle connections.
# Each plan line also gives the host's stolen time over it (% of one CPU, /proc/stat), which a
# thread's CPU clock counts as the thread's own on a VM.
# Usage: sampler_plans.sh [SECONDS] [ROUNDS]   (defaults 5 3; needs sysbench, a release build
# of the example: cargo build --release --example sampler_cost)
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
secs=${1:-5}; rounds=${2:-3}
ex=$(realpath "${SAMPLER_COST:-target/release/examples/sampler_cost}")
dir=$(mktemp -d /tmp/spinscope-bench-mdb.XXXXXX)
srv=""; load=""; idlers=()
cleanup() {
  [ -n "$load" ] && kill "$load" 2>/dev/null || true
  for p in "${idlers[@]}"; do kill "$p" 2>/dev/null || true; done
  mdb_stop "$dir"
  rm -rf "$dir"
}
trap cleanup EXIT
mdb_start "$dir" --innodb-flush-log-at-trx-commit=2
srv=$mdb_pid
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || true), kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# server: $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT VERSION()'), pid $srv"
mariadb --no-defaults -S "$dir/sock" -uroot -e 'CREATE DATABASE sbtest'
sb=(sysbench --db-driver=mysql --mysql-socket="$dir/sock" --mysql-user=root --mysql-db=sbtest
    --tables=4 --table-size=10000)
"${sb[@]}" oltp_write_only prepare > /dev/null
echo "# idle: $ex SOCK $srv $secs 100 $rounds plans"
"$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" plans
echo "# idle, fidelity: $ex SOCK $srv $secs 100 $rounds fidelity"
"$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" fidelity
# A load that outlasts the measurement: (1 idle + 7 plans + 4 fidelity) x rounds x secs, plus slack.
dur=$(( (12 * rounds + 2) * ${secs%.*} + 10 ))
"${sb[@]}" --threads=16 --time="$dur" --report-interval=0 oltp_write_only run > "$dir/sb.txt" 2>&1 &
load=$!
sleep 2
echo "# under sysbench oltp_write_only --threads=16 (load $(cut -d' ' -f1-3 /proc/loadavg))"
"$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" plans
echo "# under the load, fidelity"
"$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" fidelity
kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true; load=""
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
# Last (their server threads stay in the thread cache after they leave): the idle server
# again, holding N idle connections (a connection pool's worth, one server
# thread each): what the per-thread reads cost grows with them, the group gate's does not.
# Each client reads its statements from a FIFO that never delivers any.
conns=${SAMPLER_IDLE_CONNS:-150}
mkfifo "$dir/hold"; exec 9<>"$dir/hold"
for _ in $(seq "$conns"); do
  mariadb --no-defaults -S "$dir/sock" -uroot < "$dir/hold" > /dev/null 2>&1 &
  idlers+=($!)
done
sleep 5
echo "# idle with $conns idle connections ($(mariadb --no-defaults -S "$dir/sock" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Threads_connected'" | cut -f2) connected; load $(cut -d' ' -f1-3 /proc/loadavg))"
SAMPLER_PLANS=proc_sql10_sched,proc_sql10,proc_only_every,proc_only_sched,proc_only,proc_only_nofull \
  "$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" plans
echo "# idle with $conns idle connections, fidelity"
"$ex" "$dir/sock" "$srv" "$secs" 100 "$rounds" fidelity
for p in "${idlers[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${idlers[@]}"; do wait "$p" 2>/dev/null || true; done
idlers=(); exec 9>&-
