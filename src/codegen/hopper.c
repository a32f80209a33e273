/* SPDX-License-Identifier: MIT */
/* src/codegen/hopper.c - the Hopper (sm_90a) warpgroup MMA path
 * (hopper.h): which matmuls take `wgmma.mma_async`, the shared-memory
 * layout of their operands, and the code that multiplies.
 *
 * When (codegen_wgmma = 1; plan.c decision 2b):
 *   a block matmul the sm_80 path runs as MMA_16 (both operands 16-bit
 *   tiles loaded from global memory, one dtype), of one batch, with
 *   M = 16 * warps and M % 64 == 0 (warpgroup g of the block owns rows
 *   64g..64g+63, warp w of it the 16-row band the sm_80 path gives warp
 *   4g+w), N % 8 == 0 and N <= 256 (at most MIRS__PLAN_MMA_CHUNK 8-column
 *   tiles unless accumulated, so the product is one instruction wide; an
 *   accumulated one is bounded by plan.c's REG_ACC_MAX: N <= 128),
 *   K % 16 == 0 without padding, each operand tile loaded with 16-byte
 *   cp.async on the per-thread fast path and read by this matmul only;
 *   not a swapped product (plan_swap) nor one of the register chain (both
 *   rely on the sm_80 fragment code).
 *
 * Layout (no swizzle, "interleaved" in the PTX ISA): a tile of R rows and
 * C columns (16-bit) is stored as 8x8 core matrices of 128 contiguous
 * bytes: element (r, c) at byte ((c / 8) * R + r) * 16 + (c % 8) * 2.
 * A cp.async chunk (8 elements of one row) lands whole, 16-byte aligned.
 *  - A (M x K, row-major, K-major for wgmma): core matrices 8 rows apart
 *    are 128 bytes apart (SBO = 128), 8 columns (K) apart M * 16 bytes
 *    (LBO = M * 16); canonical K-major ((8,m),(8,2k)):((8,SBO),(1,LBO)).
 *  - B (K x N, row-major [k][n]: N-major, imm-trans-b = 1): core matrices
 *    8 k-rows apart are 128 bytes apart (LBO = 128), 8 columns (N) apart
 *    K * 16 bytes (SBO = K * 16); canonical MN-major
 *    ((8,1,n),(8,k)):((1,8,SBO),(8,LBO)).
 * The k loop: wgmma.fence, one wgmma m64nNk16 per 16 columns of K (A's
 * descriptor starts at row 64g, column kk; B's at row kk), commit_group,
 * wait_group 0 (the epilogue reads the accumulators).  A
 * fence.proxy.async after the cp.async wait (cuda.c) makes the copies,
 * written through the generic proxy, visible to wgmma's async proxy.
 *
 * The emulator (emu.h) runs the same code: each wgmma is queued and
 * performed at the wait_group that covers it, element by element from the
 * descriptors (so a wrong LBO/SBO, a missing wait or fence shows). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/hopper.h"

/* mma.sync reaches about two thirds of the f16 tensor-core peak on an
 * sm_90 part, where only wgmma feeds the tensor cores at full rate (an
 * estimate from published H100 figures, not measured here; applied only
 * under codegen_wgmma, i.e. when the target is an sm_90a device). */
#define MMA_SYNC_SM90_RATE (2.0 / 3.0)

static int64_t batch1(const mirs__shape *s) {
  int64_t n = 1;
  for (int d = 0; d + 2 < s->ndim; d++)
    n *= s->d[d];
  return n;
}

/* Whether block tensor t is an INPUT tile that the 16-byte cp.async fast
 * path loads (cuda.c vload_geometry: one non-unit row dim, NT % chunks
 * per row == 0), read by one op only. */
static bool loadable(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t) {
  const mirs__bop *p = &bg->ops[bg->t[t].producer];
  const mirs__plan_tensor *pt = &pl->t[t];
  const mirs__shape *s = &bg->t[t].shape;
  if (p->op != MIRS_OP_INPUT || !pt->vec || pt->zero || pt->uses != 1 || pt->elsize != 2 ||
      s->ndim < 2)
    return false;
  int64_t cpr = s->d[s->ndim - 1] * 2 / 16;
  int nonunit = 0;
  for (int d = 0; d < s->ndim - 1; d++)
    nonunit += s->d[d] > 1;
  return cpr > 0 && nonunit <= 1 && pl->nthreads % cpr == 0;
}

