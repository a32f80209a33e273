/* SPDX-License-Identifier: MIT */
/* src/codegen/plan.c - the kernel plan of a custom kernel (plan.h): the
 * decisions the CUDA generator carries out and the cost model prices.
 *
 * Decisions, in order:
 *  1. thread-level chains: a fused elementwise op runs in the registers of
 *     its producer when that changes no value and no order (same shape,
 *     its other operand already computed);
 *  2. tensor cores: a block matmul of 16-bit loaded tiles (same dtype)
 *     with N % 8 == 0 is MMA_16 (ldmatrix + m16n8k16), its K padded to a
 *     multiple of 16 with zeros in shared memory (batch of one); a
 *     skinny M (not a multiple of 16, batch 1) is padded to a multiple of
 *     16 with rows of the A tile that only feed discarded output rows; a
 *     computed (f32) operand gives MMA_TF32 when K % 8 == 0 (M padded
 *     the same way); else the scalar path;
 *     an MMA of skinny M (<= 8, one batch, N % 16 == 0, no transposed
 *     operand) runs with its operands swapped when that does less
 *     tensor-core work (plan_swap): C^T = B^T A^T, the B tile (a weight,
 *     [K][N]) as the A operand (MMA_16: through ldmatrix.x4.trans), so 16
 *     of its N columns fill the MMA's 16 rows, and the A tile's rows,
 *     padded to 8, as the B operand (MMA_16: through ldmatrix.x2): 8*N
 *     products per K step instead of 16*N, half the MMAs and A-fragment
 *     loads; a tf32 swap reads the same elements its direct form reads
 *     from each tile in the same lane pattern (rows gq, columns tq of the
 *     A tile; rows tq, columns gq of the B tile), so the tf32 paddings of
 *     decision 4 stay conflict-free;
 *  2b. under codegen_wgmma, an MMA_16 matmul whose tiles allow it (one
 *     batch, M = 16 * warps a multiple of 64, N <= 256, K % 16 == 0, its
 *     operands fast-path cp.async tiles read by it only, not swapped and
 *     not in the register chain of decision 8) is MMA_WG (hopper.c):
 *     wgmma m64nNk16, operand tiles in 8x8 core matrices;
 *  3. register accumulators: `accum` of an MMA matmul used nowhere else
 *     keeps the C fragments in registers across the forloop (the matmul
 *     adds into them; its tile is never stored);
 *  4. staging: every input tile sits in shared memory at its stored dtype;
 *     16-bit MMA operands have their row stride padded by 16 bytes when it
 *     is an even number of 16-byte chunks, so the 8 rows one ldmatrix
 *     reads fall into 8 different 16-byte bank groups (conflict-free);
 *     tiles a tf32 MMA reads element by element get strides of 4 (A) or
 *     8 (B) mod 32 words, conflict-free for its lane pattern;
 *     rows of 16-byte multiples, in tensors whose rows are 16-byte
 *     multiples, are loaded with 16-byte cp.async, others element by
 *     element;
 *  5. stages: tiles the forloop walks get S buffers, S - 1 of them in
 *     flight while one is computed on: S is the smallest number that keeps
 *     INFLIGHT_TARGET bytes in flight, at least 2, at most 8 and F, and
 *     less while shared memory does not fit (1 when no walked tile is
 *     loaded with cp.async); loop-invariant tiles one;
 *  6. feasibility: shared memory within the limit, at most 1024 threads,
 *     every tile under 2^31 elements (the generated index math is 32-bit
 *     inside a block);
 *  7. tile skipping: when the forloop walks the columns of a loop-phase
 *     causal_mask whose rows it does not move, and every accumulator is
 *     unchanged by a tile the mask empties (a sum adds exactly 0: exp(-inf)
 *     = 0 reaching it through products, matmuls and sums; a running max
 *     takes a max with -inf; an online step adds 0 under a shift of -inf),
 *     each block stops
 *     after its last live iteration (plan.h, mirs__plan_skip): no loads,
 *     MMAs or accumulation for the masked tiles, and the traffic and flops
 *     of the loop are counted for the live iterations only (pl->live);
 *  8. register chain (plan.h, mirs__plan_chain): a tensor-core product S
 *     of one batch whose 16-row strips divide the warps, followed by
 *     elementwise ops (a row value as second operand) and max/sum over
 *     its rows, into E, the A operand of a second product E·V (V a tile
 *     of the iteration), whose result only feeds accum / accum_online,
 *     runs in the registers of the strip's warp: S, E and the row values
 *     never get a tile, and accum_sum / accum_online over them keep
 *     per-row registers.  E·V takes 16-bit m16n8k16 when E is in [0, 1]
 *     (exp of x minus the row max of x, a causal mask between included)
 *     or V is bf16 (f32's range) and V is a 16-bit tile, else tf32
 *     m16n8k8 (exp of raw logits overflows f16; a computed f32 V).
 *     A warp's part of S of more than 16 8-column tiles runs in key
 *     chunks of 8 tiles (key_chunks) when the chain is linear.
 *
 * Invariant: plans allocate nothing for block graphs of up to
 * MIRS__PLAN_LOCAL tensors and ops. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/hopper.h"
#include "codegen/plan.h"

#define REG_ACC_MAX 64 /* accumulator elements (or MMA C registers) per thread in registers */
#define SCALAR_INFLIGHT 4 /* element loads a thread keeps in flight on the scalar path */
/* Bytes a block should keep in flight: an H200 (4.8 TB/s, ~0.7 us loaded
 * latency) needs ~3.4 MB device-wide, ~35 KB per block at 96 blocks. */
#define INFLIGHT_TARGET (48 * 1024)

/* Round up to a multiple of 16 bytes. */
static int64_t al16(int64_t x) {
  return (x + 15) & ~(int64_t)15;
}

static int es_of(mirs_dtype t) {
  return t == MIRS_F32 ? 4 : 2;
}

/* Whether fused op f (with in[0] = t, produced by op p) can run in the
 * registers of t's producer: same shape, and its other operand exists by
 * then (computed before p; for an accumulator p, another accumulator that
 * is written back before the chained ones). */
static bool can_absorb(const mirs__plan *pl, const mirs__bgraph *bg, int32_t p, const mirs__bop *f) {
  if (!f->fused || !mirs__op_is_elementwise(f->op) || pl->t[f->in[0]].uses != 1)
    return false;
  if (!mirs__shape_eq(&bg->t[f->in[0]].shape, &bg->t[f->out].shape))
    return false;
  if (f->nin < 2)
    return true;
  int32_t q = bg->t[f->in[1]].producer;
  const mirs__bop *pp = &bg->ops[p];
  if (mirs__graph_ops[pp->op].kind == MIRS__KIND_ACCUM) {
    const mirs__bop *qo = &bg->ops[q];
    return mirs__graph_ops[qo->op].kind == MIRS__KIND_ACCUM && pl->t[qo->out].next < 0 && q != p;
  }
  return q < p;
}

/* 1. Operand uses and fused chains. */
static void plan_chains(mirs__plan *pl, const mirs__bgraph *bg) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_INPUT)
      continue;
    for (int a = 0; a < op->nin && a < 2; a++)
      pl->t[op->in[a]].uses++;
  }
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *f = &bg->ops[i];
    if (!f->fused || f->nin < 1)
      continue;
    int32_t p = bg->t[f->in[0]].producer;
    mirs__op_kind pk = mirs__graph_ops[bg->ops[p].op].kind;
    if (pk == MIRS__KIND_INPUT || pk == MIRS__KIND_OUTPUT)
      continue;
    int32_t head = p; /* the head of the chain decides the phase rules */
    while (pl->op[head].absorbed)
      head = bg->t[bg->ops[head].in[0]].producer;
    if (can_absorb(pl, bg, head, f)) {
      pl->t[f->in[0]].next = i;
      pl->op[i].absorbed = true;
    }
  }
}

mirs_dtype mirs__plan_tile_dtype(const mirs_graph *g, const mirs__bgraph *bg, int32_t t) {
  const mirs__bop *p = &bg->ops[bg->t[t].producer];
  if (p->op == MIRS_OP_TRANSPOSE)
    p = &bg->ops[bg->t[p->in[0]].producer];
  if (p->op != MIRS_OP_INPUT)
    return MIRS_F32;
  return g->t[p->src].dtype;
}

/* Whether tile t is the transpose of a loaded tile (mirs__plan_tile_dtype). */
static bool loaded_transpose(const mirs__bgraph *bg, int32_t t) {
  const mirs__bop *p = &bg->ops[bg->t[t].producer];
  return p->op == MIRS_OP_TRANSPOSE && bg->ops[bg->t[p->in[0]].producer].op == MIRS_OP_INPUT;
}

/* The 16-bit dtype of tile t when it is stored in f16/bf16, else F32. */
static mirs_dtype loaded16(const mirs_graph *g, const mirs__bgraph *bg, int32_t t) {
  return mirs__plan_tile_dtype(g, bg, t);
}

/* Product of all dims but the last two. */
static int64_t batch_numel(const mirs__shape *s) {
  int64_t n = 1;
  for (int d = 0; d + 2 < s->ndim; d++)
    n *= s->d[d];
  return n;
}

int64_t mirs__plan_mma_tiles(const mirs__plan *pl, const mirs__bgraph *bg, int32_t i) {
  const mirs__shape *os = &bg->t[bg->ops[i].out].shape;
  int64_t n = os->d[os->ndim - 1];
  if (pl->op[i].swap)
    return n / 16;
  return batch_numel(os) * (pl->op[i].m_pad / 16) * (n / 8);
}

/* 2. The operand swap of MMA op i (M rows): the weight-streaming
 * variant of a skinny matmul.  Both variants read every element of the
 * B tile from shared memory once, fed by the same 16-byte cp.async
 * pipeline (so the bytes in flight are the same); they differ in the
 * padded tensor-core work (16*N per 16 of K direct, 8*N swapped: the
 * cost model prices tc flops at m_pad) and in the A fragments (each warp
 * loads 16 rows of A direct, 8 swapped).  A warp's swapped tiles stay
 * live all at once (cuda.c emit_mma_swapped), so at most
 * MIRS__PLAN_MMA_CHUNK of them. */
