#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/parse_scaling.sh - time `mirsearch check` on chain programs of N
# ops (Ti = add(T(i-1), X)), to show that parsing is linear in the number
# of ops (tests/check_parse.c checks the ratio; this prints the times).
#   bench/parse_scaling.sh [MIRSEARCH] [N...]   (default 50000 100000 200000)
prog=${1:-src/mirsearch}
[ $# -gt 0 ] && shift
sizes=${*:-50000 100000 200000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_parse_scaling.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
for n in $sizes; do
  awk -v n="$n" 'BEGIN { print "input X : f32[4, 4]"; print "T0 = add(X, X)";
    for (i = 1; i < n; i++) printf "T%d = add(T%d, X)\n", i, i - 1; printf "output T%d\n", n - 1 }' \
    >"$tmp/chain.graph"
  t0=$(date +%s.%N)
  "$prog" check "$tmp/chain.graph" >/dev/null || exit 1
  t1=$(date +%s.%N)
  printf '%8d ops  %6.2f s\n' "$n" "$(echo "$t1 - $t0" | bc)"
done
