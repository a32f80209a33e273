/* SPDX-License-Identifier: MIT */
/* src/verify/fingerprint.c - finite-field fingerprints: the field and its
 * keyed randomness, the static analysis (degree, exp-dependence, refusal of
 * exp of exp), the per-worker store, comparisons, and the CPU backend.
 * The scheme, the exact random mappings and the bound are specified in
 * fingerprint.h.
 *
 * Invariants: the store's metadata is filled and checked here before a
 * backend runs, so a backend only computes values; every value is reduced
 * (a < P, b < Q) and exp-dependent tensors and tiles have b == 0; the CPU
 * backend evaluates one trial at a time over contiguous trial-major arrays,
 * with block graphs run by the shared schedule (src/graph/schedule.c:
 * grid blocks, forloop tiles via imap/fmap, accumulators zeroed per
 * block, post ops, omap stores); all memory comes from the context and scratch only grows. */
#include "verify/fingerprint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define P MIRS__FP_P
#define Q MIRS__FP_Q

/* Largest multiples of P and Q not above 2^63: subtracting one keeps a
 * lazily reduced 64-bit accumulator below 2^63 without changing it mod P/Q. */
#define CP ((UINT64_C(1) << 63) / P * P)
#define CQ ((UINT64_C(1) << 63) / Q * Q)

/* ---------------------------------------------------------------- field */

/* (x + y) mod m for x, y < m < 2^31. */
static inline uint32_t add_mod(uint32_t x, uint32_t y, uint32_t m) {
  uint32_t s = x + y;
  return s >= m ? s - m : s;
}

/* (x - y) mod m for x, y < m. */
static inline uint32_t sub_mod(uint32_t x, uint32_t y, uint32_t m) {
  return x >= y ? x - y : x + (m - y);
}

/* (x * y) mod m. */
static inline uint32_t mul_mod(uint32_t x, uint32_t y, uint32_t m) {
  return (uint32_t)((uint64_t)x * y % m);
}

/* Pairwise sum. */
static inline mirs__fp_pair fp_add(mirs__fp_pair x, mirs__fp_pair y) {
  mirs__fp_pair r = {add_mod(x.a, y.a, P), add_mod(x.b, y.b, Q)};
  return r;
}

/* Pairwise difference. */
static inline mirs__fp_pair fp_sub(mirs__fp_pair x, mirs__fp_pair y) {
  mirs__fp_pair r = {sub_mod(x.a, y.a, P), sub_mod(x.b, y.b, Q)};
  return r;
}

/* Pairwise product. */
static inline mirs__fp_pair fp_mul(mirs__fp_pair x, mirs__fp_pair y) {
  mirs__fp_pair r = {mul_mod(x.a, y.a, P), mul_mod(x.b, y.b, Q)};
  return r;
}

/* x^e mod P (constant modulus, so the compiler avoids division). */
static inline uint32_t pow_p(uint32_t x, uint64_t e) {
  uint64_t r = 1, b = x;
  for (; e; e >>= 1, b = b * b % P)
    if (e & 1)
      r = r * b % P;
  return (uint32_t)r;
}

/* x^e mod Q. */
static inline uint32_t pow_q(uint32_t x, uint64_t e) {
  uint64_t r = 1, b = x;
  for (; e; e >>= 1, b = b * b % Q)
    if (e & 1)
      r = r * b % Q;
  return (uint32_t)r;
}

/* Pairwise inverse by Fermat (inv(0) = 0 in each part). */
static inline mirs__fp_pair fp_inv(mirs__fp_pair x) {
  mirs__fp_pair r = {x.a ? pow_p(x.a, P - 2) : 0, x.b ? pow_q(x.b, Q - 2) : 0};
  return r;
}

/* out[i] = fp_inv(x[i]) for i < n, with one exponentiation per field
 * (Montgomery's batch inversion: prefix products, one inverse, then back
 * substitution; zeros are skipped and map to 0). */
static void fp_inv_batch(const mirs__fp_pair *x, mirs__fp_pair *out, int64_t n) {
  uint64_t pa = 1, pb = 1;
  for (int64_t i = 0; i < n; i++) {
    out[i].a = (uint32_t)pa;
    out[i].b = (uint32_t)pb;
    if (x[i].a)
      pa = pa * x[i].a % P;
    if (x[i].b)
      pb = pb * x[i].b % Q;
  }
  uint64_t ia = pow_p((uint32_t)pa, P - 2), ib = pow_q((uint32_t)pb, Q - 2);
  for (int64_t i = n - 1; i >= 0; i--) {
    if (x[i].a) {
      out[i].a = (uint32_t)(out[i].a * ia % P);
      ia = ia * x[i].a % P;
    } else {
      out[i].a = 0;
    }
    if (x[i].b) {
      out[i].b = (uint32_t)(out[i].b * ib % Q);
      ib = ib * x[i].b % Q;
    } else {
      out[i].b = 0;
    }
  }
}

/* The pair (n mod P, n mod Q) of a count n. */
static inline mirs__fp_pair fp_const(uint64_t n) {
  mirs__fp_pair r = {(uint32_t)(n % P), (uint32_t)(n % Q)};
  return r;
}

/* The pair of constant c = m * 10^e: m times 10^e or the inverse of
 * 10^-e, in each part (10 is invertible: P, Q > 5 are prime). */
mirs__fp_pair mirs__fp_scalar(const mirs__scalar *c) {
  uint64_t mag = c->m < 0 ? (uint64_t)0 - (uint64_t)c->m : (uint64_t)c->m;
  uint32_t e = (uint32_t)(c->e < 0 ? -c->e : c->e);
  mirs__fp_pair r = fp_const(mag), t = {pow_p(10, e), pow_q(10, e)};
  if (c->e < 0)
    t = fp_inv(t);
  r = fp_mul(r, t);
  if (c->m < 0) {
    mirs__fp_pair zero = {0, 0};
    r = fp_sub(zero, r);
  }
  return r;
}

bool mirs__fp_elem_of(mirs_op op, const mirs__scalar *c, mirs__fp_elem *out) {
  memset(out, 0, sizeof *out);
  int64_t n;
  switch (op) {
  case MIRS_OP_NEG:
    out->code = MIRS__FP_E_NEG;
    return true;
  case MIRS_OP_ADD_SCALAR:
    out->code = MIRS__FP_E_ADDC;
    out->c = mirs__fp_scalar(&c[0]);
    return true;
  case MIRS_OP_MUL_SCALAR:
    out->code = MIRS__FP_E_MULC;
    out->c = mirs__fp_scalar(&c[0]);
    return true;
  case MIRS_OP_DIV_SCALAR: /* x * inv(c); c != 0 as a rational, and as a field element
                            * (|m| < 2^63 has no factor P or Q... unless it does: inv(0) = 0) */
    out->code = MIRS__FP_E_MULC;
    out->c = fp_inv(mirs__fp_scalar(&c[0]));
    return true;
  case MIRS_OP_RSUB_SCALAR:
    out->code = MIRS__FP_E_RSUBC;
    out->c = mirs__fp_scalar(&c[0]);
    return true;
  case MIRS_OP_RDIV_SCALAR:
    out->code = MIRS__FP_E_RDIVC;
    out->c = mirs__fp_scalar(&c[0]);
    return true;
  case MIRS_OP_POW:
    if (mirs__scalar_uint(&c[0], MIRS__FP_POW_MAX, &n)) {
      out->code = MIRS__FP_E_POWN;
      out->n = (uint64_t)n;
      return true;
    }
    out->code = MIRS__FP_E_PRF;
    out->ktweak = mirs__op_const_hash(op, c);
    return true;
  case MIRS_OP_CLAMP:
  case MIRS_OP_SIGMOID:
  case MIRS_OP_TANH:
    out->code = MIRS__FP_E_PRF;
    out->ktweak = mirs__op_const_hash(op, c); /* (0 for sigmoid, tanh) */
    return true;
  case MIRS_OP_ABS: /* an even keyed function: abs(-x) = abs(x) holds as in the reals */
    out->code = MIRS__FP_E_EVEN;
    return true;
  default:
    return false;
  }
}

/* base^e mod m by square and multiply. */
uint32_t mirs__fp_pow_mod(uint32_t base, uint64_t e, uint32_t m) {
  uint64_t r = 1 % m, b = base % m;
  while (e) {
    if (e & 1)
      r = r * b % m;
    b = b * b % m;
    e >>= 1;
  }
  return (uint32_t)r;
}

/* Inverse by Fermat's little theorem (m prime); 0 maps to 0. */
uint32_t mirs__fp_inv_mod(uint32_t x, uint32_t m) {
  x %= m;
  return x == 0 ? 0 : mirs__fp_pow_mod(x, (uint64_t)m - 2, m);
}

/* K_t = seed ^ ((t + 1) * 0x9E3779B97F4A7C15). */
uint64_t mirs__fp_trial_key(uint64_t seed, int trial) {
  return seed ^ ((uint64_t)(trial + 1) * MIRS__FP_TRIAL_MUL);
}

/* One Philox block (key, block, sub) reduced to a pair: the mapping the
 * header specifies for inputs and PRFs alike. */
static mirs__fp_pair philox_pair(uint64_t key, uint64_t sub, uint64_t block) {
  const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)sub,
                           (uint32_t)(sub >> 32)};
  const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  uint32_t w[4];
  mirs_philox4x32_10(ctr, k, w);
  mirs__fp_pair r = {(uint32_t)((((uint64_t)w[1] << 32) | w[0]) % P),
                     (uint32_t)((((uint64_t)w[3] << 32) | w[2]) % Q)};
  return r;
}

/* Input element: the Philox block at counter `element` of subsequence sub. */
mirs__fp_pair mirs__fp_input_value(uint64_t key, uint64_t sub, uint64_t element) {
  return philox_pair(key, sub, element);
}

/* PRF: the Philox block at counter (b << 32 | a) of the op's PRF subsequence. */
mirs__fp_pair mirs__fp_prf(uint64_t key, mirs_op op, mirs__fp_pair x) {
  return philox_pair(key, MIRS__FP_PRF_DOMAIN | (uint64_t)op, ((uint64_t)x.b << 32) | x.a);
}

/* The keyed rank of x (see the header): max's total order. */
uint64_t mirs__fp_max_rank(uint64_t key, mirs__fp_pair x) {
  uint64_t block = ((uint64_t)x.b << 32) | x.a, sub = MIRS__FP_PRF_DOMAIN | (uint64_t)MIRS_OP_MAX;
  const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)sub,
                           (uint32_t)(sub >> 32)};
  const uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  uint32_t w[4];
  mirs_philox4x32_10(ctr, k, w);
  return ((uint64_t)w[1] << 32) | w[0];
}

/* The start of a running max: below every pair (a >= P is no residue). */
static const mirs__fp_pair fp_max_none = {UINT32_MAX, UINT32_MAX};

/* max(x, y) in the keyed order (rank, then the residues); fp_max_none
 * loses to everything. */
static mirs__fp_pair fp_max(uint64_t key, mirs__fp_pair x, mirs__fp_pair y) {
  if (x.a == UINT32_MAX)
    return y;
  if (y.a == UINT32_MAX || (x.a == y.a && x.b == y.b))
    return x;
  uint64_t rx = mirs__fp_max_rank(key, x), ry = mirs__fp_max_rank(key, y);
  if (rx != ry)
    return rx > ry ? x : y;
  return x.a > y.a || (x.a == y.a && x.b > y.b) ? x : y;
}