void mirs__hopper_plan(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg) {
  (void)g;
  pl->wgmma = false;
  if (pl->nthreads % 128 != 0 || pl->nthreads != pl->nwarps * 32)
    return;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__plan_op *po = &pl->op[i];
    if (op->op != MIRS_OP_MATMUL || po->mma != MIRS__MMA_16)
      continue;
    /* Not a swapped product (its C is transposed) nor one of the register
     * chain (its C fragments become the next product's A fragments, in
     * registers, and it adds into the chain's arrays): both keep the
     * sm_80 code's own fragment walk. */
    if (po->swap || (pl->chain.on && (i == pl->chain.mm1 || i == pl->chain.mm2)) ||
        pl->t[op->out].frag != MIRS__FRAG_NONE)
      continue;
    const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape;
    int r = os->ndim;
    int64_t m = os->d[r - 2], n = os->d[r - 1], kk = as->d[as->ndim - 1];
    if (batch1(os) != 1 || m % 64 != 0 || m != 16 * (int64_t)pl->nwarps || n % 8 != 0 || n > 256 ||
        (po->acc < 0 && n / 8 > MIRS__PLAN_MMA_CHUNK) || kk % 16 != 0 || po->k_pad != kk ||
        po->m_pad != m || op->in[0] == op->in[1])
      continue;
    if (!loadable(pl, bg, op->in[0]) || !loadable(pl, bg, op->in[1]))
      continue;
    po->mma = MIRS__MMA_WG;
    pl->wgmma = true;
    for (int a = 0; a < 2; a++) {
      mirs__plan_tensor *pt = &pl->t[op->in[a]];
      const mirs__shape *s = &bg->t[op->in[a]].shape;
      pt->core8 = true;
      pt->stride = (int32_t)s->d[s->ndim - 1]; /* no padding: the layout is conflict-free */
      pt->stage_bytes = ((int64_t)pt->rows * pt->stride * 2 + 15) & ~(int64_t)15;
    }
  }
}

double mirs__hopper_rate(const mirs_context *ctx, int mma) {
  if (mma == MIRS__MMA_TF32)
    return 0.5;
  if (mma == MIRS__MMA_16 && ctx && ctx->opt.codegen_wgmma)
    return MMA_SYNC_SM90_RATE;
  return 1.0;
}

/* The device helpers every wgmma kernel uses. */
static const char prelude_wg[] =
    "\n#ifndef MIRS_PRELUDE_WGMMA_DEFINED\n"
    "#define MIRS_PRELUDE_WGMMA_DEFINED\n"
    "#ifndef MIRS_HOST_EMULATION\n"
    "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
    "#error \"this file uses wgmma (mirsearch --codegen-wgmma=1): compile it for sm_90a\"\n"
    "#endif\n"
    "/* Shared-memory matrix descriptor (PTX ISA, wgmma): start address, leading\n"
    " * and stride byte offsets (each >> 4, 14 bits), no swizzle. */\n"
    "__device__ __forceinline__ uint64_t mirs_wg_desc(const void *p, unsigned lbo, unsigned sbo) "
    "{\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    return (uint64_t)((a & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |\n"
    "           ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32);\n}\n"
    "__device__ __forceinline__ void mirs_wgmma_fence(void) {\n"
    "    asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n}\n"
    "__device__ __forceinline__ void mirs_wgmma_commit(void) {\n"
    "    asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n}\n"
    "/* Wait until at most N of the warpgroup's wgmma groups are pending. */\n"
    "template <int N> __device__ __forceinline__ void mirs_wgmma_wait(void) {\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned %0;\\n\" :: \"n\"(N) : \"memory\");\n}\n"
    "/* This thread's generic-proxy shared-memory writes (cp.async included)\n"
    " * become visible to the async proxy (wgmma's operand reads). */\n"
    "__device__ __forceinline__ void mirs_fence_proxy_async(void) {\n"
    "    asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n}\n"
    "#endif\n"
    "#endif\n";

/* The nr accumulator registers d[i / 4][i % 4] as read-write asm
 * operands, four to a line, the last followed by end. */
static void acc_operands(mirs__buf *b, int nr, const char *end) {
  for (int i = 0; i < nr; i++)
    mirs__buf_printf(b, "\"+f\"(d[%d][%d])%s", i / 4, i % 4,
                     i + 1 == nr  ? end
                     : i % 4 == 3 ? ",\n                   "
                                  : ", ");
}

/* Emit the wgmma function for width n and 16-bit type ty ("f16"/"bf16"):
 * mirs_wgmma_nN_TY(d, da, db) adds A.B (A K-major, B N-major) into d, and
 * mirs_wgmma_nN_hold(d) keeps the compiler from moving accesses of d
 * across a fence or wait (an empty asm that reads and writes them). */
