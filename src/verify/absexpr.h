/* SPDX-License-Identifier: MIT */
/* src/verify/absexpr.h - abstract expressions and their normal form, the
 * language in which pruning (prune.h) asks whether a new op can be a
 * subexpression of a reference output (docs/SEARCH.md, "Abstract-expression pruning").
 *
 * Every tensor carries an abstract expression over atoms (the program's
 * inputs, by name) built with + - · ÷, sum(k, x) (a sum over k elements),
 * rms(n, x) and the uninterpreted exp, sqrt, silu, gelu, relu.  A new op
 * survives when its expression can be a subexpression of some reference
 * output (a *target*) under the axioms listed in z3check.h.
 *
 * Normal form.  Expressions are kept hash-consed *in normal form*:
 *   POLY   a multiset of TERMs (the operands of a flattened +, sorted);
 *   TERM   sum(k, f1·…·fn) ÷ sum(kd, d1·…·dm): extents k, kd >= 1 and two
 *          sorted multisets of factors (numerator n >= 1, denominator m >= 0);
 *   factor ATOM(name) | APP(fn, POLY) | RMS(n, POLY) | BOX(POLY).
 * Products are distributed over sums, sums are pushed onto terms and
 * merged (sum(i, sum(j, x)) = sum(i·j, x), sum(1, x) = x), divisions by a
 * product become denominator factors.  Every normalisation step is an
 * instance of an axiom, so a normal form always denotes an equal
 * expression.  A BOX wraps what the form cannot canonicalise: a
 * denominator that is a sum of several terms or itself has a denominator,
 * or a product whose expansion would exceed MIRS__ABS_MAX_TERMS terms.
 * Without boxes the form is canonical (equal under the axioms <=> equal
 * normal form); nodes below a box carry `boxed` and are never used to
 * refute a candidate.
 *
 * Identity.  A node's hash is a function of its content only (never of
 * addresses or ids), so hashes agree across arenas, workers, ranks and
 * runs; the cache and the target index compare nodes by hash (a 64-bit
 * collision is the accepted risk).  Within one arena a node exists once.
 *
 * Arenas grow by doubling and release in LIFO order (mark/release), which
 * is what a depth-first search needs; ids stay valid until released.  An
 * arena is used by one thread at a time. */
#ifndef MIRS_VERIFY_ABSEXPR_H
#define MIRS_VERIFY_ABSEXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

/* ---------------------------------------------------------------- nodes */

typedef int32_t mirs__abs_id; /* a node in one arena; a POLY for expressions */
#define MIRS__ABS_NONE ((mirs__abs_id)-1)
/* A product with more terms than this is boxed rather than expanded. */
#define MIRS__ABS_MAX_TERMS 64
/* Bounds on what one expression may hold, so that no program makes the
 * normal form or a query exponential (a chain of n squares has 2^n
 * factors): a TERM with more numerator or denominator factors, or a POLY
 * with more terms, is not built: mirs__abs_apply yields MIRS__ABS_NONE
 * ("no expression"), which pruning always keeps, as it keeps an unknown.
 * An expression whose unfolded tree (node.size) exceeds
 * MIRS__ABS_MAX_QUERY is never put to the weight models or Z3 (kept). */
#define MIRS__ABS_MAX_FACTORS 1024
#define MIRS__ABS_MAX_POLY 1024
#define MIRS__ABS_MAX_QUERY 8192

typedef enum mirs__abs_kind {
  MIRS__ABS_ATOM,
  MIRS__ABS_APP,
  MIRS__ABS_RMS,
  MIRS__ABS_BOX,
  MIRS__ABS_TERM,
  MIRS__ABS_POLY
} mirs__abs_kind;

/* Uninterpreted unary function symbols (neg makes sub(x, y) = x + neg(y)). */
typedef enum mirs__abs_fn {
  MIRS__ABS_EXP,
  MIRS__ABS_SQRT,
  MIRS__ABS_SILU,
  MIRS__ABS_GELU,
  MIRS__ABS_RELU,
  MIRS__ABS_NEG,
  MIRS__ABS_MAX, /* max over a dim, extent-free (see mirs__abs_apply) */
  MIRS__ABS_MASK, /* causal_mask: its positions are not modelled (a function) */
  MIRS__ABS_SIGMOID,
  MIRS__ABS_TANH,
  MIRS__ABS_POW, /* pow by a constant that is not a small natural (any such exponent) */
  MIRS__ABS_CLAMP, /* clamp (any bounds) */
  MIRS__ABS_MIN, /* min over a dim, extent-free like max */
  MIRS__ABS_ABS, /* abs (uninterpreted) */
  MIRS__ABS_FN_COUNT
} mirs__abs_fn;

/* Symbol bits: which symbols occur below a node.  Each is invariant under
 * the axioms (every axiom has the same symbols on both sides, and a
 * subexpression has no symbol its context lacks), so a candidate with a
 * bit its target lacks is never a subexpression of it. */
