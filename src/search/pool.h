/* SPDX-License-Identifier: MIT */
/* src/search/pool.h - the thread pool (pool.c): workers, Chase-Lev deques,
 * stealing.  See docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_POOL_H
#define MIRS_SEARCH_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "search/task.h"

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

/* The pool as the distributed layer sees it (thread 0 only, from the
 * poll hook). */
typedef struct mirs__pool mirs__pool;

/* What the run installs in the pool (all optional; zero: none).  The pool
 * calls no other module of the run: the distributed layer and periodic
 * checkpoints reach it through these. */
typedef struct mirs__pool_hooks {
  /* Thread 0's poll (busy: w is the worker with a running task; idle: w
   * NULL).  Set: a distributed run (workers leave only at global
   * termination, mirs__pool_finish). */
  void (*poll)(void *arg, mirs__pool *p, mirs__search_worker *w);
  void *poll_arg;
  /* Called every pause_every seconds with the workers stopped and the
   * counters as of then in s (a periodic checkpoint); an error ends the
   * run. */
  mirs_status (*pause)(mirs_search *s);
  double pause_every;
} mirs__pool_hooks;

/* Run the tasks in s->open on s->threads workers until they are done or
 * s->stop is set; afterwards s->open holds the unexplored work (empty when
 * the run completed) and the workers' counters are summed into s. */
mirs_status mirs__pool_run(mirs_search *s, const mirs__pool_hooks *hooks);
/* One task to hand to another rank: the oldest queued task of any worker
 * (it leaves the pool's count), else the shallowest unexplored range split
 * off w's running task (w NULL: none); NULL when there is nothing. */
mirs__task *mirs__pool_give(mirs__pool *p, mirs__search_worker *w);
/* Queue a task received from another rank on thread 0's deque. */
mirs_status mirs__pool_take(mirs__pool *p, mirs__task *t);
/* Whether any task of this process is queued or running. */
bool mirs__pool_busy(mirs__pool *p);
/* How many tasks of this process are queued or running. */
int64_t mirs__pool_pending(mirs__pool *p);
/* Global termination: every worker leaves when its deque is empty. */
void mirs__pool_finish(mirs__pool *p);

#endif
