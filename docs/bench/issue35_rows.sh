#!/usr/bin/env bash
# Issue 35 (part 1, the change journal), its table tried again: two throwaway MariaDBs A and B,
# one client journal (XDG_STATE_HOME), a change a killed `sweep run` left (SPINSCOPE_FAULT, a
# kill -9 right after its first SET GLOBAL). Prints, per run, each server's left-changed
# findings and the journal lines on stderr.
# BIN must be built with `cargo build --release --features test-seams` (SPINSCOPE_FAULT).
#   docs/bench/issue35_rows.sh [BIN]
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/throwaway_mariadb.sh"
bin=$(realpath "${1:-target/release/spinscope}")
dir=$(mktemp -d /tmp/issue35_rows.XXXXXX)
export XDG_STATE_HOME=$dir/state
mdb_start "$dir/a" --performance-schema=ON; pa=$mdb_pid; porta=$mdb_port
mdb_start "$dir/b"; pb=$mdb_pid
stop() { mdb_pid=$pa; mdb_stop "$dir/a"; mdb_pid=$pb; mdb_stop "$dir/b"; rm -rf "$dir"; }
trap stop EXIT
A=root@$dir/a/sock; B=root@$dir/b/sock
q() { mariadb --no-defaults -S "$dir/$1/sock" -uroot -N -e "$2"; }
leave() { # server setting
  "$bin" sweep prepare -S "$dir/$1/sock" -u root --no-defaults --tables 1 --table-size 200 > /dev/null 2>&1
  SPINSCOPE_FAULT=after-statement:1 "$bin" sweep run -S "$dir/$1/sock" -u root --no-defaults --threads 1 \
    --warmup 0 --duration 0.3 --report-interval 0 --workload point-select --variant "a:$2" > /dev/null 2>&1
}
fleet() { # label, then doctor args
  local label=$1; shift
  echo "## doctor $label"
  "$bin" doctor --no-defaults --window 0 --json "$@" 2> "$dir/err" \
    | jq -r '.servers[] | "  \(.name): " + ([.doc.findings[] | select(.id == "spinscope-left-changed") | .title + " [" + (.statements | join("; ")) + "]"] | if length == 0 then "(no left-changed finding)" else join(" | ") end)'
  grep -E "never set back|another spinscope" "$dir/err" | sed -E 's/ by `.*\) [0-9.]+ (s|min|h) ago/ by ... ago/; s/^/  stderr: /' || echo "  stderr: (no journal line)"
}
echo "# $(date -u +%FT%TZ) $("$bin" --version)"
leave a innodb_spin_wait_delay=77
echo "A: innodb_spin_wait_delay=$(q a 'SELECT @@innodb_spin_wait_delay'), B: $(q b 'SELECT @@innodb_spin_wait_delay')"
fleet "A B --parallel 1" "$A" "$B" --parallel 1
printf 'a %s\nb %s\n' "$A" "root@127.0.0.1:$porta" > "$dir/inv"
fleet "--inventory (a: A by socket, b: A over TCP) --parallel 1" --inventory "$dir/inv" --parallel 1
printf 'a %s\nb %s\n' "$A" "$B" > "$dir/inv"
fleet "--inventory A B --parallel 1" --inventory "$dir/inv" --parallel 1
fleet "B A --parallel 1" "$B" "$A" --parallel 1
for i in 1 2 3; do fleet "B A (default parallel, run $i)" "$B" "$A"; done
leave b innodb_sync_spin_loops=99
echo "B: innodb_sync_spin_loops=$(q b 'SELECT @@innodb_sync_spin_loops')"
fleet "A B, leftovers on both" "$A" "$B"
fleet "B A --parallel 1, leftovers on both" "$B" "$A" --parallel 1
echo "## restore on B"
"$bin" restore -S "$dir/b/sock" -u root --no-defaults 2>&1 | sed 's/^/  /'
fleet "B A after restore on B" "$B" "$A"
echo "## doctor --enable-instruments on A killed after its first statement"
SPINSCOPE_FAULT=after-statement:1 "$bin" doctor -S "$dir/a/sock" -u root --no-defaults --window 1 --enable-instruments > /dev/null 2>&1
fleet "A B after the instruments were left on A" "$A" "$B" --parallel 1
echo "## watch A B (one capture each, trigger threads_running >= 0)"
printf 'a %s\nb %s\n' "$A" "$B" > "$dir/inv"
timeout 60 "$bin" watch --inventory "$dir/inv" --no-defaults --out "$dir/caps" --profile-seconds 0 \
  --trigger 'threads_running >= 0' --max-captures 2 --min-free-disk 0 --duration 12 2> "$dir/werr" > /dev/null
grep -E "never set back|another spinscope" "$dir/werr" | sed -E 's/^[^ ]+ //; s/ by `.*\) [0-9.]+ (s|min|h) ago/ by ... ago/; s/^/  stderr: /'
caps() { for s in "$dir"/$1/*/doctor-snapshot.json; do
  echo "  $(basename "$(dirname "$s")"): $(jq -r '.target' "$s"): left changed: $(jq -r '[.journal[]? | select(.kind == "left_changed") | .what] | join(", ")' "$s"); notes saying never set back: $(jq '[.notes[] | select(contains("never set back"))] | length' "$s")"
done; }
caps caps
echo "## watch A running (trigger: 4 sessions in SELECT SLEEP), a burst, restore -S A, a burst"
timeout 60 "$bin" watch "$A" --no-defaults --out "$dir/caps2" --profile-seconds 0 --trigger 'threads_running >= 4' \
  --after 1 --history 2 --cooldown 1s --max-captures 3 --min-free-disk 0 --duration 16 2> "$dir/werr2" > /dev/null &
w=$!
burst() { for _ in 1 2 3 4; do q a 'SELECT SLEEP(1.5)' > /dev/null & done; }
sleep 4; burst; sleep 5
"$bin" restore -S "$dir/a/sock" -u root --no-defaults 2>&1 | sed 's/^/  restore: /'
burst; wait $w
caps caps2; grep -iE "capture written" "$dir/werr2" | sed -E "s/^[^ ]+ /  watch: /; s/ \(.*//"
echo "  A now: innodb_spin_wait_delay=$(q a 'SELECT @@innodb_spin_wait_delay')"
