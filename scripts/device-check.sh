#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/device-check.sh OUTDIR [--dry-run] [--only=STEP,...] [--skip=STEP,...]
# scripts/device-check.sh --list
# The one command run on a lent GPU machine (docs/GPU.md).  It runs in a
# copy of the repository with the bundle scripts/device-bundle.sh made
# (.devbundle/: a host build of mirsearch and libmirsearch.so, the shared
# libraries that machine lacks, the best µGraph of every example), builds
# the CUDA parts with that machine's nvcc, and writes to OUTDIR (at most 8
# files, all a run may bring back):
#   summary.txt       the device, the toolchain, one line per step, and the
#                     exact follow-up call for the steps not run or failed
#   runs.tsv          (a) generated code of every example's best run on the
#                     GPU against the float64 interpreter, published and
#                     small shapes (`mirsearch run --backend=cuda`), and
#                     NAME@wgmma: the Hopper path's code (--codegen-wgmma=1,
#                     sm_90a) of tests/codegen/wgmma_f16 and wgmma_bf16 (no
#                     published best picks wgmma since the register chain
#                     took their Q·K; in --dry-run wgmma_f16 only)
#   fingerprints.tsv  (c) CPU vs GPU fingerprints (`verify --verify=cpu|gpu`)
#                     on every example, and a search with each: the same results
#   bench.tsv         (b) `mirsearch bench` of the published examples
#   bench.json        {"mirsearch_bench": [its JSON per example],
#                      "torch_baseline": bench/torch_baseline.py's JSON:
#                      PyTorch eager and torch.compile of the same programs,
#                      "ranking": `bench --rank` of 8 of gqa's 16 best by the
#                      model: predicted and measured time, rank correlation,
#                      "backend": bench/backend_cuda.py's JSON: the
#                      torch.compile backend's cuda mode on GPT-2's MLP
#                      against eager and inductor}
#   device.profile    the device profile `mirsearch bench --calibrate` measured
#   scaling.tsv       (d) the search on 1, 2, 4, 8, 16 threads: states/s,
#                     efficiency, identical results (report.json hashes)
#   log.txt           every command and its output
#
# The steps, in the order they run: their value to issue 26's acceptance
# first, so that a run cut short has done the most important ones.  NEED
# is the time a step takes on the device as far as it can be told without
# one; BOX is its time box (about twice NEED: the device is unknown).
#   step          NEED  BOX  why that long
#   toolchain      15    60  nvcc builds the device query (2 s here) and
#                            the fingerprint module (7 s here; both kept in
#                            .devcheck-state/ for a second call); a 1 GiB
#                            copy timed
#   runs           45   120  24 runs, 8 at a time on 16 cores: an nvcc
#                            build each (1.5-5 s), the float64 reference
#                            (< 1 s at published shapes), the run
#   fingerprints   50   150  CPU verify of 22 bests, 8 at a time (4.5 s for
#                            mqa, 8 s for gated_mlp here), the GPU ones one
#                            by one (CUDA start, ~2 s each); two searches
#   bench          80   180  11 examples one at a time (timings never
#                            overlap): nvcc (1.5 s), two processes, 4 x 110
#                            timed runs; nothing to share between them
#   torch          90   150  11 programs: eager, and torch.compile (inductor
#                            starts its compile workers once, then a few
#                            seconds a program); cut short it keeps what
#                            it timed, and a second call times the rest
#   calibrate      15    60  calibrate.cu built (2 s), a 1 GiB copy x 9, an
#                            8192^3 f16 product, 1000 empty launches
#   ranking        50   120  8 gqa candidates benched like `bench`
#   backend        80   150  bench/backend_cuda.py: a search of GPT-2's MLP
#                            (8 s limit), its kernel built by load_inline
#                            (51-74 s on 2 loaded cores here; ninja on 16),
#                            inductor's compile, 3 x 110 timed runs
#   scaling        70   150  lora_small on 1, 2, 4, 8, 16 threads: 29 CPU s
#                            single-threaded here, then about halving
# The whole run keeps within DEVICE_CHECK_BUDGET seconds (default 540, for
# a call with timeout_s 570): a step starts only when its NEED is left,
# and its box is cut to what is left.  The toolchain step always runs,
# first (the device, nvcc, the fingerprint module: what the others use).
# --only=STEP,... runs just those (in the order above, after toolchain);
# --skip=STEP,... all but those.  A step not run for lack of time, or
# failed, is named in the follow-up call summary.txt prints at its end: a
# second, shorter call on the same warm machine that runs just those.
# Given an OUTDIR that holds an earlier run's files, a run replaces only
# the files of the steps it runs and merges the step lines of summary.txt
# (the earlier ones marked), so both calls' tables end up side by side.
# The exit status is 0 when no step failed (a skipped step is not a
# failure), 1 otherwise; 2 on a usage error.
#
# --dry-run runs the same pipeline without a GPU (`make check` does, in
# tests/device_check.sh): the host backend instead of CUDA, the bench
# harness only written (its refusal checked), the PyTorch program only
# parsed, CPU fingerprints only, 1 and 2 threads, small shapes only, the
# backend on GPT-2's MLP in host mode and its cuda-mode sources compiled
# with nvcc under load_inline's flags; no budget unless
# DEVICE_CHECK_BUDGET is set.
#
# Environment: MIRSEARCH (the program; default .devbundle/bin/mirsearch,
# else src/mirsearch), MIRSEARCH_LIB (libmirsearch.so for the Python
# package; default the bundle's, else the build tree's), DEVICE_CHECK_BUDGET,
# DEVICE_CHECK_PYTHON (the Python with torch; default python3),
# DEVICE_CHECK_STATE (what a second call reuses; default .devcheck-state,
# in --dry-run a temporary folder), SCALING_EXAMPLE (default lora_small,
# the small example with the longest search), NVCC.
set -u

