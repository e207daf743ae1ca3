#!/usr/bin/env bash
# Time `spinscope profile --perf-script` against inferno's own CLI (`inferno-collapse-perf`) on
# the same perf-script text, interleaved, N repetitions each. Prints one line per run:
#   tool rep wall_s user_s sys_s
# Usage: profile_vs_inferno.sh FILE.perf [N]
# Make FILE.perf from a loaded server, e.g. (as root, MariaDB on this host):
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
for i in $(seq "$n"); do
  /usr/bin/time -f "spinscope $i %e %U %S" "$sp" profile --perf-script "$file" \
    --folded "$out/sp.folded" > /dev/null 2>> "$out/times"
  /usr/bin/time -f "inferno $i %e %U %S" "$inf" "$file" > "$out/inf.folded" 2>> "$out/times"
done
cat "$out/times"
echo "# folded stacks: spinscope $(wc -l < "$out/sp.folded"), inferno $(wc -l < "$out/inf.folded")"
echo "# samples: spinscope $(awk '{s+=$NF} END {print s}' "$out/sp.folded") (counts samples);" \
     "inferno $(awk '{s+=$NF} END {print s}' "$out/inf.folded") (sums sample periods)"
rm -rf "$out"
