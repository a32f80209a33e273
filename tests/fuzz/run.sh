#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh SECONDS SRCDIR BUILDDIR - run each libFuzzer harness
# (built with --enable-fuzzing) for SECONDS from its seed corpus; new
# inputs go to a scratch directory, never into the source tree.  A crash,
# leak, timeout (30 s per input) or out-of-memory (2 GB) fails the run and
# leaves the reproducer in BUILDDIR/fuzz-artifacts/ (add it to the corpus).
secs=${1:-60}
src=${2:-.}
build=${3:-.}
work=$(mktemp -d "${TMPDIR:-/tmp}/mirs_fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$build/fuzz-artifacts"
status=0
for h in parse verify search checkpoint codegen; do
  mkdir -p "$work/$h"
  echo "== fuzz_$h: $secs s"
  "$build/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$h-" \
    "$work/$h" "$src/tests/fuzz/corpus/$h" || status=1
done
exit $status
