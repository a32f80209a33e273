/* SPDX-License-Identifier: MIT */
/* src/verify/absexpr.c - abstract expressions in normal form: the
 * hash-consed arena, the normalising builders, the expressions of block
 * and kernel ops, symbol counts and printing (see absexpr.h for the normal
 * form).  Deciding whether one expression can be a subexpression of
 * another is pruning's job (prune.c).
 *
 * Invariants:
 *  - arena nodes are hash-consed: (kind, fn, k, kd, arg, children, name)
 *    identifies a node; children lists are sorted by child hash, so equal
 *    multisets give equal lists;
 *  - the hash-cons chains are newest-first, so releasing the newest nodes
 *    (LIFO) only ever unlinks chain heads;
 *  - builders use the arena's scratch stack with strict push/pop nesting
 *    and address it by index (it may move when it grows);
 *  - an arena is used by one thread at a time; nothing here is shared. */
#include "config.h"

#include "verify/absexpr.h"

#include <string.h>

/* ================================================================ arena */

#define HASH_SEED UINT64_C(0x6d69727361627321)

/* Initialise an empty arena allocating through ctx. */
mirs_status mirs__abs_arena_init(mirs__abs_arena *a, mirs_context *ctx) {
  memset(a, 0, sizeof *a);
  a->ctx = ctx;
  a->nbuckets = 256;
  a->buckets = mirs__core_alloc(ctx, a->nbuckets * sizeof *a->buckets);
  if (!a->buckets)
    return MIRS_NOMEM;
  for (uint32_t i = 0; i < a->nbuckets; i++)
    a->buckets[i] = -1;
  return MIRS_OK;
}

/* Free everything the arena holds. */
void mirs__abs_arena_free(mirs__abs_arena *a) {
  if (!a || !a->ctx)
    return;
  mirs__core_free(a->ctx, a->nodes);
  mirs__core_free(a->ctx, a->kids);
  mirs__core_free(a->ctx, a->chars);
  mirs__core_free(a->ctx, a->buckets);
  mirs__core_free(a->ctx, a->tmp);
  memset(a, 0, sizeof *a);
}

/* Remember the arena's current extent. */
mirs__abs_mark mirs__abs_mark_get(const mirs__abs_arena *a) {
  mirs__abs_mark m = {a->nn, a->nkids, a->nchars};
  return m;
}

/* Drop every node created after m, newest first, unlinking chain heads. */
void mirs__abs_release(mirs__abs_arena *a, mirs__abs_mark m) {
  while (a->nn > m.nn) {
    int32_t id = --a->nn;
    uint32_t b = (uint32_t)(a->nodes[id].hash & (a->nbuckets - 1));
    if (ALWAYS(a->buckets[b] == id))
      a->buckets[b] = a->nodes[id].next;
  }
  a->nkids = m.nkids;
  a->nchars = m.nchars;
}

/* Double the bucket array and relink every node oldest-first. */
static mirs_status arena_rehash(mirs__abs_arena *a) {
  uint32_t nb = a->nbuckets * 2;
  int32_t *bk = mirs__core_alloc(a->ctx, nb * sizeof *bk);
  if (!bk)
    return MIRS_NOMEM;
  for (uint32_t i = 0; i < nb; i++)
    bk[i] = -1;
  for (int32_t id = 0; id < a->nn; id++) {
    uint32_t b = (uint32_t)(a->nodes[id].hash & (nb - 1));
    a->nodes[id].next = bk[b];
    bk[b] = id;
  }
  mirs__core_free(a->ctx, a->buckets);
  a->buckets = bk;
  a->nbuckets = nb;
  return MIRS_OK;
}

/* Push v on the scratch stack. */
static mirs_status tmp_push(mirs__abs_arena *a, int32_t v) {
  if (a->ntmp == a->captmp)
    MIRS_CHECK(a->ctx,
               mirs__core_grow(a->ctx, (void **)&a->tmp, &a->captmp, a->ntmp + 1, sizeof *a->tmp));
  a->tmp[a->ntmp++] = v;
  return MIRS_OK;
}

/* Sort ids[0..n) by node hash (insertion sort: lists are short). */
static void sort_by_hash(const mirs__abs_arena *a, int32_t *ids, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    int32_t v = ids[i];
    uint64_t h = a->nodes[v].hash;
    uint32_t j = i;
    while (j > 0 && a->nodes[ids[j - 1]].hash > h) {
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = v;
  }
}

/* Whether node id has exactly the given content. */
static bool node_same(const mirs__abs_arena *a, int32_t id, const mirs__abs_node *p,
                      const int32_t *kids, const char *name) {
  const mirs__abs_node *q = &a->nodes[id];
  if (q->hash != p->hash || q->kind != p->kind || q->fn != p->fn || q->k != p->k ||
      q->kd != p->kd || q->arg != p->arg || q->n != p->n || q->nd != p->nd)
    return false;
  if (name)
    return strcmp(a->chars + q->off, name) == 0;
  return p->n + p->nd == 0 ||
         memcmp(a->kids + q->off, kids, (size_t)(p->n + p->nd) * sizeof *kids) == 0;
}

/* Find or create the node with content p (kind, fn, k, kd, arg, n, nd),
 * children kids[0..n+nd) (already in canonical order) and, for an ATOM,
 * name.  Computes hash, bits, atoms and boxed. */