/* min(x, y): the other argument than fp_max's (max's keyed order reversed,
 * so that min(x, y) + max(x, y) = x + y as in the reals, and a min of two
 * distinct values never equals their max).  fp_max_none (never a value of
 * min's argument: mask_use_ok refuses the masked sentinel) starts a
 * running min and loses to everything. */
static mirs__fp_pair fp_min(uint64_t key, mirs__fp_pair x, mirs__fp_pair y) {
  if (x.a == UINT32_MAX)
    return y;
  if (y.a == UINT32_MAX || (x.a == y.a && x.b == y.b))
    return x;
  mirs__fp_pair m = fp_max(key, x, y);
  return m.a == x.a && m.b == x.b ? y : x;
}

/* ---------------------------------------------------------------- bound */

/* log2((D (1 + 2^-32) / Q)^k); 0.0 (no bound) when D >= Q. */
double mirs__fp_bound_log2(uint64_t degree, int trials) {
  if (degree < 1)
    degree = 1;
  if (degree >= Q || trials < 1)
    return 0.0;
  double per = log2((double)degree) + log2(1.0 + ldexp(1.0, -32)) - log2((double)Q);
  return (double)trials * per;
}

/* Smallest k with bound <= 2^target, or -1. */
int mirs__fp_trials_for(uint64_t degree, double log2_target) {
  if (mirs__fp_bound_log2(degree, 1) >= 0.0)
    return -1;
  for (int k = 1; k <= MIRS__FP_MAX_TRIALS; k++)
    if (mirs__fp_bound_log2(degree, k) <= log2_target)
      return k;
  return -1;
}

/* ---------------------------------------------------------------- analysis */

/* Saturating a + b. */
static uint64_t sat_add(uint64_t a, uint64_t b) {
  return mirs__fp_degree_add(a, b);
}

/* max(a, b). */
static uint64_t umax(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* Degree, inner degree and exp flag of op applied to x (and y); false for
 * exp of an exp-dependent value (no sound fingerprint).  numel/off are left
 * to the caller. */
static bool meta_of(mirs_op op, const mirs__scalar *cst, const mirs__fp_meta *x,
                    const mirs__fp_meta *y, mirs__fp_meta *out) {
  out->degree = x->degree;
  out->inner = x->inner;
  out->exp_dep = x->exp_dep;
  out->has_digest = false;
  out->digest = 0;
  /* (uses of a masked value are checked by mask_use_ok first) */
  out->masked = op == MIRS_OP_CAUSAL_MASK || (op != MIRS_OP_EXP && x->masked);
  if (y && mirs__graph_ops[op].arity == 2) {
    out->inner = umax(x->inner, y->inner);
    out->exp_dep = x->exp_dep || y->exp_dep;
    out->masked = (out->masked || y->masked) && op != MIRS_OP_ACCUM_ONLINE;
  }
  switch (op) {
  case MIRS_OP_ADD:
  case MIRS_OP_SUB:
    out->degree = umax(x->degree, y->degree);
    break;
  case MIRS_OP_MUL:
  case MIRS_OP_DIV:
  case MIRS_OP_MATMUL:
    out->degree = sat_add(x->degree, y->degree);
    break;
  case MIRS_OP_EXP:
    if (x->exp_dep)
      return false;
    out->degree = 1;
    out->inner = umax(x->inner, x->degree);
    out->exp_dep = true;
    break;
  case MIRS_OP_SQUARE:
    out->degree = sat_add(x->degree, x->degree);
    break;
  case MIRS_OP_SQRT:
  case MIRS_OP_SILU:
  case MIRS_OP_GELU:
  case MIRS_OP_RELU:
    out->degree = 1;
    out->inner = umax(x->inner, x->degree);
    out->exp_dep = false;
    break;
  case MIRS_OP_NEG:
  case MIRS_OP_ADD_SCALAR:
  case MIRS_OP_MUL_SCALAR:
  case MIRS_OP_DIV_SCALAR:
  case MIRS_OP_RSUB_SCALAR:
  case MIRS_OP_RDIV_SCALAR: /* (c / x: numerator degree 0) */
  case MIRS_OP_TRANSPOSE:
  case MIRS_OP_RESHAPE: /* (layout ops move values: nothing changes) */
  case MIRS_OP_PERMUTE:
  case MIRS_OP_SLICE:
    break;
  case MIRS_OP_POW: {
    mirs__fp_elem e;
    mirs__fp_elem_of(op, cst, &e);
    if (e.code == MIRS__FP_E_POWN) {
      out->degree = mirs__fp_degree_mul(x->degree, e.n);
      break;
    }
    out->degree = 1;
    out->inner = umax(x->inner, x->degree);
    out->exp_dep = false;
    break;
  }
  case MIRS_OP_SIGMOID:
  case MIRS_OP_TANH:
  case MIRS_OP_CLAMP:
    out->degree = 1;
    out->inner = umax(x->inner, x->degree);
    out->exp_dep = false;
    break;
  case MIRS_OP_ABS: /* even: arguments p, q collide where (p - q)(p + q) vanishes */
    out->degree = 1;
    out->inner = umax(x->inner, sat_add(x->degree, x->degree));
    out->exp_dep = false;
    break;
  case MIRS_OP_RMS_NORM:
  case MIRS_OP_LAYER_NORM:
    out->degree = sat_add(x->degree, 1);
    out->inner = umax(x->inner, sat_add(x->degree, x->degree));
    break;
  case MIRS_OP_ACCUM_RMS:
    out->degree = 1;
    out->inner = umax(x->inner, sat_add(x->degree, x->degree));
    out->exp_dep = false;
    break;
  case MIRS_OP_ACCUM_ONLINE: /* y * exp(m - M): the exp a fresh factor */
    if (y->exp_dep)
      return false;
    out->degree = sat_add(x->degree, 1);
    out->inner = umax(out->inner, y->degree);
    out->exp_dep = true;
    break;
  default: /* SUM, MAX, MIN, ACCUM, ACCUM_SUM, ACCUM_MAX, ACCUM_MIN keep the degree */
    break;
  }
  return true;
}

/* Whether op may take x (and y) when one may hold the masked sentinel:
 * only where the real result of -inf is certain (fingerprint.h). */
static bool mask_use_ok(mirs_op op, const mirs__scalar *cst, const mirs__fp_meta *x,
                        const mirs__fp_meta *y) {
  bool ym = y && mirs__graph_ops[op].arity == 2 && y->masked;
  if (!x->masked && !ym)
    return true;
  switch (op) {
  case MIRS_OP_ADD_SCALAR: /* -inf + c, -inf * c and -inf / c (c > 0) stay -inf; */
  case MIRS_OP_TRANSPOSE:  /* a transpose moves the sentinel (fp_elem, fp_transpose) */
  case MIRS_OP_RESHAPE:    /* and so do the layout ops (MIRS__LAYOUT_COPY) */
  case MIRS_OP_PERMUTE:
  case MIRS_OP_SLICE:
    return true;
  case MIRS_OP_MUL_SCALAR:
  case MIRS_OP_DIV_SCALAR:
    return cst[0].m > 0;
  case MIRS_OP_EXP:
  case MIRS_OP_ADD:
  case MIRS_OP_CAUSAL_MASK:
  case MIRS_OP_MAX: /* -inf loses: max's start value fp_max_none is the sentinel */
  case MIRS_OP_ACCUM_MAX:
    return true;
  case MIRS_OP_SUB: /* y - (-inf) = +inf is not representable: y masked only where x is */
    return !ym || x->masked;
  case MIRS_OP_ACCUM_ONLINE: /* a masked shift m adds nothing (fp_online) */
    return !x->masked;
  default:
    return false;
  }
}

/* Whether every row (last dim) of kernel tensor t has an element that is
 * not -inf: true unless t may be masked and its masks can empty a row
 * (km: the tensors' metadata). */
static bool kernel_rows_kept(const mirs_graph *g, const mirs__fp_meta *km, int32_t t) {
  if (!km[t].masked)
    return true;
  int32_t p = g->t[t].producer;
  const mirs__kop *k = p >= 0 ? &g->ops[p] : NULL;
  const mirs__shape *s = &g->t[t].shape;
  if (!k)
    return true;
  switch (k->op) {
  case MIRS_OP_CAUSAL_MASK: /* row i keeps column 0 when n >= m */
    return s->d[s->ndim - 1] >= s->d[s->ndim - 2];
  case MIRS_OP_ADD:
  case MIRS_OP_SUB:
    return kernel_rows_kept(g, km, k->in[0]) && kernel_rows_kept(g, km, k->in[1]);
  default:
    return false;
  }
}

/* The same for block tensor t of bg (metadata b): its rows are whole rows
 * of the kernel tensor (no grid dim places its columns, and the forloop
 * does not either, unless `walked`: an accumulator over the loop sees
 * every tile of the row). */
static bool block_rows_kept(const mirs_graph *g, const mirs__fp_meta *km, const mirs__bgraph *bg,
                            const mirs__fp_meta *b, int32_t t, bool walked) {
  if (!b[t].masked)
    return true;
  const mirs__bop *op = &bg->ops[bg->t[t].producer];
  int r = bg->t[t].shape.ndim;
  mirs__dim_origin o;
  bool whole = r >= 2 && mirs__sched_dim_origin(g, bg, t, r - 1, &o) && o.grid < 0 &&
               (walked ? true : !o.forloop);
  switch (op->op) {
  case MIRS_OP_INPUT:
    return whole && kernel_rows_kept(g, km, op->src);
  case MIRS_OP_CAUSAL_MASK: {
    int64_t org[4];
    int32_t b0[MIRS__GRID] = {0, 0, 0};
    return whole && mirs__sched_mask_frame(g, bg, op, b0, 0, org) && org[3] >= org[2];
  }
  case MIRS_OP_ADD:
  case MIRS_OP_SUB:
    return block_rows_kept(g, km, bg, b, op->in[0], walked) &&
           block_rows_kept(g, km, bg, b, op->in[1], walked);
  default:
    return false;
  }
}

/* The refusal of a use of a masked value mask_use_ok rejects. */
static mirs_status refuse_mask(mirs_context *ctx, const char *where, mirs_op op) {
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                   "%s = %s(...): an argument may hold causal_mask's -inf, whose %s has no "
                   "finite-field fingerprint (only exp, add, sub of a finite value and "
                   "causal_mask take one); refusing to verify this graph",
                   where, mirs__graph_ops[op].name, mirs__graph_ops[op].name);
}

/* The refusal of exp of an exp-dependent value; `where` names the kernel
 * tensor or block tensor concerned. */
static mirs_status refuse_exp(mirs_context *ctx, const char *where, const char *arg) {
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                   "%s = exp(%s): the argument already depends on an exp, and exp of an "
                   "exp-dependent value has no sound finite-field fingerprint; refusing to "
                   "verify this graph",
                   where, arg);
}

/* Check the block-graph facts the evaluation relies on (ids in range,
 * arities, accumulator and reduction shapes, ranks of tiles), so a
 * malformed graph is reported instead of overrunning a buffer. */
static mirs_status check_bgraph(const mirs_graph *g, const mirs__bgraph *bg) {
  mirs_context *ctx = g->ctx;
  if (NEVER(bg == NULL || bg->forloop < 1))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "custom op without a valid block graph");
  for (int gd = 0; gd < MIRS__GRID; gd++)
    if (NEVER(bg->grid[gd] < 1))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "custom op with an empty grid");
  int32_t bad = -1;
  if (NEVER(!mirs__bg_well_formed(g, bg, &bad)))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "block op %d (%s) is malformed; cannot fingerprint",
                     (int)bad, mirs_op_name(bg->ops[bad].op) ? mirs_op_name(bg->ops[bad].op) : "?");
  return MIRS_OK;
}

