/* SPDX-License-Identifier: MIT */
/* src/graph/graph.h - the µGraph IR shared by every module.
 *
 * Three levels (docs/FORMATS.md "µGraph files", docs/ARCHITECTURE.md):
 *  - kernel graph: mirs_graph holds kernel tensors (mirs__ktensor) and
 *    kernel ops (mirs__kop).  A kernel op is predefined (one library call)
 *    or MIRS_OP_CUSTOM, whose body is a block graph.
 *  - block graph (mirs__bgraph, one CUDA kernel): grid and block dims, a
 *    forloop range F, and block ops on tiles (mirs__bop / mirs__btensor).
 *    INPUT ops load a tile of a kernel tensor per forloop iteration: grid
 *    dim g partitions tensor dim imap[g] (-1 = replicated), the forloop
 *    walks dim fmap (-1 = none).  ACCUM* ops carry values across iterations;
 *    ops downstream of an accumulator run once after the loop ("post").
 *    OUTPUT ops store a post tile into a new kernel tensor: grid dim g
 *    partitions output dim omap[g] (-1 only where grid[g] == 1).
 *  - thread graph: an elementwise block op with `fused` set is computed in
 *    registers in the epilogue of its first argument's producer; maximal
 *    runs of fused ops are the thread graphs the codegen emits.
 *
 * Invariants (kept by the builder functions, checked by validate):
 *  - ids are indices; tensors are defined before use (ops are in a
 *    topological order: the order they were added);
 *  - every tensor has a unique non-empty name within its graph (block
 *    tensors within their block graph); the builder invents "tN"/"bN" names
 *    when given none;
 *  - a custom kop's in[] are the src of its INPUT ops in order, its out[]
 *    the dst of its OUTPUT ops in order;
 *  - shapes are normalised: sum dims are >= 0, every dim >= 1.
 * Ops may be removed only from the end (mirs__graph_pop_op), which is what
 * a depth-first search needs. */
#ifndef MIRS_GRAPH_GRAPH_H
#define MIRS_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "mirsearch/graph.h"

#define MIRS__GRID 3

typedef struct mirs__shape {
  int ndim;
  int64_t d[MIRS_MAX_DIMS];
} mirs__shape;

typedef enum mirs__op_kind {
  MIRS__KIND_UNARY,
  MIRS__KIND_BINARY,
  MIRS__KIND_MATMUL,
  MIRS__KIND_REDUCE,
  MIRS__KIND_RMSNORM,
  MIRS__KIND_CUSTOM,
  MIRS__KIND_INPUT,
  MIRS__KIND_OUTPUT,
  MIRS__KIND_ACCUM,
  MIRS__KIND_TRANSPOSE,
  MIRS__KIND_LAYOUT /* reshape, permute, slice: shape from the op's attribute (mirs__kop.lay) */
} mirs__op_kind;

typedef struct mirs__opinfo {
  const char *name;
  int arity; /* -1 variadic */
  int levels; /* MIRS_LEVEL_K | MIRS_LEVEL_B */
  mirs__op_kind kind;
} mirs__opinfo;

/* The operator table generated from ops.def (constant data). */
extern const mirs__opinfo mirs__graph_ops[MIRS_OP_COUNT];

static inline bool mirs__op_is_elementwise(mirs_op op) {
  mirs__op_kind k = mirs__graph_ops[op].kind;
  return k == MIRS__KIND_UNARY || k == MIRS__KIND_BINARY;
}

/* A constant operand or attribute (pow's exponent, clamp's bounds, the
 * scalar of the *_scalar ops): the exact decimal m * 10^e, kept
 * canonical (m not a multiple of 10 unless 0, e == 0 when m == 0) so two
 * equal values are equal structs; v is its nearest double.  An exact
 * rational with a denominator 2^i 5^j, so also a field element (the
 * fingerprints, docs/SOUNDNESS.md). */
typedef struct mirs__scalar {
  int64_t m;
  int32_t e;
  double v;
} mirs__scalar;
#define MIRS__SCALAR_EXP_MAX 300 /* |e| of a literal; beyond, the double is not finite */

/* Number of constants op takes (0 for most; graph.c). */
int mirs__op_nconst(mirs_op op);
/* Read the decimal s[0..len) ("-0.125", "1e-5", "3": an optional '-',
 * digits, an optional '.' and digits, an optional exponent) exactly into
 * *out.  0 on success, 1 more than 18 significant digits, 2 out of range
 * (not a finite double, or |exponent| past MIRS__SCALAR_EXP_MAX), 3 not a
 * decimal. */