static void plan_swap(mirs__plan *pl, const mirs__bgraph *bg, int32_t i, int64_t m) {
  const mirs__bop *op = &bg->ops[i];
  const mirs__shape *os = &bg->t[op->out].shape;
  int64_t n = os->d[os->ndim - 1];
  if (m > 8 || n % 16 != 0 || batch_numel(os) != 1 || batch_numel(&bg->t[op->in[0]].shape) != 1 ||
      batch_numel(&bg->t[op->in[1]].shape) != 1 || loaded_transpose(bg, op->in[0]) ||
      loaded_transpose(bg, op->in[1]))
    return;
  int64_t direct = pl->op[i].m_pad * n, swapped = 8 * n;
  int64_t per = (n / 16 + pl->nwarps - 1) / pl->nwarps;
  if (swapped >= direct || per > MIRS__PLAN_MMA_CHUNK)
    return;
  pl->op[i].swap = true;
  pl->op[i].m_pad = 8;
}

/* 2. and 3.: tensor cores and register accumulators. */
static void plan_mma(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, bool mma) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    pl->op[i].acc = -1;
    if (!mma || op->op != MIRS_OP_MATMUL || pl->nthreads % 32 != 0)
      continue;
    const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape;
    int r = os->ndim;
    if (r < 2 || os->d[r - 1] % 8 != 0)
      continue;
    int64_t m = os->d[r - 2], kk = as->d[as->ndim - 1];
    mirs_dtype da = loaded16(g, bg, op->in[0]), db = loaded16(g, bg, op->in[1]);
    /* A skinny M of one batch is padded to 16 rows: the padding rows of
     * the A tile only feed output rows that are discarded. */
    bool rows_ok = m % 16 == 0 || (batch_numel(os) == 1 && batch_numel(as) == 1);
    /* A K that is not a multiple of 16 (a forloop splitting K finely,
     * e.g. LoRA's X·W at K = 4) is padded with zeros in shared memory:
     * the A tile's rows get zero columns and the B tile zero rows up to
     * k_pad, so the extra products are exactly 0 (batch of one only: the
     * padded B rows must not shift a batch stride). */
    bool k_ok = kk % 16 == 0 ||
                (batch_numel(as) == 1 && batch_numel(&bg->t[op->in[1]].shape) == 1 &&
                 !loaded_transpose(bg, op->in[0]) && !loaded_transpose(bg, op->in[1]));
    /* (A transposed tile is written whole by its step: no zero padding.) */
    pl->op[i].k_pad = (int32_t)kk;
    if (da != MIRS_F32 && da == db && k_ok && rows_ok) {
      pl->op[i].mma = MIRS__MMA_16;
      pl->op[i].m_pad = (int32_t)((m + 15) / 16 * 16);
      pl->op[i].k_pad = (int32_t)((kk + 15) / 16 * 16);
      plan_swap(pl, bg, i, m);
    } else if (kk % 8 == 0 && rows_ok) {
      pl->op[i].mma = MIRS__MMA_TF32;
      pl->op[i].m_pad = (int32_t)((m + 15) / 16 * 16);
      plan_swap(pl, bg, i, m);
    }
  }
  /* accum(y) of an MMA matmul y used only there: C fragments in registers. */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (op->op != MIRS_OP_ACCUM)
      continue;
    int32_t y = op->in[0], p = bg->t[y].producer;
    if (pl->op[p].mma == MIRS__MMA_NONE || pl->t[y].uses != 1 || pl->t[y].next >= 0 ||
        bg->t[y].post)
      continue;
    int64_t tiles = mirs__plan_mma_tiles(pl, bg, p);
    int64_t per = (tiles + pl->nwarps - 1) / pl->nwarps;
    if (per * 4 > REG_ACC_MAX)
      continue;
    pl->op[p].acc = op->out;
    pl->t[op->out].acc_mma = true;
  }
}

/* Chain analysis (decision 8): what a tensor is in the chain. */
enum { CH_NONE, CH_C, CH_ROW, CH_O };

/* Key chunks of a warp's ntl 8-column tiles of S (plan.h chain.nc): 1
 * when their C fragments fit REG_ACC_MAX registers, else the fewest
 * chunks of at most that many (an even number of tiles each: a 16-bit
 * E·V packs two tiles a k step), 0 when none divides.  Holding a strip
 * of 256 keys whole (mqa at forloop=16: 32 tiles, 128 C registers) took
 * ptxas to 255 registers and 52 bytes of spill stores on sm_80; in
 * chunks of 16 tiles the chain keeps gqa's 128-key register profile.
 * Chunks run one after another, so they are only taken for a linear
 * chain (plan_chain): no row max or sum of S used in the iteration, no
 * online accumulator, E·V added straight into its accumulator, as the
 * chunks' partial sums of E·V and of the row sums add up to the
 * strip's. */
static int32_t key_chunks(int64_t ntl) {
  if (ntl * 4 <= REG_ACC_MAX)
    return 1;
  return ntl % MIRS__PLAN_MMA_CHUNK == 0 ? (int32_t)(ntl / MIRS__PLAN_MMA_CHUNK) : 0;
}

/* Whether the ops after matmul i form a register chain (plan.h); fills
 * pl->chain and the tensors' and ops' marks when they do. */
static bool try_chain(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, int32_t i) {
  const mirs__bop *m1 = &bg->ops[i];
  /* (Only a tensor-core matmul starts a chain; other ops, an output's
   * among them, may have no result tensor.) */
  if (m1->op != MIRS_OP_MATMUL || m1->out < 0 || pl->op[i].mma == MIRS__MMA_NONE)
    return false;
  const mirs__shape *ss = &bg->t[m1->out].shape;
  int r = ss->ndim;
  /* A skinny S = Q·K that plan_swap swapped is planned direct in a chain
   * (16-row strips): keeping E out of shared memory saves a store, a
   * barrier and a load of E per iteration, where the swap saves half of a
   * padded MMA.  The swap is undone only when the chain is taken. */
  int32_t m_pad = pl->op[i].swap && r >= 2 ? (int32_t)((ss->d[r - 2] + 15) / 16 * 16)
                                           : pl->op[i].m_pad;
  int32_t strips = m_pad / 16, ks = strips > 0 ? pl->nwarps / strips : 0;
  if (m1->op != MIRS_OP_MATMUL || pl->op[i].mma == MIRS__MMA_NONE || pl->op[i].acc >= 0 ||
      bg->t[m1->out].post || r < 2 || batch_numel(ss) != 1 || ks < 1 || ks * strips != pl->nwarps ||
      ss->d[r - 1] % (16 * ks) != 0)
    return false;
  int32_t nc = key_chunks(ss->d[r - 1] / 8 / ks);
  if (nc < 1)
    return false;
  bool linear = true; /* what key chunks need (key_chunks) */
  int8_t ch[MIRS__PLAN_LOCAL], acc[MIRS__PLAN_LOCAL];
  int32_t maxof[MIRS__PLAN_LOCAL];                    /* a row max: the tensor it is the max of */
  bool le0[MIRS__PLAN_LOCAL], unit[MIRS__PLAN_LOCAL]; /* <= 0 (or -inf); in [0, 1] */
  bool in_chain[MIRS__PLAN_LOCAL];
  for (int32_t t = 0; t < bg->nt; t++) {
    ch[t] = acc[t] = CH_NONE;
    maxof[t] = -1;
    le0[t] = unit[t] = false;
  }
  memset(in_chain, 0, sizeof in_chain);
  ch[m1->out] = CH_C;
  in_chain[i] = true;
  int32_t mm2 = -1;
  for (int32_t j = i + 1; j < bg->nops; j++) {
    const mirs__bop *op = &bg->ops[j];
    bool touches = false;
    for (int a = 0; a < op->nin && a < 2; a++)
      touches = touches || ch[op->in[a]] != CH_NONE;
    if (!touches)
      continue;
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    /* (An accumulator's value is a post-loop one; other chain values
     * are not read after the loop.) */
    if (kind == MIRS__KIND_OUTPUT || op->nin > 2 ||
        (kind != MIRS__KIND_ACCUM && bg->t[op->out].post))
      return false;
    int32_t x = op->in[0], y = op->nin > 1 ? op->in[1] : -1, o = op->out;
    in_chain[j] = true;
    if (kind == MIRS__KIND_ACCUM) {
      bool ok =
          (op->op == MIRS_OP_ACCUM && ch[x] == CH_O) ||
          (op->op == MIRS_OP_ACCUM_ONLINE && (ch[x] == CH_O || ch[x] == CH_ROW) && y >= 0 &&
           ch[y] == CH_ROW) ||
          (op->op == MIRS_OP_ACCUM_SUM && ch[x] == CH_C && op->dim == bg->t[x].shape.ndim - 1) ||
          /* (a running max or min of a row value: a split-K pair's first
           * kernel stores each row's max beside its online sums) */
          ((op->op == MIRS_OP_ACCUM_MAX || op->op == MIRS_OP_ACCUM_MIN) && ch[x] == CH_ROW &&
           y < 0 && mirs__shape_eq(&bg->t[o].shape, &bg->t[x].shape));
      if (!ok)
        return false;
      acc[o] = ch[x] == CH_O ? CH_C : CH_ROW;
      linear = linear && op->op != MIRS_OP_ACCUM_ONLINE;
    } else if (mirs__op_is_elementwise(op->op)) {
      /* (over S's fragments, or E·V's: the same rows, a row value as the
       * second operand) */
      if ((ch[x] != CH_C && ch[x] != CH_O) || (y >= 0 && ch[y] != CH_ROW) ||
          !mirs__shape_eq(&bg->t[o].shape, &bg->t[x].shape))
        return false;
      /* (Split strips: E·V's values are partial sums over the warp's keys,
       * only scaled by a row value, then accumulated.) */
      if (ch[x] == CH_O && ks > 1 && !(y >= 0 && (op->op == MIRS_OP_MUL || op->op == MIRS_OP_DIV)))
        return false;
      ch[o] = ch[x];
      linear = linear && ch[x] == CH_C;
      le0[o] = (op->op == MIRS_OP_SUB && y >= 0 && maxof[y] == x) ||
               (op->op == MIRS_OP_CAUSAL_MASK && le0[x]);
      unit[o] = op->op == MIRS_OP_EXP && le0[x];
    } else if ((op->op == MIRS_OP_MAX || op->op == MIRS_OP_MIN || op->op == MIRS_OP_SUM) &&
               ch[x] == CH_C && op->dim == r - 1) {
      ch[o] = CH_ROW;
      maxof[o] = op->op == MIRS_OP_MAX ? x : -1;
      linear = false;
    } else if (op->op == MIRS_OP_MATMUL && mm2 < 0 && ch[x] == CH_C && y >= 0 && ch[y] == CH_NONE &&
               batch_numel(&bg->t[o].shape) == 1 &&
               bg->t[o].shape.d[bg->t[o].shape.ndim - 1] % 8 == 0) {
      mm2 = j;
      ch[o] = CH_O;
      if (bg->t[o].shape.d[bg->t[o].shape.ndim - 1] / 8 * 4 > REG_ACC_MAX)
        return false;
    } else {
      return false;
    }
  }
  if (mm2 < 0)
    return false;
  const mirs__bop *m2 = &bg->ops[mm2];
  /* E·V straight into its accumulator, which adds the chunks' partial sums */
  bool direct = false;
  for (int32_t j = mm2 + 1; j < bg->nops; j++)
    direct = direct || (in_chain[j] && bg->ops[j].op == MIRS_OP_ACCUM &&
                        bg->ops[j].in[0] == m2->out && pl->t[m2->out].uses == 1);
  if (nc > 1 && (!linear || !direct))
    return false;
  /* V: a 16-bit tile (loaded, or a loaded one transposed) takes
   * ldmatrix; a computed f32 one is read element by element (tf32). */
  mirs_dtype dv = loaded16(g, bg, m2->in[1]);
  bool v16 = dv != MIRS_F32 && mirs__plan_tile_dtype(g, bg, m2->in[1]) == dv;
  pl->chain.on = true;
  pl->op[i].swap = false;
  pl->op[i].m_pad = m_pad;
  pl->op[mm2].swap = false;
  pl->chain.ks = ks;
  pl->chain.nc = nc;
  pl->chain.chunkable = linear && direct;
  pl->chain.xoff = -1;
  pl->chain.xbytes = 0;
  if (ks > 1) { /* the largest partial accumulator of a lane: E·V's C fragments */
    const mirs__shape *os = &bg->t[m2->out].shape;
    int64_t w = 4 * (os->d[os->ndim - 1] / 8);
    pl->chain.xbytes = al16((int64_t)(ks - 1) * strips * 32 * (w > 2 ? w : 2) * 4);
  }
  pl->chain.mm1 = i;
  pl->chain.mm2 = mm2;
  pl->chain.mma2 =
      (int8_t)(v16 && (unit[m2->in[0]] || dv == MIRS_BF16) ? MIRS__MMA_16 : MIRS__MMA_TF32);
  pl->op[mm2].mma = pl->chain.mma2;
  pl->op[mm2].m_pad = pl->op[i].m_pad;
  pl->op[mm2].k_pad = (int32_t)ss->d[r - 1];
  for (int32_t t = 0; t < bg->nt; t++) {
    pl->t[t].frag = (int8_t)(acc[t] != CH_NONE ? acc[t] : ch[t] == CH_O ? CH_C : ch[t]);
    if (acc[t] == CH_C)
      pl->t[t].acc_mma = true;
  }
  for (int32_t j = 0; j < bg->nops; j++) {
    pl->op[j].chain = in_chain[j];
    if (in_chain[j] && bg->ops[j].op == MIRS_OP_ACCUM && bg->ops[j].in[0] == m2->out &&
        pl->t[m2->out].uses == 1)
      pl->op[mm2].acc = bg->ops[j].out; /* E·V adds into its C fragments */
  }
  return true;
}

