#!/bin/sh
# SPDX-License-Identifier: MIT
# Pruning benchmark: the searches of bench/boxed_divisor.graph and
# bench/boxed_square.graph, whose targets divide by a sum (a boxed normal
# form), in a small space, with Z3's countermodel search on (the default),
# with only the unit weight models (--prune-solver=false), and with pruning
# off.  Prints one row per run: states, wall time, results, pruning calls,
# cache hits, unit-weight refutations, Z3 calls, Z3 refutations and Z3's
# share of wall time, and checks that each program's three result sets are
# equal.
#
#   bench/prune_bench.sh [MIRSEARCH]
#
# Results go to bench/out/prune-*/ (ignored by git).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/src/mirsearch}
out=$here/out
mkdir -p "$out"
space="--grid-x=1,2 --grid-y=1 --grid-z=1 --forloop-ranges=1,2 --max-block-ops=8
       --kernel-ops=matmul,exp,add,mul,div --max-kernel-ops=3 --op-budget=0"
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
counter() { sed -n "s/.*\"$2\": \\([0-9]*\\).*/\\1/p" "$1"; }
printf '%-24s %9s %8s %7s %9s %9s %8s %7s %8s %7s\n' \
  run states wall-s results prunes cache-hit weights z3 z3-refut z3%
for prog in boxed_divisor boxed_square; do
for run in solver:--prune-solver=true weights:--prune-solver=false off:--prune=false; do
  name=$prog-${run%%:*}
  opt=${run#*:}
  # shellcheck disable=SC2086
  "$bin" -q --out "$out/prune-$name" $space "$opt" "$here/$prog.graph" >/dev/null ||
    { echo "$name: mirsearch failed"; exit 1; }
  r="$out/prune-$name/report.json"
  wall=$(field "$r" wall_seconds); ss=$(field "$r" solver_seconds)
  awk -v n="$name" -v st="$(field "$r" states_explored)" -v wall="$wall" \
      -v found="$(field "$r" graphs_found)" -v pc="$(field "$r" prune_calls)" \
      -v hits="$(field "$r" prune_cache_hits)" -v wt="$(counter "$r" prune_weights)" \
      -v sc="$(field "$r" solver_calls)" -v sr="$(counter "$r" solver_refuted)" -v ss="$ss" \
    'BEGIN { printf "%-24s %9d %8.2f %7d %9d %9d %8d %7d %8d %6.1f%%\n",
             n, st, wall, found, pc, hits, wt, sc, sr, (wall > 0 ? 100 * ss / wall : 0) }'
  sed -n 's/.*"hash": "\([0-9a-f]*\)", "cost".*"file": "candidates.*/\1/p' "$r" | sort >"$out/prune-$name.hashes"
done
a=$out/prune-$prog
if cmp -s "$a-solver.hashes" "$a-weights.hashes" && cmp -s "$a-solver.hashes" "$a-off.hashes"; then
  echo "$prog result sets: equal ($(wc -l <"$a-solver.hashes") graphs)"
else
  echo "$prog result sets: DIFFER"; exit 1
fi
done
