#!/bin/sh
# SPDX-License-Identifier: MIT
# Static evidence of speed, without a GPU: for the best µGraph of each
# published example at its published shape (examples/best/NAME.ugraph,
# written by scripts/search-bests.sh), generate the CUDA code
# (`mirsearch codegen`), compile it with `nvcc -O3 -cubin -Xptxas -v` for
# sm_90 and sm_80 (keeping the PTX), and FAIL unless, for each arch:
#  - every custom kernel loads with 16-byte cp.async
#    (`cp.async.{cg,ca}.shared.global [..], [..], 16`) or TMA / bulk copies
#    (`cp.async.bulk`);
#  - in a 16-bit kernel (f16/bf16 inputs), every block matmul whose
#    operands are both tiles loaded from 16-bit tensors (counted from the
#    µGraph) runs on 16-bit tensor cores: at least as many
#    `mma.sync.aligned.m16n8k16` (or `wgmma.mma_async`) and, for mma.sync,
#    as many `ldmatrix` as such matmuls, and no tf32 MMA when every matmul
#    is of that kind;
#  - in a 16-bit kernel, every block matmul runs on tensor cores: as many
#    m16n8k16, tf32 m16n8k8 or wgmma instructions as block matmuls.  A
#    matmul with an operand computed in f32 (exp(Q·K) in attention, an
#    rms-normalised tile) may take tf32: exp of the attention logits at
#    the published shapes reaches exp(13) > 65504, which overflows f16
#    (the unfused f16 program overflows there too), so rounding such an
#    operand to f16 would be wrong, while tf32 keeps f32's range;
#  - ptxas reports 0 bytes of spill stores and loads for every function;
#  - the shared memory of each custom kernel's plan, the comment above the
#    kernel ("N bytes of shared memory"), equals what the kernel requests:
#    the launch's dynamic size plus the static __shared__ bytes ptxas
#    reports.  A plan that keeps its tiles in global scratch fails;
#  - ptxas's registers for each custom kernel are at most the plan's
#    estimate ("~N registers per thread") + REG_SLACK (default 16): the
#    cost model's occupancy reads that estimate, so a low one ranks a
#    kernel as if more of its blocks fitted an SM (mqa's was 81 against
#    128 before the register chain);
#  - a kernel whose plan keeps a matmul -> elementwise -> matmul chain in
#    registers ("Register chain" in the plan comment) has no st.shared
#    between its first and last mma.sync (the intermediate E of S = Q·K,
#    E = exp(S), E·V never goes through shared memory) but the 2 per lane
#    of each row max or sum its plan says it exchanges between the warps
#    of a split strip ("N row values exchanged"), and the attention bests
#    (CHAIN, default: all 7 attention bests) have
#    such a plan.
#  - a split-K pair run as one launch (docs/CODEGEN.md): its second kernel
#    has no entry of its own (its body is in the first's, checked there;
#    it must have no block matmul); the fused entry has at least 2
#    fences (membar.gl: before the arrival and before the combine), the
#    arrival counter's atomic add, and no ld.global.nc after the add (the
#    partials are read through L2); with cuobjdump, MEMBAR and ATOMG in
#    its SASS and no LDG...CONSTANT after the ATOMG.
# Where cuobjdump (and the nvdisasm it runs) is on the PATH or beside
# nvcc (scripts/install-deps.sh installs both), the SASS of each cubin
# (`cuobjdump -sass`) must also show, for each arch:
#  - no local-memory access (LDL/STL) in any function: a spill or an
#    array ptxas could not keep in registers;
#  - in every custom kernel, 128-bit asynchronous copies
#    (LDGSTS.*.128, what cp.async 16 becomes) or bulk/TMA copies
#    (UBLKCP/UTMALDG);
#  - in a 16-bit kernel, for its block matmuls of loaded 16-bit tiles: at
#    least as many HMMA.16816 and LDSM as such matmuls, and as many
#    HMMA.16816 fed by an LDSM (its A or B register written by an LDSM
#    with no other write between, read along the code twice so a fragment
#    loaded at the end of a loop body feeds the HMMA at its top).
# Programmatic dependent launch (--codegen-pdl, the default; docs/CODEGEN.md):
#  - an sm_80 build has no griddepcontrol in its PTX and no ACQBULK or
#    PREEXIT (what griddepcontrol.wait / .launch_dependents become) in its
#    SASS, in any function;
#  - on sm_90 (and sm_90a), a custom kernel launched as a programmatic
#    dependent (MIRS_PDL in the entry) has griddepcontrol.wait in its PTX
#    and, with cuobjdump, an ACQBULK in its SASS before any global-memory
#    instruction (LDG, LDGSTS, STG, RED, ATOM, bulk/TMA copies); one that
#    is not has none; a kernel that opens with mirs_pdl_trigger has
#    griddepcontrol.launch_dependents and PREEXIT, the others none.
# Without cuobjdump the SASS checks are skipped with a message and the
# PTX checks still run.  A skinny matmul's GEMV mapping (M <= 8: the MMA
# operands swapped, plan.c plan_swap) is held to the same rules: it
# still runs on m16n8k16 fed by ldmatrix (the weight through
# ldmatrix.x4.trans, the skinny rows through ldmatrix.x2).
# sm_90a section (the Hopper path, docs/CODEGEN.md): each best is also
# generated with --codegen-wgmma=1; where its plan picks wgmma (the code
# has wgmma kernels) that code is compiled for sm_90a and checked as
# above, and also FAILS unless each kernel whose plan says wgmma has
# wgmma.mma_async, wgmma.fence, wgmma.commit_group, wgmma.wait_group and
# fence.proxy.async in its PTX, ptxas does not report serialized wgmma,
# and (with cuobjdump) the SASS has HGMMA; there HGMMA counts with
# HMMA.16816 for the loaded 16-bit matmuls and the LDSM checks are waived
# (wgmma reads shared memory itself).  A matmul of the register chain or
# a swapped one never takes wgmma (hopper.c), so since the register chain
# no published best does: the default names add the test graphs
# tests/codegen/wgmma_f16 and wgmma_bf16 (a NAME with a slash is a
# µGraph path under the source tree, without .ugraph), and with them at
# least one must pick wgmma.
# Exit 0 when all hold, 1 otherwise (each failure named), 77 without nvcc.
#
#   tests/ptx_static.sh [NAME...]      (default: the 8 published examples, causal_attention, gqa_safe,
#                                       mha_safe, tests/codegen/wgmma_f16, tests/codegen/wgmma_bf16,
#                                       tests/codegen/chain_wide: gqa's register chain on 128-key
#                                       tiles, its register estimate held to ptxas's;
#                                       tests/codegen/mqa_wide: mqa's 256-key tiles, its register
#                                       chain in 4 key chunks of 8 tiles;
#                                       tests/codegen/splitk_gqa: gqa's split-K pair, split-K
#                                       loads and f32 partials; tests/codegen/splitk_gqa_safe:
#                                       gqa_safe's, online softmax with stored running maxes;
#                                       tests/codegen/gqa_hd128: the head-dim-128 best, one block an
#                                       SM promised to ptxas, no spill)
#
# NVCC picks the compiler (default: configure's, else nvcc on PATH),
# MIRSEARCH the program (default: $top_builddir/src/mirsearch), KEEP=1
# keeps the temporary directory.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin=${MIRSEARCH:-$top_builddir/src/mirsearch}
if [ -z "${NVCC:-}" ]; then
  NVCC=$(sed -n 's/^#define MIRS_NVCC "\(.*\)"$/\1/p' "$top_builddir/config.h" 2>/dev/null)
  [ -n "$NVCC" ] || NVCC=nvcc