int mirs__scalar_parse(const char *s, size_t len, mirs__scalar *out);
/* Make the canonical scalar m * 10^e; false when |e| is out of range. */
bool mirs__scalar_make(int64_t m, int32_t e, mirs__scalar *out);
/* The shortest decimal that reads back as the finite double v (at most 17
 * significant digits), canonical; false for a non-finite v.  Attributes
 * held as doubles (eps) become exact decimals through it, the same ones a
 * number operand written that way gives (docs/SOUNDNESS.md). */
bool mirs__scalar_of_double(double v, mirs__scalar *out);
/* Shortest exact decimal text of c ("0.125", "-1e-05" style never: "1e-5"). */
const char *mirs__scalar_str(const mirs__scalar *c, char *buf, size_t size);
/* c as a non-negative integer <= max into *n; false if it is not one. */
bool mirs__scalar_uint(const mirs__scalar *c, int64_t max, int64_t *n);
/* A hash of op's constants (0 when it has none). */
uint64_t mirs__op_const_hash(mirs_op op, const mirs__scalar *c);

/* add and mul: operand order is not structure (hash.c, the search). */
static inline bool mirs__op_is_commutative(mirs_op op) {
  return op == MIRS_OP_ADD || op == MIRS_OP_MUL;
}

/* layer_norm's default eps (PyTorch's nn.LayerNorm default). */
#define MIRS__LN_EPS 1e-5

/* Ops that carry an eps attribute (eps= in both formats): layer_norm
 * (default MIRS__LN_EPS), rms_norm (x / sqrt(mean(x^2) + eps)) and
 * accum_rms (sqrt(mean + eps)), both default 0, which is neither printed
 * nor hashed: the programs and µGraphs from before eps existed keep their
 * text and hashes. */
static inline bool mirs__op_has_eps(mirs_op op) {
  return op == MIRS_OP_LAYER_NORM || op == MIRS_OP_ACCUM_RMS || op == MIRS_OP_RMS_NORM;
}
/* The default eps of op (mirs__op_has_eps). */
static inline double mirs__op_eps_default(mirs_op op) {
  return op == MIRS_OP_LAYER_NORM ? MIRS__LN_EPS : 0.0;
}
/* Whether op's eps is written and hashed (not the default 0 of accum_rms
 * and rms_norm). */
static inline bool mirs__op_shows_eps(mirs_op op, double eps) {
  return mirs__op_has_eps(op) && (op == MIRS_OP_LAYER_NORM || eps != 0.0);
}

/* Whether op takes a reduced dim (`dim=`): the REDUCE kind and the
 * accumulators that reduce along a dim (accum_sum, accum_max, accum_min). */
static inline bool mirs__op_has_dim(mirs_op op) {
  return mirs__graph_ops[op].kind == MIRS__KIND_REDUCE || op == MIRS_OP_ACCUM_SUM ||
         op == MIRS_OP_ACCUM_MAX || op == MIRS_OP_ACCUM_MIN;
}

/* ---------------------------------------------------------------- block level */

typedef struct mirs__btensor {
  char *name;
  mirs__shape shape; /* tile shape */
  int32_t producer; /* block op index */
  bool post; /* available only after the forloop (downstream of an ACCUM) */
} mirs__btensor;

typedef struct mirs__bop {
  mirs_op op;
  int32_t nin;
  int32_t in[2]; /* block tensor ids (compute, ACCUM*, OUTPUT) */
  int32_t out; /* block tensor produced; -1 for OUTPUT */
  int32_t dim; /* mirs__op_has_dim ops: reduced dim (>= 0); else -1 */
  int32_t src; /* INPUT: kernel tensor loaded; else -1 */
  int32_t imap[MIRS__GRID]; /* INPUT: tensor dim per grid dim, -1 replicated */
  int32_t fmap; /* INPUT: tensor dim walked by the forloop, -1 none */
  int32_t omap[MIRS__GRID]; /* OUTPUT: output dim per grid dim, -1 none */
  int32_t dst; /* OUTPUT: kernel tensor written (set when the kop closes) */
  int32_t stored; /* OUTPUT: mirs_dtype the kernel tensor is stored in, or -1 for the
                     kernel's default (its first input's dtype); never equal to the default
                     once the kop closes, so the text and the hash have one spelling */
  bool fused; /* thread level: fused into in[0]'s producer's epilogue */
  double eps; /* mirs__op_has_eps: the constant added to the variance; else 0 */
  mirs__scalar cst[2]; /* constants of op (mirs__op_nconst); zero otherwise */
} mirs__bop;

typedef struct mirs__bgraph {
  int32_t grid[MIRS__GRID];
  int32_t block[MIRS__GRID];
  int32_t forloop; /* F >= 1 */
  mirs__btensor *t;
  int32_t nt;
  size_t capt;
  mirs__bop *ops;
  int32_t nops;
  size_t capops;
} mirs__bgraph;

