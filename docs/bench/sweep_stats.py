#!/usr/bin/env python3
"""Ratios per interleaved pair from sweep_vs_sysbench.sh output (lines: tool threads rep qps
cpu_s cpu_us_per_query load1), against sysbench's run of the same pair: median (min .. max)
of queries/s and of client CPU per query, per client and thread count, plus the medians of the
absolute values and the load average range. A line starting with '#' starts a new run (pairs
are matched within a run). Usage: sweep_stats.py FILE..."""
import statistics as st
import sys
from collections import defaultdict

runs = {}
for n, path in enumerate(sys.argv[1:]):
    run = 0
    for line in open(path):
        if line.startswith("#"):
            run += 1
            continue
        f = line.split()
        if len(f) != 7 or not f[1].isdigit():
            continue
        tool, t, rep = f[0], int(f[1]), int(f[2])
        runs[((n, run), t, rep, tool)] = (float(f[3]), float(f[5]), float(f[6]))

ratios = defaultdict(lambda: ([], [], [], [], []))
for (path, t, rep, tool), (q, c, load) in runs.items():
    sb = runs.get((path, t, rep, "sysbench"))
    if sb is None:
        continue
    r = ratios[(t, tool)]
    r[0].append(q / sb[0])
    r[1].append(c / sb[1])
    r[2].append(q)
    r[3].append(c)
    r[4].append(load)

def fmt(v):
    return f"{st.median(v):.2f} ({min(v):.2f} .. {max(v):.2f})"

print("threads client pairs qps_ratio cpu_per_query_ratio median_qps median_cpu_us_per_query load1")
for (t, tool) in sorted(ratios, key=lambda k: (-k[0], k[1])):
    q, c, aq, ac, load = ratios[(t, tool)]
    print(f"{t} {tool} {len(q)} qps {fmt(q)} cpu {fmt(c)} {st.median(aq):.0f} {st.median(ac):.2f} {min(load):.1f}-{max(load):.1f}")
