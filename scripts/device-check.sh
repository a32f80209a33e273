#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/device-check.sh OUTDIR [--dry-run] [--resume[=DIR]] [--only=STEP,...] [--skip=STEP,...]
# scripts/device-check.sh --list | --plan
# The one command run on a lent GPU machine (docs/GPU.md).  It runs in a
# copy of the repository with the bundle scripts/device-bundle.sh made
# (.devbundle/: a host build of mirsearch and libmirsearch.so, the shared
# libraries that machine lacks, the best µGraph of every example), builds
# the CUDA parts with that machine's nvcc, and writes to OUTDIR (at most 8
# files, all a run may bring back):
#   summary.txt       the device, the toolchain, one line per step, and the
#                     exact follow-up call for the work not done
#   runs.tsv          (a) generated code of every example's best run on the
#                     GPU against the float64 interpreter, published and
#                     small shapes (`mirsearch run --backend=cuda`), and
#                     NAME@wgmma: the Hopper path's code (--codegen-wgmma=1,
#                     sm_90a) of tests/codegen/wgmma_f16 and wgmma_bf16 (no
#                     published best picks wgmma since the register chain
#                     took their Q·K; in --dry-run wgmma_f16 only)
#   fingerprints.tsv  (c) CPU vs GPU fingerprints (`verify --verify=cpu|gpu`)
#                     on every example, and a search with each: the same results;
#                     fullverify:mha, the seconds a search of mha takes to
#                     verify its results at full shape on the GPU
#   bench.tsv         (b) `mirsearch bench` of the published examples
#   bench.json        {"mirsearch_bench": [its JSON per example, with
#                      "example" added],
#                      "torch_baseline": [bench/torch_baseline.py's JSON per
#                      program: PyTorch eager and torch.compile of the same
#                      programs],
#                      "ranking": `bench --rank` of 8 of gqa's 16 best by the
#                      model: predicted and measured time, rank correlation,
#                      "search": a search on the device (--verify=gpu,
#                      --measure-top=16): its report's times, verification,
#                      measured ranking and checks,
#                      "backend": bench/backend_cuda.py's JSON: the
#                      torch.compile backend's cuda mode on GPT-2's MLP
#                      against eager and inductor}
#   device.profile    the device profile `mirsearch bench --calibrate` measured
#   scaling.tsv       (d) the search on 1 and 16 threads: states/s,
#                     efficiency, identical results (a digest of report.json's
#                     result hashes)
#   log.txt           every command and its output
#
# Units.  Every step but toolchain is a list of units (an example, a
# program, a thread count; calibrate, ranking, search and backend are one unit
# each), run in the order of their value and written to OUTDIR the moment
# each ends: a table row replaces that unit's row and the table is
# renamed into place (a write in progress has a name of its own,
# NAME.part, under OUTDIR/.partial/), so a call killed at any point
# (SIGTERM, SIGKILL of the tool's timeout) leaves every finished unit in
# its files and no half-written file under a real name.  A unit stopped
# by its time box gets a CUT(N s) row.
#
# Resuming.  The state of a call is its 8 files and nothing else: what
# the device tool brings back.  --resume=DIR reads an earlier call's files
# (DIR: a folder of this checkout the next call carries, by convention
# .devresume/, ignored by git, holding a copy of the files the earlier
# `run` brought back; default OUTDIR), copies them into OUTDIR and skips
# every unit they hold finished (a CUT row is not finished; a FAIL row
# is: to run a step from scratch, --only=STEP without --resume), so the
# tables of all the calls end up merged in the last call's OUTDIR, on a
# fresh machine as on the same one.  The result rows of the timing steps
# (bench, torch, calibrate, ranking, backend, scaling) are kept only when
# the earlier call ran on the same device (the device query's name);
# nothing is kept from a call of the other mode (--dry-run vs device).
#
# The steps, in the order they run: their value to issue 26's acceptance
# first, so that a run cut short has done the most important ones.  NEED
# is the time a step takes on the device as far as it can be told without
# one; BOX is its time box (about twice NEED: the device is unknown), a
# backstop behind the units' own boxes.
#   step          NEED  BOX  why that long
#   toolchain      15    60  nvcc builds the device query (2 s here) and
#                            the fingerprint module (7 s here; both kept in
#                            .devcheck-state/ for a second call); a 1 GiB
#                            copy timed
#   runs           45   120  24 runs, 8 at a time on 16 cores: an nvcc
#                            build each (1.5-5 s), the float64 reference
#                            (< 1 s at published shapes), the run
#   fingerprints   60   150  CPU verify of 36 examples, 8 at a time (4.5 s
#                            for mqa, 8 s for gated_mlp here), the GPU ones
#                            4 at a time (CUDA start, ~2 s each); two searches
#   calibrate      15    60  calibrate.cu built (2 s), a 1 GiB copy x 9, the
#                            loaded latency (1 GiB read x 6 at 1, 2 and 4
#                            loads a thread in flight), 8192^3 f16, bf16 and
#                            tf32 products, 1000 empty launches; before
#                            bench, so that its rooflines and the ranking
#                            are on the measured profile from the first call
#   bench         100   240  11 examples one at a time (timings never
#                            overlap): nvcc (1.5 s), two processes, 4 x 110
#                            timed runs; nothing to share between them; the
#                            4 multi-kernel bests twice more (two plain
#                            launches, two PDL launches: 2 x 110 runs each)
#   torch          90   150  11 programs in one Python process: eager, and
#                            torch.compile (inductor starts its compile
#                            workers once, then a few seconds a program);
#                            each program's line is kept as it comes
#   ranking        35   120  8 gqa candidates benched like `bench` (one
#                            unit: the rank correlation is over all 8);
#                            their harnesses compile in parallel (37 s on
#                            the first H200 run with one build at a time,
#                            3-5 s each)
#   search         85   200  a search of gqa on every core, --verify=gpu,
#                            its top 16 timed (--measure-top): here a
#                            search of mha takes 122 s on one core, 57 s
#                            of it CPU verification (the results', the
#                            split-K variants'); then 16 parallel builds
#                            and 16 x 2 timed processes
#   backend        80   150  bench/backend_cuda.py: a search of GPT-2's MLP
#                            (8 s limit), its kernel built by load_inline
#                            (51-74 s on 2 loaded cores here; ninja on 16),
#                            inductor's compile, 3 x 110 timed runs
#   scaling        50   150  lora_small on 1 and 16 threads (the efficiency
#                            figure; 2, 4 and 8 ran on the first H200
#                            run): 39 s and 3.4 s there
# The units' estimates and boxes are in UNITS below (--list prints them;
# --plan each step's units on the device and the wall time their
# estimates add up to, and fails when that is over the budget:
# tests/device_check.sh keeps the device run inside it).
# The whole run keeps within DEVICE_CHECK_BUDGET seconds (default 540, for
# a call with timeout_s 570), unit by unit: a unit starts only when its
# estimate is left (the table's, raised to the mean time of the step's
# units measured so far in this call and to the time an earlier call's
# CUT row of it ran), else it is deferred (later, smaller units may still
# start), and its box is cut to what is left.  The toolchain step always
# runs, first (the device, nvcc, the fingerprint module: what the others
# use).  --only=STEP,... runs just those (in the order above, after
# toolchain); --skip=STEP,... all but those.  summary.txt is rewritten as
# each step starts and ends (a step cut with the call shows RUNNING); it
# ends with the follow-up call: --resume of this call's files, --only the
# steps with units not done, and a budget of their estimates.  Given an
# OUTDIR that holds an earlier run's files and no --resume, a run starts
# afresh the files of the steps it runs, keeps the others' and merges the
# step lines of summary.txt (the earlier ones marked).  The exit status is
# 0 when no step failed (a skipped or deferred unit is not a failure), 1
# otherwise; 2 on a usage error; 143 when stopped by SIGTERM or SIGINT
# (summary.txt written first).
#
# --dry-run runs the same pipeline without a GPU (`make check` does, in
# tests/device_check.sh): the host backend instead of CUDA, the bench
# harness only written (its refusal checked), the PyTorch programs only
# parsed, CPU fingerprints only, 1 and 2 threads, small shapes only, the
# backend on GPT-2's MLP in host mode and its cuda-mode sources compiled
# with nvcc under load_inline's flags; no budget unless
# DEVICE_CHECK_BUDGET is set.
#
# Environment: MIRSEARCH (the program; default .devbundle/bin/mirsearch,
# else src/mirsearch), MIRSEARCH_LIB (libmirsearch.so for the Python
# package; default the bundle's, else the build tree's), DEVICE_CHECK_BUDGET,
# DEVICE_CHECK_PYTHON (the Python with torch; default python3),
# DEVICE_CHECK_STATE (what a second call on the same machine reuses:
# builds; default .devcheck-state, in --dry-run a temporary folder),
# SCALING_EXAMPLE (default lora_small, the small example with the longest
# search), NVCC, DEVICE_CHECK_EXAMPLES (a subset of the published
# examples), RANK_TOP, DEVICE_CHECK_EST=STEP:SECONDS,... (a unit estimate
# instead of the table's), DEVICE_CHECK_GPUFP_BUILT (--dry-run: the GPU
# fingerprint module the build compiled, taken instead of a second
# compile), and for tests DEVICE_CHECK_KILL=STEP:N[:SIG]:
# once N units of STEP are written, SIG (default KILL) to the whole run,
# as the tool's timeout would (the script must lead its process group:
# run it under setsid).
set -u

# The steps: name, NEED and BOX (seconds), as in the table above.
STEPS="toolchain:15:60 runs:45:120 fingerprints:60:150 calibrate:15:60 bench:100:240
torch:90:150 ranking:35:120 search:85:200 backend:80:150 scaling:50:150"
step_field() { echo $STEPS | tr ' ' '\n' | awk -F: -v n="$1" -v k="$2" 'n == "" || $1 == n {print $k}'; }
step_names() { step_field "" 1; }
step_need() { step_field "$1" 2; }
step_box() { step_field "$1" 3; }
# The units of each step: EST, a unit's expected seconds on the device
# (scaling: of its 1-thread run, the others' scaled from it; torch: each
# program's, after TORCH_START for the process), BOX its time box, and
# how many run at once on the device and in --dry-run (2 cores here).
UNITS="runs:10:90:8:1 fingerprints:8:130:8:2 bench:8:210:1:1 torch:5:150:1:1
calibrate:15:60:1:1 ranking:30:120:1:1 search:80:200:1:1 backend:80:150:1:1 scaling:40:150:1:1"
TORCH_START=25
unit_field() { echo $UNITS | tr ' ' '\n' | awk -F: -v n="$1" -v k="$2" '$1 == n {print $k}'; }

usage() {
  echo "usage: scripts/device-check.sh OUTDIR [--dry-run] [--resume[=DIR]] [--only=STEP,...] [--skip=STEP,...]" >&2
  echo "       scripts/device-check.sh --list | --plan" >&2
  echo "steps: $(step_names | tr '\n' ' ')" >&2
  exit 2
}

# The step names of a comma-separated list, checked; exits 2 on an unknown one.
step_list() {
  local n
  for n in $(echo "$1" | tr ',' ' '); do
    step_names | grep -qx "$n" || { echo "device-check.sh: no step '$n'" >&2; usage; }
    echo "$n"
  done
}

