#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/device_check.sh - scripts/device-check.sh --dry-run: the pipeline
# the GPU machine runs (docs/GPU.md), here without a GPU, so the script is
# known to work before a GPU is at hand: every step passes or is skipped
# with a note, in the order the device runs them, the 8 output files are
# written, generated code runs on the host backend within tolerance, 1
# and 2 threads give the same results, and the torch.compile backend's
# step passes where a Python has torch.compile.  Then, beside the calls
# below, the second call a device session makes: a budget too small runs
# no step but toolchain and prints the follow-up call (--resume of the
# first call's files), which runs just those steps, merged with the
# earlier lines; a step name that does not exist; a broken program must
# make it fail.  Then
# resuming mid-step, as calls cut by the tool's timeout would: a run
# SIGKILLed after 3 units of runs, resumed from a read-only copy of its
# files (as they come back) and SIGTERMed after 4 units of torch, resumed
# again with scaling deferred by the budget, and its follow-up: the
# final tables equal the uninterrupted run's (but for timings), and a
# killed run's do not.  --skip.
#
# The dry runs take 5 of the 11 published examples (DEVICE_CHECK_EXAMPLES:
# dense, attention, LoRA, causal and safe softmax): what this checks is
# the pipeline, the same code for each example, while every published
# best's host run against its program is check_codegen's
# (test_best_ugraphs_match_programs) and the device plan (--plan) still
# counts all 11.
#
# Run by `make check` with top_srcdir and top_builddir set.  Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$(cd "$top_builddir" && pwd)/src/mirsearch
# The result cache on, in a folder of this test's own: device-check.sh
# must turn it off itself (its scaling and --verify=gpu searches would
# otherwise be served from its first search's entry, as they were on the
# first device run), and its runs must leave the folder empty.
unset MIRSEARCH_NO_CACHE
if [ ! -x "$prog" ]; then
  echo "device_check.sh: $prog not built" >&2
  exit 1
fi
command -v bash >/dev/null 2>&1 || { echo "device_check.sh: no bash" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_devcheck_sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
XDG_CACHE_HOME=$tmp/xdg-cache; export XDG_CACHE_HOME
failures=0
fail() {
  echo "FAIL: $1" >&2
  failures=$((failures + 1))
}

# The backend step's Python: the first with torch.compile, as tests/python.sh
# picks one (the torch 2.x venv's CUDA part links the toolkit's lib64).
torch2=${MIRSEARCH_TORCH2_PREFIX:-/opt/mirsearch-torch2}/bin/python
py=
for cand in ${PYTHON:-} python3 /usr/bin/python3 "$torch2"; do
  command -v "$cand" >/dev/null 2>&1 || continue
  if [ "$cand" = "$torch2" ]; then
    LD_LIBRARY_PATH="${CUDA_HOME:-/usr/local/cuda}/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; export LD_LIBRARY_PATH
  fi
  "$cand" -c 'import torch, torch._dynamo' >/dev/null 2>&1 && { py=$cand; break; }
done
DEVICE_CHECK_PYTHON=${py:-python3}
MIRSEARCH_LIB=$(cd "$top_builddir" && pwd)/.libs/libmirsearch.so
# The fingerprint module the build compiled (where it did): the dry runs
# take it rather than compile gpufp.cu once more (nvcc_once's build and
# reuse are still checked, on the device query).
DEVICE_CHECK_GPUFP_BUILT=$(cd "$top_builddir" && pwd)/src/gpu/libmirsearch-gpufp.so
export DEVICE_CHECK_GPUFP_BUILT
# What a second call reuses (the fingerprint module) kept across the calls below.
DEVICE_CHECK_STATE=$tmp/state
export DEVICE_CHECK_PYTHON MIRSEARCH_LIB DEVICE_CHECK_STATE
dry_examples="rmsnorm_linear gqa lora causal_attention mha_safe"
check() {
  case " $* " in
  *" --dry-run "*) DEVICE_CHECK_EXAMPLES=$dry_examples MIRSEARCH=$prog bash "$top_srcdir/scripts/device-check.sh" "$@" ;;
  *) MIRSEARCH=$prog bash "$top_srcdir/scripts/device-check.sh" "$@" ;;
  esac
}
# The step lines of a summary: "name status", one a line.
steps_of() { sed -n '/^step  *status/,/^overall:/p' "$1" | sed '1d;$d' | awk '{print $1, $2}'; }

