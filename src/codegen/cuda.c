/* SPDX-License-Identifier: MIT */
/* src/codegen/cuda.c - CUDA C for a µGraph.
 *
 * Every kernel op becomes one `static __global__` function, launched in
 * op order on the caller's stream by an `extern "C"` entry point (under
 * codegen_pdl, on compute capability 9.0 and later, each launch after the
 * first is a programmatic dependent launch: the kernel opens with
 * griddepcontrol.wait, and one a launch follows with launch_dependents):
 *  - a predefined op is a simple grid-stride kernel, one thread per output
 *    element, computing in float from its stored (f16/bf16/f32) operands;
 *  - a custom op is one kernel with the block graph's schedule
 *    (graph/schedule.c) that carries out its kernel plan (plan.c, the
 *    same plan the cost model prices): blockIdx selects the tiles
 *    (imap/omap offsets); input tiles are staged in shared memory at
 *    their stored dtype, with 16-byte cp.async where the plan proved
 *    alignment (per-thread addresses computed once), S stages deep over
 *    the forloop (issue f+S-1, wait for f, compute), loop-invariant tiles
 *    once; 16-bit matmuls run on tensor cores (ldmatrix + mma.sync
 *    m16n8k16, skinny M padded to 16), matmuls with a computed operand on
 *    tf32 m16n8k8; `accum` of an MMA keeps its C fragments in registers;
 *    reductions (sum, rms_norm, accum_sum, accum_rms) run as warp-shuffle
 *    trees; thread-level chains of fused elementwise ops are applied in
 *    registers to the value their producer computes, so the fused
 *    intermediates never reach shared memory; OUTPUT ops store tiles
 *    through omap in the output's dtype.  A kernel whose plan does not
 *    fit is refused (MIRS_LIMIT); there is no global-memory fallback.
 * Intermediate kernel tensors live in a caller-provided workspace.
 * Reshapes and permutes are strided views where views.c finds one: no
 * kernel, and every load or store of such a tensor indexes its buffer at
 * the view's strides (storage_strides); the others are copy kernels.
 *
 * Invariants: the graph is valid (mirs__graph_validate) before emission;
 * a fused op is absorbed into its producer only where that changes no
 * value and no order (same shape, its other operand already computed),
 * otherwise it is emitted as an ordinary op; barriers separate every step
 * that reads shared memory from the steps that wrote it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/hopper.h"
#include "codegen/plan.h"


/* C type of a stored element. */
static const char *ctype(mirs_dtype t) {
  return t == MIRS_F16 ? "__half" : t == MIRS_BF16 ? "__nv_bfloat16" : "float";
}

/* Relative tolerance of a run for storage dtype dt (inputs and every
 * kernel tensor are rounded to dt; arithmetic is f32). */
double mirs__codegen_tolerance(mirs_dtype dt) {
  return dt == MIRS_F16 ? 1e-2 : dt == MIRS_BF16 ? 6e-2 : 1e-4;
}

/* Default entry point: "mirs_" + the graph name with non-identifier bytes as '_'. */
void mirs__codegen_entry_name(const mirs_graph *g, char *buf, size_t size) {
  snprintf(buf, size, "mirs_%s", g->name ? g->name : "program");
  for (char *p = buf + 5; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      *p = '_';
}

/* ---------------------------------------------------------------- index expressions */

/* Emit `const ITY cD = (e / stride) % dim;` for each dim of s. */
static void emit_coords(mirs__buf *b, const char *ind, const char *ity, const char *e,
                        const mirs__shape *s) {
  int64_t stride = 1;
  int64_t st[MIRS_MAX_DIMS];
  for (int d = s->ndim - 1; d >= 0; d--) {
    st[d] = stride;
    stride *= s->d[d];
  }
  for (int d = 0; d < s->ndim; d++) {
    if (s->d[d] == 1)
      mirs__buf_printf(b, "%sconst %s c%d = 0;\n", ind, ity, d);
    else if (d == 0)
      mirs__buf_printf(b, "%sconst %s c%d = %s / %" PRId64 ";\n", ind, ity, d, e, st[d]);
    else
      mirs__buf_printf(b, "%sconst %s c%d = (%s / %" PRId64 ") %% %" PRId64 ";\n", ind, ity, d, e,
                       st[d], s->d[d]);
  }
  mirs__buf_puts(b, ind);
  for (int d = 0; d < s->ndim; d++)
    mirs__buf_printf(b, "%s(void)c%d;", d ? " " : "", d);
  mirs__buf_puts(b, "\n");
}

/* Append to b the flat index, with strides ist (of in's own dims), of an
 * operand of shape in at the output coordinates c0.. of shape out
 * (broadcast: ranks aligned on the right, size-1 dims read index 0), over
 * dims [0, nd) of out. */
static void emit_index_st(mirs__buf *b, const mirs__shape *in, const int64_t *ist,
                          const mirs__shape *out, int nd) {
  bool any = false;
  for (int d = 0; d < nd; d++) {
    int id = d - (out->ndim - in->ndim);
    if (id < 0 || in->d[id] == 1)
      continue;
    mirs__buf_printf(b, "%sc%d * %" PRId64, any ? " + " : "", d, ist[id]);
    any = true;
  }
  if (!any)
    mirs__buf_puts(b, "0");
}

/* Row-major strides of s. */
static void strides(const mirs__shape *s, int64_t st[MIRS_MAX_DIMS]) {
  int64_t stride = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    st[d] = stride;
    stride *= s->d[d];
  }
}

/* Strides of kernel tensor t in the buffer its pointer points at, the
 * buffer it is read from or written to (dense, or its view's: views.c). */
static void storage_strides(const mirs_graph *g, bool views, int32_t t, int64_t st[MIRS_MAX_DIMS]) {
  mirs__storage s;
  mirs__codegen_storage(g, views, t, &s);
  memcpy(st, s.st, sizeof s.st);
}

/* The float expression of an op with constants cst (and neg, sigmoid,
 * tanh) on x; false for other ops.  A constant is written as its double
 * rounded to float at compile time. */
static bool emit_const_op(mirs__buf *b, mirs_op op, const mirs__scalar *cst, const char *x) {
  char c0[48] = "", c1[48] = "";
  if (mirs__op_nconst(op) > 0)
    snprintf(c0, sizeof c0, "(float)(%.17g)", cst[0].v);
  if (mirs__op_nconst(op) > 1)
    snprintf(c1, sizeof c1, "(float)(%.17g)", cst[1].v);
  switch (op) {
  case MIRS_OP_NEG:
    mirs__buf_printf(b, "(-(%s))", x);
    return true;
  case MIRS_OP_SIGMOID:
    mirs__buf_printf(b, "mirs_sigmoid(%s)", x);
    return true;
  case MIRS_OP_TANH:
    mirs__buf_printf(b, "tanhf(%s)", x);
    return true;
  case MIRS_OP_POW:
    if (cst[0].m == 2 && cst[0].e == 0)
      mirs__buf_printf(b, "((%s) * (%s))", x, x);
    else
      mirs__buf_printf(b, "powf(%s, %s)", x, c0);
    return true;
  case MIRS_OP_CLAMP:
    mirs__buf_printf(b, "fminf(fmaxf(%s, %s), %s)", x, c0, c1);
    return true;
  case MIRS_OP_ADD_SCALAR:
    mirs__buf_printf(b, "((%s) + %s)", x, c0);
    return true;
  case MIRS_OP_MUL_SCALAR:
    mirs__buf_printf(b, "((%s) * %s)", x, c0);
    return true;
  case MIRS_OP_DIV_SCALAR:
    mirs__buf_printf(b, "((%s) / %s)", x, c0);
    return true;
  case MIRS_OP_RSUB_SCALAR:
    mirs__buf_printf(b, "(%s - (%s))", c0, x);
    return true;
  case MIRS_OP_RDIV_SCALAR:
    mirs__buf_printf(b, "(%s / (%s))", c0, x);
    return true;
  default:
    return false;
  }
}

/* The float expression of unary op (constants cst) on x; pos: "row, column,
 * n - m" of the element in its tensor (causal_mask only, else unused). */
static void emit_unary(mirs__buf *b, mirs_op op, const mirs__scalar *cst, const char *x,
                       const char *pos) {
  if (emit_const_op(b, op, cst, x))
    return;
  switch (op) {
  case MIRS_OP_CAUSAL_MASK:
    mirs__buf_printf(b, "mirs_causal(%s, %s)", x, pos);
    break;
  case MIRS_OP_EXP:
    mirs__buf_printf(b, "expf(%s)", x);
    break;
  case MIRS_OP_SQUARE:
    mirs__buf_printf(b, "(%s) * (%s)", x, x);
    break;
  case MIRS_OP_SQRT:
    mirs__buf_printf(b, "sqrtf(%s)", x);
    break;
  case MIRS_OP_SILU:
    mirs__buf_printf(b, "mirs_silu(%s)", x);
    break;
  case MIRS_OP_GELU:
    mirs__buf_printf(b, "mirs_gelu(%s)", x);
    break;
  case MIRS_OP_ABS:
    mirs__buf_printf(b, "fabsf(%s)", x);
    break;
  default:
    mirs__buf_printf(b, "mirs_relu(%s)", x);
    break;
  }
}

/* Whether g has a causal_mask: its subtractions then keep -inf - -inf =
 * -inf (mirs_sub, the interpreter's convention) instead of NaN. */
static bool graph_masks(const mirs_graph *g) {
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (k->op == MIRS_OP_CAUSAL_MASK)
      return true;
    for (int32_t j = 0; k->op == MIRS_OP_CUSTOM && j < k->bg->nops; j++)
      if (k->bg->ops[j].op == MIRS_OP_CAUSAL_MASK)
        return true;
  }
  return false;
}

/* The C operator of a binary elementwise op. */
static const char *binop(mirs_op op) {
  return op == MIRS_OP_ADD ? "+" : op == MIRS_OP_SUB ? "-" : op == MIRS_OP_MUL ? "*" : "/";
}

/* The C function that merges a value into a max or min reduction (or
 * accumulator), NULL for a sum. */
static const char *red_fn(mirs_op op) {
  return op == MIRS_OP_MAX || op == MIRS_OP_ACCUM_MAX   ? "fmaxf"
         : op == MIRS_OP_MIN || op == MIRS_OP_ACCUM_MIN ? "fminf"
                                                        : NULL;
}

/* The start value of op's reduction or accumulator (its identity). */
static const char *red_start(mirs_op op) {
  return op == MIRS_OP_MAX || op == MIRS_OP_ACCUM_MAX   ? "-INFINITY"
         : op == MIRS_OP_MIN || op == MIRS_OP_ACCUM_MIN ? "INFINITY"
                                                        : "0.0f";
}

/* Emit statements computing `v`, element (c0..) of op's result of shape
 * os, from operands in[a] (pointer expressions, read with mirs_ld) of
 * shapes ins[a] stored with strides ist[a] (of their own dims); ity is the
 * index type. */
static void emit_value(mirs__buf *b, const char *ind, const char *ity, mirs_op op, int dim,
                       double eps, const mirs__scalar *cst, const char *const *in,
                       const mirs__shape *const *ins, const int64_t *const *ist,
                       const mirs__shape *os, const char *pos, bool fa_sub) {
  int r = os->ndim;
  char whole[96];
  if (!pos && r >= 2) { /* (a kernel-level mask: the tensor is the whole) */
    snprintf(whole, sizeof whole, "c%d, c%d, %" PRId64, r - 2, r - 1, os->d[r - 1] - os->d[r - 2]);
    pos = whole;
  }
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
    mirs__buf_printf(b, "%sconst float x = mirs_ld(%s + (", ind, in[0]);
    emit_index_st(b, ins[0], ist[0], os, r);
    mirs__buf_printf(b, "));\n%sv = ", ind);
    emit_unary(b, op, cst, "x", pos);
    mirs__buf_puts(b, ";\n");
    break;
  case MIRS__KIND_TRANSPOSE: { /* read the operand with its last two strides swapped */
    int64_t sw[MIRS_MAX_DIMS];
    memcpy(sw, ist[0], sizeof sw);
    sw[r - 2] = ist[0][r - 1];
    sw[r - 1] = ist[0][r - 2];
    mirs__buf_printf(b, "%sv = mirs_ld(%s + (", ind, in[0]);
    emit_index_st(b, os, sw, os, r);
    mirs__buf_puts(b, "));\n");
    break;
  }
  case MIRS__KIND_BINARY:
    mirs__buf_printf(b, "%sv = %smirs_ld(%s + (", ind, fa_sub && op == MIRS_OP_SUB ? "mirs_sub(" : "",
                     in[0]);
    emit_index_st(b, ins[0], ist[0], os, r);
    mirs__buf_printf(b, ")) %s mirs_ld(%s + (", fa_sub && op == MIRS_OP_SUB ? "," : binop(op),
                     in[1]);
    emit_index_st(b, ins[1], ist[1], os, r);
    mirs__buf_puts(b, fa_sub && op == MIRS_OP_SUB ? ")));\n" : "));\n");
    break;
  case MIRS__KIND_MATMUL: {
    int ra = ins[0]->ndim, rb = ins[1]->ndim;
    int64_t k = ins[0]->d[ra - 1];
    mirs__buf_printf(b, "%sconst %s ia = ", ind, ity);
    emit_index_st(b, ins[0], ist[0], os, r - 2);
    char as[32] = "", bs[32] = ""; /* (last-dim strides, when not 1: a view's) */
    if (ist[0][ra - 1] != 1)
      snprintf(as, sizeof as, " * %" PRId64, ist[0][ra - 1]);
    if (ist[1][rb - 1] != 1)
      snprintf(bs, sizeof bs, " * %" PRId64, ist[1][rb - 1]);
    mirs__buf_printf(b, " + c%d * %" PRId64 ";\n%sconst %s ib = ", r - 2, ist[0][ra - 2], ind, ity);
    emit_index_st(b, ins[1], ist[1], os, r - 2);
    mirs__buf_printf(b, " + c%d%s;\n", r - 1, bs);
    mirs__buf_printf(b, "%sv = 0.0f;\n%sfor (%s p = 0; p < %" PRId64 "; p++)\n", ind, ind, ity, k);
    mirs__buf_printf(b, "%s  v += mirs_ld(%s + (ia + p%s)) * mirs_ld(%s + (ib + p * %" PRId64 "));\n",
                     ind, in[0], as, in[1], ist[1][rb - 2]);
    break;
  }
  case MIRS__KIND_REDUCE: {
    mirs__buf_printf(b, "%sconst %s ix = ", ind, ity);
    bool any = false;
    for (int d = 0; d < r; d++)
      if (d != dim && os->d[d] > 1) {
        mirs__buf_printf(b, "%sc%d * %" PRId64, any ? " + " : "", d, ist[0][d]);
        any = true;
      }
    const char *fn = red_fn(op);
    char merge[16] = "+=";
    if (fn)
      snprintf(merge, sizeof merge, "= %s(v,", fn);
    mirs__buf_printf(b, "%s;\n%sv = %s;\n", any ? "" : "0", ind, red_start(op));
    mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++)\n%s  v %s mirs_ld(%s + (ix + p * %" PRId64 "))%s;\n",
                     ind, ity, ins[0]->d[dim], ind, merge, in[0], ist[0][dim], fn ? ")" : "");
    if (op == MIRS_OP_MEAN)
      mirs__buf_printf(b, "%sv /= %" PRId64 ".0f;\n", ind, ins[0]->d[dim]);
    break;
  }
  default: { /* RMSNORM over the last dim (stride 1 but in a view) */
    int64_t last = os->d[r - 1];
    char ls[32] = ""; /* (the last dim's stride, when not 1) */
    if (ist[0][ins[0]->ndim - 1] != 1)
      snprintf(ls, sizeof ls, " * %" PRId64, ist[0][ins[0]->ndim - 1]);
    mirs__buf_printf(b, "%sconst %s row = (", ind, ity);
    emit_index_st(b, ins[0], ist[0], os, r);
    mirs__buf_printf(b, ") - c%d%s;\n%sfloat ss = 0.0f;\n", r - 1, ls, ind);
    if (op == MIRS_OP_LAYER_NORM) { /* two passes: the mean, then the variance */
      mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++)\n%s  ss += mirs_ld(%s + (row + p%s));\n",
                       ind, ity, last, ind, in[0], ls);
      mirs__buf_printf(b, "%sconst float mu = ss / %" PRId64 ".0f;\n%sss = 0.0f;\n", ind, last, ind);
      mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++) {\n", ind, ity, last);
      mirs__buf_printf(b, "%s  const float y = mirs_ld(%s + (row + p%s)) - mu;\n%s  ss += y * y;\n%s}\n",
                       ind, in[0], ls, ind, ind);
      mirs__buf_printf(b, "%sv = (mirs_ld(%s + (row + c%d%s)) - mu) / sqrtf(ss / %" PRId64 ".0f + %.9ef);\n",
                       ind, in[0], r - 1, ls, last, eps);
      break;
    }
    mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++) {\n", ind, ity, last);
    mirs__buf_printf(b, "%s  const float y = mirs_ld(%s + (row + p%s));\n%s  ss += y * y;\n%s}\n",
                     ind, in[0], ls, ind, ind);
    char e[48] = ""; /* (rms_norm's eps, when it has one) */
    if (eps != 0.0)
      snprintf(e, sizeof e, " + %.9ef", eps);
    mirs__buf_printf(b, "%sv = mirs_ld(%s + (row + c%d%s)) / sqrtf(ss / %" PRId64 ".0f%s);\n", ind,
                     in[0], r - 1, ls, last, e);
    break;
  }
  }
}

/* ---------------------------------------------------------------- programmatic dependent launch */

/* A kernel's part in the programmatic dependent launches of its entry
 * point (codegen_pdl, entries of two launches or more): */
enum {
  PDL_WAIT = 1,   /* a launch precedes it: it waits (mirs_pdl_wait) before any memory access */
  PDL_TRIGGER = 2 /* a launch follows it: it lets that one be scheduled (mirs_pdl_trigger) */
};

/* Emit the first statements of a kernel with PDL role `pdl`: the wait
 * before anything else (no prefix of a kernel is proved independent of
 * the kernels before it), then the trigger (where and why: the comment
 * on mirs_pdl_trigger in prelude_pdl). */
static void emit_pdl_prologue(mirs__buf *b, unsigned pdl) {
  if (pdl & PDL_WAIT)
    mirs__buf_puts(b, "    mirs_pdl_wait(); /* the earlier kernels' results are visible past "
                      "here */\n");
  if (pdl & PDL_TRIGGER)
    mirs__buf_puts(b, "    mirs_pdl_trigger(); /* the next kernel may be scheduled */\n");
}

/* ---------------------------------------------------------------- custom kernels */

/* The generator's state for one custom kernel; every decision is in pl. */
typedef struct kgen {
  const mirs_graph *g;
  const mirs__kop *kop;
  const mirs__bgraph *bg;
  const mirs__plan *pl;
  mirs__buf *b;
  int32_t nthreads;
  bool fastdiv; /* every output is 16-bit: divisions in registers may be __fdividef (2 ulp) */
  bool masks;   /* the graph has a causal_mask: subtractions through mirs_sub */
  bool pending; /* shared memory written since the last barrier */
  bool views;   /* kernel tensors are read and written through their views (views.c) */
  const char *bidx[MIRS__GRID]; /* the block index: blockIdx's components, or a body's parameters */
  const mirs__splitk_pair *pair; /* emitting a body of this split-K pair (one launch), else NULL */
  bool tail;    /* the pair's second body: it reads partials other blocks of the launch wrote */
  unsigned pdl; /* PDL_WAIT | PDL_TRIGGER: its part in programmatic dependent launches */
} kgen;

/* Whether input i of the kernel being emitted is a partial of its
 * split-K pair, written by other blocks of the same launch: read through
 * L2 only (cp.async.cg or __ldcg), never through the read-only path. */
static bool coherent_input(const kgen *k, int32_t i) {
  return k->tail && k->g->t[k->kop->in[i]].producer == k->pair->k1;
}

/* Storage strides of block tensor t (tiles may have padded rows). */
static void tile_strides(const kgen *k, int32_t t, int64_t st[MIRS_MAX_DIMS]) {
  const mirs__shape *s = &k->bg->t[t].shape;
  strides(s, st);
  if (k->pl->t[t].off >= 0 && k->pl->t[t].stride > 0 && s->ndim >= 2) {
    st[s->ndim - 2] = k->pl->t[t].stride;
    for (int d = s->ndim - 3; d >= 0; d--)
      st[d] = st[d + 1] * s->d[d + 1];
  }
}

/* C type of block tensor t's stored elements. */
static const char *tile_ctype(const kgen *k, int32_t t) {
  return ctype(mirs__plan_tile_dtype(k->g, k->bg, t));
}

/* Append `mirs_ld(tT + (index))` of tile t at coordinates c0.. of shape out. */
static void emit_tile_ld(const kgen *k, int32_t t, const mirs__shape *out) {
  int64_t st[MIRS_MAX_DIMS];
  tile_strides(k, t, st);
  mirs__buf_printf(k->b, "mirs_ld(t%d + (", (int)t);
  emit_index_st(k->b, &k->bg->t[t].shape, st, out, out->ndim);
  mirs__buf_puts(k->b, "))");
}

/* Emit a barrier if shared memory was written since the last one. */
static void sync_if_pending(kgen *k, const char *ind) {
  if (k->pending)
    mirs__buf_printf(k->b, "%s__syncthreads();\n", ind);
  k->pending = false;
}

/* The global position "row, column, n - m" of element (c0..) of block
 * causal_mask op's tile into buf: the origins of its rows and columns
 * (graph/schedule.c) as blockIdx and forloop (`f`) offsets. */
static const char *mask_pos(const kgen *k, const mirs__bop *op, char *buf, size_t size) {
  const char *const *bidx = k->bidx;
  int r = k->bg->t[op->in[0]].shape.ndim;
  mirs__dim_origin o[2];
  size_t n = 0;
  buf[0] = '\0';
  for (int a = 0; a < 2; a++) {
    if (r < 2 || NEVER(!mirs__sched_dim_origin(k->g, k->bg, op->in[0], r - 2 + a, &o[a])))
      return "0, 0, 0";
    n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "c%d", r - 2 + a);
    if (o[a].grid >= 0)
      n += (size_t)snprintf(buf + n, n < size ? size - n : 0, " + (int)%s * %" PRId64,
                            bidx[o[a].grid], o[a].gunit);
    if (o[a].forloop)
      n += (size_t)snprintf(buf + n, n < size ? size - n : 0, " + f * %" PRId64, o[a].unit);
    n += (size_t)snprintf(buf + n, n < size ? size - n : 0, ", ");
  }
  snprintf(buf + n, n < size ? size - n : 0, "%" PRId64, o[1].extent - o[0].extent);
  return buf;
}

/* Emit `v = f(v)` for a one-operand elementwise op f (whole, with its
 * `;`), or the head `v = v OP ` of a two-operand one, whose second
 * operand the caller prints, then the returned tail. */
static const char *emit_step_head(kgen *k, const char *ind, const mirs__bop *f) {
  mirs__buf *b = k->b;
  if (f->nin == 1) {
    char pos[256];
    mirs__buf_printf(b, "%sv = ", ind);
    emit_unary(b, f->op, f->cst, "v",
               f->op == MIRS_OP_CAUSAL_MASK ? mask_pos(k, f, pos, sizeof pos) : NULL);
    mirs__buf_puts(b, ";\n");
    return "";
  }
  if (f->op == MIRS_OP_DIV && k->fastdiv) {
    mirs__buf_printf(b, "%sv = __fdividef(v, ", ind);
    return ");\n";
  }
  if (f->op == MIRS_OP_SUB && k->masks) {
    mirs__buf_printf(b, "%sv = mirs_sub(v, ", ind);
    return ");\n";
  }
  mirs__buf_printf(b, "%sv = v %s ", ind, binop(f->op));
  return ";\n";
}

/* Emit the chain of fused ops from tensor t (value in `v`, coordinates
 * c0.. of t's shape, flat index `e`) and the store of the final value. */
