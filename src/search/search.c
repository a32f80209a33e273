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
  if (n > w->captser)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->tser, &w->captser, n, sizeof *w->tser));
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
  f->end = n;
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
    MIRS_CHECK(ctx, mirs__search_prune_check(w, w->kexpr[k->out[i]], &keep));
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
    return mirs__search_refused(w, st, MIRS__STAT_fp_refused);
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
    return mirs__search_refused(w, st, MIRS__STAT_fp_refused);
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

/* Apply BOP move m: its new input tiles, then its op, on the open block
 * graph (see apply_move). */
static mirs_status apply_bop(mirs__search_worker *w, const mirs__search_move *m, bool *ok,
                             mirs__abs_mark *mark) {
  mirs_context *ctx = w->ctx;
  mirs_graph *g = w->g;
  mirs__abs_arena *a = mirs__prune_worker_arena(w->pw);
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
      w->tser[id] = ++w->serial;
      mirs__search_load_info(bg, l, &w->klab[(size_t)l->src * MIRS_MAX_DIMS],
                             w->katoms[l->src], &w->kdeg[(size_t)l->src * MIRS_MAX_DIMS],
                             &w->bt[id]);
      st = mirs__abs_bop(a, bg, bg->nops - 1, w->kexpr, w->bexpr);
    }
  }
  int32_t out = -1;
  if (st == MIRS_OK) {
    const mirs__scalar *c = mirs__op_nconst(m->op) > 0 ? w->s->space.cst[m->dim] : NULL;
    st = mirs__bg_add_op_c(g, bg, NULL, m->op, m->nin, m->in, c ? -1 : m->dim, false, c, &out);
    if (st == MIRS_OK)
      added++;
    if (st == MIRS_OK && mirs__op_has_eps(m->op))
      bg->ops[bg->nops - 1].eps = w->s->space.eps;
  }
  if (st == MIRS_OK) {
    mirs__search_btinfo info[2];
    mirs__shape sh[2];
    for (int i = 0; i < m->nin; i++) {
      info[i] = w->bt[m->in[i]];
      sh[i] = bg->t[m->in[i]].shape;
    }
    w->tser[out] = ++w->serial;
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
    return mirs__search_refused(w, st, MIRS__STAT_moves_failed);
  }
  for (int i = 0; i < m->nin; i++)
    w->bt[m->in[i]].uses++;
  int c = mirs__search_bop_class(bg, m->op, m->nin, m->in);
  if (c >= 0)
    w->opcount[c]++;
  *ok = true;
  return MIRS_OK;
}

/* Apply CLOSE move m: a copy of the open block graph, with its outputs
 * and fused flags, becomes a custom kernel op (see apply_move). */
static mirs_status apply_close(mirs__search_worker *w, const mirs__search_move *m, bool *ok,
                               mirs__abs_mark *mark) {
  mirs_context *ctx = w->ctx;
  mirs_graph *g = w->g;
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
    return mirs__search_refused(w, st, MIRS__STAT_moves_failed);
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
    const mirs__scalar *c = mirs__op_nconst(m->op) > 0 ? w->s->space.cst[m->dim] : NULL;
    mirs_status st = mirs__graph_add_op_c(g, NULL, m->op, m->nin, m->in, c ? -1 : m->dim, c, NULL);
    if (st != MIRS_OK)
      return mirs__search_refused(w, st, MIRS__STAT_moves_failed);
    if (mirs__op_has_eps(m->op))
      g->ops[g->nops - 1].eps = w->s->space.eps;
    return finish_kop(w, *mark, ok);
  }
  case MIRS__MOVE_OPEN: {
    int32_t block[MIRS__GRID] = {m->block, 1, 1};
    mirs__bgraph *bg;
    if ((size_t)w->nbg >= w->capbgs)
      MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->bgs, &w->capbgs, (size_t)w->nbg + 1,
                                      sizeof *w->bgs));
    if ((size_t)w->nbg >= w->capbgser)
      MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->bgser, &w->capbgser, (size_t)w->nbg + 1,
                                      sizeof *w->bgser));
    mirs_status st = mirs__bg_new(ctx, m->grid, block, m->forloop, &bg);
    if (st != MIRS_OK)
      return mirs__search_refused(w, st, MIRS__STAT_moves_failed);
    w->bgser[w->nbg] = ++w->serial;
    w->bgs[w->nbg++] = bg;
    w->open = true;
    if (m->final)
      w->final |= 1u << (w->nbg - 1);
    else
      w->final &= ~(1u << (w->nbg - 1));
    *ok = true;
    return MIRS_OK;
  }
  case MIRS__MOVE_BOP:
    return apply_bop(w, m, ok, mark);
  case MIRS__MOVE_CLOSE:
    return apply_close(w, m, ok, mark);
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
    w->pmemo = mirs__core_calloc(ctx, MIRS__PMEMO_SIZE, sizeof *w->pmemo);
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
  mirs__core_free(ctx, w->firsts);
  mirs__core_free(ctx, w->tser);
  mirs__core_free(ctx, w->bgser);
  mirs__core_free(ctx, w->cmemo);
  mirs__core_free(ctx, w->clsfit);
  mirs__core_free(ctx, w->shp);
  mirs__core_free(ctx, w->shtab);
  mirs__core_free(ctx, w->shloc);
  mirs__core_free(ctx, w->shfit);
  mirs__core_free(ctx, w->kexpr);
  mirs__core_free(ctx, w->bexpr);
  mirs__core_free(ctx, w->pathbuf);
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

