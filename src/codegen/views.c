/* SPDX-License-Identifier: MIT */
/* src/codegen/views.c - where each kernel tensor's elements live in the
 * generated code: which buffer, from which offset, at which per-dim
 * strides.  Layout ops (reshape, permute, slice) become strided views
 * instead of copy kernels:
 *  - load side: the result of a layout op on a tensor stored at strides
 *    st is a view of the same buffer when its strides can be computed
 *    (permute: the strides permuted; slice: the same strides from the
 *    start's offset; reshape: only dims that split or merge runs which
 *    are contiguous in the buffer, as PyTorch's view), and the kernels
 *    reading it index the buffer with those strides;
 *  - store side: where a reshape cannot view its input x because x is a
 *    permuted view of a tensor B (or where the chain of views from B
 *    ends in a program output), B's producer stores B straight into x's
 *    own (dense) buffer, or the output's, at the strides that undo the
 *    chain, so no op of the chain runs a kernel (B, and each tensor from
 *    B to x, has exactly one consumer, so nothing else reads B's layout);
 *  - a permute or transpose whose view would have a strided last dim
 *    stays a view only while its readers, priced in sectors, cost less
 *    through it than a tiled copy and dense reads (copy_wins);
 *  - otherwise the layout op is a copy kernel (cuda.c's emit_layout)
 *    reading its input through its view, and its result is dense.
 * A kernel-level `transpose` is the permute of the last two dims here
 * (a view, a store redirected through it, or, where neither, its own
 * grid-stride kernel: cuda.c's emit_predefined).
 * The graph is unchanged: only the code generation and the cost model
 * read this (so verification, on the graph, stays as it was).
 *
 * Sectors (mirs__codegen_sector_factor): global memory moves whole
 * 32-byte sectors, so a warp whose accesses are strided moves more bytes
 * than it uses; the cost model prices a tile load or store, and a
 * predefined kernel's operand, at the sector bytes the walk the emitter
 * generates moves (the walk order is decided here, for both): a tile
 * averaged over its tiles' origins (their byte phase in a sector), a
 * per-thread loop (a matmul's operands, a reduction, a norm) over one
 * step and over the steps a sector serves, each against the same walk
 * of the tensor dense.
 *
 * Invariants: program inputs and outputs are dense in their own (the
 * caller's) buffers, so a view never changes what the user's buffers
 * hold; a tensor's buffer is its own exactly when its storage is dense
 * there; in dense mode (`views` false, the benchmark's program as
 * written) only a reshape of a dense tensor is a view, as before views
 * existed.  Every answer is a pure function of the graph and of the
 * device its context stands for (a launch's bytes, in copy_wins: the
 * options' device, or the one a cost is asked for, cost.c's on_device):
 * the cost model and the emitter agree by construction. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cost.h"

/* Row-major strides of shape s. */
static void dense(const mirs__shape *s, int64_t st[MIRS_MAX_DIMS]) {
  int64_t stride = 1;
  for (int d = s->ndim - 1; d >= 0; d--) {
    st[d] = stride;
    stride *= s->d[d];
  }
}

/* Whether tensor t is one of g's outputs. */
static bool is_output(const mirs_graph *g, int32_t t) {
  for (int32_t i = 0; i < g->nout; i++)
    if (g->outputs[i] == t)
      return true;
  return false;
}

/* Whether op moves elements without computing: a layout op, or a
 * kernel-level transpose (the permute of its last two dims). */
static bool moves(mirs_op op) {
  return mirs__op_is_layout(op) || op == MIRS_OP_TRANSPOSE;
}

/* Whether op is a layout op that may be a view in this mode. */
static bool viewable(const mirs__kop *op, bool views) {
  return op->op == MIRS_OP_RESHAPE ||
         (views && (op->op == MIRS_OP_PERMUTE || op->op == MIRS_OP_SLICE ||
                    op->op == MIRS_OP_TRANSPOSE));
}

/* Whether layout op op maps its input's elements one to one onto its
 * result's (a store may be redirected through it). */
static bool bijective(const mirs__kop *op) {
  return op->op == MIRS_OP_RESHAPE || op->op == MIRS_OP_PERMUTE || op->op == MIRS_OP_TRANSPOSE;
}

/* Strides of a transpose's result from its input's xst (the last two
 * swapped); the inverse is the same swap. */
