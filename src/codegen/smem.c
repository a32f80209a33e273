/* SPDX-License-Identifier: MIT */
/* src/codegen/smem.c - shared-memory traffic of a kernel plan, for the
 * cost model's shared-memory term (cost.c, docs/SEARCH.md "Cost model").
 *
 * Counts what one block of the kernel the plan describes moves through
 * shared memory, as cuda.c emits it: cp.async (or element) fills of the
 * input tiles, MMA operand reads (ldmatrix, or the element reads of a
 * tf32 MMA), the stores of C fragments into result tiles, the scalar
 * reads and writes of the other block ops, running sums kept in shared
 * memory, the split-strip exchanges of the register chain, the final
 * values written back and read by the stores.  A value the plan keeps in
 * registers (a register accumulator, a fused chain, the register chain's
 * S, E and row values) moves nothing.  Units are bank slots in bytes: a
 * scalar access of an element takes a 4-byte bank slot whatever its
 * dtype, a 16-byte copy or ldmatrix row its 16 bytes.  Each access is
 * multiplied by its bank-conflict factor, computed from the lane
 * addresses of the access pattern and the tile's stored row stride
 * (mirs__plan_bank_factor): 1 for the padded layouts of plan.c decision
 * 4, up to 8 for an ldmatrix of rows 128 bytes apart.
 *
 * Invariant: a pure function of the plan and the block graph; allocates
 * nothing (the search costs kernels in its inner loop). */
#include <string.h>

#include "codegen/plan.h"

#define BANKS 32

double mirs__plan_bank_factor(const int64_t addr[32], int width) {
  /* Distinct words, chained per bank (a conflict-free access compares
   * each word with the one or few others of its bank only). */
  enum { MAXW = 32 * 5 }; /* a lane's bytes span at most 5 words (width <= 16) */
  int64_t word[MAXW];
  int next[MAXW], head[BANKS], count[BANKS] = {0}, nw = 0, most = 0;
  for (int b = 0; b < BANKS; b++)
    head[b] = -1;
  width = width < 1 ? 1 : width > 16 ? 16 : width;
  for (int l = 0; l < 32; l++) {
    if (addr[l] < 0)
      continue;
    for (int64_t w = addr[l] / 4; w <= (addr[l] + width - 1) / 4 && nw < MAXW; w++) {
      int b = (int)(w % BANKS), j = head[b];
      while (j >= 0 && word[j] != w)
        j = next[j];
      if (j >= 0)
        continue; /* the same word: broadcast */
      word[nw] = w;
      next[nw] = head[b];
      head[b] = nw++;
      if (++count[b] > most)
        most = count[b];
    }
  }
  if (nw == 0)
    return 1;
  int ideal = (nw + BANKS - 1) / BANKS;
  return (double)most / ideal;
}

/* Access patterns of a warp over a tile of row stride `stride` elements
 * of `es` bytes (lane l = 4 gq + tq). */
typedef enum {
  PAT_LDM,     /* ldmatrix: one 8x8 matrix, 8 rows of 16 bytes */
  PAT_TF32_A,  /* a tf32 A fragment: rows gq, columns tq */
  PAT_TF32_B,  /* a tf32 B fragment: rows tq, columns gq */
  PAT_CSTORE,  /* a C fragment element: rows gq, columns 2 tq */
  PAT_CSTORE_T /* a swapped C fragment element: rows 2 tq, columns gq */
} pattern;

/* Bank-conflict factor of pattern p over rows `stride` elements of es bytes. */
static double factor(pattern p, int64_t stride, int es) {
  int64_t a[32];
  for (int l = 0; l < 32; l++)
    a[l] = -1;
  int gq, tq, width = es;
  for (int l = 0; l < 32; l++) {
    gq = l >> 2;
    tq = l & 3;
    switch (p) {
    case PAT_LDM:
      if (l < 8)
        a[l] = (int64_t)l * stride * es;
      width = 16;
      break;
    case PAT_TF32_A:
      a[l] = ((int64_t)gq * stride + tq) * es;
      break;
    case PAT_TF32_B:
      a[l] = ((int64_t)tq * stride + gq) * es;
      break;
    case PAT_CSTORE:
      a[l] = ((int64_t)gq * stride + 2 * tq) * es;
      break;
    case PAT_CSTORE_T:
      a[l] = ((int64_t)(2 * tq) * stride + gq) * es;
      break;
    }
  }
  return mirs__plan_bank_factor(a, width);
}

/* Running totals of one block's traffic. */
typedef struct acc {
  double loop, once, worst;
} acc;

/* Add `bytes` (times the conflict factor f) to the loop or once total. */
static void add(acc *s, bool loop, double bytes, double f) {
  if (bytes <= 0)
    return;
  *(loop ? &s->loop : &s->once) += bytes * f;
  if (f > s->worst)
    s->worst = f;
}

static double numel(const mirs__bgraph *bg, int32_t t) {
  return (double)mirs__shape_numel(&bg->t[t].shape);
}

