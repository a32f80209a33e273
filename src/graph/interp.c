/* SPDX-License-Identifier: MIT */
/* src/graph/interp.c - the float64 reference interpreter: evaluates every
 * kernel tensor of a program or µGraph on the Philox inputs
 * (mirs_input_value), so two graphs can be compared numerically.
 *
 * Semantics (docs/FORMATS.md, the µGraph format):
 *  - kernel ops: matmul with batch dims (equal or size-1 broadcast),
 *    elementwise binary ops with size-1 broadcasting (shape.c requires
 *    equal ranks; the strides would align shorter ones on the right), exp, square, sqrt (NaN on negatives), silu
 *    x*sigmoid(x), gelu in the exact erf form 0.5*x*(1 + erf(x/sqrt(2))),
 *    relu, sum over a dim keeping it as size 1, rms_norm over the last dim,
 *    causal_mask (-inf above the bottom-right aligned diagonal of the last
 *    two dims; in a block graph by the tile's global position);
 *  - custom ops run their block graph by the shared schedule
 *    (schedule.c: grid blocks, forloop, tile placement, accumulators);
 *    ACCUM adds its argument into an accumulator zeroed per block,
 *    ACCUM_SUM adds the sum over `dim`, ACCUM_RMS adds the row sums of x^2
 *    and after the loop yields sqrt(total / (tile_last_dim * F)), ACCUM_MAX
 *    starts at -inf and keeps the max over `dim` and the loop,
 *    ACCUM_ONLINE(y, m) keeps a running max M of m (per element, m
 *    broadcast) and acc = acc * exp(M_old - M) + y * exp(m - M), so that
 *    after the loop acc = sum_i y_i * exp(m_i - M_final).  `fused` and the
 *    block dims do not change values;
 *  - max(x, dim) is the largest element along dim (NaN if any is NaN).
 *  - min(x, dim) the smallest (NaN if any is NaN); ACCUM_MIN starts at
 *    +inf and keeps the min over `dim` and the loop.
 *
 * Invariants: kernel and block ops share one set of arithmetic routines
 * working on (shape, row-major buffer) pairs; all memory comes from the
 * context allocator and is released on every failure path; the total
 * element count of the kernel tensors is checked against the
 * eval_max_elements option before anything is allocated.  Statistics:
 * ops_evaluated counts kernel ops (a custom op once), elements_evaluated
 * every element written, tiles included. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "graph/graph.h"

/* The one definition of an input element: Philox word for (seed, subsequence
 * = hash of the input's name, offset = element), mapped to [-1, 1). */
static double input_value_sub(uint64_t seed, uint64_t sub, uint64_t element) {
  uint32_t u = mirs_philox_at(seed, sub, element);
  return ((double)u + 0.5) * (2.0 / 4294967296.0) - 1.0;
}

/* Input value for (seed, name, element): uniform in [-1, 1). */
double mirs_input_value(uint64_t seed, const char *name, uint64_t element) {
  return input_value_sub(seed, mirs__hash_str(0, name ? name : ""), element);
}

/* Fill out[0..n) with the values of input name (hashing the name once),
 * times scale (the option input_scale). */
void mirs__graph_input_fill(uint64_t seed, const char *name, double *out, int64_t n,
                            double scale) {
  uint64_t sub = mirs__hash_str(0, name ? name : "");
  for (int64_t e = 0; e < n; e++)
    out[e] = scale * input_value_sub(seed, sub, (uint64_t)e);
}

/* x rounded to the nearest value of dtype t (ties to even; f16 and bf16
 * with their exponent ranges: f16 subnormals below 2^-14, overflow to
 * infinity past 65504): the value a run of generated code loads. */
static double round_dtype(double x, mirs_dtype t) {
  if (t == MIRS_F32)
    return (double)(float)x;
  int bits = t == MIRS_BF16 ? 8 : 11, e;
  if (x == 0.0 || !isfinite(x))
    return x;
  (void)frexp(x, &e);
  if (t != MIRS_BF16 && e < -13) /* f16 subnormals: a fixed quantum of 2^-24 */
    e = -13;
  double r = ldexp(nearbyint(ldexp(x, bits - e)), e - bits);
  return t != MIRS_BF16 && fabs(r) > 65504.0 ? copysign(INFINITY, r) : r;
}

/* Element count of s (1 for rank 0). */
static int64_t numel(const mirs__shape *s) {
  return mirs__shape_numel(s);
}

