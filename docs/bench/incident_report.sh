#!/usr/bin/env bash
# One real incident, end to end, for `spinscope report` (issue 27): a throwaway MariaDB at
# innodb_spin_wait_delay=6000 under a write load with bursts (sysbench oltp_write_only: 4
# steady threads, 32 threads for 2 s every 3 s), then fixed (SET GLOBAL ... = DEFAULT).
# Collected: a watch capture (the burst, 100 Hz), doctor --rt before and after, rt before and
# after, two perf profiles and their diff, a tune; then the report as HTML and Markdown and a
# screenshot of the HTML (headless chromium).
#
#   sudo bash docs/bench/incident_report.sh [OUT_DIR] [SPINSCOPE_BINARY]
# Needs root (perf, packet capture), sysbench, chromium. Takes about 4 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/spinscope-incident}
bin=${2:-$here/../../target/release/spinscope}
bin=$(realpath "$bin")
# shellcheck source=throwaway_mariadb.sh
. "$here/throwaway_mariadb.sh"
rm -rf "$out" && mkdir -p "$out"
db=$(mktemp -d /tmp/spinscope-incident-db.XXXXXX)
cleanup() { jobs -p | xargs -r kill 2>/dev/null || true; mdb_stop "$db"; rm -rf "$db"; }
trap cleanup EXIT
mdb_start "$db" --innodb-spin-wait-delay=6000
conn=(--no-defaults -h 127.0.0.1 -P "$mdb_port" -u root)
sb=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$mdb_port"
    --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=20000)
mariadb --no-defaults -S "$db/sock" -uroot -e 'CREATE DATABASE sbtest'
"${sb[@]}" prepare > "$out/sysbench-prepare.log"
"$bin" sweep prepare "${conn[@]}" --tables 4 --table-size 20000 > "$out/sweep-prepare.log" 2>&1

# The write load with bursts, for $1 seconds.
load() {
  "${sb[@]}" --threads=4 --time="$1" run > /dev/null 2>&1 &
  local steady=$! end=$((SECONDS + $1))
  while [ $SECONDS -lt $((end - 3)) ]; do
    sleep 3
    "${sb[@]}" --threads=32 --time=2 run > /dev/null 2>&1 || true
  done
  wait $steady || true
}

# Measure one phase (before or after): doctor --rt, rt, a perf profile, all under the load.
phase() {
  local name=$1
  load 36 &
  local l=$!
  sleep 2
  "$bin" doctor "${conn[@]}" --window 10s --rt --json > "$out/doctor-$name.json" || [ $? -eq 1 ]
  "$bin" rt -P "$mdb_port" -i lo --interval 500ms --duration 8s --top 5 --save "$out/rt-$name.json" > /dev/null
  "$bin" profile --pid "$mdb_pid" --duration 8s --json --folded "$out/profile-$name.folded" > "$out/profile-$name.json"
  wait $l
}

echo "== before the fix (innodb_spin_wait_delay=6000): watch, doctor, rt, profile"
"$bin" watch "root@127.0.0.1:$mdb_port" --no-defaults --out "$out/watch" --duration 30s \
  --history 5s --after 3s --cooldown 10m --profile-duration 0 \
  --trigger 'threads_running > 2*cores for 50ms' > "$out/watch.stdout" 2> "$out/watch.stderr" &
watch=$!
phase before
wait $watch || true
echo "== tune (races the current settings against the model's and the defaults)"
"$bin" tune "${conn[@]}" --threads 16 --budget 60s --max-candidates 3 --warmup 1s --duration 2s --save "$out/tune.json" > /dev/null
echo "== the fix"
mariadb --no-defaults -S "$db/sock" -uroot -e 'SET GLOBAL innodb_spin_wait_delay = DEFAULT'
phase after
echo "== profile diff"
"$bin" profile --diff "$out/profile-before.folded" "$out/profile-after.folded" --json > "$out/profile-diff.json" \
  || echo "profile --diff failed (see above)"
cap=$(find "$out/watch" -mindepth 1 -maxdepth 1 -type d | sort | head -1)
docs=("$out/doctor-before.json" "$out/doctor-after.json" "$out/watch" ${cap:+"$cap"}
      "$out/rt-before.json" "$out/rt-after.json" "$out/profile-before.json" "$out/profile-after.json"
      "$out/profile-diff.json" "$out/tune.json")
"$bin" report "${docs[@]}" --out "$out/report.html"
"$bin" report "${docs[@]}" --format md --out "$out/report.md"
for w in 1280x2400 390x2400; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/chromium" \
    --window-size="${w/x/,}" --screenshot="$out/report-$w.png" "file://$out/report.html" 2> /dev/null
done
echo "report: $out/report.html, $out/report.md; screenshots: $out/report-*.png"
