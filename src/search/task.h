/* SPDX-License-Identifier: MIT */
/* src/search/task.h - the task, the unit of work that is stolen, checkpointed
 * and sent between ranks.  See docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_TASK_H
#define MIRS_SEARCH_TASK_H

#include <stdint.h>

#include "core/core.h"

/* A task, the unit of work that is stolen, checkpointed and (later) sent
 * between ranks: the subtrees of moves [lo, hi) of the state at
 * path[0..len).  A search is the task (root, [0, moves of the root)); a
 * task splits into (path, [lo, m)) and (path, [m, hi)), and the deeper
 * frames of a running task into tasks of their own, so any set of tasks
 * that a split produced covers exactly the states of the original.  Plain
 * data (no pointers but the list link): it serialises as its numbers
 * (checkpoint.c). */
typedef struct mirs__task {
  struct mirs__task *next; /* list link (open work, checkpoints) */
  uint32_t lo, hi; /* hi MIRS__TASK_ALL: to the last move of the state */
  int32_t len;
  uint32_t path[];
} mirs__task;
#define MIRS__TASK_ALL UINT32_MAX
/* Tasks: new (quiet allocation in ctx; NULL when short of memory; path
 * NULL leaves the len path entries for the caller to fill), free. */
mirs__task *mirs__task_new(mirs_context *ctx, const uint32_t *path, int32_t len, uint32_t lo,
                           uint32_t hi);
void mirs__task_free(mirs_context *ctx, mirs__task *t);
void mirs__task_free_list(mirs_context *ctx, mirs__task *t);

#endif