static void emit_chain_store(kgen *k, const char *ind, int32_t t) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *s = &bg->t[t].shape;
  while (k->pl->t[t].next >= 0) {
    const mirs__bop *f = &bg->ops[k->pl->t[t].next];
    const char *tail = emit_step_head(k, ind, f);
    if (f->nin > 1) {
      emit_tile_ld(k, f->in[1], s);
      mirs__buf_puts(b, tail);
    }
    t = f->out;
  }
  const mirs__shape *ts = &bg->t[t].shape;
  /* (A 16-bit tile, the transpose of a loaded one, stores by mirs_st:
   * exact, the values are 16-bit already.) */
  bool f32 = k->pl->t[t].elsize == 4;
  if (ts->ndim < 2 || k->pl->t[t].stride == ts->d[ts->ndim - 1]) {
    mirs__buf_printf(b, f32 ? "%st%d[e] = v;\n" : "%smirs_st(t%d + e, v);\n", ind, (int)t);
    return;
  }
  int64_t st[MIRS_MAX_DIMS];
  tile_strides(k, t, st);
  mirs__buf_printf(b, f32 ? "%st%d[" : "%smirs_st(t%d + (", ind, (int)t);
  emit_index_st(b, ts, st, s, s->ndim);
  mirs__buf_puts(b, f32 ? "] = v;\n" : "), v);\n");
}

/* MMA geometry of matmul op: output tiles of 16 x 8 (M padded to m_pad). */
typedef struct mma_geo {
  int64_t m, n, kk, mt, nt, batches, tiles, per;
  bool swap; /* operands swapped: tiles of 16 columns by the 8 padded rows (mt = 1) */
} mma_geo;

static mma_geo mma_geometry(const kgen *k, const mirs__bop *op, int32_t m_pad) {
  const mirs__shape *os = &k->bg->t[op->out].shape, *as = &k->bg->t[op->in[0]].shape;
  int r = os->ndim;
  mma_geo q;
  q.m = os->d[r - 2];
  q.n = os->d[r - 1];
  q.kk = as->d[as->ndim - 1];
  int32_t oi = (int32_t)(op - k->bg->ops);
  if (k->pl->op[oi].k_pad > q.kk)
    q.kk = k->pl->op[oi].k_pad; /* zero columns of A, zero rows of B */
  q.batches = mirs__shape_numel(os) / (q.m * q.n);
  q.swap = k->pl->op[oi].swap;
  q.mt = q.swap ? 1 : m_pad / 16;
  q.nt = q.swap ? q.n / 16 : q.n / 8;
  q.tiles = q.batches * q.mt * q.nt;
  q.per = (q.tiles + k->pl->nwarps - 1) / k->pl->nwarps;
  return q;
}

/* Open the loop over the 16x8 output tiles this warp owns (tile w =
 * warp * per + j: consecutive tiles, so they share their rows when a row
 * of tiles is a multiple of per), with the batch coordinates c0.. of
 * tile w. */
static void open_warp_tiles(kgen *k, const mma_geo *q, const mirs__shape *os) {
  mirs__buf *b = k->b;
  mirs__buf_printf(b, "      MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++) {\n", q->per);
  mirs__buf_printf(b, "        const int w = warp * %" PRId64 " + j;\n", q->per);
  mirs__buf_printf(b, "        if (w >= %" PRId64 ")\n          break;\n", q->tiles);
  mirs__buf_printf(b, "        const int bi = w / %" PRId64 ", mt = (w / %" PRId64 ") %% %" PRId64
                      ", nt = w %% %" PRId64 ";\n        (void)bi;\n",
                   q->mt * q->nt, q->nt, q->mt, q->nt);
  mirs__shape bsh = *os;
  bsh.ndim = os->ndim - 2;
  if (bsh.ndim > 0)
    emit_coords(b, "        ", "int", "bi", &bsh);
}

/* Emit the epilogue of the C fragment `D` of output tile (bi, mt, nt):
 * each of its 4 elements (rows below M only) through t's fused chain. */
static void emit_frag_epilogue(kgen *k, const mma_geo *q, int32_t t, const char *D) {
  mirs__buf *b = k->b;
  mirs__buf_puts(b, "        for (int h = 0; h < 4; h++) {\n");
  if (q->swap) { /* C^T: fragment rows are output columns, its columns output rows */
    mirs__buf_printf(b,
                     "          const int row = tq * 2 + (h & 1);\n"
                     "          if (row >= %" PRId64 ")\n            continue;\n"
                     "          const int e = row * %" PRId64 " + nt * 16 + gq + (h >> 1) * 8;\n"
                     "          (void)mt;\n",
                     q->m, q->n);
    emit_coords(b, "          ", "int", "e", &k->bg->t[t].shape);
    mirs__buf_printf(b, "          float v = %s[h];\n", D);
    emit_chain_store(k, "          ", t);
    mirs__buf_puts(b, "        }\n");
    return;
  }
  mirs__buf_puts(b, "          const int row = mt * 16 + gq + (h >> 1) * 8;\n");
  if (q->mt * 16 != q->m)
    mirs__buf_printf(b, "          if (row >= %" PRId64 ")\n            continue;\n", q->m);
  mirs__buf_printf(b,
                   "          const int e = bi * %" PRId64 " + row * %" PRId64
                   " + nt * 8 + tq * 2 + (h & 1);\n",
                   q->m * q->n, q->n);
  emit_coords(b, "          ", "int", "e", &k->bg->t[t].shape);
  mirs__buf_printf(b, "          float v = %s[h];\n", D);
  emit_chain_store(k, "          ", t);
  mirs__buf_puts(b, "        }\n");
}

/* Emit `ab`, `bb`: the offsets of matmul op's A and B operands at the
 * batch coordinates c0.. (broadcast), in their stored strides. */
static void emit_operand_bases(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  const mirs__shape *os = &bg->t[op->out].shape;
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  tile_strides(k, op->in[0], sa);
  tile_strides(k, op->in[1], sb);
  mirs__buf_puts(k->b, "        const int ab = ");
  emit_index_st(k->b, &bg->t[op->in[0]].shape, sa, os, os->ndim - 2);
  mirs__buf_puts(k->b, ", bb = ");
  emit_index_st(k->b, &bg->t[op->in[1]].shape, sb, os, os->ndim - 2);
  mirs__buf_puts(k->b, ";\n");
}

/* Emit the B fragments of a k step (row `kexpr` of the [k][n] tile at
 * `pb`, stride SB) for ch neighbouring 8-column tiles, two at a time
 * through ldmatrix.x4.trans (lanes 16-31 address the next 8 columns; .x2
 * for a last odd one), and the MMAs d[j] += a . b. */
static void emit_b_frags(kgen *k, int64_t ch, int64_t SB, const char *sfx, const char *kexpr) {
  mirs__buf *b = k->b;
  for (int64_t j = 0; j < ch; j += 2) {
    bool two = j + 1 < ch;
    mirs__buf_printf(b,
                     "          {\n            uint32_t bf[%d];\n"
                     "            mirs_ldmatrix_x%d_trans(bf, pb + %s * %" PRId64 " + %" PRId64
                     ");\n"
                     "            mirs_mma_%s(d[%" PRId64 "], a, bf);\n",
                     two ? 4 : 2, two ? 4 : 2, kexpr, SB, j * 8, sfx, j);
    if (two)
      mirs__buf_printf(b, "            mirs_mma_%s(d[%" PRId64 "], a, bf + 2);\n", sfx, j + 1);
    mirs__buf_puts(b, "          }\n");
  }
}

/* The MMA_16 body when a warp's `per` tiles lie in one row of tiles
 * (same batch and rows): A fragments are loaded once per k step for all of
 * them, B fragments of two neighbouring tiles at once (ldmatrix.x4.trans:
 * lanes 16-31 address the next 8 columns).  With `into`, the C fragments
 * add into that [per][4] array of the register chain (no chunks, no
 * epilogue).  The caller emitted the block's `{` and lane variables and
 * closes it. */
static void emit_mma16_rows(kgen *k, int32_t oi, const mma_geo *q, int64_t SA, int64_t SB,
                            mirs_dtype dt, const char *sfx, const char *into) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  const mirs__plan_op *po = &k->pl->op[oi];
  mirs__buf *b = k->b;
  const mirs__shape *os = &bg->t[op->out].shape;
  int64_t ksteps = q->kk / 16;
  mirs__buf_printf(b, "      const int w0 = warp * %" PRId64 ";\n      if (w0 < %" PRId64 ") {\n",
                   q->per, q->tiles);
  mirs__buf_printf(b, "        const int bi = w0 / %" PRId64 ", mt = (w0 / %" PRId64 ") %% %" PRId64
                      ", nt0 = w0 %% %" PRId64 ";\n        (void)bi;\n",
                   q->mt * q->nt, q->nt, q->mt, q->nt);
  mirs__shape bsh = *os;
  bsh.ndim = os->ndim - 2;
  if (bsh.ndim > 0)
    emit_coords(b, "        ", "int", "bi", &bsh);
  emit_operand_bases(k, op);
  /* A product that is not accumulated keeps its C fragments only until
   * its epilogue: chunks of at most MIRS__PLAN_MMA_CHUNK tiles (their own k loop
   * each, the A fragments reloaded from shared memory) bound the live
   * fragments, so a warp owning a long row of tiles does not spill. */
  int64_t ch = q->per;
  if (po->acc < 0 && !into && ch > MIRS__PLAN_MMA_CHUNK) {
    ch = MIRS__PLAN_MMA_CHUNK;
    while (q->per % ch != 0)
      ch--;
  }
  bool wg = po->mma == MIRS__MMA_WG; /* (one chunk: hopper.c) */
  if (!wg)
    mirs__buf_printf(b,
                     "        const %s *const pa = t%d + ab + (mt * 16 + (lane & 15)) * %" PRId64
                     " + (lane >> 4) * 8;\n",
                     ctype(dt), (int)op->in[0], SA);
  mirs__buf_printf(b, "        %sfor (int c = 0; c < %" PRId64 "; c += %" PRId64 ") {\n",
                   ch < q->per ? "MIRS_NO_UNROLL " : "", q->per, ch);
  if (into)
    mirs__buf_printf(b, "        float (*const d)[4] = %s + c;\n", into);
  else if (po->acc >= 0)
    mirs__buf_printf(b, "        float (*const d)[4] = accf%d + c;\n", (int)po->acc);
  else
    mirs__buf_printf(b, "        float d[%" PRId64 "][4] = {};\n", ch);
  if (wg) {
    mirs__hopper_emit_kloop(b, k->g, bg, k->pl, oi, "        ");
  } else {
    mirs__buf_printf(b,
                     "        const %s *const pb = t%d + bb + (lane & 15) * %" PRId64
                     " + (nt0 + c) * 8 + (lane >> 4) * 8;\n",
                     ctype(dt), (int)op->in[1], SB);
    /* A chunked product's k loop is unrolled by two only: fully
     * unrolled, ptxas may issue every k step's ldmatrix ahead of the
     * MMAs (mqa at forloop=16: 4 steps of A and 8 tiles' B fragments,
     * 127 registers against 72-80 by two; gqa's identical loop it did
     * not), which the plan's register estimate cannot foresee. */
    mirs__buf_printf(b, "        %sfor (int kk = 0; kk < %" PRId64 "; kk += 16) {\n",
                     ch < q->per ? "MIRS_UNROLL2 " : ksteps <= 16 ? "MIRS_UNROLL " : "", q->kk);
    mirs__buf_puts(b, "          uint32_t a[4];\n          mirs_ldmatrix_x4(a, pa + kk);\n");
    emit_b_frags(k, ch, SB, sfx, "kk");
    mirs__buf_puts(b, "        }\n");
  }
  if (po->acc < 0 && !into) {
    mirs__buf_printf(b, "        MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++) {\n"
                        "        const int nt = nt0 + c + j;\n",
                     ch);
    char D[16];
    snprintf(D, sizeof D, "d[j]");
    emit_frag_epilogue(k, q, op->out, D);
    mirs__buf_puts(b, "        }\n");
    k->pending = true;
  }
  mirs__buf_puts(b, "        }\n      }\n");
}

/* The MMA body with the operands swapped (plan.c plan_swap): C^T = B^T
 * A^T on m16n8k16 (MMA_16) or m16n8k8 (tf32).  MMA_16: the A operand is
 * 16 columns of the row-major [k][n] B tile through ldmatrix.x4.trans
 * (lane l gives k-row l % 16 at column block l / 16; its matrices come
 * out as a0, a2, a1, a3), the B operand the 8 padded rows of the A tile
 * through ldmatrix.x2 (lane l gives row l % 8 at k-half (l / 8) % 2).
 * tf32: the same fragments read element by element and rounded (a0..a3 =
 * B[k + tq (+ 4)][n + gq (+ 8)], b0, b1 = A[gq][k + tq (+ 4)]).  The B
 * operand is loaded once per k step for all of the warp's tiles.  Rows
 * of A past M only feed fragment columns the epilogue drops.  Opens and
 * closes its own block. */
static void emit_mma_swapped(kgen *k, int32_t oi, const mma_geo *q, int64_t SA, int64_t SB,
                             mirs_dtype dt, const char *sfx) {
  const mirs__bop *op = &k->bg->ops[oi];
  const mirs__plan_op *po = &k->pl->op[oi];
  mirs__buf *b = k->b;
  bool tf32 = po->mma == MIRS__MMA_TF32;
  mirs__buf_printf(b, "      const int nt0 = warp * %" PRId64 ";\n      if (nt0 < %" PRId64 ") {\n",
                   q->per, q->tiles);
  if (po->acc >= 0)
    mirs__buf_printf(b, "        float (*const d)[4] = accf%d;\n", (int)po->acc);
  else
    mirs__buf_printf(b, "        float d[%" PRId64 "][4] = {};\n", q->per);
  if (tf32) {
    mirs__buf_printf(b, "        const %s *const pa = t%d + gq * %" PRId64 " + tq;\n",
                     tile_ctype(k, op->in[0]), (int)op->in[0], SA);
    mirs__buf_printf(b, "        const %s *const pb = t%d + tq * %" PRId64 " + nt0 * 16 + gq;\n",
                     tile_ctype(k, op->in[1]), (int)op->in[1], SB);
  } else {
    mirs__buf_printf(
        b, "        const %s *const pa = t%d + (lane & 7) * %" PRId64 " + ((lane >> 3) & 1) * 8;\n",
        ctype(dt), (int)op->in[0], SA);
    mirs__buf_printf(b,
                     "        const %s *const pb = t%d + (lane & 15) * %" PRId64
                     " + nt0 * 16 + (lane >> 4) * 8;\n",
                     ctype(dt), (int)op->in[1], SB);
  }
  int ks = tf32 ? 8 : 16;
  mirs__buf_printf(b, "        %sfor (int kk = 0; kk < %" PRId64 "; kk += %d) {\n",
                   q->kk / ks <= 16 ? "MIRS_UNROLL " : "", q->kk, ks);
  if (tf32)
    mirs__buf_puts(b, "          uint32_t xf[2];\n"
                      "          xf[0] = mirs_pack_tf32(mirs_ld(pa + kk));\n"
                      "          xf[1] = mirs_pack_tf32(mirs_ld(pa + kk + 4));\n");
  else
    mirs__buf_puts(b, "          uint32_t xf[2];\n          mirs_ldmatrix_x2(xf, pa + kk);\n");
  mirs__buf_printf(b, "          MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++) {\n", q->per);
  if (q->tiles % q->per != 0)
    mirs__buf_printf(b, "            if (nt0 + j >= %" PRId64 ")\n              break;\n",
                     q->tiles);
  if (tf32)
    mirs__buf_printf(b,
                     "            const %s *const pw = pb + kk * %" PRId64 " + j * 16;\n"
                     "            uint32_t a[4];\n"
                     "            a[0] = mirs_pack_tf32(mirs_ld(pw));\n"
                     "            a[1] = mirs_pack_tf32(mirs_ld(pw + 8));\n"
                     "            a[2] = mirs_pack_tf32(mirs_ld(pw + %" PRId64 "));\n"
                     "            a[3] = mirs_pack_tf32(mirs_ld(pw + %" PRId64 "));\n",
                     tile_ctype(k, op->in[1]), SB, 4 * SB, 4 * SB + 8);
  else
    mirs__buf_printf(b,
                     "            uint32_t w[4];\n"
                     "            mirs_ldmatrix_x4_trans(w, pb + kk * %" PRId64 " + j * 16);\n"
                     "            const uint32_t a[4] = {w[0], w[2], w[1], w[3]};\n",
                     SB);
  mirs__buf_printf(b, "            mirs_mma_%s(d[j], a, xf);\n          }\n        }\n", sfx);
  if (po->acc < 0) {
    mirs__buf_printf(b,
                     "        MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++) {\n"
                     "        const int nt = nt0 + j, mt = 0;\n"
                     "        if (nt >= %" PRId64 ")\n          break;\n",
                     q->per, q->tiles);
    emit_frag_epilogue(k, q, op->out, "d[j]");
    mirs__buf_puts(b, "        }\n");
    k->pending = true;
  }
  mirs__buf_puts(b, "      }\n    }\n");
}

/* Emit a block matmul on tensor cores.  MMA_16: both operands are 16-bit
 * tiles in shared memory; A fragments come from ldmatrix.x4 (lane l gives
 * row l % 16, k-half l / 16), B fragments from ldmatrix.x2.trans of the
 * row-major [k][n] tile (lane l gives k-row l % 16).  MMA_TF32: elements
 * read and rounded to tf32.  Into a register accumulator (pl->op.acc) the
 * product adds into its C fragments; otherwise it goes through the
 * chain to its tile. */
static void emit_mma(kgen *k, int32_t oi) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  const mirs__plan_op *po = &k->pl->op[oi];
  mirs__buf *b = k->b;
  mma_geo q = mma_geometry(k, op, po->m_pad);
  const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape,
                    *bs = &bg->t[op->in[1]].shape;
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  tile_strides(k, op->in[0], sa);
  tile_strides(k, op->in[1], sb);
  int64_t SA = sa[as->ndim - 2], SB = sb[bs->ndim - 2];
  bool tf32 = po->mma == MIRS__MMA_TF32;
  mirs_dtype dt = MIRS_F16;
  if (!tf32)
    dt = mirs__plan_tile_dtype(k->g, k->bg, op->in[0]);
  const char *sfx = tf32 ? "tf32" : dt == MIRS_BF16 ? "bf16" : "f16";
  mirs__buf_printf(b, "    { /* %s = matmul: tensor cores (%s m16n8k%d, %s)%s%s */\n",
                   bg->t[op->out].name,
                   po->mma == MIRS__MMA_WG ? "wgmma, as C fragments of"
                   : tf32                  ? "scalar loads, mma.sync"
                                           : "ldmatrix, mma.sync",
                   tf32 ? 8 : 16, sfx, po->swap ? ", operands swapped (C^T = B^T A^T)" : "",
                   po->acc >= 0 ? ", into the accumulator's registers" : "");
  mirs__buf_puts(b, "      const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;\n"
                    "      (void)gq; (void)tq;\n");
  if (po->swap) {
    emit_mma_swapped(k, oi, &q, SA, SB, dt, sfx);
    return;
  }
  if (!tf32 && q.nt % q.per == 0 && q.tiles % q.per == 0) {
    emit_mma16_rows(k, oi, &q, SA, SB, dt, sfx, NULL);
    mirs__buf_puts(b, "    }\n");
    return;
  }
  open_warp_tiles(k, &q, os);
  emit_operand_bases(k, op);
  if (po->acc >= 0)
    mirs__buf_printf(b, "        float *const d = accf%d[j];\n", (int)po->acc);
  else
    mirs__buf_puts(b, "        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n");
  int64_t ksteps = q.kk / (tf32 ? 8 : 16);
  if (!tf32) {
    mirs__buf_printf(b,
                     "        const %s *const pa = t%d + ab + (mt * 16 + (lane & 15)) * %" PRId64
                     " + (lane >> 4) * 8;\n",
                     ctype(dt), (int)op->in[0], SA);
    mirs__buf_printf(b,
                     "        const %s *const pb = t%d + bb + (lane & 15) * %" PRId64 " + nt * 8;\n",
                     ctype(dt), (int)op->in[1], SB);
    mirs__buf_printf(b, "        %sfor (int kk = 0; kk < %" PRId64 "; kk += 16) {\n",
                     ksteps <= 16 ? "MIRS_UNROLL " : "", q.kk);
    mirs__buf_puts(b, "          uint32_t a[4], bf[2];\n"
                      "          mirs_ldmatrix_x4(a, pa + kk);\n");
    mirs__buf_printf(b, "          mirs_ldmatrix_x2_trans(bf, pb + kk * %" PRId64 ");\n", SB);
  } else {
    mirs__buf_printf(b, "        %sfor (int kk = 0; kk < %" PRId64 "; kk += 8) {\n",
                     ksteps <= 16 ? "MIRS_UNROLL " : "", q.kk);
    mirs__buf_printf(b,
                     "          const %s *const pa = t%d + ab + (mt * 16 + gq) * %" PRId64
                     " + kk + tq;\n",
                     tile_ctype(k, op->in[0]), (int)op->in[0], SA);
    mirs__buf_printf(b,
                     "          const %s *const pb = t%d + bb + (kk + tq) * %" PRId64
                     " + nt * 8 + gq;\n",
                     tile_ctype(k, op->in[1]), (int)op->in[1], SB);
    mirs__buf_puts(b, "          uint32_t a[4], bf[2];\n");
    mirs__buf_puts(b, "          a[0] = mirs_pack_tf32(mirs_ld(pa));\n");
    mirs__buf_printf(b, "          a[1] = mirs_pack_tf32(mirs_ld(pa + %" PRId64 "));\n", 8 * SA);
    mirs__buf_puts(b, "          a[2] = mirs_pack_tf32(mirs_ld(pa + 4));\n");
    mirs__buf_printf(b, "          a[3] = mirs_pack_tf32(mirs_ld(pa + %" PRId64 "));\n", 8 * SA + 4);
    mirs__buf_puts(b, "          bf[0] = mirs_pack_tf32(mirs_ld(pb));\n");
    mirs__buf_printf(b, "          bf[1] = mirs_pack_tf32(mirs_ld(pb + %" PRId64 "));\n", 4 * SB);
  }
  mirs__buf_printf(b, "          mirs_mma_%s(d, a, bf);\n        }\n", sfx);
  if (po->acc < 0) {
    emit_frag_epilogue(k, &q, op->out, "d");
    k->pending = true;
  }
  mirs__buf_puts(b, "      }\n    }\n");
}

/* ---------------------------------------------------------------- register chain */
/* Plan decision 8 (plan.h, mirs__plan_chain): warp w works on rows
 * 16 strip..16 strip + 15 (strip = w / ks) of S and of E·V, and on S's
 * 8-column tiles part * ntl .. part * ntl + ntl - 1 (part = w % ks, ntl =
 * S's tiles / ks).  Lane (gq, tq) holds, per tile j, the C fragment
 * elements h = 0..3 at row 16 strip + gq + 8 (h >> 1), column 8 (part ntl
 * + j) + 2tq + (h & 1) (E·V's values: column 8j + ..., all its tiles,
 * partial sums over the warp's keys when ks > 1): x<t>[j][h]; a row value
 * r<t>[h >> 1] (all 4 lanes of a quad hold it, after two xor shuffles
 * over tq, and the ks warps of the strip after an exchange). */

/* Emit `strip` and `part` of this warp (needs `warp`), for ks parts a
 * strip. */
static void chain_strip(kgen *k, const char *ind, int ks) {
  mirs__buf_printf(
      k->b, "%sconst int strip = warp / %d, part = warp %% %d;\n%s(void)strip; (void)part;\n", ind,
      ks, ks, ind);
}

/* Whether chain tensor t is E·V or computed from it (its columns are E·V's). */
static bool chain_o_side(const kgen *k, int32_t t) {
  const mirs__bgraph *bg = k->bg;
  int32_t p = bg->t[t].producer;
  while (p != k->pl->chain.mm2 && mirs__op_is_elementwise(bg->ops[p].op))
    p = bg->t[bg->ops[p].in[0]].producer;
  return p == k->pl->chain.mm2;
}

/* 8-column tiles of chain tensor t a lane holds: S's part (of a key
 * chunk), or all of E·V's. */
static int64_t chain_tiles(const kgen *k, int32_t t) {
  const mirs__shape *s = &k->bg->t[t].shape;
  return s->d[s->ndim - 1] / 8 / (chain_o_side(k, t) ? 1 : k->pl->chain.ks * k->pl->chain.nc);
}

/* The coordinates c0.. of element (j, h) of a chain tile of shape s. */
static void chain_coords(kgen *k, int32_t t, const char *ind) {
  const mirs__shape *s = &k->bg->t[t].shape;
  int r = s->ndim;
  for (int d = 0; d + 2 < r; d++)
    mirs__buf_printf(k->b, "%sconst int c%d = 0;\n%s(void)c%d;\n", ind, d, ind, d);
  mirs__buf_printf(k->b,
                   "%sconst int c%d = strip * 16 + gq + (h >> 1) * 8, c%d = (part * %" PRId64
                   " + j) * 8 + tq * 2 + (h & 1);\n%s(void)c%d; (void)c%d;\n",
                   ind, r - 2, r - 1, chain_o_side(k, t) ? 0 : chain_tiles(k, t), ind, r - 2,
                   r - 1);
}