/* Analyse kernel op `op` of g: fill outs[0..nout) (degree, inner, exp
 * flag; numel from the graph) from km (metadata of every tensor the op
 * reads) and, for a custom op, the block tensors' metadata into *bt (grown
 * to bg->nt) with tile offsets, their per-trial total in *tile_used.
 * Refuses exp of an exp-dependent value (MIRS_UNSUPPORTED). */
static mirs_status analyze_op(const mirs_graph *g, int32_t op, const mirs__fp_meta *km,
                              mirs__fp_meta **bt, size_t *capbt, uint64_t *tile_used,
                              mirs__fp_meta *outs) {
  mirs_context *ctx = g->ctx;
  const mirs__kop *k = &g->ops[op];
  int32_t first = k->out[0];
  if (k->op != MIRS_OP_CUSTOM) {
    if (NEVER(k->nout != 1 || (unsigned)k->op >= MIRS_OP_COUNT ||
              k->nin != mirs__graph_ops[k->op].arity || k->nin < 1 || k->nin > 2))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d is malformed; cannot fingerprint",
                       (int)op);
    const mirs__fp_meta *x = &km[k->in[0]], *y = k->nin > 1 ? &km[k->in[1]] : NULL;
    if (!mask_use_ok(k->op, k->cst, x, y))
      return refuse_mask(ctx, g->t[first].name, k->op);
    if (!meta_of(k->op, k->cst, x, y, &outs[0]))
      return refuse_exp(ctx, g->t[first].name, g->t[k->in[0]].name);
    outs[0].numel = mirs__shape_numel(&g->t[first].shape);
    /* A max along rows that each keep an element is finite. */
    if (k->op == MIRS_OP_MAX && outs[0].masked && k->dim == g->t[first].shape.ndim - 1 &&
        kernel_rows_kept(g, km, k->in[0]))
      outs[0].masked = false;
    return MIRS_OK;
  }
  const mirs__bgraph *bg = k->bg;
  MIRS_CHECK(ctx, check_bgraph(g, bg));
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)bt, capbt, (size_t)bg->nt + 1, sizeof **bt));
  mirs__fp_meta *b = *bt;
  memset(b, 0, sizeof *b * (size_t)bg->nt);
  uint64_t off = 0;
  int64_t limit = ctx->opt.eval_max_elements;
  for (int32_t i = 0; i < bg->nt; i++) {
    b[i].numel = mirs__shape_numel(&bg->t[i].shape);
    if (b[i].numel > limit - (int64_t)off)
      return MIRS_FAIL(ctx, MIRS_LIMIT,
                       "fingerprinting the custom op writing %s needs more than "
                       "eval_max_elements=%lld tile elements",
                       g->t[first].name, (long long)limit);
    b[i].off = off;
    off += (uint64_t)mirs__sched_state_numel(bg, i); /* (ACCUM_ONLINE: + its running max) */
  }
  *tile_used = off;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (o->op == MIRS_OP_INPUT) {
      const mirs__fp_meta *src = &km[o->src];
      b[o->out].degree = src->degree;
      b[o->out].inner = src->inner;
      b[o->out].exp_dep = src->exp_dep;
      b[o->out].masked = src->masked;
    } else if (o->op == MIRS_OP_OUTPUT) {
      int32_t j = o->dst - first;
      if (NEVER(j < 0 || j >= k->nout || k->out[j] != o->dst))
        return MIRS_FAIL(ctx, MIRS_INTERNAL, "custom op output %d is not in order", (int)j);
      outs[j] = b[o->in[0]];
      outs[j].numel = mirs__shape_numel(&g->t[o->dst].shape);
      outs[j].off = 0;
    } else {
      const mirs__fp_meta *x = &b[o->in[0]], *y = o->nin > 1 ? &b[o->in[1]] : NULL;
      mirs__fp_meta m;
      bool use_ok = mask_use_ok(o->op, o->cst, x, y);
      if (!use_ok || !meta_of(o->op, o->cst, x, y, &m)) {
        char where[256];
        snprintf(where, sizeof where, "block tensor %s (custom op writing %s)", bg->t[o->out].name,
                 g->t[first].name);
        return use_ok ? refuse_exp(ctx, where, bg->t[o->in[o->op == MIRS_OP_ACCUM_ONLINE]].name)
                      : refuse_mask(ctx, where, o->op);
      }
      m.numel = b[o->out].numel;
      m.off = b[o->out].off;
      if ((o->op == MIRS_OP_MAX || o->op == MIRS_OP_ACCUM_MAX) && m.masked &&
          o->dim == bg->t[o->out].shape.ndim - 1 &&
          block_rows_kept(g, km, bg, b, o->in[0], o->op == MIRS_OP_ACCUM_MAX))
        m.masked = false;
      b[o->out] = m;
    }
  }
  return MIRS_OK;
}

/* The metadata of every tensor of g into km (g->nt entries, zeroed):
 * analyze_op over the kernel ops in order.  With `lenient`, an op it
 * refuses (MIRS_UNSUPPORTED) is not an error: its outputs are taken to
 * hold -inf where an argument may. */
static mirs_status analyze_graph(const mirs_graph *g, mirs__fp_meta *km, bool lenient) {
  mirs_context *ctx = g->ctx;
  mirs__fp_meta *bt = NULL;
  size_t capbt = 0;
  uint64_t tiles = 0;
  mirs_status s = MIRS_OK;
  for (int32_t i = 0; i < g->nt; i++)
    if (g->t[i].producer < 0)
      km[i].degree = 1;
  for (int32_t i = 0; i < g->nops && s == MIRS_OK; i++) {
    const mirs__kop *k = &g->ops[i];
    if (NEVER(k->nout < 1 || k->out[0] < 0 || k->out[0] + k->nout > g->nt)) {
      s = MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d has bad outputs", (int)i);
      break;
    }
    s = analyze_op(g, i, km, &bt, &capbt, &tiles, &km[k->out[0]]);
    if (s == MIRS_UNSUPPORTED && lenient) {
      mirs_clear_error(ctx);
      s = MIRS_OK;
      bool m = false;
      for (int32_t a = 0; a < k->nin; a++)
        m = m || km[k->in[a]].masked;
      for (int32_t o = 0; o < k->nout; o++)
        km[k->out[o]] = (mirs__fp_meta){.degree = 1, .masked = m};
    }
  }
  mirs__core_free(ctx, bt);
  return s;
}

/* Static degree of g's outputs (see the header). */
mirs_status mirs__fp_graph_degree(const mirs_graph *g, uint64_t *degree) {
  if (!g)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = g->ctx;
  if (!degree)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__fp_graph_degree: NULL degree");
  *degree = 0;
  mirs__fp_meta *km = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *km);
  if (!km)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  mirs_status s = analyze_graph(g, km, false);
  uint64_t d = 0;
  for (int32_t o = 0; s == MIRS_OK && o < g->nout; o++) {
    const mirs__fp_meta *m = &km[g->outputs[o]];
    d = umax(d, umax(m->degree, m->inner));
  }
  mirs__core_free(ctx, km);
  if (s != MIRS_OK)
    return mirs__core_trace(ctx, s, __func__, __FILE__, __LINE__);
  *degree = d;
  return MIRS_OK;
}

/* Which tensors of program g may hold causal_mask's -inf as the
 * fingerprints see it: masked[t] for each of g's g->nt tensors.  The
 * analysis of verification, except that an op it refuses (an exp of an
 * exp, a use of -inf the field cannot take) is taken to pass -inf on
 * from any argument that may hold it. */
mirs_status mirs__fp_graph_masked(const mirs_graph *g, bool *masked) {
  if (!g)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = g->ctx;
  if (!masked)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__fp_graph_masked: NULL masked");
  mirs__fp_meta *km = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *km);
  if (!km)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  mirs_status s = analyze_graph(g, km, true);
  for (int32_t i = 0; s == MIRS_OK && i < g->nt; i++)
    masked[i] = km[i].masked;
  mirs__core_free(ctx, km);
  if (s != MIRS_OK)
    return mirs__core_trace(ctx, s, __func__, __FILE__, __LINE__);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- store */

/* A store for `trials` trials under seed on backend (NULL: CPU). */
mirs_status mirs__fp_store_new(mirs_context *ctx, const mirs__fp_backend *backend, int trials,
                               uint64_t seed, mirs__fp_store **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__fp_store_new: NULL out");
  *out = NULL;
  if (trials < 1 || trials > MIRS__FP_MAX_TRIALS)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "fingerprint trials must be in [1, %d], got %d",
                     MIRS__FP_MAX_TRIALS, trials);
  mirs__fp_store *s = mirs__core_calloc(ctx, 1, sizeof *s);
  if (!s)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  s->ctx = ctx;
  s->backend = backend ? backend : &mirs__fp_cpu_backend;
  s->trials = trials;
  s->seed = seed;
  s->partial = -1;
  mirs_status st = s->backend->open(s, &s->state);
  if (st != MIRS_OK) {
    mirs__core_free(ctx, s);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  *out = s;
  return MIRS_OK;
}

/* Free s, its backend state and its metadata. */
void mirs__fp_store_free(mirs__fp_store *s) {
  if (!s)
    return;
  mirs_context *ctx = s->ctx;
  s->backend->release(s->state, s);
  mirs__core_free(ctx, s->t);
  mirs__core_free(ctx, s->bt);
  mirs__core_free(ctx, s);
}

/* Keep tensors [0, nt). */
void mirs__fp_truncate(mirs__fp_store *s, int32_t nt) {
  if (!s || nt >= s->nt)
    return;
  if (nt < 0)
    nt = 0;
  s->nt = nt;
  if (s->partial >= nt) {
    s->partial = -1;
    s->corner = false;
  }
  s->used = nt > 0 ? s->t[nt - 1].off + (uint64_t)s->t[nt - 1].numel * (uint64_t)s->trials : 0;
  s->stats.truncations++;
}

/* Append metadata slots for tensors [s->nt, s->nt + n) at the end of the
 * arena, numel from g; checks the per-trial element limit.  Does not
 * change s->nt. */
static mirs_status reserve_tensors(mirs__fp_store *s, const mirs_graph *g, int32_t n) {
  mirs_context *ctx = s->ctx;
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&s->t, &s->capt, (size_t)s->nt + (size_t)n + 1,
                                  sizeof *s->t));
  int64_t limit = ctx->opt.eval_max_elements;
  int64_t have = (int64_t)(s->used / (uint64_t)s->trials);
  uint64_t off = s->used;
  for (int32_t i = 0; i < n; i++) {
    const mirs__ktensor *kt = &g->t[s->nt + i];
    int64_t ne = mirs__shape_numel(&kt->shape);
    if (ne > limit - have)
      return MIRS_FAIL(ctx, MIRS_LIMIT,
                       "fingerprinting %s needs more than eval_max_elements=%lld elements per "
                       "trial (raise the option)",
                       kt->name, (long long)limit);
    have += ne;
    mirs__fp_meta *m = &s->t[s->nt + i];
    memset(m, 0, sizeof *m);
    m->numel = ne;
    m->off = off;
    off += (uint64_t)ne * (uint64_t)s->trials;
  }
  return MIRS_OK;
}