out= dry=0 only= skip= resume= resuming=0 plan=0
for a in "$@"; do
  case $a in
  --dry-run) dry=1 ;;
  --plan) plan=1 ;;
  --resume) resuming=1 ;;
  --resume=*) resuming=1 resume=${a#--resume=}; [ -n "$resume" ] || usage ;;
  --only=*) only=$(step_list "${a#--only=}") || exit 2; [ -n "$only" ] || usage ;;
  --skip=*) skip=$(step_list "${a#--skip=}") || exit 2 ;;
  --list)
    printf '%-13s %5s %5s %9s %8s %5s\n' step need box unit_est unit_box jobs
    for s in $(step_names); do
      printf '%-13s %5s %5s %9s %8s %5s\n' "$s" "$(step_need "$s")" "$(step_box "$s")" \
        "$(unit_field "$s" 2)" "$(unit_field "$s" 3)" "$(unit_field "$s" 4)"
    done
    exit 0 ;;
  -*) usage ;;
  *) [ -z "$out" ] || usage; out=$a ;;
  esac
done
# --plan: the device's units and their estimates, nothing run.
if [ "$plan" -eq 1 ]; then
  [ -z "$out" ] || usage
  out=$(mktemp -d "${TMPDIR:-/tmp}/mirs-devplan.XXXXXX") || exit 3
  trap 'rm -rf "$out"' EXIT
fi
[ -n "$out" ] || usage
[ -z "$only" ] || [ -z "$skip" ] || { echo "device-check.sh: --only or --skip, not both" >&2; usage; }
if [ -n "$resume" ] && [ ! -f "$resume/summary.txt" ]; then
  echo "device-check.sh: --resume=$resume: no summary.txt there (not a device check's output folder)" >&2
  exit 2
fi
# DEVICE_CHECK_EST: estimates instead of the table's (a test defers with it).
for e in $(echo "${DEVICE_CHECK_EST:-}" | tr ',' ' '); do
  s=${e%%:*} v=${e#*:}
  step_names | grep -qx "$s" && [ "$s" != toolchain ] && [ -n "$v" ] && [ -z "${v//[0-9]/}" ] ||
    { echo "device-check.sh: DEVICE_CHECK_EST: '$e' is not STEP:SECONDS" >&2; exit 2; }
  UNITS=$(echo $UNITS | tr ' ' '\n' | awk -F: -v OFS=: -v s="$s" -v v="$v" '$1 == s {$2 = v} {print}')
done
kill_step= kill_n=0 kill_sig=KILL
if [ -n "${DEVICE_CHECK_KILL:-}" ]; then
  IFS=: read -r kill_step kill_n kill_sig <<<"$DEVICE_CHECK_KILL"
  kill_sig=${kill_sig:-KILL}
  case $kill_n in '' | *[!0-9]*) echo "device-check.sh: DEVICE_CHECK_KILL is STEP:N[:SIG]" >&2; exit 2 ;; esac
  # The whole run, as the tool's timeout kills it: the process group,
  # which must be this script's own (setsid), never its caller's.
  if [ "$(cut -d' ' -f5 /proc/$$/stat 2>/dev/null)" != "$$" ]; then
    echo "device-check.sh: DEVICE_CHECK_KILL needs the script to lead its process group (run it under setsid)" >&2
    exit 2
  fi
fi

# selected NAME: whether this run runs step NAME (toolchain always).
selected() {
  [ "$1" = toolchain ] && return 0
  if [ -n "$only" ]; then echo "$only" | grep -qx "$1"; return; fi
  ! echo "$skip" | grep -qx "$1"
}

mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
[ -z "$resume" ] && [ "$resuming" -eq 1 ] && resume=$out
[ -n "$resume" ] && resume=$(cd "$resume" && pwd)
if [ "$resuming" -eq 1 ] && [ ! -f "$resume/summary.txt" ]; then
  echo "device-check.sh: --resume: no summary.txt in $resume (not a device check's output folder)" >&2
  exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/.devbundle
ex=$root/examples
work=$(mktemp -d "${TMPDIR:-/tmp}/mirs-devcheck.XXXXXX") || exit 3
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
# The budget: the device's (540 s), or in --dry-run none unless asked for.
budget=${DEVICE_CHECK_BUDGET:-540}
use_budget=1
[ "$dry" -eq 1 ] && [ -z "${DEVICE_CHECK_BUDGET:-}" ] && use_budget=0
# What a second call on the same machine reuses (the device query and the
# fingerprint module when built from the same sources, the calibrated
# profile, the backend step's cache); ignored by git, not carried.
state=${DEVICE_CHECK_STATE:-}
if [ -z "$state" ]; then
  if [ "$dry" -eq 1 ]; then state=$work/state; else state=$root/.devcheck-state; fi
fi
mkdir -p "$state" || exit 3
# DEVICE_CHECK_EXAMPLES: a subset of the published examples (a rerun of some).
published=${DEVICE_CHECK_EXAMPLES:-"rmsnorm_linear gqa qknorm_attention lora gated_mlp ntrans mha mqa causal_attention gqa_safe mha_safe gqa_hd128"}
small=""
for n in $published; do small="$small ${n}_small"; done

# No result cache: every search here must run, not be served from the
# cache an earlier search of the same program filled (on the device, the
# scaling runs after the first and the --verify=gpu search after the
# --verify=cpu one were served from it in the first call, 2026-11-27,
# and compared nothing), and the check must not fill the user's cache.
MIRSEARCH_NO_CACHE=1
export MIRSEARCH_NO_CACHE

# The program, with the bundled libraries (only for it: nvcc, python and
# the harnesses it compiles keep the machine's own).
mirs_bin=${MIRSEARCH:-}
if [ -z "$mirs_bin" ]; then
  if [ -x "$bundle/bin/mirsearch" ]; then mirs_bin=$bundle/bin/mirsearch; else mirs_bin=$root/src/mirsearch; fi
fi
mirs() {
  if [ -d "$bundle/lib" ] && [ "$mirs_bin" = "$bundle/bin/mirsearch" ]; then
    LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$mirs_bin" "$@"
  else
    "$mirs_bin" "$@"
  fi
}
nvcc=${NVCC:-$(command -v nvcc || true)}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
cuda_opts=()
[ -n "$nvcc" ] && cuda_opts=(--codegen-nvcc="$nvcc" --codegen-arch=90)
# The GPU fingerprint module (src/gpu/gpufp.cu), built by the toolchain
# step with this machine's nvcc so that its CUDA runtime suits the
# driver; the library loads it from MIRS_GPUFP_LIB.
gpufp_lib=$state/libmirsearch-gpufp.so
[ "$dry" -eq 0 ] && export MIRS_GPUFP_LIB=$gpufp_lib
# The calibrated profile (this call's calibrate step, or an earlier call's
# on this machine or, resumed, on the same device): bench and ranking
# rank and report rooflines on it when it is there.
profile=$state/device.profile
# Commands run under `timeout` reach the program through these.
export bundle mirs_bin work dry
export -f mirs

log=$out/log.txt
summary=$out/summary.txt
OUTFILES="summary.txt log.txt runs.tsv fingerprints.tsv bench.tsv bench.json device.profile scaling.tsv"
# A write cut by a kill leaves a NAME.part in $partdir, never a NAME.
partdir=$out/.partial/w/w
rm -rf "$out/.partial"
mkdir -p "$partdir" || exit 3
trap 'rm -rf "$work" "$out/.partial"; [ "$plan" -eq 0 ] || rm -rf "$out"' EXIT
# --resume=DIR: the earlier call's files become this call's, to add to.
if [ "$resuming" -eq 1 ] && [ "$resume" != "$out" ]; then
  for f in $OUTFILES; do
    # (cat, not cp: the files a run brings back are read-only.)
    if [ -f "$resume/$f" ]; then cat "$resume/$f" >"$out/$f" || exit 3; else rm -f "$out/$f"; fi
  done
fi
# An OUTDIR with an earlier run's files: keep its step lines and log.
prev_summary=
if [ -f "$summary" ]; then prev_summary=$work/summary.prev; cp "$summary" "$prev_summary"; fi
[ -f "$log" ] && echo >>"$log" || : >"$log"
: >"$work/steps"
note() { echo "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }
mode_line() { [ "$dry" -eq 1 ] && echo 'dry run (no GPU)' || echo 'device run'; }
# What a resumed call keeps: nothing from a call of the other mode.
resume_ok=$resuming
if [ "$resuming" -eq 1 ] && ! head -n 1 "$prev_summary" | grep -qF "$(mode_line)"; then
  note "--resume: the earlier call was not a $(mode_line): nothing of it is kept"
  resume_ok=0
fi
same_device=1
prev_commit=
[ "$resuming" -eq 1 ] && prev_commit=$(sed -n 's/^commit: //p' "$prev_summary" | head -n 1)

# The best µGraph of example $1: the bundle's, the repository's
# examples/best, or the annotated one in examples/.
best_of() {
  local f
  for f in "$bundle/best/$1.ugraph" "$ex/best/$1.ugraph" "$ex/$1.ugraph"; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

# Send SIGTERM to process $1 and all its descendants.
kill_tree() {
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill -TERM "$1" 2>/dev/null
}

# with_box SECONDS COMMAND...: COMMAND, its process tree ended (SIGTERM)
# after SECONDS; its exit status (143 when ended so).
with_box() {
  local box=$1 pid watchdog rc
  shift
  "$@" &
  pid=$!
  (sleep "$box"; kill_tree "$pid") 2>/dev/null &
  watchdog=$!
  wait "$pid"
  rc=$?
  kill_tree "$watchdog"
  wait "$watchdog" 2>/dev/null
  return "$rc"
}

# ---------------------------------------------------------------- OUTDIR, atomically

# publish FILE COMMAND...: COMMAND's output becomes OUTDIR/FILE, through
# a FILE.part renamed (so FILE is the old one or the new one, whole);
# nothing changes when COMMAND fails.  The .part files are three folders
# down OUTDIR, on its file system (rename is atomic) but deeper than the
# device tool brings back: one a kill left behind never takes one of the
# 8 files a call returns.
publish() {
  local f=$out/$1 t=$partdir/$1.part
  shift
  if "$@" >"$t"; then mv -f "$t" "$f"; else rm -f "$t"; return 1; fi
}

# The table of a step with one row per unit, its header, and the column
# that names the unit.
table_of() {
  case $1 in runs | fingerprints | bench | scaling) echo "$1.tsv" ;; *) return 1 ;; esac
}
header_of() {
  case $1 in
  runs) printf 'example\tstatus\tmax_rel_error\ttolerance\tseconds\tfile\n' ;;
  fingerprints) printf 'example\tstatus\tcpu_exit\tgpu_exit\tcpu_fingerprints\tgpu_fingerprints\n' ;;
  bench) printf 'example\tstatus\tcandidate_us\tcand_p10\tcand_p90\tunfused_us\tspeedup\tgraph_speedup\thbm_roofline_pct\tcand_error\tbase_error\tbase_checked\tfused_us\tpdl_us\n' ;;
  scaling) printf 'example\tthreads\tstates\twall_s\tstates_per_s\tspeedup\tefficiency\tresults\tsame_results\tresults_digest\n' ;;
  esac
}
key_col() { [ "$1" = scaling ] && echo 2 || echo 1; }

# table_rows STEP NEWROWS: the step's table with NEWROWS' rows in place of
# those of the same units, in display order (display_STEP, else the
# units' order), on stdout.
# order_of STEP: $work/order_STEP, the units in display order.
order_of() {
  if declare -F "display_$1" >/dev/null; then "display_$1"; else "units_$1"; fi >"$work/order_$1"
}
table_rows() {
  local s=$1 f=$out/$(table_of "$1")
  [ -f "$work/order_$s" ] || order_of "$s"
  if [ -f "$f" ]; then head -n 1 "$f"; else header_of "$s"; f=/dev/null; fi
  awk -F'\t' -v k="$(key_col "$s")" -v OFS='\t' '
    FILENAME == ARGV[1] { if (!($0 in ord)) ord[$0] = ++no; next }
    FILENAME == ARGV[2] { if (!($k in seen)) { seen[$k] = 1; print ($k in ord ? ord[$k] : 99999), ++q, $0 } next }
    FNR > 1 && !($k in seen) { seen[$k] = 1; print ($k in ord ? ord[$k] : 99999), ++q, $0 }' \
    "$work/order_$s" "$2" "$f" | sort -t '	' -k1,1n -k2,2n | cut -f3-
}