/* y[i] = op(x[i]) for an op with constants c (and neg, sigmoid, tanh);
 * false for other ops.  pow is C's pow (pow(0, 0) = 1, NaN for a negative
 * base and a non-integer exponent); clamp is fmin(fmax(x, lo), hi). */
static bool ev_const_op(mirs_op op, const mirs__scalar *c, const double *x, double *y, int64_t n) {
  double k = mirs__op_nconst(op) > 0 ? c[0].v : 0.0;
  switch (op) {
  case MIRS_OP_NEG:
    for (int64_t i = 0; i < n; i++)
      y[i] = -x[i];
    return true;
  case MIRS_OP_SIGMOID:
    for (int64_t i = 0; i < n; i++)
      y[i] = 1.0 / (1.0 + exp(-x[i]));
    return true;
  case MIRS_OP_TANH:
    for (int64_t i = 0; i < n; i++)
      y[i] = tanh(x[i]);
    return true;
  case MIRS_OP_POW:
    for (int64_t i = 0; i < n; i++)
      y[i] = pow(x[i], k);
    return true;
  case MIRS_OP_CLAMP:
    for (int64_t i = 0; i < n; i++)
      y[i] = fmin(fmax(x[i], c[0].v), c[1].v);
    return true;
  case MIRS_OP_ADD_SCALAR:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] + k;
    return true;
  case MIRS_OP_MUL_SCALAR:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] * k;
    return true;
  case MIRS_OP_DIV_SCALAR:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] / k;
    return true;
  case MIRS_OP_RSUB_SCALAR:
    for (int64_t i = 0; i < n; i++)
      y[i] = k - x[i];
    return true;
  case MIRS_OP_RDIV_SCALAR:
    for (int64_t i = 0; i < n; i++)
      y[i] = k / x[i];
    return true;
  default:
    return false;
  }
}

/* y = x with its last two dims swapped (xs: x's shape). */
static void ev_transpose(const mirs__shape *xs, const double *x, double *y) {
  MIRS__TRANSPOSE_LAST2(xs, x, y);
}

/* y[i] = op(x[i]) for n elements. */
static void ev_unary(mirs_op op, const mirs__scalar *c, const double *x, double *y, int64_t n) {
  if (ev_const_op(op, c, x, y, n))
    return;
  switch (op) {
  case MIRS_OP_EXP:
    for (int64_t i = 0; i < n; i++)
      y[i] = exp(x[i]);
    break;
  case MIRS_OP_SQUARE:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] * x[i];
    break;
  case MIRS_OP_SQRT:
    for (int64_t i = 0; i < n; i++)
      y[i] = sqrt(x[i]);
    break;
  case MIRS_OP_SILU:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] / (1.0 + exp(-x[i]));
    break;
  case MIRS_OP_GELU:
    for (int64_t i = 0; i < n; i++)
      y[i] = 0.5 * x[i] * (1.0 + erf(x[i] * 0.70710678118654752440));
    break;
  case MIRS_OP_RELU:
    for (int64_t i = 0; i < n; i++)
      y[i] = x[i] > 0.0 ? x[i] : 0.0;
    break;
  case MIRS_OP_ABS:
    for (int64_t i = 0; i < n; i++)
      y[i] = fabs(x[i]);
    break;
  default:
    break;
  }
}

/* y = causal_mask(x) on shape s: x where global column j <= global row i +
 * (n - m), else -inf.  org = {row0, col0, m, n} places the (tile) x in its
 * tensor (schedule.c); NULL: x is the whole tensor. */
static void ev_mask(const mirs__shape *s, const double *x, double *y, const int64_t *org) {
  MIRS__CAUSAL_MASK(double, s, org, x, y, -INFINITY);
}