static void emit_wgmma_fn(mirs__buf *b, int n, const char *ty) {
  int nr = n / 2;
  mirs__buf_printf(b, "\n#ifndef MIRS_WGMMA_N%d_%s\n#define MIRS_WGMMA_N%d_%s\n", n, ty, n, ty);
  mirs__buf_printf(b,
                   "__device__ __forceinline__ void mirs_wgmma_n%d_%s(float (*d)[4], uint64_t da, "
                   "uint64_t db) {\n#ifdef MIRS_HOST_EMULATION\n"
                   "    mirs_emu_wgmma(&d[0][0], %d, da, db, %s);\n#else\n",
                   n, ty, n, strcmp(ty, "bf16") == 0 ? "true" : "false");
  mirs__buf_puts(b, "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %");
  mirs__buf_printf(b, "%d, 0;\\n\"\n", nr + 2);
  mirs__buf_printf(b, "                 \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {\"\n",
                   n, ty, ty);
  for (int i = 0; i < nr; i++)
    mirs__buf_printf(b, "%s%%%d%s", i % 8 == 0 ? "                 \"" : "", i,
                     i + 1 == nr  ? "}, \"\n"
                     : i % 8 == 7 ? ", \"\n"
                                  : ", ");
  mirs__buf_printf(b, "                 \"%%%d, %%%d, p, 1, 1, 0, 1;\\n}\\n\"\n", nr, nr + 1);
  mirs__buf_puts(b, "                 : ");
  acc_operands(b, nr, "\n");
  mirs__buf_puts(b, "                 : \"l\"(da), \"l\"(db), \"r\"(1));\n#endif\n}\n");
  mirs__buf_printf(b, "#ifndef MIRS_WGMMA_HOLD_N%d\n#define MIRS_WGMMA_HOLD_N%d\n", n, n);
  mirs__buf_printf(b,
                   "__device__ __forceinline__ void mirs_wgmma_n%d_hold(float (*d)[4]) {\n"
                   "#ifdef MIRS_HOST_EMULATION\n    (void)d;\n#else\n    asm volatile(\"\" : ",
                   n);
  acc_operands(b, nr, "");
  mirs__buf_puts(b, " :: \"memory\");\n#endif\n}\n#endif\n#endif\n");
}

void mirs__hopper_emit_prelude(mirs__buf *b, const mirs_graph *g, const mirs__plan *plans) {
  bool used[33][2];
  bool any = false;
  memset(used, 0, sizeof used);
  for (int32_t i = 0; i < g->nops; i++) {
    if (g->ops[i].op != MIRS_OP_CUSTOM || !plans[i].wgmma)
      continue;
    const mirs__bgraph *bg = g->ops[i].bg;
    for (int32_t j = 0; j < bg->nops; j++) {
      if (plans[i].op[j].mma != MIRS__MMA_WG)
        continue;
      const mirs__shape *os = &bg->t[bg->ops[j].out].shape;
      int n = (int)os->d[os->ndim - 1];
      used[n / 8][mirs__plan_tile_dtype(g, bg, bg->ops[j].in[0]) == MIRS_BF16] = true;
      any = true;
    }
  }
  if (!any)
    return;
  mirs__buf_puts(b, prelude_wg);
  for (int n8 = 1; n8 <= 32; n8++)
    for (int bf = 0; bf < 2; bf++)
      if (used[n8][bf])
        emit_wgmma_fn(b, n8 * 8, bf ? "bf16" : "f16");
}

void mirs__hopper_emit_kloop(mirs__buf *b, const mirs_graph *g, const mirs__bgraph *bg,
                             const mirs__plan *pl, int32_t oi, const char *ind) {
  (void)pl;
  const mirs__bop *op = &bg->ops[oi];
  const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape;
  int64_t m = os->d[os->ndim - 2], n = os->d[os->ndim - 1], kk = as->d[as->ndim - 1];
  const char *ty = mirs__plan_tile_dtype(g, bg, op->in[0]) == MIRS_BF16 ? "bf16" : "f16";
  int ta = (int)op->in[0], tb = (int)op->in[1];
  mirs__buf_printf(b,
                   "%s/* wgmma m64n%" PRId64 "k16 (%s): warpgroup tid / 128 multiplies rows 64 * "
                   "(tid / 128).. of\n%s * t%d (K-major, LBO %" PRId64
                   ", SBO 128) by t%d (N-major, "
                   "LBO 128, SBO %" PRId64 "),\n%s * 8x8 core matrices, no swizzle (hopper.c) */\n",
                   ind, n, ty, ind, ta, m * 16, tb, kk * 16, ind);
  mirs__buf_printf(
      b, "%sconst int wg = tid >> 7;\n%s(void)ab;\n%s(void)bb;\n%s(void)mt;\n%s(void)nt0;\n", ind,
      ind, ind, ind, ind);
  mirs__buf_printf(b, "%smirs_wgmma_n%" PRId64 "_hold(d);\n%smirs_wgmma_fence();\n", ind, n, ind);
  mirs__buf_printf(b, "%sMIRS_UNROLL for (int kk = 0; kk < %" PRId64 "; kk += 16)\n", ind, kk);
  mirs__buf_printf(b,
                   "%s  mirs_wgmma_n%" PRId64 "_%s(d, mirs_wg_desc(t%d + kk * %" PRId64
                   " + wg * 512, %" PRId64 "u, 128u),\n"
                   "%s                   mirs_wg_desc(t%d + kk * 8, 128u, %" PRId64 "u));\n",
                   ind, n, ty, ta, m, m * 16, ind, tb, kk * 16);
  mirs__buf_printf(b, "%smirs_wgmma_commit();\n%smirs_wgmma_wait<0>();\n", ind, ind);
  mirs__buf_printf(b, "%smirs_wgmma_n%" PRId64 "_hold(d);\n", ind, n);
}