static mirs_status intern(mirs__abs_arena *a, mirs__abs_node p, const int32_t *kids,
                          const char *name, mirs__abs_id *out) {
  uint32_t nk = p.n + p.nd;
  uint64_t h = mirs__hash_mix(HASH_SEED, p.kind);
  h = mirs__hash_mix(h, p.fn);
  h = mirs__hash_mix(h, (uint64_t)p.k);
  h = mirs__hash_mix(h, (uint64_t)p.kd);
  h = mirs__hash_mix(h, p.arg >= 0 ? a->nodes[p.arg].hash : 0);
  h = mirs__hash_mix(h, p.n);
  h = mirs__hash_mix(h, p.nd);
  for (uint32_t i = 0; i < nk; i++)
    h = mirs__hash_mix(h, a->nodes[kids[i]].hash);
  if (name)
    h = mirs__hash_str(h, name);
  p.hash = h;
  for (int32_t id = a->buckets[h & (a->nbuckets - 1)]; id >= 0; id = a->nodes[id].next)
    if (node_same(a, id, &p, kids, name)) {
      *out = id;
      return MIRS_OK;
    }

  p.bits = 0;
  p.atoms = 0;
  p.boxed = false;
  uint64_t size = 1;
  if (p.arg >= 0) {
    p.bits = a->nodes[p.arg].bits;
    p.atoms = a->nodes[p.arg].atoms;
    p.boxed = a->nodes[p.arg].boxed;
    size += a->nodes[p.arg].size;
  }
  for (uint32_t i = 0; i < nk; i++) {
    p.bits |= a->nodes[kids[i]].bits;
    p.atoms |= a->nodes[kids[i]].atoms;
    p.boxed |= a->nodes[kids[i]].boxed;
    size += a->nodes[kids[i]].size;
    if (size > UINT32_MAX)
      size = UINT32_MAX;
  }
  p.size = (uint32_t)size;
  switch ((mirs__abs_kind)p.kind) {
  case MIRS__ABS_ATOM:
    p.atoms = UINT64_C(1) << (h & 63);
    break;
  case MIRS__ABS_APP:
    p.bits |= MIRS__ABS_BIT_FN(p.fn);
    break;
  case MIRS__ABS_RMS:
    p.bits |= MIRS__ABS_BIT_RMS;
    break;
  case MIRS__ABS_BOX:
    p.boxed = true;
    break;
  case MIRS__ABS_TERM:
    if (p.k > 1 || p.kd > 1)
      p.bits |= MIRS__ABS_BIT_SUM;
    if (p.nd > 0)
      p.bits |= MIRS__ABS_BIT_DIV;
    for (uint32_t i = p.n; i < nk; i++)
      if (a->nodes[kids[i]].kind == MIRS__ABS_BOX)
        p.bits |= MIRS__ABS_BIT_QDIV;
    break;
  case MIRS__ABS_POLY:
    if (p.n >= 2)
      p.bits |= MIRS__ABS_BIT_ADD;
    break;
  }

  mirs_context *ctx = a->ctx;
  if ((uint32_t)a->nn >= a->nbuckets)
    MIRS_CHECK(ctx, arena_rehash(a));
  MIRS_CHECK(
      ctx, mirs__core_grow(ctx, (void **)&a->nodes, &a->capn, (size_t)a->nn + 1, sizeof *a->nodes));
  if (name) {
    size_t len = strlen(name) + 1;
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&a->chars, &a->capc, a->nchars + len, 1));
    memcpy(a->chars + a->nchars, name, len);
    p.off = a->nchars;
    a->nchars += (uint32_t)len;
  } else {
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&a->kids, &a->capk, (size_t)a->nkids + nk,
                                    sizeof *a->kids));
    if (nk)
      memcpy(a->kids + a->nkids, kids, nk * sizeof *kids);
    p.off = a->nkids;
    a->nkids += nk;
  }
  uint32_t b = (uint32_t)(h & (a->nbuckets - 1));
  p.next = a->buckets[b];
  a->buckets[b] = a->nn;
  a->nodes[a->nn] = p;
  *out = a->nn++;
  return MIRS_OK;
}

/* A blank node prototype of kind k. */
static mirs__abs_node proto(mirs__abs_kind kind) {
  mirs__abs_node p;
  memset(&p, 0, sizeof p);
  p.kind = (uint8_t)kind;
  p.arg = -1;
  return p;
}

/* ================================================================ normal form */

/* x·y for extents, failing with MIRS_LIMIT on overflow. */
static mirs_status ext_mul(mirs__abs_arena *a, int64_t x, int64_t y, int64_t *out) {
  if (__builtin_mul_overflow(x, y, out))
    return MIRS_FAIL(a->ctx, MIRS_LIMIT, "abstract expression extent overflows: %lld x %lld",
                     (long long)x, (long long)y);
  return MIRS_OK;
}

/* The status of a result past the MIRS__ABS_MAX_* bounds: MIRS_LIMIT
 * without a message (mirs__abs_apply turns it into "no expression"). */
static mirs_status too_large(mirs__abs_arena *a) {
  a->too_large = true;
  return MIRS_LIMIT;
}

/* Intern the POLY of the term ids at tmp[base..ntmp) and pop them. */
static mirs_status make_poly(mirs__abs_arena *a, size_t base, mirs__abs_id *out) {
  uint32_t n = (uint32_t)(a->ntmp - base);
  if (n > MIRS__ABS_MAX_POLY) {
    a->ntmp = base;
    return too_large(a);
  }
  sort_by_hash(a, a->tmp + base, n);
  mirs__abs_node p = proto(MIRS__ABS_POLY);
  p.n = n;
  mirs_status s = intern(a, p, a->tmp + base, NULL, out);
  a->ntmp = base;
  return s;
}

/* Merge the sorted list kids[xoff..xoff+nx) with the sorted list y onto
 * the scratch stack; y is kids[yoff..) or, when y_tmp, tmp[yoff..) (read
 * by index: pushing may move the scratch stack). */
