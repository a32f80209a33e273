#!/bin/sh
# SPDX-License-Identifier: MIT
# Kernel-level transposes as the device sees them (compiled, not run):
#  - a transpose read as a view by a custom kernel: no transpose kernel
#    (one function), the view's tile by element loads of its storage
#    (ld.global u16; SASS LDG.E.U16) beside the dense Q tile's 16-byte
#    cp.async (SASS LDGSTS.128);
#  - a transpose that cannot be a view (an output of an input) as the
#    tiled copy: reads and writes of one f16 a thread through shared
#    memory (ld/st.shared.u16, a barrier; SASS LDS/STS.U16, BAR.SYNC).
# nvcc -ptx for sm_90 (SASS through cuobjdump where it is found, else
# skipped); exits 77 without nvcc.
set -u
name=transpose_ptx
. "$(cd "$(dirname "$0")" && pwd)/nvccenv.sh"
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_transpose_ptx.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
printf '%s\n' 'ugraph tk' 'input Q : f16[2, 64, 16]' 'input K : f16[2, 64, 16]' \
  'Kt = transpose(K)' \
  'S = custom(grid=[2, 1, 1], block=[128, 1, 1], forloop=1) {' \
  '  q = input(Q, imap=[0, -1, -1], fmap=-1)' '  k = input(Kt, imap=[0, -1, -1], fmap=-1)' \
  '  s = matmul(q, k)' '  a = accum(s)' '  output(a, omap=[0, -1, -1])' '}' 'output S' >"$tmp/v.ugraph"
printf 'program tt\ninput X : f16[64, 64]\nY = transpose(X)\noutput Y\n' >"$tmp/c.graph"
fail=0
for x in v c; do
  in=$tmp/v.ugraph
  [ $x = c ] && in=$tmp/c.graph
  "$bin" codegen "$in" -o "$tmp/$x.cu" || { echo "transpose_ptx: FAIL: codegen $x"; exit 1; }
  for out in ptx cubin; do
    "$nvcc" -O3 -std=c++17 -arch=sm_90 -$out -Werror all-warnings "$tmp/$x.cu" -o "$tmp/$x.$out" \
      2>"$tmp/err" || { cat "$tmp/err"; echo "transpose_ptx: FAIL: nvcc $x"; exit 1; }
  done
done
# The view: one function, element loads of Kt, a 16-byte cp.async of Q.
[ "$(grep -c '^\.entry' "$tmp/v.ptx")" -eq 1 ] ||
  { echo "transpose_ptx: FAIL: the view runs a kernel of its own"; fail=1; }
grep -q 'ld\.global\.nc\.u16' "$tmp/v.ptx" && grep -q 'cp\.async\.cg\.shared\.global' "$tmp/v.ptx" ||
  { echo "transpose_ptx: FAIL: no element loads of the view or no cp.async of Q"; fail=1; }
# The copy: element moves through shared memory with a barrier between.
for i in 'ld\.global\.nc\.u16' 'st\.shared\.u16' 'bar\.sync' 'ld\.shared\.u16' 'st\.global\.u16'; do
  grep -q "$i" "$tmp/c.ptx" || { echo "transpose_ptx: FAIL: the tiled copy has no $i"; fail=1; }
done
if [ -n "$cuobjdump" ] && "$cuobjdump" -sass "$tmp/v.cubin" >"$tmp/v.sass" 2>/dev/null &&
  "$cuobjdump" -sass "$tmp/c.cubin" >"$tmp/c.sass" 2>/dev/null; then
  for i in 'LDG\.E\.U16' 'LDGSTS\.E\.BYPASS\.128'; do
    grep -q "$i" "$tmp/v.sass" || { echo "transpose_ptx: FAIL: SASS of the view has no $i"; fail=1; }
  done
  for i in 'LDG\.E\.U16' 'STS\.U16' 'BAR\.SYNC' 'LDS\.U16' 'STG\.E\.U16'; do
    grep -q "$i" "$tmp/c.sass" || { echo "transpose_ptx: FAIL: SASS of the copy has no $i"; fail=1; }
  done
else
  echo "transpose_ptx: no cuobjdump: the SASS checks are skipped"
fi
[ $fail -eq 0 ] && echo "transpose_ptx: the view is element loads in the reading kernel, the copy goes through shared memory"
exit $fail
