/* SPDX-License-Identifier: MIT */
/* src/search/api.c - the public mirs_search_* API: creating a search
 * (the space, the reference fingerprints and expressions, pruning's shared
 * state, the cost profile), running it on the pool, its results and
 * statistics, stopping it from anywhere, checkpoints and resume.
 *
 * Threading: mirs_search_run runs the workers on OpenMP threads and
 * returns when they have all stopped; every other call is made by one
 * thread at a time, except mirs_search_stop, which any thread or a signal
 * handler may call at any moment (it only sets an atomic flag). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/cache.h"
#include "search/refind.h"
#include "search/search.h"

/* ---------------------------------------------------------------- creation */

/* Fill s->space.tr_hash: the abstract expressions of the values the
 * program transposes (space.h). */
static mirs_status transpose_sources(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  const mirs_graph *p = s->program;
  mirs__search_space *sp = &s->space;
  sp->ntr = 0;
  for (int32_t i = 0; i < p->nops; i++)
    for (int32_t j = 0; p->ops[i].bg && j < p->ops[i].bg->nops; j++)
      if (p->ops[i].bg->ops[j].op == MIRS_OP_TRANSPOSE)
        sp->ntr = -1;
  if (sp->ntr < 0)
    return MIRS_OK;
  mirs__abs_arena a;
  MIRS_CHECK(ctx, mirs__abs_arena_init(&a, ctx));
  mirs__abs_id *kexpr = mirs__core_alloc(ctx, ((size_t)p->nt + 1) * sizeof *kexpr);
  mirs_status st = kexpr ? mirs__abs_graph(&a, p, kexpr) : MIRS_NOMEM;
  for (int32_t i = 0; st == MIRS_OK && i < p->nops; i++) {
    if (p->ops[i].op != MIRS_OP_TRANSPOSE)
      continue;
    mirs__abs_id e = kexpr[p->ops[i].in[0]];
    if (e == MIRS__ABS_NONE || sp->ntr >= MIRS__SEARCH_MAX_CST) {
      sp->ntr = -1; /* (unknown: no restriction) */
      break;
    }
    sp->tr_hash[sp->ntr++] = mirs__abs_hash(&a, e);
  }
  if (st == MIRS_LIMIT) {
    mirs_clear_error(ctx);
    sp->ntr = -1;
    st = MIRS_OK;
  }
  mirs__core_free(ctx, kexpr);
  mirs__abs_arena_free(&a);
  return st;
}

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
  /* verify=gpu (or cpu) is settled here, not at run: without a usable GPU
   * the create fails, before a caller has cleared anything for the run
   * (the CLI clears an earlier run's results only after it); auto
   * probes when first needed. */
  if (strcmp(ctx->opt.verify, "auto") != 0 && (st = mirs__sink_full_backend(*out)) != MIRS_OK) {
    mirs_search_destroy(*out);
    *out = NULL;
    return st;
  }
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
  s->refind = mirs__refind_result;
  s->ranks = 1;
  atomic_init(&s->halt, 0);
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    mirs__core_free(ctx, s);
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "mirs_search_create: cannot create a mutex");
  }
  if (pthread_mutex_init(&s->log_lock, NULL) != 0) {
    pthread_mutex_destroy(&s->lock);
    mirs__core_free(ctx, s);
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "mirs_search_create: cannot create a mutex");
  }
  mirs_status st = mirs__search_space_parse(ctx, &s->space);
  if (st == MIRS_OK)
    st = mirs__graph_clone(program, &s->program);
  mirs_graph *folded = NULL;
  if (st == MIRS_OK) /* the search's program: spelled-out norms folded (src/graph/fold.c) */
    st = mirs__graph_fold_norms(s->program, &folded);
  if (folded) {
    mirs__graph_free(s->program);
    s->program = folded;
    mirs__core_log(ctx, MIRS_LOG_INFO, "search: spelled-out LayerNorm folded into layer_norm");
  }
  if (s->program)
    program = s->program;
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
    st = transpose_sources(s);
  if (st == MIRS_OK)
    st = mirs__cost_profiles_load(ctx, NULL, &s->profiles);
  if (st == MIRS_OK) {
    st = mirs__cost_find(ctx, s->profiles, ctx->opt.cost_device, &s->device);
    if (st != MIRS_OK)
      st = mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
    else /* (before any worker: each copies it, views.c reads it) */
      mirs__cost_note_device(ctx, s->device);
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

/* Fill the public stats of s (after or between runs). */
static void fill_stats(const mirs_search *s, mirs_search_stats *o) {
  const uint64_t *v = s->stats.v;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->states_explored = v[MIRS__STAT_states_explored];
  o->candidates_verified = v[MIRS__STAT_candidates_verified];
  o->graphs_found = v[MIRS__STAT_graphs_found];
  o->prune_calls = v[MIRS__STAT_prune_calls];
  o->prune_cache_hits = v[MIRS__STAT_prune_cache_hits];
  o->solver_calls = v[MIRS__STAT_solver_calls];
  o->solver_seconds = s->solver_seconds;
  o->wall_seconds = s->ran ? s->wall : s->wall_before;
  o->complete = s->complete;
  o->fingerprint_trials = s->trials;
  o->log2_false_accept_bound = s->ctx->opt.verify_log2_bound;
}

/* The pool's poll hook of a distributed run (dist.c serves the protocol
 * from thread 0). */
static void dist_poll(void *d, mirs__pool *p, mirs__search_worker *w) {
  mirs__dist_poll(d, p, w);
}

/* The pool's pause hook: a periodic checkpoint (the pool has put the
 * counters as of now into s).  A failed write is logged and the search
 * goes on. */
static mirs_status periodic_checkpoint(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  mirs_status st = mirs__checkpoint_write(s, s->ckpt_path);
  if (st == MIRS_OK) {
    mirs__core_log(ctx, MIRS_LOG_INFO, "search: checkpoint written to %s", s->ckpt_path);
  } else if (st == MIRS_IO) {
    /* A full disk must not end a search that can still finish (its
     * results need no disk until the end): the write left the previous
     * checkpoint as it was, so the search goes on and is resumable from
     * that one if it is stopped before the next write works. */
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: cannot write the periodic checkpoint (%s); the previous "
                   "checkpoint, if any, is intact; the search goes on",
                   mirs_last_error(ctx));
    mirs_clear_error(ctx);
    st = MIRS_OK;
  }
  return st;
}

