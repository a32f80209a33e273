#!/bin/sh
# SPDX-License-Identifier: MIT
# The plan's register estimate against ptxas, without a GPU: for each
# µGraph, `mirsearch codegen`, then one `nvcc -O3 -Xptxas -v` for sm_80
# and sm_90; per custom kernel a markdown row with the plan's estimate
# ("~N registers per thread" in the plan comment above the kernel),
# ptxas's registers on each arch, the estimate minus the larger of them
# (negative: an under-estimate, which the cost model's occupancy turns
# into too many resident blocks; tests/ptx_static.sh allows 16), the
# plan's shared memory per block, whether the kernel has the register
# chain and in how many key chunks, and ptxas's spill bytes.
#
#   bench/reg_estimates.sh [UGRAPH...]   (default: examples/best/*.ugraph at
#                                         published shape, tests/codegen chain graphs)
#
# FORLOOPS="8 16 32 64" adds, for each of the 7 attention bests, the same
# µGraph at each of those forloop values that divide its key length.
# MIRSEARCH picks the program (default src/mirsearch), NVCC the compiler.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MIRSEARCH:-$top/src/mirsearch}
NVCC=${NVCC:-nvcc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_regs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$#" -eq 0 ]; then
  set --
  for n in gated_mlp gqa lora mha mqa ntrans qknorm_attention rmsnorm_linear \
    causal_attention gqa_safe mha_safe; do
    set -- "$@" "$top/examples/best/$n.ugraph"
  done
  for n in chain_attn chain_safe chain_split chain_split_safe chain_qknorm chain_wide \
    chain_chunks chain_nochunks mqa_wide; do
    set -- "$@" "$top/tests/codegen/$n.ugraph"
  done
  for n in gqa gqa_safe mqa causal_attention mha mha_safe qknorm_attention; do
    f=$(sed -n 's/.*forloop=\([0-9]*\).*/\1/p' "$top/examples/best/$n.ugraph" | head -n 1)
    for g in ${FORLOOPS:-}; do
      [ "$g" = "$f" ] && continue
      sed "s/forloop=$f/forloop=$g/" "$top/examples/best/$n.ugraph" >"$tmp/${n}_f$g.ugraph"
      set -- "$@" "$tmp/${n}_f$g.ugraph"
    done
  done
fi
echo "| µGraph | kernel | chain | estimate | ptxas sm_80 | ptxas sm_90 | estimate - ptxas | smem B/block | spills |"
echo "|---|---|---|---|---|---|---|---|---|"
for ug in "$@"; do
  name=$(basename "$ug" .ugraph)
  cu="$tmp/$name.cu"
  if ! "$bin" -q codegen "$ug" -o "$cu" >"$tmp/$name.log" 2>&1; then
    echo "| $name | | | not generated: $(head -n 1 "$tmp/$name.log") | | | | | |"
    continue
  fi
  if ! "$NVCC" -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_90,code=sm_90 -fatbin -Xptxas -v -o "$tmp/$name.fatbin" "$cu" \
    >"$tmp/$name.ptxas" 2>&1; then
    echo "| $name | | | nvcc failed | | | | | |"
    continue
  fi
  # "kernel arch registers spill-bytes" for each custom kernel (mirs_*_kN)
  awk '/Compiling entry function/ {
         k = ""; if (match($0, /_k[0-9]+/)) k = substr($0, RSTART + 1, RLENGTH - 1)
         a = $0; sub(/.*for .sm_/, "", a); sub(/.$/, "", a); sp = 0 }
       /bytes spill stores/ { s = $0; sub(/.*stack frame, /, "", s); sub(/ bytes spill stores.*/, "", s); sp = s }
       /Used [0-9]+ registers/ && k != "" { r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r); print k, a, r, sp }' \
    "$tmp/$name.ptxas" >"$tmp/$name.regs"
  for k in $(awk '{ print $1 }' "$tmp/$name.regs" | sort -u); do
    plan=$(awk -v kn="_$k(" '/\/\*/ { c = ""; inc = 1 } inc { c = c " " $0 } /\*\// { inc = 0 }
      /__global__/ && index($0, kn) > 0 { print c; exit }' "$cu")
    est=$(printf '%s\n' "$plan" | sed -n 's/.*~\([0-9][0-9]*\) registers per thread.*/\1/p')
    smem=$(printf '%s\n' "$plan" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) bytes of shared memory.*/\1/p')
    [ -n "$est" ] || continue # (a predefined kernel: no plan)
    chain=no
    if printf '%s\n' "$plan" | grep -q 'Register chain'; then
      chain=yes
      nc=$(printf '%s\n' "$plan" | sed -n 's/.* in \([0-9][0-9]*\) key chunks.*/\1/p')
      [ -z "$nc" ] || chain="yes, $nc key chunks"
    fi
    r80=$(awk -v k="$k" '$1 == k && $2 == 80 { print $3 }' "$tmp/$name.regs")
    r90=$(awk -v k="$k" '$1 == k && $2 == 90 { print $3 }' "$tmp/$name.regs")
    sp=$(awk -v k="$k" '$1 == k { s += $4 } END { print s + 0 }' "$tmp/$name.regs")
    hi=$r80
    [ "$r90" -gt "$hi" ] && hi=$r90
    echo "| $name | $k | $chain | $est | $r80 | $r90 | $((est - hi)) | $smem | $sp |"
  done
done
