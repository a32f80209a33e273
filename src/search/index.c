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

/* ------------------------------------------------ index multiplicities */

/* Multiplicities are 16 nibbles, one per input (see search.h); a nibble
 * of MIRS__DEG_INF absorbs everything, a finite sum saturates to it (a
 * finite degree past 14 then bounds less, never more). */
_Static_assert(MIRS__DEG_INF == 15 && MIRS__DEG_ATOMS == 16,
               "the nibble rules assume 16 nibbles with 15 as infinity");

/* The nibble-wise rules below work on eight nibbles at a time, each
 * widened to a byte (the even nibbles, then the odd ones), so that a sum
 * of two nibbles (at most 30) or a difference plus 128 never carries into
 * the next byte: no loop over the 16 inputs in the candidates' hot path
 * (every block op listed runs them).  LO4 picks the low nibble of each
 * byte, HI8 the top bit. */
#define LO4 UINT64_C(0x0F0F0F0F0F0F0F0F)
#define HI8 UINT64_C(0x8080808080808080)

/* 0xFF in each byte whose top bit is set in bit7 (only top bits set). */
static inline uint64_t byte_mask(uint64_t bit7) {
  return (bit7 >> 7) * 0xFF;
}

/* Each byte of x (at most 30) capped at MIRS__DEG_INF (15): bytes of 16
 * and more are those that reach 128 when 112 is added. */
static inline uint64_t sat_bytes(uint64_t x) {
  uint64_t m = byte_mask((x + UINT64_C(0x7070707070707070)) & HI8);
  return (x & ~m) | (LO4 & m);
}

/* Bytewise max of x and y (bytes at most 15): x >= y where x + 128 - y
 * keeps its top bit. */
static inline uint64_t max_bytes(uint64_t x, uint64_t y) {
  uint64_t m = byte_mask(((x | HI8) - y) & HI8);
  return (x & m) | (y & ~m);
}

/* Whether each byte of x is at most y's (bytes at most 15). */
static inline bool le_bytes(uint64_t x, uint64_t y) {
  return (((y | HI8) - x) & HI8) == HI8;
}

/* Nibble-wise a + b (a mul's operands). */
static uint64_t deg_add(uint64_t a, uint64_t b) {
  return sat_bytes((a & LO4) + (b & LO4)) | sat_bytes(((a >> 4) & LO4) + ((b >> 4) & LO4)) << 4;
}

/* Nibble-wise max (an add's operands). */
static uint64_t deg_max(uint64_t a, uint64_t b) {
  return max_bytes(a & LO4, b & LO4) | max_bytes((a >> 4) & LO4, (b >> 4) & LO4) << 4;
}

/* MIRS__DEG_INF for every tracked input of `atoms`: they sit inside a
 * non-linear function of a value that holds the instance. */
static uint64_t deg_inf(uint64_t atoms) {
  /* Bit i of the 16 tracked inputs moves to bit 4i (halving the distance
   * between the groups each step), then each 1 becomes a nibble of 15. */
  uint64_t x = atoms & 0xFFFF;
  x = (x | x << 24) & UINT64_C(0x000000FF000000FF);
  x = (x | x << 12) & UINT64_C(0x000F000F000F000F);
  x = (x | x << 6) & UINT64_C(0x0303030303030303);
  x = (x | x << 3) & UINT64_C(0x1111111111111111);
  return x * MIRS__DEG_INF;
}

/* Whether multiplicities a are bounded by b: each finite nibble of a at
 * most b's, an infinite one only by an infinite one.  (MIRS__DEG_INF is
 * the largest nibble, so both say: each nibble of a at most b's.) */
static bool deg_le(uint64_t a, uint64_t b) {
  return le_bytes(a & LO4, b & LO4) && le_bytes((a >> 4) & LO4, (b >> 4) & LO4);
}

/* Multiplicities of op's result (rank nd) from its operands' (a, b; b = a
 * for a unary op) into out; *red: those of the reduced instance's summand
 * (0 when op reduces nothing). */