# The steps: name, NEED and BOX (seconds), as in the table above.
STEPS="toolchain:15:60 runs:45:120 fingerprints:50:150 bench:80:180 torch:90:150
calibrate:15:60 ranking:50:120 backend:80:150 scaling:70:150"
step_field() { echo $STEPS | tr ' ' '\n' | awk -F: -v n="$1" -v k="$2" 'n == "" || $1 == n {print $k}'; }
step_names() { step_field "" 1; }
step_need() { step_field "$1" 2; }
step_box() { step_field "$1" 3; }

usage() {
  echo "usage: scripts/device-check.sh OUTDIR [--dry-run] [--only=STEP,...] [--skip=STEP,...]" >&2
  echo "       scripts/device-check.sh --list" >&2
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

out= dry=0 only= skip=
for a in "$@"; do
  case $a in
  --dry-run) dry=1 ;;
  --only=*) only=$(step_list "${a#--only=}") || exit 2; [ -n "$only" ] || usage ;;
  --skip=*) skip=$(step_list "${a#--skip=}") || exit 2 ;;
  --list)
    printf '%-13s %5s %5s\n' step need box
    for s in $(step_names); do printf '%-13s %5s %5s\n' "$s" "$(step_need "$s")" "$(step_box "$s")"; done
    exit 0 ;;
  -*) usage ;;
  *) [ -z "$out" ] || usage; out=$a ;;
  esac
done
[ -n "$out" ] || usage
[ -z "$only" ] || [ -z "$skip" ] || { echo "device-check.sh: --only or --skip, not both" >&2; usage; }

# selected NAME: whether this run runs step NAME (toolchain always).
selected() {
  [ "$1" = toolchain ] && return 0
  if [ -n "$only" ]; then echo "$only" | grep -qx "$1"; return; fi
  ! echo "$skip" | grep -qx "$1"
}

mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

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
# What a second call on the same machine reuses (the fingerprint module,
# the calibrated profile); ignored by git, not carried.
state=${DEVICE_CHECK_STATE:-}
if [ -z "$state" ]; then
  if [ "$dry" -eq 1 ]; then state=$work/state; else state=$root/.devcheck-state; fi
fi
mkdir -p "$state" || exit 3
# DEVICE_CHECK_EXAMPLES: a subset of the published examples (a rerun of some).
published=${DEVICE_CHECK_EXAMPLES:-"rmsnorm_linear gqa qknorm_attention lora gated_mlp ntrans mha mqa causal_attention gqa_safe mha_safe"}
small=""
for n in $published; do small="$small ${n}_small"; done

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
# The calibrated profile (this call's calibrate step or an earlier one's):
# bench and ranking rank and report rooflines on it when it is there.
profile=$state/device.profile
# Commands run under `timeout` and xargs reach the program through these.
export bundle mirs_bin work dry
export -f mirs

log=$out/log.txt
summary=$out/summary.txt
# An OUTDIR with an earlier run's files: keep its step lines and log.
prev_summary=
if [ -f "$summary" ]; then prev_summary=$work/summary.prev; cp "$summary" "$prev_summary"; fi
[ -f "$log" ] && echo >>"$log" || : >"$log"
: >"$work/steps"
note() { echo "$*" | tee -a "$log"; }
elapsed() { echo $(($(date +%s) - start)); }

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

