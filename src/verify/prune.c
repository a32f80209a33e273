/* SPDX-License-Identifier: MIT */
/* src/verify/prune.c - pruning by abstract expressions: the syntactic
 * subexpression decisions, the index of the targets' normal-form trees,
 * the shared verdict cache and log, per-worker state, the unit weight
 * and term-count models, and the entry point mirs__prune_check, which
 * asks Z3 (z3check.c) only when all of these leave a pair undecided.
 *
 * Invariants:
 *  - the shared state is written only while it is built, except for the
 *    cache and the log, whose slots are single atomic 64-bit words;
 *  - an unknown answer never prunes: only a proved NO drops a candidate.
 *
 * Syntactic decisions for a (candidate, target) pair, all sound:
 *  YES  the candidate's normal form is contained in a term of some sum in
 *       the target's normal-form tree (a sub-multiset of its factors with
 *       extents dividing), or is a sub-sum of such a sum up to a common
 *       cofactor.  Each case is a chain of axiom instances (see
 *       term_yes_contains).
 *  NO   (a) a symbol bit or atom of the candidate is absent from the
 *       target (the bits are invariant under the axioms); among them a
 *       division by a sum or a quotient, which no axiom removes, so junk
 *       such as X / (X / rms(X)) is refuted against a target without one;
 *       (b) an application f(u) of the candidate, with u box-free, has no
 *       identical application in the target while every f-application of
 *       the target is box-free (arguments of uninterpreted symbols are only
 *       ever rewritten to equal ones, and box-free normal forms are
 *       canonical);
 *       (c) both sides are box-free and some term of the candidate is not
 *       contained (as term_yes_contains says) in any term of the target
 *       tree.  Every subexpression of an expression equal to a box-free
 *       target is box-free (the QDIV bit), and its terms are so contained:
 *       the containment is transitive, and a child's terms are contained
 *       in its parent's (x in x·y and x/y, y in x/y by the denominator
 *       case, x in sum(i, x), x + y, and an argument's terms are a POLY of
 *       the tree).  Containment is exact for box-free sides: a term whose
 *       denominator has every factor of a target term's but a smaller
 *       extent, such as sum(i, E)/E against a softmax's x/sum(i, E), is no
 *       subexpression (no axiom splits sum(i, E) into a sum and E).
 *  Anything else goes to the shared cache, then to the unit weight and
 *  term-count models (below), then to Z3's search for a weight
 *  countermodel (z3check.c). */
#include "config.h"

#include "verify/prune.h"

#include <stdatomic.h>
#include <string.h>

#include "verify/z3check.h"

/* ================================================================ term views */

/* Terms with more factors than this are never used for a decision. */
#define VIEW_MAX 48

/* A term as hashes, for comparisons across arenas. */
typedef struct term_view {
  int64_t k, kd;
  uint32_t n, nd;
  uint64_t hn[VIEW_MAX], hd[VIEW_MAX]; /* sorted */
} term_view;

/* Fill v from term id of arena a; false when it has too many factors. */
static bool view_of(const mirs__abs_arena *a, mirs__abs_id id, term_view *v) {
  const mirs__abs_node *p = &a->nodes[id];
  if (p->n > VIEW_MAX || p->nd > VIEW_MAX)
    return false;
  v->k = p->k;
  v->kd = p->kd;
  v->n = p->n;
  v->nd = p->nd;
  for (uint32_t i = 0; i < p->n; i++)
    v->hn[i] = a->nodes[a->kids[p->off + i]].hash;
  for (uint32_t i = 0; i < p->nd; i++)
    v->hd[i] = a->nodes[a->kids[p->off + p->n + i]].hash;
  return true;
}

/* Multiset inclusion x ⊆ y of sorted hash lists. */
static bool ms_sub(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny) {
  uint32_t i = 0, j = 0;
  while (i < nx) {
    while (j < ny && y[j] < x[i])
      j++;
    if (j == ny || y[j] != x[i])
      return false;
    i++;
    j++;
  }
  return true;
}

/* z = y - x for sorted lists with x ⊆ y; returns |z|. */
static uint32_t ms_minus(const uint64_t *y, uint32_t ny, const uint64_t *x, uint32_t nx,
                         uint64_t *z) {
  uint32_t i = 0, nz = 0;
  for (uint32_t j = 0; j < ny; j++) {
    if (i < nx && x[i] == y[j])
      i++;
    else
      z[nz++] = y[j];
  }
  return nz;
}

/* Whether the sorted list y equals the multiset union of sorted x and c. */
static bool ms_union_eq(const uint64_t *y, uint32_t ny, const uint64_t *x, uint32_t nx,
                        const uint64_t *c, uint32_t nc) {
  if (ny != nx + nc || !ms_sub(x, nx, y, ny))
    return false;
  uint64_t z[2 * VIEW_MAX];
  uint32_t nz = ms_minus(y, ny, x, nx, z);
  return nz == nc && memcmp(z, c, nc * sizeof *c) == 0;
}

/* Whether d divides m (both >= 1). */
static bool divides(int64_t d, int64_t m) {
  return d >= 1 && m % d == 0;
}

