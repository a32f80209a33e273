/* SPDX-License-Identifier: MIT */
/* src/search/sink.c - the result sink: the one place where workers write
 * shared search state.  Every complete candidate a worker finds is offered
 * here; the sink deduplicates by canonical hash, verifies again where the
 * fingerprint bound needs it, names, costs and stores the result, all
 * under the search's lock.
 *
 * Determinism: several instances of one canonical hash may be found (in
 * different insertion orders).  The sink keeps the instance whose path
 * (the move indices from the root) is lexicographically smallest: the one
 * a single-threaded depth-first search meets first.  So the result list,
 * each stored graph's text and best.ugraph are the same for any number of
 * threads, any splitting of the work and across checkpoint and resume, and
 * the counters (graphs_found, duplicates, ...) are too: each distinct hash
 * is one result (or one rejection), every other instance one duplicate.
 *
 * Invariants: `ent` holds one entry per hash ever offered, with the
 * smallest path seen so far (in `paths`) and its result's index in `res`
 * (-1 when the stronger verification rejected it); `idx` is an
 * open-addressing index of ent (entry + 1, 0 empty, at most half full).
 * Everything here is written under s->lock; result graphs belong to the
 * search's context (the user's). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "search/splitk.h"

const int mirs__sink_counted[MIRS__SINK_NCOUNTED] = {
    MIRS__STAT_fp_reverified, MIRS__STAT_fp_reverify_rejects, MIRS__STAT_full_verified,
    MIRS__STAT_full_rejects,  MIRS__STAT_float_checks,        MIRS__STAT_float_rejects};

/* Slot of hash h in an index of cap slots. */
static size_t slot_of(uint64_t h, size_t cap) {
  return (size_t)(h * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (cap - 1);
}

/* The entry of hash h, or -1. */
static int64_t find_entry(const mirs_search *s, uint64_t h) {
  if (!s->sink.idxcap)
    return -1;
  for (size_t j = slot_of(h, s->sink.idxcap);; j = (j + 1) & (s->sink.idxcap - 1)) {
    uint32_t e = s->sink.idx[j];
    if (!e)
      return -1;
    if (s->sink.ent[e - 1].hash == h)
      return (int64_t)e - 1;
  }
}

/* Whether hash h was accepted (1), rejected (0) or never offered (-1). */
int mirs__sink_find(const mirs_search *s, uint64_t h) {
  int64_t e = find_entry(s, h);
  return e < 0 ? -1 : s->sink.ent[e].res >= 0;
}

/* Append an entry for h with path[0..len) (result index res). */
static mirs_status add_entry(mirs_search *s, uint64_t h, const uint32_t *path, int32_t len,
                             int32_t res) {
  mirs_context *ctx = s->ctx;
  if ((s->sink.nent + 1) * 2 > s->sink.idxcap) {
    size_t cap = s->sink.idxcap ? s->sink.idxcap * 2 : 1024;
    uint32_t *t = mirs__core_calloc(ctx, cap, sizeof *t);
    if (!t)
      return MIRS_NOMEM;
    for (size_t i = 0; i < s->sink.nent; i++) {
      size_t j = slot_of(s->sink.ent[i].hash, cap);
      while (t[j])
        j = (j + 1) & (cap - 1);
      t[j] = (uint32_t)i + 1;
    }
    mirs__core_free(ctx, s->sink.idx);
    s->sink.idx = t;
    s->sink.idxcap = cap;
  }
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&s->sink.ent, &s->sink.capent, s->sink.nent + 1, sizeof *s->sink.ent));
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&s->sink.paths, &s->sink.cappaths,
                                  s->sink.npaths + (size_t)len + 1, sizeof *s->sink.paths));
  mirs__sink_entry *e = &s->sink.ent[s->sink.nent];
  e->hash = h;
  e->res = res;
  e->plen = len;
  e->poff = s->sink.npaths;
  memcpy(&s->sink.paths[s->sink.npaths], path, sizeof *path * (size_t)len);
  s->sink.npaths += (size_t)len;
  size_t j = slot_of(h, s->sink.idxcap);
  while (s->sink.idx[j])
    j = (j + 1) & (s->sink.idxcap - 1);
  s->sink.idx[j] = (uint32_t)++s->sink.nent;
  return MIRS_OK;
}

/* Replace the path of entry en by path[0..len) (in place when it is not
 * longer; else stored anew and the old one's space dropped). */
static mirs_status set_path(mirs_search *s, mirs__sink_entry *en, const uint32_t *path,
                            int32_t len) {
  if (len > en->plen) {
    MIRS_CHECK(s->ctx, mirs__core_grow(s->ctx, (void **)&s->sink.paths, &s->sink.cappaths,
                                       s->sink.npaths + (size_t)len + 1, sizeof *s->sink.paths));
    en->poff = s->sink.npaths;
    s->sink.npaths += (size_t)len;
  }
  memcpy(&s->sink.paths[en->poff], path, sizeof *path * (size_t)len);
  en->plen = len;
  return MIRS_OK;
}