#define MIRS__ABS_BIT_ADD (1u << 0) /* a sum of >= 2 terms */
#define MIRS__ABS_BIT_DIV (1u << 1) /* a denominator */
#define MIRS__ABS_BIT_SUM (1u << 2) /* an extent > 1 */
#define MIRS__ABS_BIT_RMS (1u << 3)
/* A division by a sum or by a quotient: a BOX among a term's denominator
 * factors (a BOX always holds a sum of >= 2 terms or a quotient).  No
 * axiom removes or creates one: x/z + y/z = (x+y)/z, x·(y/z) = (x·y)/z
 * and sum(i, x/y) = sum(i, x)/y keep the divisor z or y; x/(y·z) =
 * (x/y)/z divides by a sum or quotient on one side exactly when it does
 * on the other (y·z is one iff y or z is); the rest do not divide.  No
 * axiom turns a division by a quotient into a product (there is no
 * x/(y/z) = x·z/y), and none cancels. */
#define MIRS__ABS_BIT_QDIV (1u << 4)
#define MIRS__ABS_BIT_FN(f) (1u << (8 + (unsigned)(f)))

typedef struct mirs__abs_node {
  uint64_t hash;  /* content hash, arena independent */
  uint64_t atoms; /* Bloom set of the atoms below (bit = name hash % 64) */
  int64_t k;      /* TERM: numerator extent; RMS: n */
  int64_t kd;     /* TERM: denominator extent */
  int32_t arg;    /* APP, RMS, BOX: the argument POLY; else -1 */
  uint32_t off;   /* TERM: N then D in kids[off..]; POLY: terms; ATOM: name in chars */
  uint32_t n;     /* TERM: numerator factors; POLY: terms */
  uint32_t nd;    /* TERM: denominator factors */
  uint32_t bits;  /* MIRS__ABS_BIT_* below this node */
  uint32_t size;  /* nodes of the unfolded tree (saturating at UINT32_MAX) */
  int32_t next;   /* hash-cons chain */
  uint8_t kind;   /* mirs__abs_kind */
  uint8_t fn;     /* APP: mirs__abs_fn */
  bool boxed;     /* a BOX occurs at or below this node */
} mirs__abs_node;

typedef struct mirs__abs_arena {
  mirs_context *ctx;
  mirs__abs_node *nodes;
  int32_t nn;
  size_t capn;
  int32_t *kids; /* children lists, sorted by hash */
  uint32_t nkids;
  size_t capk;
  char *chars; /* atom names */
  uint32_t nchars;
  size_t capc;
  int32_t *buckets;  /* hash-cons chain heads; newest first */
  uint32_t nbuckets; /* power of two */
  int32_t *tmp;      /* scratch stack for the builders */
  size_t ntmp, captmp;
  bool failed_limit; /* an extent product overflowed (reported once) */
  bool too_large;    /* the last builder call hit a MIRS__ABS_MAX_* bound */
} mirs__abs_arena;

/* A point to return to with mirs__abs_release. */
typedef struct mirs__abs_mark {
  int32_t nn;
  uint32_t nkids, nchars;
} mirs__abs_mark;

/* Initialise an empty arena allocating through ctx. */
mirs_status mirs__abs_arena_init(mirs__abs_arena *a, mirs_context *ctx);
/* Free everything the arena holds. */
void mirs__abs_arena_free(mirs__abs_arena *a);
/* Remember the arena's current extent. */
mirs__abs_mark mirs__abs_mark_get(const mirs__abs_arena *a);
/* Drop every node created after m (ids from before m stay valid). */
void mirs__abs_release(mirs__abs_arena *a, mirs__abs_mark m);

/* Node by id (no check). */
static inline const mirs__abs_node *mirs__abs_node_at(const mirs__abs_arena *a, mirs__abs_id id) {
  return &a->nodes[id];
}
/* Canonical hash of expression e. */
static inline uint64_t mirs__abs_hash(const mirs__abs_arena *a, mirs__abs_id e) {
  return a->nodes[e].hash;
}
/* Name of an ATOM node. */
static inline const char *mirs__abs_atom_name(const mirs__abs_arena *a, mirs__abs_id id) {
  return a->chars + a->nodes[id].off;
}

/* ---------------------------------------------------------------- builders */

/* Each builder returns the POLY of the result in *out (hash-consed: equal
 * normal forms give equal ids).  MIRS_NOMEM, or MIRS_LIMIT when extents
 * overflow 64 bits, with the context's message set. */
mirs_status mirs__abs_atom(mirs__abs_arena *a, const char *name, mirs__abs_id *out);
mirs_status mirs__abs_add(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out);
mirs_status mirs__abs_sub(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out);
mirs_status mirs__abs_mul(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out);
mirs_status mirs__abs_div(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out);
mirs_status mirs__abs_app(mirs__abs_arena *a, mirs__abs_fn f, mirs__abs_id x, mirs__abs_id *out);
/* sum(k, x): x summed over k elements (k >= 1; k == 1 is x). */
mirs_status mirs__abs_sum(mirs__abs_arena *a, int64_t k, mirs__abs_id x, mirs__abs_id *out);
/* rms(n, x): root mean square over n elements (uninterpreted). */
mirs_status mirs__abs_rms(mirs__abs_arena *a, int64_t n, mirs__abs_id x, mirs__abs_id *out);

