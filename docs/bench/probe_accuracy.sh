#!/usr/bin/env bash
# Probe accuracy against an independent measurement (issue 17): for each round and each binary
# (interleaved, order rotated per round) run examples/pause_reference (plain RDTSC loop, 40
# batches of 20,000 PAUSEs, median ticks per PAUSE), then `BIN probe --json`, then the
# reference again. One line per probe run:
#   round label wall_ms probe_ticks ref_before ref_after dev_pct
# dev_pct = probe median vs the mean of the two references, in percent. wall_ms is the probe
# process alone (start to exit, JSON written to a file).
# Usage: probe_accuracy.sh ROUNDS label1=BIN1 [label2=BIN2 ...]
set -euo pipefail
rounds=$1; shift
ref=${REF:-target/release/examples/pause_reference}
specs=("$@")
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
n=${#specs[@]}
for r in $(seq "$rounds"); do
  for j in $(seq 0 $((n - 1))); do
    spec=${specs[$(( (j + r) % n ))]}
    label=${spec%%=*}; bin=${spec#*=}
    before=$("$ref")
    t0=$(date +%s%N)
    "$bin" probe --json > "$tmp"
    t1=$(date +%s%N)
    ticks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["ticks_per_hint"])' "$tmp")
    after=$("$ref")
    python3 - "$r" "$label" "$(( (t1 - t0) / 1000 ))" "$ticks" "$before" "$after" <<'PY'
import sys
r, label, us, t, b, a = sys.argv[1:]
t, b, a = float(t), float(b), float(a)
m = (a + b) / 2
print(f"{r} {label} {int(us)/1000:.1f} {t:.3f} {b:.3f} {a:.3f} {(t - m) / m * 100:+.2f}")
PY
  done
done
