/* SPDX-License-Identifier: MIT */
/* src/search/trace.h - search-tree traces for the scaling simulator (trace.c). */
#ifndef MIRS_SEARCH_TRACE_H
#define MIRS_SEARCH_TRACE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

/* A record of the search tree a one-worker search explores, for the
 * scaling simulator (bench/glbsim.c): one record per state entered (its
 * move index, its number of moves, the time since the previous record and
 * the time of applying its move) and one per frame left.  Off (s->trace
 * NULL) the search only tests that pointer.  The format is in trace.c. */
typedef struct mirs__trace mirs__trace;
/* Start a trace into path (s->trace set; one worker only). */
mirs_status mirs__trace_start(mirs_search *s, const char *path);
/* Write the footer and close (NULL is a no-op); false on a write error. */
bool mirs__trace_end(mirs_search *s);
/* Nanoseconds of the trace clock. */
uint64_t mirs__trace_now(void);
/* A move refused or pruned at the top frame. */
void mirs__trace_refused(mirs__trace *t);
/* A state entered by move idx; ta: before its move was applied, tb: after,
 * tc: before its frame (its moves) was pushed. */
void mirs__trace_enter(mirs__search_worker *w, uint32_t idx, uint64_t ta, uint64_t tb,
                       uint64_t tc);
/* The top frame is left (its moves are all tried). */
void mirs__trace_pop(mirs__search_worker *w);

#endif