static void swap_last(int r, const int64_t *xst, int64_t *tst) {
  memcpy(tst, xst, sizeof(int64_t) * MIRS_MAX_DIMS);
  tst[r - 2] = xst[r - 1];
  tst[r - 1] = xst[r - 2];
}

/* Strides tst of reshape result ts of x (shape xs, strides xst), when
 * every run of result dims lies inside one run of x's dims that is
 * contiguous in the buffer (size-1 dims take part in no run).  Runs are
 * matched from the last dim: each maximal contiguous run of x (numel n,
 * innermost stride s) is covered by result dims whose product is n,
 * strides s, s * d, ... */
static bool reshape_strides(const mirs__shape *xs, const int64_t *xst, const mirs__shape *ts,
                            int64_t *tst) {
  int j = ts->ndim - 1;
  int i = xs->ndim - 1;
  while (i >= 0) {
    if (xs->d[i] == 1) {
      i--;
      continue;
    }
    int64_t base = xst[i], run = xs->d[i]; /* a maximal contiguous run ending at dim i */
    int top = i;
    for (int e = i - 1; e >= 0; e--) {
      if (xs->d[e] == 1)
        continue;
      if (xst[e] != run * base)
        break;
      run *= xs->d[e];
      top = e;
    }
    int64_t have = 1;
    while (j >= 0 && (have < run || ts->d[j] == 1)) {
      tst[j] = have * base;
      have *= ts->d[j];
      j--;
    }
    if (have != run)
      return false;
    i = top - 1;
  }
  for (; j >= 0; j--) /* (only size-1 dims are left) */
    tst[j] = 0;
  return true;
}

/* Strides of layout op op's result from its input's strides xst (and
 * *off, its offset, moved to the result's: a slice starts inside its
 * input); false when the result is not a strided view of the same
 * buffer. */
static bool apply_off(const mirs_graph *g, const mirs__kop *op, const int64_t *xst, int64_t *tst,
                      int64_t *off) {
  const mirs__shape *xs = &g->t[op->in[0]].shape, *ts = &g->t[op->out[0]].shape;
  if (op->op == MIRS_OP_SLICE) { /* lay: {dim, start, len} */
    memcpy(tst, xst, sizeof(int64_t) * MIRS_MAX_DIMS);
    *off += op->lay.d[1] * xst[op->lay.d[0]];
    return true;
  }
  if (op->op == MIRS_OP_PERMUTE) {
    for (int d = 0; d < ts->ndim; d++)
      tst[d] = xst[op->lay.d[d]];
    return true;
  }
  if (op->op == MIRS_OP_TRANSPOSE) {
    swap_last(ts->ndim, xst, tst);
    return true;
  }
  return op->op == MIRS_OP_RESHAPE && reshape_strides(xs, xst, ts, tst);
}

/* apply_off of a one-to-one layout op (the offset stays). */
static bool apply(const mirs_graph *g, const mirs__kop *op, const int64_t *xst, int64_t *tst) {
  int64_t off = 0;
  return bijective(op) && apply_off(g, op, xst, tst, &off);
}

/* The op that reads t, when exactly one use of t exists; else -1. */
static int32_t sole_consumer(const mirs_graph *g, int32_t t) {
  int32_t who = -1, uses = 0;
  for (int32_t i = 0; i < g->nops; i++)
    for (int32_t a = 0; a < g->ops[i].nin; a++)
      if (g->ops[i].in[a] == t) {
        who = i;
        uses++;
      }
  return uses == 1 ? who : -1;
}

/* Whether strides a and b agree on every non-unit dim of s. */
static bool same_strides(const mirs__shape *s, const int64_t *a, const int64_t *b) {
  for (int d = 0; d < s->ndim; d++)
    if (s->d[d] > 1 && a[d] != b[d])
      return false;
  return true;
}

/* Strides of layout op op's input from its result's strides tst (the
 * inverse step: a permute's scattered back, a reshape's as a reshape of
 * the result); false when the input is not a strided view of that. */