/* Lexicographic order of paths (a prefix first). */
static int path_cmp(const uint32_t *a, int32_t na, const uint32_t *b, int32_t nb) {
  for (int32_t i = 0; i < na && i < nb; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return na < nb ? -1 : na > nb ? 1 : 0;
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

/* Copy the search context's error into the worker's (a step that ran in
 * the search's context failed). */
static mirs_status parent_failed(mirs__search_worker *w, mirs_status st) {
  if (mirs_last_status(w->ctx) == MIRS_OK)
    mirs__core_error_copy(w->ctx, w->s->ctx);
  return st;
}

/* Make the result of g (hash h): verify again when its degree needs more
 * trials than the search's, name, cost.  *r NULL when the stronger check
 * rejects it.  Under the lock. */
static mirs_status make_result(mirs__search_worker *w, const mirs_graph *g, bool count,
                               bool reduced, mirs_graph **r, mirs__cost_result *cr) {
  mirs_search *s = w->s;
  mirs_context *ctx = w->ctx;
  *r = NULL;
  mirs_graph *c;
  mirs_status st = mirs__graph_clone_in(s->ctx, g, &c);
  if (st != MIRS_OK)
    return parent_failed(w, st);
  /* The trials hold the bound for candidates of up to twice the program's
   * degree; one of a higher degree is verified again, from scratch, with
   * the trials its degree needs, so every result meets the bound.  (One
   * matched on a reduced instance is verified at full shape later, with
   * the trials its degree needs.) */
  uint64_t dc = 0;
  st = mirs__fp_graph_degree(c, &dc);
  int need = st == MIRS_OK ? mirs__fp_trials_for(mirs__fp_degree_add(s->degree, dc),
                                                  ctx->opt.verify_log2_bound)
                           : 0;
  if (st == MIRS_OK && !reduced && (need < 1 || need > s->trials)) {
    if (count)
      MIRS_INC(&w->stats, fp_reverified);
    int used;
    mirs__fp_verdict v;
    st = mirs__verify_fingerprints(ctx, s->program, c, &used, &v);
    if (st == MIRS_UNSUPPORTED || (st == MIRS_OK && !v.equal)) {
      if (st == MIRS_UNSUPPORTED)
        mirs_clear_error(ctx);
      if (count)
        MIRS_INC(&w->stats, fp_reverify_rejects);
      mirs__graph_free(c);
      return MIRS_OK;
    }
  }
  c->ugraph = true;
  if (st == MIRS_OK) {
    st = unique_names(c);
    if (st != MIRS_OK)
      parent_failed(w, st);
  }
  if (st == MIRS_OK)
    st = mirs__cost_graph(ctx, s->device, c, cr);
  if (st != MIRS_OK) {
    mirs__graph_free(c);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  *r = c;
  return MIRS_OK;
}

/* Whether the search's time limit has passed (or, in the final phase,
 * the test hook's number of full-shape verifications is done). */
static bool time_up(const mirs_search *s) {
  double lim = s->ctx->opt.time_limit;
  if (s->final_verifs_max > 0 && s->final_verifs >= s->final_verifs_max)
    return true;
  return lim > 0 && mirs__core_now() - s->t0 >= lim;
}

/* Free result r's graph and its unread text. */
void mirs__sink_result_free(mirs_search *s, mirs__search_result *r) {
  mirs__graph_free(r->g);
  mirs__core_free(s->ctx, r->text);
  r->g = NULL;
  r->text = NULL;
  r->tlen = 0;
}

/* Re-find result r (sent without its text) at its path with the search's
 * re-finding worker: mirs__sink_offer gives it its graph. */
static mirs_status refind(mirs_search *s, mirs__search_result *r) {
  mirs_context *ctx = s->ctx;
  int64_t e = find_entry(s, r->hash);
  if (e < 0)
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "result %016llx has no path", (unsigned long long)r->hash);
  MIRS_CHECK(ctx, s->refind(s, r, &s->sink.paths[s->sink.ent[e].poff], s->sink.ent[e].plen));
  if (!r->g)
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "result %016llx is not found again at its path",
                     (unsigned long long)r->hash);
  mirs__core_log(ctx, MIRS_LOG_DEBUG,
                 "search: result %016llx (sent without its text) re-found at its path",
                 (unsigned long long)r->hash);
  return MIRS_OK;
}

/* Read result r's graph from the canonical text another rank sent (its
 * hash checked), or re-find it at its path when it came without, if not
 * yet. */
mirs_status mirs__sink_graph(mirs_search *s, mirs__search_result *r) {
  mirs_context *ctx = s->ctx;
  if (r->g)
    return MIRS_OK;
  if (!r->text)
    return refind(s, r);
  mirs_graph *g = NULL;
  MIRS_CHECK(ctx, mirs_graph_parse_string(ctx, r->text, r->tlen, "a result from another rank", &g));
  if (mirs_graph_hash(g) != r->hash) {
    uint64_t h = mirs_graph_hash(g);
    mirs__graph_free(g);
    return MIRS_FAIL(ctx, MIRS_INTERNAL,
                     "result %016llx from another rank has another hash (%016llx) when read back",
                     (unsigned long long)r->hash, (unsigned long long)h);
  }
  g->ugraph = true;
  r->g = g;
  mirs__core_free(ctx, r->text);
  r->text = NULL;
  r->tlen = 0;
  return MIRS_OK;
}

/* Every result's graph read (before the results are reported). */
mirs_status mirs__sink_graphs(mirs_search *s) {
  for (size_t i = 0; i < s->sink.nres; i++)
    MIRS_CHECK(s->ctx, mirs__sink_graph(s, &s->sink.res[i]));
  return MIRS_OK;
}

/* The backend of the full-shape verification (the option verify),
 * chosen once per search and said in the log and in report.json. */
mirs_status mirs__sink_full_backend(mirs_search *s) {
  if (s->full_backend)
    return MIRS_OK;
  mirs_context *ctx = s->ctx;
  MIRS_CHECK(ctx, mirs__fp_backend_choose(ctx, &s->full_backend, s->full_backend_name,
                                          sizeof s->full_backend_name));
  mirs__core_log(ctx, MIRS_LOG_INFO, "search: results are verified at full shape on the %s",
                 s->full_backend_name);
  return MIRS_OK;
}

/* How a launched full-shape verification is finished. */
typedef enum full_mode {
  FULL_REJECT,  /* decided without fingerprints: not verified (degree unsupported) */
  FULL_STORE,   /* extended in its slot's store: compare with the program's */
  FULL_SCRATCH, /* its degree needs more trials: verified from scratch when finished */
  FULL_FAILED   /* the launch failed: run again, alone, when its turn comes */
} full_mode;

/* Start verifying graph r at full shape in store slot `slot`: its
 * fingerprints are queued (on the GPU they compute while other slots
 * launch; on the CPU they are computed here), with the search's trials
 * and the program's inputs kept in the slot, or left for finishing from
 * scratch where its degree needs more trials.  *mode says how to finish. */
static mirs_status full_launch(mirs_search *s, const mirs_graph *r, int slot, full_mode *mode) {
  mirs_context *ctx = s->ctx;
  const mirs_graph *p = s->program;
  uint64_t dc = 0;
  *mode = FULL_FAILED;
  MIRS_CHECK(ctx, mirs__sink_full_backend(s));
  mirs_status st = mirs__fp_graph_degree(r, &dc);
  if (st == MIRS_UNSUPPORTED) {
    mirs_clear_error(ctx);
    *mode = FULL_REJECT;
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
  int need = mirs__fp_trials_for(mirs__fp_degree_add(s->degree, dc), ctx->opt.verify_log2_bound);
  if (need < 1 || need > s->trials) {
    *mode = FULL_SCRATCH;
    return MIRS_OK;
  }
  uint64_t seed = (uint64_t)ctx->opt.seed;
  if (!s->full_ref) {
    MIRS_CHECK(ctx, mirs__fp_store_new(ctx, s->full_backend, s->trials, seed, &s->full_ref));
    MIRS_CHECK(ctx, mirs__fp_compute_graph(s->full_ref, p));
  }
  if (!s->full_cand[slot])
    MIRS_CHECK(ctx, mirs__fp_store_new(ctx, s->full_backend, s->trials, seed, &s->full_cand[slot]));
  /* Every result has the program's inputs first, in its order: their
   * fingerprints stay. */
  int32_t nin = 0;
  while (nin < r->nt && r->t[nin].producer < 0)
    nin++;
  mirs__fp_truncate(s->full_cand[slot], nin);
  st = mirs__fp_extend(s->full_cand[slot], r);
  if (st == MIRS_UNSUPPORTED || st == MIRS_LIMIT) {
    mirs_clear_error(ctx);
    mirs__fp_truncate(s->full_cand[slot], nin);
    *mode = FULL_REJECT;
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
  *mode = FULL_STORE;
  return MIRS_OK;
}

/* Finish the verification of r launched in slot with mode; *eq the verdict. */
static mirs_status full_finish(mirs_search *s, const mirs_graph *r, int slot, full_mode mode,
                               bool *eq) {
  mirs_context *ctx = s->ctx;
  *eq = false;
  if (mode == FULL_REJECT)
    return MIRS_OK;
  mirs__fp_verdict v;
  if (mode == FULL_SCRATCH) {
    int used;
    mirs_status st =
        mirs__verify_fingerprints_on(ctx, s->full_backend, s->program, r, &used, &v, NULL);
    if (st == MIRS_UNSUPPORTED) {
      mirs_clear_error(ctx);
      return MIRS_OK;
    }
    MIRS_CHECK(ctx, st);
    *eq = v.equal;
    return MIRS_OK;
  }
  if (NEVER(mode != FULL_STORE || !s->full_cand[slot]))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "full-shape verification slot %d was not launched", slot);
  int32_t nin = 0;
  while (nin < r->nt && r->t[nin].producer < 0)
    nin++;
  mirs_status st = mirs__fp_compare_outputs(s->full_ref, s->program, s->full_cand[slot], r, &v);
  mirs__fp_truncate(s->full_cand[slot], nin);
  if (st == MIRS_UNSUPPORTED || st == MIRS_LIMIT) {
    mirs_clear_error(ctx);
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
  *eq = v.equal;
  return MIRS_OK;
}

/* Verify graph r at full shape now (launch and finish in slot 0). */
static mirs_status verify_full_one(mirs_search *s, const mirs_graph *r, bool *eq) {
  full_mode mode;
  *eq = false;
  MIRS_CHECK(s->ctx, full_launch(s, r, 0, &mode));
  return full_finish(s, r, 0, mode, eq);
}

/* Free the full-shape stores (the program's and the candidates'). */
static void full_stores_free(mirs_search *s) {
  mirs__fp_store_free(s->full_ref);
  s->full_ref = NULL;
  for (int q = 0; q < MIRS__FULL_BATCH; q++) {
    mirs__fp_store_free(s->full_cand[q]);
    s->full_cand[q] = NULL;
  }
}

/* Whether result i still needs its full-shape verification. */
static bool needs_full(const mirs_search *s, size_t i) {
  return s->sink.res[i].reduced && !s->sink.res[i].verified;
}

/* A batch of full-shape verifications in flight: results at[k] launched
 * in slot k with mode[k]. */
typedef struct full_batch {
  size_t at[MIRS__FULL_BATCH];
  full_mode mode[MIRS__FULL_BATCH];
  int n;
  size_t end;   /* launched from results [0, end) only ... */
  double bound; /* ... of predicted time at most this */
} full_batch;

/* Launch the results from i on that need verifying, up to the batch size
 * (the GPU's; 1 on the CPU), the passes still wanted and the batch's end
 * and bound (results ranked by predicted time).  A launch that
 * fails (a hard error, a stop) ends the batch and is marked FAILED: it
 * runs again alone when its turn comes, where the error is reported as
 * the sequential order would report it. */
static void full_launch_batch(mirs_search *s, size_t i, int64_t wanted, full_batch *b) {
  int cap = s->full_backend && s->full_backend != &mirs__fp_cpu_backend ? MIRS__FULL_BATCH : 1;
  if (wanted >= 0 && wanted < cap)
    cap = wanted > 0 ? (int)wanted : 1;
  b->n = 0;
  for (size_t j = i; j < b->end && b->n < cap && s->sink.res[j].cost <= b->bound; j++) {
    if (!needs_full(s, j))
      continue;
    int k = b->n++;
    b->at[k] = j;
    b->mode[k] = FULL_FAILED;
    if (mirs__sink_graph(s, &s->sink.res[j]) != MIRS_OK ||
        full_launch(s, s->sink.res[j].g, k, &b->mode[k]) != MIRS_OK) {
      b->mode[k] = FULL_FAILED;
      break;
    }
  }
}

/* The verdict of result i at full shape: from the batch when it was
 * launched there, else launched and finished now (after a refill of the
 * batch starting at i). */
static mirs_status full_verdict(mirs_search *s, size_t i, int64_t wanted, full_batch *b,
                                bool *keep) {
  int k = -1;
  for (int q = 0; q < b->n && k < 0; q++)
    if (b->at[q] == i)
      k = q;
  if (k < 0) {
    MIRS_CHECK(s->ctx, mirs__sink_full_backend(s));
    full_launch_batch(s, i, wanted, b);
    k = b->n > 0 && b->at[0] == i ? 0 : -1;
  }
  if (k < 0 || b->mode[k] == FULL_FAILED) {
    /* Alone, so that a failure is reported where it happens, with the
     * other slots' memory given back (a launch may have failed for want
     * of it; later batches make their stores again). */
    b->n = 0;
    for (int q = 1; q < MIRS__FULL_BATCH; q++) {
      mirs__fp_store_free(s->full_cand[q]);
      s->full_cand[q] = NULL;
    }
    MIRS_CHECK(s->ctx, mirs__sink_graph(s, &s->sink.res[i]));
    mirs_status st = verify_full_one(s, s->sink.res[i].g, keep);
    if (st == MIRS_NOMEM && s->full_backend != &mirs__fp_cpu_backend &&
        strcmp(s->ctx->opt.verify, "auto") == 0) {
      /* auto: a device too small for one result at full shape hands
       * the rest to the CPU (--verify=gpu reports the failure). */
      mirs__core_log(s->ctx, MIRS_LOG_WARNING,
                     "search: the GPU ran out of memory verifying at full shape (%s); the "
                     "remaining results are verified on the CPU",
                     mirs_last_error(s->ctx));
      mirs_clear_error(s->ctx);
      full_stores_free(s);
      s->full_backend = &mirs__fp_cpu_backend;
      snprintf(s->full_backend_name, sizeof s->full_backend_name,
               "cpu (the GPU ran out of memory)");
      st = verify_full_one(s, s->sink.res[i].g, keep);
    }
    return st;
  }
  return full_finish(s, s->sink.res[i].g, k, b->mode[k], keep);
}

/* The final full-shape verification's running state (full_verify):
 * results [0, n) of the ranked list decided in order, next the first
 * not yet decided; passed those kept of the reduced ones. */
typedef struct full_run {
  int64_t max, passed;
  size_t next, n;
  size_t fnext;  /* (finish_timed: the next result for float_upto ...) */
  int64_t kept;  /* (... and the results kept before it) */
  bool stopped;
  mirs_status st;
  full_batch batch;
  mirs__stats fs;
  double seconds;
} full_run;

/* Begin the final full-shape verification of the ranked results. */
static void full_begin(mirs_search *s, full_run *fr) {
  *fr = (full_run){.max = s->ctx->opt.verify_full_max, .n = s->sink.nres, .st = MIRS_OK};
  fr->batch = (full_batch){.n = 0, .end = s->sink.nres, .bound = INFINITY};
}

/* Decide result fr->next: kept (verified at full shape now, or before,
 * or found at full shape) or dropped (failed, past verify_full_max, or
 * left unverified at the time limit, a stop or an error). */
static void full_step(mirs_search *s, full_run *fr) {
  mirs_context *ctx = s->ctx;
  size_t i = fr->next++;
  mirs__search_result *r = &s->sink.res[i];
  bool keep = true;
  if (r->source_only) { /* (a cached split-K source, seen by now) */
    r->dropped = true;
    return;
  }
  if (r->reduced) {
    if (fr->max >= 0 && fr->passed >= fr->max) {
      keep = false;
    } else if (!r->verified) {
      if (fr->st != MIRS_OK || fr->stopped || time_up(s)) {
        keep = false;
      } else {
        MIRS_INC(&fr->fs, full_verified);
        s->final_verifs++;
        fr->st = full_verdict(s, i, fr->max >= 0 ? fr->max - fr->passed : -1, &fr->batch, &keep);
        if (fr->st == MIRS_STOPPED) {
          /* Stopped (signal, limit): this and every later unverified
           * result go unreported; the search says it is incomplete. */
          mirs__core_log(ctx, MIRS_LOG_WARNING,
                         "search: full-shape verification stopped (%s); results not yet "
                         "verified are not reported",
                         mirs_last_error(ctx));
          mirs_clear_error(ctx);
          s->complete = false;
          fr->stopped = true;
          fr->st = MIRS_OK;
          keep = false;
        } else if (fr->st != MIRS_OK) {
          keep = false;
        } else if (!keep) {
          MIRS_INC(&fr->fs, full_rejects);
          mirs__core_log(ctx, MIRS_LOG_WARNING,
                         "search: result %016llx matched on the reduced instance but not at "
                         "full shape; dropped",
                         (unsigned long long)r->hash);
          r->dropped = true;
          return;
        }
      }
    }
    if (keep)
      fr->passed++;
    else
      MIRS_INC(&fr->fs, full_unverified);
  }
  r->dropped = !keep;
}

/* Decide the results of predicted time at most `bound`, in order; the
 * batch ends there (none left in flight). */
static void full_upto(mirs_search *s, full_run *fr, double bound) {
  double t0 = mirs__core_now();
  fr->batch.bound = bound;
  while (fr->next < fr->n && s->sink.res[fr->next].cost <= bound)
    full_step(s, fr);
  fr->batch.n = 0;
  fr->seconds += mirs__core_now() - t0;
}

/* End the final full-shape verification (every result decided): drop
 * those it dropped, keep the others (the split-K variants added since it
 * began among them), in order; say what it did. */
static mirs_status full_end(mirs_search *s, full_run *fr) {
  mirs_context *ctx = s->ctx;
  size_t k = 0;
  for (size_t i = 0; i < s->sink.nres; i++) {
    if (s->sink.res[i].dropped) {
      mirs__sink_result_free(s, &s->sink.res[i]);
      continue;
    }
    /* (verified: a checkpoint keeps the verdict, so a resume does not
     * check it again) */
    if (s->sink.res[i].reduced)
      s->sink.res[i].verified = true;
    s->sink.res[i].reduced = false;
    s->sink.res[k++] = s->sink.res[i];
  }
  s->sink.nres = k;
  s->full_seconds = fr->seconds;
  if (fr->fs.v[MIRS__STAT_full_verified] > 0)
    mirs__core_log(ctx, MIRS_LOG_INFO, "search: %llu results verified at full shape in %.3f s (%s)",
                   (unsigned long long)fr->fs.v[MIRS__STAT_full_verified], s->full_seconds,
                   s->full_backend_name);
  if (fr->fs.v[MIRS__STAT_full_unverified] > 0)
    mirs__core_log(ctx, MIRS_LOG_INFO,
                   "search: %llu graphs found on the reduced instance were not verified at full "
                   "shape (verify_full_max %lld or the time limit) and are not reported",
                   (unsigned long long)fr->fs.v[MIRS__STAT_full_unverified], (long long)fr->max);
  /* The full-shape stores are large: free them now. */
  full_stores_free(s);
  mirs__sink_add_stats(s, &fr->fs);
  return fr->st;
}

/* Verify the results found on a reduced instance at full shape, best
 * first, until verify_full_max of them pass (those verified when found
 * count too), none once the time limit has passed.  Drop those that fail
 * and those left unverified.  The set kept is the first verify_full_max
 * passing ones in (cost, hash) order, whatever was verified early.  On
 * the GPU a batch of results is launched at once (each in its own store
 * and stream) and their verdicts are taken in order, so the set kept is
 * the one the sequential order gives. */
static mirs_status full_verify(mirs_search *s) {
  full_run fr;
  full_begin(s, &fr);
  full_upto(s, &fr, INFINITY);
  return full_end(s, &fr);
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
  mirs_status st = mirs_graph_eval(r, (uint64_t)ctx->opt.seed, &e);
  if (st == MIRS_LIMIT) {
    /* A result may evaluate many times the program's work (every block
     * and forloop iteration of its kernels counts, and a grid may
     * recompute shared operands): past eval_max_work it keeps its
     * fingerprint verdict, as a program too large for the check does. */
    if (s->cand_eval_limit++ == 0)
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: a result too large for the float64 check keeps its fingerprint "
                     "verdict (%s)",
                     mirs_last_error(ctx));
    mirs_clear_error(ctx);
    *skip = true;
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, st);
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
  for (size_t i = 0; i < s->sink.nres; i++) {
    bool ok = true, skip = false;
    if ((int64_t)i < top && !s->sink.res[i].float_checked && st == MIRS_OK) {
      if (time_up(s)) {
        mirs__core_log(ctx, MIRS_LOG_INFO,
                       "search: float64 check stopped at the time limit after %zu results", i);
        top = (int64_t)i;
      } else {
        st = mirs__sink_graph(s, &s->sink.res[i]);
        if (st == MIRS_OK)
          st = float_one(s, s->sink.res[i].g, &ok, &skip);
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
          s->sink.res[i].float_checked = true; /* (kept in a checkpoint) */
        }
      }
    }
    if (ok) {
      s->sink.res[k++] = s->sink.res[i];
    } else {
      MIRS_INC(&fs, float_rejects);
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: result %016llx matched by fingerprints but not in float64; dropped",
                     (unsigned long long)s->sink.res[i].hash);
      mirs__sink_result_free(s, &s->sink.res[i]);
    }
  }
  s->sink.nres = k;
  mirs_eval_result_destroy(s->ref_eval);
  s->ref_eval = NULL;
  mirs__sink_add_stats(s, &fs);
  /* Said where it is read: report.json's best has "float64_checked". */
  if (st == MIRS_OK && s->sink.nres > 0 && !s->sink.res[0].float_checked && ctx->opt.float_check_top > 0 &&
      !s->ref_eval_limit)
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: the best result was not checked in float64 (%s; report.json says "
                   "\"float64_checked\": false): its fingerprint verdict stands; mirsearch "
                   "verify PROGRAM DIR/best.ugraph checks it",
                   s->cand_eval_limit > 0 ? "stopped before its check, or too large for the "
                                            "interpreter (eval_max_work)"
                                          : "stopped before its check");
  return st;
}