static mirs_status search_run(mirs_search *s);

/* Why a run stopped, from the context's stop bits (an interrupt, the
 * memory limit, else the time limit). */
static int ctx_stop_why(mirs_context *ctx) {
  int bits = atomic_load(&ctx->stop);
  return bits & MIRS__STOP_USER  ? MIRS_STOP_INTERRUPT
         : bits & MIRS__STOP_MEM ? MIRS_STOP_MEMORY
                                 : MIRS_STOP_TIME;
}

/* The progress callback's last call, after a run. */
static void last_progress(mirs_search *s) {
  if (s->progress) {
    mirs_search_stats o;
    fill_stats(s, &o);
    s->progress(s->user, &o);
  }
}

/* A run with the result cache: served from it (the entry's results
 * verified again), or searched and, when complete, stored. */
static mirs_status cache_run(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  bool hit = false;
  s->t0 = mirs__core_now();
  mirs_status st = mirs__cache_serve(s, &hit);
  if (st == MIRS_OK && !hit) {
    st = search_run(s);
    if (st == MIRS_OK)
      mirs__cache_store(s);
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  s->ran = true;
  s->wall = s->wall_before + mirs__core_now() - s->t0;
  s->threads_used = s->threads;
  if (st == MIRS_OK && !s->complete) {
    s->why = ctx_stop_why(ctx);
  }
  last_progress(s);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Run the search: the open work (the whole space, or what a resumed
 * checkpoint left) on the pool, then the results ranked and verified. */
mirs_status mirs_search_run(mirs_search *s) {
  if (!s)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = s->ctx;
  if (s->ran)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_run: this search has already run");
  if (s->running)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_run: called again from its own callback");
  s->threads = ctx->opt.threads > 0 ? (int)ctx->opt.threads : mirs__core_usable_cpus();
  /* --verify=gpu without a usable GPU (or a bad value) fails before the
   * search, not after it (normally already at create; the option may
   * have changed since); auto probes when first needed. */
  if (strcmp(ctx->opt.verify, "auto") != 0)
    MIRS_CHECK(ctx, mirs__sink_full_backend(s));
  s->cache_state = MIRS__CACHE_NONE;
  if (mirs__cache_wanted(s) && !s->setup_stopped[0])
    return cache_run(s);
  return search_run(s);
}

/* The search proper: the root task (or a resumed checkpoint's work) on
 * the pool, then the results ranked and verified. */
static mirs_status search_run(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  if (!s->resumed && !s->open && mirs__dist_root(s)) {
    /* The whole space: every move of the root (hi is clamped to their
     * number when the task starts). */
    s->open = mirs__task_new(ctx, NULL, 0, 0, MIRS__TASK_ALL);
    if (!s->open)
      return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the root task)");
  }
  if (s->setup_stopped[0]) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "search: stopped during setup (%s); nothing searched",
                   s->setup_stopped);
    s->why = ctx_stop_why(ctx);
    mirs_status st = MIRS_OK;
    if (s->dist) {
      /* The other ranks stop too, and rank 0 collects what they have. */
      mirs_search_stop(s);
      st = mirs__dist_finish(s, MIRS_OK);
      if (st == MIRS_OK)
        st = mirs__sink_graphs(s);
    }
    s->ran = true;
    s->complete = false;
    s->wall = s->wall_before;
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  s->running = true;
  s->t0 = mirs__core_now();
  s->ckpt_last = s->t0;
  mirs_status st = watch_limits(ctx, s->t0);
  if (st != MIRS_OK) {
    s->running = false;
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  clock_t c0 = clock();
  mirs__pool_hooks hooks = {0};
  if (s->dist) {
    hooks.poll = dist_poll;
    hooks.poll_arg = s->dist;
  } else if (s->ckpt_path && ctx->opt.checkpoint_interval > 0) {
    hooks.pause = periodic_checkpoint;
    hooks.pause_every = ctx->opt.checkpoint_interval;
  }
  st = mirs__pool_run(s, &hooks);
  if (s->dist) {
    /* Every rank's results and open work to rank 0, not cut short by
     * the limits (watched again afterwards). */
    mirs__core_watch_stop(ctx);
    st = mirs__dist_finish(s, st);
    mirs_status ws = watch_limits(ctx, s->t0);
    if (st == MIRS_OK)
      st = ws;
  }
  s->complete = st == MIRS_OK && !s->open;
  s->why = atomic_load(&s->halt_why);
  if (st == MIRS_OK && s->open) {
    static const char *const why[] = {
#define MIRS_STOP(name, reason, log) log,
#include "mirsearch/stop.def"
#undef MIRS_STOP
    };
    int w = s->why;
    size_t ntasks = 0;
    for (const mirs__task *t = s->open; t; t = t->next)
      ntasks++;
    mirs__core_log(ctx, MIRS_LOG_INFO, "search: stopping after %.1f s (%s%s); %zu open tasks kept",
                   mirs__core_now() - s->t0, why[w >= 0 && w < MIRS_STOP_COUNT ? w : 0],
                   w == MIRS_STOP_TIME && s->reduce_tile > 0
                       ? ": the rest of the time is kept for full-shape verification"
                       : "",
                   ntasks);
  }
  if (st == MIRS_OK) {
    double t1 = mirs__core_now(), cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    double n = (double)s->stats.v[MIRS__STAT_states_explored];
    mirs__core_log(ctx, MIRS_LOG_DEBUG,
                   "search: %.0f states in %.3f s (%.0f states/s) on %d threads, %.3f s of "
                   "process CPU (%.0f states per CPU second), %.3f s of it verifying new bests "
                   "at full shape",
                   n, t1 - s->t0, t1 > s->t0 ? n / (t1 - s->t0) : 0.0, s->threads_used, cpu,
                   cpu > 0 ? n / cpu : 0.0, s->early_seconds);
    if (mirs__dist_root(s)) { /* (other ranks' results are rank 0's now) */
      st = mirs__sink_finish(s);
      mirs__refind_release(s);
    }
  }
  if (!s->complete && s->why == MIRS_STOP_NONE) {
    /* (Complete search, final verification cut short.) */
    s->why = ctx_stop_why(ctx);
  }
  mirs__core_watch_stop(ctx);
  s->running = false;
  s->wall = s->wall_before + mirs__core_now() - s->t0;
  s->ran = true;
  last_progress(s);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Ask a running search to stop (any thread, or a signal handler). */
mirs_status mirs_search_stop(mirs_search *s) {
  if (!s)
    return MIRS_INVALID_ARG;
  /* Lock-free atomics: async-signal-safe. */
  int none = MIRS_STOP_NONE;
  atomic_compare_exchange_strong(&s->halt_why, &none, MIRS_STOP_CALLER);
  atomic_fetch_or(&s->halt, MIRS__HALT_USER);
  return MIRS_OK;
}

/* Write a checkpoint of s. */
mirs_status mirs_search_checkpoint(mirs_search *s, const char *path) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (!path)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "mirs_search_checkpoint: NULL path");
  if (s->cache_state == MIRS__CACHE_HIT)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG,
                     "mirs_search_checkpoint: this search was served from the result cache "
                     "(its entry is the durable copy): there is no search to checkpoint");
  MIRS_CHECK(s->ctx, mirs__checkpoint_write(s, path));
  return MIRS_OK;
}