static bool unapply(const mirs_graph *g, const mirs__kop *op, const int64_t *tst, int64_t *xst) {
  const mirs__shape *xs = &g->t[op->in[0]].shape, *ts = &g->t[op->out[0]].shape;
  if (op->op == MIRS_OP_PERMUTE) {
    for (int d = 0; d < ts->ndim; d++)
      xst[op->lay.d[d]] = tst[d];
    return true;
  }
  if (op->op == MIRS_OP_TRANSPOSE) {
    swap_last(ts->ndim, tst, xst);
    return true;
  }
  return op->op == MIRS_OP_RESHAPE && reshape_strides(ts, tst, xs, xst);
}

/* Forward from tensor b stored at strides bst, through the chain of
 * sole-consumer layout ops that ends at tensor x: whether every step is
 * a view and x's strides come out as xst. */
static bool chain_reaches(const mirs_graph *g, int32_t b, const int64_t *bst, int32_t x,
                          const int64_t *xst) {
  int64_t cur[MIRS_MAX_DIMS], next[MIRS_MAX_DIMS];
  memcpy(cur, bst, sizeof cur);
  for (int32_t t = b; t != x;) {
    int32_t c = sole_consumer(g, t);
    if (c < 0 || !apply(g, &g->ops[c], cur, next))
      return false;
    memcpy(cur, next, sizeof cur);
    t = g->ops[c].out[0];
  }
  return same_strides(&g->t[x].shape, cur, xst);
}

/* Longest chain of layout ops a store is redirected through. */
#define CHAIN_MAX 16

/* The store-side redirection of tensor b (produced by a computing op,
 * not an output).  b's sole consumers form a chain of layout views
 * b -> x1 -> ... -> xn; where it ends in
 *  - a reshape that cannot view xn: xn is made dense in a buffer (xn's
 *    own, or the reshape's result's when that is a program output: the
 *    same order) and b is stored in it at the strides that make it so;
 *  - a program output xn: b is stored in the output's buffer likewise;
 * b's strides there come from undoing the chain from xn (dense) back to
 * b, each step a view, and are checked by redoing it forward.  Returns
 * the buffer's tensor and b's strides in inv, or -1 (b stays dense in
 * its own buffer). */
static int32_t redirect(const mirs_graph *g, int32_t b, int64_t *inv) {
  int32_t chain[CHAIN_MAX];
  int n = 0, buf = -1;
  int64_t cur[MIRS_MAX_DIMS], next[MIRS_MAX_DIMS];
  dense(&g->t[b].shape, cur);
  for (int32_t t = b; buf < 0;) {
    int32_t c = sole_consumer(g, t);
    if (c < 0 || !bijective(&g->ops[c]))
      return -1;
    int32_t x = g->ops[c].out[0];
    if (!apply(g, &g->ops[c], cur, next))
      buf = is_output(g, x) ? x : t; /* (the reshape reads t dense: a view of it) */
    else if (n == CHAIN_MAX)
      return -1;
    else {
      chain[n++] = c;
      memcpy(cur, next, sizeof cur);
      t = x;
      buf = is_output(g, x) ? x : -1;
    }
  }
  if (n == 0)
    return -1; /* (b itself is dense where it is read) */
  int32_t last = g->ops[chain[n - 1]].out[0];
  dense(&g->t[last].shape, cur);
  for (int i = n - 1; i >= 0; i--) {
    if (!unapply(g, &g->ops[chain[i]], cur, next))
      return -1;
    memcpy(cur, next, sizeof cur);
  }
  int64_t want[MIRS_MAX_DIMS];
  dense(&g->t[last].shape, want);
  if (!chain_reaches(g, b, cur, last, want))
    return -1;
  memcpy(inv, cur, sizeof cur);
  return buf;
}

/* The tile walk's factor (below, mirs__codegen_tile_sectors). */
static double tile_walk(const mirs__storage *s, const mirs__shape *ts, int elsize, bool vec,
                        bool store);
static double operand_walk(const mirs_graph *g, int32_t op, int32_t a, const mirs__storage *sp);

/* Whether the result x of permute or transpose p, a view at storage v
 * whose last dim is strided, is cheaper as a copy: a tiled copy kernel
 * (coalesced reads and writes: 2 numel bytes and a launch, in bytes of
 * the device g's context stands for, mirs__cost_launch_bytes: its
 * options', or the one a cost is asked for, cost.c's on_device) after which
 * every reader reads x dense, against every reader reading the view, each
 * access in the sectors its walk touches.  Readers: custom kernels' input
 * tiles (blocks x forloop iterations when walked) and predefined ops'
 * operands; a reader that is itself a layout op (a chain of views, maybe
 * a store redirected through p) or x being an output keeps the view. */