/* Generate graph input t, the next tensor of the store. */
static mirs_status push_input(mirs__fp_store *s, const mirs_graph *g, int32_t t) {
  mirs_context *ctx = s->ctx;
  if (NEVER(t != s->nt || g->t[t].producer >= 0))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "tensor %d is not the next input", (int)t);
  MIRS_CHECK(ctx, reserve_tensors(s, g, 1));
  mirs__fp_meta *m = &s->t[t];
  m->degree = 1;
  int32_t nt0 = s->nt;
  uint64_t used0 = s->used;
  s->nt = t + 1;
  s->used = m->off + (uint64_t)m->numel * (uint64_t)s->trials;
  mirs_status st = s->backend->compute_input(s->state, s, g, t);
  if (st != MIRS_OK) {
    s->nt = nt0;
    s->used = used0;
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  s->stats.inputs++;
  s->stats.elements += (uint64_t)m->numel * (uint64_t)s->trials;
  return MIRS_OK;
}

/* Fingerprint kernel op `op` of g in trials [0, j1) (the incremental step). */
static mirs_status push_op(mirs__fp_store *s, const mirs_graph *g, int32_t op, int j1) {
  mirs_context *ctx = s->ctx;
  if (!g || op < 0 || op >= g->nops)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__fp_push_op: no kernel op %d", (int)op);
  const mirs__kop *k = &g->ops[op];
  if (NEVER(k->nout < 1 || !k->out))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d has no output", (int)op);
  int32_t first = k->out[0];
  if (first < s->nt)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "kernel op %d (writing %s) is already fingerprinted: the store holds %d "
                     "tensors (truncate it first)",
                     (int)op, g->t[first].name, (int)s->nt);
  for (int32_t i = 0; i < k->nout; i++)
    if (NEVER(k->out[i] != first + i || k->out[i] >= g->nt || g->t[k->out[i]].producer != op))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d: outputs are not consecutive", (int)op);
  for (int32_t i = 0; i < k->nin; i++)
    if (NEVER(k->in[i] < 0 || k->in[i] >= first))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d reads a later tensor", (int)op);
  for (int32_t t = s->nt; t < first; t++)
    if (g->t[t].producer >= 0)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "kernel op %d cannot be fingerprinted before op %d (writing %s)", (int)op,
                       (int)g->t[t].producer, g->t[t].name);

  int32_t nt0 = s->nt;
  mirs_status st = MIRS_OK;
  for (int32_t t = s->nt; t < first && st == MIRS_OK; t++)
    st = push_input(s, g, t);
  if (st == MIRS_OK)
    st = reserve_tensors(s, g, k->nout);
  if (st == MIRS_OK) {
    /* analyze_op fills degrees and flags; the offsets are laid out here. */
    uint64_t off = s->t[first].off;
    st = analyze_op(g, op, s->t, &s->bt, &s->capbt, &s->tile_used, &s->t[first]);
    if (st == MIRS_OK) {
      for (int32_t i = 0; i < k->nout; i++) {
        s->t[first + i].off = off;
        s->t[first + i].has_digest = false;
        off += (uint64_t)s->t[first + i].numel * (uint64_t)s->trials;
      }
      s->nt = first + k->nout;
      s->used = off;
      st = s->backend->compute_op(s->state, s, g, op, 0, j1);
      if (j1 < s->trials)
        s->partial = first;
    } else if (st == MIRS_UNSUPPORTED) {
      s->stats.refused++;
    }
  }
  if (st != MIRS_OK) {
    uint64_t tr = s->stats.truncations;
    mirs__fp_truncate(s, nt0);
    s->stats.truncations = tr;
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  s->stats.ops++;
  for (int32_t i = 0; i < k->nout; i++)
    s->stats.elements += (uint64_t)s->t[first + i].numel * (uint64_t)j1;
  return MIRS_OK;
}

/* Whether s holds a partial op: refuse to push past it. */
static mirs_status no_partial(mirs__fp_store *s, const char *what) {
  if (s->partial >= 0)
    return MIRS_FAIL(s->ctx, MIRS_INTERNAL,
                     "%s: tensor %d holds trial 0 only (mirs__fp_push_rest first)", what,
                     (int)s->partial);
  return MIRS_OK;
}

/* Fingerprint kernel op `op` of g, every trial. */
mirs_status mirs__fp_push_op(mirs__fp_store *s, const mirs_graph *g, int32_t op) {
  if (!s)
    return MIRS_INVALID_ARG;
  MIRS_CHECK(s->ctx, no_partial(s, __func__));
  return push_op(s, g, op, s->trials);
}

/* Fingerprint kernel op `op` of g, trial 0 only. */
mirs_status mirs__fp_push_op_first(mirs__fp_store *s, const mirs_graph *g, int32_t op) {
  if (!s)
    return MIRS_INVALID_ARG;
  MIRS_CHECK(s->ctx, no_partial(s, __func__));
  return push_op(s, g, op, s->trials > 1 ? 1 : s->trials);
}

/* Trial 0 of custom op `op`, grid block (0,0,0) only. */
mirs_status mirs__fp_push_op_corner(mirs__fp_store *s, const mirs_graph *g, int32_t op) {
  if (!s)
    return MIRS_INVALID_ARG;
  MIRS_CHECK(s->ctx, no_partial(s, __func__));
  if (!g || op < 0 || op >= g->nops || g->ops[op].op != MIRS_OP_CUSTOM || !g->ops[op].bg)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "%s: kernel op %d is not a custom kernel", __func__,
                     (int)op);
  s->corner = true;
  mirs_status st = push_op(s, g, op, 1);
  if (st != MIRS_OK || s->partial < 0)
    s->corner = false;
  return st;
}

/* The other trials of the partial op `op`. */
mirs_status mirs__fp_push_rest(mirs__fp_store *s, const mirs_graph *g, int32_t op) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (s->corner)
    return MIRS_FAIL(s->ctx, MIRS_INTERNAL,
                     "mirs__fp_push_rest: kernel op %d holds one grid block (truncate it first)",
                     (int)op);
  if (s->partial < 0)
    return MIRS_OK;
  const mirs__kop *k = g && op >= 0 && op < g->nops ? &g->ops[op] : NULL;
  if (!k || k->nout < 1 || k->out[0] != s->partial || k->out[0] + k->nout != s->nt)
    return MIRS_FAIL(s->ctx, MIRS_INTERNAL, "mirs__fp_push_rest: kernel op %d is not the partial one",
                     (int)op);
  /* The store's per-op scratch (block metadata) is the last op's, as
   * push_op left it. */
  mirs_status st = s->backend->compute_op(s->state, s, g, op, 1, s->trials);
  int32_t first = s->partial;
  s->partial = -1;
  if (st != MIRS_OK) {
    uint64_t tr = s->stats.truncations;
    mirs__fp_truncate(s, first);
    s->stats.truncations = tr;
    return mirs__core_trace(s->ctx, st, __func__, __FILE__, __LINE__);
  }
  for (int32_t i = 0; i < k->nout; i++)
    s->stats.elements += (uint64_t)s->t[first + i].numel * (uint64_t)(s->trials - 1);
  return MIRS_OK;
}

/* Extend the store's prefix to all of g. */
mirs_status mirs__fp_extend(mirs__fp_store *s, const mirs_graph *g) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (!g)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "mirs__fp_extend: NULL graph");
  while (s->nt < g->nt) {
    int32_t t = s->nt, p = g->t[t].producer;
    if (p < 0)
      MIRS_CHECK(s->ctx, push_input(s, g, t));
    else
      MIRS_CHECK(s->ctx, mirs__fp_push_op(s, g, p));
  }
  return MIRS_OK;
}

/* Fingerprint all of g from scratch. */
mirs_status mirs__fp_compute_graph(mirs__fp_store *s, const mirs_graph *g) {
  if (!s)
    return MIRS_INVALID_ARG;
  mirs__fp_truncate(s, 0);
  MIRS_CHECK(s->ctx, mirs__fp_extend(s, g));
  return MIRS_OK;
}

/* Copy values of tensor t (bounds checked) from the backend. */
mirs_status mirs__fp_read(const mirs__fp_store *s, int32_t t, int trial, int64_t first,
                          int64_t count, mirs__fp_pair *out) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (t < 0 || t >= s->nt || trial < 0 || trial >= s->trials || first < 0 || count < 0 ||
      first > s->t[t].numel - count || (count > 0 && !out))
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG,
                     "mirs__fp_read: tensor %d trial %d [%lld, +%lld) out of range", (int)t, trial,
                     (long long)first, (long long)count);
  return s->backend->read(s->state, s, t, trial, first, count, out);
}

/* Digest of tensor t, cached in its metadata. */
mirs_status mirs__fp_digest(mirs__fp_store *s, int32_t t, uint64_t *out) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (t < 0 || t >= s->nt || !out)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "mirs__fp_digest: no tensor %d in the store",
                     (int)t);
  if (s->partial >= 0 && t >= s->partial)
    return MIRS_FAIL(s->ctx, MIRS_INTERNAL, "mirs__fp_digest: tensor %d holds trial 0 only",
                     (int)t);
  mirs__fp_meta *m = &s->t[t];
  if (!m->has_digest) {
    MIRS_CHECK(s->ctx, s->backend->digest(s->state, s, t, &m->digest));
    m->has_digest = true;
    s->stats.digests++;
  }
  *out = m->digest;
  return MIRS_OK;
}

/* Pairs compared per chunk on the stack. */
#define CMP_CHUNK 256

/* Compare ta in a with tb in b (shapes already equal); on a difference
 * *trial and *elem say where (-1 when only the digests differ). */
static mirs_status equal_at(mirs__fp_store *a, int32_t ta, mirs__fp_store *b, int32_t tb, bool *eq,
                            int *trial, int64_t *elem) {
  mirs_context *ctx = a->ctx;
  *eq = false;
  *trial = -1;
  *elem = -1;
  a->stats.compares++;
  uint64_t da, db;
  MIRS_CHECK(ctx, mirs__fp_digest(a, ta, &da));
  MIRS_CHECK(ctx, mirs__fp_digest(b, tb, &db));
  if (da != db)
    return MIRS_OK;
  bool qparts = !a->t[ta].exp_dep && !b->t[tb].exp_dep;
  int64_t n = a->t[ta].numel;
  if (a->backend == b->backend && a->backend->compare) {
    MIRS_CHECK(ctx, a->backend->compare(a->state, a, ta, b->state, b, tb, qparts, trial, elem));
    *eq = *trial < 0;
    return MIRS_OK;
  }
  mirs__fp_pair ba[CMP_CHUNK], bb[CMP_CHUNK];
  for (int j = 0; j < a->trials; j++)
    for (int64_t e = 0; e < n; e += CMP_CHUNK) {
      int64_t c = n - e < CMP_CHUNK ? n - e : CMP_CHUNK;
      MIRS_CHECK(ctx, mirs__fp_read(a, ta, j, e, c, ba));
      MIRS_CHECK(ctx, mirs__fp_read(b, tb, j, e, c, bb));
      for (int64_t i = 0; i < c; i++)
        if (ba[i].a != bb[i].a || (qparts && ba[i].b != bb[i].b)) {
          *trial = j;
          *elem = e + i;
          return MIRS_OK;
        }
    }
  *eq = true;
  return MIRS_OK;
}

/* Whether two stores can be compared (same trials and seed). */
static mirs_status same_setup(const mirs__fp_store *a, const mirs__fp_store *b) {
  if (a->trials != b->trials || a->seed != b->seed)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG,
                     "fingerprint stores differ in setup (trials %d vs %d, seed %llu vs %llu)",
                     a->trials, b->trials, (unsigned long long)a->seed,
                     (unsigned long long)b->seed);
  return MIRS_OK;
}