static mirs_status push_merged(mirs__abs_arena *a, uint32_t xoff, uint32_t nx, bool y_tmp,
                               size_t yoff, uint32_t ny) {
  uint32_t i = 0, j = 0;
  while (i < nx || j < ny) {
    int32_t yv = j < ny ? (y_tmp ? a->tmp[yoff + j] : a->kids[yoff + j]) : -1;
    int32_t v;
    if (j >= ny || (i < nx && a->nodes[a->kids[xoff + i]].hash <= a->nodes[yv].hash)) {
      v = a->kids[xoff + i++];
    } else {
      v = yv;
      j++;
    }
    MIRS_CHECK(a->ctx, tmp_push(a, v));
  }
  return MIRS_OK;
}

/* Intern the TERM sum(k, N)/sum(kd, D) whose N then D lists (each sorted)
 * are at tmp[base..ntmp); pops them.  The result id is pushed. */
static mirs_status make_term(mirs__abs_arena *a, size_t base, int64_t k, int64_t kd, uint32_t n) {
  mirs__abs_node p = proto(MIRS__ABS_TERM);
  p.k = k;
  p.kd = kd;
  p.n = n;
  p.nd = (uint32_t)(a->ntmp - base) - n;
  mirs__abs_id id;
  mirs_status s = intern(a, p, a->tmp + base, NULL, &id);
  a->ntmp = base;
  if (s != MIRS_OK)
    return s;
  return tmp_push(a, id);
}

/* Push the product of terms t1 and t2 (extents multiply, factor lists
 * merge): sum(k1,N1)/sum(kd1,D1) · sum(k2,N2)/sum(kd2,D2) =
 * sum(k1·k2, N1·N2)/sum(kd1·kd2, D1·D2) by S2, S1, V2, V3. */
static mirs_status push_term_mul(mirs__abs_arena *a, mirs__abs_id t1, mirs__abs_id t2) {
  mirs__abs_node x = a->nodes[t1], y = a->nodes[t2];
  if ((uint64_t)x.n + y.n > MIRS__ABS_MAX_FACTORS || (uint64_t)x.nd + y.nd > MIRS__ABS_MAX_FACTORS)
    return too_large(a);
  int64_t k, kd;
  MIRS_CHECK(a->ctx, ext_mul(a, x.k, y.k, &k));
  MIRS_CHECK(a->ctx, ext_mul(a, x.kd, y.kd, &kd));
  size_t base = a->ntmp;
  MIRS_CHECK(a->ctx, push_merged(a, x.off, x.n, false, y.off, y.n));
  MIRS_CHECK(a->ctx, push_merged(a, x.off + x.n, x.nd, false, (size_t)y.off + y.n, y.nd));
  return make_term(a, base, k, kd, x.n + y.n);
}

/* Push term t divided by sum(kq, Πq) where q is the sorted list
 * tmp[qoff..qoff+nq). */
static mirs_status push_term_div(mirs__abs_arena *a, mirs__abs_id t, int64_t kq, size_t qoff,
                                 uint32_t nq) {
  mirs__abs_node x = a->nodes[t];
  if ((uint64_t)x.nd + nq > MIRS__ABS_MAX_FACTORS)
    return too_large(a);
  int64_t kd;
  MIRS_CHECK(a->ctx, ext_mul(a, x.kd, kq, &kd));
  size_t base = a->ntmp;
  for (uint32_t i = 0; i < x.n; i++)
    MIRS_CHECK(a->ctx, tmp_push(a, a->kids[x.off + i]));
  MIRS_CHECK(a->ctx, push_merged(a, x.off + x.n, x.nd, true, qoff, nq));
  return make_term(a, base, x.k, kd, x.n);
}

/* The POLY holding the single factor f. */
static mirs_status factor_poly(mirs__abs_arena *a, mirs__abs_id f, mirs__abs_id *out) {
  size_t base = a->ntmp;
  MIRS_CHECK(a->ctx, tmp_push(a, f));
  MIRS_CHECK(a->ctx, make_term(a, base, 1, 1, 1));
  return make_poly(a, base, out);
}

/* A factor node of kind kind over argument poly x. */
static mirs_status make_factor(mirs__abs_arena *a, mirs__abs_kind kind, int fn, int64_t k,
                               mirs__abs_id x, mirs__abs_id *out) {
  mirs__abs_node p = proto(kind);
  p.fn = (uint8_t)fn;
  p.k = k;
  p.arg = x;
  return intern(a, p, NULL, NULL, out);
}

/* The POLY of the atom called name. */
mirs_status mirs__abs_atom(mirs__abs_arena *a, const char *name, mirs__abs_id *out) {
  mirs__abs_id f;
  MIRS_CHECK(a->ctx, intern(a, proto(MIRS__ABS_ATOM), NULL, name, &f));
  return factor_poly(a, f, out);
}

/* f(x) for an uninterpreted unary symbol. */
mirs_status mirs__abs_app(mirs__abs_arena *a, mirs__abs_fn f, mirs__abs_id x, mirs__abs_id *out) {
  mirs__abs_id id;
  MIRS_CHECK(a->ctx, make_factor(a, MIRS__ABS_APP, (int)f, 0, x, &id));
  return factor_poly(a, id, out);
}

/* rms(n, x). */
mirs_status mirs__abs_rms(mirs__abs_arena *a, int64_t n, mirs__abs_id x, mirs__abs_id *out) {
  mirs__abs_id id;
  MIRS_CHECK(a->ctx, make_factor(a, MIRS__ABS_RMS, 0, n, x, &id));
  return factor_poly(a, id, out);
}