/* o = a op b elementwise with size-1 broadcasting; os is the result shape. */
static void ev_binary(mirs_op op, const mirs__shape *as, const double *a, const mirs__shape *bs,
                      const double *b, const mirs__shape *os, double *o) {
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  int r = os->ndim;
  mirs__shape_bcast_strides(as, os, sa);
  mirs__shape_bcast_strides(bs, os, sb);
  int64_t last = r > 0 ? os->d[r - 1] : 1;
  int64_t la = r > 0 ? sa[r - 1] : 0, lb = r > 0 ? sb[r - 1] : 0;
  int64_t rows = numel(os) / last;
  for (int64_t row = 0; row < rows; row++) {
    const double *pa = a + (r > 1 ? mirs__shape_row_offset(os, r - 1, sa, row) : 0);
    const double *pb = b + (r > 1 ? mirs__shape_row_offset(os, r - 1, sb, row) : 0);
    double *po = o + row * last;
    switch (op) {
    case MIRS_OP_ADD:
      for (int64_t j = 0; j < last; j++)
        po[j] = pa[j * la] + pb[j * lb];
      break;
    case MIRS_OP_SUB: /* -inf - -inf = -inf: a masked entry shifted by the max of a
                       * masked row stays masked (FlashAttention's convention) */
      for (int64_t j = 0; j < last; j++)
        po[j] = pa[j * la] == -INFINITY ? -INFINITY : pa[j * la] - pb[j * lb];
      break;
    case MIRS_OP_MUL:
      for (int64_t j = 0; j < last; j++)
        po[j] = pa[j * la] * pb[j * lb];
      break;
    case MIRS_OP_DIV:
      for (int64_t j = 0; j < last; j++)
        po[j] = pa[j * la] / pb[j * lb];
      break;
    default:
      break;
    }
  }
}

/* o = a @ b over the last two dims, batch dims broadcast; i-k-j order so
 * the inner loop runs over contiguous rows of b and o (measured faster
 * than blocking over k on the example shapes: hardware prefetch streams b). */
static bool ev_matmul(const mirs_context *ctx, const mirs__shape *as, const double *a,
                      const mirs__shape *bs, const double *b, const mirs__shape *os, double *o) {
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  int r = os->ndim;
  int64_t m = os->d[r - 2], n = os->d[r - 1], k = as->d[as->ndim - 1];
  mirs__shape_bcast_strides(as, os, sa);
  mirs__shape_bcast_strides(bs, os, sb);
  int64_t batches = numel(os) / (m * n);
  for (int64_t bi = 0; bi < batches; bi++) {
    const double *pa = a + mirs__shape_row_offset(os, r - 2, sa, bi);
    const double *pb = b + mirs__shape_row_offset(os, r - 2, sb, bi);
    double *po = o + bi * m * n;
    for (int64_t i = 0; i < m; i++) {
      if (mirs__core_stopping(ctx)) /* (one load per output row) */
        return false;
      const double *arow = pa + i * k;
      double *orow = po + i * n;
      for (int64_t j = 0; j < n; j++)
        orow[j] = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double av = arow[p];
        const double *brow = pb + p * n;
        for (int64_t j = 0; j < n; j++)
          orow[j] += av * brow[j];
      }
    }
  }
  return true;
}

/* y (x's shape with size 1 at dim) = sum of x over dim; added into y when
 * add is set, else y is overwritten. */
#define EV_ADD(acc, v) ((acc) += (v))
static void ev_sum(const mirs__shape *xs, const double *x, int dim, double *y, bool add) {
  MIRS__SUM_OVER_DIM(double, xs, x, dim, y, add, EV_ADD);
}
#undef EV_ADD

/* y (x's shape with size 1 at dim) = max of x over dim (min when least),
 * merged into y's values when `add` is set (the ACCUM_MAX, ACCUM_MIN
 * step), else y starts at -inf (+inf).  A NaN element wins, as in the
 * frameworks' max and min. */
#define EV_MAX(acc, v) ((acc) = ((least ? (v) < (acc) : (v) > (acc)) || (v) != (v)) ? (v) : (acc))
static void ev_max(bool least, const mirs__shape *xs, const double *x, int dim, double *y,
                   bool add) {
  if (!add) {
    mirs__shape ys = *xs;
    ys.d[dim] = 1;
    for (int64_t i = 0, n = numel(&ys); i < n; i++)
      y[i] = least ? INFINITY : -INFINITY;
  }
  MIRS__SUM_OVER_DIM(double, xs, x, dim, y, true, EV_MAX);
}
#undef EV_MAX

/* One ACCUM_ONLINE step on acc (shape ys) and its running max M (the
 * state after acc): acc = acc * exp(M - M') + y * exp(m - M'), M' =
 * max(M, m), m (shape ms) broadcast to ys. */