/* ---------------------------------------------------------------- candidates */

/* A complete candidate: name its outputs like the program's and offer it
 * to the result sink (sink.c), which deduplicates, stores and announces. */
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
  if (st == MIRS_OK)
    st = mirs__sink_offer(w, g, h);
  g->nout = 0;
  for (int32_t i = 0; i < p->nout; i++)
    g->t[chosen[i]].name = saved[i];
  MIRS_CHECK(ctx, st);
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
  /* Tree trace (off: NULL); replays are not states of the tree. */
  mirs__trace *tr = w->s->trace;
  uint64_t ta = 0, tb = 0, tc = 0;
  if (tr && !w->replaying)
    ta = mirs__trace_now();
  MIRS_CHECK(w->ctx, apply_move(w, &m, entered, &mark));
  if (!*entered) {
    if (tr && !w->replaying)
      mirs__trace_refused(tr);
    return MIRS_OK;
  }
  if (tr && !w->replaying)
    tb = mirs__trace_now();
  if (!w->replaying)
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
  mirs_status st = MIRS_OK;
  if (!w->replaying && (m.kind == MIRS__MOVE_KOP || m.kind == MIRS__MOVE_CLOSE))
    st = check_complete(w);
  size_t nmoves = w->nmoves;
  if (tr && !w->replaying)
    tc = mirs__trace_now();
  if (st == MIRS_OK)
    st = push_frame(w, &m, mark);
  if (st == MIRS_OK && tr && !w->replaying)
    mirs__trace_enter(w, idx, ta, tb, tc);
  if (st != MIRS_OK) {
    /* Failed or stopped (mirs_interrupt, a limit) after the move was
     * applied: undo it, so the frames describe the worker's state and the
     * move is still open work (re-entered, and counted, when resumed). */
    mirs__search_frame tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.in = m;
    tmp.mark = mark;
    w->nmoves = nmoves;
    undo_move(w, &tmp);
    if (!w->replaying)
      w->stats.v[MIRS__STAT_states_explored]--;
    *entered = false;
    return mirs__core_trace(w->ctx, st, __func__, __FILE__, __LINE__);
  }
  return MIRS_OK;
}

/* Rebuild the state of path from the root, reusing the frames the
 * worker already has in common with it; no counter moves and no candidate
 * is offered (the states were counted where they were first entered). */
mirs_status mirs__search_replay(mirs__search_worker *w, const uint32_t *path, int32_t len) {
  int32_t keep = 0;
  while (keep < len && keep + 1 < w->depth && w->frames[keep].next - 1 == path[keep])
    keep++;
  while (w->depth > keep + 1)
    pop_frame(w);
  mirs__stats saved = w->stats;
  w->replaying = true;
  mirs_status st = MIRS_OK;
  for (int32_t i = 0; i < keep; i++)
    w->frames[i].end = w->frames[i].next;
  for (int32_t i = keep; st == MIRS_OK && i < len; i++) {
    mirs__search_frame *f = &w->frames[w->depth - 1];
    if (path[i] >= f->nmoves) {
      st = MIRS_FAIL(w->ctx, MIRS_INVALID_ARG,
                     "replay: index %u at depth %d is out of range (%u moves)", path[i], (int)i,
                     f->nmoves);
      break;
    }
    f->next = f->end = path[i] + 1;
    bool entered;
    st = enter(w, path[i], &entered);
    if (st == MIRS_OK && !entered)
      st = MIRS_FAIL(w->ctx, MIRS_INVALID_ARG, "replay: move %u at depth %d is refused", path[i],
                     (int)i);
  }
  w->replaying = false;
  w->stats = saved;
  MIRS_CHECK(w->ctx, st);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- tasks */

/* Position w at task t. */
mirs_status mirs__search_task_start(mirs__search_worker *w, const mirs__task *t) {
  MIRS_CHECK(w->ctx, mirs__search_replay(w, t->path, t->len));
  mirs__search_frame *f = &w->frames[w->depth - 1];
  uint32_t hi = t->hi == MIRS__TASK_ALL ? f->nmoves : t->hi;
  if (t->lo > hi || hi > f->nmoves)
    return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG,
                     "task: move range [%u, %u) at depth %d is out of range (%u moves)", t->lo,
                     t->hi, (int)t->len, f->nmoves);
  f->next = t->lo;
  f->end = hi;
  w->base = w->depth - 1;
  return MIRS_OK;
}