/* ---------------------------------------------------------------- kernel level */

typedef struct mirs__ktensor {
  char *name;
  mirs_dtype dtype;
  mirs__shape shape;
  int32_t producer; /* kernel op index, -1 for a graph input */
  int32_t out_index; /* which output of the producer */
} mirs__ktensor;

typedef struct mirs__kop {
  mirs_op op;
  int32_t nin, nout;
  int32_t *in; /* kernel tensor ids */
  int32_t *out; /* kernel tensor ids */
  int32_t dim; /* SUM: reduced dim (>= 0); else -1 */
  double eps; /* mirs__op_has_eps: the constant added to the variance; else 0 */
  mirs__bgraph *bg; /* CUSTOM only (owned) */
  mirs__scalar cst[2]; /* constants of op (mirs__op_nconst); zero otherwise */
  /* LAYOUT ops: reshape's result shape (resolved, no -1), permute's dims
   * (d[i] = the input dim that result dim i is), slice's {dim, start, len}
   * (ndim 3, dim non-negative); ndim 0 for other ops, so
   * a memset or a {.op = ...} initialiser is a correct non-layout op. */
  mirs__shape lay;
} mirs__kop;

struct mirs_graph {
  mirs_context *ctx;
  char *name;
  bool ugraph; /* printed with the `ugraph` header */
  /* Set by a builder that keeps its own index of the names (the parser's
   * hash table): a given name is then not searched for (linearly) among
   * the tensors, which made parsing quadratic in the number of ops. */
  bool names_indexed;
  mirs__ktensor *t;
  int32_t nt;
  size_t capt;
  mirs__kop *ops;
  int32_t nops;
  size_t capops;
  int32_t *outputs;
  int32_t nout;
  size_t capout;
};

/* ---------------------------------------------------------------- shapes (shape.c) */

/* Infer the result shape of op on argument shapes in[0..nin) with reduced
 * dim `dim` (SUM/ACCUM_SUM; may be negative, normalised into *ndim_out).
 * Works for kernel and block ops except INPUT/OUTPUT/CUSTOM.  On error
 * returns false and writes a one-line reason (no trailing period) to why
 * (unless why is NULL: the search wants only the verdict, fast). */
bool mirs__shape_infer(mirs_op op, int nin, const mirs__shape *in, int dim, int *dim_out,
                       mirs__shape *out, char *why, size_t whysize);
/* Number of elements (saturates at INT64_MAX). */
int64_t mirs__shape_numel(const mirs__shape *s);
bool mirs__shape_eq(const mirs__shape *a, const mirs__shape *b);
/* "[2, 256, 64]" into buf. */
const char *mirs__shape_str(const mirs__shape *s, char *buf, size_t size);
/* Strides of in's dims as seen from out's (ranks aligned on the right);
 * 0 where in is missing or has size 1 (broadcast). */
void mirs__shape_bcast_strides(const mirs__shape *in, const mirs__shape *out,
                               int64_t st[MIRS_MAX_DIMS]);
/* The sum of x (shape xs, element type T) over dim `dim` into y (xs's
 * shape with size 1 at dim): added into y when `add` is set, else y is
 * overwritten; ADD(acc, v) adds element v into acc.  One loop for every
 * evaluator (the float64 interpreter's ev_sum, the fingerprints' fp_sum),
 * expanded with its element type and addition. */
#define MIRS__SUM_OVER_DIM(T, xs, x, dim, y, add, ADD)                                              \
  do {                                                                                             \
    int64_t outer_ = 1, inner_ = 1, red_ = (xs)->d[dim];                                           \
    for (int d_ = 0; d_ < (dim); d_++)                                                             \
      outer_ *= (xs)->d[d_];                                                                       \
    for (int d_ = (dim) + 1; d_ < (xs)->ndim; d_++)                                                \
      inner_ *= (xs)->d[d_];                                                                       \
    if (!(add))                                                                                    \
      memset((y), 0, (size_t)(outer_ * inner_) * sizeof *(y));                                     \
    for (int64_t o_ = 0; o_ < outer_; o_++) {                                                      \
      T *py_ = (y) + o_ * inner_;                                                                  \
      for (int64_t r_ = 0; r_ < red_; r_++) {                                                      \
        const T *px_ = (x) + (o_ * red_ + r_) * inner_;                                            \
        for (int64_t i_ = 0; i_ < inner_; i_++)                                                    \
          ADD(py_[i_], px_[i_]);                                                                   \
      }                                                                                            \
    }                                                                                              \
  } while (0)
