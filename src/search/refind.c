/* SPDX-License-Identifier: MIT */
/* src/search/refind.c - re-finding a result by replaying its path.
 *
 * A result another rank sent without its text (matched on a reduced
 * instance) is rebuilt here when it is needed: a worker of its own, not
 * in the pool, replays the path, and the move that completes the
 * candidate offers it to the sink, which fills in the result
 * (mirs__search_worker.refill).  The sink reaches this file only through
 * the hook mirs_search.refind, so the sink does not depend on the
 * engine (docs/ARCHITECTURE.md, "Call cycles").
 *
 * Invariant: the re-finding worker exists only between a re-find and
 * mirs__refind_release (the end of the run, or the search's free). */
#include "config.h"

#include "search/refind.h"
#include "search/search.h"

mirs_status mirs__refind_result(mirs_search *s, mirs__search_result *r, const uint32_t *path,
                                int32_t len) {
  mirs_context *ctx = s->ctx;
  if (!s->refinder)
    MIRS_CHECK(ctx, mirs__search_worker_new(s, &s->refinder));
  mirs__search_worker *w = s->refinder;
  w->refill = r;
  mirs_status st = mirs__search_restore(w, path, len);
  w->refill = NULL;
  if (st != MIRS_OK) {
    mirs__core_error_copy(ctx, w->ctx);
    if (st == MIRS_STOPPED)
      return st;
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "result %016llx cannot be re-found at its path: %s",
                     (unsigned long long)r->hash, mirs_last_error(w->ctx));
  }
  return MIRS_OK;
}

void mirs__refind_release(mirs_search *s) {
  mirs__search_worker_free(s->refinder);
  s->refinder = NULL;
}
