#!/usr/bin/env bash
# Record what a real MariaDB answers to the statements spinscope's collector, journal check and
# settings guard send, in the text format `server::session::parse_recorded` reads (the scripted
# session of the unit tests). Starts a throwaway server in a temporary directory (never one
# already running), started with --innodb-spin-wait-delay=6000 so the origin of a spin setting
# reads COMMAND-LINE, and stops it at the end.
#
#   scripts/record-session-fixture.sh > tests/fixtures/session/mariadb-10.11.txt
set -euo pipefail

dir=$(mktemp -d -t spinscope-record.XXXXXX)
trap 'kill "$(cat "$dir/mysqld.pid" 2>/dev/null)" 2>/dev/null || true; sleep 2; rm -rf "$dir"' EXIT
mkdir -p "$dir/tmp"
mariadb-install-db --no-defaults --datadir="$dir/data" --tmpdir="$dir/tmp" --user="$(id -un)" \
    --auth-root-authentication-method=normal --skip-test-db >/dev/null
/usr/sbin/mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/mysqld.sock" \
    --tmpdir="$dir/tmp" --skip-networking --pid-file="$dir/mysqld.pid" \
    --log-error="$dir/error.log" --user="$(id -un)" --innodb-buffer-pool-size=128M \
    --innodb-spin-wait-delay=6000 </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 150); do
    mariadb --no-defaults --socket="$dir/mysqld.sock" -u root -e 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.2
done

sql() {
    mariadb --no-defaults --socket="$dir/mysqld.sock" -u root --batch -e "$1"
}

record() {
version=$(sql 'SELECT VERSION()' | tail -n 1)
echo "# origin: MariaDB $version, a throwaway server (mariadb-install-db, --no-defaults,"
echo "# --skip-networking, --innodb-spin-wait-delay=6000) recorded by scripts/record-session-fixture.sh"
echo "# on $(date -u +%Y-%m-%d) with mariadb --batch; the host name is replaced by spinscope-recorded-host"
echo "# and the temporary directory by /tmp/spinscope-record."

# The statements as spinscope sends them (whitespace runs do not matter to the fake); a
# prepared statement with its parameters written in as literals.
while IFS= read -r stmt; do
    [ -z "$stmt" ] && continue
    echo
    echo "> $stmt"
    if out=$(sql "$stmt" 2>"$dir/err"); then
        printf '%s\n' "$out" | sed '/^$/d'
    else
        # "ERROR 1193 (HY000) at line 1: Unknown system variable 'server_uuid'"
        sed -n 's/^ERROR \([0-9]*\) ([A-Z0-9]*) at line [0-9]*: /! \1 /p' "$dir/err"
    fi
done <<'EOF'
SELECT @@server_uuid, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'
SELECT @@server_uuid, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'
SELECT NULL, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'
SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = 'spinscope_journal'
SELECT VERSION(), @@version_comment
SHOW GLOBAL VARIABLES
SHOW ENGINE INNODB STATUS
SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE_ORIGIN, GLOBAL_VALUE_PATH FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME IN ('INNODB_SPIN_WAIT_DELAY', 'INNODB_SYNC_SPIN_LOOPS', 'INNODB_SPIN_WAIT_PAUSE_MULTIPLIER')
SHOW GLOBAL STATUS
SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_running', 'Threads_connected', 'Questions', 'Innodb_row_lock_current_waits')
SELECT NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, NUMERIC_BLOCK_SIZE FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = 'INNODB_SPIN_WAIT_DELAY'
EOF
}

# The recording host's name (as a whole cell) and directory stay out of the fixture.
h=$(hostname)
record | sed -e "s|$dir|/tmp/spinscope-record|g" -e "s|\t$h\t|\tspinscope-recorded-host\t|g" \
    -e "s|\t$h\$|\tspinscope-recorded-host|"