/* Verify result *r (matched on a reduced instance, cost cr) at full shape
 * now when it is the cheapest so far and this early checking has used at
 * most a tenth of the search's time (the others wait for the end, which
 * keeps the cost per state that of the reduced instance), so a search
 * stopped by a limit still reports a verified best.  Not in a search over
 * several MPI ranks: there one such check (up to 18 s at mha's published
 * shape) can outlast a rank's whole share of the search and would hold
 * every other rank up at the end (docs/SCALING.md); all results are
 * verified at the end instead.  *r freed and NULL
 * when it fails.  What is checked here changes what is checked at the
 * end, never the result list: the verdicts are functions of the graph.
 * Under the lock. */
static mirs_status early_verify(mirs__search_worker *w, mirs_graph **r,
                                const mirs__cost_result *cr, bool *verified,
                                bool *float_checked) {
  mirs_search *s = w->s;
  mirs_context *ctx = s->ctx;
  double now = mirs__core_now();
  if (w->restoring || (s->have_best_full && cr->seconds >= s->best_full) ||
      s->early_seconds > 0.1 * (now - s->t0) || !ctx->opt.verify_early ||
      s->ranks > 1)
    return MIRS_OK;
  MIRS_INC(&w->stats, full_verified);
  bool ok = false, skip = true;
  mirs_status st = verify_full_one(s, *r, &ok);
  if (st == MIRS_OK && ok && ctx->opt.float_check_top > 0) {
    MIRS_INC(&w->stats, float_checks);
    st = float_one(s, *r, &ok, &skip);
    if (st == MIRS_OK && !ok)
      MIRS_INC(&w->stats, float_rejects);
  } else if (st == MIRS_OK && !ok) {
    MIRS_INC(&w->stats, full_rejects);
  }
  s->early_seconds += mirs__core_now() - now;
  if (st == MIRS_STOPPED) {
    /* A stop (interrupt, limit) during the check: the end decides. */
    mirs_clear_error(ctx);
    return MIRS_OK;
  }
  if (st != MIRS_OK)
    return parent_failed(w, st);
  if (!ok) {
    mirs__graph_free(*r);
    *r = NULL;
    return MIRS_OK;
  }
  *verified = true;
  *float_checked = !skip;
  s->have_best_full = true;
  s->best_full = cr->seconds;
  return MIRS_OK;
}

