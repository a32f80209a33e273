#!/bin/sh
# SPDX-License-Identifier: MIT
# Parallel search benchmark: searches one example (default: the small
# MHA, the longest small example) on each thread count in turn and prints
# states, states/s, wall seconds, speed-up and parallel efficiency against
# the first count, and whether the result list and best.ugraph are
# byte-identical to the first run's.  wall-s is the search's own wall
# (report.json); process-s is the whole command's, setup and writing the
# outputs included.  A run whose states or results differ
# is marked DIFFERENT (the script then exits 1).
#
#   bench/parallel_bench.sh [EXAMPLE.graph] [THREAD COUNTS...] [-- EXTRA OPTIONS]
#
# e.g. bench/parallel_bench.sh examples/mha_small.graph 1 2
#      bench/parallel_bench.sh examples/mha_small.graph 1 2 4 8 16
#      bench/parallel_bench.sh examples/gated_mlp_small.graph 1 2 -- --time-limit=60
# MIRSEARCH (default src/mirsearch) picks the binary.  Outputs go to
# bench/out/parallel-N/ (ignored by git).  Absolute times on a shared
# machine are noise: compare the ratios of one invocation, and run it on
# an otherwise idle machine for the efficiency figures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${MIRSEARCH:-$top/src/mirsearch}
ex=$top/examples/mha_small.graph
case "${1:-}" in *.graph) ex=$1; shift ;; esac
counts=
while [ $# -gt 0 ] && [ "$1" != -- ]; do counts="$counts $1"; shift; done
[ "${1:-}" = -- ] && shift
[ -n "$counts" ] || counts="1 2"
out=$here/out
mkdir -p "$out"
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
results() { sed -n '/"results"/,$p' "$1"; }
printf '%s, load %s\n' "$(basename "$ex" .graph)" "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
printf '%8s %10s %10s %9s %8s %11s %10s %9s %10s\n' threads states states/s wall-s speedup efficiency process-s results identical
first=
status=0
for n in $counts; do
  d=$out/parallel-$n
  t0=$(date +%s.%N)
  "$bin" -q --threads="$n" --out "$d" "$@" "$ex" >/dev/null 2>"$d.err"
  rc=$?
  t1=$(date +%s.%N)
  r=$d/report.json
  if [ $rc -ne 0 ] || [ ! -f "$r" ]; then
    printf '%8s failed (exit %d): %s\n' "$n" "$rc" "$(head -n 1 "$d.err")"
    status=1
    continue
  fi
  st=$(field "$r" states_explored); wall=$(field "$r" wall_seconds); found=$(field "$r" graphs_found)
  same=yes
  if [ -z "$first" ]; then
    first=$n; st1=$st; wall1=$wall; n1=$n
  else
    if [ "$st" != "$st1" ] || ! results "$r" | cmp -s - "$out/parallel-$first.results" ||
       ! cmp -s "$d/best.ugraph" "$out/parallel-$first/best.ugraph"; then
      same=DIFFERENT; status=1
    fi
  fi
  [ "$n" = "$first" ] && results "$r" >"$out/parallel-$first.results"
  awk -v n="$n" -v st="$st" -v wall="$wall" -v wall1="$wall1" -v n1="$n1" -v found="$found" -v same="$same" \
      -v ps="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    'BEGIN { sp = wall > 0 ? wall1 / wall : 0;
             printf "%8d %10d %10.0f %9.2f %7.2fx %10.0f%% %10.2f %9d %10s\n",
                    n, st, (wall > 0 ? st / wall : 0), wall, sp, 100 * sp * n1 / n, ps, found, same }'
done
exit $status
