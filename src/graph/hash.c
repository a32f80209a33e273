/* SPDX-License-Identifier: MIT */
/* src/graph/hash.c - canonical structural hashes of kernel tensors and of
 * whole µGraphs, used to deduplicate found graphs and to key caches.
 *
 * Scheme (every value goes through mirs__hash_mix, never addresses/time):
 *  - graph input tensor: (TAG_INPUT, name, dtype, rank, dims);
 *  - predefined kernel op: (TAG_KOP, op, dim, [constants,] nin, argument hashes in
 *    argument order); its result tensor: (TAG_KT, op hash, 0);
 *  - custom kernel op: the hash of its block graph, (TAG_BG, grid, block,
 *    forloop, number of block ops, multiset of all block-op hashes); its
 *    i-th result tensor: (TAG_KT, block graph hash, hash of the i-th
 *    OUTPUT op), so the order of OUTPUT ops inside the block graph does not
 *    matter, only which output feeds which consumer;
 *  - block ops, Merkle over block tensors: INPUT (TAG_BIN, hash of the
 *    kernel tensor loaded, imap, fmap) - this is also its tile's hash, so
 *    the custom op's argument order does not count; compute and ACCUM*
 *    ops (TAG_BOP, op, dim, [constants,] fused, nin, argument hashes in order, except
 *    that the two arguments of an unfused add or mul are sorted); OUTPUT
 *    (TAG_BOUT, omap, argument hash);
 *  - graph: (TAG_GRAPH, number of outputs, each output's name and tensor
 *    hash in output order, number of inputs, multiset of input hashes,
 *    number of kernel ops, multiset of kernel-op hashes).  The multisets
 *    make unused inputs and dead ops count without depending on the order
 *    they were added.
 * A multiset is combined as the wrapping sum of a finaliser (splitmix64's)
 * applied to each element: equal to sorting the element hashes and mixing
 * them, as far as collisions go, and needs no allocation.
 * Intermediate tensor names (kernel and block), the graph's name and its
 * program/ugraph flag never count.  Operand order counts for every op but
 * add and mul: add(a, b) and add(b, a) are one graph.  A fused add or mul
 * keeps its order, because thread-level fusion chains through in[0]: which
 * operand stays in registers is structure.  The value is stable across runs and platforms: tests pin one
 * literal, which must change only when the scheme is changed deliberately.
 *
 * Invariants: ops are in topological order (graph.h), so hashing ops in
 * order with a memo table never recurses more than one level; the memo
 * lives on the stack for ordinary graphs and on the context's allocator
 * for very large ones, and without memory the hash is still computed, by
 * plain recursion.  A memo entry of 0 means "not yet computed"; a hash that
 * comes out 0 is replaced by 1. */
#include <string.h>

#include "graph/graph.h"

#define TAG_INPUT UINT64_C(0x6d697273496e7074) /* "mirsInpt" */
#define TAG_KOP UINT64_C(0x6d6972734b4f7021)
#define TAG_KT UINT64_C(0x6d697273546e7372)
#define TAG_BG UINT64_C(0x6d69727342477266)
#define TAG_BIN UINT64_C(0x6d69727342496e21)
#define TAG_BOP UINT64_C(0x6d697273424f7021)
#define TAG_BOUT UINT64_C(0x6d697273424f7574)
#define TAG_GRAPH UINT64_C(0x6d69727347726168)

/* Memo tables up to this many entries live on the stack. */
#define STACK_MEMO 512

/* Mix a signed value (ids, -1 markers) into h. */
static uint64_t mix_i(uint64_t h, int64_t v) {
  return mirs__hash_mix(h, (uint64_t)v);
}

/* Mix an eps attribute (its bits; +0.0 and -0.0 are one value). */
static uint64_t mix_eps(uint64_t h, double eps) {
  uint64_t bits = 0;
  if (eps != 0.0)
    memcpy(&bits, &eps, sizeof bits);
  return mirs__hash_mix(h, bits);
}

/* splitmix64's finaliser: spreads one element hash before multiset sums. */
static uint64_t fin(uint64_t x) {
  return mirs__hash_fin(x);
}

