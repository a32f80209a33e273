/* SPDX-License-Identifier: MIT */
/* src/search/search.c - the depth-first search engine: applying and undoing
 * moves on a worker's in-place state, the explicit DFS stack, verification
 * of complete candidates, results (dedup, ranking, float64 check) and the
 * public mirs_search_* API.
 *
 * Per move applied (a new state):
 *  - a kernel op (KOP, or CLOSE adding a custom kernel) is fingerprinted
 *    incrementally (mirs__fp_push_op: only its outputs, from its inputs');
 *    an op fingerprinting refuses (exp of an exp-dependent value) is not a
 *    state;
 *  - every new kernel or block tensor's abstract expression is checked
 *    (mirs__prune_check); a pruned move is undone at once;
 *  - a CLOSE whose kernel the cost model finds infeasible (shared memory,
 *    threads) is undone at once;
 *  - each new kernel tensor's digest is compared with the program outputs'
 *    (equal shapes and digests, then every fingerprint); when every output
 *    position is matched and no op is dead, the candidate gets the
 *    program's output names, and it is a result if its canonical hash is new.
 * Invariants: the worker's graph, block graphs, fingerprint store,
 * expression arena, kuses/kmatch/nmatch and bt always describe exactly
 * the state of the top frame; frame i's `in` move and `mark` are what
 * undoing it needs; the move arena holds the moves of every frame, in
 * stack order. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/search.h"

/* States between checks of the limits and callbacks. */
#define CHECK_EVERY 64
/* Seconds between progress callbacks. */
#define PROGRESS_EVERY 0.5

/* ---------------------------------------------------------------- worker */

/* Grow the per-kernel-tensor arrays to hold n tensors. */
static mirs_status ensure_k(mirs__search_worker *w, size_t n) {
  mirs_context *ctx = w->ctx;
  if (n > w->capk) {
    size_t cap = w->capk, cap2 = w->capk, cap3 = w->capk, cap4 = w->capk, cap5 = w->capk;
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->kuses, &cap, n, sizeof *w->kuses));
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->kmatch, &cap2, n, sizeof *w->kmatch));
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->klab, &cap3, n, MIRS_MAX_DIMS));
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->katoms, &cap4, n, sizeof *w->katoms));
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->kdeg, &cap5, n, sizeof *w->kdeg * MIRS_MAX_DIMS));
    cap = cap < cap2 ? cap : cap2;
    cap3 = cap3 < cap4 ? cap3 : cap4;
    cap3 = cap3 < cap5 ? cap3 : cap5;
    w->capk = cap < cap3 ? cap : cap3;
  }
  if (n > w->capkexpr)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->kexpr, &w->capkexpr, n, sizeof *w->kexpr));
  return MIRS_OK;
}

/* Grow the per-block-tensor arrays to hold n tensors. */
static mirs_status ensure_b(mirs__search_worker *w, size_t n) {
  mirs_context *ctx = w->ctx;
  if (n > w->capbt)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->bt, &w->capbt, n, sizeof *w->bt));
  if (n > w->capbexpr)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->bexpr, &w->capbexpr, n, sizeof *w->bexpr));
  return MIRS_OK;
}

/* Push a frame for the current state (its moves generated now). */
static mirs_status push_frame(mirs__search_worker *w, const mirs__search_move *in,
                              mirs__abs_mark mark) {
  mirs_context *ctx = w->ctx;
  if ((size_t)w->depth >= w->capframes)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->frames, &w->capframes, (size_t)w->depth + 1,
                                    sizeof *w->frames));
  mirs__search_frame *f = &w->frames[w->depth];
  f->moff = w->nmoves;
  f->next = 0;
  f->mark = mark;
  if (in)
    f->in = *in;
  else
    memset(&f->in, 0, sizeof f->in);
  uint32_t n;
  MIRS_CHECK(ctx, mirs__search_gen_moves(w, &n));
  f->nmoves = n;
  w->depth++;
  return MIRS_OK;
}

/* The program output kernel tensor t of the worker's graph matches, or -1
 * (fingerprints of fg against the program under the same reduction). */
static mirs_status match_output(mirs__search_worker *w, int32_t t, int *out) {
  const mirs__search_ref *r = w->cur;
  const mirs_graph *p = r->prog;
  *out = -1;
  for (int32_t i = 0; i < p->nout; i++) {
    if (!mirs__shape_eq(&p->t[p->outputs[i]].shape, &w->fg->t[t].shape))
      continue;
    uint64_t d;
    MIRS_CHECK(w->ctx, mirs__fp_digest(w->fp, t, &d));
    if (d != r->digest[i])
      continue;
    bool eq;
    MIRS_CHECK(w->ctx, mirs__fp_tensor_equal(r->ref, p, p->outputs[i], w->fp, w->fg, t, &eq));
    if (eq) {
      *out = i;
      return MIRS_OK;
    }
  }
  return MIRS_OK;
}

/* ---------------------------------------------------------------- reduced instances */

/* Free reference r's contents. */
static void ref_clear(mirs__search_worker *w, mirs__search_ref *r) {
  mirs__graph_free(r->prog);
  mirs__fp_store_free(r->ref);
  mirs__core_free(w->ctx, r->digest);
  memset(r, 0, sizeof *r);
}

/* Point w->cur at the program under reduction m (built and fingerprinted
 * when not kept); MIRS_SHAPE when the program does not reduce under m. */
static mirs_status ref_get(mirs__search_worker *w, const mirs__reduce_map *m) {
  mirs_context *ctx = w->ctx;
  const mirs_search *s = w->s;
  for (int i = 0; i < w->nrefs; i++)
    if (w->refs[i].hash == m->hash && w->refs[i].prog) {
      w->cur = &w->refs[i];
      return MIRS_OK;
    }
  int slot = w->nrefs < MIRS__SEARCH_NREFS ? w->nrefs++ : w->refnext;
  w->refnext = (slot + 1) % MIRS__SEARCH_NREFS;
  if (&w->refs[slot] == w->cur)
    w->cur = NULL;
  mirs__search_ref *r = &w->refs[slot];
  ref_clear(w, r);
  const mirs_graph *p = s->program;
  mirs_status st = mirs__reduce_graph(ctx, p, p->nops, m, true, &r->prog);
  if (st == MIRS_OK)
    st = mirs__fp_store_new(ctx, NULL, s->trials, (uint64_t)ctx->opt.seed, &r->ref);
  if (st == MIRS_OK)
    st = mirs__fp_compute_graph(r->ref, r->prog);
  if (st == MIRS_OK) {
    r->digest = mirs__core_calloc(ctx, (size_t)p->nout + 1, sizeof *r->digest);
    if (!r->digest)
      st = MIRS_NOMEM;
  }
  for (int32_t i = 0; st == MIRS_OK && i < p->nout; i++)
    st = mirs__fp_digest(r->ref, r->prog->outputs[i], &r->digest[i]);
  if (st != MIRS_OK) {
    ref_clear(w, r);
    return st;
  }
  r->hash = m->hash;
  w->cur = r;
  return MIRS_OK;
}

/* Fingerprint fg's first nops ops from scratch (the inputs before each
 * come with it). */
static mirs_status fp_prefix(mirs__search_worker *w, int32_t nops) {
  mirs__fp_truncate(w->fp, 0);
  for (int32_t k = 0; k < nops; k++)
    MIRS_CHECK(w->ctx, mirs__fp_push_op(w->fp, w->fg, k));
  w->fpops = nops;
  return MIRS_OK;
}

/* Make fg (and cur) mirror g's kernel op `last` (just added) under
 * reduction m, the fingerprints of fg's ops before it being in fp. */
static mirs_status twin_try(mirs__search_worker *w, const mirs__reduce_map *m) {
  mirs_graph *g = w->g;
  int32_t last = g->nops - 1;
  MIRS_CHECK(w->ctx, ref_get(w, m));
  bool same = m->hash == w->fphash && w->fpops == last &&
              (m->identity ? w->fg == g : w->fg == w->rg && w->rg->nops == last);
  if (!same) {
    mirs__graph_free(w->rg);
    w->rg = NULL;
    w->fg = g;
    w->fphash = 0;
    w->fpops = 0;
    mirs__fp_truncate(w->fp, 0);
    if (!m->identity) {
      MIRS_CHECK(w->ctx, mirs__reduce_graph(w->ctx, g, last, m, false, &w->rg));
      w->fg = w->rg;
    }
    MIRS_CHECK(w->ctx, fp_prefix(w, last));
    w->fphash = m->hash;
  }
  if (!m->identity)
    MIRS_CHECK(w->ctx, mirs__reduce_push_checked(w->rg, g, last, m, false));
  return MIRS_OK;
}

/* Choose the reduction of w's graph with its new last op and make fg
 * mirror it (falling back to full shape where the reduced instance does
 * not line up). */
static mirs_status twin_push(mirs__search_worker *w) {
  mirs_context *ctx = w->ctx;
  mirs__reduce_map m;
  mirs__reduce_map_build(w->g, w->g->nops, w->s->reduce_tile, w->s->reduce_parts, &m);
  mirs_status st = twin_try(w, &m);
  if (st == MIRS_SHAPE && !m.identity) {
    mirs_clear_error(ctx);
    MIRS_INC(&w->stats, fp_reduce_fallbacks);
    mirs__reduce_map_build(w->g, w->g->nops, 0, 0, &m);
    w->fpops = -1; /* rebuild */
    st = twin_try(w, &m);
  }
  if (st == MIRS_OK && !m.identity)
    MIRS_INC(&w->stats, fp_reduced);
  return st;
}