/* Emit `ss`, the max, min or sum (red) of row gq + 8h of chain tile x (nt
 * tiles): the lane's 2 * nt elements, then the quad's (xor 1, 2). */
static void emit_row_reduce(kgen *k, int32_t x, int64_t nt, mirs_op red) {
  mirs__buf *b = k->b;
  const char *fn = red_fn(red);
  mirs__buf_printf(b, "        float ss = %s;\n", red_start(red));
  mirs__buf_printf(b, "        MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n", nt);
  if (fn)
    mirs__buf_printf(b, "          ss = %s(%s(ss, x%d[j][2 * h]), x%d[j][2 * h + 1]);\n", fn, fn,
                     (int)x, (int)x);
  else
    mirs__buf_printf(b, "          ss += x%d[j][2 * h] + x%d[j][2 * h + 1];\n", (int)x, (int)x);
  for (int m = 1; m <= 2; m *= 2)
    if (fn)
      mirs__buf_printf(b, "        ss = %s(ss, __shfl_xor_sync(0xffffffffu, ss, %d));\n", fn, m);
    else
      mirs__buf_printf(b, "        ss += __shfl_xor_sync(0xffffffffu, ss, %d);\n", m);
}

/* Emit E·V (chain op oi): A fragments from E's C fragments, B from the
 * loaded tile V, into accumulator registers or a fresh x<out>. */
static void emit_chain_mma(kgen *k, int32_t oi, int64_t ntl) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  mirs__buf *b = k->b;
  int32_t e = op->in[0], v = op->in[1], acc = k->pl->op[oi].acc;
  const mirs__shape *os = &bg->t[op->out].shape, *vs = &bg->t[v].shape;
  int64_t nt2 = os->d[os->ndim - 1] / 8, sv[MIRS_MAX_DIMS];
  tile_strides(k, v, sv);
  int64_t SB = sv[vs->ndim - 2];
  mirs_dtype dv = mirs__plan_tile_dtype(k->g, bg, v);
  bool tf32 = k->pl->chain.mma2 == MIRS__MMA_TF32;
  const char *sfx = tf32 ? "tf32" : dv == MIRS_BF16 ? "bf16" : "f16";
  mirs__buf_printf(b, "      /* %s = matmul(%s, %s): A fragments from %s's C fragments, %s */\n",
                   bg->t[op->out].name, bg->t[e].name, bg->t[v].name, bg->t[e].name,
                   tf32 ? "tf32 m16n8k8 (columns 2tq, 2tq + 1 as k = tq, tq + 4)"
                        : "16-bit m16n8k16 (E in [0, 1]), B by ldmatrix.trans");
  if (acc >= 0)
    mirs__buf_printf(b, "      {\n        float (*const d)[4] = accf%d;\n", (int)acc);
  else
    mirs__buf_printf(
        b, "      float x%d[%" PRId64 "][4] = {};\n      {\n        float (*const d)[4] = x%d;\n",
        (int)op->out, nt2, (int)op->out);
  if (tf32) {
    mirs__buf_printf(
        b, "        const %s *const pb = t%d + (part * %" PRId64 " + 2 * tq) * %" PRId64 " + gq;\n",
        tile_ctype(k, v), (int)v, 8 * ntl, SB);
    mirs__buf_printf(b, "        MIRS_UNROLL for (int s = 0; s < %" PRId64 "; s++) {\n", ntl);
    mirs__buf_printf(
        b,
        "          const uint32_t a[4] = {mirs_pack_tf32(x%d[s][0]), mirs_pack_tf32(x%d[s][2]),\n"
        "                                 mirs_pack_tf32(x%d[s][1]), mirs_pack_tf32(x%d[s][3])};\n",
        (int)e, (int)e, (int)e, (int)e);
    mirs__buf_printf(b, "          MIRS_UNROLL for (int n = 0; n < %" PRId64 "; n++) {\n", nt2);
    mirs__buf_printf(b,
                     "            const uint32_t bf[2] = {mirs_pack_tf32(mirs_ld(pb + s * %" PRId64
                     " + n * 8)),\n"
                     "                                    mirs_pack_tf32(mirs_ld(pb + s * %" PRId64
                     " + %" PRId64 " + n * 8))};\n",
                     8 * SB, 8 * SB, SB);
    mirs__buf_puts(b, "            mirs_mma_tf32(d[n], a, bf);\n          }\n        }\n      }\n");
    return;
  }
  const char *pk = dv == MIRS_BF16 ? "mirs_pack_bf16" : "mirs_pack_f16";
  mirs__buf_printf(b,
                   "        const %s *const pb = t%d + (part * %" PRId64
                   " + (lane & 15)) * %" PRId64 " + (lane >> 4) * 8;\n",
                   ctype(dv), (int)v, 8 * ntl, SB);
  mirs__buf_printf(b, "        MIRS_UNROLL for (int s = 0; s < %" PRId64 "; s++) {\n", ntl / 2);
  mirs__buf_printf(b,
                   "          const uint32_t a[4] = {%s(x%d[2 * s][0], x%d[2 * s][1]), %s(x%d[2 * "
                   "s][2], x%d[2 * s][3]),\n"
                   "                                 %s(x%d[2 * s + 1][0], x%d[2 * s + 1][1]), "
                   "%s(x%d[2 * s + 1][2], x%d[2 * s + 1][3])};\n",
                   pk, (int)e, (int)e, pk, (int)e, (int)e, pk, (int)e, (int)e, pk, (int)e, (int)e);
  emit_b_frags(k, nt2, SB, sfx, "(s * 16)");
  mirs__buf_puts(b, "        }\n      }\n");
}

/* Emit chain op oi (after S): an elementwise op over the fragments, a row
 * max, min or sum, E·V, or an accumulator step in registers. */
static void emit_chain_op(kgen *k, int32_t oi, int64_t ntl) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  mirs__buf *b = k->b;
  int32_t x = op->in[0], y = op->nin > 1 ? op->in[1] : -1, o = op->out;
  if (op->op == MIRS_OP_MATMUL) {
    emit_chain_mma(k, oi, ntl);
    return;
  }
  int64_t ntx = chain_tiles(k, x); /* x's 8-column tiles in this lane (S's or E·V's) */
  if (mirs__op_is_elementwise(op->op)) {
    mirs__buf_printf(b, "      /* %s = %s, in registers */\n      float x%d[%" PRId64 "][4];\n",
                     bg->t[o].name, mirs__graph_ops[op->op].name, (int)o, ntx);
    mirs__buf_printf(b,
                     "      MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n"
                     "        MIRS_UNROLL for (int h = 0; h < 4; h++) {\n",
                     ntx);
    chain_coords(k, o, "          ");
    mirs__buf_printf(b, "          float v = x%d[j][h];\n", (int)x);
    const char *tail = emit_step_head(k, "          ", op);
    if (y >= 0)
      mirs__buf_printf(b, "r%d[h >> 1]%s", (int)y, tail);
    mirs__buf_printf(b, "          x%d[j][h] = v;\n        }\n", (int)o);
    return;
  }
  if (mirs__graph_ops[op->op].kind == MIRS__KIND_REDUCE) {
    mirs__buf_printf(b,
                     "      /* %s = %s over the row: quad shuffles */\n      float r%d[2];\n"
                     "      MIRS_UNROLL for (int h = 0; h < 2; h++) {\n",
                     bg->t[o].name, mirs__graph_ops[op->op].name, (int)o);
    const char *fn = red_fn(op->op);
    emit_row_reduce(k, x, ntl, op->op);
    mirs__buf_printf(b, "        r%d[h] = ss;\n      }\n", (int)o);
    int ks = k->pl->chain.ks;
    if (ks > 1) { /* the strip's ks warps: partial values through t<o>, then all of them */
      int64_t m = k->pl->op[k->pl->chain.mm1].m_pad;
      mirs__buf_printf(
          b,
          "      if (tq == 0)\n        t%d[part * %" PRId64 " + strip * 16 + gq] = r%d[0], "
          "t%d[part * %" PRId64 " + strip * 16 + gq + 8] = r%d[1];\n      __syncthreads();\n",
          (int)o, m, (int)o, (int)o, m, (int)o);
      mirs__buf_printf(b,
                       "      MIRS_UNROLL for (int h = 0; h < 2; h++) {\n        float ss = %s;\n"
                       "        MIRS_UNROLL for (int p = 0; p < %d; p++)\n",
                       red_start(op->op), ks);
      if (fn)
        mirs__buf_printf(b, "          ss = %s(ss, t%d[p * %" PRId64 " + strip * 16 + gq + h * 8]);\n",
                         fn, (int)o, m);
      else
        mirs__buf_printf(b, "          ss += t%d[p * %" PRId64 " + strip * 16 + gq + h * 8];\n",
                         (int)o, m);
      mirs__buf_printf(b, "        r%d[h] = ss;\n      }\n", (int)o);
    }
    return;
  }
  bool frag = k->pl->t[o].frag == MIRS__FRAG_C;
  if (op->op == MIRS_OP_ACCUM && bg->t[x].producer == k->pl->chain.mm2 &&
      k->pl->op[k->pl->chain.mm2].acc == o) {
    mirs__buf_printf(b, "      /* %s = accum(%s): added by the matmul into its C fragments */\n",
                     bg->t[o].name, bg->t[x].name);
    return;
  }
  if (op->op == MIRS_OP_ACCUM) {
    mirs__buf_printf(b,
                     "      /* %s = accum(%s), in registers */\n"
                     "      MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n"
                     "        MIRS_UNROLL for (int h = 0; h < 4; h++)\n"
                     "          accf%d[j][h] += x%d[j][h];\n",
                     bg->t[o].name, bg->t[x].name, ntx, (int)o, (int)x);
    return;
  }
  mirs__buf_printf(b, "      /* %s = %s(%s%s%s), in registers */\n", bg->t[o].name,
                   mirs__graph_ops[op->op].name, bg->t[x].name, y >= 0 ? ", " : "",
                   y >= 0 ? bg->t[y].name : "");
  mirs__buf_puts(b, "      MIRS_UNROLL for (int h = 0; h < 2; h++) {\n");
  if (op->op == MIRS_OP_ACCUM_MAX || op->op == MIRS_OP_ACCUM_MIN) { /* of a row value */
    mirs__buf_printf(b, "        accr%d[h] = %s(accr%d[h], r%d[h]);\n      }\n", (int)o,
                     red_fn(op->op), (int)o, (int)x);
    return;
  }
  if (op->op == MIRS_OP_ACCUM_SUM) {
    emit_row_reduce(k, x, ntl, MIRS_OP_SUM);
    mirs__buf_printf(b, "        accr%d[h] += ss;\n      }\n", (int)o);
    return;
  }
  /* ACCUM_ONLINE: rescale to the new running max (interp.c: a -inf
   * shift adds nothing). */
  mirs__buf_printf(b,
                   "        const float mo = run%d[h], mv = r%d[h], mn = fmaxf(mo, mv);\n"
                   "        const float so = mo == -INFINITY ? 0.0f : expf(mo - mn),\n"
                   "                    sv = mv == -INFINITY ? 0.0f : expf(mv - mn);\n",
                   (int)o, (int)y);
  if (frag) {
    int64_t nt2 = chain_tiles(k, x);
    mirs__buf_printf(b,
                     "        MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n"
                     "          MIRS_UNROLL for (int i = 2 * h; i < 2 * h + 2; i++)\n"
                     "            accf%d[j][i] = accf%d[j][i] * so + x%d[j][i] * sv;\n",
                     nt2, (int)o, (int)o, (int)x);
  } else {
    mirs__buf_printf(b, "        accr%d[h] = accr%d[h] * so + r%d[h] * sv;\n", (int)o, (int)o,
                     (int)x);
  }
  mirs__buf_printf(b, "        run%d[h] = mn;\n      }\n", (int)o);
}

/* Emit the register chain at the step of E·V (every operand from outside
 * the chain exists by then): S into registers, then every chain op in
 * order (plan.h, mirs__plan_chain). */
static void emit_chain(kgen *k) {
  const mirs__bgraph *bg = k->bg;
  const mirs__plan_chain *c = &k->pl->chain;
  mirs__buf *b = k->b;
  const mirs__bop *m1 = &bg->ops[c->mm1];
  const mirs__shape *ss = &bg->t[m1->out].shape, *as = &bg->t[m1->in[0]].shape,
                    *bs = &bg->t[m1->in[1]].shape;
  int64_t ntl = ss->d[ss->ndim - 1] / 8 / c->ks / c->nc;
  sync_if_pending(k, "    ");
  mirs__buf_printf(
      b,
      "    { /* register chain: %s = matmul .. %s = matmul, in the registers of the warp\n"
      "       * owning each 16-row strip (no shared-memory round trip) */\n",
      bg->t[m1->out].name, bg->t[bg->ops[c->mm2].out].name);
  /* Key chunks (plan.h): chunk kc of warp w is the part of virtual warp
   * w * nc + kc, a strip having ks * nc of them; each adds its partial
   * sums into the accumulators. */
  if (c->nc > 1)
    mirs__buf_printf(b,
                     "    MIRS_NO_UNROLL for (int kc = 0; kc < %d; kc++) { /* key chunks of %" PRId64
                     " keys */\n",
                     (int)c->nc, 8 * ntl);
  char vw[32] = "";
  if (c->nc > 1)
    snprintf(vw, sizeof vw, " * %d + kc", (int)c->nc);
  mirs__buf_printf(
      b, "      const int lane = tid & 31, warp = (tid >> 5)%s, gq = lane >> 2, tq = lane & 3;\n"
         "      (void)gq; (void)tq;\n",
      vw);
  chain_strip(k, "      ", c->ks * c->nc);
  mirs__buf_printf(b, "      float x%d[%" PRId64 "][4] = {};\n", (int)m1->out, ntl);
  int64_t sa[MIRS_MAX_DIMS], sb[MIRS_MAX_DIMS];
  tile_strides(k, m1->in[0], sa);
  tile_strides(k, m1->in[1], sb);
  int64_t SA = sa[as->ndim - 2], SB = sb[bs->ndim - 2];
  mirs_dtype dt = mirs__plan_tile_dtype(k->g, bg, m1->in[0]);
  mma_geo q = mma_geometry(k, m1, k->pl->op[c->mm1].m_pad);
  q.per = ntl; /* (a virtual warp's tiles: fewer than a warp's with key chunks) */
  char into[16];
  snprintf(into, sizeof into, "x%d", (int)m1->out);
  if (k->pl->op[c->mm1].mma == MIRS__MMA_16) {
    emit_mma16_rows(k, c->mm1, &q, SA, SB, dt, dt == MIRS_BF16 ? "bf16" : "f16", into);
  } else { /* tf32 (a computed operand): elements read as emit_mma's tf32 path */
    mirs__buf_printf(b, "      MIRS_UNROLL for (int kk = 0; kk < %" PRId64 "; kk += 8) {\n", q.kk);
    mirs__buf_printf(
        b, "        const %s *const pa = t%d + (strip * 16 + gq) * %" PRId64 " + kk + tq;\n",
        tile_ctype(k, m1->in[0]), (int)m1->in[0], SA);
    mirs__buf_printf(b,
                     "        const uint32_t a[4] = {mirs_pack_tf32(mirs_ld(pa)), "
                     "mirs_pack_tf32(mirs_ld(pa + %" PRId64 ")),\n"
                     "                               mirs_pack_tf32(mirs_ld(pa + 4)), "
                     "mirs_pack_tf32(mirs_ld(pa + %" PRId64 "))};\n",
                     8 * SA, 8 * SA + 4);
    mirs__buf_printf(b, "        MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++) {\n", ntl);
    mirs__buf_printf(b,
                     "          const %s *const pb = t%d + (kk + tq) * %" PRId64
                     " + (part * %" PRId64 " + j) * 8 + gq;\n",
                     tile_ctype(k, m1->in[1]), (int)m1->in[1], SB, ntl);
    mirs__buf_printf(b,
                     "          const uint32_t bf[2] = {mirs_pack_tf32(mirs_ld(pb)), "
                     "mirs_pack_tf32(mirs_ld(pb + %" PRId64 "))};\n"
                     "          mirs_mma_tf32(%s[j], a, bf);\n        }\n      }\n",
                     4 * SB, into);
  }
  for (int32_t i = c->mm1 + 1; i < bg->nops; i++)
    if (k->pl->op[i].chain)
      emit_chain_op(k, i, ntl);
  mirs__buf_puts(b, c->nc > 1 ? "    }\n    }\n" : "    }\n");
}

/* log2 of a power of two. */
static int ilog2(int x) {
  int l = 0;
  while ((1 << l) < x)
    l++;
  return l;
}

/* The loop over a lane's elements of row q in emit_reduce_tree: lane sub
 * takes p = sub + G m for m < J = ceil(len / G), starting at m = q mod J.
 * The rotation puts the rows a warp reads at once on different banks:
 * without it, G lanes of 32 / G rows at a row stride of a multiple of 32
 * words (an unpadded 64-wide f32 tile) all hit the same G banks, a
 * (32 / G)-way conflict on every load.  Each lane still reads each of
 * its elements once; only the order of its partial sum changes. */
static void emit_tree_loop(mirs__buf *b, int64_t len, int grp) {
  int64_t J = (len + grp - 1) / grp;
  mirs__buf_printf(b, "        for (int m = 0; m < %" PRId64 "; m++) {\n", J);
  mirs__buf_printf(b, "          const int p = sub + %d * (int)((unsigned)(m + q) %% %" PRId64 "u);\n", grp, J);
  if (len % grp != 0)
    mirs__buf_printf(b, "          if (p >= %" PRId64 ")\n            continue;\n", len);
}

/* `const int ix = ...;`: the offset in a tile of strides st of the row
 * (or element) at coordinates c0..c(nd-1) of s, the reduced dim and
 * size-1 dims left out. */
static void emit_row_ix(mirs__buf *b, const char *ind, int nd, const mirs__shape *s, int dim,
                        const int64_t st[MIRS_MAX_DIMS]) {
  mirs__buf_printf(b, "%sconst int ix = ", ind);
  bool any = false;
  for (int d = 0; d < nd; d++)
    if (d != dim && s->d[d] > 1) {
      mirs__buf_printf(b, "%sc%d * %" PRId64, any ? " + " : "", d, st[d]);
      any = true;
    }
  mirs__buf_printf(b, "%s;\n", any ? "" : "0");
}

/* The cross-warp step of a tree whose rows have several warps each
 * (mirs__plan_xwarp): lane 0 of every warp puts its warp's total in the
 * scratch (pl->xred, one float a warp), a barrier, then every lane of the
 * row's warps adds the row's wpr totals in warp order (the same value,
 * bit for bit, in each of them), and a barrier before the scratch is
 * written again.  var: the running value; fn: fmaxf/fminf or NULL (+). */
static void emit_xwarp_combine(kgen *k, const char *ind, const char *var, const char *fn,
                               const char *start, int64_t rows, int wpr, const char *row) {
  mirs__buf *b = k->b;
  mirs__buf_printf(b, "%sif (sub == 0)\n%s  mirs_xred[w] = %s;\n%s__syncthreads();\n", ind, ind, var,
                   ind);
  mirs__buf_printf(b, "%s%s = %s;\n", ind, var, start);
  mirs__buf_printf(b, "%sfor (int jj = 0; jj < %d; jj++)\n", ind, wpr);
  if (fn)
    mirs__buf_printf(b, "%s  %s = %s(%s, mirs_xred[jj * %" PRId64 " + %s]);\n", ind, var, fn, var, rows,
                     row);
  else
    mirs__buf_printf(b, "%s  %s += mirs_xred[jj * %" PRId64 " + %s];\n", ind, var, rows, row);
  mirs__buf_printf(b, "%s__syncthreads();\n", ind);
}

/* The loop over a lane's elements p of row q in emit_reduce_tree: G
 * lanes of one group a row (emit_tree_loop, rows beyond the last
 * skipped), or across warps (wpr > 1) share j < wpr of the row's warps,
 * p = sub + 32 (j + wpr m). */
static void emit_row_pass(mirs__buf *b, int64_t rows, int64_t len, int grp, int wpr) {
  if (wpr <= 1) {
    mirs__buf_printf(b, "      if (q < %" PRId64 ")\n", rows);
    emit_tree_loop(b, len, grp);
    return;
  }
  int64_t span = 32 * (int64_t)wpr;
  mirs__buf_printf(b,
                   "      if (j < %d)\n        for (int m = 0; m < %" PRId64 "; m++) {\n"
                   "          const int p = sub + 32 * (j + %d * m);\n",
                   wpr, (len + span - 1) / span, wpr);
  if (len % span != 0)
    mirs__buf_printf(b, "          if (p >= %" PRId64 ")\n            continue;\n", len);
}

/* The butterfly over lanes from/2.. of a group (fn: fmaxf/fminf, or NULL
 * for +), then, across warps, the warps' totals of the row added. */
static void emit_row_total(kgen *k, const char *fn, const char *start, int from, int64_t rows,
                           int wpr) {
  for (int m = from / 2; m >= 1; m /= 2)
    if (fn)
      mirs__buf_printf(k->b, "      ss = %s(ss, __shfl_xor_sync(0xffffffffu, ss, %d));\n", fn, m);
    else
      mirs__buf_printf(k->b, "      ss += __shfl_xor_sync(0xffffffffu, ss, %d);\n", m);
  if (wpr > 1)
    emit_xwarp_combine(k, "      ", "ss", fn, start, rows, wpr, "q");
}

/* Emit a block sum or rms_norm as a tree: G lanes per reduced row each
 * take every G-th element, a __shfl_xor_sync butterfly gives all of them
 * the row's total; then lane 0 stores the sum (sum), or every lane
 * normalises its elements of the row (rms_norm), through the chain.
 * Rows fewer than half the warps and long (mirs__plan_xwarp) take
 * several warps each: warp w takes row q = w % rows, its share
 * j = w / rows of the row's elements, so every warp works where a row of
 * one warp left the others idle (ntrans's 4096-wide row on 4 warps: 128
 * serial loads a lane, now 32); the warps' totals are added through the
 * scratch (emit_xwarp_combine), and the normalisation is spread the
 * same way. */
