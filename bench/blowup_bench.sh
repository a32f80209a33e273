#!/bin/sh
# SPDX-License-Identifier: MIT
# The space blow-ups of issue 13, side by side: square(X.W) and
# mul(X.W, X.W) against silu(X.W), and attention with an extra scale input,
# each searched with the default options up to a state cap (default
# 2,000,000; BLOWUP_STATES=N changes it).  One row each: states, states
# per CPU second, the run's CPU and wall seconds, results, complete.
# Run it with two binaries (before and after a change) one after the
# other to compare; the outputs of the last run stay in bench/out/blowup.
#
#   bench/blowup_bench.sh [MIRSEARCH] [EXTRA OPTIONS...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/src/mirsearch}
[ $# -gt 0 ] && shift
out=$here/out/blowup
mkdir -p "$out"
cap=${BLOWUP_STATES:-2000000}
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
printf '%-20s %10s %10s %8s %8s %8s %8s\n' program states states/s cpu-s wall-s results complete
for name in silu_xw square_xw mul_xw scaled_attention; do
  d=$out/$name
  rm -rf "$d"
  /usr/bin/time -f '%U %S' -o "$out/$name.time" \
    "$bin" --out "$d" --set log_level=3 --max-states="$cap" "$@" "$here/$name.graph" \
    >/dev/null 2>"$out/$name.err"
  r=$d/report.json
  if [ ! -f "$r" ]; then
    printf '%-20s failed: %s\n' "$name" "$(head -n 1 "$out/$name.err")"
    continue
  fi
  rate=$(sed -n 's/.*(\([0-9]*\) states per CPU second).*/\1/p' "$out/$name.err" | tail -n 1)
  cpu=$(tail -n 1 "$out/$name.time" | awk '{ printf "%.2f", $1 + $2 }')
  wall=$(field "$r" wall_seconds | awk '{ printf "%.2f", $1 }')
  printf '%-20s %10s %10s %8s %8s %8s %8s\n' "$name" "$(field "$r" states_explored)" "${rate:--}" \
    "$cpu" "$wall" "$(field "$r" graphs_found)" "$(field "$r" complete)"
done