/* Drop fg's ops past g's (after g lost its last op) and their fingerprints. */
static void twin_trim(mirs__search_worker *w) {
  if (w->fg != w->g && w->rg && w->rg->nops > w->g->nops)
    mirs__graph_pop_op(w->rg);
  mirs__fp_truncate(w->fp, w->g->nt);
  if (w->fpops > w->g->nops)
    w->fpops = w->g->nops;
}

/* Record the tensors of the kernel op just added: uses of its inputs,
 * matches of its outputs. */
static mirs_status note_kop(mirs__search_worker *w) {
  const mirs__kop *k = &w->g->ops[w->g->nops - 1];
  int c = mirs__search_op_class(k->op);
  if (c >= 0)
    w->opcount[c]++;
  /* Index labels of the new tensors: a custom kernel's outputs have those
   * of the block tensors they store. */
  if (k->op == MIRS_OP_CUSTOM) {
    for (int32_t i = 0; i < k->bg->nops; i++) {
      const mirs__bop *o = &k->bg->ops[i];
      if (o->op == MIRS_OP_OUTPUT) {
        memcpy(&w->klab[(size_t)o->dst * MIRS_MAX_DIMS], w->bt[o->in[0]].lab, MIRS_MAX_DIMS);
        memcpy(&w->kdeg[(size_t)o->dst * MIRS_MAX_DIMS], w->bt[o->in[0]].deg,
               sizeof w->bt[0].deg);
        w->katoms[o->dst] = w->bt[o->in[0]].atoms;
      }
    }
  } else {
    int32_t o = k->out[0];
    (void)mirs__search_kop_labels(w, k->op, k->dim, k->nin, k->in, w->g->t[o].shape.ndim,
                                  &w->klab[(size_t)o * MIRS_MAX_DIMS], &w->katoms[o],
                                  &w->kdeg[(size_t)o * MIRS_MAX_DIMS]);
  }
  for (int i = 0; i < k->nin; i++)
    w->kuses[k->in[i]]++;
  for (int i = 0; i < k->nout; i++) {
    int32_t t = k->out[i];
    int mi;
    w->kuses[t] = 0;
    MIRS_CHECK(w->ctx, match_output(w, t, &mi));
    w->kmatch[t] = (int8_t)mi;
    if (mi >= 0)
      w->nmatch[mi]++;
  }
  return MIRS_OK;
}

/* Undo note_kop and remove the last kernel op (fingerprints, expressions). */
static void pop_kop(mirs__search_worker *w, mirs__abs_mark mark) {
  const mirs__kop *k = &w->g->ops[w->g->nops - 1];
  int c = mirs__search_op_class(k->op);
  if (c >= 0)
    w->opcount[c]--;
  for (int i = 0; i < k->nin; i++)
    w->kuses[k->in[i]]--;
  for (int i = 0; i < k->nout; i++)
    if (w->kmatch[k->out[i]] >= 0)
      w->nmatch[w->kmatch[k->out[i]]]--;
  mirs__graph_pop_op(w->g);
  twin_trim(w);
  mirs__abs_release(mirs__prune_worker_arena(w->pw), mark);
}

/* Entries of the block-op verdict memo (a power of two). */
#define PMEMO_SIZE ((size_t)1 << 16)

/* Check expression e; *keep false when pruned. */
static mirs_status prune_check(mirs__search_worker *w, mirs__abs_id e, bool *keep) {
  MIRS_INC(&w->stats, prune_calls);
  mirs_status st = mirs__prune_check(w->pw, e, keep);
  if (st == MIRS_SOLVER) {
    /* A solver error keeps the op (unknown never prunes); say it once. */
    mirs__core_log(w->ctx, MIRS_LOG_DEBUG, "search: solver error kept an op: %s",
                   mirs_last_error(w->ctx));
    mirs_clear_error(w->ctx);
    *keep = true;
    return MIRS_OK;
  }
  MIRS_CHECK(w->ctx, st);
  if (!*keep)
    MIRS_INC(&w->stats, prune_pruned);
  return MIRS_OK;
}

/* A builder or fingerprint refusal (not an error of the search). */
static bool refusal(mirs_status st) {
  return st == MIRS_SHAPE || st == MIRS_INVALID_ARG || st == MIRS_UNSUPPORTED || st == MIRS_LIMIT;
}

/* Status st of a failed step of a move: an error of the search is
 * returned; a refusal is counted under stat and becomes MIRS_OK (the move
 * is just not applied). */
static mirs_status refused(mirs__search_worker *w, mirs_status st, int stat) {
  if (!refusal(st))
    return st;
  mirs_clear_error(w->ctx);
  w->stats.v[stat]++;
  return MIRS_OK;
}

/* (Keys set bit 1 so that a stored key is never 0, the empty slot; bit 0
 * of a slot is the verdict, 1 = keep.) */
mirs_status mirs__search_bop_keep(mirs__search_worker *w, mirs_op op, int dim, int nin,
                                  const mirs__abs_id *in, const mirs__shape *s0, bool *keep) {
  mirs__abs_arena *a = mirs__prune_worker_arena(w->pw);
  for (int i = 0; i < nin; i++)
    if (in[i] == MIRS__ABS_NONE) { /* no expression (too large): kept, as unknown */
      MIRS_INC(&w->stats, prune_calls);
      *keep = true;
      return MIRS_OK;
    }
  int64_t ext = mirs__abs_bop_extent(op, dim, s0, w->bgs[w->nbg - 1]->forloop);
  uint64_t k = mirs__hash_mix(mirs__hash_mix((uint64_t)op + 1, (uint64_t)ext), (uint64_t)nin);
  for (int i = 0; i < nin; i++)
    k = mirs__hash_mix(k, mirs__abs_hash(a, in[i]));
  k |= 2;
  uint64_t *slot = &w->pmemo[(k >> 2) & (PMEMO_SIZE - 1)];
  if ((*slot | 1) == (k | 1)) {
    *keep = *slot & 1;
    MIRS_INC(&w->stats, prune_memo);
    return MIRS_OK;
  }
  mirs__abs_mark mark = mirs__abs_mark_get(a);
  mirs__abs_id e;
  mirs_status st = mirs__abs_apply(a, op, in, ext, &e);
  if (st == MIRS_OK) {
    st = prune_check(w, e, keep);
  } else {
    *keep = false; /* (an extent past 64 bits: no program has one) */
    st = refused(w, st, MIRS__STAT_moves_failed);
  }
  mirs__abs_release(a, mark);
  MIRS_CHECK(w->ctx, st);
  *slot = (k & ~UINT64_C(1)) | (*keep ? 1 : 0);
  return MIRS_OK;
}

/* Screen the last kernel op, fingerprinted in trial 0 only: every program
 * output not matched yet must equal one of its outputs in that trial, or
 * no candidate can follow.  *pass false then. */
static mirs_status screen_last(mirs__search_worker *w, bool *pass) {
  const mirs_graph *p = w->cur->prog, *g = w->fg;
  const mirs__kop *k = &g->ops[g->nops - 1];
  *pass = true;
  for (int32_t i = 0; i < p->nout && *pass; i++) {
    if (w->nmatch[i] > 0)
      continue;
    bool found = false;
    for (int32_t o = 0; o < k->nout && !found; o++)
      MIRS_CHECK(w->ctx, mirs__fp_trial0_equal(w->cur->ref, p, p->outputs[i], w->fp, g, k->out[o],
                                               &found));
    *pass = found;
  }
  return MIRS_OK;
}

/* Screen the last custom kernel on one grid block: trial 0 of block
 * (0,0,0) only, whose tiles are the corners of its outputs.  Every program
 * output not matched yet must equal one of them there.  Only worth it with
 * more than one block; the op is truncated again either way. */
static mirs_status screen_corner(mirs__search_worker *w, bool *pass) {
  const mirs_graph *p = w->cur->prog, *g = w->fg;
  const mirs__kop *k = &g->ops[g->nops - 1];
  *pass = true;
  MIRS_CHECK(w->ctx, mirs__fp_push_op_corner(w->fp, g, g->nops - 1));
  mirs_status st = MIRS_OK;
  for (int32_t i = 0; i < p->nout && *pass && st == MIRS_OK; i++) {
    if (w->nmatch[i] > 0)
      continue;
    bool found = false;
    for (int32_t j = 0; j < k->bg->nops && !found && st == MIRS_OK; j++) {
      const mirs__bop *o = &k->bg->ops[j];
      if (o->op == MIRS_OP_OUTPUT)
        st = mirs__fp_trial0_corner_equal(w->cur->ref, p, p->outputs[i], w->fp, g, o->dst,
                                          &k->bg->t[o->in[0]].shape, &found);
    }
    *pass = found;
  }
  mirs__fp_truncate(w->fp, g->nt - k->nout);
  return st;
}

/* Prune, fingerprint and record the kernel op just added (KOP or CLOSE);
 * *ok false (op removed) when pruned or refused.  The abstract expressions
 * come first: they are cheap next to a fingerprint. */