/* sum(k, x): k multiplies every term's extent (S4, then S1/S2/S3). */
mirs_status mirs__abs_sum(mirs__abs_arena *a, int64_t k, mirs__abs_id x, mirs__abs_id *out) {
  if (k < 1)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "sum extent %lld < 1", (long long)k);
  if (k == 1) { /* S0 */
    *out = x;
    return MIRS_OK;
  }
  mirs__abs_node px = a->nodes[x];
  size_t base = a->ntmp;
  for (uint32_t i = 0; i < px.n; i++) {
    mirs__abs_node t = a->nodes[a->kids[px.off + i]];
    int64_t kk;
    MIRS_CHECK(a->ctx, ext_mul(a, t.k, k, &kk));
    size_t tb = a->ntmp;
    for (uint32_t j = 0; j < t.n + t.nd; j++)
      MIRS_CHECK(a->ctx, tmp_push(a, a->kids[t.off + j]));
    MIRS_CHECK(a->ctx, make_term(a, tb, kk, t.kd, t.n));
  }
  return make_poly(a, base, out);
}

/* x + y: the union of the term multisets (A1, A2). */
mirs_status mirs__abs_add(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out) {
  mirs__abs_node px = a->nodes[x], py = a->nodes[y];
  size_t base = a->ntmp;
  for (uint32_t i = 0; i < px.n; i++)
    MIRS_CHECK(a->ctx, tmp_push(a, a->kids[px.off + i]));
  for (uint32_t i = 0; i < py.n; i++)
    MIRS_CHECK(a->ctx, tmp_push(a, a->kids[py.off + i]));
  return make_poly(a, base, out);
}

/* x - y = x + neg(y). */
mirs_status mirs__abs_sub(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out) {
  mirs__abs_id ny;
  MIRS_CHECK(a->ctx, mirs__abs_app(a, MIRS__ABS_NEG, y, &ny));
  return mirs__abs_add(a, x, ny, out);
}

/* x itself when it is a single term, else the single-factor POLY BOX(x). */
static mirs_status boxed_if_sum(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id *out) {
  if (a->nodes[x].n == 1) {
    *out = x;
    return MIRS_OK;
  }
  mirs__abs_id b;
  MIRS_CHECK(a->ctx, make_factor(a, MIRS__ABS_BOX, 0, 0, x, &b));
  return factor_poly(a, b, out);
}

/* x · y: distributed term by term (D1), or with sums boxed when the
 * expansion would exceed MIRS__ABS_MAX_TERMS terms. */
mirs_status mirs__abs_mul(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out) {
  if ((uint64_t)a->nodes[x].n * a->nodes[y].n > MIRS__ABS_MAX_TERMS) {
    MIRS_CHECK(a->ctx, boxed_if_sum(a, x, &x));
    MIRS_CHECK(a->ctx, boxed_if_sum(a, y, &y));
  }
  mirs__abs_node px = a->nodes[x], py = a->nodes[y];
  size_t base = a->ntmp;
  for (uint32_t i = 0; i < px.n; i++)
    for (uint32_t j = 0; j < py.n; j++)
      MIRS_CHECK(a->ctx, push_term_mul(a, a->kids[px.off + i], a->kids[py.off + j]));
  return make_poly(a, base, out);
}

/* x / y.  Every term of x is divided separately (V1).  A single-term y
 * without denominator, sum(k, Πq), joins each term's denominator (V3, S1,
 * S2).  A single term with its own denominator keeps its smallest
 * numerator factor, extents and denominator as one boxed residual and
 * contributes its other numerator factors directly (V3 applied to
 * y = q1·…·residual).  A sum of terms is one boxed factor. */
mirs_status mirs__abs_div(mirs__abs_arena *a, mirs__abs_id x, mirs__abs_id y, mirs__abs_id *out) {
  mirs__abs_node py = a->nodes[y];
  int64_t kq = 1;
  size_t qbase = a->ntmp; /* the divisor's factors, sorted, copied to kids below */
  if (py.n == 1 && a->nodes[a->kids[py.off]].nd == 0) {
    mirs__abs_node t = a->nodes[a->kids[py.off]];
    kq = t.k;
    for (uint32_t i = 0; i < t.n; i++)
      MIRS_CHECK(a->ctx, tmp_push(a, a->kids[t.off + i]));
  } else if (py.n == 1) {
    mirs__abs_node t = a->nodes[a->kids[py.off]];
    /* residual = sum(k, q_min) / sum(kd, D): q_min is the first (smallest hash) factor */
    size_t rb = a->ntmp;
    MIRS_CHECK(a->ctx, tmp_push(a, a->kids[t.off]));
    for (uint32_t i = 0; i < t.nd; i++)
      MIRS_CHECK(a->ctx, tmp_push(a, a->kids[t.off + t.n + i]));
    MIRS_CHECK(a->ctx, make_term(a, rb, t.k, t.kd, 1));
    mirs__abs_id rp, box;
    MIRS_CHECK(a->ctx, make_poly(a, rb, &rp));
    MIRS_CHECK(a->ctx, make_factor(a, MIRS__ABS_BOX, 0, 0, rp, &box));
    for (uint32_t i = 1; i < t.n; i++)
      MIRS_CHECK(a->ctx, tmp_push(a, a->kids[t.off + i]));
    MIRS_CHECK(a->ctx, tmp_push(a, box));
  } else {
    mirs__abs_id box;
    MIRS_CHECK(a->ctx, make_factor(a, MIRS__ABS_BOX, 0, 0, y, &box));
    MIRS_CHECK(a->ctx, tmp_push(a, box));
  }
  uint32_t nq = (uint32_t)(a->ntmp - qbase);
  sort_by_hash(a, a->tmp + qbase, nq);
  mirs__abs_node px = a->nodes[x];
  size_t base = a->ntmp; /* the quotient terms go above the divisor list */
  mirs_status s = MIRS_OK;
  for (uint32_t i = 0; i < px.n && s == MIRS_OK; i++)
    s = push_term_div(a, a->kids[px.off + i], kq, qbase, nq);
  if (s == MIRS_OK)
    s = make_poly(a, base, out);
  a->ntmp = qbase;
  return s == MIRS_OK ? MIRS_OK : mirs__core_trace(a->ctx, s, __func__, __FILE__, __LINE__);
}