static void deg_rule(mirs_op op, int dim, int nd, const mirs__search_ix *a,
                     const mirs__search_ix *b, uint64_t *out, uint64_t *red) {
  const uint64_t *da = a->deg, *db = b->deg;
  *red = 0;
  memset(out, 0, sizeof(uint64_t) * MIRS_MAX_DIMS);
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY: {
    /* neg and the scalar ops other than c / x are affine: they keep the
     * multiplicities; pow by a small natural n multiplies them by n. */
    bool affine = op == MIRS_OP_NEG || op == MIRS_OP_ADD_SCALAR || op == MIRS_OP_MUL_SCALAR ||
                  op == MIRS_OP_DIV_SCALAR || op == MIRS_OP_RSUB_SCALAR;
    for (int d = 0; d < nd; d++)
      out[d] = op == MIRS_OP_SQUARE ? deg_add(da[d], da[d])
               : affine             ? da[d]
               : da[d]              ? deg_inf(a->atoms)
                                    : 0;
    break;
  }
  case MIRS__KIND_TRANSPOSE:
    memcpy(out, da, sizeof(uint64_t) * (size_t)nd);
    out[nd - 2] = da[nd - 1];
    out[nd - 1] = da[nd - 2];
    break;
  case MIRS__KIND_INPUT:
  case MIRS__KIND_OUTPUT:
    memcpy(out, da, sizeof(uint64_t) * (size_t)nd);
    break;
  case MIRS__KIND_RMSNORM: /* x / rms_m(x): the rms is a sum over m, non-linear elsewhere */
    for (int d = 0; d < nd - 1; d++)
      out[d] = da[d] ? deg_inf(a->atoms) : 0;
    out[nd - 1] = *red = da[nd - 1];
    break;
  case MIRS__KIND_BINARY:
    for (int d = 0; d < nd; d++)
      out[d] = op == MIRS_OP_MUL   ? deg_add(da[d], db[d])
               : op == MIRS_OP_DIV ? deg_add(da[d], db[d] ? deg_inf(b->atoms) : 0)
                                   : deg_max(da[d], db[d]);
    break;
  case MIRS__KIND_MATMUL:
    for (int d = 0; d < nd - 2; d++)
      out[d] = deg_add(da[d], db[d]);
    out[nd - 2] = da[nd - 2];
    out[nd - 1] = db[nd - 1];
    *red = deg_add(da[nd - 1], db[nd - 2]);
    break;
  case MIRS__KIND_REDUCE:
  case MIRS__KIND_ACCUM: {
    int r = op == MIRS_OP_ACCUM_RMS                                 ? nd - 1
            : op == MIRS_OP_ACCUM || op == MIRS_OP_ACCUM_ONLINE ? -1
                                                                    : dim;
    for (int d = 0; d < nd; d++)
      out[d] = op != MIRS_OP_ACCUM_RMS ? da[d] : da[d] ? deg_inf(a->atoms) : 0;
    if (r >= 0 && r < nd) {
      *red = da[r];
      out[r] = 0;
    }
    break;
  }
  case MIRS__KIND_CUSTOM:
  case MIRS__KIND_LAYOUT: /* (never reached: a program with one has no labels) */
    break;
  }
}

/* Record a reduction site (label l, rms or sum, inputs req, multiplicities
 * deg); false when the table is full. */
static bool add_site(mirs__search_space *sp, int8_t l, bool rms, uint64_t req, uint64_t deg) {
  if (l < 0)
    return true;
  for (int i = 0; i < sp->nsites; i++)
    if (sp->site_lab[i] == l && sp->site_rms[i] == rms && sp->site_req[i] == req &&
        sp->site_deg[i] == deg)
      return true;
  if (sp->nsites >= MIRS__MAX_SITES)
    return false;
  sp->site_lab[sp->nsites] = l;
  sp->site_rms[sp->nsites] = rms;
  sp->site_deg[sp->nsites] = deg;
  sp->site_req[sp->nsites++] = req;
  return true;
}