/* 8. The first register chain of the kernel, if any. */
static void plan_chain(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, bool mma) {
  memset(&pl->chain, 0, sizeof pl->chain);
  if (!mma || bg->nt > MIRS__PLAN_LOCAL || bg->nops > MIRS__PLAN_LOCAL)
    return;
  for (int32_t i = 0; i < bg->nops && !pl->chain.on; i++)
    (void)try_chain(pl, g, bg, i);
}

/* Lanes per reduced row for rows rows of length len on the kernel's
 * threads: a power of 2 up to 32, no more than the row is long, every row
 * still owned by a group while they fit, and at least min lanes (a group
 * then takes several rows in turn); 1 when the block is not whole warps. */
static int8_t tree_group(const mirs__plan *pl, int64_t rows, int64_t len, int64_t min) {
  if (pl->nthreads % 32 != 0 || pl->nthreads > 1024)
    return 1;
  int64_t grp = 1;
  while (grp * 2 <= 32 && (rows * grp * 2 <= pl->nthreads || grp < min) && grp * 2 <= len)
    grp *= 2;
  return (int8_t)grp;
}

int mirs__plan_xwarp(const mirs__plan *pl, int64_t rows, int64_t len, int grp) {
  if (!pl->xwarp || grp != 32 || rows < 1 || pl->nthreads % 32 != 0 || rows * 64 > pl->nthreads ||
      len < 32 * MIRS__XWARP_MIN_STEPS)
    return 1;
  return (int)(pl->nwarps / rows);
}

/* Block reductions (sum, rms_norm) as trees over lane groups.  rms_norm
 * and layer_norm always go through the tree (cuda.c emit_reduce_tree: a
 * row's sum of squares once, then its elements scaled), with at least 4
 * lanes a row when the rows outnumber the threads: each lane then reads 4
 * consecutive words of 8 rows a warp, and the shuffles stay 2 per row.
 * The element-wise form would sum the whole row again for every element
 * (len times the work: qknorm_attention's best, normalising a 256 x 64
 * tile of V each iteration, ran 20 times the model's time on an H200,
 * bench/RESULTS.md "Device check log"). */
static void plan_reductions(mirs__plan *pl, const mirs__bgraph *bg) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    pl->op[i].group = 1;
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind != MIRS__KIND_REDUCE && kind != MIRS__KIND_RMSNORM)
      continue;
    const mirs__shape *xs = &bg->t[op->in[0]].shape;
    int64_t len = kind == MIRS__KIND_REDUCE ? xs->d[op->dim] : xs->d[xs->ndim - 1];
    pl->op[i].group =
        tree_group(pl, mirs__shape_numel(xs) / len, len, kind == MIRS__KIND_RMSNORM ? 4 : 1);
  }
}

/* Words (4 bytes) of padding for the rows (of `last` words) of tile t
 * that a tf32 MMA reads element by element: an A operand (lanes read rows
 * gq = 0..7 at columns tq = 0..3) is conflict-free with a stride of 4 mod
 * 32 words, a B operand (rows tq, columns gq) with 8 mod 32; other tiles
 * stay dense. */
static int64_t tf32_pad(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t, int64_t last) {
  int64_t want = -1;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *c = &bg->ops[i];
    if (pl->op[i].mma != MIRS__MMA_TF32 || bg->t[t].shape.ndim < 2)
      continue;
    if (c->in[0] == t)
      want = 4;
    else if (c->in[1] == t && want < 0)
      want = 8;
  }
  return want < 0 ? 0 : ((want - last) % 32 + 32) % 32;
}

/* Stored rows of tile t: `rows`, or more when t is the A operand of an
 * MMA whose M is padded (its m_pad rows are read; the extra ones are
 * never written and only feed discarded output rows). */
static int32_t a_rows(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t, int32_t rows) {
  for (int32_t i = 0; i < bg->nops; i++)
    if (pl->op[i].mma != MIRS__MMA_NONE && bg->ops[i].in[0] == t && pl->op[i].m_pad > rows)
      rows = pl->op[i].m_pad;
  return rows;
}

/* Whether tile t is the B operand of an MMA_16 whose K is padded (its
 * rows past K must read as zeros). */
static bool b_operand_padded(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__shape *as = &bg->t[bg->ops[i].in[0]].shape;
    if (pl->op[i].mma == MIRS__MMA_16 && bg->ops[i].in[1] == t &&
        pl->op[i].k_pad > as->d[as->ndim - 1])
      return true;
  }
  return false;
}

/* 4. Layout of input tile t (op is its INPUT op). */
static void plan_input(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg,
                       const mirs__bop *op) {
  mirs__plan_tensor *pt = &pl->t[op->out];
  const mirs__shape *ts = &bg->t[op->out].shape, *ks = &g->t[op->src].shape;
  int es = es_of(g->t[op->src].dtype);
  int64_t last = ts->d[ts->ndim - 1], klast = ks->d[ks->ndim - 1];
  pt->input = true;
  pt->elsize = (int8_t)es;
  pt->invariant = op->fmap < 0 || bg->forloop == 1;
  pt->stride = (int32_t)last;
  pt->rows = (int32_t)(mirs__shape_numel(ts) / last);
  bool mma_operand = false;
  pt->rows = a_rows(pl, bg, op->out, pt->rows);
  int64_t width = last; /* columns an MMA reads per row (K padded for an A operand) */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *c = &bg->ops[i];
    if (pl->op[i].mma != MIRS__MMA_16)
      continue;
    if (c->in[0] == op->out || c->in[1] == op->out)
      mma_operand = true;
    if (c->in[0] == op->out && pl->op[i].k_pad > width)
      width = pl->op[i].k_pad;
    if (c->in[1] == op->out && pl->op[i].k_pad > pt->rows)
      pt->rows = pl->op[i].k_pad;
  }
  pt->zero = width > last || b_operand_padded(pl, bg, op->out);
  pt->stride = (int32_t)width;
  if (!pl->pad) {
    /* dense rows (codegen_smem_pad = 0) */
  } else if (mma_operand && (width * es) % 16 == 0 && ((width * es) / 16) % 2 == 0)
    pt->stride += 16 / es;
  else if (!mma_operand && (last * es) % 16 == 0)
    pt->stride += tf32_pad(pl, bg, op->out, last * es / 4) * 4 / es;
  pt->vec = (last * es) % 16 == 0 && (klast * es) % 16 == 0 &&
            mirs__codegen_storage_vec(g, op->src, es); /* (a view's strides too: views.c) */
  pt->stage_bytes = al16((int64_t)pt->rows * pt->stride * es);
}

/* Whether tile t is read after the forloop (by a post op or a store). */
static bool read_after_loop(const mirs__bgraph *bg, int32_t t) {
  for (int32_t j = 0; j < bg->nops; j++) {
    const mirs__bop *c = &bg->ops[j];
    mirs__op_kind kind = mirs__graph_ops[c->op].kind;
    bool post = kind == MIRS__KIND_OUTPUT || (kind != MIRS__KIND_ACCUM && bg->t[c->out].post);
    for (int a = 0; a < c->nin && a < 2 && post; a++)
      if (c->in[a] == t)
        return true;
  }
  return false;
}