/* The expression of operator op on in[] with the given extent. */
static mirs_status apply_op(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in, int64_t extent,
                            const mirs__scalar *c, mirs__abs_id *out);

/* The expression of op on in[] (see the header): a result past the
 * bounds, an extent overflow or an operand without expression give
 * MIRS__ABS_NONE and MIRS_OK (the context's error is cleared). */
mirs_status mirs__abs_apply(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in, int64_t extent,
                            mirs__abs_id *out) {
  return mirs__abs_apply_c(a, op, in, extent, NULL, out);
}

mirs_status mirs__abs_apply_c(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in,
                              int64_t extent, const mirs__scalar *c, mirs__abs_id *out) {
  if (op < MIRS_OP_COUNT && mirs__op_nconst(op) > 0 && !c)
    return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "'%s' needs its constants",
                     mirs__graph_ops[op].name);
  int arity = op == MIRS_OP_CUSTOM || op >= MIRS_OP_COUNT ? 0 : mirs__graph_ops[op].arity;
  for (int i = 0; i < arity && i < 2; i++)
    if (in[i] == MIRS__ABS_NONE) {
      *out = MIRS__ABS_NONE;
      return MIRS_OK;
    }
  size_t base = a->ntmp;
  a->too_large = false;
  mirs_status s = apply_op(a, op, in, extent, c, out);
  if (s == MIRS_LIMIT) {
    if (!a->too_large)
      a->failed_limit = true;
    a->too_large = false;
    a->ntmp = base;
    mirs_clear_error(a->ctx);
    *out = MIRS__ABS_NONE;
    return MIRS_OK;
  }
  return s;
}

/* layer_norm(x) over n elements: c / rms(n, c) with c = x - sum(n, x):
 * an rms_norm of the centred row (its sqrt(var + eps) is the rms of c
 * with eps under the root; the constants 1/n and eps are not modelled, as
 * for mean).  The rms stays one symbol, so the search does not spell the
 * variance out of square, sum and sqrt ops. */
static mirs_status layer_norm(mirs__abs_arena *a, int64_t n, mirs__abs_id x, mirs__abs_id *out) {
  mirs__abs_id m, c, sd;
  MIRS_CHECK(a->ctx, mirs__abs_sum(a, n, x, &m));
  MIRS_CHECK(a->ctx, mirs__abs_sub(a, x, m, &c));
  MIRS_CHECK(a->ctx, mirs__abs_rms(a, n, c, &sd));
  return mirs__abs_div(a, c, sd, out);
}

/* Whether x is APP(fn, y) alone (one term, coefficient 1, no divisor). */
static bool is_app_of(const mirs__abs_arena *a, mirs__abs_id x, mirs__abs_fn fn) {
  if (x < 0 || x >= a->nn)
    return false;
  const mirs__abs_node *px = &a->nodes[x];
  if (px->kind != MIRS__ABS_POLY || px->n != 1)
    return false;
  const mirs__abs_node *t = &a->nodes[a->kids[px->off]];
  if (t->kind != MIRS__ABS_TERM || t->k != 1 || t->n != 1 || t->nd != 0)
    return false;
  const mirs__abs_node *f = &a->nodes[a->kids[t->off]];
  return f->kind == MIRS__ABS_APP && f->fn == fn;
}

bool mirs__abs_is_max(const mirs__abs_arena *a, mirs__abs_id x) {
  return is_app_of(a, x, MIRS__ABS_MAX);
}

/* APP(fn, x) for fn max or min, except that a max of a max (a min of a
 * min) is that max (min): idempotence.  A min of a max is a new APP. */
static mirs_status abs_extreme(mirs__abs_arena *a, mirs__abs_fn fn, mirs__abs_id x,
                               mirs__abs_id *out) {
  if (is_app_of(a, x, fn)) {
    *out = x;
    return MIRS_OK;
  }
  return mirs__abs_app(a, fn, x, out);
}

/* The body of mirs__abs_apply. */
/* The expression of an op with constants c (and the elementwise ops
 * without: neg, sigmoid, tanh); false for other ops. */
