#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/bench_emulated.sh - `mirsearch bench` end to end without a GPU, on
# an emulated one: tests/fakecuda/libcuda.c (a driver reporting one
# device) and tests/fakecuda/nvcc (the harness compiled as host C++
# through the emulation header, with a host cuBLAS of cuBLAS's
# column-major meaning in tests/fakecuda/cublas_v2.h).  So the harness,
# its cuBLAS baseline's row-major-as-transposed calls, the check against
# the float64 interpreter, the timing loop and its parsing, the table,
# the JSON and `bench --rank` all run before a GPU is ever at hand.  The
# times are host times and mean nothing.
#
# Run by `make check` with top_srcdir, top_builddir, CC and NVCC set.
# Exit: 0 pass, 1 fail, 77 skip (no C or C++ compiler, or built without
# CUDA: then bench refuses by design).

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
ex=$top_srcdir/examples
cc=${CC:-cc}
command -v c++ >/dev/null 2>&1 || { echo "bench_emulated.sh: no c++" >&2; exit 77; }
# Built without nvcc, bench refuses by design (tests/bench.sh checks that).
[ -n "${NVCC:-}" ] || { echo "bench_emulated.sh: built without CUDA" >&2; exit 77; }
[ -x "$prog" ] || { echo "bench_emulated.sh: $prog not built" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_bench_emu.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $1" >&2
  echo "  stdout: $(head -c 800 "$tmp/out")" >&2
  echo "  stderr: $(head -c 800 "$tmp/err")" >&2
  failures=$((failures + 1))
}
# The sanitizer builds' flags would need their runtime in the fake driver: none.
$cc -shared -fPIC -o "$tmp/libcuda.so.1" "$top_srcdir/tests/fakecuda/libcuda.c" ||
  { echo "bench_emulated.sh: cannot build the fake driver" >&2; exit 77; }
