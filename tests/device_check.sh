#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device_check.sh - scripts/device-check.sh --dry-run: the pipeline
# the GPU machine runs (docs/GPU.md), here without a GPU, so the script is
# known to work before a GPU is at hand: every step passes or is skipped
# with a note, the 8 output files are written, generated code runs on the
# host backend within tolerance, and 1 and 2 threads give the same
# results.  A broken program must make it fail.
#
# Run by `make check` with top_srcdir and top_builddir set.  Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$(cd "$top_builddir" && pwd)/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
if [ ! -x "$prog" ]; then
  echo "device_check.sh: $prog not built" >&2
  exit 1
fi
command -v bash >/dev/null 2>&1 || { echo "device_check.sh: no bash" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_devcheck_sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $1" >&2
  failures=$((failures + 1))
}

MIRSEARCH=$prog bash "$top_srcdir/scripts/device-check.sh" "$tmp/out" --dry-run >"$tmp/log" 2>&1 ||
  { fail "device-check.sh --dry-run failed"; tail -n 30 "$tmp/log" >&2; }
for f in summary.txt log.txt runs.tsv bench.tsv bench.json device.profile fingerprints.tsv scaling.tsv; do
  [ -s "$tmp/out/$f" ] || fail "no $f"
done
[ "$(ls "$tmp/out" | wc -l)" -le 8 ] || fail "more than 8 files (the device tool brings back 8)"
grep -q '^overall: PASS$' "$tmp/out/summary.txt" || fail "summary says no overall PASS"
grep -q '	PASS	' "$tmp/out/runs.tsv" || fail "no generated-code run passed"
grep -q 'gqa_small	PASS	' "$tmp/out/runs.tsv" || fail "gqa_small's run did not pass"
grep -q 'wgmma_f16@wgmma	PASS	' "$tmp/out/runs.tsv" || fail "the Hopper path's run (wgmma_f16@wgmma) did not pass"
grep -q '	2	.*	yes$' "$tmp/out/scaling.tsv" || fail "2 threads did not give the 1-thread results"
grep -q 'SOURCES' "$tmp/out/bench.tsv" || fail "no bench harness written"
grep -q '^calibrate *PASS' "$tmp/out/summary.txt" || fail "the calibrate step did not pass"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out/bench.json" ||
    fail "bench.json is not JSON"
fi

# It can fail: a program that does not run fails the toolchain step.
printf '#!/bin/sh\nexit 3\n' >"$tmp/broken"
chmod +x "$tmp/broken"
if MIRSEARCH=$tmp/broken bash "$top_srcdir/scripts/device-check.sh" "$tmp/out2" --dry-run >"$tmp/log2" 2>&1; then
  fail "device-check.sh passed with a broken mirsearch"
fi
grep -q '^toolchain *FAIL' "$tmp/out2/summary.txt" || fail "a broken mirsearch is not a toolchain FAIL"

[ "$failures" -eq 0 ] || exit 1
exit 0
