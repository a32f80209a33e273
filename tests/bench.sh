#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/bench.sh - `mirsearch bench` without a GPU, and bench/torch_baseline.py's
# parser: the refusals (exit 2 built without CUDA, exit 3 with CUDA but no
# device) with their messages, for `bench --calibrate` too; --source-dir
# writes a harness (and the calibration program) that nvcc compiles with
# every warning an error (cuBLAS baseline included); --device-profile=FILE
# is what costs are computed from, and report.json says its times are
# predicted;
# mismatched program and candidate are a usage error; torch_baseline.py
# --dry-run prints the program it would build.  With a GPU (nvidia-smi
# lists one) the bench itself runs and must print its table.
#
# Run by `make check` with top_srcdir, top_builddir and NVCC (configure's
# nvcc, empty without CUDA) set.  Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
ex=$top_srcdir/examples

if [ ! -x "$prog" ]; then
  echo "bench.sh: $prog not built" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_bench_sh.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

fail() {
  echo "FAIL: $1" >&2
  echo "  stdout: $(head -c 600 "$tmp/out")" >&2
  echo "  stderr: $(head -c 600 "$tmp/err")" >&2
  failures=$((failures + 1))
}
run() {
  "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}
expect() {
  [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1"
}

# The refusal, or with a GPU the run itself.
run bench "$ex/gqa_small.ugraph" --program="$ex/gqa_small.graph"
if nvidia-smi -L >/dev/null 2>&1; then
  expect 0 "bench on a GPU"
  grep -q '^speedup over unfused: ' "$tmp/out" || fail "bench printed no speedup"
elif [ -n "$NVCC" ]; then
  expect 3 "bench without a GPU"
  grep -q 'no CUDA device: ' "$tmp/err" || fail "bench without a GPU: no 'no CUDA device' message"
else
  expect 2 "bench built without CUDA"
  grep -q 'built without CUDA' "$tmp/err" || fail "bench without CUDA: no 'built without CUDA' message"
fi
[ -s "$tmp/out" ] && [ "$status" -ne 0 ] && fail "a refused bench wrote to stdout"

# --calibrate refuses the same way, and writes a program nvcc compiles.
run bench --calibrate="$tmp/cal.profile"
if nvidia-smi -L >/dev/null 2>&1; then
  expect 0 "bench --calibrate on a GPU"
  "$prog" --device-profile="$tmp/cal.profile" show "$ex/gqa_small.ugraph" >/dev/null 2>&1 ||
    fail "the calibrated profile is not read"
elif [ -n "$NVCC" ]; then
  expect 3 "bench --calibrate without a GPU"
else
  expect 2 "bench --calibrate built without CUDA"
fi
[ -e "$tmp/cal.profile" ] && [ "$status" -ne 0 ] && fail "a refused calibration wrote a profile"
mkdir -p "$tmp/src_cal"
run bench --calibrate="$tmp/cal.profile" --source-dir="$tmp/src_cal"
expect 0 "bench --calibrate --source-dir"
[ -s "$tmp/src_cal/calibrate.cu" ] || fail "no calibrate.cu"

# --device-profile=FILE: the costs come from that file (a slow made-up GPU).
cat >"$tmp/slow.profile" <<'PROFILE'
device H100
  hbm_gbps = 1
  tc_f16_tflops = 1
  f32_tflops = 1
  launch_us = 1000
  smem_per_block = 232448
  sms = 132
  l2_bytes = 52428800
PROFILE
run --device-profile="$tmp/slow.profile" show "$ex/gqa_small.ugraph"
expect 0 "show with --device-profile"
us=$(sed -n 's/.*predicted \([0-9.]*\) us on H100.*/\1/p' "$tmp/out" | head -n 1)
awk -v u="${us:-0}" 'BEGIN { exit !(u > 1000) }' || fail "--device-profile not used (predicted ${us:-none} us)"
run -q --json --device-profile="$tmp/slow.profile" --out="$tmp/search" "$ex/rmsnorm_linear_small.graph"
expect 0 "search with --device-profile"
grep -q '"times": "predicted"' "$tmp/out" || fail "report.json does not say the times are predicted"
grep -q "\"device_profile\": \"$tmp/slow.profile\"" "$tmp/out" || fail "report.json does not name the profile"
printf 'device H100\n  bogus = 1\n' >"$tmp/bad.profile"
run --device-profile="$tmp/bad.profile" show "$ex/gqa_small.ugraph"
expect 2 "a malformed --device-profile"
grep -q 'bad.profile:2:3: error: unknown key' "$tmp/err" || fail "a malformed profile: no FILE:LINE:COL"

# --rank=DIR: refused the same way on a search's output; no candidates: exit 2.
run -q --top=3 --out="$tmp/ranked" "$ex/rmsnorm_linear_small.graph"
expect 0 "search for --rank"
run bench --rank="$tmp/ranked" --top=2
if nvidia-smi -L >/dev/null 2>&1; then
  expect 0 "bench --rank on a GPU"
  grep -q '"rank_correlation"' "$tmp/ranked/measured.json" || fail "no measured.json"
elif [ -n "$NVCC" ]; then
  expect 3 "bench --rank without a GPU"
  [ -e "$tmp/ranked/measured.json" ] && fail "a refused ranking wrote measured.json"
else
  expect 2 "bench --rank built without CUDA"
fi
run bench --rank="$tmp/nothing"
expect 2 "bench --rank of a directory without candidates"
grep -q 'no candidate' "$tmp/err" || fail "bench --rank without candidates: no message"

# A program that is not the candidate's: a usage error before any CUDA work.
run bench "$ex/gqa_small.ugraph" --program="$ex/mha_small.graph"
expect 2 "bench with another program"
grep -q "in the candidate" "$tmp/err" || fail "bench with another program: no shape message"

# The harness sources, written without nvcc or a GPU.
for name in gqa_small rmsnorm_linear; do
  mkdir -p "$tmp/src_$name"
  run bench "$ex/$name.ugraph" --program="$ex/$name.graph" --source-dir="$tmp/src_$name"
  expect 0 "bench --source-dir ($name)"
  for f in cand.cu base.cu bench.cu; do
    [ -s "$tmp/src_$name/$f" ] || fail "bench --source-dir ($name) wrote no $f"
  done
  grep -q cublasGemmStridedBatchedEx "$tmp/src_$name/bench.cu" ||
    fail "the $name baseline calls no cuBLAS matmul"
done
# Without a program: the candidate alone, no baseline.
mkdir -p "$tmp/src_alone"
run bench "$ex/mha_small.ugraph" --source-dir="$tmp/src_alone"
expect 0 "bench --source-dir without --program"
[ -e "$tmp/src_alone/base.cu" ] && fail "bench without --program wrote a baseline"

# nvcc compiles every harness, warnings as errors (sm_90: the H100/H200).
if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
  for d in "$tmp"/src_*; do
    for f in "$d"/bench.cu "$d"/calibrate.cu; do
      [ -f "$f" ] || continue
      "$NVCC" -std=c++17 -O2 -gencode=arch=compute_90,code=sm_90 -Werror all-warnings \
        -I"$d" "$f" -o "$d/prog" -lcublas >"$tmp/out" 2>"$tmp/err" ||
        fail "nvcc does not compile $(basename "$d")/$(basename "$f")"
    done
  done
else
  echo "bench.sh: no nvcc: the harness is not compiled" >&2
fi

# bench/torch_baseline.py: the .graph parser, without torch or a GPU.
if command -v python3 >/dev/null 2>&1; then
  for f in "$ex"/*.graph; do
    python3 -B "$top_srcdir/bench/torch_baseline.py" --dry-run "$f" >"$tmp/out" 2>"$tmp/err" ||
      fail "torch_baseline.py --dry-run $(basename "$f")"
  done
  python3 -B "$top_srcdir/bench/torch_baseline.py" --dry-run "$ex/gqa.graph" >"$tmp/out" 2>"$tmp/err"
  grep -q '^A = torch.matmul(Q, K)$' "$tmp/out" || fail "torch_baseline.py: gqa's first op"
  grep -q '^S = torch.sum(E, dim=2, keepdim=True)$' "$tmp/out" || fail "torch_baseline.py: gqa's sum"
  grep -q '^input Q float16 \[2, 256, 64\]$' "$tmp/out" || fail "torch_baseline.py: gqa's input Q"
  printf 'input X : f32[8, 64]\nN = rms_norm(X, eps=1e-6)\nR = reshape(N, shape=[8, 4, -1])\nP = permute(R, dims=[1, 2, 0])\noutput P\n' >"$tmp/layout.graph"
  python3 -B "$top_srcdir/bench/torch_baseline.py" --dry-run "$tmp/layout.graph" \
    >"$tmp/out" 2>"$tmp/err" || fail "torch_baseline.py: layout ops"
  grep -q '^R = torch.reshape(N, (8, 4, -1))$' "$tmp/out" || fail "torch_baseline.py: reshape"
  grep -q '^P = R.permute(1, 2, 0)$' "$tmp/out" || fail "torch_baseline.py: permute"
  grep -q '^N = .* + 1e-06)$' "$tmp/out" || fail "torch_baseline.py: rms_norm's eps"
  python3 -B "$top_srcdir/bench/torch_baseline.py" --dry-run "$ex/gpt2_block_small.graph" \
    >"$tmp/out" 2>"$tmp/err" || fail "torch_baseline.py: the GPT-2 block"
  grep -q '^K = QKV.narrow(1, 64, 64)$' "$tmp/out" || fail "torch_baseline.py: slice"
  printf 'input X : f16[2, 3]\nY = nosuchop(X)\noutput Y\n' >"$tmp/bad.graph"
  python3 -B "$top_srcdir/bench/torch_baseline.py" --dry-run "$tmp/bad.graph" >"$tmp/out" 2>"$tmp/err"
  status=$?
  expect 2 "torch_baseline.py on a bad program"
  grep -q 'bad.graph:2:' "$tmp/err" || fail "torch_baseline.py: no FILE:LINE in its error"
fi

[ "$failures" -eq 0 ] || exit 1
exit 0