static bool apply_const_op(mirs__abs_arena *a, mirs_op op, mirs__abs_id x, const mirs__scalar *c,
                           mirs_status *st, mirs__abs_id *out) {
  mirs__abs_id k = MIRS__ABS_NONE;
  int64_t n;
  if (mirs__op_nconst(op) == 1 && op != MIRS_OP_POW) {
    char buf[64];
    *st = mirs__abs_atom(a, mirs__scalar_str(&c[0], buf, sizeof buf), &k);
    if (*st != MIRS_OK)
      return true;
  }
  switch (op) {
  case MIRS_OP_NEG:
    *st = mirs__abs_app(a, MIRS__ABS_NEG, x, out);
    return true;
  case MIRS_OP_SIGMOID:
    *st = mirs__abs_app(a, MIRS__ABS_SIGMOID, x, out);
    return true;
  case MIRS_OP_TANH:
    *st = mirs__abs_app(a, MIRS__ABS_TANH, x, out);
    return true;
  case MIRS_OP_CLAMP:
    *st = mirs__abs_app(a, MIRS__ABS_CLAMP, x, out);
    return true;
  case MIRS_OP_POW:
    if (!mirs__scalar_uint(&c[0], MIRS__ABS_POW_MAX, &n) || n == 0) {
      *st = mirs__abs_app(a, MIRS__ABS_POW, x, out);
      return true;
    }
    *out = x;
    *st = MIRS_OK;
    for (int64_t i = 1; i < n && *st == MIRS_OK; i++)
      *st = mirs__abs_mul(a, *out, x, out);
    return true;
  case MIRS_OP_ADD_SCALAR:
    *st = mirs__abs_add(a, x, k, out);
    return true;
  case MIRS_OP_MUL_SCALAR:
    *st = mirs__abs_mul(a, x, k, out);
    return true;
  case MIRS_OP_DIV_SCALAR:
    *st = mirs__abs_div(a, x, k, out);
    return true;
  case MIRS_OP_RSUB_SCALAR:
    *st = mirs__abs_sub(a, k, x, out);
    return true;
  case MIRS_OP_RDIV_SCALAR:
    *st = mirs__abs_div(a, k, x, out);
    return true;
  default:
    return false;
  }
}

static mirs_status apply_op(mirs__abs_arena *a, mirs_op op, const mirs__abs_id *in, int64_t extent,
                            const mirs__scalar *c, mirs__abs_id *out) {
  mirs__abs_id t;
  mirs_status st;
  if (apply_const_op(a, op, in[0], c, &st, out))
    return st;
  switch (op) {
  case MIRS_OP_MATMUL:
    MIRS_CHECK(a->ctx, mirs__abs_mul(a, in[0], in[1], &t));
    return mirs__abs_sum(a, extent, t, out);
  case MIRS_OP_ADD:
    return mirs__abs_add(a, in[0], in[1], out);
  case MIRS_OP_SUB:
    return mirs__abs_sub(a, in[0], in[1], out);
  case MIRS_OP_MUL:
    return mirs__abs_mul(a, in[0], in[1], out);
  case MIRS_OP_DIV:
    return mirs__abs_div(a, in[0], in[1], out);
  case MIRS_OP_EXP:
    return mirs__abs_app(a, MIRS__ABS_EXP, in[0], out);
  case MIRS_OP_SQUARE:
    return mirs__abs_mul(a, in[0], in[0], out);
  case MIRS_OP_SQRT:
    return mirs__abs_app(a, MIRS__ABS_SQRT, in[0], out);
  case MIRS_OP_SILU:
    return mirs__abs_app(a, MIRS__ABS_SILU, in[0], out);
  case MIRS_OP_GELU:
    return mirs__abs_app(a, MIRS__ABS_GELU, in[0], out);
  case MIRS_OP_RELU:
    return mirs__abs_app(a, MIRS__ABS_RELU, in[0], out);
  case MIRS_OP_ABS:
    return mirs__abs_app(a, MIRS__ABS_ABS, in[0], out);
  case MIRS_OP_MAX:
  case MIRS_OP_ACCUM_MAX:
    return abs_extreme(a, MIRS__ABS_MAX, in[0], out);
  case MIRS_OP_MIN:
  case MIRS_OP_ACCUM_MIN:
    return abs_extreme(a, MIRS__ABS_MIN, in[0], out);
  case MIRS_OP_ACCUM_ONLINE:
    return mirs__abs_sum(a, extent, in[0], out);
  case MIRS_OP_CAUSAL_MASK:
    return mirs__abs_app(a, MIRS__ABS_MASK, in[0], out);
  case MIRS_OP_SUM:
  case MIRS_OP_MEAN: /* sum(n, x) / n: the constant 1/n is not modelled */
  case MIRS_OP_ACCUM:
  case MIRS_OP_ACCUM_SUM:
    return mirs__abs_sum(a, extent, in[0], out);
  case MIRS_OP_RMS_NORM:
    MIRS_CHECK(a->ctx, mirs__abs_rms(a, extent, in[0], &t));
    return mirs__abs_div(a, in[0], t, out);
  case MIRS_OP_LAYER_NORM:
    return layer_norm(a, extent, in[0], out);
  case MIRS_OP_ACCUM_RMS:
    return mirs__abs_rms(a, extent, in[0], out);
  case MIRS_OP_INPUT:
  case MIRS_OP_OUTPUT:
  case MIRS_OP_TRANSPOSE:
  case MIRS_OP_RESHAPE: /* every element of the result is an element of x */
  case MIRS_OP_PERMUTE: /* (docs/SOUNDNESS.md "Layout operators") */
  case MIRS_OP_SLICE:
    *out = in[0];
    return MIRS_OK;
  case MIRS_OP_NEG:
  case MIRS_OP_SIGMOID:
  case MIRS_OP_TANH:
  case MIRS_OP_POW:
  case MIRS_OP_CLAMP:
  case MIRS_OP_ADD_SCALAR:
  case MIRS_OP_MUL_SCALAR:
  case MIRS_OP_DIV_SCALAR:
  case MIRS_OP_RSUB_SCALAR:
  case MIRS_OP_RDIV_SCALAR: /* (apply_const_op) */
  case MIRS_OP_CUSTOM:
  case MIRS_OP_COUNT:
    break;
  }
  return MIRS_FAIL(a->ctx, MIRS_INVALID_ARG, "no abstract expression for operator %d", (int)op);
}

