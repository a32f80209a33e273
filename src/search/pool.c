/* SPDX-License-Identifier: MIT */
/* src/search/pool.c - the work-stealing pool: OpenMP threads, each owning a
 * search worker and a Chase–Lev deque of tasks (deque.h).
 *
 * A worker pops its own deque (the newest, deepest task) and otherwise
 * steals the oldest, shallowest task of another worker, trying victims
 * from a random start.  While another worker is idle and its own deque is
 * empty, a busy worker splits off the shallowest unexplored range of its
 * task (mirs__search_split) and pushes it, so work flows only where it is
 * wanted and the owner stays depth-first.
 *
 * Termination: `pending` counts tasks that exist (queued or running).  It
 * is raised before a split task is pushed, while the splitter's own task
 * still counts, and lowered after a task is finished, so it is zero only
 * when no work is left anywhere; an idle worker that reads zero leaves.
 * Stop: any bit in s->halt (mirs_search_stop, a limit, an error, a due
 * checkpoint) makes every worker leave at its next poll, at a node
 * boundary: its task's unexplored frames become tasks again
 * (mirs__search_leftover), and with the deques' contents they are the
 * open work s->open.  A checkpoint is written from it and, when only a
 * periodic checkpoint stopped the workers, the run goes on from it.
 *
 * Thread 0 is the thread that called mirs_search_run: it alone polls the
 * limits, calls the progress and should_stop callbacks and writes
 * checkpoints.  on_result is called by whichever worker found the result,
 * under the sink's lock (one at a time).
 *
 * Per slot, the part other threads touch (the deque's top and bottom, the
 * published counters) and the owner's part are on separate cache lines.
 * The start and end of each segment are also marked with a release/acquire
 * pair on `gen` and `done`.  libgomp is not built for ThreadSanitizer (its
 * barriers and the data it hands an outlined region are invisible to it),
 * so a TSan build (and a build without OpenMP) starts the same workers on
 * POSIX threads instead: the code under test is the same. */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(_OPENMP) && !defined(__SANITIZE_THREAD__)
#define USE_OPENMP 1
#include <omp.h>
#endif

#include "search/deque.h"
#include "search/search.h"

/* Steps (states entered or left) between a worker's polls. */
#define POLL_STEPS 16
/* Seconds between progress callbacks. */
#define PROGRESS_EVERY 0.5

typedef struct slot {
  /* Thieves: the deque (top and bottom on lines of their own). */
  mirs__deque dq;
  /* Thread 0 reads these for progress and limits (relaxed: counts). */
  _Alignas(MIRS__CACHE_LINE) _Atomic uint64_t states;
  _Atomic uint64_t found;
  _Atomic uint64_t cands;
  /* Owner only. */
  _Alignas(MIRS__CACHE_LINE) mirs__search_worker *w;
  uint64_t rng;
  uint64_t counted; /* states already added to the pool's total */
  mirs__task *left; /* open work of a stopped task */
  mirs_status st;
  bool idle;
} slot;

typedef struct mirs__pool {
  mirs_search *s;
  int n;
  slot *slots;
  void *mem;
  _Alignas(MIRS__CACHE_LINE) _Atomic uint64_t total; /* states entered, all workers */
  /* States the workers may still enter under max_states (reserved a few
   * at a time, what is left unused given back, so the limit is exact),
   * and those reserved and not yet settled: both under quota_lock, so
   * that "none left and none held" is one observation (quota_get). */
  _Alignas(MIRS__CACHE_LINE) atomic_flag quota_lock;
  int64_t left, held;
  _Alignas(MIRS__CACHE_LINE) _Atomic int64_t pending;
  _Alignas(MIRS__CACHE_LINE) _Atomic int idle;
  _Atomic int gen, done;
  _Atomic int finished; /* distributed: global termination (see mirs__pool_finish) */
  mirs__pool_hooks hooks; /* what the run installed (poll: distributed) */
  /* Thread 0 only. */
  _Alignas(MIRS__CACHE_LINE) double last_progress;
  uint64_t base_states, base_found, base_cands; /* counters of a resumed checkpoint
                                                 * (the slots publish their workers'
                                                 * totals) */
} pool;

/* Log callback of a worker's environment: the user's, one at a time. */
static void locked_log(void *user, mirs_log_level level, const char *msg) {
  mirs_search *s = user;
  pthread_mutex_lock(&s->log_lock);
  mirs__core_log(s->ctx, level, "%s", msg);
  pthread_mutex_unlock(&s->log_lock);
}