static void emit_reduce_tree(kgen *k, int32_t oi) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  mirs__buf *b = k->b;
  const mirs__shape *os = &bg->t[op->out].shape, *xs = &bg->t[op->in[0]].shape;
  bool ln = op->op == MIRS_OP_LAYER_NORM, rms = op->op == MIRS_OP_RMS_NORM || ln;
  const char *fn = red_fn(op->op); /* (a max or min tree: fmaxf, fminf) */
  int r = os->ndim, dim = rms ? r - 1 : op->dim, grp = k->pl->op[oi].group;
  int64_t len = xs->d[dim], rows = mirs__shape_numel(xs) / len;
  int64_t groups = k->nthreads / grp, per = (rows + groups - 1) / groups;
  int64_t st[MIRS_MAX_DIMS];
  tile_strides(k, op->in[0], st);
  mirs__shape rsh = *os; /* the row coordinates: the output without its reduced dim */
  if (rms)
    rsh.ndim = r - 1;
  int wpr = mirs__plan_xwarp(k->pl, rows, len, grp);
  if (wpr <= 1 || k->pl->xred < 0)
    wpr = 1;
  int from = wpr > 1 ? 32 : grp; /* (the butterfly's lanes) */
  if (wpr > 1) {
    mirs__buf_printf(b, "    /* %s = %s: %d warps per row, warp-shuffle trees added across warps */\n",
                     bg->t[op->out].name, mirs__graph_ops[op->op].name, wpr);
    mirs__buf_puts(b, "    {\n");
    mirs__buf_printf(b,
                     "      float *const mirs_xred = (float *)((char *)mirs_smem + %" PRId64 ");\n"
                     "      const int w = tid >> 5, sub = tid & 31;\n"
                     "      const int q = w %% %" PRId64 ", j = w / %" PRId64 ";\n",
                     k->pl->xred, rows, rows);
  } else {
    mirs__buf_printf(b, "    /* %s = %s: %d lanes per row, warp-shuffle tree */\n",
                     bg->t[op->out].name, mirs__graph_ops[op->op].name, grp);
    mirs__buf_printf(b, "    for (int r = 0; r < %" PRId64 "; r++) {\n", per);
    mirs__buf_printf(b, "      const int q = (tid >> %d) + r * %" PRId64 ", sub = tid & %d;\n",
                     ilog2(grp), groups, grp - 1);
  }
  if (rsh.ndim > 0)
    emit_coords(b, "      ", "int", "q", &rsh);
  emit_row_ix(b, "      ", rsh.ndim, os, dim, st);
  mirs__buf_printf(b, "      float ss = %s;\n", red_start(op->op));
  emit_row_pass(b, rows, len, grp, wpr);
  mirs__buf_printf(b, "          const float y = mirs_ld(t%d + (ix + p * %" PRId64 "));\n",
                   (int)op->in[0], st[dim]);
  if (fn)
    mirs__buf_printf(b, "          ss = %s(ss, y);\n        }\n", fn);
  else
    mirs__buf_printf(b, "          ss %s;\n        }\n", rms && !ln ? "+= y * y" : "+= y");
  emit_row_total(k, fn, red_start(op->op), from, rows, wpr);
  char eps[48] = "";
  if (ln || op->eps != 0.0) /* (layer_norm's always, rms_norm's when it has one) */
    snprintf(eps, sizeof eps, " + %.9ef", op->eps);
  if (ln) { /* the row's mean, then a second pass for the variance */
    mirs__buf_printf(b, "      const float mu = ss / %" PRId64 ".0f;\n      ss = 0.0f;\n", len);
    emit_row_pass(b, rows, len, grp, wpr);
    mirs__buf_printf(b, "          const float y = mirs_ld(t%d + (ix + p * %" PRId64 ")) - mu;\n",
                     (int)op->in[0], st[dim]);
    mirs__buf_puts(b, "          ss += y * y;\n        }\n");
    emit_row_total(k, NULL, "0.0f", from, rows, wpr);
  }
  if (!rms) {
    if (wpr > 1)
      mirs__buf_puts(b, "      if (j == 0 && sub == 0) {\n");
    else
      mirs__buf_printf(b, "      if (q < %" PRId64 " && sub == 0) {\n", rows);
    mirs__buf_puts(b, "        const int e = q;\n        float v = ss;\n");
    if (op->op == MIRS_OP_MEAN)
      mirs__buf_printf(b, "        v /= %" PRId64 ".0f;\n", len);
    emit_chain_store(k, "        ", op->out);
    mirs__buf_puts(b, "      }\n    }\n");
    return;
  }
  if (k->fastdiv) /* one division per row, a multiply per element */
    mirs__buf_printf(b, "      const float inv = 1.0f / sqrtf(ss / %" PRId64 ".0f%s);\n", len, eps);
  else
    mirs__buf_printf(b, "      const float rms = sqrtf(ss / %" PRId64 ".0f%s);\n", len, eps);
  emit_row_pass(b, rows, len, grp, wpr);
  mirs__buf_printf(b, "          const int c%d = p, e = q * %" PRId64 " + p;\n          (void)c%d; (void)e;\n",
                   r - 1, len, r - 1);
  /* (every pass at the reduced dim's tile stride, as the first) */
  mirs__buf_printf(b, "          float v = (mirs_ld(t%d + (ix + p * %" PRId64 "))%s) %s;\n",
                   (int)op->in[0], st[dim], ln ? " - mu" : "", k->fastdiv ? "* inv" : "/ rms");
  emit_chain_store(k, "          ", op->out);
  mirs__buf_puts(b, "        }\n    }\n");
}

/* Emit a compute block op (either phase) and its fused chain. */
static void emit_block_compute(kgen *k, int32_t oi) {
  const mirs__bgraph *bg = k->bg;
  const mirs__bop *op = &bg->ops[oi];
  mirs__buf *b = k->b;
  sync_if_pending(k, "    ");
  if (k->pl->op[oi].mma != MIRS__MMA_NONE) {
    emit_mma(k, oi);
    return;
  }
  if (k->pl->op[oi].group > 1 || mirs__graph_ops[op->op].kind == MIRS__KIND_RMSNORM) {
    emit_reduce_tree(k, oi); /* (rms_norm, layer_norm: on any threads, plan.c) */
    k->pending = true;
    return;
  }
  const mirs__shape *os = &bg->t[op->out].shape;
  char names[2][16];
  const char *in[2] = {NULL, NULL};
  const mirs__shape *ins[2] = {NULL, NULL};
  int64_t st[2][MIRS_MAX_DIMS];
  const int64_t *ist[2] = {st[0], st[1]};
  for (int a = 0; a < op->nin && a < 2; a++) {
    snprintf(names[a], sizeof names[a], "t%d", (int)op->in[a]);
    in[a] = names[a];
    ins[a] = &bg->t[op->in[a]].shape;
    tile_strides(k, op->in[a], st[a]);
  }
  mirs__buf_printf(b, "    /* %s = %s */\n", bg->t[op->out].name, mirs__graph_ops[op->op].name);
  mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) {\n",
                   mirs__shape_numel(os), k->nthreads);
  emit_coords(b, "      ", "int", "e", os);
  mirs__buf_puts(b, "      float v;\n");
  char pos[256];
  emit_value(b, "      ", "int", op->op, op->dim, op->eps, op->cst, in, ins, ist, os,
             op->op == MIRS_OP_CAUSAL_MASK ? mask_pos(k, op, pos, sizeof pos) : NULL, k->masks);
  emit_chain_store(k, "      ", op->out);
  mirs__buf_puts(b, "    }\n");
  k->pending = true;
}

/* The matmul whose C-fragment layout accumulator op keeps (acc_mma): its
 * operand's producer, or the chain's E·V for a chain accumulator. */
static int32_t frag_producer(const kgen *k, const mirs__bop *op) {
  if (k->pl->t[op->out].frag != MIRS__FRAG_NONE)
    return k->pl->chain.mm2;
  return k->bg->t[op->in[0]].producer;
}

/* Accumulator storage element r of accumulator tensor t. */
static void acc_ref(const kgen *k, int32_t t, char *buf, size_t size) {
  if (k->pl->t[t].acc_smem)
    snprintf(buf, size, "a%d[tid + r * %d]", (int)t, k->nthreads);
  else
    snprintf(buf, size, "acc%d[r]", (int)t);
}

/* Storage element r of the running max of ACCUM_ONLINE result t: after
 * the running sums in shared memory, or a register array beside them. */
static void online_run_ref(const kgen *k, int32_t t, char *buf, size_t size) {
  if (k->pl->t[t].acc_smem)
    snprintf(buf, size, "a%d[%" PRId64 " + tid + r * %d]", (int)t,
             mirs__shape_numel(&k->bg->t[t].shape), k->nthreads);
  else
    snprintf(buf, size, "run%d[r]", (int)t);
}

/* Accumulator elements per thread of t, and the threads that share one
 * element (tree reductions: a group of lanes; else 1). */
static int64_t acc_per_thread(const kgen *k, int32_t t, int *group) {
  int64_t n = mirs__shape_numel(&k->bg->t[t].shape);
  int g = k->pl->t[t].tree ? k->pl->t[t].group : 1;
  int64_t owners = k->nthreads / g;
  if (group)
    *group = g;
  return (n + owners - 1) / owners;
}

/* Open a loop over the accumulator elements this thread owns (with
 * group > 1, lane 0 of the group writes; the others skip). */
static void open_acc_loop(kgen *k, int32_t t) {
  int64_t n = mirs__shape_numel(&k->bg->t[t].shape);
  int grp;
  int64_t per = acc_per_thread(k, t, &grp);
  mirs__buf_printf(k->b, "    %sfor (int r = 0; r < %" PRId64 "; r++) {\n",
                   k->pl->t[t].acc_smem ? "" : "MIRS_UNROLL ", per);
  if (grp > 1)
    mirs__buf_printf(k->b, "      const int e = (tid >> %d) + r * %d;\n", ilog2(grp),
                     k->nthreads / grp);
  else
    mirs__buf_printf(k->b, "      const int e = tid + r * %d;\n", k->nthreads);
  mirs__buf_printf(k->b, "      if (e >= %" PRId64 ")\n        break;\n", n);
  if (grp > 1)
    mirs__buf_printf(k->b, "      if ((tid & %d) != 0)\n        continue;\n", grp - 1);
}

/* Emit a tree-reduced ACCUM_SUM / ACCUM_RMS step: the G lanes of a group
 * take every G-th element of the row, then a shuffle butterfly gives each
 * of them the row's total (bit-identical in every lane). */
static void emit_accum_tree(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *xs = &bg->t[op->in[0]].shape, *as = &bg->t[op->out].shape;
  int32_t t = op->out;
  int64_t n = mirs__shape_numel(as);
  int grp;
  int64_t per = acc_per_thread(k, t, &grp);
  int64_t xst[MIRS_MAX_DIMS];
  tile_strides(k, op->in[0], xst);
  bool rms = op->op == MIRS_OP_ACCUM_RMS;
  int dim = rms ? xs->ndim - 1 : op->dim;
  /* Across warps (mirs__plan_xwarp; elements fewer than half the warps):
   * warp w adds share j = w / n of element e = w % n, the warps' totals
   * through the scratch; the owners (w < n, as in the one-warp form) add
   * the element's total to their accumulator, the other warps' stay 0
   * as before. */
  int wpr = mirs__plan_xwarp(k->pl, n, xs->d[dim], grp);
  bool xw = wpr > 1 && k->pl->xred >= 0 && per == 1;
  if (xw) {
    mirs__buf_printf(b, "    /* %s = %s(%s): %d warps per element, warp-shuffle trees added across warps */\n",
                     bg->t[t].name, mirs__graph_ops[op->op].name, bg->t[op->in[0]].name, wpr);
    mirs__buf_printf(b,
                     "    {\n      float *const mirs_xred = (float *)((char *)mirs_smem + %" PRId64 ");\n"
                     "      const int w = tid >> 5, sub = tid & 31;\n"
                     "      const int e = w %% %" PRId64 ", j = w / %" PRId64 ";\n"
                     "      float v = 0.0f;\n      if (j < %d) {\n",
                     k->pl->xred, n, n, wpr);
  } else {
    mirs__buf_printf(b, "    /* %s = %s(%s): %d lanes per element, warp-shuffle tree */\n",
                     bg->t[t].name, mirs__graph_ops[op->op].name, bg->t[op->in[0]].name, grp);
    mirs__buf_printf(b, "    MIRS_UNROLL for (int r = 0; r < %" PRId64 "; r++) {\n", per);
    mirs__buf_printf(b, "      const int e = (tid >> %d) + r * %d, sub = tid & %d;\n", ilog2(grp),
                     k->nthreads / grp, grp - 1);
    mirs__buf_printf(b, "      float v = 0.0f;\n      if (e < %" PRId64 ") {\n", n);
  }
  emit_coords(b, "        ", "int", "e", as);
  emit_row_ix(b, "        ", as->ndim, as, dim, xst);
  mirs__buf_printf(b, "        for (int p = sub%s; p < %" PRId64 "; p += %d) {\n", xw ? " + 32 * j" : "",
                   xs->d[dim], xw ? 32 * wpr : grp);
  mirs__buf_printf(b, "          const float y = mirs_ld(t%d + (ix + p * %" PRId64 "));\n",
                   (int)op->in[0], xst[dim]);
  mirs__buf_printf(b, "          v += %s;\n        }\n      }\n", rms ? "y * y" : "y");
  for (int m = xw ? 16 : grp / 2; m >= 1; m /= 2)
    mirs__buf_printf(b, "      v += __shfl_xor_sync(0xffffffffu, v, %d);\n", m);
  if (xw) {
    emit_xwarp_combine(k, "      ", "v", NULL, "0.0f", n, wpr, "e");
    mirs__buf_printf(b, "      if (w < %" PRId64 ")\n        acc%d[0] += v;\n    }\n", n, (int)t);
  } else {
    mirs__buf_printf(b, "      acc%d[r] += v;\n    }\n", (int)t);
  }
}

/* Emit an ACCUM* step: this iteration's contribution to the owned elements. */
static void emit_accum(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *xs = &bg->t[op->in[0]].shape, *as = &bg->t[op->out].shape;
  if (k->pl->op[op - bg->ops].chain) {
    mirs__buf_printf(b, "    /* %s = %s(%s): in the register chain */\n", bg->t[op->out].name,
                     mirs__graph_ops[op->op].name, bg->t[op->in[0]].name);
    return;
  }
  if (k->pl->t[op->out].acc_mma) {
    mirs__buf_printf(b, "    /* %s = accum(%s): added by the matmul into its C fragments */\n",
                     bg->t[op->out].name, bg->t[op->in[0]].name);
    return;
  }
  char ref[64];
  acc_ref(k, op->out, ref, sizeof ref);
  sync_if_pending(k, "    ");
  if (k->pl->t[op->out].tree) {
    emit_accum_tree(k, op);
    return;
  }
  mirs__buf_printf(b, "    /* %s = %s(%s%s%s) */\n", bg->t[op->out].name,
                   mirs__graph_ops[op->op].name, bg->t[op->in[0]].name, op->nin > 1 ? ", " : "",
                   op->nin > 1 ? bg->t[op->in[1]].name : "");
  open_acc_loop(k, op->out);
  emit_coords(b, "      ", "int", "e", as);
  mirs__buf_puts(b, "      float v;\n");
  char xn[16];
  snprintf(xn, sizeof xn, "t%d", (int)op->in[0]);
  const char *in[1] = {xn};
  const mirs__shape *ins[1] = {xs};
  int64_t xst[MIRS_MAX_DIMS];
  tile_strides(k, op->in[0], xst);
  const int64_t *ist[1] = {xst};
  if (op->op == MIRS_OP_ACCUM) {
    mirs__buf_puts(b, "      v = ");
    emit_tile_ld(k, op->in[0], as);
    mirs__buf_puts(b, ";\n");
  } else if (op->op == MIRS_OP_ACCUM_SUM || op->op == MIRS_OP_ACCUM_MAX ||
             op->op == MIRS_OP_ACCUM_MIN) {
    const char *fn = red_fn(op->op);
    mirs_op red = op->op == MIRS_OP_ACCUM_MAX   ? MIRS_OP_MAX
                  : op->op == MIRS_OP_ACCUM_MIN ? MIRS_OP_MIN
                                                : MIRS_OP_SUM;
    emit_value(b, "      ", "int", red, op->dim, 0.0, NULL, in, ins, ist, as, NULL, false);
    if (fn) {
      mirs__buf_printf(b, "      %s = %s(%s, v);\n    }\n", ref, fn, ref);
      return;
    }
  } else if (op->op == MIRS_OP_ACCUM_ONLINE) {
    /* Rescale the running sum to the new running max; each thread owns
     * the same elements every iteration, so run[] is its own. */
    char run[64];
    online_run_ref(k, op->out, run, sizeof run);
    mirs__buf_puts(b, "      v = ");
    emit_tile_ld(k, op->in[0], as);
    mirs__buf_puts(b, ";\n      const float mv = ");
    emit_tile_ld(k, op->in[1], as);
    /* (a -inf shift, a row a mask emptied, adds nothing: interp.c) */
    mirs__buf_printf(b, ";\n      const float mo = %s, mn = fmaxf(mo, mv);\n", run);
    mirs__buf_printf(b, "      %s = (mo == -INFINITY ? 0.0f : %s * expf(mo - mn)) +\n"
                        "          (mv == -INFINITY ? 0.0f : v * expf(mv - mn));\n",
                     ref, ref);
    mirs__buf_printf(b, "      %s = mn;\n    }\n", run);
    return;
  } else {
    int64_t last = xs->d[xs->ndim - 1];
    mirs__buf_puts(b, "      const int row = ");
    emit_index_st(b, xs, xst, as, as->ndim - 1);
    mirs__buf_printf(b, ";\n      v = 0.0f;\n      for (int p = 0; p < %" PRId64 "; p++) {\n", last);
    mirs__buf_printf(b, "        const float y = mirs_ld(%s + (row + p));\n        v += y * y;\n      }\n",
                     xn);
  }
  mirs__buf_printf(b, "      %s += v;\n    }\n", ref);
}

/* Emit the write-back of a register-chain accumulator: the partial sums
 * of a split strip (E·V's, S's row sums) added across its ks warps
 * through the exchange at xoff, then part 0 writes the strip's values
 * through the accumulator's chain (a row value: lane tq == 0 of the quad). */
static void emit_chain_writeback(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  const mirs__plan *pl = k->pl;
  mirs__buf *b = k->b;
  int32_t t = op->out;
  bool frag = pl->t[t].frag == MIRS__FRAG_C;
  int ks = pl->chain.ks;
  mma_geo q = mma_geometry(k, &bg->ops[pl->chain.mm2], pl->op[pl->chain.mm2].m_pad);
  int64_t w = frag ? 4 * q.nt : 2; /* a lane's values */
  char v[32];
  snprintf(v, sizeof v, frag ? "accf%d[j][h]" : "accr%d[h]", (int)t);
  char loop[160];
  if (frag)
    snprintf(loop, sizeof loop,
             "      MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n"
             "        MIRS_UNROLL for (int h = 0; h < 4; h++)\n",
             q.nt);
  else
    snprintf(loop, sizeof loop, "      MIRS_UNROLL for (int h = 0; h < 2; h++)\n");
  mirs__buf_printf(b, "    { /* %s: write back from the register chain */\n", bg->t[t].name);
  mirs__buf_puts(
      b, "      const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;\n"
         "      (void)gq; (void)tq;\n");
  chain_strip(k, "      ", ks);
  /* (An accum_online of a row value completed across the strip is the
   * same in its ks warps: part 0's is the value.) */
  if (ks > 1 && (frag || op->op == MIRS_OP_ACCUM_SUM)) {
    mirs__buf_printf(b,
                     "      float *const xw = (float *)((char *)mirs_smem + %" PRId64 ") + "
                     "(strip * %d + (part > 0 ? part - 1 : 0)) * %" PRId64 ";\n",
                     pl->chain.xoff, ks - 1, 32 * w);
    mirs__buf_puts(b, "      if (part > 0)\n");
    mirs__buf_puts(b, loop);
    mirs__buf_printf(b, "          xw[(%s) * 32 + lane] = %s;\n      __syncthreads();\n",
                     frag ? "j * 4 + h" : "h", v);
    mirs__buf_puts(b, "      if (part == 0)\n");
    mirs__buf_puts(b, loop);
    mirs__buf_printf(b,
                     "          MIRS_UNROLL for (int p = 0; p < %d; p++)\n"
                     "            %s += xw[(p * %" PRId64 " + %s) * 32 + lane];\n",
                     ks - 1, v, w, frag ? "j * 4 + h" : "h");
  }
  if (frag) {
    mirs__buf_printf(b,
                     "      if (part == 0)\n        MIRS_UNROLL for (int j = 0; j < %" PRId64
                     "; j++) {\n"
                     "        const int bi = 0, mt = strip, nt = j;\n        (void)bi;\n",
                     q.nt);
    const mirs__shape *os = &bg->t[t].shape;
    for (int d = 0; d + 2 < os->ndim; d++)
      mirs__buf_printf(b, "        const int c%d = 0;\n        (void)c%d;\n", d, d);
    snprintf(v, sizeof v, "accf%d[j]", (int)t);
    emit_frag_epilogue(k, &q, t, v);
    mirs__buf_puts(b, "      }\n    }\n");
  } else {
    mirs__buf_puts(
        b, "      if (part == 0 && tq == 0)\n        MIRS_UNROLL for (int h = 0; h < 2; h++) {\n"
           "          const int e = strip * 16 + gq + h * 8;\n");
    mirs__buf_printf(b, "          if (e >= %" PRId64 ")\n            continue;\n",
                     mirs__shape_numel(&bg->t[t].shape));
    emit_coords(b, "          ", "int", "e", &bg->t[t].shape);
    mirs__buf_printf(b, "          float v = accr%d[h];\n", (int)t);
    emit_chain_store(k, "          ", t);
    mirs__buf_puts(b, "        }\n    }\n");
  }
  if (ks > 1) /* (the exchange is reused by the next write-back) */
    mirs__buf_puts(b, "    __syncthreads();\n");
  k->pending = true;
}

/* Emit the write-back of accumulator op (its final value, through its chain). */
static void emit_writeback(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  mirs__buf_printf(b, "    /* %s: write back%s */\n", bg->t[op->out].name,
                   k->pl->t[op->out].next >= 0 ? " through its fused chain" : "");
  if (k->pl->t[op->out].frag != MIRS__FRAG_NONE) {
    emit_chain_writeback(k, op);
    return;
  }
  if (k->pl->t[op->out].acc_mma) {
    int32_t p = frag_producer(k, op);
    mma_geo q = mma_geometry(k, &bg->ops[p], k->pl->op[p].m_pad);
    char D[32];
    snprintf(D, sizeof D, "accf%d[j]", (int)op->out);
    mirs__buf_puts(b, "    {\n      const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, "
                      "tq = lane & 3;\n");
    open_warp_tiles(k, &q, &bg->t[op->out].shape);
    emit_frag_epilogue(k, &q, op->out, D);
    mirs__buf_puts(b, "      }\n    }\n");
    k->pending = true;
    return;
  }
  char ref[64];
  acc_ref(k, op->out, ref, sizeof ref);
  open_acc_loop(k, op->out);
  emit_coords(b, "      ", "int", "e", &bg->t[op->out].shape);
  mirs__buf_printf(b, "      float v = %s;\n", ref);
  if (op->op == MIRS_OP_ACCUM_RMS && op->eps != 0.0)
    mirs__buf_printf(b, "      v = sqrtf(v / %.1f + %.9ef);\n", mirs__sched_rms_count(bg, op), op->eps);
  else if (op->op == MIRS_OP_ACCUM_RMS)
    mirs__buf_printf(b, "      v = sqrtf(v / %.1f);\n", mirs__sched_rms_count(bg, op));
  emit_chain_store(k, "      ", op->out);
  mirs__buf_puts(b, "    }\n");
  k->pending = true;
}

/* Emit `base + (c0 + off0) * S0 + ...`: the kernel-tensor index of tile
 * element c0.. for INPUT/OUTPUT op placed by the schedule, at forloop
 * iteration fexpr. */
static void emit_global_index(kgen *k, const mirs__bop *op, int32_t kt, const mirs__shape *ts,
                              const char *fexpr) {
  const char *const *bidx = k->bidx;
  mirs__tile_place p;
  mirs__sched_place(k->bg, op, &p);
  int64_t st[MIRS_MAX_DIMS];
  storage_strides(k->g, k->views, kt, st);
  for (int d = 0; d < ts->ndim; d++) {
    mirs__buf_printf(k->b, "%s(c%d", d ? " + " : "", d);
    if (p.grid[d] >= 0)
      mirs__buf_printf(k->b, " + (long long)%s * %" PRId64, bidx[p.grid[d]], p.gunit[d]);
    if (p.forloop[d])
      mirs__buf_printf(k->b, " + (long long)(%s) * %" PRId64, fexpr, ts->d[d]);
    mirs__buf_printf(k->b, ") * %" PRId64 "LL", st[d]);
  }
}

/* Geometry of a 16-byte cp.async tile load. */
typedef struct vload {
  int64_t cpr;    /* 16-byte chunks per row */
  int64_t rows;   /* rows of the tile (numel / last) */
  int64_t gstep;  /* global elements from one row to the next (linear tiles) */
  int64_t fstep;  /* global elements from one forloop iteration to the next */
  int64_t rstep;  /* rows a pass of all threads covers (fast path) */
  int vecel;      /* elements per chunk */
  bool fast;      /* per-thread row/chunk fixed: rows linear and NT % cpr == 0 */
} vload;

static vload vload_geometry(const kgen *k, const mirs__bop *op) {
  const mirs__shape *ts = &k->bg->t[op->out].shape;
  const mirs__plan_tensor *pt = &k->pl->t[op->out];
  int r = ts->ndim;
  int64_t kst[MIRS_MAX_DIMS];
  storage_strides(k->g, k->views, op->src, kst);
  vload v;
  v.vecel = 16 / pt->elsize;
  v.cpr = ts->d[r - 1] / v.vecel;
  v.rows = mirs__shape_numel(ts) / ts->d[r - 1];
  v.fstep = op->fmap >= 0 ? ts->d[op->fmap] * kst[op->fmap] : 0;
  int nonunit = 0;
  v.gstep = 0;
  for (int d = 0; d < r - 1; d++)
    if (ts->d[d] > 1) {
      nonunit++;
      v.gstep = kst[d];
    }
  v.fast = nonunit <= 1 && k->nthreads % v.cpr == 0;
  v.rstep = v.fast ? k->nthreads / v.cpr : 0;
  return v;
}