# step_line NAME STATUS SECONDS RETRY NOTE: one line of $work/steps
# (RETRY: 1 when the follow-up call should run it again).
step_line() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$work/steps"
}

# step NAME: run step_NAME under its time box (cut to what the budget has
# left; not started when less than its NEED is left); its last line of
# output is the note, its status PASS (0), FAIL, or SKIP (exit 77).
step() {
  local name=$1 box need left t0 rc noteline st=PASS retry=0
  box=$(step_box "$name") need=$(step_need "$name")
  left=$((budget - $(elapsed)))
  if [ "$use_budget" -eq 1 ] && [ "$name" != toolchain ] && [ "$left" -lt "$need" ]; then
    step_line "$name" SKIP 0 1 "not run: ${left} s left of the ${budget} s budget, it needs ${need} s"
    note "== $name: not run, ${left} s left (needs ${need} s)"
    return
  fi
  [ "$use_budget" -eq 1 ] && [ "$name" != toolchain ] && [ "$box" -gt "$left" ] && box=$left
  note "== $name (time box ${box} s, at $(elapsed) s)"
  t0=$(date +%s)
  STEP_BOX=$box "step_$name" >"$work/step.out" 2>&1 &
  local pid=$!
  # The box: the step's process tree, by id (each long command has its
  # own `timeout` too; this is the backstop).
  (sleep "$box"; kill_tree "$pid") 2>/dev/null &
  local watchdog=$!
  wait "$pid"
  rc=$?
  kill_tree "$watchdog"
  wait "$watchdog" 2>/dev/null
  cat "$work/step.out" >>"$log"
  noteline=$(grep -v '^$' "$work/step.out" | tail -n 1 | tr '\t' ' ' | cut -c1-150)
  if [ "$rc" -eq 77 ]; then st=SKIP; elif [ "$rc" -ne 0 ]; then st=FAIL retry=1; fi
  [ "$rc" -eq 143 ] && noteline="timed out after ${box} s; $noteline"
  step_line "$name" "$st" "$(($(date +%s) - t0))" "$retry" "$noteline"
  note "-- $name: $st ($(($(date +%s) - t0)) s)"
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
  # The fingerprint module, for --verify=gpu (step c).
  nvcc_once "$gpufp_lib" "$root/src/gpu/gpufp.cu" "$root/src/gpu/gpufp_abi.h" -- -O3 -std=c++17 -shared \
    -Xcompiler -fPIC,-fvisibility=hidden -gencode=arch=compute_90,code=sm_90 -I"$root/src" \
    -o "$gpufp_lib" "$root/src/gpu/gpufp.cu" ||
    { echo "nvcc cannot build the GPU fingerprint module (src/gpu/gpufp.cu)"; return 1; }
  echo "GPU fingerprint module: $gpufp_lib"
  if [ "$dry" -eq 1 ]; then echo "device query compiled with $nvcc (not run: dry run)"; return 0; fi
  nvidia-smi -L 2>&1 || true
  "$state/query" | tee "$work/device.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "the device query failed"; return 1; }
  head -n 1 "$work/device.txt"
}