/* Counters of w not yet in s (its own and its pruning's) added to out. */
static void worker_counters(const mirs__search_worker *w, mirs__stats *out) {
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    out->v[i] += w->stats.v[i];
  const mirs__prune_counters *c = mirs__prune_worker_counters(w->pw);
  MIRS_ADD(out, prune_cache_hits, c->cache_hits);
  MIRS_ADD(out, prune_weights, c->weight_refuted);
  MIRS_ADD(out, solver_calls, c->solver_calls);
  MIRS_ADD(out, solver_refuted, c->solver_sat);
  MIRS_ADD(out, solver_no_model, c->solver_unsat);
  MIRS_ADD(out, solver_unknown, c->solver_unknown);
}

/* The search's counters with the running workers' (thread 0, between
 * segments, or for a checkpoint). */
static void snapshot(const pool *p, mirs__stats *out, double *solver) {
  *out = p->s->stats;
  *solver = p->s->solver_seconds;
  for (int i = 0; i < p->n; i++)
    if (p->slots[i].w) {
      worker_counters(p->slots[i].w, out);
      *solver += mirs__prune_worker_counters(p->slots[i].w->pw)->solver_seconds;
    }
}

/* Halt the workers for `bits`; the first reason is the one logged. */
static void halt(mirs_search *s, int bits, int why) {
  int none = 0;
  atomic_compare_exchange_strong(&s->halt_why, &none, why);
  atomic_fetch_or(&s->halt, bits);
}

/* Turn a stop request on the search's context (mirs_interrupt, or the
 * watchdog's time or memory limit) into a halt. */
static void halt_from_context(mirs_search *s) {
  if (!mirs__core_stopping(s->ctx))
    return;
  int bits = atomic_load_explicit(&s->ctx->stop, memory_order_relaxed);
  if (bits & MIRS__STOP_USER)
    halt(s, MIRS__HALT_USER, MIRS_STOP_INTERRUPT);
  else
    halt(s, MIRS__HALT_LIMIT, bits & MIRS__STOP_TIME ? MIRS_STOP_TIME : MIRS_STOP_MEMORY);
}

/* The search's time limit for the search phase: on reduced instances the
 * last tenth is kept for verifying the best results at full shape, else
 * the last twentieth for their float64 check (a time-limited search gives
 * its best that check within the limit; sink.c reports it when not). */
static double search_time_limit(const mirs_search *s) {
  double keep = s->reduce_tile > 0 ? 0.9 : s->ctx->opt.float_check_top > 0 ? 0.95 : 1.0;
  return s->ctx->opt.time_limit * keep;
}

/* Thread 0's poll: limits, callbacks, checkpoint timer. */
static void poll_master(pool *p) {
  mirs_search *s = p->s;
  mirs_context *ctx = s->ctx;
  double now = mirs__core_now();
  uint64_t states = p->base_states, found = p->base_found, cands = p->base_cands;
  size_t held = mirs_memory_current(ctx);
  for (int i = 0; i < p->n; i++) {
    states += atomic_load_explicit(&p->slots[i].states, memory_order_relaxed);
    found += atomic_load_explicit(&p->slots[i].found, memory_order_relaxed);
    cands += atomic_load_explicit(&p->slots[i].cands, memory_order_relaxed);
    if (p->slots[i].w)
      held += mirs_memory_current(p->slots[i].w->ctx);
  }
  halt_from_context(s);
  if (ctx->opt.time_limit > 0 && now - s->t0 >= search_time_limit(s))
    halt(s, MIRS__HALT_LIMIT, MIRS_STOP_TIME);
  if (ctx->opt.max_memory > 0 && held > (size_t)ctx->opt.max_memory) {
    if (!(atomic_load(&s->halt) & MIRS__HALT_LIMIT)) {
      pthread_mutex_lock(&s->log_lock); /* workers log through it too */
      mirs__core_log(ctx, MIRS_LOG_WARNING,
                     "search: stopping at the memory limit (%zu bytes held)", held);
      pthread_mutex_unlock(&s->log_lock);
    }
    halt(s, MIRS__HALT_LIMIT, MIRS_STOP_MEMORY);
  }
  if (p->hooks.pause && p->hooks.pause_every > 0 && now - s->ckpt_last >= p->hooks.pause_every)
    atomic_fetch_or(&s->halt, MIRS__HALT_CHECKPOINT);
  if (s->progress && now - p->last_progress >= PROGRESS_EVERY) {
    mirs_search_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    st.states_explored = states;
    st.candidates_verified = cands;
    st.graphs_found = found;
    st.wall_seconds = s->wall_before + now - s->t0;
    st.fingerprint_trials = s->trials;
    st.log2_false_accept_bound = ctx->opt.verify_log2_bound;
    s->progress(s->user, &st);
    p->last_progress = now;
  }
  if (s->should_stop && s->should_stop(s->user))
    halt(s, MIRS__HALT_USER, MIRS_STOP_CALLER);
}