# bench_json OP ARGS: bench.json, changed (python3; written atomically):
#   reset KEY list|null   KEY emptied
#   ensure KEY            KEY a list (emptied when it is not)
#   set KEY FILE          KEY is FILE's JSON
#   put KEY FILE FIELD NAME ORDER  FILE's JSON object, FIELD set to NAME,
#                         replaces the element of list KEY with that FIELD,
#                         the list in the order of the names in ORDER
#   names KEY FIELD       prints the FIELD of each element of list KEY
#                         (for a non-list KEY: KEY, when it is not null)
bench_json() {
  local op=$1
  shift
  if [ "$op" = names ]; then bench_json_py "$out/bench.json" names "$@"; return; fi
  publish bench.json bench_json_py "$out/bench.json" "$op" "$@"
}
bench_json_py() {
  python3 - "$@" <<'PY'
import json, os, sys
path, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
doc = load(path) if os.path.exists(path) else None
doc = doc if isinstance(doc, dict) else {}
for k in ("mirsearch_bench", "torch_baseline", "ranking", "search", "backend"):
    doc.setdefault(k, None)
if op == "names":
    v = doc.get(args[0])
    if isinstance(v, list):
        for e in v:
            if isinstance(e, dict) and e.get(args[1]) is not None:
                print(e[args[1]])
    elif v is not None:
        print(args[0])
    sys.exit(0)
if op == "ensure":
    if not isinstance(doc[args[0]], list):
        doc[args[0]] = []
elif op == "reset":
    doc[args[0]] = [] if args[1] == "list" else None
elif op == "set":
    v = load(args[1])
    if v is None:
        sys.exit("bench.json: %s is not JSON" % args[1])
    doc[args[0]] = v
elif op == "put":
    key, f, field, name, order = args
    v = load(f)
    if not isinstance(v, dict):
        sys.exit("bench.json: %s is not a JSON object" % f)
    v.setdefault(field, name)
    rank = {n: i for i, n in enumerate(open(order).read().split())}
    rows = [e for e in (doc[key] if isinstance(doc[key], list) else [])
            if not (isinstance(e, dict) and e.get(field) == name)]
    rows.append(v)
    rows.sort(key=lambda e: rank.get(e.get(field) if isinstance(e, dict) else None, len(rank)))
    doc[key] = rows
print(json.dumps(doc, indent=1))
PY
}

# ---------------------------------------------------------------- units

# done_units STEP: the units OUTDIR holds finished: table rows with no
# CUT field, bench.json's elements, a measured device.profile.
done_units() {
  case $1 in
  runs | fingerprints | bench | scaling)
    [ -f "$out/$(table_of "$1")" ] &&
      awk -F'\t' -v k="$(key_col "$1")" 'NR > 1 { for (i = 1; i <= NF; i++) if ($i ~ /^CUT/) next; print $k }' \
        "$out/$(table_of "$1")" ;;
  torch) bench_json names torch_baseline program ;;
  ranking | search | backend) bench_json names "$1" - ;;
  calibrate) [ -f "$out/device.profile" ] && ! grep -q '^# not measured' "$out/device.profile" && echo calibrate ;;
  esac
  return 0
}

# pending_units STEP: its units not finished in OUTDIR, in value order.
pending_units() {
  "units_$1" | grep -vxF -f <(done_units "$1"; echo '<none>')
}

# The steps whose results are times of the device.
timing_steps="bench torch calibrate ranking search backend scaling"

# keeps STEP: whether this call keeps the step's finished units (--resume,
# same mode; the timing steps on the same device only).
keeps() {
  [ "$resume_ok" -eq 1 ] || return 1
  case $1 in runs | fingerprints) return 0 ;; esac
  [ "$same_device" -eq 1 ]
}

# fresh STEP: the step's output emptied (a run that does not keep it).
fresh() {
  case $1 in
  runs | fingerprints | bench | scaling) publish "$(table_of "$1")" header_of "$1" ;;
  esac
  case $1 in
  bench) bench_json reset mirsearch_bench list ;;
  torch) bench_json reset torch_baseline list ;;
  ranking | search | backend) bench_json reset "$1" null ;;
  calibrate) rm -f "$out/device.profile" ;;
  esac
}

# unit_est STEP NAME: the seconds the unit is expected to take: the
# table's (scaling: the 1-thread run's over the thread count, with
# half of it lost to the parallel overhead, from this call's 1-thread run
# when there is one), at least the mean of the step's units this call
# measured, and over the time an earlier call's CUT row of it ran.
unit_est() {
  local s=$1 n=$2 e m c
  e=$(unit_field "$s" 2)
  if [ "$s" = scaling ]; then
    m=$(awk -F'\t' 'NR > 1 && $2 == 1 && $4 ~ /^[0-9.]+$/ {print int($4 + 1)}' "$out/scaling.tsv" 2>/dev/null | head -n 1)
    [ -n "$m" ] && e=$m
    if [ "$n" -eq 1 ]; then e=$((e + 3)); else e=$(((e + n - 1) / n * 3 / 2 + 3)); fi
  elif [ -s "$work/u_$s/times" ]; then
    m=$(awk '{s += $1; n++} END {print int(s / n + 0.999)}' "$work/u_$s/times")
    [ "$m" -gt "$e" ] && e=$m
  fi
  c=$(grep -F "$n	" "$out/$(table_of "$s" 2>/dev/null)" 2>/dev/null |
    awk -F'\t' -v k="$(key_col "$s")" -v n="$n" '$k == n { for (i = 1; i <= NF; i++) if ($i ~ /^CUT\(/) { sub(/^CUT\(/, "", $i); print int($i) } }' |
    head -n 1)
  [ -n "$c" ] && [ "$((c + 5))" -gt "$e" ] && e=$((c + 5))
  echo "$e"
}

# commit_unit STEP NAME DIR: the unit's result (DIR/NAME.row, .json)
# into OUTDIR.
commit_unit() {
  local s=$1 n=$2 d=$3
  case $s in
  runs | fingerprints | bench | scaling)
    if [ -f "$d/$n.json" ]; then bench_json put mirsearch_bench "$d/$n.json" example "$n" "$work/order_$s" || return 1; fi
    publish "$(table_of "$s")" table_rows "$s" "$d/$n.row" || return 1
    [ "$s" = scaling ] && publish scaling.tsv scaling_derived
    return 0 ;;
  torch) bench_json put torch_baseline "$d/$n.row" program "$n" "$work/order_$s" ;;
  calibrate) publish device.profile cat "$d/$n.row" && cp "$out/device.profile" "$profile" ;;
  ranking | search | backend) bench_json set "$s" "$d/$n.row" ;;
  esac
}

# cut_row STEP NAME STATUS: the row of a unit with no result of its own.
cut_row() {
  case $1 in
  scaling) printf '%s\t%s\t%s\n' "$scale_ex" "$2" "$3" ;;
  runs) printf '%s\t%s\t-\t-\t-\t-\n' "$2" "$3" ;;
  *) printf '%s\t%s\n' "$2" "$3" ;;
  esac
}

# maybe_kill STEP COUNT: DEVICE_CHECK_KILL's kill, once COUNT units of
# STEP are written.
maybe_kill() {
  if [ "$1" = "$kill_step" ] && [ "$2" -ge "$kill_n" ]; then
    echo "DEVICE_CHECK_KILL: SIG$kill_sig to the run after $2 units of $1" >>"$log"
    kill -s "$kill_sig" -- "-$$"
  fi
}

# run_units STEP: the step's pending units (unit_STEP NAME ROWFILE), in
# value order, JOBS at a time, each under its box, each started only when
# the budget has its estimate left, each written to OUTDIR as it ends.
# Counts in $work/u_STEP/: all, kept, done, failed, cut, deferred (one
# name a line); each unit's output goes to the log as it ends.  Returns
# 1 when a unit failed.
run_units() {
  local s=$1 d=$work/u_$1 jobs box0 n est left box committed=0 rc secs
  local running=()
  mkdir -p "$d"
  : >"$d/kept"; : >"$d/done"; : >"$d/failed"; : >"$d/cut"; : >"$d/deferred"
  jobs=$(unit_field "$s" "$([ "$dry" -eq 1 ] && echo 5 || echo 4)")
  box0=$(unit_field "$s" 3)
  "units_$s" >"$d/all"
  order_of "$s"
  if keeps "$s"; then
    done_units "$s" | grep -xF -f "$d/all" >"$d/kept"
    table_of "$s" >/dev/null && [ ! -f "$out/$(table_of "$s")" ] && publish "$(table_of "$s")" header_of "$s"
    case $s in bench) bench_json ensure mirsearch_bench ;; torch) bench_json ensure torch_baseline ;; esac
  else
    fresh "$s"
  fi
  # Units ended: into OUTDIR, their output into the log.
  reap() {
    local i m keep=()
    for i in "${!running[@]}"; do
      m=${running[$i]}
      if [ ! -f "$d/$m.rc" ]; then keep+=("$m"); continue; fi
      read -r rc secs <"$d/$m.rc"
      echo "-- $s unit $m: exit $rc, $secs s"
      cat "$d/$m.log" 2>/dev/null
      if [ "$rc" -eq 143 ] || [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
        cut_row "$s" "$m" "CUT(${secs}s)" >"$d/$m.row"
        rm -f "$d/$m.json"
        echo "$m" >>"$d/cut"
      elif [ "$rc" -eq 0 ] && [ -s "$d/$m.row" ]; then
        echo "$secs" >>"$d/times"
        echo "$m" >>"$d/done"
      else
        [ -s "$d/$m.row" ] || cut_row "$s" "$m" "FAIL($rc)" >"$d/$m.row"
        echo "$m" >>"$d/failed"
      fi
      if table_of "$s" >/dev/null || [ "$rc" -eq 0 ]; then
        commit_unit "$s" "$m" "$d" || { echo "$m: cannot write its result to $out"; echo "$m" >>"$d/failed"; }
      fi
      committed=$((committed + 1))
      maybe_kill "$s" "$committed"
    done
    running=(${keep[@]+"${keep[@]}"})
  }
  for n in $(cat "$d/all"); do
    grep -qxF "$n" "$d/kept" && continue
    while [ "${#running[@]}" -ge "$jobs" ]; do sleep 0.2; reap; done
    reap
    est=$(unit_est "$s" "$n")
    box=$box0
    if [ "$use_budget" -eq 1 ]; then
      left=$((budget - $(elapsed)))
      if [ "$left" -lt "$est" ]; then
        echo "-- $s unit $n: deferred (needs about $est s, $left s left)"
        echo "$n" >>"$d/deferred"
        continue
      fi
      [ "$box" -gt "$left" ] && box=$left
    fi
    rm -f "$d/$n.rc" "$d/$n.row" "$d/$n.json"
    (
      t0=$(date +%s)
      with_box "$box" "unit_$s" "$n" "$d/$n.row" >"$d/$n.log" 2>&1
      echo "$? $(($(date +%s) - t0))" >"$d/$n.rc"
    ) &
    running+=("$n")
  done
  while [ "${#running[@]}" -gt 0 ]; do sleep 0.2; reap; done
  [ ! -s "$d/failed" ]
}

