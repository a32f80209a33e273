/* SPDX-License-Identifier: MIT */
/* src/verify/prune.h - pruning by abstract expressions (prune.c): a new op
 * survives when its expression (absexpr.h) can be a subexpression of some
 * reference output under the axioms of z3check.h.  Decided syntactically
 * where the normal form allows, then by the shared verdict cache, the unit
 * weight and term-count models, and last by Z3; an unknown answer keeps
 * the op.  The shared state is built once per search and read by every
 * worker; each worker has its own arena and Z3 context. */
#ifndef MIRS_VERIFY_PRUNE_H
#define MIRS_VERIFY_PRUNE_H

#include "verify/absexpr.h"

/* Whether the term count or a unit weight model (one or two parameters
 * of cand at 1, K = 1 or 2; see prune.c) puts cand (arena ca) above
 * target (arena ta), which refutes cand ⊑ target. */
bool mirs__prune_weights_refute(const mirs__abs_arena *ca, mirs__abs_id cand,
                                const mirs__abs_arena *ta, mirs__abs_id target);

typedef struct mirs__prune_config {
  bool enabled;        /* false: every check keeps (completeness tests) */
  bool use_solver;     /* false: pairs the syntax cannot decide are kept unasked */
  int cache_log2;      /* the shared verdict cache has 2^cache_log2 slots */
  unsigned timeout_ms; /* per-query Z3 timeout (0: none) */
  unsigned rlimit;     /* per-query Z3 resource limit, deterministic (0: none) */
} mirs__prune_config;

/* Defaults: enabled, solver on, 2^20 slots, 500 ms, rlimit 2,000,000. */
void mirs__prune_config_default(mirs__prune_config *c);

/* Verdicts as stored in the cache (2 bits). */
typedef enum mirs__prune_verdict {
  MIRS__PRUNE_NONE = 0,   /* not known */
  MIRS__PRUNE_YES = 1,    /* proved: candidate ⊑ target */
  MIRS__PRUNE_NO = 2,     /* refuted (a weight model where it fails) */
  MIRS__PRUNE_UNKNOWN = 3 /* not refuted and not proved: keep, do not ask again */
} mirs__prune_verdict;

/* Per-worker counters (summed by the caller into stats). */
typedef struct mirs__prune_counters {
  uint64_t calls; /* mirs__prune_check calls */
  uint64_t kept, pruned;
  uint64_t syntactic; /* (candidate, target) pairs decided by the normal form */
  uint64_t syntactic_yes, syntactic_no;
  uint64_t cache_hits, cache_misses;
  uint64_t weight_refuted; /* undecided pairs refuted by unit weights or term counts (no Z3) */
  uint64_t solver_calls;
  uint64_t solver_unsat;    /* no countermodel in the weight families (kept) */
  uint64_t solver_sat;      /* a countermodel: refuted (pruned) */
  uint64_t solver_unknown;  /* a limit was hit (kept) */
  uint64_t solver_contexts; /* Z3 contexts created (at most 1 per worker) */
  uint64_t too_large;       /* undecided pairs past MIRS__ABS_MAX_QUERY, kept unasked */
  double solver_seconds;
} mirs__prune_counters;

typedef struct mirs__prune_shared mirs__prune_shared;
typedef struct mirs__prune_worker mirs__prune_worker;

/* Build the shared pruning state from the reference program ref: its
 * outputs' normal forms (the targets), their index, and an empty verdict
 * cache.  Read-only afterwards except for the cache, which is thread-safe.
 * cfg NULL: defaults. */
mirs_status mirs__prune_shared_new(mirs_context *ctx, const mirs_graph *ref,
                                   const mirs__prune_config *cfg, mirs__prune_shared **out);
void mirs__prune_shared_free(mirs__prune_shared *s);
/* Number of distinct targets and target i's arena and expression. */
int mirs__prune_num_targets(const mirs__prune_shared *s);
const mirs__abs_arena *mirs__prune_target_arena(const mirs__prune_shared *s);
mirs__abs_id mirs__prune_target(const mirs__prune_shared *s, int i);

/* A worker: its expression arena, its Z3 solver (created at the first
 * query that needs it, then reused), counters.  One per thread. */
mirs_status mirs__prune_worker_new(mirs__prune_shared *s, mirs__prune_worker **out);
/* The same in a worker environment ctx (mirs__core_context_child): the
 * worker's arena, errors and Z3 context live there. */
mirs_status mirs__prune_worker_new_in(mirs__prune_shared *s, mirs_context *ctx,
                                      mirs__prune_worker **out);
void mirs__prune_worker_free(mirs__prune_worker *w);
mirs__abs_arena *mirs__prune_worker_arena(mirs__prune_worker *w);
const mirs__prune_counters *mirs__prune_worker_counters(const mirs__prune_worker *w);
/* Change the worker's per-query solver limits (test hook and tuning). */
void mirs__prune_worker_set_limits(mirs__prune_worker *w, unsigned timeout_ms, unsigned rlimit);

/* Decide whether expression e (in the worker's arena) may be kept: true
 * unless for every target it is refuted syntactically, by a cached
 * refutation or by Z3.  A solver answer of unknown keeps.  On a solver
 * error returns MIRS_SOLVER (message set) with *keep = true. */
mirs_status mirs__prune_check(mirs__prune_worker *w, mirs__abs_id e, bool *keep);

/* The shared verdict cache, exposed for verdict exchange between ranks:
 * the key of a (candidate, target) pair, a lookup and an insertion. */
uint64_t mirs__prune_pair_key(uint64_t cand_hash, uint64_t target_hash);
mirs__prune_verdict mirs__prune_cache_get(const mirs__prune_shared *s, uint64_t key);
void mirs__prune_cache_put(mirs__prune_shared *s, uint64_t key, mirs__prune_verdict v);
/* Verdict exchange: the verdicts Z3 decided in this process, logged as
 * cache words (at most 2^MIRS__PRUNE_LOG_LOG2 of them; later ones are not
 * shared).  Enable before the workers run; read from one thread. */
#define MIRS__PRUNE_LOG_LOG2 18
mirs_status mirs__prune_log_enable(mirs__prune_shared *s);
/* Copy logged words [from, from + k) into out (k <= max, stopping at a
 * word still being written); returns k. */
size_t mirs__prune_log_read(const mirs__prune_shared *s, size_t from, uint64_t *out, size_t max);
/* Put a word another process logged into the cache. */
void mirs__prune_log_put(mirs__prune_shared *s, uint64_t word);

#endif
