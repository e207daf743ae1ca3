#!/usr/bin/env bash
# Issue 25: N default probes in a row, one line each (figure, validity, groups, spread, the
# MariaDB cross-check, steal, load average). Usage: docs/bench/probe_busy.sh N [BIN] [ARGS...]
# Run it once on a quiet host and once beside a load (e.g. a parallel cargo build plus
# `stress-ng --cpu 2`), and compare the figures.
set -u
n=${1:-10}
bin=${2:-target/release/spinscope}
shift 2 2>/dev/null || shift $#
for _ in $(seq "$n"); do
    "$bin" probe --json "$@" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); s = d["summary"]; m = d["measurements"][0]
print("valid=%s ns=%.2f ticks=%.2f groups=%d redone=%d spread=%.2f%% attempts=%d mariadb=%.2f steal=%.1f%% load=%.1f ms=%.0f %s" % (
    d.get("valid", True), s["ns_per_hint"], s["ticks_per_hint"], m.get("groups", 0),
    m.get("disturbed_groups", 0), m.get("group_spread_pct") or 0.0, m.get("attempts", 1),
    d["mariadb_rule"]["median_ticks_per_pause"] or 0.0, (d.get("load") or {}).get("steal_pct") or 0.0,
    (d.get("load") or {}).get("loadavg_1m") or 0.0, d["elapsed_ms"], d.get("invalid_reason") or ""))'
done