static void ev_online(const mirs__shape *ys, const double *y, const mirs__shape *ms,
                      const double *m, double *acc) {
  int64_t n = numel(ys);
  double *run = acc + n;
  for (int64_t e = 0; e < n; e++) {
    double mv = m[mirs__shape_bcast_index(ms, ys, e)];
    double nm = mv > run[e] || mv != mv ? mv : run[e];
    double old = run[e] == -INFINITY ? 0.0 : acc[e] * exp(run[e] - nm);
    /* (a -inf shift, a masked row: no contribution, as exp(-inf - M) = 0
     * for finite M; FlashAttention's convention when M is -inf too) */
    acc[e] = old + (mv == -INFINITY ? 0.0 : y[e] * exp(mv - nm));
    run[e] = nm;
  }
}

/* y[row] += sum of x[row, :]^2 over the last dim (the ACCUM_RMS step). */
static void ev_sumsq_last(const mirs__shape *xs, const double *x, double *y) {
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  int64_t rows = numel(xs) / last;
  for (int64_t row = 0; row < rows; row++) {
    const double *px = x + row * last;
    double s = 0.0;
    for (int64_t j = 0; j < last; j++)
      s += px[j] * px[j];
    y[row] += s;
  }
}

/* y = x / sqrt(mean(x^2) + eps) over the last dim. */
static void ev_rmsnorm(const mirs__shape *xs, const double *x, double eps, double *y) {
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  int64_t rows = numel(xs) / last;
  for (int64_t row = 0; row < rows; row++) {
    const double *px = x + row * last;
    double *py = y + row * last;
    double s = 0.0;
    for (int64_t j = 0; j < last; j++)
      s += px[j] * px[j];
    double rms = sqrt(s / (double)last + eps);
    for (int64_t j = 0; j < last; j++)
      py[j] = px[j] / rms;
  }
}

/* y = (x - mean) / sqrt(var + eps) over the last dim, var = mean((x -
 * mean)^2): the two-pass form (no cancellation of sum(x^2) - n mean^2). */
static void ev_layernorm(const mirs__shape *xs, const double *x, double eps, double *y) {
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  int64_t rows = numel(xs) / last;
  for (int64_t row = 0; row < rows; row++) {
    const double *px = x + row * last;
    double *py = y + row * last;
    double s = 0.0, v = 0.0;
    for (int64_t j = 0; j < last; j++)
      s += px[j];
    double mu = s / (double)last;
    for (int64_t j = 0; j < last; j++)
      v += (px[j] - mu) * (px[j] - mu);
    double sd = sqrt(v / (double)last + eps);
    for (int64_t j = 0; j < last; j++)
      py[j] = (px[j] - mu) / sd;
  }
}

/* Compute op (kind UNARY, BINARY, MATMUL, REDUCE or RMSNORM) on argument
 * shapes/values into o of shape os; the routine shared by both levels.
 * False for an op of another kind. */
static bool ev_compute(const mirs_context *ctx, mirs_op op, int dim, double eps,
                       const mirs__scalar *c, const mirs__shape *const *ins,
                       const double *const *inv, const mirs__shape *os, double *o,
                       const int64_t *org) {
  if (op == MIRS_OP_CAUSAL_MASK) {
    ev_mask(os, inv[0], o, org);
    return true;
  }
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
    ev_unary(op, c, inv[0], o, numel(os));
    return true;
  case MIRS__KIND_TRANSPOSE:
    ev_transpose(ins[0], inv[0], o);
    return true;
  case MIRS__KIND_BINARY:
    ev_binary(op, ins[0], inv[0], ins[1], inv[1], os, o);
    return true;
  case MIRS__KIND_MATMUL:
    return ev_matmul(ctx, ins[0], inv[0], ins[1], inv[1], os, o);
  case MIRS__KIND_REDUCE:
    if (op == MIRS_OP_MAX || op == MIRS_OP_MIN)
      ev_max(op == MIRS_OP_MIN, ins[0], inv[0], dim, o, false);
    else
      ev_sum(ins[0], inv[0], dim, o, false);
    if (op == MIRS_OP_MEAN)
      for (int64_t i = 0, n = numel(os); i < n; i++)
        o[i] /= (double)ins[0]->d[dim];
    return true;
  case MIRS__KIND_RMSNORM:
    if (op == MIRS_OP_LAYER_NORM)
      ev_layernorm(ins[0], inv[0], eps, o);
    else
      ev_rmsnorm(ins[0], inv[0], eps, o);
    return true;
  default:
    return false;
  }
}

/* Check the block graph facts the evaluation relies on (tensor ids in
 * range, accumulator result shapes, ranks of loaded tiles), so a malformed
 * graph is reported instead of overrunning a buffer. */
