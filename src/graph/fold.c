/* SPDX-License-Identifier: MIT */
/* src/graph/fold.c - program normal forms applied before a search: a
 * LayerNorm or an RMSNorm spelled out with today's operators becomes one
 * layer_norm or rms_norm op.
 *
 * The pattern, over the last dim d of X (any rank):
 *   M = mean(X, dim=d)    C = sub(X, M)    S = square(C) | mul(C, C)
 *   V = mean(S, dim=d)    D = sqrt(V) | sqrt(add(V, eps))   N = div(C, D)
 * is N = layer_norm(X, eps) (eps = 0 without the add); without the
 * centring (S = square(X) | mul(X, X), N = div(X, D), or mul(X, R) |
 * mul(R, X) with R = div(1, D), PyTorch's x * rsqrt(...)) it is
 * N = rms_norm(X, eps).  The two are equal as real functions, and
 * equal trial by trial in the field fingerprints (docs/SOUNDNESS.md: the
 * same exact mean and variance, the same keyed sqrt of the same value), so
 * a µGraph verified against the folded program is verified against the
 * original.  The folded program is what the search sees: one layer_norm
 * symbol instead of six ops whose every piece passes pruning (the blow-up
 * of docs/SEARCH.md, "Abstract-expression pruning").
 *
 * Invariants: the fold keeps every input, every output (by name, in
 * order) and every op some output still needs; an intermediate that a
 * program output or another op uses stays (it is recomputed from X by its
 * own ops, so nothing changes but the op count).  A graph with custom
 * kernels is left alone. */
#include "config.h"

#include <string.h>

#include "graph/graph.h"

/* The op producing kernel tensor t with operator op, or NULL. */
static const mirs__kop *made_by(const mirs_graph *g, int32_t t, mirs_op op) {
  if (t < 0 || g->t[t].producer < 0)
    return NULL;
  const mirs__kop *k = &g->ops[g->t[t].producer];
  return k->op == op ? k : NULL;
}

/* Whether t is mean(x, dim=last) of x; *x receives x. */
static bool is_row_mean(const mirs_graph *g, int32_t t, int32_t *x) {
  const mirs__kop *k = made_by(g, t, MIRS_OP_MEAN);
  if (!k || k->dim != g->t[k->in[0]].shape.ndim - 1)
    return false;
  *x = k->in[0];
  return true;
}

/* Whether t is V or add(V, eps) with eps >= 0 a constant whose decimal is
 * the shortest one of its double (so layer_norm's eps attribute meets the
 * same field element, docs/SOUNDNESS.md); *v receives V, *eps eps. */
static bool variance_eps(const mirs_graph *g, int32_t t, int32_t *v, double *eps) {
  const mirs__kop *a = made_by(g, t, MIRS_OP_ADD_SCALAR);
  *v = t;
  *eps = 0.0;
  if (!a)
    return true;
  mirs__scalar d;
  if (!(a->cst[0].v >= 0.0) || !mirs__scalar_of_double(a->cst[0].v, &d) || d.m != a->cst[0].m ||
      d.e != a->cst[0].e)
    return false;
  *v = a->in[0];
  *eps = a->cst[0].v;
  return true;
}

/* If op i is the div of a spelled-out LayerNorm, its X (and *eps); else -1. */
static int32_t spelled_ln(const mirs_graph *g, int32_t i, double *eps) {
  const mirs__kop *n = &g->ops[i];
  if (n->op != MIRS_OP_DIV)
    return -1;
  int32_t c = n->in[0], x, x2, cc, var;
  const mirs__kop *sub = made_by(g, c, MIRS_OP_SUB), *sq = made_by(g, n->in[1], MIRS_OP_SQRT);
  if (!sub || !sq || !is_row_mean(g, sub->in[1], &x) || sub->in[0] != x ||
      !variance_eps(g, sq->in[0], &var, eps) || !is_row_mean(g, var, &x2))
    return -1;
  const mirs__kop *s = made_by(g, x2, MIRS_OP_SQUARE);
  if (s)
    cc = s->in[0];
  else if ((s = made_by(g, x2, MIRS_OP_MUL)) != NULL && s->in[0] == s->in[1])
    cc = s->in[0];
  else
    return -1;
  /* (N has C's shape only when nothing broadcast: X's own shape.) */
  return cc == c && mirs__shape_eq(&g->t[n->out[0]].shape, &g->t[x].shape) ? x : -1;
}

/* Whether t is square(x) or mul(x, x) of some x; *x receives x. */
static bool is_square(const mirs_graph *g, int32_t t, int32_t *x) {
  const mirs__kop *s = made_by(g, t, MIRS_OP_SQUARE);
  if (!s && (s = made_by(g, t, MIRS_OP_MUL)) != NULL && s->in[0] != s->in[1])
    s = NULL;
  if (s)
    *x = s->in[0];
  return s != NULL;
}

