#!/usr/bin/env bash
# spinscope sweep vs sysbench 1.0 (Debian package), point-select on the same sbtest tables of a
# throwaway local MariaDB, interleaved and repeated. Prints one line per run:
#   tool threads rep qps cpu_s cpu_us_per_query
# Usage: [THREADS="8 64"] docs/bench/sweep_vs_sysbench.sh [SECONDS] [REPEATS]   (needs target/release/spinscope)
set -euo pipefail
SECS=${1:-8}; REPS=${2:-3}
BIN=$(cd "$(dirname "$0")/../.." && pwd)/target/release/spinscope
D=$(mktemp -d /tmp/spinscope-bench.XXXX)
mariadb-install-db --no-defaults --datadir="$D/data" --user=root --auth-root-authentication-method=normal --skip-test-db >/dev/null
/usr/sbin/mariadbd --no-defaults --datadir="$D/data" --socket="$D/s.sock" --skip-networking --user=root \
  --innodb-buffer-pool-size=256M --max-connections=200 --log-error="$D/err.log" --pid-file="$D/pid" &
trap 'kill $(cat "$D/pid") 2>/dev/null || true; sleep 3; rm -rf "$D"' EXIT
for _ in $(seq 50); do mariadb --no-defaults -S "$D/s.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
"$BIN" sweep prepare -S "$D/s.sock" --tables 4 --table-size 100000 --load-threads 2 2>/dev/null
cpu() { awk '{print $1+$2}' "$1"; }
for t in ${THREADS:-8 64}; do
  for r in $(seq "$REPS"); do
    /usr/bin/time -f '%U %S' -o "$D/t" sysbench oltp_point_select --db-driver=mysql --mysql-socket="$D/s.sock" \
      --mysql-user=root --mysql-db=spinscope --tables=4 --table-size=100000 --threads=$t --time=$SECS \
      --rand-type=uniform run > "$D/sb.out"
    q=$(awk '/queries:/ {print $2; exit}' "$D/sb.out"); c=$(cpu "$D/t")
    awk -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS 'BEGIN{printf "sysbench %d %d %.0f %.2f %.2f\n", t, r, q/s, c, c/q*1e6}'
    /usr/bin/time -f '%U %S' -o "$D/t" "$BIN" sweep run -S "$D/s.sock" --workload point-select --threads $t \
      --warmup 0 --duration $SECS --report-interval 0 --json > "$D/ss.json" 2>/dev/null
    q=$(python3 -c "import json;d=json.load(open('$D/ss.json'));print(d['steps'][0]['queries'])"); c=$(cpu "$D/t")
    awk -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS 'BEGIN{printf "spinscope %d %d %.0f %.2f %.2f\n", t, r, q/s, c, c/q*1e6}'
  done
done