/* Offer candidate g (outputs named, canonical hash h) found by w at w's
 * current path. */
mirs_status mirs__sink_offer(mirs__search_worker *w, const mirs_graph *g, uint64_t h) {
  mirs_search *s = w->s;
  mirs_context *ctx = w->ctx;
  bool reduced = w->fphash != 0; /* matched on a reduced instance */
  if (w->refill) {
    /* Re-finding a result another rank sent without its text (refind):
     * its graph, nothing else (the entry and the counters have it). */
    if (h != w->refill->hash || w->refill->g)
      return MIRS_OK;
    mirs_graph *r = NULL;
    mirs__cost_result cr;
    MIRS_CHECK(ctx, make_result(w, g, false, reduced, &r, &cr));
    w->refill->g = r;
    return MIRS_OK;
  }
  /* The candidate's path: the move entering it is frames[depth-1]'s
   * (offered from within enter, before its frame is pushed). */
  int32_t len = w->depth;
  if ((size_t)len > w->cappath)
    MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->pathbuf, &w->cappath, (size_t)len,
                                    sizeof *w->pathbuf));
  for (int32_t i = 0; i < len; i++)
    w->pathbuf[i] = w->frames[i].next - 1;
  const uint32_t *path = w->pathbuf;
  mirs_status st = MIRS_OK;
  mirs__sink_lock(s);
  int64_t e = find_entry(s, h);
  if (e >= 0) {
    MIRS_INC(&w->stats, duplicates);
    mirs__sink_entry *en = &s->sink.ent[e];
    if (path_cmp(path, len, &s->sink.paths[en->poff], en->plen) >= 0) {
      mirs__sink_unlock(s);
      return MIRS_OK;
    }
    /* An earlier instance in depth-first order, found later: it replaces
     * the stored one (same hash, so the same verdict and cost; the text
     * may differ, and that is what must not depend on timing). */
    mirs_graph *r = NULL;
    mirs__cost_result cr;
    st = make_result(w, g, false, reduced, &r, &cr);
    if (st == MIRS_OK && en->res >= 0 && r) {
      mirs__search_result *res = &s->sink.res[en->res];
      mirs__sink_result_free(s, res);
      res->g = r;
      res->cost = cr.feasible ? cr.seconds : INFINITY;
      res->kernels = cr.kernels;
    } else {
      mirs__graph_free(r);
    }
    if (st == MIRS_OK) {
      st = set_path(s, en, path, len);
      if (st != MIRS_OK)
        parent_failed(w, st);
    }
    mirs__sink_unlock(s);
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  mirs_graph *r = NULL;
  mirs__cost_result cr;
  uint64_t before[MIRS__SINK_NCOUNTED];
  for (int i = 0; i < MIRS__SINK_NCOUNTED; i++)
    before[i] = w->stats.v[mirs__sink_counted[i]];
  st = make_result(w, g, true, reduced, &r, &cr);
  bool verified = false, float_checked = false;
  if (st == MIRS_OK && r && reduced && cr.feasible)
    st = early_verify(w, &r, &cr, &verified, &float_checked);
  if (st == MIRS_OK && r && s->sink.nres >= s->sink.capres) {
    /* s->sink.res belongs to the search (freed through s->ctx): grown there. */
    st = mirs__core_grow(s->ctx, (void **)&s->sink.res, &s->sink.capres, s->sink.nres + 1, sizeof *s->sink.res);
    if (st != MIRS_OK)
      parent_failed(w, st);
  }
  if (st == MIRS_OK) {
    st = add_entry(s, h, path, len, r ? (int32_t)s->sink.nres : -1);
    if (st != MIRS_OK)
      parent_failed(w, st);
    for (int i = 0; st == MIRS_OK && i < MIRS__SINK_NCOUNTED; i++)
      if (w->stats.v[mirs__sink_counted[i]] != before[i])
        s->sink.ent[s->sink.nent - 1].counted |= 1u << i;
  }
  if (st != MIRS_OK || !r) {
    mirs__sink_unlock(s);
    mirs__graph_free(r);
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  mirs__search_result *res = &s->sink.res[s->sink.nres++];
  memset(res, 0, sizeof *res);
  res->g = r;
  res->hash = h;
  res->cost = cr.feasible ? cr.seconds : INFINITY;
  res->kernels = cr.kernels;
  res->reduced = reduced;
  res->verified = verified;
  res->float_checked = float_checked;
  res->found_at = s->wall_before + mirs__core_now() - s->t0;
  MIRS_INC(&w->stats, graphs_found);
  mirs__core_log(ctx, MIRS_LOG_DEBUG, "search: found %016llx cost %g (%d kernels)",
                 (unsigned long long)h, res->cost, (int)res->kernels);
  if (s->on_result)
    s->on_result(s->user, r, res->cost);
  mirs__sink_unlock(s);
  return MIRS_OK;
}

/* Drop the result of hash h. */
void mirs__sink_reject(mirs_search *s, uint64_t h) {
  int64_t e = find_entry(s, h);
  if (e < 0 || s->sink.ent[e].res < 0)
    return;
  size_t i = (size_t)s->sink.ent[e].res;
  mirs__sink_result_free(s, &s->sink.res[i]);
  s->sink.ent[e].res = -1;
  if (i + 1 < s->sink.nres) {
    s->sink.res[i] = s->sink.res[s->sink.nres - 1];
    int64_t m = find_entry(s, s->sink.res[i].hash);
    if (m >= 0)
      s->sink.ent[m].res = (int32_t)i;
  }
  s->sink.nres--;
}

/* Take the lock. */
void mirs__sink_lock(mirs_search *s) {
  pthread_mutex_lock(&s->lock);
}

/* Release the lock. */
void mirs__sink_unlock(mirs_search *s) {
  pthread_mutex_unlock(&s->lock);
}

/* Compare results by (cost, hash). */
static int result_cmp(const void *a, const void *b) {
  const mirs__search_result *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return x->hash < y->hash ? -1 : x->hash > y->hash ? 1 : 0;
}

/* Add counters st to the search's and to the context's. */
void mirs__sink_add_stats(mirs_search *s, const mirs__stats *st) {
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    s->stats.v[i] += st->v[i];
  mirs__core_stats_add(s->ctx, st);
}

/* Whether hash h is one of the results. */
static bool have_result(const mirs_search *s, uint64_t h) {
  for (size_t i = 0; i < s->sink.nres; i++)
    if (s->sink.res[i].hash == h)
      return true;
  return false;
}

/* Verify, check in float64, price and add split-K variant v of result
 * `from` (takes v); dropped when it fails, costs more than nothing can
 * run (infeasible), or is a result already. */
static mirs_status splitk_add(mirs_search *s, mirs_graph *v, const mirs__search_result *from,
                              int64_t *added) {
  mirs_context *ctx = s->ctx;
  uint64_t h = mirs_graph_hash(v);
  mirs__cost_result cr = {.feasible = false};
  bool eq = false, ok = false, skip = true;
  mirs_status st = MIRS_OK;
  if (!have_result(s, h) && find_entry(s, h) < 0)
    st = mirs__cost_graph(ctx, s->device, v, &cr);
  /* Only a variant predicted faster than the result it rewrites is worth
   * its full-shape verification. */
  bool tried = st == MIRS_OK && cr.feasible && (cr.seconds < from->cost || ctx->opt.split_k == 2);
  if (tried) {
    s->final_verifs++;
    st = verify_full_one(s, v, &eq);
  }
  if (st == MIRS_OK && tried && !eq) /* (the rewrite is exact: this is a bug) */
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: split-K variant %016llx of result %016llx not equal at full shape; "
                   "dropped",
                   (unsigned long long)h, (unsigned long long)from->hash);
  if (st == MIRS_OK && eq)
    st = float_one(s, v, &ok, &skip);
  if (st == MIRS_OK && eq && !ok)
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: split-K variant %016llx of result %016llx matched by fingerprints "
                   "but not in float64; dropped",
                   (unsigned long long)h, (unsigned long long)from->hash);
  if (st == MIRS_OK && eq && ok)
    st = unique_names(v);
  if (st == MIRS_OK && eq && ok)
    st = mirs__core_grow(ctx, (void **)&s->sink.res, &s->sink.capres, s->sink.nres + 1,
                         sizeof *s->sink.res);
  if (st != MIRS_OK || !eq || !ok) {
    mirs__graph_free(v);
    return st;
  }
  v->ugraph = true;
  s->sink.res[s->sink.nres++] = (mirs__search_result){
      .g = v, .hash = h, .cost = cr.seconds, .kernels = cr.kernels, .verified = true,
      .float_checked = !skip, .found_at = from->found_at, .split_k = true};
  (*added)++;
  return MIRS_OK;
}

