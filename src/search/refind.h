/* SPDX-License-Identifier: MIT */
/* src/search/refind.h - re-finding a result by replaying its path
 * (refind.c), the sink's callback: the sink never calls the engine.  See
 * docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_REFIND_H
#define MIRS_SEARCH_REFIND_H

#include <stdint.h>

#include "core/core.h"

typedef struct mirs_search mirs_search;
typedef struct mirs__search_result mirs__search_result;

/* The sink's refind hook (mirs_search.refind, installed by
 * mirs_search_create): replay path[0..len) with the search's re-finding
 * worker (created at first use), which offers the candidate there to the
 * sink with r as the result to fill in.  MIRS_STOPPED on a stop request;
 * MIRS_INTERNAL (the error in s's context) when the replay fails. */
mirs_status mirs__refind_result(mirs_search *s, mirs__search_result *r, const uint32_t *path,
                                int32_t len);
/* Free the re-finding worker (NULL: a no-op). */
void mirs__refind_release(mirs_search *s);

#endif