check "$tmp/out" --dry-run >"$tmp/log" 2>&1 ||
  { fail "device-check.sh --dry-run failed"; tail -n 30 "$tmp/log" >&2; }
# The order: correctness first (issue 26's acceptance), scaling last.
order=$(steps_of "$tmp/out/summary.txt" | cut -d' ' -f1 | tr '\n' ' ')
[ "$order" = "toolchain runs fingerprints calibrate bench torch ranking search backend scaling " ] ||
  fail "steps ran in the order: $order"
grep -q '^follow-up: none' "$tmp/out/summary.txt" || fail "a full dry run left a follow-up"
grep -Eq '^fullverify:rmsnorm_linear_small	TIMED	-	0	[0-9]+ results verified at full shape \(cpu\)	[0-9.e+-]+ s$' \
  "$tmp/out/fingerprints.tsv" || fail "fingerprints.tsv has no full-verification time"
if [ -n "$py" ]; then
  grep -q '^backend  *PASS .*cuda sources ' "$tmp/out/summary.txt" ||
    fail "the backend step did not pass with $py"
  "$py" -c 'import json, sys; b = json.load(open(sys.argv[1]))["backend"]; assert b["pieces"], b' \
    "$tmp/out/bench.json" || fail "bench.json has no backend part with a replaced piece"
else
  grep -q '^backend  *SKIP' "$tmp/out/summary.txt" || fail "no torch.compile, yet the backend step did not skip"
fi
for f in summary.txt log.txt runs.tsv bench.tsv bench.json device.profile fingerprints.tsv scaling.tsv; do
  [ -s "$tmp/out/$f" ] || fail "no $f"
done
[ "$(ls "$tmp/out" | wc -l)" -le 8 ] || fail "more than 8 files (the device tool brings back 8)"
grep -q '^overall: PASS$' "$tmp/out/summary.txt" || fail "summary says no overall PASS"
grep -q '	PASS	' "$tmp/out/runs.tsv" || fail "no generated-code run passed"
grep -q 'gqa_small	PASS	' "$tmp/out/runs.tsv" || fail "gqa_small's run did not pass"
grep -q 'wgmma_f16@wgmma	PASS	' "$tmp/out/runs.tsv" || fail "the Hopper path's run (wgmma_f16@wgmma) did not pass"
grep -q '	2	.*	yes	[0-9]*$' "$tmp/out/scaling.tsv" || fail "2 threads did not give the 1-thread results"
grep -q 'SOURCES' "$tmp/out/bench.tsv" || fail "no bench harness written"
grep -q '^search  *PASS .*the model.s best is examples/best.s; nothing timed' "$tmp/out/summary.txt" ||
  fail "the search step did not pass"
grep -q '^calibrate *PASS' "$tmp/out/summary.txt" || fail "the calibrate step did not pass"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out/bench.json" ||
    fail "bench.json is not JSON"
fi

