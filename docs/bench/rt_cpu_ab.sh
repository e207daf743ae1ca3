#!/usr/bin/env bash
# CPU per request of `spinscope rt` on `lo`, several builds interleaved, while `sweep run`
# drives point selects over loopback TCP against a throwaway MariaDB. Like rt_lo_ab.sh, but
# the CPU time comes from wait4(2)'s rusage (user + system, microseconds; their sum is the
# scheduler's exact runtime of all rt's threads) instead of /usr/bin/time's 0.01 s, and the
# request count from rt's own total, so CPU per request is exact for each run.
# Prints one line per run:
#   build round rt_requests rate_per_s packets_received dropped rt_cpu_s rt_user_s wall_s ns_per_request user_ns_per_request load1
# Usage: [LOAD=BINARY] [INTERVAL=1s] docs/bench/rt_cpu_ab.sh ROUNDS SECONDS NAME=BINARY...  (as root)
# LOAD is the binary that runs `sweep prepare/run` (default: the first build's).
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
ROUNDS=$1; SECS=$2; shift 2
BUILDS=("$@")
LOAD=${LOAD:-${BUILDS[0]#*=}}
D=$(mktemp -d /tmp/spinscope-rtcpu.XXXX)
trap 'mdb_stop "$D"; rm -rf "$D"' EXIT
mdb_start "$D"
PORT=$mdb_port
C=(--no-defaults -u root -h 127.0.0.1 -P $PORT)
"$LOAD" sweep prepare "${C[@]}" --tables 1 --table-size 1000 2>/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "# build round rt_requests rate_per_s packets_received dropped rt_cpu_s rt_user_s wall_s ns_per_request user_ns_per_request load1"
for r in $(seq "$ROUNDS"); do
  for b in "${BUILDS[@]}"; do
    name=${b%%=*}; bin=${b#*=}
    /usr/bin/python3 - "$bin" "$PORT" "${INTERVAL:-1s}" "$SECS" "$D/rt.jsonl" "$D/ru" <<'PY' &
import os, sys, time
bin, port, interval, secs, out, ru = sys.argv[1:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    os.execv(bin, [bin, "rt", "--port", port, "--interface", "lo", "--interval", interval,
                   "--duration", secs + "s", "--json"])
_, status, r = os.wait4(pid, 0)
open(ru, "w").write(f"{r.ru_utime:.6f} {r.ru_stime:.6f} {time.monotonic() - t0:.3f} {status}\n")
PY
    rt=$!
    sleep 0.3
    "$LOAD" sweep run "${C[@]}" --workload point-select --threads 4 --warmup 0s \
      --duration "$((SECS + 1))s" --json >/dev/null 2>&1
    wait $rt
    python3 - "$name" "$r" "$D/rt.jsonl" "$D/ru" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
name, r, jl, ru, load = sys.argv[1:]
tot = [json.loads(l) for l in open(jl) if '"total"' in l][-1]
user, sys_, wall, status = map(float, open(ru).read().split())
cpu = user + sys_
rq, rc = tot['requests'], tot['capture']['received']
print(name, r, rq, round(tot['rate_per_s']), rc, tot['capture']['dropped'], f"{cpu:.4f}",
      f"{user:.4f}", f"{wall:.2f}", round(1e9 * cpu / max(rq, 1), 1),
      round(1e9 * user / max(rq, 1), 1), load, flush=True)
PY
  done
done
