#!/bin/bash
# The DBA's incident of issue 36, set up so that it can be tried again: two throwaway MariaDB
# servers under /tmp (their own datadirs, ports and sockets; a server already on the machine is
# never touched), the slow one started with --innodb-spin-wait-delay=6000 on its command line,
# a steady 2-thread write load and an 8-connection burst every 10 s on it, a light load on the
# other (the "rt measured another MariaDB" row).
#
# usage: scripts/incident.sh start     install (first time) and start both servers and the loads
#        scripts/incident.sh stop      stop the loads and both servers (datadirs are kept)
#        scripts/incident.sh restart   restart the slow server with the options in $DIR/a/flags
#                                      (its "service unit": the lasting fix is an edit there)
#        scripts/incident.sh loads on|off   start or stop the loads only
#        scripts/incident.sh status    what runs, and how many bursts were started so far
#        scripts/incident.sh churn S [client options]
#                                      short-lived connections (one SELECT each) for S seconds
#        scripts/incident.sh env       the variables below, for a shell: eval "$(... env)"
#        scripts/incident.sh clean     stop, then remove $DIR
# Environment: DIR (default /tmp/spinscope-incident), PORT_A (23306), PORT_B (23307),
# LOAD_VIA (mixed: one steady client over TCP and one over the socket; tcp; socket),
# BURST_EVERY_S (10), BURST_S (1.0), BURST_CONNS (8), STEADY_PER_S (cap per steady thread, 400),
# NO_LOAD (set: start the servers only).
set -u
DIR=${DIR:-/tmp/spinscope-incident}
PORT_A=${PORT_A:-23306}
PORT_B=${PORT_B:-23307}
LOAD_VIA=${LOAD_VIA:-mixed}
BURST_EVERY_S=${BURST_EVERY_S:-10}
BURST_S=${BURST_S:-1.0}
BURST_CONNS=${BURST_CONNS:-8}
STEADY_PER_S=${STEADY_PER_S:-400}
MARIADBD=/usr/sbin/mariadbd

sock() { echo "$DIR/$1/mysqld.sock"; }
port() { if [ "$1" = a ]; then echo "$PORT_A"; else echo "$PORT_B"; fi; }
cli_sock() { mariadb --no-defaults -uroot -S "$(sock "$1")" "${@:2}"; }
cli_tcp() { mariadb --no-defaults -uroot -h127.0.0.1 -P"$(port "$1")" "${@:2}"; }

install_one() {
	local s=$1
	[ -d "$DIR/$s/data/mysql" ] && return 0
	mkdir -p "$DIR/$s/tmp"
	mariadb-install-db --no-defaults --datadir="$DIR/$s/data" --tmpdir="$DIR/$s/tmp" \
		--user=root --auth-root-authentication-method=normal --skip-test-db >"$DIR/$s/install.log" 2>&1 ||
		{ echo "mariadb-install-db failed for $s: see $DIR/$s/install.log" >&2; exit 3; }
	# The slow server's "service unit": the options it is started with, one per line.
	if [ "$s" = a ]; then
		printf '%s\n' --innodb-spin-wait-delay=6000 >"$DIR/a/flags"
	else
		: >"$DIR/b/flags"
	fi
}

start_one() {
	local s=$1 p
	p=$(port "$s")
	if [ -f "$DIR/$s/mysqld.pid" ] && kill -0 "$(cat "$DIR/$s/mysqld.pid")" 2>/dev/null; then
		return 0
	fi
	if ss -ltn "sport = :$p" | grep -q LISTEN; then
		echo "port $p is taken by another process: set PORT_${s^^}" >&2
		exit 2
	fi
	local flags=()
	mapfile -t flags <"$DIR/$s/flags"
	# flush at commit 2: the bursts contend on latches, not on the disk's fsync.
	"$MARIADBD" --no-defaults --datadir="$DIR/$s/data" --tmpdir="$DIR/$s/tmp" \
		--socket="$(sock "$s")" --port="$p" --bind-address=127.0.0.1 --user=root \
		--pid-file="$DIR/$s/mysqld.pid" --log-error="$DIR/$s/error.log" \
		--innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 --max-connections=300 \
		"${flags[@]}" </dev/null >/dev/null 2>&1 &
	local t=0
	until cli_sock "$s" -e "SELECT 1" >/dev/null 2>&1; do
		sleep 0.2
		t=$((t + 1))
		if [ $t -gt 300 ]; then
			echo "server $s did not start: $DIR/$s/error.log" >&2
			exit 3
		fi
	done
}