static mirs_status check_bgraph(const mirs_graph *g, const mirs__bgraph *bg) {
  int32_t bad = -1;
  if (NEVER(!mirs__bg_well_formed(g, bg, &bad)))
    return MIRS_FAIL(g->ctx, MIRS_INTERNAL, "block op %d (%s) is malformed; cannot evaluate",
                     (int)bad, mirs_op_name(bg->ops[bad].op) ? mirs_op_name(bg->ops[bad].op) : "?");
  return MIRS_OK;
}

/* State of one custom kernel's evaluation, for the schedule callbacks. */
typedef struct custom_run {
  const mirs_graph *g;
  const mirs__bgraph *bg;
  double **v;  /* kernel tensors */
  double **tv; /* block tensors' tiles */
  mirs__stats *st;
  int32_t b[MIRS__GRID], f; /* the block and iteration running (causal_mask) */
} custom_run;

/* The block and iteration about to run. */
static void cr_at(void *user, const int32_t b[MIRS__GRID], int32_t f) {
  custom_run *r = user;
  memcpy(r->b, b, sizeof r->b);
  r->f = f;
}

/* ZERO: an accumulator starts at zero in every block (a running max, and
 * the running max of ACCUM_ONLINE, at -inf; a running min at +inf). */
static mirs_status cr_zero(void *user, const mirs__bop *op) {
  custom_run *r = user;
  int64_t n = numel(&r->bg->t[op->out].shape);
  double *acc = r->tv[op->out];
  memset(acc, 0, (size_t)n * sizeof(double));
  if (op->op == MIRS_OP_ACCUM_MAX || op->op == MIRS_OP_ACCUM_ONLINE)
    for (int64_t e = 0; e < n; e++)
      acc[(op->op == MIRS_OP_ACCUM_ONLINE ? n : 0) + e] = -INFINITY;
  if (op->op == MIRS_OP_ACCUM_MIN)
    for (int64_t e = 0; e < n; e++)
      acc[e] = INFINITY;
  return MIRS_OK;
}

/* LOAD: copy the tile at off out of the source kernel tensor. */
static mirs_status cr_load(void *user, const mirs__bop *op, const int64_t off[MIRS_MAX_DIMS]) {
  custom_run *r = user;
  const mirs__shape *ts = &r->bg->t[op->out].shape;
  if (!mirs__shape_copy_tile(&r->g->t[op->src].shape, r->v[op->src], ts, r->tv[op->out], off,
                             sizeof(double), false))
    return MIRS_FAIL(r->g->ctx, MIRS_INTERNAL, "block input %s: tile outside tensor %s",
                     r->bg->t[op->out].name, r->g->t[op->src].name);
  MIRS_ADD(r->st, elements_evaluated, numel(ts));
  return MIRS_OK;
}

/* COMPUTE: a block op on tiles (either phase). */
static mirs_status cr_compute(void *user, const mirs__bop *op) {
  custom_run *r = user;
  const mirs__shape *ins[2] = {NULL, NULL};
  const double *inv[2] = {NULL, NULL};
  for (int a = 0; a < op->nin && a < 2; a++) {
    ins[a] = &r->bg->t[op->in[a]].shape;
    inv[a] = r->tv[op->in[a]];
  }
  const mirs__shape *os = &r->bg->t[op->out].shape;
  if (mirs__core_stopping(r->g->ctx))
    return mirs__core_stopped(r->g->ctx, "float64 evaluation");
  int64_t org[4];
  if (op->op == MIRS_OP_CAUSAL_MASK && !mirs__sched_mask_frame(r->g, r->bg, op, r->b, r->f, org))
    return MIRS_FAIL(r->g->ctx, MIRS_INTERNAL, "block causal_mask %s has no tile position",
                     r->bg->t[op->out].name);
  bool done = ev_compute(r->g->ctx, op->op, op->dim, op->eps, op->cst, ins, inv, os,
                         r->tv[op->out], org);
  if (!done && mirs__core_stopping(r->g->ctx))
    return mirs__core_stopped(r->g->ctx, "float64 evaluation");
  if (NEVER(!done))
    return MIRS_FAIL(r->g->ctx, MIRS_INTERNAL, "block op %s cannot be evaluated",
                     mirs__graph_ops[op->op].name);
  MIRS_ADD(r->st, elements_evaluated, numel(os));
  return MIRS_OK;
}

