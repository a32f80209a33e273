/* SPDX-License-Identifier: MIT */
/* src/search/dist.h - the distributed layer (dist.c, --mpi).  See
 * docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_DIST_H
#define MIRS_SEARCH_DIST_H

#include <stdbool.h>

#include "core/core.h"
#include "search/pool.h"

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

/* The distributed layer (--mpi; the only file that includes mpi.h).  The
 * run installs its poll as the pool's hook only when s->dist is set, so
 * a single process runs exactly as without it. */
typedef struct mirs__dist mirs__dist;
/* Thread 0's poll (busy: w is the worker with a running task; idle: w
 * NULL): serve steal requests and lifelines, steal when idle, exchange
 * verdicts, detect termination (then mirs__pool_finish) and global stops. */
void mirs__dist_poll(mirs__dist *d, mirs__pool *p, mirs__search_worker *w);
/* After the pool has stopped (st its status): keep serving the protocol
 * until global termination, then gather every rank's results, open work
 * and counters on rank 0.  On other ranks s->open is emptied (the work
 * went to rank 0). */
mirs_status mirs__dist_finish(mirs_search *s, mirs_status st);
/* Whether this process is rank 0 (true without a distributed layer). */
bool mirs__dist_root(const mirs_search *s);
void mirs__dist_free(mirs__dist *d);
/* Ranks of the search (1 without a distributed layer). */
int mirs__dist_ranks(const mirs_search *s);
/* Rank 0 after a distributed run: append `,\n  "mpi": [...]`, one
 * object of counters per rank, to b (nothing otherwise). */
void mirs__dist_report(const mirs_search *s, mirs__buf *b);

#endif