static mirs_status finish_kop(mirs__search_worker *w, mirs__abs_mark mark, bool *ok) {
  mirs_context *ctx = w->ctx;
  mirs_graph *g = w->g;
  *ok = false;
  MIRS_CHECK(ctx, ensure_k(w, (size_t)g->nt));
  mirs__abs_arena *a = mirs__prune_worker_arena(w->pw);
  mirs_status st = mirs__abs_kop(a, g, g->nops - 1, w->kexpr);
  const mirs__kop *k = &g->ops[g->nops - 1];
  bool keep = st == MIRS_OK;
  for (int i = 0; keep && i < k->nout; i++)
    MIRS_CHECK(ctx, prune_check(w, w->kexpr[k->out[i]], &keep));
  if (st != MIRS_OK && st != MIRS_LIMIT) {
    mirs__graph_pop_op(g);
    mirs__abs_release(a, mark);
    return st;
  }
  bool alive = keep && mirs__search_kernel_alive(w);
  if (!alive) {
    if (st == MIRS_LIMIT)
      mirs_clear_error(ctx);
    if (keep)
      MIRS_INC(&w->stats, bound_skips);
    mirs__graph_pop_op(g);
    mirs__abs_release(a, mark);
    return MIRS_OK;
  }
  /* The fingerprints are computed on fg, the reduced instance of g. */
  st = twin_push(w);
  if (st != MIRS_OK && ctx->opt.log_level >= MIRS_LOG_DEBUG)
    mirs__core_log(ctx, MIRS_LOG_DEBUG, "search: reduced instance refused: %s",
                   mirs_last_error(ctx));
  if (st != MIRS_OK) {
    mirs__graph_pop_op(g);
    twin_trim(w);
    mirs__abs_release(a, mark);
    return refused(w, st, MIRS__STAT_fp_refused);
  }
  const mirs_graph *fg = w->fg;
  const mirs__kop *fk = &fg->ops[fg->nops - 1];
  /* The last op is screened on trial 0 before the other trials are paid. */
  bool custom = k->op == MIRS_OP_CUSTOM;
  bool last = custom ? mirs__search_kernel_final(w) : mirs__search_is_last(w, g->nops, w->nbg);
  bool screen = w->s->trials > 1 && last, pass = true;
  /* A final custom kernel of several blocks: one block first. */
  if (screen && custom && fk->bg->grid[0] * fk->bg->grid[1] * fk->bg->grid[2] > 1)
    st = screen_corner(w, &pass);
  if (st == MIRS_OK && pass) {
    st = screen ? mirs__fp_push_op_first(w->fp, fg, fg->nops - 1)
                : mirs__fp_push_op(w->fp, fg, fg->nops - 1);
    MIRS_INC(&w->stats, fp_ops);
    if (st == MIRS_OK && screen) {
      st = screen_last(w, &pass);
      if (st == MIRS_OK && pass)
        st = mirs__fp_push_rest(w->fp, fg, fg->nops - 1);
      else if (st != MIRS_OK)
        mirs__fp_truncate(w->fp, fg->nt - fk->nout);
    }
  }
  if (st == MIRS_OK && !pass) {
    mirs__graph_pop_op(g);
    twin_trim(w);
    mirs__abs_release(a, mark);
    MIRS_INC(&w->stats, fp_screened);
    return MIRS_OK;
  }
  if (st != MIRS_OK) {
    mirs__graph_pop_op(g);
    twin_trim(w);
    mirs__abs_release(a, mark);
    return refused(w, st, MIRS__STAT_fp_refused);
  }
  w->fpops = g->nops;
  MIRS_CHECK(ctx, note_kop(w));
  /* A custom kernel another op must follow completes no candidate: the
   * same graph is the final variant's. */
  if (custom && !last && mirs__search_unmatched(w) == 0) {
    pop_kop(w, mark);
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK;
  }
  *ok = true;
  return MIRS_OK;
}

/* Apply move m to w's state; *ok false when it is refused or pruned (the
 * state is then unchanged).  *mark receives the arena mark to undo with. */
static mirs_status apply_move(mirs__search_worker *w, const mirs__search_move *m, bool *ok,
                              mirs__abs_mark *mark) {
  mirs_context *ctx = w->ctx;
  mirs_graph *g = w->g;
  mirs__abs_arena *a = mirs__prune_worker_arena(w->pw);
  *ok = false;
  *mark = mirs__abs_mark_get(a);
  switch (m->kind) {
  case MIRS__MOVE_KOP: {
    mirs_status st = mirs__graph_add_op(g, NULL, m->op, m->nin, m->in, m->dim, NULL);
    if (st != MIRS_OK)
      return refused(w, st, MIRS__STAT_moves_failed);
    return finish_kop(w, *mark, ok);
  }
  case MIRS__MOVE_OPEN: {
    int32_t block[MIRS__GRID] = {m->block, 1, 1};
    mirs__bgraph *bg;
    if ((size_t)w->nbg >= w->capbgs)
      MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->bgs, &w->capbgs, (size_t)w->nbg + 1,
                                      sizeof *w->bgs));
    mirs_status st = mirs__bg_new(ctx, m->grid, block, m->forloop, &bg);
    if (st != MIRS_OK)
      return refused(w, st, MIRS__STAT_moves_failed);
    w->bgs[w->nbg++] = bg;
    w->open = true;
    if (m->final)
      w->final |= 1u << (w->nbg - 1);
    else
      w->final &= ~(1u << (w->nbg - 1));
    *ok = true;
    return MIRS_OK;
  }
  case MIRS__MOVE_BOP: {
    mirs__bgraph *bg = w->bgs[w->nbg - 1];
    MIRS_CHECK(ctx, ensure_b(w, (size_t)bg->nt + 3));
    int added = 0;
    mirs_status st = MIRS_OK;
    for (int k = 0; st == MIRS_OK && k < m->nload; k++) {
      const mirs__search_load *l = &m->load[k];
      int32_t imap[MIRS__GRID] = {l->imap[0], l->imap[1], l->imap[2]}, id;
      st = mirs__bg_add_input(g, bg, NULL, l->src, imap, l->fmap, &id);
      if (st == MIRS_OK) {
        added++;
        mirs__search_load_info(bg, l, &w->klab[(size_t)l->src * MIRS_MAX_DIMS],
                               w->katoms[l->src], &w->kdeg[(size_t)l->src * MIRS_MAX_DIMS],
                               &w->bt[id]);
        st = mirs__abs_bop(a, bg, bg->nops - 1, w->kexpr, w->bexpr);
      }
    }
    int32_t out = -1;
    if (st == MIRS_OK) {
      st = mirs__bg_add_op(g, bg, NULL, m->op, m->nin, m->in, m->dim, false, &out);
      if (st == MIRS_OK)
        added++;
    }
    if (st == MIRS_OK) {
      mirs__search_btinfo info[2];
      mirs__shape sh[2];
      for (int i = 0; i < m->nin; i++) {
        info[i] = w->bt[m->in[i]];
        sh[i] = bg->t[m->in[i]].shape;
      }
      (void)mirs__search_tile_rule(bg, m->op, m->dim, m->nin, info, sh, &w->bt[out]);
      (void)mirs__search_bop_labels(&w->s->space, m->op, m->dim, m->nin, sh[0].ndim, info,
                                    &w->bt[out]);
      /* (gen_block listed the move only if pruning keeps its op.) */
      st = mirs__abs_bop(a, bg, bg->nops - 1, w->kexpr, w->bexpr);
    }
    if (st != MIRS_OK) {
      for (int k = 0; k < added; k++)
        mirs__bg_pop_op(ctx, bg);
      mirs__abs_release(a, *mark);
      return refused(w, st, MIRS__STAT_moves_failed);
    }
    for (int i = 0; i < m->nin; i++)
      w->bt[m->in[i]].uses++;
    int c = mirs__search_bop_class(bg, m->op, m->nin, m->in);
    if (c >= 0)
      w->opcount[c]++;
    *ok = true;
    return MIRS_OK;
  }
  case MIRS__MOVE_CLOSE: {
    mirs__bgraph *bg = w->bgs[w->nbg - 1], *copy = NULL;
    MIRS_CHECK(ctx, mirs__bg_clone(ctx, bg, &copy));
    mirs_status st = MIRS_OK;
    for (int k = 0; st == MIRS_OK && k < m->nout; k++) {
      int32_t omap[MIRS__GRID] = {m->omap[k][0], m->omap[k][1], m->omap[k][2]};
      st = mirs__bg_add_output(g, copy, m->out[k], omap);
    }
    for (int32_t i = 0; i < copy->nops && i < 64; i++) {
      copy->ops[i].fused = (m->fused >> i) & 1;
      if ((m->swap >> i) & 1) {
        int32_t t = copy->ops[i].in[0];
        copy->ops[i].in[0] = copy->ops[i].in[1];
        copy->ops[i].in[1] = t;
      }
    }
    if (st != MIRS_OK) {
      mirs__bg_free(ctx, copy);
    } else {
      st = mirs__graph_add_custom(g, copy, NULL, NULL); /* takes copy */
    }
    if (st != MIRS_OK)
      return refused(w, st, MIRS__STAT_moves_failed);
    mirs__cost_kernel ck;
    st = mirs__cost_kernel_op(ctx, w->s->device, g, g->nops - 1, &ck);
    if (st != MIRS_OK || !ck.feasible) {
      mirs__graph_pop_op(g);
      if (st != MIRS_OK)
        return st;
      MIRS_INC(&w->stats, infeasible_kernels);
      return MIRS_OK;
    }
    MIRS_CHECK(ctx, finish_kop(w, *mark, ok));
    if (*ok)
      w->open = false;
    return MIRS_OK;
  }
  }
  return MIRS_FAIL(ctx, MIRS_INTERNAL, "search: unknown move kind %d", m->kind);
}