/* Trial 0 of ta in a against tb in b (both of shape sh) on the region
 * [0, tile->d[i]) of every dim: runs of contiguous elements (the trailing
 * dims the tile covers whole, and its part of the dim before them). */
static mirs_status region_equal(mirs__fp_store *a, int32_t ta, mirs__fp_store *b, int32_t tb,
                                const mirs__shape *sh, const mirs__shape *tile, bool *equal) {
  *equal = false;
  a->stats.compares++;
  bool qparts = !a->t[ta].exp_dep && !b->t[tb].exp_dep;
  int nd = sh->ndim, k = nd - 1;
  int64_t run = 1;
  for (; k >= 0; k--) {
    run *= tile->d[k];
    if (tile->d[k] != sh->d[k])
      break;
  }
  int64_t idx[MIRS_MAX_DIMS] = {0}; /* over dims [0, k) */
  mirs__fp_pair ba[CMP_CHUNK], bb[CMP_CHUNK];
  for (;;) {
    int64_t off = 0;
    for (int i = 0; i < nd; i++)
      off = off * sh->d[i] + (i < k ? idx[i] : 0);
    for (int64_t e = 0; e < run; e += CMP_CHUNK) {
      int64_t c = run - e < CMP_CHUNK ? run - e : CMP_CHUNK;
      MIRS_CHECK(a->ctx, mirs__fp_read(a, ta, 0, off + e, c, ba));
      MIRS_CHECK(a->ctx, mirs__fp_read(b, tb, 0, off + e, c, bb));
      for (int64_t i = 0; i < c; i++)
        if (ba[i].a != bb[i].a || (qparts && ba[i].b != bb[i].b))
          return MIRS_OK;
    }
    int i = k - 1;
    while (i >= 0 && ++idx[i] == tile->d[i])
      idx[i--] = 0;
    if (i < 0)
      break;
  }
  *equal = true;
  return MIRS_OK;
}

/* Tensor ta of ga in a against tb of gb in b: shapes, then every trial
 * (digests first) or, with first_only, trial 0 alone, on the corner tile
 * when tile is not NULL (fn names the caller in messages). */
static mirs_status compare_across(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                  mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                  bool *equal, bool first_only, const mirs__shape *tile,
                                  const char *fn) {
  if (!a || !b)
    return MIRS_INVALID_ARG;
  if (!ga || !gb || !equal || ta < 0 || ta >= a->nt || ta >= ga->nt || tb < 0 || tb >= b->nt ||
      tb >= gb->nt)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "%s: tensors %d and %d are not both fingerprinted",
                     fn, (int)ta, (int)tb);
  MIRS_CHECK(a->ctx, same_setup(a, b));
  *equal = false;
  const mirs__shape *sh = &ga->t[ta].shape;
  if (!mirs__shape_eq(sh, &gb->t[tb].shape))
    return MIRS_OK;
  if (!first_only) {
    int trial;
    int64_t elem;
    return equal_at(a, ta, b, tb, equal, &trial, &elem);
  }
  if (!tile)
    tile = sh;
  if (tile->ndim != sh->ndim)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "%s: tile of rank %d for a tensor of rank %d", fn,
                     tile->ndim, sh->ndim);
  for (int i = 0; i < sh->ndim; i++)
    if (tile->d[i] < 1 || tile->d[i] > sh->d[i])
      return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "%s: tile dim %d (%lld) outside the tensor", fn, i,
                       (long long)tile->d[i]);
  return region_equal(a, ta, b, tb, sh, tile, equal);
}

/* Tensor equality across stores (shape and fingerprints). */
mirs_status mirs__fp_tensor_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                  mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                  bool *equal) {
  return compare_across(a, ga, ta, b, gb, tb, equal, false, NULL, __func__);
}

/* Trial-0 equality across stores (shape and trial-0 fingerprints). */
mirs_status mirs__fp_trial0_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                  mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                  bool *equal) {
  return compare_across(a, ga, ta, b, gb, tb, equal, true, NULL, __func__);
}

/* Trial-0 equality on the corner of tile (see the header). */
mirs_status mirs__fp_trial0_corner_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                         mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                         const mirs__shape *tile, bool *equal) {
  if (!a)
    return MIRS_INVALID_ARG;
  if (!tile)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "%s: NULL tile", __func__);
  return compare_across(a, ga, ta, b, gb, tb, equal, true, tile, __func__);
}

/* The digest of g's outputs, in order. */
mirs_status mirs__fp_output_digest(mirs__fp_store *s, const mirs_graph *g, uint64_t *out) {
  if (!s)
    return MIRS_INVALID_ARG;
  uint64_t h = mirs__hash_mix(0, (uint64_t)g->nout);
  for (int32_t o = 0; o < g->nout; o++) {
    uint64_t d;
    MIRS_CHECK(s->ctx, mirs__fp_digest(s, g->outputs[o], &d));
    h = mirs__hash_mix(h, d);
  }
  *out = h;
  return MIRS_OK;
}

/* Compare outputs by name and fill the verdict. */
mirs_status mirs__fp_compare_outputs(mirs__fp_store *ref, const mirs_graph *rg,
                                     mirs__fp_store *cand, const mirs_graph *cg,
                                     mirs__fp_verdict *v) {
  if (!ref || !cand)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = ref->ctx;
  if (!rg || !cg || !v)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__fp_compare_outputs: NULL argument");
  MIRS_CHECK(ctx, same_setup(ref, cand));
  if (ref->nt < rg->nt || cand->nt < cg->nt)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "mirs__fp_compare_outputs: a store holds fewer tensors than its graph "
                     "(compute the graph first)");
  memset(v, 0, sizeof *v);
  v->equal = true;
  v->ref_output = -1;
  for (int32_t o = 0; o < rg->nout && v->equal; o++) {
    int32_t r = rg->outputs[o], c = -1;
    const char *name = rg->t[r].name;
    for (int32_t i = 0; i < cg->nout && c < 0; i++)
      if (strcmp(cg->t[cg->outputs[i]].name, name) == 0)
        c = cg->outputs[i];
    v->ref_output = r;
    v->equal = false;
    if (c < 0) {
      snprintf(v->why, sizeof v->why, "reference output %s is not an output of the candidate",
               name);
      break;
    }
    const mirs__fp_meta *mr = &ref->t[r], *mc = &cand->t[c];
    v->degree = umax(v->degree, umax(sat_add(mr->degree, mc->degree), umax(mr->inner, mc->inner)));
    if (!mirs__shape_eq(&rg->t[r].shape, &cg->t[c].shape)) {
      char sa[96], sb[96];
      snprintf(v->why, sizeof v->why, "output %s: shape %s in the reference, %s in the candidate",
               name, mirs__shape_str(&rg->t[r].shape, sa, sizeof sa),
               mirs__shape_str(&cg->t[c].shape, sb, sizeof sb));
      break;
    }
    bool eq;
    int trial;
    int64_t elem;
    MIRS_CHECK(ctx, equal_at(ref, r, cand, c, &eq, &trial, &elem));
    if (!eq) {
      if (trial < 0)
        snprintf(v->why, sizeof v->why, "output %s: fingerprint digests differ", name);
      else
        snprintf(v->why, sizeof v->why, "output %s: fingerprints differ (trial %d, element %lld)",
                 name, trial, (long long)elem);
      break;
    }
    v->equal = true;
  }
  if (v->equal)
    v->ref_output = -1;
  v->log2_bound = mirs__fp_bound_log2(v->degree, ref->trials);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- CPU backend */

/* CPU backend state: the value arena (trial-major per tensor, addressed by
 * mirs__fp_meta.off) and scratch that only grows. */
#define INV_MEMO 16

typedef struct cpu_state {
  mirs__fp_pair *arena;
  size_t cap;
  mirs__fp_pair *tile; /* one trial's block tiles, at s->bt[i].off */
  size_t tilecap;
  mirs__fp_pair *inv; /* inverted denominators of div */
  size_t invcap;
  uint64_t *acc; /* matmul row accumulators (2 per column) */
  size_t acccap;
  uint32_t *gpow;         /* G^i and G^(i * EXP_SPLIT), i < EXP_SPLIT (lazily built) */
  uint64_t inv_memo_n[INV_MEMO]; /* inv_count: n of each slot (0: empty) */
  mirs__fp_pair inv_memo[INV_MEMO];
  uint64_t tile_elements; /* tile pairs written by the current op */
} cpu_state;

/* exp splits b < Q < 2^30 into 15-bit halves: G^b = G^lo * (G^EXP_SPLIT)^hi. */
#define EXP_BITS 15
#define EXP_SPLIT (UINT32_C(1) << EXP_BITS)

/* Build the two power tables of G the first time an exp is computed. */
static mirs_status exp_tables(mirs_context *ctx, cpu_state *c) {
  if (c->gpow)
    return MIRS_OK;
  uint32_t *t = mirs__core_alloc(ctx, 2 * EXP_SPLIT * sizeof *t);
  if (!t)
    return MIRS_NOMEM;
  uint32_t step = pow_p(MIRS__FP_G, EXP_SPLIT);
  t[0] = 1;
  t[EXP_SPLIT] = 1;
  for (uint32_t i = 1; i < EXP_SPLIT; i++) {
    t[i] = mul_mod(t[i - 1], MIRS__FP_G, P);
    t[EXP_SPLIT + i] = mul_mod(t[EXP_SPLIT + i - 1], step, P);
  }
  c->gpow = t;
  return MIRS_OK;
}

/* Values of tensor t in trial j. */
static mirs__fp_pair *kval(cpu_state *c, const mirs__fp_store *s, int32_t t, int j) {
  return c->arena + s->t[t].off + (uint64_t)j * (uint64_t)s->t[t].numel;
}

/* Zero the q-parts of n values (the exp-dependent canonical form). */
static void zero_b(mirs__fp_pair *y, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    y[i].b = 0;
}

/* y = x with its last two dims swapped (xs: x's shape). */
static void fp_transpose(const mirs__shape *xs, const mirs__fp_pair *x, mirs__fp_pair *y) {
  MIRS__TRANSPOSE_LAST2(xs, x, y);
}

/* y = e(x) elementwise for n values of an op described by e (see
 * mirs__fp_elem_of). */
static void fp_elem(const mirs__fp_elem *e, mirs_op op, uint64_t key, const mirs__fp_pair *x,
                    mirs__fp_pair *y, int64_t n) {
  mirs__fp_pair zero = {0, 0};
  for (int64_t i = 0; i < n; i++) {
    mirs__fp_pair v = x[i];
    if (v.a == MIRS__FP_MASKED) { /* -inf (mask_use_ok admits only ops keeping it) */
      y[i] = v;
      continue;
    }
    switch (e->code) {
    case MIRS__FP_E_NEG:
      y[i] = fp_sub(zero, v);
      break;
    case MIRS__FP_E_ADDC:
      y[i] = fp_add(v, e->c);
      break;
    case MIRS__FP_E_MULC:
      y[i] = fp_mul(v, e->c);
      break;
    case MIRS__FP_E_RSUBC:
      y[i] = fp_sub(e->c, v);
      break;
    case MIRS__FP_E_RDIVC:
      y[i] = fp_mul(e->c, fp_inv(v));
      break;
    case MIRS__FP_E_POWN:
      y[i].a = pow_p(v.a, e->n);
      y[i].b = pow_q(v.b, e->n);
      break;
    case MIRS__FP_E_EVEN: { /* (the representative of {v, -v}: a, then b, smaller) */
      mirs__fp_pair m = fp_sub(zero, v);
      y[i] = mirs__fp_prf(key ^ e->ktweak, op,
                          m.a < v.a || (m.a == v.a && m.b < v.b) ? m : v);
      break;
    }
    default:
      y[i] = mirs__fp_prf(key ^ e->ktweak, op, v);
      break;
    }
  }
}