/* ACCUM*: add this iteration's contribution. */
static mirs_status cr_accum(void *user, const mirs__bop *op) {
  custom_run *r = user;
  const mirs__shape *xs = &r->bg->t[op->in[0]].shape;
  const double *x = r->tv[op->in[0]];
  double *acc = r->tv[op->out];
  if (op->op == MIRS_OP_ACCUM) {
    int64_t n = numel(xs);
    for (int64_t e = 0; e < n; e++)
      acc[e] += x[e];
  } else if (op->op == MIRS_OP_ACCUM_SUM) {
    ev_sum(xs, x, op->dim, acc, true);
  } else if (op->op == MIRS_OP_ACCUM_MAX || op->op == MIRS_OP_ACCUM_MIN) {
    ev_max(op->op == MIRS_OP_ACCUM_MIN, xs, x, op->dim, acc, true);
  } else if (op->op == MIRS_OP_ACCUM_ONLINE) {
    ev_online(xs, x, &r->bg->t[op->in[1]].shape, r->tv[op->in[1]], acc);
  } else {
    ev_sumsq_last(xs, x, acc);
  }
  MIRS_ADD(r->st, elements_evaluated, numel(&r->bg->t[op->out].shape));
  return MIRS_OK;
}

/* FINISH: an RMS accumulator becomes sqrt(total / count). */
static mirs_status cr_finish(void *user, const mirs__bop *op) {
  custom_run *r = user;
  double count = mirs__sched_rms_count(r->bg, op);
  int64_t n = numel(&r->bg->t[op->out].shape);
  double *acc = r->tv[op->out];
  for (int64_t e = 0; e < n; e++)
    acc[e] = sqrt(acc[e] / count + op->eps);
  return MIRS_OK;
}

/* STORE: copy a post tile into its output kernel tensor at off. */
static mirs_status cr_store(void *user, const mirs__bop *op, const int64_t off[MIRS_MAX_DIMS]) {
  custom_run *r = user;
  const mirs__shape *ts = &r->bg->t[op->in[0]].shape;
  if (!mirs__shape_copy_tile(&r->g->t[op->dst].shape, r->v[op->dst], ts, r->tv[op->in[0]], off,
                             sizeof(double), true))
    return MIRS_FAIL(r->g->ctx, MIRS_INTERNAL, "block output of %s: tile outside its tensor",
                     r->bg->t[op->in[0]].name);
  MIRS_ADD(r->st, elements_evaluated, numel(ts));
  return MIRS_OK;
}

static const mirs__sched_exec custom_exec = {cr_zero,  cr_load,   cr_compute, cr_accum,
                                             cr_finish, cr_store, cr_at};

/* Run custom op kop: evaluate its block graph over every grid block and
 * forloop iteration (the shared schedule), writing its output kernel
 * tensors in v. */
static mirs_status run_custom(const mirs_graph *g, const mirs__kop *kop, double **v,
                              mirs__stats *st) {
  mirs_context *ctx = g->ctx;
  const mirs__bgraph *bg = kop->bg;
  if (NEVER(bg == NULL || bg->forloop < 1))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "custom op without a valid block graph");
  MIRS_CHECK(ctx, check_bgraph(g, bg));

  /* One buffer for every block tensor's tile, carved by tile offsets. */
  int64_t total = 0;
  for (int32_t i = 0; i < bg->nt; i++) {
    int64_t n = mirs__sched_state_numel(bg, i);
    if (n > ctx->opt.eval_max_elements - total)
      return MIRS_FAIL(ctx, MIRS_LIMIT,
                       "float64 evaluation needs more than eval_max_elements=%lld tile "
                       "elements for one custom kernel",
                       (long long)ctx->opt.eval_max_elements);
    total += n;
  }
  double **tv = mirs__core_calloc(ctx, (size_t)bg->nt + 1, sizeof *tv);
  double *buf = tv ? mirs__core_calloc(ctx, (size_t)total + 1, sizeof *buf) : NULL;
  if (!buf) {
    mirs__core_free(ctx, tv);
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  }
  total = 0;
  for (int32_t i = 0; i < bg->nt; i++) {
    tv[i] = buf + total;
    total += mirs__sched_state_numel(bg, i);
  }
  custom_run r = {g, bg, v, tv, st, {0, 0, 0}, 0};
  mirs_status s = mirs__sched_run(bg, NULL, &custom_exec, &r);
  mirs__core_free(ctx, buf);
  mirs__core_free(ctx, tv);
  return s;
}

