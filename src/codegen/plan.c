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
 *  2b. under codegen_wgmma, an MMA_16 matmul whose tiles allow it (one
 *     batch, M = 16 * warps a multiple of 64, N <= 256, K % 16 == 0, its
 *     operands fast-path cp.async tiles read by it only) is MMA_WG
 *     (hopper.c): wgmma m64nNk16, operand tiles in 8x8 core matrices;
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
 *     of the loop are counted for the live iterations only (pl->live).
 *
 * Invariant: plans allocate nothing for block graphs of up to
 * MIRS__PLAN_LOCAL tensors and ops. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
    } else if (kk % 8 == 0 && rows_ok) {
      pl->op[i].mma = MIRS__MMA_TF32;
      pl->op[i].m_pad = (int32_t)((m + 15) / 16 * 16);
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
    const mirs__shape *os = &bg->t[y].shape;
    int r = os->ndim;
    int64_t tiles = batch_numel(os) * (pl->op[p].m_pad / 16) * (os->d[r - 1] / 8);
    int64_t per = (tiles + pl->nwarps - 1) / pl->nwarps;
    if (per * 4 > REG_ACC_MAX)
      continue;
    pl->op[p].acc = op->out;
    pl->t[op->out].acc_mma = true;
  }
}

/* Lanes per reduced row for rows rows of length len on the kernel's
 * threads: a power of 2 up to 32, no more than the row is long, every row
 * still owned by a group; 1 when the block is not whole warps. */
static int8_t tree_group(const mirs__plan *pl, int64_t rows, int64_t len) {
  if (pl->nthreads % 32 != 0 || pl->nthreads > 1024)
    return 1;
  int64_t grp = 1;
  while (grp * 2 <= 32 && rows * grp * 2 <= pl->nthreads && grp * 2 <= len)
    grp *= 2;
  return (int8_t)grp;
}

/* Block reductions (sum, rms_norm) as trees over lane groups. */
static void plan_reductions(mirs__plan *pl, const mirs__bgraph *bg) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    pl->op[i].group = 1;
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind != MIRS__KIND_REDUCE && kind != MIRS__KIND_RMSNORM)
      continue;
    const mirs__shape *xs = &bg->t[op->in[0]].shape;
    int64_t len = kind == MIRS__KIND_REDUCE ? xs->d[op->dim] : xs->d[xs->ndim - 1];
    pl->op[i].group = tree_group(pl, mirs__shape_numel(xs) / len, len);
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
  if (mma_operand && (width * es) % 16 == 0 && ((width * es) / 16) % 2 == 0)
    pt->stride += 16 / es;
  else if (!mma_operand && (last * es) % 16 == 0)
    pt->stride += tf32_pad(pl, bg, op->out, last * es / 4) * 4 / es;
  pt->vec = (last * es) % 16 == 0 && (klast * es) % 16 == 0;
  pt->stage_bytes = al16((int64_t)pt->rows * pt->stride * es);
}

/* 4./5. Shared-memory offsets for `stages` buffers of walked tiles; returns the bytes. */
static int64_t place(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg, int stages) {
  int64_t total = 0;
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
      continue;
    }
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    pt->elsize = 4;
    bool t16 = loaded_transpose(bg, t) && mirs__plan_tile_dtype(g, bg, t) != MIRS_F32;
    if (t16)
      pt->elsize = 2;
    if (kind == MIRS__KIND_ACCUM && !pt->acc_mma &&
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
        pl->nthreads % 32 == 0) {
      const mirs__shape *xs = &bg->t[op->in[0]].shape;
      int64_t len = op->op == MIRS_OP_ACCUM_SUM ? xs->d[op->dim] : xs->d[xs->ndim - 1];
      int64_t grp = tree_group(pl, n, len);
      int64_t per = (n + pl->nthreads / grp - 1) / (pl->nthreads / grp);
      if (grp >= 2 && per <= REG_ACC_MAX) {
        pt->tree = true;
        pt->group = (int8_t)grp;
      }
    }
    /* A matmul whose fragments go into a register accumulator has no tile. */
    bool into_acc = op->op == MIRS_OP_MATMUL && pl->op[i].acc >= 0;
    if (pt->next < 0 && !into_acc) {
      const mirs__shape *ts = &bg->t[t].shape;
      int64_t last = ts->ndim > 0 ? ts->d[ts->ndim - 1] : 1;
      pt->stride = (int32_t)last;
      pt->rows = a_rows(pl, bg, t, (int32_t)(n / last));
      /* Running sums in shared memory are written back in place only at
       * their dense stride: a tf32 pad there would double the tile (a
       * 128x256 accumulator: 128 KB more, over the limit). */
      if (t16 && (last * 2) % 16 == 0 && ((last * 2) / 16) % 2 == 0)
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
      }
    }
  }
  return total;
}

/* Registers per thread, estimated: a base for indices and addresses, the
 * accumulators, the MMA fragments in use. */
static int32_t estimate_regs(const mirs__plan *pl, const mirs__bgraph *bg) {
  int64_t regs = 24;
  bool any_mma = false;
  int64_t live_c = 4; /* C registers of the largest product not accumulated */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    const mirs__plan_tensor *pt = op->out >= 0 ? &pl->t[op->out] : NULL;
    if (pl->op[i].mma != MIRS__MMA_NONE) {
      any_mma = true;
      if (pl->op[i].acc < 0 && pl->op[i].mma != MIRS__MMA_TF32) {
        /* A warp's tiles, chunked (cuda.c emit_mma16_rows). */
        const mirs__shape *os = &bg->t[op->out].shape;
        int r = os->ndim;
        int64_t tiles = batch_numel(os) * (pl->op[i].m_pad / 16) * (os->d[r - 1] / 8);
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
      int32_t p = bg->t[op->in[0]].producer;
      int64_t tiles = batch_numel(os) * (pl->op[p].m_pad / 16) * (os->d[r - 1] / 8);
      regs += 4 * ((tiles + pl->nwarps - 1) / pl->nwarps);
    } else { /* (accum_online: and its running max) */
      regs += (n + pl->nthreads - 1) / pl->nthreads * (op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1);
    }
  }
  if (any_mma)
    regs += live_c + 6 + 4; /* C tiles, A and B fragments, ldmatrix addresses */
  return (int32_t)(regs > 255 ? 255 : regs);
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
       * step adding 0 under a shift of -inf (the running max stays). */
      int x = sk[op->in[0]], y = op->nin > 1 ? sk[op->in[1]] : SK_ANY;
      ok = op->op == MIRS_OP_ACCUM_MAX      ? x == SK_NEGINF
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
      pl->bytes += tile * (pt->invariant ? 1.0 : F) * B;
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
      double tile = (double)mirs__shape_numel(&bg->t[op->in[0]].shape);
      pl->bytes += tile * (dst >= 0 ? es_of(g->t[dst].dtype) : 4) * B;
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
  plan_chains(pl, bg);
  plan_mma(pl, g, bg, mma);
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
  plan_skip(pl, g, bg);
  plan_totals(pl, g, kop, smem_limit);
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