/* Emit, before the loop, the per-thread global and shared addresses of
 * input tile op->out (16-byte fast path only). */
static void emit_load_bases(kgen *k, const mirs__bop *op, int32_t src_i) {
  const mirs__plan_tensor *pt = &k->pl->t[op->out];
  if (!pt->vec)
    return;
  vload v = vload_geometry(k, op);
  if (!v.fast)
    return;
  const char *const *bidx = k->bidx;
  const mirs__shape *ts = &k->bg->t[op->out].shape;
  int64_t kst[MIRS_MAX_DIMS];
  storage_strides(k->g, k->views, op->src, kst);
  mirs__tile_place p;
  mirs__sched_place(k->bg, op, &p);
  int t = (int)op->out;
  mirs__buf *b = k->b;
  mirs__buf_printf(b, "    /* %s: %" PRId64 " rows x %" PRId64 " chunks of 16 bytes per stage; "
                      "this thread: row tid / %" PRId64 " (+%" PRId64 " per pass), chunk tid %% %" PRId64 " */\n",
                   k->bg->t[op->out].name, v.rows, v.cpr, v.cpr, v.rstep, v.cpr);
  mirs__buf_printf(b, "    const int r%d = tid / %" PRId64 ", q%d = tid %% %" PRId64 ";\n", t, v.cpr, t,
                   v.cpr);
  mirs__buf_printf(b, "    const %s *const g%d = in%d", ctype(k->g->t[op->src].dtype), t, (int)src_i);
  for (int d = 0; d < ts->ndim; d++)
    if (p.grid[d] >= 0)
      mirs__buf_printf(b, " + (long long)%s * %" PRId64 "LL", bidx[p.grid[d]], p.gunit[d] * kst[d]);
  mirs__buf_printf(b, " + (long long)r%d * %" PRId64 "LL + q%d * %d;\n", t, v.gstep, t, v.vecel);
  /* (A wgmma operand's chunk (r, q) is core matrix q's row r: hopper.c.) */
  mirs__buf_printf(b, "    %s *const s%d = t%d_s + r%d * %d + q%d * %" PRId64 ";\n",
                   ctype(k->g->t[op->src].dtype), t, t, t, pt->core8 ? 8 : (int)pt->stride, t,
                   pt->core8 ? v.rows * 8 : (int64_t)v.vecel);
}

/* Emit the coordinates c0.. of element e of tile shape ts of kernel
 * tensor src: row-major, except for a view whose last dim is strided
 * in memory and another dim f contiguous (a permute that moved the last
 * dim), where f varies fastest so that consecutive threads read
 * consecutive addresses. */
static void emit_tile_coords(kgen *k, int32_t src, const char *ind, const mirs__shape *ts) {
  int64_t kst[MIRS_MAX_DIMS];
  storage_strides(k->g, k->views, src, kst);
  int r = ts->ndim, f = mirs__codegen_walk_dim(ts, kst); /* (the cost model's walk too) */
  if (f < 0) {
    emit_coords(k->b, ind, "int", "e", ts);
    return;
  }
  int64_t stride = ts->d[f];
  mirs__buf_printf(k->b, "%sconst int c%d = e %% %" PRId64 "; /* (contiguous in memory) */\n", ind,
                   f, ts->d[f]);
  for (int d = r - 1; d >= 0; d--) {
    if (d == f)
      continue;
    if (ts->d[d] == 1)
      mirs__buf_printf(k->b, "%sconst int c%d = 0;\n", ind, d);
    else
      mirs__buf_printf(k->b, "%sconst int c%d = (e / %" PRId64 ") %% %" PRId64 ";\n", ind, d,
                       stride, ts->d[d]);
    stride *= ts->d[d];
  }
  mirs__buf_puts(k->b, ind);
  for (int d = 0; d < r; d++)
    mirs__buf_printf(k->b, "%s(void)c%d;", d ? " " : "", d);
  mirs__buf_puts(k->b, "\n");
}

/* Emit the load of input tile op->out for forloop iteration fexpr into
 * stage buffer sexpr: 16-byte cp.async where the plan proved alignment,
 * element copies (stored dtype, no conversion) otherwise. */
static void emit_load(kgen *k, const mirs__bop *op, int32_t src_i, const char *fexpr,
                      const char *sexpr, const char *ind) {
  const mirs__plan_tensor *pt = &k->pl->t[op->out];
  const mirs__shape *ts = &k->bg->t[op->out].shape;
  int t = (int)op->out;
  mirs__buf *b = k->b;
  int64_t se = pt->stage_bytes / pt->elsize; /* elements per stage */
  if (pt->vec) {
    vload v = vload_geometry(k, op);
    if (v.fast) {
      int64_t passes = (v.rows + v.rstep - 1) / v.rstep;
      mirs__buf_printf(b, "%sMIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n", ind, passes);
      if (v.rows % v.rstep != 0)
        mirs__buf_printf(b, "%s  if (r%d + j * %" PRId64 " < %" PRId64 ")\n", ind, t, v.rstep, v.rows);
      mirs__buf_printf(b,
                       "%s    mirs_cp_async16(s%d + (%s) * %" PRId64 " + j * %" PRId64
                       ", g%d + (long long)(%s) * %" PRId64 "LL + j * %" PRId64 "LL);\n",
                       ind, t, sexpr, se, v.rstep * (pt->core8 ? 8 : pt->stride), t, fexpr, v.fstep,
                       v.rstep * v.gstep);
      return;
    }
    /* General layout: row coordinates per chunk (divisions by constants). */
    mirs__shape rs = *ts;
    rs.ndim = ts->ndim - 1;
    int64_t tst[MIRS_MAX_DIMS];
    tile_strides(k, op->out, tst);
    mirs__buf_printf(b, "%sfor (int i = tid; i < %" PRId64 "; i += %d) {\n", ind, v.rows * v.cpr,
                     k->nthreads);
    mirs__buf_printf(b, "%s  const int row = i / %" PRId64 ", q = i %% %" PRId64 ";\n%s  (void)row;\n",
                     ind, v.cpr, v.cpr, ind);
    char ind2[32];
    snprintf(ind2, sizeof ind2, "%s  ", ind);
    if (rs.ndim > 0)
      emit_coords(b, ind2, "int", "row", &rs);
    mirs__buf_printf(b, "%s  const int c%d = q * %d;\n", ind, ts->ndim - 1, v.vecel);
    mirs__buf_printf(b, "%s  mirs_cp_async16(t%d_s + (%s) * %" PRId64 " + (", ind, t, sexpr, se);
    emit_index_st(b, ts, tst, ts, ts->ndim);
    mirs__buf_printf(b, "), in%d + (", (int)src_i);
    emit_global_index(k, op, op->src, ts, fexpr);
    mirs__buf_printf(b, "));\n%s}\n", ind);
    return;
  }
  int64_t tst[MIRS_MAX_DIMS];
  tile_strides(k, op->out, tst);
  mirs__buf_printf(b, "%sfor (int e = tid; e < %" PRId64 "; e += %d) {\n", ind,
                   mirs__shape_numel(ts), k->nthreads);
  char ind2[32];
  snprintf(ind2, sizeof ind2, "%s  ", ind);
  emit_tile_coords(k, op->src, ind2, ts);
  mirs__buf_printf(b, "%s  t%d_s[(%s) * %" PRId64 " + ", ind, t, sexpr, se);
  emit_index_st(b, ts, tst, ts, ts->ndim);
  bool l2 = coherent_input(k, src_i);
  mirs__buf_printf(b, l2 ? "] = __ldcg(in%d + (" : "] = in%d[", (int)src_i);
  emit_global_index(k, op, op->src, ts, fexpr);
  mirs__buf_printf(b, "%s;\n%s}\n", l2 ? "))" : "]", ind);
}

/* Index of kernel op input tensor src among kop's inputs. */
static int32_t input_index(const mirs__kop *kop, int32_t src) {
  int32_t i = 0;
  while (i < kop->nin && kop->in[i] != src)
    i++;
  return i;
}

/* Emit the loads of the input tiles that are (walked) or are not
 * (invariant) walked by the forloop. */
static void emit_loads(kgen *k, bool walked, const char *fexpr, const char *sexpr,
                       const char *ind) {
  const mirs__bgraph *bg = k->bg;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (op->op != MIRS_OP_INPUT || k->pl->t[op->out].invariant == walked)
      continue;
    mirs__buf_printf(k->b, "%s/* %s: tile of %s%s */\n", ind, bg->t[op->out].name,
                     k->g->t[op->src].name, k->pl->t[op->out].vec ? " (cp.async 16 bytes)" : "");
    emit_load(k, op, input_index(k->kop, op->src), fexpr, sexpr, ind);
  }
}

/* Declare `const T *tN` for the walked input tiles at stage sexpr. */
static void emit_stage_ptrs(kgen *k, const char *sexpr, const char *ind) {
  for (int32_t t = 0; t < k->bg->nt; t++) {
    const mirs__plan_tensor *pt = &k->pl->t[t];
    if (!pt->input || pt->invariant)
      continue;
    mirs__buf_printf(k->b, "%sconst %s *const t%d = t%d_s + (%s) * %" PRId64 ";\n%s(void)t%d;\n",
                     ind, tile_ctype(k, t), (int)t, (int)t, sexpr,
                     pt->stage_bytes / pt->elsize, ind, (int)t);
  }
}

/* A comment with the kernel plan, at the top of the kernel. */
static void emit_plan_comment(kgen *k, int32_t ki) {
  const mirs__plan *pl = k->pl;
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  mirs__buf_printf(b, "\n/* kernel %d: custom, grid [%d, %d, %d], block [%d, %d, %d], forloop %d.\n",
                   (int)ki, bg->grid[0], bg->grid[1], bg->grid[2], bg->block[0], bg->block[1],
                   bg->block[2], bg->forloop);
  mirs__buf_printf(b, " * Plan: %" PRId64 " bytes of shared memory, %d stage%s%s, ~%d registers per thread,\n"
                      " * %.0f bytes of global traffic.\n",
                   pl->smem, (int)pl->stages, pl->stages == 1 ? "" : "s",
                   pl->pipelined ? " (cp.async pipeline)" : "", (int)pl->regs, pl->bytes);
  if (pl->skip.on)
    mirs__buf_printf(b, " * Causal tile skipping: %.1f%% of the forloop's tiles are live (loaded and\n"
                        " * computed); the rest are entirely masked.\n",
                     100.0 * pl->live);
  if (pl->chain.on)
    mirs__buf_printf(b,
                     " * Register chain: %s = matmul through %s = matmul (%s) in the registers of\n"
                     " * the warps owning each 16-row strip: no shared-memory round trip of the\n"
                     " * intermediate between the two MMAs; row maxes and sums by quad shuffles.\n",
                     bg->t[bg->ops[pl->chain.mm1].out].name, bg->t[bg->ops[pl->chain.mm2].out].name,
                     pl->chain.mma2 == MIRS__MMA_16 ? "16-bit m16n8k16, A packed from C fragments"
                                                    : "tf32 m16n8k8, A = C fragments");
  if (pl->chain.on && pl->chain.ks > 1) {
    int nx = 0; /* row maxes / sums completed across the strip's warps */
    for (int32_t t = 0; t < bg->nt; t++)
      nx += pl->t[t].frag == MIRS__FRAG_ROW &&
            mirs__graph_ops[bg->ops[bg->t[t].producer].op].kind == MIRS__KIND_REDUCE;
    mirs__buf_printf(b,
                     " * Split strips: %d warps per 16-row strip, each with 1/%d of S's columns;\n"
                     " * %d row values exchanged through shared memory per iteration (2 stores\n"
                     " * per lane each); E·V and row sums added across the warps after the loop.\n",
                     (int)pl->chain.ks, (int)pl->chain.ks, nx);
  }
  if (pl->chain.on && pl->chain.nc > 1) {
    const mirs__shape *ss = &bg->t[bg->ops[pl->chain.mm1].out].shape;
    int64_t keys = ss->d[ss->ndim - 1] / pl->chain.ks;
    mirs__buf_printf(b,
                     " * Each warp runs its %" PRId64 " keys of S in %d key chunks of %" PRId64
                     ", S through E·V\n * for each, adding their partial sums.\n",
                     keys, (int)pl->chain.nc, keys / pl->chain.nc);
  }
  char dims[96];
  for (int32_t t = 0; t < bg->nt; t++) {
    const mirs__plan_tensor *pt = &pl->t[t];
    if (pt->frag != MIRS__FRAG_NONE && !pt->input)
      mirs__buf_printf(b, " *   %s: %s (registers)\n", bg->t[t].name,
                       pt->frag == MIRS__FRAG_C ? "C fragments" : "row values");
    else if (pt->input)
      mirs__buf_printf(b, " *   %s%s: %s tile, %d rows of stride %d, %d stage%s, %s%s%s%s\n",
                       bg->t[t].name, mirs__shape_str(&bg->t[t].shape, dims, sizeof dims),
                       pt->elsize == 2 ? "16-bit" : "f32", (int)pt->rows, (int)pt->stride,
                       (int)pt->stages, pt->stages == 1 ? "" : "s",
                       pt->vec ? "16-byte cp.async" : "element loads",
                       pt->invariant ? ", loop-invariant (loaded once)" : "",
                       pt->zero ? ", K padding zeroed once" : "",
                       pt->core8 ? ", wgmma 8x8 core matrices" : "");
    else if (pt->acc_mma)
      mirs__buf_printf(b, " *   %s: accumulator in MMA C fragments (registers)\n", bg->t[t].name);
    else if (pl->op[bg->t[t].producer].mma != MIRS__MMA_NONE) {
      int v = pl->op[bg->t[t].producer].mma;
      mirs__buf_printf(b, " *   %s = matmul: %s%s\n", bg->t[t].name,
                       v == MIRS__MMA_16   ? "ldmatrix + mma.sync m16n8k16"
                       : v == MIRS__MMA_WG ? "wgmma m64nNk16 (sm_90a)"
                                           : "mma.sync m16n8k8 tf32",
                       pl->op[bg->t[t].producer].swap
                           ? ", operands swapped (16 of N per tile, M padded to 8)"
                           : "");
    }
  }
  mirs__buf_puts(b, " */\n");
}

/* Whether to promise ptxas one block an SM (__launch_bounds__(n, 1)): for
 * a kernel whose shared memory leaves room for one block on an H100/H200
 * SM (228 KiB, 1 KiB of it reserved per block) and whose plan estimates
 * more than LB_SQUEEZE registers.  Left alone, ptxas 13.0 sizes such a kernel for
 * 4 blocks of 128 threads (128 registers), an occupancy its shared memory
 * rules out, and spills: the gqa_hd128 best (217408 bytes, estimate 154)
 * took 128 registers and 24 bytes of spill stores on sm_90; promised one
 * block, 159 / 151 (sm_80 / sm_90) and none (bench/RESULTS.md, "Head dim
 * 128").  The one block an SM holds may have up to 255 registers a
 * thread, so the promise costs no occupancy.  Kernels estimated at or
 * under 128 are left to ptxas: they fit its default.  So is a split-K
 * pair run as one launch (emit_fused): its estimate is the larger body's,
 * and promised one block, ptxas took 176 / 181 registers for
 * tests/codegen/splitk_gqa_safe (estimate 150; 161 / 125 without, no
 * spill). */
#define LB_SMEM_SM (228 * 1024)
#define LB_SMEM_RESERVED 1024
#define LB_SQUEEZE 128
static bool one_block_an_sm(const mirs__plan *pl) {
  return pl->regs > LB_SQUEEZE && LB_SMEM_SM / (pl->smem + LB_SMEM_RESERVED) < 2;
}

/* Emit custom kernel ki's plan comment, signature, thread index and the
 * shared-memory pointers of its tiles. */
static void emit_kernel_head(kgen *k, int32_t ki, const char *ename) {
  const mirs_graph *g = k->g;
  const mirs__kop *kop = k->kop;
  const mirs__bgraph *bg = k->bg;
  const mirs__plan *pl = k->pl;
  mirs__buf *b = k->b;
  emit_plan_comment(k, ki);
  if (k->pair) /* a body of a split-K pair: the fused kernel calls it (emit_fused) */
    /* (The second body, run by one block of each group, is not inlined:
     * ptxas then allocates the two bodies' registers apart, and the
     * fused kernel needs no more than the larger body; inlined, it hoists
     * the second body's address arithmetic across the first and took up
     * to 23 more, mqa's best on sm_80.) */
    mirs__buf_printf(b,
                     "static __device__ %s void %s_k%d_body(const unsigned bx, "
                     "const unsigned by, const unsigned bz, ",
                     k->tail ? "MIRS_NOINLINE" : "__forceinline__", ename, (int)ki);
  else
    mirs__buf_printf(b, "static __global__ void __launch_bounds__(%d%s) %s_k%d(", k->nthreads,
                     one_block_an_sm(pl) ? ", 1" : "", ename, (int)ki);
  /* (No const __restrict__ on the partials the second body reads, nor
   * __restrict__ on those the first writes: other blocks of the launch
   * write what the tail reads.) */
  for (int32_t i = 0; i < kop->nin; i++)
    mirs__buf_printf(b, "%sconst %s *%sin%d", i ? ", " : "", ctype(g->t[kop->in[i]].dtype),
                     coherent_input(k, i) ? "" : "__restrict__ ", (int)i);
  for (int32_t i = 0; i < kop->nout; i++)
    mirs__buf_printf(b, ", %s *%sout%d", ctype(g->t[kop->out[i]].dtype),
                     k->pair && !k->tail ? "" : "__restrict__ ", (int)i);
  mirs__buf_puts(b, ") {\n");
  emit_pdl_prologue(b, k->pdl); /* (0 in a split-K pair's bodies: emit_fused's kernel has it) */
  mirs__buf_puts(b, "    MIRS_SHARED_FLOATS(mirs_smem);\n");
  mirs__buf_puts(b, "    const int tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * "
                    "threadIdx.z));\n");
  for (int32_t t = 0; t < bg->nt; t++) {
    const mirs__plan_tensor *pt = &pl->t[t];
    if (pt->off < 0)
      continue;
    if (pt->input)
      mirs__buf_printf(b, "    %s *const t%d_s = (%s *)((char *)mirs_smem + %" PRId64 "); /* %s */\n",
                       tile_ctype(k, t), (int)t, tile_ctype(k, t), pt->off, bg->t[t].name);
    else
      mirs__buf_printf(b, "    %s *const t%d = (%s *)((char *)mirs_smem + %" PRId64 "); /* %s */\n",
                       tile_ctype(k, t), (int)t, tile_ctype(k, t), pt->off, bg->t[t].name);
  }
}

/* Emit the ZERO steps: each accumulator's storage (C fragments, shared
 * memory or registers, as the plan says) set to 0. */
static void emit_acc_init(kgen *k, const mirs__sched *sched) {
  const mirs__bgraph *bg = k->bg;
  const mirs__plan *pl = k->pl;
  mirs__buf *b = k->b;
  /* ZERO steps: the accumulators. */
  for (int32_t i = 0; i < sched->ninit; i++) {
    const mirs__bop *op = &bg->ops[mirs__sched_init(sched)[i].op];
    int32_t t = op->out;
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    int64_t per = acc_per_thread(k, t, NULL);
    if (pl->t[t].frag != MIRS__FRAG_NONE && op->op == MIRS_OP_ACCUM_ONLINE)
      mirs__buf_printf(
          b,
          "    float run%d[2] = {-INFINITY, -INFINITY}; /* %s: running max of rows gq, gq + 8 */\n",
          (int)t, bg->t[t].name);
    if (pl->t[t].acc_mma) {
      int32_t p = frag_producer(k, op);
      mma_geo q = mma_geometry(k, &bg->ops[p], pl->op[p].m_pad);
      if (pl->t[t].frag != MIRS__FRAG_NONE) /* the chain: all of the strip's tiles */
        q.per = q.nt;
      mirs__buf_printf(b, "    float accf%d[%" PRId64 "][4]; /* %s: C fragments of this warp's tiles */\n",
                       (int)t, q.per, bg->t[t].name);
      mirs__buf_printf(b, "    MIRS_UNROLL for (int j = 0; j < %" PRId64 "; j++)\n"
                          "      accf%d[j][0] = accf%d[j][1] = accf%d[j][2] = accf%d[j][3] = 0.0f;\n",
                       q.per, (int)t, (int)t, (int)t, (int)t);
    } else if (pl->t[t].frag == MIRS__FRAG_ROW) {
      mirs__buf_printf(
          b, "    float accr%d[2] = {%s, %s}; /* %s: rows gq, gq + 8 of the warp's strip */\n",
          (int)t, red_start(op->op), red_start(op->op), bg->t[t].name);
    } else if (pl->t[t].acc_smem) {
      mirs__buf_printf(b, "    float *const a%d = (float *)((char *)mirs_smem + %" PRId64 ");\n",
                       (int)t, pl->t[t].aoff);
      mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d)\n      a%d[e] = %s;\n",
                       n, k->nthreads, (int)t, red_start(op->op));
      if (op->op == MIRS_OP_ACCUM_ONLINE) /* the running max, after the sums */
        mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d)\n"
                            "      a%d[%" PRId64 " + e] = -INFINITY;\n",
                         n, k->nthreads, (int)t, n);
    } else {
      mirs__buf_printf(b, "    float acc%d[%" PRId64 "]; /* %s */\n", (int)t, per, bg->t[t].name);
      mirs__buf_printf(b, "    MIRS_UNROLL for (int r = 0; r < %" PRId64 "; r++)\n      acc%d[r] = %s;\n",
                       per, (int)t, red_start(op->op));
      if (op->op == MIRS_OP_ACCUM_ONLINE) {
        mirs__buf_printf(b, "    float run%d[%" PRId64 "]; /* %s: running max */\n", (int)t, per,
                         bg->t[t].name);
        mirs__buf_printf(b, "    MIRS_UNROLL for (int r = 0; r < %" PRId64 "; r++)\n"
                            "      run%d[r] = -INFINITY;\n",
                         per, (int)t);
      }
    }
  }
}

/* Emit the main loop: padding zeroed, load addresses, loop-invariant
 * tiles, the prologue's S - 1 stages in flight, then per iteration: issue
 * iteration f + S - 1, wait for iteration f, compute. */