/* Sound containment: term t is a subexpression of term s.
 *  numerator case: t = sum(k', N')/sum(kd', D') with N' ⊆ N, k' | k,
 *    D' ⊆ D, and kd' = kd when D' = D, kd' | kd when D' ⊊ D (split the
 *    denominator into sum(kd', D')·sum(kd/kd', D - D') by S1/S2, peel it
 *    with V3, split the numerator likewise and drop the cofactor with
 *    V2/S3; what remains is t);
 *  denominator case: t = sum(k', N') with N' ⊆ D and k' | kd (t is a
 *    part of the denominator sum(kd, ΠD)). */
static bool term_yes_contains(const term_view *t, const term_view *s) {
  if (ms_sub(t->hn, t->n, s->hn, s->n) && ms_sub(t->hd, t->nd, s->hd, s->nd) &&
      divides(t->k, s->k)) {
    if (t->nd == 0 && t->kd == 1)
      return true;
    if (t->nd == s->nd ? t->kd == s->kd : divides(t->kd, s->kd))
      return true;
  }
  return t->nd == 0 && t->kd == 1 && ms_sub(t->hn, t->n, s->hd, s->nd) && divides(t->k, s->kd);
}

/* ================================================================ shared state */

/* One term of a sum in some target's normal-form tree. */
typedef struct tterm {
  int32_t target; /* index into targets */
  int32_t poly;   /* the POLY it belongs to (records of one POLY are adjacent) */
  mirs__abs_id term;
} tterm;

/* One application (APP or RMS factor) in some target's tree. */
typedef struct tapp {
  int32_t target;
  mirs__abs_id node;
} tapp;

struct mirs__prune_shared {
  mirs_context *ctx;
  mirs__prune_config cfg;
  mirs__abs_arena arena; /* targets; read-only once built */
  mirs__abs_id *targets;
  int ntargets;
  tterm *terms;
  size_t nterms, capterms;
  tapp *apps;
  size_t napps, capapps;
  /* Verdict cache: 2^cache_log2 words, each 0 (empty) or (key with the low
   * two bits replaced by a mirs__prune_verdict).  Slots are written once
   * by CAS from 0 and never change, and a word carries all it means, so
   * relaxed ordering suffices: a reader sees either 0 (a miss) or the
   * complete (key, verdict) word, and no other memory is published through
   * it.  Linear probing over at most CACHE_PROBES slots; when those are
   * full the verdict is simply not stored. */
  _Atomic uint64_t *cache;
  void *cache_mem; /* the same block, for freeing */
  uint64_t cache_mask;
  /* Verdict log (mirs__prune_log_enable; NULL: off): the cache words of
   * the verdicts Z3 decided here, in the order their slots were taken.  A
   * writer takes a slot with fetch_add and stores its word; a reader stops
   * at the first 0 (a slot taken but not yet written) and comes back. */
  _Atomic uint64_t *log;
  void *log_mem; /* the same block, for freeing */
  _Atomic size_t nlog;
  size_t caplog;
};

#define CACHE_PROBES 32

/* Default configuration. */
void mirs__prune_config_default(mirs__prune_config *c) {
  c->enabled = true;
  c->use_solver = true;
  c->cache_log2 = 20;
  c->timeout_ms = 500;
  c->rlimit = 2000000;
}

/* Record the tree of POLY p (target ti) into the index, once per node. */
static mirs_status index_tree(mirs__prune_shared *s, int32_t ti, mirs__abs_id p, uint8_t *seen) {
  const mirs__abs_arena *a = &s->arena;
  if (seen[p])
    return MIRS_OK;
  seen[p] = 1;
  const mirs__abs_node *pp = &a->nodes[p];
  for (uint32_t i = 0; i < pp->n; i++) {
    mirs__abs_id t = a->kids[pp->off + i];
    MIRS_CHECK(s->ctx, mirs__core_grow(s->ctx, (void **)&s->terms, &s->capterms, s->nterms + 1,
                                       sizeof *s->terms));
    s->terms[s->nterms++] = (tterm){ti, p, t};
  }
  for (uint32_t i = 0; i < pp->n; i++) {
    const mirs__abs_node *t = &a->nodes[a->kids[pp->off + i]];
    for (uint32_t j = 0; j < t->n + t->nd; j++) {
      mirs__abs_id f = a->kids[t->off + j];
      const mirs__abs_node *fn = &a->nodes[f];
      if (fn->kind == MIRS__ABS_ATOM || seen[f])
        continue;
      seen[f] = 1;
      if (fn->kind == MIRS__ABS_APP || fn->kind == MIRS__ABS_RMS) {
        MIRS_CHECK(s->ctx, mirs__core_grow(s->ctx, (void **)&s->apps, &s->capapps, s->napps + 1,
                                           sizeof *s->apps));
        s->apps[s->napps++] = (tapp){ti, f};
      }
      MIRS_CHECK(s->ctx, index_tree(s, ti, fn->arg, seen));
    }
  }
  return MIRS_OK;
}

