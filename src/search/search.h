/* SPDX-License-Identifier: MIT */
/* src/search/search.h - the engine's own interface: the worker (a DFS
 * state), the search handle, and the depth-first engine (search.c).  Each
 * other module of src/search has its own header (space.h, index.h,
 * reduce.h, task.h, trace.h, sink.h, refind.h, pool.h, dist.h,
 * checkpoint.h), included here for the files that see the whole search;
 * docs/ARCHITECTURE.md says which module may call which.
 *
 * A search *state* is a partial µGraph held by one worker and mutated in
 * place.  A *move* adds one thing (docs/SEARCH.md "Moves, verification and ranking"):
 *   KOP    a predefined kernel op on chosen kernel tensors;
 *   OPEN   a custom kernel's block graph with a chosen grid, block and
 *          forloop range (its input tiles come with the block ops below);
 *   BOP    a block op (compute or accumulator) on chosen block tensors,
 *          where an operand may be a *new input tile* (kernel tensor, imap,
 *          fmap) loaded by the same move just before the op: each tile is
 *          thus loaded right before its first consumer, so the custom op's
 *          inputs are any subset of the existing kernel tensors and the
 *          maps are chosen where the tiles must line up with each other;
 *   CLOSE  the block graph's outputs (every unconsumed post-loop tensor,
 *          each with an omap) and a choice of thread-level `fused` flags;
 *          a copy of the block graph becomes a custom kernel op.
 * The moves of a state are a deterministic list (space.c generates them
 * from the state alone), so a state is identified by its *path*, the
 * sequence of move indices from the root, and replaying a path rebuilds
 * the same state.
 *
 * Invariants: everything a worker mutates lives in its mirs__search_worker
 * (no globals); the DFS is an explicit stack of frames (moves of the state,
 * next move index, how to undo the move that entered it), never C
 * recursion, so frames can be stolen and checkpointed; the move arena and
 * the frame stack only grow (amortised doubling), so the inner loop does
 * not allocate except where the graph IR allocates names. */
#ifndef MIRS_SEARCH_SEARCH_H
#define MIRS_SEARCH_SEARCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "codegen/cost.h"
#include "core/core.h"
#include "graph/graph.h"
#include "mirsearch/codegen.h"
#include "mirsearch/search.h"
#include "verify/prune.h"
#include "verify/fingerprint.h"
#include "search/checkpoint.h"
#include "search/dist.h"
#include "search/index.h"
#include "search/pool.h"
#include "search/reduce.h"
#include "search/sink.h"
#include "search/space.h"
#include "search/task.h"
#include "search/trace.h"


/* One DFS frame: the state's moves and how the state was entered. */
typedef struct mirs__search_frame {
  size_t moff;           /* first move in the worker's move arena */
  uint32_t nmoves, next; /* next: the next move index to try */
  uint32_t end;          /* moves [next, end) are this worker's to try; the
                          * rest belong to other tasks (split off) */
  mirs__search_move in;  /* the move that entered this state (not the root) */
  mirs__abs_mark mark;   /* abstract-expression arena before that move */
} mirs__search_frame;

typedef struct mirs__search_worker mirs__search_worker;

/* The program and its fingerprints under one reduction (reduce.c). */
typedef struct mirs__search_ref {
  uint64_t hash;        /* the reduction's (0: full shape) */
  mirs_graph *prog;     /* the reduced program */
  mirs__fp_store *ref;  /* its fingerprints */
  uint64_t *digest;     /* per program output */
} mirs__search_ref;

/* References a worker keeps (round robin past this). */
#define MIRS__SEARCH_NREFS 16

/* Everything one worker mutates (its DFS state; owner only: the pool's
 * thief-visible part is in pool.c). */