/* If op i is the last op of a spelled-out RMSNorm (div(X, D), or mul of X
 * and div(1, D), with D = sqrt(mean(square(X)) [+ eps]) over the last
 * dim), its X (and *eps); else -1. */
static int32_t spelled_rms(const mirs_graph *g, int32_t i, double *eps) {
  const mirs__kop *n = &g->ops[i];
  int32_t x = -1, d = -1, var, m, xs;
  if (n->op == MIRS_OP_DIV) {
    x = n->in[0];
    d = n->in[1];
  } else if (n->op == MIRS_OP_MUL) {
    for (int a = 0; a < 2 && d < 0; a++) {
      const mirs__kop *r = made_by(g, n->in[a], MIRS_OP_RDIV_SCALAR);
      if (r && r->cst[0].m == 1 && r->cst[0].e == 0) {
        x = n->in[1 - a];
        d = r->in[0];
      }
    }
  }
  const mirs__kop *sq = d >= 0 ? made_by(g, d, MIRS_OP_SQRT) : NULL;
  if (!sq || !variance_eps(g, sq->in[0], &var, eps) || !is_row_mean(g, var, &m) ||
      !is_square(g, m, &xs) || xs != x)
    return -1;
  return mirs__shape_eq(&g->t[n->out[0]].shape, &g->t[x].shape) ? x : -1;
}

/* The norm op i ends, if any: its X, its operator (*op) and eps. */
static int32_t spelled_norm(const mirs_graph *g, int32_t i, mirs_op *op, double *eps) {
  int32_t x = spelled_ln(g, i, eps);
  *op = MIRS_OP_LAYER_NORM;
  if (x < 0) {
    x = spelled_rms(g, i, eps);
    *op = MIRS_OP_RMS_NORM;
  }
  return x;
}

/* Fold every spelled-out LayerNorm of g into layer_norm(X, eps=0.0):
 * *out is a new graph (names kept) when something folded, else NULL. */
mirs_status mirs__graph_fold_norms(const mirs_graph *g, mirs_graph **out) {
  mirs_context *ctx = g->ctx;
  *out = NULL;
  int32_t nops = g->nops;
  bool any = false;
  for (int32_t i = 0; i < nops; i++) {
    if (g->ops[i].op == MIRS_OP_CUSTOM)
      return MIRS_OK;
    double eps;
    mirs_op nop;
    any = any || spelled_norm(g, i, &nop, &eps) >= 0;
  }
  if (!any)
    return MIRS_OK;
  /* Liveness, last op first: an op is live when an output or a live op
   * uses its result; a folded div uses X only. */
  bool *live = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *live);
  int32_t *map = mirs__core_alloc(ctx, ((size_t)g->nt + 1) * sizeof *map);
  if (!live || !map) {
    mirs__core_free(ctx, live);
    mirs__core_free(ctx, map);
    return MIRS_NOMEM;
  }
  for (int32_t i = 0; i < g->nout; i++)
    live[g->outputs[i]] = true;
  for (int32_t i = nops - 1; i >= 0; i--) {
    const mirs__kop *k = &g->ops[i];
    if (!live[k->out[0]])
      continue;
    double eps;
    mirs_op nop;
    int32_t x = spelled_norm(g, i, &nop, &eps);
    if (x >= 0)
      live[x] = true;
    else
      for (int32_t a = 0; a < k->nin; a++)
        live[k->in[a]] = true;
  }
  mirs_graph *f = NULL;
  mirs_status st = mirs__graph_new(ctx, g->name, &f);
  for (int32_t t = 0; st == MIRS_OK && t < g->nt; t++)
    if (g->t[t].producer < 0)
      st = mirs__graph_add_input(f, g->t[t].name, g->t[t].dtype, &g->t[t].shape, &map[t]);
  for (int32_t i = 0; st == MIRS_OK && i < nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (!live[k->out[0]])
      continue;
    double eps = 0.0;
    mirs_op nop;
    int32_t x = spelled_norm(g, i, &nop, &eps), in[2];
    for (int32_t a = 0; a < k->nin && a < 2; a++)
      in[a] = map[k->in[a]];
    if (x >= 0) {
      st = mirs__graph_add_op(f, g->t[k->out[0]].name, nop, 1, &map[x], -1, &map[k->out[0]]);
      if (st == MIRS_OK)
        f->ops[f->nops - 1].eps = eps;
    } else {
      st = mirs__graph_copy_op(f, g->t[k->out[0]].name, k, in, &map[k->out[0]]);
    }
  }
  for (int32_t i = 0; st == MIRS_OK && i < g->nout; i++)
    st = mirs__graph_mark_output(f, map[g->outputs[i]]);
  mirs__core_free(ctx, live);
  mirs__core_free(ctx, map);
  if (st != MIRS_OK) {
    mirs__graph_free(f);
    return st;
  }
  f->ugraph = g->ugraph;
  *out = f;
  return MIRS_OK;
}