/* Build targets, index and cache from ref (body of mirs__prune_shared_new). */
static mirs_status shared_build(mirs__prune_shared *s, const mirs_graph *ref) {
  mirs_context *ctx = s->ctx;
  if (s->cfg.cache_log2 < 4 || s->cfg.cache_log2 > 40)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "prune cache size 2^%d out of range [2^4, 2^40]",
                     s->cfg.cache_log2);
  size_t slots = (size_t)1 << s->cfg.cache_log2;
  s->cache_mem = mirs__core_alloc(ctx, slots * sizeof *s->cache);
  if (!s->cache_mem)
    return MIRS_NOMEM;
  s->cache = s->cache_mem;
  for (size_t i = 0; i < slots; i++)
    atomic_init(&s->cache[i], 0);
  s->cache_mask = slots - 1;

  MIRS_CHECK(ctx, mirs__abs_arena_init(&s->arena, ctx));
  mirs__abs_id *kexpr = mirs__core_alloc(ctx, ((size_t)ref->nt + 1) * sizeof *kexpr);
  if (!kexpr)
    return MIRS_NOMEM;
  s->targets = mirs__core_alloc(ctx, ((size_t)ref->nout + 1) * sizeof *s->targets);
  mirs_status st = s->targets ? mirs__abs_graph(&s->arena, ref, kexpr) : MIRS_NOMEM;
  for (int32_t i = 0; st == MIRS_OK && i < ref->nout; i++) {
    mirs__abs_id e = kexpr[ref->outputs[i]];
    if (e == MIRS__ABS_NONE) {
      /* An output too large to express (MIRS__ABS_MAX_*): nothing can be
       * refuted against it, so pruning keeps everything. */
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "pruning off: output '%s' has an abstract expression past the size bounds",
                     ref->t[ref->outputs[i]].name);
      s->cfg.enabled = false;
      s->ntargets = 0;
      break;
    }
    bool dup = false;
    for (int j = 0; j < s->ntargets; j++)
      dup |= s->targets[j] == e;
    if (!dup)
      s->targets[s->ntargets++] = e;
  }
  mirs__core_free(ctx, kexpr);
  MIRS_CHECK(ctx, st);
  uint8_t *seen = mirs__core_alloc(ctx, (size_t)s->arena.nn + 1);
  if (!seen)
    return MIRS_NOMEM;
  for (int i = 0; st == MIRS_OK && i < s->ntargets; i++) {
    memset(seen, 0, (size_t)s->arena.nn);
    st = index_tree(s, i, s->targets[i], seen);
  }
  mirs__core_free(ctx, seen);
  return st == MIRS_OK ? MIRS_OK : mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
}

/* Build the shared pruning state from the reference program. */
mirs_status mirs__prune_shared_new(mirs_context *ctx, const mirs_graph *ref,
                                   const mirs__prune_config *cfg, mirs__prune_shared **out) {
  *out = NULL;
  if (!ref)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "no reference program");
  mirs__prune_shared *s = mirs__core_calloc(ctx, 1, sizeof *s);
  if (!s)
    return MIRS_NOMEM;
  s->ctx = ctx;
  if (cfg)
    s->cfg = *cfg;
  else
    mirs__prune_config_default(&s->cfg);
  mirs_status st = shared_build(s, ref);
  if (st != MIRS_OK) {
    mirs__prune_shared_free(s);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  *out = s;
  return MIRS_OK;
}

/* Free the shared state (after every worker is freed). */
void mirs__prune_shared_free(mirs__prune_shared *s) {
  if (!s)
    return;
  mirs_context *ctx = s->ctx;
  mirs__abs_arena_free(&s->arena);
  mirs__core_free(ctx, s->targets);
  mirs__core_free(ctx, s->terms);
  mirs__core_free(ctx, s->apps);
  mirs__core_free(ctx, s->cache_mem);
  mirs__core_free(ctx, s->log_mem);
  mirs__core_free(ctx, s);
}

/* Number of distinct targets. */
int mirs__prune_num_targets(const mirs__prune_shared *s) {
  return s->ntargets;
}

/* The arena holding the targets. */
const mirs__abs_arena *mirs__prune_target_arena(const mirs__prune_shared *s) {
  return &s->arena;
}

/* Target i's expression. */
mirs__abs_id mirs__prune_target(const mirs__prune_shared *s, int i) {
  return i >= 0 && i < s->ntargets ? s->targets[i] : MIRS__ABS_NONE;
}

/* ================================================================ cache */

/* The cache key of a (candidate, target) pair; never 0 in its upper bits. */
uint64_t mirs__prune_pair_key(uint64_t cand_hash, uint64_t target_hash) {
  uint64_t k = mirs__hash_mix(mirs__hash_mix(UINT64_C(0x7072756e65), cand_hash), target_hash);
  k &= ~UINT64_C(3);
  return k ? k : UINT64_C(4);
}