struct mirs__search_worker {
  mirs_search *s;
  mirs_context *ctx; /* the worker's environment (mirs__core_context_child) */
  int32_t base;      /* frames[base] is the current task's state */
  bool replaying;    /* replay: no counters, no candidates */
  bool restoring;    /* re-finding a checkpoint's result (sink: no early checks) */
  struct mirs__search_result *refill; /* re-finding this result's graph (sink) */
  uint32_t *pathbuf; /* scratch: a path */
  size_t cappath;
  mirs_graph *g;      /* the state's kernel graph */
  mirs__bgraph **bgs; /* working block graphs, one per opened custom kernel */
  int nbg;            /* opened custom kernels (closed or open) */
  size_t capbgs;
  bool open;      /* bgs[nbg - 1] is being built */
  uint32_t final; /* bit i: custom kernel i was opened as the candidate's last op */
  int16_t *kuses; /* consumers per kernel tensor */
  int8_t *klab;   /* index labels per kernel tensor (MIRS_MAX_DIMS each) */
  uint64_t *katoms; /* program inputs each kernel tensor depends on */
  uint64_t *kdeg;   /* index multiplicities per kernel tensor (MIRS_MAX_DIMS each) */
  int8_t *kmatch; /* program output matched by a kernel tensor, or -1 */
  size_t capk;
  int32_t *nmatch;         /* tensors matching each program output */
  mirs__search_btinfo *bt; /* per block tensor of the open block graph */
  size_t capbt;
  /* Serial numbers, never reused by a worker: per block tensor of the
   * open block graph (given when the tensor is made) and per block graph
   * (when it is opened).  They name a tensor's or a block's content in
   * the keys of the chain memo (space.c). */
  uint64_t serial;
  uint64_t *tser, *bgser;
  size_t captser, capbgser;
  struct mirs__search_cmemo *cmemo; /* the chain memo (space.c), allocated on first use */
  mirs__search_frame *frames;
  int32_t depth;
  size_t capframes;
  mirs__search_move *moves; /* move arena */
  size_t nmoves, capmoves;
  mirs__search_load *loads; /* scratch: tile candidates of a block state */
  size_t caploads;
  mirs__shape *opsh;          /* scratch: shape per operand (block tensors, then loads) */
  mirs__search_btinfo *opinf; /* scratch: tile analysis per operand */
  size_t capopsh, capopinf;
  /* Scratch: operand classes (equal shape and phase) of a block state, so
   * binary ops pair only classes whose shapes may fit: class per operand,
   * operands grouped by class (ascending within one; class c's are
   * clsmem[clsoff[c]..clsoff[c+1])), a representative per class and, per
   * class pair, bit 0 binary ops and bit 1 matmul may take them. */
  int32_t *opcls, *clsmem, *clsoff, *clsrep;
  uint8_t *clsfit;
  int32_t ncls;
  size_t capopcls, capclsmem, capclsoff, capclsrep, capclsfit;
  /* Scratch: the first operands worth trying (gen_bops), one list per
   * (arity, accumulator or not), nops entries each. */
  int32_t *firsts;
  size_t capfirsts;
  /* Shapes interned across states (operand classes): the shapes, an
   * open-addressing table of id + 1, per id the local class of the state
   * being listed (-1 between states, one per phase), and a memo of which
   * id pairs binary ops (bit 0) and matmul (bit 1) may take (bit 7:
   * known), stride shfitn. */
  mirs__shape *shp;
  int32_t *shtab, *shloc;
  uint8_t *shfit;
  size_t nshp, capshp, capshtab, capshloc, shfitn;
  int32_t opcount[MIRS_OP_COUNT]; /* ops per budget class in the state */
  /* Fingerprints are computed on fg: g itself, or rg, g's reduced
   * instance under the reduction of hash fphash (reduce.c); fp holds fg's
   * tensors of its first fpops ops, cur the program under the same
   * reduction. */
  mirs__fp_store *fp;
  mirs_graph *rg, *fg;
  uint64_t fphash;
  int32_t fpops;
  mirs__search_ref refs[MIRS__SEARCH_NREFS];
  int nrefs, refnext;
  const mirs__search_ref *cur;
  mirs__prune_worker *pw;
  mirs__abs_id *kexpr, *bexpr;
  size_t capkexpr, capbexpr;
  /* Pruning verdicts of block ops, by (op, extent, operand expression
   * hashes): a direct-mapped table of key | keep bit (0 = empty; a newer
   * key replaces an older one).  A verdict is a function of its key, so
   * what the table holds changes the speed, never the moves listed. */
  uint64_t *pmemo;
  mirs__stats stats;
};