# resume_copy DIR COPY: DIR's files as a run brings them back: a copy, read-only.
resume_copy() {
  rm -rf "$2" && mkdir "$2" && cp "$1"/* "$2"/ && chmod a-w "$2"/*
}
# follow_up SUMMARY: the follow-up call's budget and options, "N --resume=... --only=..."
follow_up() {
  sed -n 's/^  command: *DEVICE_CHECK_BUDGET=\([0-9]*\) bash scripts\/device-check.sh "$OUT" \(--resume=.devresume --only=[a-z,]*\) --dry-run$/\1 \2/p' "$1"
}

# Checks that share nothing with the resumed calls below but the state
# folder (read only, after the first call), run beside them: the plan, a
# second call and its follow-up, bad steps, a broken program.
side_checks() {
# The device run's plan: its units' estimates fit the 540 s budget (a
# call of 570 s), and a budget they do not fit fails.
check --plan >"$tmp/plan" 2>&1 || { fail "the device run's units do not fit its budget"; cat "$tmp/plan" >&2; }
grep -q '^fingerprints  *[0-9][0-9]* ' "$tmp/plan" || fail "the plan lists no fingerprint units"
DEVICE_CHECK_BUDGET=200 check --plan >/dev/null 2>&1 && fail "the plan fits a 200 s budget"

# A second call: a budget that the toolchain step alone uses up runs no
# other step; the follow-up it prints resumes just those, in step order.
# (fingerprints and calibrate: the dry run's cheapest; resuming runs is
# checked below.)
DEVICE_CHECK_BUDGET=1 check "$tmp/out3" --dry-run --only=calibrate,fingerprints >"$tmp/log3" 2>&1 ||
  fail "skipping steps for lack of time is a failure"
[ "$(steps_of "$tmp/out3/summary.txt" | tr '\n' ' ')" = "toolchain PASS fingerprints SKIP calibrate SKIP " ] ||
  fail "--only=calibrate,fingerprints under no budget: $(steps_of "$tmp/out3/summary.txt" | tr '\n' ' ')"
grep -q 'query: an earlier call' "$tmp/out3/log.txt" || fail "the second call built the device query again"
# (device.profile is always written: "# not measured" until calibrate is)
[ ! -e "$tmp/out3/fingerprints.tsv" ] && [ "$(grep -cv '^# not measured' "$tmp/out3/device.profile")" = 0 ] ||
  fail "a step not run wrote its file"
again=$(follow_up "$tmp/out3/summary.txt")
case $again in
[0-9]*" --resume=.devresume --only=fingerprints,calibrate") ;;
*) fail "follow-up call: '$again'" ;;
esac
resume_copy "$tmp/out3" "$tmp/devresume3"
DEVICE_CHECK_BUDGET=${again%% *} check "$tmp/out3b" --dry-run --resume="$tmp/devresume3" --only=fingerprints,calibrate \
  >"$tmp/log4" 2>&1 || fail "the follow-up call failed"
[ "$(steps_of "$tmp/out3b/summary.txt" | tr '\n' ' ')" = "toolchain PASS fingerprints PASS calibrate PASS " ] ||
  fail "after the follow-up: $(steps_of "$tmp/out3b/summary.txt" | tr '\n' ' ')"
grep -q '^follow-up: none' "$tmp/out3b/summary.txt" || fail "the follow-up left a follow-up"

check "$tmp/out6" --only=runs,nosuchstep >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown step is not a usage error (exit 2)"

# It can fail: a program that does not run fails the toolchain step.
printf '#!/bin/sh\nexit 3\n' >"$tmp/broken"
chmod +x "$tmp/broken"
if DEVICE_CHECK_EXAMPLES=$dry_examples MIRSEARCH=$tmp/broken bash "$top_srcdir/scripts/device-check.sh" "$tmp/out2" --dry-run --only=runs >"$tmp/log2" 2>&1; then
  fail "device-check.sh passed with a broken mirsearch"
fi
grep -q '^toolchain *FAIL' "$tmp/out2/summary.txt" || fail "a broken mirsearch is not a toolchain FAIL"
grep -q 'device-check.sh "$OUT" --only=runs --dry-run$' "$tmp/out2/summary.txt" ||
  fail "a failed toolchain's follow-up is not the call again"
  [ "$failures" -eq 0 ]
}
side_checks >"$tmp/side.log" 2>&1 &
side=$!

# Resuming mid-step.  same_tables A B: A's tables and bench.json (but the
# backend's part) equal B's, but for times: runs' seconds, scaling's
# states, wall time, rate, speedup and efficiency (the search's count of
# states on 2 threads may vary; its results may not).
same_tables() {
  for f in runs.tsv fingerprints.tsv bench.tsv device.profile scaling.tsv; do
    [ -f "$1/$f" ] && [ -f "$2/$f" ] || return 1
    case $f in runs.tsv) cols=1-4,6- ;; scaling.tsv) cols=1,2,8- ;; *) cols=1- ;; esac
    # (fullverify's last column is a time.)
    cut -f"$cols" "$1/$f" | awk -F '\t' -v OFS='\t' '$1 ~ /^fullverify:/ {$6 = "-"} 1' >"$tmp/a.cut"
    cut -f"$cols" "$2/$f" | awk -F '\t' -v OFS='\t' '$1 ~ /^fullverify:/ {$6 = "-"} 1' >"$tmp/b.cut"
    cmp -s "$tmp/a.cut" "$tmp/b.cut" || return 1
  done
  python3 - "$1/bench.json" "$2/bench.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("mirsearch_bench", "torch_baseline", "ranking"):
    if a.get(k) != b.get(k):
        sys.exit(1)
# (The search's part holds times: its verdicts and results must agree.)
sa, sb = a.get("search") or {}, b.get("search") or {}
for k in ("program", "complete", "same_best_as_examples_best", "results_total", "model_best", "problems"):
    if sa.get(k) != sb.get(k):
        sys.exit(1)
EOF
}
# The first call, SIGKILLed (its whole process group) after 3 units of runs.
# (TMPDIR: the killed run's work folder, which no trap removes, in ours.)
DEVICE_CHECK_EXAMPLES=$dry_examples MIRSEARCH=$prog DEVICE_CHECK_KILL=runs:3 TMPDIR=$tmp setsid -w bash "$top_srcdir/scripts/device-check.sh" "$tmp/k1" --dry-run \
  --skip=backend >"$tmp/logk1" 2>&1
st=$?
[ "$st" -eq 137 ] || fail "the run SIGKILLed after 3 units exited $st, not 137"
[ "$(grep -c . "$tmp/k1/runs.tsv")" -eq 4 ] || fail "the SIGKILLed run's runs.tsv has not its 3 units: $(cat "$tmp/k1/runs.tsv")"
[ -z "$(find "$tmp/k1" -name '*.part')" ] || fail "the SIGKILLed run left a half-written file: $(ls -A "$tmp/k1")"
grep -q '^runs  *RUNNING ' "$tmp/k1/summary.txt" || fail "the SIGKILLed run's summary does not show runs RUNNING"
grep -q '^  command: .* --resume=.devresume --only=runs,fingerprints,calibrate,bench,torch,ranking,search,scaling --dry-run$' \
  "$tmp/k1/summary.txt" || fail "the SIGKILLed run's summary has no follow-up for every step"
same_tables "$tmp/k1" "$tmp/out" && fail "same_tables finds a killed run's tables equal a whole run's"
# The second, from a read-only copy (as they come back), SIGTERMed after 4 units of torch.
resume_copy "$tmp/k1" "$tmp/k1r"
DEVICE_CHECK_EXAMPLES=$dry_examples MIRSEARCH=$prog DEVICE_CHECK_KILL=torch:4:TERM setsid -w bash "$top_srcdir/scripts/device-check.sh" "$tmp/k2" --dry-run \
  --skip=backend --resume="$tmp/k1r" >"$tmp/logk2" 2>&1
st=$?
[ "$st" -eq 143 ] || fail "the run SIGTERMed after 4 units of torch exited $st, not 143"
grep -q '^runs  *PASS .*3 from an earlier call' "$tmp/k2/summary.txt" || fail "the resumed run did not keep the 3 runs"
grep -q '^torch  *CUT ' "$tmp/k2/summary.txt" || fail "the SIGTERMed run's summary does not show torch CUT"
grep -q '^overall: STOPPED' "$tmp/k2/summary.txt" || fail "the SIGTERMed run's summary does not say it stopped"
[ "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["torch_baseline"]))' "$tmp/k2/bench.json")" = 4 ] ||
  fail "the SIGTERMed run's bench.json has not its 4 torch units"
# The third: scaling's units deferred (each estimated over the budget).
resume_copy "$tmp/k2" "$tmp/k2r"
DEVICE_CHECK_BUDGET=400 DEVICE_CHECK_EST=scaling:900 check "$tmp/k3" --dry-run --skip=backend --resume="$tmp/k2r" \
  >"$tmp/logk3" 2>&1 || fail "the third call (scaling deferred) failed"
grep -q '^torch  *PASS .*4 from an earlier call' "$tmp/k3/summary.txt" || fail "the third call did not keep the 4 torch units"
grep -q '^scaling  *PART .*2 deferred' "$tmp/k3/summary.txt" || fail "scaling's units were not deferred"
[ "$(grep -c . "$tmp/k3/scaling.tsv")" -eq 1 ] || fail "a deferred unit was run"
grep -q '^overall: PASS so far' "$tmp/k3/summary.txt" || fail "a call with units left says it passed, not so far"
again=$(follow_up "$tmp/k3/summary.txt")
case $again in
[0-9]*" --resume=.devresume --only=scaling") ;;
*) fail "follow-up call after the deferral: '$again'" ;;
esac
resume_copy "$tmp/k3" "$tmp/k3r"
DEVICE_CHECK_BUDGET=${again%% *} check "$tmp/k4" --dry-run --resume="$tmp/k3r" --only=scaling >"$tmp/logk4" 2>&1 ||
  fail "the last follow-up failed"
grep -q '^follow-up: none' "$tmp/k4/summary.txt" || fail "the last follow-up left a follow-up"
grep -q '^overall: PASS$' "$tmp/k4/summary.txt" || fail "the resumed calls' summary says no overall PASS"
same_tables "$tmp/k4" "$tmp/out" || {
  fail "the tables of the killed and resumed calls differ from an uninterrupted run's"
  for f in runs.tsv fingerprints.tsv bench.tsv scaling.tsv; do diff "$tmp/out/$f" "$tmp/k4/$f" >&2; done
}

# --skip into the first folder: the other steps' files and lines stay.
cp "$tmp/out/runs.tsv" "$tmp/runs.tsv"
# (calibrate runs: in a dry run it takes no time, where scaling searches.)
check "$tmp/out" --dry-run --skip=runs,fingerprints,bench,torch,ranking,search,backend,scaling >"$tmp/log5" 2>&1 ||
  fail "--skip failed"
cmp -s "$tmp/runs.tsv" "$tmp/out/runs.tsv" || fail "a call that skipped runs rewrote runs.tsv"
[ "$(steps_of "$tmp/out/summary.txt" | wc -l)" -eq 10 ] || fail "the merged summary lost step lines"
grep -q '^runs  *PASS .*(earlier) ' "$tmp/out/summary.txt" || fail "the earlier runs line is not marked"
grep -q '^scaling  *PASS .*(earlier) .*identical' "$tmp/out/summary.txt" || fail "the earlier scaling line is not kept"
grep -q '^calibrate  *PASS  *[0-9]*  *calibration refused' "$tmp/out/summary.txt" ||
  fail "calibrate did not run under --skip"
wait "$side" || { fail "the side checks (above)"; cat "$tmp/side.log" >&2; }
[ -z "$(find "$tmp/xdg-cache" -type f 2>/dev/null)" ] ||
  fail "device-check.sh wrote to the result cache: $(find "$tmp/xdg-cache" -type f | head -n 3)"
[ "$failures" -eq 0 ] || exit 1
exit 0