/* y = causal_mask(x) over shape s (rank >= 2) with element type T: x[e]
 * where the global column is at most the global row + (n - m), `masked`
 * elsewhere; org = {row0, col0, m, n} places the tile (schedule.c), NULL
 * when x is the whole tensor.  One loop for every evaluator (the float64
 * interpreter with -inf, the fingerprints with their sentinel). */
#define MIRS__CAUSAL_MASK(T, s, org, x, y, masked)                                                 \
  do {                                                                                             \
    int r_ = (s)->ndim;                                                                            \
    int64_t m_ = (s)->d[r_ - 2], n_ = (s)->d[r_ - 1];                                              \
    int64_t o_[4] = {0, 0, m_, n_};                                                                \
    if (org)                                                                                       \
      memcpy(o_, (org), sizeof o_);                                                                \
    int64_t mats_ = mirs__shape_numel(s) / (m_ * n_);                                              \
    for (int64_t b_ = 0; b_ < mats_; b_++)                                                         \
      for (int64_t i_ = 0; i_ < m_; i_++)                                                          \
        for (int64_t j_ = 0; j_ < n_; j_++) {                                                      \
          int64_t e_ = (b_ * m_ + i_) * n_ + j_;                                                   \
          (y)[e_] = o_[1] + j_ <= o_[0] + i_ + o_[3] - o_[2] ? (x)[e_] : (masked);                 \
        }                                                                                          \
  } while (0)
/* y = x (shape xs, rank >= 2) with its last two dims swapped: the one
 * loop of every evaluator's transpose. */
#define MIRS__TRANSPOSE_LAST2(xs, x, y)                                                            \
  do {                                                                                             \
    int64_t r_ = (xs)->d[(xs)->ndim - 2], c_ = (xs)->d[(xs)->ndim - 1];                            \
    int64_t nb_ = mirs__shape_numel(xs) / (r_ * c_);                                               \
    for (int64_t b_ = 0; b_ < nb_; b_++)                                                           \
      for (int64_t i_ = 0; i_ < r_; i_++)                                                          \
        for (int64_t j_ = 0; j_ < c_; j_++)                                                        \
          (y)[b_ * r_ * c_ + j_ * r_ + i_] = (x)[b_ * r_ * c_ + i_ * c_ + j_];                     \
  } while (0)
/* Whether op is a layout op (reshape, permute, slice: mirs__kop.lay). */
static inline bool mirs__op_is_layout(mirs_op op) {
  return (unsigned)op < MIRS_OP_COUNT && mirs__graph_ops[op].kind == MIRS__KIND_LAYOUT;
}
/* The result shape of layout op `op` on x's shape xs with attribute lay as
 * written (reshape: dims >= 1 and at most one -1, inferred; permute: a
 * permutation, negative dims counted from the end; slice: {dim, start,
 * len}, dim negative from the end, 0 <= start, len >= 1, start + len <=
 * x's size along dim).  On success *lay_out is the resolved attribute (no
 * -1, dims non-negative) and *out the result shape; else false with a
 * one-line reason in why (a message of the .graph error table,
 * docs/FORMATS.md). */
bool mirs__shape_layout(mirs_op op, const mirs__shape *xs, const mirs__shape *lay,
                        mirs__shape *lay_out, mirs__shape *out, char *why, size_t whysize);
/* y = op(x) for a layout op with resolved attribute lay (xs: x's shape):
 * element e of the result is element src(e) of x, the exact index map of
 * every evaluator (float64 interpreter, fingerprints; the element type is
 * whatever x and y hold).  A reshape keeps the row-major order (src(e) =
 * e); a permute and a slice walk the result in row-major order with an
 * odometer over x's strides (a permute's taken in the order of lay, a
 * slice's in place, from the offset of its start along its dim). */