/* The expression of operator op on in[0..arity): MIRS__ABS_NONE when an
 * operand is MIRS__ABS_NONE or the result would exceed the bounds above
 * or an extent would overflow (no error then: an unknown).  extent is the matmul's
 * contracted extent, the summed extent (SUM), the normalised extent
 * (RMS_NORM), F (ACCUM), F·extent_d (ACCUM_SUM) or F·tile_last (ACCUM_RMS);
 * INPUT, OUTPUT and TRANSPOSE return in[0] (expressions carry no
 * indices).  MIRS_INVALID_ARG for CUSTOM.
 * max(x, dim) and accum_max(x, dim) are APP(max, x) whatever the extent,
 * with max(max(x)) = max(x): the max of tile maxes is the max (a max
 * over a subset nested in a max over the rest is the max over the
 * union, so a tile max and the row max have one expression);
 * min(x, dim) and accum_min(x, dim) are APP(min, x) likewise;
 * accum_online(y, m) is sum(F, y): the rescaling by exp(M_old - M_new)
 * turns the shifts exp(-m_i) of the iterations into the one shift
 * exp(-max), the program's (docs/SOUNDNESS.md, "max and online softmax").
 * So the shifted program and its online forms share one expression.
 * c: op's constants (mirs__op_nconst), each an ATOM named by its decimal
 * text (no tensor name starts with a digit or '-'); pow by a natural
 * 1..MIRS__ABS_POW_MAX is a product, any other exponent APP(POW). */
#define MIRS__ABS_POW_MAX 8
mirs_status mirs__abs_apply_c(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in,
                              int64_t extent, const mirs__scalar *c, mirs__abs_id *out);
/* The same without constants (MIRS_INVALID_ARG for an op that takes some). */
mirs_status mirs__abs_apply(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in, int64_t extent,
                            mirs__abs_id *out);

/* Whether x is the expression of a max: APP(max, ·) alone. */
bool mirs__abs_is_max(const mirs__abs_arena *a, mirs__abs_id x);

/* The extent mirs__abs_apply takes for block op `op` on a first operand of
 * shape s0 (NULL when it has none) reducing dim `dim`, in a block graph
 * whose forloop range is forloop. */
int64_t mirs__abs_bop_extent(mirs_op op, int dim, const mirs__shape *s0, int32_t forloop);

/* Expressions of graph tensors.  kexpr has one entry per kernel tensor of
 * g, bexpr one per block tensor of bg.  mirs__abs_graph fills every
 * kernel tensor (inputs are atoms named after them); mirs__abs_kop fills
 * the outputs of kernel op `op` from its inputs' entries (a CUSTOM op
 * evaluates its whole block graph); mirs__abs_bop fills block op `op`'s
 * result (INPUT reads kexpr[src], OUTPUT yields nothing). */
mirs_status mirs__abs_graph(mirs__abs_arena *a, const mirs_graph *g, mirs__abs_id *kexpr);
mirs_status mirs__abs_kop(mirs__abs_arena *a, const mirs_graph *g, int32_t op, mirs__abs_id *kexpr);
mirs_status mirs__abs_bop(mirs__abs_arena *a, const mirs__bgraph *bg, int32_t op,
                          const mirs__abs_id *kexpr, mirs__abs_id *bexpr);

/* Symbol counts (the node bound of the search).  A new op's expression
 * has at most one symbol node its operands lack: exp, sqrt, silu, gelu
 * and relu make one APP, sub one APP(neg), rms_norm and accum_rms one
 * RMS, an input one ATOM, and every other op only combines its operands'
 * nodes (boxes are not symbols).  So a candidate whose tensors hold fewer
 * distinct symbol nodes of some kind than an unboxed target needs at
 * least that many more ops to reach it.  Kinds: ATOM, RMS, APP(fn).
 * Constants' atoms are not counted (an op with a constant makes at most
 * one counted symbol: c - x makes APP(neg)). */
#define MIRS__ABS_SYM_ATOM 0
#define MIRS__ABS_SYM_RMS 1
#define MIRS__ABS_SYM_APP(f) (2 + (int)(f))
#define MIRS__ABS_NSYM (2 + MIRS__ABS_FN_COUNT)
/* Add to cnt[] the distinct symbol nodes, by kind, below the expressions
 * e[0..n) (MIRS__ABS_NONE entries skipped).  False when more than a few
 * thousand distinct nodes are met: cnt is then incomplete (callers treat
 * the counts as unknown). */
bool mirs__abs_count_symbols(const mirs__abs_arena *a, const mirs__abs_id *e, int32_t n,
                             uint32_t cnt[MIRS__ABS_NSYM]);

/* L(i) of the weight models (z3check.c): the prime factors of i below
 * 1000, counted with multiplicity (additive; i | j gives L(i) <= L(j)). */
int64_t mirs__abs_small_omega(int64_t i);

/* Readable text of expression e into b, e.g. "sum(64, W*X) / (rms(64, X))". */
void mirs__abs_print(const mirs__abs_arena *a, mirs__abs_id e, mirs__buf *b);

#endif
