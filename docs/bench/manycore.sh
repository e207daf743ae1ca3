#!/usr/bin/env bash
# The seeds' experiment end to end on a many-core Linux host (issue 34 §5), against a throwaway
# MariaDB (never the machine's own server): innodb_spin_wait_delay 6000 against the default at
# 16 and 64 client threads (sweep A/B), then doctor, profile, watch and tune at 6000, each as a
# DBA would run it. Writes a Markdown table of what each step said to OUT (default
# manycore-<cores>c.md) and every command's full output beside it (OUT.d/).
#   docs/bench/manycore.sh [BIN] [OUT]
# Environment: MARIADBD (default /usr/sbin/mariadbd; the device bundle's /tmp/ssb/bin/mariadbd
# with MARIADBD_EXTRA="--lc-messages-dir=/tmp/ssb/share --character-sets-dir=/tmp/ssb/share/charsets"),
# SECS per sweep step (default 10), TUNE_BUDGET (default 90s), PROFILE_SECS (default 10).
# Needs: mariadb-install-db and the mariadb client (or the bundle's), perf for the profile row.
# Takes about 6-8 minutes; every setting it changes is put back by spinscope itself.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-target/release/spinscope}")
cores=$(nproc)
out=$(realpath -m "${2:-manycore-${cores}c.md}")
raw="$out.d"; mkdir -p "$raw"
secs=${SECS:-10}; budget=${TUNE_BUDGET:-90s}; psecs=${PROFILE_SECS:-10}
[ "$cores" -ge 16 ] || echo "note: $cores cores; the experiment is meant for 16 or more" >&2

dir=$(mktemp -d /tmp/manycore.XXXXXX)
. "$here/throwaway_mariadb.sh"
state=$(mktemp -d /tmp/manycore-state.XXXXXX)
export XDG_STATE_HOME=$state
trap 'mdb_stop "$dir"; rm -rf "$dir" "$state"' EXIT

S="-S $dir/sock -u root --no-defaults"
load() { cut -d' ' -f1-3 /proc/loadavg; }
row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" >> "$out"; }
timed() { # NAME CMD...: run, keep the output, print the wall seconds
  local name=$1; shift; local s; s=$(date +%s%N)
  "$@" > "$raw/$name.txt" 2>&1 || echo "exit $?" >> "$raw/$name.txt"
  echo $(( ($(date +%s%N) - s) / 100000000 )) | sed 's/.$/.&/; s/^\./0./'
}

mdb_start "$dir" --innodb-spin-wait-delay=6000 --innodb-buffer-pool-size=1G --max-connections=500
{
  echo "# spinscope on $cores cores: delay 6000 against the default"
  echo
  echo "$(date -u +%FT%TZ); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); kernel $(uname -r);"
  echo "$("$bin" --version 2>/dev/null); MariaDB $(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT VERSION()')"
  echo
  echo "| step | what spinscope said | wall s | load (1/5/15 min) |"
  echo "|---|---|---|---|"
} > "$out"

w=$(timed probe "$bin" probe)
row "probe" "$(grep -m1 'takes' "$raw/probe.txt" | cut -c1-160)" "$w" "$(load)"

"$bin" sweep prepare $S --tables 8 --table-size 100000 > "$raw/prepare.txt" 2>&1
for t in 16 64; do
  w=$(timed "ab$t" "$bin" sweep run $S --workload read-write --threads "$t" --warmup 2s \
      --duration "${secs}s" --repeat 3 --variant d4:innodb_spin_wait_delay=4 \
      --variant d6000:innodb_spin_wait_delay=6000)
  row "sweep A/B at $t threads, 3 x ${secs}s" \
      "$(grep -iE 'higher|lower|within|too little' "$raw/ab$t.txt" | head -3 | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
done

# A background load at 6000 for doctor, profile and watch (16 threads, runs until killed).
"$bin" sweep run $S --workload read-write --threads 16 --warmup 0s --duration 100000s \
  > "$raw/background.txt" 2>&1 & bg=$!
trap 'kill $bg 2>/dev/null || true; wait $bg 2>/dev/null || true; mdb_stop "$dir"; rm -rf "$dir" "$state"' EXIT
for _ in $(seq 100); do
  r=$(mariadb --no-defaults -S "$dir/sock" -uroot -N -e "SHOW GLOBAL STATUS LIKE 'Threads_running'" | cut -f2)
  [ "${r:-0}" -ge 4 ] && break; sleep 0.2
done

w=$(timed doctor "$bin" doctor $S)
row "doctor (defaults)" "$(grep -m2 -E 'critical|warning|run: SET' "$raw/doctor.txt" | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
w=$(timed spin "$bin" spin --from-server $S --match baseline)
row "spin --from-server --match baseline" "$(grep -A1 '^Advice' "$raw/spin.txt" | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
if command -v perf > /dev/null; then
  w=$(timed profile "$bin" profile --pid "$mdb_pid" --duration "${psecs}s")
  row "profile ${psecs}s" "$(grep -m2 -iE 'spin' "$raw/profile.txt" | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
else
  row "profile" "perf not found: not run" "-" "$(load)"
fi
w=$(timed watch "$bin" watch $S --duration 20s --out "$dir/watch")
row "watch 20 s (defaults)" "$(tail -3 "$raw/watch.txt" | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
kill $bg 2>/dev/null || true; wait $bg 2>/dev/null || true

w=$(timed tune "$bin" tune $S --threads 64 --budget "$budget")
row "tune --threads 64 --budget $budget" "$(grep -iE 'change to|keep|no decision|decided' "$raw/tune.txt" | head -2 | tr '\n' ' ' | cut -c1-300)" "$w" "$(load)"
row "delay after the run" "$(mariadb --no-defaults -S "$dir/sock" -uroot -N -e 'SELECT @@innodb_spin_wait_delay')" "-" "$(load)"
echo "written: $out (raw outputs in $raw/)"