/* Never 0, so 0 can mark an empty memo entry. */
static uint64_t nonzero(uint64_t h) {
  return h ? h : 1;
}

/* Memo for one hashing pass over a kernel graph: tensor hashes, then
 * kernel-op hashes; NULL when no memory could be had. */
typedef struct kmemo {
  uint64_t *t; /* [g->nt] */
  uint64_t *op; /* [g->nops] */
} kmemo;

static uint64_t ktensor_hash(const mirs_graph *g, int32_t t, const kmemo *m);

/* Hash of a graph input tensor: its name, dtype and shape. */
static uint64_t input_hash(const mirs__ktensor *kt) {
  uint64_t h = mirs__hash_mix(0, TAG_INPUT);
  h = mirs__hash_str(h, kt->name ? kt->name : "");
  h = mix_i(h, kt->dtype);
  h = mix_i(h, kt->shape.ndim);
  for (int d = 0; d < kt->shape.ndim; d++)
    h = mix_i(h, kt->shape.d[d]);
  return nonzero(h);
}

/* Hash of block tensor bt of bg: the hash of the op producing it (memo bm
 * may be NULL). */
static uint64_t btensor_hash(const mirs_graph *g, const mirs__bgraph *bg, int32_t bt,
                             uint64_t *bm, const kmemo *m);

/* Hash of block op i of bg (for INPUT and compute ops also the hash of
 * the tile it produces). */
static uint64_t bop_hash(const mirs_graph *g, const mirs__bgraph *bg, int32_t i, uint64_t *bm,
                         const kmemo *m) {
  const mirs__bop *op = &bg->ops[i];
  mirs__op_kind kind = mirs__graph_ops[op->op].kind;
  uint64_t h;
  if (kind == MIRS__KIND_INPUT) {
    h = mirs__hash_mix(0, TAG_BIN);
    h = mirs__hash_mix(h, ktensor_hash(g, op->src, m));
    for (int gd = 0; gd < MIRS__GRID; gd++)
      h = mix_i(h, op->imap[gd]);
    h = mix_i(h, op->fmap);
  } else if (kind == MIRS__KIND_OUTPUT) {
    h = mirs__hash_mix(0, TAG_BOUT);
    for (int gd = 0; gd < MIRS__GRID; gd++)
      h = mix_i(h, op->omap[gd]);
    if (op->stored >= 0) /* (absent by default: older hashes stay valid) */
      h = mix_i(h, 0x5700 + op->stored);
    h = mirs__hash_mix(h, btensor_hash(g, bg, op->in[0], bm, m));
  } else {
    h = mirs__hash_mix(0, TAG_BOP);
    h = mix_i(h, op->op);
    h = mix_i(h, op->dim);
    if (mirs__op_nconst(op->op) > 0) /* (absent otherwise: older hashes stay valid) */
      h = mirs__hash_mix(h, mirs__op_const_hash(op->op, op->cst));
    h = mix_i(h, op->fused ? 1 : 0);
    if (mirs__op_shows_eps(op->op, op->eps))
      h = mix_eps(h, op->eps);
    h = mix_i(h, op->nin);
    uint64_t ah[2] = {0, 0};
    for (int a = 0; a < op->nin && a < 2; a++)
      ah[a] = btensor_hash(g, bg, op->in[a], bm, m);
    if (op->nin == 2 && mirs__op_is_commutative(op->op) && !op->fused && ah[1] < ah[0]) {
      uint64_t t = ah[0];
      ah[0] = ah[1];
      ah[1] = t;
    }
    for (int a = 0; a < op->nin && a < 2; a++)
      h = mirs__hash_mix(h, ah[a]);
  }
  return nonzero(h);
}

static uint64_t btensor_hash(const mirs_graph *g, const mirs__bgraph *bg, int32_t bt,
                             uint64_t *bm, const kmemo *m) {
  if (bt < 0 || bt >= bg->nt)
    return 1;
  if (bm && bm[bt])
    return bm[bt];
  int32_t p = bg->t[bt].producer;
  uint64_t h = (p >= 0 && p < bg->nops) ? bop_hash(g, bg, p, bm, m) : 1;
  if (bm)
    bm[bt] = h;
  return h;
}

