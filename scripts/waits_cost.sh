#!/bin/bash
# Cost of `spinscope profile --waits` to a MariaDB under an insert load, interleaved (off, on,
# off, on ...) over 6 s windows: rows inserted per second, and the host's busy CPU time
# (/proc/stat user+nice+system+irq+softirq, steal left out) per 1000 rows, which a guest's
# moving CPU share (steal) disturbs less than the rate. An "on" window starts 3 s after the
# command (its 2 s pre-check and perf's start before it) and ends before its recording does.
# usage: waits_cost.sh SPINSCOPE SOCKET PID CLIENTS PAIRS
# EXTRA (environment): more `profile --waits` flags, e.g. EXTRA='--max-cost 100' to record over
# the bound; without it the recording runs at the defaults (refused over 5%: rc=2).
mkdir -p /tmp/wb
S=$1; SOCK=$2; P=$3; N=$4; PAIRS=$5
M="mariadb --no-defaults -uroot -S $SOCK -N -B"
rows() { $M -e "SELECT MAX(id) FROM spinscope_load.t"; }
sw() { cat /proc/$P/task/*/status 2>/dev/null | awk '/ctxt_switches/{s+=$2} END{print s}'; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
for i in $(seq $N); do $M -e "CALL spinscope_load.ins()" >/dev/null 2>&1 & done
sleep 3
# rows/s, switches/s, busy jiffies per 1000 rows
win() {
  local a b s0 s1 c0 c1
  a=$(rows); s0=$(sw); c0=$(busy); sleep 6; b=$(rows); s1=$(sw); c1=$(busy)
  echo "$(( (b-a)/6 )) $(( (s1-s0)/6 )) $(awk -v c=$((c1-c0)) -v r=$((b-a)) 'BEGIN{printf "%.3f", 1000*c/r}')"
}
for k in $(seq $PAIRS); do
  off=$(win)
  $S profile --waits --pid $P --duration 9s $EXTRA --json > /tmp/wb/cost-on-$N-$k.json 2>/tmp/wb/cost-on-$N-$k.err &
  sp=$!; sleep 3; on=$(win); wait $sp; rc=$?
  echo "clients=$N pair=$k off=$off on=$on rc=$rc"
done
# The loops run in the server until their sessions are killed.
ids=$($M -e "select id from information_schema.processlist where id <> connection_id() and user='root' and command='Query'"); q=""; for i in $ids; do q="$q KILL $i;"; done; $M -e "$q" 2>/dev/null
wait
