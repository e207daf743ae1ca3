#!/usr/bin/env python3
"""Summarise probe_repeat.sh output: wall time and consecutive-run differences."""
import re, statistics as st, sys
rows = [dict(re.findall(r"(\w+)=\s*([\d.\-]+)", l)) for l in sys.stdin if "wall_ms" in l]
ms = [int(r["wall_ms"]) for r in rows]
ns = [float(r["ns_per_pause"]) for r in rows]
d = [float(r["diff_prev_pct"]) for r in rows if r["diff_prev_pct"] != "-"]
print(f"runs {len(rows)}; wall ms median {st.median(ms)} min {min(ms)} max {max(ms)}")
print(f"ns per PAUSE median {st.median(ns):.3f} min {min(ns):.3f} max {max(ns):.3f}")
print(f"consecutive diff % median {st.median(d):.2f} max {max(d):.2f}; pairs over 3%: {sum(x > 3 for x in d)} of {len(d)}")
