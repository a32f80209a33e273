#!/bin/sh
# SPDX-License-Identifier: MIT
# The slice copy kernels as the device sees them (compiled, not run): the
# PTX of a fused-QKV slice (start and rows whole 16-byte runs) moves 16
# bytes a thread (ld.global.nc.v4 / st.global.v4, `mirs_copy16`) and no
# narrower element, and a slice whose start breaks the runs moves one
# f16 a thread (u16), never a v4.  nvcc -ptx for sm_90; 77 without nvcc.
set -u
name=slice_ptx
. "$(cd "$(dirname "$0")" && pwd)/nvccenv.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_slice_ptx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
printf 'program qkv\ninput Y : f16[8, 192]\nK = slice(Y, dim=1, start=64, len=64)\nU = slice(Y, dim=1, start=3, len=60)\noutput K, U\n' >"$tmp/p.graph"
"$bin" codegen "$tmp/p.graph" -o "$tmp/p.cu" || { echo "slice_ptx: FAIL: codegen"; exit 1; }
"$nvcc" -O3 -std=c++17 -arch=sm_90 -ptx "$tmp/p.cu" -o "$tmp/p.ptx" 2>"$tmp/err" ||
  { cat "$tmp/err"; echo "slice_ptx: FAIL: nvcc"; exit 1; }
# Global loads and stores of kernel $1 (its .entry up to the next one).
mem() { awk -v k="_k$1P" '/^\.entry/ { on = index($0, k) > 0 } on && /(ld|st)\.global/' "$tmp/p.ptx"; }
fail=0
mem 0 | grep -q 'ld\.global\.nc\.v4' && mem 0 | grep -q 'st\.global\.v4' &&
  ! mem 0 | grep -q 'u16' || { echo "slice_ptx: FAIL: K's slice is not 16-byte copies"; fail=1; }
mem 1 | grep -q 'u16' && ! mem 1 | grep -q '\.v4' ||
  { echo "slice_ptx: FAIL: U's slice is not element copies"; fail=1; }
[ $fail -eq 0 ] && echo "slice_ptx: the QKV slice moves 16 bytes a thread, the unaligned one 2"
exit $fail