# The device profile, measured (bench --calibrate); bench uses it after.
step_calibrate() {
  if [ "$dry" -eq 1 ]; then
    mirs bench --calibrate="$out/device.profile" >"$work/cal.out" 2>&1
    local st=$?
    cat "$work/cal.out"
    [ "$st" -eq 2 ] || [ "$st" -eq 3 ] || { echo "bench --calibrate without a GPU exited $st, not 2 or 3"; return 1; }
    mkdir -p "$work/cal"
    mirs bench --calibrate="$out/device.profile" --source-dir="$work/cal" || return 1
    echo "# dry run: no GPU, nothing measured" >"$out/device.profile"
    echo "calibration refused without a GPU (exit $st); its program written"
    return 0
  fi
  timeout 120 bash -c 'mirs bench "$@"' _ "${cuda_opts[@]}" --calibrate="$out/device.profile" || return 1
  cat "$out/device.profile"
  # Rank and roofline on the measured profile from here on (and in a
  # second call on this machine).
  mirs --device-profile="$out/device.profile" --device="$devname" show "$ex/gqa_small.ugraph" >/dev/null ||
    { echo "the measured profile does not load"; return 1; }
  cp "$out/device.profile" "$profile"
  echo "measured $devname: $(grep -E '^  (hbm_gbps|tc_f16_tflops|launch_us)' "$out/device.profile" | tr -s ' ' | tr '\n' ' ')"
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

step_runs() {
  local names="$small" n f pass=0 total=0 jobs=8
  [ "$dry" -eq 0 ] && names="$published $small"
  [ "$dry" -eq 1 ] && jobs=1
  printf 'example\tstatus\tmax_rel_error\ttolerance\tseconds\tfile\n' >"$out/runs.tsv"
  : >"$work/runs.list"
  for n in $names; do
    if f=$(best_of "$n"); then echo "$n $f" >>"$work/runs.list"; else
      printf '%s\tMISSING\t-\t-\t0\tno best µGraph\n' "$n" >>"$out/runs.tsv"
      [ "$dry" -eq 0 ] && total=$((total + 1))
    fi
  done
  # The Hopper path (sm_90a wgmma): no published best takes it (the
  # register chain keeps their Q·K on mma.sync, hopper.c), so the test
  # graphs that do; on the host (--dry-run) the f16 one only.
  echo "wgmma_f16@wgmma $root/tests/codegen/wgmma_f16.ugraph" >>"$work/runs.list"
  [ "$dry" -ne 0 ] ||
    echo "wgmma_bf16@wgmma $root/tests/codegen/wgmma_bf16.ugraph" >>"$work/runs.list"
  # Several at once: nvcc compiles dominate, and the machine has 16 cores.
  export -f run_one
  export CUDA_OPTS_NVCC="$nvcc"
  timeout "$STEP_BOX" xargs -P "$jobs" -L 1 bash -c 'cuda_opts=(); [ -n "$CUDA_OPTS_NVCC" ] && cuda_opts=(--codegen-nvcc="$CUDA_OPTS_NVCC" --codegen-arch=90); run_one "$0" "$1"' \
      <"$work/runs.list" >>"$out/runs.tsv"
  for n in $(cut -f1 "$work/runs.list" 2>/dev/null | cut -d' ' -f1); do
    total=$((total + 1))
    grep -q "^$n	PASS	" "$out/runs.tsv" && pass=$((pass + 1))
    grep -q "^$n	PASS	" "$out/runs.tsv" || { echo "-- $n:"; cat "$work/run_$n.out" 2>/dev/null; }
  done
  column -t -s '	' "$out/runs.tsv" 2>/dev/null || cat "$out/runs.tsv"
  echo "$pass/$total within tolerance ($([ "$dry" -eq 1 ] && echo host backend || echo cuda backend))"
  [ "$total" -gt 0 ] && [ "$pass" -eq "$total" ]
}

# ---------------------------------------------------------------- (b) bench

step_bench() {
  local n f pass=0 total=0 first=1 st
  printf 'example\tstatus\tcandidate_us\tcand_p10\tcand_p90\tunfused_us\tspeedup\tgraph_speedup\thbm_roofline_pct\tcand_error\tbase_error\tbase_checked\n' >"$out/bench.tsv"
  echo "[" >"$work/part_mirsearch_bench.json"
  for n in $published; do
    if [ "$dry" -eq 1 ]; then
      # Here: the refusal, and the harness sources nvcc would compile.
      n=${n}_small
    fi
    f=$(best_of "$n") || { printf '%s\tMISSING\n' "$n" >>"$out/bench.tsv"; [ "$dry" -eq 0 ] && total=$((total + 1)); continue; }
    total=$((total + 1))
    if [ "$dry" -eq 1 ]; then
      mkdir -p "$work/bench_$n"
      mirs bench "$f" --program="$ex/$n.graph" >"$work/bench_$n.out" 2>&1
      st=$?
      if [ "$st" -ne 2 ] && [ "$st" -ne 3 ]; then
        echo "$n: bench without a GPU exited $st, not 2 or 3"; cat "$work/bench_$n.out"; continue
      fi
      mirs bench "$f" --program="$ex/$n.graph" --source-dir="$work/bench_$n" >>"$work/bench_$n.out" 2>&1 &&
        [ -s "$work/bench_$n/bench.cu" ] && pass=$((pass + 1)) && printf '%s\tSOURCES\n' "$n" >>"$out/bench.tsv"
      continue
    fi
    local profile_opts=()
    [ -f "$profile" ] && profile_opts=(--device-profile="$profile")
    timeout 90 bash -c 'mirs bench --json --cuda-graph "$@"' _ "${cuda_opts[@]}" "${profile_opts[@]}" \
      --device="$devname" "$f" --program="$ex/$n.graph" >"$work/bench_$n.json" 2>"$work/bench_$n.err"
    st=$?
    cat "$work/bench_$n.err"
    if [ "$st" -ne 0 ]; then
      printf '%s\tFAIL(%s)\n' "$n" "$st" >>"$out/bench.tsv"
      continue
    fi
    pass=$((pass + 1))
    [ "$first" -eq 1 ] || echo "," >>"$work/part_mirsearch_bench.json"
    first=0
    cat "$work/bench_$n.json" >>"$work/part_mirsearch_bench.json"
    python3 - "$n" "$work/bench_$n.json" >>"$out/bench.tsv" <<'EOF'
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
  done
  echo "]" >>"$work/part_mirsearch_bench.json"
  column -t -s '	' "$out/bench.tsv" 2>/dev/null || cat "$out/bench.tsv"
  if [ "$dry" -eq 1 ]; then
    echo "$pass/$total harnesses written; bench refused without a GPU (exit 2 or 3)"
  else
    echo "$pass/$total timed"
  fi
  [ "$total" -gt 0 ] && [ "$pass" -eq "$total" ]
}

# The cost model's order against measured time: 8 of gqa's 16 best by the model (two cost levels).
step_ranking() {
  local src=$bundle/rank/gqa
  if [ ! -d "$src/candidates" ]; then
    [ "$dry" -eq 1 ] && src=$work/rank_src
    if [ "$dry" -eq 1 ]; then
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
    local st=$?
    cat "$work/rank.out"
    [ "$st" -eq 2 ] || [ "$st" -eq 3 ] || { echo "bench --rank without a GPU exited $st, not 2 or 3"; return 1; }
    echo "ranking refused without a GPU (exit $st)"
    return 0
  fi
  local profile_opts=()
  [ -f "$profile" ] && profile_opts=(--device-profile="$profile")
  timeout "$STEP_BOX" bash -c 'mirs bench "$@"' _ "${cuda_opts[@]}" "${profile_opts[@]}" --device="$devname" \
    --rank="$work/rank" --top="${RANK_TOP:-8}" >"$work/rank.out" 2>&1
  local st=$?
  cat "$work/rank.out"
  [ "$st" -eq 0 ] || return 1
  cp "$work/rank/measured.json" "$work/part_ranking.json"
  echo "gqa, model's top ${RANK_TOP:-8}: $(grep 'rank correlation' "$work/rank.out")"
}

# PyTorch eager and torch.compile of the published programs.
step_torch() {
  local progs=() n
  if [ "$dry" -eq 1 ]; then
    for n in $small; do progs+=("$ex/$n.graph"); done
    python3 -B "$root/bench/torch_baseline.py" --dry-run "${progs[@]}" >"$work/torch.txt" ||
      { echo "torch_baseline.py cannot parse the programs"; return 1; }
    echo "{\"dry_run\": true, \"programs\": ${#progs[@]}}" >"$work/part_torch_baseline.json"
    echo "${#progs[@]} programs parsed (dry run: nothing timed)"
    return 0
  fi
  # One line a program, so a run cut short by its box keeps what it timed;
  # a call cut short leaves its lines to the next on this machine (the
  # follow-up), which times only the rest.
  local jsonl=$state/torch.jsonl todo=() earlier=0 st=0
  for n in $published; do
    progs+=("$ex/$n.graph")
    if grep -q "\"program\": \"$n\"" "$jsonl" 2>/dev/null; then earlier=$((earlier + 1)); else todo+=("$ex/$n.graph"); fi
  done
  [ -s "$jsonl" ] && [ -n "$(tail -c 1 "$jsonl")" ] && echo >>"$jsonl"
  if [ "${#todo[@]}" -gt 0 ]; then
    PYTHONUNBUFFERED=1 timeout "$((STEP_BOX - 5))" python3 -B "$root/bench/torch_baseline.py" --jsonl \
      "${todo[@]}" >>"$jsonl"
    st=$?
  fi
  python3 - "$jsonl" "$work/part_torch_baseline.json" <<'EOF' || true
import json, sys
rows = []
for line in open(sys.argv[1]):
    try:
        rows.append(json.loads(line))
    except ValueError:
        pass
json.dump(rows, open(sys.argv[2], "w"), indent=1)
for r in rows:
    for c in r["configurations"]:
        print(f"{r['program']:<18} {c['name']:<14} {c['median_us']:>10.3f} us  p10 {c['p10_us']:.3f}"
              f"  p90 {c['p90_us']:.3f}  error {c['error']:.2e}{'' if c['checked'] else ' (beyond tolerance)'}")
EOF
  local done_n
  done_n=$(grep -c . "$jsonl" 2>/dev/null)
  [ "$st" -eq 124 ] || rm -f "$jsonl"
  echo "${done_n:-0}/${#progs[@]} programs timed (eager, torch.compile)$([ "$earlier" -gt 0 ] &&
    echo ", $earlier of them by an earlier call")$([ "$st" -eq 124 ] && echo ': the rest cut by the time box')"
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

step_fingerprints() {
  # Every example (the *_small ones in a dry run; DEVICE_CHECK_EXAMPLES:
  # those and their small shapes), against its best uGraph or itself.
  local names n f cpu gpu st_c st_g pass=0 total=0 have_gpu=1
  names=$(cd "$ex" && for f in *.graph; do echo "${f%.graph}"; done)
  [ -n "${DEVICE_CHECK_EXAMPLES:-}" ] && names="$published $small"
  [ "$dry" -eq 1 ] && names=$(for n in $names; do case $n in *_small) echo "$n" ;; esac; done)
  printf 'example\tstatus\tcpu_exit\tgpu_exit\tcpu_fingerprints\tgpu_fingerprints\n' >"$out/fingerprints.tsv"
  if ! mirs --verify=cpu check "$ex/gqa_small.graph" >/dev/null 2>&1; then
    printf 'all\tSKIP\t-\t-\tthis mirsearch has no --verify option (the GPU fingerprint backend is not merged)\t-\n' \
      >>"$out/fingerprints.tsv"
    echo "SKIP: this mirsearch has no --verify=cpu|gpu option (GPU fingerprints not merged yet)"
    return 77
  fi
  [ "$dry" -eq 1 ] && have_gpu=0
  for n in $names; do
    f=$(best_of "$n") || f=$ex/$n.graph
    total=$((total + 1))
    ( timeout 120 bash -c 'mirs --verify=cpu verify "$@"' _ "$ex/$n.graph" "$f" >"$work/fp_cpu_$n" 2>&1
      echo $? >"$work/fp_cpu_$n.rc" ) &
    if [ "$have_gpu" -eq 1 ]; then
      timeout 60 bash -c 'mirs --verify=gpu verify "$@"' _ "$ex/$n.graph" "$f" >"$work/fp_gpu_$n" 2>&1
      echo $? >"$work/fp_gpu_$n.rc"
    fi
    # The CPU runs go on in the background, 8 at a time.
    while [ "$(jobs -rp | wc -l)" -ge 8 ]; do sleep 1; done
  done
  wait
  for n in $names; do
    f=$(best_of "$n") || f=$ex/$n.graph
    st_c=$(cat "$work/fp_cpu_$n.rc" 2>/dev/null || echo -)
    cpu=$(verdict "$work/fp_cpu_$n")
    if [ "$have_gpu" -eq 1 ]; then
      st_g=$(cat "$work/fp_gpu_$n.rc" 2>/dev/null || echo -)
      gpu=$(verdict "$work/fp_gpu_$n")
      if [ "$st_c" = 0 ] && [ "$st_g" = 0 ] && [ "$cpu" = "$gpu" ]; then
        pass=$((pass + 1)); printf '%s\tSAME\t' "$n"
      else
        printf '%s\tDIFFERENT\t' "$n"
        echo "-- $n cpu:" >&2; cat "$work/fp_cpu_$n" >&2; echo "-- $n gpu:" >&2; cat "$work/fp_gpu_$n" >&2
      fi
      printf '%s\t%s\t%s\t%s\n' "$st_c" "$st_g" "$cpu" "$gpu"
    else
      [ "$st_c" = 0 ] && pass=$((pass + 1))
      printf '%s\t%s\t%s\t-\t%s\t-\n' "$n" "$([ "$st_c" = 0 ] && echo CPU-OK || echo CPU-FAIL)" "$st_c" "$cpu"
    fi
  done >>"$out/fingerprints.tsv" 2>>"$work/fp.err"
  cat "$work/fp.err" 2>/dev/null
  # A search with each backend: the same results (rmsnorm_linear_small: seconds).
  local s_ok=1
  if [ "$have_gpu" -eq 1 ]; then
    for v in cpu gpu; do
      timeout 120 bash -c 'mirs "$@"' _ --verify=$v --threads=16 -q --json --measure-top=0 --out="$work/fps_$v" \
        "$ex/rmsnorm_linear_small.graph" >"$work/fps_$v.json" 2>&1 || s_ok=0
    done
    if [ "$s_ok" -eq 1 ] && [ "$(hashes "$work/fps_cpu.json")" = "$(hashes "$work/fps_gpu.json")" ]; then
      printf 'search:rmsnorm_linear_small\tSAME\t0\t0\t%s results\t-\n' "$(hashes "$work/fps_cpu.json" | wc -l)" >>"$out/fingerprints.tsv"
    else
      s_ok=0
      printf 'search:rmsnorm_linear_small\tDIFFERENT\t-\t-\t-\t-\n' >>"$out/fingerprints.tsv"
    fi
  fi
  column -t -s '	' "$out/fingerprints.tsv" 2>/dev/null || cat "$out/fingerprints.tsv"
  echo "$pass/$total $([ "$have_gpu" -eq 1 ] && echo "CPU and GPU fingerprints the same" || echo "CPU fingerprints verified (dry run: no GPU)")"
  [ "$total" -gt 0 ] && [ "$pass" -eq "$total" ] && [ "$s_ok" -eq 1 ]
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

step_scaling() {
  local name=${SCALING_EXAMPLE:-lora_small} threads="1 2 4 8 16" t base_h ok=1 t1=
  if [ "$dry" -eq 1 ]; then name=${SCALING_EXAMPLE:-rmsnorm_linear_small}; threads="1 2"; fi
  printf 'example\tthreads\tstates\twall_s\tstates_per_s\tspeedup\tefficiency\tresults\tsame_results\n' >"$out/scaling.tsv"
  for t in $threads; do
    timeout 150 bash -c 'mirs "$@"' _ --threads="$t" -q --json --measure-top=0 --time-limit=140 --out="$work/scale_$t" \
      "$ex/$name.graph" >"$work/scale_$t.json" 2>"$work/scale_$t.err"
    local st=$?
    cat "$work/scale_$t.err"
    if [ "$st" -ne 0 ]; then
      printf '%s\t%s\tFAIL(%s)\n' "$name" "$t" "$st" >>"$out/scaling.tsv"; ok=0; continue
    fi
    local states wall rate same=yes
    states=$(field "$work/scale_$t.json" states_explored)
    wall=$(field "$work/scale_$t.json" wall_seconds)
    hashes "$work/scale_$t.json" >"$work/scale_$t.hashes"
    if [ -z "$t1" ]; then t1=$wall; base_h=$work/scale_$t.hashes; fi
    cmp -s "$base_h" "$work/scale_$t.hashes" || { same=no; ok=0; }
    awk -v n="$name" -v t="$t" -v s="$states" -v w="$wall" -v w1="$t1" \
      -v r="$(wc -l <"$work/scale_$t.hashes")" -v same="$same" 'BEGIN {
        printf "%s\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.0f%%\t%d\t%s\n", n, t, s, w, (w > 0 ? s / w : 0),
               (w > 0 ? w1 / w : 0), (w > 0 ? 100 * w1 / w / t : 0), r, same }' >>"$out/scaling.tsv"
  done
  column -t -s '	' "$out/scaling.tsv" 2>/dev/null || cat "$out/scaling.tsv"
  if [ "$ok" -eq 1 ]; then echo "$name on $(echo $threads | tr ' ' ','): identical results"; else echo "$name: a run failed or results differ"; fi
  [ "$ok" -eq 1 ]
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
step_backend() {
  local py=${DEVICE_CHECK_PYTHON:-python3} lib st args=()
  if ! "$py" -c 'import torch, torch._dynamo' >/dev/null 2>&1; then
    echo "SKIP: $py has no torch with torch.compile (DEVICE_CHECK_PYTHON names another)"
    return 77
  fi
  lib=$(mirs_lib) || { echo "no libmirsearch.so for the Python package (device-bundle.sh puts one in .devbundle/lib)"; return 1; }
  if [ "$dry" -eq 1 ]; then args=(--dry-run); else args=(--threads="$(nproc)"); fi
  # Its search results and built extensions are kept for a second call.
  MIRSEARCH_LIB=$lib MIRSEARCH_CACHE=$state/pycache PYTHONUNBUFFERED=1 \
    LD_LIBRARY_PATH=$(python_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    timeout "$((STEP_BOX - 5))" "$py" -B "$root/bench/backend_cuda.py" "${args[@]}" \
    >"$work/part_backend.json" 2>"$work/backend.err"
  st=$?
  grep -v -E '^W[0-9]{4} |^ *warnings.warn' "$work/backend.err"
  [ "$st" -eq 3 ] && return 77
  [ "$st" -eq 124 ] && echo "cut by the time box"
  return "$st"
}

# ---------------------------------------------------------------- the run

# bench.json: the earlier file's parts, with those of the steps this run
# ran replaced by what they wrote (null where a step wrote nothing).
write_bench_json() {
  local ran="" s
  for s in bench:mirsearch_bench torch:torch_baseline ranking:ranking backend:backend; do
    grep -q "^${s%%:*}	" "$work/steps" && ran="$ran ${s#*:}"
  done
  python3 - "$out/bench.json" "$work" $ran >"$work/bench.json.new" <<'PY' && mv "$work/bench.json.new" "$out/bench.json"
import json, os, sys
path, work, ran = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
doc = load(path) if os.path.exists(path) else None
doc = doc if isinstance(doc, dict) else {}
for k in ("mirsearch_bench", "torch_baseline", "ranking", "backend"):
    doc.setdefault(k, None)
for k in ran:
    doc[k] = load(os.path.join(work, "part_%s.json" % k))
print(json.dumps(doc, indent=1))
PY
}

# The step lines of an earlier summary.txt in OUTDIR for the steps this
# run did not run, as $work/steps lines (status, seconds, retry, note).
earlier_steps() {
  [ -n "$prev_summary" ] || return 0
  local n
  for n in $(step_names); do
    grep -q "^$n	" "$work/steps" && continue
    awk -v n="$n" '$1 == n && ($2 == "PASS" || $2 == "FAIL" || $2 == "SKIP") {
      note = $0; sub(/^[^ ]+ +[^ ]+ +[^ ]+ +/, "", note); sub(/^\(earlier\) /, "", note)
      retry = ($2 == "FAIL" || note ~ /^not run:/) ? 1 : 0
      printf "%s\t%s\t%s\t%s\t(earlier) %s\n", $1, $2, $3, retry, note; exit }' "$prev_summary"
  done
}

# The follow-up call for the steps to run again (not run, failed), with a
# budget of their NEEDs and a timeout 30 s over it.
follow_up() {
  local names need n
  names=$(awk -F'\t' '$4 == 1 {print $1}' "$work/table")
  if [ -z "$names" ]; then echo "follow-up: none (every step ran; none failed)"; return; fi
  # The toolchain step runs in every call, named or not.
  need=$(step_need toolchain)
  for n in $names; do [ "$n" = toolchain ] || need=$((need + $(step_need "$n"))); done
  echo "follow-up: $(echo $names | tr ' ' ',') not run or failed; on the same machine, while it is warm:"
  echo "  command:   DEVICE_CHECK_BUDGET=$need bash scripts/device-check.sh \"\$OUT\" --only=$(echo $names | tr ' ' ',')"
  echo "  carry:     [\".devbundle\"]"
  echo "  timeout_s: $((need + 30))   (less if status's budget_left_s is less: lower DEVICE_CHECK_BUDGET with it)"
}

write_summary() {
  local failed
  # This run's lines and the earlier ones, in step order.
  { cat "$work/steps"; earlier_steps; } >"$work/table.any"
  : >"$work/table"
  for n in $(step_names); do grep "^$n	" "$work/table.any" | head -n 1 >>"$work/table"; done
  failed=$(awk -F'\t' '$2 == "FAIL"' "$work/table" | wc -l)
  {
    echo "mirsearch device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $([ "$dry" -eq 1 ] && echo 'dry run (no GPU)' || echo 'device run')"
    echo "commit: $commit"
    echo "steps run: $(cut -f1 "$work/steps" | tr '\n' ' ')$([ -n "$prev_summary" ] && echo '(the rest from the earlier summary.txt here)')"
    cat "$work/device.txt" 2>/dev/null
    echo "total: $(elapsed) s$([ "$use_budget" -eq 1 ] && echo " of a ${budget} s budget")"
    echo
    printf '%-13s %-6s %7s  %s\n' step status seconds note
    awk -F'\t' '{printf "%-13s %-6s %7s  %s\n", $1, $2, $3, $5}' "$work/table"
    echo "overall: $([ "$failed" -eq 0 ] && echo PASS || echo "FAIL ($failed steps)")"
    follow_up
  } >"$summary"
}

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || cat "$bundle/COMMIT" 2>/dev/null || echo unknown)
note "mirsearch device check: $(date -u +%Y-%m-%dT%H:%M:%SZ), $([ "$dry" -eq 1 ] && echo 'dry run (no GPU)' || echo device run)$([ "$use_budget" -eq 1 ] && echo ", budget ${budget} s")"
note "commit: $commit"
note "steps: $(for n in $(step_names); do selected "$n" && printf '%s ' "$n"; done)"
[ -f "$bundle/MANIFEST" ] && note "bundle: $(head -n 1 "$bundle/MANIFEST")"
: >"$work/device.txt"
devname=H100
for n in $(step_names); do
  selected "$n" || continue
  step "$n"
  if [ "$n" = toolchain ]; then
    grep -q 'H200' "$work/device.txt" 2>/dev/null && devname=H200
  fi
done
selected bench || selected torch || selected ranking || selected backend && write_bench_json
# The profile's file, when the calibrate step was to write it and did not.
selected calibrate && [ ! -f "$out/device.profile" ] &&
  echo "# not measured (the calibrate step did not run or failed)" >"$out/device.profile"
write_summary
cat "$summary"
! grep -q '	FAIL	' "$work/steps"
