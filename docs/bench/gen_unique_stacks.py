#!/usr/bin/env python3
"""Make a `perf script` text whose stacks are deep and mostly distinct, for timing the folder
where the number of distinct stacks grows with the samples (a long system-wide recording of a
busy server), unlike gen_perf_script.py's ~3,000 stacks.

Usage: gen_unique_stacks.py SAMPLES [SEED] > big.perf

Each sample is a random walk down a synthetic call tree of C++-style function names (8,000
names in a 120-way tree per level, depth 12-48, so nearly every stack is new), with the fields
`perf record -g` + `perf script -F comm,pid,tid,time,period,event,ip,sym,symoff,dso` give:
`comm pid/tid [cpu] time: period event:` and `ip sym+off (dso)` frames. The event is the
hardware `cycles` in frequency mode, so periods vary from sample to sample (50,000 to
3,000,000). About one sample in six ends in kernel frames (`[kernel.kallsyms]`). Addresses are
fixed per function, offsets vary (the folder must strip them). No frame lacks a symbol, so no
binary is read for spin loops. Deterministic for a given seed.
"""
import random
import sys

NAMES = 8000
FANOUT = 120


def main():
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    kinds = ["Item_func", "JOIN", "handler", "row", "btr_cur", "buf_page", "trx", "Field",
             "Protocol", "THD", "sp_head", "Query_cache", "ha_innobase", "mtr_t", "lock_sys"]
    names = []
    for i in range(NAMES):
        k = kinds[i % len(kinds)]
        if i % 3 == 0:
            names.append(f"{k}::method_{i}(unsigned long, {k}*)")
        elif i % 3 == 1:
            names.append(f"{k}_func_{i}")
        else:
            names.append(f"std::vector<{k}_t{i}, std::allocator<{k}_t{i}> >::push_back")
    addr = [0x55d0c0000000 + 0x400 * i for i in range(NAMES)]
    kernel = ["entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_futex", "do_futex",
              "futex_wait", "schedule", "__schedule", "finish_task_switch.isra.0",
              "__x64_sys_sendto", "unix_stream_sendmsg", "_raw_spin_lock", "copy_page"]
    w = sys.stdout.write
    t = 5000.0
    for s in range(n):
        tid = 4000 + rng.randrange(64)
        t += rng.uniform(0.00001, 0.0005)
        period = rng.randrange(50_000, 3_000_000)
        w(f"mariadbd 3999/{tid} [{rng.randrange(2):03d}] {t:.6f}: {period} cycles: \n")
        depth = rng.randrange(12, 49)
        node = rng.randrange(NAMES)
        frames = []
        for _ in range(depth):
            frames.append(node)
            node = (node * 31 + 1 + rng.randrange(FANOUT)) % NAMES
        lines = []
        if rng.randrange(6) == 0:
            ks = rng.sample(kernel, rng.randrange(2, 6))
            for k in ks:
                kip = 0xffffffff81000000 + 0x100 * kernel.index(k)
                lines.append(f"\t{kip + rng.randrange(1, 0x80):x} {k}+0x{rng.randrange(1, 0x80):x} ([kernel.kallsyms])")
        for f in reversed(frames):
            off = rng.randrange(1, 0x3f0)
            lines.append(f"\t{addr[f] + off:x} {names[f]}+0x{off:x} (/usr/sbin/mariadbd)")
        lines.append(f"\t{0x7f0000029000 + rng.randrange(0x100):x} start_thread+0x{rng.randrange(1, 0x200):x} (/usr/lib/x86_64-linux-gnu/libc.so.6)")
        w("\n".join(lines))
        w("\n\n")


if __name__ == "__main__":
    main()