/* Every worker's poll: add its new states to the total and apply the
 * time limit and the context's stop requests itself (thread 0 may be
 * descheduled). */
static void poll_limits(pool *p, slot *me) {
  mirs_search *s = p->s;
  uint64_t mine = me->w->stats.v[MIRS__STAT_states_explored];
  atomic_fetch_add_explicit(&p->total, mine - me->counted, memory_order_relaxed);
  me->counted = mine;
  halt_from_context(s);
  if (s->ctx->opt.time_limit > 0 && mirs__core_now() - s->t0 >= search_time_limit(s))
    halt(s, MIRS__HALT_LIMIT, MIRS_STOP_TIME);
}

/* quota_lock, held for a few instructions: spin, yielding the CPU to a
 * holder that was descheduled (more workers than cores). */
static void quota_lock(pool *p) {
  while (atomic_flag_test_and_set_explicit(&p->quota_lock, memory_order_acquire))
    sched_yield();
}
static void quota_unlock(pool *p) {
  atomic_flag_clear_explicit(&p->quota_lock, memory_order_release);
}

/* States a worker may enter before its next poll: up to POLL_STEPS, taken
 * from what max_states leaves (UINT64_MAX without it).  0 when none is
 * left; the pool halts once no worker holds any either (a worker that
 * holds some may give part back, which another then takes), so the run
 * enters exactly max_states states.  left and held are read and changed
 * together under the lock: with separate atomics a worker could read left
 * 0, then held 0 while another's reservation was between the two, and
 * halt the pool under it; that worker then stopped short (CI saw a run
 * enter 392 of 400 states). */
static uint64_t reserve(pool *p) {
  if (p->s->ctx->opt.max_states <= 0)
    return UINT64_MAX;
  quota_lock(p);
  int64_t take = p->left < POLL_STEPS ? p->left : POLL_STEPS;
  bool none = take <= 0 && p->held == 0;
  if (take > 0) {
    p->left -= take;
    p->held += take;
  }
  quota_unlock(p);
  if (take > 0)
    return (uint64_t)take;
  if (none)
    halt(p->s, MIRS__HALT_LIMIT, MIRS_STOP_STATES);
  return 0;
}

/* Settle a reservation of quota states of which `used` were entered. */
static void settle(pool *p, uint64_t quota, uint64_t used) {
  if (quota == UINT64_MAX)
    return;
  quota_lock(p);
  p->left += (int64_t)(quota - used);
  p->held -= (int64_t)quota;
  quota_unlock(p);
}

/* A task from another worker, or NULL. */
static mirs__task *steal(pool *p, int self) {
  slot *me = &p->slots[self];
  me->rng = me->rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
  int start = (int)((me->rng >> 33) % (uint64_t)p->n);
  for (int k = 0; k < p->n; k++) {
    int v = (start + k) % p->n;
    if (v == self)
      continue;
    void *x = mirs__deque_steal(&p->slots[v].dq);
    if (x == MIRS__DEQUE_ABORT)
      x = mirs__deque_steal(&p->slots[v].dq); /* lost a race: once more */
    if (x && x != MIRS__DEQUE_ABORT)
      return x;
  }
  return NULL;
}

