/* SPDX-License-Identifier: MIT */
/* src/search/reduce.c - reduced instances: the same µGraph on smaller
 * tensors, where the search fingerprints its candidates (docs/SOUNDNESS.md).
 *
 * A reduction shrinks the tiles, the grids and the forloops of a graph's
 * custom kernels and the tensors with them: every grid dim and forloop
 * range above `parts` becomes `parts`, every tile extent above `tile`
 * becomes `tile`, and a tensor extent E whose partitions (the grid dims
 * that partition or place it, times the forloop that walks it) have
 * least common multiple L at full shape and L' reduced becomes
 * r(E) = L' * min(E / L, tile).  So:
 *  - r is a function of the extent alone: dims of equal extent stay equal
 *    and every shape check that passes at full shape passes reduced
 *    (broadcasting included: r(E) = 1 only when E = 1);
 *  - every grid and forloop partition stays exact, and a tile dim is 1
 *    exactly when it is at full shape: the reduced graph has the same
 *    ops, maps, accumulators and fused flags on fewer, smaller blocks;
 *  - equal full tiles of dims whose partitions all stay give equal
 *    reduced tiles.
 * Invariants: a reduced graph has the tensor ids, names (where asked),
 * dtypes, ops and block graphs of its full graph, in the same order; only
 * shapes, grids and forloops differ.  Building one fails (MIRS_SHAPE,
 * nothing leaked) when tiles that line up at full shape do not reduced
 * (extents equal only through different partitions), or when the graph
 * holds a slice (its start and len index the full dim); the caller then
 * fingerprints at full shape. */
#include "config.h"

#include <string.h>

#include "search/search.h"

/* Greatest common divisor (a, b > 0). */
static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* A grid dim or forloop range under m. */
static int32_t rpart(const mirs__reduce_map *m, int32_t x) {
  return m->parts > 0 && x > m->parts ? m->parts : x;
}

/* Entry of extent e in m (added with partitions 1 when new); -1 when the
 * map is full.  Until mirs__reduce_map_build ends, red[] holds the
 * reduced partitions' lcm and full[] the full ones'. */
static int map_slot(mirs__reduce_map *m, int64_t *full, int64_t e) {
  for (int i = 0; i < m->n; i++)
    if (m->ext[i] == e)
      return i;
  if (m->n >= MIRS__REDUCE_MAX)
    return -1;
  m->ext[m->n] = e;
  m->red[m->n] = 1;
  full[m->n] = 1;
  return m->n++;
}

/* lcm(a, b), a, b > 0. */
static int64_t lcm64(int64_t a, int64_t b) {
  return a / gcd64(a, b) * b;
}

/* Build the reduction of g's first nops ops with tiles of at most `tile`
 * and grid dims and forloops of at most `parts` (tile <= 0: the
 * identity). */
void mirs__reduce_map_build(const mirs_graph *g, int32_t nops, int64_t tile, int32_t parts,
                            mirs__reduce_map *m) {
  memset(m, 0, sizeof *m);
  int64_t full[MIRS__REDUCE_MAX];
  m->parts = parts >= 2 ? parts : 2;
  bool ok = tile > 0, capped = false;
  for (int32_t t = 0; ok && t < g->nt; t++) {
    if (g->t[t].producer >= nops)
      continue;
    for (int d = 0; ok && d < g->t[t].shape.ndim; d++)
      ok = map_slot(m, full, g->t[t].shape.d[d]) >= 0;
  }
  for (int32_t k = 0; ok && k < nops; k++) {
    const mirs__kop *op = &g->ops[k];
    if (op->op != MIRS_OP_CUSTOM)
      continue;
    const mirs__bgraph *bg = op->bg;
    for (int j = 0; j < MIRS__GRID; j++)
      capped = capped || rpart(m, bg->grid[j]) != bg->grid[j];
    capped = capped || rpart(m, bg->forloop) != bg->forloop;
    int32_t nout = 0;
    for (int32_t i = 0; ok && i < bg->nops; i++) {
      const mirs__bop *o = &bg->ops[i];
      const mirs__shape *sh;
      int64_t pf[MIRS_MAX_DIMS], pr[MIRS_MAX_DIMS];
      for (int d = 0; d < MIRS_MAX_DIMS; d++)
        pf[d] = pr[d] = 1;
      if (o->op == MIRS_OP_INPUT) {
        sh = &g->t[o->src].shape;
        for (int j = 0; j < MIRS__GRID; j++)
          if (o->imap[j] >= 0 && o->imap[j] < sh->ndim) {
            pf[o->imap[j]] *= bg->grid[j];
            pr[o->imap[j]] *= rpart(m, bg->grid[j]);
          }
        if (o->fmap >= 0 && o->fmap < sh->ndim) {
          pf[o->fmap] *= bg->forloop;
          pr[o->fmap] *= rpart(m, bg->forloop);
        }
      } else if (o->op == MIRS_OP_OUTPUT && nout < op->nout) {
        sh = &g->t[op->out[nout++]].shape;
        for (int j = 0; j < MIRS__GRID; j++)
          if (o->omap[j] >= 0 && o->omap[j] < sh->ndim) {
            pf[o->omap[j]] *= bg->grid[j];
            pr[o->omap[j]] *= rpart(m, bg->grid[j]);
          }
      } else {
        continue;
      }
      for (int d = 0; ok && d < sh->ndim; d++) {
        int i2 = map_slot(m, full, sh->d[d]);
        ok = i2 >= 0;
        if (ok) {
          full[i2] = lcm64(full[i2], pf[d]);
          m->red[i2] = lcm64(m->red[i2], pr[d]);
        }
      }
    }
  }
  m->identity = !capped;
  uint64_t h = mirs__hash_mix(UINT64_C(0x7265647563650002), (uint64_t)m->parts);
  for (int i = 0; i < m->n; i++) {
    int64_t e = m->ext[i], r = e;
    if (ok && full[i] > 0 && e % full[i] == 0) {
      int64_t t = e / full[i];
      r = m->red[i] * (t < tile ? t : tile);
    }
    m->red[i] = r;
    if (r != e)
      m->identity = false;
    h = mirs__hash_mix(mirs__hash_mix(h, (uint64_t)e), (uint64_t)r);
  }
  if (!ok)
    m->identity = true;
  if (m->identity) {
    m->n = 0;
    m->parts = 0;
    h = 0;
  }
  m->hash = h;
}