# units_note STEP: how the step's units went, for its note.
units_note() {
  local d=$work/u_$1 t k c f p
  t=$(grep -c . "$d/all") k=$(grep -c . "$d/kept") c=$(grep -c . "$d/cut")
  f=$(grep -c . "$d/deferred")
  p=$((c + f))
  printf 'units %s/%s' "$((t - p))" "$t"
  [ "$k" -gt 0 ] && printf ', %s from an earlier call' "$k"
  [ "$f" -gt 0 ] && printf ', %s deferred (budget)' "$f"
  [ -s "$d/failed" ] && printf ', %s failed' "$(grep -c . "$d/failed")"
  [ "$c" -gt 0 ] && printf ', %s cut by their box' "$c"
  return 0
}

# units_passed STEP STATUS-REGEX: "PASSED TOTAL" over the step's units
# with a result (neither deferred nor cut); PASSED, those whose table row
# has a status matching STATUS-REGEX.
units_passed() {
  local d=$work/u_$1 n pass=0 total=0
  for n in $(cat "$d/all"); do
    grep -qx "$n" "$d/deferred" "$d/cut" && continue
    total=$((total + 1))
    awk -F'\t' -v n="$n" -v re="^($2)\$" '$1 == n && $2 ~ re {f = 1} END {exit !f}' "$out/$(table_of "$1")" &&
      pass=$((pass + 1))
  done
  echo "$pass $total"
}

# step_line NAME STATUS SECONDS RETRY NOTE: one line of $work/steps
# (RETRY: 1 when the step may have work left for the follow-up call).
step_line() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$work/steps"
}

# step NAME: run step_NAME under its time box (cut to what the budget has
# left); its last line of output is the note, its status PASS (0), FAIL,
# SKIP (exit 77), or PART (its units not all done: deferred or cut).
step() {
  local name=$1 box left t0 rc noteline st=PASS retry=0 at pending
  box=$(step_box "$name")
  left=$((budget - $(elapsed)))
  if [ "$use_budget" -eq 1 ] && [ "$name" != toolchain ] && [ "$left" -lt 5 ]; then
    step_line "$name" SKIP 0 1 "not run: ${left} s left of the ${budget} s budget"
    note "== $name: not run, ${left} s left"
    return
  fi
  [ "$use_budget" -eq 1 ] && [ "$name" != toolchain ] && [ "$box" -gt "$left" ] && box=$left
  note "== $name (time box ${box} s, at $(elapsed) s)"
  write_summary "$name"
  at=$(stat -c %s "$log")
  t0=$(date +%s)
  STEP_BOX=$box with_box "$box" "step_$name" >>"$log" 2>&1
  rc=$?
  noteline=$(tail -c +"$((at + 1))" "$log" | grep -v '^$' | grep -v '^-- .* unit ' | tail -n 1 | tr '\t' ' ' | cut -c1-150)
  pending=0
  [ -f "$work/u_$name/all" ] && pending=$(cat "$work/u_$name/cut" "$work/u_$name/deferred" | grep -c .)
  if [ "$rc" -eq 77 ]; then st=SKIP
  elif [ "$rc" -ne 0 ]; then st=FAIL retry=1
  elif [ "$pending" -gt 0 ]; then st=PART retry=1
  fi
  [ "$rc" -eq 143 ] && noteline="timed out after ${box} s; $noteline"
  step_line "$name" "$st" "$(($(date +%s) - t0))" "$retry" "$noteline"
  note "-- $name: $st ($(($(date +%s) - t0)) s)"
  write_summary
}
# ---------------------------------------------------------------- toolchain

# nvcc_once OUT SOURCE... -- ARGS: nvcc ARGS, which build OUT from the
# SOURCEs, unless an earlier call (on this machine: the state folder)
# built OUT from the same sources with the same nvcc.
nvcc_once() {
  local o=$1 srcs=() key
  shift
  while [ "$1" != -- ]; do srcs+=("$1"); shift; done
  shift
  key=$(cat "${srcs[@]}" <("$nvcc" --version) | cksum | cut -d' ' -f1)
  if [ -f "$o" ] && [ "$(cat "$o.key" 2>/dev/null)" = "$key" ]; then
    echo "$(basename "$o"): an earlier call's build (same sources, same nvcc)"
    return 0
  fi
  rm -f "$o.key"
  timeout 120 "$nvcc" "$@" && echo "$key" >"$o.key"
}

# The program runs; nvcc builds and runs a device query (and links cuBLAS).
step_toolchain() {
  echo "mirsearch: $mirs_bin"
  # A library the bundle lacks and the machine too is named here, not
  # left to a loader message in the first step that runs the program.
  if [ "$mirs_bin" = "$bundle/bin/mirsearch" ] && command -v ldd >/dev/null 2>&1 &&
    LD_LIBRARY_PATH=$bundle/lib ldd "$mirs_bin" 2>&1 | grep 'not found'; then
    echo "mirsearch needs libraries neither the bundle nor this machine has (above)"; return 1
  fi
  mirs --version || { echo "mirsearch does not run here"; return 1; }
  if [ -z "$nvcc" ]; then
    [ "$dry" -eq 1 ] && { echo "no nvcc: device query not compiled"; return 0; }
    echo "no nvcc on this machine"; return 1
  fi
  "$nvcc" --version | tail -n 2
  cat >"$work/query.cu" <<'EOF'
// Device query and a device-to-device copy bandwidth (bytes read + written).
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 3; } } while (0)
int main() {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  int l2 = 0, smem = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  std::printf("device: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %d B, smem/block %d B, %d device(s)\n",
              p.name, p.major, p.minor, p.multiProcessorCount,
              p.totalGlobalMem / 1073741824.0, l2, smem, n);
  const size_t bytes = (size_t)1 << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++) CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < 10; i++) CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  std::printf("copy: %.0f GB/s (1 GiB device to device, 10 copies, read + written)\n",
              2.0 * 10 * bytes / (ms * 1e-3) / 1e9);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { std::printf("cublasCreate failed\n"); return 3; }
  cublasDestroy(h);
  return 0;
}
EOF
  # As mirsearch builds its harnesses: the toolkit's lib64 recorded in the program.
  local cudalib
  cudalib=$(dirname "$(dirname "$(readlink -f "$nvcc")")")/lib64
  nvcc_once "$state/query" "$work/query.cu" -- -std=c++17 -O2 -gencode=arch=compute_90,code=sm_90 \
    "$work/query.cu" -o "$state/query" -lcublas -Xlinker -rpath,"$cudalib" ||
    { echo "nvcc cannot build the device query (with cuBLAS)"; return 1; }
  # The fingerprint module, for --verify=gpu (step c).  A dry run may take
  # the one the build compiled from the same source with these flags
  # (DEVICE_CHECK_GPUFP_BUILT: make check's, which needs no second
  # compile of it to check this pipeline); the device builds its own.
  local built=${DEVICE_CHECK_GPUFP_BUILT:-}
  if [ "$dry" -eq 1 ] && [ -n "$built" ] && [ -f "$built" ] &&
    [ "$built" -nt "$root/src/gpu/gpufp.cu" ] && [ "$built" -nt "$root/src/gpu/gpufp_abi.h" ]; then
    cp "$built" "$gpufp_lib" && rm -f "$gpufp_lib.key" || return 1
    echo "$(basename "$gpufp_lib"): the build's ($built)"
  else
    nvcc_once "$gpufp_lib" "$root/src/gpu/gpufp.cu" "$root/src/gpu/gpufp_abi.h" -- -O3 -std=c++17 -shared \
      -Xcompiler -fPIC,-fvisibility=hidden -gencode=arch=compute_90,code=sm_90 -I"$root/src" \
      -o "$gpufp_lib" "$root/src/gpu/gpufp.cu" ||
      { echo "nvcc cannot build the GPU fingerprint module (src/gpu/gpufp.cu)"; return 1; }
  fi
  echo "GPU fingerprint module: $gpufp_lib"
  if [ "$dry" -eq 1 ]; then echo "device query compiled with $nvcc (not run: dry run)"; return 0; fi
  nvidia-smi -L 2>&1 || true
  "$state/query" | tee "$work/device.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "the device query failed"; return 1; }
  head -n 1 "$work/device.txt"
}


# ---------------------------------------------------------------- calibrate

# The device profile, measured (bench --calibrate); bench uses it after.
units_calibrate() { echo calibrate; }
unit_calibrate() {
  local row=$2
  if [ "$dry" -eq 1 ]; then
    mirs bench --calibrate="$work/cal.profile" >"$work/cal.out" 2>&1
    local st=$?
    cat "$work/cal.out"
    [ "$st" -eq 2 ] || [ "$st" -eq 3 ] || { echo "bench --calibrate without a GPU exited $st, not 2 or 3"; return 1; }
    mkdir -p "$work/cal"
    mirs bench --calibrate="$work/cal.profile" --source-dir="$work/cal" || return 1
    echo "# dry run: no GPU, nothing measured" >"$row"
    echo "calibration refused without a GPU (exit $st); its program written"
    return 0
  fi
  timeout 120 bash -c 'mirs bench "$@"' _ "${cuda_opts[@]}" --calibrate="$work/cal.profile" || return 1
  cat "$work/cal.profile"
  # Rank and roofline on the measured profile from here on (and in a
  # second call on this machine).
  mirs --device-profile="$work/cal.profile" --device="$devname" show "$ex/gqa_small.ugraph" >/dev/null ||
    { echo "the measured profile does not load"; return 1; }
  cp "$work/cal.profile" "$row"
}
step_calibrate() {
  local st=0
  run_units calibrate || st=1
  if grep -qx calibrate "$work/u_calibrate/kept"; then
    echo "measured by an earlier call on this device"
  elif [ -s "$work/u_calibrate/done" ] && [ "$dry" -eq 1 ]; then
    echo "calibration refused without a GPU (exit 2 or 3); its program written"
  elif [ -s "$work/u_calibrate/done" ]; then
    echo "measured $devname: $(grep -E '^  (hbm_gbps|tc_f16_tflops|tc_bf16_tflops|tc_tf32_tflops|mem_latency_us|launch_us)' "$out/device.profile" | tr -s ' ' | tr '\n' ' ')"
  else
    echo "not measured; $(units_note calibrate)"
  fi
  return "$st"
}

# ---------------------------------------------------------------- (a) runs

# One run: example $1, best $2; a TSV line on stdout.
run_one() {
  local name=$1 file=$2 backend=cuda line err st t0 extra=()
  [ "$dry" -eq 1 ] && backend=host
  case $name in *@wgmma) extra=(--codegen-wgmma=1) ;; esac
  t0=$(date +%s)
  mirs run --backend=$backend "${cuda_opts[@]}" ${extra[@]+"${extra[@]}"} "$file" >"$work/run_$name.out" 2>&1
  st=$?
  line=$(grep '^max relative error' "$work/run_$name.out")
  err=$(echo "$line" | sed -n 's/^max relative error vs float64 interpreter: \([^ ]*\) (tolerance \([^,]*\),.*/\1\t\2/p')
  [ -n "$err" ] || err="-	-"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$([ $st -eq 0 ] && echo PASS || echo "FAIL($st)")" "$err" \
    "$(($(date +%s) - t0))" "$(basename "$file")"
}

# The published shapes first (what the GPU is for), then the Hopper path
# (sm_90a wgmma: no published best takes it, the register chain keeps
# their Q·K on mma.sync, hopper.c, so the test graphs that do; on the
# host, --dry-run, the f16 one only), then the small shapes.
units_runs() {
  local n
  if [ "$dry" -eq 0 ]; then for n in $published; do echo "$n"; done; fi
  echo wgmma_f16@wgmma
  [ "$dry" -eq 0 ] && echo wgmma_bf16@wgmma
  for n in $small; do echo "$n"; done
}
display_runs() { units_runs | grep -v '@wgmma$'; units_runs | grep '@wgmma$'; }
unit_runs() {
  local f
  case $1 in
  *@wgmma) f=$root/tests/codegen/${1%@wgmma}.ugraph ;;
  *) f=$(best_of "$1") || { printf '%s\tMISSING\t-\t-\t0\tno best µGraph\n' "$1" >"$2"; return 0; } ;;
  esac
  run_one "$1" "$f" >"$2.new" && mv "$2.new" "$2"
  cat "$work/run_$1.out"
}