/* Free the per-tensor buffers of g and the array (NULL is a no-op). */
void mirs__interp_free(const mirs_graph *g, double **vals) {
  if (!g || !vals)
    return;
  for (int32_t i = 0; i < g->nt; i++)
    mirs__core_free(g->ctx, vals[i]);
  mirs__core_free(g->ctx, vals);
}

/* Evaluate every kernel tensor of g in float64 on the Philox inputs of seed. */
mirs_status mirs__interp_run(const mirs_graph *g, uint64_t seed, double ***vals) {
  if (!g)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = g->ctx;
  if (!vals)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__interp_run: vals is NULL");
  *vals = NULL;

  uint64_t work = mirs__graph_work(g);
  if (work > (uint64_t)ctx->opt.eval_max_work)
    return MIRS_FAIL(ctx, MIRS_LIMIT,
                     "float64 evaluation of %s needs about %llu element operations, more than "
                     "eval_max_work=%lld (raise the option to evaluate it)",
                     g->name ? g->name : "graph", (unsigned long long)work,
                     (long long)ctx->opt.eval_max_work);
  int64_t limit = ctx->opt.eval_max_elements, total = 0;
  for (int32_t i = 0; i < g->nt; i++) {
    int64_t n = numel(&g->t[i].shape);
    if (n > limit - total)
      return MIRS_FAIL(ctx, MIRS_LIMIT,
                       "float64 evaluation of %s needs more than eval_max_elements=%lld "
                       "elements (raise the option to evaluate it)",
                       g->name ? g->name : "graph", (long long)limit);
    total += n;
  }

  double **v = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *v);
  if (!v)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  mirs_status s = MIRS_OK;
  for (int32_t i = 0; i < g->nt; i++) {
    v[i] = mirs__core_calloc(ctx, (size_t)numel(&g->t[i].shape), sizeof(double));
    if (!v[i]) {
      s = mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
      goto fail;
    }
  }

  mirs__stats st;
  memset(&st, 0, sizeof st);
  for (int32_t i = 0; i < g->nt; i++) {
    if (g->t[i].producer >= 0)
      continue;
    int64_t n = numel(&g->t[i].shape);
    mirs__graph_input_fill(seed, g->t[i].name, v[i], n, ctx->opt.input_scale);
    if (ctx->opt.round_inputs)
      for (int64_t e = 0; e < n; e++)
        v[i][e] = round_dtype(v[i][e], g->t[i].dtype);
    MIRS_ADD(&st, elements_evaluated, n);
  }
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *op = &g->ops[i];
    if (op->op == MIRS_OP_CUSTOM) {
      s = run_custom(g, op, v, &st);
      if (s != MIRS_OK) {
        s = mirs__core_trace(ctx, s, __func__, __FILE__, __LINE__);
        goto fail;
      }
    } else {
      const mirs__shape *ins[2] = {NULL, NULL};
      const double *inv[2] = {NULL, NULL};
      for (int a = 0; a < op->nin && a < 2; a++) {
        ins[a] = &g->t[op->in[a]].shape;
        inv[a] = v[op->in[a]];
      }
      const mirs__shape *os = &g->t[op->out[0]].shape;
      if (mirs__op_is_layout(op->op) && !NEVER(op->nout != 1)) { /* (an index map) */
        double *y = v[op->out[0]];
        MIRS__LAYOUT_COPY(op->op, ins[0], &op->lay, inv[0], y);
        MIRS_ADD(&st, elements_evaluated, numel(os));
        MIRS_INC(&st, ops_evaluated);
        continue;
      }
      bool done = !mirs__core_stopping(ctx) && !NEVER(op->nout != 1) &&
                  ev_compute(ctx, op->op, op->dim, op->eps, op->cst, ins, inv, os, v[op->out[0]],
                             NULL);
      if (!done && mirs__core_stopping(ctx)) {
        s = mirs__core_stopped(ctx, "float64 evaluation");
        goto fail;
      }
      if (!done) {
        s = MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %s cannot be evaluated",
                      mirs__graph_ops[op->op].name);
        goto fail;
      }
      MIRS_ADD(&st, elements_evaluated, numel(os));
    }
    MIRS_INC(&st, ops_evaluated);
  }
  mirs__core_stats_add(ctx, &st);
  *vals = v;
  return MIRS_OK;

fail:
  mirs__interp_free(g, v);
  return s;
}