/* Record a worker's failure and stop the others. */
static void fail(pool *p, slot *me, mirs_status st) {
  me->st = st;
  halt(p->s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
}

/* The loop of worker `self` in one segment. */
static void worker_loop(pool *p, int self) {
  mirs_search *s = p->s;
  slot *me = &p->slots[self];
  mirs__search_worker *w = me->w;
  for (;;) {
    if (atomic_load_explicit(&s->halt, memory_order_relaxed))
      break;
    mirs__task *t = mirs__deque_pop(&me->dq);
    if (!t && p->n > 1)
      t = steal(p, self);
    if (!t) {
      /* Acquire: pairs with the release decrement of whoever finished the
       * last task, so its results and counters are complete. */
      if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0 &&
          (!p->hooks.poll || atomic_load_explicit(&p->finished, memory_order_acquire)))
        break;
      if (!me->idle) {
        me->idle = true;
        atomic_fetch_add_explicit(&p->idle, 1, memory_order_relaxed);
      }
      if (self == 0) {
        poll_master(p);
        if (p->hooks.poll)
          p->hooks.poll(p->hooks.poll_arg, p, NULL);
      }
      if (p->hooks.poll && self != 0)
        nanosleep(&(struct timespec){0, 100000}, NULL); /* waiting on other ranks */
      else
        sched_yield();
      continue;
    }
    if (me->idle) {
      me->idle = false;
      atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
    }
    mirs_status st = mirs__search_task_start(w, t);
    if (st == MIRS_STOPPED) {
      /* Stopped while replaying the task's path: the task stays open. */
      mirs_clear_error(w->ctx);
      halt_from_context(s);
      t->next = me->left;
      me->left = t;
      break;
    }
    mirs__task_free(s->ctx, t);
    bool done = false;
    while (st == MIRS_OK && !done) {
      uint64_t quota = reserve(p);
      if (quota == 0) {
        if (atomic_load_explicit(&s->halt, memory_order_relaxed)) {
          st = mirs__search_leftover(w, s->ctx, &me->left);
          break;
        }
        /* Others hold the last states: wait for what they give back. */
        if (self == 0)
          poll_master(p);
        sched_yield();
        continue;
      }
      uint64_t before = w->stats.v[MIRS__STAT_states_explored];
      st = mirs__search_task_steps(w, POLL_STEPS, quota, &done);
      settle(p, quota, w->stats.v[MIRS__STAT_states_explored] - before);
      if (st == MIRS_STOPPED) {
        /* A move interrupted by a stop request or a limit: it is still
         * open work (task_steps left it so). */
        mirs_clear_error(w->ctx);
        halt_from_context(s);
        st = mirs__search_leftover(w, s->ctx, &me->left);
        break;
      }
      atomic_store_explicit(&me->states, w->stats.v[MIRS__STAT_states_explored],
                            memory_order_relaxed);
      atomic_store_explicit(&me->found, w->stats.v[MIRS__STAT_graphs_found],
                            memory_order_relaxed);
      atomic_store_explicit(&me->cands, w->stats.v[MIRS__STAT_candidates_verified],
                            memory_order_relaxed);
      poll_limits(p, me);
      if (self == 0) {
        poll_master(p);
        if (p->hooks.poll && !done && st == MIRS_OK)
          p->hooks.poll(p->hooks.poll_arg, p, w);
      }
      if (done || st != MIRS_OK)
        break;
      if (atomic_load_explicit(&s->halt, memory_order_relaxed)) {
        st = mirs__search_leftover(w, s->ctx, &me->left);
        break;
      }
      /* Someone is idle and our deque is empty: give away work. */
      if (atomic_load_explicit(&p->idle, memory_order_relaxed) > 0 &&
          mirs__deque_size(&me->dq) == 0) {
        mirs__task *x = mirs__search_split(w, s->ctx);
        if (x) {
          /* Relaxed: our running task keeps pending above zero. */
          atomic_fetch_add_explicit(&p->pending, 1, memory_order_relaxed);
          if (mirs__deque_push(&me->dq, x) != MIRS_OK) {
            st = MIRS_FAIL(w->ctx, MIRS_NOMEM, "out of memory (a work deque)");
            mirs__task_free(s->ctx, x);
          }
        }
      }
    }
    if (st != MIRS_OK) {
      fail(p, me, st);
      break;
    }
    if (done) /* Release: publishes the task's effects to the last reader of zero. */
      atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
  }
  if (me->idle) {
    me->idle = false;
    atomic_fetch_sub_explicit(&p->idle, 1, memory_order_relaxed);
  }
}

#ifndef USE_OPENMP
typedef struct start {
  pool *p;
  int self;
} start;

