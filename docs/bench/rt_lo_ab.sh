#!/usr/bin/env bash
# rt on `lo`: two builds interleaved while `sweep run` drives point selects over loopback TCP
# against a throwaway MariaDB. Prints one line per run:
#   build pair rt_requests rate_per_s packets_received packets_per_request dropped rt_cpu_s wall_s cpu_pct load1
# Usage: [INTERVAL=1s] docs/bench/rt_lo_ab.sh BEFORE_BINARY AFTER_BINARY [PAIRS] [SECONDS]   (as root)
set -euo pipefail
. "$(dirname "$(realpath "$0")")/throwaway_mariadb.sh"
A=$1; B=$2; PAIRS=${3:-3}; SECS=${4:-4}
D=$(mktemp -d /tmp/spinscope-rtab.XXXX)
trap 'mdb_stop "$D"; rm -rf "$D"' EXIT
mdb_start "$D"
PORT=$mdb_port
C=(--no-defaults -u root -h 127.0.0.1 -P $PORT)
"$A" sweep prepare "${C[@]}" --tables 1 --table-size 1000 2>/dev/null
for p in $(seq "$PAIRS"); do
  for pair in "before=$A" "after=$B"; do
    name=${pair%%=*}; bin=${pair#*=}
    /usr/bin/time -f '%U %S %e' -o "$D/t" "$bin" rt --port $PORT --interface lo --interval "${INTERVAL:-1s}" \
      --duration "${SECS}s" --json > "$D/rt.jsonl" 2>/dev/null &
    rt=$!
    sleep 0.3
    "$A" sweep run "${C[@]}" --workload point-select --threads 4 --warmup 0s --duration "$((SECS + 1))s" --json >/dev/null 2>&1
    wait $rt
    python3 - "$name" "$p" "$D/rt.jsonl" "$D/t" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
name, p, jl, t, load = sys.argv[1:]
tot = [json.loads(l) for l in open(jl) if '"total"' in l][-1]
u, s, w = map(float, open(t).read().split()[-3:])
rq, rc = tot['requests'], tot['capture']['received']
print(name, p, rq, round(tot['rate_per_s']), rc, round(rc / max(rq, 1), 2), tot['capture']['dropped'],
      round(u + s, 2), w, round(100 * (u + s) / w, 2), load)
PY
  done
done