/* y = op(x) elementwise for n values (EXP, SQUARE, the PRFs and the ops
 * of mirs__fp_elem_of); gpow are exp's power tables. */
static void fp_unary(mirs_op op, const mirs__scalar *cst, uint64_t key, const uint32_t *gpow,
                     const mirs__fp_pair *x, mirs__fp_pair *y, int64_t n) {
  mirs__fp_elem e;
  if (mirs__fp_elem_of(op, cst, &e)) {
    fp_elem(&e, op, key, x, y, n);
    return;
  }
  switch (op) {
  case MIRS_OP_EXP:
    for (int64_t i = 0; i < n; i++) {
      uint32_t b = x[i].b;
      y[i].a = b == MIRS__FP_MASKED /* exp(-inf) = 0 */
                   ? 0
                   : mul_mod(gpow[b & (EXP_SPLIT - 1)], gpow[EXP_SPLIT + (b >> EXP_BITS)], P);
      y[i].b = 0;
    }
    break;
  case MIRS_OP_SQUARE:
    for (int64_t i = 0; i < n; i++)
      y[i] = fp_mul(x[i], x[i]);
    break;
  default:
    for (int64_t i = 0; i < n; i++)
      y[i] = mirs__fp_prf(key, op, x[i]);
    break;
  }
}

/* y = causal_mask(x) on shape s: the sentinel where the global column is
 * past the global row + (n - m) (org = {row0, col0, m, n}, NULL: x is the
 * whole tensor), x elsewhere: the float64 interpreter's ev_mask. */
static void fp_mask(const mirs__shape *s, const mirs__fp_pair *x, mirs__fp_pair *y,
                    const int64_t *org) {
  static const mirs__fp_pair masked = {MIRS__FP_MASKED, MIRS__FP_MASKED};
  MIRS__CAUSAL_MASK(mirs__fp_pair, s, org, x, y, masked);
}

/* x + y or x - y where either may be the masked sentinel (-inf): -inf
 * absorbs a finite value, and -inf - -inf is -inf (the interpreter's
 * convention).  finite - (-inf) = +inf has no value: *bad is set. */
static inline mirs__fp_pair fp_add_masked(mirs_op op, mirs__fp_pair x, mirs__fp_pair y,
                                          bool *bad) {
  if (x.a == MIRS__FP_MASKED)
    return x;
  if (y.a == MIRS__FP_MASKED) {
    *bad = *bad || op == MIRS_OP_SUB;
    return y;
  }
  return op == MIRS_OP_ADD ? fp_add(x, y) : fp_sub(x, y);
}

/* o = a op b (ADD, SUB, MUL) with size-1 broadcasting; os the result shape;
 * masked: an operand may hold the masked sentinel (ADD, SUB only). */
static void fp_binary(mirs_op op, const mirs__shape *as, const mirs__fp_pair *a,
                      const mirs__shape *bs, const mirs__fp_pair *b, const mirs__shape *os,
                      mirs__fp_pair *o, bool masked, bool *bad) {
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  int r = os->ndim;
  mirs__shape_bcast_strides(as, os, sa);
  mirs__shape_bcast_strides(bs, os, sb);
  int64_t last = r > 0 ? os->d[r - 1] : 1;
  int64_t la = r > 0 ? sa[r - 1] : 0, lb = r > 0 ? sb[r - 1] : 0;
  int64_t rows = mirs__shape_numel(os) / last;
  for (int64_t row = 0; row < rows; row++) {
    const mirs__fp_pair *pa = a + (r > 1 ? mirs__shape_row_offset(os, r - 1, sa, row) : 0);
    const mirs__fp_pair *pb = b + (r > 1 ? mirs__shape_row_offset(os, r - 1, sb, row) : 0);
    mirs__fp_pair *po = o + row * last;
    if (masked)
      for (int64_t j = 0; j < last; j++)
        po[j] = fp_add_masked(op, pa[j * la], pb[j * lb], bad);
    else if (op == MIRS_OP_ADD)
      for (int64_t j = 0; j < last; j++)
        po[j] = fp_add(pa[j * la], pb[j * lb]);
    else if (op == MIRS_OP_SUB)
      for (int64_t j = 0; j < last; j++)
        po[j] = fp_sub(pa[j * la], pb[j * lb]);
    else
      for (int64_t j = 0; j < last; j++)
        po[j] = fp_mul(pa[j * la], pb[j * lb]);
  }
}

/* x mod P and x mod Q for any 64-bit x without a division, from P =
 * 2^31 - 69 and Q = 2^30 - 35: folding the high part (2^31 = 69 mod P)
 * twice leaves x below 2P (below 2Q), then one subtraction.  Plain shifts,
 * multiplies by small constants and adds, so a loop of them vectorises. */
_Static_assert(P == (UINT32_C(1) << 31) - 69 && Q == (UINT32_C(1) << 30) - 35,
               "fold_p and fold_q assume the moduli's form");
static inline uint32_t fold_p(uint64_t x) {
  x = (x >> 31) * 69 + (x & 0x7fffffff); /* < 2^40 */
  x = (x >> 31) * 69 + (x & 0x7fffffff); /* < 2^31 + 35328 < 2P */
  return (uint32_t)(x >= P ? x - P : x);
}
static inline uint32_t fold_q(uint64_t x) {
  x = (x >> 30) * 35 + (x & 0x3fffffff); /* < 2^40 */
  x = (x >> 30) * 35 + (x & 0x3fffffff); /* < 2^30 + 35840 < 2Q */
  return (uint32_t)(x >= Q ? x - Q : x);
}

/* A pair read as one 64-bit word (so a loop over pairs vectorises over
 * 64-bit lanes, four to an AVX2 register, and small tiles still fill
 * one) and its two parts. */
_Static_assert(sizeof(mirs__fp_pair) == sizeof(uint64_t), "a pair is two packed 32-bit parts");
/* (Each part cast through uint32_t: the compiler then multiplies it
 * 32x32->64 bits, one instruction per four lanes.) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PAIR_A(v) ((uint64_t)(uint32_t)((v) >> 32))
#define PAIR_B(v) ((uint64_t)(uint32_t)(v))
#else
#define PAIR_A(v) ((uint64_t)(uint32_t)(v))
#define PAIR_B(v) ((uint64_t)(uint32_t)((v) >> 32))
#endif

/* One output row of a matmul: orow[j] = sum over p < k of arow[p] *
 * b[p][j] (b row-major k x n), in both fields.  acc holds 2n accumulators,
 * lazily reduced: each stays below 2^63 by subtracting CP or CQ (a
 * multiple of its modulus) when it reaches it (factors are below 2^31, so
 * a product is below 2^62); the final remainder is the same whatever the
 * order of the additions.  One call per row, both fields in one pass over
 * b's pairs, so small tiles pay no per-(row, p) call or a split copy of b.
 * Written to vectorise (a 32x32->64-bit multiply per element); on x86-64
 * with GCC an AVX2 clone is picked at load time.  Not under
 * ThreadSanitizer: the clone's resolver runs while the program is
 * relocated, before the TSan runtime is up, and its instrumented code
 * crashes there. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&     \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default"), optimize("tree-vectorize")))
#endif
static void fp_matmul_row(const mirs__fp_pair *restrict arow, const mirs__fp_pair *restrict b,
                          mirs__fp_pair *restrict orow, int64_t k, int64_t n,
                          uint64_t *restrict acc) {
  uint64_t *restrict acca = acc, *restrict accb = acc + n;
  for (int64_t j = 0; j < 2 * n; j++)
    acc[j] = 0;
  for (int64_t p = 0; p < k; p++) {
    uint64_t xa = arow[p].a, xb = arow[p].b;
    const mirs__fp_pair *restrict br = b + p * n;
    for (int64_t j = 0; j < n; j++) {
      uint64_t v;
      memcpy(&v, &br[j], sizeof v);
      uint64_t ta = acca[j] + xa * PAIR_A(v), tb = accb[j] + xb * PAIR_B(v);
      acca[j] = ta - ((0 - (ta >> 63)) & CP);
      accb[j] = tb - ((0 - (tb >> 63)) & CQ);
    }
  }
  for (int64_t j = 0; j < n; j++) {
    orow[j].a = fold_p(acca[j]);
    orow[j].b = fold_q(accb[j]);
  }
}

/* o = a @ b over the last two dims, batch dims broadcast; acc holds 2n
 * scratch accumulators (fp_matmul_row). */
static bool fp_matmul(const mirs_context *ctx, const mirs__shape *as, const mirs__fp_pair *a,
                      const mirs__shape *bs, const mirs__fp_pair *b, const mirs__shape *os,
                      mirs__fp_pair *o, uint64_t *acc) {
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  int r = os->ndim;
  int64_t m = os->d[r - 2], n = os->d[r - 1], k = as->d[as->ndim - 1];
  mirs__shape_bcast_strides(as, os, sa);
  mirs__shape_bcast_strides(bs, os, sb);
  int64_t batches = mirs__shape_numel(os) / (m * n);
  for (int64_t bi = 0; bi < batches; bi++) {
    const mirs__fp_pair *pa = a + mirs__shape_row_offset(os, r - 2, sa, bi);
    const mirs__fp_pair *pb = b + mirs__shape_row_offset(os, r - 2, sb, bi);
    mirs__fp_pair *po = o + bi * m * n;
    for (int64_t i = 0; i < m; i++) {
      if (mirs__core_stopping(ctx)) /* (one load per output row) */
        return false;
      fp_matmul_row(pa + i * k, pb, po + i * n, k, n, acc);
    }
  }
  return true;
}

/* y (x's shape, size 1 at dim) = sum of x over dim; added into y when add
 * is set, else y is overwritten. */
#define FP_ADD(acc, v) ((acc) = fp_add((acc), (v)))
static void fp_sum(const mirs__shape *xs, const mirs__fp_pair *x, int dim, mirs__fp_pair *y,
                   bool add) {
  MIRS__SUM_OVER_DIM(mirs__fp_pair, xs, x, dim, y, add, FP_ADD);
}
#undef FP_ADD

/* y (x's shape, size 1 at dim) = keyed max of x over dim (the keyed min,
 * fp_min, when least), merged into y when add is set (ACCUM_MAX,
 * ACCUM_MIN), else y starts at fp_max_none (the start of both). */
#define FP_MAXM(acc, v) ((acc) = least ? fp_min(key, (acc), (v)) : fp_max(key, (acc), (v)))
static void fp_maxred(uint64_t key, bool least, const mirs__shape *xs, const mirs__fp_pair *x,
                      int dim, mirs__fp_pair *y, bool add) {
  if (!add) {
    mirs__shape ys = *xs;
    ys.d[dim] = 1;
    for (int64_t i = 0, n = mirs__shape_numel(&ys); i < n; i++)
      y[i] = fp_max_none;
  }
  MIRS__SUM_OVER_DIM(mirs__fp_pair, xs, x, dim, y, true, FP_MAXM);
}
#undef FP_MAXM

/* One ACCUM_ONLINE step (see the header) on acc (shape ys) and its running
 * max after it; exp of a q-part difference through the power tables. */