/* Undo the move that entered the top frame. */
static void undo_move(mirs__search_worker *w, const mirs__search_frame *f) {
  const mirs__search_move *m = &f->in;
  switch (m->kind) {
  case MIRS__MOVE_KOP:
    pop_kop(w, f->mark);
    break;
  case MIRS__MOVE_OPEN:
    mirs__bg_free(w->ctx, w->bgs[--w->nbg]);
    w->final &= ~(1u << w->nbg);
    w->open = false;
    break;
  case MIRS__MOVE_BOP: {
    mirs__bgraph *bg = w->bgs[w->nbg - 1];
    for (int i = 0; i < m->nin; i++)
      w->bt[m->in[i]].uses--;
    int c = mirs__search_bop_class(bg, m->op, m->nin, m->in);
    if (c >= 0)
      w->opcount[c]--;
    for (int k = 0; k <= m->nload; k++)
      mirs__bg_pop_op(w->ctx, bg);
    mirs__abs_release(mirs__prune_worker_arena(w->pw), f->mark);
    break;
  }
  case MIRS__MOVE_CLOSE:
    pop_kop(w, f->mark);
    w->open = true;
    break;
  }
}

/* Pop the top frame (undoing its move unless it is the root). */
static void pop_frame(mirs__search_worker *w) {
  mirs__search_frame *f = &w->frames[w->depth - 1];
  if (w->depth > 1)
    undo_move(w, f);
  w->nmoves = f->moff;
  w->depth--;
}

/* A worker positioned at the root state. */
mirs_status mirs__search_worker_new(mirs_search *s, mirs__search_worker **out) {
  *out = NULL;
  mirs_context *ctx;
  MIRS_CHECK(s->ctx, mirs__core_context_child(s->ctx, &ctx));
  mirs__search_worker *w = mirs__core_calloc(ctx, 1, sizeof *w);
  if (!w) {
    mirs__core_error_copy(s->ctx, ctx);
    mirs__core_context_merge(ctx);
    return MIRS_NOMEM;
  }
  w->s = s;
  w->ctx = ctx;
  mirs_status st = mirs__graph_new(ctx, s->program->name, &w->g);
  for (int32_t t = 0; st == MIRS_OK && t < s->program->nt; t++) {
    const mirs__ktensor *kt = &s->program->t[t];
    if (kt->producer < 0)
      st = mirs__graph_add_input(w->g, kt->name, kt->dtype, &kt->shape, NULL);
  }
  if (st == MIRS_OK)
    st = ensure_k(w, (size_t)w->g->nt + 8);
  /* The inputs carry the program's index labels (same order). */
  for (int32_t t = 0, i = 0; st == MIRS_OK && t < s->program->nt; t++)
    if (s->program->t[t].producer < 0) {
      memcpy(&w->klab[(size_t)i * MIRS_MAX_DIMS], &s->plab[(size_t)t * MIRS_MAX_DIMS],
             MIRS_MAX_DIMS);
      w->katoms[i] = i < 64 ? UINT64_C(1) << i : 0;
      mirs__search_input_deg(&w->klab[(size_t)i * MIRS_MAX_DIMS], i,
                             &w->kdeg[(size_t)i * MIRS_MAX_DIMS]);
      i++;
    }
  if (st == MIRS_OK) {
    w->nmatch = mirs__core_calloc(ctx, (size_t)s->program->nout + 1, sizeof *w->nmatch);
    if (!w->nmatch)
      st = MIRS_NOMEM;
  }
  if (st == MIRS_OK)
    st = ensure_b(w, 16);
  if (st == MIRS_OK) {
    for (int32_t t = 0; t < w->g->nt; t++) {
      w->kuses[t] = 0;
      w->kmatch[t] = -1;
    }
    st = mirs__fp_store_new(ctx, NULL, s->trials, (uint64_t)ctx->opt.seed, &w->fp);
  }
  w->fg = w->g;
  if (st == MIRS_OK)
    st = mirs__prune_worker_new_in(s->prune, ctx, &w->pw);
  if (st == MIRS_OK) {
    w->pmemo = mirs__core_calloc(ctx, PMEMO_SIZE, sizeof *w->pmemo);
    if (!w->pmemo)
      st = MIRS_NOMEM;
  }
  if (st == MIRS_OK)
    st = mirs__abs_graph(mirs__prune_worker_arena(w->pw), w->g, w->kexpr);
  if (st == MIRS_OK)
    st = push_frame(w, NULL, mirs__abs_mark_get(mirs__prune_worker_arena(w->pw)));
  if (st != MIRS_OK) {
    mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
    mirs__core_error_copy(s->ctx, ctx);
    mirs__search_worker_free(w);
    return st;
  }
  *out = w;
  return MIRS_OK;
}

/* Free a worker and its state. */
void mirs__search_worker_free(mirs__search_worker *w) {
  if (!w)
    return;
  mirs_context *ctx = w->ctx;
  while (w->depth > 1 && w->pw && w->fp)
    pop_frame(w);
  for (int i = 0; i < w->nbg; i++)
    mirs__bg_free(ctx, w->bgs[i]);
  mirs__graph_free(w->g);
  mirs__graph_free(w->rg);
  for (int i = 0; i < w->nrefs; i++)
    ref_clear(w, &w->refs[i]);
  mirs__fp_store_free(w->fp);
  mirs__prune_worker_free(w->pw);
  mirs__core_free(ctx, w->pmemo);
  mirs__core_free(ctx, w->bgs);
  mirs__core_free(ctx, w->kuses);
  mirs__core_free(ctx, w->kmatch);
  mirs__core_free(ctx, w->klab);
  mirs__core_free(ctx, w->katoms);
  mirs__core_free(ctx, w->kdeg);
  mirs__core_free(ctx, w->nmatch);
  mirs__core_free(ctx, w->bt);
  mirs__core_free(ctx, w->frames);
  mirs__core_free(ctx, w->moves);
  mirs__core_free(ctx, w->loads);
  mirs__core_free(ctx, w->opsh);
  mirs__core_free(ctx, w->opinf);
  mirs__core_free(ctx, w->opcls);
  mirs__core_free(ctx, w->clsmem);
  mirs__core_free(ctx, w->clsoff);
  mirs__core_free(ctx, w->clsrep);
  mirs__core_free(ctx, w->clsfit);
  mirs__core_free(ctx, w->shp);
  mirs__core_free(ctx, w->shtab);
  mirs__core_free(ctx, w->shloc);
  mirs__core_free(ctx, w->shfit);
  mirs__core_free(ctx, w->kexpr);
  mirs__core_free(ctx, w->bexpr);
  mirs__core_free(ctx, w);
  mirs__core_context_merge(ctx);
}

/* Copy the current path into path (at most cap entries). */
int32_t mirs__search_path(const mirs__search_worker *w, uint32_t *path, int32_t cap) {
  int32_t n = 0;
  for (int32_t i = 0; i + 1 < w->depth && n < cap; i++)
    path[n++] = w->frames[i].next - 1;
  return n;
}

/* Canonical hash of the current partial kernel graph. */
uint64_t mirs__search_state_hash(const mirs__search_worker *w) {
  uint64_t h = mirs__graph_hash(w->g);
  for (int i = 0; i < w->nbg; i++) {
    const mirs__bgraph *bg = w->bgs[i];
    h = mirs__hash_mix(h, (uint64_t)bg->nops);
    h = mirs__hash_bytes(h, bg->grid, sizeof bg->grid);
    h = mirs__hash_mix(h, (uint64_t)bg->forloop);
    for (int32_t j = 0; j < bg->nops; j++) {
      const mirs__bop *o = &bg->ops[j];
      int32_t v[10] = {o->op, o->nin, o->in[0], o->in[1], o->dim, o->src,
                       o->imap[0], o->imap[1], o->imap[2], o->fmap};
      h = mirs__hash_bytes(h, v, sizeof v);
    }
  }
  return mirs__hash_mix(h, (uint64_t)w->open);
}

/* ---------------------------------------------------------------- results */