/* Last dimension of a shape. */
static int64_t last_dim(const mirs__shape *s) {
  return s->ndim > 0 ? s->d[s->ndim - 1] : 1;
}

int64_t mirs__abs_bop_extent(mirs_op op, int dim, const mirs__shape *s0, int32_t forloop) {
  switch (op) {
  case MIRS_OP_MATMUL:
  case MIRS_OP_RMS_NORM:
  case MIRS_OP_LAYER_NORM:
    return last_dim(s0);
  case MIRS_OP_SUM:
  case MIRS_OP_MEAN:
    return s0->d[dim];
  case MIRS_OP_ACCUM:
  case MIRS_OP_ACCUM_ONLINE:
    return forloop;
  case MIRS_OP_ACCUM_SUM:
    return (int64_t)forloop * s0->d[dim];
  case MIRS_OP_ACCUM_RMS:
    return (int64_t)forloop * last_dim(s0);
  default:
    return 1;
  }
}

/* The result of block op `op` from the entries of its inputs. */
static mirs_status bop_eval(mirs__abs_arena *a, const mirs__bgraph *bg, int32_t op,
                            const mirs__abs_id *kexpr, const mirs__abs_id *bexpr,
                            mirs__abs_id *out) {
  const mirs__bop *o = &bg->ops[op];
  if (o->op == MIRS_OP_INPUT) {
    *out = kexpr[o->src];
    return MIRS_OK;
  }
  mirs__abs_id in[2] = {MIRS__ABS_NONE, MIRS__ABS_NONE};
  for (int i = 0; i < o->nin && i < 2; i++)
    in[i] = bexpr[o->in[i]];
  const mirs__shape *s0 = o->nin > 0 ? &bg->t[o->in[0]].shape : NULL;
  int64_t ext = mirs__abs_bop_extent(o->op, o->dim, s0, bg->forloop);
  return mirs__abs_apply_c(a, o->op, in, ext, o->cst, out);
}

/* Fill bexpr for block op `op` (nothing for OUTPUT). */
mirs_status mirs__abs_bop(mirs__abs_arena *a, const mirs__bgraph *bg, int32_t op,
                          const mirs__abs_id *kexpr, mirs__abs_id *bexpr) {
  if (bg->ops[op].op == MIRS_OP_OUTPUT)
    return MIRS_OK;
  mirs__abs_id r;
  MIRS_CHECK(a->ctx, bop_eval(a, bg, op, kexpr, bexpr, &r));
  bexpr[bg->ops[op].out] = r;
  return MIRS_OK;
}

/* Fill kexpr for the outputs of kernel op `op`. */
mirs_status mirs__abs_kop(mirs__abs_arena *a, const mirs_graph *g, int32_t op,
                          mirs__abs_id *kexpr) {
  const mirs__kop *o = &g->ops[op];
  if (o->op != MIRS_OP_CUSTOM) {
    mirs__abs_id in[2] = {MIRS__ABS_NONE, MIRS__ABS_NONE};
    for (int i = 0; i < o->nin && i < 2; i++)
      in[i] = kexpr[o->in[i]];
    const mirs__shape *s0 = &g->t[o->in[0]].shape;
    int64_t ext = mirs__abs_bop_extent(o->op, o->dim, s0, 1);
    return mirs__abs_apply_c(a, o->op, in, ext, o->cst, &kexpr[o->out[0]]);
  }
  /* A custom op: its block tensors' entries live on the scratch stack. */
  const mirs__bgraph *bg = o->bg;
  size_t base = a->ntmp;
  for (int32_t i = 0; i < bg->nt; i++)
    MIRS_CHECK(a->ctx, tmp_push(a, MIRS__ABS_NONE));
  mirs_status s = MIRS_OK;
  int32_t nout = 0;
  for (int32_t i = 0; i < bg->nops && s == MIRS_OK; i++) {
    const mirs__bop *b = &bg->ops[i];
    if (b->op == MIRS_OP_OUTPUT) {
      if (nout < o->nout)
        kexpr[o->out[nout]] = a->tmp[base + b->in[0]];
      nout++;
      continue;
    }
    mirs__abs_id r = MIRS__ABS_NONE;
    s = bop_eval(a, bg, i, kexpr, a->tmp + base, &r);
    if (s == MIRS_OK)
      a->tmp[base + b->out] = r;
  }
  a->ntmp = base;
  return s == MIRS_OK ? MIRS_OK : mirs__core_trace(a->ctx, s, __func__, __FILE__, __LINE__);
}

/* Fill kexpr for every kernel tensor of g. */
mirs_status mirs__abs_graph(mirs__abs_arena *a, const mirs_graph *g, mirs__abs_id *kexpr) {
  for (int32_t t = 0; t < g->nt; t++) {
    kexpr[t] = MIRS__ABS_NONE;
    if (g->t[t].producer < 0)
      MIRS_CHECK(a->ctx, mirs__abs_atom(a, g->t[t].name, &kexpr[t]));
  }
  for (int32_t i = 0; i < g->nops; i++)
    MIRS_CHECK(a->ctx, mirs__abs_kop(a, g, i, kexpr));
  return MIRS_OK;
}

/* ================================================================ symbol counts */

#define SYM_SET 4096 /* most visited-set slots (power of two); at most half used */

/* Count distinct symbol nodes below e[0..n) into cnt with a visited set of
 * `slots` entries (seen; stack holds slots / 2); false when it fills up. */