schema() {
	local s=$1
	cli_sock "$s" <<'SQL'
CREATE DATABASE IF NOT EXISTS inc;
USE inc;
CREATE TABLE IF NOT EXISTS inc.t (id INT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0, pad CHAR(100) NOT NULL DEFAULT '') ENGINE=InnoDB;
INSERT IGNORE INTO inc.t (id) SELECT seq FROM seq_1_to_10000;
CREATE TABLE IF NOT EXISTS inc.hot (id INT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB;
INSERT IGNORE INTO inc.hot (id) SELECT seq FROM seq_1_to_64;
DROP PROCEDURE IF EXISTS inc.burst;
DELIMITER //
-- One burst connection: updates of rows that share one page, back to back inside the server
-- (no round trips), for secs seconds: the page latch and the lock system are contended.
CREATE PROCEDURE inc.burst(secs DOUBLE, k INT)
BEGIN
  DECLARE t_end DOUBLE DEFAULT UNIX_TIMESTAMP(NOW(6)) + secs;
  DECLARE i INT DEFAULT 0;
  WHILE UNIX_TIMESTAMP(NOW(6)) < t_end DO
    UPDATE inc.hot SET v = v + 1 WHERE id = 1 + ((i * 8 + k) MOD 16);
    SET i = i + 1;
  END WHILE;
END//
DELIMITER ;
SQL
}

# One steady writer: single-row updates and inserts as separate statements (so rt sees each
# request), at most STEADY_PER_S a second.
steady() {
	local s=$1 via=$2 n=$3
	local per_tick=$((STEADY_PER_S / 10))
	while :; do
		for _ in $(seq "$per_tick"); do
			echo "UPDATE inc.t SET v = v + 1 WHERE id = $((RANDOM % 10000 + 1));"
		done
		echo "INSERT INTO inc.t (id, v) VALUES ($((n * 100000000 + RANDOM * 32768 + RANDOM)), 1) ON DUPLICATE KEY UPDATE v = v + 1;"
		sleep 0.1
	done | if [ "$via" = socket ]; then cli_sock "$s" -N -B >/dev/null 2>&1; else cli_tcp "$s" -N -B >/dev/null 2>&1; fi
}

bursts() {
	local k=0 next t0
	next=$(date +%s.%N)
	while :; do
		k=$((k + 1))
		t0=$(date +%s.%N)
		echo "$(date -u +%FT%T.%3NZ) burst $k start: $BURST_CONNS connections for ${BURST_S}s" >>"$DIR/bursts.log"
		for c in $(seq "$BURST_CONNS"); do
			cli_tcp a -e "CALL inc.burst($BURST_S, $c)" >/dev/null 2>&1 &
		done
		wait
		echo "$(date -u +%FT%T.%3NZ) burst $k end: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')s" >>"$DIR/bursts.log"
		# The next burst BURST_EVERY_S after this one began, not after it ended.
		next=$(awk -v n="$next" -v e="$BURST_EVERY_S" 'BEGIN { printf "%.3f", n + e }')
		sleep "$(awk -v n="$next" -v now="$(date +%s.%N)" 'BEGIN { d = n - now; if (d < 0) d = 0; printf "%.3f", d }')"
	done
}

start_loads() {
	[ -f "$DIR/loads.pid" ] && stop_loads
	local vias
	case "$LOAD_VIA" in
	mixed) vias="tcp socket" ;;
	tcp) vias="tcp tcp" ;;
	socket) vias="socket socket" ;;
	*) echo "LOAD_VIA=$LOAD_VIA: use mixed, tcp or socket" >&2; exit 2 ;;
	esac
	local n=0
	for v in $vias; do
		n=$((n + 1))
		setsid bash -c "$(declare -f sock port cli_sock cli_tcp steady); DIR=$DIR PORT_A=$PORT_A PORT_B=$PORT_B STEADY_PER_S=$STEADY_PER_S steady a $v $n" </dev/null >/dev/null 2>&1 &
		echo $! >>"$DIR/loads.pid"
	done
	# The other server: a light steady load over TCP.
	setsid bash -c "$(declare -f sock port cli_sock cli_tcp steady); DIR=$DIR PORT_A=$PORT_A PORT_B=$PORT_B STEADY_PER_S=50 steady b tcp 9" </dev/null >/dev/null 2>&1 &
	echo $! >>"$DIR/loads.pid"
	setsid bash -c "$(declare -f sock port cli_sock cli_tcp bursts); DIR=$DIR PORT_A=$PORT_A BURST_S=$BURST_S BURST_CONNS=$BURST_CONNS BURST_EVERY_S=$BURST_EVERY_S bursts" </dev/null >/dev/null 2>&1 &
	echo $! >>"$DIR/loads.pid"
}

