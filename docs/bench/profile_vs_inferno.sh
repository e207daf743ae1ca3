#!/usr/bin/env bash
# Time `spinscope profile --perf-script` against inferno's own CLI (`inferno-collapse-perf`,
# default 2 threads, and `-n 1`, one thread) on the same
# perf-script text, interleaved (one run of each tool per round), N rounds. Prints one line per
# run:   tool rep wall_s user_s sys_s maxrss_kb
# Summarise with profile_stats.py; KEEP=dir keeps the folded outputs of the last round.
# Usage: profile_vs_inferno.sh FILE.perf [N]
#   SPINSCOPE=path (default target/release/spinscope), INFERNO=path,
#   SPINSCOPE_BEFORE=path: also time an older build (for before/after of a change).
# FILE.perf: docs/bench/gen_perf_script.py 100000 > bench100k.perf (synthetic, from the
# fixture), or a real recording, e.g. (as root, MariaDB on this host):
#   mariadb-slap -uroot --concurrency=16 --iterations=100 --number-of-queries=200000 \
#     --auto-generate-sql --auto-generate-sql-load-type=mixed &
#   perf record -F 4999 -g -p "$(pidof mariadbd)" -o bench.data -- sleep 17
#   perf script -i bench.data > bench100k.perf
# The peer: `cargo install inferno --locked` (not a dependency of the project).
set -euo pipefail
file=$1; n=${2:-7}
sp=${SPINSCOPE:-target/release/spinscope}
inf=${INFERNO:-$HOME/.cargo/bin/inferno-collapse-perf}
out=$(mktemp -d)
fmt="%e %U %S %M"
for i in $(seq "$n"); do
  /usr/bin/time -o "$out/t" -f "spinscope $i $fmt" "$sp" profile --perf-script "$file" \
    --folded "$out/sp.folded" > /dev/null; cat "$out/t"
  /usr/bin/time -o "$out/t" -f "inferno $i $fmt" "$inf" "$file" > "$out/inf.folded"; cat "$out/t"
  /usr/bin/time -o "$out/t" -f "inferno-n1 $i $fmt" "$inf" -n 1 "$file" > "$out/inf1.folded"
  cat "$out/t"
  if [ -n "${SPINSCOPE_BEFORE:-}" ]; then
    /usr/bin/time -o "$out/t" -f "spinscope-before $i $fmt" "$SPINSCOPE_BEFORE" profile \
      --perf-script "$file" --folded "$out/before.folded" > /dev/null; cat "$out/t"
  fi
done
echo "# weight: spinscope $(awk '{s+=$NF} END {printf "%d", s}' "$out/sp.folded");" \
     "inferno $(awk '{s+=$NF} END {printf "%d", s}' "$out/inf.folded") (both sum sample periods)"
# spinscope marks kernel frames _[k], as inferno does with --kernel: compare with that output.
"$inf" --kernel "$file" > "$out/infk.folded"
cmp -s "$out/sp.folded" "$out/infk.folded" && echo "# spinscope and inferno-collapse-perf --kernel: identical folded output"
cmp -s "$out/inf.folded" "$out/inf1.folded" && echo "# inferno -n 1 and -n 2: identical output"
if [ -n "${SPINSCOPE_BEFORE:-}" ]; then
  cmp -s "$out/sp.folded" "$out/before.folded" && echo "# spinscope before/after: identical folded output"
fi
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"; cp "$out"/*.folded "$KEEP"/
  echo "# folded outputs kept in $KEEP (compare: profile_stats.py --compare $KEEP)"
fi
rm -rf "$out"