/* Look key up (relaxed loads; see the struct comment). */
mirs__prune_verdict mirs__prune_cache_get(const mirs__prune_shared *s, uint64_t key) {
  key &= ~UINT64_C(3);
  for (uint64_t i = 0; i < CACHE_PROBES; i++) {
    uint64_t w =
        atomic_load_explicit(&s->cache[((key >> 2) + i) & s->cache_mask], memory_order_relaxed);
    if (w == 0)
      return MIRS__PRUNE_NONE;
    if ((w & ~UINT64_C(3)) == key)
      return (mirs__prune_verdict)(w & 3);
  }
  return MIRS__PRUNE_NONE;
}

/* Store key's verdict unless the key is already there (first writer wins). */
void mirs__prune_cache_put(mirs__prune_shared *s, uint64_t key, mirs__prune_verdict v) {
  key &= ~UINT64_C(3);
  if (v == MIRS__PRUNE_NONE || key == 0)
    return;
  uint64_t word = key | (uint64_t)v;
  for (uint64_t i = 0; i < CACHE_PROBES; i++) {
    _Atomic uint64_t *slot = &s->cache[((key >> 2) + i) & s->cache_mask];
    uint64_t w = atomic_load_explicit(slot, memory_order_relaxed);
    if (w == 0 && atomic_compare_exchange_strong_explicit(slot, &w, word, memory_order_relaxed,
                                                          memory_order_relaxed))
      return;
    if ((w & ~UINT64_C(3)) == key) /* on CAS failure w holds the winner */
      return;
  }
}

/* Start logging solver verdicts (before workers run). */
mirs_status mirs__prune_log_enable(mirs__prune_shared *s) {
  if (s->log)
    return MIRS_OK;
  size_t cap = (size_t)1 << MIRS__PRUNE_LOG_LOG2;
  void *mem = mirs__core_alloc(s->ctx, cap * sizeof(_Atomic uint64_t));
  if (!mem)
    return MIRS_NOMEM;
  _Atomic uint64_t *log = mem;
  for (size_t i = 0; i < cap; i++)
    atomic_init(&log[i], 0);
  atomic_init(&s->nlog, 0);
  s->caplog = cap;
  s->log_mem = mem;
  s->log = log;
  return MIRS_OK;
}

/* Logged verdicts from index `from`, at most max, into out. */
size_t mirs__prune_log_read(const mirs__prune_shared *s, size_t from, uint64_t *out, size_t max) {
  if (!s->log)
    return 0;
  size_t n = atomic_load_explicit(&s->nlog, memory_order_relaxed);
  if (n > s->caplog)
    n = s->caplog;
  size_t k = 0;
  for (size_t i = from; i < n && k < max; i++) {
    uint64_t word = atomic_load_explicit(&s->log[i], memory_order_relaxed);
    if (!word)
      break;
    out[k++] = word;
  }
  return k;
}

/* A verdict word from another process into the cache (not logged). */
void mirs__prune_log_put(mirs__prune_shared *s, uint64_t word) {
  mirs__prune_cache_put(s, word & ~UINT64_C(3), (mirs__prune_verdict)(word & 3));
}

/* ================================================================ workers */

struct mirs__prune_worker {
  mirs__prune_shared *sh;
  mirs_context *ctx; /* the worker's environment: its allocations, errors, solver */
  mirs__abs_arena arena;
  mirs__z3_solver *z3; /* created at the first solver query */
  unsigned timeout_ms, rlimit;
  int8_t *undecided; /* per target, scratch of mirs__prune_check */
  mirs__prune_counters c;
};

/* Create a worker for shared state sh. */
mirs_status mirs__prune_worker_new(mirs__prune_shared *sh, mirs__prune_worker **out) {
  return mirs__prune_worker_new_in(sh, sh->ctx, out);
}