step_runs() {
  local pass total st=0
  run_units runs || st=1
  set -- $(units_passed runs 'PASS')
  pass=$1 total=$2
  column -t -s '	' "$out/runs.tsv" 2>/dev/null || cat "$out/runs.tsv"
  echo "$pass/$total within tolerance ($([ "$dry" -eq 1 ] && echo host backend || echo cuda backend)); $(units_note runs)"
  [ "$st" -eq 0 ] && [ "$pass" -eq "$total" ]
}

# ---------------------------------------------------------------- (b) bench

# The published examples (--dry-run: their small shapes, whose harness
# sources are written), one at a time: timings never overlap.
units_bench() {
  local n
  for n in $published; do if [ "$dry" -eq 1 ]; then echo "${n}_small"; else echo "$n"; fi; done
}
unit_bench() {
  local n=$1 row=$2 f st
  f=$(best_of "$n") || { printf '%s\tMISSING\n' "$n" >"$row"; return 0; }
  if [ "$dry" -eq 1 ]; then
    # Here: the refusal, and the harness sources nvcc would compile.
    mkdir -p "$work/bench_$n"
    mirs bench "$f" --program="$ex/$n.graph" >"$work/bench_$n.out" 2>&1
    st=$?
    cat "$work/bench_$n.out"
    if [ "$st" -ne 2 ] && [ "$st" -ne 3 ]; then
      echo "$n: bench without a GPU exited $st, not 2 or 3"; printf '%s\tFAIL(%s)\n' "$n" "$st" >"$row"; return 0
    fi
    # (The small bests are one kernel each: the launch variants' sources
    # are those of the published shape's best.)
    if mirs bench "$f" --program="$ex/$n.graph" --source-dir="$work/bench_$n" && [ -s "$work/bench_$n/bench.cu" ] &&
      launch_variants_sources "${n%_small}"; then
      printf '%s\tSOURCES\n' "$n" >"$row"
    else
      printf '%s\tFAIL(sources)\n' "$n" >"$row"
    fi
    return 0
  fi
  local profile_opts=()
  [ -f "$profile" ] && profile_opts=(--device-profile="$profile")
  timeout 90 bash -c 'mirs bench --json --cuda-graph "$@"' _ "${cuda_opts[@]}" ${profile_opts[@]+"${profile_opts[@]}"} \
    --device="$devname" "$f" --program="$ex/$n.graph" >"$work/bench_$n.json" 2>"$work/bench_$n.err"
  st=$?
  cat "$work/bench_$n.err"
  # (A bench cut by its own timeout is a cut unit, not a result.)
  [ "$st" -eq 124 ] && return 124
  if [ "$st" -ne 0 ]; then printf '%s\tFAIL(%s)\n' "$n" "$st" >"$row"; return 0; fi
  cp "$work/bench_$n.json" "${row%.row}.json"
  python3 - "$n" "$work/bench_$n.json" >"$row.new" <<'EOF' && mv "$row.new" "$row"
import json, sys
r = json.load(open(sys.argv[2]))
c = {(x["name"], x["cuda_graph"]): x for x in r["configurations"]}
cand, base = c.get(("candidate", False), {}), c.get(("unfused", False), {})
f = lambda v, p="%.3f": "-" if v is None else p % v
print("\t".join([sys.argv[1], "PASS", f(cand.get("median_us")), f(cand.get("p10_us")),
                 f(cand.get("p90_us")), f(base.get("median_us")), f(r.get("speedup"), "%.2f"),
                 f(r.get("speedup_cuda_graph"), "%.2f"), f(cand.get("hbm_roofline_pct"), "%.1f"),
                 f(r.get("candidate_error"), "%.2e"), f(r.get("baseline_error"), "%.2e"),
                 str(r.get("baseline_checked")).lower()]))
EOF
  # A best with a split-K pair or several kernels (plain launches by
  # default) is also timed with its split-K pair as one launch
  # (--codegen-fuse-split-k=1, PDL off; the default code where there is
  # no pair) and as plain launches under programmatic dependent launch
  # (--codegen-pdl=1), so the row says what fusing the pair and PDL each
  # gain or cost (docs/CODEGEN.md; both were off by default after the
  # first H100 run timed them).
  # "-" for a one-kernel best; FAIL(rc) for a variant that failed (the
  # row's own figures stand).
  local plain=- pdl=- v med
  if multi_kernel "$f"; then
    for v in 0 1; do
      # (The PDL one also under a CUDA graph: its capture, kept in the JSON.)
      timeout 60 bash -c 'mirs bench --json "$@"' _ "${cuda_opts[@]}" ${profile_opts[@]+"${profile_opts[@]}"} \
        --device="$devname" --codegen-fuse-split-k=$((1 - v)) --codegen-pdl=$v $([ "$v" = 1 ] && echo --cuda-graph) \
        "$f" --program="$ex/$n.graph" >"$work/bench_${n}_pdl$v.json" 2>"$work/bench_${n}_pdl$v.err"
      st=$?
      cat "$work/bench_${n}_pdl$v.err"
      [ "$st" -eq 124 ] && return 124
      if [ "$st" -ne 0 ]; then med="FAIL($st)"; else med=$(bench_median "$work/bench_${n}_pdl$v.json"); fi
      if [ "$v" = 0 ]; then plain=$med; else pdl=$med; fi
    done
  fi
  printf '%s\t%s\t%s\n' "$(cat "$row")" "$plain" "$pdl" >"$row.new" && mv "$row.new" "$row"
}

# bench_median JSON: the candidate's median us (no CUDA graph) of a
# `mirsearch bench --json` report, "-" without one.
bench_median() {
  python3 - "$1" <<'EOF'
import json, sys
c = [x for x in json.load(open(sys.argv[1]))["configurations"]
     if x["name"] == "candidate" and not x["cuda_graph"]]
print("%.3f" % c[0]["median_us"] if c else "-")
EOF
}

# multi_kernel FILE: whether the µGraph has two custom kernels or more
# (a split-K pair, two launches by default) or two launches.
multi_kernel() {
  local n
  n=$(mirs show "$1" 2>/dev/null | sed -n '1s/.*: \([0-9][0-9]*\) kernels\{0,1\} (\([0-9][0-9]*\) custom).*/\1 \2/p')
  set -- $n
  [ $# -eq 2 ] && { [ "$1" -gt 1 ] || [ "$2" -gt 1 ]; }
}

# launch_variants_sources NAME (--dry-run): when the published example
# NAME's best has several kernels, the harness sources of the two
# variants the device run times (the pair fused in one, PDL launches in
# the other).
launch_variants_sources() {
  local n=$1 f v
  f=$(best_of "$n") || return 0
  multi_kernel "$f" || return 0
  for v in 0 1; do
    mkdir -p "$work/bench_${n}_pdl$v"
    mirs bench --codegen-fuse-split-k=$((1 - v)) --codegen-pdl=$v "$f" --program="$ex/$n.graph" \
      --source-dir="$work/bench_${n}_pdl$v" && [ -s "$work/bench_${n}_pdl$v/bench.cu" ] || return 1
  done
  grep -q 'MIRS_PDL(pdl, MIRS_LAUNCH(' "$work/bench_${n}_pdl1/cand.cu" &&
    ! grep -q 'MIRS_PDL(pdl, MIRS_LAUNCH(' "$work/bench_${n}_pdl0/cand.cu"
}

step_bench() {
  local pass total st=0
  run_units bench || st=1
  set -- $(units_passed bench 'PASS|SOURCES')
  pass=$1 total=$2
  column -t -s '	' "$out/bench.tsv" 2>/dev/null || cat "$out/bench.tsv"
  if [ "$dry" -eq 1 ]; then
    echo "$pass/$total harnesses written; bench refused without a GPU (exit 2 or 3); $(units_note bench)"
  else
    echo "$pass/$total timed; $(units_note bench)"
  fi
  [ "$st" -eq 0 ] && [ "$pass" -eq "$total" ]
}

# ---------------------------------------------------------------- ranking

# The cost model's order against measured time: 8 of gqa's 16 best by the
# model (two cost levels).  One unit: the correlation is over all of them.
units_ranking() { echo ranking; }
unit_ranking() {
  local src=$bundle/rank/gqa row=$2 st
  if [ ! -d "$src/candidates" ]; then
    [ "$dry" -eq 1 ] && src=$work/rank_src
    if [ "$dry" -eq 1 ]; then
      [ -d "$src/candidates" ] ||
        mirs -q --top=4 --measure-top=0 --out="$src" "$ex/rmsnorm_linear_small.graph" >/dev/null || return 1
    else
      echo "no ranking input (.devbundle/rank/gqa)"; return 1
    fi
  fi
  rm -rf "$work/rank"
  mkdir -p "$work/rank"
  cp -r "$src/candidates" "$work/rank/"
  if [ "$dry" -eq 1 ]; then
    mirs bench --rank="$work/rank" --top=4 >"$work/rank.out" 2>&1
    st=$?
    cat "$work/rank.out"
    [ "$st" -eq 2 ] || [ "$st" -eq 3 ] || { echo "bench --rank without a GPU exited $st, not 2 or 3"; return 1; }
    echo "{\"dry_run\": true, \"refused_with\": $st}" >"$row"
    return 0
  fi
  local profile_opts=()
  [ -f "$profile" ] && profile_opts=(--device-profile="$profile")
  timeout "$(($(unit_field ranking 3) - 5))" bash -c 'mirs bench "$@"' _ "${cuda_opts[@]}" ${profile_opts[@]+"${profile_opts[@]}"} \
    --device="$devname" --rank="$work/rank" --top="${RANK_TOP:-8}" >"$work/rank.out" 2>&1
  st=$?
  cat "$work/rank.out"
  [ "$st" -eq 124 ] && return 124
  [ "$st" -eq 0 ] || return 1
  cp "$work/rank/measured.json" "$row"
}
step_ranking() {
  local st=0
  run_units ranking || st=1
  if grep -qx ranking "$work/u_ranking/kept"; then echo "measured by an earlier call on this device"
  elif [ ! -s "$work/u_ranking/done" ]; then echo "not measured; $(units_note ranking)"
  elif [ "$dry" -eq 1 ]; then echo "ranking refused without a GPU (exit 2 or 3)"
  else echo "gqa, model's top ${RANK_TOP:-8}: $(grep 'rank correlation' "$work/rank.out")"
  fi
  return "$st"
}

# ---------------------------------------------------------------- search

# A search as a user runs it where a GPU is: every core, its results
# verified at full shape with GPU fingerprints, the model's top 16 timed
# on the device (--measure-top=16, harnesses compiled in parallel) and
# the fastest made best.ugraph.  Checked: complete; verified on the GPU;
# the model's best is examples/best's; its 16 best are those of the
# CPU-verified search the bundle holds (rank/gqa/report.json, one made
# here); every timed result passed its check.  --dry-run: a small
# program, CPU fingerprints, nothing timed (report.json says why).
search_ex=${SEARCH_EXAMPLE:-gqa}
[ "$dry" -eq 1 ] && search_ex=${SEARCH_EXAMPLE:-rmsnorm_linear_small}
units_search() { echo search; }
unit_search() {
  local n=$search_ex row=$2 d=$work/search st args
  rm -rf "$d"
  if [ "$dry" -eq 1 ]; then args=(--threads=2 --verify=cpu); else args=(--threads="$(nproc)" --verify=gpu "${cuda_opts[@]}"); fi
  # (Not -q: its log says how long the harnesses took to compile.)
  # (--time-limit inside the unit's box: a slow measurement ends with the
  # times taken by then, where the box's kill would lose them all.)
  timeout "$(($(unit_field search 3) - 5))" bash -c 'mirs "$@"' _ "${args[@]}" --top=16 --measure-top=16 --json \
    --time-limit="$(($(unit_field search 3) - 25))" \
    --out="$d" "$ex/$n.graph" >"$work/search.json" 2>"$work/search.err"
  st=$?
  grep -v -e '^search: found ' -e ' progress: ' "$work/search.err" | tail -n 30
  [ "$st" -eq 124 ] && return 124
  [ "$st" -eq 0 ] || { echo "the search of $n exited $st"; return 1; }
  python3 - "$d" "$ex/best/$n.ugraph" "$bundle/rank/$n/report.json" "$dry" "$n" >"$row" <<'EOF'
import glob, json, os, sys
d, best_file, cpu_report, dry, name = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5]
r = json.load(open(os.path.join(d, "report.json")))
res = r.get("results") or []
first = sorted(glob.glob(os.path.join(d, "candidates", "0001-*.ugraph")))
same_best = None
if os.path.exists(best_file) and first:
    same_best = open(first[0], "rb").read() == open(best_file, "rb").read()
same_results = None
if os.path.exists(cpu_report):
    c = json.load(open(cpu_report))
    k = min(len(res), len(c.get("results") or []))
    same_results = k > 0 and [x["hash"] for x in res[:k]] == [x["hash"] for x in c["results"][:k]]
m = r.get("measurement") or {}
timed = [x for x in res if "measured_seconds" in x]
model_best = res[0] if res else {}
out = {"program": name, "complete": r.get("complete"), "threads": r.get("threads"),
       "wall_seconds": r.get("wall_seconds"), "states_explored": r.get("states_explored"),
       "verify_backend": r.get("verify_backend"), "full_verify_seconds": r.get("full_verify_seconds"),
       "results_total": r.get("results_total"), "same_best_as_examples_best": same_best,
       "same_results_as_cpu_search": same_results, "times": r.get("times"), "measurement": m,
       "model_best": {"hash": model_best.get("hash"), "predicted_seconds": model_best.get("cost"),
                      "measured_seconds": model_best.get("measured_seconds")},
       "best": r.get("best"),
       "timed": [{"rank": x["rank"], "hash": x["hash"], "predicted_seconds": x.get("cost"),
                  "checked": x.get("checked"), "measured_seconds": x.get("measured_seconds"),
                  "measure_error": x.get("measure_error")} for x in timed]}
bad = []
if not r.get("complete"): bad.append("the search did not complete")
if same_best is False: bad.append("its model best is not examples/best/%s.ugraph" % name)
if same_results is False: bad.append("its best results are not the CPU-verified search's")
if dry:
    if r.get("times") != "predicted" or not m.get("skipped"): bad.append("a dry run timed something")
else:
    if not str(r.get("verify_backend", "")).startswith("gpu"): bad.append("not verified on the GPU: %s" % r.get("verify_backend"))
    if r.get("times") != "measured" or m.get("top") != min(16, len(res)): bad.append("the top 16 not timed: %s" % json.dumps(m))
    for x in timed:
        if x.get("measure_error"): bad.append("rank %s's harness failed: %s" % (x["rank"], x["measure_error"].splitlines()[0]))
    if any(x.get("checked") is False and not x.get("measure_error") for x in timed): bad.append("a timed result failed its check")
out["problems"] = bad
print(json.dumps(out, indent=1))
sys.exit(1 if bad else 0)
EOF
  st=$?
  cat "$row"
  return "$st"
}
step_search() {
  local st=0
  run_units search || st=1
  if grep -qx search "$work/u_search/kept"; then echo "measured by an earlier call on this device"
  elif [ ! -s "$work/u_search/done" ]; then echo "$search_ex: $([ -s "$work/u_search/failed" ] && echo failed || echo 'not run'); $(units_note search)"
  else
    python3 - "$out/bench.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["search"]
m, b = s.get("measurement") or {}, s.get("model_best") or {}
us = lambda v: "%.2f us" % (v * 1e6) if isinstance(v, (int, float)) else "-"
if s.get("times") == "measured":
    print("%s on %s threads: %.1f s, verified on the GPU in %s s; top %s timed, Spearman %.3f, measured best rank %s (%s; model's best %s)"
          % (s["program"], s["threads"], s["wall_seconds"], s["full_verify_seconds"], m.get("top"),
             m.get("rank_correlation", float("nan")), m.get("best_rank"), us((s.get("best") or {}).get("measured_seconds")),
             us(b.get("measured_seconds"))))
else:
    print("%s on %s threads: %.1f s, the model's best is examples/best's; nothing timed (dry run)"
          % (s["program"], s["threads"], s["wall_seconds"]))
EOF
  fi
  return "$st"
}

