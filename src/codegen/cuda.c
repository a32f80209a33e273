/* SPDX-License-Identifier: MIT */
/* src/codegen/cuda.c - CUDA C for a µGraph.
 *
 * Every kernel op becomes one `static __global__` function, launched in
 * op order on the caller's stream by an `extern "C"` entry point:
 *  - a predefined op is a simple grid-stride kernel, one thread per output
 *    element, computing in float from its stored (f16/bf16/f32) operands;
 *  - a custom op is one kernel with the block graph's schedule
 *    (graph/schedule.c): blockIdx selects the tiles (imap/omap offsets),
 *    a forloop over F iterations stages each INPUT tile in shared memory
 *    (as float), block ops compute tiles in shared memory, accumulators
 *    live in registers (each thread owns elements tid + r*NT), thread-level
 *    chains of fused elementwise ops are applied in registers to the value
 *    their producer computes (matmul, elementwise, reduction, accumulator)
 *    so the fused intermediates never reach shared memory, and OUTPUT ops
 *    store tiles through omap in the output's dtype;
 *  - f16/bf16 block matmuls whose tiles are multiples of 16x8x16, in
 *    blocks of whole warps, use tensor cores (mma.sync m16n8k16, f32
 *    accumulation; sm_80 and later); others take the scalar path.
 * Intermediate kernel tensors live in a caller-provided workspace.
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

#define SMEM_LIMIT (227 * 1024) /* bytes of shared memory per block (H100/H200; A100: 163 KB) */
#define REG_ACC_MAX 64          /* accumulator elements per thread kept in registers */

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

/* Append to b the flat index of an operand of shape in at the output
 * coordinates c0.. of shape out (broadcast, ranks aligned on the right),
 * over dims [0, nd) of out. */
static void emit_index(mirs__buf *b, const mirs__shape *in, const mirs__shape *out, int nd) {
  int64_t st[MIRS_MAX_DIMS];
  mirs__shape_bcast_strides(in, out, st);
  bool any = false;
  for (int d = 0; d < nd; d++)
    if (st[d] != 0) {
      mirs__buf_printf(b, "%sc%d * %" PRId64, any ? " + " : "", d, st[d]);
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

/* The float expression of unary op on x. */
static void emit_unary(mirs__buf *b, mirs_op op, const char *x) {
  switch (op) {
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
  default:
    mirs__buf_printf(b, "mirs_relu(%s)", x);
    break;
  }
}

/* The C operator of a binary elementwise op. */
static const char *binop(mirs_op op) {
  return op == MIRS_OP_ADD ? "+" : op == MIRS_OP_SUB ? "-" : op == MIRS_OP_MUL ? "*" : "/";
}

/* Emit statements computing `v`, element (c0..) of op's result of shape
 * os, from operands in[a] (pointer expressions, read with mirs_ld) of
 * shapes ins[a]; ity is the index type. */
static void emit_value(mirs__buf *b, const char *ind, const char *ity, mirs_op op, int dim,
                       const char *const *in, const mirs__shape *const *ins,
                       const mirs__shape *os) {
  int r = os->ndim;
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
    mirs__buf_printf(b, "%sconst float x = mirs_ld(%s + (", ind, in[0]);
    emit_index(b, ins[0], os, r);
    mirs__buf_printf(b, "));\n%sv = ", ind);
    emit_unary(b, op, "x");
    mirs__buf_puts(b, ";\n");
    break;
  case MIRS__KIND_BINARY:
    mirs__buf_printf(b, "%sv = mirs_ld(%s + (", ind, in[0]);
    emit_index(b, ins[0], os, r);
    mirs__buf_printf(b, ")) %s mirs_ld(%s + (", binop(op), in[1]);
    emit_index(b, ins[1], os, r);
    mirs__buf_puts(b, "));\n");
    break;
  case MIRS__KIND_MATMUL: {
    int64_t k = ins[0]->d[ins[0]->ndim - 1], n = os->d[r - 1];
    mirs__buf_printf(b, "%sconst %s ia = ", ind, ity);
    emit_index(b, ins[0], os, r - 2);
    mirs__buf_printf(b, " + c%d * %" PRId64 ";\n%sconst %s ib = ", r - 2, k, ind, ity);
    emit_index(b, ins[1], os, r - 2);
    mirs__buf_printf(b, " + c%d;\n", r - 1);
    mirs__buf_printf(b, "%sv = 0.0f;\n%sfor (%s p = 0; p < %" PRId64 "; p++)\n", ind, ind, ity, k);
    mirs__buf_printf(b, "%s  v += mirs_ld(%s + (ia + p)) * mirs_ld(%s + (ib + p * %" PRId64 "));\n",
                     ind, in[0], in[1], n);
    break;
  }
  case MIRS__KIND_REDUCE: {
    int64_t st[MIRS_MAX_DIMS];
    strides(ins[0], st);
    mirs__buf_printf(b, "%sconst %s ix = ", ind, ity);
    bool any = false;
    for (int d = 0; d < r; d++)
      if (d != dim && os->d[d] > 1) {
        mirs__buf_printf(b, "%sc%d * %" PRId64, any ? " + " : "", d, st[d]);
        any = true;
      }
    mirs__buf_printf(b, "%s;\n%sv = 0.0f;\n", any ? "" : "0", ind);
    mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++)\n%s  v += mirs_ld(%s + (ix + p * %" PRId64 "));\n",
                     ind, ity, ins[0]->d[dim], ind, in[0], st[dim]);
    break;
  }
  default: { /* RMSNORM over the last dim */
    int64_t last = os->d[r - 1];
    mirs__buf_printf(b, "%sconst %s row = (", ind, ity);
    emit_index(b, ins[0], os, r);
    mirs__buf_printf(b, ") - c%d;\n%sfloat ss = 0.0f;\n", r - 1, ind);
    mirs__buf_printf(b, "%sfor (%s p = 0; p < %" PRId64 "; p++) {\n", ind, ity, last);
    mirs__buf_printf(b, "%s  const float y = mirs_ld(%s + (row + p));\n%s  ss += y * y;\n%s}\n",
                     ind, in[0], ind, ind);
    mirs__buf_printf(b, "%sv = mirs_ld(%s + (row + c%d)) / sqrtf(ss / %" PRId64 ".0f);\n", ind,
                     in[0], r - 1, last);
    break;
  }
  }
}