/* Hash of a block graph: its launch shape and the multiset of its ops.
 * If out_index >= 0, also returns in *out_hash the hash of the kernel
 * tensor written by its out_index-th OUTPUT op. */
static uint64_t bgraph_hash(const mirs_graph *g, const mirs__bgraph *bg, const kmemo *m,
                            int32_t out_index, uint64_t *out_hash) {
  uint64_t stack[STACK_MEMO];
  uint64_t *bm = NULL, *heap = NULL;
  if (bg->nt <= STACK_MEMO) {
    bm = stack;
  } else {
    heap = mirs__core_calloc(g->ctx, (size_t)bg->nt, sizeof *heap);
    bm = heap;
  }
  if (bm)
    memset(bm, 0, (size_t)bg->nt * sizeof *bm);

  uint64_t sum = 0, outh = 1;
  int32_t seen = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    uint64_t oh = bop_hash(g, bg, i, bm, m);
    const mirs__bop *op = &bg->ops[i];
    if (bm && op->out >= 0 && op->out < bg->nt && mirs__graph_ops[op->op].kind != MIRS__KIND_OUTPUT)
      bm[op->out] = oh;
    if (mirs__graph_ops[op->op].kind == MIRS__KIND_OUTPUT && seen++ == out_index)
      outh = oh;
    sum += fin(oh);
  }
  mirs__core_free(g->ctx, heap);

  uint64_t h = mirs__hash_mix(0, TAG_BG);
  for (int gd = 0; gd < MIRS__GRID; gd++)
    h = mix_i(h, bg->grid[gd]);
  for (int gd = 0; gd < MIRS__GRID; gd++)
    h = mix_i(h, bg->block[gd]);
  h = mix_i(h, bg->forloop);
  h = mix_i(h, bg->nops);
  h = mirs__hash_mix(h, sum);
  h = nonzero(h);
  if (out_hash)
    *out_hash = outh;
  return h;
}

/* Hash of kernel op k (memoised in m when there is one). */
static uint64_t kop_hash(const mirs_graph *g, int32_t k, const kmemo *m) {
  if (m && m->op[k])
    return m->op[k];
  const mirs__kop *op = &g->ops[k];
  uint64_t h;
  if (op->op == MIRS_OP_CUSTOM && op->bg) {
    h = bgraph_hash(g, op->bg, m, -1, NULL);
  } else {
    h = mirs__hash_mix(0, TAG_KOP);
    h = mix_i(h, op->op);
    h = mix_i(h, op->dim);
    if (mirs__op_shows_eps(op->op, op->eps))
      h = mix_eps(h, op->eps);
    if (mirs__op_nconst(op->op) > 0)
      h = mirs__hash_mix(h, mirs__op_const_hash(op->op, op->cst));
    for (int d = 0; mirs__op_is_layout(op->op) && d < op->lay.ndim; d++)
      h = mix_i(h, op->lay.d[d]); /* (a reshape's shape, a permute's dims, a slice's) */
    h = mix_i(h, op->nin);
    if (op->nin == 2 && mirs__op_is_commutative(op->op)) {
      uint64_t a0 = ktensor_hash(g, op->in[0], m), a1 = ktensor_hash(g, op->in[1], m);
      h = mirs__hash_mix(h, a0 < a1 ? a0 : a1);
      h = mirs__hash_mix(h, a0 < a1 ? a1 : a0);
    } else {
      for (int32_t a = 0; a < op->nin; a++)
        h = mirs__hash_mix(h, ktensor_hash(g, op->in[a], m));
    }
  }
  h = nonzero(h);
  if (m)
    m->op[k] = h;
  return h;
}