# ---------------------------------------------------------------- torch

# PyTorch eager and torch.compile of the published programs, one unit a
# program (--dry-run: each small program parsed).
units_torch() {
  local n
  for n in $published; do if [ "$dry" -eq 1 ]; then echo "${n}_small"; else echo "$n"; fi; done
}
unit_torch() {
  python3 -B "$root/bench/torch_baseline.py" --dry-run "$ex/$1.graph" >/dev/null ||
    { echo "torch_baseline.py cannot parse $1"; return 1; }
  echo "{\"program\": \"$1\", \"dry_run\": true}" >"$2"
}
# The device's programs run in one process (inductor starts its compile
# workers once): as many as the budget has time for, each program's line
# written to bench.json as it comes.
torch_device() {
  local d=$work/u_torch n todo=() est left k line done_n=0 st=0 got box
  mkdir -p "$d"
  : >"$d/kept"; : >"$d/done"; : >"$d/failed"; : >"$d/cut"; : >"$d/deferred"
  units_torch >"$d/all"
  order_of torch
  if keeps torch; then done_units torch | grep -xF -f "$d/all" >"$d/kept"; bench_json ensure torch_baseline; else fresh torch; fi
  est=$(unit_field torch 2)
  k=99
  if [ "$use_budget" -eq 1 ]; then
    left=$((budget - $(elapsed)))
    k=$(((left - TORCH_START) / est))
  fi
  for n in $(cat "$d/all"); do
    grep -qxF "$n" "$d/kept" && continue
    if [ "${#todo[@]}" -ge "$k" ]; then echo "$n" >>"$d/deferred"; continue; fi
    todo+=("$ex/$n.graph")
  done
  [ -s "$d/deferred" ] && echo "deferred for the budget: $(tr '\n' ' ' <"$d/deferred")"
  if [ "${#todo[@]}" -gt 0 ]; then
    box=$((STEP_BOX - 5))
    [ "$use_budget" -eq 1 ] && [ "$box" -gt "$((budget - $(elapsed) - 2))" ] && box=$((budget - $(elapsed) - 2))
    {
      PYTHONUNBUFFERED=1 timeout "$box" python3 -B "$root/bench/torch_baseline.py" --jsonl "${todo[@]}"
      echo "exit $?"
    } | {
      # Each program's time (after the first, which carries the start):
      # the follow-up's estimate.
      t_prev=$(date +%s)
      while IFS= read -r line; do
        case $line in
        "exit "*) echo "${line#exit }" >"$d/rc"; continue ;;
        esac
        [ -s "$d/done" ] && echo "$(($(date +%s) - t_prev))" >>"$d/times"
        t_prev=$(date +%s)
        echo "$line" >"$d/line.json"
        got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["program"])' "$d/line.json" 2>/dev/null) ||
          { echo "torch_baseline.py: not a result line: $line"; continue; }
        bench_json put torch_baseline "$d/line.json" program "$got" "$work/order_torch" && echo "$got" >>"$d/done"
        maybe_kill torch "$(grep -c . "$d/done")"
      done
    }
    st=$(cat "$d/rc" 2>/dev/null || echo 1)
    # What the process did not time (cut by its box, or failed on it).
    for n in "${todo[@]}"; do
      n=$(basename "$n" .graph)
      grep -qxF "$n" "$d/done" && continue
      if [ "$st" -eq 124 ]; then echo "$n" >>"$d/cut"; else echo "$n" >>"$d/failed"; fi
    done
  fi
  python3 - "$out/bench.json" <<'EOF' || true
import json, sys
for r in json.load(open(sys.argv[1])).get("torch_baseline") or []:
    for c in r["configurations"]:
        if "failed" in c:
            print(f"{r['program']:<18} {c['name']:<19} failed: {c['failed']}")
            continue
        print(f"{r['program']:<18} {c['name']:<19} {c['median_us']:>10.3f} us  p10 {c['p10_us']:.3f}"
              f"  p90 {c['p90_us']:.3f}  error {c['error']:.2e}{'' if c['checked'] else ' (beyond tolerance)'}")
EOF
  done_n=$(cat "$d/kept" "$d/done" | grep -c .)
  echo "$done_n/$(grep -c . "$d/all") programs timed (eager, torch.compile, each also as a CUDA graph)$([ "$st" -eq 124 ] && echo ', the rest cut by the box'); $(units_note torch)"
  [ ! -s "$d/failed" ]
}
step_torch() {
  if [ "$dry" -eq 0 ]; then torch_device; return; fi
  local st=0
  run_units torch || st=1
  echo "$(cat "$work/u_torch/kept" "$work/u_torch/done" | grep -c .) programs parsed (dry run: nothing timed); $(units_note torch)"
  return "$st"
}

# ---------------------------------------------------------------- (c) fingerprints

# The verdict, fingerprint and digest lines of a verify run, without what
# may name the backend or a time: the digest covers every output element
# of every trial, so equal lines mean bit-identical fingerprints.
verdict() {
  grep -E '^(equivalent|fingerprints|fingerprint digest):' "$1" 2>/dev/null | tr 'A-Z' 'a-z' |
    sed -E 's/[,;(]? *(backend|on|with) (cpu|gpu|cuda)\)?//g; s/\b(cpu|gpu|cuda)\b//g; s/[0-9.]+ ?(m?s|seconds)\b//g' |
    tr '\n' ' '
}