/* Run w's task for at most `budget` loop steps, entering at most
 * `states` states. */
mirs_status mirs__search_task_steps(mirs__search_worker *w, uint32_t budget, uint64_t states,
                                    bool *done) {
  *done = false;
  uint64_t start = w->stats.v[MIRS__STAT_states_explored];
  for (uint32_t i = 0; i < budget; i++) {
    mirs__search_frame *f = &w->frames[w->depth - 1];
    if (f->next >= f->end) {
      if (w->s->trace)
        mirs__trace_pop(w);
      if (w->depth - 1 <= w->base) {
        *done = true;
        return MIRS_OK;
      }
      pop_frame(w);
      continue;
    }
    if (w->stats.v[MIRS__STAT_states_explored] - start >= states)
      return MIRS_OK;
    bool entered;
    mirs_status st = enter(w, f->next++, &entered);
    if (st == MIRS_STOPPED) {
      /* Stopped inside the move (a long fingerprint or query, by
       * mirs_interrupt or a limit): it was not applied, so it is still
       * open work; the caller sees the stop and leaves the task. */
      w->frames[w->depth - 1].next--;
      return st;
    }
    MIRS_CHECK(w->ctx, st);
  }
  return MIRS_OK;
}

/* Path of frame i's state (frames[0..i)'s entered moves) into w's buffer. */
static mirs_status frame_path(mirs__search_worker *w, int32_t i) {
  if ((size_t)i > w->cappath)
    MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->pathbuf, &w->cappath, (size_t)i,
                                       sizeof *w->pathbuf));
  for (int32_t k = 0; k < i; k++)
    w->pathbuf[k] = w->frames[k].next - 1;
  return MIRS_OK;
}

/* Split off the shallowest unexplored range of w's task. */
mirs__task *mirs__search_split(mirs__search_worker *w, mirs_context *tctx) {
  for (int32_t i = w->base; i < w->depth; i++) {
    mirs__search_frame *f = &w->frames[i];
    uint32_t rem = f->end > f->next ? f->end - f->next : 0;
    /* Below the top every remaining move is unexplored, so even one can
     * go; at the top keep at least one to work on. */
    if (rem == 0 || (i == w->depth - 1 && rem < 2))
      continue;
    uint32_t mid = f->next + rem / 2;
    if (frame_path(w, i) != MIRS_OK) {
      mirs_clear_error(w->ctx);
      return NULL;
    }
    mirs__task *t = mirs__task_new(tctx, w->pathbuf, i, mid, f->end);
    if (t)
      f->end = mid;
    return t;
  }
  return NULL;
}

/* The unexplored part of w's task as tasks, pushed onto *list. */
mirs_status mirs__search_leftover(mirs__search_worker *w, mirs_context *tctx, mirs__task **list) {
  for (int32_t i = w->depth - 1; i >= w->base; i--) {
    mirs__search_frame *f = &w->frames[i];
    if (f->next >= f->end)
      continue;
    MIRS_CHECK(w->ctx, frame_path(w, i));
    mirs__task *t = mirs__task_new(tctx, w->pathbuf, i, f->next, f->end);
    if (!t)
      return MIRS_FAIL(w->ctx, MIRS_NOMEM, "out of memory (the open work of a stopped search)");
    t->next = *list;
    *list = t;
    f->end = f->next;
  }
  return MIRS_OK;
}

/* Re-find the candidate at path (a result a checkpoint recorded): replay
 * to its parent and enter it, offering it to the sink; counters are left
 * as they were (the checkpoint has them). */
mirs_status mirs__search_restore(mirs__search_worker *w, const uint32_t *path, int32_t len) {
  if (len < 1)
    return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG, "restore: empty result path");
  MIRS_CHECK(w->ctx, mirs__search_replay(w, path, len - 1));
  mirs__search_frame *f = &w->frames[w->depth - 1];
  if (path[len - 1] >= f->nmoves)
    return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG, "restore: index %u at depth %d is out of range",
                     path[len - 1], (int)(len - 1));
  mirs__stats saved = w->stats;
  f->next = f->end = path[len - 1] + 1;
  bool entered;
  w->restoring = true;
  mirs_status st = enter(w, path[len - 1], &entered);
  w->restoring = false;
  w->stats = saved;
  MIRS_CHECK(w->ctx, st);
  if (!entered)
    return MIRS_FAIL(w->ctx, MIRS_INVALID_ARG, "restore: move %u at depth %d is refused",
                     path[len - 1], (int)(len - 1));
  return MIRS_OK;
}