/* ---------------------------------------------------------------- custom kernels */

/* What the generator decided for one custom kernel. */
typedef struct kgen {
  const mirs_graph *g;
  const mirs__bgraph *bg;
  mirs__buf *b;
  int32_t nthreads;
  bool mma;        /* tensor cores allowed (dtype, whole warps, option) */
  mirs_dtype dt;   /* storage dtype of the kernel's tensors */
  int32_t *uses;   /* per block tensor: operand uses by block ops */
  int32_t *next;   /* per block tensor: the fused op absorbing its value, or -1 */
  bool *absorbed;  /* per block op: emitted inside its producer's chain */
  int64_t *soff;   /* per block tensor: shared-memory offset in floats, or -1 */
  bool *acc_smem;  /* per block tensor (accumulators): kept in shared memory */
  int64_t *aoff;   /* per block tensor: offset of those running sums, or -1 */
  int64_t smem;    /* floats of shared memory */
  bool pending;    /* shared memory written since the last barrier */
} kgen;

/* Whether fused op f (with in[0] = t, produced by op p) can run in the
 * registers of t's producer: same shape, and its other operand exists by
 * then (computed before p; for an accumulator p, another accumulator that
 * is written back before the chained ones). */
static bool can_absorb(const kgen *k, int32_t p, const mirs__bop *f) {
  const mirs__bgraph *bg = k->bg;
  if (!f->fused || !mirs__op_is_elementwise(f->op) || k->uses[f->in[0]] != 1)
    return false;
  if (!mirs__shape_eq(&bg->t[f->in[0]].shape, &bg->t[f->out].shape))
    return false;
  if (f->nin < 2)
    return true;
  int32_t q = bg->t[f->in[1]].producer;
  const mirs__bop *pp = &bg->ops[p];
  if (mirs__graph_ops[pp->op].kind == MIRS__KIND_ACCUM) {
    const mirs__bop *qo = &bg->ops[q];
    return mirs__graph_ops[qo->op].kind == MIRS__KIND_ACCUM && k->next[qo->out] < 0 &&
           q != p;
  }
  return q < p;
}

/* Decide chains, shared-memory placement and accumulator storage. */
static mirs_status plan_kernel(kgen *k) {
  const mirs__bgraph *bg = k->bg;
  mirs_context *ctx = k->g->ctx;
  for (int32_t i = 0; i < bg->nt; i++) {
    k->next[i] = -1;
    k->soff[i] = -1;
    k->aoff[i] = -1;
  }
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    mirs__op_kind kind = mirs__graph_ops[op->op].kind;
    if (kind == MIRS__KIND_INPUT)
      continue;
    for (int a = 0; a < op->nin && a < 2; a++)
      k->uses[op->in[a]]++;
  }
  /* Chains, in op order: an absorbed op's producer is earlier. */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *f = &bg->ops[i];
    if (!f->fused || f->nin < 1)
      continue;
    int32_t p = bg->t[f->in[0]].producer;
    mirs__op_kind pk = mirs__graph_ops[bg->ops[p].op].kind;
    if (pk == MIRS__KIND_INPUT || pk == MIRS__KIND_OUTPUT)
      continue;
    /* The head of the chain decides the phase rules: follow absorbed ops back. */
    int32_t head = p;
    while (k->absorbed[head])
      head = bg->t[bg->ops[head].in[0]].producer;
    if (can_absorb(k, head, f)) {
      k->next[f->in[0]] = i;
      k->absorbed[i] = true;
    }
  }
  int64_t total = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_OUTPUT)
      continue;
    int32_t t = op->out;
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_ACCUM &&
        (n + k->nthreads - 1) / k->nthreads > REG_ACC_MAX) {
      k->acc_smem[t] = true;
      k->aoff[t] = total; /* the running sums; the written-back tile below */
      total += (n + 3) & ~(int64_t)3;
    }
    if (k->next[t] < 0) {
      k->soff[t] = total;
      total += (n + 3) & ~(int64_t)3;
    }
  }
  k->smem = total;
  (void)ctx;
  return MIRS_OK;
}

/* Emit a barrier if shared memory was written since the last one. */
static void sync_if_pending(kgen *k, const char *ind) {
  if (k->pending)
    mirs__buf_printf(k->b, "%s__syncthreads();\n", ind);
  k->pending = false;
}

/* Emit the chain of fused ops from tensor t (value in `v`, coordinates
 * c0.. of t's shape, flat index `e`) and the store of the final value. */
static void emit_chain_store(kgen *k, const char *ind, int32_t t) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *s = &bg->t[t].shape;
  while (k->next[t] >= 0) {
    const mirs__bop *f = &bg->ops[k->next[t]];
    if (f->nin == 1) {
      mirs__buf_printf(b, "%sv = ", ind);
      emit_unary(b, f->op, "v");
      mirs__buf_puts(b, ";\n");
    } else {
      mirs__buf_printf(b, "%sv = v %s t%d[", ind, binop(f->op), (int)f->in[1]);
      emit_index(b, &bg->t[f->in[1]].shape, s, s->ndim);
      mirs__buf_puts(b, "];\n");
    }
    t = f->out;
  }
  mirs__buf_printf(b, "%st%d[e] = v;\n", ind, (int)t);
}