/* Whether h is in the seen set; inserts it when insert. */
static mirs_status seen_lookup(mirs_search *s, uint64_t h, bool insert, bool *found) {
  mirs_context *ctx = s->ctx;
  if (h == 0)
    h = 1;
  if (insert && (s->seen_n + 1) * 2 > s->seen_cap) {
    size_t cap = s->seen_cap ? s->seen_cap * 2 : 1024;
    uint64_t *t = mirs__core_calloc(ctx, cap, sizeof *t);
    if (!t)
      return MIRS_NOMEM;
    for (size_t i = 0; i < s->seen_cap; i++)
      if (s->seen[i]) {
        size_t j = (size_t)(s->seen[i] * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (cap - 1);
        while (t[j])
          j = (j + 1) & (cap - 1);
        t[j] = s->seen[i];
      }
    mirs__core_free(ctx, s->seen);
    s->seen = t;
    s->seen_cap = cap;
  }
  *found = false;
  if (!s->seen_cap)
    return MIRS_OK;
  size_t j = (size_t)(h * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (s->seen_cap - 1);
  while (s->seen[j]) {
    if (s->seen[j] == h) {
      *found = true;
      return MIRS_OK;
    }
    j = (j + 1) & (s->seen_cap - 1);
  }
  if (insert) {
    s->seen[j] = h;
    s->seen_n++;
  }
  return MIRS_OK;
}

/* Give every tensor of r a name unique in r (outputs keep theirs). */
static mirs_status unique_names(mirs_graph *r) {
  for (int32_t t = 0; t < r->nt; t++) {
    bool is_out = false;
    for (int32_t i = 0; i < r->nout; i++)
      if (r->outputs[i] == t)
        is_out = true;
    if (is_out || r->t[t].producer < 0)
      continue;
    bool clash = false;
    for (int32_t u = 0; u < r->nt; u++)
      if (u != t && !strcmp(r->t[u].name, r->t[t].name))
        clash = true;
    if (!clash)
      continue;
    char buf[48];
    for (int k = 0;; k++) {
      snprintf(buf, sizeof buf, "t%d_%d", (int)t, k);
      if (mirs__graph_find(r, buf) < 0)
        break;
    }
    char *nm = mirs__core_strdup(r->ctx, buf);
    if (!nm)
      return MIRS_NOMEM;
    mirs__core_free(r->ctx, r->t[t].name);
    r->t[t].name = nm;
  }
  return MIRS_OK;
}

static mirs_status verify_full_one(mirs_search *s, const mirs_graph *r, bool *eq);
static mirs_status float_one(mirs_search *s, const mirs_graph *r, bool *ok, bool *skip);

/* A complete candidate: name its outputs like the program's, deduplicate
 * by canonical hash, store and announce it if new.  One found on a
 * reduced instance that is the cheapest so far is verified at full shape
 * at once, so that a search stopped by a limit still reports its best. */
static mirs_status candidate(mirs__search_worker *w) {
  mirs_search *s = w->s;
  mirs_context *ctx = w->ctx;
  mirs_graph *g = w->g;
  const mirs_graph *p = s->program;
  MIRS_INC(&w->stats, candidates_verified);
  int32_t chosen[64];
  if (p->nout > 64)
    return MIRS_OK;
  for (int32_t i = 0; i < p->nout; i++) {
    chosen[i] = -1;
    for (int32_t t = g->nt - 1; t >= 0 && chosen[i] < 0; t--)
      if (w->kmatch[t] == i && g->t[t].producer >= 0)
        chosen[i] = t;
    if (chosen[i] < 0)
      return MIRS_OK;
    for (int32_t j = 0; j < i; j++)
      if (chosen[j] == chosen[i])
        return MIRS_OK;
  }
  /* Dead ops: a smaller graph without them is found on its own. */
  for (int32_t t = 0; t < g->nt; t++) {
    if (g->t[t].producer < 0 || w->kuses[t] > 0)
      continue;
    bool out = false;
    for (int32_t i = 0; i < p->nout; i++)
      if (chosen[i] == t)
        out = true;
    if (!out)
      return MIRS_OK;
  }
  /* Borrow the program's output names while hashing. */
  char *saved[64];
  for (int32_t i = 0; i < p->nout; i++) {
    saved[i] = g->t[chosen[i]].name;
    g->t[chosen[i]].name = p->t[p->outputs[i]].name;
  }
  mirs_status st = MIRS_OK;
  g->nout = 0;
  for (int32_t i = 0; st == MIRS_OK && i < p->nout; i++)
    st = mirs__graph_mark_output(g, chosen[i]);
  uint64_t h = mirs__graph_hash(g);
  bool found = false;
  mirs_graph *r = NULL;
  if (st == MIRS_OK)
    st = seen_lookup(s, h, true, &found);
  if (st == MIRS_OK && !found)
    st = mirs__graph_clone_in(s->ctx, g, &r);
  g->nout = 0;
  for (int32_t i = 0; i < p->nout; i++)
    g->t[chosen[i]].name = saved[i];
  if (st != MIRS_OK && mirs_last_status(s->ctx) != MIRS_OK)
    mirs__core_error_copy(ctx, s->ctx); /* the copy is the search's */
  MIRS_CHECK(ctx, st);
  if (found) {
    MIRS_INC(&w->stats, duplicates);
    return MIRS_OK;
  }
  /* The trials hold the bound for candidates of up to twice the program's
   * degree; one of a higher degree is verified again, from scratch, with
   * the trials its degree needs, so every result meets the bound. */
  bool reduced = w->fphash != 0; /* verified at full shape at the end */
  uint64_t dc = 0;
  st = mirs__fp_graph_degree(r, &dc);
  int need = st == MIRS_OK ? mirs__fp_trials_for(mirs__fp_degree_add(s->degree, dc),
                                                  ctx->opt.verify_log2_bound)
                            : 0;
  if (st == MIRS_OK && !reduced && (need < 1 || need > s->trials)) {
    MIRS_INC(&w->stats, fp_reverified);
    int used;
    mirs__fp_verdict v;
    st = mirs__verify_fingerprints(ctx, p, r, &used, &v);
    if (st == MIRS_UNSUPPORTED || (st == MIRS_OK && !v.equal)) {
      if (st == MIRS_UNSUPPORTED)
        mirs_clear_error(ctx);
      MIRS_INC(&w->stats, fp_reverify_rejects);
      mirs__graph_free(r);
      return MIRS_OK;
    }
  }
  r->ugraph = true;
  if (st == MIRS_OK)
    st = unique_names(r);
  mirs__cost_result cr;
  if (st == MIRS_OK)
    st = mirs__cost_graph(ctx, s->device, r, &cr);
  bool verified = false, float_checked = false;
  /* (At most a tenth of the search's time goes to these early checks; the
   * others wait for the end, which keeps the cost per state that of the
   * reduced instance.) */
  double now = mirs__core_now();
  if (st == MIRS_OK && reduced && cr.feasible &&
      (!s->have_best_full || cr.seconds < s->best_full) &&
      s->early_seconds <= 0.1 * (now - s->t0)) {
    MIRS_INC(&w->stats, full_verified);
    st = verify_full_one(s, r, &verified);
    if (st == MIRS_OK && !verified) {
      MIRS_INC(&w->stats, full_rejects);
      mirs__graph_free(r);
      return MIRS_OK;
    }
    bool skip = true;
    if (st == MIRS_OK && ctx->opt.float_check_top > 0) {
      MIRS_INC(&w->stats, float_checks);
      st = float_one(s, r, &verified, &skip);
      if (st == MIRS_OK && !verified) {
        MIRS_INC(&w->stats, float_rejects);
        mirs__graph_free(r);
        return MIRS_OK;
      }
    }
    float_checked = !skip;
    s->have_best_full = true;
    s->best_full = cr.seconds;
    s->early_seconds += mirs__core_now() - now;
  }
  /* s->res belongs to the search (freed through s->ctx): grow it there,
   * not in the worker's context, or both contexts' accounting is off. */
  if (st == MIRS_OK && s->nres >= s->capres)
    st = mirs__core_grow(s->ctx, (void **)&s->res, &s->capres, s->nres + 1, sizeof *s->res);
  if (st != MIRS_OK) {
    if (mirs_last_status(ctx) == MIRS_OK)
      mirs__core_error_copy(ctx, s->ctx);
    mirs__graph_free(r);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  mirs__search_result *res = &s->res[s->nres++];
  res->g = r;
  res->hash = h;
  res->cost = cr.feasible ? cr.seconds : INFINITY;
  res->kernels = cr.kernels;
  res->reduced = reduced;
  res->verified = verified;
  res->float_checked = float_checked;
  res->found_at = mirs__core_now() - s->t0;
  MIRS_INC(&w->stats, graphs_found);
  mirs__core_log(ctx, MIRS_LOG_DEBUG, "search: found %016llx cost %g (%d kernels)",
                 (unsigned long long)h, res->cost, (int)res->kernels);
  if (s->on_result)
    s->on_result(s->user, r, res->cost);
  return MIRS_OK;
}

/* Whether the state just entered completes the program. */
static mirs_status check_complete(mirs__search_worker *w) {
  const mirs_graph *p = w->s->program;
  const mirs__kop *k = &w->g->ops[w->g->nops - 1];
  bool fresh = false;
  for (int i = 0; i < k->nout; i++)
    if (w->kmatch[k->out[i]] >= 0)
      fresh = true;
  if (!fresh)
    return MIRS_OK;
  for (int32_t i = 0; i < p->nout; i++)
    if (w->nmatch[i] == 0)
      return MIRS_OK;
  return candidate(w);
}

/* Enter move index idx of the top frame: apply it and push the new state's
 * frame.  *entered false when the move is refused or pruned. */
static mirs_status enter(mirs__search_worker *w, uint32_t idx, bool *entered) {
  mirs__search_frame *f = &w->frames[w->depth - 1];
  mirs__search_move m = w->moves[f->moff + idx];
  mirs__abs_mark mark;
  MIRS_CHECK(w->ctx, apply_move(w, &m, entered, &mark));
  if (!*entered)
    return MIRS_OK;
  MIRS_INC(&w->stats, states_explored);
  if (w->ctx->opt.log_level >= MIRS_LOG_TRACE && m.kind == MIRS__MOVE_OPEN)
    mirs__core_log(w->ctx, MIRS_LOG_TRACE,
                   "search: depth %d move %u open grid [%d,%d,%d] block %d forloop %d",
                   (int)w->depth, idx, (int)m.grid[0], (int)m.grid[1], (int)m.grid[2],
                   (int)m.block, (int)m.forloop);
  else if (w->ctx->opt.log_level >= MIRS_LOG_TRACE)
    mirs__core_log(w->ctx, MIRS_LOG_TRACE,
                   "search: depth %d move %u kind %d op %s in %d,%d dim %d loads %d "
                   "[%d:%d,%d,%d/%d] [%d:%d,%d,%d/%d]",
                   (int)w->depth, idx, m.kind, mirs_op_name((mirs_op)m.op), (int)m.in[0],
                   (int)m.in[1], m.dim, m.nload, (int)m.load[0].src, m.load[0].imap[0],
                   m.load[0].imap[1], m.load[0].imap[2], m.load[0].fmap, (int)m.load[1].src,
                   m.load[1].imap[0], m.load[1].imap[1], m.load[1].imap[2], m.load[1].fmap);
  if (m.kind == MIRS__MOVE_KOP || m.kind == MIRS__MOVE_CLOSE)
    MIRS_CHECK(w->ctx, check_complete(w));
  return push_frame(w, &m, mark);
}

/* Rebuild the state of path from the root. */
mirs_status mirs__search_replay(mirs__search_worker *w, const uint32_t *path, int32_t len) {
  while (w->depth > 1)
    pop_frame(w);
  for (int32_t i = 0; i < len; i++) {
    mirs__search_frame *f = &w->frames[w->depth - 1];
    if (path[i] >= f->nmoves)
      return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG,
                       "replay: index %u at depth %d is out of range (%u moves)", path[i], (int)i,
                       f->nmoves);
    f->next = path[i] + 1;
    bool entered;
    MIRS_CHECK(w->ctx, enter(w, path[i], &entered));
    if (!entered)
      return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG, "replay: move %u at depth %d is refused",
                       path[i], (int)i);
  }
  return MIRS_OK;
}

/* Sum a worker's counters (its own and its modules') into s. */
/* Add counters st to the search's and to the context's. */
static void add_stats(mirs_search *s, const mirs__stats *st) {
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    s->stats.v[i] += st->v[i];
  mirs__core_stats_add(s->ctx, st);
}

static void collect_stats(mirs_search *s, mirs__search_worker *w) {
  const mirs__prune_counters *c = mirs__prune_worker_counters(w->pw);
  MIRS_ADD(&w->stats, prune_cache_hits, c->cache_hits);
  MIRS_ADD(&w->stats, prune_weights, c->weight_refuted);
  MIRS_ADD(&w->stats, solver_calls, c->solver_calls);
  MIRS_ADD(&w->stats, solver_refuted, c->solver_sat);
  MIRS_ADD(&w->stats, solver_no_model, c->solver_unsat);
  MIRS_ADD(&w->stats, solver_unknown, c->solver_unknown);
  s->solver_seconds += c->solver_seconds;
  add_stats(s, &w->stats);
  memset(&w->stats, 0, sizeof w->stats);
}

/* Fill the public stats of s (counters of w not yet collected included). */
static void fill_stats(const mirs_search *s, const mirs__search_worker *w, mirs_search_stats *o) {
  uint64_t v[MIRS__STAT_COUNT];
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    v[i] = s->stats.v[i] + (w ? w->stats.v[i] : 0);
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->states_explored = v[MIRS__STAT_states_explored];
  o->candidates_verified = v[MIRS__STAT_candidates_verified];
  o->graphs_found = v[MIRS__STAT_graphs_found];
  o->prune_calls = v[MIRS__STAT_prune_calls];
  o->prune_cache_hits = v[MIRS__STAT_prune_cache_hits];
  o->solver_calls = v[MIRS__STAT_solver_calls];
  o->solver_seconds = s->solver_seconds;
  if (w) {
    const mirs__prune_counters *c = mirs__prune_worker_counters(w->pw);
    o->prune_cache_hits += c->cache_hits;
    o->solver_calls += c->solver_calls;
    o->solver_seconds += c->solver_seconds;
  }
  o->wall_seconds = s->ran && !w ? s->wall : mirs__core_now() - s->t0;
  o->complete = s->complete;
  o->fingerprint_trials = s->trials;
  o->log2_false_accept_bound = s->ctx->opt.verify_log2_bound;
}

/* Whether a limit or the caller asks the search to stop now. */
static bool should_stop(mirs_search *s, mirs__search_worker *w, double *last_progress) {
  mirs_context *ctx = s->ctx;
  double now = mirs__core_now();
  uint64_t states = s->stats.v[MIRS__STAT_states_explored] + w->stats.v[MIRS__STAT_states_explored];
  if (ctx->opt.max_states > 0 && states >= (uint64_t)ctx->opt.max_states)
    return true;
  /* On reduced instances the last tenth of the time limit is kept for
   * verifying the best results at full shape. */
  double limit = ctx->opt.time_limit * (s->reduce_tile > 0 ? 0.9 : 1.0);
  if (ctx->opt.time_limit > 0 && now - s->t0 >= limit) {
    mirs__core_log(ctx, MIRS_LOG_INFO, "search: stopping at the time limit after %.1f s%s",
                   now - s->t0,
                   s->reduce_tile > 0 ? " (the rest is kept for full-shape verification)" : "");
    return true;
  }
  size_t held = mirs_memory_current(ctx) + mirs_memory_current(w->ctx);
  if (ctx->opt.max_memory > 0 && held > (size_t)ctx->opt.max_memory) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: stopping at the memory limit (%zu bytes held)",
                   held);
    return true;
  }
  if (s->progress && now - *last_progress >= PROGRESS_EVERY) {
    mirs_search_stats st;
    fill_stats(s, w, &st);
    s->progress(s->user, &st);
    *last_progress = now;
  }
  return s->should_stop && s->should_stop(s->user);
}

