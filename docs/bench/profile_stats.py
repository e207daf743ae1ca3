#!/usr/bin/env python3
"""Summarise profile_vs_inferno.sh output, or compare the folded outputs it kept.

  profile_stats.py < times.txt      medians, ranges, and per-round ratios spinscope / peer
  profile_stats.py --compare DIR    do sp.folded and inf.folded hold the same samples/stacks?
"""
import collections
import statistics
import sys


def summary():
    runs = collections.defaultdict(dict)  # tool -> rep -> (wall, cpu, rss)
    for line in sys.stdin:
        f = line.split()
        if len(f) != 6 or line.startswith("#"):
            continue
        tool, rep, wall, user, sys_s, rss = f
        runs[tool][int(rep)] = (float(wall), float(user) + float(sys_s), int(rss))

    def med_range(v):
        return f"{statistics.median(v):.3f} ({min(v):.3f} .. {max(v):.3f})"

    print("tool | runs | wall s, median (min .. max) | CPU s (user+sys), median (min .. max) | max RSS MB, median")
    for tool, r in runs.items():
        w = [x[0] for x in r.values()]
        c = [x[1] for x in r.values()]
        m = statistics.median(x[2] for x in r.values()) / 1024
        print(f"{tool} | {len(w)} | {med_range(w)} | {med_range(c)} | {m:.0f}")
    base = runs.get("spinscope", {})
    for peer in [t for t in runs if t != "spinscope"]:
        reps = sorted(set(base) & set(runs[peer]))
        if not reps:
            continue
        rw = [base[i][0] / runs[peer][i][0] for i in reps]
        rc = [base[i][1] / runs[peer][i][1] for i in reps]
        print(f"spinscope / {peer} per round ({len(reps)}): wall {med_range(rw)}, CPU {med_range(rc)}")


def read_folded(path, strip_kernel_mark):
    stacks = collections.Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if strip_kernel_mark:
            stack = stack.replace("_[k]", "")
        stacks[stack] += int(n)
    return stacks


def compare(d):
    sp = read_folded(f"{d}/sp.folded", True)
    inf = read_folded(f"{d}/inf.folded", False)
    periods = sorted(set(inf[s] // sp[s] for s in sp if s in inf and sp[s] and inf[s] % sp[s] == 0))
    print(f"samples: spinscope {sum(sp.values())}; inferno {sum(inf.values())} (sum of periods)")
    print(f"stacks: spinscope {len(sp)} (kernel mark _[k] removed for the comparison), inferno {len(inf)}")
    only_sp = sorted(set(sp) - set(inf))
    only_inf = sorted(set(inf) - set(sp))
    print(f"stacks only in spinscope: {len(only_sp)} ({sum(sp[s] for s in only_sp)} samples)")
    for s in only_sp[:5]:
        print(f"  {s} {sp[s]}")
    print(f"stacks only in inferno: {len(only_inf)} ({sum(inf[s] for s in only_inf)} periods)")
    for s in only_inf[:5]:
        print(f"  {s} {inf[s]}")
    common = set(sp) & set(inf)
    if len(periods) == 1:
        same = all(inf[s] == sp[s] * periods[0] for s in common)
        print(f"common stacks: {len(common)}; inferno count = spinscope count x {periods[0]} for all: {same}")
    else:
        print(f"common stacks: {len(common)}; period ratios seen: {periods[:10]}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--compare":
        compare(sys.argv[2])
    else:
        summary()