/* Bytes [*start, *end) of stage buffers free after the forloop: walked
 * input tiles placed back to back that nothing reads after the loop (the
 * last wait of the pipeline leaves no copy in flight, and the loop ends at
 * a barrier).  Extends the current run with tile t at off, or starts a
 * new one; best_start and best_len keep the longest. */
static void dead_run(const mirs__bgraph *bg, const mirs__plan_tensor *pt, int32_t t, int64_t *start,
                     int64_t *end, int64_t *best_start, int64_t *best_len) {
  if (pt->invariant || read_after_loop(bg, t)) {
    *start = *end = -1;
    return;
  }
  if (*end != pt->off)
    *start = pt->off;
  *end = pt->off + pt->stage_bytes * pt->stages;
  if (*end - *start > *best_len) {
    *best_len = *end - *start;
    *best_start = *start;
  }
}

/* Bytes of the per-iteration exchange of one row max or sum of a split
 * strip: ks values per row of S (plan.h). */
static int64_t row_exchange_bytes(const mirs__plan *pl) {
  return al16((int64_t)pl->chain.ks * pl->op[pl->chain.mm1].m_pad * 4);
}

/* Whether the tile of op i (not an input) is first written after the
 * forloop and never read inside it: a post op's result, or an
 * accumulator kept in registers (or a chain's fragments) during the loop,
 * written to its tile only by its write-back. */
static bool written_after_loop(const mirs__plan *pl, const mirs__bgraph *bg, int32_t i) {
  const mirs__bop *op = &bg->ops[i];
  if (mirs__graph_ops[op->op].kind == MIRS__KIND_ACCUM)
    return !pl->t[op->out].acc_smem;
  return bg->t[op->out].post;
}

/* Extends the run [*start, *end) of tiles dead during the forloop with
 * [off, end), or starts a new one; best_start and best_len keep the
 * longest (as dead_run). */
static void loop_dead(int64_t off, int64_t end, int64_t *start, int64_t *run_end,
                      int64_t *best_start, int64_t *best_len) {
  if (*run_end != off)
    *start = off;
  *run_end = end;
  if (*run_end - *start > *best_len) {
    *best_len = *run_end - *start;
    *best_start = *start;
  }
}

/* Offsets of the split strips' per-iteration row exchanges (the tiles of
 * a chain's row max or sum, ks > 1), one after another from `at`: tiles
 * that are dead during the forloop (written_after_loop, and the
 * after-loop exchange at xoff when it has an area of its own), or, with
 * at < 0, new bytes after `total`.  Returns the new total.
 * Lifetime: an exchange is written (lanes tq = 0, after the warp's S),
 * read after the __syncthreads that follows, and rewritten only in the
 * next iteration, which begins after the loop body's closing barrier;
 * the loop's last body also ends at that barrier, so every read of an
 * exchange precedes the first write of a tile written after the loop
 * (accumulator write-backs, post ops, the after-loop exchange), and no
 * such tile is written before the loop or read inside it.  Two
 * exchanges of one iteration get distinct bytes: a warp may write the
 * second (the row sums) while another still reads the first (the row
 * maxes).  mirs__plan_check_smem holds a plan to this. */
static int64_t place_row_exchanges(mirs__plan *pl, const mirs__bgraph *bg, int64_t at,
                                   int64_t total) {
  int64_t off = at >= 0 ? at : total;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_OUTPUT || op->out < 0)
      continue;
    mirs__plan_tensor *pt = &pl->t[op->out];
    if (pt->frag != MIRS__FRAG_ROW || mirs__graph_ops[op->op].kind == MIRS__KIND_ACCUM)
      continue;
    pt->off = off;
    off += row_exchange_bytes(pl);
  }
  return at >= 0 ? total : off;
}

/* 4./5. Shared-memory offsets for `stages` buffers of walked tiles; returns the bytes. */
static int64_t place(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, int stages) {
  int64_t total = 0;
  int64_t run = -1, run_end = -1, dead = -1, dead_len = 0; /* stage buffers dead after the loop */
  int64_t drun = -1, drun_end = -1, lstart = -1, llen = 0; /* tiles dead during the loop */
  int64_t xrow = 0; /* bytes of the split strips' per-iteration row exchanges */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind == MIRS__KIND_OUTPUT)
      continue;
    int32_t t = op->out;
    mirs__plan_tensor *pt = &pl->t[t];
    if (kind == MIRS__KIND_INPUT) {
      pt->stages = (int8_t)(pt->invariant ? 1 : stages);
      pt->off = total;
      total += pt->stage_bytes * pt->stages;
      dead_run(bg, pt, t, &run, &run_end, &dead, &dead_len);
      continue;
    }
    run = run_end = -1;
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    pt->elsize = 4;
    bool t16 = loaded_transpose(bg, t) && mirs__plan_tile_dtype(g, bg, t) != MIRS_F32;
    if (t16)
      pt->elsize = 2;
    if (kind == MIRS__KIND_ACCUM && !pt->acc_mma && pt->frag == MIRS__FRAG_NONE &&
        (n + pl->nthreads - 1) / pl->nthreads > REG_ACC_MAX) {
      pt->acc_smem = true;
      pt->aoff = total;
      /* (accum_online keeps its running max after the running sums) */
      total += al16(n * 4) * (op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1);
    }
    /* accum_sum / accum_rms in registers: G lanes per element, reduced
     * by warp shuffles (a power of 2 <= 32, no more lanes than the
     * reduction is long, every element still owned by some group). */
    pt->tree = false;
    pt->group = 1;
    if ((op->op == MIRS_OP_ACCUM_SUM || op->op == MIRS_OP_ACCUM_RMS) && !pt->acc_smem &&
        pl->nthreads % 32 == 0 && pt->frag == MIRS__FRAG_NONE) {
      const mirs__shape *xs = &bg->t[op->in[0]].shape;
      int64_t len = op->op == MIRS_OP_ACCUM_SUM ? xs->d[op->dim] : xs->d[xs->ndim - 1];
      int64_t grp = tree_group(pl, n, len, 1);
      int64_t per = (n + pl->nthreads / grp - 1) / (pl->nthreads / grp);
      if (grp >= 2 && per <= REG_ACC_MAX) {
        pt->tree = true;
        pt->group = (int8_t)grp;
      }
    }
    /* A matmul whose fragments go into a register accumulator has no tile. */
    bool into_acc = op->op == MIRS_OP_MATMUL && pl->op[i].acc >= 0;
    /* (Nor does a value of the register chain: an accumulator's final
     * value does.) */
    bool in_regs = pt->frag != MIRS__FRAG_NONE && kind != MIRS__KIND_ACCUM;
    if (in_regs && pt->frag == MIRS__FRAG_ROW && pl->chain.ks > 1)
      xrow += row_exchange_bytes(pl); /* placed below (place_row_exchanges) */
    if (pt->next < 0 && !into_acc && !in_regs) {
      const mirs__shape *ts = &bg->t[t].shape;
      int64_t last = ts->ndim > 0 ? ts->d[ts->ndim - 1] : 1;
      pt->stride = (int32_t)last;
      pt->rows = a_rows(pl, bg, t, (int32_t)(n / last));
      /* Running sums in shared memory are written back in place only at
       * their dense stride: a tf32 pad there would double the tile (a
       * 128x256 accumulator: 128 KB more, over the limit). */
      if (!pl->pad) {
        /* dense rows (codegen_smem_pad = 0) */
      } else if (t16 && (last * 2) % 16 == 0 && ((last * 2) / 16) % 2 == 0)
        pt->stride += 8; /* ldmatrix rows in distinct 16-byte bank groups (as plan_input) */
      else if (!pt->acc_smem && !t16)
        pt->stride += tf32_pad(pl, bg, t, last);
      if (pt->acc_smem && pt->stride == last && (int64_t)pt->rows * last == n) {
        /* Written back in place: each thread turns its own running sums
         * into the final values (no chain), so they share storage. */
        pt->off = pt->aoff;
      } else {
        pt->off = total;
        total += al16((int64_t)pt->rows * pt->stride * pt->elsize);
        if (written_after_loop(pl, bg, i))
          loop_dead(pt->off, total, &drun, &drun_end, &lstart, &llen);
        else
          drun = drun_end = -1;
      }
    } else {
      drun = drun_end = -1;
    }
  }
  /* The cross-warp reduction scratch: one float a warp, after the rest
   * (used in every phase, between barriers of its own). */
  pl->xred = -1;
  for (int32_t i = 0; i < bg->nops && pl->xred < 0; i++) {
    const mirs__bop *op = &bg->ops[i];
    const mirs__shape *xs = op->nin > 0 ? &bg->t[op->in[0]].shape : NULL;
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    bool x = false;
    if ((kind == MIRS__KIND_REDUCE || kind == MIRS__KIND_RMSNORM) && pl->op[i].group == 32) {
      int64_t len = kind == MIRS__KIND_REDUCE ? xs->d[op->dim] : xs->d[xs->ndim - 1];
      x = mirs__plan_xwarp(pl, mirs__shape_numel(xs) / len, len, 32) > 1;
    } else if (kind == MIRS__KIND_ACCUM && pl->t[op->out].tree && pl->t[op->out].group == 32) {
      int64_t len = op->op == MIRS_OP_ACCUM_SUM ? xs->d[op->dim] : xs->d[xs->ndim - 1];
      x = mirs__plan_xwarp(pl, mirs__shape_numel(&bg->t[op->out].shape), len, 32) > 1;
    }
    if (x) {
      pl->xred = total;
      total += al16((int64_t)pl->nwarps * 4);
    }
  }
  /* The split strips' after-loop exchange (chain.xoff) reuses stage
   * buffers that are dead by then, when they are large enough. */
  if (pl->chain.on && pl->chain.xbytes > 0 && dead_len >= pl->chain.xbytes) {
    pl->chain.xoff = dead;
  } else if (pl->chain.on && pl->chain.xbytes > 0) {
    pl->chain.xoff = total;
    total += pl->chain.xbytes;
    loop_dead(pl->chain.xoff, total, &drun, &drun_end, &lstart, &llen);
  }
  if (xrow > 0)
    total = place_row_exchanges(pl, bg, xrow <= llen ? lstart : -1, total);
  return total;
}