/* Whether error st of one split-K variant would recur for the next:
 * the machine's, not the variant's (splitk_results). */
static bool splitk_fatal(mirs_status st) {
  return st == MIRS_NOMEM || st == MIRS_NO_DEVICE || st == MIRS_CUDA || st == MIRS_IO;
}

/* One split-K form of a source: kernel k split s ways along grid dim
 * gs, its combine partitioning dim cdim cways ways (-1: K's grid less
 * gs).  mirs__splitk_variant_combine. */
typedef struct sk_form {
  int32_t k;
  int gs;
  int32_t s;
  int cdim;
  int32_t cways;
} sk_form;

/* Kernels of more blocks than this many waves of the device's SMs are
 * not split by the pre-selection (split-K pays where a grid is small). */
#define SPLITK_PRE_WAVES 2
/* The finer combine's ways: powers of two up to this, kernel 2 then of
 * at most SPLITK_PRE_WAVES waves, offered where K's grid less gs leaves
 * fewer blocks than SMs. */
#define SPLITK_MAX_WAYS 64

/* The SMs of the search's device (its profile; 132, an H100's, without
 * one): what the pre-selection's waves are counted in. */
static int64_t device_sms(const mirs_search *s) {
  return s->device && s->device->sms > 0 ? s->device->sms : 132;
}

/* Blocks of grid g. */
static int64_t grid_blocks(const int32_t g[MIRS__GRID]) {
  return (int64_t)g[0] * g[1] * g[2];
}

/* The split-K forms of g into f (at most cap; their count): per custom
 * kernel, grid dim and factor the plain form when `plain`, and when
 * `combine` the finer combines (each dim, each ways; `widest`: only the
 * most ways that build, tried from the most down).  Kernels of more
 * blocks than `max_blocks` (> 0) are skipped.  In a fixed order: the
 * variants made from them are the same in every run. */
static size_t splitk_forms(const mirs_search *s, const mirs_graph *g, bool plain, bool combine,
                           bool widest, int64_t max_blocks, sk_form *f, size_t cap) {
  int64_t sms = device_sms(s);
  size_t n = 0;
  for (int32_t k = 0; k < g->nops; k++) {
    const mirs__bgraph *bg = g->ops[k].op == MIRS_OP_CUSTOM ? g->ops[k].bg : NULL;
    if (!bg || (max_blocks > 0 && grid_blocks(bg->grid) > max_blocks))
      continue;
    for (int gs = 0; gs < MIRS__GRID; gs++)
      for (int i = 0; i < MIRS__SPLITK_NFACTORS; i++) {
        int32_t sf = mirs__splitk_factors[i];
        if (bg->forloop % sf)
          continue;
        if (plain && n < cap)
          f[n++] = (sk_form){k, gs, sf, -1, 1};
        int64_t b2 = grid_blocks(bg->grid) / bg->grid[gs];
        if (!combine || b2 >= sms)
          continue;
        for (int d = 0; d < MIRS_MAX_DIMS; d++)
          for (int32_t c = SPLITK_MAX_WAYS; c >= 2; c /= 2)
            if (b2 * c <= SPLITK_PRE_WAVES * sms && n < cap)
              f[n++] = (sk_form){k, gs, sf, d, widest ? -c : c};
      }
  }
  return n;
}

/* The variant of g in form f (*v NULL when there is none). */
static mirs_status form_variant(mirs_context *ctx, const mirs_graph *g, const sk_form *f,
                                mirs_graph **v) {
  mirs_status st = mirs__splitk_variant_combine(ctx, g, f->k, f->gs, f->s, f->cdim,
                                                f->cways < 0 ? -f->cways : f->cways, v);
  if (st == MIRS_SHAPE) { /* (a variant the builder refuses: none) */
    mirs_clear_error(ctx);
    st = MIRS_OK;
  }
  return st;
}

/* The forms tried per source at most (kernels x dims x factors x ...). */
#define SPLITK_MAX_FORMS 4096

/* The predicted time of g's best split-K variant into *best (+inf when
 * none), *priced counting the variants priced: of those faster than g's
 * cost `own` (any with --split-k=2, as splitk_add tries them).  Built
 * and priced only, not verified; a variant that fails is none (its error
 * cleared). */
static mirs_status best_split_cost(mirs_search *s, const mirs_graph *g, double own, sk_form *f,
                                   int64_t *priced, double *best) {
  mirs_context *ctx = s->ctx;
  *best = INFINITY;
  size_t n =
      splitk_forms(s, g, true, true, true, SPLITK_PRE_WAVES * device_sms(s), f, SPLITK_MAX_FORMS);
  int last_done = -1; /* (widest: the (k, gs, s, d) whose widest combine built) */
  for (size_t i = 0; i < n; i++) {
    if (f[i].cways < 0 && last_done >= 0 && f[last_done].k == f[i].k &&
        f[last_done].gs == f[i].gs && f[last_done].s == f[i].s && f[last_done].cdim == f[i].cdim)
      continue;
    mirs_graph *v = NULL;
    mirs_status st = form_variant(ctx, g, &f[i], &v);
    if (st == MIRS_NOMEM)
      return st;
    if (st != MIRS_OK) {
      mirs_clear_error(ctx);
      continue;
    }
    if (!v)
      continue;
    if (f[i].cways < 0)
      last_done = (int)i;
    mirs__cost_result cr = {.feasible = false};
    st = mirs__cost_graph(ctx, s->device, v, &cr);
    mirs__graph_free(v);
    (*priced)++;
    if (st == MIRS_NOMEM)
      return st;
    if (st != MIRS_OK)
      mirs_clear_error(ctx);
    else if (cr.feasible && cr.seconds < *best &&
             (cr.seconds < own || ctx->opt.split_k == 2))
      *best = cr.seconds;
  }
  return MIRS_OK;
}

/* A pre-selected source: the predicted time of its best variant, its
 * index in the ranked list. */
typedef struct sk_pick {
  double cost;
  size_t at;
} sk_pick;