static void emit_main_loop(kgen *k, const mirs__sched *sched) {
  const mirs__kop *kop = k->kop;
  const mirs__bgraph *bg = k->bg;
  const mirs__plan *pl = k->pl;
  mirs__buf *b = k->b;
  int S = pl->stages, F = bg->forloop;
  bool any_vec = false;
  for (int32_t t = 0; t < bg->nt; t++)
    any_vec = any_vec || (pl->t[t].input && pl->t[t].vec);
  /* K-padded MMA operands: every stage buffer zeroed once, before any
   * load (a barrier orders the zeros before the copies of other threads);
   * the loads never write the padding, so it stays 0. */
  bool zeroed = false;
  for (int32_t t = 0; t < bg->nt; t++) {
    const mirs__plan_tensor *pt = &pl->t[t];
    if (!pt->input || !pt->zero)
      continue;
    mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) /* %s: zero padding */\n"
                        "      ((uint32_t *)t%d_s)[e] = 0u;\n",
                     pt->stage_bytes * pt->stages / 4, k->nthreads, bg->t[t].name, (int)t);
    zeroed = true;
  }
  if (zeroed)
    mirs__buf_puts(b, "    __syncthreads();\n");
  /* Per-thread load addresses, then the loop-invariant tiles (once). */
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_INPUT)
      emit_load_bases(k, &bg->ops[i], input_index(kop, bg->ops[i].src));
  emit_loads(k, false, "0", "0", "    ");
  for (int32_t t = 0; t < bg->nt; t++)
    if (pl->t[t].input && pl->t[t].invariant)
      mirs__buf_printf(b, "    const %s *const t%d = t%d_s;\n    (void)t%d;\n", tile_ctype(k, t),
                       (int)t, (int)t, (int)t);
  if (any_vec)
    mirs__buf_puts(b, "    mirs_cp_async_commit();\n");
  /* Tile skipping: this block's iterations end at fend, after the last
   * key tile the causal mask leaves a kept element in (plan.h). */
  char fend[32];
  snprintf(fend, sizeof fend, "%d", F);
  if (pl->skip.on) {
    const char *const *bidx = k->bidx;
    mirs__buf_printf(b, "    /* causal tile skipping: key tiles past the block's last query row\n"
                        "     * (+ n - m = %" PRId64 ") are entirely masked: never loaded or computed */\n",
                     pl->skip.diag);
    mirs__buf_printf(b, "    const long long flast = %s%s * %" PRId64 "LL + %" PRId64 "LL;\n",
                     pl->skip.row_grid >= 0 ? "(long long)" : "0",
                     pl->skip.row_grid >= 0 ? bidx[pl->skip.row_grid] : "",
                     pl->skip.rows, pl->skip.rows - 1 + pl->skip.diag);
    mirs__buf_printf(b, "    const int fend = flast < 0 ? 1 : (int)(flast / %" PRId64 "LL + 1 < %d ? "
                        "flast / %" PRId64 "LL + 1 : %d);\n",
                     pl->skip.cols, F, pl->skip.cols, F);
    snprintf(fend, sizeof fend, "fend");
  }
  /* Prologue: the first S - 1 iterations' tiles in flight. */
  for (int s = 0; s + 1 < S; s++) {
    char fs[16];
    snprintf(fs, sizeof fs, "%d", s);
    mirs__buf_printf(b, "    /* prologue: stage %d */\n", s);
    const char *ind = "    ";
    if (pl->skip.on && s > 0) { /* (iteration 0 always runs) */
      mirs__buf_printf(b, "    if (%d < fend) {\n", s);
      ind = "      ";
    }
    emit_loads(k, true, fs, fs, ind);
    if (pl->skip.on && s > 0)
      mirs__buf_puts(b, "    }\n");
    if (any_vec)
      mirs__buf_puts(b, "    mirs_cp_async_commit();\n");
  }
  /* The forloop: issue iteration f + S - 1, wait for iteration f, compute. */
  mirs__buf_printf(b, "    for (int f = 0; f < %s; f++) {\n", fend);
  if (S > 1) {
    mirs__buf_printf(b, "      const int fn = f + %d;\n      if (fn < %s) {\n", S - 1, fend);
    char se[32];
    snprintf(se, sizeof se, "fn %% %d", S);
    emit_loads(k, true, "fn", se, "        ");
    mirs__buf_puts(b, "      }\n");
  } else {
    emit_loads(k, true, "f", "0", "      ");
  }
  if (any_vec)
    mirs__buf_printf(b, "      mirs_cp_async_commit();\n      mirs_cp_async_wait<%d>();\n", S - 1);
  if (pl->wgmma) /* the copies, for wgmma's async-proxy reads */
    mirs__buf_puts(b, "      mirs_fence_proxy_async();\n");
  mirs__buf_puts(b, "      __syncthreads();\n");
  char cur[32];
  snprintf(cur, sizeof cur, "f %% %d", S);
  emit_stage_ptrs(k, cur, "      ");
  k->pending = false;
  for (int32_t i = 0; i < sched->nloop; i++) {
    const mirs__step *stp = &mirs__sched_loop(sched)[i];
    const mirs__bop *op = &bg->ops[stp->op];
    if (stp->kind == MIRS__STEP_ACCUM)
      emit_accum(k, op);
    else if (stp->kind == MIRS__STEP_COMPUTE && pl->op[stp->op].chain) {
      /* (at E·V: V may be computed after S, e.g. rms_norm(V)) */
      if (stp->op == pl->chain.mm2)
        emit_chain(k);
    } else if (stp->kind == MIRS__STEP_COMPUTE && !pl->op[stp->op].absorbed)
      emit_block_compute(k, stp->op);
  }
  mirs__buf_puts(b, "    __syncthreads();\n    }\n");
  k->pending = false;
  /* After the loop the walked tiles hold the last iteration. */
  if (pl->skip.on)
    snprintf(cur, sizeof cur, "(fend - 1) %% %d", S);
  else
    snprintf(cur, sizeof cur, "%d", (F - 1) % S);
  emit_stage_ptrs(k, cur, "    ");
}

/* Emit what follows the loop: accumulators without a chain, then chained
 * ones (their chains may read the former), then post ops and stores. */
static void emit_after_loop(kgen *k, const mirs__sched *sched) {
  const mirs_graph *g = k->g;
  const mirs__kop *kop = k->kop;
  const mirs__bgraph *bg = k->bg;
  const mirs__plan *pl = k->pl;
  mirs__buf *b = k->b;
  for (int pass = 0; pass < 2; pass++) {
    bool any = false;
    for (int32_t i = 0; i < sched->ninit; i++) {
      const mirs__bop *op = &bg->ops[mirs__sched_init(sched)[i].op];
      if ((pl->t[op->out].next >= 0) == (pass == 1)) {
        if (!any && pass == 1)
          sync_if_pending(k, "    ");
        emit_writeback(k, op);
        any = true;
      }
    }
  }
  for (int32_t i = 0; i < sched->npost; i++) {
    const mirs__step *stp = &mirs__sched_post(sched)[i];
    const mirs__bop *op = &bg->ops[stp->op];
    if (stp->kind == MIRS__STEP_COMPUTE && !pl->op[stp->op].absorbed) {
      emit_block_compute(k, stp->op);
    } else if (stp->kind == MIRS__STEP_STORE) {
      const mirs__shape *ts = &bg->t[op->in[0]].shape;
      int32_t oi = 0;
      while (oi < kop->nout && kop->out[oi] != op->dst)
        oi++;
      sync_if_pending(k, "    ");
      mirs__buf_printf(b, "    /* store %s into %s */\n", bg->t[op->in[0]].name,
                       g->t[op->dst].name);
      mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) {\n",
                       mirs__shape_numel(ts), k->nthreads);
      emit_coords(b, "      ", "int", "e", ts);
      mirs__buf_printf(b, "      mirs_st(out%d + (", (int)oi);
      emit_global_index(k, op, op->dst, ts, "0");
      mirs__buf_puts(b, "), ");
      emit_tile_ld(k, op->in[0], ts);
      mirs__buf_puts(b, ");\n    }\n");
    }
  }
}

/* Emit one custom kernel: kernel op ki of g, as its plan says. */
static mirs_status emit_custom(const mirs_graph *g, int32_t ki, const char *ename, mirs__buf *b,
                               const mirs__plan *pl, bool views, const mirs__splitk_pair *pair,
                               unsigned pdl) {
  mirs_context *ctx = g->ctx;
  const mirs__kop *kop = &g->ops[ki];
  const mirs__bgraph *bg = kop->bg;
  kgen k;
  memset(&k, 0, sizeof k);
  k.g = g;
  k.kop = kop;
  k.bg = bg;
  k.pl = pl;
  k.b = b;
  k.nthreads = pl->nthreads;
  k.fastdiv = true;
  k.masks = graph_masks(g);
  k.views = views;
  k.pair = pair;
  k.tail = pair && pair->k2 == ki;
  static const char *const builtin[MIRS__GRID] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static const char *const params[MIRS__GRID] = {"bx", "by", "bz"};
  for (int d = 0; d < MIRS__GRID; d++)
    k.bidx[d] = pair ? params[d] : builtin[d];
  k.pdl = pdl;
  for (int32_t i = 0; i < kop->nout; i++)
    k.fastdiv = k.fastdiv && g->t[kop->out[i]].dtype != MIRS_F32;
  mirs__sched sched = {0};
  MIRS_CHECK(ctx, mirs__sched_build(ctx, bg, &sched));
  emit_kernel_head(&k, ki, ename);
  emit_acc_init(&k, &sched);
  emit_main_loop(&k, &sched);
  emit_after_loop(&k, &sched);
  mirs__buf_puts(b, "}\n");
  mirs__sched_free(ctx, &sched);
  return MIRS_OK;
}

/* Dynamic shared memory of the fused kernel of a split-K pair: the
 * larger body's, at least the arrival flag's word (emit_fused). */
static int64_t fused_smem(const mirs__plan *plans, const mirs__splitk_pair *pair) {
  int64_t a = plans[pair->k1].smem, b = plans[pair->k2].smem;
  int64_t m = a > b ? a : b;
  return m < 16 ? 16 : m;
}

/* Row maxes / sums a split strip of pl's register chain exchanges
 * through shared memory per iteration (as emit_plan_comment counts). */
static int chain_row_exchanges(const mirs__plan *pl, const mirs__bgraph *bg) {
  int nx = 0;
  for (int32_t t = 0; t < bg->nt; t++)
    nx += pl->t[t].frag == MIRS__FRAG_ROW && bg->t[t].producer >= 0 &&
          mirs__graph_ops[bg->ops[bg->t[t].producer].op].kind == MIRS__KIND_REDUCE;
  return nx;
}

/* Emit split-K pair `pair` as one kernel (docs/CODEGEN.md "Split-K
 * pairs"): both bodies as device functions of the block index, then the
 * kernel, named after the first, that runs the first body in every block
 * and the second in the last block of each group to arrive. */
static mirs_status emit_fused(const mirs_graph *g, const mirs__splitk_pair *pair, const char *ename,
                              mirs__buf *b, const mirs__plan *plans, bool views, unsigned pdl) {
  const mirs__kop *o1 = &g->ops[pair->k1], *o2 = &g->ops[pair->k2];
  const mirs__bgraph *bg1 = o1->bg, *bg2 = o2->bg;
  const mirs__plan *p1 = &plans[pair->k1], *p2 = &plans[pair->k2];
  MIRS_CHECK(g->ctx, emit_custom(g, pair->k1, ename, b, p1, views, pair, 0u));
  MIRS_CHECK(g->ctx, emit_custom(g, pair->k2, ename, b, p2, views, pair, 0u));
  static const char *const axis = "xyz";
  int k1 = (int)pair->k1, k2 = (int)pair->k2;
  int32_t regs = p1->regs > p2->regs ? p1->regs : p2->regs;
  mirs__buf_printf(b,
                   "\n/* kernels %d and %d: a split-K pair run as one launch, grid [%d, %d, %d], "
                   "block [%d, %d, %d].\n",
                   k1, k2, bg1->grid[0], bg1->grid[1], bg1->grid[2], bg1->block[0], bg1->block[1],
                   bg1->block[2]);
  mirs__buf_printf(b,
                   " * Plan: %" PRId64 " bytes of shared memory (the larger body's), ~%d registers "
                   "per thread\n * (the larger body's).\n",
                   fused_smem(plans, pair), (int)regs);
  if (p1->chain.on)
    mirs__buf_printf(b, " * Register chain in kernel %d's body; %d row values exchanged per iteration.\n",
                     k1, p1->chain.ks > 1 ? chain_row_exchanges(p1, bg1) : 0);
  mirs__buf_printf(
      b,
      " * Every block runs kernel %d's body (its f32 partials stored), then its threads fence\n"
      " * their stores (__threadfence: visible device-wide before the arrival is counted), meet\n"
      " * at a barrier, and thread 0 adds 1 to its group's 32-bit arrival counter (atomicAdd;\n"
      " * the group: the %d blocks that differ only in blockIdx.%c, one counter per block of\n"
      " * kernel %d).  The block that gets %d is the last of its group; the others exit.  The\n"
      " * last fences again (the other blocks' partials, published before their adds, are then\n"
      " * visible to it), and runs kernel %d's body as its block (x, y, z with %c = 0; its\n"
      " * gridDim would have %c = 1, which no body reads).  That body reads the partials\n"
      " * through L2 only: no const __restrict__ on them, cp.async.cg or __ldcg, never the\n"
      " * read-only path (other blocks of this launch wrote them).  Shared memory is reused:\n"
      " * the flag in its first word between the bodies, each followed by a barrier.  The\n"
      " * entry point zeroes the counters (cudaMemsetAsync on the stream) before each launch.\n"
      " */\n",
      k1, (int)pair->s, axis[pair->gs], k2, (int)pair->s - 1, k2, axis[pair->gs], axis[pair->gs]);
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(%d) %s_k%d(", (int)p1->nthreads,
                   ename, k1);
  for (int32_t i = 0; i < o1->nin; i++)
    mirs__buf_printf(b, "%sconst %s *__restrict__ in%d", i ? ", " : "",
                     ctype(g->t[o1->in[i]].dtype), (int)i);
  for (int32_t i = 0; i < o1->nout; i++)
    mirs__buf_printf(b, ", %s *out%d", ctype(g->t[o1->out[i]].dtype), (int)i);
  for (int32_t i = 0; i < o2->nin; i++)
    if (g->t[o2->in[i]].producer != pair->k1)
      mirs__buf_printf(b, ", const %s *__restrict__ cin%d", ctype(g->t[o2->in[i]].dtype), (int)i);
  for (int32_t i = 0; i < o2->nout; i++)
    mirs__buf_printf(b, ", %s *__restrict__ cout%d", ctype(g->t[o2->out[i]].dtype), (int)i);
  mirs__buf_puts(b, ", unsigned *__restrict__ arrivals) {\n");
  emit_pdl_prologue(b, pdl);
  mirs__buf_puts(b, "    MIRS_SHARED_FLOATS(mirs_smem);\n");
  mirs__buf_puts(b, "    const int tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * "
                    "threadIdx.z));\n");
  mirs__buf_printf(b, "    %s_k%d_body(blockIdx.x, blockIdx.y, blockIdx.z", ename, k1);
  for (int32_t i = 0; i < o1->nin; i++)
    mirs__buf_printf(b, ", in%d", (int)i);
  for (int32_t i = 0; i < o1->nout; i++)
    mirs__buf_printf(b, ", out%d", (int)i);
  mirs__buf_puts(b, ");\n");
  /* The group: kernel 2's block index, gs's component 0. */
  char bi[MIRS__GRID][16];
  for (int d = 0; d < MIRS__GRID; d++)
    snprintf(bi[d], sizeof bi[d], d == pair->gs ? "0u" : "blockIdx.%c", axis[d]);
  mirs__buf_printf(b,
                   "    __threadfence(); /* this thread's partials, device-wide, before the arrival */\n"
                   "    __syncthreads(); /* every thread stored and fenced; shared memory is free */\n"
                   "    unsigned *const arrived = (unsigned *)mirs_smem;\n"
                   "    if (tid == 0)\n"
                   "        *arrived = atomicAdd(arrivals + (%s + %du * (%s + %du * %s)), 1u);\n"
                   "    __syncthreads();\n"
                   "    if (*arrived != %uu)\n"
                   "        return; /* not the last of its group */\n"
                   "    __syncthreads(); /* every thread has read the flag before the combine reuses it */\n"
                   "    __threadfence(); /* the group's partials, published before their adds */\n",
                   bi[0], (int)bg2->grid[0], bi[1], (int)bg2->grid[1], bi[2],
                   (unsigned)(pair->s - 1));
  mirs__buf_printf(b, "    %s_k%d_body(%s, %s, %s", ename, k2, bi[0], bi[1], bi[2]);
  for (int32_t i = 0; i < o2->nin; i++) {
    int32_t t = o2->in[i], j = 0;
    if (g->t[t].producer != pair->k1) {
      mirs__buf_printf(b, ", cin%d", (int)i);
      continue;
    }
    while (j < o1->nout && o1->out[j] != t)
      j++;
    mirs__buf_printf(b, ", out%d", (int)j);
  }
  for (int32_t i = 0; i < o2->nout; i++)
    mirs__buf_printf(b, ", cout%d", (int)i);
  mirs__buf_puts(b, ");\n}\n");
  return MIRS_OK;
}

/* ---------------------------------------------------------------- predefined ops */

/* Strides, in the input's buffer, of layout op ki's result in its own
 * coordinates: a permute's are its input's permuted; a reshape's (a
 * copy: its input is not a view of the same order) are taken in the
 * input's coordinates instead (emit_layout), so these are its input's. */
static void layout_source_strides(const mirs_graph *g, bool views, int32_t ki,
                                  int64_t st[MIRS_MAX_DIMS]) {
  const mirs__kop *op = &g->ops[ki];
  int64_t xst[MIRS_MAX_DIMS];
  storage_strides(g, views, op->in[0], xst);
  int r = g->t[op->out[0]].shape.ndim;
  for (int d = 0; d < MIRS_MAX_DIMS; d++)
    st[d] = op->op == MIRS_OP_PERMUTE && d < r ? xst[op->lay.d[d]] : xst[d];
  if (op->op == MIRS_OP_TRANSPOSE) { /* (the permute of the last two dims) */
    st[r - 2] = xst[r - 1];
    st[r - 1] = xst[r - 2];
  }
}

/* Whether kernel op ki runs as a layout copy when it is not a view: a
 * layout op, or a transpose (the permute of its last two dims). */
static bool layout_copy(const mirs_graph *g, int32_t ki) {
  return mirs__op_is_layout(g->ops[ki].op) || g->ops[ki].op == MIRS_OP_TRANSPOSE;
}

/* The dim of layout op ki's result that its copy walks in 32x32 tiles
 * with the last dim (a permute or transpose that moves the last dim,
 * when another dim is contiguous in the input: reads along it, writes
 * along the last, both coalesced), or -1. */
static int layout_tiled(const mirs_graph *g, bool views, int32_t ki) {
  const mirs__kop *op = &g->ops[ki];
  int64_t st[MIRS_MAX_DIMS];
  if (op->op != MIRS_OP_PERMUTE && op->op != MIRS_OP_TRANSPOSE)
    return -1;
  layout_source_strides(g, views, ki, st);
  return mirs__codegen_walk_dim(&g->t[op->out[0]].shape, st);
}

/* Number of 32x32 tiles of a tiled copy over result shape os along dims
 * f and the last. */
static int64_t layout_tiles(const mirs__shape *os, int f) {
  int r = os->ndim;
  return mirs__shape_numel(os) / (os->d[f] * os->d[r - 1]) * ((os->d[f] + 31) / 32) *
         ((os->d[r - 1] + 31) / 32);
}

/* Offset, in the input's buffer, of layout op ki's first element from
 * the input's own: a slice's start along its dim, else 0. */
static int64_t layout_source_offset(const mirs_graph *g, bool views, int32_t ki) {
  const mirs__kop *op = &g->ops[ki];
  int64_t xst[MIRS_MAX_DIMS];
  storage_strides(g, views, op->in[0], xst);
  return op->op == MIRS_OP_SLICE ? op->lay.d[1] * xst[op->lay.d[0]] : 0;
}

/* Elements per copy of layout op ki's kernel: 16 bytes of a permute or a
 * slice whose result's last dim is contiguous in the input's buffer when
 * whole 16-byte runs of it line up, from the buffer's start on (the
 * buffers are 16-byte aligned by the entry's contract and the
 * workspace's 256-byte offsets), else 1. */
static int64_t layout_vector(const mirs_graph *g, bool views, int32_t ki) {
  const mirs__kop *op = &g->ops[ki];
  const mirs__shape *os = &g->t[op->out[0]].shape;
  int64_t esz = g->t[op->out[0]].dtype == MIRS_F32 ? 4 : 2, v = 16 / esz, st[MIRS_MAX_DIMS];
  int r = os->ndim;
  layout_source_strides(g, views, ki, st);
  mirs__storage x;
  mirs__codegen_storage(g, views, op->in[0], &x);
  if ((op->op != MIRS_OP_PERMUTE && op->op != MIRS_OP_SLICE && op->op != MIRS_OP_TRANSPOSE) ||
      st[r - 1] != 1 ||
      os->d[r - 1] % v != 0 || (x.off + layout_source_offset(g, views, ki)) % v != 0)
    return 1;
  for (int d = 0; d < r - 1; d++)
    if (os->d[d] > 1 && st[d] % v != 0)
      return 1;
  return v;
}

/* Emit layout op ki, a permute or transpose moving the last dim, as a
 * copy in 32x32 tiles of its result's dims f and last (f contiguous in
 * the input): 256 threads read a tile along f into shared memory (a
 * padded row, 33), a barrier, then write it along the last dim, so both
 * sides coalesce; blocks stride over the tiles. */
static void emit_layout_tiled(const mirs_graph *g, bool views, int32_t ki, int f, const char *ename,
                              unsigned pdl, mirs__buf *b) {
  const mirs__kop *op = &g->ops[ki];
  const mirs__shape *os = &g->t[op->out[0]].shape;
  const char *ct = ctype(g->t[op->out[0]].dtype);
  int r = os->ndim;
  int64_t pst[MIRS_MAX_DIMS], dst[MIRS_MAX_DIMS], nf = os->d[f], nl = os->d[r - 1];
  layout_source_strides(g, views, ki, pst);
  strides(os, dst);
  int64_t tf = (nf + 31) / 32, tl = (nl + 31) / 32;
  mirs__buf_printf(b, "\n/* kernel %d: %s -> %s (32x32 tiles through shared memory: reads along "
                      "dim %d, contiguous in the input, writes along the last) */\n",
                   (int)ki, mirs__graph_ops[op->op].name, g->t[op->out[0]].name, f);
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(256) %s_k%d(const %s *__restrict__ in0, "
                      "%s *__restrict__ out0) {\n", ename, (int)ki, ct, ct);
  emit_pdl_prologue(b, pdl);
  mirs__buf_printf(b, "    __shared__ %s tile[32][33];\n"
                      "    const int tx = threadIdx.x %% 32, ty = threadIdx.x / 32;\n", ct);
  mirs__buf_printf(b, "    for (long long t = blockIdx.x; t < %" PRId64 "LL; t += gridDim.x) {\n",
                   layout_tiles(os, f));
  mirs__buf_printf(b, "      const long long tl = t %% %" PRId64 ", tf = (t / %" PRId64 ") %% %" PRId64
                      ";\n      long long si = 0, so = 0;\n",
                   tl, tl, tf);
  if (mirs__shape_numel(os) > nf * nl) /* (the other dims, from the tile's index) */
    mirs__buf_printf(b, "      long long rest = t / %" PRId64 ";\n", tl * tf);
  for (int d = r - 2; d >= 0; d--) {
    if (d == f || os->d[d] == 1)
      continue;
    mirs__buf_printf(b, "      si += (rest %% %" PRId64 ") * %" PRId64 "LL; so += (rest %% %" PRId64
                        ") * %" PRId64 "LL; rest /= %" PRId64 ";\n",
                     os->d[d], pst[d], os->d[d], dst[d], os->d[d]);
  }
  mirs__buf_printf(b, "      for (int j = ty; j < 32; j += 8) {\n"
                      "        const long long cf = tf * 32 + tx, cl = tl * 32 + j;\n"
                      "        if (cf < %" PRId64 " && cl < %" PRId64 ")\n"
                      "          tile[j][tx] = in0[si + cf + cl * %" PRId64 "LL];\n      }\n"
                      "      __syncthreads();\n",
                   nf, nl, pst[r - 1]);
  mirs__buf_printf(b, "      for (int j = ty; j < 32; j += 8) {\n"
                      "        const long long cl = tl * 32 + tx, cf = tf * 32 + j;\n"
                      "        if (cf < %" PRId64 " && cl < %" PRId64 ")\n"
                      "          out0[so + cf * %" PRId64 "LL + cl] = tile[tx][j];\n      }\n"
                      "      __syncthreads();\n    }\n}\n",
                   nf, nl, dst[f]);
}

/* Emit layout op ki (reshape, permute, slice) that is not a view as a
 * grid-stride copy kernel writing its (dense) result in order: a reshape
 * reads its input in row-major order through the input's view (a plain
 * copy when that is dense); a permute reads its input at the permuted
 * strides, a slice at the input's strides from its start, 16 bytes at a
 * time where layout_vector allows.  Values are moved as they are stored
 * (no conversion). */
static void emit_layout(const mirs_graph *g, bool views, int32_t ki, const char *ename,
                        unsigned pdl, mirs__buf *b) {
  const mirs__kop *op = &g->ops[ki];
  const mirs__shape *xs = &g->t[op->in[0]].shape, *os = &g->t[op->out[0]].shape;
  const char *ct = ctype(g->t[op->out[0]].dtype);
  int64_t v = layout_vector(g, views, ki), dst[MIRS_MAX_DIMS], pst[MIRS_MAX_DIMS];
  int r = os->ndim;
  mirs__shape vs = *os; /* the result in units of v elements along its last dim */
  vs.d[r - 1] /= v;
  layout_source_strides(g, views, ki, pst);
  pst[r - 1] *= v;
  strides(xs, dst);
  bool plain = op->op == MIRS_OP_RESHAPE && memcmp(pst, dst, sizeof(int64_t) * (size_t)xs->ndim) == 0;
  int f = layout_tiled(g, views, ki);
  if (f >= 0) {
    emit_layout_tiled(g, views, ki, f, ename, pdl, b);
    return;
  }
  mirs__buf_printf(b, "\n/* kernel %d: %s -> %s (%s) */\n", (int)ki, mirs__graph_ops[op->op].name,
                   g->t[op->out[0]].name,
                   plain ? "a copy in order: the reshape of an output"
                   : op->op == MIRS_OP_RESHAPE ? "a copy in order of a strided view"
                   : op->op == MIRS_OP_SLICE ? (v > 1 ? "16-byte copies of the slice's rows"
                                                      : "element copies of the slice, in order")
                   : v > 1 ? "16-byte copies along the kept last dim"
                           : "element copies, stores in order");
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(256) %s_k%d(const %s *__restrict__ in0, "
                      "%s *__restrict__ out0) {\n", ename, (int)ki, ct, ct);
  emit_pdl_prologue(b, pdl);
  mirs__buf_printf(b, "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < %" PRId64
                      "LL; e += (long long)gridDim.x * 256) {\n", mirs__shape_numel(&vs));
  if (plain) {
    mirs__buf_puts(b, "      out0[e] = in0[e];\n    }\n}\n");
    return;
  }
  if (op->op == MIRS_OP_RESHAPE)
    vs = *xs; /* (the same order: coordinates of the input) */
  emit_coords(b, "      ", "long long", "e", &vs);
  mirs__buf_puts(b, "      const long long s = ");
  int64_t base = layout_source_offset(g, views, ki);
  if (base)
    mirs__buf_printf(b, "%" PRId64 "LL + ", base);
  emit_index_st(b, &vs, pst, &vs, vs.ndim);
  if (v > 1)
    mirs__buf_printf(b, ";\n      mirs_copy16(out0 + e * %" PRId64 ", in0 + s);\n    }\n}\n", v);
  else
    mirs__buf_puts(b, ";\n      out0[e] = in0[s];\n    }\n}\n");
}