# A search with each backend first (the acceptance's "the same results",
# seconds on rmsnorm_linear_small), then every example (examples/*.graph;
# DEVICE_CHECK_EXAMPLES: those and their small shapes; the *_small ones
# in a dry run), against its best µGraph or itself where it has none:
# published shapes first; the table lists the search last.
units_fingerprints() {
  local names n f
  names=$(cd "$ex" && for f in *.graph; do echo "${f%.graph}"; done)
  [ -n "${DEVICE_CHECK_EXAMPLES:-}" ] && names="$published $small"
  [ "$dry" -eq 0 ] && echo search:rmsnorm_linear_small
  if [ "$dry" -eq 0 ]; then echo fullverify:mha; else echo fullverify:rmsnorm_linear_small; fi
  if [ "$dry" -eq 0 ]; then for n in $names; do case $n in *_small) ;; *) echo "$n" ;; esac; done; fi
  for n in $names; do case $n in *_small) echo "$n" ;; esac; done
}
display_fingerprints() { units_fingerprints | grep -Ev '^(search|fullverify):'; units_fingerprints | grep -E '^(search|fullverify):'; }
unit_fingerprints() {
  local n=$1 row=$2 f cpu gpu st_c st_g=- gpu_run=0
  case $n in
  search:*)
    local ex_s=${n#search:} v ok=1
    for v in cpu gpu; do
      timeout 120 bash -c 'mirs "$@"' _ --verify=$v --threads=16 -q --json --measure-top=0 --out="$work/fps_$v" \
        "$ex/$ex_s.graph" >"$work/fps_$v.json" 2>&1 || ok=0
    done
    if [ "$ok" -eq 1 ] && [ "$(hashes "$work/fps_cpu.json")" = "$(hashes "$work/fps_gpu.json")" ]; then
      printf '%s\tSAME\t0\t0\t%s results\t-\n' "$n" "$(hashes "$work/fps_cpu.json" | wc -l)" >"$row"
    else
      cat "$work/fps_cpu.json" "$work/fps_gpu.json"
      printf '%s\tDIFFERENT\t-\t-\t-\t-\n' "$n" >"$row"
    fi
    return 0 ;;
  fullverify:*)
    # The issue's figure: the full-shape verification of a published
    # search's results on the GPU (report.json's full_verify_seconds; one
    # CPU core took 305 s for mha's 16).  A time, not a verdict: TIMED.
    local ex_v=${n#fullverify:} vb=gpu rc
    [ "$dry" -eq 1 ] && vb=cpu
    timeout 110 bash -c 'mirs "$@"' _ --verify=$vb --threads=16 -q --json --measure-top=0 --out="$work/fv" \
      "$ex/$ex_v.graph" >"$work/fv.json" 2>&1
    rc=$?
    [ "$rc" -eq 124 ] && return 124
    if [ "$rc" -eq 0 ] && [ -n "$(field "$work/fv.json" full_verify_seconds)" ]; then
      printf '%s\tTIMED\t-\t%s\t%s results verified at full shape (%s)\t%s s\n' "$n" "$rc" \
        "$(field "$work/fv.json" results_listed)" "$vb" "$(field "$work/fv.json" full_verify_seconds)" >"$row"
    else
      cat "$work/fv.json"
      printf '%s\tFAIL(%s)\t-\t-\t-\t-\n' "$n" "$rc" >"$row"
    fi
    return 0 ;;
  esac
  f=$(best_of "$n") || f=$ex/$n.graph
  [ "$dry" -eq 0 ] && gpu_run=1
  # The CPU run in the background; the GPU ones at most 4 at a time (a
  # lock of 4, by the name's checksum): each starts a CUDA context, and
  # 8 would mostly wait on each other.
  timeout 120 bash -c 'mirs --verify=cpu verify "$@"' _ "$ex/$n.graph" "$f" >"$work/fp_cpu_$n" 2>&1 &
  local cpu_pid=$!
  if [ "$gpu_run" -eq 1 ]; then
    if command -v flock >/dev/null 2>&1; then
      flock "$work/gpu.lock.$(($(echo "$n" | cksum | cut -d' ' -f1) % 4))" timeout 60 bash -c 'mirs --verify=gpu verify "$@"' _ "$ex/$n.graph" "$f" >"$work/fp_gpu_$n" 2>&1
    else
      timeout 60 bash -c 'mirs --verify=gpu verify "$@"' _ "$ex/$n.graph" "$f" >"$work/fp_gpu_$n" 2>&1
    fi
    st_g=$?
  fi
  wait "$cpu_pid"
  st_c=$?
  # (A verify cut by its own timeout is a cut unit, not a result.)
  [ "$st_c" = 124 ] || [ "$st_g" = 124 ] && return 124
  cpu=$(verdict "$work/fp_cpu_$n")
  if [ "$gpu_run" -eq 1 ]; then
    gpu=$(verdict "$work/fp_gpu_$n")
    if [ "$st_c" = 0 ] && [ "$st_g" = 0 ] && [ "$cpu" = "$gpu" ]; then
      printf '%s\tSAME\t' "$n"
    else
      printf '%s\tDIFFERENT\t' "$n"
      { echo "-- $n cpu:"; cat "$work/fp_cpu_$n"; echo "-- $n gpu:"; cat "$work/fp_gpu_$n"; } >&2
    fi >"$row"
    printf '%s\t%s\t%s\t%s\n' "$st_c" "$st_g" "$cpu" "$gpu" >>"$row"
  else
    printf '%s\t%s\t%s\t-\t%s\t-\n' "$n" "$([ "$st_c" = 0 ] && echo CPU-OK || echo CPU-FAIL)" "$st_c" "$cpu" >"$row"
  fi
}

step_fingerprints() {
  local pass total st=0
  if ! mirs --verify=cpu check "$ex/gqa_small.graph" >/dev/null 2>&1; then
    publish fingerprints.tsv eval "header_of fingerprints; printf 'all\tSKIP\t-\t-\tthis mirsearch has no --verify option (the GPU fingerprint backend is not merged)\t-\n'"
    echo "SKIP: this mirsearch has no --verify=cpu|gpu option (GPU fingerprints not merged yet)"
    return 77
  fi
  run_units fingerprints || st=1
  set -- $(units_passed fingerprints 'SAME|CPU-OK|TIMED')
  pass=$1 total=$2
  column -t -s '	' "$out/fingerprints.tsv" 2>/dev/null || cat "$out/fingerprints.tsv"
  echo "$pass/$total $([ "$dry" -eq 0 ] && echo "CPU and GPU fingerprints the same" || echo "CPU fingerprints verified (dry run: no GPU)"); $(units_note fingerprints)"
  [ "$st" -eq 0 ] && [ "$pass" -eq "$total" ]
}

# ---------------------------------------------------------------- (d) scaling

# The result hashes of a report, in rank order.
hashes() {
  tr ',' '\n' <"$1" | sed -n 's/.*"hash": *"\([0-9a-f]*\)".*/\1/p'
}
# A number field of a report.
field() {
  tr ',' '\n' <"$1" | sed -n "s/.*\"$2\": *\([0-9.eE+-]*\).*/\1/p" | head -n 1
}

scale_ex=${SCALING_EXAMPLE:-lora_small}
[ "$dry" -eq 1 ] && scale_ex=${SCALING_EXAMPLE:-rmsnorm_linear_small}
# 1 thread first (the base of every speedup), then 16 (the efficiency
# figure of the acceptance), then the rest; the table by thread count.
units_scaling() { if [ "$dry" -eq 1 ]; then printf '1\n2\n'; else printf '1\n16\n'; fi; }
display_scaling() { units_scaling | sort -n; }
unit_scaling() {
  local t=$1 row=$2 st states wall
  timeout 150 bash -c 'mirs "$@"' _ --threads="$t" -q --json --measure-top=0 --time-limit=140 --out="$work/scale_$t" \
    "$ex/$scale_ex.graph" >"$work/scale_$t.json" 2>"$work/scale_$t.err"
  st=$?
  cat "$work/scale_$t.err"
  [ "$st" -eq 124 ] && return 124
  if [ "$st" -ne 0 ]; then printf '%s\t%s\tFAIL(%s)\n' "$scale_ex" "$t" "$st" >"$row"; return 0; fi
  states=$(field "$work/scale_$t.json" states_explored)
  wall=$(field "$work/scale_$t.json" wall_seconds)
  # The speedup, efficiency and sameness columns: scaling_derived, from
  # the 1-thread row (maybe an earlier call's).
  awk -v n="$scale_ex" -v t="$t" -v s="$states" -v w="$wall" -v r="$(hashes "$work/scale_$t.json" | wc -l)" \
    -v dg="$(hashes "$work/scale_$t.json" | cksum | cut -d' ' -f1)" 'BEGIN {
      printf "%s\t%d\t%d\t%.2f\t%.0f\t-\t-\t%d\t-\t%s\n", n, t, s, w, (w > 0 ? s / w : 0), r, dg }' >"$row"
}
# scaling.tsv with each row's speedup, efficiency and same_results from
# the 1-thread row, on stdout.
scaling_derived() {
  awk -F'\t' -v OFS='\t' 'NR == FNR { if (FNR > 1 && $2 == 1 && $4 ~ /^[0-9.]+$/) { w1 = $4; d1 = $10 } next }
    FNR == 1 { print; next }
    $4 !~ /^[0-9.]+$/ || NF < 10 { print; next }
    { if (w1 != "" && $4 > 0) { $6 = sprintf("%.2f", w1 / $4); $7 = sprintf("%.0f%%", 100 * w1 / $4 / $2) } else { $6 = "-"; $7 = "-" }
      $9 = (d1 == "" ? "-" : ($10 == d1 ? "yes" : "no")); print }' "$out/scaling.tsv" "$out/scaling.tsv"
}

step_scaling() {
  local st=0 ok=1
  run_units scaling || st=1
  column -t -s '	' "$out/scaling.tsv" 2>/dev/null || cat "$out/scaling.tsv"
  awk -F'\t' 'NR > 1 && ($9 == "no" || $3 ~ /^FAIL/) {bad = 1} END {exit bad}' "$out/scaling.tsv" || ok=0
  if [ "$(grep -c . "$out/scaling.tsv")" -le 1 ]; then
    echo "$scale_ex: no thread count run; $(units_note scaling)"
  elif [ "$ok" -eq 1 ] && [ "$st" -eq 0 ]; then
    echo "$scale_ex on $(awk -F'\t' 'NR > 1 {print $2}' "$out/scaling.tsv" | tr '\n' ',' | sed 's/,$//'): identical results; $(units_note scaling)"
  else
    echo "$scale_ex: a run failed or results differ; $(units_note scaling)"
  fi
  [ "$ok" -eq 1 ] && [ "$st" -eq 0 ]
}

# ---------------------------------------------------------------- backend