/* Continue from a checkpoint (before the run). */
mirs_status mirs_search_resume(mirs_search *s, const char *path) {
  if (!s)
    return MIRS_INVALID_ARG;
  if (!path)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "mirs_search_resume: NULL path");
  if (s->ran || s->resumed)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG,
                     "mirs_search_resume: only a search that has not run can resume");
  if (s->setup_stopped[0])
    return MIRS_FAIL(s->ctx, MIRS_STOPPED,
                     "%s: not resumed: the search's setup was stopped (%s); the checkpoint is "
                     "unchanged",
                     path, s->setup_stopped);
  MIRS_CHECK(s->ctx, mirs__checkpoint_read(s, path));
  return MIRS_OK;
}

/* Checkpoint periodically (option checkpoint_interval) to path. */
mirs_status mirs_search_set_checkpoint(mirs_search *s, const char *path) {
  if (!s)
    return MIRS_INVALID_ARG;
  char *copy = NULL;
  if (path && !(copy = mirs__core_strdup(s->ctx, path)))
    return MIRS_NOMEM;
  mirs__core_free(s->ctx, s->ckpt_path);
  s->ckpt_path = copy;
  return MIRS_OK;
}

/* Why the last run did not search the whole space. */
mirs_stop mirs_search_stop_why(const mirs_search *s) {
  if (!s || !s->ran || s->complete || s->why < 0 || s->why >= MIRS_STOP_COUNT)
    return MIRS_STOP_NONE;
  return (mirs_stop)s->why;
}