/* Record a sink (label l, multiplicities deg); false when the table is full. */
static bool add_sink(mirs__search_space *sp, int8_t l, uint64_t deg) {
  if (l < 0)
    return true;
  for (int i = 0; i < sp->nsinks; i++)
    if (sp->sink_lab[i] == l && deg_le(deg, sp->sink_deg[i]))
      return true;
  if (sp->nsinks >= MIRS__MAX_SINKS)
    return false;
  sp->sink_lab[sp->nsinks] = l;
  sp->sink_deg[sp->nsinks++] = deg;
  return true;
}

/* The reduction sites of p (labels in plab): dep[t * 64 + l] is the set of
 * inputs tensor t depends on through label l (see search.h). */
static mirs_status find_sites(mirs_context *ctx, const mirs_graph *p, const int8_t *plab,
                              mirs__search_space *sp) {
  size_t nt = (size_t)p->nt;
  uint64_t *dep = mirs__core_calloc(ctx, nt * MIRS__LAB_MAX + 1, sizeof *dep);
  uint64_t *atoms = mirs__core_calloc(ctx, nt + 1, sizeof *atoms);
  uint64_t *pdeg = mirs__core_calloc(ctx, nt * MIRS_MAX_DIMS + 1, sizeof *pdeg);
  if (!dep || !atoms || !pdeg) {
    mirs__core_free(ctx, dep);
    mirs__core_free(ctx, atoms);
    mirs__core_free(ctx, pdeg);
    return MIRS_NOMEM;
  }
  sp->nsites = 0;
  sp->nsinks = 0;
  int nin = 0;
  for (int32_t t = 0; t < p->nt; t++)
    if (p->t[t].producer < 0) {
      mirs__search_input_deg(&plab[(size_t)t * MIRS_MAX_DIMS], nin,
                             &pdeg[(size_t)t * MIRS_MAX_DIMS]);
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
    mirs__search_ix xa = {&plab[(size_t)a * MIRS_MAX_DIMS], atoms[a], &pdeg[(size_t)a * MIRS_MAX_DIMS]},
                    xb = {&plab[(size_t)b * MIRS_MAX_DIMS], atoms[b], &pdeg[(size_t)b * MIRS_MAX_DIMS]};
    uint64_t red;
    deg_rule(k->op, k->dim, nd, &xa, &xb, &pdeg[(size_t)o * MIRS_MAX_DIMS], &red);
    atoms[o] = atoms[a] | atoms[b];
    /* The reduced label, if any. */
    int8_t m = MIRS__LAB_NONE;
    if (k->op == MIRS_OP_MATMUL)
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)nd - 1];
    else if (mirs__graph_ops[k->op].kind == MIRS__KIND_REDUCE) /* (sum, mean, max: sites) */
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)k->dim];
    else if (mirs__graph_ops[k->op].kind == MIRS__KIND_RMSNORM)
      m = plab[(size_t)a * MIRS_MAX_DIMS + (size_t)nd - 1];
    for (int8_t l = 0; l < MIRS__LAB_MAX; l++) {
      switch (k->op) {
      case MIRS_OP_EXP:
      case MIRS_OP_SQRT:
      case MIRS_OP_SILU:
      case MIRS_OP_GELU:
      case MIRS_OP_RELU:
      case MIRS_OP_ABS:
      case MIRS_OP_CAUSAL_MASK:
        dout[l] = da[l] ? atoms[a] : 0; /* non-linear: nothing comes out */
        break;
      case MIRS_OP_SQUARE:
        dout[l] = da[l];
        break;
      case MIRS_OP_RMS_NORM: /* x / rms_m(x): the rms varies with l != m */
      case MIRS_OP_LAYER_NORM: /* (x - mean_m) / std_m(x): likewise */
        dout[l] = l != m && da[l] ? atoms[a] : da[l];
        break;
      case MIRS_OP_DIV:
        dout[l] = da[l] | (db[l] ? atoms[b] : 0);
        break;
      case MIRS_OP_MATMUL:
      case MIRS_OP_SUM:
      case MIRS_OP_MEAN:
      case MIRS_OP_MAX:
      case MIRS_OP_MIN:
        dout[l] = l == m ? 0 : da[l] | (k->op == MIRS_OP_MATMUL ? db[l] : 0);
        break;
      default: /* add, sub, mul */
        dout[l] = da[l] | db[l];
        break;
      }
    }
    if (m >= 0 && k->op == MIRS_OP_MATMUL)
      ok = add_site(sp, m, false, da[m] | db[m], red);
    else if (m >= 0)
      ok = add_site(sp, m, mirs__graph_ops[k->op].kind == MIRS__KIND_RMSNORM, da[m], red);
    if (m >= 0 && k->op == MIRS_OP_LAYER_NORM) /* its mean and variance are sums over m */
      ok = ok && add_site(sp, m, false, da[m], red) &&
           add_site(sp, m, false, da[m], deg_add(red, red));
    if (m >= 0)
      ok = ok && add_sink(sp, m, red);
  }
  /* The outputs' dims are the other sinks. */
  for (int i = 0; ok && i < p->nout; i++) {
    int32_t t = p->outputs[i];
    for (int d = 0; ok && d < p->t[t].shape.ndim; d++)
      ok = add_sink(sp, plab[(size_t)t * MIRS_MAX_DIMS + (size_t)d],
                    pdeg[(size_t)t * MIRS_MAX_DIMS + (size_t)d]);
  }
  if (!ok)
    sp->nsites = sp->nsinks = -1;
  mirs__core_free(ctx, dep);
  mirs__core_free(ctx, atoms);
  mirs__core_free(ctx, pdeg);
  return MIRS_OK;
}