/* Tensor-core variant of a block matmul: none (scalar path), 16-bit
 * operands (m16n8k16, when both operands are tiles loaded from tensors
 * stored in f16/bf16, so rounding them loses nothing), or tf32 (m16n8k8,
 * when an operand is computed in float: tf32 keeps f32's range, which
 * exp() results overflow in f16). */
typedef enum mma_kind { MMA_NONE, MMA_16, MMA_TF32 } mma_kind;

static mma_kind use_mma(const kgen *k, const mirs__bop *op) {
  if (!k->mma || op->op != MIRS_OP_MATMUL)
    return MMA_NONE;
  const mirs__bgraph *bg = k->bg;
  const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape;
  int r = os->ndim;
  if (r < 2 || os->d[r - 2] % 16 != 0 || os->d[r - 1] % 8 != 0)
    return MMA_NONE;
  int64_t kk = as->d[as->ndim - 1];
  bool loaded = bg->ops[bg->t[op->in[0]].producer].op == MIRS_OP_INPUT &&
                bg->ops[bg->t[op->in[1]].producer].op == MIRS_OP_INPUT;
  if (loaded && kk % 16 == 0)
    return MMA_16;
  return kk % 8 == 0 ? MMA_TF32 : MMA_NONE;
}

/* Emit a block matmul on tensor cores: each warp computes 16x8 output
 * tiles with mma.sync from the float tiles (operands rounded to the
 * kernel's dtype, or to tf32), accumulating in f32. */
static void emit_mma(kgen *k, const mirs__bop *op, mma_kind kind) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *os = &bg->t[op->out].shape, *as = &bg->t[op->in[0]].shape,
                    *bs = &bg->t[op->in[1]].shape;
  int r = os->ndim;
  int64_t m = os->d[r - 2], n = os->d[r - 1], kk = as->d[as->ndim - 1];
  int64_t batches = mirs__shape_numel(os) / (m * n);
  int64_t mt = m / 16, nt = n / 8, tiles = batches * mt * nt;
  const char *sfx = kind == MMA_TF32 ? "tf32" : k->dt == MIRS_BF16 ? "bf16" : "f16";
  mirs__shape bsh = *os; /* batch coordinates: the output's batch dims */
  mirs__buf_printf(b, "    { /* %s: tensor cores (mma.sync m16n8k%d, %s) */\n",
                   bg->t[op->out].name, kind == MMA_TF32 ? 8 : 16, sfx);
  mirs__buf_puts(b, "      const int lane = tid & 31, gq = lane >> 2, tq = lane & 3;\n");
  mirs__buf_printf(b, "      for (int w = tid >> 5; w < %" PRId64 "; w += %d) {\n", tiles,
                   k->nthreads / 32);
  mirs__buf_printf(b, "        const int bi = w / %" PRId64 ", mt = (w / %" PRId64 ") %% %" PRId64
                      ", nt = w %% %" PRId64 ";\n",
                   mt * nt, nt, mt, nt);
  bsh.ndim = r - 2;
  if (r - 2 > 0)
    emit_coords(b, "        ", "int", "bi", &bsh);
  mirs__buf_puts(b, "        const int ab = ");
  emit_index(b, as, os, r - 2);
  mirs__buf_puts(b, ", bb = ");
  emit_index(b, bs, os, r - 2);
  mirs__buf_puts(b, ";\n        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n");
  if (kind == MMA_TF32) {
    mirs__buf_printf(b, "        for (int kk = 0; kk < %" PRId64 "; kk += 8) {\n", kk);
    mirs__buf_printf(b,
                     "          const float *pa = t%d + ab + (mt * 16 + gq) * %" PRId64
                     " + kk + tq;\n",
                     (int)op->in[0], kk);
    mirs__buf_printf(b,
                     "          const float *pb = t%d + bb + (kk + tq) * %" PRId64
                     " + nt * 8 + gq;\n",
                     (int)op->in[1], n);
    mirs__buf_puts(b, "          uint32_t a[4], bf[2];\n");
    mirs__buf_puts(b, "          a[0] = mirs_pack_tf32(pa[0]);\n");
    mirs__buf_printf(b, "          a[1] = mirs_pack_tf32(pa[%" PRId64 "]);\n", 8 * kk);
    mirs__buf_puts(b, "          a[2] = mirs_pack_tf32(pa[4]);\n");
    mirs__buf_printf(b, "          a[3] = mirs_pack_tf32(pa[%" PRId64 "]);\n", 8 * kk + 4);
    mirs__buf_puts(b, "          bf[0] = mirs_pack_tf32(pb[0]);\n");
    mirs__buf_printf(b, "          bf[1] = mirs_pack_tf32(pb[%" PRId64 "]);\n", 4 * n);
  } else {
    mirs__buf_printf(b, "        for (int kk = 0; kk < %" PRId64 "; kk += 16) {\n", kk);
    mirs__buf_printf(b,
                     "          const float *pa = t%d + ab + (mt * 16 + gq) * %" PRId64
                     " + kk + tq * 2;\n",
                     (int)op->in[0], kk);
    mirs__buf_printf(b,
                     "          const float *pb = t%d + bb + (kk + tq * 2) * %" PRId64
                     " + nt * 8 + gq;\n",
                     (int)op->in[1], n);
    mirs__buf_puts(b, "          uint32_t a[4], bf[2];\n");
    mirs__buf_printf(b, "          a[0] = mirs_pack_%s(pa[0], pa[1]);\n", sfx);
    mirs__buf_printf(b, "          a[1] = mirs_pack_%s(pa[%" PRId64 "], pa[%" PRId64 "]);\n", sfx,
                     8 * kk, 8 * kk + 1);
    mirs__buf_printf(b, "          a[2] = mirs_pack_%s(pa[8], pa[9]);\n", sfx);
    mirs__buf_printf(b, "          a[3] = mirs_pack_%s(pa[%" PRId64 "], pa[%" PRId64 "]);\n", sfx,
                     8 * kk + 8, 8 * kk + 9);
    mirs__buf_printf(b, "          bf[0] = mirs_pack_%s(pb[0], pb[%" PRId64 "]);\n", sfx, n);
    mirs__buf_printf(b, "          bf[1] = mirs_pack_%s(pb[%" PRId64 "], pb[%" PRId64 "]);\n", sfx,
                     8 * n, 9 * n);
  }
  mirs__buf_printf(b, "          mirs_mma_%s(d, a, bf);\n        }\n", sfx);
  mirs__buf_puts(b, "        for (int h = 0; h < 4; h++) {\n");
  mirs__buf_printf(b,
                   "          const int e = bi * %" PRId64 " + (mt * 16 + gq + (h >> 1) * 8) * %" PRId64
                   " + nt * 8 + tq * 2 + (h & 1);\n",
                   m * n, n);
  emit_coords(b, "          ", "int", "e", os);
  mirs__buf_puts(b, "          float v = d[h];\n");
  emit_chain_store(k, "          ", op->out);
  mirs__buf_puts(b, "        }\n      }\n    }\n");
}