#define MIRS__LAYOUT_COPY(op, xs, lay, x, y)                                                       \
  do {                                                                                             \
    int64_t n_ = mirs__shape_numel(xs);                                                            \
    if ((op) == MIRS_OP_RESHAPE) {                                                                 \
      for (int64_t e_ = 0; e_ < n_; e_++)                                                          \
        (y)[e_] = (x)[e_];                                                                         \
      break;                                                                                       \
    }                                                                                              \
    int r_ = (xs)->ndim;                                                                           \
    int64_t st_[MIRS_MAX_DIMS], ost_[MIRS_MAX_DIMS], ext_[MIRS_MAX_DIMS], c_[MIRS_MAX_DIMS];       \
    for (int64_t d_ = r_ - 1, s_ = 1; d_ >= 0; s_ *= (xs)->d[d_], d_--)                            \
      st_[d_] = s_;                                                                                \
    int64_t src_ = 0;                                                                              \
    for (int d_ = 0; d_ < r_; d_++) {                                                              \
      bool sl_ = (op) == MIRS_OP_SLICE;                                                            \
      ost_[d_] = st_[sl_ ? d_ : (lay)->d[d_]];                                                     \
      ext_[d_] = sl_ && d_ == (lay)->d[0] ? (lay)->d[2] : (xs)->d[sl_ ? d_ : (lay)->d[d_]];        \
      c_[d_] = 0;                                                                                  \
    }                                                                                              \
    if ((op) == MIRS_OP_SLICE) {                                                                   \
      src_ = (lay)->d[1] * st_[(lay)->d[0]];                                                       \
      n_ = n_ / (xs)->d[(lay)->d[0]] * (lay)->d[2];                                                \
    }                                                                                              \
    for (int64_t e_ = 0; e_ < n_; e_++) {                                                          \
      (y)[e_] = (x)[src_];                                                                         \
      for (int d_ = r_ - 1; d_ >= 0; d_--) {                                                       \
        if (++c_[d_] < ext_[d_]) {                                                                 \
          src_ += ost_[d_];                                                                        \
          break;                                                                                   \
        }                                                                                          \
        src_ -= (ext_[d_] - 1) * ost_[d_];                                                         \
        c_[d_] = 0;                                                                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)
/* Offset of flat row `row` over dims [0, nd) of s with strides st. */
int64_t mirs__shape_row_offset(const mirs__shape *s, int nd, const int64_t *st, int64_t row);
/* Copy the tile of shape ts at off[] between a row-major tensor (shape ks,
 * buffer k) and a dense tile t of elem-byte elements (store: tile ->
 * tensor).  False when the tile does not lie inside the tensor.  Shared by
 * every evaluator (float64 interpreter, fingerprints). */
bool mirs__shape_copy_tile(const mirs__shape *ks, void *k, const mirs__shape *ts, void *t,
                           const int64_t off[MIRS_MAX_DIMS], size_t elem, bool store);

/* ---------------------------------------------------------------- builder (graph.c) */

/* Create an empty graph (name NULL: "program"). */
mirs_status mirs__graph_new(mirs_context *ctx, const char *name, mirs_graph **out);
void mirs__graph_free(mirs_graph *g);
/* Tensor id by name, or -1. */
int32_t mirs__graph_find(const mirs_graph *g, const char *name);
/* Add an input (dims checked against max_dims/max_elements). */
mirs_status mirs__graph_add_input(mirs_graph *g, const char *name, mirs_dtype dtype,
                                  const mirs__shape *shape, int32_t *out);
/* Add a predefined kernel op (not CUSTOM); dim used by SUM.  On a shape
 * error returns MIRS_SHAPE with the reason as the context's message. */
mirs_status mirs__graph_add_op(mirs_graph *g, const char *name, mirs_op op, int nin,
                               const int32_t *in, int dim, int32_t *out);
/* The same for an op with constants c[0..mirs__op_nconst(op)) (NULL for
 * none); mirs__graph_add_op refuses ops that take constants. */
mirs_status mirs__graph_add_op_c(mirs_graph *g, const char *name, mirs_op op, int nin,
                                 const int32_t *in, int dim, const mirs__scalar *c, int32_t *out);
/* Add layout op `op` (reshape, permute, slice) on x with its attribute lay as
 * written (mirs__shape_layout); the resolved attribute is kept in the
 * op's lay.  MIRS_SHAPE with the reason as the context's message. */
mirs_status mirs__graph_add_layout(mirs_graph *g, const char *name, mirs_op op, int32_t x,
                                   const mirs__shape *lay, int32_t *out);
/* Add a predefined op like k (its op, dim, constants, eps and layout) on inputs
 * in[0..k->nin): the one copy every rebuilder of a program uses, so an
 * attribute added to kernel ops is copied everywhere. */
mirs_status mirs__graph_copy_op(mirs_graph *g, const char *name, const mirs__kop *k,
                                const int32_t *in, int32_t *out);
mirs_status mirs__graph_mark_output(mirs_graph *g, int32_t t);
/* Remove the last kernel op and its result tensors (and outputs marking
 * them).  No-op on an empty graph. */
void mirs__graph_pop_op(mirs_graph *g);
/* Fold every spelled-out LayerNorm (mean, sub, square, mean, sqrt, div over
 * the last dim) into layer_norm(X, eps), and every spelled-out RMSNorm
 * (square, mean, sqrt, div, or a multiply by div(1, .)) into rms_norm(X,
 * eps) (fold.c): *out is a new graph, or NULL when nothing folds. */
mirs_status mirs__graph_fold_norms(const mirs_graph *g, mirs_graph **out);
/* Deep copy. */
mirs_status mirs__graph_clone(const mirs_graph *g, mirs_graph **out);
/* The same, the copy owned by ctx (a worker's graph into the search's). */
mirs_status mirs__graph_clone_in(mirs_context *ctx, const mirs_graph *g, mirs_graph **out);

/* Custom kernels: create a block graph, fill it with mirs__bg_* calls, then
 * attach it with mirs__graph_add_custom, which takes ownership (also on
 * failure) and creates one kernel tensor per OUTPUT op, named names[i]
 * (NULL entries or names == NULL: fresh names). */
mirs_status mirs__bg_new(mirs_context *ctx, const int32_t grid[MIRS__GRID],
                         const int32_t block[MIRS__GRID], int32_t forloop, mirs__bgraph **out);
void mirs__bg_free(mirs_context *ctx, mirs__bgraph *bg);
/* Load kernel tensor src of g as a tile; checks imap/fmap against the
 * tensor's rank, distinctness and exact divisibility. */
mirs_status mirs__bg_add_input(mirs_graph *g, mirs__bgraph *bg, const char *name, int32_t src,
                               const int32_t imap[MIRS__GRID], int32_t fmap, int32_t *out);
/* A compute or ACCUM* op on block tensors.  Checks shapes, the loop/post
 * phase rules (no mixing; ACCUM takes a per-iteration value and yields a
 * post one) and that `fused` is only set on elementwise ops. */
mirs_status mirs__bg_add_op(mirs_graph *g, mirs__bgraph *bg, const char *name, mirs_op op, int nin,
                            const int32_t *in, int dim, bool fused, int32_t *out);
/* The same for an op with constants c (see mirs__graph_add_op_c). */
mirs_status mirs__bg_add_op_c(mirs_graph *g, mirs__bgraph *bg, const char *name, mirs_op op,
                              int nin, const int32_t *in, int dim, bool fused,
                              const mirs__scalar *c, int32_t *out);
/* Store post tile t via omap; the kernel tensor is made by add_custom. */
mirs_status mirs__bg_add_output(mirs_graph *g, mirs__bgraph *bg, int32_t t,
                                const int32_t omap[MIRS__GRID]);
/* As mirs__bg_add_output, storing the kernel tensor as `stored` (a
 * mirs_dtype, or -1 for the kernel's default: `output(t, omap=..,
 * dtype=f32)`, docs/FORMATS.md). */
mirs_status mirs__bg_add_output_dt(mirs_graph *g, mirs__bgraph *bg, int32_t t,
                                   const int32_t omap[MIRS__GRID], int32_t stored);
void mirs__bg_pop_op(mirs_context *ctx, mirs__bgraph *bg);
/* Deep copy of a block graph (names included). */
mirs_status mirs__bg_clone(mirs_context *ctx, const mirs__bgraph *src, mirs__bgraph **out);
mirs_status mirs__graph_add_custom(mirs_graph *g, mirs__bgraph *bg, const char *const *names,
                                   int32_t *first_out);
/* Block tensor id by name within bg, or -1. */
int32_t mirs__bg_find(const mirs__bgraph *bg, const char *name);
/* Shape of the kernel tensor OUTPUT op `op` of bg writes. */
void mirs__bg_output_shape(const mirs__bgraph *bg, const mirs__bop *op, mirs__shape *out);

/* True when bg's op/tensor references, ranks and accumulator shapes are
 * consistent (always so for graphs made by the builder); else false with
 * the first bad op in *bad_op.  Evaluators call it before indexing. */
bool mirs__bg_well_formed(const mirs_graph *g, const mirs__bgraph *bg, int32_t *bad_op);

/* Whole-graph check: every custom op's block graph is complete (has an
 * output, every output is post), thread-graph fusion is well formed
 * (in[0]'s producer is a compute op whose only consumer is the fused op),
 * every output is marked.  MIRS_SHAPE/MIRS_INVALID_ARG with a message. */
mirs_status mirs__graph_validate(const mirs_graph *g);

/* ---------------------------------------------------------------- schedule (schedule.c) */

/* The block-graph schedule, written once for every executor of a custom
 * kernel (the float64 interpreter, the codegen): for each grid block,
 * accumulators start at zero (ZERO steps), then F forloop iterations run
 * the `loop` steps (LOAD tiles, COMPUTE per-iteration ops, ACCUMulate),
 * then the `post` steps run once (FINISH an RMS accumulator, COMPUTE post
 * ops, STORE outputs).  Steps are in op order within each phase. */
typedef enum mirs__step_kind {
  MIRS__STEP_ZERO,
  MIRS__STEP_LOAD,
  MIRS__STEP_COMPUTE,
  MIRS__STEP_ACCUM,
  MIRS__STEP_FINISH,
  MIRS__STEP_STORE
} mirs__step_kind;

typedef struct mirs__step {
  mirs__step_kind kind;
  int32_t op; /* block op index */
} mirs__step;

typedef struct mirs__sched {
  mirs__step *step; /* init, then loop, then post steps */
  int32_t ninit, nloop, npost;
} mirs__sched;

/* The step kind block op i takes in phase (0 init, 1 loop, 2 post), or -1:
 * the one classification behind both functions below. */
int mirs__sched_classify(const mirs__bgraph *bg, int32_t i, int phase);
/* Build the schedule of bg as step lists (allocated from ctx; the codegen). */
mirs_status mirs__sched_build(mirs_context *ctx, const mirs__bgraph *bg, mirs__sched *out);
void mirs__sched_free(mirs_context *ctx, mirs__sched *s);
static inline const mirs__step *mirs__sched_init(const mirs__sched *s) {
  return s->step;
}
static inline const mirs__step *mirs__sched_loop(const mirs__sched *s) {
  return s->step + s->ninit;
}
static inline const mirs__step *mirs__sched_post(const mirs__sched *s) {
  return s->step + s->ninit + s->nloop;
}
/* How tile dim d of an INPUT op's tile (or of an OUTPUT op's stored tile)
 * is placed in its kernel tensor: offset = b[grid] * gunit_d when grid >=
 * 0, plus f * tile_d when forloop is set (INPUT only).  gunit_d is tile_d,
 * or tile_d * F when the forloop walks dim d too: the grid then picks a
 * chunk of F tiles and the forloop walks the tiles of the chunk (split-K,
 * docs/FORMATS.md). */
typedef struct mirs__tile_place {
  int grid[MIRS_MAX_DIMS]; /* grid dim partitioning tensor dim d, or -1 */
  bool forloop[MIRS_MAX_DIMS];
  int64_t gunit[MIRS_MAX_DIMS]; /* elements from one grid block to the next along d */
} mirs__tile_place;
void mirs__sched_place(const mirs__bgraph *bg, const mirs__bop *op, mirs__tile_place *p);
/* Element offsets of the tile of INPUT/OUTPUT op for block b, iteration f. */
void mirs__sched_offsets(const mirs__bgraph *bg, const mirs__bop *op, const int32_t b[MIRS__GRID],
                         int32_t f, int64_t off[MIRS_MAX_DIMS]);
/* Where dim d of a block tile sits in the kernel tensor it comes from:
 * element i of the tile is element off + i of a kernel dim of `extent`
 * elements, off = b[grid] * gunit (grid >= 0) + f * unit (forloop).  A
 * causal_mask in a block graph masks by these global positions, so it
 * computes the kernel-level mask of the tensor its tile is part of. */
typedef struct mirs__dim_origin {
  int32_t grid;   /* grid dim placing it, or -1 */
  bool forloop;   /* the forloop places it too (loop-phase tiles only) */
  int64_t unit;   /* the tile extent along it */
  int64_t extent; /* the kernel tensor's extent along it */
  int64_t gunit;  /* elements per grid block (unit, or unit * F when both place it) */
} mirs__dim_origin;
/* The origin of dim d of block tensor t, traced through its producers to
 * the loaded tiles (matmul rows from A, columns from B; broadcast dims
 * from the operand that has them; a transpose's last two from its
 * operand's, swapped; reduced dims have none); false when it
 * is not one place (operands from different places, or a sum over the
 * forloop of differently placed tiles). */
bool mirs__sched_dim_origin(const mirs_graph *g, const mirs__bgraph *bg, int32_t t, int d,
                            mirs__dim_origin *o);
/* Whether block op `op` (a causal_mask) has known origins of its rows and
 * columns: the condition for adding one to a block graph. */
bool mirs__sched_mask_placed(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op);
/* The causal-mask frame of op's tile in block b, iteration f: org[0],
 * org[1] the global row and column of its element (0, 0), org[2], org[3]
 * the global row and column counts m and n (an element at global (i, j)
 * is kept iff j <= i + n - m).  False when not placed. */
bool mirs__sched_mask_frame(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op,
                            const int32_t b[MIRS__GRID], int32_t f, int64_t org[4]);
/* The divisor of an ACCUM_RMS op: elements summed per row over the loop. */
double mirs__sched_rms_count(const mirs__bgraph *bg, const mirs__bop *op);

/* Elements an executor keeps for block tensor t: its tile, and for an
 * ACCUM_ONLINE result a second tile of the same shape after it holding the
 * running max M per element (the accumulator's loop-carried shift). */
static inline int64_t mirs__sched_state_numel(const mirs__bgraph *bg, int32_t t) {
  int64_t n = mirs__shape_numel(&bg->t[t].shape);
  int32_t p = bg->t[t].producer;
  return p >= 0 && bg->ops[p].op == MIRS_OP_ACCUM_ONLINE ? 2 * n : n;
}
/* Offset of element e of a tile of shape ys in a tile of shape xs that
 * broadcasts to it (equal ranks, size-1 dims repeat). */
static inline int64_t mirs__shape_bcast_index(const mirs__shape *xs, const mirs__shape *ys,
                                              int64_t e) {
  int64_t off = 0, stride = 1;
  for (int d = ys->ndim - 1; d >= 0; d--) {
    int64_t i = e % ys->d[d];
    e /= ys->d[d];
    if (xs->d[d] != 1)
      off += i * stride;
    stride *= xs->d[d];
  }
  return off;
}

/* Executor callbacks of mirs__sched_run; a non-OK status stops the run. */
typedef struct mirs__sched_exec {
  mirs_status (*zero)(void *user, const mirs__bop *op);
  mirs_status (*load)(void *user, const mirs__bop *op, const int64_t off[MIRS_MAX_DIMS]);
  mirs_status (*compute)(void *user, const mirs__bop *op);
  mirs_status (*accum)(void *user, const mirs__bop *op);
  mirs_status (*finish)(void *user, const mirs__bop *op);
  mirs_status (*store)(void *user, const mirs__bop *op, const int64_t off[MIRS_MAX_DIMS]);
  /* Optional: told the block b and iteration f (0 outside the loop)
   * before each phase runs, for the position-dependent ops (causal_mask). */
  void (*at)(void *user, const int32_t b[MIRS__GRID], int32_t f);
} mirs__sched_exec;
/* Run the schedule over the grid blocks below grid_end (NULL: every
 * block; x fastest) and every iteration, allocating nothing (the float64
 * interpreter, the CPU fingerprints). */
mirs_status mirs__sched_run(const mirs__bgraph *bg, const int32_t *grid_end,
                            const mirs__sched_exec *x, void *user);

/* ---------------------------------------------------------------- identity (hash.c) */

/* Canonical hash, independent of op insertion order and of intermediate
 * names (input and output names count). */
uint64_t mirs__graph_hash(const mirs_graph *g);
/* Structural hash of one kernel tensor (Merkle over its producers). */
uint64_t mirs__graph_tensor_hash(const mirs_graph *g, int32_t t);
/* Structural hash of block tensor t of bg (tiles of g's kernel tensors). */
uint64_t mirs__graph_btensor_hash(const mirs_graph *g, const mirs__bgraph *bg, int32_t t);

/* ---------------------------------------------------------------- text (parse.c, print.c) */

mirs_status mirs__graph_parse(mirs_context *ctx, const char *text, size_t len, const char *filename,
                              mirs_graph **out);
/* Canonical text into b. */
void mirs__graph_print(const mirs_graph *g, mirs__buf *b);

/* ---------------------------------------------------------------- evaluation (interp.c) */

/* Evaluate every kernel tensor of g in float64: vals[t] gets a buffer of
 * numel(t) doubles (free each with mirs__core_free, then the array).
 * Inputs are mirs_input_value(seed, name, element).  MIRS_LIMIT if the
 * total element count exceeds the eval_max_elements option. */
mirs_status mirs__interp_run(const mirs_graph *g, uint64_t seed, double ***vals);
void mirs__interp_free(const mirs_graph *g, double **vals);
/* An eval result with copies of g's outputs (outvals[i]: output i's values). */
mirs_status mirs__eval_result_make(const mirs_graph *g, const double *const *outvals,
                                   mirs_eval_result **out);
/* max |a - b| / max |a| per same-named output, the largest over outputs
 * (NaN against a number: infinity). */
double mirs__eval_max_rel_error(const mirs_eval_result *ref, const mirs_eval_result *cand);
/* Fill out[0..n) with scale * mirs_input_value(seed, name, 0..n), hashing
 * name once (scale: the option input_scale, 1 by default). */
void mirs__graph_input_fill(uint64_t seed, const char *name, double *out, int64_t n,
                            double scale);

/* Estimated work of evaluating g once, in element operations (a matmul
 * m*n*k, a custom kernel every block and iteration), saturating. */
uint64_t mirs__graph_work(const mirs_graph *g);
/* Most (grid block, forloop iteration) pairs of one custom kernel. */
#define MIRS__MAX_BLOCK_ITERATIONS (UINT64_C(1) << 32)
/* Longest name (tensor or program) the parser accepts, in bytes. */
#define MIRS__NAME_MAX 256
/* Whether s is a valid name: [A-Za-z_][A-Za-z0-9_]*, at most
 * MIRS__NAME_MAX bytes, not a keyword. */
bool mirs__graph_valid_name(const char *s);

#endif