/* The tensor a fused chain from t ends in (t when nothing is fused). */
static int32_t chain_tail(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t) {
  while (pl->t[t].next >= 0)
    t = bg->ops[pl->t[t].next].out;
  return t;
}

/* Whether a read of tensor t goes to shared memory: it has a tile and is
 * not a register-chain value (an accumulator's final value is a tile). */
static bool in_smem(const mirs__plan *pl, const mirs__bgraph *bg, int32_t t) {
  const mirs__plan_tensor *pt = &pl->t[t];
  if (pt->off < 0)
    return false;
  return pt->frag == MIRS__FRAG_NONE ||
         mirs__graph_ops[bg->ops[bg->t[t].producer].op].kind == MIRS__KIND_ACCUM;
}

/* Operand tile x read by an MMA of variant mma in role a (0: A, 1: B). */
static double operand_factor(const mirs__plan *pl, int32_t x, int mma, int role) {
  const mirs__plan_tensor *pt = &pl->t[x];
  int es = pt->elsize > 0 ? pt->elsize : 4;
  if (mma == MIRS__MMA_WG || pt->core8)
    return 1; /* 8x8 core matrices: one 128-byte wavefront each */
  if (mma == MIRS__MMA_16)
    return factor(PAT_LDM, pt->stride, es);
  return factor(role == 0 ? PAT_TF32_A : PAT_TF32_B, pt->stride, es);
}

/* Value v stored through its fused chain into the chain's tail tile
 * (nothing when the tail stays in registers). */
static void store_result(acc *s, const mirs__plan *pl, const mirs__bgraph *bg, int32_t v,
                         bool loop, double f) {
  int32_t t = chain_tail(pl, bg, v);
  if (in_smem(pl, bg, t))
    add(s, loop, numel(bg, t) * 4, f);
}

/* An MMA block op i: operand reads and the epilogue's C stores. */
static void mma_traffic(acc *s, const mirs__plan *pl, const mirs__bgraph *bg, int32_t i, bool loop) {
  const mirs__bop *op = &bg->ops[i];
  const mirs__plan_op *po = &pl->op[i];
  const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape;
  int r = os->ndim;
  int64_t m = os->d[r - 2], n = os->d[r - 1], kk = as->d[as->ndim - 1];
  if (po->k_pad > kk)
    kk = po->k_pad;
  int32_t x = op->in[0], y = op->in[1];
  int ea = pl->t[x].elsize > 0 ? pl->t[x].elsize : 4, eb = pl->t[y].elsize > 0 ? pl->t[y].elsize : 4;
  double batches = (double)mirs__shape_numel(os) / (double)(m * n);
  double fa = operand_factor(pl, x, po->mma, 0), fb = operand_factor(pl, y, po->mma, 1);
  int64_t mt = po->swap ? 1 : po->m_pad / 16, nt = po->swap ? n / 16 : n / 8;
  int64_t tiles = (int64_t)batches * mt * nt, per = (tiles + pl->nwarps - 1) / pl->nwarps;
  double b_bytes = (double)kk * (double)n * eb * batches; /* all of B, once */
  if (pl->chain.on && i == pl->chain.mm1) {
    /* The ks warps of a strip each read the strip's A rows (once per key
     * chunk), and their 1/ks of B's columns: B once per strip. */
    double strips = po->m_pad / 16;
    add(s, loop, (double)pl->chain.ks * pl->chain.nc * po->m_pad * (double)kk * ea, fa);
    add(s, loop, strips * b_bytes, fb);
    return;
  }
  if (pl->chain.on && i == pl->chain.mm2) { /* A from registers; V's rows once per strip */
    add(s, loop, (double)(po->m_pad / 16) * b_bytes, fb);
    return;
  }
  if (po->mma == MIRS__MMA_WG) {
    add(s, loop, (double)po->m_pad * (double)kk * ea * batches, fa);
    add(s, loop, b_bytes, fb);
  } else if (po->swap) { /* B's tile as A (read once), A's 8 rows per warp */
    add(s, loop, b_bytes, fb);
    add(s, loop, (double)((tiles + per - 1) / per) * 8.0 * (double)kk * ea, fa);
  } else {
    /* cuda.c emit_mma16_rows: a warp's tiles in one row of tiles load A
     * once per chunk; otherwise (emit_mma) A per tile.  B per tile. */
    double a_loads = (double)tiles;
    if (po->mma == MIRS__MMA_16 && nt % per == 0 && tiles % per == 0) {
      int64_t ch = per;
      if (po->acc < 0 && ch > MIRS__PLAN_MMA_CHUNK) {
        ch = MIRS__PLAN_MMA_CHUNK;
        while (per % ch != 0)
          ch--;
      }
      a_loads = (double)((tiles + per - 1) / per) * (double)(per / ch);
    }
    add(s, loop, a_loads * 16.0 * (double)kk * ea, fa);
    add(s, loop, (double)tiles * 8.0 * (double)kk * eb, fb);
  }
  if (po->acc < 0) {
    int32_t t = chain_tail(pl, bg, op->out);
    const mirs__plan_tensor *pt = &pl->t[t];
    if (in_smem(pl, bg, t))
      add(s, loop, numel(bg, t) * 4,
          factor(po->swap ? PAT_CSTORE_T : PAT_CSTORE, pt->stride, pt->elsize > 0 ? pt->elsize : 4));
  }
}

