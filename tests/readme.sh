#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/readme.sh - the README's sample outputs are what mirsearch prints:
# the quick start's search summary (all but its wall time) and the text
# about it, `show` of its best µGraph, and the `verify`, `run` and
# `partition` samples of "Command line" and "Whole programs".  A change
# of the search space, the cost model or the printers that makes them
# stale fails here (regenerate them from the commands the README shows).
#
# Run by `make check` with top_srcdir and top_builddir set.
# Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
readme=$top_srcdir/README.md
[ -x "$prog" ] || { echo "readme.sh: $prog not built" >&2; exit 1; }
case $prog in /*) ;; *) prog=$(pwd)/$prog ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() { echo "FAIL: $1" >&2; failures=$((failures + 1)); }

# block AFTER: the first ``` block after the line containing AFTER;
# session LINE: the lines of a ``` block after its line LINE (a command).
session() {
  awk -v cmd="$1" '$0 == cmd { on = 1; next } on && /^```/ { exit } on { print }' "$readme"
}
block() {
  awk -v after="$1" 'index($0, after) { on = 1; next }
    on && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$readme"
}

# The search summary (the directory as the quick start names it: the
# program's name plus .out, here inside the temporary directory).
(cd "$tmp" && "$prog" "$top_srcdir/examples/rmsnorm_linear_small.graph") >"$tmp/out" 2>"$tmp/err" ||
  fail "the quick start search: $(cat "$tmp/err")"
norm() { sed -E 's/ in [0-9]+\.[0-9]+s \(/ in Ts (/'; }
block "The quick start's search prints a summary on stdout" | norm >"$tmp/want"
norm <"$tmp/out" >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got" ||
  fail "README's search summary differs from the program's (- README, + mirsearch):
$(diff "$tmp/want" "$tmp/got")"
n=$(sed -n 's/^[a-z_]*: \([0-9]*\) graphs found.*/\1/p' "$tmp/got")
grep -q "^- \*\*$n graphs found\*\*: $n different" "$readme" ||
  fail "README's explanation does not say $n graphs found"

# show of the best.
"$prog" show "$tmp/rmsnorm_linear_small.out/best.ugraph" >"$tmp/show" 2>"$tmp/err" ||
  fail "show: $(cat "$tmp/err")"
session '$ src/mirsearch show rmsnorm_linear_small.out/best.ugraph' >"$tmp/want"
cmp -s "$tmp/want" "$tmp/show" ||
  fail "README's show output differs (- README, + mirsearch):
$(diff "$tmp/want" "$tmp/show")"

# verify (all but the backend line, which names this machine's GPU or
# why there is none), run on the host emulator, and partition (the lines
# shown; "..." stands for the rest).
(cd "$top_srcdir" && "$prog" verify examples/rmsnorm_linear.graph examples/rmsnorm_linear.ugraph) \
  >"$tmp/verify" 2>"$tmp/err" || fail "verify: $(cat "$tmp/err")"
session '$ src/mirsearch verify examples/rmsnorm_linear.graph examples/rmsnorm_linear.ugraph' |
  grep -v '^fingerprint backend:' >"$tmp/want"
grep -v '^fingerprint backend:' "$tmp/verify" | cmp -s "$tmp/want" - ||
  fail "README's verify output differs (- README, + mirsearch):
$(grep -v '^fingerprint backend:' "$tmp/verify" | diff "$tmp/want" -)"
(cd "$top_srcdir" && "$prog" run examples/gqa_small.ugraph) >"$tmp/run" 2>"$tmp/err" ||
  fail "run: $(cat "$tmp/err")"
session '$ src/mirsearch run examples/gqa_small.ugraph' >"$tmp/want"
cmp -s "$tmp/want" "$tmp/run" ||
  fail "README's run output differs (- README, + mirsearch):
$(diff "$tmp/want" "$tmp/run")"
(cd "$tmp" && "$prog" partition "$top_srcdir/tests/partition_graphs/block.graph" \
  --partition-max-ops=2) >"$tmp/part" 2>"$tmp/err" || fail "partition: $(cat "$tmp/err")"
session '$ src/mirsearch partition tests/partition_graphs/block.graph --partition-max-ops=2' |
  grep -v '^\.\.\.$' >"$tmp/want"
while IFS= read -r line; do
  grep -qxF "$line" "$tmp/part" || fail "README's partition line is not printed: $line
(mirsearch printed:
$(cat "$tmp/part"))"
done <"$tmp/want"

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