/* Phases a shared-memory range is in use (mirs__plan_check_smem). */
enum { PH_PRE = 1, PH_LOOP = 2, PH_POST = 4, PH_ALL = 7 };

typedef struct smem_range {
  int64_t lo, hi;
  int phases;
  int32_t t; /* the tensor, or -1 */
} smem_range;

bool mirs__plan_check_smem(const mirs__plan *pl, const mirs__bgraph *bg, char *why, size_t n) {
  smem_range r[2 * MIRS__PLAN_LOCAL + 2];
  int nr = 0;
  if (bg->nops > MIRS__PLAN_LOCAL) {
    snprintf(why, n, "not checked: more than %d block ops", (int)MIRS__PLAN_LOCAL);
    return false;
  }
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind == MIRS__KIND_OUTPUT || op->out < 0)
      continue;
    const mirs__plan_tensor *pt = &pl->t[op->out];
    if (pt->acc_smem) /* running sums: read and written in every phase */
      r[nr++] = (smem_range){pt->aoff,
                             pt->aoff + al16(mirs__shape_numel(&bg->t[op->out].shape) * 4) *
                                            (op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1),
                             PH_ALL, op->out};
    if (pt->off < 0 || (pt->acc_smem && pt->off == pt->aoff))
      continue;
    if (pt->input) {
      /* (a walked tile no post op or store reads is dead after the loop) */
      int ph = pt->invariant || read_after_loop(bg, op->out) ? PH_ALL : PH_PRE | PH_LOOP;
      r[nr++] = (smem_range){pt->off, pt->off + pt->stage_bytes * pt->stages, ph, op->out};
    } else if (pt->frag == MIRS__FRAG_ROW && kind != MIRS__KIND_ACCUM) {
      r[nr++] = (smem_range){pt->off, pt->off + row_exchange_bytes(pl), PH_LOOP, op->out};
    } else {
      r[nr++] = (smem_range){pt->off, pt->off + al16((int64_t)pt->rows * pt->stride * pt->elsize),
                             written_after_loop(pl, bg, i) ? PH_POST : PH_ALL, op->out};
    }
  }
  if (pl->chain.on && pl->chain.xbytes > 0)
    r[nr++] = (smem_range){pl->chain.xoff, pl->chain.xoff + pl->chain.xbytes, PH_POST, -1};
  if (pl->xred >= 0) /* (its own range: checked like the exchange) */
    r[nr++] = (smem_range){pl->xred, pl->xred + al16((int64_t)pl->nwarps * 4), PH_ALL, -2};
  for (int a = 0; a < nr; a++)
    for (int b = a + 1; b < nr; b++) {
      if (!(r[a].phases & r[b].phases) || r[a].hi <= r[b].lo || r[b].hi <= r[a].lo)
        continue;
      snprintf(why, n,
               "shared memory of %s [%" PRId64 ", %" PRId64 ") overlaps %s [%" PRId64 ", %" PRId64
               ") while both are in use",
               r[a].t >= 0    ? bg->t[r[a].t].name
               : r[a].t == -2 ? "the cross-warp reduction scratch"
                              : "the after-loop exchange",
               r[a].lo, r[a].hi,
               r[b].t >= 0    ? bg->t[r[b].t].name
               : r[b].t == -2 ? "the cross-warp reduction scratch"
                              : "the after-loop exchange",
               r[b].lo, r[b].hi);
      return false;
    }
  return true;
}

/* Registers the register chain keeps live at its peak beside the
 * accumulators and row values (counted with their ops), from what
 * emit_chain (cuda.c) holds in each of its two phases and what ptxas 13.0
 * makes of it (bench/RESULTS.md, "Register estimates against ptxas":
 * every chained plan of the attention bests at a quarter to twice their
 * forloop and the tests/codegen chain graphs):
 *  S = A·B: the strip's 4 * ntl C registers of S (ntl 8-column tiles per
 *    warp: the key tile over 8 and the strip's ks warps) and the A
 *    fragment of a k step (4).  Its B fragments, on ldmatrix.x4.trans:
 *    up to 8 tiles per warp ptxas keeps one ldmatrix.x4 (4) in flight;
 *    above 8 it issues a whole k step's ntl / 2 of them together ahead
 *    of the MMAs, and some of the next step's A and B (2 * ntl + 8: gqa's
 *    128-key tiles, 142 registers on sm_80).  A tf32 S reads its B
 *    element by element, 2 per tile and step, all issued together;
 *  E·V: E's 4 * ntl registers (the row sums read them all), the B values
 *    of a k step (2 per output tile, tf32 or ldmatrix.x4.trans alike),
 *    the packed A fragment of a 16-bit step (4; tf32 rounds E in place)
 *    and, when E·V does not add into an accumulator (online softmax),
 *    its own C tiles (4 per output tile);
 *  a row max or sum: r[2] each;
 *  key chunks: the chunk loop's counter and addresses (4; gqa at
 *    forloop=16 took 80 registers on sm_80 against 76 without them), and
 *    4 more with a causal mask in the chain.
 * Counting a whole k step's B fragments at every width (the estimate
 * before) was up to 20 over ptxas at 8 tiles per warp and fewer. */
static int64_t chain_live_regs(const mirs__plan *pl, const mirs__bgraph *bg) {
  const mirs__bop *m1 = &bg->ops[pl->chain.mm1], *m2 = &bg->ops[pl->chain.mm2];
  const mirs__shape *ss = &bg->t[m1->out].shape, *os = &bg->t[m2->out].shape;
  int64_t ntl = ss->d[ss->ndim - 1] / 8 / pl->chain.ks / pl->chain.nc,
          nt2 = os->d[os->ndim - 1] / 8;
  int64_t sb = pl->op[pl->chain.mm1].mma != MIRS__MMA_16 ? 2 * ntl : ntl > 8 ? 2 * ntl + 8 : 4;
  int64_t s_phase = 4 * ntl + 4 + sb;
  int64_t ev_phase = 4 * ntl + 2 * nt2 + (pl->chain.mma2 == MIRS__MMA_16 ? 4 : 0) +
                     (pl->op[pl->chain.mm2].acc < 0 ? 4 * nt2 : 0);
  int64_t c = s_phase > ev_phase ? s_phase : ev_phase;
  for (int32_t i = pl->chain.mm1 + 1; i < bg->nops; i++)
    if (pl->op[i].chain && mirs__graph_ops[bg->ops[i].op].kind == MIRS__KIND_REDUCE)
      c += 2; /* a row max or sum: r[2] */
  if (pl->chain.nc > 1)
    c += 4; /* the key-chunk loop (not unrolled): its counter, S's and V's chunk addresses */
  for (int32_t i = pl->chain.mm1 + 1; i < bg->nops && pl->chain.nc > 1; i++)
    if (pl->op[i].chain && bg->ops[i].op == MIRS_OP_CAUSAL_MASK)
      c += 4; /* the chunk's key columns against the rows (causal_attention at forloop=8
               * in 2 chunks: 96 registers on sm_90 against 92 without this) */
  return c;
}

/* Registers a plan without the register chain holds across its forloop
 * for the row trees of the iteration (emit_reduce_tree, cuda.c): lane sub
 * of row q reads its J = ceil(len / G) elements at p = sub + G ((m + q)
 * mod J), m < J, the rotation that keeps the rows a warp reads on
 * different banks.  nvcc unrolls the m loop whole up to J = 64 (at 128,
 * tests/codegen/chain_nochunks and unchained_online, by 16: the offsets
 * are then computed in the loop and nothing is counted), and the offsets
 * depend on the thread, not on the iteration: ptxas computes them before
 * the forloop and holds them, the J rotated column offsets of each row
 * pass (shared by the trees of the same lanes and rows) and each tree's
 * J shared-memory addresses.
 * Taking the rotation out of the generated code (p = sub + G m, every
 * other line the same) took the default gqa_safe search's online-softmax
 * kernels with two J = 16 trees from 124 registers to 80 on sm_80, the
 * b13 mha_safe split kernels (J = 8) from 108 to 78 and
 * causal_attention_safe's at 256 keys a tile (J = 64) from 233 to 126
 * on sm_90 (bench/RESULTS.md, "Register estimates of online-softmax
 * kernels").  ptxas does not always hold all of them (two of three
 * kernels measured at J = 32 held none: the estimate is up to 88 over
 * there, where shared memory already limits the blocks an SM holds),
 * and an estimate under ptxas is the dangerous direction.  Per tree:
 * its row passes times J; once more the most of those when two or more
 * trees share the rotated offsets. */
static int64_t tree_offsets(const mirs__plan *pl, const mirs__bgraph *bg) {
  int64_t sum = 0, most = 0;
  int ntrees = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    bool rms = mirs__graph_ops[op->op].kind == MIRS__KIND_RMSNORM;
    if (op->out < 0 || bg->t[op->out].post || pl->op[i].chain || pl->op[i].mma != MIRS__MMA_NONE ||
        !(pl->op[i].group > 1 || rms))
      continue;
    const mirs__shape *xs = &bg->t[op->in[0]].shape;
    int dim = rms ? xs->ndim - 1 : op->dim;
    int64_t g = pl->op[i].group > 0 ? pl->op[i].group : 1;
    int64_t len = xs->d[dim], j = (len + g - 1) / g, groups = pl->nthreads / g;
    if (groups < 1 || j < 2 || j > 64)
      continue;
    int64_t per = (mirs__shape_numel(xs) / len + groups - 1) / groups; /* row passes */
    sum += per * j;
    most = per * j > most ? per * j : most;
    ntrees++;
  }
  return sum + (ntrees > 1 ? most : 0);
}