/* The depth-first search of one worker from its current frames. */
static mirs_status dfs(mirs_search *s, mirs__search_worker *w, bool *complete) {
  double last_progress = s->t0;
  uint64_t tick = 0;
  *complete = false;
  int64_t max_states = s->ctx->opt.max_states;
  while (w->depth > 0) {
    /* A stop request or limit seen by the watchdog, and max_states, are
     * checked every state (one atomic load, two adds); the rest every
     * CHECK_EVERY states. */
    if (mirs__core_stopping(s->ctx)) {
      (void)mirs__core_stopped(w->ctx, "search: stopping"); /* (formats the reason) */
      mirs__core_log(s->ctx, MIRS_LOG_INFO, "%s", mirs_last_error(w->ctx));
      mirs_clear_error(w->ctx);
      return MIRS_OK;
    }
    if (max_states > 0 && s->stats.v[MIRS__STAT_states_explored] +
                                  w->stats.v[MIRS__STAT_states_explored] >=
                              (uint64_t)max_states)
      return MIRS_OK;
    if ((++tick % CHECK_EVERY) == 0 && should_stop(s, w, &last_progress))
      return MIRS_OK;
    mirs__search_frame *f = &w->frames[w->depth - 1];
    if (f->next >= f->nmoves) {
      if (w->depth == 1) {
        *complete = true;
        return MIRS_OK;
      }
      pop_frame(w);
      continue;
    }
    bool entered;
    mirs_status st = enter(w, f->next++, &entered);
    if (st == MIRS_STOPPED) {
      /* Stopped inside the move (a long fingerprint or query): it was not
       * applied, so it is still open work. */
      mirs__core_log(s->ctx, MIRS_LOG_INFO, "%s", mirs_last_error(w->ctx));
      mirs_clear_error(w->ctx);
      w->frames[w->depth - 1].next--;
      return MIRS_OK;
    }
    MIRS_CHECK(w->ctx, st);
  }
  return MIRS_OK;
}

/* Compare results by (cost, hash). */
static int result_cmp(const void *a, const void *b) {
  const mirs__search_result *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return x->hash < y->hash ? -1 : x->hash > y->hash ? 1 : 0;
}

/* Whether the search's time limit has passed. */
static bool time_up(const mirs_search *s) {
  double lim = s->ctx->opt.time_limit;
  return lim > 0 && mirs__core_now() - s->t0 >= lim;
}

/* Verify graph r at full shape with the search's trials (fingerprints of
 * the program and of the inputs kept between calls), or from scratch with
 * more where its degree needs them; *eq the verdict. */
