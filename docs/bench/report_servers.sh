#!/usr/bin/env bash
# Saved documents of two servers, one of them reached two ways, for `spinscope report`'s
# one-story-per-server test (tests/fixtures/report/servers/, issue 36 item 7): two throwaway
# MariaDBs on this host. Server A starts with innodb_spin_wait_delay=6000 and is diagnosed by
# TCP under a mariadb-slap load (`doctor --rt`), then fixed (SET GLOBAL ... = DEFAULT) and
# diagnosed again by its Unix socket (rt still measures the TCP load); a snapshot of it is
# saved by the socket. Server B (defaults) is diagnosed by TCP.
#
#   sudo bash docs/bench/report_servers.sh [OUT_DIR] [SPINSCOPE_BINARY]
# Needs root (packet capture for --rt) and mariadb-slap. Takes about a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/spinscope-servers}
bin=${2:-$here/../../target/release/spinscope}
bin=$(realpath "$bin")
# shellcheck source=throwaway_mariadb.sh
. "$here/throwaway_mariadb.sh"
rm -rf "$out" && mkdir -p "$out"
a=$(mktemp -d /tmp/spinscope-server-a.XXXXXX)
b=$(mktemp -d /tmp/spinscope-server-b.XXXXXX)
slap_pid=""
cleanup() {
  [ -z "$slap_pid" ] || kill "$slap_pid" 2>/dev/null || true
  mdb_stop "$a"; rm -rf "$a"
  mdb_pid=$b_pid; mdb_stop "$b"; rm -rf "$b"
}
b_pid=""
trap cleanup EXIT
mdb_start "$b"
b_pid=$mdb_pid b_port=$mdb_port
mdb_start "$a" --innodb-spin-wait-delay=6000
a_port=$mdb_port

# A time-sized write load on A by TCP (mariadb-slap rounds until killed).
(while :; do
  mariadb-slap --no-defaults -h 127.0.0.1 -P "$a_port" -uroot --concurrency=8 --iterations=1 \
    --number-of-queries=2000 --auto-generate-sql --auto-generate-sql-load-type=mixed \
    > /dev/null 2>&1 || true
done) &
slap_pid=$!
sleep 2
tcp=(--no-defaults -h 127.0.0.1 -P "$a_port" -u root)
sock=(--no-defaults --socket "$a/sock" -u root)
"$bin" doctor "${tcp[@]}" --window 6s --rt --json > "$out/a-tcp-before.json" || [ $? -eq 1 ]
mariadb --no-defaults -S "$a/sock" -uroot -e 'SET GLOBAL innodb_spin_wait_delay = DEFAULT'
"$bin" doctor "${sock[@]}" --window 6s --rt --json > "$out/a-socket-after.json" || [ $? -eq 1 ]
"$bin" doctor "${sock[@]}" --window 2s --save-snapshot "$out/a-socket-snapshot.json" > /dev/null || [ $? -eq 1 ]
kill "$slap_pid" 2>/dev/null || true; wait "$slap_pid" 2>/dev/null || true; slap_pid=""
"$bin" doctor --no-defaults -h 127.0.0.1 -P "$b_port" -u root --window 2s --json > "$out/b-tcp.json" || [ $? -eq 1 ]
echo "A: port $a_port socket $a/sock; B: port $b_port; documents in $out"