static int pick_cmp(const void *a, const void *b) {
  const sk_pick *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Free the pre-selected split-K sources. */
static void splitk_src_free(mirs_search *s) {
  for (size_t i = 0; i < s->splitk_nsrc; i++)
    mirs__sink_result_free(s, &s->splitk_src[i]);
  mirs__core_free(s->ctx, s->splitk_src);
  s->splitk_src = NULL;
  s->splitk_nsrc = 0;
}

/* The split-K pre-selection (option split_k): before the full-shape
 * verification drops all but the best verify_full_max results, price
 * the split-K variants of every result (its kernels of at most
 * SPLITK_PRE_WAVES waves of blocks; per combine dim the most ways only)
 * and keep copies of the split_k_top results whose best variant is
 * predicted fastest, ties by rank: the source of the best FlashDecoding
 * form is often a poor one-kernel result (few blocks, each reading its
 * operands once), never among the best by its own time.  From the ranked
 * list alone (the same for any threads, ranks, resumes, and for a cache
 * hit, whose entry keeps the sources).  Past the time limit it stops
 * with the sources it has ranked; a result that fails to read or split
 * is skipped. */
static mirs_status splitk_preselect(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  splitk_src_free(s);
  s->splitk_priced = 0;
  if (!ctx->opt.split_k || ctx->opt.split_k_top <= 0 || s->sink.nres == 0)
    return MIRS_OK;
  double t0 = mirs__core_now();
  sk_pick *pk = mirs__core_alloc(ctx, sizeof *pk * s->sink.nres);
  sk_form *f = mirs__core_alloc(ctx, sizeof *f * SPLITK_MAX_FORMS);
  mirs_status st = pk && f ? MIRS_OK : MIRS_NOMEM;
  size_t np = 0, i = 0;
  for (; st == MIRS_OK && i < s->sink.nres; i++) {
    if (time_up(s)) {
      mirs__core_log(ctx, MIRS_LOG_INFO,
                     "search: split-K pre-selection stopped at the time limit after %zu of %zu "
                     "results",
                     i, s->sink.nres);
      break;
    }
    /* A result another rank sent is read (its text parsed, or re-found
     * at its path) into a graph of its own here, dropped after: rank 0
     * keeps the graphs of the reported results only. */
    mirs__search_result *r = &s->sink.res[i];
    mirs_graph *own = NULL;
    if (!r->g && r->text)
      st = mirs_graph_parse_string(ctx, r->text, r->tlen, "a result from another rank", &own);
    else if (!r->g && (st = mirs__sink_graph(s, r)) == MIRS_OK) {
      own = r->g;
      r->g = NULL;
    }
    if (own)
      own->ugraph = true;
    const mirs_graph *g = own ? own : r->g;
    if (st == MIRS_NOMEM)
      break;
    if (st != MIRS_OK || !g) {
      mirs_clear_error(ctx);
      st = MIRS_OK;
      continue;
    }
    double best = INFINITY;
    if (!mirs__splitk_has_split(g))
      st = best_split_cost(s, g, r->cost, f, &s->splitk_priced, &best);
    mirs__graph_free(own);
    if (st == MIRS_OK && isfinite(best))
      pk[np++] = (sk_pick){best, i};
  }
  if (st == MIRS_OK)
    qsort(pk, np, sizeof *pk, pick_cmp);
  size_t want = np < (size_t)ctx->opt.split_k_top ? np : (size_t)ctx->opt.split_k_top;
  if (st == MIRS_OK && want > 0) {
    s->splitk_src = mirs__core_calloc(ctx, want, sizeof *s->splitk_src);
    if (!s->splitk_src)
      st = MIRS_NOMEM;
  }
  for (size_t j = 0; st == MIRS_OK && j < want; j++) {
    mirs__search_result *r = &s->sink.res[pk[j].at], c = *r;
    c.text = NULL;
    c.tlen = 0;
    c.g = NULL;
    st = mirs__sink_graph(s, r);
    if (st == MIRS_OK)
      st = mirs__graph_clone_in(ctx, r->g, &c.g);
    if (st == MIRS_OK)
      s->splitk_src[s->splitk_nsrc++] = c;
  }
  mirs__core_free(ctx, pk);
  mirs__core_free(ctx, f);
  s->splitk_pre_seconds = mirs__core_now() - t0;
  if (st != MIRS_OK) {
    /* Optional: the search's results stand without the sources. */
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: split-K pre-selection failed: %s; skipped",
                   st == MIRS_NOMEM && !mirs_last_error(ctx)[0] ? "out of memory"
                                                                 : mirs_last_error(ctx));
    mirs_clear_error(ctx);
    splitk_src_free(s);
    return MIRS_OK;
  }
  mirs__core_log(ctx, MIRS_LOG_INFO,
                 "search: split-K pre-selection: %zu sources of %zu results (%lld variants "
                 "priced) in %.3f s",
                 s->splitk_nsrc, i, (long long)s->splitk_priced, s->splitk_pre_seconds);
  return MIRS_OK;
}

/* The rewrite's running state (splitk_results). */
typedef struct sk_run {
  int64_t tried, added, failed;
  bool cut, stopped;
} sk_run;

/* Say that variant f of source `from` failed with error st (the
 * context's message), and end the rewrite (run->cut) when it is the
 * machine's rather than the variant's: out of memory, the GPU
 * verifier's device or CUDA failing, I/O; the next variant would fail
 * alike.  A stop ends it too.  The error is cleared. */
static void splitk_failed(mirs_search *s, const mirs__search_result *from, const sk_form *f,
                          mirs_status st, sk_run *run) {
  mirs_context *ctx = s->ctx;
  if (st == MIRS_STOPPED) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: split-K rewrite stopped (%s)",
                   mirs_last_error(ctx));
    s->complete = false;
    run->stopped = true;
  } else {
    run->failed++;
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: split-K variant of result %016llx (kernel %d, grid dim %d, %d ways, "
                   "combine dim %d, %d ways) failed: %s; %s",
                   (unsigned long long)from->hash, (int)f->k, f->gs, (int)f->s, f->cdim,
                   (int)f->cways, mirs_last_error(ctx)[0] ? mirs_last_error(ctx) : "out of memory",
                   splitk_fatal(st) ? "the rewrite ends here, its variants kept" : "skipped");
  }
  mirs_clear_error(ctx);
  run->cut = run->cut || st == MIRS_STOPPED || splitk_fatal(st);
}

/* Make variant f of source `from` and add it (splitk_add).  A variant is
 * optional: one that cannot be built, verified or priced is skipped
 * (said: splitk_failed), the search's results and the variants added so
 * far kept. */
static void splitk_try(mirs_search *s, const mirs__search_result *from, const sk_form *f,
                       sk_run *run) {
  mirs_graph *v = NULL;
  mirs_status st = MIRS_OK;
  if (++s->splitk_tries == s->splitk_fail_at)
    st = MIRS_FAIL(s->ctx, MIRS_INTERNAL, "injected failure (MIRS_TEST_SPLITK_FAIL=%lld)",
                   (long long)s->splitk_fail_at);
  if (st == MIRS_OK)
    st = form_variant(s->ctx, from->g, f, &v);
  if (st == MIRS_OK && v)
    st = splitk_add(s, v, from, &run->added);
  if (st != MIRS_OK)
    splitk_failed(s, from, f, st, run);
}

/* Whether the rewrite must end at the time limit (said once). */
static bool splitk_time_up(mirs_search *s, sk_run *run) {
  if (!run->cut && time_up(s)) {
    mirs__core_log(s->ctx, MIRS_LOG_INFO, "search: split-K rewrite stopped at the time limit");
    run->cut = true;
  }
  return run->cut;
}

/* A priced variant: its predicted time (-inf: its building or pricing
 * failed, tried first so that the error is said) and hash, its source
 * and form, whether it is an extra one (a pre-selected source's plain
 * form, or a finer combine) rather than a plain form of a top result. */
typedef struct sk_cand {
  double cost;
  uint64_t hash;
  size_t src;
  sk_form f;
  bool extra;
} sk_cand;

static int cand_cmp(const void *a, const void *b) {
  const sk_cand *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  if (x->hash != y->hash)
    return x->hash < y->hash ? -1 : 1;
  if (x->src != y->src)
    return x->src < y->src ? -1 : 1;
  return memcmp(&x->f, &y->f, sizeof x->f);
}

/* Price the forms of sources src[0..nsrc) into *cand (the first ntop of
 * them the top results: their plain forms; the others' plain forms and
 * every source's finer combines extra): those feasible, faster than
 * their source (any with --split-k=2) and not results already.  A plain
 * form of a top result whose building or pricing fails is kept at -inf
 * (splitk_try says why); an extra one is dropped.  Out of memory (or
 * the time limit, a stop) ends the pricing: run->cut. */
static mirs_status splitk_price(mirs_search *s, const mirs__search_result *src, size_t nsrc,
                                size_t ntop, sk_cand **cand, size_t *ncand, sk_run *run) {
  mirs_context *ctx = s->ctx;
  size_t cap = 0;
  sk_form *f = mirs__core_alloc(ctx, sizeof *f * SPLITK_MAX_FORMS);
  if (!f)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (split-K forms)");
  mirs_status st = MIRS_OK;
  for (size_t j = 0; st == MIRS_OK && j < nsrc && !splitk_time_up(s, run); j++) {
    size_t n = splitk_forms(s, src[j].g, true, true, false, 0, f, SPLITK_MAX_FORMS);
    for (size_t i = 0; st == MIRS_OK && i < n && !run->cut; i++) {
      bool extra = j >= ntop || f[i].cdim >= 0;
      mirs_graph *v = NULL;
      mirs__cost_result cr = {.feasible = false};
      uint64_t h = 0;
      mirs_status vs = form_variant(ctx, src[j].g, &f[i], &v);
      if (vs == MIRS_OK && v) {
        run->tried++;
        h = mirs_graph_hash(v);
        if (!have_result(s, h) && find_entry(s, h) < 0)
          vs = mirs__cost_graph(ctx, s->device, v, &cr);
      }
      mirs__graph_free(v);
      if (vs == MIRS_OK && (!v || !cr.feasible ||
                            !(cr.seconds < src[j].cost || ctx->opt.split_k == 2)))
        continue;
      if (vs != MIRS_OK && (extra || splitk_fatal(vs) || vs == MIRS_STOPPED)) {
        if (extra && !splitk_fatal(vs) && vs != MIRS_STOPPED)
          mirs_clear_error(ctx); /* (an extra variant is only offered) */
        else
          splitk_failed(s, &src[j], &f[i], vs, run);
        continue;
      }
      if (vs != MIRS_OK)
        mirs_clear_error(ctx); /* (said when tried) */
      st = mirs__core_grow(ctx, (void **)cand, &cap, *ncand + 1, sizeof **cand);
      if (st == MIRS_OK)
        (*cand)[(*ncand)++] = (sk_cand){vs == MIRS_OK ? cr.seconds : -INFINITY, h, j, f[i], extra};
    }
  }
  mirs__core_free(ctx, f);
  return st;
}

