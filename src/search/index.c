/* SPDX-License-Identifier: MIT */
/* src/search/index.c - index labels: the dimension-aware part of the
 * pruning (see "Index labels" in search.h).
 *
 * The program's dims are grouped by a union-find over (tensor, dim): an
 * elementwise op joins each dim of extent > 1 of its result with the same
 * dim of every operand that is not broadcast there, a matmul joins a's
 * last dim with b's second-to-last (and the batch and outer dims with the
 * result's), a reduction and rms_norm keep the other dims.  The classes
 * are numbered in order of first appearance (deterministic); a dim of
 * extent 1 has no label.  The same rules run forward on candidates:
 * labels enter with the program's inputs and follow every op. */
#include <string.h>

#include "search/search.h"

static int32_t uf_find(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* Join (ta, da) and (tb, db) of program p when both dims have extent > 1. */
static void uf_join(const mirs_graph *p, int32_t *parent, int32_t ta, int da, int32_t tb, int db) {
  if (p->t[ta].shape.d[da] <= 1 || p->t[tb].shape.d[db] <= 1)
    return;
  int32_t a = uf_find(parent, ta * MIRS_MAX_DIMS + da),
          b = uf_find(parent, tb * MIRS_MAX_DIMS + db);
  if (a != b)
    parent[a > b ? a : b] = a < b ? a : b;
}

/* Whether tensor t of p holds label l (plab filled). */
static bool holds(const mirs_graph *p, const int8_t *plab, int32_t t, int8_t l) {
  for (int d = 0; d < p->t[t].shape.ndim; d++)
    if (plab[(size_t)t * MIRS_MAX_DIMS + (size_t)d] == l)
      return true;
  return false;
}

/* Record a reduction site (label l, rms or sum, inputs req); false when
 * the table is full. */
static bool add_site(mirs__search_space *sp, int8_t l, bool rms, uint64_t req) {
  if (l < 0)
    return true;
  for (int i = 0; i < sp->nsites; i++)
    if (sp->site_lab[i] == l && sp->site_rms[i] == rms && sp->site_req[i] == req)
      return true;
  if (sp->nsites >= MIRS__MAX_SITES)
    return false;
  sp->site_lab[sp->nsites] = l;
  sp->site_rms[sp->nsites] = rms;
  sp->site_req[sp->nsites++] = req;
  return true;
}

/* The reduction sites of p (labels in plab): dep[t * 64 + l] is the set of
 * inputs tensor t depends on through label l (see search.h). */
static mirs_status find_sites(mirs_context *ctx, const mirs_graph *p, const int8_t *plab,
                              mirs__search_space *sp) {
  size_t nt = (size_t)p->nt;
  uint64_t *dep = mirs__core_calloc(ctx, nt * MIRS__LAB_MAX + 1, sizeof *dep);
  uint64_t *atoms = mirs__core_calloc(ctx, nt + 1, sizeof *atoms);
  if (!dep || !atoms) {
    mirs__core_free(ctx, dep);
    mirs__core_free(ctx, atoms);
    return MIRS_NOMEM;
  }
  sp->nsites = 0;
  int nin = 0;
  for (int32_t t = 0; t < p->nt; t++)
    if (p->t[t].producer < 0) {
      atoms[t] = UINT64_C(1) << nin++;
      for (int8_t l = 0; l < MIRS__LAB_MAX; l++)
        if (holds(p, plab, t, l))
          dep[(size_t)t * MIRS__LAB_MAX + (size_t)l] = atoms[t];
    }
  bool ok = true;
  for (int32_t i = 0; ok && i < p->nops; i++) {
    const mirs__kop *k = &p->ops[i];
    int32_t o = k->out[0], a = k->in[0], b = k->nin > 1 ? k->in[1] : a;
    int nd = p->t[a].shape.ndim;
    const uint64_t *da = &dep[(size_t)a * MIRS__LAB_MAX], *db = &dep[(size_t)b * MIRS__LAB_MAX];
    uint64_t *dout = &dep[(size_t)o * MIRS__LAB_MAX];
    atoms[o] = atoms[a] | atoms[b];
    /* The reduced label, if any. */
    int8_t m = MIRS__LAB_NONE;
    if (k->op == MIRS_OP_MATMUL)
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)nd - 1];
    else if (k->op == MIRS_OP_SUM)
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)k->dim];
    else if (k->op == MIRS_OP_RMS_NORM)
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)nd - 1];
    for (int8_t l = 0; l < MIRS__LAB_MAX; l++) {
      switch (k->op) {
      case MIRS_OP_EXP:
      case MIRS_OP_SQRT:
      case MIRS_OP_SILU:
      case MIRS_OP_GELU:
      case MIRS_OP_RELU:
        dout[l] = da[l] ? atoms[a] : 0; /* non-linear: nothing comes out */
        break;
      case MIRS_OP_SQUARE:
        dout[l] = da[l];
        break;
      case MIRS_OP_RMS_NORM: /* x / rms_m(x): the rms varies with l != m */
        dout[l] = l != m && da[l] ? atoms[a] : da[l];
        break;
      case MIRS_OP_DIV:
        dout[l] = da[l] | (db[l] ? atoms[b] : 0);
        break;
      case MIRS_OP_MATMUL:
      case MIRS_OP_SUM:
        dout[l] = l == m ? 0 : da[l] | (k->op == MIRS_OP_MATMUL ? db[l] : 0);
        break;
      default: /* add, sub, mul */
        dout[l] = da[l] | db[l];
        break;
      }
    }
    if (m >= 0 && k->op == MIRS_OP_MATMUL)
      ok = add_site(sp, m, false, da[m] | db[m]);
    else if (m >= 0)
      ok = add_site(sp, m, k->op == MIRS_OP_RMS_NORM, da[m]);
  }
  if (!ok)
    sp->nsites = -1;
  mirs__core_free(ctx, dep);
  mirs__core_free(ctx, atoms);
  return MIRS_OK;
}

