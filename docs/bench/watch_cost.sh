#!/usr/bin/env bash
# watch's own cost at 100 Hz: N watched "servers" (N connections to one throwaway MariaDB, named
# s1..sN in an inventory), SECONDS long. Prints watch's CPU (whole process and per sampler), the
# achieved rate and longest gap per server from /metrics, and the server process's CPU over the
# run against the same span with nothing watching. watch runs 5 s past the scrape, so /metrics
# is still up when it is read.
# usage: docs/bench/watch_cost.sh SOCKET [N=1] [SECONDS=30]
set -euo pipefail
sock=$1; n=${2:-1}; secs=${3:-30}
bin=${SPINSCOPE:-target/release/spinscope}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
for i in $(seq 1 "$n"); do echo "s$i root@$sock"; done > "$dir/fleet.txt"
pidfile=$(mariadb --no-defaults -S "$sock" -uroot -N -e 'SELECT @@pid_file')
spid=$(cat "$pidfile")
ticks() { awk '{print $14+$15}' "/proc/$spid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep "$secs"; idle=$(( $(ticks) - t0 ))
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$bin" watch --inventory "$dir/fleet.txt" --no-defaults --out "$dir/caps" --profile-seconds 0 \
  --trigger 'threads_running > 1000' --metrics-listen "127.0.0.1:$port" --duration $((secs + 8)) \
  2>"$dir/err" & wpid=$!
sleep 3; t0=$(ticks); sleep "$secs"; busy=$(( $(ticks) - t0 ))
m=$(curl -s "127.0.0.1:$port/metrics")
wait "$wpid"
echo "servers=$n seconds=$secs"
echo "$m" | awk -v s="$secs" '
  /^spinscope_watch_process_cpu_seconds /{printf "watch process CPU: %.3f s = %.2f%% of a core (incl. start-up)\n", $2, $2/(s+3)*100}
  /^spinscope_watch_sampler_cpu_seconds_total/{n++; c+=$2}
  /^spinscope_watch_sample_rate_hz/{split($0,a," "); r=r" "sprintf("%.1f",a[2])}
  /^spinscope_watch_longest_gap_seconds/{split($0,a," "); g=g" "sprintf("%.1f",a[2]*1000)}
  /^spinscope_watch_sql_sample_rate_hz/{split($0,a," "); q=q" "sprintf("%.1f",a[2])}
  /^spinscope_watch_sample_rtt_seconds/{split($0,a," "); t=t" "sprintf("%.0f",a[2]*1e6)}
  END{printf "sampler threads: %.3f s CPU over %d servers = %.2f%% of a core per server\n", c, n, c/n/(s+3)*100;
      print "achieved Hz (last 10 s):" r; if (q != "") print "SQL reads Hz (last 10 s):" q; print "longest gap ms (last 10 s):" g; print "query rtt us (last round):" t}'
echo "server CPU over ${secs} s: idle $(echo "scale=2; $idle*100/$hz/$secs" | bc)% of a core, watched $(echo "scale=2; $busy*100/$hz/$secs" | bc)%"