/* Registers a plan without the register chain keeps live across its
 * forloop beside the base, the accumulators and the largest product's
 * fragments: per-thread shared-memory offsets that depend on the thread
 * and not on the iteration, which ptxas 13.0 computes once before the
 * loop and holds (cuobjdump -sass / nvdisasm -plr at the peak of
 * examples/best/gqa_safe at forloop=16, causal_attention at 128 and
 * tests/codegen/chain_nochunks; bench/RESULTS.md, "Register estimates of
 * unchained plans"):
 *  a tf32 matmul (scalar loads): each of a warp's tiles its A and B
 *    addresses (2; unrolled over the tiles, cuda.c emit_mma);
 *  an accumulator in registers, thread-strided (element tid + r * NT):
 *    per element, the offset of each operand it reads (unrolled over r:
 *    the value's and, for accum_online, the row max's);
 *  a 16-bit matmul in chunks with its k loop unrolled by two
 *    (MIRS_UNROLL2): the second step's A fragment (4);
 *  an input tile walked by the loop in 16-byte chunks that the threads
 *    do not cover in whole rows (cuda.c emit_load's general layout: the
 *    row of chunk tid + j * NT divides by the chunks per row): its
 *    shared-memory offset of each pass (chain_nochunks' V, 3 chunks a
 *    row over 64 threads: 24 passes).
 * Chained plans keep none of these in the loop (their products stay in
 * registers, their accumulators are C fragments and row values) and are
 * counted by chain_live_regs. */
static int64_t unchained_live_regs(const mirs__plan *pl, const mirs__bgraph *bg) {
  int64_t c = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    const mirs__plan_tensor *pt = op->out >= 0 ? &pl->t[op->out] : NULL;
    if (pl->op[i].mma == MIRS__MMA_TF32)
      c += 2 * ((mirs__plan_mma_tiles(pl, bg, i) + pl->nwarps - 1) / pl->nwarps);
    if (pl->op[i].mma == MIRS__MMA_16 && pl->op[i].acc < 0 && !pl->op[i].swap &&
        (mirs__plan_mma_tiles(pl, bg, i) + pl->nwarps - 1) / pl->nwarps > MIRS__PLAN_MMA_CHUNK &&
        pl->op[i].k_pad >= 32)
      c += 4;
    if (pt && pt->input && pt->vec && !pt->invariant) {
      const mirs__shape *ts = &bg->t[op->out].shape;
      int64_t cpr = ts->d[ts->ndim - 1] * pt->elsize / 16,
              rows = mirs__shape_numel(ts) / ts->d[ts->ndim - 1];
      int nonunit = 0;
      for (int d = 0; d + 1 < ts->ndim; d++)
        nonunit += ts->d[d] > 1;
      if (nonunit > 1 || pl->nthreads % cpr != 0) {
        /* (a few passes, unrolled: each its global address too, 2 more:
         * rmsnorm_linear's W at 6 chunks a row, 3 passes over 128
         * threads, took 56 registers against an estimate of 50) */
        int64_t passes = (rows * cpr + pl->nthreads - 1) / pl->nthreads;
        c += passes <= 4 ? 3 * passes : passes;
      }
    }
    if (!pt || mirs__graph_ops[op->op].kind != MIRS__KIND_ACCUM || pt->acc_smem || pt->acc_mma ||
        pt->tree)
      continue;
    int64_t n = mirs__shape_numel(&bg->t[op->out].shape);
    c += (n + pl->nthreads - 1) / pl->nthreads * op->nin;
  }
  return c + tree_offsets(pl, bg);
}

/* Registers per thread, estimated: a base for indices and addresses, the
 * accumulators, the MMA fragments in use. */
static int32_t estimate_regs(const mirs__plan *pl, const mirs__bgraph *bg) {
  int64_t regs = 24;
  bool any_mma = false, any_matmul = false;
  int64_t live_c = 4; /* C registers of the largest product not accumulated */
  /* A row tree of rms_norm / layer_norm (emit_reduce_tree) where a lane
   * group takes rows in turn: the lane's elements of a row, its loop
   * unrolled and the loads issued ahead (up to 16: qknorm_attention's
   * split-K kernel 1, 16 a lane of V's rows, took 114 registers on sm_90
   * against 92 with the element-wise form; a tree of one row a group,
   * ntrans's, keeps its loop rolled: 46 registers).
   * A kernel without a matmul whose accumulators stay in registers (split-K's
   * combining kernel): its epilogue, unrolled over the thread's elements,
   * holds an output address of each (2, up to 16: gqa's, 9 elements, took
   * 64 on sm_80 against an estimate of 46 without it), computed before
   * the forloop and held across it like unchained_live_regs' offsets; a
   * kernel without a loop (ntrans at forloop=1: 46 registers against 79
   * with them) computes them where it stores. */
  int64_t ahead = 0, epilogue = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    const mirs__plan_tensor *pt = op->out >= 0 ? &pl->t[op->out] : NULL;
    any_matmul |= mirs__graph_ops[op->op].kind == MIRS__KIND_MATMUL;
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_RMSNORM) {
      const mirs__shape *xs = &bg->t[op->in[0]].shape;
      int64_t len = xs->d[xs->ndim - 1], g = pl->op[i].group > 0 ? pl->op[i].group : 1;
      int64_t rows = mirs__shape_numel(xs) / len, j = (len + g - 1) / g;
      if (rows > pl->nthreads / g && j > ahead)
        ahead = j < 16 ? j : 16;
    }
    if (pl->op[i].mma != MIRS__MMA_NONE) {
      any_mma = true;
      if (pl->op[i].acc < 0 && pl->op[i].mma != MIRS__MMA_TF32) {
        /* A warp's tiles, chunked (cuda.c emit_mma16_rows). */
        int64_t tiles = mirs__plan_mma_tiles(pl, bg, i);
        int64_t per = (tiles + pl->nwarps - 1) / pl->nwarps;
        if (per > MIRS__PLAN_MMA_CHUNK)
          per = MIRS__PLAN_MMA_CHUNK;
        if (4 * per > live_c)
          live_c = 4 * per;
      }
    }
    if (!pt)
      continue;
    if (pt->input)
      regs += 2; /* a per-thread global address */
    if (mirs__graph_ops[op->op].kind != MIRS__KIND_ACCUM || pt->acc_smem)
      continue;
    int64_t n = mirs__shape_numel(&bg->t[op->out].shape);
    if (pt->acc_mma) {
      const mirs__shape *os = &bg->t[op->out].shape;
      int r = os->ndim;
      /* (a chain accumulator: of E·V, maybe through elementwise ops) */
      int64_t tiles = mirs__plan_mma_tiles(pl, bg, bg->t[op->in[0]].producer);
      if (pt->frag != MIRS__FRAG_NONE) /* the strip's tiles (partial sums when split) */
        regs += 4 * (os->d[r - 1] / 8);
      else
        regs += 4 * ((tiles + pl->nwarps - 1) / pl->nwarps);
    } else if (pt->frag != MIRS__FRAG_NONE) {
      /* a row accumulator of the chain: accr[2] (accum_online: and run[2]) */
      regs += 2 * (op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1);
    } else { /* (accum_online: and its running max) */
      int64_t per = (n + pl->nthreads - 1) / pl->nthreads;
      regs += per * (op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1);
      if (!pt->tree && bg->forloop > 1)
        epilogue += 2 * per;
    }
  }
  regs += ahead + (any_matmul ? 0 : epilogue < 16 ? epilogue : 16);
  /* A kernel without a matmul walking inputs too small for 16-byte
   * copies (a split-K combine's f32 row sums, [1, 2, 1] a block): each
   * such load keeps its 64-bit address and its guard across the loop
   * (the finer combines of mha and mha_safe: 40 and 48 registers on
   * sm_80 against estimates of 36 and 42 without it). */
  if (!any_matmul && bg->forloop > 1)
    for (int32_t t = 0; t < bg->nt; t++)
      if (pl->t[t].input && !pl->t[t].invariant && !pl->t[t].vec)
        regs += 3;
  if (pl->chain.on) {
    int64_t c = chain_live_regs(pl, bg);
    if (c > live_c)
      live_c = c;
  } else if (bg->forloop > 1) {
    regs += unchained_live_regs(pl, bg);
  }
  /* C tiles, A and B fragments, ldmatrix addresses (a chain's fragments
   * are counted with its phases) */
  if (any_mma)
    regs += live_c + (pl->chain.on ? 0 : 6 + 4);
  return (int32_t)(regs > 255 ? 255 : regs);
}

/* Key chunks for a register-heavy whole strip: a linear chain (plan.h
 * chain.chunkable) whose strip fits REG_ACC_MAX C registers whole, but
 * whose estimate exceeds REG_CHUNK_ABOVE, runs its keys in chunks of
 * MIRS__PLAN_MMA_CHUNK tiles instead (the estimate recomputed).  ptxas
 * 13.0 squeezes such kernels towards 128 registers (4 blocks of 128
 * threads) and spilled there: causal_attention at forloop=8 (16 tiles
 * of S a warp, estimate 156) took 128 registers and 8 bytes of spill
 * stores on sm_90; in 2 chunks of 8 tiles, 94 / 96 registers (sm_80 /
 * sm_90) and none.  The whole strips at or under the threshold compiled
 * without a spill: gqa (144: 142 / 132 registers) and mqa (148: 127 /
 * 137) at their published shapes (bench/RESULTS.md, "Register
 * estimates of unchained plans"). */
#define REG_CHUNK_ABOVE 152
static void chunk_by_regs(mirs__plan *pl, const mirs__bgraph *bg) {
  if (!pl->chain.on || pl->chain.nc != 1 || !pl->chain.chunkable || pl->regs <= REG_CHUNK_ABOVE)
    return;
  const mirs__shape *ss = &bg->t[bg->ops[pl->chain.mm1].out].shape;
  int64_t ntl = ss->d[ss->ndim - 1] / 8 / pl->chain.ks;
  if (ntl <= MIRS__PLAN_MMA_CHUNK || ntl % MIRS__PLAN_MMA_CHUNK != 0)
    return;
  pl->chain.nc = (int32_t)(ntl / MIRS__PLAN_MMA_CHUNK);
  pl->regs = estimate_regs(pl, bg);
}

/* Tile-skipping zero analysis: what a loop-phase value is in an iteration
 * whose mask tile is entirely masked. */
enum { SK_ANY, SK_ZERO, SK_NEGINF };

/* Whether causal_mask op i of bg has the frame of pl->skip (columns walked
 * by the forloop, rows fixed per block); fills the frame when `set`. */