/* Create a worker for shared state sh in the environment ctx. */
mirs_status mirs__prune_worker_new_in(mirs__prune_shared *sh, mirs_context *ctx,
                                      mirs__prune_worker **out) {
  *out = NULL;
  mirs__prune_worker *w = mirs__core_calloc(ctx, 1, sizeof *w);
  if (!w)
    return MIRS_NOMEM;
  w->sh = sh;
  w->ctx = ctx;
  w->timeout_ms = sh->cfg.timeout_ms;
  w->rlimit = sh->cfg.rlimit;
  w->undecided = mirs__core_calloc(ctx, (size_t)sh->ntargets + 1, 1);
  mirs_status st = w->undecided ? mirs__abs_arena_init(&w->arena, ctx) : MIRS_NOMEM;
  if (st != MIRS_OK) {
    mirs__core_free(ctx, w->undecided);
    mirs__core_free(ctx, w);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  *out = w;
  return MIRS_OK;
}

/* Free a worker and its solver. */
void mirs__prune_worker_free(mirs__prune_worker *w) {
  if (!w)
    return;
  mirs_context *ctx = w->ctx;
  mirs__z3_free(w->z3);
  mirs__abs_arena_free(&w->arena);
  mirs__core_free(ctx, w->undecided);
  mirs__core_free(ctx, w);
}

/* The worker's expression arena (candidates are built here). */
mirs__abs_arena *mirs__prune_worker_arena(mirs__prune_worker *w) {
  return &w->arena;
}

/* The worker's counters. */
const mirs__prune_counters *mirs__prune_worker_counters(const mirs__prune_worker *w) {
  return &w->c;
}

/* Change the per-query solver limits. */
void mirs__prune_worker_set_limits(mirs__prune_worker *w, unsigned timeout_ms, unsigned rlimit) {
  w->timeout_ms = timeout_ms;
  w->rlimit = rlimit;
  if (w->z3)
    mirs__z3_set_limits(w->z3, timeout_ms, rlimit);
}

/* ================================================================ decisions */

typedef enum { DEC_UNDECIDED, DEC_YES, DEC_NO } decision;

/* NO rule (b): an application of the candidate tree (box-free argument)
 * with no identical one in target ti, all of whose same-symbol
 * applications are box-free.  Visits each candidate node once per call
 * through the depth bound of the tree (trees are small). */
static bool apps_refute(const mirs__prune_shared *s, int ti, const mirs__abs_arena *ca,
                        mirs__abs_id p) {
  const mirs__abs_node *pp = &ca->nodes[p];
  for (uint32_t i = 0; i < pp->n; i++) {
    const mirs__abs_node *t = &ca->nodes[ca->kids[pp->off + i]];
    for (uint32_t j = 0; j < t->n + t->nd; j++) {
      const mirs__abs_node *f = &ca->nodes[ca->kids[t->off + j]];
      if (f->kind == MIRS__ABS_ATOM)
        continue;
      if ((f->kind == MIRS__ABS_APP || f->kind == MIRS__ABS_RMS) && !ca->nodes[f->arg].boxed) {
        bool match = false, unsure = false;
        for (size_t q = 0; q < s->napps && !match; q++) {
          if (s->apps[q].target != ti)
            continue;
          const mirs__abs_node *g = &s->arena.nodes[s->apps[q].node];
          if (g->kind != f->kind || g->fn != f->fn)
            continue;
          match = g->hash == f->hash;
          unsure |= s->arena.nodes[g->arg].boxed;
        }
        if (!match && !unsure)
          return true;
      }
      if (apps_refute(s, ti, ca, f->arg))
        return true;
    }
  }
  return false;
}

/* Match a sum of m >= 2 candidate terms τ_i against the POLYs of target
 * ti: some POLY holds distinct terms τ_i·C for one cofactor C.
 * strict (the YES rule): C must be an expression, sum(ck, ΠCN) /
 * sum(ckd, ΠCD) with ckd = 1 when CD is empty; then the target is
 * C·cand + rest (D1, V1, S4) and cand ⊑ C·cand.
 * !strict (NO rule (d), box-free sides): any cofactor; false means no
 * subexpression of the target has cand's terms, which every expression
 * equal to cand would need (the terms of a subexpression appear in one
 * POLY of the tree times a common cofactor, by induction over the
 * constructors).  Too-large inputs count as a match when !strict. */
static bool sum_match(const mirs__prune_shared *s, int ti, const mirs__abs_arena *ca,
                      const mirs__abs_node *cp, term_view *tv, term_view *sv, bool strict) {
  uint32_t m = cp->n;
  if (m > 64)
    return !strict;
  size_t i = 0;
  while (i < s->nterms) {
    size_t j = i;
    while (j < s->nterms && s->terms[j].poly == s->terms[i].poly &&
           s->terms[j].target == s->terms[i].target)
      j++;
    if (s->terms[i].target != ti || j - i < m) {
      i = j;
      continue;
    }
    if (j - i > 64)
      return !strict;
    for (size_t r = i; r < j; r++) {
      if (!view_of(ca, ca->kids[cp->off], tv) || !view_of(&s->arena, s->terms[r].term, sv))
        return !strict;
      /* C = σ_r / τ_1 */
      if (!ms_sub(tv->hn, tv->n, sv->hn, sv->n) || !ms_sub(tv->hd, tv->nd, sv->hd, sv->nd) ||
          !divides(tv->k, sv->k) || !divides(tv->kd, sv->kd))
        continue;
      uint64_t cn[VIEW_MAX], cd[VIEW_MAX];
      uint32_t ncn = ms_minus(sv->hn, sv->n, tv->hn, tv->n, cn);
      uint32_t ncd = ms_minus(sv->hd, sv->nd, tv->hd, tv->nd, cd);
      int64_t ck = sv->k / tv->k, ckd = sv->kd / tv->kd;
      if (strict && ncd == 0 && ckd != 1)
        continue;
      uint64_t used = UINT64_C(1) << (r - i);
      bool all = true;
      for (uint32_t q = 1; q < m && all; q++) {
        if (!view_of(ca, ca->kids[cp->off + q], tv))
          return !strict;
        bool found = false;
        for (size_t r2 = i; r2 < j && !found; r2++) {
          if (used & (UINT64_C(1) << (r2 - i)))
            continue;
          const mirs__abs_node *sn = &s->arena.nodes[s->terms[r2].term];
          if (sn->k != tv->k * ck || sn->kd != tv->kd * ckd)
            continue;
          if (!view_of(&s->arena, s->terms[r2].term, sv))
            return !strict;
          if (ms_union_eq(sv->hn, sv->n, tv->hn, tv->n, cn, ncn) &&
              ms_union_eq(sv->hd, sv->nd, tv->hd, tv->nd, cd, ncd)) {
            found = true;
            used |= UINT64_C(1) << (r2 - i);
          }
        }
        all = found;
      }
      if (all)
        return true;
    }
    i = j;
  }
  return false;
}

/* The syntactic decision for candidate e (worker arena) against target ti. */
static decision decide(const mirs__prune_shared *s, int ti, const mirs__abs_arena *ca,
                       mirs__abs_id e) {
  const mirs__abs_node *cp = &ca->nodes[e];
  const mirs__abs_node *tp = &s->arena.nodes[s->targets[ti]];
  if ((cp->bits & ~tp->bits) || (cp->atoms & ~tp->atoms))
    return DEC_NO; /* rule (a) */
  if (cp->hash == tp->hash)
    return DEC_YES;
  term_view tv, sv;
  if (cp->n == 1) {
    if (view_of(ca, ca->kids[cp->off], &tv))
      for (size_t r = 0; r < s->nterms; r++)
        if (s->terms[r].target == ti && view_of(&s->arena, s->terms[r].term, &sv) &&
            term_yes_contains(&tv, &sv))
          return DEC_YES;
  } else if (sum_match(s, ti, ca, cp, &tv, &sv, true)) {
    return DEC_YES;
  }
  if (apps_refute(s, ti, ca, e))
    return DEC_NO; /* rule (b) */
  if (cp->boxed || tp->boxed)
    return DEC_UNDECIDED;
  if (cp->n >= 2 && !sum_match(s, ti, ca, cp, &tv, &sv, false))
    return DEC_NO; /* rule (d) */
  /* rule (c): every candidate term must be contained in some target term */
  for (uint32_t i = 0; i < cp->n; i++) {
    if (!view_of(ca, ca->kids[cp->off + i], &tv))
      return DEC_UNDECIDED;
    bool found = false;
    for (size_t r = 0; r < s->nterms && !found; r++)
      found = s->terms[r].target == ti &&
              (!view_of(&s->arena, s->terms[r].term, &sv) || term_yes_contains(&tv, &sv));
    if (!found)
      return DEC_NO;
  }
  return DEC_UNDECIDED;
}

/* ================================================================ weight models
 *
 * The weight models of z3check.c (atom v ↦ w_v, + ↦ max, · ↦ +,
 * x ÷ y ↦ x + K·y, f(x) ↦ x + c_f, rms(n, x) ↦ x + r_n, sum(i, x) ↦
 * x + σ·L(i), ⊑ ↦ <=) satisfy every axiom, so a parameter choice that
 * weighs the candidate above the target refutes it.  Before Z3 searches
 * all parameters, the unit choices are tried here: one or two parameters
 * of the candidate at 1, the rest 0, with K = 1 and K = 2 (a parameter
 * the candidate lacks would only raise the target).  That alone refutes
 * X·X against X / (A·C + A·D) (K = 1, w_X = 1), C / X (K = 2, w_X = 1)
 * and C·D (K = 1, w_C = w_D = 1). */

/* One unit parameter: an atom (by name), a function symbol, an rms
 * extent, or σ. */
typedef struct wunit {
  enum { WU_ATOM, WU_FN, WU_RMS, WU_SIGMA } kind;
  const char *name;
  int fn;
  int64_t n;
} wunit;

#define WUNITS 32

/* Collect the parameters of the candidate tree below id (at most WUNITS). */
static void wunits_collect(const mirs__abs_arena *a, mirs__abs_id id, wunit *u, int *nu) {
  const mirs__abs_node *p = &a->nodes[id];
  wunit x = {WU_SIGMA, NULL, 0, 0};
  bool have = true;
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM:
    x.kind = WU_ATOM;
    x.name = mirs__abs_atom_name(a, id);
    break;
  case MIRS__ABS_APP:
    x.kind = WU_FN;
    x.fn = p->fn;
    wunits_collect(a, p->arg, u, nu);
    break;
  case MIRS__ABS_RMS:
    x.kind = WU_RMS;
    x.n = p->k;
    wunits_collect(a, p->arg, u, nu);
    break;
  case MIRS__ABS_BOX:
    have = false;
    wunits_collect(a, p->arg, u, nu);
    break;
  case MIRS__ABS_TERM:
    have = p->k > 1 || p->kd > 1;
    for (uint32_t k = 0; k < p->n + p->nd; k++)
      wunits_collect(a, a->kids[p->off + k], u, nu);
    break;
  case MIRS__ABS_POLY:
    have = false;
    for (uint32_t k = 0; k < p->n; k++)
      wunits_collect(a, a->kids[p->off + k], u, nu);
    break;
  }
  if (!have)
    return;
  for (int k = 0; k < *nu; k++)
    if (u[k].kind == x.kind && u[k].fn == x.fn && u[k].n == x.n &&
        (x.kind != WU_ATOM || strcmp(u[k].name, x.name) == 0))
      return;
  if (*nu < WUNITS)
    u[(*nu)++] = x;
}