/* A POSIX thread running worker `self`. */
static void *thread_main(void *arg) {
  start *a = arg;
  (void)atomic_load_explicit(&a->p->gen, memory_order_acquire);
  worker_loop(a->p, a->self);
  atomic_fetch_add_explicit(&a->p->done, 1, memory_order_release);
  return NULL;
}
#endif

/* Run one segment: seeds in s->open, until done or stopped. */
static void segment(pool *p) {
  mirs_search *s = p->s;
  int64_t n = 0;
  slot *z = &p->slots[0];
  /* Seeds go to thread 0's deque (pushed here by the thread that will be
   * thread 0), deepest last so the owner starts depth-first; the others
   * steal. */
  while (s->open) {
    mirs__task *t = s->open;
    s->open = t->next;
    t->next = NULL;
    if (mirs__deque_push(&z->dq, t) != MIRS_OK) {
      t->next = s->open;
      s->open = t;
      z->st = MIRS_FAIL(z->w->ctx, MIRS_NOMEM, "out of memory (a work deque)");
      halt(s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
      break;
    }
    n++;
  }
  atomic_store_explicit(&p->pending, n, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  /* Release/acquire around the region: see the file comment. */
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
#ifdef USE_OPENMP
#pragma omp parallel num_threads(p->n)
  {
    (void)atomic_load_explicit(&p->gen, memory_order_acquire);
    int self = omp_get_thread_num();
    if (self < p->n)
      worker_loop(p, self);
    atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
  }
#else
  /* Workers 1..n-1 on threads of their own (one that cannot start just
   * leaves its slot idle: the seeds are in slot 0), worker 0 here. */
  pthread_t *th = mirs__core_calloc(s->ctx, (size_t)p->n, sizeof *th);
  start *args = mirs__core_calloc(s->ctx, (size_t)p->n, sizeof *args);
  bool *up = mirs__core_calloc(s->ctx, (size_t)p->n, sizeof *up);
  for (int i = 1; th && args && up && i < p->n; i++) {
    args[i].p = p;
    args[i].self = i;
    up[i] = pthread_create(&th[i], NULL, thread_main, &args[i]) == 0;
  }
  worker_loop(p, 0);
  for (int i = 1; th && args && up && i < p->n; i++)
    if (up[i])
      pthread_join(th[i], NULL);
  mirs__core_free(s->ctx, th);
  mirs__core_free(s->ctx, args);
  mirs__core_free(s->ctx, up);
  atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
#endif
  (void)atomic_load_explicit(&p->done, memory_order_acquire);
  /* The open work: every stopped task's frames and every queued task. */
  for (int i = 0; i < p->n; i++) {
    slot *sl = &p->slots[i];
    while (sl->left) {
      mirs__task *t = sl->left;
      sl->left = t->next;
      t->next = s->open;
      s->open = t;
    }
    mirs__task *t;
    while ((t = mirs__deque_pop(&sl->dq)) != NULL) {
      t->next = s->open;
      s->open = t;
    }
  }
}

/* Free the pool's workers and deques, summing their counters into s. */
static void pool_free(pool *p) {
  mirs_search *s = p->s;
  for (int i = 0; i < p->n; i++) {
    slot *sl = &p->slots[i];
    if (sl->w) {
      mirs__stats st = {{0}};
      worker_counters(sl->w, &st);
      s->solver_seconds += mirs__prune_worker_counters(sl->w->pw)->solver_seconds;
      mirs__sink_add_stats(s, &st);
      mirs__deque_free(&sl->dq);
      mirs__search_worker_free(sl->w);
    }
  }
  mirs__core_free(s->ctx, p->mem);
}

/* Run s->open on s->threads workers. */
mirs_status mirs__pool_run(mirs_search *s, const mirs__pool_hooks *hooks) {
  mirs_context *ctx = s->ctx;
  pool p;
  memset(&p, 0, sizeof p);
  p.s = s;
  if (hooks)
    p.hooks = *hooks;
  p.n = s->threads < 1 ? 1 : s->threads;
  atomic_init(&p.pending, 0);
  atomic_init(&p.total, s->stats.v[MIRS__STAT_states_explored]);
  int64_t done_states = (int64_t)s->stats.v[MIRS__STAT_states_explored];
  atomic_flag_clear(&p.quota_lock);
  p.left = s->ctx->opt.max_states > done_states ? s->ctx->opt.max_states - done_states : 0;
  p.held = 0;
  atomic_init(&p.idle, 0);
  atomic_init(&p.gen, 0);
  atomic_init(&p.done, 0);
  atomic_init(&p.finished, 0);
  p.mem = mirs__core_calloc(ctx, 1, sizeof(slot) * (size_t)p.n + MIRS__CACHE_LINE);
  if (!p.mem)
    return MIRS_NOMEM;
  p.slots = (slot *)(((uintptr_t)p.mem + MIRS__CACHE_LINE - 1) & ~(uintptr_t)(MIRS__CACHE_LINE - 1));
  p.last_progress = s->t0;
  p.base_states = s->stats.v[MIRS__STAT_states_explored];
  p.base_found = s->stats.v[MIRS__STAT_graphs_found];
  p.base_cands = s->stats.v[MIRS__STAT_candidates_verified];
  mirs_status st = MIRS_OK;
  for (int i = 0; i < p.n && st == MIRS_OK; i++) {
    slot *sl = &p.slots[i];
    atomic_init(&sl->states, 0);
    atomic_init(&sl->found, 0);
    atomic_init(&sl->cands, 0);
    sl->rng = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(i + 1);
    st = mirs__search_worker_new(s, &sl->w);
    if (st == MIRS_OK) {
      if (p.n > 1) {
        sl->w->ctx->log_fn = locked_log;
        sl->w->ctx->log_user = s;
      }
      st = mirs__deque_init(&sl->dq, sl->w->ctx, 8);
      if (st != MIRS_OK) {
        mirs__core_error_copy(ctx, sl->w->ctx);
        mirs__search_worker_free(sl->w);
        sl->w = NULL;
      }
    }
  }
  s->threads_used = p.n;
  while (st == MIRS_OK) {
    segment(&p);
    for (int i = 0; i < p.n && st == MIRS_OK; i++)
      if (p.slots[i].st != MIRS_OK) {
        st = p.slots[i].st;
        mirs__core_error_copy(ctx, p.slots[i].w->ctx);
      }
    int bits = atomic_load(&s->halt);
    if (st != MIRS_OK || !(bits & MIRS__HALT_CHECKPOINT))
      break;
    /* A pause (a periodic checkpoint): the run's hook sees the counters
     * as of now, then the workers go on (unless something else asked to
     * stop meanwhile). */
    mirs__stats saved = s->stats;
    double solver = s->solver_seconds;
    snapshot(&p, &s->stats, &s->solver_seconds);
    s->wall = s->wall_before + mirs__core_now() - s->t0;
    st = p.hooks.pause(s);
    s->stats = saved;
    s->solver_seconds = solver;
    s->ckpt_last = mirs__core_now();
    atomic_fetch_and(&s->halt, ~MIRS__HALT_CHECKPOINT);
    if (atomic_load(&s->halt))
      break;
  }
  pool_free(&p);
  return st;
}

/* ---------------------------------------------------------------- distributed hooks */

/* A task for another rank (thread 0). */
mirs__task *mirs__pool_give(mirs__pool *p, mirs__search_worker *w) {
  for (int i = 0; i < p->n; i++) {
    void *x = mirs__deque_steal(&p->slots[i].dq);
    if (x == MIRS__DEQUE_ABORT)
      x = mirs__deque_steal(&p->slots[i].dq);
    if (x && x != MIRS__DEQUE_ABORT) {
      /* It leaves this process; its effects are the receiver's. */
      atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
      return x;
    }
  }
  return w ? mirs__search_split(w, p->s->ctx) : NULL;
}

/* Queue a received task on thread 0's deque (thread 0). */
mirs_status mirs__pool_take(mirs__pool *p, mirs__task *t) {
  atomic_fetch_add_explicit(&p->pending, 1, memory_order_relaxed);
  mirs_status st = mirs__deque_push(&p->slots[0].dq, t);
  if (st != MIRS_OK)
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_relaxed);
  return st;
}

/* Whether this process has work. */
bool mirs__pool_busy(mirs__pool *p) {
  return atomic_load_explicit(&p->pending, memory_order_acquire) > 0;
}

/* How many tasks this process holds (queued or running). */
int64_t mirs__pool_pending(mirs__pool *p) {
  return atomic_load_explicit(&p->pending, memory_order_acquire);
}

/* Global termination. */
void mirs__pool_finish(mirs__pool *p) {
  atomic_store_explicit(&p->finished, 1, memory_order_release);
}
