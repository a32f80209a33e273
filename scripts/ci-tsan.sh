#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The debug configuration (internal assertions: ALWAYS/NEVER fire) with
# ThreadSanitizer, on the tests that run threads: the parallel search, the
# search engine and the reliability tests (stops while workers run).
# Builds a copy of the committed tree in a temporary directory so the
# caller's build is left alone.  Usage: scripts/ci-tsan.sh [TESTS...]
set -euo pipefail
cd "$(dirname "$0")/.."
tests=${*:-tests/check_parallel tests/check_search tests/check_reliability}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_tsan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git archive --format=tar HEAD | tar -x -C "$tmp"
cd "$tmp"
./autogen.sh > build.log 2>&1
./configure --enable-debug --enable-tsan --enable-werror --without-mpi >> build.log 2>&1 ||
  { tail -40 build.log; exit 1; }
make -j2 >> build.log 2>&1 || { tail -40 build.log; exit 1; }
rc=0
make check -j2 TESTS="$tests" > check.log 2>&1 || rc=$?
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' check.log || true
if [ $rc -ne 0 ]; then
  for t in $tests; do [ -f "$t.log" ] && { echo "---- $t.log"; tail -80 "$t.log"; }; done
  echo "debug+TSan tests failed"
  exit 1
fi
echo "debug+TSan: $tests passed"
