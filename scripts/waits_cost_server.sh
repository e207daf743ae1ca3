#!/bin/bash
# A throwaway MariaDB for scripts/waits_cost.sh: own datadir, socket and port under DIR, the insert
# load's schema and procedure. Prints "SOCKET PID". usage: waits_cost_server.sh DIR PORT
set -e
D=$1; PORT=$2
rm -rf "$D"; mkdir -p "$D/data" "$D/tmp"
mariadb-install-db --no-defaults --datadir="$D/data" --user=root --auth-root-authentication-method=normal --skip-test-db >"$D/install.log" 2>&1
/usr/sbin/mariadbd --no-defaults --datadir="$D/data" --socket="$D/sock" --tmpdir="$D/tmp" --port="$PORT" \
  --pid-file="$D/pid" --log-error="$D/error.log" --bind-address=127.0.0.1 --user=root \
  --innodb-buffer-pool-size=2G --innodb-log-file-size=1G --innodb-flush-log-at-trx-commit=0 --max-connections=200 &
for i in $(seq 600); do mariadb --no-defaults -uroot -S "$D/sock" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
M="mariadb --no-defaults -uroot -S $D/sock"
$M -e "CREATE DATABASE spinscope_load; CREATE TABLE spinscope_load.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT, c INT, KEY (k)) ENGINE=InnoDB;"
$M --delimiter='$$' -e "CREATE PROCEDURE spinscope_load.ins() BEGIN WHILE TRUE DO INSERT INTO spinscope_load.t (k, c) VALUES (FLOOR(RAND()*100), 1); END WHILE; END"
echo "$D/sock $(cat $D/pid)"