static bool count_in(const mirs__abs_arena *a, const mirs__abs_id *e, int32_t n, uint32_t *cnt,
                     uint32_t slots, int32_t *seen, int32_t *stack) {
  uint32_t half = slots / 2, nseen = 0, sp = 0;
  memset(seen, 0xff, slots * sizeof *seen);
  for (int32_t r = 0; r < n; r++) {
    if (e[r] == MIRS__ABS_NONE)
      continue;
    stack[sp++] = e[r];
    while (sp > 0) {
      int32_t id = stack[--sp];
      /* Visit each node once (open addressing on the id). */
      uint32_t h = (uint32_t)id * 2654435761u & (slots - 1);
      while (seen[h] >= 0 && seen[h] != id)
        h = (h + 1) & (slots - 1);
      if (seen[h] == id)
        continue;
      if (nseen >= half)
        return false;
      seen[h] = id;
      nseen++;
      const mirs__abs_node *p = &a->nodes[id];
      uint32_t nk = 0;
      switch ((mirs__abs_kind)p->kind) {
      case MIRS__ABS_ATOM: { /* (a constant is no symbol: an op brings it with its own) */
        char c0 = a->chars[p->off];
        if (!((c0 >= '0' && c0 <= '9') || c0 == '-'))
          cnt[MIRS__ABS_SYM_ATOM]++;
        break;
      }
      case MIRS__ABS_APP:
      case MIRS__ABS_RMS:
      case MIRS__ABS_BOX:
        if (p->kind == MIRS__ABS_APP)
          cnt[MIRS__ABS_SYM_APP(p->fn)]++;
        else if (p->kind == MIRS__ABS_RMS)
          cnt[MIRS__ABS_SYM_RMS]++;
        if (sp >= half)
          return false;
        stack[sp++] = p->arg;
        break;
      case MIRS__ABS_TERM:
        nk = p->n + p->nd;
        break;
      case MIRS__ABS_POLY:
        nk = p->n;
        break;
      }
      for (uint32_t i = 0; i < nk; i++) {
        if (sp >= half)
          return false;
        stack[sp++] = a->kids[p->off + i];
      }
    }
  }
  return true;
}

/* Count distinct symbol nodes below e[0..n) (see absexpr.h).  The visited
 * set starts small (clearing it is most of the cost) and grows when full. */
bool mirs__abs_count_symbols(const mirs__abs_arena *a, const mirs__abs_id *e, int32_t n,
                             uint32_t cnt[MIRS__ABS_NSYM]) {
  int32_t seen[SYM_SET], stack[SYM_SET / 2];
  for (uint32_t slots = 256; slots <= SYM_SET; slots *= 4) {
    uint32_t c[MIRS__ABS_NSYM] = {0};
    if (count_in(a, e, n, c, slots, seen, stack)) {
      for (int k = 0; k < MIRS__ABS_NSYM; k++)
        cnt[k] += c[k];
      return true;
    }
  }
  return false;
}

/* ================================================================ printing */

static const char *const fn_names[MIRS__ABS_FN_COUNT] = {
    "exp", "sqrt", "silu", "gelu", "relu", "neg", "max", "causal_mask", "sigmoid", "tanh", "pow", "clamp",
    "min", "abs"};

static void print_node(const mirs__abs_arena *a, mirs__abs_id id, mirs__buf *b);

/* Print kids[off..off+n) joined by "*". */
static void print_product(const mirs__abs_arena *a, uint32_t off, uint32_t n, mirs__buf *b) {
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      mirs__buf_puts(b, "*");
    print_node(a, a->kids[off + i], b);
  }
}

/* Print any node. */
static void print_node(const mirs__abs_arena *a, mirs__abs_id id, mirs__buf *b) {
  const mirs__abs_node *p = &a->nodes[id];
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM:
    mirs__buf_puts(b, a->chars + p->off);
    break;
  case MIRS__ABS_APP:
    mirs__buf_printf(b, "%s(", fn_names[p->fn]);
    print_node(a, p->arg, b);
    mirs__buf_puts(b, ")");
    break;
  case MIRS__ABS_RMS:
    mirs__buf_printf(b, "rms(%lld, ", (long long)p->k);
    print_node(a, p->arg, b);
    mirs__buf_puts(b, ")");
    break;
  case MIRS__ABS_BOX:
    mirs__buf_puts(b, "[");
    print_node(a, p->arg, b);
    mirs__buf_puts(b, "]");
    break;
  case MIRS__ABS_TERM:
    if (p->k > 1)
      mirs__buf_printf(b, "sum(%lld, ", (long long)p->k);
    print_product(a, p->off, p->n, b);
    if (p->k > 1)
      mirs__buf_puts(b, ")");
    if (p->nd) {
      mirs__buf_puts(b, " / ");
      if (p->kd > 1)
        mirs__buf_printf(b, "sum(%lld, ", (long long)p->kd);
      else
        mirs__buf_puts(b, "(");
      print_product(a, p->off + p->n, p->nd, b);
      mirs__buf_puts(b, ")");
    }
    break;
  case MIRS__ABS_POLY:
    for (uint32_t i = 0; i < p->n; i++) {
      if (i)
        mirs__buf_puts(b, " + ");
      print_node(a, a->kids[p->off + i], b);
    }
    break;
  }
}

/* Readable text of expression e into b. */
void mirs__abs_print(const mirs__abs_arena *a, mirs__abs_id e, mirs__buf *b) {
  print_node(a, e, b);
}

/* ================================================================ extents
 *
 * L(i) of the weight models (z3check.c, prune.c). */

/* L(i): prime factors of i below 1000, with multiplicity. */
int64_t mirs__abs_small_omega(int64_t i) {
  int64_t n = 0;
  for (int64_t p = 2; p < 1000 && i > 1; p++)
    while (i % p == 0) {
      i /= p;
      n++;
    }
  return n;
}