/* The rewrite's sources into *src (*nsrc; NULL when there are none):
 * the best split_k_top results of the ranked list (*top; not the cached
 * sources), their graphs read, those not split already (the first
 * *ntop), then the pre-selected sources not among them.  Copies: res
 * moves as variants are added; their graphs do not. */
static mirs_status splitk_sources(mirs_search *s, mirs__search_result **src, size_t *nsrc,
                                  size_t *ntop, size_t *top) {
  mirs_context *ctx = s->ctx;
  *src = NULL;
  *nsrc = *ntop = *top = 0;
  mirs__search_result *a = mirs__core_alloc(ctx, sizeof *a * (s->sink.nres + s->splitk_nsrc + 1));
  if (!a)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (split-K sources)");
  size_t n = 0;
  for (size_t i = 0; i < s->sink.nres && (int64_t)*top < s->ctx->opt.split_k_top; i++) {
    if (s->sink.res[i].source_only)
      continue;
    (*top)++;
    mirs_status st = mirs__sink_graph(s, &s->sink.res[i]);
    if (st != MIRS_OK) {
      mirs__core_free(ctx, a);
      return st;
    }
    if (!mirs__splitk_has_split(s->sink.res[i].g))
      a[n++] = s->sink.res[i];
  }
  *ntop = n;
  for (size_t i = 0; i < s->splitk_nsrc; i++) {
    bool dup = false;
    for (size_t j = 0; j < *ntop && !dup; j++)
      dup = a[j].hash == s->splitk_src[i].hash;
    if (!dup)
      a[n++] = s->splitk_src[i];
  }
  *src = a;
  *nsrc = n;
  return MIRS_OK;
}

/* The variants to try, into *cand (*ncand), in order of predicted time
 * (ties by hash; those whose building or pricing failed first): each of
 * the top sources' plain forms priced faster than its source, one per
 * hash, and the best split_k_top of the extra ones (splitk_price). */
static mirs_status splitk_candidates(mirs_search *s, const mirs__search_result *src, size_t nsrc,
                                     size_t ntop, sk_cand **cand, size_t *ncand, sk_run *run) {
  *cand = NULL;
  *ncand = 0;
  MIRS_CHECK(s->ctx, splitk_price(s, src, nsrc, ntop, cand, ncand, run));
  if (*ncand > 1)
    qsort(*cand, *ncand, sizeof **cand, cand_cmp);
  int64_t extras = 0;
  size_t k = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < *ncand; i++) {
    sk_cand c = (*cand)[i];
    bool same = i > 0 && c.hash == prev && isfinite(c.cost);
    prev = c.hash;
    if (same || (c.extra && extras++ >= s->ctx->opt.split_k_top))
      continue;
    (*cand)[k++] = c;
  }
  *ncand = k;
  return MIRS_OK;
}

/* The rewrite's sources and the variants to try, in order
 * (splitk_sources, splitk_candidates; `how` ends the log line saying it
 * begins).  When listing them fails (out of memory), that is said and
 * counted in run, and there is no variant to try: the search goes on
 * with its own results. */
static void splitk_plan(mirs_search *s, const char *how, mirs__search_result **src, size_t *nsrc,
                        size_t *ntop, size_t *top, sk_cand **cand, size_t *ncand, sk_run *run) {
  mirs_context *ctx = s->ctx;
  mirs__core_log(ctx, MIRS_LOG_DEBUG, "search: split-K rewrite of the best %zu results begins%s",
                 s->sink.nres < (size_t)ctx->opt.split_k_top ? s->sink.nres
                                                             : (size_t)ctx->opt.split_k_top,
                 how);
  mirs_status st = splitk_sources(s, src, nsrc, ntop, top);
  if (st == MIRS_OK)
    st = splitk_candidates(s, *src, *nsrc, *ntop, cand, ncand, run);
  if (st != MIRS_OK) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: split-K rewrite failed: %s; skipped",
                   st == MIRS_NOMEM && !mirs_last_error(ctx)[0] ? "out of memory"
                                                                : mirs_last_error(ctx));
    mirs_clear_error(ctx);
    run->failed++;
    *ncand = 0;
  }
}

/* The split-K rewrite (option split_k), from the final ranked list and
 * the pre-selected sources (splitk_preselect, itself from the ranked
 * list), nothing else, so the variants are the same for any threads,
 * ranks and resumes:
 *  - each custom kernel of the best split_k_top results, split by each
 *    grid dim and factor that fits (splitk.c): every variant faster than
 *    its source (any with --split-k=2);
 *  - the extra variants: the pre-selected sources' plain forms and the
 *    finer combines of every source, the best split_k_top of them by
 *    predicted time (ties by hash), faster than their source;
 * verified at full shape and in float64 like the others (splitk_add),
 * all of them in order of predicted time (so a time limit keeps the
 * best), then ranked again.  Past the time limit, or stopped (signal,
 * limit), the rewrite ends where it is and the results it has are kept,
 * as the full-shape verification and the float64 check do: a stop must
 * not lose the search's results.  Nor must a variant that fails to
 * build, verify or price (an error, not a verdict): it is skipped with a
 * warning, and out of memory ends the rewrite with the variants it has.
 * Under a time limit the variants are verified among the results
 * instead (finish_timed); this is the rewrite without one. */
static mirs_status splitk_results(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  if (!ctx->opt.split_k || (s->sink.nres == 0 && s->splitk_nsrc == 0))
    return MIRS_OK;
  sk_run run = {0, 0, 0, false, false};
  double t0 = mirs__core_now();
  mirs__search_result *src = NULL;
  sk_cand *cand = NULL;
  size_t nsrc = 0, ntop = 0, ncand = 0, top = 0;
  splitk_plan(s, "", &src, &nsrc, &ntop, &top, &cand, &ncand, &run);
  for (size_t i = 0; i < ncand && !splitk_time_up(s, &run); i++)
    splitk_try(s, &src[cand[i].src], &cand[i].f, &run);
  mirs__core_free(ctx, cand);
  mirs__core_free(ctx, src);
  full_stores_free(s);
  mirs_eval_result_destroy(s->ref_eval);
  s->ref_eval = NULL;
  s->splitk_variants = run.added;
  mirs__core_log(ctx, MIRS_LOG_INFO,
                 "search: split-K rewrite of the best %zu results and %zu pre-selected sources: "
                 "%lld variants, %lld verified and added, %lld failed, in %.3f s",
                 top, nsrc - ntop, (long long)run.tried, (long long)run.added,
                 (long long)run.failed, mirs__core_now() - t0);
  if (run.added > 0)
    qsort(s->sink.res, s->sink.nres, sizeof *s->sink.res, result_cmp);
  return MIRS_OK;
}

/* Under a time limit (finish_timed): check in float64 the results
 * full_upto kept since the last call, in order, while they rank among the
 * best float_check_top with the `added` variants (each checked when
 * added), as float_check does after the full-shape verification without
 * a limit; drop those that fail.  Not past the limit, nor after a stop
 * (said; the search is then incomplete) or an error (fr->st, which fails
 * the search as float_check's does). */
static void float_upto(mirs_search *s, full_run *fr, int64_t added) {
  mirs_context *ctx = s->ctx;
  for (; fr->fnext < fr->next; fr->fnext++) {
    mirs__search_result *r = &s->sink.res[fr->fnext];
    if (r->dropped || fr->kept++ + added >= ctx->opt.float_check_top || r->float_checked ||
        fr->st != MIRS_OK || fr->stopped || time_up(s))
      continue;
    bool ok = true, skip = false;
    mirs_status st = mirs__sink_graph(s, r);
    if (st == MIRS_OK)
      st = float_one(s, r->g, &ok, &skip);
    if (st == MIRS_STOPPED) {
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: float64 check stopped (%s); the results verified so far are "
                     "reported with their fingerprint verdicts",
                     mirs_last_error(ctx));
      mirs_clear_error(ctx);
      s->complete = false;
      fr->stopped = true;
    } else if (st != MIRS_OK) {
      fr->st = st;
    } else if (!ok) {
      MIRS_INC(&fr->fs, float_rejects);
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: result %016llx verified at full shape but not equal in float64; "
                     "dropped",
                     (unsigned long long)r->hash);
      r->dropped = true;
      fr->kept--;
    } else if (!skip) {
      MIRS_INC(&fr->fs, float_checks);
      r->float_checked = true;
    }
  }
}

/* The final phase under a time limit with split_k: the full-shape
 * verification of the results and the split-K rewrite (its variants
 * verified at full shape and in float64, splitk_add) in one order, that
 * of predicted time (a result before a variant of the same time), so
 * that when the limit comes what is left unverified is the slowest.
 * Each variant of the same ranked list as without a limit but one: the
 * sources are the best split_k_top results before their full-shape
 * verification (a variant is verified itself, whatever its source's
 * verdict), and the pre-selected ones.  Without a limit the results are
 * verified first and their verdicts and the float64 check choose the
 * sources (a result that fails either is not one); with one, a limit
 * reached there would leave the variants, often the fastest
 * (FlashDecoding forms 1.4-1.7x faster than any one-kernel result),
 * unverified.  The float64 check of the best float_check_top comes in
 * the same order (float_upto), the results' after their full-shape
 * verification, the variants' in theirs (splitk_add); float_check then
 * takes any of the best left unchecked.  A stop, an error of the
 * rewrite and verify_full_max act as in full_verify and
 * splitk_results. */