static uint64_t ktensor_hash(const mirs_graph *g, int32_t t, const kmemo *m) {
  if (t < 0 || t >= g->nt)
    return 1;
  if (m && m->t[t])
    return m->t[t];
  const mirs__ktensor *kt = &g->t[t];
  uint64_t h;
  if (kt->producer < 0 || kt->producer >= g->nops) {
    h = input_hash(kt);
  } else {
    const mirs__kop *op = &g->ops[kt->producer];
    h = mirs__hash_mix(0, TAG_KT);
    if (op->op == MIRS_OP_CUSTOM && op->bg) {
      uint64_t outh = 1;
      uint64_t bh = bgraph_hash(g, op->bg, m, kt->out_index, &outh);
      if (m)
        m->op[kt->producer] = bh;
      h = mirs__hash_mix(h, bh);
      h = mirs__hash_mix(h, outh);
    } else {
      h = mirs__hash_mix(h, kop_hash(g, kt->producer, m));
      h = mix_i(h, kt->out_index);
    }
    h = nonzero(h);
  }
  if (m)
    m->t[t] = h;
  return h;
}

/* Set up and fill a memo for g, in stack (STACK_MEMO entries) or on the
 * heap (*heap gets what must be freed, else NULL).  Returns the memo, or
 * NULL when no memory could be had (hashing then recurses without one). */
static kmemo *memo_init(const mirs_graph *g, kmemo *m, uint64_t *stack, uint64_t **heap) {
  size_t n = (size_t)g->nt + (size_t)g->nops;
  uint64_t *p = stack;
  *heap = NULL;
  if (n > STACK_MEMO) {
    p = mirs__core_calloc(g->ctx, n, sizeof *p);
    if (!p)
      return NULL;
    *heap = p;
  }
  memset(p, 0, n * sizeof *p);
  m->t = p;
  m->op = p + g->nt;
  /* Fill in topological order so no call recurses deeply. */
  for (int32_t i = 0; i < g->nt; i++)
    if (g->t[i].producer < 0)
      (void)ktensor_hash(g, i, m);
  for (int32_t k = 0; k < g->nops; k++)
    for (int32_t o = 0; o < g->ops[k].nout; o++)
      (void)ktensor_hash(g, g->ops[k].out[o], m);
  return m;
}

/* Structural hash of kernel tensor t of g (0 for a bad id). */
uint64_t mirs__graph_tensor_hash(const mirs_graph *g, int32_t t) {
  if (!g || t < 0 || t >= g->nt)
    return 0;
  uint64_t stack[STACK_MEMO], *heap;
  kmemo mem;
  const kmemo *m = memo_init(g, &mem, stack, &heap);
  uint64_t h = ktensor_hash(g, t, m);
  mirs__core_free(g->ctx, heap);
  return h;
}

/* Structural hash of block tensor t of bg, whose tiles load g's kernel
 * tensors (0 for a bad id). */
uint64_t mirs__graph_btensor_hash(const mirs_graph *g, const mirs__bgraph *bg, int32_t t) {
  if (!g || !bg || t < 0 || t >= bg->nt)
    return 0;
  uint64_t stack[STACK_MEMO], *bm = NULL;
  if (bg->nt <= STACK_MEMO) {
    bm = stack;
    memset(bm, 0, (size_t)bg->nt * sizeof *bm);
  }
  return btensor_hash(g, bg, t, bm, NULL);
}

/* Canonical hash of g: outputs (names and hashes, in order) plus the
 * multisets of inputs and kernel ops. */
uint64_t mirs__graph_hash(const mirs_graph *g) {
  if (!g)
    return 0;
  uint64_t stack[STACK_MEMO], *heap;
  kmemo mem;
  const kmemo *m = memo_init(g, &mem, stack, &heap);

  uint64_t h = mirs__hash_mix(0, TAG_GRAPH);
  h = mix_i(h, g->nout);
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    h = mirs__hash_str(h, (t >= 0 && t < g->nt && g->t[t].name) ? g->t[t].name : "");
    h = mirs__hash_mix(h, ktensor_hash(g, t, m));
  }
  uint64_t sum = 0;
  int64_t ninputs = 0;
  for (int32_t i = 0; i < g->nt; i++)
    if (g->t[i].producer < 0) {
      sum += fin(ktensor_hash(g, i, m));
      ninputs++;
    }
  h = mix_i(h, ninputs);
  h = mirs__hash_mix(h, sum);
  sum = 0;
  for (int32_t k = 0; k < g->nops; k++)
    sum += fin(kop_hash(g, k, m));
  h = mix_i(h, g->nops);
  h = mirs__hash_mix(h, sum);
  mirs__core_free(g->ctx, heap);
  return h;
}
