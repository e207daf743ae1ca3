#!/usr/bin/env bash
# Issue 25 §4: the A/A false-positive rate of sweep's A/B verdict on a real server beside busy
# loops. A throwaway MariaDB, `read-write` on 4 x 2000 rows, two variants that are the same
# settings (a: default, b: innodb_spin_wait_delay=4, the server's own value), N sweeps of
# --threads 1,4 --repeat 5 --duration 2, with `stress-ng --cpu LOOPS` beside (default 2).
# Prints one line per comparison: run threads a_tps b_tps significant text.
# Usage: docs/bench/aa_busy.sh [N] [LOOPS]
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
N=${1:-10}; LOOPS=${2:-2}
BIN=$(cd "$(dirname "$0")/../.." && pwd)/target/release/spinscope
D=$(mktemp -d /tmp/spinscope-aa.XXXX)
stress-ng --cpu "$LOOPS" --timeout 0 > /dev/null 2>&1 & sp=$!
trap 'kill $sp 2>/dev/null || true; mdb_stop "$D"; rm -rf "$D"' EXIT
mdb_start "$D" --innodb-flush-log-at-trx-commit=0 --innodb-spin-wait-delay=4
"$BIN" sweep prepare -S "$D/sock" --tables 4 --table-size 2000 2>/dev/null
echo "# $(date -u +%FT%TZ) N=$N stress-ng --cpu $LOOPS; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$N"); do
  "$BIN" sweep run -S "$D/sock" --workload read-write --threads 1,4 --warmup 1 --repeat 5 \
    --duration 2 --variant a:default --variant b:innodb_spin_wait_delay=4 --json > "$D/s.json" 2> "$D/s.err" || { echo "# run $r: exit $?: $(tail -1 "$D/s.err")"; }
  python3 - "$D/s.json" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for ab in d["analysis"]["ab"]:
    sig = (ab.get("tps") or {}).get("significant")
    print(sys.argv[2], ab["threads"], round(ab["baseline_tps"]), round(ab["variant_tps"]), sig, ab["text"])
PY
done
echo "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