/* How many of the units u[0..nu) name this parameter (0 or 1: the units
 * are distinct). */
static double wunit_count(const wunit *u, int nu, int kind, const char *name, int fn, int64_t n) {
  double c = 0.0;
  for (int k = 0; k < nu; k++)
    if ((int)u[k].kind == kind && (kind != WU_ATOM || strcmp(u[k].name, name) == 0) &&
        (kind != WU_FN || u[k].fn == fn) && (kind != WU_RMS || u[k].n == n))
      c += 1.0;
  return c;
}

/* The weight of node id with the parameters u[0..nu) at 1, the others at
 * 0, and divisor factor K. */
static double wunit_weight(const mirs__abs_arena *a, mirs__abs_id id, const wunit *u, int nu,
                           int K) {
  const mirs__abs_node *p = &a->nodes[id];
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM:
    return wunit_count(u, nu, WU_ATOM, mirs__abs_atom_name(a, id), 0, 0);
  case MIRS__ABS_APP:
    return wunit_weight(a, p->arg, u, nu, K) + wunit_count(u, nu, WU_FN, NULL, p->fn, 0);
  case MIRS__ABS_RMS:
    return wunit_weight(a, p->arg, u, nu, K) + wunit_count(u, nu, WU_RMS, NULL, 0, p->k);
  case MIRS__ABS_BOX:
    return wunit_weight(a, p->arg, u, nu, K);
  case MIRS__ABS_TERM: {
    double sigma = wunit_count(u, nu, WU_SIGMA, NULL, 0, 0);
    double num = sigma != 0.0 ? sigma * (double)mirs__abs_small_omega(p->k) : 0.0;
    double den = sigma != 0.0 ? sigma * (double)mirs__abs_small_omega(p->kd) : 0.0;
    for (uint32_t k = 0; k < p->n; k++)
      num += wunit_weight(a, a->kids[p->off + k], u, nu, K);
    for (uint32_t k = 0; k < p->nd; k++)
      den += wunit_weight(a, a->kids[p->off + p->n + k], u, nu, K);
    return p->nd ? num + K * den : num;
  }
  case MIRS__ABS_POLY: {
    double m = 0.0;
    for (uint32_t k = 0; k < p->n; k++) {
      double t = wunit_weight(a, a->kids[p->off + k], u, nu, K);
      m = t > m ? t : m;
    }
    return m;
  }
  }
  return 0.0;
}

