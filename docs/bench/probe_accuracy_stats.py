#!/usr/bin/env python3
"""Summarise probe_accuracy.sh output per label: wall time (median, min, max, share under
100 ms), deviation from the reference (median |dev|, share within 2%), and the drift of the
reference itself across one probe run (|after - before| / before)."""
import statistics as st
import sys
from collections import defaultdict

rows = defaultdict(list)
for line in sys.stdin:
    f = line.split()
    if len(f) != 7 or not f[0].isdigit():
        continue
    _, label, wall, ticks, before, after, dev = f
    rows[label].append((float(wall), float(ticks), float(before), float(after), float(dev)))

print("label      runs  wall_ms med (min..max)  <100ms  |dev| med  p90   within 2%  ref drift med  max")
for label, v in rows.items():
    wall = [r[0] for r in v]
    dev = [abs(r[4]) for r in v]
    drift = [abs(r[3] - r[2]) / r[2] * 100 for r in v]
    n = len(v)
    p90 = sorted(dev)[min(n - 1, int(0.9 * n))]
    print(f"{label:10} {n:4}  {st.median(wall):6.1f} ({min(wall):.1f}..{max(wall):.1f})"
          f"  {sum(w < 100 for w in wall)}/{n:<4} {st.median(dev):6.2f}%  {p90:5.2f}%"
          f"  {sum(d <= 2.0 for d in dev)}/{n:<6}  {st.median(drift):6.2f}%  {max(drift):6.2f}%")