/* Emit predefined kernel op ki as a grid-stride kernel. */
static void emit_predefined(const mirs_graph *g, bool views, int32_t ki, const char *ename,
                            unsigned pdl, mirs__buf *b) {
  const mirs__kop *op = &g->ops[ki];
  if (layout_copy(g, ki)) { /* (a transpose too: the permute of its last two dims) */
    if (!mirs__codegen_op_is_view(g, views, ki))
      emit_layout(g, views, ki, ename, pdl, b);
    return;
  }
  const mirs__shape *os = &g->t[op->out[0]].shape;
  char names[2][16];
  const char *in[2] = {NULL, NULL};
  const mirs__shape *ins[2] = {NULL, NULL};
  int64_t st[2][MIRS_MAX_DIMS];
  const int64_t *ist[2] = {st[0], st[1]};
  mirs__buf_printf(b, "\n/* kernel %d: %s -> %s */\n", (int)ki, mirs__graph_ops[op->op].name,
                   g->t[op->out[0]].name);
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(256) %s_k%d(", ename, (int)ki);
  for (int a = 0; a < op->nin && a < 2; a++) {
    snprintf(names[a], sizeof names[a], "in%d", a);
    in[a] = names[a];
    ins[a] = &g->t[op->in[a]].shape;
    storage_strides(g, views, op->in[a], st[a]); /* (a view's: the buffer is its root's) */
    mirs__buf_printf(b, "const %s *__restrict__ in%d, ", ctype(g->t[op->in[a]].dtype), a);
  }
  mirs__buf_printf(b, "%s *__restrict__ out0) {\n", ctype(g->t[op->out[0]].dtype));
  emit_pdl_prologue(b, pdl);
  mirs__buf_printf(b, "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < %" PRId64
                      "LL; e += (long long)gridDim.x * 256) {\n",
                   mirs__shape_numel(os));
  emit_coords(b, "      ", "long long", "e", os);
  mirs__buf_puts(b, "      float v;\n");
  emit_value(b, "      ", "long long", op->op, op->dim, op->eps, op->cst, in, ins, ist, os, NULL,
             graph_masks(g));
  int64_t ost[MIRS_MAX_DIMS], dst[MIRS_MAX_DIMS];
  storage_strides(g, views, op->out[0], ost);
  strides(os, dst);
  if (memcmp(ost, dst, sizeof(int64_t) * (size_t)os->ndim) == 0) {
    mirs__buf_puts(b, "      mirs_st(out0 + e, v);\n    }\n}\n");
    return;
  }
  mirs__buf_puts(b, "      mirs_st(out0 + ("); /* (stored in place of a permuted view: views.c) */
  emit_index_st(b, os, ost, os, os->ndim);
  mirs__buf_puts(b, "), v);\n    }\n}\n");
}

/* ---------------------------------------------------------------- prelude, entry */

static const char prelude[] =
    "#ifdef MIRS_HOST_EMULATION\n"
    "#include \"mirsearch_emu.h\"\n"
    "#else\n"
    "#include <cuda_runtime.h>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <stdint.h>\n"
    "#define MIRS_LAUNCH(k, grid, block, smem, stream, args) k<<<grid, block, smem, stream>>> args\n"
    "#define MIRS_SHARED_FLOATS(name) extern __shared__ __align__(16) float name[]\n"
    "#define MIRS_UNROLL _Pragma(\"unroll\")\n"
    "#define MIRS_NO_UNROLL _Pragma(\"unroll 1\")\n"
    "#define MIRS_NOINLINE __noinline__\n"
    "#define MIRS_UNROLL2 _Pragma(\"unroll 2\")\n"
    "#endif\n"
    "\n"
    "#ifndef MIRS_PRELUDE_DEFINED\n"
    "#define MIRS_PRELUDE_DEFINED\n"
    "#ifndef MIRS_HOST_EMULATION /* the emulator checks its own */\n"
    "/* Loads widen to float, stores round to nearest (even). */\n"
    "__device__ __forceinline__ float mirs_ld(const float *p) { return *p; }\n"
    "__device__ __forceinline__ float mirs_ld(const __half *p) { return __half2float(*p); }\n"
    "__device__ __forceinline__ float mirs_ld(const __nv_bfloat16 *p) {\n"
    "    return __bfloat162float(*p);\n}\n"
    "__device__ __forceinline__ void mirs_st(float *p, float v) { *p = v; }\n"
    "__device__ __forceinline__ void mirs_st(__half *p, float v) { *p = __float2half_rn(v); }\n"
    "__device__ __forceinline__ void mirs_st(__nv_bfloat16 *p, float v) {\n"
    "    *p = __float2bfloat16_rn(v);\n}\n"
    "#endif\n"
    "__device__ __forceinline__ float mirs_silu(float x) { return x / (1.0f + expf(-x)); }\n"
    "__device__ __forceinline__ float mirs_gelu(float x) {\n"
    "    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));\n}\n"
    "__device__ __forceinline__ float mirs_relu(float x) { return x > 0.0f ? x : 0.0f; }\n"
    "__device__ __forceinline__ float mirs_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
    "/* causal_mask at global (i, j) of an m x n matrix, d = n - m: -inf above the\n"
    " * bottom-right aligned diagonal. */\n"
    "__device__ __forceinline__ float mirs_causal(float x, long long i, long long j,\n"
    "                                             long long d) {\n"
    "    return j <= i + d ? x : -INFINITY;\n}\n"
    "/* a - b, with -inf - -inf = -inf (a masked entry shifted by a masked row's max). */\n"
    "__device__ __forceinline__ float mirs_sub(float a, float b) {\n"
    "    return a == -INFINITY ? a : a - b;\n}\n"
    "#ifndef MIRS_HOST_EMULATION\n";

/* The tensor-core helpers and the copy kernel (a second literal: C
 * compilers need support only 4095 characters in one). */
static const char prelude_mma[] =
    "/* Two floats rounded into a packed pair, the first in the low half. */\n"
    "__device__ __forceinline__ uint32_t mirs_pack_f16(float lo, float hi) {\n"
    "    __half2 h = __floats2half2_rn(lo, hi);\n"
    "    return *reinterpret_cast<uint32_t *>(&h);\n}\n"
    "__device__ __forceinline__ uint32_t mirs_pack_bf16(float lo, float hi) {\n"
    "    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);\n"
    "    return *reinterpret_cast<uint32_t *>(&h);\n}\n"
    "/* A float rounded to tf32 (nearest, ties away), in a 32-bit register. */\n"
    "__device__ __forceinline__ uint32_t mirs_pack_tf32(float x) {\n"
    "    uint32_t r;\n"
    "    asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));\n"
    "    return r;\n}\n"
    "/* d += a . b on one 16x8x8 tf32 tile per warp (PTX fragment layouts). */\n"
    "__device__ __forceinline__ void mirs_mma_tf32(float d[4], const uint32_t a[4],\n"
    "                                                     const uint32_t b[2]) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 \"\n"
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "/* d += a . b on one 16x8x16 tile per warp (PTX fragment layouts). */\n"
    "__device__ __forceinline__ void mirs_mma_f16(float d[4], const uint32_t a[4],\n"
    "                                                    const uint32_t b[2]) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "__device__ __forceinline__ void mirs_mma_bf16(float d[4], const uint32_t a[4],\n"
    "                                                     const uint32_t b[2]) {\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "                 \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "#endif\n"
    "#endif\n";

/* The copy and shared-memory helpers (a third literal, for the same reason). */
static const char prelude_copy[] =
    "#ifndef MIRS_PRELUDE_COPY_DEFINED\n"
    "#define MIRS_PRELUDE_COPY_DEFINED\n"
    "#ifndef MIRS_HOST_EMULATION\n"
    "/* 16 bytes global -> shared, asynchronously (sm_80+, bypassing L1). */\n"
    "__device__ __forceinline__ void mirs_cp_async16(void *s, const void *g) {\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(s);\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(a), \"l\"(g) : "
    "\"memory\");\n}\n"
    "__device__ __forceinline__ void mirs_cp_async_commit(void) {\n"
    "    asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n}\n"
    "/* Wait until at most N of this thread's committed groups are pending. */\n"
    "template <int N> __device__ __forceinline__ void mirs_cp_async_wait(void) {\n"
    "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n}\n"
    "/* Four 8x8 16-bit matrices from shared memory (lane l gives row l % 8 of matrix l / 8). */\n"
    "__device__ __forceinline__ void mirs_ldmatrix_x4(uint32_t r[4], const void *p) {\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : "
    "\"memory\");\n}\n"
    "/* Two of them (lanes 0-15 give the rows: the B operand of a swapped MMA). */\n"
    "__device__ __forceinline__ void mirs_ldmatrix_x2(uint32_t r[2], const void *p) {\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a) : \"memory\");\n}\n"
    "/* Two (four) 8x8 16-bit matrices, transposed (B operands from a row-major [k][n] tile). */\n"
    "__device__ __forceinline__ void mirs_ldmatrix_x2_trans(uint32_t r[2], const void *p) {\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a) : \"memory\");\n}\n"
    "__device__ __forceinline__ void mirs_ldmatrix_x4_trans(uint32_t r[4], const void *p) {\n"
    "    const unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, "
    "[%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : "
    "\"memory\");\n}\n"
    "#endif\n"
    "template <typename T>\n"
    "__global__ void __launch_bounds__(256) mirs_copy(const T *__restrict__ s, T *__restrict__ "
    "d, long long n) {\n"
    "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < n; e += (long long)gridDim.x * "
    "256)\n"
    "        d[e] = s[e];\n"
    "}\n"
    "#endif\n";

/* Programmatic dependent launch, device side (emitted when an entry point
 * launches two kernels or more under codegen_pdl; a fourth literal). */
static const char prelude_pdl[] =
    "#ifndef MIRS_PRELUDE_PDL_DEFINED\n"
    "#define MIRS_PRELUDE_PDL_DEFINED\n"
    "#ifndef MIRS_HOST_EMULATION /* the emulator has its own */\n"
    "/* Programmatic dependent launch (sm_90 and later; nothing on earlier\n"
    " * archs, where the kernels are launched one after another).  Each kernel\n"
    " * of an entry point after the first is launched with the programmatic\n"
    " * stream serialization attribute, so it may start while the one before it\n"
    " * runs; its first statement is mirs_pdl_wait, which returns once every\n"
    " * grid it depends on has completed and its memory operations are visible.\n"
    " * Each of those waited for its own predecessor before completing, so all\n"
    " * the entry's earlier kernels have completed too. */\n"
    "__device__ __forceinline__ void mirs_pdl_wait(void) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "    asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");\n"
    "#endif\n}\n"
    "/* Lets the next kernel be scheduled once every block of this grid has\n"
    " * called this or exited.  Called at the start of a block (after its wait):\n"
    " * the next kernel's blocks then come only when the last block of this grid\n"
    " * is resident, so they take no SM slot from this grid however many waves\n"
    " * it has (none of its blocks is left to schedule).  They are placed on what\n"
    " * the tail wave leaves free and wait in mirs_pdl_wait, so the next launch\n"
    " * and its blocks' ramp overlap this kernel's run instead of following its\n"
    " * drain. */\n"
    "__device__ __forceinline__ void mirs_pdl_trigger(void) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "    asm volatile(\"griddepcontrol.launch_dependents;\\n\");\n"
    "#endif\n}\n"
    "#endif\n"
    "/* mirs_copy for a launch after the first: waits, and lets the launch\n"
    " * after it be scheduled when there is one (trigger). */\n"
    "template <typename T>\n"
    "__global__ void __launch_bounds__(256) mirs_copy_pdl(const T *__restrict__ s, T *__restrict__ "
    "d, long long n, bool trigger) {\n"
    "    mirs_pdl_wait();\n"
    "    if (trigger)\n"
    "        mirs_pdl_trigger();\n"
    "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < n; e += (long long)gridDim.x * "
    "256)\n"
    "        d[e] = s[e];\n"
    "}\n"
    "#endif\n";

/* The 16-byte global copy of a permute's or slice's vector path (emitted when a
 * graph has one). */
static const char prelude_layout[] =
    "#ifndef MIRS_PRELUDE_LAYOUT_DEFINED\n"
    "#define MIRS_PRELUDE_LAYOUT_DEFINED\n"
    "/* 16 bytes global -> global, both 16-byte aligned. */\n"
    "#ifdef MIRS_HOST_EMULATION\n"
    "static inline void mirs_copy16(void *d, const void *s) {\n"
    "    MIRS_EMU_CHECK_ALIGN(d, 16);\n"
    "    MIRS_EMU_CHECK_ALIGN(s, 16);\n"
    "    memcpy(d, s, 16);\n}\n"
    "#else\n"
    "__device__ __forceinline__ void mirs_copy16(void *d, const void *s) {\n"
    "    *(uint4 *)d = *(const uint4 *)s;\n}\n"
    "#endif\n"
    "#endif\n";

/* Grid size of a grid-stride kernel over n elements. */
int64_t mirs__codegen_stride_blocks(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks;
}

/* Workspace layout: byte offset of each intermediate kernel tensor (-1
 * for inputs and first-listed outputs), then, for each split-K pair run as
 * one launch (roles[i] == MIRS__SPLITK_HEAD), its arrival counters (one
 * unsigned per group) at coff[i] (-1 for other ops); returns the total. */
static int64_t plan_workspace(const mirs_graph *g, bool views, const int8_t *roles,
                              const mirs__splitk_pair *pairs, int64_t *woff, int32_t *first_out,
                              int64_t *coff) {
  int64_t total = 0;
  for (int32_t t = 0; t < g->nt; t++) {
    woff[t] = -1;
    first_out[t] = -1;
  }
  for (int32_t i = 0; i < g->nout; i++)
    if (first_out[g->outputs[i]] < 0)
      first_out[g->outputs[i]] = i;
  for (int32_t t = 0; t < g->nt; t++) {
    mirs__storage st;
    mirs__codegen_storage(g, views, t, &st);
    if (g->t[t].producer < 0 || first_out[t] >= 0 || st.buf != t)
      continue; /* (a view uses its root's buffer: tensor_ptr) */
    woff[t] = total;
    int64_t bytes = mirs__shape_numel(&g->t[t].shape) * (g->t[t].dtype == MIRS_F32 ? 4 : 2);
    total += (bytes + 255) & ~(int64_t)255;
  }
  for (int32_t i = 0; i < g->nops; i++) {
    coff[i] = -1;
    if (roles[i] != MIRS__SPLITK_HEAD)
      continue;
    coff[i] = total;
    total += (pairs[i].groups * 4 + 255) & ~(int64_t)255;
  }
  return total;
}

/* Pointer expression of kernel tensor t inside the entry point. */
static void tensor_ptr(const mirs_graph *g, bool views, int32_t t, const int64_t *woff,
                       const int32_t *first_out, char *buf, size_t size) {
  mirs__storage st;
  mirs__codegen_storage(g, views, t, &st);
  t = st.buf; /* (a view's buffer is its root's, same dtype) */
  char at[300];
  if (g->t[t].producer < 0)
    snprintf(at, sizeof at, "in_%s", g->t[t].name);
  else if (first_out[t] >= 0)
    snprintf(at, sizeof at, "out%d", (int)first_out[t]);
  else
    snprintf(at, sizeof at, "(%s *)((char *)workspace + %" PRId64 ")", ctype(g->t[t].dtype),
             woff[t]);
  if (st.off != 0) /* (a view that starts inside its buffer) */
    snprintf(buf, size, "(%s + %" PRId64 ")", at, st.off);
  else
    snprintf(buf, size, "%s", at);
}

/* ---------------------------------------------------------------- host interface */

/* Bytes of kernel tensor t. */
static int64_t tensor_bytes(const mirs_graph *g, int32_t t) {
  return mirs__shape_numel(&g->t[t].shape) * (g->t[t].dtype == MIRS_F32 ? 4 : 2);
}

/* The status codes every generated interface shares (one definition
 * however many generated headers a file includes). */
static const char status_enum[] =
    "#ifndef MIRS_GEN_STATUS_DEFINED\n"
    "#define MIRS_GEN_STATUS_DEFINED\n"
    "/* What a generated entry point returns: 0 when every launch was issued,\n"
    " * > 0 the cudaError_t of the first CUDA call of this call that failed (a\n"
    " * kernel attribute or a launch; later launches are not issued), < 0 a\n"
    " * broken contract found before anything was launched: */\n"
    "enum mirs_gen_status {\n"
    "  MIRS_GEN_OK = 0,\n"
    "  MIRS_GEN_NULL_POINTER = -1,  /* a tensor pointer is NULL */\n"
    "  MIRS_GEN_MISALIGNED = -2,    /* a tensor or workspace pointer is not 16-byte aligned */\n"
    "  MIRS_GEN_ALIASING = -3,      /* an output overlaps another output, an input or the workspace */\n"
    "  MIRS_GEN_WORKSPACE = -4,     /* workspace_bytes < _workspace_bytes(), or a NULL workspace\n"
    "                                  while that is nonzero */\n"
    "  MIRS_GEN_PENDING_ERROR = -5  /* a CUDA error of earlier work was pending on this thread\n"
    "                                  (cudaPeekAtLastError): nothing launched, the error left\n"
    "                                  pending for its owner */\n"
    "};\n"
    "#endif\n";

/* Emit the C interface of entry point ename (the generated header's
 * body, also in the .cu before the entry point, under the same guard):
 * no CUDA type in it, so a C compiler reads it without the toolkit. */
static void emit_interface(const mirs_graph *g, const char *ename, mirs__buf *b) {
  char dims[128];
  mirs__buf_printf(b, "\n#ifndef MIRS_GEN_%s_H\n#define MIRS_GEN_%s_H\n", ename, ename);
  mirs__buf_puts(b, "#include <stddef.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  mirs__buf_puts(b, status_enum);
  mirs__buf_printf(b,
                   "\n/* Bytes of device workspace %s needs for intermediate tensors\n"
                   " * (0: none, and the workspace may be NULL). */\n"
                   "size_t %s_workspace_bytes(void);\n",
                   ename, ename);
  mirs__buf_printf(b,
                   "\n/* %s: compute %s on `stream` (a cudaStream_t; NULL: the default\n"
                   " * stream), asynchronously: the buffers stay alive and untouched until\n"
                   " * the stream has run the work.  Tensors are device memory, dense,\n"
                   " * row-major, in the graph's input order then output order:\n",
                   ename, g->name ? g->name : "the program");
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, " *   in_%s: %s%s (input, read only)\n", g->t[t].name,
                       mirs_dtype_name(g->t[t].dtype),
                       mirs__shape_str(&g->t[t].shape, dims, sizeof dims));
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    mirs__buf_printf(b, " *   out%d: %s%s (output %s, written)\n", (int)i,
                     mirs_dtype_name(g->t[t].dtype),
                     mirs__shape_str(&g->t[t].shape, dims, sizeof dims), g->t[t].name);
  }
  mirs__buf_printf(b,
                   " * Contract, checked before anything is launched (status < 0 if broken):\n"
                   " *  - every pointer, the workspace's too, is 16-byte aligned (cudaMalloc's\n"
                   " *    256-byte alignment is enough), and no tensor pointer is NULL;\n"
                   " *  - no output overlaps another output, an input or the workspace\n"
                   " *    (inputs may overlap each other: they are only read);\n"
                   " *  - workspace holds workspace_bytes >= %s_workspace_bytes() bytes\n"
                   " *    (NULL with 0 when that is 0) and is not used by another call\n"
                   " *    running at the same time.\n"
                   " * f16 and bf16 elements are IEEE binary16 and bfloat16 bit patterns.\n"
                   " * Any host thread may call it, on any device: kernel attributes are set\n"
                   " * once per device, on the first call there.  Returns a mirs_gen_status\n"
                   " * or a cudaError_t (> 0); %s_status_string() names either. */\n",
                   ename, ename);
  mirs__buf_printf(b, "int %s(", ename);
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, "const void *in_%s, ", g->t[t].name);
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, "void *out%d, ", (int)i);
  mirs__buf_puts(b, "void *workspace,\n    size_t workspace_bytes, void *stream);\n");
  mirs__buf_printf(b,
                   "/* A message for a status %s returned. */\n"
                   "const char *%s_status_string(int status);\n",
                   ename, ename);
  mirs__buf_puts(b, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

/* Emit the C header of g's generated code (see codegen.h). */
mirs_status mirs__codegen_header(const mirs_graph *g, const char *entry, mirs__buf *b) {
  MIRS_CHECK(g->ctx, mirs__graph_validate(g));
  char ename[300];
  if (entry)
    snprintf(ename, sizeof ename, "%s", entry);
  else
    mirs__codegen_entry_name(g, ename, sizeof ename);
  mirs__buf_printf(b,
                   "/* C interface of the CUDA code mirsearch %s generated for the uGraph %s\n"
                   " * (entry point %s).  Plain C (C89 and later, or C++): no CUDA header is\n"
                   " * needed to call it.  Link the object nvcc compiles from the generated .cu\n"
                   " * and the CUDA runtime (-lcudart). */",
                   mirs_version_string(), g->name ? g->name : "program", ename);
  emit_interface(g, ename, b);
  return b->failed ? mirs__core_trace(g->ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__) : MIRS_OK;
}

/* Emit the status-string function of ename. */
static void emit_status_string(const char *ename, mirs__buf *b) {
  mirs__buf_printf(b, "\nextern \"C\" const char *%s_status_string(int status) {\n", ename);
  mirs__buf_puts(b,
                 "    switch (status) {\n"
                 "    case MIRS_GEN_OK:\n        return \"success\";\n"
                 "    case MIRS_GEN_NULL_POINTER:\n        return \"a tensor pointer is NULL\";\n"
                 "    case MIRS_GEN_MISALIGNED:\n"
                 "        return \"a tensor or workspace pointer is not 16-byte aligned\";\n"
                 "    case MIRS_GEN_ALIASING:\n"
                 "        return \"an output overlaps another output, an input or the workspace\";\n"
                 "    case MIRS_GEN_WORKSPACE:\n"
                 "        return \"the workspace is NULL or smaller than _workspace_bytes()\";\n"
                 "    case MIRS_GEN_PENDING_ERROR:\n"
                 "        return \"a CUDA error of earlier work is pending (nothing launched)\";\n"
                 "    default:\n"
                 "        return status > 0 ? cudaGetErrorString((cudaError_t)status)\n"
                 "                          : \"unknown status\";\n"
                 "    }\n}\n");
}

/* Emit the entry point's contract checks: NULL, alignment, aliasing,
 * workspace, pending errors (the order of the status codes). */
static void emit_contract_checks(const mirs_graph *g, int64_t wbytes, mirs__buf *b) {
  mirs__buf_puts(b, "    /* The contract (see the interface above). */\n    if (");
  bool first = true;
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0) {
      mirs__buf_printf(b, "%s!in_%s_", first ? "" : " || ", g->t[t].name);
      first = false;
    }
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, " || !out%d_", (int)i);
  mirs__buf_puts(b, ")\n        return MIRS_GEN_NULL_POINTER;\n    if (((");
  first = true;
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0) {
      mirs__buf_printf(b, "%s(uintptr_t)in_%s_", first ? "" : " | ", g->t[t].name);
      first = false;
    }
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, " | (uintptr_t)out%d_", (int)i);
  mirs__buf_puts(b, " | (uintptr_t)workspace) & 15) != 0)\n        return MIRS_GEN_MISALIGNED;\n");
  /* Outputs against later outputs, every input and the workspace. */
  for (int32_t i = 0; i < g->nout; i++) {
    int64_t ob = tensor_bytes(g, g->outputs[i]);
    for (int32_t j = i + 1; j < g->nout; j++)
      mirs__buf_printf(b,
                       "    if (mirs_gen_overlap(out%d_, %" PRId64 ", out%d_, %" PRId64 "))\n"
                       "        return MIRS_GEN_ALIASING;\n",
                       (int)i, ob, (int)j, tensor_bytes(g, g->outputs[j]));
    for (int32_t t = 0; t < g->nt; t++)
      if (g->t[t].producer < 0)
        mirs__buf_printf(b,
                         "    if (mirs_gen_overlap(out%d_, %" PRId64 ", in_%s_, %" PRId64 "))\n"
                         "        return MIRS_GEN_ALIASING;\n",
                         (int)i, ob, g->t[t].name, tensor_bytes(g, t));
    if (wbytes > 0)
      mirs__buf_printf(b,
                       "    if (mirs_gen_overlap(out%d_, %" PRId64 ", workspace, %" PRId64 "))\n"
                       "        return MIRS_GEN_ALIASING;\n",
                       (int)i, ob, wbytes);
  }
  if (wbytes > 0)
    mirs__buf_printf(b,
                     "    if (!workspace || workspace_bytes < %" PRId64 ")\n"
                     "        return MIRS_GEN_WORKSPACE;\n",
                     wbytes);
  else
    mirs__buf_puts(b, "    (void)workspace_bytes;\n");
  mirs__buf_puts(b, "    if (cudaPeekAtLastError() != cudaSuccess)\n"
                    "        return MIRS_GEN_PENDING_ERROR;\n");
}