/* Whether the parameters u[0..nu) at 1 weigh cand above target for K = 1
 * or K = 2. */
static bool wunits_exceed(const mirs__abs_arena *ca, mirs__abs_id cand, const mirs__abs_arena *ta,
                          mirs__abs_id target, const wunit *u, int nu) {
  for (int K = 1; K <= 2; K++)
    if (wunit_weight(ca, cand, u, nu, K) > wunit_weight(ta, target, u, nu, K))
      return true;
  return false;
}

/* The term-count model: an atom counts 1, + adds, · and ÷ multiply, and
 * f, rms and sums keep the count of their argument.  Every axiom holds
 * ((x + y)·z = x·z + y·z is (x + y)·z = x·z + y·z in counts; x/z + y/z =
 * (x + y)/z likewise; the rest are products or keep the count) and an
 * argument never counts more than its application (counts are >= 1), so
 * a candidate that counts more terms than the target is no subexpression
 * of it: X + X + X against X / (A·A + C) (3 against 2). */
static double term_count(const mirs__abs_arena *a, mirs__abs_id id) {
  const mirs__abs_node *p = &a->nodes[id];
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM:
    return 1.0;
  case MIRS__ABS_APP:
  case MIRS__ABS_RMS:
  case MIRS__ABS_BOX:
    return term_count(a, p->arg);
  case MIRS__ABS_TERM: {
    double c = 1.0;
    for (uint32_t k = 0; k < p->n + p->nd; k++)
      c *= term_count(a, a->kids[p->off + k]);
    return c;
  }
  case MIRS__ABS_POLY: {
    double c = 0.0;
    for (uint32_t k = 0; k < p->n; k++)
      c += term_count(a, a->kids[p->off + k]);
    return c;
  }
  }
  return 1.0;
}

/* Most candidate parameters for which pairs are tried too. */
#define WPAIRS_MAX 12

/* Whether a unit weight model (one parameter of cand at 1, or two when it
 * has at most WPAIRS_MAX) weighs cand (arena ca) above target (arena ta):
 * cand ⊑ target is then refuted. */
bool mirs__prune_weights_refute(const mirs__abs_arena *ca, mirs__abs_id cand,
                                const mirs__abs_arena *ta, mirs__abs_id target) {
  if (term_count(ca, cand) > term_count(ta, target))
    return true;
  wunit u[WUNITS];
  int nu = 0;
  wunits_collect(ca, cand, u, &nu);
  for (int k = 0; k < nu; k++)
    if (wunits_exceed(ca, cand, ta, target, &u[k], 1))
      return true;
  for (int k = 0; nu <= WPAIRS_MAX && k < nu; k++)
    for (int l = k + 1; l < nu; l++) {
      wunit pair[2] = {u[k], u[l]};
      if (wunits_exceed(ca, cand, ta, target, pair, 2))
        return true;
    }
  return false;
}