/* Emit a compute block op (either phase) and its fused chain. */
static void emit_block_compute(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  sync_if_pending(k, "    ");
  mma_kind mk = use_mma(k, op);
  if (mk != MMA_NONE) {
    emit_mma(k, op, mk);
  } else {
    const mirs__shape *os = &bg->t[op->out].shape;
    char names[2][16];
    const char *in[2] = {NULL, NULL};
    const mirs__shape *ins[2] = {NULL, NULL};
    for (int a = 0; a < op->nin && a < 2; a++) {
      snprintf(names[a], sizeof names[a], "t%d", (int)op->in[a]);
      in[a] = names[a];
      ins[a] = &bg->t[op->in[a]].shape;
    }
    mirs__buf_printf(b, "    /* %s = %s */\n", bg->t[op->out].name, mirs__graph_ops[op->op].name);
    mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) {\n",
                     mirs__shape_numel(os), k->nthreads);
    emit_coords(b, "      ", "int", "e", os);
    mirs__buf_puts(b, "      float v;\n");
    emit_value(b, "      ", "int", op->op, op->dim, in, ins, os);
    emit_chain_store(k, "      ", op->out);
    mirs__buf_puts(b, "    }\n");
  }
  k->pending = true;
}

/* Accumulator storage element r of accumulator tensor t. */
static void acc_ref(const kgen *k, int32_t t, char *buf, size_t size) {
  if (k->acc_smem[t])
    snprintf(buf, size, "a%d[tid + r * %d]", (int)t, k->nthreads);
  else
    snprintf(buf, size, "acc%d[r]", (int)t);
}

/* Open a loop over the accumulator elements this thread owns. */
static void open_acc_loop(kgen *k, int32_t t) {
  int64_t n = mirs__shape_numel(&k->bg->t[t].shape);
  int64_t per = (n + k->nthreads - 1) / k->nthreads;
  mirs__buf_printf(k->b, "    %sfor (int r = 0; r < %" PRId64 "; r++) {\n",
                   k->acc_smem[t] ? "" : "MIRS_UNROLL ", per);
  mirs__buf_printf(k->b, "      const int e = tid + r * %d;\n", k->nthreads);
  mirs__buf_printf(k->b, "      if (e >= %" PRId64 ")\n        break;\n", n);
}

/* Emit an ACCUM* step: this iteration's contribution to the owned elements. */
static void emit_accum(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  const mirs__shape *xs = &bg->t[op->in[0]].shape, *as = &bg->t[op->out].shape;
  char ref[64];
  acc_ref(k, op->out, ref, sizeof ref);
  sync_if_pending(k, "    ");
  mirs__buf_printf(b, "    /* %s = %s(%s) */\n", bg->t[op->out].name, mirs__graph_ops[op->op].name,
                   bg->t[op->in[0]].name);
  open_acc_loop(k, op->out);
  emit_coords(b, "      ", "int", "e", as);
  mirs__buf_puts(b, "      float v;\n");
  char xn[16];
  snprintf(xn, sizeof xn, "t%d", (int)op->in[0]);
  const char *in[1] = {xn};
  const mirs__shape *ins[1] = {xs};
  if (op->op == MIRS_OP_ACCUM) {
    mirs__buf_printf(b, "      v = %s[e];\n", xn);
  } else if (op->op == MIRS_OP_ACCUM_SUM) {
    emit_value(b, "      ", "int", MIRS_OP_SUM, op->dim, in, ins, as);
  } else {
    int64_t last = xs->d[xs->ndim - 1];
    mirs__buf_printf(b, "      v = 0.0f;\n      for (int p = 0; p < %" PRId64 "; p++) {\n", last);
    mirs__buf_printf(b, "        const float y = %s[e * %" PRId64 " + p];\n        v += y * y;\n      }\n",
                     xn, last);
  }
  mirs__buf_printf(b, "      %s += v;\n    }\n", ref);
}

