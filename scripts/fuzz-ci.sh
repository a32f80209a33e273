#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/fuzz-ci.sh [SECONDS] - CI's fuzzing step: a separate clang build
# (--enable-fuzzing: libFuzzer + ASan + UBSan) of the committed tree in a
# scratch directory, then every harness of tests/fuzz for SECONDS each
# (default 60: five harnesses, about five minutes in all on 2 cores).
set -e
secs=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mirs_fuzzbuild.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
git -C "$top" archive HEAD | tar -x -C "$work"
cd "$work"
./autogen.sh >/dev/null 2>&1
./configure -q CC=clang --enable-fuzzing --without-cuda --without-mpi
make -j2 fuzzers >/dev/null
make fuzz FUZZ_SECONDS="$secs"