/* Ask the cache, then the unit weight and term-count models, then Z3,
 * about an undecided pair; *v gets the verdict. */
static mirs_status ask(mirs__prune_worker *w, int ti, mirs__abs_id e, mirs__prune_verdict *v) {
  mirs__prune_shared *s = w->sh;
  uint64_t key = mirs__prune_pair_key(w->arena.nodes[e].hash, s->arena.nodes[s->targets[ti]].hash);
  *v = mirs__prune_cache_get(s, key);
  if (*v != MIRS__PRUNE_NONE) {
    w->c.cache_hits++;
    return MIRS_OK;
  }
  w->c.cache_misses++;
  /* The weight models and the Z3 encoding walk the unfolded trees: an
   * over-large pair is kept unasked (as an unknown is), so no query grows
   * with the 2^n factors of a chain of squares. */
  if ((uint64_t)w->arena.nodes[e].size + s->arena.nodes[s->targets[ti]].size >
      MIRS__ABS_MAX_QUERY) {
    w->c.too_large++;
    *v = MIRS__PRUNE_UNKNOWN;
    return MIRS_OK;
  }
  if (mirs__prune_weights_refute(&w->arena, e, &s->arena, s->targets[ti])) {
    w->c.weight_refuted++;
    *v = MIRS__PRUNE_NO;
    mirs__prune_cache_put(s, key, *v);
    return MIRS_OK;
  }
  *v = MIRS__PRUNE_UNKNOWN;
  if (!s->cfg.use_solver)
    return MIRS_OK;
  if (!w->z3) {
    w->c.solver_contexts++;
    MIRS_CHECK(w->ctx, mirs__z3_new(w->ctx, w->timeout_ms, w->rlimit, &w->z3));
  }
  double t0 = mirs__core_now();
  mirs__z3_answer ans = MIRS__Z3_UNKNOWN;
  mirs_status st = mirs__z3_refute(w->z3, &w->arena, e, &s->arena, s->targets[ti], &ans);
  w->c.solver_seconds += mirs__core_now() - t0;
  w->c.solver_calls++;
  MIRS_CHECK(w->ctx, st);
  switch (ans) {
  case MIRS__Z3_UNSAT: /* no countermodel in the families: nothing proved, kept */
    w->c.solver_unsat++;
    *v = MIRS__PRUNE_UNKNOWN;
    break;
  case MIRS__Z3_SAT: /* a countermodel: refuted */
    w->c.solver_sat++;
    *v = MIRS__PRUNE_NO;
    break;
  case MIRS__Z3_UNKNOWN:
    w->c.solver_unknown++;
    *v = MIRS__PRUNE_UNKNOWN;
    break;
  }
  mirs__prune_cache_put(s, key, *v);
  if (s->log) {
    size_t i = atomic_fetch_add_explicit(&s->nlog, 1, memory_order_relaxed);
    if (i < s->caplog)
      atomic_store_explicit(&s->log[i], (key & ~UINT64_C(3)) | (uint64_t)*v, memory_order_relaxed);
  }
  return MIRS_OK;
}

/* Decide whether expression e may be kept. */
mirs_status mirs__prune_check(mirs__prune_worker *w, mirs__abs_id e, bool *keep) {
  mirs__prune_shared *s = w->sh;
  w->c.calls++;
  *keep = true;
  if (!s->cfg.enabled || e < 0 || e >= w->arena.nn) {
    w->c.kept++;
    return MIRS_OK;
  }
  /* Pass 1: the syntax, over all targets (one YES ends it). */
  bool any_undecided = false;
  for (int i = 0; i < s->ntargets; i++) {
    decision d = decide(s, i, &w->arena, e);
    w->undecided[i] = d == DEC_UNDECIDED;
    any_undecided |= d == DEC_UNDECIDED;
    if (d != DEC_UNDECIDED)
      w->c.syntactic++;
    if (d == DEC_YES) {
      w->c.syntactic_yes++;
      w->c.kept++;
      return MIRS_OK;
    }
    if (d == DEC_NO)
      w->c.syntactic_no++;
  }
  /* Pass 2: cache and solver for the undecided pairs. */
  for (int i = 0; any_undecided && i < s->ntargets; i++) {
    if (!w->undecided[i])
      continue;
    mirs__prune_verdict v;
    mirs_status st = ask(w, i, e, &v);
    if (st != MIRS_OK) {
      w->c.kept++;
      return mirs__core_trace(w->ctx, st, __func__, __FILE__, __LINE__);
    }
    if (v != MIRS__PRUNE_NO) {
      w->c.kept++;
      return MIRS_OK;
    }
  }
  *keep = false;
  w->c.pruned++;
  return MIRS_OK;
}