static bool copy_wins(const mirs_graph *g, const mirs__kop *p, const mirs__storage *v) {
  int32_t x = p->out[0];
  const mirs__shape *xs = &g->t[x].shape;
  int r = xs->ndim, es = g->t[x].dtype == MIRS_F32 ? 4 : 2;
  if ((p->op != MIRS_OP_PERMUTE && p->op != MIRS_OP_TRANSPOSE) || r < 2 || v->st[r - 1] == 1 ||
      mirs__codegen_walk_dim(xs, v->st) < 0 || is_output(g, x))
    return false;
  mirs__storage d = {.buf = x, .off = 0};
  dense(xs, d.st);
  double view = 0, copy = 2.0 * (double)mirs__shape_numel(xs) * es +
                         (double)mirs__cost_launch_bytes(g->ctx);
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    for (int32_t a = 0; a < k->nin; a++) {
      if (k->in[a] != x)
        continue;
      if (moves(k->op))
        return false;
      if (k->op != MIRS_OP_CUSTOM) {
        double n = (double)mirs__shape_numel(xs) * es;
        view += n * operand_walk(g, i, a, v);
        copy += n * operand_walk(g, i, a, &d);
        continue;
      }
      const mirs__bgraph *bg = k->bg;
      double blocks = 1;
      for (int j = 0; j < MIRS__GRID; j++)
        blocks *= bg->grid[j] > 0 ? bg->grid[j] : 1;
      for (int32_t j = 0; j < bg->nops; j++) {
        const mirs__bop *b = &bg->ops[j];
        if (b->op != MIRS_OP_INPUT || b->src != x)
          continue;
        const mirs__shape *ts = &bg->t[b->out].shape;
        bool walked = b->fmap >= 0 && bg->forloop > 1;
        double n = (double)mirs__shape_numel(ts) * es * blocks * (walked ? bg->forloop : 1);
        bool dvec = (ts->d[ts->ndim - 1] * es) % 16 == 0 && (xs->d[r - 1] * es) % 16 == 0;
        view += n * tile_walk(v, ts, es, false, false);
        copy += n * tile_walk(&d, ts, es, dvec, false);
      }
    }
  }
  return copy < view;
}

/* Storage of layout op p's result as a view of its input's storage x
 * into *s; false when it is not one (not expressible, or, with views,
 * cheaper as a copy: copy_wins). */
static bool view_of(const mirs_graph *g, bool views, const mirs__kop *p, const mirs__storage *x,
                    mirs__storage *s) {
  s->buf = x->buf;
  s->off = x->off;
  if (!apply_off(g, p, x->st, s->st, &s->off))
    return false;
  return !views || !copy_wins(g, p, s);
}

void mirs__codegen_storage(const mirs_graph *g, bool views, int32_t t, mirs__storage *s) {
  s->buf = t;
  s->off = 0;
  dense(&g->t[t].shape, s->st);
  if (g->t[t].producer < 0 || is_output(g, t))
    return; /* (the caller's buffers: dense) */
  const mirs__kop *p = &g->ops[g->t[t].producer];
  if (moves(p->op)) {
    if (!viewable(p, views))
      return;
    mirs__storage x, v;
    mirs__codegen_storage(g, views, p->in[0], &x);
    if (view_of(g, views, p, &x, &v))
      *s = v;
    return;
  }
  int64_t inv[MIRS_MAX_DIMS];
  int32_t x = views ? redirect(g, t, inv) : -1;
  if (x >= 0) {
    s->buf = x;
    memcpy(s->st, inv, sizeof inv);
  }
}

bool mirs__codegen_op_is_view(const mirs_graph *g, bool views, int32_t op) {
  const mirs__kop *k = &g->ops[op];
  if (!moves(k->op) || !viewable(k, views))
    return false;
  mirs__storage x, v;
  mirs__codegen_storage(g, views, k->in[0], &x);
  if (is_output(g, k->out[0])) /* (its producer chain stores into the output: redirect) */
    return x.buf == k->out[0];
  return view_of(g, views, k, &x, &v);
}