/* Label the program's dims (see search.h). */
mirs_status mirs__search_label_program(mirs_context *ctx, const mirs_graph *p, int8_t *plab,
                                       mirs__search_space *sp) {
  size_t n = (size_t)p->nt * MIRS_MAX_DIMS;
  memset(plab, MIRS__LAB_NONE, n);
  sp->reducible = 0;
  sp->nsites = sp->nsinks = -1;
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
    case MIRS__KIND_TRANSPOSE:
      for (int d = 0; d < nd; d++)
        uf_join(p, parent, o, d, a, d < nd - 2 ? d : 2 * nd - 3 - d);
      break;
    case MIRS__KIND_UNARY:
    case MIRS__KIND_RMSNORM:
      for (int d = 0; d < nd; d++)
        uf_join(p, parent, o, d, a, d);
      if (mirs__graph_ops[k->op].kind == MIRS__KIND_RMSNORM)
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
      /* A custom kernel, or a layout op (reshape, permute, slice): no labels at all (a
       * reshape splits and merges dims, which one label per dim cannot
       * say; docs/SOUNDNESS.md "Layout operators"). */
      known = false;
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
 * depends on the inputs `atoms`, with multiplicities red through l. */
static bool may_reduce(const mirs__search_space *sp, int8_t l, bool rms, uint64_t atoms,
                       uint64_t red) {
  if (l < 0)
    return true;
  if (!((sp->reducible >> l) & 1))
    return false;
  if (sp->nsites < 0)
    return true;
  for (int i = 0; i < sp->nsites; i++)
    if (sp->site_lab[i] == l && sp->site_rms[i] == rms && (sp->site_req[i] & ~atoms) == 0 &&
        (!sp->index_degree || deg_le(red, sp->site_deg[i])))
      return true;
  return false;
}

/* Whether some sink of label l bounds the multiplicities deg. */
static bool may_sink(const mirs__search_space *sp, int8_t l, uint64_t deg) {
  if (l < 0 || sp->nsinks < 0 || !sp->index_degree)
    return true;
  for (int i = 0; i < sp->nsinks; i++)
    if (sp->sink_lab[i] == l && deg_le(deg, sp->sink_deg[i]))
      return true;
  return false;
}

/* Multiplicities of a program input (atom index i) with labels lab. */
void mirs__search_input_deg(const int8_t *lab, int i, uint64_t *deg) {
  for (int d = 0; d < MIRS_MAX_DIMS; d++)
    deg[d] = lab[d] >= 0 && i < MIRS__DEG_ATOMS ? UINT64_C(1) << (4 * i) : 0;
}

/* Labels of op's result (see search.h). */
bool mirs__search_label_rule(const mirs__search_space *sp, mirs_op op, int dim, int nd,
                             const mirs__search_ix *xa, const mirs__search_ix *xb, int8_t *out,
                             uint64_t *deg) {
  bool ok = true;
  const int8_t *a = xa->lab, *b = xb->lab;
  uint64_t atoms = xa->atoms | xb->atoms, red;
  deg_rule(op, dim, nd, xa, xb, deg, &red);
  memset(out, MIRS__LAB_NONE, MIRS_MAX_DIMS);
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_UNARY:
  case MIRS__KIND_INPUT:
  case MIRS__KIND_OUTPUT:
    memcpy(out, a, (size_t)nd);
    break;
  case MIRS__KIND_TRANSPOSE:
    memcpy(out, a, (size_t)nd);
    out[nd - 2] = a[nd - 1];
    out[nd - 1] = a[nd - 2];
    break;
  case MIRS__KIND_RMSNORM:
    memcpy(out, a, (size_t)nd);
    ok = may_reduce(sp, a[nd - 1], true, atoms, red);
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
    ok = ok && may_reduce(sp, k, false, atoms, red);
    break;
  }
  case MIRS__KIND_REDUCE:
  case MIRS__KIND_ACCUM: {
    memcpy(out, a, (size_t)nd);
    int d = op == MIRS_OP_ACCUM_RMS                                 ? nd - 1
            : op == MIRS_OP_ACCUM || op == MIRS_OP_ACCUM_ONLINE ? -1
                                                                    : dim;
    if (d >= 0 && d < nd) {
      ok = may_reduce(sp, a[d], op == MIRS_OP_ACCUM_RMS, atoms, red);
      out[d] = MIRS__LAB_NONE;
    }
    break;
  }
  case MIRS__KIND_CUSTOM:
  case MIRS__KIND_LAYOUT: /* (no search move makes one: no labels) */
    break;
  }
  for (int d = 0; ok && d < nd; d++)
    ok = may_sink(sp, out[d], deg[d]);
  return ok;
}

