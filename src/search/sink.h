/* SPDX-License-Identifier: MIT */
/* src/search/sink.h - the result sink (sink.c): results deduplicated by hash,
 * verified and ranked.  See docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_SINK_H
#define MIRS_SEARCH_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

/* Results verified at full shape at once on the GPU backend (each its own
 * store and stream): mha's default verify_full_max of 16 in one batch. */
#define MIRS__FULL_BATCH 16

/* One hash the sink has seen (sink.c). */
typedef struct mirs__sink_entry {
  uint64_t hash;
  int32_t res;  /* index in res (until the results are ranked); -1: rejected */
  int32_t plen; /* the smallest path it was found at: paths[poff..poff+plen) */
  uint32_t counted; /* bit i: the first offer raised counter MIRS__SINK_COUNTED[i] */
  size_t poff;
} mirs__sink_entry;

/* The counters a hash's first offer may raise besides graphs_found (a
 * merge of two sinks that both saw the hash takes them back once). */
#define MIRS__SINK_NCOUNTED 6
extern const int mirs__sink_counted[MIRS__SINK_NCOUNTED];

/* One result. */
typedef struct mirs__search_result {
  mirs_graph *g;
  uint64_t hash;
  double cost;
  int32_t kernels;
  bool reduced;  /* matched on a reduced instance: verified at full shape at the end */
  bool verified; /* ... and already verified there (the cheapest when found) */
  bool float_checked; /* checked in float64 when found */
  bool split_k; /* made by the split-K rewrite of another result (splitk.c), not found */
  /* A split-K source a cache entry kept (splitk_src), not a result: the
   * full-shape verification drops it unverified after the split-K
   * pre-selection has seen it. */
  bool source_only;
  bool dropped;    /* (the final full-shape verification: dropped, freed when it ends) */
  double found_at; /* seconds from the start of the search */
  /* A result another rank found, taken as sent (dist.c): its canonical
   * text, read into g only when the graph is needed (verified, checked,
   * reported: mirs__sink_graph), so rank 0 does not parse the thousands
   * that are never reported; NULL once read, and for results found here.
   * A result matched on a reduced instance comes without its text (only
   * the best verify_full_max are ever reported): g and text both NULL,
   * and mirs__sink_graph re-finds it at its path when it is needed. */
  char *text;
  size_t tlen;
} mirs__search_result;

/* The sink's state: one entry per hash offered, the results, the
 * entries' paths.  Only sink.c reads these arrays; other files go through
 * the functions below. */
typedef struct mirs__sink {
  mirs__sink_entry *ent;
  size_t nent, capent;
  uint32_t *idx; /* open addressing: entry + 1 (0 = empty) */
  size_t idxcap;
  uint32_t *paths; /* the entries' paths */
  size_t npaths, cappaths;
  mirs__search_result *res;
  size_t nres, capres;
} mirs__sink;

/* One entry as other files see it (mirs__sink_entry_view). */
typedef struct mirs__sink_view {
  uint64_t hash;
  const uint32_t *path; /* the smallest path it was found at */
  int32_t plen;
  uint32_t counted;  /* bits: the counters its first offer raised */
  bool accepted;     /* a result (else rejected) */
  /* The result (NULL for a rejected hash, and where the final ranking
   * moved it). */
  const mirs__search_result *res;
} mirs__sink_view;

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

/* Offer candidate g (its outputs named, canonical hash h), found by w at
 * its current path (called from within the move that entered it).
 * Thread-safe. */
mirs_status mirs__sink_offer(mirs__search_worker *w, const mirs_graph *g, uint64_t h);
/* Whether hash h was accepted (1), rejected by the stronger check (0) or
 * never offered (-1). */
int mirs__sink_find(const mirs_search *s, uint64_t h);
void mirs__sink_lock(mirs_search *s);
void mirs__sink_unlock(mirs_search *s);
/* Drop the result of hash h, if accepted (a resumed checkpoint recorded
 * it as rejected by a check made when it was found).  Workers stopped. */
void mirs__sink_reject(mirs_search *s, uint64_t h);
/* Read result r's graph from the text it was sent as, if not yet (its
 * hash checked); all results' (before they are reported); free a result's
 * graph or text.  Workers stopped. */
mirs_status mirs__sink_graph(mirs_search *s, mirs__search_result *r);
mirs_status mirs__sink_graphs(mirs_search *s);
void mirs__sink_result_free(mirs_search *s, mirs__search_result *r);
/* Take another rank's result as sent (dist.c); r NULL: rejected there,
 * else r->text (owned by the sink from then on) or r->g. */
mirs_status mirs__sink_adopt(mirs_search *s, uint64_t h, const uint32_t *path, int32_t len,
                             uint32_t counted, mirs__search_result *r);
/* A checkpointed result's flags (checkpoint.c's format). */
enum { MIRS__CKPT_ACCEPTED = 1, MIRS__CKPT_VERIFIED = 2, MIRS__CKPT_FLOAT_CHECKED = 4 };
/* After the result of hash h was re-found at its recorded path (the
 * caller replayed it): check that the sink then holds it as flags'
 * ACCEPTED says (a verdict made at full shape when it was found stands);
 * the VERIFIED and FLOAT_CHECKED verdicts are kept.  `from` names the
 * source in messages (a checkpoint file).  MIRS_INVALID_ARG when it is
 * not found again. */
mirs_status mirs__sink_restored(mirs_search *s, const char *from, uint64_t h, unsigned flags);
/* Add counters to the search's and its context's (workers stopped). */
void mirs__sink_add_stats(mirs_search *s, const mirs__stats *st);
/* Rank the results and float64-check the best (workers stopped). */
mirs_status mirs__sink_finish(mirs_search *s);
/* Choose the full-shape verification backend (the option verify) once. */
mirs_status mirs__sink_full_backend(mirs_search *s);

/* Entries (hashes offered), entry i's view. */
size_t mirs__sink_nentries(const mirs_search *s);
void mirs__sink_entry_view(const mirs_search *s, size_t i, mirs__sink_view *v);
/* Results (ranked after mirs__sink_finish), result i. */
size_t mirs__sink_nresults(const mirs_search *s);
const mirs__search_result *mirs__sink_result(const mirs_search *s, size_t i);
/* Release the sink's state (the search's destroy). */
void mirs__sink_free(mirs_search *s);

#endif