fi
if ! "$NVCC" --version >/dev/null 2>&1; then
  echo "ptx_static: no nvcc ($NVCC): skipped"
  exit 77
fi
[ -x "$bin" ] || { echo "ptx_static: FAIL: $bin is not built"; exit 1; }
chain_names=${CHAIN-gqa gqa_safe mqa causal_attention mha mha_safe qknorm_attention}
# cuobjdump: $CUOBJDUMP, else the PATH, else beside nvcc.  It disassembles
# through nvdisasm, so both must be there.
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump 2>/dev/null)}
nvbin=$(dirname "$(command -v "$NVCC" 2>/dev/null || echo "$NVCC")")
[ -n "$CUOBJDUMP" ] || { [ -x "$nvbin/cuobjdump" ] && CUOBJDUMP=$nvbin/cuobjdump; }
sass=0
if [ -n "$CUOBJDUMP" ] && { command -v nvdisasm >/dev/null 2>&1 ||
  [ -x "$(dirname "$CUOBJDUMP")/nvdisasm" ]; }; then
  sass=1
  PATH=$PATH:$(dirname "$CUOBJDUMP")
else
  echo "ptx_static: no cuobjdump/nvdisasm: SASS checks skipped (scripts/install-deps.sh installs them), PTX checks run"