/* Label the program's dims (see search.h). */
mirs_status mirs__search_label_program(mirs_context *ctx, const mirs_graph *p, int8_t *plab,
                                       mirs__search_space *sp) {
  size_t n = (size_t)p->nt * MIRS_MAX_DIMS;
  memset(plab, MIRS__LAB_NONE, n);
  sp->reducible = 0;
  sp->nsites = -1;
  int ninputs = 0;
  for (int32_t t = 0; t < p->nt; t++)
    ninputs += p->t[t].producer < 0;
  int32_t *parent = mirs__core_calloc(ctx, n + 1, sizeof *parent);
  bool *red = mirs__core_calloc(ctx, n + 1, sizeof *red);
  if (!parent || !red) {
    mirs__core_free(ctx, parent);
    mirs__core_free(ctx, red);
    return MIRS_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    parent[i] = (int32_t)i;
  bool known = ninputs <= 64;
  for (int32_t i = 0; known && i < p->nops; i++) {
    const mirs__kop *k = &p->ops[i];
    int32_t o = k->out[0], a = k->in[0], b = k->nin > 1 ? k->in[1] : -1;
    int nd = p->t[o].shape.ndim;
    switch (mirs__graph_ops[k->op].kind) {
    case MIRS__KIND_UNARY:
    case MIRS__KIND_RMSNORM:
      for (int d = 0; d < nd; d++)
        uf_join(p, parent, o, d, a, d);
      if (k->op == MIRS_OP_RMS_NORM)
        red[a * MIRS_MAX_DIMS + nd - 1] = true;
      break;
    case MIRS__KIND_BINARY:
      for (int d = 0; d < nd; d++) {
        uf_join(p, parent, o, d, a, d);
        uf_join(p, parent, o, d, b, d);
      }
      break;
    case MIRS__KIND_MATMUL:
      for (int d = 0; d < nd - 2; d++) {
        uf_join(p, parent, o, d, a, d);
        uf_join(p, parent, o, d, b, d);
      }
      uf_join(p, parent, o, nd - 2, a, nd - 2);
      uf_join(p, parent, o, nd - 1, b, nd - 1);
      uf_join(p, parent, a, nd - 1, b, nd - 2);
      red[a * MIRS_MAX_DIMS + nd - 1] = true;
      break;
    case MIRS__KIND_REDUCE:
      for (int d = 0; d < nd; d++)
        if (d != k->dim)
          uf_join(p, parent, o, d, a, d);
      red[a * MIRS_MAX_DIMS + k->dim] = true;
      break;
    default:
      known = false; /* a custom kernel: no labels at all */
      break;
    }
  }
  int32_t *id = parent; /* reuse: the class id of each root, after the roots are read */
  int32_t *root = mirs__core_calloc(ctx, n + 1, sizeof *root);
  if (!root) {
    mirs__core_free(ctx, parent);
    mirs__core_free(ctx, red);
    return MIRS_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    root[i] = uf_find(parent, (int32_t)i);
  uint64_t rmask = 0;
  int next = 0;
  for (size_t i = 0; i < n; i++)
    id[i] = -1;
  for (int32_t t = 0; known && t < p->nt; t++)
    for (int d = 0; d < p->t[t].shape.ndim; d++) {
      size_t i = (size_t)t * MIRS_MAX_DIMS + (size_t)d;
      if (p->t[t].shape.d[d] <= 1)
        continue;
      int32_t r = root[i];
      if (id[r] < 0) {
        if (next >= MIRS__LAB_MAX) {
          known = false;
          break;
        }
        id[r] = next++;
      }
      plab[i] = (int8_t)id[r];
    }
  for (size_t i = 0; known && i < n; i++)
    if (red[i] && id[root[i]] >= 0)
      rmask |= UINT64_C(1) << id[root[i]];
  if (known)
    sp->reducible = rmask;
  else
    memset(plab, MIRS__LAB_NONE, n);
  mirs__core_free(ctx, root);
  mirs__core_free(ctx, parent);
  mirs__core_free(ctx, red);
  return known ? find_sites(ctx, p, plab, sp) : MIRS_OK;
}

/* Label of two aligned dims; *ok false when both have different labels. */
static int8_t join_label(int8_t x, int8_t y, bool *ok) {
  if (x < 0)
    return y;
  if (y >= 0 && x != y)
    *ok = false;
  return x;
}

/* Whether label l may be reduced (an rms or a sum) over a value that
 * depends on the inputs `atoms`. */
static bool may_reduce(const mirs__search_space *sp, int8_t l, bool rms, uint64_t atoms) {
  if (l < 0)
    return true;
  if (!((sp->reducible >> l) & 1))
    return false;
  if (sp->nsites < 0)
    return true;
  for (int i = 0; i < sp->nsites; i++)
    if (sp->site_lab[i] == l && sp->site_rms[i] == rms && (sp->site_req[i] & ~atoms) == 0)
      return true;
  return false;
}

/* Labels of op's result (see search.h). */
bool mirs__search_label_rule(const mirs__search_space *sp, mirs_op op, int dim, int nd,
                             const int8_t *a, const int8_t *b, uint64_t atoms, int8_t *out) {
  bool ok = true;
  memset(out, MIRS__LAB_NONE, MIRS_MAX_DIMS);
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
  case MIRS__KIND_INPUT:
  case MIRS__KIND_OUTPUT:
    memcpy(out, a, (size_t)nd);
    break;
  case MIRS__KIND_RMSNORM:
    memcpy(out, a, (size_t)nd);
    ok = may_reduce(sp, a[nd - 1], true, atoms);
    break;
  case MIRS__KIND_BINARY:
    for (int d = 0; d < nd; d++)
      out[d] = join_label(a[d], b[d], &ok);
    break;
  case MIRS__KIND_MATMUL: {
    for (int d = 0; d < nd - 2; d++)
      out[d] = join_label(a[d], b[d], &ok);
    out[nd - 2] = a[nd - 2];
    out[nd - 1] = b[nd - 1];
    int8_t k = join_label(a[nd - 1], b[nd - 2], &ok);
    ok = ok && may_reduce(sp, k, false, atoms);
    break;
  }
  case MIRS__KIND_REDUCE:
  case MIRS__KIND_ACCUM: {
    memcpy(out, a, (size_t)nd);
    int d = op == MIRS_OP_ACCUM_RMS ? nd - 1 : op == MIRS_OP_ACCUM ? -1 : dim;
    if (d >= 0 && d < nd) {
      ok = may_reduce(sp, a[d], op == MIRS_OP_ACCUM_RMS, atoms);
      out[d] = MIRS__LAB_NONE;
    }
    break;
  }
  case MIRS__KIND_CUSTOM:
    break;
  }
  return ok;
}

/* The rule for a block op (see search.h). */
bool mirs__search_bop_labels(const mirs__search_space *sp, mirs_op op, int dim, int nin, int nd,
                             const mirs__search_btinfo *in, mirs__search_btinfo *out) {
  const mirs__search_btinfo *b = &in[nin > 1 ? 1 : 0];
  out->atoms = in[0].atoms | b->atoms;
  return mirs__search_label_rule(sp, op, dim, nd, in[0].lab, b->lab, out->atoms, out->lab);
}

/* The rule for a kernel op (see search.h). */
bool mirs__search_kop_labels(const mirs__search_worker *w, mirs_op op, int dim, int nin,
                             const int32_t *in, int nd, int8_t *lab, uint64_t *atoms) {
  int32_t a = in[0], b = in[nin > 1 ? 1 : 0];
  *atoms = w->katoms[a] | w->katoms[b];
  return mirs__search_label_rule(&w->s->space, op, dim, nd, &w->klab[(size_t)a * MIRS_MAX_DIMS],
                                 &w->klab[(size_t)b * MIRS_MAX_DIMS], *atoms, lab);
}