/* Helpers of every entry point (once per translation unit). */
static const char entry_helpers[] =
    "\n#ifndef MIRS_GEN_HELPERS_DEFINED\n"
    "#define MIRS_GEN_HELPERS_DEFINED\n"
    "#include <atomic>\n"
    "#include <stdint.h>\n"
    "/* Whether byte ranges [a, a+na) and [b, b+nb) overlap. */\n"
    "static inline bool mirs_gen_overlap(const void *a, size_t na, const void *b, size_t nb) {\n"
    "    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;\n"
    "    return x < y + nb && y < x + na;\n"
    "}\n"
    "/* Devices whose kernel attributes are set are flagged here per entry\n"
    " * point; beyond this many device ordinals they are set on every call. */\n"
    "enum { MIRS_GEN_MAX_DEVICES = 64 };\n"
    "#endif\n";

/* Programmatic dependent launch, host side (emitted with prelude_pdl). */
static const char pdl_helpers[] =
    "\n#ifndef MIRS_GEN_PDL_DEFINED\n"
    "#define MIRS_GEN_PDL_DEFINED\n"
    "/* A kernel of this translation unit, never launched: its attributes say\n"
    " * which PTX its code was compiled from on the current device. */\n"
    "static __global__ void mirs_gen_pdl_probe(void) {}\n"
    "/* Whether the current device takes programmatic dependent launches of\n"
    " * this translation unit's kernels: compute capability 9.0 and later, and\n"
    " * their code compiled from PTX 9.0 or later (ptxVersion >= 90).  The\n"
    " * wait and trigger are compiled only for sm_90 and later (mirs_pdl_wait):\n"
    " * code the driver JIT-compiled from older PTX (an -arch=sm_80 build run\n"
    " * on an H100) has no wait, so its kernels must not be launched as\n"
    " * dependents.  Asked once per device ordinal below MIRS_GEN_MAX_DEVICES,\n"
    " * on every call beyond. */\n"
    "static inline cudaError_t mirs_gen_pdl(bool *on) {\n"
    "    /* 0: not asked yet, 1: no, 2: yes (the byte is the whole answer:\n"
    "     * relaxed order is enough; racing first calls both ask) */\n"
    "    static std::atomic<unsigned char> known[MIRS_GEN_MAX_DEVICES];\n"
    "    int dev = 0;\n"
    "    cudaError_t err = cudaGetDevice(&dev);\n"
    "    if (err != cudaSuccess)\n"
    "        return err;\n"
    "    const bool flagged = dev >= 0 && dev < MIRS_GEN_MAX_DEVICES;\n"
    "    unsigned char k = flagged ? known[dev].load(std::memory_order_relaxed) : 0;\n"
    "    if (k == 0) {\n"
    "        int major = 0;\n"
    "        err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);\n"
    "        if (err != cudaSuccess)\n"
    "            return err;\n"
    "        k = 1;\n"
    "        if (major >= 9) {\n"
    "            cudaFuncAttributes fa;\n"
    "            err = cudaFuncGetAttributes(&fa, mirs_gen_pdl_probe);\n"
    "            if (err != cudaSuccess)\n"
    "                return err;\n"
    "            k = fa.ptxVersion >= 90 ? 2 : 1;\n"
    "        }\n"
    "        if (flagged)\n"
    "            known[dev].store(k, std::memory_order_relaxed);\n"
    "    }\n"
    "    *on = k == 2;\n"
    "    return cudaSuccess;\n"
    "}\n"
    "/* Launch kernel k on `stream` as a programmatic dependent of the kernel\n"
    " * before it there: it may start before that one completes, and waits\n"
    " * for it itself (mirs_pdl_wait). */\n"
    "template <typename... P, typename... A>\n"
    "static inline cudaError_t mirs_gen_launch_pdl(void (*k)(P...), dim3 grid, dim3 block,\n"
    "                                              size_t smem, cudaStream_t stream, A... args) {\n"
    "    cudaLaunchAttribute attr[1];\n"
    "    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n"
    "    attr[0].val.programmaticStreamSerializationAllowed = 1;\n"
    "    cudaLaunchConfig_t cfg = {};\n"
    "    cfg.gridDim = grid;\n"
    "    cfg.blockDim = block;\n"
    "    cfg.dynamicSmemBytes = smem;\n"
    "    cfg.stream = stream;\n"
    "    cfg.attrs = attr;\n"
    "    cfg.numAttrs = 1;\n"
    "    return cudaLaunchKernelEx(&cfg, k, args...);\n"
    "}\n"
    "/* The status of a launch that returned e: e, else the error it left for\n"
    " * cudaGetLastError (reset either way: returned, not left pending). */\n"
    "static inline cudaError_t mirs_gen_launched(cudaError_t e) {\n"
    "    const cudaError_t last = cudaGetLastError();\n"
    "    return e != cudaSuccess ? e : last;\n"
    "}\n"
    "/* MIRS_PDL(pdl, MIRS_LAUNCH(k, grid, block, smem, stream, args)): that\n"
    " * launch, a programmatic dependent of the one before it where `pdl` holds;\n"
    " * its status.  (MIRS_PDL_##launch pastes the launch's first token into\n"
    " * MIRS_PDL_MIRS_LAUNCH, which takes the same arguments.) */\n"
    "#define MIRS_PDL(pdl, launch) \\\n"
    "    mirs_gen_launched((pdl) ? MIRS_PDL_##launch : (launch, cudaSuccess))\n"
    "#define MIRS_PDL_MIRS_LAUNCH(k, grid, block, smem, stream, args) \\\n"
    "    mirs_gen_launch_pdl(k, grid, block, smem, stream, MIRS_GEN_ARGS args)\n"
    "#define MIRS_GEN_ARGS(...) __VA_ARGS__\n"
    "#endif\n";

/* Kernel launches of an entry point: its kernel ops that are not views,
 * then the copies of outputs that are inputs or listed twice. */
static int32_t count_launches(const mirs_graph *g, bool views, const int8_t *roles,
                              const int32_t *first_out) {
  int32_t n = 0;
  for (int32_t i = 0; i < g->nops; i++) /* (a split-K pair's second kernel is in the first's) */
    n += !mirs__codegen_op_is_view(g, views, i) && roles[i] != MIRS__SPLITK_TAIL;
  for (int32_t i = 0; i < g->nout; i++)
    n += first_out[g->outputs[i]] != i || g->t[g->outputs[i]].producer < 0;
  return n;
}

/* The PDL role of launch `at` of n (0 without PDL). */
static unsigned pdl_role(bool pdl, int32_t at, int32_t n) {
  return pdl ? (at > 0 ? PDL_WAIT : 0u) | (at + 1 < n ? PDL_TRIGGER : 0u) : 0u;
}

/* Plan every custom kernel of g into plans[] (*planned: how many entries
 * to free); a kernel that does not fit is refused (the search never
 * produces one: its cost model reads the same plan). */
static mirs_status build_plans(const mirs_graph *g, mirs__plan *plans, int32_t *planned) {
  mirs_context *ctx = g->ctx;
  mirs_status s = MIRS_OK;
  for (int32_t i = 0; s == MIRS_OK && i < g->nops; i++, (*planned)++) {
    if (g->ops[i].op != MIRS_OP_CUSTOM)
      continue;
    const mirs__bgraph *bg = g->ops[i].bg;
    int32_t bad = -1;
    if (!bg || !mirs__bg_well_formed(g, bg, &bad)) {
      s = MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d: malformed block graph", (int)i);
      break;
    }
    s = mirs__plan_build(ctx, g, i, MIRS__PLAN_SMEM_MAX, ctx->opt.codegen_mma != 0, &plans[i]);
    if (s == MIRS_OK && !plans[i].feasible)
      s = MIRS_FAIL(ctx, MIRS_LIMIT, "kernel op %d (%s = custom): %s; no CUDA is generated for it",
                    (int)i, g->t[g->ops[i].out[0]].name, plans[i].reason);
  }
  return s;
}

/* Emit the entry point's setting of each kernel's dynamic shared-memory
 * limit above 48 KB: once per device (setting one twice is harmless, so
 * two threads racing on the first call only repeat the work). */
static void emit_attributes(const mirs_graph *g, const char *ename, const int64_t *smem,
                            mirs__buf *b) {
  bool attrs = false;
  for (int32_t i = 0; i < g->nops; i++)
    attrs = attrs || (g->ops[i].op == MIRS_OP_CUSTOM && smem[i] > 48 * 1024);
  if (attrs) {
    mirs__buf_puts(b, "    /* Kernels above 48 KB of shared memory: their limit, once per device. */\n"
                      "    static std::atomic<unsigned char> attrs_set[MIRS_GEN_MAX_DEVICES];\n"
                      "    int dev = 0;\n"
                      "    err = cudaGetDevice(&dev);\n"
                      "    if (err != cudaSuccess) {\n"
                      "        (void)cudaGetLastError(); /* returned: not left pending */\n"
                      "        return (int)err;\n    }\n"
                      "    const bool flagged = dev >= 0 && dev < MIRS_GEN_MAX_DEVICES;\n"
                      "    if (!flagged || !attrs_set[dev].load(std::memory_order_acquire)) {\n");
    for (int32_t i = 0; i < g->nops; i++)
      if (g->ops[i].op == MIRS_OP_CUSTOM && smem[i] > 48 * 1024)
        mirs__buf_printf(b,
                         "        err = cudaFuncSetAttribute(%s_k%d, "
                         "cudaFuncAttributeMaxDynamicSharedMemorySize, %" PRId64 ");\n"
                         "        if (err != cudaSuccess) {\n"
                         "            (void)cudaGetLastError();\n"
                         "            return (int)err;\n        }\n",
                         ename, (int)i, smem[i]);
    mirs__buf_puts(b, "        if (flagged)\n"
                      "            attrs_set[dev].store(1, std::memory_order_release);\n    }\n");
  }
}

/* Emit the entry point's query of whether the device takes programmatic
 * dependent launches (into `pdl`, for the launches after the first). */
static void emit_pdl_query(mirs__buf *b) {
  mirs__buf_puts(b, "    /* Programmatic dependent launches of the kernels after the first\n"
                    "     * (compute capability 9.0 and later; known once per device). */\n"
                    "    bool pdl = false;\n"
                    "    err = mirs_gen_pdl(&pdl);\n"
                    "    if (err != cudaSuccess) {\n"
                    "        (void)cudaGetLastError(); /* returned: not left pending */\n"
                    "        return (int)err;\n    }\n");
}

/* Emit the entry point's launches, each checked (no error was pending at
 * the start, so the first one seen is that launch's), and the copies of
 * outputs that are inputs or listed twice.  A split-K pair's counters are
 * zeroed before the first launch, so that no memset comes between two
 * launches.  Under `pdl` (codegen_pdl and two launches or more) those
 * after the first are `err = MIRS_PDL(pdl, MIRS_LAUNCH(...));`. */
static void emit_launches(const mirs_graph *g, bool views, const char *ename, const int64_t *smem,
                          const int8_t *roles, const mirs__splitk_pair *pairs, const int64_t *coff,
                          const int64_t *woff, const int32_t *first_out, int32_t nlaunch, bool pdl,
                          mirs__buf *b) {
  static const char check_launch[] = "    err = cudaGetLastError();\n"
                                     "    if (err != cudaSuccess)\n        return (int)err;\n";
  static const char check_pdl[] = ")));\n    if (err != cudaSuccess)\n        return (int)err;\n";
  char ptr[400];
  int32_t at = 0; /* launches emitted (of nlaunch: count_launches) */
  for (int32_t i = 0; i < g->nops; i++)
    if (roles[i] == MIRS__SPLITK_HEAD)
      mirs__buf_printf(b,
                       "    /* ops %d and %d: a split-K pair, one launch; its arrival counters "
                       "start at 0 */\n"
                       "    err = cudaMemsetAsync((char *)workspace + %" PRId64 ", 0, %" PRId64
                       ", stream);\n"
                       "    if (err != cudaSuccess) {\n"
                       "        (void)cudaGetLastError(); /* returned: not left pending */\n"
                       "        return (int)err;\n    }\n",
                       (int)i, (int)pairs[i].k2, coff[i], pairs[i].groups * 4);
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *op = &g->ops[i];
    if (roles[i] == MIRS__SPLITK_TAIL) {
      mirs__buf_printf(b, "    /* op %d: %s = custom: runs in %s_k%d's launch (its last blocks) */\n",
                       (int)i, g->t[op->out[0]].name, ename, (int)pairs[i].k1);
      continue;
    }
    if (mirs__codegen_op_is_view(g, views, i)) {
      mirs__buf_printf(b, "    /* op %d: %s = %s(%s): a view, no kernel */\n", (int)i,
                       g->t[op->out[0]].name, mirs__graph_ops[op->op].name, g->t[op->in[0]].name);
      continue;
    }
    const bool dep = pdl && at++ > 0; /* a programmatic dependent launch */
    mirs__buf_puts(b, dep ? "    err = MIRS_PDL(pdl, MIRS_LAUNCH(" : "    MIRS_LAUNCH(");
    if (op->op == MIRS_OP_CUSTOM) {
      const mirs__bgraph *bg = op->bg;
      mirs__buf_printf(b, "%s_k%d, dim3(%d, %d, %d), dim3(%d, %d, %d), %" PRId64 ", stream, (",
                       ename, (int)i, bg->grid[0], bg->grid[1], bg->grid[2], bg->block[0], bg->block[1],
                       bg->block[2], smem[i]);
    } else {
      int64_t n = mirs__shape_numel(&g->t[op->out[0]].shape);
      int f = layout_copy(g, i) ? layout_tiled(g, views, i) : -1;
      if (f >= 0)
        n = layout_tiles(&g->t[op->out[0]].shape, f) * 256; /* (a block a tile) */
      else if (layout_copy(g, i))
        n /= layout_vector(g, views, i);
      mirs__buf_printf(b, "%s_k%d, dim3(%" PRId64 "), dim3(256), 0, stream, (", ename, (int)i,
                       mirs__codegen_stride_blocks(n));
    }
    for (int32_t a = 0; a < op->nin; a++) {
      tensor_ptr(g, views, op->in[a], woff, first_out, ptr, sizeof ptr);
      mirs__buf_printf(b, "%s%s", a ? ", " : "", ptr);
    }
    for (int32_t a = 0; a < op->nout; a++) {
      tensor_ptr(g, views, op->out[a], woff, first_out, ptr, sizeof ptr);
      mirs__buf_printf(b, ", %s", ptr);
    }
    if (roles[i] == MIRS__SPLITK_HEAD) { /* the second kernel's (emit_fused), the counters */
      const mirs__kop *o2 = &g->ops[pairs[i].k2];
      for (int32_t a = 0; a < o2->nin; a++)
        if (g->t[o2->in[a]].producer != i) {
          tensor_ptr(g, views, o2->in[a], woff, first_out, ptr, sizeof ptr);
          mirs__buf_printf(b, ", %s", ptr);
        }
      for (int32_t a = 0; a < o2->nout; a++) {
        tensor_ptr(g, views, o2->out[a], woff, first_out, ptr, sizeof ptr);
        mirs__buf_printf(b, ", %s", ptr);
      }
      mirs__buf_printf(b, ", (unsigned *)((char *)workspace + %" PRId64 ")", coff[i]);
    }
    mirs__buf_puts(b, dep ? check_pdl : "));\n");
    if (!dep)
      mirs__buf_puts(b, check_launch);
  }
  /* Outputs that are inputs or listed twice are copies. */
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    if (first_out[t] == i && g->t[t].producer >= 0)
      continue;
    int64_t n = mirs__shape_numel(&g->t[t].shape);
    tensor_ptr(g, views, t, woff, first_out, ptr, sizeof ptr);
    if (pdl && at++ > 0) { /* mirs_copy_pdl: waits, and triggers unless the last launch */
      mirs__buf_printf(b, "    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_copy_pdl<%s>, dim3(%" PRId64
                          "), dim3(256), 0, stream, (%s, out%d, %" PRId64 "LL, %s",
                       ctype(g->t[t].dtype), mirs__codegen_stride_blocks(n), ptr, (int)i, n,
                       at < nlaunch ? "true" : "false");
      mirs__buf_puts(b, check_pdl);
      continue;
    }
    mirs__buf_printf(b, "    MIRS_LAUNCH(mirs_copy<%s>, dim3(%" PRId64 "), dim3(256), 0, stream, (%s, out%d, %" PRId64
                        "LL));\n",
                     ctype(g->t[t].dtype), mirs__codegen_stride_blocks(n), ptr, (int)i, n);
    mirs__buf_puts(b, check_launch);
  }
}

mirs_status mirs__codegen_cuda(const mirs_graph *g, const char *entry, mirs__buf *b) {
  return mirs__codegen_cuda_views(g, entry, true, b);
}

/* Emit the CUDA C of g. */
mirs_status mirs__codegen_cuda_views(const mirs_graph *g, const char *entry, bool views,
                                     mirs__buf *b) {
  mirs_context *ctx = g->ctx;
  MIRS_CHECK(ctx, mirs__graph_validate(g));
  char ename[300];
  if (entry)
    snprintf(ename, sizeof ename, "%s", entry);
  else
    mirs__codegen_entry_name(g, ename, sizeof ename);
  int64_t *woff = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *woff);
  int32_t *first_out = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *first_out);
  mirs__plan *plans = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *plans);
  /* Per op: split-K pair role and pair, counters' offset, launch's smem. */
  int8_t *roles = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *roles);
  mirs__splitk_pair *pairs = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *pairs);
  int64_t *coff = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *coff);
  int64_t *smem = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *smem);
  int32_t planned = 0;
  int64_t wbytes = 0;
  mirs_status s = MIRS_OK;
  if (!woff || !first_out || !plans || !roles || !pairs || !coff || !smem) {
    s = mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
    goto done;
  }
  for (int32_t i = 0; i < g->nops; i++)
    roles[i] = (int8_t)mirs__plan_splitk_role(ctx, g, i, &pairs[i]);
  wbytes = plan_workspace(g, views, roles, pairs, woff, first_out, coff);
  s = build_plans(g, plans, &planned);
  const int32_t nlaunch = count_launches(g, views, roles, first_out);
  const bool pdl = ctx->opt.codegen_pdl && nlaunch >= 2; /* programmatic dependent launches */
  int32_t at = 0; /* launches emitted (their kernels come in the same order) */
  if (s != MIRS_OK)
    goto done;
  for (int32_t i = 0; i < g->nops; i++)
    smem[i] = roles[i] == MIRS__SPLITK_HEAD ? fused_smem(plans, &pairs[i])
              : roles[i] == MIRS__SPLITK_TAIL ? 0
                                              : plans[i].smem;
  mirs__buf_printf(b, "/* CUDA C for the µGraph %s, generated by mirsearch %s.\n", g->name,
                   mirs_version_string());
  mirs__buf_puts(b, " * Compiles with nvcc (sm_80 and later) or, with -DMIRS_HOST_EMULATION and\n"
                    " * mirsearch_emu.h, as host C++.  At the end: its C interface (the .h\n"
                    " * `mirsearch codegen -o` writes beside it) and the entry point. */\n");
  mirs__buf_puts(b, prelude);
  mirs__buf_puts(b, prelude_mma);
  mirs__buf_puts(b, prelude_copy);
  if (pdl)
    mirs__buf_puts(b, prelude_pdl);
  mirs__hopper_emit_prelude(b, g, plans);
  for (int32_t i = 0; i < g->nops; i++)
    if (layout_copy(g, i) && !mirs__codegen_op_is_view(g, views, i) &&
        layout_tiled(g, views, i) < 0 && layout_vector(g, views, i) > 1) {
      mirs__buf_puts(b, prelude_layout);
      break;
    }
  for (int32_t i = 0; s == MIRS_OK && i < g->nops; i++) {
    unsigned role = mirs__codegen_op_is_view(g, views, i) || roles[i] == MIRS__SPLITK_TAIL
                        ? 0u
                        : pdl_role(pdl, at++, nlaunch);
    if (roles[i] == MIRS__SPLITK_HEAD)
      s = emit_fused(g, &pairs[i], ename, b, plans, views, role);
    else if (roles[i] == MIRS__SPLITK_TAIL)
      mirs__buf_printf(b, "\n/* kernel %d runs inside %s_k%d: a split-K pair, one launch */\n",
                       (int)i, ename, (int)pairs[i].k1);
    else if (g->ops[i].op == MIRS_OP_CUSTOM)
      s = emit_custom(g, i, ename, b, &plans[i], views, NULL, role);
    else
      emit_predefined(g, views, i, ename, role, b);
  }
  if (s != MIRS_OK)
    goto done;

  /* Entry point: the interface, then its definition. */
  emit_interface(g, ename, b);
  mirs__buf_puts(b, entry_helpers);
  if (pdl)
    mirs__buf_puts(b, pdl_helpers);
  emit_status_string(ename, b);
  mirs__buf_printf(b, "\nextern \"C\" size_t %s_workspace_bytes(void) { return %" PRId64 "; }\n", ename,
                   wbytes);
  mirs__buf_printf(b, "\nextern \"C\" int %s(", ename);
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, "const void *in_%s_, ", g->t[t].name);
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, "void *out%d_, ", (int)i);
  mirs__buf_puts(b, "void *workspace, size_t workspace_bytes,\n    void *stream_) {\n");
  emit_contract_checks(g, wbytes, b);
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, "    const %s *const in_%s = (const %s *)in_%s_;\n", ctype(g->t[t].dtype),
                       g->t[t].name, ctype(g->t[t].dtype), g->t[t].name);
  for (int32_t i = 0; i < g->nout; i++) {
    const char *ct = ctype(g->t[g->outputs[i]].dtype);
    mirs__buf_printf(b, "    %s *const out%d = (%s *)out%d_;\n", ct, (int)i, ct, (int)i);
  }
  mirs__buf_puts(b, "    const cudaStream_t stream = (cudaStream_t)stream_;\n"
                    "    cudaError_t err = cudaSuccess;\n");
  emit_attributes(g, ename, smem, b);
  if (pdl)
    emit_pdl_query(b);
  emit_launches(g, views, ename, smem, roles, pairs, coff, woff, first_out, nlaunch, pdl, b);
  mirs__buf_puts(b, "    return MIRS_GEN_OK;\n}\n");
  if (b->failed)
    s = mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
done:
  mirs__core_free(ctx, woff);
  mirs__core_free(ctx, first_out);
  for (int32_t i = 0; plans && i < planned; i++)
    mirs__plan_free(&plans[i]);
  mirs__core_free(ctx, plans);
  mirs__core_free(ctx, roles);
  mirs__core_free(ctx, pairs);
  mirs__core_free(ctx, coff);
  mirs__core_free(ctx, smem);
  return s;
}