/* Accumulator op i: the per-iteration step and the write-back after the loop. */
static void accum_traffic(acc *s, const mirs__plan *pl, const mirs__bgraph *bg, int32_t i) {
  const mirs__bop *op = &bg->ops[i];
  const mirs__plan_tensor *pt = &pl->t[op->out];
  double nout = numel(bg, op->out);
  for (int a = 0; a < op->nin && a < 2; a++)
    if (!pt->acc_mma && in_smem(pl, bg, op->in[a]))
      add(s, true, numel(bg, op->in[a]) * 4, 1);
  double online = op->op == MIRS_OP_ACCUM_ONLINE ? 2 : 1;
  if (pt->acc_smem) { /* running sums read and written each iteration, read once after */
    add(s, true, 2 * online * nout * 4, 1);
    add(s, false, nout * 4, 1);
  }
  if (pt->frag != MIRS__FRAG_NONE && pl->chain.ks > 1 &&
      (pt->frag == MIRS__FRAG_C || op->op == MIRS_OP_ACCUM_SUM)) {
    /* split strips: ks - 1 parts write their partial sums, part 0 reads them */
    const mirs__shape *os = &bg->t[bg->ops[pl->chain.mm2].out].shape;
    double w = pt->frag == MIRS__FRAG_C ? 4.0 * (double)(os->d[os->ndim - 1] / 8) : 2;
    double strips = pl->op[pl->chain.mm1].m_pad / 16;
    add(s, false, 2.0 * (pl->chain.ks - 1) * strips * 32 * w * 4, 1);
  }
  store_result(s, pl, bg, op->out, false, 1);
}

/* A compute op i in the register chain other than its matmuls: a row
 * value completed across a split strip goes through the exchange. */
static void chain_op_traffic(acc *s, const mirs__plan *pl, const mirs__bgraph *bg, int32_t i) {
  const mirs__bop *op = &bg->ops[i];
  if (pl->chain.ks < 2 || mirs__graph_ops[op->op].kind != MIRS__KIND_REDUCE)
    return;
  double ks = pl->chain.ks, m = pl->op[pl->chain.mm1].m_pad;
  add(s, true, ks * m * 4, 1);                 /* lane tq == 0 of each quad: 2 rows */
  add(s, true, (double)pl->nwarps * 16 * ks * 4, 1); /* every warp: ks values of its 16 rows */
}

/* Reads of op i's operands that live in shared memory, and its result
 * stored (scalar path: conflict-free, consecutive elements per lane). */
static void scalar_traffic(acc *s, const mirs__plan *pl, const mirs__bgraph *bg, int32_t i,
                           bool loop) {
  const mirs__bop *op = &bg->ops[i];
  double nout = numel(bg, op->out), nin = numel(bg, op->in[0]);
  mirs__op_kind kind = mirs__graph_ops[op->op].kind;
  for (int a = 0; a < op->nin && a < 2; a++) {
    if (!in_smem(pl, bg, op->in[a]))
      continue;
    double reads = nout;
    if (kind == MIRS__KIND_MATMUL) { /* each product reads one element of each operand */
      const mirs__shape *as = &bg->t[op->in[0]].shape;
      reads = nout * (double)as->d[as->ndim - 1];
    } else if (kind == MIRS__KIND_REDUCE) {
      reads = nin;
    } else if (kind == MIRS__KIND_RMSNORM) {
      reads = 2 * nin; /* the sum of squares, then the scaling */
    }
    add(s, loop, reads * 4, 1);
  }
  store_result(s, pl, bg, op->out, loop, 1);
}

void mirs__plan_smem_traffic(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg) {
  (void)g;
  acc s = {0, 0, 1};
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind == MIRS__KIND_INPUT) {
      const mirs__plan_tensor *pt = &pl->t[op->out];
      add(&s, !pt->invariant, numel(bg, op->out) * (pt->vec ? pt->elsize : 4), 1);
    } else if (kind == MIRS__KIND_OUTPUT) {
      if (in_smem(pl, bg, op->in[0]))
        add(&s, false, numel(bg, op->in[0]) * 4, 1);
    } else if (kind == MIRS__KIND_ACCUM) {
      accum_traffic(&s, pl, bg, i);
    } else if (kind == MIRS__KIND_CUSTOM || kind == MIRS__KIND_LAYOUT || pl->op[i].absorbed) {
      continue; /* (absorbed: in its producer's registers, stored at the chain's tail) */
    } else if (pl->op[i].mma != MIRS__MMA_NONE) {
      mma_traffic(&s, pl, bg, i, !bg->t[op->out].post);
    } else if (pl->op[i].chain) {
      chain_op_traffic(&s, pl, bg, i);
    } else {
      scalar_traffic(&s, pl, bg, i, !bg->t[op->out].post);
    }
  }
  pl->smem_loop = s.loop;
  pl->smem_once = s.once;
  pl->smem_conflict = s.worst;
}
