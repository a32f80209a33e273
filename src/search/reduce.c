/* src/search/reduce.c - reduced instances: the same µGraph on smaller
 * tensors, where the search fingerprints its candidates (docs/SOUNDNESS.md).
 *
 * A reduction maps every tensor extent E of a graph to a reduced extent
 * r(E) <= E.  It is a function of the extent alone, so two dims of equal
 * extent stay equal (every shape check that passes at full shape passes
 * reduced, broadcasting included: r(E) = 1 only when E = 1), and r(E) is
 * a multiple of every partition count (grid dims times the forloop) that
 * a custom kernel of the graph applies to a dim of extent E, so every grid
 * and forloop partition stays exact: the reduced graph has the same ops,
 * grids, forloops and maps, on smaller tiles.  Extents up to the target
 * stay whole; a larger extent E with partition lcm L becomes
 * L * min(E / L, max(2, ceil(target / L))): tiles of at least two
 * elements where the full tile has them.
 *
 * Invariants: a reduced graph has the tensor ids, names (where asked),
 * dtypes, ops and block graphs of its full graph, in the same order; only
 * shapes differ.  Building one fails (MIRS_SHAPE, nothing leaked) when
 * two tiles that line up at full shape do not reduced (extents that are
 * equal only after a different partition); the caller then fingerprints
 * at full shape. */
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

/* Entry of extent e in m (added with partition lcm 1 when new); -1 when
 * the map is full. */
static int map_slot(mirs__reduce_map *m, int64_t e) {
  for (int i = 0; i < m->n; i++)
    if (m->ext[i] == e)
      return i;
  if (m->n >= MIRS__REDUCE_MAX)
    return -1;
  m->ext[m->n] = e;
  m->red[m->n] = 1; /* the partition lcm until mirs__reduce_map_build ends */
  return m->n++;
}

/* Note partition count c of a dim of extent e. */
static bool note_part(mirs__reduce_map *m, int64_t e, int64_t c) {
  int i = map_slot(m, e);
  if (i < 0)
    return false;
  if (c > 1) {
    int64_t l = m->red[i];
    m->red[i] = l / gcd64(l, c) * c;
  }
  return true;
}

/* Build the reduction of g's first nops ops for target extent target
 * (target <= 0: the identity). */
void mirs__reduce_map_build(const mirs_graph *g, int32_t nops, int64_t target,
                            mirs__reduce_map *m) {
  memset(m, 0, sizeof *m);
  bool ok = target > 0;
  for (int32_t t = 0; ok && t < g->nt; t++) {
    if (g->t[t].producer >= nops)
      continue;
    for (int d = 0; ok && d < g->t[t].shape.ndim; d++)
      ok = map_slot(m, g->t[t].shape.d[d]) >= 0;
  }
  for (int32_t k = 0; ok && k < nops; k++) {
    const mirs__kop *op = &g->ops[k];
    if (op->op != MIRS_OP_CUSTOM)
      continue;
    const mirs__bgraph *bg = op->bg;
    int32_t nout = 0;
    for (int32_t i = 0; ok && i < bg->nops; i++) {
      const mirs__bop *o = &bg->ops[i];
      const mirs__shape *sh;
      int64_t part[MIRS_MAX_DIMS];
      for (int d = 0; d < MIRS_MAX_DIMS; d++)
        part[d] = 1;
      if (o->op == MIRS_OP_INPUT) {
        sh = &g->t[o->src].shape;
        for (int j = 0; j < MIRS__GRID; j++)
          if (o->imap[j] >= 0 && o->imap[j] < sh->ndim)
            part[o->imap[j]] *= bg->grid[j];
        if (o->fmap >= 0 && o->fmap < sh->ndim)
          part[o->fmap] *= bg->forloop;
      } else if (o->op == MIRS_OP_OUTPUT && nout < op->nout) {
        sh = &g->t[op->out[nout++]].shape;
        for (int j = 0; j < MIRS__GRID; j++)
          if (o->omap[j] >= 0 && o->omap[j] < sh->ndim)
            part[o->omap[j]] *= bg->grid[j];
      } else {
        continue;
      }
      for (int d = 0; ok && d < sh->ndim; d++)
        ok = note_part(m, sh->d[d], part[d]);
    }
  }
  m->identity = true;
  uint64_t h = UINT64_C(0x7265647563650001);
  for (int i = 0; i < m->n; i++) {
    int64_t e = m->ext[i], l = m->red[i], r = e;
    if (ok && e > target && l > 0 && e % l == 0) {
      int64_t want = (target + l - 1) / l;
      int64_t t = want > 2 ? want : 2;
      r = l * (e / l < t ? e / l : t);
    }
    m->red[i] = r;
    if (r != e)
      m->identity = false;
    h = mirs__hash_mix(mirs__hash_mix(h, (uint64_t)e), (uint64_t)r);
  }
  if (m->identity) {
    m->n = 0;
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
mirs_status mirs__reduce_push_op(mirs_graph *rg, const mirs_graph *g, int32_t op, bool names) {
  mirs_context *ctx = rg->ctx;
  const mirs__kop *k = &g->ops[op];
  if (k->op != MIRS_OP_CUSTOM)
    return mirs__graph_add_op(rg, names ? g->t[k->out[0]].name : NULL, k->op, k->nin, k->in,
                              k->dim, NULL);
  const mirs__bgraph *bg = k->bg;
  mirs__bgraph *nb;
  MIRS_CHECK(ctx, mirs__bg_new(ctx, bg->grid, bg->block, bg->forloop, &nb));
  mirs_status st = MIRS_OK;
  for (int32_t i = 0; st == MIRS_OK && i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    int32_t id;
    if (o->op == MIRS_OP_INPUT)
      st = mirs__bg_add_input(rg, nb, NULL, o->src, o->imap, o->fmap, &id);
    else if (o->op == MIRS_OP_OUTPUT)
      st = mirs__bg_add_output(rg, nb, o->in[0], o->omap);
    else
      st = mirs__bg_add_op(rg, nb, NULL, o->op, o->nin, o->in, o->dim, o->fused, &id);
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
  MIRS_CHECK(rg->ctx, mirs__reduce_push_op(rg, g, op, names));
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

/* The reduced graph of g's inputs and first nops ops under m. */
mirs_status mirs__reduce_graph(const mirs_graph *g, int32_t nops, const mirs__reduce_map *m,
                               bool names, mirs_graph **out) {
  mirs_context *ctx = g->ctx;
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
