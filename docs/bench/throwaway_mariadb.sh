# Sourced by the benchmark scripts here: one throwaway MariaDB in a temp dir (own datadir,
# socket DIR/sock, a free 127.0.0.1 port, --user=root, as tests/common/mariadb.rs does), never
# the machine's own server.
#   mdb_start DIR [MARIADBD_OPTION...]  install DIR/data, start the server, wait until it
#                                       answers; sets mdb_pid and mdb_port. Later options
#                                       override the defaults (the last one wins in mariadbd).
#   mdb_sysbench_rw DIR THREADS         a background `sysbench oltp_read_write` on schema sbtest
#                                       (4 x 10,000 rows), running until mdb_stop; sets mdb_sb_pid.
#   mdb_stop DIR                        stop that load, shut the server down (or kill it) and
#                                       wait; safe to call twice.
mdb_pid=""; mdb_port=""; mdb_sb_pid=""
mdb_start() {
  local dir=$1; shift
  mkdir -p "$dir/tmp"
  mariadb-install-db --no-defaults --datadir="$dir/data" --tmpdir="$dir/tmp" --user=root \
    --auth-root-authentication-method=normal --skip-test-db > "$dir/install.log" 2>&1
  mdb_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # MARIADBD: another server build (e.g. the device bundle's); MARIADBD_EXTRA: its options.
  # shellcheck disable=SC2086
  "${MARIADBD:-/usr/sbin/mariadbd}" --no-defaults ${MARIADBD_EXTRA:-} --datadir="$dir/data" --socket="$dir/sock" --tmpdir="$dir/tmp" \
    --port="$mdb_port" --bind-address=127.0.0.1 --user=root --innodb-buffer-pool-size=128M \
    --max-connections=200 --log-error="$dir/error.log" --pid-file="$dir/pid" "$@" > /dev/null 2>&1 &
  mdb_pid=$!
  local _
  for _ in $(seq 100); do
    mariadb --no-defaults -S "$dir/sock" -uroot -e 'SELECT 1' > /dev/null 2>&1 && return 0
    kill -0 "$mdb_pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "throwaway MariaDB in $dir did not start; its log:" >&2
  tail -5 "$dir/error.log" >&2 || true
  return 1
}
mdb_sysbench_rw() {
  local dir=$1 threads=$2
  mariadb --no-defaults -S "$dir/sock" -uroot -e 'CREATE DATABASE sbtest'
  local sb="sysbench oltp_read_write --mysql-socket=$dir/sock --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=10000"
  $sb prepare > /dev/null
  $sb --threads="$threads" --time=100000 run > /dev/null 2>&1 & mdb_sb_pid=$!
  sleep 3
}
mdb_stop() {
  local dir=$1
  if [ -n "$mdb_sb_pid" ]; then kill "$mdb_sb_pid" 2>/dev/null || true; wait "$mdb_sb_pid" 2>/dev/null || true; mdb_sb_pid=""; fi
  [ -n "$mdb_pid" ] || return 0
  mariadb-admin --no-defaults -S "$dir/sock" -uroot shutdown 2>/dev/null || kill "$mdb_pid" 2>/dev/null || true
  wait "$mdb_pid" 2>/dev/null || true
  mdb_pid=""
}