static mirs_status verify_full_one(mirs_search *s, const mirs_graph *r, bool *eq) {
  mirs_context *ctx = s->ctx;
  const mirs_graph *p = s->program;
  uint64_t dc = 0;
  *eq = false;
  mirs_status st = mirs__fp_graph_degree(r, &dc);
  if (st == MIRS_UNSUPPORTED) {
    mirs_clear_error(ctx);
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
  int need = mirs__fp_trials_for(mirs__fp_degree_add(s->degree, dc), ctx->opt.verify_log2_bound);
  mirs__fp_verdict v;
  if (need < 1 || need > s->trials) {
    int used;
    st = mirs__verify_fingerprints(ctx, p, r, &used, &v);
    if (st == MIRS_UNSUPPORTED) {
      mirs_clear_error(ctx);
      return MIRS_OK;
    }
    MIRS_CHECK(ctx, st);
    *eq = v.equal;
    return MIRS_OK;
  }
  uint64_t seed = (uint64_t)ctx->opt.seed;
  if (!s->full_ref) {
    MIRS_CHECK(ctx, mirs__fp_store_new(ctx, NULL, s->trials, seed, &s->full_ref));
    MIRS_CHECK(ctx, mirs__fp_compute_graph(s->full_ref, p));
  }
  if (!s->full_cand)
    MIRS_CHECK(ctx, mirs__fp_store_new(ctx, NULL, s->trials, seed, &s->full_cand));
  /* Every result has the program's inputs first, in its order: their
   * fingerprints stay. */
  int32_t nin = 0;
  while (nin < r->nt && r->t[nin].producer < 0)
    nin++;
  mirs__fp_truncate(s->full_cand, nin);
  st = mirs__fp_extend(s->full_cand, r);
  if (st == MIRS_OK)
    st = mirs__fp_compare_outputs(s->full_ref, p, s->full_cand, r, &v);
  mirs__fp_truncate(s->full_cand, nin);
  if (st == MIRS_UNSUPPORTED || st == MIRS_LIMIT) {
    mirs_clear_error(ctx);
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
  *eq = v.equal;
  return MIRS_OK;
}

/* Verify the results found on a reduced instance at full shape, best
 * first, until verify_full_max of them pass (those verified when found
 * count too), none once the time limit has passed.  Drop those that fail
 * and those left unverified.  The set kept is the first verify_full_max
 * passing ones in (cost, hash) order, whatever was verified early. */
static mirs_status full_verify(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  int64_t max = ctx->opt.verify_full_max;
  int64_t passed = 0;
  size_t k = 0;
  mirs__stats fs = {{0}};
  mirs_status st = MIRS_OK;
  bool stopped = false;
  for (size_t i = 0; i < s->nres; i++) {
    bool keep = true;
    if (s->res[i].reduced) {
      if (max >= 0 && passed >= max) {
        keep = false;
      } else if (!s->res[i].verified) {
        if (st != MIRS_OK || stopped || time_up(s)) {
          keep = false;
        } else {
          MIRS_INC(&fs, full_verified);
          st = verify_full_one(s, s->res[i].g, &keep);
          if (st == MIRS_STOPPED) {
            /* Stopped (signal, limit): this and every later unverified
             * result go unreported; the search says it is incomplete. */
            mirs__core_log(ctx, MIRS_LOG_WARNING,
                           "search: full-shape verification stopped (%s); results not yet "
                           "verified are not reported",
                           mirs_last_error(ctx));
            mirs_clear_error(ctx);
            s->complete = false;
            stopped = true;
            st = MIRS_OK;
            keep = false;
          } else if (st != MIRS_OK) {
            keep = false;
          } else if (!keep) {
            MIRS_INC(&fs, full_rejects);
            mirs__core_log(ctx, MIRS_LOG_WARNING,
                           "search: result %016llx matched on the reduced instance but not at "
                           "full shape; dropped",
                           (unsigned long long)s->res[i].hash);
            mirs__graph_free(s->res[i].g);
            continue;
          }
        }
      }
      if (keep)
        passed++;
      else
        MIRS_INC(&fs, full_unverified);
    }
    if (keep) {
      s->res[i].reduced = false;
      s->res[k++] = s->res[i];
    } else {
      mirs__graph_free(s->res[i].g);
    }
  }
  s->nres = k;
  if (fs.v[MIRS__STAT_full_unverified] > 0)
    mirs__core_log(ctx, MIRS_LOG_INFO,
                   "search: %llu graphs found on the reduced instance were not verified at full "
                   "shape (verify_full_max %lld or the time limit) and are not reported",
                   (unsigned long long)fs.v[MIRS__STAT_full_unverified], (long long)max);
  /* The full-shape stores are large: free them now. */
  mirs__fp_store_free(s->full_ref);
  mirs__fp_store_free(s->full_cand);
  s->full_ref = s->full_cand = NULL;
  add_stats(s, &fs);
  return st;
}

/* Evaluate r in float64 and compare it with the program's outputs
 * (evaluated once per search and kept); *ok the verdict, *skip when the
 * program is too large for the interpreter. */
static mirs_status float_one(mirs_search *s, const mirs_graph *r, bool *ok, bool *skip) {
  mirs_context *ctx = s->ctx;
  *ok = true;
  *skip = false;
  if (s->ref_eval_limit) {
    *skip = true;
    return MIRS_OK;
  }
  if (!s->ref_eval) {
    mirs_status st = mirs_graph_eval(s->program, (uint64_t)ctx->opt.seed, &s->ref_eval);
    if (st == MIRS_LIMIT) {
      mirs__core_log(ctx, MIRS_LOG_WARNING, "search: program too large for the float64 check");
      mirs_clear_error(ctx);
      s->ref_eval_limit = true;
      *skip = true;
      return MIRS_OK;
    }
    MIRS_CHECK(ctx, st);
  }
  const mirs_eval_result *ref = s->ref_eval;
  mirs_eval_result *e;
  MIRS_CHECK(ctx, mirs_graph_eval(r, (uint64_t)ctx->opt.seed, &e));
  double tol = ctx->opt.float_tolerance;
  for (int o = 0; *ok && o < mirs_eval_num_outputs(ref); o++) {
    int64_t n1, n2;
    const double *a = mirs_eval_output_values(ref, o, &n1);
    const double *b = o < mirs_eval_num_outputs(e) ? mirs_eval_output_values(e, o, &n2) : NULL;
    if (!b || n1 != n2) {
      *ok = false;
      break;
    }
    double scale = 0;
    for (int64_t j = 0; j < n1; j++)
      scale = fmax(scale, fabs(a[j]));
    for (int64_t j = 0; j < n1 && *ok; j++)
      if (!(fabs(a[j] - b[j]) <= tol * fmax(scale, 1e-300)))
        *ok = false;
  }
  mirs_eval_result_destroy(e);
  return MIRS_OK;
}

/* Check the best results in float64 against the program (those checked
 * when found are not checked again); drop failures.  Stops at the time
 * limit. */
static mirs_status float_check(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  int64_t top = ctx->opt.float_check_top;
  size_t k = 0;
  mirs__stats fs = {{0}};
  mirs_status st = MIRS_OK;
  for (size_t i = 0; i < s->nres; i++) {
    bool ok = true, skip = false;
    if ((int64_t)i < top && !s->res[i].float_checked && st == MIRS_OK) {
      if (time_up(s)) {
        mirs__core_log(ctx, MIRS_LOG_INFO,
                       "search: float64 check stopped at the time limit after %zu results", i);
        top = (int64_t)i;
      } else {
        st = float_one(s, s->res[i].g, &ok, &skip);
        if (st == MIRS_STOPPED) {
          /* Stopped: this and the later results keep their fingerprint
           * verdict (the sound one) without the float64 check. */
          mirs__core_log(ctx, MIRS_LOG_WARNING,
                         "search: float64 check of results %zu.. not run (%s)", i + 1,
                         mirs_last_error(ctx));
          mirs_clear_error(ctx);
          s->complete = false;
          top = (int64_t)i;
          st = MIRS_OK;
          ok = true;
        } else if (st != MIRS_OK) {
          ok = true;
        } else if (!skip) {
          MIRS_INC(&fs, float_checks);
        }
      }
    }
    if (ok) {
      s->res[k++] = s->res[i];
    } else {
      MIRS_INC(&fs, float_rejects);
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: result %016llx matched by fingerprints but not in float64; dropped",
                     (unsigned long long)s->res[i].hash);
      mirs__graph_free(s->res[i].g);
    }
  }
  s->nres = k;
  mirs_eval_result_destroy(s->ref_eval);
  s->ref_eval = NULL;
  add_stats(s, &fs);
  return st;
}

/* ---------------------------------------------------------------- public API */

/* Fill s->sym_need (see search.h); leaves it NULL where the bound does
 * not apply. */
static mirs_status sym_need_build(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  const mirs_graph *p = s->program;
  if (p->nout > 8)
    return MIRS_OK;
  mirs__abs_arena a;
  MIRS_CHECK(ctx, mirs__abs_arena_init(&a, ctx));
  mirs__abs_id *kexpr = mirs__core_alloc(ctx, ((size_t)p->nt + 1) * sizeof *kexpr);
  mirs__abs_id e[8];
  mirs_status st = kexpr ? mirs__abs_graph(&a, p, kexpr) : MIRS_NOMEM;
  bool ok = st == MIRS_OK;
  for (int32_t i = 0; ok && i < p->nout; i++) {
    e[i] = kexpr[p->outputs[i]];
    ok = e[i] != MIRS__ABS_NONE && !mirs__abs_node_at(&a, e[i])->boxed;
  }
  size_t nmask = (size_t)1 << p->nout;
  if (ok) {
    s->sym_need = mirs__core_calloc(ctx, nmask, sizeof *s->sym_need);
    if (!s->sym_need)
      st = MIRS_NOMEM;
  }
  for (size_t mask = 1; ok && st == MIRS_OK && mask < nmask; mask++) {
    mirs__abs_id sel[8];
    int32_t n = 0;
    for (int32_t i = 0; i < p->nout; i++)
      if ((mask >> i) & 1)
        sel[n++] = e[i];
    ok = mirs__abs_count_symbols(&a, sel, n, s->sym_need[mask]);
  }
  if (!ok || st != MIRS_OK) {
    mirs__core_free(ctx, s->sym_need);
    s->sym_need = NULL;
  }
  if (st == MIRS_LIMIT) {
    mirs_clear_error(ctx); /* an extent overflow: no bound, not an error */
    st = MIRS_OK;
  }
  mirs__core_free(ctx, kexpr);
  mirs__abs_arena_free(&a);
  return st;
}

/* The watchdog's deadline and memory limit for an operation starting now. */
static mirs_status watch_limits(mirs_context *ctx, double t0) {
  double deadline = ctx->opt.time_limit > 0 ? t0 + ctx->opt.time_limit : 0;
  size_t mem = ctx->opt.max_memory > 0 ? (size_t)ctx->opt.max_memory : 0;
  return mirs__core_watch_start(ctx, deadline, mem);
}

static mirs_status search_create(mirs_context *ctx, const mirs_graph *program, mirs_search **out);

/* Prepare a search of program.  The setup (fingerprints of the program at
 * its full shape, the pruning targets) honours the time and memory limits
 * and mirs_interrupt: stopped there, the search is created but runs
 * nothing (incomplete, with a warning saying why). */
mirs_status mirs_search_create(mirs_context *ctx, const mirs_graph *program, mirs_search **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (out)
    *out = NULL;
  MIRS_CHECK(ctx, watch_limits(ctx, mirs__core_now()));
  mirs_status st = search_create(ctx, program, out);
  mirs__core_watch_stop(ctx);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* The body of mirs_search_create. */
static mirs_status search_create(mirs_context *ctx, const mirs_graph *program, mirs_search **out) {
  if (!program || !out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_create: NULL argument");
  *out = NULL;
  if (program->ctx != ctx)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_create: the program belongs to another "
                     "context");
  if (program->nout == 0)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "program '%s' has no output", program->name);
  mirs_search *s = mirs__core_calloc(ctx, 1, sizeof *s);
  if (!s)
    return MIRS_NOMEM;
  s->ctx = ctx;
  mirs_status st = mirs__search_space_parse(ctx, &s->space);
  if (st == MIRS_OK)
    st = mirs__graph_clone(program, &s->program);
  if (st == MIRS_OK)
    mirs__search_space_budget(&s->space, program, ctx->opt.op_budget);
  if (st == MIRS_OK && ctx->opt.grid_dims)
    mirs__search_space_dim_grids(&s->space, program);
  if (st == MIRS_OK) {
    s->plab = mirs__core_calloc(ctx, (size_t)program->nt * MIRS_MAX_DIMS + 1, 1);
    st = s->plab ? mirs__search_label_program(ctx, s->program, s->plab, &s->space)
                 : MIRS_NOMEM;
  }
  uint64_t degree = 0;
  if (st == MIRS_OK)
    st = mirs__fp_graph_degree(program, &degree);
  if (st == MIRS_OK) {
    /* The bound counts deg(reference) + deg(candidate); allow a candidate
     * of up to twice the program's degree. */
    s->degree = degree;
    uint64_t d = degree < 1 ? 2 : mirs__fp_degree_mul(degree, 3);
    s->trials = mirs__fp_trials_for(d, ctx->opt.verify_log2_bound);
    if (s->trials < 1)
      s->trials = MIRS__FP_MAX_TRIALS;
    int64_t total = 0;
    for (int32_t t = 0; t < program->nt; t++) {
      int64_t n = mirs__shape_numel(&program->t[t].shape);
      total = n > INT64_MAX - total ? INT64_MAX : total + n;
    }
    if (ctx->opt.fp_reduce && total > ctx->opt.fp_reduce_min_elements)
      s->reduce_tile = ctx->opt.fp_reduce_tile;
    s->reduce_parts = (int32_t)ctx->opt.fp_reduce_parts;
  }
  if (st == MIRS_OK) {
    mirs__prune_config cfg;
    mirs__prune_config_default(&cfg);
    cfg.enabled = ctx->opt.prune != 0;
    cfg.use_solver = ctx->opt.prune_solver != 0;
    cfg.rlimit = (unsigned)ctx->opt.prune_rlimit;
    cfg.timeout_ms = (unsigned)ctx->opt.prune_timeout_ms;
    st = mirs__prune_shared_new(ctx, s->program, &cfg, &s->prune);
  }
  if (st == MIRS_OK) {
    /* Pruning refuses any expression with a symbol its targets lack, so
     * accum_rms is useless when no target has an rms. */
    s->space.rms_useful = s->space.bop[MIRS_OP_ACCUM_RMS];
    if (ctx->opt.prune && s->space.rms_useful) {
      s->space.rms_useful = false;
      const mirs__abs_arena *ta = mirs__prune_target_arena(s->prune);
      for (int i = 0; i < mirs__prune_num_targets(s->prune); i++)
        if (mirs__abs_node_at(ta, mirs__prune_target(s->prune, i))->bits & MIRS__ABS_BIT_RMS)
          s->space.rms_useful = true;
    }
  }
  if (st == MIRS_OK && ctx->opt.prune)
    st = sym_need_build(s);
  if (st == MIRS_OK)
    st = mirs__cost_profiles_load(ctx, NULL, &s->profiles);
  if (st == MIRS_OK) {
    st = mirs__cost_find(ctx, s->profiles, ctx->opt.cost_device, &s->device);
    if (st != MIRS_OK)
      st = mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  if (st == MIRS_STOPPED && s->program) {
    /* A limit or an interrupt during the setup: the search exists but
     * runs nothing (mirs_search_run returns at once, incomplete), so a
     * caller reports an empty incomplete result like any stopped search. */
    snprintf(s->setup_stopped, sizeof s->setup_stopped, "%s", mirs_last_error(ctx));
    mirs_clear_error(ctx);
    /* (The report still prices the unfused program: the device profile
     * is cheap and polls nothing.) */
    st = s->profiles ? MIRS_OK : mirs__cost_profiles_load(ctx, NULL, &s->profiles);
    if (st == MIRS_OK && !s->device)
      st = mirs__cost_find(ctx, s->profiles, ctx->opt.cost_device, &s->device);
    if (st != MIRS_OK) {
      mirs_search_destroy(s);
      return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
    }
    *out = s;
    return MIRS_OK;
  }
  if (st != MIRS_OK) {
    mirs_search_destroy(s);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  mirs__core_log(ctx, MIRS_LOG_DEBUG, "search: %d fingerprint trials (program degree %llu)",
                 s->trials, (unsigned long long)degree);
  *out = s;
  return MIRS_OK;
}

/* Install callbacks. */
mirs_status mirs_search_set_callbacks(mirs_search *s, mirs_search_progress_fn progress,
                                      mirs_search_result_fn on_result,
                                      mirs_search_stop_fn should_stop_fn, void *user) {
  if (!s)
    return MIRS_INVALID_ARG;
  s->progress = progress;
  s->on_result = on_result;
  s->should_stop = should_stop_fn;
  s->user = user;
  return MIRS_OK;
}

/* Run the search. */
mirs_status mirs_search_run(mirs_search *s) {
  if (!s)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = s->ctx;
  if (s->ran)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_run: this search has already run");
  if (s->running)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_run: called again from its own callback");
  if (s->setup_stopped[0]) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: stopped during setup (%s); nothing searched",
                   s->setup_stopped);
    s->ran = true;
    s->complete = false;
    return MIRS_OK;
  }
  s->running = true;
  s->t0 = mirs__core_now();
  MIRS_CHECK(ctx, watch_limits(ctx, s->t0));
  clock_t c0 = clock();
  mirs__search_worker *w;
  mirs_status st = mirs__search_worker_new(s, &w);
  if (st == MIRS_STOPPED) { /* (stopped while replaying the root) */
    mirs_clear_error(ctx);
    st = MIRS_OK;
    w = NULL;
  } else if (st != MIRS_OK) {
    mirs__core_watch_stop(ctx);
    s->running = false;
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  bool complete = false;
  if (w) {
    st = dfs(s, w, &complete);
    if (st != MIRS_OK)
      mirs__core_error_copy(ctx, w->ctx);
    collect_stats(s, w);
    mirs__search_worker_free(w);
  }
  s->complete = st == MIRS_OK && complete;
  if (st == MIRS_OK) {
    if (s->nres > 1)
      qsort(s->res, s->nres, sizeof *s->res, result_cmp);
    double t1 = mirs__core_now(), cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    double n = (double)s->stats.v[MIRS__STAT_states_explored];
    mirs__core_log(ctx, MIRS_LOG_DEBUG,
                   "search: %.0f states in %.3f s (%.0f states/s), %.3f s of process CPU "
                   "(%.0f states per CPU second), %.3f s of it verifying new bests at full shape",
                   n, t1 - s->t0, t1 > s->t0 ? n / (t1 - s->t0) : 0.0, cpu, cpu > 0 ? n / cpu : 0.0,
                   s->early_seconds);
    st = full_verify(s);
    if (st == MIRS_OK)
      st = float_check(s);
  }
  mirs__core_watch_stop(ctx);
  s->running = false;
  s->wall = mirs__core_now() - s->t0;
  s->ran = true;
  if (s->progress) {
    mirs_search_stats o;
    fill_stats(s, NULL, &o);
    s->progress(s->user, &o);
  }
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Number of results. */
int mirs_search_num_results(const mirs_search *s) {
  return s ? (int)s->nres : 0;
}

/* Result index (best first). */
const mirs_graph *mirs_search_result(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < s->nres ? s->res[index].g : NULL;
}

/* Predicted seconds of result index. */
double mirs_search_result_cost(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < s->nres ? s->res[index].cost : NAN;
}

/* Canonical hash of result index. */
uint64_t mirs_search_result_hash(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < s->nres ? s->res[index].hash : 0;
}

/* Kernel launches of result index. */
int mirs_search_result_kernels(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < s->nres ? (int)s->res[index].kernels : 0;
}

/* Statistics so far, at most size bytes of them. */
mirs_status mirs_search_get_stats_sized(const mirs_search *s, mirs_search_stats *out,
                                        size_t size) {
  if (!s || !out || size < sizeof(size_t))
    return MIRS_INVALID_ARG;
  mirs_search_stats full;
  fill_stats(s, NULL, &full);
  full.struct_size = size < sizeof full ? size : sizeof full;
  memcpy(out, &full, full.struct_size);
  return MIRS_OK;
}

/* Release the search. */
void mirs_search_destroy(mirs_search *s) {
  if (!s)
    return;
  mirs_context *ctx = s->ctx;
  for (size_t i = 0; i < s->nres; i++)
    mirs__graph_free(s->res[i].g);
  mirs__core_free(ctx, s->res);
  mirs__core_free(ctx, s->seen);
  mirs__core_free(ctx, s->plab);
  mirs__core_free(ctx, s->sym_need);
  mirs__fp_store_free(s->full_ref);
  mirs__fp_store_free(s->full_cand);
  mirs_eval_result_destroy(s->ref_eval);
  mirs__prune_shared_free(s->prune);
  mirs__cost_profiles_free(s->profiles);
  mirs__graph_free(s->program);
  mirs__core_free(ctx, s);
}