/* The same as text (stop.def). */
const char *mirs_search_stop_reason(const mirs_search *s) {
  static const char *const text[] = {
#define MIRS_STOP(name, reason, log) reason,
#include "mirsearch/stop.def"
#undef MIRS_STOP
  };
  return text[mirs_search_stop_why(s)];
}

/* Whether the last run was stopped with work left (a checkpoint of it
 * resumes). */
int mirs_search_stopped(const mirs_search *s) {
  /* Also a search that explored its whole space but whose final
   * verification was cut short: its checkpoint holds the results and no
   * open work, and resuming it runs only that verification. */
  return s && s->ran && (s->open != NULL || !s->complete);
}

/* Threads of the last run. */
int mirs_search_threads(const mirs_search *s) {
  return s ? s->threads_used : 0;
}

/* Number of results. */
int mirs_search_num_results(const mirs_search *s) {
  return s ? (int)mirs__sink_nresults(s) : 0;
}

/* Result index (best first). */
const mirs_graph *mirs_search_result(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < mirs__sink_nresults(s) ? mirs__sink_result(s, index)->g
                                                                   : NULL;
}

/* Predicted seconds of result index. */
double mirs_search_result_cost(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < mirs__sink_nresults(s)
             ? mirs__sink_result(s, index)->cost
             : NAN;
}

/* Canonical hash of result index. */
uint64_t mirs_search_result_hash(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < mirs__sink_nresults(s)
             ? mirs__sink_result(s, index)->hash
             : 0;
}

/* Kernel launches of result index. */
int mirs_search_result_kernels(const mirs_search *s, int index) {
  return s && index >= 0 && (size_t)index < mirs__sink_nresults(s)
             ? (int)mirs__sink_result(s, index)->kernels
             : 0;
}

/* Statistics so far, at most size bytes of them. */
mirs_status mirs_search_get_stats_sized(const mirs_search *s, mirs_search_stats *out,
                                        size_t size) {
  if (!s || !out || size < sizeof(size_t))
    return MIRS_INVALID_ARG;
  mirs_search_stats full;
  fill_stats(s, &full);
  full.struct_size = size < sizeof full ? size : sizeof full;
  memcpy(out, &full, full.struct_size);
  return MIRS_OK;
}

/* Release the search. */
void mirs_search_destroy(mirs_search *s) {
  if (!s)
    return;
  mirs_context *ctx = s->ctx;
  mirs__refind_release(s);
  mirs__measured_free(s);
  mirs__sink_free(s);
  mirs__core_free(ctx, s->ckpt_path);
  mirs__task_free_list(ctx, s->open);
  mirs__dist_free(s->dist);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->log_lock);
  mirs__core_free(ctx, s->plab);
  mirs__core_free(ctx, s->sym_need);
  mirs__fp_store_free(s->full_ref);
  for (int i = 0; i < MIRS__FULL_BATCH; i++)
    mirs__fp_store_free(s->full_cand[i]);
  mirs_eval_result_destroy(s->ref_eval);
  mirs__prune_shared_free(s->prune);
  mirs__cost_profiles_free(s->profiles);
  mirs__graph_free(s->program);
  mirs__core_free(ctx, s);
}