static mirs_status finish_timed(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  sk_run run = {0, 0, 0, false, false};
  double t0 = mirs__core_now();
  mirs__search_result *src = NULL;
  sk_cand *cand = NULL;
  size_t nsrc = 0, ntop = 0, ncand = 0, top = 0;
  bool rewrite = s->sink.nres > 0 || s->splitk_nsrc > 0;
  mirs_status st = MIRS_OK;
  if (rewrite) /* (a failure is said: the results are verified without the variants) */
    splitk_plan(s, " (verified among them, in order of predicted time)", &src, &nsrc, &ntop, &top,
                &cand, &ncand, &run);
  full_run fr;
  full_begin(s, &fr);
  for (size_t i = 0; i < ncand; i++) {
    full_upto(s, &fr, cand[i].cost);
    float_upto(s, &fr, run.added);
    if (fr.st != MIRS_OK || fr.stopped || splitk_time_up(s, &run))
      break;
    splitk_try(s, &src[cand[i].src], &cand[i].f, &run);
    fr.stopped = fr.stopped || run.stopped;
  }
  full_upto(s, &fr, INFINITY);
  float_upto(s, &fr, run.added);
  mirs__core_free(ctx, cand);
  mirs__core_free(ctx, src); /* (copies: the graphs are the results') */
  st = full_end(s, &fr);
  s->splitk_variants = run.added;
  if (rewrite)
    mirs__core_log(ctx, MIRS_LOG_INFO,
                   "search: split-K rewrite of the best %zu results and %zu pre-selected sources: "
                   "%lld variants, %lld verified and added, %lld failed, in %.3f s (with the "
                   "full-shape verification, in order of predicted time)",
                   top, nsrc - ntop, (long long)run.tried, (long long)run.added,
                   (long long)run.failed, mirs__core_now() - t0);
  if (st == MIRS_OK && run.added > 0)
    qsort(s->sink.res, s->sink.nres, sizeof *s->sink.res, result_cmp);
  if (st == MIRS_OK)
    st = float_check(s);
  if (st == MIRS_OK)
    st = mirs__sink_graphs(s);
  return st;
}

/* Rank the results, verify those matched on reduced instances at full
 * shape and check the best in float64 against the program; drop failures.
 * After the workers have stopped; the entries keep every hash (a
 * checkpoint records them all). */
mirs_status mirs__sink_finish(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  s->final_verifs = 0;
  s->final_verifs_max = 0;
  s->splitk_tries = 0;
  s->splitk_fail_at = 0;
#ifdef MIRS_FAULT_INJECTION
  const char *e = getenv("MIRS_TEST_FINAL_VERIFICATIONS");
  if (e && *e)
    s->final_verifs_max = strtoll(e, NULL, 10);
  e = getenv("MIRS_TEST_SPLITK_FAIL");
  if (e && *e)
    s->splitk_fail_at = strtoll(e, NULL, 10);
#endif
  if (s->sink.nres > 1)
    qsort(s->sink.res, s->sink.nres, sizeof *s->sink.res, result_cmp);
  mirs_status st = splitk_preselect(s);
  if (st == MIRS_OK && ctx->opt.split_k && ctx->opt.time_limit > 0) {
    st = finish_timed(s);
  } else {
    if (st == MIRS_OK)
      st = full_verify(s);
    if (st == MIRS_OK)
      st = float_check(s);
    if (st == MIRS_OK)
      st = mirs__sink_graphs(s);
    if (st == MIRS_OK)
      st = splitk_results(s);
  }
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Take a result another rank found, as it sent it (dist.c): hash h, its
 * smallest path there, the counter bits its first offer raised, and *r
 * (its graph then owned here) when it was accepted there, NULL when it was
 * rejected.  As for offers, the sink keeps each hash's smallest path and
 * the graph of that instance, so the merged list is the one a single
 * process finds; a rejection (at full shape, in float64) is a verdict on
 * the graph and stands.  After the workers have stopped. */
mirs_status mirs__sink_adopt(mirs_search *s, uint64_t h, const uint32_t *path, int32_t len,
                             uint32_t counted, mirs__search_result *r) {
  mirs_context *ctx = s->ctx;
  int64_t e = find_entry(s, h);
  mirs_status st = MIRS_OK;
  if (e < 0) {
    int32_t at = -1;
    if (r) {
      st = mirs__core_grow(ctx, (void **)&s->sink.res, &s->sink.capres, s->sink.nres + 1, sizeof *s->sink.res);
      if (st == MIRS_OK)
        at = (int32_t)s->sink.nres;
    }
    if (st == MIRS_OK)
      st = add_entry(s, h, path, len, at);
    if (st != MIRS_OK) {
      if (r)
        mirs__sink_result_free(s, r);
      MIRS_CHECK(ctx, st);
    }
    s->sink.ent[s->sink.nent - 1].counted = counted;
    if (r)
      s->sink.res[s->sink.nres++] = *r;
    return MIRS_OK;
  }
  if (!r)
    mirs__sink_reject(s, h);
  mirs__sink_entry *en = &s->sink.ent[e];
  bool smaller = path_cmp(path, len, &s->sink.paths[en->poff], en->plen) < 0;
  if (r && en->res >= 0) {
    mirs__search_result *mine = &s->sink.res[en->res];
    mine->verified = mine->verified || r->verified;
    mine->float_checked = mine->float_checked || r->float_checked;
    if (r->found_at < mine->found_at)
      mine->found_at = r->found_at;
    if (smaller) {
      /* (The cost may differ in its last bits between instances.) */
      mirs__sink_result_free(s, mine);
      mine->g = r->g;
      mine->text = r->text;
      mine->tlen = r->tlen;
      r->g = NULL;
      r->text = NULL;
      mine->cost = r->cost;
      mine->kernels = r->kernels;
    }
  }
  if (r)
    mirs__sink_result_free(s, r);
  if (smaller)
    MIRS_CHECK(ctx, set_path(s, en, path, len));
  return MIRS_OK;
}

/* After a recorded result was re-found (a checkpoint's; the results of
 * other ranks are adopted as sent: mirs__sink_adopt). */
mirs_status mirs__sink_restored(mirs_search *s, const char *from, uint64_t h, unsigned flags) {
  mirs_context *ctx = s->ctx;
  bool accepted = flags & MIRS__CKPT_ACCEPTED;
  /* The sink must now hold h, accepted as recorded (or accepted where a
   * check made when it was found, at full shape, rejected it: that
   * verdict is the graph's, so it stands). */
  int found = mirs__sink_find(s, h);
  if (found == 1 && !accepted) {
    mirs__sink_reject(s, h);
    found = 0;
  }
  if (found < 0 || found != (int)accepted)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "%s: result %016llx is not found again at its path (a checkpoint of "
                     "another search space?)",
                     from, (unsigned long long)h);
  if (found == 1) {
    /* The checks made before the checkpoint stand (they are verdicts on
     * the graph): a resume does not verify its best results again, and
     * only a cheaper one is verified early. */
    int64_t e = find_entry(s, h);
    mirs__search_result *res = e >= 0 && s->sink.ent[e].res >= 0 ? &s->sink.res[s->sink.ent[e].res] : NULL;
    if (res && (flags & MIRS__CKPT_VERIFIED)) {
      res->verified = true;
      if (res->reduced && (!s->have_best_full || res->cost < s->best_full)) {
        s->have_best_full = true;
        s->best_full = res->cost;
      }
    }
    if (res && (flags & MIRS__CKPT_FLOAT_CHECKED))
      res->float_checked = true;
  }
  return MIRS_OK;
}

/* ---------------------------------------------------------------- views */

size_t mirs__sink_nentries(const mirs_search *s) {
  return s->sink.nent;
}

void mirs__sink_entry_view(const mirs_search *s, size_t i, mirs__sink_view *v) {
  const mirs__sink_entry *e = &s->sink.ent[i];
  v->hash = e->hash;
  v->path = &s->sink.paths[e->poff];
  v->plen = e->plen;
  v->counted = e->counted;
  v->accepted = e->res >= 0;
  /* (After the final ranking an entry's index may name another result.) */
  v->res = e->res >= 0 && (size_t)e->res < s->sink.nres && s->sink.res[e->res].hash == e->hash
               ? &s->sink.res[e->res]
               : NULL;
}

size_t mirs__sink_nresults(const mirs_search *s) {
  return s->sink.nres;
}

const mirs__search_result *mirs__sink_result(const mirs_search *s, size_t i) {
  return &s->sink.res[i];
}

void mirs__sink_free(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  for (size_t i = 0; i < s->sink.nres; i++)
    mirs__sink_result_free(s, &s->sink.res[i]);
  mirs__core_free(ctx, s->sink.res);
  mirs__core_free(ctx, s->sink.ent);
  mirs__core_free(ctx, s->sink.idx);
  mirs__core_free(ctx, s->sink.paths);
  memset(&s->sink, 0, sizeof s->sink);
  splitk_src_free(s);
}
