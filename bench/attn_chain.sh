#!/bin/sh
# SPDX-License-Identifier: MIT
# Figures of the attention kernels' matmul -> elementwise -> matmul chain,
# without a GPU: per example best (examples/best/NAME.ugraph), the plan's
# shared memory and register estimate, ptxas -v registers (sm_90 and
# sm_80), the cost model's predicted time (`mirsearch show`, H100), and
# the st.shared / ld.shared instruction sites of the custom kernel's PTX:
# in the whole kernel and between its first and last mma.sync (the loop
# body from the product S = Q·K to E·V: a shared-memory round trip of the
# intermediate shows as st.shared there).  One markdown row per example.
#
#   bench/attn_chain.sh [NAME...]   (default: the attention examples)
#
# MIRSEARCH picks the program (default src/mirsearch), NVCC the compiler.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MIRSEARCH:-$top/src/mirsearch}
NVCC=${NVCC:-nvcc}
names=${*:-gqa gqa_safe mha mha_safe mqa causal_attention qknorm_attention}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_attn.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "| example | smem (plan) | regs plan | ptxas sm_90 / sm_80 | predicted µs (H100) | st.shared / ld.shared (kernel) | st.shared / ld.shared between the MMAs |"
echo "|---|---|---|---|---|---|---|"
for n in $names; do
  ug="$top/examples/best/$n.ugraph"
  "$bin" -q codegen "$ug" -o "$tmp/$n.cu"
  smem=$(sed -n 's/.*Plan: \([0-9]*\) bytes of shared memory.*/\1/p' "$tmp/$n.cu" | head -n 1)
  regs=$(sed -n 's/.*~\([0-9]*\) registers per thread.*/\1/p' "$tmp/$n.cu" | head -n 1)
  us=$("$bin" show "$ug" 2>&1 | sed -n 's/.*predicted \([0-9.]*\) us.*/\1/p' | head -n 1)
  r=""
  for arch in 90 80; do
    mkdir -p "$tmp/$n.$arch"
    "$NVCC" -O3 -std=c++17 -arch=sm_$arch -cubin -Xptxas -v -keep -keep-dir "$tmp/$n.$arch" \
      -o "$tmp/$n.$arch/k.cubin" "$tmp/$n.cu" >"$tmp/$n.$arch/log" 2>&1
    rr=$(awk '/Compiling entry function/ { on = /_k[0-9]/ } on && /Used [0-9]+ registers/ {
      sub(/.*Used /, ""); sub(/ registers.*/, ""); print; exit }' "$tmp/$n.$arch/log")
    r="$r${r:+ / }$rr"
  done
  ptx=$(ls "$tmp/$n.80"/*.ptx | head -n 1)
  # The custom kernel's body (its .entry ends the file or the next .entry).
  awk '/\.entry/ { on = /_k[0-9]/ } on' "$ptx" >"$tmp/$n.body"
  st=$(grep -c 'st\.shared' "$tmp/$n.body" || true)
  ld=$(grep -c 'ld\.shared' "$tmp/$n.body" || true)
  between=$(awk '/mma\.sync/ { last = NR; if (!first) first = NR } { line[NR] = $0 }
    END { s = 0; l = 0; for (i = first; i <= last; i++) { if (line[i] ~ /st\.shared/) s++;
      if (line[i] ~ /ld\.shared/) l++ } print s " / " l }' "$tmp/$n.body")
  echo "| $n | $smem | ~$regs | $r | $us | $st / $ld | $between |"
done