bool mirs__codegen_is_view(const mirs_graph *g, int32_t op) {
  return mirs__codegen_op_is_view(g, true, op);
}

int32_t mirs__codegen_view_root(const mirs_graph *g, int32_t t) {
  mirs__storage s;
  mirs__codegen_storage(g, false, t, &s);
  return s.buf;
}

bool mirs__codegen_storage_vec(const mirs_graph *g, int32_t t, int elsize) {
  mirs__storage s;
  mirs__codegen_storage(g, true, t, &s);
  const mirs__shape *sh = &g->t[t].shape;
  int r = sh->ndim;
  if (r < 1 || s.st[r - 1] != 1 || (sh->d[r - 1] * elsize) % 16 != 0 || (s.off * elsize) % 16 != 0)
    return false;
  for (int d = 0; d < r - 1; d++)
    if (sh->d[d] > 1 && (s.st[d] * elsize) % 16 != 0)
      return false;
  return true;
}

int mirs__codegen_walk_dim(const mirs__shape *ts, const int64_t *st) {
  int r = ts->ndim, f = -1;
  for (int d = 0; d < r - 1 && ts->d[r - 1] > 1 && st[r - 1] != 1; d++)
    if (ts->d[d] > 1 && st[d] == 1)
      f = d;
  return f;
}

/* Bytes of a global-memory sector: the unit DRAM and L2 move. */
#define SECTOR 32
/* Warps of a walk whose sectors are counted (the first ones: a walk
 * repeats its pattern every row or so; a bounded count keeps costing
 * independent of tile sizes). */
#define SAMPLE_WARPS 8
/* Most accesses of one warp's group: 32 lanes x 16 steps of a loop. */
#define MAX_GROUP 512