stop_loads() {
	[ -f "$DIR/loads.pid" ] || return 0
	# Each load is the leader of its own session (setsid): end that group, nothing else.
	while read -r p; do
		kill -- -"$p" 2>/dev/null
	done <"$DIR/loads.pid"
	rm -f "$DIR/loads.pid"
}

stop_one() {
	local s=$1
	[ -f "$DIR/$s/mysqld.pid" ] || return 0
	local p
	p=$(cat "$DIR/$s/mysqld.pid")
	kill "$p" 2>/dev/null
	while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
}

case "${1:-}" in
start)
	mkdir -p "$DIR"
	for s in a b; do
		install_one "$s"
		start_one "$s"
		schema "$s"
	done
	[ -n "${NO_LOAD:-}" ] || start_loads
	echo "slow server a: port $PORT_A socket $(sock a) pid $(cat "$DIR/a/mysqld.pid") options: $(tr '\n' ' ' <"$DIR/a/flags")"
	echo "other server b: port $PORT_B socket $(sock b) pid $(cat "$DIR/b/mysqld.pid")"
	[ -n "${NO_LOAD:-}" ] || echo "loads: 2 steady writers on a ($LOAD_VIA), $BURST_CONNS-connection bursts of ${BURST_S}s every ${BURST_EVERY_S}s ($DIR/bursts.log), 1 light writer on b"
	;;
stop)
	stop_loads
	stop_one a
	stop_one b
	;;
restart)
	stop_loads
	stop_one a
	start_one a
	start_loads
	echo "server a restarted with: $(tr '\n' ' ' <"$DIR/a/flags")"
	;;
loads)
	case "${2:-}" in
	on) start_loads ;;
	off) stop_loads ;;
	*) echo "usage: $0 loads on|off" >&2; exit 2 ;;
	esac
	;;
status)
	for s in a b; do
		if [ -f "$DIR/$s/mysqld.pid" ] && kill -0 "$(cat "$DIR/$s/mysqld.pid")" 2>/dev/null; then
			echo "$s: running, pid $(cat "$DIR/$s/mysqld.pid"), port $(port "$s"), socket $(sock "$s")"
		else
			echo "$s: stopped"
		fi
	done
	echo "bursts started: $(grep -c ' start:' "$DIR/bursts.log" 2>/dev/null || echo 0)"
	;;
churn)
	secs=${2:?seconds}
	shift 2
	end=$((SECONDS + secs))
	n=0
	while [ $SECONDS -lt $end ]; do
		cli_tcp a "$@" -e "SELECT id, v FROM inc.t WHERE id = $((RANDOM % 10000 + 1))" >/dev/null 2>&1
		n=$((n + 1))
	done
	echo "churn: $n connections in ${secs}s"
	;;
env)
	echo "DIR=$DIR PORT_A=$PORT_A PORT_B=$PORT_B SOCK_A=$(sock a) SOCK_B=$(sock b)"
	;;
clean)
	stop_loads
	stop_one a
	stop_one b
	rm -rf "$DIR"
	;;
*)
	sed -n '2,/^set -u/p' "$0" | grep '^#'
	exit 2
	;;
esac