struct mirs_search {
  mirs_context *ctx;
  mirs__search_worker *refinder; /* re-finds results sent without text (refind.c) */
  /* The sink's hook that re-finds a result at its path (refind.c). */
  mirs_status (*refind)(mirs_search *s, mirs__search_result *r, const uint32_t *path,
                        int32_t len);
  int ranks; /* ranks of the run (1: one process; set once by dist.c) */
  mirs_graph *program; /* a private copy */
  mirs__search_space space;
  int8_t *plab;         /* index labels of the program's tensors (MIRS_MAX_DIMS each) */
  /* Node bound (absexpr.h "Symbol counts"): sym_need[mask] counts the
   * distinct symbol nodes, by kind, of the program outputs in mask; NULL
   * when pruning is off, an output expression is boxed, or the program
   * has more than 8 outputs. */
  uint32_t (*sym_need)[MIRS__ABS_NSYM];
  mirs__fp_store *full_ref;  /* the program's at full shape (final verification, lazily) */
  /* Candidates' at full shape (inputs kept between them): a batch of
   * MIRS__FULL_BATCH in flight on the GPU backend, slot 0 alone on the CPU. */
  mirs__fp_store *full_cand[MIRS__FULL_BATCH];
  const mirs__fp_backend *full_backend; /* of the option verify, chosen at first use */
  char full_backend_name[384];          /* report.json "verify_backend" ("" until chosen) */
  double full_seconds;                  /* the final full-shape verification's wall time */
  int64_t splitk_variants;              /* results the split-K rewrite added (option split_k) */
  /* The split-K sources chosen from all results by the predicted time of
   * their best variant (sink.c splitk_preselect), copies kept past the
   * full-shape verification (and stored in a cache entry); how many
   * variants that priced, and in what wall time. */
  mirs__search_result *splitk_src;
  size_t splitk_nsrc;
  int64_t splitk_priced;
  double splitk_pre_seconds;
  /* Full-shape verifications since the final phase began (sink.c
   * mirs__sink_finish), and a test hook (builds with fault injection,
   * MIRS_TEST_FINAL_VERIFICATIONS=N; -1 none): the time limit counts as
   * passed once that many are done, a deterministic stand-in for a
   * limit reached during the final phase. */
  int64_t final_verifs;
  int64_t final_verifs_max;
  /* Test hook (builds with fault injection, MIRS_TEST_SPLITK_FAIL=N; 0
   * none): the Nth split-K variant tried (sink.c splitk_try) fails with
   * an error of its own (not a verdict), as a variant that cannot be
   * built, verified or priced does; the variants tried so far. */
  int64_t splitk_fail_at;
  int64_t splitk_tries;
  double best_full;          /* cost of the cheapest result verified at full shape when found */
  bool have_best_full;
  double early_seconds;       /* wall seconds spent verifying new bests when found */
  mirs_eval_result *ref_eval; /* the program in float64 (float check, lazily) */
  bool ref_eval_limit;        /* ... too large for the interpreter */
  uint64_t cand_eval_limit;   /* results too large for it: not float64-checked */
  int trials;
  int64_t reduce_tile;  /* fp_reduce_tile when the program is reduced, else 0 */
  int32_t reduce_parts; /* fp_reduce_parts */
  uint64_t degree; /* the program's fingerprint degree */
  mirs__prune_shared *prune;
  double solver_seconds; /* Z3 time of finished workers */
  mirs__cost_profiles *profiles;
  const mirs__cost_device *device;
  mirs_search_progress_fn progress;
  mirs_search_result_fn on_result;
  mirs_search_stop_fn should_stop;
  void *user;
  /* The result sink (sink.c), under `lock`: one entry per hash offered. */
  pthread_mutex_t lock;
  pthread_mutex_t log_lock; /* workers' log messages, one at a time */
  mirs__sink sink; /* its state (sink.c alone reads it) */
  mirs__stats stats; /* summed from the workers (and a resumed checkpoint) */
  double t0, wall;
  bool running; /* inside mirs_search_run (re-entry from a callback is refused) */
  char setup_stopped[256]; /* why the setup stopped ("": it did not) */
  double wall_before;   /* wall seconds of the runs a resumed checkpoint records */
  /* Parallel run (pool.c, api.c). */
  int threads;          /* workers of the next run (option threads, resolved) */
  int threads_used;     /* workers of the last run */
  _Atomic int halt;     /* MIRS__HALT_* bits; set from any thread or a signal handler */
  _Atomic int halt_why; /* mirs_stop: the first reason a run halted (MIRS_STOP_NONE: none) */
  int why;              /* mirs_stop: why the last run is incomplete (MIRS_STOP_NONE: it is not) */
  mirs__task *open;     /* unexplored work: seeds of the next run, open work after a stop */
  char *ckpt_path;      /* periodic checkpoints (mirs_search_set_checkpoint) */
  double ckpt_last;
  bool complete, ran, resumed;
  int cache_state; /* MIRS__CACHE_* of the last run (cache.c) */
  /* Distributed run (dist.c, --mpi): NULL in a single process. */
  struct mirs__dist *dist;
  /* Search-tree trace (trace.c, bench/glbtrace.c): NULL when off. */
  struct mirs__trace *trace;
  /* Measured ranking of the last mirs_search_measure (measure.c): NULL
   * when none was asked for since the last run. */
  struct mirs__measured *measured;
};

