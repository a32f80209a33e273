/* SPDX-License-Identifier: MIT */
/* src/search/task.c - tasks: allocation and lists.  A task is plain data
 * (a path and a move range, task.h), so the pool, the distributed layer
 * and checkpoints handle it without the engine. */
#include "config.h"

#include <string.h>

#include "search/task.h"

/* A new task (path[0..len), moves [lo, hi)), allocated without touching
 * ctx's error slot (NULL when memory is short).  path NULL leaves the
 * task's path for the caller to fill. */
mirs__task *mirs__task_new(mirs_context *ctx, const uint32_t *path, int32_t len, uint32_t lo,
                           uint32_t hi) {
  mirs__task *t = mirs__core_alloc_quiet(ctx, sizeof *t + sizeof *path * (size_t)len);
  if (!t)
    return NULL;
  t->next = NULL;
  t->lo = lo;
  t->hi = hi;
  t->len = len;
  if (len && path)
    memcpy(t->path, path, sizeof *path * (size_t)len);
  return t;
}

/* Free a task (NULL is a no-op). */
void mirs__task_free(mirs_context *ctx, mirs__task *t) {
  mirs__core_free(ctx, t);
}

/* Free a list of tasks. */
void mirs__task_free_list(mirs_context *ctx, mirs__task *t) {
  while (t) {
    mirs__task *n = t->next;
    mirs__task_free(ctx, t);
    t = n;
  }
}
