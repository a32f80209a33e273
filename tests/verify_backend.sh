#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/verify_backend.sh - the option --verify=auto|cpu|gpu at the
# command line: cpu works; auto works and says which backend it used;
# a bad value is a usage error (2); gpu refuses clearly where it cannot
# run: built without CUDA, exit 2 saying so; with CUDA but no usable
# device (or no module), exit 3 with a message naming the CUDA error;
# a search with --verify=gpu refuses before searching, and before it
# creates or clears its output directory.  On a machine with
# a GPU the gpu cases must succeed instead.
# Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
ex=$top_srcdir/examples

if [ ! -x "$prog" ]; then
  echo "verify_backend.sh: $prog not built" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_verify_backend.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

fail() {
  echo "FAIL: $1" >&2
  echo "  stdout: $(head -c 600 "$tmp/out")" >&2
  echo "  stderr: $(head -c 600 "$tmp/err")" >&2
  failures=$((failures + 1))
}

# run EXPECTED_EXIT ARGS...: run the program, check its exit status.
run() {
  want=$1
  shift
  "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  [ "$got" -eq "$want" ] || fail "mirsearch $* exited $got, expected $want"
}

P=$ex/mha_small.graph
C=$ex/mha_small.ugraph

run 0 verify --verify=cpu "$P" "$C"
grep -q '^fingerprint backend: cpu$' "$tmp/out" || fail "--verify=cpu does not say cpu"
grep -q '^fingerprint digest: [0-9a-f]\{16\}$' "$tmp/out" || fail "no fingerprint digest line"
cpu_digest=$(grep '^fingerprint digest' "$tmp/out")

run 0 verify --verify=auto "$P" "$C"
grep -q '^fingerprint backend: ' "$tmp/out" || fail "--verify=auto does not say its backend"
[ "$(grep '^fingerprint digest' "$tmp/out")" = "$cpu_digest" ] || fail "auto's digest differs"

run 2 verify --verify=fastest "$P" "$C"
grep -q "verify must be auto, cpu or gpu" "$tmp/err" || fail "bad value not explained"

features=$("$prog" --version | sed -n 's/^features: //p')
case $features in
  *cuda=no*)
    run 2 verify --verify=gpu "$P" "$C"
    grep -q "built without CUDA" "$tmp/err" || fail "gpu without CUDA not explained"
    run 2 --verify=gpu -q --out="$tmp/s" "$P"
    grep -q "built without CUDA" "$tmp/err" || fail "search: gpu without CUDA not explained"
    ;;
  *)
    # A module that cannot be loaded: exit 3 naming it.
    MIRS_GPUFP_LIB=/nonexistent/libmirsearch-gpufp.so "$prog" verify --verify=gpu "$P" "$C" \
      >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ $got -ne 0 ]; then
      [ $got -eq 3 ] || fail "gpu with a missing module exited $got, expected 3"
    fi
    "$prog" verify --verify=gpu "$P" "$C" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ $got -eq 0 ]; then
      echo "verify_backend.sh: a GPU is usable: $(grep '^fingerprint backend' "$tmp/out")"
      [ "$(grep '^fingerprint digest' "$tmp/out")" = "$cpu_digest" ] || fail "gpu's digest differs"
    else
      [ $got -eq 3 ] || fail "--verify=gpu without a device exited $got, expected 3"
      grep -q "CUDA\|cuda" "$tmp/err" || fail "no-device message does not name the CUDA error"
      # A search refuses before it starts.
      run 3 --verify=gpu -q --out="$tmp/s" "$P"
      grep -q "CUDA\|cuda" "$tmp/err" || fail "search: no-device message"
      [ -e "$tmp/s/report.json" ] && fail "search with --verify=gpu ran without a device"
      [ -e "$tmp/s" ] && fail "search with --verify=gpu created its output directory"
      nodevice=1
      # auto says it fell back, and why.
      run 0 verify --verify=auto "$P" "$C"
      grep -q '^fingerprint backend: cpu (no usable GPU: ' "$tmp/out" ||
        fail "auto does not say why the CPU was used"
    fi
    ;;
esac

# A search records the backend of its full-shape verification.
run 0 --verify=cpu --fp-reduce-min-elements=0 --max-kernel-ops=2 --verify-early=0 -q \
  --out="$tmp/r" "$ex/rmsnorm_linear_small.graph"
grep -q '"verify_backend": "cpu"' "$tmp/r/report.json" ||
  fail "report.json does not say verify_backend cpu: $(grep verify_backend "$tmp/r/report.json")"
# A --verify=gpu that cannot run leaves an earlier run's results as they
# were (it is refused before the directory is cleared).
if [ -n "${nodevice:-}" ]; then
  run 3 --verify=gpu -q --out="$tmp/r" "$ex/rmsnorm_linear_small.graph"
  [ -e "$tmp/r/report.json" ] && [ -e "$tmp/r/best.ugraph" ] ||
    fail "a refused --verify=gpu search removed the earlier results in its --out"
fi

[ $failures -eq 0 ] && echo "verify_backend.sh: all passed"
[ $failures -eq 0 ]
