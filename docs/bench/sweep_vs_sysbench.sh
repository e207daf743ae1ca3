#!/usr/bin/env bash
# spinscope sweep vs sysbench 1.0 (Debian package), point-select on the same sbtest tables of a
# throwaway local MariaDB, interleaved and repeated. Prints one line per run:
#   tool threads rep qps cpu_s cpu_us_per_query load1
# (load1: the machine's 1-minute load average when the run ended.)
# Usage: [THREADS="8 64"] [CLIENTS="name=BINARY[,FLAG...] ..."] docs/bench/sweep_vs_sysbench.sh [SECONDS] [REPEATS]
# CLIENTS: the spinscope runs of each pair, after sysbench's, e.g.
#   CLIENTS="threads=target/release/spinscope,--client,threads events=target/release/spinscope,--client,events"
# (default: "spinscope=target/release/spinscope", its default client).
# TRANSPORT=tcp: both clients connect over TCP 127.0.0.1 instead of the Unix socket.
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
SECS=${1:-8}; REPS=${2:-3}
BIN=$(cd "$(dirname "$0")/../.." && pwd)/target/release/spinscope
D=$(mktemp -d /tmp/spinscope-bench.XXXX)
trap 'mdb_stop "$D"; rm -rf "$D"' EXIT
mdb_start "$D" --innodb-buffer-pool-size=256M
"$BIN" sweep prepare -S "$D/sock" --tables 4 --table-size 100000 --load-threads 2 2>/dev/null
cpu() { awk '{print $1+$2}' "$1"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
CLIENTS=${CLIENTS:-spinscope=$BIN}
if [ "${TRANSPORT:-socket}" = tcp ]; then
  SB_AT=(--mysql-host=127.0.0.1 --mysql-port="$mdb_port"); SS_AT=(-h 127.0.0.1 -P "$mdb_port" -u root --no-defaults)
else
  SB_AT=(--mysql-socket="$D/sock"); SS_AT=(-S "$D/sock")
fi
for t in ${THREADS:-8 64}; do
  for r in $(seq "$REPS"); do
    /usr/bin/time -f '%U %S' -o "$D/t" sysbench oltp_point_select --db-driver=mysql "${SB_AT[@]}" \
      --mysql-user=root --mysql-db=spinscope --tables=4 --table-size=100000 --threads=$t --time=$SECS \
      --rand-type=uniform run > "$D/sb.out"
    q=$(awk '/queries:/ {print $2; exit}' "$D/sb.out"); c=$(cpu "$D/t")
    awk -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS -v l=$(load1) 'BEGIN{printf "sysbench %d %d %.0f %.2f %.2f %s\n", t, r, q/s, c, c/q*1e6, l}'
    for spec in $CLIENTS; do
      name=${spec%%=*}; IFS=, read -r -a cmd <<< "${spec#*=}"
      /usr/bin/time -f '%U %S' -o "$D/t" "${cmd[0]}" sweep run "${SS_AT[@]}" --workload point-select --threads $t \
        --warmup 0 --duration $SECS --report-interval 0 --json "${cmd[@]:1}" > "$D/ss.json" 2>/dev/null
      q=$(python3 -c "import json;d=json.load(open('$D/ss.json'));print(d['steps'][0]['queries'])"); c=$(cpu "$D/t")
      awk -v n=$name -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS -v l=$(load1) 'BEGIN{printf "%s %d %d %.0f %.2f %.2f %s\n", n, t, r, q/s, c, c/q*1e6, l}'
    done
  done
done