static bool skip_frame(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, int32_t i,
                       bool set) {
  const mirs__bop *op = &bg->ops[i];
  int r = bg->t[op->in[0]].shape.ndim;
  mirs__dim_origin ro, co;
  if (bg->t[op->out].post || r < 2 || !mirs__sched_dim_origin(g, bg, op->in[0], r - 2, &ro) ||
      !mirs__sched_dim_origin(g, bg, op->in[0], r - 1, &co) || ro.forloop || !co.forloop ||
      co.grid >= 0)
    return false;
  mirs__plan_skip k = {true, i, ro.grid, ro.unit, co.unit, co.extent - ro.extent};
  if (set)
    pl->skip = k;
  return pl->skip.row_grid == k.row_grid && pl->skip.rows == k.rows &&
         pl->skip.cols == k.cols && pl->skip.diag == k.diag;
}

/* The value of op (loop phase) in a fully masked iteration, from its
 * operands' (sk). */
static int skip_value(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, int32_t i,
                      const int8_t *sk) {
  const mirs__bop *op = &bg->ops[i];
  int x = sk[op->in[0]], y = op->nin > 1 ? sk[op->in[1]] : SK_ANY;
  switch (op->op) {
  case MIRS_OP_CAUSAL_MASK:
    return skip_frame(pl, g, bg, i, false) ? SK_NEGINF : x == SK_NEGINF ? SK_NEGINF : SK_ANY;
  case MIRS_OP_EXP: /* exp(-inf) = 0 */
    return x == SK_NEGINF ? SK_ZERO : SK_ANY;
  case MIRS_OP_SQUARE: /* functions with f(0) = 0 */
  case MIRS_OP_SQRT:
  case MIRS_OP_SILU:
  case MIRS_OP_GELU:
  case MIRS_OP_RELU:
  case MIRS_OP_ABS:
    return x == SK_ZERO ? SK_ZERO : SK_ANY;
  case MIRS_OP_SUM:
    return x;
  case MIRS_OP_MAX: /* of -inf only: -inf */
    return x == SK_NEGINF ? SK_NEGINF : SK_ANY;
  case MIRS_OP_ADD:
    if (x == SK_NEGINF || y == SK_NEGINF)
      return SK_NEGINF;
    return x == SK_ZERO && y == SK_ZERO ? SK_ZERO : SK_ANY;
  case MIRS_OP_SUB: /* -inf - y = -inf, y = -inf included (interp.c's convention) */
    if (x == SK_NEGINF)
      return SK_NEGINF;
    return x == SK_ZERO && y == SK_ZERO ? SK_ZERO : SK_ANY;
  case MIRS_OP_MUL:
  case MIRS_OP_MATMUL: /* 0 times a finite value (not -inf: NaN) */
    return (x == SK_ZERO && y != SK_NEGINF) || (y == SK_ZERO && x != SK_NEGINF) ? SK_ZERO
                                                                               : SK_ANY;
  default:
    return SK_ANY;
  }
}

/* 7. Tile skipping: the frame of the first loop-phase causal_mask whose
 * columns the forloop walks, kept when every accumulator adds 0 in an
 * iteration that mask empties; then pl->live. */
static void plan_skip(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg) {
  pl->live = 1;
  memset(&pl->skip, 0, sizeof pl->skip);
  if (bg->forloop < 2 || bg->nt > MIRS__PLAN_LOCAL)
    return;
  for (int32_t i = 0; i < bg->nops && !pl->skip.on; i++)
    if (bg->ops[i].op == MIRS_OP_CAUSAL_MASK)
      (void)skip_frame(pl, g, bg, i, true);
  if (!pl->skip.on)
    return;
  int8_t sk[MIRS__PLAN_LOCAL];
  bool ok = true, any_acc = false;
  for (int32_t i = 0; i < bg->nops && ok; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind == MIRS__KIND_INPUT)
      sk[op->out] = SK_ANY;
    else if (kind == MIRS__KIND_ACCUM) {
      /* Unchanged by the iteration: a sum of 0, a max with -inf, an online
       * step adding 0 under a shift of -inf (the running max stays); a
       * running min never (only +inf leaves it, which no mask makes). */
      int x = sk[op->in[0]], y = op->nin > 1 ? sk[op->in[1]] : SK_ANY;
      ok = op->op == MIRS_OP_ACCUM_MIN      ? false
           : op->op == MIRS_OP_ACCUM_MAX    ? x == SK_NEGINF
           : op->op == MIRS_OP_ACCUM_ONLINE ? x == SK_ZERO && y == SK_NEGINF
                                            : x == SK_ZERO;
      any_acc = true;
    } else if (kind != MIRS__KIND_OUTPUT && !bg->t[op->out].post)
      sk[op->out] = (int8_t)skip_value(pl, g, bg, i, sk);
  }
  if (!ok || !any_acc) {
    memset(&pl->skip, 0, sizeof pl->skip);
    return;
  }
  int64_t G = pl->skip.row_grid >= 0 ? bg->grid[pl->skip.row_grid] : 1, sum = 0;
  for (int64_t rb = 0; rb < G; rb++) {
    int64_t b[MIRS__GRID] = {0, 0, 0};
    if (pl->skip.row_grid >= 0)
      b[pl->skip.row_grid] = rb;
    sum += mirs__plan_fend(pl, bg, b);
  }
  pl->live = (double)sum / ((double)G * (double)bg->forloop);
}

int64_t mirs__plan_fend(const mirs__plan *pl, const mirs__bgraph *bg, const int64_t b[MIRS__GRID]) {
  if (!pl->skip.on)
    return bg->forloop;
  int64_t row0 = pl->skip.row_grid >= 0 ? b[pl->skip.row_grid] * pl->skip.rows : 0;
  int64_t last = row0 + pl->skip.rows - 1 + pl->skip.diag; /* last kept column of the block */
  int64_t fend = last < 0 ? 1 : last / pl->skip.cols + 1;
  return fend < 1 ? 1 : fend > bg->forloop ? bg->forloop : fend;
}

/* Sector factor of input tile pt's loads (views.c: 32-byte sectors moved
 * per useful byte by the walk emit_load generates; 1 when coalesced). */
static double load_sectors(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op,
                           const mirs__plan_tensor *pt) {
  return mirs__codegen_tile_sectors(g, op->src, &bg->t[op->out].shape, pt->elsize, pt->vec, false);
}

/* Global traffic, bytes in flight and the infeasibility checks. */
static void plan_totals(mirs__plan *pl, const mirs_graph *g, const mirs__kop *kop,
                        int64_t smem_limit) {
  const mirs__bgraph *bg = kop->bg;
  double F = (bg->forloop > 0 ? bg->forloop : 1) * pl->live, B = (double)pl->blocks;
  int32_t nout = 0;
  double once = 0; /* bytes in flight for loop-invariant tiles (all issued at once) */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (op->op == MIRS_OP_INPUT) {
      const mirs__plan_tensor *pt = &pl->t[op->out];
      double tile = (double)mirs__shape_numel(&bg->t[op->out].shape) * pt->elsize;
      pl->bytes += tile * (pt->invariant ? 1.0 : F) * B * load_sectors(g, bg, op, pt);
      double scalar = (double)pl->nthreads * SCALAR_INFLIGHT * pt->elsize;
      if (!pt->invariant) {
        pl->stage_bytes += tile;
        double fl = pt->vec ? tile * (pl->stages > 1 ? pl->stages - 1 : 1) : tile;
        pl->inflight += pt->vec ? fl : (fl < scalar ? fl : scalar);
      } else {
        once += pt->vec ? tile : (tile < scalar ? tile : scalar);
      }
    } else if (op->op == MIRS_OP_OUTPUT) {
      int32_t dst = nout < kop->nout ? kop->out[nout] : op->dst;
      nout++;
      const mirs__shape *ts = &bg->t[op->in[0]].shape;
      double tile = (double)mirs__shape_numel(ts);
      int es = dst >= 0 ? es_of(g->t[dst].dtype) : 4;
      double sectors = dst >= 0 ? mirs__codegen_tile_sectors(g, dst, ts, es, false, true) : 1.0;
      pl->bytes += tile * es * B * sectors;
    }
  }
  if (pl->inflight == 0)
    pl->inflight = once;
  char dims[96];
  for (int32_t t = 0; t < bg->nt && pl->feasible; t++) {
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    if (n >= ((int64_t)1 << 31)) {
      pl->feasible = false;
      snprintf(pl->reason, sizeof pl->reason,
               "tile %s%s has %" PRId64 " elements: tiles over 2^31 elements are not supported "
               "(32-bit index math inside a block)",
               bg->t[t].name, mirs__shape_str(&bg->t[t].shape, dims, sizeof dims), n);
    }
  }
  if (pl->feasible && pl->smem > smem_limit) {
    pl->feasible = false;
    snprintf(pl->reason, sizeof pl->reason,
             "shared memory %" PRId64 " bytes per block exceeds the %" PRId64 "-byte limit",
             pl->smem, smem_limit);
  }
  if (pl->feasible && (pl->nthreads < 1 || pl->nthreads > 1024)) {
    pl->feasible = false;
    snprintf(pl->reason, sizeof pl->reason, "%d threads per block (CUDA allows 1 to 1024)",
             (int)pl->nthreads);
  }
}