run() {
  LD_LIBRARY_PATH=$tmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$prog" \
    --codegen-nvcc="$top_srcdir/tests/fakecuda/nvcc" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}
expect() {
  [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1"
}
# No harness folder left in $tmp/tmpdir (the TMPDIR of the run before).
no_leftovers() {
  [ -z "$(ls -A "$tmp/tmpdir")" ] || fail "$1: left $(ls "$tmp/tmpdir" | tr '\n' ' ')in TMPDIR"
}

# A good candidate against its program: checked, then timed in 4 configurations.
run bench --json --cuda-graph "$ex/gqa_small.ugraph" --program="$ex/gqa_small.graph"
expect 0 "bench of gqa_small"
grep -q '"device": "Emulated H100"' "$tmp/out" || fail "bench: not on the emulated device"
grep -q '"checked": true' "$tmp/out" || fail "bench: the candidate was not within tolerance"
grep -q '"baseline_checked": true' "$tmp/out" ||
  fail "bench: the cuBLAS baseline was not within tolerance (its calls are wrong)"
grep -q '"baseline_cublas_calls": 2' "$tmp/out" || fail "bench: gqa_small's 2 matmuls not on cuBLAS"
[ "$(grep -c '"reps": 100' "$tmp/out")" -eq 4 ] || fail "bench: not 4 configurations of 100 runs"
grep -q '"speedup": [0-9]' "$tmp/out" || fail "bench: no speedup"

# Layout ops: the candidate reads the head split as strided views and
# stores the merge in place (2 kernels, no layout copy); the baseline, the
# program as written, keeps them dense (permute copies, its 3 matmuls on
# cuBLAS reading dense buffers); both match float64.
hv=$top_srcdir/tests/codegen/heads_views
run bench --json "$hv.ugraph" --program="$hv.graph"
expect 0 "bench of heads_views"
grep -q '"checked": true' "$tmp/out" || fail "bench: heads_views' candidate not within tolerance"
grep -q '"baseline_checked": true' "$tmp/out" ||
  fail "bench: heads_views' baseline not within tolerance (dense layouts)"
grep -q '"baseline_cublas_calls": 3' "$tmp/out" || fail "bench: heads_views' 3 matmuls not on cuBLAS"

# The table, on a program whose matmul's operand is rms-normalised first.
run bench "$ex/rmsnorm_linear_small.ugraph" --program="$ex/rmsnorm_linear_small.graph"
expect 0 "bench of rmsnorm_linear_small"
grep -q '^speedup over unfused: [0-9.]*x$' "$tmp/out" || fail "bench: no speedup line"
grep -q '^unfused (1 cuBLAS, 1 k) *100 ' "$tmp/out" || fail "bench: no unfused row"

# A wrong candidate is never timed.
run bench "$top_srcdir/tests/codegen/wrong_gqa_small.ugraph" --program="$ex/gqa_small.graph"
expect 1 "bench of a wrong candidate"
grep -q 'nothing timed' "$tmp/err" || fail "a wrong candidate: no 'nothing timed'"
[ -s "$tmp/out" ] && fail "a wrong candidate: something printed on stdout"

# A harness that fails when run (as a kernel's illegal access makes it):
# bench says which run and what it printed, exit 3, nothing timed.
FAKE_NVCC_CRASH_IF="µGraph gqa_small," run bench "$ex/gqa_small.ugraph" --program="$ex/gqa_small.graph"
expect 3 "bench of a harness that fails"
grep -q "the bench harness's check run failed (exit 1):" "$tmp/err" &&
  grep -q 'illegal memory access' "$tmp/err" || fail "a harness that fails: no message naming the run"
[ -s "$tmp/out" ] && fail "a harness that fails: something printed on stdout"

# --rank: two results, timed in the model's order; the correlation is +-1.
mkdir -p "$tmp/ranked/candidates"
cp "$ex/rmsnorm_linear_small.ugraph" "$tmp/ranked/candidates/0001-a.ugraph"
cp "$ex/gqa_small.ugraph" "$tmp/ranked/candidates/0002-b.ugraph"
run bench --rank="$tmp/ranked"
expect 0 "bench --rank"
grep -q '"rank_correlation": -\{0,1\}1[,.]' "$tmp/ranked/measured.json" ||
  fail "bench --rank: no correlation of +-1 ($(grep rank_correlation "$tmp/ranked/measured.json"))"
[ "$(grep -c '"measured_seconds": [0-9]' "$tmp/ranked/measured.json")" -eq 2 ] ||
  fail "bench --rank: not 2 measured results"
[ -s "$tmp/ranked/best_measured.ugraph" ] || fail "bench --rank: no best_measured.ugraph"

# The harnesses of a ranking compile in parallel (at most --threads at
# once), then run one at a time.  Three candidates, each build 1 s long:
# with 2 jobs some build sees another one running, with 1 none does.
# Where this process may use a single CPU, 1 job is all there is.
cp "$ex/mha_small.ugraph" "$tmp/ranked/candidates/0003-c.ugraph"
cpus=$(nproc 2>/dev/null || echo 1)
for jobs in 1 2; do
  rm -rf "$tmp/trace" "$tmp/tmpdir" "$tmp/ranked/measured.json"
  mkdir -p "$tmp/trace" "$tmp/tmpdir"
  TMPDIR=$tmp/tmpdir FAKE_NVCC_TRACE=$tmp/trace FAKE_NVCC_SLEEP=1 run bench --threads=$jobs --rank="$tmp/ranked"
  expect 0 "bench --rank with $jobs build jobs"
  [ "$(grep -c '"measured_seconds": [0-9]' "$tmp/ranked/measured.json")" -eq 3 ] ||
    fail "bench --rank with $jobs build jobs: not 3 measured results"
  seen=$(sort -n "$tmp/trace/seen" | tail -1)
  want=$jobs
  [ "$cpus" -lt "$jobs" ] && want=$cpus
  [ "$(grep -c . "$tmp/trace/seen")" -eq 3 ] && [ "$seen" -eq "$want" ] ||
    fail "bench --rank with $jobs build jobs: at most $seen builds at once, expected $want ($(tr '\n' ' ' <"$tmp/trace/seen"))"
  # (One round: every harness is built before the first runs.)
  most=$(sort -n "$tmp/trace/dirs" | tail -1)
  [ "$jobs" -eq 2 ] || [ "$most" -eq 3 ] ||
    fail "bench --rank with 1 build job: the third build saw $most harness folders, not 3"
done
# In rounds (MIRS_TEST_BENCH_ROUND=2, a fault-injection build's hook; 64
# otherwise): no more harnesses are built before the first of them runs,
# so no build sees more than 2 harness folders, where one round of 3
# holds 3 (above).  (A build without the hook: skipped.)
if grep -q 'define MIRS_FAULT_INJECTION 1' "$top_builddir/config.h" 2>/dev/null; then
  for round in 2; do
    rm -rf "$tmp/trace" "$tmp/tmpdir" "$tmp/ranked/measured.json"
    mkdir -p "$tmp/trace" "$tmp/tmpdir"
    TMPDIR=$tmp/tmpdir MIRS_TEST_BENCH_ROUND=$round FAKE_NVCC_TRACE=$tmp/trace run bench --threads=1 --rank="$tmp/ranked"
    expect 0 "bench --rank in rounds of $round"
    [ "$(grep -c '"measured_seconds": [0-9]' "$tmp/ranked/measured.json")" -eq 3 ] ||
      fail "bench --rank in rounds of $round: not 3 measured results"
    most=$(sort -n "$tmp/trace/dirs" | tail -1)
    [ "$most" -eq "$round" ] ||
      fail "bench --rank in rounds of $round: a build saw $most harness folders ($(tr '\n' ' ' <"$tmp/trace/dirs"))"
  done
fi
# A harness that does not compile is that candidate's failure: the others
# are ranked all the same; the error names the compiler and the file,
# measured.json says why, the exit status is 3; the other builds go on
# and no temporary directory is left behind.
mkdir -p "$tmp/tmpdir"
rm -f "$tmp/ranked/measured.json" "$tmp/ranked/best_measured.ugraph"
TMPDIR=$tmp/tmpdir FAKE_NVCC_FAIL_IF="µGraph gqa_small," FAKE_NVCC_TRACE=$tmp/trace FAKE_NVCC_SLEEP=1 \
  run bench --threads=3 --rank="$tmp/ranked"
expect 3 "bench --rank with a harness that does not compile"
grep -q 'error: .*/candidates/0002-b.ugraph: the bench harness does not compile with .*fakecuda/nvcc (exit 1)' "$tmp/err" ||
  fail "a harness that does not compile: no message naming the file and the compiler"
grep -q 'failing as asked' "$tmp/err" || fail "a harness that does not compile: no compiler output"
grep -q 'bench: candidate 2 of 3: not timed (the bench harness does not compile' "$tmp/err" &&
  grep -q 'bench: candidate 3 of 3: [0-9.]* us (median of 100)' "$tmp/err" ||
  fail "a harness that does not compile: no line for each candidate as it ends"
[ "$(grep -c '"measured_seconds": [0-9]' "$tmp/ranked/measured.json")" -eq 2 ] ||
  fail "a harness that does not compile: the other 2 not measured"
grep -q '"file": "candidates/0002-b.ugraph".*"measured_seconds": null.*"checked": false, "error": "the bench harness does not compile' \
  "$tmp/ranked/measured.json" || fail "a harness that does not compile: measured.json does not say why"
grep -q '^candidates/0002-b.ugraph .*(its harness failed: not timed)$' "$tmp/out" ||
  fail "a harness that does not compile: the table does not say so"
[ -s "$tmp/ranked/best_measured.ugraph" ] || fail "a harness that does not compile: no measured best"
no_leftovers "a harness that does not compile"
# So is a harness whose run fails (as a kernel's illegal access makes it).
TMPDIR=$tmp/tmpdir FAKE_NVCC_CRASH_IF="µGraph mha_small," run bench --threads=1 --rank="$tmp/ranked"
expect 3 "bench --rank with a harness that fails"
grep -q "0003-c.ugraph: the bench harness's check run failed (exit 1):" "$tmp/err" &&
  grep -q 'illegal memory access' "$tmp/err" ||
  fail "a harness that fails: no message naming the file, the run and its output"
[ "$(grep -c '"measured_seconds": [0-9]' "$tmp/ranked/measured.json")" -eq 2 ] ||
  fail "a harness that fails: the other 2 not measured"
# ... and one that never ends, killed at the run limit (300 s; 2 s through
# a fault-injection build's MIRS_TEST_BENCH_RUN_LIMIT, alone: an emulated
# timing run lasts seconds).
if grep -q 'define MIRS_FAULT_INJECTION 1' "$top_builddir/config.h" 2>/dev/null; then
  mkdir -p "$tmp/hang/candidates"
  cp "$ex/mha_small.ugraph" "$tmp/hang/candidates/0001-a.ugraph"
  TMPDIR=$tmp/tmpdir MIRS_TEST_BENCH_RUN_LIMIT=2 FAKE_NVCC_HANG_IF="µGraph mha_small," \
    run bench --threads=1 --rank="$tmp/hang"
  expect 3 "bench --rank with a harness that hangs"
  grep -q "0001-a.ugraph: the bench harness's check run had not ended after 2 s: killed" "$tmp/err" ||
    fail "a harness that hangs: not killed at the run limit"
  grep -q '"best": null' "$tmp/hang/measured.json" || fail "a harness that hangs: a measured best"
  no_leftovers "a harness that hangs"
fi
# Where no harness runs, there is no measured best: an earlier one is removed.
TMPDIR=$tmp/tmpdir FAKE_NVCC_FAIL_IF="generated by mirsearch" run bench --threads=2 --rank="$tmp/ranked"
expect 3 "bench --rank where no harness compiles"
grep -q '"best": null' "$tmp/ranked/measured.json" || fail "no harness compiles: a measured best"
[ -e "$tmp/ranked/best_measured.ugraph" ] && fail "no harness compiles: best_measured.ugraph left"
[ "$(grep -c '"error": "the bench harness does not compile' "$tmp/ranked/measured.json")" -eq 3 ] ||
  fail "no harness compiles: not 3 errors in measured.json"
rm "$tmp/ranked/candidates/0003-c.ugraph"

# A search that times its own top results (--measure-top): the fastest
# checked one becomes best.ugraph, report.json has both times; the model's
# ranks and files stay.  Without the (fake) driver nothing is timed and
# report.json says why.
space="--threads=1 --no-cache --grid-x=1,2 --grid-y=1 --grid-z=1 --forloop-ranges=1,2
       --max-block-ops=6"
# shellcheck disable=SC2086
run --out="$tmp/s" --measure-top=2 $space "$ex/gqa_small.graph"
expect 0 "a search with --measure-top=2"
grep -q '"times": "measured"' "$tmp/s/report.json" || fail "search: times not measured"
grep -q '"measurement": {"top": 2, "device": "Emulated H100", "reps": 100, "best_rank": [12],' \
  "$tmp/s/report.json" || fail "search: no measurement of the top 2"
[ "$(grep -c '"measured_seconds": [0-9]' "$tmp/s/report.json")" -eq 3 ] ||
  fail "search: not 2 measured results and a measured best"
r=$(sed -n 's/.*"best": {"hash": "[0-9a-f]*", "rank": \([0-9]*\),.*/\1/p' "$tmp/s/report.json")
f=$(ls "$tmp/s/candidates" | sed -n "${r:-0}p")
[ -n "$f" ] && cmp -s "$tmp/s/best.ugraph" "$tmp/s/candidates/$f" ||
  fail "search: best.ugraph is not the measured best (rank ${r:-?})"
grep -q "measured [0-9.]* us (rank $r of the model's top 2 timed)" "$tmp/out" ||
  fail "search: the summary does not give the measured best"
# A result whose harness fails (the model's first: the first build) is
# not timed, a warning says why, report.json too; the other is timed
# and is the best; the search's results and exit status stay.
rm -rf "$tmp/trace" && mkdir -p "$tmp/trace"
# shellcheck disable=SC2086
FAKE_NVCC_TRACE=$tmp/trace FAKE_NVCC_CRASH_BUILD=1 run --out="$tmp/sf" --measure-top=2 $space \
  "$ex/gqa_small.graph"
expect 0 "a search with --measure-top=2 whose first harness fails"
grep -q "warning: 1 of the top 2 results were not timed (report.json gives each one's reason); rank 1: the bench harness's check run failed (exit 1)" \
  "$tmp/err" || fail "search, a harness fails: no warning"
grep -q '"measurement": {"top": 2, "device": "Emulated H100", "reps": 100, "best_rank": 2, .*"failed": 1, "cut_by_time_limit": 0}' \
  "$tmp/sf/report.json" || fail "search, a harness fails: the measurement is not the second result's"
grep -q '"rank": 1, .*"checked": false, "measured_seconds": null, .*"measure_error": "the bench harness' \
  "$tmp/sf/report.json" || fail "search, a harness fails: report.json does not say why"
grep -q "measured [0-9.]* us (rank 2 of the model's top 2 timed)" "$tmp/out" &&
  grep -q "the fastest is rank 2 ([0-9.]* us; the model's first not timed)" "$tmp/err" ||
  fail "search, a harness fails: the summary does not give the measured best"
cmp -s "$tmp/sf/best.ugraph" "$tmp/sf/candidates/$(ls "$tmp/sf/candidates" | sed -n 2p)" ||
  fail "search, a harness fails: best.ugraph is not the second result"
diff -r "$tmp/s/candidates" "$tmp/sf/candidates" >/dev/null ||
  fail "search, a harness fails: the results changed"
# The time limit covers the measurement: builds that would last 30 s are
# killed at the limit (3 s) and what was not timed says so; the search's
# results and exit status stay, and its best is the model's.
rm -rf "$tmp/trace" "$tmp/tmpdir" && mkdir -p "$tmp/trace" "$tmp/tmpdir"
t0=$(date +%s)
# shellcheck disable=SC2086
TMPDIR=$tmp/tmpdir FAKE_NVCC_TRACE=$tmp/trace FAKE_NVCC_SLEEP=30 \
  run --out="$tmp/st" --measure-top=2 --time-limit=3 $space "$ex/gqa_small.graph"
t1=$(date +%s)
expect 0 "a search with --measure-top=2 --time-limit=3"
[ $((t1 - t0)) -lt 20 ] || fail "search, time limit: the measurement ran $((t1 - t0)) s past a 3 s limit"
grep -q '"measurement": {"top": 2, .*"best_rank": null, .*"failed": 0, "cut_by_time_limit": 2}' \
  "$tmp/st/report.json" || fail "search, time limit: the measurement does not say it was cut"
[ "$(grep -c '"measure_error": "not timed: the time limit (--time-limit=3) came first"' "$tmp/st/report.json")" -eq 2 ] ||
  fail "search, time limit: the results do not say why they were not timed"
grep -q "warning: 2 of the top 2 results were not timed" "$tmp/err" || fail "search, time limit: no warning"
cmp -s "$tmp/st/best.ugraph" "$tmp/st/candidates/$(ls "$tmp/st/candidates" | head -1)" ||
  fail "search, time limit: best.ugraph is not the model's first"
no_leftovers "search, time limit"
# bench --rank under the same limit: an error, as for any stop.
TMPDIR=$tmp/tmpdir FAKE_NVCC_TRACE=$tmp/trace FAKE_NVCC_SLEEP=30 \
  run bench --rank="$tmp/ranked" --time-limit=2
expect 3 "bench --rank --time-limit=2"
grep -q 'stopped at the time limit (--time-limit=2) with 0 of 2 candidates timed' "$tmp/err" ||
  fail "bench --rank, time limit: no message"
no_leftovers "bench --rank, time limit"
# shellcheck disable=SC2086
"$prog" --out="$tmp/p" $space "$ex/gqa_small.graph" >"$tmp/out" 2>"$tmp/err"
status=$?
expect 0 "a search without a GPU"
grep -q '"times": "predicted"' "$tmp/p/report.json" || fail "no GPU: times not predicted"
grep -q '"measurement": {"skipped": "[^"]' "$tmp/p/report.json" ||
  fail "no GPU: report.json does not say why nothing was timed"
cmp -s "$tmp/p/best.ugraph" "$tmp/p/candidates/$(ls "$tmp/p/candidates" | head -1)" ||
  fail "no GPU: best.ugraph is not the model's first"
diff -r "$tmp/s/candidates" "$tmp/p/candidates" >/dev/null ||
  fail "the measured ranking changed the results"

[ "$failures" -eq 0 ] || exit 1
exit 0