/* Emit the write-back of accumulator op (its final value, through its chain). */
static void emit_writeback(kgen *k, const mirs__bop *op) {
  const mirs__bgraph *bg = k->bg;
  mirs__buf *b = k->b;
  char ref[64];
  acc_ref(k, op->out, ref, sizeof ref);
  mirs__buf_printf(b, "    /* %s: write back%s */\n", bg->t[op->out].name,
                   k->next[op->out] >= 0 ? " through its fused chain" : "");
  open_acc_loop(k, op->out);
  emit_coords(b, "      ", "int", "e", &bg->t[op->out].shape);
  mirs__buf_printf(b, "      float v = %s;\n", ref);
  if (op->op == MIRS_OP_ACCUM_RMS)
    mirs__buf_printf(b, "      v = sqrtf(v / %.1f);\n", mirs__sched_rms_count(bg, op));
  emit_chain_store(k, "      ", op->out);
  mirs__buf_puts(b, "    }\n");
  k->pending = true;
}

/* Emit `base + (c0 + off0) * S0 + ...`: the kernel-tensor index of tile
 * element c0.. for INPUT/OUTPUT op placed by the schedule. */
static void emit_global_index(kgen *k, const mirs__bop *op, const mirs__shape *ks,
                              const mirs__shape *ts) {
  static const char *const bidx[MIRS__GRID] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  mirs__tile_place p;
  mirs__sched_place(k->bg, op, &p);
  int64_t st[MIRS_MAX_DIMS];
  strides(ks, st);
  for (int d = 0; d < ts->ndim; d++) {
    mirs__buf_printf(k->b, "%s(c%d", d ? " + " : "", d);
    if (p.grid[d] >= 0)
      mirs__buf_printf(k->b, " + (long long)%s * %" PRId64, bidx[p.grid[d]], ts->d[d]);
    if (p.forloop[d])
      mirs__buf_printf(k->b, " + (long long)f * %" PRId64, ts->d[d]);
    mirs__buf_printf(k->b, ") * %" PRId64 "LL", st[d]);
  }
}

/* Allocate k's per-tensor and per-op arrays for bg. */
static mirs_status kgen_alloc(mirs_context *ctx, kgen *k) {
  size_t nt = (size_t)k->bg->nt + 1, no = (size_t)k->bg->nops + 1;
  k->uses = mirs__core_calloc(ctx, nt, sizeof *k->uses);
  k->next = mirs__core_calloc(ctx, nt, sizeof *k->next);
  k->soff = mirs__core_calloc(ctx, nt, sizeof *k->soff);
  k->aoff = mirs__core_calloc(ctx, nt, sizeof *k->aoff);
  k->acc_smem = mirs__core_calloc(ctx, nt, sizeof *k->acc_smem);
  k->absorbed = mirs__core_calloc(ctx, no, sizeof *k->absorbed);
  if (!k->uses || !k->next || !k->soff || !k->aoff || !k->acc_smem || !k->absorbed)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  return MIRS_OK;
}

/* Release k's arrays. */
static void kgen_free(mirs_context *ctx, kgen *k) {
  mirs__core_free(ctx, k->uses);
  mirs__core_free(ctx, k->next);
  mirs__core_free(ctx, k->soff);
  mirs__core_free(ctx, k->aoff);
  mirs__core_free(ctx, k->acc_smem);
  mirs__core_free(ctx, k->absorbed);
}

/* Floats of tile storage custom kernel op ki of g needs per block. */
static mirs_status kernel_floats(const mirs_graph *g, int32_t ki, int64_t *floats) {
  kgen k;
  memset(&k, 0, sizeof k);
  k.g = g;
  k.bg = g->ops[ki].bg;
  k.nthreads = k.bg->block[0] * k.bg->block[1] * k.bg->block[2];
  if (k.nthreads < 1)
    k.nthreads = 1;
  mirs_status s = kgen_alloc(g->ctx, &k);
  if (s == MIRS_OK)
    s = plan_kernel(&k);
  *floats = k.smem;
  kgen_free(g->ctx, &k);
  return s;
}

/* Emit one custom kernel: kernel op ki of g.  Its tiles live in dynamic
 * shared memory, or, when they exceed SMEM_LIMIT (global set), in a
 * per-block slice of a scratch buffer in global memory (slower, but any
 * valid µGraph runs; __syncthreads orders global memory within a block
 * as it does shared memory). */
