/* SPDX-License-Identifier: MIT */
/* src/search/cache.h - the result cache (cache.c): complete searches
 * stored by key, served again after full-shape verification.  See
 * docs/PARTITION.md and docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_CACHE_H
#define MIRS_SEARCH_CACHE_H

#include <stdbool.h>

#include "core/core.h"

typedef struct mirs_search mirs_search;

/* What the last run of a search did with the cache (mirs_search_cache_status). */
enum { MIRS__CACHE_NONE = 0, MIRS__CACHE_HIT = 1, MIRS__CACHE_STORED = 2 };

/* Results an entry keeps: the best this many (what a hit reports). */
#define MIRS__CACHE_RESULTS 16

/* Whether s consults the cache: the option cache_dir is set, s is not
 * resumed and runs in one process. */
bool mirs__cache_wanted(const mirs_search *s);
/* Look s's key up.  On a hit (*hit): the entry's results are in the sink,
 * verified at full shape and ranked (mirs__sink_finish ran) and
 * s->complete says whether that verification finished.  A missing entry
 * is a miss; a damaged or foreign one is a miss with a warning.  Errors
 * only for resources (memory) and for verification failing. */
mirs_status mirs__cache_serve(mirs_search *s, bool *hit);
/* Store the ranked results of s, a complete search (the best
 * MIRS__CACHE_RESULTS).  A write that fails is a warning, never an error:
 * the search's results stand without the cache. */
void mirs__cache_store(mirs_search *s);

#endif
