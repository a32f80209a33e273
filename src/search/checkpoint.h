/* SPDX-License-Identifier: MIT */
/* src/search/checkpoint.h - the checkpoint file (checkpoint.c).  See
 * docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_CHECKPOINT_H
#define MIRS_SEARCH_CHECKPOINT_H

#include "core/core.h"

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

/* Write s's state (results as paths, open work, counters) to path
 * atomically. */
mirs_status mirs__checkpoint_write(mirs_search *s, const char *path);
/* Load a checkpoint written for the same program, options and format
 * into s (before its run): its open work becomes the seeds, its results
 * are re-found.  MIRS_INVALID_ARG naming the file and the mismatch for a
 * damaged, truncated or foreign file. */
mirs_status mirs__checkpoint_read(mirs_search *s, const char *path);
/* Every option a search's results depend on (all but threads, limits,
 * logging, codegen, the cache and partition options), as "name=value\n"
 * lines in table order: malloc'd, NULL when out of memory. */
char *mirs__checkpoint_options_text(const mirs_context *ctx);

#endif