static mirs_status emit_custom(const mirs_graph *g, int32_t ki, const char *ename, mirs__buf *b,
                               bool global) {
  mirs_context *ctx = g->ctx;
  const mirs__kop *kop = &g->ops[ki];
  const mirs__bgraph *bg = kop->bg;
  int32_t bad = -1;
  if (!bg || !mirs__bg_well_formed(g, bg, &bad))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d: malformed block graph", (int)ki);
  int64_t nth = (int64_t)bg->block[0] * bg->block[1] * bg->block[2];
  if (nth < 1 || nth > 1024)
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "kernel op %d: %" PRId64 " threads per block (CUDA allows 1 to 1024)",
                     (int)ki, nth);
  kgen k;
  memset(&k, 0, sizeof k);
  k.g = g;
  k.bg = bg;
  k.b = b;
  k.nthreads = (int32_t)nth;
  k.dt = g->t[kop->in[0]].dtype;
  k.mma = ctx->opt.codegen_mma && k.dt != MIRS_F32 && nth % 32 == 0;
  mirs__sched sched = {0};
  mirs_status s = kgen_alloc(ctx, &k);
  if (s == MIRS_OK)
    s = plan_kernel(&k);
  if (s == MIRS_OK)
    s = mirs__sched_build(ctx, bg, &sched);
  if (s != MIRS_OK)
    goto done;

  /* Signature: inputs then outputs, in the kop's order. */
  mirs__buf_printf(b, "\n/* kernel %d: custom, grid [%d, %d, %d], block [%d, %d, %d], forloop %d,\n"
                      " * %" PRId64 " bytes of %s per block */\n",
                   (int)ki, bg->grid[0], bg->grid[1], bg->grid[2], bg->block[0], bg->block[1],
                   bg->block[2], bg->forloop, k.smem * 4,
                   global ? "global scratch (the tiles exceed shared memory)" : "shared memory");
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(%d) %s_k%d(", k.nthreads, ename,
                   (int)ki);
  for (int32_t i = 0; i < kop->nin; i++)
    mirs__buf_printf(b, "%sconst %s *__restrict__ in%d", i ? ", " : "",
                     ctype(g->t[kop->in[i]].dtype), (int)i);
  for (int32_t i = 0; i < kop->nout; i++)
    mirs__buf_printf(b, ", %s *__restrict__ out%d", ctype(g->t[kop->out[i]].dtype), (int)i);
  if (global)
    mirs__buf_printf(b, ", float *__restrict__ scratch) {\n"
                        "    float *const mirs_smem = scratch + (size_t)(blockIdx.x + gridDim.x * "
                        "(blockIdx.y + gridDim.y * blockIdx.z)) * %" PRId64 ";\n",
                     k.smem);
  else
    mirs__buf_puts(b, ") {\n    MIRS_SHARED_FLOATS(mirs_smem);\n");
  mirs__buf_puts(b, "    const int tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * "
                    "threadIdx.z));\n");
  for (int32_t t = 0; t < bg->nt; t++)
    if (k.soff[t] >= 0)
      mirs__buf_printf(b, "    float *const t%d = mirs_smem + %" PRId64 "; /* %s */\n", (int)t,
                       k.soff[t], bg->t[t].name);
  /* ZERO steps: the accumulators. */
  for (int32_t i = 0; i < sched.ninit; i++) {
    const mirs__bop *op = &bg->ops[mirs__sched_init(&sched)[i].op];
    int32_t t = op->out;
    int64_t n = mirs__shape_numel(&bg->t[t].shape);
    int64_t per = (n + k.nthreads - 1) / k.nthreads;
    if (k.acc_smem[t]) {
      int64_t base = k.aoff[t];
      mirs__buf_printf(b, "    float *const a%d = mirs_smem + %" PRId64 ";\n", (int)t, base);
      mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d)\n      a%d[e] = 0.0f;\n",
                       n, k.nthreads, (int)t);
    } else {
      mirs__buf_printf(b, "    float acc%d[%" PRId64 "]; /* %s */\n", (int)t, per, bg->t[t].name);
      mirs__buf_printf(b, "    MIRS_UNROLL for (int r = 0; r < %" PRId64 "; r++)\n      acc%d[r] = 0.0f;\n",
                       per, (int)t);
    }
  }
  /* The forloop. */
  mirs__buf_printf(b, "    for (int f = 0; f < %d; f++) {\n", bg->forloop);
  k.pending = false;
  for (int32_t i = 0; i < sched.nloop; i++) {
    const mirs__step *stp = &mirs__sched_loop(&sched)[i];
    const mirs__bop *op = &bg->ops[stp->op];
    if (stp->kind == MIRS__STEP_LOAD) {
      const mirs__shape *ts = &bg->t[op->out].shape;
      int32_t src_i = 0;
      while (src_i < kop->nin && kop->in[src_i] != op->src)
        src_i++;
      mirs__buf_printf(b, "    /* %s: tile of %s */\n", bg->t[op->out].name, g->t[op->src].name);
      mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) {\n",
                       mirs__shape_numel(ts), k.nthreads);
      emit_coords(b, "      ", "int", "e", ts);
      mirs__buf_printf(b, "      t%d[e] = mirs_ld(in%d + (", (int)op->out, (int)src_i);
      emit_global_index(&k, op, &g->t[op->src].shape, ts);
      mirs__buf_puts(b, "));\n    }\n");
      k.pending = true;
    } else if (stp->kind == MIRS__STEP_ACCUM) {
      emit_accum(&k, op);
    } else if (stp->kind == MIRS__STEP_COMPUTE && !k.absorbed[stp->op]) {
      emit_block_compute(&k, op);
    }
  }
  mirs__buf_puts(b, "    __syncthreads();\n    }\n");
  k.pending = false;
  /* After the loop: accumulators without a chain, then chained ones (their
   * chains may read the former), then post ops and stores. */
  for (int pass = 0; pass < 2; pass++) {
    bool any = false;
    for (int32_t i = 0; i < sched.ninit; i++) {
      const mirs__bop *op = &bg->ops[mirs__sched_init(&sched)[i].op];
      if ((k.next[op->out] >= 0) == (pass == 1)) {
        if (!any && pass == 1)
          sync_if_pending(&k, "    ");
        emit_writeback(&k, op);
        any = true;
      }
    }
  }
  for (int32_t i = 0; i < sched.npost; i++) {
    const mirs__step *stp = &mirs__sched_post(&sched)[i];
    const mirs__bop *op = &bg->ops[stp->op];
    if (stp->kind == MIRS__STEP_COMPUTE && !k.absorbed[stp->op]) {
      emit_block_compute(&k, op);
    } else if (stp->kind == MIRS__STEP_STORE) {
      const mirs__shape *ts = &bg->t[op->in[0]].shape;
      int32_t oi = 0;
      while (oi < kop->nout && kop->out[oi] != op->dst)
        oi++;
      sync_if_pending(&k, "    ");
      mirs__buf_printf(b, "    /* store %s into %s */\n", bg->t[op->in[0]].name,
                       g->t[op->dst].name);
      mirs__buf_printf(b, "    for (int e = tid; e < %" PRId64 "; e += %d) {\n",
                       mirs__shape_numel(ts), k.nthreads);
      emit_coords(b, "      ", "int", "e", ts);
      mirs__buf_printf(b, "      mirs_st(out%d + (", (int)oi);
      emit_global_index(&k, op, &g->t[op->dst].shape, ts);
      mirs__buf_printf(b, "), t%d[e]);\n    }\n", (int)op->in[0]);
    }
  }
  mirs__buf_puts(b, "}\n");