/* Ascending order of two sector numbers (qsort). */
static int cmp_sector(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sectors moved (*moved) and the fewest the bytes used need (*ideal) by
 * the first SAMPLE_WARPS groups of `group` consecutive accesses of a walk
 * over ext at storage s: an access is `width` elements of the last dim
 * (contiguous), the walk takes dim f fastest (when >= 0), then the others
 * from the last.  A group is a warp's accesses: 32 of them, or 32 lanes
 * times the steps of a per-thread loop (loop_factor).  False when the
 * walk cannot be counted (then 1 is the answer). */
static bool walk_sectors(const mirs__storage *s, const mirs__shape *ext, int elsize, int width,
                         int f, int64_t group, double *moved, double *ideal) {
  int r = ext->ndim, order[MIRS_MAX_DIMS], n_order = 0;
  *moved = *ideal = 0;
  if (r < 1 || elsize < 1 || width < 1 || ext->d[r - 1] % width != 0 || group < 1 ||
      group > MAX_GROUP)
    return false;
  mirs__shape w = *ext; /* in accesses: the last dim in units of `width` elements */
  w.d[r - 1] /= width;
  if (f >= 0)
    order[n_order++] = f;
  for (int d = r - 1; d >= 0; d--)
    if (d != f)
      order[n_order++] = d;
  int64_t n = mirs__shape_numel(&w), abytes = (int64_t)elsize * width;
  for (int64_t w0 = 0; w0 < n && w0 < SAMPLE_WARPS * group; w0 += group) {
    int64_t sec[2 * MAX_GROUP]; /* sectors of this group's accesses (each spans <= 2: <= 16 B) */
    int ns = 0;
    for (int64_t j = w0; j < w0 + group && j < n; j++) {
      int64_t rem = j, el = s->off;
      for (int i = 0; i < n_order; i++) {
        int d = order[i];
        int64_t c = rem % w.d[d];
        rem /= w.d[d];
        el += c * (d == r - 1 ? width : 1) * s->st[d];
      }
      int64_t lo = el * elsize, hi = lo + abytes - 1;
      for (int64_t q = lo / SECTOR; q <= hi / SECTOR && q <= lo / SECTOR + 1; q++)
        sec[ns++] = q;
    }
    qsort(sec, (size_t)ns, sizeof sec[0], cmp_sector);
    for (int k = 0; k < ns; k++)
      *moved += k == 0 || sec[k] != sec[k - 1];
    int64_t used = ((w0 + group < n ? w0 + group : n) - w0) * abytes;
    *ideal += (double)((used + SECTOR - 1) / SECTOR);
  }
  return *ideal > 0;
}

double mirs__codegen_sector_factor(const mirs__storage *s, const mirs__shape *ext, int elsize,
                                   int width, int f) {
  double moved, ideal;
  if (!walk_sectors(s, ext, elsize, width, f, 32, &moved, &ideal))
    return 1.0;
  double fct = moved / ideal;
  return fct < 1.0 ? 1.0 : fct; /* (a broadcast moves no less than it uses: no L2 credit) */
}

/* Sector factor of a tile walk over storage s: 16-byte chunks in
 * row-major order when vec (emit_load), else element accesses (a store:
 * row-major; a load: mirs__codegen_walk_dim's order). */
static double tile_walk(const mirs__storage *s, const mirs__shape *ts, int elsize, bool vec,
                        bool store) {
  if (vec)
    return mirs__codegen_sector_factor(s, ts, elsize, 16 / elsize, -1);
  return mirs__codegen_sector_factor(s, ts, elsize, 1,
                                     store ? -1 : mirs__codegen_walk_dim(ts, s->st));
}

/* Tiles of shape ts of a tensor of shape ks stored at s, by the byte
 * phase of their origin in a sector: cnt[q] of them start q bytes past a
 * sector boundary.  A tile's origin is s->off plus k_d whole tiles along
 * each dim d the tiles step through (ts_d < ks_d, k_d < ks_d / ts_d):
 * blocks and forloop iterations start there (emit_global_index).  The
 * buffer itself starts on a sector (cudaMalloc's 256 bytes, the
 * workspace's 256-byte offsets). */
static void tile_phases(const mirs__storage *s, const mirs__shape *ks, const mirs__shape *ts,
                        int elsize, double cnt[SECTOR]) {
  memset(cnt, 0, sizeof(double) * SECTOR);
  cnt[((s->off * elsize) % SECTOR + SECTOR) % SECTOR] = 1;
  for (int d = 0; d < ks->ndim; d++) {
    if (ts->d[d] < 1 || ts->d[d] >= ks->d[d])
      continue;
    int64_t n = ks->d[d] / ts->d[d], step = (ts->d[d] * s->st[d] * elsize) % SECTOR;
    double next[SECTOR] = {0}, per[SECTOR] = {0}; /* per[q]: the k < n with k * step = q */
    for (int64_t k = 0; k < SECTOR && k < n; k++) /* (k * step cycles within 32 steps) */
      per[(k * step) % SECTOR] += (double)((n - 1 - k) / SECTOR + 1);
    for (int a = 0; a < SECTOR; a++)
      for (int b = 0; b < SECTOR && cnt[a] > 0; b++)
        next[(a + b) % SECTOR] += cnt[a] * per[b];
    memcpy(cnt, next, sizeof next);
  }
}

/* tile_walk averaged over the origins of the tiles of a tensor of shape
 * ks stored at s (tile_phases: the count depends on the origin's byte
 * phase in a sector only). */
static double tiles_walk(const mirs__storage *s, const mirs__shape *ks, const mirs__shape *ts,
                         int elsize, bool vec, bool store) {
  double cnt[SECTOR], sum = 0, n = 0;
  tile_phases(s, ks, ts, elsize, cnt);
  for (int q = 0; q < SECTOR; q++) {
    if (cnt[q] == 0)
      continue;
    mirs__storage at = *s;
    at.off = q / elsize; /* (q is a multiple of elsize: every step is) */
    sum += cnt[q] * tile_walk(&at, ts, elsize, vec, store);
    n += cnt[q];
  }
  return n > 0 ? sum / n : 1.0;
}

bool mirs__codegen_is_dense(const mirs_graph *g, int32_t t) {
  mirs__storage s;
  int64_t d[MIRS_MAX_DIMS];
  mirs__codegen_storage(g, true, t, &s);
  dense(&g->t[t].shape, d);
  return s.buf == t && s.off == 0 && same_strides(&g->t[t].shape, s.st, d);
}

double mirs__codegen_tile_sectors(const mirs_graph *g, int32_t t, const mirs__shape *ts,
                                  int elsize, bool vec, bool store) {
  if (mirs__codegen_is_dense(g, t))
    return 1.0; /* (dense: the reference itself; the search's common case) */
  mirs__storage s, d = {.buf = t, .off = 0};
  mirs__codegen_storage(g, true, t, &s);
  dense(&g->t[t].shape, d.st);
  /* Against the same tiles of t dense (16-byte loads where its rows
   * allow, as plan_input decides): the model's bytes of dense tiles stay
   * as they were, a view pays what its strides and its origins add (a
   * slice starting inside a sector straddles one more). */
  const mirs__shape *ks = &g->t[t].shape;
  bool dvec = !store && (ts->d[ts->ndim - 1] * elsize) % 16 == 0 &&
              (ks->d[ks->ndim - 1] * elsize) % 16 == 0;
  double fv = tiles_walk(&s, ks, ts, elsize, vec, store);
  double fd = tiles_walk(&d, ks, ts, elsize, dvec, store);
  return fv > fd ? fv / fd : 1.0;
}

/* Strides, along the output's dims [0, nd) of shape os, of an operand of
 * shape xs stored at xst (ranks aligned on the right, size-1 dims
 * broadcast: 0), as emit_index_st indexes it. */
static void lane_strides(const mirs__shape *xs, const int64_t *xst, const mirs__shape *os, int nd,
                         int64_t *st) {
  for (int d = 0; d < nd; d++) {
    int id = d - (os->ndim - xs->ndim);
    st[d] = id < 0 || xs->d[id] == 1 ? 0 : xst[id];
  }
}

/* Sectors a per-thread loop moves: lanes take the output os row-major,
 * the lane at c reads base + sum c_d lst[d] + p * pst at its steps p <
 * steps (a matmul's operands along K, a reduction along its dim, a norm
 * along its row); a warp's group is its 32 lanes over a window of `win`
 * steps from the first. */
static double loop_sectors(const mirs__storage *s, const mirs__shape *os, const int64_t *lst,
                           int64_t pst, int64_t win, int elsize) {
  int r = os->ndim;
  if (r + 1 > MIRS_MAX_DIMS || win < 1)
    return 0;
  mirs__shape ext = *os;
  ext.ndim = r + 1;
  ext.d[r] = win;
  mirs__storage w = {.buf = s->buf, .off = s->off};
  memcpy(w.st, lst, sizeof(int64_t) * (size_t)r);
  w.st[r] = pst;
  double moved, ideal;
  return walk_sectors(&w, &ext, elsize, 1, r, 32 * win, &moved, &ideal) ? moved : 0;
}

/* Sector factor of predefined op k's per-thread loop over operand a (a
 * matmul's A or B, a reduction's or a norm's input) stored at s, the
 * worse of two counts, each taken over that of the same loop over the
 * operand dense (so a dense operand keeps its price, factor 1, and a
 * view pays what its strides add):
 *  - one step (what a warp's load instruction touches: lanes reading a
 *    row of a transposed B each take a sector);
 *  - a window of 32 / elsize steps, the steps one sector of a contiguous
 *    run serves from L1 (lanes sharing a row of a transposed A, or a
 *    norm's row, take a new sector at every step where a dense row takes
 *    one per window).
 * 1 for other operands. */
static double loop_walk(const mirs_graph *g, const mirs__kop *k, int32_t a,
                        const mirs__storage *s) {
  const mirs__shape *os = &g->t[k->out[0]].shape, *xs = &g->t[k->in[a]].shape;
  mirs__op_kind kind = mirs__graph_ops[k->op].kind;
  int r = os->ndim, rx = xs->ndim, es = g->t[k->in[a]].dtype == MIRS_F32 ? 4 : 2;
  mirs__storage d = {.buf = s->buf, .off = 0};
  dense(xs, d.st);
  if (s->off == 0 && same_strides(xs, s->st, d.st))
    return 1.0; /* (dense: the reference itself; the search's common case) */
  int64_t lv[MIRS_MAX_DIMS] = {0}, ld[MIRS_MAX_DIMS] = {0}, pv, pd, steps;
  if (kind == MIRS__KIND_MATMUL && r >= 2 && rx >= 2) {
    /* (batch dims as indexed; A: c_{r-2} its rows, c_{r-1} a broadcast;
     * B: c_{r-1} its columns, c_{r-2} a broadcast) */
    lane_strides(xs, s->st, os, r - 2, lv);
    lane_strides(xs, d.st, os, r - 2, ld);
    int lane = a == 0 ? r - 2 : r - 1, row = a == 0 ? rx - 2 : rx - 1;
    int step = a == 0 ? rx - 1 : rx - 2;
    lv[lane] = s->st[row];
    ld[lane] = d.st[row];
    pv = s->st[step];
    pd = d.st[step];
    steps = xs->d[step];
  } else if (kind == MIRS__KIND_REDUCE && a == 0 && rx == r && k->dim >= 0 && k->dim < r) {
    lane_strides(xs, s->st, os, r, lv); /* (the reduced dim is 1 in os: 0) */
    lane_strides(xs, d.st, os, r, ld);
    pv = s->st[k->dim];
    pd = d.st[k->dim];
    steps = xs->d[k->dim];
  } else if ((k->op == MIRS_OP_RMS_NORM || k->op == MIRS_OP_LAYER_NORM) && a == 0 && rx == r) {
    lane_strides(xs, s->st, os, r - 1, lv); /* (every lane of a row reads the whole row) */
    lane_strides(xs, d.st, os, r - 1, ld);
    pv = s->st[r - 1];
    pd = d.st[r - 1];
    steps = xs->d[r - 1];
  } else {
    return 1.0;
  }
  double f = 1.0;
  int64_t wins[2] = {1, SECTOR / es < steps ? SECTOR / es : steps};
  for (int i = 0; i < 2; i++) {
    double sv = loop_sectors(s, os, lv, pv, wins[i], es);
    double sd = loop_sectors(&d, os, ld, pd, wins[i], es);
    if (sd > 0 && sv / sd > f)
      f = sv / sd;
  }
  return f;
}

/* Sector factor of predefined op `op` reading operand a stored at s. */
static double operand_walk(const mirs_graph *g, int32_t op, int32_t a, const mirs__storage *sp) {
  const mirs__kop *k = &g->ops[op];
  const mirs__shape *os = &g->t[k->out[0]].shape;
  mirs__op_kind kind = mirs__graph_ops[k->op].kind;
  int r = os->ndim;
  int es = g->t[k->in[a]].dtype == MIRS_F32 ? 4 : 2;
  mirs__storage s = *sp, w = s; /* w: the operand's strides along the output's coordinates */
  const mirs__shape *xs = &g->t[k->in[a]].shape;
  if (kind == MIRS__KIND_UNARY || kind == MIRS__KIND_BINARY) {
    if (xs->ndim != r)
      return 1.0;
    for (int d = 0; d < r; d++)
      w.st[d] = xs->d[d] > 1 ? s.st[d] : 0; /* (a broadcast dim) */
  } else if (kind == MIRS__KIND_TRANSPOSE || k->op == MIRS_OP_PERMUTE) {
    if (kind == MIRS__KIND_TRANSPOSE)
      swap_last(r, s.st, w.st);
    else
      for (int d = 0; d < r; d++)
        w.st[d] = s.st[k->lay.d[d]];
    /* (a copy moving the last dim reads along the dim contiguous in its
     * input: the tiled copy, cuda.c's emit_layout) */
    return mirs__codegen_sector_factor(&w, os, es, 1, mirs__codegen_walk_dim(os, w.st));
  } else if (k->op == MIRS_OP_SLICE) {
    w.off += k->lay.d[1] * s.st[k->lay.d[0]];
  } else if (k->op == MIRS_OP_RESHAPE) {
    return mirs__codegen_sector_factor(&s, xs, es, 1, -1); /* (read in the input's order) */
  } else {
    return loop_walk(g, k, a, &s); /* matmuls, reductions, norms: per-thread loops */
  }
  return mirs__codegen_sector_factor(&w, os, es, 1, -1);
}

double mirs__codegen_operand_sectors(const mirs_graph *g, int32_t op, int32_t a) {
  mirs__storage s;
  mirs__codegen_storage(g, true, g->ops[op].in[a], &s);
  return operand_walk(g, op, a, &s);
}

double mirs__codegen_result_sectors(const mirs_graph *g, int32_t op) {
  const mirs__kop *k = &g->ops[op];
  int32_t t = k->out[0];
  mirs__storage s;
  mirs__codegen_storage(g, true, t, &s);
  return mirs__codegen_sector_factor(&s, &g->t[t].shape, g->t[t].dtype == MIRS_F32 ? 4 : 2, 1,
                                     -1);
}