/* The rule for a block op (see search.h). */
bool mirs__search_bop_labels(const mirs__search_space *sp, mirs_op op, int dim, int nin, int nd,
                             const mirs__search_btinfo *in, mirs__search_btinfo *out) {
  const mirs__search_btinfo *b = &in[nin > 1 ? 1 : 0];
  mirs__search_ix xa = {in[0].lab, in[0].atoms, in[0].deg}, xb = {b->lab, b->atoms, b->deg};
  out->atoms = in[0].atoms | b->atoms;
  return mirs__search_label_rule(sp, op, dim, nd, &xa, &xb, out->lab, out->deg);
}

/* The rule for a kernel op (see search.h). */
bool mirs__search_kop_labels(const mirs__search_worker *w, mirs_op op, int dim, int nin,
                             const int32_t *in, int nd, int8_t *lab, uint64_t *atoms,
                             uint64_t *deg) {
  int32_t a = in[0], b = in[nin > 1 ? 1 : 0];
  mirs__search_ix xa = {&w->klab[(size_t)a * MIRS_MAX_DIMS], w->katoms[a],
                        &w->kdeg[(size_t)a * MIRS_MAX_DIMS]},
                  xb = {&w->klab[(size_t)b * MIRS_MAX_DIMS], w->katoms[b],
                        &w->kdeg[(size_t)b * MIRS_MAX_DIMS]};
  *atoms = xa.atoms | xb.atoms;
  return mirs__search_label_rule(&w->s->space, op, dim, nd, &xa, &xb, lab, deg);
}