done:
  mirs__sched_free(ctx, &sched);
  kgen_free(ctx, &k);
  return s;
}

/* ---------------------------------------------------------------- predefined ops */

/* Emit predefined kernel op ki as a grid-stride kernel. */
static void emit_predefined(const mirs_graph *g, int32_t ki, const char *ename, mirs__buf *b) {
  const mirs__kop *op = &g->ops[ki];
  const mirs__shape *os = &g->t[op->out[0]].shape;
  char names[2][16];
  const char *in[2] = {NULL, NULL};
  const mirs__shape *ins[2] = {NULL, NULL};
  mirs__buf_printf(b, "\n/* kernel %d: %s -> %s */\n", (int)ki, mirs__graph_ops[op->op].name,
                   g->t[op->out[0]].name);
  mirs__buf_printf(b, "static __global__ void __launch_bounds__(256) %s_k%d(", ename, (int)ki);
  for (int a = 0; a < op->nin && a < 2; a++) {
    snprintf(names[a], sizeof names[a], "in%d", a);
    in[a] = names[a];
    ins[a] = &g->t[op->in[a]].shape;
    mirs__buf_printf(b, "const %s *__restrict__ in%d, ", ctype(g->t[op->in[a]].dtype), a);
  }
  mirs__buf_printf(b, "%s *__restrict__ out0) {\n", ctype(g->t[op->out[0]].dtype));
  mirs__buf_printf(b, "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < %" PRId64
                      "LL; e += (long long)gridDim.x * 256) {\n",
                   mirs__shape_numel(os));
  emit_coords(b, "      ", "long long", "e", os);
  mirs__buf_puts(b, "      float v;\n");
  emit_value(b, "      ", "long long", op->op, op->dim, in, ins, os);
  mirs__buf_puts(b, "      mirs_st(out0 + e, v);\n    }\n}\n");
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
    "template <typename T>\n"
    "__global__ void __launch_bounds__(256) mirs_copy(const T *__restrict__ s, T *__restrict__ "
    "d, long long n) {\n"
    "    for (long long e = blockIdx.x * 256LL + threadIdx.x; e < n; e += (long long)gridDim.x * 256)\n"
    "        d[e] = s[e];\n"
    "}\n"
    "#endif\n";

/* Grid size of a grid-stride kernel over n elements. */
int64_t mirs__codegen_stride_blocks(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks;
}

/* Workspace layout: byte offset of each intermediate kernel tensor (-1
 * for inputs and first-listed outputs); returns the total. */
static int64_t plan_workspace(const mirs_graph *g, int64_t *woff, int32_t *first_out) {
  int64_t total = 0;
  for (int32_t t = 0; t < g->nt; t++) {
    woff[t] = -1;
    first_out[t] = -1;
  }
  for (int32_t i = 0; i < g->nout; i++)
    if (first_out[g->outputs[i]] < 0)
      first_out[g->outputs[i]] = i;
  for (int32_t t = 0; t < g->nt; t++) {
    if (g->t[t].producer < 0 || first_out[t] >= 0)
      continue;
    woff[t] = total;
    int64_t bytes = mirs__shape_numel(&g->t[t].shape) * (g->t[t].dtype == MIRS_F32 ? 4 : 2);
    total += (bytes + 255) & ~(int64_t)255;
  }
  return total;
}

/* Pointer expression of kernel tensor t inside the entry point. */
static void tensor_ptr(const mirs_graph *g, int32_t t, const int64_t *woff, const int32_t *first_out,
                       char *buf, size_t size) {
  if (g->t[t].producer < 0)
    snprintf(buf, size, "in_%s", g->t[t].name);
  else if (first_out[t] >= 0)
    snprintf(buf, size, "out%d", (int)first_out[t]);
  else
    snprintf(buf, size, "(%s *)((char *)workspace + %" PRId64 ")", ctype(g->t[t].dtype), woff[t]);
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

/* Emit the CUDA C of g. */
mirs_status mirs__codegen_cuda(const mirs_graph *g, const char *entry, mirs__buf *b) {
  mirs_context *ctx = g->ctx;
  MIRS_CHECK(ctx, mirs__graph_validate(g));
  char ename[300];
  if (entry)
    snprintf(ename, sizeof ename, "%s", entry);
  else
    mirs__codegen_entry_name(g, ename, sizeof ename);
  int64_t *woff = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *woff);
  int32_t *first_out = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *first_out);
  int64_t *kbytes = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *kbytes);
  int64_t *scratch = mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *scratch);
  if (!woff || !first_out || !kbytes || !scratch) {
    mirs__core_free(ctx, woff);
    mirs__core_free(ctx, first_out);
    mirs__core_free(ctx, kbytes);
    mirs__core_free(ctx, scratch);
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  }
  int64_t wbytes = plan_workspace(g, woff, first_out);
  /* Tile storage of each custom kernel; global scratch where it exceeds
   * shared memory. */
  mirs_status s = MIRS_OK;
  for (int32_t i = 0; s == MIRS_OK && i < g->nops; i++) {
    scratch[i] = -1;
    if (g->ops[i].op != MIRS_OP_CUSTOM)
      continue;
    int64_t floats = 0;
    s = kernel_floats(g, i, &floats);
    kbytes[i] = floats * 4;
    if (kbytes[i] > SMEM_LIMIT) {
      const mirs__bgraph *bg = g->ops[i].bg;
      scratch[i] = wbytes;
      wbytes += ((int64_t)bg->grid[0] * bg->grid[1] * bg->grid[2] * kbytes[i] + 255) & ~(int64_t)255;
    }
  }
  if (s != MIRS_OK)
    goto done;
  mirs__buf_printf(b, "/* CUDA C for the µGraph %s, generated by mirsearch %s.\n", g->name,
                   mirs_version_string());
  mirs__buf_puts(b, " * Compiles with nvcc (sm_80 and later) or, with -DMIRS_HOST_EMULATION and\n"
                    " * mirsearch_emu.h, as host C++.  At the end: its C interface (the .h\n"
                    " * `mirsearch codegen -o` writes beside it) and the entry point. */\n");
  mirs__buf_puts(b, prelude);
  mirs__buf_puts(b, prelude_mma);
  for (int32_t i = 0; s == MIRS_OK && i < g->nops; i++) {
    if (g->ops[i].op == MIRS_OP_CUSTOM)
      s = emit_custom(g, i, ename, b, scratch[i] >= 0);
    else
      emit_predefined(g, i, ename, b);
  }
  if (s != MIRS_OK)
    goto done;

  /* Entry point: the interface, then its definition. */
  emit_interface(g, ename, b);
  mirs__buf_puts(b, entry_helpers);
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
  /* Kernel attributes: once per device (setting one twice is harmless, so
   * two threads racing on the first call only repeat the work). */
  bool attrs = false;
  for (int32_t i = 0; i < g->nops; i++)
    attrs = attrs || (g->ops[i].op == MIRS_OP_CUSTOM && scratch[i] < 0 && kbytes[i] > 48 * 1024);
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
      if (g->ops[i].op == MIRS_OP_CUSTOM && scratch[i] < 0 && kbytes[i] > 48 * 1024)
        mirs__buf_printf(b,
                         "        err = cudaFuncSetAttribute(%s_k%d, "
                         "cudaFuncAttributeMaxDynamicSharedMemorySize, %" PRId64 ");\n"
                         "        if (err != cudaSuccess) {\n"
                         "            (void)cudaGetLastError();\n"
                         "            return (int)err;\n        }\n",
                         ename, (int)i, kbytes[i]);
    mirs__buf_puts(b, "        if (flagged)\n"
                      "            attrs_set[dev].store(1, std::memory_order_release);\n    }\n");
  }
  /* Launches, each checked: no error was pending at the start, so the
   * first one seen is this launch's. */
  static const char check_launch[] = "    err = cudaGetLastError();\n"
                                     "    if (err != cudaSuccess)\n        return (int)err;\n";
  char ptr[400];
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *op = &g->ops[i];
    if (op->op == MIRS_OP_CUSTOM) {
      const mirs__bgraph *bg = op->bg;
      int64_t smem = scratch[i] >= 0 ? 0 : kbytes[i];
      mirs__buf_printf(b, "    MIRS_LAUNCH(%s_k%d, dim3(%d, %d, %d), dim3(%d, %d, %d), %" PRId64
                          ", stream, (",
                       ename, (int)i, bg->grid[0], bg->grid[1], bg->grid[2], bg->block[0], bg->block[1],
                       bg->block[2], smem);
    } else {
      mirs__buf_printf(b, "    MIRS_LAUNCH(%s_k%d, dim3(%" PRId64 "), dim3(256), 0, stream, (",
                       ename, (int)i, mirs__codegen_stride_blocks(mirs__shape_numel(&g->t[op->out[0]].shape)));
    }
    for (int32_t a = 0; a < op->nin; a++) {
      tensor_ptr(g, op->in[a], woff, first_out, ptr, sizeof ptr);
      mirs__buf_printf(b, "%s%s", a ? ", " : "", ptr);
    }
    for (int32_t a = 0; a < op->nout; a++) {
      tensor_ptr(g, op->out[a], woff, first_out, ptr, sizeof ptr);
      mirs__buf_printf(b, ", %s", ptr);
    }
    if (scratch[i] >= 0)
      mirs__buf_printf(b, ", (float *)((char *)workspace + %" PRId64 ")", scratch[i]);
    mirs__buf_puts(b, "));\n");
    mirs__buf_puts(b, check_launch);
  }
  /* Outputs that are inputs or listed twice are copies. */
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    if (first_out[t] == i && g->t[t].producer >= 0)
      continue;
    int64_t n = mirs__shape_numel(&g->t[t].shape);
    tensor_ptr(g, t, woff, first_out, ptr, sizeof ptr);
    mirs__buf_printf(b, "    MIRS_LAUNCH(mirs_copy<%s>, dim3(%" PRId64 "), dim3(256), 0, stream, (%s, out%d, %" PRId64
                        "LL));\n",
                     ctype(g->t[t].dtype), mirs__codegen_stride_blocks(n), ptr, (int)i, n);
    mirs__buf_puts(b, check_launch);
  }
  mirs__buf_puts(b, "    return MIRS_GEN_OK;\n}\n");
  if (b->failed)
    s = mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
done:
  mirs__core_free(ctx, woff);
  mirs__core_free(ctx, first_out);
  mirs__core_free(ctx, kbytes);
  mirs__core_free(ctx, scratch);
  return s;
}
