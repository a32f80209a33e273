#!/bin/sh
# SPDX-License-Identifier: MIT
# Search benchmark: runs the default search on every small example, one
# after another, and prints one table row per example from its report.json:
# states, states/s, candidates verified, results, prune cache hit rate
# (pruning verdicts reused, from the worker's memo of block ops or the
# shared cache, over all pruning decisions), solver calls and their share
# of wall time, time to best, and whether the space was searched
# completely.
#
#   bench/search_bench.sh [MIRSEARCH] [EXTRA OPTIONS...]
#
# MIRSEARCH defaults to src/mirsearch.  Extra options go to every run
# (e.g. --time-limit=300).  Results go to bench/out/NAME/ (ignored by git).
# BENCH_REUSE=1 prints the table from the reports already there.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/src/mirsearch}
[ $# -gt 0 ] && shift
out=$here/out
mkdir -p "$out"
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
printf '%-26s %9s %9s %8s %7s %8s %7s %8s %8s %9s %5s %8s\n' \
  example states states/s verified results hit-rate solver solver% wall-s to-best-s kern complete
for f in "$top"/examples/*_small.graph; do
  name=$(basename "$f" .graph)
  rc=0
  # The example's own options (its `# options:` comment line, if any).
  exopts=$(sed -n 's/^# options: *//p' "$f" | head -n 1)
  if [ "${BENCH_REUSE:-0}" != 1 ]; then
    # shellcheck disable=SC2086 # $exopts is a list of options
    "$bin" -q --out "$out/$name" $exopts "$@" "$f" >/dev/null 2>"$out/$name.err"
    rc=$?
  fi
  r="$out/$name/report.json"
  if [ ! -f "$r" ]; then
    printf '%-26s failed (exit %d): %s\n' "$name" "$rc" "$(head -n 1 "$out/$name.err")"
    continue
  fi
  st=$(field "$r" states_explored); ver=$(field "$r" candidates_verified)
  found=$(field "$r" graphs_found); pc=$(field "$r" prune_calls)
  hits=$(field "$r" prune_cache_hits); sc=$(field "$r" solver_calls)
  memo=$(sed -n 's/.*"prune_memo": \([0-9]*\).*/\1/p' "$r")
  ss=$(field "$r" solver_seconds); wall=$(field "$r" wall_seconds)
  tb=$(field "$r" time_to_best_seconds); comp=$(field "$r" complete)
  kern=$(sed -n 's/.*"best": {[^}]*"kernels": \([0-9]*\).*/\1/p' "$r")
  awk -v n="$name" -v st="$st" -v ver="$ver" -v found="$found" -v pc="$pc" -v hits="$hits" -v memo="${memo:-0}" \
      -v sc="$sc" -v ss="$ss" -v wall="$wall" -v tb="$tb" -v kern="${kern:--}" -v comp="$comp" \
    'BEGIN { printf "%-26s %9d %9.0f %8d %7d %7.1f%% %7d %7.1f%% %8.2f %9.2f %5s %8s\n",
             n, st, (wall > 0 ? st / wall : 0), ver, found,
             (pc + memo > 0 ? 100 * (hits + memo) / (pc + memo) : 0),
             sc, (wall > 0 ? 100 * ss / wall : 0), wall, tb, kern, comp }'
done
