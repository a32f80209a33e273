#!/bin/sh
# SPDX-License-Identifier: MIT
# Real-shape benchmark: every published-shape example and its small twin,
# one after another in one run, each with the default options on one
# thread.  One row per run: states, states per CPU second of the search
# phase (before the final full-shape verification; CPU time, so that a
# loaded machine does not skew it), the whole run's CPU and wall seconds,
# peak RSS, time to best (wall), the best graph's kernels and predicted
# time, complete, and the kernel ops fingerprinted on a reduced instance.
# The last column of a published row is its states per CPU second over
# its twin's.
#
#   bench/shapes_bench.sh [MIRSEARCH] [EXTRA OPTIONS...]
#
# MIRSEARCH defaults to src/mirsearch.  Extra options go to every run
# (e.g. --time-limit=600).  BENCH_EXAMPLES="gqa mha" picks examples.
# Outputs go to bench/out/shapes/NAME/ (ignored by git).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/src/mirsearch}
[ $# -gt 0 ] && shift
out=$here/out/shapes
mkdir -p "$out"
examples=${BENCH_EXAMPLES:-"gated_mlp gqa lora mha mqa ntrans qknorm_attention rmsnorm_linear causal_attention gqa_safe mha_safe"}
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
counter() { sed -n "s/.*\"$2\": \\([0-9]*\\).*/\\1/p" "$1"; }
printf '%-24s %10s %9s %8s %8s %8s %9s %5s %9s %8s %8s %6s\n' \
  run states states/s cpu-s wall-s rss-MB to-best-s kern best-us complete reduced ratio
for ex in $examples; do
  small_rate=
  for name in "${ex}_small" "$ex"; do
    d=$out/$name
    rm -rf "$d"
    exopts=$(sed -n 's/^# options: *//p' "$top/examples/$name.graph" | head -n 1)
    # shellcheck disable=SC2086 # $exopts: the example's `# options:` line
    /usr/bin/time -f '%M %U %S' -o "$out/$name.rss" \
      "$bin" --out "$d" --set log_level=3 $exopts "$@" "$top/examples/$name.graph" \
      >/dev/null 2>"$out/$name.err"
    r=$d/report.json
    if [ ! -f "$r" ]; then
      printf '%-24s failed: %s\n' "$name" "$(grep -v '^search' "$out/$name.err" | head -n 1)"
      continue
    fi
    st=$(field "$r" states_explored); wall=$(field "$r" wall_seconds)
    tb=$(field "$r" time_to_best_seconds); comp=$(field "$r" complete)
    rate=$(sed -n 's/.*(\([0-9]*\) states per CPU second).*/\1/p' "$out/$name.err" | tail -n 1)
    kern=$(sed -n 's/.*"best": {[^}]*"kernels": \([0-9]*\).*/\1/p' "$r")
    cost=$(sed -n 's/.*"best": {[^}]*"cost": \([0-9.e+-]*\).*/\1/p' "$r")
    red=$(counter "$r" fp_reduced)
    rss=$(tail -n 1 "$out/$name.rss" | cut -d' ' -f1)
    cpu=$(tail -n 1 "$out/$name.rss" | awk '{ print $2 + $3 }')
    ratio=-
    if [ "$name" = "${ex}_small" ]; then
      small_rate=$rate
    elif [ -n "$small_rate" ] && [ -n "$rate" ] && [ "$small_rate" -gt 0 ]; then
      ratio=$(awk -v a="$rate" -v b="$small_rate" 'BEGIN { printf "%.2f", a / b }')
    fi
    awk -v n="$name" -v st="$st" -v rate="${rate:-0}" -v cpu="$cpu" -v wall="$wall" -v rss="$rss" -v tb="$tb" \
        -v kern="${kern:--}" -v cost="${cost:-}" -v comp="$comp" -v red="${red:-0}" -v ratio="$ratio" \
      'BEGIN { printf "%-24s %10d %9d %8.2f %8.2f %8.0f %9.2f %5s %9s %8s %8d %6s\n", n, st, rate, cpu, wall,
               rss / 1024, tb, kern, (cost == "" ? "-" : sprintf("%.2f", cost * 1e6)), comp, red, ratio }'
  done
done
