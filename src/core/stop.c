/* src/core/stop.c - stop requests: mirs_interrupt (a user or a signal
 * handler), the time and memory limits of a search (a watchdog thread),
 * and hooks that interrupt work the library does not poll itself (Z3).
 *
 * Invariants: ctx->stop is one atomic int (MIRS__STOP_* bits), so polling
 * it is one relaxed load and setting it is async-signal-safe; long loops
 * anywhere in the library poll it (mirs__core_stopping) at least every few
 * milliseconds of work.  The watchdog only runs between
 * mirs__core_watch_start and mirs__core_watch_stop (one at a time per
 * context); it sets the limit bits and calls every hook once per trip.
 * Hooks are added and removed under a spin lock the watchdog holds while
 * calling them, so a hook's argument stays valid during the call. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"

struct mirs__watch {
  pthread_t thread;
  atomic_bool run;
  double deadline;  /* absolute mirs__core_now() time; 0 = none */
  size_t mem_limit; /* bytes; 0 = none */
};

/* Ask the running operation to stop (async-signal-safe). */
void mirs_interrupt(mirs_context *ctx) {
  if (ctx)
    atomic_fetch_or_explicit(&ctx->stop, MIRS__STOP_USER, memory_order_relaxed);
}

/* Withdraw a stop request made with mirs_interrupt. */
void mirs_interrupt_clear(mirs_context *ctx) {
  if (ctx)
    atomic_fetch_and_explicit(&ctx->stop, ~MIRS__STOP_USER, memory_order_relaxed);
}

/* Whether a stop was requested on ctx. */
int mirs_interrupted(const mirs_context *ctx) {
  return ctx && (atomic_load_explicit(&ctx->stop, memory_order_relaxed) & MIRS__STOP_USER) != 0;
}

/* The status of a stop noticed while doing `where`: MIRS_STOPPED with
 * the reason (interrupted, time limit, memory limit). */
mirs_status mirs__core_stopped(mirs_context *ctx, const char *where) {
  const mirs_context *root = ctx->parent ? ctx->parent : ctx;
  int bits = atomic_load_explicit(&root->stop, memory_order_relaxed);
  const char *why = bits & MIRS__STOP_USER   ? "interrupted"
                    : bits & MIRS__STOP_TIME ? "time limit reached"
                    : bits & MIRS__STOP_MEM  ? "memory limit reached"
                                             : "stopped";
  return MIRS_FAIL(ctx, MIRS_STOPPED, "%s: %s", where, why);
}

/* Take and release the hook lock (a spin lock: held only to copy or edit
 * the short hook table, or while calling hooks, which return at once). */
static void hook_lock(mirs_context *ctx) {
  int expected = 0;
  while (!atomic_compare_exchange_weak_explicit(&ctx->hook_lock, &expected, 1,
                                                memory_order_acquire, memory_order_relaxed))
    expected = 0;
}
static void hook_unlock(mirs_context *ctx) {
  atomic_store_explicit(&ctx->hook_lock, 0, memory_order_release);
}

/* Register fn(arg), called by the watchdog when a stop trips. */
mirs_status mirs__core_hook_add(mirs_context *ctx, void (*fn)(void *), void *arg) {
  mirs_context *err = ctx;
  while (ctx->parent) /* hooks live on the user's context, which the watchdog watches */
    ctx = ctx->parent;
  mirs_status s = MIRS_OK;
  hook_lock(ctx);
  if (ctx->nhooks < MIRS__MAX_HOOKS) {
    ctx->hooks[ctx->nhooks].fn = fn;
    ctx->hooks[ctx->nhooks].arg = arg;
    ctx->nhooks++;
  } else {
    s = MIRS_LIMIT;
  }
  hook_unlock(ctx);
  if (s != MIRS_OK)
    return MIRS_FAIL(err, s, "more than %d stop hooks on one context", MIRS__MAX_HOOKS);
  return MIRS_OK;
}

/* Remove the hook fn(arg) (no-op when absent). */
void mirs__core_hook_remove(mirs_context *ctx, void (*fn)(void *), void *arg) {
  while (ctx->parent)
    ctx = ctx->parent;
  hook_lock(ctx);
  for (int i = 0; i < ctx->nhooks; i++)
    if (ctx->hooks[i].fn == fn && ctx->hooks[i].arg == arg) {
      ctx->hooks[i] = ctx->hooks[--ctx->nhooks];
      break;
    }
  hook_unlock(ctx);
}

/* Call every hook (the stop just tripped). */
static void run_hooks(mirs_context *ctx) {
  hook_lock(ctx);
  for (int i = 0; i < ctx->nhooks; i++)
    ctx->hooks[i].fn(ctx->hooks[i].arg);
  hook_unlock(ctx);
}

#define WATCH_PERIOD_NS 20000000L /* 20 ms */

/* The watchdog: every period, check the limits; on a trip set the bits
 * and call the hooks once. */
static void *watch_main(void *arg) {
  mirs_context *ctx = arg;
  struct mirs__watch *w = ctx->watch;
  bool tripped = false;
  while (atomic_load_explicit(&w->run, memory_order_acquire)) {
    int bits = 0;
    if (w->deadline > 0 && mirs__core_now() >= w->deadline)
      bits |= MIRS__STOP_TIME;
    if (w->mem_limit > 0 && mirs_memory_current(ctx) > w->mem_limit)
      bits |= MIRS__STOP_MEM;
    if (bits)
      atomic_fetch_or_explicit(&ctx->stop, bits, memory_order_relaxed);
    if (!tripped && atomic_load_explicit(&ctx->stop, memory_order_relaxed)) {
      tripped = true;
      run_hooks(ctx);
    }
    struct timespec ts = {0, WATCH_PERIOD_NS};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
      ;
  }
  return NULL;
}

/* Start the watchdog for an operation with an absolute deadline and a
 * memory limit (0: none). */
mirs_status mirs__core_watch_start(mirs_context *ctx, double deadline, size_t mem_limit) {
  if (ctx->watch)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "a watched operation is already running on this context");
  struct mirs__watch *w = calloc(1, sizeof *w);
  if (!w)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (watchdog)");
  w->deadline = deadline;
  w->mem_limit = mem_limit;
  atomic_init(&w->run, true);
  ctx->watch = w;
  if (pthread_create(&w->thread, NULL, watch_main, ctx) != 0) {
    ctx->watch = NULL;
    free(w);
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "cannot start the watchdog thread");
  }
  return MIRS_OK;
}

/* Stop the watchdog and withdraw the limit bits it set (a user interrupt
 * stays). */
void mirs__core_watch_stop(mirs_context *ctx) {
  struct mirs__watch *w = ctx->watch;
  if (!w)
    return;
  atomic_store_explicit(&w->run, false, memory_order_release);
  pthread_join(w->thread, NULL);
  ctx->watch = NULL;
  free(w);
  atomic_fetch_and_explicit(&ctx->stop, MIRS__STOP_USER, memory_order_relaxed);
}