/* What mirs_search_measure found (measure.c; report.c prints it). */
typedef struct mirs__measured {
  int n;                 /* the model's first n results were timed (0: none) */
  int best;              /* index of the fastest checked one (-1: none) */
  double rho;            /* Spearman's rank correlation (NAN under 2 timed) */
  int reps;              /* timed runs per result */
  char device[128];      /* the GPU */
  char skipped[512];     /* why nothing was timed ("": it was) */
  mirs_rank_entry *rows; /* n of them */
  struct mirs__bench_failure *fails; /* n of them: why one was not timed (a failed
                                      * harness, or cut by the time limit) */
} mirs__measured;

void mirs__measured_free(mirs_search *s);

/* Why workers stop (bits of mirs_search.halt; the context's own stop
 * requests, mirs_interrupt and the watchdog's limits, are core.h's
 * MIRS__STOP_* bits, which the pool turns into these). */
enum {
  MIRS__HALT_USER = 1,       /* mirs_search_stop, should_stop or mirs_interrupt */
  MIRS__HALT_LIMIT = 2,      /* max_states, time_limit, max_memory */
  MIRS__HALT_ERROR = 4,      /* a worker failed */
  MIRS__HALT_CHECKPOINT = 8  /* a periodic checkpoint is due (the run goes on) */
};

/* Whether w's newest custom kernel (open or closed) was opened as the
 * candidate's last op.  Where one need not be last, each open move comes
 * in two variants: final (the last-kernel bounds hold, nothing follows its
 * close) and not final (another op follows; its grids have at most
 * mid_grid_dims dims > 1), so every candidate is reached once. */
static inline bool mirs__search_kernel_final(const mirs__search_worker *w) {
  return w->nbg > 0 && ((w->final >> (w->nbg - 1)) & 1u);
}

/* ---------------------------------------------------------------- report.c */

/* A JSON string literal for s (escaped); a JSON number, null when not
 * finite.  Shared by the search's and the partition's reports. */
void mirs__json_str(mirs__buf *b, const char *s);
void mirs__json_num(mirs__buf *b, double v);

/* ---------------------------------------------------------------- search.c */

/* A worker positioned at the root state. */
mirs_status mirs__search_worker_new(mirs_search *s, mirs__search_worker **out);
void mirs__search_worker_free(mirs__search_worker *w);
/* Rebuild the state of path[0..len) from the root (frames included, each
 * with next = its path index + 1).  MIRS_INVALID_ARG when an index is out
 * of range or its move is refused. */
mirs_status mirs__search_replay(mirs__search_worker *w, const uint32_t *path, int32_t len);
/* Copy the current path (at most cap entries) into path; returns its length. */
int32_t mirs__search_path(const mirs__search_worker *w, uint32_t *path, int32_t cap);
/* Canonical hash of the worker's current partial graph (tests). */
uint64_t mirs__search_state_hash(const mirs__search_worker *w);
/* Position w at task t (replay its path; its last frame open on [lo, hi)).
 * MIRS_INVALID_ARG when the path or range does not fit the space. */
mirs_status mirs__search_task_start(mirs__search_worker *w, const mirs__task *t);
/* Run w's current task for at most budget steps (a step enters or leaves
 * one state), entering at most `states` states; *done when it has no work
 * left.  MIRS_STOPPED (the error set in w's context) when a stop request
 * or limit interrupted a move: the move stays open work. */
mirs_status mirs__search_task_steps(mirs__search_worker *w, uint32_t budget, uint64_t states,
                                    bool *done);
/* Split off the shallowest unexplored range of w's task as a new task
 * (allocated in tctx, quietly); NULL when there is none or memory is short. */
mirs__task *mirs__search_split(mirs__search_worker *w, mirs_context *tctx);
/* Move the unexplored part of w's task (every frame's [next, end)) into
 * tasks pushed onto *list (allocated in tctx). */
mirs_status mirs__search_leftover(mirs__search_worker *w, mirs_context *tctx, mirs__task **list);
/* Re-find the candidate at path[0..len) (a result a checkpoint recorded)
 * and offer it to the sink, counters unchanged. */
mirs_status mirs__search_restore(mirs__search_worker *w, const uint32_t *path, int32_t len);

#endif