/* Reduced extent of e under m. */
int64_t mirs__reduce_extent(const mirs__reduce_map *m, int64_t e) {
  for (int i = 0; i < m->n; i++)
    if (m->ext[i] == e)
      return m->red[i];
  return e;
}

/* Reduced shape of s under m. */
static mirs__shape reduce_shape(const mirs__reduce_map *m, const mirs__shape *s) {
  mirs__shape r = *s;
  for (int d = 0; d < s->ndim; d++)
    r.d[d] = mirs__reduce_extent(m, s->d[d]);
  return r;
}

/* Append op `op` of g to rg (which mirrors g's tensors before it). */
mirs_status mirs__reduce_push_op(mirs_graph *rg, const mirs_graph *g, int32_t op,
                                 const mirs__reduce_map *m, bool names) {
  mirs_context *ctx = rg->ctx;
  const mirs__kop *k = &g->ops[op];
  if (k->op == MIRS_OP_SLICE && !m->identity) /* (start and len index the full dim) */
    return MIRS_FAIL(ctx, MIRS_SHAPE, "reduced instance: a slice has no reduced form");
  if (k->op != MIRS_OP_CUSTOM)
    return mirs__graph_copy_op(rg, names ? g->t[k->out[0]].name : NULL, k, k->in, NULL);
  const mirs__bgraph *bg = k->bg;
  mirs__bgraph *nb;
  int32_t grid[MIRS__GRID];
  for (int j = 0; j < MIRS__GRID; j++)
    grid[j] = rpart(m, bg->grid[j]);
  MIRS_CHECK(ctx, mirs__bg_new(ctx, grid, bg->block, rpart(m, bg->forloop), &nb));
  mirs_status st = MIRS_OK;
  for (int32_t i = 0; st == MIRS_OK && i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    int32_t id;
    if (o->op == MIRS_OP_INPUT)
      st = mirs__bg_add_input(rg, nb, NULL, o->src, o->imap, o->fmap, &id);
    else if (o->op == MIRS_OP_OUTPUT)
      st = mirs__bg_add_output_dt(rg, nb, o->in[0], o->omap, o->stored);
    else
      st = mirs__bg_add_op_c(rg, nb, NULL, o->op, o->nin, o->in, o->dim, o->fused, o->cst, &id);
    if (st == MIRS_OK && nb->nops > 0)
      nb->ops[nb->nops - 1].eps = o->eps;
  }
  if (st != MIRS_OK) {
    mirs__bg_free(ctx, nb);
    return st;
  }
  const char *nm[MIRS__SEARCH_MAX_COUT * 8];
  bool use = names && k->nout <= (int32_t)(sizeof nm / sizeof nm[0]);
  for (int32_t i = 0; use && i < k->nout; i++)
    nm[i] = g->t[k->out[i]].name;
  return mirs__graph_add_custom(rg, nb, use ? nm : NULL, NULL); /* takes nb */
}

/* Append op `op` of g to rg under m and check that its outputs have the
 * reduced shapes of g's (else MIRS_SHAPE, the op not added). */
mirs_status mirs__reduce_push_checked(mirs_graph *rg, const mirs_graph *g, int32_t op,
                                      const mirs__reduce_map *m, bool names) {
  MIRS_CHECK(rg->ctx, mirs__reduce_push_op(rg, g, op, m, names));
  const mirs__kop *k = &g->ops[op];
  for (int32_t i = 0; i < k->nout; i++) {
    mirs__shape s = reduce_shape(m, &g->t[k->out[i]].shape);
    if (!mirs__shape_eq(&s, &rg->t[k->out[i]].shape)) {
      mirs__graph_pop_op(rg);
      return MIRS_FAIL(rg->ctx, MIRS_SHAPE, "reduced instance: op %d has another shape", (int)op);
    }
  }
  return MIRS_OK;
}

/* The reduced graph of g's inputs and first nops ops under m, in ctx. */
mirs_status mirs__reduce_graph(mirs_context *ctx, const mirs_graph *g, int32_t nops,
                               const mirs__reduce_map *m, bool names, mirs_graph **out) {
  mirs_graph *rg;
  *out = NULL;
  MIRS_CHECK(ctx, mirs__graph_new(ctx, g->name, &rg));
  mirs_status st = MIRS_OK;
  for (int32_t t = 0; st == MIRS_OK && t < g->nt; t++) {
    const mirs__ktensor *kt = &g->t[t];
    if (kt->producer < 0) {
      mirs__shape s = reduce_shape(m, &kt->shape);
      st = mirs__graph_add_input(rg, kt->name, kt->dtype, &s, NULL);
    } else if (kt->producer < nops && kt->out_index == 0) {
      st = mirs__reduce_push_checked(rg, g, kt->producer, m, names);
    }
  }
  for (int32_t i = 0; st == MIRS_OK && i < g->nout; i++)
    if (g->t[g->outputs[i]].producer < nops)
      st = mirs__graph_mark_output(rg, g->outputs[i]);
  if (st != MIRS_OK) {
    mirs__graph_free(rg);
    return st;
  }
  *out = rg;
  return MIRS_OK;
}