static void fp_online(uint64_t key, const uint32_t *gpow, const mirs__shape *ys,
                      const mirs__fp_pair *y, const mirs__shape *ms, const mirs__fp_pair *m,
                      mirs__fp_pair *acc) {
  int64_t n = mirs__shape_numel(ys);
  mirs__fp_pair *run = acc + n;
  for (int64_t e = 0; e < n; e++) {
    mirs__fp_pair mv = m[mirs__shape_bcast_index(ms, ys, e)];
    mirs__fp_pair nm = fp_max(key, run[e], mv);
    uint32_t v = 0; /* (a masked shift, MIRS__FP_MASKED: no contribution, as in interp.c) */
    if (mv.a != MIRS__FP_MASKED) {
      uint32_t d = sub_mod(mv.b, nm.b, Q);
      uint32_t ey = mul_mod(gpow[d & (EXP_SPLIT - 1)], gpow[EXP_SPLIT + (d >> EXP_BITS)], P);
      v = mul_mod(y[e].a, ey, P);
    }
    if (run[e].a != UINT32_MAX) {
      uint32_t r = sub_mod(run[e].b, nm.b, Q);
      uint32_t er = mul_mod(gpow[r & (EXP_SPLIT - 1)], gpow[EXP_SPLIT + (r >> EXP_BITS)], P);
      v = add_mod(v, mul_mod(acc[e].a, er, P), P);
    }
    acc[e].a = v;
    acc[e].b = 0;
    run[e] = nm;
  }
}

/* Row sums of x^2 over the last dim: y[row] = (add ? y[row] : 0) + sum. */
static void fp_sumsq_last(const mirs__shape *xs, const mirs__fp_pair *x, mirs__fp_pair *y,
                          bool add) {
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  int64_t rows = mirs__shape_numel(xs) / last;
  for (int64_t row = 0; row < rows; row++) {
    const mirs__fp_pair *px = x + row * last;
    mirs__fp_pair s = add ? y[row] : fp_const(0);
    for (int64_t j = 0; j < last; j++)
      s = fp_add(s, fp_mul(px[j], px[j]));
    y[row] = s;
  }
}

/* fp_inv(fp_const(n)), remembered for the last few n (a block op's
 * counts repeat: every call of one op has the same n). */
static mirs__fp_pair inv_count(cpu_state *c, uint64_t n) {
  size_t i = (size_t)(n % INV_MEMO);
  if (c->inv_memo_n[i] != n) {
    c->inv_memo_n[i] = n;
    c->inv_memo[i] = fp_inv(fp_const(n));
  }
  return c->inv_memo[i];
}

/* The exact field element of a finite real v >= 0: v = m 2^e with an
 * integer m < 2^53 (every double is such a dyadic rational), so v maps to
 * m * inv(2)^-e in each part (P and Q are odd, 2 is a unit). */
mirs__fp_pair mirs__fp_real(double v) {
  if (!(v > 0.0) || !isfinite(v))
    return fp_const(0);
  /* The shortest decimal of v, as a number operand written that way is
   * (mirs__fp_scalar): layer_norm(x, eps=1e-5) and the spelled-out
   * sqrt(add(V, 1e-5)) meet the same field element.  Past the decimal
   * range (subnormals), v's exact binary value. */
  mirs__scalar dec;
  if (mirs__scalar_of_double(v, &dec))
    return mirs__fp_scalar(&dec);
  int ex;
  double f = frexp(v, &ex);
  mirs__fp_pair m = fp_const((uint64_t)ldexp(f, 53)), two = fp_const(2);
  int e = ex - 53;
  mirs__fp_pair t = e >= 0 ? two : fp_inv(two);
  uint64_t k = (uint64_t)(e >= 0 ? e : -e);
  mirs__fp_pair pw = {pow_p(t.a, k), pow_q(t.b, k)};
  return fp_mul(m, pw);
}

/* The row norms over the last dim (size n), y = (x - mu) * inv(sqrt_prf(V
 * + eps)) with V = sum((x - mu)^2) * inv(n): layer_norm (centre: mu =
 * sum(x) * inv(n), eps the exact field element of the attribute, mirs__fp_real)
 * and rms_norm (mu = 0, eps = 0).  The mean and variance are exact in the
 * field, sqrt is the keyed PRF; the rows' inverses in one batch (scratch:
 * c->inv, 3 * rows pairs). */
static mirs_status fp_rownorm(mirs_context *ctx, cpu_state *c, uint64_t key,
                              const mirs__shape *xs, const mirs__fp_pair *x, bool centre,
                              double eps, mirs__fp_pair *y, bool exp_dep) {
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  int64_t rows = mirs__shape_numel(xs) / last;
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&c->inv, &c->invcap, 3 * (size_t)rows + 1,
                                  sizeof *c->inv));
  mirs__fp_pair invn = inv_count(c, (uint64_t)last), fe = mirs__fp_real(eps);
  mirs__fp_pair *r = c->inv, *ir = c->inv + rows, *mu = c->inv + 2 * rows;
  for (int64_t row = 0; row < rows; row++) {
    const mirs__fp_pair *px = x + row * last;
    mirs__fp_pair s = fp_const(0), v = fp_const(0);
    for (int64_t j = 0; centre && j < last; j++)
      s = fp_add(s, px[j]);
    mu[row] = fp_mul(s, invn);
    for (int64_t j = 0; j < last; j++) {
      mirs__fp_pair d = fp_sub(px[j], mu[row]);
      v = fp_add(v, fp_mul(d, d));
    }
    v = fp_add(fp_mul(v, invn), fe);
    if (exp_dep)
      v.b = 0;
    r[row] = mirs__fp_prf(key, MIRS_OP_SQRT, v);
  }
  fp_inv_batch(r, ir, rows);
  for (int64_t row = 0; row < rows; row++)
    for (int64_t j = 0; j < last; j++)
      y[row * last + j] = fp_mul(fp_sub(x[row * last + j], mu[row]), ir[row]);
  return MIRS_OK;
}

/* Compute op (a compute kind) on one trial's argument values into o of
 * shape os; the routine shared by kernel ops and block ops.  Grows the
 * div and matmul scratch as needed.  out_exp: the result is exp-dependent
 * (its q-parts are zeroed). */
static mirs_status fp_compute(mirs_context *ctx, cpu_state *c, mirs_op op, int dim, double eps,
                              const mirs__scalar *cst, uint64_t key,
                              const mirs__shape *const *ins, const mirs__fp_pair *const *inv,
                              const mirs__shape *os, mirs__fp_pair *o, bool in_exp, bool out_exp,
                              bool masked, const int64_t *org) {
  int64_t n = mirs__shape_numel(os);
  if (op == MIRS_OP_CAUSAL_MASK) {
    fp_mask(os, inv[0], o, org);
    return MIRS_OK;
  }
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
    if (op == MIRS_OP_EXP)
      MIRS_CHECK(ctx, exp_tables(ctx, c));
    fp_unary(op, cst, key, c->gpow, inv[0], o, n);
    break;
  case MIRS__KIND_TRANSPOSE:
    fp_transpose(ins[0], inv[0], o);
    break;
  case MIRS__KIND_BINARY:
    if (op == MIRS_OP_DIV) {
      int64_t nb = mirs__shape_numel(ins[1]);
      MIRS_CHECK(
          ctx, mirs__core_grow(ctx, (void **)&c->inv, &c->invcap, (size_t)nb + 1, sizeof *c->inv));
      fp_inv_batch(inv[1], c->inv, nb);
      fp_binary(MIRS_OP_MUL, ins[0], inv[0], ins[1], c->inv, os, o, false, NULL);
    } else {
      bool bad = false;
      fp_binary(op, ins[0], inv[0], ins[1], inv[1], os, o, masked, &bad);
      if (bad)
        return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                         "sub: a finite value minus causal_mask's -inf is +inf, which has no "
                         "finite-field fingerprint; refusing to verify this graph");
    }
    break;
  case MIRS__KIND_MATMUL: {
    size_t nn = (size_t)os->d[os->ndim - 1];
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&c->acc, &c->acccap, 2 * nn + 1, sizeof *c->acc));
    if (!fp_matmul(ctx, ins[0], inv[0], ins[1], inv[1], os, o, c->acc))
      return mirs__core_stopped(ctx, "fingerprinting a matmul");
    break;
  }
  case MIRS__KIND_REDUCE:
    if (op == MIRS_OP_MAX || op == MIRS_OP_MIN)
      fp_maxred(key, op == MIRS_OP_MIN, ins[0], inv[0], dim, o, false);
    else
      fp_sum(ins[0], inv[0], dim, o, false);
    if (op == MIRS_OP_MEAN) { /* times the exact field inverse of the count */
      mirs__fp_pair ic = inv_count(c, (uint64_t)ins[0]->d[dim]);
      for (int64_t i = 0; i < n; i++)
        o[i] = fp_mul(o[i], ic);
    }
    break;
  case MIRS__KIND_RMSNORM:
    MIRS_CHECK(ctx, fp_rownorm(ctx, c, key, ins[0], inv[0], op == MIRS_OP_LAYER_NORM, eps, o,
                               in_exp));
    break;
  default:
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "%s cannot be fingerprinted as a compute op",
                     mirs__graph_ops[op].name);
  }
  if (out_exp && !masked)
    zero_b(o, n);
  else if (out_exp) /* (the sentinel keeps both parts) */
    for (int64_t i = 0; i < n; i++)
      o[i].b = o[i].a == MIRS__FP_MASKED ? MIRS__FP_MASKED : 0;
  return MIRS_OK;
}

/* Make the arena hold s->used pairs. */
static mirs_status cpu_reserve(cpu_state *c, mirs__fp_store *s) {
  return mirs__core_grow(s->ctx, (void **)&c->arena, &c->cap, (size_t)s->used + 1,
                         sizeof *c->arena);
}

/* Create the CPU state. */
static mirs_status cpu_open(mirs__fp_store *s, void **state) {
  cpu_state *c = mirs__core_calloc(s->ctx, 1, sizeof *c);
  if (!c)
    return MIRS_NOMEM;
  *state = c;
  return MIRS_OK;
}

/* Free the CPU state. */
static void cpu_release(void *state, mirs__fp_store *s) {
  cpu_state *c = state;
  if (!c)
    return;
  mirs__core_free(s->ctx, c->arena);
  mirs__core_free(s->ctx, c->tile);
  mirs__core_free(s->ctx, c->inv);
  mirs__core_free(s->ctx, c->acc);
  mirs__core_free(s->ctx, c->gpow);
  mirs__core_free(s->ctx, c);
}

/* Generate input t for every trial (the mapping in the header). */
static mirs_status cpu_input(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t t) {
  cpu_state *c = state;
  MIRS_CHECK(s->ctx, cpu_reserve(c, s));
  uint64_t sub = mirs__hash_str(0, g->t[t].name);
  int64_t n = s->t[t].numel;
  for (int j = 0; j < s->trials; j++) {
    uint64_t key = mirs__fp_trial_key(s->seed, j);
    mirs__fp_pair *y = kval(c, s, t, j);
    for (int64_t e = 0; e < n; e++) {
      if ((e & 0xffff) == 0 && mirs__core_stopping(s->ctx))
        return mirs__core_stopped(s->ctx, "generating inputs");
      y[e] = mirs__fp_input_value(key, sub, (uint64_t)e);
    }
  }
  return MIRS_OK;
}

