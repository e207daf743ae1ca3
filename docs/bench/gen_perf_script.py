#!/usr/bin/env python3
"""Make a large `perf script` text from the small MariaDB fixture, for timing the folder.

Usage: gen_perf_script.py [SAMPLES] [FIXTURE] > big.perf
Defaults: 100000 samples from tests/fixtures/perf/synthetic_mariadb1011.perf. Deterministic (seed 42).

Each output sample is a fixture sample picked at random, varied so the input looks like a real
recording rather than one block repeated:
  - the header gets the fields real `perf record -g` + `perf script` output has:
    `comm pid/tid [cpu] time: period event:` (32 threads, 2 CPUs, rising time, 200040 ns
    periods of a 4999 Hz cpu-clock), so the folder's period handling is exercised;
  - stacks with 4+ frames get one extra caller frame `query_variant_<k>` (k in 0..599) among
    the callers near the root, giving about 3,000 distinct stacks, what a 17 s real recording
    of MariaDB under mariadb-slap folded to (3,350).
The fixture's `[unknown]` leaf is kept (its DSO is `[unknown]`, so no binary is read).
"""
import random
import sys


def samples(path):
    with open(path) as f:
        blocks = f.read().split("\n\n")
    out = []
    for b in blocks:
        lines = [l for l in b.split("\n") if l.strip()]
        if len(lines) >= 2:
            out.append((lines[0], lines[1:]))
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    fixture = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/perf/synthetic_mariadb1011.perf"
    rng = random.Random(42)
    base = samples(fixture)
    w = sys.stdout.write
    t = 1000.0
    for i in range(n):
        header, frames = rng.choice(base)
        comm = header.split()[0]
        pid = header.split()[1].split("/")[0]
        tid = int(pid) + 1 + rng.randrange(32)
        t += 0.0002
        w(f"{comm} {pid}/{tid} [{rng.randrange(2):03d}] {t:.6f}:     200040 cpu-clock: \n")
        frames = list(frames)
        if len(frames) >= 4:
            k = rng.randrange(600)
            mid = len(frames) - 3
            ip = 0x900000 + k * 0x40
            frames.insert(
                mid,
                f"\t{ip:16x} query_variant_{k}+0x{rng.randrange(1, 0x200):x} (/usr/sbin/mariadbd)",
            )
        w("\n".join(frames))
        w("\n\n")


if __name__ == "__main__":
    main()