# The Python package's libmirsearch.so: MIRSEARCH_LIB, the bundle's, or
# the build tree's beside the program.
mirs_lib() {
  local f
  for f in ${MIRSEARCH_LIB:-} "$bundle/lib/libmirsearch.so" "$(dirname "$mirs_bin")/../.libs/libmirsearch.so" \
    "$(dirname "$mirs_bin")/.libs/libmirsearch.so"; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

# A folder of the bundle's libraries that this machine lacks (libz3), for
# the Python process's loader path: not the whole of .devbundle/lib, whose
# older libgomp would shadow the one torch was built with.
python_libs() {
  local d=$work/pylib f
  mkdir -p "$d"
  for f in "$bundle"/lib/*.so*; do
    [ -f "$f" ] || continue
    case $(basename "$f") in libmirsearch.so*) continue ;; esac
    ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$f") " || ln -sf "$f" "$d/"
  done
  echo "$d"
}

# The torch.compile backend's cuda mode on GPT-2's MLP (bench/backend_cuda.py):
# checked against eager and float64, timed against eager and inductor.
units_backend() { echo backend; }
unit_backend() {
  local py=${DEVICE_CHECK_PYTHON:-python3} lib st args=() row=$2
  lib=$(mirs_lib) || { echo "no libmirsearch.so for the Python package (device-bundle.sh puts one in .devbundle/lib)"; return 1; }
  if [ "$dry" -eq 1 ]; then args=(--dry-run); else args=(--threads="$(nproc)"); fi
  # Its search results and built extensions are kept for a second call.
  MIRSEARCH_LIB=$lib MIRSEARCH_CACHE=$state/pycache PYTHONUNBUFFERED=1 \
    LD_LIBRARY_PATH=$(python_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    timeout "$(($(unit_field backend 3) - 5))" "$py" -B "$root/bench/backend_cuda.py" "${args[@]}" \
    >"$work/part_backend.json" 2>"$work/backend.err"
  st=$?
  grep -v -E '^W[0-9]{4} |^ *warnings.warn' "$work/backend.err"
  [ "$st" -eq 0 ] && cp "$work/part_backend.json" "$row"
  [ "$st" -eq 3 ] && echo "$st" >"$work/backend.rc"
  return "$st"
}
step_backend() {
  local py=${DEVICE_CHECK_PYTHON:-python3} st=0
  if ! "$py" -c 'import torch, torch._dynamo' >/dev/null 2>&1; then
    echo "SKIP: $py has no torch with torch.compile (DEVICE_CHECK_PYTHON names another)"
    return 77
  fi
  run_units backend || st=1
  # (Exit 3: no CUDA device for torch; a skip, as before a GPU is at hand.)
  [ -f "$work/backend.rc" ] && { echo "SKIP: backend_cuda.py found no CUDA device (exit 3)"; return 77; }
  if grep -qx backend "$work/u_backend/kept"; then echo "measured by an earlier call on this device"
  elif [ -s "$work/u_backend/done" ]; then grep -v '^-- ' "$work/backend.err" | grep -v '^$' | tail -n 1
  else echo "not done; $(units_note backend)"
  fi
  return "$st"
}

# ---------------------------------------------------------------- the summary

# The step lines of an earlier summary.txt in OUTDIR for the steps this
# run has no line of, as $work/steps lines (status, seconds, retry, note);
# a step the earlier call was stopped in (RUNNING) is CUT.
earlier_steps() {
  [ -n "$prev_summary" ] || return 0
  local n
  for n in $(step_names); do
    grep -q "^$n	" "$work/table.any" && continue
    awk -v n="$n" -v dropped="$([ "$same_device" -eq 0 ] && echo " $timing_steps " | grep -q " $n " && echo 1)" '
      $1 == n && $2 ~ /^(PASS|FAIL|SKIP|PART|CUT|RUNNING)$/ {
      st = $2; note = $0; sub(/^[^ ]+ +[^ ]+ +[^ ]+ +/, "", note); sub(/^\(earlier\) /, "", note)
      if (st == "RUNNING") { st = "CUT"; note = "the call was stopped during this step" }
      if (dropped) { st = "SKIP"; $3 = "-"; note = "not run: the earlier results, of another device, dropped" }
      retry = (st == "FAIL" || st == "PART" || st == "CUT" || note ~ /^not (run|reached)/) ? 1 : 0
      printf "%s\t%s\t%s\t%s\t(earlier) %s\n", $1, st, $3, retry, note; exit }' "$prev_summary"
  done
}

# pending_est STEP: the seconds its units not done should take.
pending_est() {
  local n e=0 k=0 base cuts=
  # (One estimate for the step's units but scaling's and those with a
  # CUT row: summary.txt is written twice a step.)
  [ "$1" = scaling ] || base=$(unit_est "$1" -)
  table_of "$1" >/dev/null && [ -f "$out/$(table_of "$1")" ] &&
    cuts=$(awk -F'\t' -v k="$(key_col "$1")" '/\tCUT\(/ {print $k}' "$out/$(table_of "$1")")
  for n in $(pending_units "$1"); do
    if [ "$1" = scaling ] || echo "$cuts" | grep -qxF "$n"; then e=$((e + $(unit_est "$1" "$n")))
    else e=$((e + base))
    fi
    k=$((k + 1))
  done
  [ "$1" = torch ] && [ "$dry" -eq 0 ] && [ "$k" -gt 0 ] && e=$((e + TORCH_START))
  echo "$e"
}

# The follow-up call: --resume of this call's files for the steps with
# units not done (deferred, cut, or in steps not reached), with a budget
# of their estimates and a timeout 30 s over it.
follow_up() {
  local n p names= counts= need
  # A toolchain that failed fails every step after it: the whole call again.
  if grep -q '^toolchain	FAIL	' "$work/table"; then
    echo "follow-up: the toolchain step failed (log.txt says why): once that is mended, this call again, afresh:"
    echo "  command:   bash scripts/device-check.sh \"\$OUT\"$([ -n "$only" ] && echo " --only=$(echo $only | tr ' ' ',')")$([ -n "$skip" ] && echo " --skip=$(echo $skip | tr ' ' ',')")$([ "$dry" -eq 1 ] && echo ' --dry-run')"
    echo "  carry:     [\".devbundle\"]"
    return
  fi
  need=$(step_need toolchain)
  for n in $(step_names); do
    [ "$n" = toolchain ] && continue
    awk -F'\t' -v n="$n" '$1 == n && $4 == 1 {f = 1} END {exit !f}' "$work/table" || continue
    p=$(pending_units "$n" | grep -c .)
    [ "$p" -gt 0 ] || continue
    names="$names,$n" counts="$counts, $n $p"
    need=$((need + $(pending_est "$n")))
  done
  if [ -z "$names" ]; then
    if grep -q '	FAIL	' "$work/table"; then
      echo "follow-up: none to resume (every unit ran); a FAIL row is a result: to run a step again from scratch, --only=STEP without --resume"
    else
      echo "follow-up: none (every unit ran; none failed)"
    fi
    return
  fi
  need=$((need + need / 10 + 5))
  [ "$need" -gt 540 ] && need=540
  echo "follow-up: units not done:${counts#,} (about ${need} s); a second call resumes them, keeping this call's:"
  echo "  here:      rm -rf .devresume && mkdir .devresume && cp FILES_AT/* .devresume/   (FILES_AT: this call's files_at)"
  echo "  command:   DEVICE_CHECK_BUDGET=$need bash scripts/device-check.sh \"\$OUT\" --resume=.devresume --only=${names#,}$([ "$dry" -eq 1 ] && echo ' --dry-run')"
  echo "  carry:     [\".devbundle\", \".devresume\"]"
  echo "  timeout_s: $((need + 30))   (less if status's budget_left_s is less: lower DEVICE_CHECK_BUDGET with it)"
}

# summary_text [STEP]: summary.txt's text; STEP is the one running (a
# summary written while it runs, replaced when it ends).
summary_text() {
  local running=${1:-} failed n at
  at=$(elapsed)
  {
    cat "$work/steps"
    if [ -n "$running" ]; then
      if [ "$phase" = stopped ]; then
        printf '%s\tCUT\t-\t1\tstopped by a signal at %s s, during this step\n' "$running" "$at"
      else
        printf '%s\tRUNNING\t-\t1\tstarted at %s s; the call ended during it unless a later summary.txt replaced this one\n' "$running" "$at"
      fi
    fi
    for n in $(step_names); do
      selected "$n" || continue
      grep -q "^$n	" "$work/steps" && continue
      [ "$n" = "$running" ] && continue
      printf '%s\tSKIP\t-\t1\tnot reached (at %s s)\n' "$n" "$at"
    done
  } >"$work/table.any"
  earlier_steps >>"$work/table.any"
  : >"$work/table"
  for n in $(step_names); do grep "^$n	" "$work/table.any" | head -n 1 >>"$work/table"; done
  failed=$(awk -F'\t' '$2 == "FAIL"' "$work/table" | wc -l)
  echo "mirsearch device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(mode_line)"
  echo "commit: $commit"
  echo "steps run: $(cut -f1 "$work/steps" | tr '\n' ' ')$([ -n "$prev_summary" ] && echo '(the rest from the earlier summary.txt here)')$([ "$resume_ok" -eq 1 ] && echo "; resumed from $resume (files of commit $prev_commit$([ "$prev_commit" != "$commit" ] && echo ', not this one: say so where its figures go'))")"
  cat "$work/device.txt" 2>/dev/null
  echo "total: ${at} s$([ "$use_budget" -eq 1 ] && echo " of a ${budget} s budget")"
  echo
  printf '%-13s %-6s %7s  %s\n' step status seconds note
  awk -F'\t' '{printf "%-13s %-6s %7s  %s\n", $1, $2, $3, $5}' "$work/table"
  if [ "$phase" = stopped ]; then
    echo "overall: STOPPED by a signal at ${at} s${running:+, during $running}$([ "$failed" -gt 0 ] && echo "; $failed steps FAIL")"
  elif [ -n "$running" ]; then
    echo "overall: RUNNING (written as $running started: if this is the last summary.txt, the call was stopped during it)"
  fi
  follow_up >"$work/follow_up"
  if [ -z "$running" ] && [ "$phase" != stopped ]; then
    if [ "$failed" -gt 0 ]; then echo "overall: FAIL ($failed steps)"
    elif grep -q '^follow-up: units not done' "$work/follow_up"; then echo "overall: PASS so far (units left: the follow-up below)"
    else echo "overall: PASS"
    fi
  fi
  cat "$work/follow_up"
}
write_summary() { publish summary.txt summary_text "$@"; }

# SIGTERM or SIGINT (the tool's timeout, a person): the steps' processes
# ended, summary.txt written with the follow-up, exit 143.
phase=run current=
stopped() {
  trap - TERM INT
  local c
  for c in $(pgrep -P $$); do kill_tree "$c"; done
  phase=stopped
  echo "== stopped by a signal at $(elapsed) s${current:+, during $current}" >>"$log"
  write_summary "$current"
  cat "$summary"
  exit 143
}
trap stopped TERM INT

# ---------------------------------------------------------------- the plan

# --plan: each selected step's units on the device, how many run at
# once, and the wall time their estimates add up to (a parallel step's
# units in rounds of JOBS); exit 1 when the total is over the budget.
if [ "$plan" -eq 1 ]; then
  dry=0 total=$(step_need toolchain)
  printf '%-13s %6s %5s %7s\n' step units jobs est_s
  printf '%-13s %6s %5s %7s\n' toolchain - - "$total"
  for n in $(step_names); do
    [ "$n" = toolchain ] && continue
    selected "$n" || continue
    k=$("units_$n" | grep -c .) j=$(unit_field "$n" 4)
    case $n in
    scaling | torch) e=$(pending_est "$n") ;;
    *) e=$(((k + j - 1) / j * $(unit_est "$n" -))) ;;
    esac
    printf '%-13s %6s %5s %7s\n' "$n" "$k" "$j" "$e"
    total=$((total + e))
  done
  printf 'total: %s s of estimates for a %s s budget\n' "$total" "$budget"
  [ "$total" -le "$budget" ]
  exit
fi

# ---------------------------------------------------------------- the run

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
note "mirsearch device check: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(mode_line)$([ "$use_budget" -eq 1 ] && echo ", budget ${budget} s")"
note "commit: $commit"
note "steps: $(for n in $(step_names); do selected "$n" && printf '%s ' "$n"; done)"
[ "$resume_ok" -eq 1 ] && note "resuming from $resume"
[ -f "$bundle/MANIFEST" ] && note "bundle: $(head -n 1 "$bundle/MANIFEST")"
: >"$work/device.txt"
devname=H100
for n in $(step_names); do
  selected "$n" || continue
  current=$n
  step "$n"
  current=
  [ "$n" = toolchain ] || continue
  grep -q 'H200' "$work/device.txt" 2>/dev/null && devname=H200
  # Timings of another device are not this one's: those steps start afresh.
  if [ "$resume_ok" -eq 1 ]; then
    prev_dev=$(grep -m 1 '^device: ' "$prev_summary" | cut -d, -f1)
    cur_dev=$(grep -m 1 '^device: ' "$work/device.txt" | cut -d, -f1)
    if [ "$prev_dev" != "$cur_dev" ]; then
      same_device=0
      note "--resume: the earlier call ran on '${prev_dev#device: }', this one on '${cur_dev#device: }': only its runs and fingerprints are kept"
      # (All of them, run by this call or not: OUTDIR holds one device's times.)
      for s in $timing_steps; do fresh "$s"; done
    elif [ "$dry" -eq 0 ] && done_units calibrate | grep -q .; then
      # Its measured profile: bench and ranking use it.
      cp "$out/device.profile" "$profile"
    fi
  fi
done
# The profile's file, when the calibrate step was to write it and did not.
selected calibrate && [ ! -f "$out/device.profile" ] &&
  publish device.profile echo "# not measured (the calibrate step did not run or failed)"
write_summary
cat "$summary"
! grep -q '	FAIL	' "$work/steps"
