#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/cli.sh - the installed-shape mirsearch binary, run as a process:
# exit statuses, what goes to stdout and what to stderr, and the format of
# --version's first line.  (check_cli.c covers behaviour in depth,
# in-process; this test checks the real executable and its streams.)
#
# Run by `make check` with top_srcdir and top_builddir set; by hand from
# a build directory they default to the script's tree and ".".
# Exit: 0 pass, 1 fail, 77 skip.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE

if [ ! -x "$prog" ]; then
  echo "cli.sh: $prog not built" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_cli_sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

# fail MESSAGE: record a failure and show the last run's streams.
fail() {
  echo "FAIL: $1" >&2
  echo "  stdout: $(head -c 400 "$tmp/out")" >&2
  echo "  stderr: $(head -c 400 "$tmp/err")" >&2
  failures=$((failures + 1))
}

# run ARGS...: run the program, leaving stdout, stderr and $status.
run() {
  "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}

# expect STATUS DESCRIPTION: the last run exited with STATUS.
expect() {
  [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1"
}

# Success: output on stdout only.
run --version
expect 0 "--version"
head -n 1 "$tmp/out" | grep -Eq '^mirsearch [0-9]+\.[0-9]+\.[0-9]+([-+.][0-9A-Za-z.-]+)?$' ||
  fail "--version first line is not 'mirsearch X.Y.Z'"
[ -s "$tmp/err" ] && fail "--version wrote to stderr"
grep -q '^features: ' "$tmp/out" || fail "--version has no features line"

run --help
expect 0 "--help"
grep -q '^Usage: mirsearch' "$tmp/out" || fail "--help has no usage line"
grep -q 'max-errors\|max_errors' "$tmp/out" || fail "--help does not list library options"
[ -s "$tmp/err" ] && fail "--help wrote to stderr"

ex=$top_srcdir/examples/gqa_small.graph
run check "$ex"
expect 0 "check"
[ -s "$tmp/out" ] || fail "check printed nothing"
[ -s "$tmp/err" ] && fail "check wrote to stderr"

# The canonical form reads back to itself.
cp "$tmp/out" "$tmp/canon.graph"
run check "$tmp/canon.graph"
expect 0 "check of the canonical form"
cmp -s "$tmp/out" "$tmp/canon.graph" || fail "canonical form does not round-trip"

run -q eval "$ex" --seed 5
expect 0 "eval"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "eval did not print one line per output"
grep -Eq '^O f16\[2, 8, 16\] sum=[-0-9.e+]+ l2=[-0-9.e+]+ min=[-0-9.e+]+ max=[-0-9.e+]+ checksum=[-0-9.e+]+$' \
  "$tmp/out" || fail "eval line format"
[ -s "$tmp/err" ] && fail "eval wrote to stderr"

# Failures: nothing on stdout, the message on stderr, exit 2.
printf 'input X : f16[2, 4]\nY = nosuchop(X)\noutput Y\n' >"$tmp/bad.graph"
run check "$tmp/bad.graph"
expect 2 "malformed input"
[ -s "$tmp/out" ] && fail "malformed input wrote to stdout"
head -n 1 "$tmp/err" | grep -q "^$tmp/bad.graph:[0-9][0-9]*:[0-9][0-9]*: error: " ||
  fail "malformed input diagnostic is not FILE:LINE:COL: error:"

run check "$tmp/does-not-exist.graph"
expect 2 "missing file"
[ -s "$tmp/out" ] && fail "missing file wrote to stdout"
grep -q "does-not-exist.graph" "$tmp/err" || fail "missing file message lacks the path"

run --no-such-option check "$ex"
expect 2 "unknown option"
[ -s "$tmp/out" ] && fail "unknown option wrote to stdout"
grep -q "^mirsearch: error: " "$tmp/err" || fail "unknown option message prefix"
grep -q "Try 'mirsearch --help'." "$tmp/err" || fail "unknown option hint"

run
expect 2 "no arguments"
[ -s "$tmp/out" ] && fail "no arguments wrote to stdout"

run --max-dims=99 check "$ex"
expect 2 "out-of-range option value"
grep -q "^mirsearch: error: " "$tmp/err" || fail "out-of-range value message prefix"

# SIGTERM and SIGUSR1 stop a search cleanly: exit 4, the results so far, a
# report that says the search is incomplete, a checkpoint and how to
# resume; resuming (on another thread count) ends complete.
for sig in TERM USR1; do
  rm -rf "$tmp/sout"
  "$prog" -q --threads=2 --out "$tmp/sout" "$top_srcdir/examples/qknorm_attention_small.graph" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  sleep 2
  kill -$sig $pid 2>/dev/null
  wait $pid
  rc=$?
  [ $rc -eq 4 ] || fail "search stopped by SIG$sig: exit $rc, expected 4 ($(cat "$tmp/err"))"
  [ -f "$tmp/sout/report.json" ] || fail "search stopped by SIG$sig wrote no report"
  [ -f "$tmp/sout/checkpoint" ] || fail "search stopped by SIG$sig wrote no checkpoint"
  grep -q -- "--resume=$tmp/sout" "$tmp/err" || fail "SIG$sig: no resume hint ($(cat "$tmp/err"))"
  grep -q '"complete": false' "$tmp/sout/report.json" || fail "interrupted report does not say incomplete"
  ls "$tmp/sout" | grep -q '\.tmp\.' && fail "temp files left in the output directory"
  [ -d "$tmp/sout/candidates.tmp" ] && fail "candidates.tmp left in the output directory"
done
run -q --resume="$tmp/sout" --threads=1 --time-limit=1
case $status in 0|4) ;; *) fail "resume: exit $status ($(cat "$tmp/err"))" ;; esac
# A damaged checkpoint is refused (exit 2) with the file named.
if [ -f "$tmp/sout/checkpoint" ]; then
  printf 'X' | dd of="$tmp/sout/checkpoint" bs=1 seek=100 conv=notrunc 2>/dev/null
  run -q --resume="$tmp/sout"
  expect 2 "damaged checkpoint"
  grep -q "checkpoint" "$tmp/err" || fail "damaged checkpoint message does not name the file"
fi

# A failed write to stdout is an I/O error (3), not success.
if [ -w /dev/full ]; then
  "$prog" check "$ex" >/dev/full 2>"$tmp/err"
  status=$?
  [ "$status" -eq 3 ] || fail "write to /dev/full: exit $status, expected 3"
fi

if [ "$failures" -ne 0 ]; then
  echo "cli.sh: $failures failure(s)" >&2
  exit 1
fi
echo "cli.sh: all passed"
exit 0
