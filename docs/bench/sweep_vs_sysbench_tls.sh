#!/usr/bin/env bash
# spinscope sweep's events client over TLS vs sysbench 1.0 --mysql-ssl=on (Debian package),
# point-select on the same sbtest tables of a throwaway local MariaDB with a self-signed TLS
# certificate, both over TCP 127.0.0.1, interleaved and repeated. Prints one line per run:
#   tool threads rep qps cpu_s cpu_us_per_query load1 tls_handshakes
# (load1: the 1-minute load average when the run ended; tls_handshakes: the server's
# Ssl_finished_accepts during the run, so each client is seen to use TLS.)
# Usage: [THREADS="8"] docs/bench/sweep_vs_sysbench_tls.sh [SECONDS] [REPEATS]
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
SECS=${1:-5}; REPS=${2:-4}
BIN=$(cd "$(dirname "$0")/../.." && pwd)/target/release/spinscope
D=$(mktemp -d /tmp/spinscope-bench.XXXX)
trap 'mdb_stop "$D"; cp "$D"/sb.out /tmp/last_sb.out 2>/dev/null || true; rm -rf "$D"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$D/key.pem" -out "$D/cert.pem" 2>/dev/null
# sysbench 1.0.20's --mysql-ssl=on loads client-key.pem, client-cert.pem and cacert.pem from
# its working directory (the server does not ask for a client certificate; they must exist).
cp "$D/key.pem" "$D/client-key.pem"; cp "$D/cert.pem" "$D/client-cert.pem"; cp "$D/cert.pem" "$D/cacert.pem"
mdb_start "$D" --innodb-buffer-pool-size=256M --ssl-cert="$D/cert.pem" --ssl-key="$D/key.pem" --ssl-ca="$D/cert.pem"
"$BIN" sweep prepare -S "$D/sock" --tables 4 --table-size 100000 --load-threads 2 2>/dev/null
cpu() { awk '{print $1+$2}' "$1"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
accepts() { mariadb --no-defaults -S "$D/sock" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'" | awk '{print $2}'; }
for t in ${THREADS:-8}; do
  for r in $(seq "$REPS"); do
    a=$(accepts)
    (cd "$D" && /usr/bin/time -f '%U %S' -o "$D/t" sysbench oltp_point_select --db-driver=mysql \
      --mysql-host=127.0.0.1 --mysql-port="$mdb_port" --mysql-ssl=on \
      --mysql-user=root --mysql-db=spinscope --tables=4 --table-size=100000 --threads=$t --time=$SECS \
      --rand-type=uniform run > "$D/sb.out")
    q=$(awk '/queries:/ {print $2; exit}' "$D/sb.out"); c=$(cpu "$D/t"); h=$(( $(accepts) - a ))
    awk -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS -v l=$(load1) -v h=$h 'BEGIN{printf "sysbench-ssl %d %d %.0f %.2f %.2f %s %d\n", t, r, q/s, c, c/q*1e6, l, h}'
    a=$(accepts)
    /usr/bin/time -f '%U %S' -o "$D/t" "$BIN" sweep run -h 127.0.0.1 -P "$mdb_port" -u root --no-defaults \
      --ssl-mode REQUIRED --client events --workload point-select --threads $t \
      --warmup 0 --duration $SECS --report-interval 0 --json > "$D/ss.json" 2>/dev/null
    q=$(python3 -c "import json;d=json.load(open('$D/ss.json'));s=d['steps'][0];assert s['client']=={'kind':'events','tls':True},s['client'];print(s['queries'])")
    c=$(cpu "$D/t"); h=$(( $(accepts) - a ))
    awk -v t=$t -v r=$r -v q=$q -v c=$c -v s=$SECS -v l=$(load1) -v h=$h 'BEGIN{printf "events-tls %d %d %.0f %.2f %.2f %s %d\n", t, r, q/s, c, c/q*1e6, l, h}'
  done
done