fi
wgpicked=0
given=$# # (the loop below resets the positional parameters)
names=${*:-gated_mlp gqa lora mha mqa ntrans qknorm_attention rmsnorm_linear causal_attention gqa_safe mha_safe gqa_hd128 tests/codegen/wgmma_f16 tests/codegen/wgmma_bf16 tests/codegen/chain_wide tests/codegen/mqa_wide tests/codegen/splitk_gqa tests/codegen/splitk_gqa_safe tests/codegen/gqa_hd128}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_ptx_static.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  echo "ptx_static: files kept in $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi

failures=0
fail() {
  echo "ptx_static: FAIL: $*"
  failures=$((failures + 1))
}

# The kernels of a µGraph file, one line each: "INDEX custom MATMULS
# LOADED16" (LOADED16: block matmuls whose two operands are input tiles of
# 16-bit tensors of one dtype) or "INDEX predefined 0 0", in kernel-op
# order (top-level assignments; the ops inside a custom kernel's braces
# are its block ops).
kernels() {
  awk '
    /^[ \t]*#/ { next }
    depth == 0 && /^[ \t]*input[ \t]/ {
      line = $0; sub(/^[ \t]*input[ \t]+/, "", line)
      nm = line; sub(/[ \t]*:.*/, "", nm)
      dt = line; sub(/^[^:]*:[ \t]*/, "", dt); sub(/\[.*/, "", dt)
      dtype[nm] = dt
    }
    depth == 0 && /=/ && !/^[ \t]*(input|output|ugraph|program)[ \t]/ {
      if ($0 ~ /custom\(/) { k = n++; custom[k] = 1; mm[k] = 0; ld[k] = 0 }
      else { kind[n++] = 1 }
    }
    depth > 0 && /=[ \t]*input\(/ {
      lhs = $0; sub(/^[ \t]*/, "", lhs); sub(/[ \t]*=.*/, "", lhs)
      src = $0; sub(/.*input\([ \t]*/, "", src); sub(/[ \t]*,.*/, "", src); sub(/\).*/, "", src)
      t = dtype[src]
      if (t == "f16" || t == "bf16") tile[k, lhs] = t
    }
    depth > 0 && /=[ \t]*matmul\(/ {
      mm[k]++
      args = $0; sub(/.*matmul\([ \t]*/, "", args); sub(/\).*/, "", args)
      split(args, a, /[ \t]*,[ \t]*/)
      if (((k, a[1]) in tile) && ((k, a[2]) in tile) && tile[k, a[1]] == tile[k, a[2]]) ld[k]++
    }
    /\{/ { depth++ }
    /\}/ { depth-- }
    END {
      for (i = 0; i < n; i++)
        print i, (i in custom) ? "custom" : "predefined", (i in custom) ? mm[i] : 0, (i in custom) ? ld[i] : 0
    }
  ' "$1"
}

# Whether the µGraph's inputs are 16-bit (then its block matmuls are).
sixteen_bit() {
  grep -Eq '^[ \t]*input[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*:[ \t]*(f16|bf16)\[' "$1"
}

# The PTX body of the kernel named $2 (a C++ mangled or plain entry) in
# PTX file $1: from its .entry line to the next .entry or .func.
ptx_body() {
  awk -v name="$2" '
    BEGIN { mangled = length(name) name }
    /^[ \t]*(\.visible[ \t]+)?\.(entry|func)[ \t]/ {
      on = (index($0, mangled) > 0 || index($0, " " name "(") > 0) && $0 ~ /\.entry/
    }
    on { print }
  ' "$1"
}

# Registers ptxas reports for kernel $2 in log $1.
ptxas_regs() {
  awk -v name="$2" '
    BEGIN { mangled = length(name) name }
    /Compiling entry function/ { on = index($0, mangled) > 0 || index($0, "'"'"'" name "'"'"'") > 0 }
    on && /Used [0-9]+ registers/ { sub(/.*Used /, ""); sub(/ registers.*/, ""); print; exit }
  ' "$1"
}

# Static shared memory ptxas reports for kernel $2 in log $1 (0 if none).
# A C++ name is mangled with its length in front ("12mirs_fake_k0"), so
# kernel 1 never matches kernel 10.
ptxas_smem() {
  awk -v name="$2" '
    BEGIN { mangled = length(name) name }
    /Compiling entry function/ { on = index($0, mangled) > 0 || index($0, "'"'"'" name "'"'"'") > 0 }
    on && /Used [0-9]+ registers/ {
      if (match($0, /[0-9]+ bytes smem/)) s = substr($0, RSTART, RLENGTH - 11)
      else s = 0
      print s; exit
    }
  ' "$1"
}

# SASS figures of the function named $2 (plain or mangled) in the
# `cuobjdump -sass` listing $1: "INSTRUCTIONS LDGSTS128 LDG128 BULK
# HMMA16816 HMMA_TF32 LDSM FED" (FED: HMMA.16816 whose A or B register
# an LDSM wrote).
sass_stats() {
  awk -v name="$2" '
    function reg(s) { sub(/\.reuse$/, "", s); return (s ~ /^R[0-9]+$/) ? substr(s, 2) + 0 : -1 }
    function opcode(line) { sub(/^@!?U?P[0-9T]+[ \t]+/, "", line); sub(/[ \t].*/, "", line); return line }
    # One walk over the code: marks the registers an LDSM wrote, unmarks
    # those another instruction writes; counts fed HMMAs when count is set.
    function walk(count,   i, line, op, o, d, w, a, b) {
      for (i = 0; i < ni; i++) {
        line = ins[i]; sub(/^@!?U?P[0-9T]+[ \t]+/, "", line)
        op = opcode(line)
        sub(/^[^ \t]*[ \t]*/, "", line)
        split(line, o, /[ \t]*,[ \t]*/)
        d = reg(o[1])
        if (op ~ /^LDSM/) {
          w = (op ~ /\.4$/) ? 4 : (op ~ /\.2$/) ? 2 : 1
          for (a = 0; a < w; a++) ldsmreg[d + a] = 1
          continue
        }
        if (count && op ~ /^HMMA\.16816/) {
          a = reg(o[2]); b = reg(o[3])
          if ((a >= 0 && (a in ldsmreg)) || (b >= 0 && (b in ldsmreg))) fed++
        }
        if (d >= 0 && op !~ /^(ST|LDGSTS|RED|BAR|BRA)/) delete ldsmreg[d]
      }
    }
    BEGIN { mangled = length(name) name }
    /Function :/ { on = index($0, mangled) > 0 || $NF == name }
    on && /^[ \t]+\/\*[0-9a-f]+\*\// {
      line = $0; sub(/^[ \t]+\/\*[0-9a-f]+\*\/[ \t]+/, "", line); sub(/[ \t]*;.*/, "", line)
      ins[ni++] = line
    }
    END {
      for (i = 0; i < ni; i++) {
        op = opcode(ins[i])
        if (op ~ /^LDGSTS.*\.128$/) ldgsts++
        if (op ~ /^LDG\..*\.128$/) ldg++
        if (op ~ /^(UBLKCP|UTMALDG)/) bulk++
        if (op ~ /^HMMA\.16816/) hmma++
        if (op ~ /^HMMA\.1688\.F32\.TF32/) tf32++
        if (op ~ /^LDSM/) ldsm++
      }
      walk(0); walk(1)
      printf "%d %d %d %d %d %d %d %d\n", ni, ldgsts, ldg, bulk, hmma, tf32, ldsm, fed
    }
  ' "$1"
}

# PDL figures of the function named $2 in the SASS listing $1: "ACQBULK
# PREEXIT FIRST_ACQBULK FIRST_GLOBAL" (instruction indices, -1 if none).
sass_pdl() {
  awk -v name="$2" '
    BEGIN { mangled = length(name) name; fa = -1; fg = -1 }
    /Function :/ { on = index($0, mangled) > 0 || $NF == name }
    on && /^[ \t]+\/\*[0-9a-f]+\*\// {
      line = $0; sub(/^[ \t]+\/\*[0-9a-f]+\*\/[ \t]+/, "", line); sub(/^@!?U?P[0-9T]+[ \t]+/, "", line)
      sub(/[ \t;].*/, "", line)
      if (line == "ACQBULK") { acq++; if (fa < 0) fa = n }
      if (line == "PREEXIT") pre++
      if (fg < 0 && line ~ /^(LDG|LDGSTS|STG|RED|ATOM|ATOMG|UBLKCP|UTMALDG)([.]|$)/) fg = n
      n++
    }
    END { printf "%d %d %d %d\n", acq, pre, fa, fg }
  ' "$1"
}

for name in $names; do
  case $name in
  */*) ug="$top_srcdir/$name.ugraph" name=$(basename "$name") ;; # a test graph
  *) ug="$top_srcdir/examples/best/$name.ugraph" ;;
  esac
  [ -f "$ug" ] || { fail "$name: no $ug (run scripts/search-bests.sh)"; continue; }
  entry=mirs_$(sed -n 's/^ugraph[ \t]*\([A-Za-z0-9_]*\).*/\1/p' "$ug" | head -n 1)
  cu="$tmp/$name.cu"
  if ! "$bin" -q codegen "$ug" -o "$cu" >"$tmp/$name.codegen.log" 2>&1; then
    fail "$name: mirsearch codegen: $(head -5 "$tmp/$name.codegen.log")"
    continue
  fi
  wide=0
  sixteen_bit "$ug" && wide=1
  # The Hopper path: checked for sm_90a where the plan picks wgmma.
  archs="90 80"
  wgcu="$tmp/$name.wg.cu"
  if "$bin" -q codegen "$ug" --codegen-wgmma=1 -o "$wgcu" >"$tmp/$name.wg.log" 2>&1 &&
    grep -q 'mirs_wgmma_commit();' "$wgcu"; then
    archs="90 80 90a"
    wgpicked=$((wgpicked + 1))
  fi
  for arch in $archs; do
    src=$cu
    [ "$arch" = 90a ] && src=$wgcu
    keep="$tmp/$name.sm$arch"
    mkdir -p "$keep"
    log="$keep/ptxas.log"
    if ! "$NVCC" -O3 -std=c++17 -arch=sm_$arch -cubin -Xptxas -v -keep -keep-dir "$keep" \
      -o "$keep/$name.cubin" "$src" >"$log" 2>&1; then
      fail "$name sm_$arch: nvcc failed: $(grep -m 3 -i error "$log")"
      continue
    fi
    ptx="$keep/$(basename "$src" .cu).ptx"
    [ -s "$ptx" ] || { fail "$name sm_$arch: nvcc kept no PTX ($ptx)"; continue; }
    # Spills, every function.
    spills=$(awk '
      /Function properties for/ { f = $NF }
      /bytes spill stores/ {
        split($0, w, ",")
        st = w[2]; ld = w[3]; gsub(/[^0-9]/, "", st); gsub(/[^0-9]/, "", ld)
        if (st + 0 > 0 || ld + 0 > 0) print f ": " st " bytes spill stores, " ld " bytes spill loads"
      }' "$log")
    [ -z "$spills" ] || fail "$name sm_$arch: ptxas spills: $spills"
    sasf="$keep/$name.sass"
    sassok=0
    if [ "$sass" = 1 ]; then
      if "$CUOBJDUMP" -sass "$keep/$name.cubin" >"$sasf" 2>"$keep/cuobjdump.log" && [ -s "$sasf" ]; then
        sassok=1
        # Local memory, every function (custom kernels and predefined ones).
        lmem=$(awk '/Function :/ { f = $NF } /[ \t](LDL|STL)(\.[A-Z0-9.]*)?[ \t]/ { n[f]++ }
          END { for (f in n) print f ": " n[f] " LDL/STL" }' "$sasf")
        [ -z "$lmem" ] || fail "$name sm_$arch: local memory in the SASS: $lmem"
        if [ "$arch" = 80 ]; then
          gdc=$(grep -Ec '[[:space:]](ACQBULK|PREEXIT)[[:space:]]*;' "$sasf")
          [ "$gdc" -eq 0 ] || fail "$name sm_80: $gdc ACQBULK/PREEXIT in the SASS (PDL is sm_90 only)"
        fi
      else
        fail "$name sm_$arch: cuobjdump -sass failed: $(head -3 "$keep/cuobjdump.log")"
      fi
    fi
    [ "$arch" != 80 ] || ! grep -q griddepcontrol "$ptx" ||
      fail "$name sm_80: griddepcontrol in the PTX (PDL is sm_90 only)"
    kernels "$ug" >"$keep/kernels"
    while read -r k kind nmm nld; do
      [ "$kind" = custom ] || continue
      kname=${entry}_k$k
      # A split-K pair run as one launch: the second kernel's body is in
      # the first's (checked there); a combining kernel has no matmul.
      inside=$(sed -n "s|^/\* kernel $k runs inside \([A-Za-z0-9_]*\): a split-K pair.*|\1|p" "$src" | head -n 1)
      if [ -n "$inside" ]; then
        if [ "$nmm" -gt 0 ]; then
          fail "$name sm_$arch $kname: fused into $inside with $nmm block matmuls (not checked there)"
        else
          echo "ptx_static: ok: $name sm_$arch $kname: runs inside $inside (split-K pair, one launch)"
        fi
        continue
      fi
      body="$keep/$kname.ptx"
      ptx_body "$ptx" "$kname" >"$body"
      if [ ! -s "$body" ]; then
        fail "$name sm_$arch $kname: no .entry in the PTX"
        continue
      fi
      cpa=$(grep -Ec 'cp\.async\.c[ag]\.shared\.global[^;]*,[ \t]*16[ \t]*;' "$body")
      bulk=$(grep -c 'cp\.async\.bulk' "$body")
      mma=$(grep -c 'mma\.sync\.aligned\.m16n8k16' "$body")
      wg=$(grep -c 'wgmma\.mma_async' "$body")
      ldm=$(grep -c 'ldmatrix' "$body")
      tf32=$(grep -c 'mma\.sync\.aligned\.m16n8k8[^ ]*tf32' "$body")
      # The plan's shared memory, from the comment above the kernel.
      plan=$(awk -v name="$kname" '
        /\/\*/ { c = "" ; inc = 1 }
        inc { c = c " " $0 }
        /\*\// { inc = 0 }
        /__global__/ && index($0, " " name "(") > 0 { print c; exit }
      ' "$src")
      planb=$(printf '%s\n' "$plan" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) bytes of shared memory.*/\1/p')
      launch=$(sed -n "s/.*MIRS_LAUNCH($kname, dim3([^)]*), dim3([^)]*), \([0-9][0-9]*\),.*/\1/p" "$src" | head -n 1)
      regs=$(ptxas_regs "$log" "$kname")
      planr=$(printf '%s\n' "$plan" | sed -n 's/.*~\([0-9][0-9]*\) registers per thread.*/\1/p')
      static=$(ptxas_smem "$log" "$kname")
      [ -n "$static" ] || static=0
      why=""
      [ $((cpa + bulk)) -gt 0 ] || why="$why; no 16-byte cp.async or bulk copy"
      if [ "$wide" = 1 ] && [ "$nmm" -gt 0 ]; then
        # Instruction sites are counted after unrolling, so one unrolled
        # matmul could stand for two: the counts are lower bounds.
        [ $((mma + wg)) -ge "$nld" ] ||
          why="$why; $((mma + wg)) 16-bit tensor-core MMA (m16n8k16/wgmma) for $nld block matmuls of loaded 16-bit tiles"
        [ "$wg" -gt 0 ] || [ "$ldm" -ge "$nld" ] ||
          why="$why; $ldm ldmatrix for $nld block matmuls of loaded 16-bit tiles"
        [ "$nld" -lt "$nmm" ] || [ "$tf32" -eq 0 ] ||
          why="$why; $tf32 tf32 MMA where every block matmul has loaded 16-bit operands"
        [ $((mma + wg + tf32)) -ge "$nmm" ] ||
          why="$why; $((mma + wg + tf32)) tensor-core MMA (m16n8k16/m16n8k8 tf32/wgmma) for $nmm block matmuls"
      fi
      if [ -z "$planb" ]; then
        if printf '%s\n' "$plan" | grep -q 'global scratch'; then
          why="$why; the plan keeps its tiles in global scratch"
        else
          why="$why; no plan comment with 'N bytes of shared memory' above the kernel"
        fi
      elif [ -z "$launch" ]; then
        why="$why; no launch with a literal shared-memory size"
      elif [ "$planb" -ne $((launch + static)) ]; then
        why="$why; plan $planb bytes of shared memory, the kernel requests $launch dynamic + $static static"
      fi
      if [ -z "$regs" ] || [ -z "$planr" ]; then
        why="$why; no register count (ptxas '${regs:-?}', plan '~${planr:-?}')"
      elif [ "$regs" -gt $((planr + ${REG_SLACK:-16})) ]; then
        why="$why; ptxas uses $regs registers, the plan estimates ~$planr (slack ${REG_SLACK:-16})"
      fi
      hg=0
      sass90=""
      if [ "$arch" = 90a ] && printf '%s\n' "$plan" | grep -q 'wgmma m64nNk16'; then
        [ "$wg" -gt 0 ] || why="$why; the plan says wgmma, the PTX has no wgmma.mma_async"
        for ins in 'wgmma\.fence' 'wgmma\.commit_group' 'wgmma\.wait_group' 'fence\.proxy\.async'; do
          grep -q "$ins" "$body" || why="$why; no $ins in the PTX"
        done
        ! grep -qi 'wgmma.*serializ' "$log" || why="$why; ptxas serializes wgmma: $(grep -m 1 -i serializ "$log")"
        if [ "$sassok" = 1 ]; then
          hg=$(awk -v name="$kname" '
            BEGIN { mangled = length(name) name }
            /Function :/ { on = index($0, mangled) > 0 || $NF == name }
            on && /HGMMA/ { n++ }
            END { print n + 0 }' "$sasf")
          [ "$hg" -gt 0 ] || why="$why; no HGMMA in the SASS"
          sass90=" HGMMA=$hg"
        fi
      fi
      # A fused split-K pair: fences, the arrival atomic, and after it (the
      # combine) no read of the partials through the read-only path.
      fused=""
      if printf '%s\n' "$plan" | grep -q 'a split-K pair run as one launch'; then
        nfence=$(grep -c 'membar\.gl\|fence\.sc\.gpu\|fence\.acq_rel\.gpu' "$body")
        natom=$(grep -c 'atom\.global\.add\.u32\|atom\.add\.u32\|red\.global\.add\.u32' "$body")
        ncnc=$(awk '/atom\.(global\.)?add\.u32/ { on = 1 } on && /ld\.global\.nc/ { n++ } END { print n + 0 }' "$body")
        [ "$nfence" -ge 2 ] || why="$why; fused split-K pair: $nfence fences (membar.gl), 2 needed"
        [ "$natom" -ge 1 ] || why="$why; fused split-K pair: no atomic add of the arrival counter"
        [ "$ncnc" -eq 0 ] || why="$why; fused split-K pair: $ncnc ld.global.nc after the arrival (partials through the read-only path)"
        fused=" fused-pair:fences=$nfence,atomics=$natom,ld.nc-after=$ncnc"
        if [ "$sassok" = 1 ]; then
          set -- $(awk -v name="$kname" '
            BEGIN { mangled = length(name) name }
            /Function :/ { on = index($0, mangled) > 0 || $NF == name }
            on && /MEMBAR/ { m++ }
            on && /[ \t](ATOMG|ATOM|RED)[.A-Z0-9]*[ \t]/ { a++; after = 1 }
            on && after && /LDG[.A-Z0-9]*CONSTANT/ { c++ }
            END { print m + 0, a + 0, c + 0 }' "$sasf")
          [ "$1" -ge 1 ] || why="$why; fused split-K pair: no MEMBAR in the SASS"
          [ "$2" -ge 1 ] || why="$why; fused split-K pair: no ATOMG in the SASS"
          [ "$3" -eq 0 ] || why="$why; fused split-K pair: $3 LDG...CONSTANT after the arrival in the SASS"
          fused="$fused sass:MEMBAR=$1,ATOM=$2,LDG.CONSTANT-after=$3"
        fi
      fi
      # The register chain: no shared-memory store between the two MMAs.
      chain=no
      if printf '%s\n' "$plan" | grep -q 'Register chain'; then
        between=$(awk '/mma\.sync/ { last = NR; if (!first) first = NR } { l[NR] = $0 }
          END { n = 0; for (i = first; i <= last; i++) if (l[i] ~ /st\.shared/) n++; print n }' "$body")
        xrows=$(printf '%s\n' "$plan" | sed -n 's/.* \([0-9][0-9]*\) row values exchanged.*/\1/p')
        allowed=$((2 * ${xrows:-0}))
        chain="yes,st.shared-between-mmas=$between(allowed-row-exchange=$allowed)"
        [ "$between" -le "$allowed" ] ||
          why="$why; $between st.shared between the register chain's MMAs, $allowed for row exchanges (the intermediate goes through shared memory)"
      else
        # (Of the attention kernel: a split-K best's combining kernel has
        # no matmul to chain.)
        case " $chain_names " in
        *" $name "*) [ "$nmm" -lt 2 ] || why="$why; no register chain in the plan (expected for $name)" ;;
        esac
      fi
      sline=""
      if [ "$sassok" = 1 ]; then
        set -- $(sass_stats "$sasf" "$kname")
        if [ "$#" -ne 8 ] || [ "$1" -eq 0 ]; then
          why="$why; no function $kname in the SASS"
        else
          sg=$2 sldg=$3 sbulk=$4 shmma=$5 stf32=$6 sldsm=$7 sfed=$8
          [ $((sg + sbulk)) -gt 0 ] || why="$why; SASS: no LDGSTS.128 or bulk/TMA copy"
          if [ "$wide" = 1 ] && [ "$nld" -gt 0 ]; then
            [ $((shmma + hg)) -ge "$nld" ] || why="$why; SASS: $shmma HMMA.16816 + $hg HGMMA for $nld block matmuls of loaded 16-bit tiles"
            [ "$hg" -gt 0 ] || [ "$sldsm" -ge "$nld" ] || why="$why; SASS: $sldsm LDSM for $nld block matmuls of loaded 16-bit tiles"
            [ "$hg" -gt 0 ] || [ "$sfed" -ge "$nld" ] || why="$why; SASS: $sfed HMMA.16816 fed by LDSM for $nld block matmuls of loaded 16-bit tiles"
          fi
          sline=" sass: LDGSTS.128=$sg LDG.128=$sldg bulk=$sbulk HMMA.16816=$shmma (LDSM-fed $sfed) HMMA.TF32=$stf32 LDSM=$sldsm$sass90"
        fi
      fi
      # Programmatic dependent launch (sm_90, sm_90a).
      pline=""
      if [ "$arch" != 80 ]; then
        dep=0 trig=0
        grep -q "MIRS_PDL(pdl, MIRS_LAUNCH($kname, " "$src" && dep=1
        sed -n "/ $kname(.*) {\$/{n;p;n;p;}" "$src" | grep -q '^    mirs_pdl_trigger();' && trig=1
        pw=$(grep -c 'griddepcontrol\.wait' "$body")
        pt=$(grep -c 'griddepcontrol\.launch_dependents' "$body")
        [ "$dep" = 0 ] || [ "$pw" -gt 0 ] || why="$why; launched as a programmatic dependent, no griddepcontrol.wait in the PTX"
        [ "$dep" = 1 ] || [ "$pw" -eq 0 ] || why="$why; griddepcontrol.wait in a kernel not launched as a programmatic dependent"
        [ "$trig" = 0 ] || [ "$pt" -gt 0 ] || why="$why; mirs_pdl_trigger in the source, no griddepcontrol.launch_dependents in the PTX"
        [ "$trig" = 1 ] || [ "$pt" -eq 0 ] || why="$why; griddepcontrol.launch_dependents without mirs_pdl_trigger"
        pline=" pdl: dependent=$dep trigger=$trig"
        if [ "$sassok" = 1 ]; then
          set -- $(sass_pdl "$sasf" "$kname")
          acq=$1 pre=$2 fa=$3 fg=$4
          [ "$dep" = 0 ] || [ "$acq" -gt 0 ] || why="$why; SASS: no ACQBULK (griddepcontrol.wait) in a programmatic dependent"
          [ "$dep" = 0 ] || [ "$fg" -lt 0 ] || [ "$fa" -ge 0 -a "$fa" -lt "$fg" ] ||
            why="$why; SASS: a global-memory instruction (index $fg) before the first ACQBULK (index $fa)"
          [ "$dep" = 1 ] || [ "$acq" -eq 0 ] || why="$why; SASS: ACQBULK in a kernel not launched as a programmatic dependent"
          [ "$trig" = 0 ] || [ "$pre" -gt 0 ] || why="$why; SASS: no PREEXIT (launch_dependents) where the source triggers"
          [ "$trig" = 1 ] || [ "$pre" -eq 0 ] || why="$why; SASS: PREEXIT without mirs_pdl_trigger"
          pline="$pline ACQBULK=$acq(at $fa, first global at $fg) PREEXIT=$pre"
        fi
      fi
      line="$name sm_$arch $kname: regs=${regs:-?}(plan~${planr:-?}) chain=$chain cp.async16=$cpa bulk=$bulk mma16=$mma wgmma=$wg ldmatrix=$ldm tf32=$tf32 block-matmuls=$nmm loaded16=$nld smem plan=${planb:-?} launch=${launch:-?}+$static$sline$fused$pline"
      if [ -n "$why" ]; then
        fail "$line${why}"
      else
        echo "ptx_static: ok: $line"
      fi
    done <"$keep/kernels"
  done
done
[ "$given" -gt 0 ] || [ "$wgpicked" -gt 0 ] || fail "no graph picks wgmma under --codegen-wgmma=1"
if [ "$failures" -gt 0 ]; then
  echo "ptx_static: $failures failures"
  exit 1
fi
echo "ptx_static: PASS"
exit 0