/* Run block compute op o of bg on the tiles of one trial. */
static mirs_status block_compute(mirs_context *ctx, cpu_state *c, const mirs__fp_store *s,
                                 const mirs__bgraph *bg, const mirs__bop *o, uint64_t key,
                                 const int64_t *org) {
  const mirs__shape *ins[2] = {NULL, NULL};
  const mirs__fp_pair *inv[2] = {NULL, NULL};
  for (int a = 0; a < o->nin && a < 2; a++) {
    ins[a] = &bg->t[o->in[a]].shape;
    inv[a] = c->tile + s->bt[o->in[a]].off;
  }
  const mirs__fp_meta *m = &s->bt[o->out];
  bool masked = s->bt[o->in[0]].masked || (o->nin > 1 && s->bt[o->in[1]].masked);
  MIRS_CHECK(ctx, fp_compute(ctx, c, o->op, o->dim, o->eps, o->cst, key, ins, inv,
                             &bg->t[o->out].shape,
                             c->tile + m->off, s->bt[o->in[0]].exp_dep, m->exp_dep, masked, org));
  c->tile_elements += (uint64_t)m->numel;
  return MIRS_OK;
}

/* State of one custom kernel's evaluation for one trial, for the
 * schedule callbacks (graph/schedule.c: the same order and tile placement
 * as the float64 interpreter and the generated CUDA). */
typedef struct fp_custom {
  cpu_state *c;
  const mirs__fp_store *s;
  const mirs_graph *g;
  const mirs__bgraph *bg;
  int j;
  uint64_t key;
  int32_t b[MIRS__GRID], f; /* the block and iteration running (causal_mask) */
} fp_custom;

/* The block and iteration about to run. */
static void fc_at(void *user, const int32_t b[MIRS__GRID], int32_t f) {
  fp_custom *u = user;
  memcpy(u->b, b, sizeof u->b);
  u->f = f;
}

/* ZERO: an accumulator starts at zero in every block; a running max (and
 * ACCUM_ONLINE's, after its tile) and a running min at fp_max_none. */
static mirs_status fc_zero(void *user, const mirs__bop *o) {
  fp_custom *u = user;
  int64_t n = u->s->bt[o->out].numel;
  mirs__fp_pair *acc = u->c->tile + u->s->bt[o->out].off;
  memset(acc, 0, (size_t)n * sizeof *acc);
  if (o->op == MIRS_OP_ACCUM_MAX || o->op == MIRS_OP_ACCUM_MIN || o->op == MIRS_OP_ACCUM_ONLINE)
    for (int64_t e = 0; e < n; e++)
      acc[(o->op == MIRS_OP_ACCUM_ONLINE ? n : 0) + e] = fp_max_none;
  return MIRS_OK;
}

/* LOAD: the tile at off of the source tensor's trial-j values. */
static mirs_status fc_load(void *user, const mirs__bop *o, const int64_t off[MIRS_MAX_DIMS]) {
  fp_custom *u = user;
  if (mirs__core_stopping(u->s->ctx)) /* (one load per tile: stops within a tile's work) */
    return mirs__core_stopped(u->s->ctx, "fingerprinting a custom kernel");
  if (!mirs__shape_copy_tile(&u->g->t[o->src].shape, kval(u->c, u->s, o->src, u->j),
                             &u->bg->t[o->out].shape, u->c->tile + u->s->bt[o->out].off, off,
                             sizeof(mirs__fp_pair), false))
    return MIRS_FAIL(u->s->ctx, MIRS_INTERNAL, "block input %s: tile outside tensor %s",
                     u->bg->t[o->out].name, u->g->t[o->src].name);
  u->c->tile_elements += (uint64_t)u->s->bt[o->out].numel;
  return MIRS_OK;
}

/* COMPUTE: a block op on the tiles (either phase). */
static mirs_status fc_compute(void *user, const mirs__bop *o) {
  fp_custom *u = user;
  int64_t org[4];
  if (o->op == MIRS_OP_CAUSAL_MASK && !mirs__sched_mask_frame(u->g, u->bg, o, u->b, u->f, org))
    return MIRS_FAIL(u->s->ctx, MIRS_INTERNAL, "block causal_mask %s has no tile position",
                     u->bg->t[o->out].name);
  return block_compute(u->s->ctx, u->c, u->s, u->bg, o, u->key, org);
}

/* ACCUM*: this iteration's contribution. */
static mirs_status fc_accum(void *user, const mirs__bop *o) {
  fp_custom *u = user;
  const mirs__shape *xs = &u->bg->t[o->in[0]].shape;
  const mirs__fp_pair *x = u->c->tile + u->s->bt[o->in[0]].off;
  mirs__fp_pair *acc = u->c->tile + u->s->bt[o->out].off;
  if (o->op == MIRS_OP_ACCUM) {
    int64_t n = u->s->bt[o->out].numel;
    for (int64_t e = 0; e < n; e++)
      acc[e] = fp_add(acc[e], x[e]);
  } else if (o->op == MIRS_OP_ACCUM_SUM) {
    fp_sum(xs, x, o->dim, acc, true);
  } else if (o->op == MIRS_OP_ACCUM_MAX || o->op == MIRS_OP_ACCUM_MIN) {
    fp_maxred(u->key, o->op == MIRS_OP_ACCUM_MIN, xs, x, o->dim, acc, true);
  } else if (o->op == MIRS_OP_ACCUM_ONLINE) {
    MIRS_CHECK(u->s->ctx, exp_tables(u->s->ctx, u->c));
    fp_online(u->key, u->c->gpow, xs, x, &u->bg->t[o->in[1]].shape,
              u->c->tile + u->s->bt[o->in[1]].off, acc);
  } else {
    fp_sumsq_last(xs, x, acc, true);
  }
  u->c->tile_elements += (uint64_t)u->s->bt[o->out].numel;
  return MIRS_OK;
}

/* FINISH: an RMS accumulator becomes sqrt(total / count + eps) (sqrt a
 * PRF, eps the exact field element of its attribute, mirs__fp_real). */
static mirs_status fc_finish(void *user, const mirs__bop *o) {
  fp_custom *u = user;
  uint64_t count = (uint64_t)mirs__sched_rms_count(u->bg, o);
  mirs__fp_pair ic = inv_count(u->c, count), fe = mirs__fp_real(o->eps);
  bool xexp = u->s->bt[o->in[0]].exp_dep;
  int64_t n = u->s->bt[o->out].numel;
  mirs__fp_pair *acc = u->c->tile + u->s->bt[o->out].off;
  for (int64_t e = 0; e < n; e++) {
    mirs__fp_pair v = fp_add(fp_mul(acc[e], ic), fe);
    if (xexp)
      v.b = 0;
    acc[e] = mirs__fp_prf(u->key, MIRS_OP_SQRT, v);
  }
  return MIRS_OK;
}

/* STORE: a post tile into its output tensor's trial-j values at off. */
static mirs_status fc_store(void *user, const mirs__bop *o, const int64_t off[MIRS_MAX_DIMS]) {
  fp_custom *u = user;
  if (!mirs__shape_copy_tile(&u->g->t[o->dst].shape, kval(u->c, u->s, o->dst, u->j),
                             &u->bg->t[o->in[0]].shape, u->c->tile + u->s->bt[o->in[0]].off, off,
                             sizeof(mirs__fp_pair), true))
    return MIRS_FAIL(u->s->ctx, MIRS_INTERNAL, "block output of %s: tile outside its tensor",
                     u->bg->t[o->in[0]].name);
  return MIRS_OK;
}

static const mirs__sched_exec fp_custom_exec = {fc_zero,   fc_load,  fc_compute, fc_accum,
                                                fc_finish, fc_store, fc_at};

/* Evaluate custom op k's block graph for trial j over the field, by the
 * shared block-graph schedule (every grid block, or only block (0,0,0)
 * for a corner store). */
static mirs_status cpu_custom_trial(cpu_state *c, mirs__fp_store *s, const mirs_graph *g,
                                    const mirs__kop *k, int j) {
  const mirs__bgraph *bg = k->bg;
  int32_t gend[MIRS__GRID];
  for (int a = 0; a < MIRS__GRID; a++)
    gend[a] = s->corner ? 1 : bg->grid[a]; /* (the corner: block (0,0,0) only) */
  fp_custom u = {c, s, g, bg, j, mirs__fp_trial_key(s->seed, j), {0, 0, 0}, 0};
  return mirs__sched_run(bg, gend, &fp_custom_exec, &u);
}

/* Fingerprint kernel op `op` for every trial. */
static mirs_status cpu_op(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t op, int j0,
                          int j1) {
  cpu_state *c = state;
  mirs_context *ctx = s->ctx;
  const mirs__kop *k = &g->ops[op];
  MIRS_CHECK(ctx, cpu_reserve(c, s));
  if (k->op == MIRS_OP_CUSTOM) {
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&c->tile, &c->tilecap, (size_t)s->tile_used + 1,
                                    sizeof *c->tile));
    c->tile_elements = 0;
    for (int j = j0; j < j1; j++)
      MIRS_CHECK(ctx, cpu_custom_trial(c, s, g, k, j));
    s->stats.tile_elements += c->tile_elements;
    return MIRS_OK;
  }
  int32_t out = k->out[0];
  if (mirs__op_is_layout(k->op)) { /* the exact index map, values copied */
    for (int j = j0; j < j1; j++) {
      const mirs__fp_pair *x = kval(c, s, k->in[0], j);
      mirs__fp_pair *y = kval(c, s, out, j);
      MIRS__LAYOUT_COPY(k->op, &g->t[k->in[0]].shape, &k->lay, x, y);
    }
    return MIRS_OK;
  }
  for (int j = j0; j < j1; j++) {
    const mirs__shape *ins[2] = {NULL, NULL};
    const mirs__fp_pair *inv[2] = {NULL, NULL};
    for (int a = 0; a < k->nin && a < 2; a++) {
      ins[a] = &g->t[k->in[a]].shape;
      inv[a] = kval(c, s, k->in[a], j);
    }
    MIRS_CHECK(ctx, fp_compute(ctx, c, k->op, k->dim, k->eps, k->cst,
                               mirs__fp_trial_key(s->seed, j), ins, inv,
                               &g->t[out].shape, kval(c, s, out, j), s->t[k->in[0]].exp_dep,
                               s->t[out].exp_dep,
                               s->t[k->in[0]].masked || (k->nin > 1 && s->t[k->in[1]].masked),
                               NULL));
  }
  return MIRS_OK;
}

/* Copy values out of the arena. */
static mirs_status cpu_read(void *state, const mirs__fp_store *s, int32_t t, int trial,
                            int64_t first, int64_t count, mirs__fp_pair *out) {
  cpu_state *c = state;
  if (count > 0)
    memcpy(out, kval(c, s, t, trial) + first, (size_t)count * sizeof *out);
  return MIRS_OK;
}

/* The digest defined at mirs__fp_digest. */
static mirs_status cpu_digest(void *state, const mirs__fp_store *s, int32_t t, uint64_t *out) {
  cpu_state *c = state;
  uint64_t n = (uint64_t)s->t[t].numel, x = 0;
  for (int j = 0; j < s->trials; j++) {
    const mirs__fp_pair *v = kval(c, s, t, j);
    for (uint64_t e = 0; e < n; e++)
      x += mirs__hash_mix((uint64_t)j * n + e, v[e].a);
  }
  *out = mirs__hash_mix(mirs__hash_mix(n, (uint64_t)s->trials), x);
  return MIRS_OK;
}

const mirs__fp_backend mirs__fp_cpu_backend = {
    .name = "cpu",
    .open = cpu_open,
    .compute_input = cpu_input,
    .compute_op = cpu_op,
    .read = cpu_read,
    .digest = cpu_digest,
    .release = cpu_release,
};
