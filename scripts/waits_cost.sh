#!/bin/bash
# Cost of `spinscope profile --waits` to a MariaDB under an insert load: rows inserted per second
# over 6 s windows, without and with a recording running, interleaved (off, on, off, on ...).
# usage: cost.sh SPINSCOPE SOCKET PID CLIENTS PAIRS
S=$1; SOCK=$2; P=$3; N=$4; PAIRS=$5
M="mariadb -uroot -S $SOCK -N -B"
rows() { $M -e "SELECT MAX(id) FROM spinscope_load.t"; }
sw() { cat /proc/$P/task/*/status 2>/dev/null | awk '/ctxt_switches/{s+=$2} END{print s}'; }
for i in $(seq $N); do $M -e "CALL spinscope_load.ins()" >/dev/null 2>&1 & done
sleep 3
win() { local a b s0 s1; a=$(rows); s0=$(sw); sleep 6; b=$(rows); s1=$(sw); echo "$(( (b-a)/6 )) $(( (s1-s0)/6 ))"; }
for k in $(seq $PAIRS); do
  off=$(win)
  $S profile --waits --pid $P --duration 9s --max-cost 100 --json > /tmp/wb/cost-on-$N-$k.json 2>/tmp/wb/cost-on.err &
  sp=$!; sleep 2; on=$(win); wait $sp; rc=$?
  echo "clients=$N pair=$k off_rows_s,switch_s=$off on_rows_s,switch_s=$on rc=$rc"
done
# The loops run in the server until their sessions are killed.
ids=$($M -e "select id from information_schema.processlist where id <> connection_id() and user='root' and command='Query'"); q=""; for i in $ids; do q="$q KILL $i;"; done; $M -e "$q" 2>/dev/null
wait