mirs_status mirs__plan_build(mirs_context *ctx, const mirs_graph *g, int32_t ki,
                             int64_t smem_limit, bool mma, mirs__plan *pl) {
  const mirs__kop *kop = &g->ops[ki];
  const mirs__bgraph *bg = kop->bg;
  memset(pl, 0, offsetof(mirs__plan, local_t));
  pl->nt = bg->nt;
  pl->nops = bg->nops;
  pl->t = pl->local_t;
  pl->op = pl->local_op;
  if (bg->nt > MIRS__PLAN_LOCAL || bg->nops > MIRS__PLAN_LOCAL) {
    pl->t = mirs__core_calloc(ctx, (size_t)bg->nt + 1, sizeof *pl->t);
    pl->op = mirs__core_calloc(ctx, (size_t)bg->nops + 1, sizeof *pl->op);
    pl->ctx = ctx;
    if (!pl->t || !pl->op) {
      mirs__plan_free(pl);
      return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
    }
  }
  memset(pl->t, 0, sizeof *pl->t * (size_t)bg->nt);
  memset(pl->op, 0, sizeof *pl->op * (size_t)bg->nops);
  int64_t nth = 1, blocks = 1;
  for (int i = 0; i < MIRS__GRID; i++) {
    nth *= bg->block[i] > 0 ? bg->block[i] : 1;
    blocks *= bg->grid[i] > 0 ? bg->grid[i] : 1;
  }
  pl->nthreads = (int32_t)(nth > 4096 ? 4096 : nth);
  pl->nwarps = (pl->nthreads + 31) / 32;
  pl->blocks = blocks;
  pl->feasible = true;
  for (int32_t t = 0; t < bg->nt; t++) {
    pl->t[t].next = -1;
    pl->t[t].off = -1;
    pl->t[t].aoff = -1;
  }
  pl->pad = !ctx || ctx->opt.codegen_smem_pad;
  pl->xwarp = !ctx || ctx->opt.codegen_xwarp;
  pl->xred = -1;
  plan_chains(pl, bg);
  plan_mma(pl, g, bg, mma);
  plan_chain(pl, g, bg, mma && (!ctx || ctx->opt.codegen_chain));
  plan_reductions(pl, bg);
  bool walked = false;
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_INPUT) {
      plan_input(pl, g, bg, &bg->ops[i]);
      walked = walked || !pl->t[bg->ops[i].out].invariant;
    }
  if (mma && ctx && ctx->opt.codegen_wgmma) /* 2b. Hopper: wgmma where the tiles allow */
    mirs__hopper_plan(pl, g, bg);
  /* Enough stages that S - 1 of them in flight reach INFLIGHT_TARGET
   * bytes (at least 2, at most MIRS__PLAN_MAX_STAGES and F). */
  int64_t stage = 0;
  for (int32_t t = 0; t < bg->nt; t++)
    if (pl->t[t].input && !pl->t[t].invariant)
      stage += pl->t[t].stage_bytes;
  /* Element loads are synchronous (a thread waits for each before it
   * stores it): stage buffers would only cost shared memory. */
  bool vec_walked = false;
  for (int32_t t = 0; t < bg->nt; t++)
    vec_walked = vec_walked || (pl->t[t].input && !pl->t[t].invariant && pl->t[t].vec);
  int stages = 1;
  if (walked && stage > 0 && vec_walked) {
    int64_t want = 1 + (INFLIGHT_TARGET + stage - 1) / stage;
    stages = (int)(want < 2 ? 2 : want > MIRS__PLAN_MAX_STAGES ? MIRS__PLAN_MAX_STAGES : want);
    if (stages > bg->forloop)
      stages = bg->forloop;
  }
  for (;;) {
    for (int32_t t = 0; t < bg->nt; t++) {
      pl->t[t].acc_smem = false;
      pl->t[t].aoff = -1;
      pl->t[t].off = -1;
    }
    pl->smem = place(pl, g, bg, stages);
    if (pl->smem <= smem_limit || stages == 1)
      break;
    stages--;
  }
  pl->stages = stages;
  pl->pipelined = stages >= 2 && vec_walked;
  pl->regs = estimate_regs(pl, bg);
  chunk_by_regs(pl, bg);
  plan_skip(pl, g, bg);
  plan_totals(pl, g, kop, smem_limit);
  mirs__plan_smem_traffic(pl, g, bg);
  return MIRS_OK;
}

void mirs__plan_free(mirs__plan *p) {
  if (!p || !p->ctx)
    return;
  mirs__core_free(p->ctx, p->t);
  mirs__core_free(p->ctx, p->op);
  p->ctx = NULL;
  p->t = NULL;
  p->op = NULL;
}

/* ---------------------------------------------------------------- split-K pairs */

/* Write a reason into why (when given) and return false. */
static bool pair_fail(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool pair_fail(char *why, size_t n, const char *fmt, ...) {
  if (why && n > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* The OUTPUT op of k1's block graph that writes kernel tensor t, or NULL. */
static const mirs__bop *writer_of(const mirs__bgraph *bg, int32_t t) {
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_OUTPUT && bg->ops[i].dst == t)
      return &bg->ops[i];
  return NULL;
}

/* Whether k2's INPUT op r reads, at iteration f of block b (gs component
 * 0), exactly the tile that k1's OUTPUT op w wrote from block b with gs
 * component f: the same tile shape, tensor dim D = r->fmap placed by gs in
 * k1 (one tile per block) and walked by k2's forloop (one tile per
 * iteration, not also by a grid dim), every other dim placed by the same
 * grid dim with the same unit in both, or by none; and every grid dim of
 * k1 with more than one block places a dim with a unit of one tile, so
 * that k1's blocks write disjoint tiles (no block of another group
 * writes what this group's combine reads). */
static bool partial_matches(const mirs__bgraph *bg1, const mirs__bop *w, const mirs__bgraph *bg2,
                            const mirs__bop *r, int32_t gs, char *why, size_t n) {
  const mirs__shape *s1 = &bg1->t[w->in[0]].shape, *s2 = &bg2->t[r->out].shape;
  if (!mirs__shape_eq(s1, s2))
    return pair_fail(why, n, "a partial's tile shapes differ between the kernels");
  int32_t D = r->fmap;
  if (D < 0 || D >= s2->ndim)
    return pair_fail(why, n, "the second kernel does not walk a partial with its forloop");
  mirs__tile_place p1, p2;
  mirs__sched_place(bg1, w, &p1);
  mirs__sched_place(bg2, r, &p2);
  if (p1.grid[D] != gs || p1.gunit[D] != s1->d[D] || !p2.forloop[D] || p2.grid[D] >= 0)
    return pair_fail(why, n, "a partial is not split along the dim the second kernel walks");
  bool placed[MIRS__GRID] = {false, false, false};
  for (int d = 0; d < s1->ndim; d++) {
    if (d != D && p2.forloop[d])
      return pair_fail(why, n, "the second kernel walks a partial along two dims");
    if (d != D && (p1.grid[d] != p2.grid[d] || (p1.grid[d] >= 0 && p1.gunit[d] != p2.gunit[d])))
      return pair_fail(why, n, "a partial is placed differently by the two grids");
    if (p1.grid[d] >= 0 && p1.gunit[d] == s1->d[d])
      placed[p1.grid[d]] = true;
  }
  for (int gd = 0; gd < MIRS__GRID; gd++)
    if (bg1->grid[gd] > 1 && !placed[gd])
      return pair_fail(why, n, "the first kernel's blocks along grid dim %d write the same partial",
                       gd);
  return true;
}

bool mirs__plan_splitk_pair(const mirs_graph *g, int32_t k1, mirs__splitk_pair *info, char *why,
                            size_t n) {
  if (why && n > 0)
    why[0] = '\0';
  if (k1 < 0 || k1 + 1 >= g->nops)
    return pair_fail(why, n, "no kernel follows kernel %d", (int)k1);
  const mirs__kop *o1 = &g->ops[k1], *o2 = &g->ops[k1 + 1];
  if (o1->op != MIRS_OP_CUSTOM || o2->op != MIRS_OP_CUSTOM || !o1->bg || !o2->bg)
    return pair_fail(why, n, "not two custom kernels");
  const mirs__bgraph *bg1 = o1->bg, *bg2 = o2->bg;
  int32_t gs = -1;
  for (int d = 0; d < MIRS__GRID; d++) {
    if (bg1->block[d] != bg2->block[d])
      return pair_fail(why, n, "the thread blocks differ");
    if (bg1->grid[d] != bg2->grid[d]) {
      if (gs >= 0)
        return pair_fail(why, n, "the grids differ in more than one dim");
      gs = d;
    }
  }
  if (gs < 0 || bg2->grid[gs] != 1 || bg1->grid[gs] < 2)
    return pair_fail(why, n, "the second grid is not the first with one dim set to 1");
  if (bg2->forloop != bg1->grid[gs])
    return pair_fail(why, n, "the second kernel's forloop (%d) is not the split (%d)",
                     (int)bg2->forloop, (int)bg1->grid[gs]);
  /* k1's results: read by k2 only, never graph outputs. */
  for (int32_t j = 0; j < o1->nout; j++) {
    int32_t t = o1->out[j];
    for (int32_t i = 0; i < g->nout; i++)
      if (g->outputs[i] == t)
        return pair_fail(why, n, "a partial is a graph output");
    for (int32_t i = 0; i < g->nops; i++) {
      if (i == k1 + 1)
        continue;
      for (int32_t a = 0; a < g->ops[i].nin; a++)
        if (g->ops[i].in[a] == t)
          return pair_fail(why, n, "a partial is read by kernel %d too", (int)i);
    }
  }
  /* Every read of a partial in k2 walks it as k1 wrote it. */
  int32_t reads = 0;
  for (int32_t i = 0; i < bg2->nops; i++) {
    const mirs__bop *r = &bg2->ops[i];
    if (r->op != MIRS_OP_INPUT || g->t[r->src].producer != k1)
      continue;
    const mirs__bop *w = writer_of(bg1, r->src);
    if (!w)
      return pair_fail(why, n, "a partial has no writer in the first kernel");
    if (!partial_matches(bg1, w, bg2, r, gs, why, n))
      return false;
    reads++;
  }
  if (reads == 0)
    return pair_fail(why, n, "the second kernel reads nothing the first writes");
  if (info) {
    info->k1 = k1;
    info->k2 = k1 + 1;
    info->gs = gs;
    info->s = bg1->grid[gs];
    info->groups = (int64_t)bg2->grid[0] * bg2->grid[1] * bg2->grid[2];
  }
  return true;
}

int mirs__plan_splitk_role(const mirs_context *ctx, const mirs_graph *g, int32_t op,
                           mirs__splitk_pair *info) {
  if (!ctx || !ctx->opt.codegen_fuse_split_k || op < 0 || op >= g->nops ||
      g->ops[op].op != MIRS_OP_CUSTOM)
    return MIRS__SPLITK_NONE;
  /* Pairs are taken left to right, a kernel at most in one: op is the
   * second of a pair when an odd number of kernels before it, one after
   * another, each start one (the first of them does, the next is its
   * second, ...). */
  int32_t run = 0;
  for (int32_t j = op - 1; j >= 0 && mirs__plan_splitk_pair(g, j, NULL, NULL, 0); j--)
    run++;
  if (run % 2 == 1)
    return mirs__plan_splitk_pair(g, op - 1, info, NULL, 0) ? MIRS__SPLITK_TAIL : MIRS__SPLITK_NONE;
  return mirs__plan_splitk_pair(g, op, info, NULL, 0) ? MIRS__SPLITK_HEAD : MIRS__SPLITK_NONE;
}
