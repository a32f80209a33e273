/* SPDX-License-Identifier: MIT */
/* src/search/search.h - internal interface of the search engine: the move
 * space (space.c) and the depth-first engine with its results (search.c).
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
#include "mirsearch/search.h"
#include "verify/prune.h"
#include "verify/fingerprint.h"

/* Largest list-valued option parsed (items). */
#define MIRS__SEARCH_MAX_LIST 64
/* Most outputs of one custom kernel the engine supports (option bound). */
#define MIRS__SEARCH_MAX_COUT 8
/* fusion=2 enumerates fused-flag subsets of at most this many ops. */
#define MIRS__SEARCH_MAX_FUSABLE 10
/* Most reduction sites of a program (index.c). */
#define MIRS__MAX_SITES 64
/* Most sinks (sites and labelled output dims) of a program (index.c). */
#define MIRS__MAX_SINKS 128
/* Results verified at full shape at once on the GPU backend (each its own
 * store and stream): mha's default verify_full_max of 16 in one batch. */
#define MIRS__FULL_BATCH 16

typedef enum mirs__search_move_kind {
  MIRS__MOVE_KOP,
  MIRS__MOVE_OPEN,
  MIRS__MOVE_BOP,
  MIRS__MOVE_CLOSE
} mirs__search_move_kind;

/* A new input tile of a BOP move. */
typedef struct mirs__search_load {
  int32_t src; /* kernel tensor */
  int8_t imap[MIRS__GRID];
  int8_t fmap;
} mirs__search_load;

/* One move (plain data: copied into frames, comparable with memcmp after
 * mirs__search_move_clear). */
typedef struct mirs__search_move {
  uint8_t kind;                       /* mirs__search_move_kind */
  uint8_t op;                         /* KOP, BOP: mirs_op */
  uint8_t nin;                        /* KOP, BOP: operands */
  uint8_t nload;                      /* BOP: new tiles loaded first (ids bg->nt, bg->nt + 1) */
  int8_t dim;                         /* SUM, ACCUM_SUM: reduced dim; else -1 */
  uint8_t nout;                       /* CLOSE: outputs */
  int32_t in[2];                      /* KOP: kernel tensor ids; BOP: block tensor ids */
  mirs__search_load load[2];          /* BOP */
  int32_t grid[MIRS__GRID];           /* OPEN */
  int32_t block;                      /* OPEN: block.x */
  int32_t forloop;                    /* OPEN */
  uint8_t final;                      /* OPEN: the kernel is the candidate's last op */
  int32_t out[MIRS__SEARCH_MAX_COUT]; /* CLOSE: block tensors stored */
  int8_t omap[MIRS__SEARCH_MAX_COUT][MIRS__GRID]; /* CLOSE */
  uint64_t fused;                                 /* CLOSE: bit i sets block op i's fused flag */
  uint64_t swap; /* CLOSE: bit i swaps block op i's operands (add, mul) first */
} mirs__search_move;

/* The search space, parsed from the options once. */
typedef struct mirs__search_space {
  int max_kops, max_bops, max_custom, max_cin, max_cout;
  int max_cin_after; /* max_cin for a custom kernel opened after other kernel ops */
  int mid_grid_dims; /* most grid dims > 1 of a custom kernel another op follows */
  int mid_bops;      /* max_bops for such a kernel */
  int fusion;
  bool canonical, tile_check, phase_canonical, final_grid, grid_order;
  bool bounds; /* the sink and dead-op bounds (option prune) */
  bool constant_ops; /* sub(x, x) and div(x, x) tried (option, or the program has one) */
  bool rms_useful;   /* an accum_rms can survive pruning (set by mirs_search_create) */
  int32_t gx[MIRS__SEARCH_MAX_LIST], gy[MIRS__SEARCH_MAX_LIST], gz[MIRS__SEARCH_MAX_LIST];
  int ngx, ngy, ngz;
  int32_t blocks[MIRS__SEARCH_MAX_LIST];
  int nblocks;
  int32_t franges[MIRS__SEARCH_MAX_LIST];
  int nfranges;
  bool imap_ok[MIRS_MAX_DIMS + 1]; /* index dim + 1 (0: replicate) */
  bool fmap_ok[MIRS_MAX_DIMS + 1]; /* index dim + 1 (0: none) */
  bool omap_ok[MIRS_MAX_DIMS];
  bool index_check;   /* option index_check (labels refuse ops; see index.c) */
  bool reuse_kops;    /* option reuse_kernel_ops (see try_bop) */
  uint64_t reducible; /* bit l: the program reduces label l (set by mirs_search_create) */
  int nsites;         /* reduction sites (see index.c); -1: none known, no site check */
  int8_t site_lab[MIRS__MAX_SITES];
  bool site_rms[MIRS__MAX_SITES];
  uint64_t site_req[MIRS__MAX_SITES]; /* inputs the summand must depend on */
  bool index_degree;                  /* option index_degree (index multiplicities) */
  uint64_t site_deg[MIRS__MAX_SITES]; /* the summand's multiplicities (index.c) */
  int nsinks; /* sites and labelled output dims; -1: no sink check */
  int8_t sink_lab[MIRS__MAX_SINKS];
  uint64_t sink_deg[MIRS__MAX_SINKS];
  int32_t budget[MIRS_OP_COUNT]; /* most ops per class (op_budget); INT32_MAX: none */
  bool kop[MIRS_OP_COUNT];       /* predefined kernel ops tried */
  bool bop[MIRS_OP_COUNT];       /* block ops tried */
} mirs__search_space;

/* Forloop dependence of a per-iteration block tensor (tile analysis). */
enum {
  MIRS__FDEP_INV = 0,    /* the same every iteration (or a post-loop value) */
  MIRS__FDEP_SLICE = 1,  /* a dim holds the iteration's slice */
  MIRS__FDEP_PARTIAL = 2 /* this iteration's part of a sum over the forloop */
};
/* Tile-dim tags: what a tile dim covers of its tensor's dim. */
enum {
  MIRS__TAG_FULL = 0, /* all of it */
  MIRS__TAG_GX = 1,   /* grid.x's slice (GX + g for grid dim g) */
  MIRS__TAG_F = 4     /* the forloop iteration's slice */
};

/* Per block tensor: tile analysis and consumer count. */
typedef struct mirs__search_btinfo {
  int8_t tag[MIRS_MAX_DIMS];
  int8_t lab[MIRS_MAX_DIMS]; /* index label per dim (index.c); MIRS__LAB_NONE: none */
  uint64_t atoms;            /* program inputs the value depends on (bit = input index) */
  uint64_t deg[MIRS_MAX_DIMS]; /* index multiplicities per dim (index.c) */
  uint8_t fdep;
  int16_t uses;
} mirs__search_btinfo;

/* Index labels (index.c, option index_check).  Every dim of the program's
 * tensors gets a label: the class of dims the program's ops identify
 * (elementwise ops align dims, matmul contracts a's last with b's
 * second-to-last); a dim of extent 1 has none.  A label is *reducible*
 * when the program sums over it (sum, a matmul contraction) or normalises
 * it (rms_norm).  The search carries the labels through every candidate
 * tensor and refuses an op that aligns or contracts two different labels
 * or reduces a label the program never reduces: such a value mixes
 * indices the program keeps apart (a sum over the batch dim, Q's head dim
 * contracted with V's sequence dim), so its abstract expression with
 * indices is no subexpression of an output -- the dimension-aware part of
 * the pruning that the index-free expressions of absexpr.h cannot see.
 *
 * Reduction sites.  Each reduction of the program (sum, a matmul's
 * contraction, rms_norm) is a *site*: its label, whether it is an rms,
 * and the inputs its summand depends on *through* that label (an input
 * that holds the label, or any input inside a non-linear function, a
 * denominator or an rms of a value that holds it): the factors that
 * cannot be taken out of the sum.  A candidate's reduction over label l
 * needs a site of its kind over l whose inputs its operands all depend
 * on: summing V over the sequence alone, when every sum over the
 * sequence also holds exp(Q K), builds nothing an output contains.
 *
 * Index multiplicities (option index_degree).  Each dim of a value is one
 * instance of its label (an index variable); its *multiplicity* in input
 * a is how many factors of a indexed by that instance one term of the
 * value holds: 1 for an input that holds the dim, the sum for mul, the
 * maximum for add, twice for square, MIRS__DEG_INF when a sits inside a
 * non-linear function (exp, sqrt, silu, gelu, relu, an rms over another
 * dim, a denominator) of a value that holds the instance.  Packed: 4 bits
 * per input, inputs 0 to 15 (the others are not tracked).  A site also
 * records the multiplicities of its summand through the reduced instance:
 * (X W)^2 sums x_k w_k (1 and 1) and squares afterwards, so the sum over k
 * of x_k x_k w_k w_k, or a value x_k x_k, is no part of it.  A candidate's
 * reduction needs a site whose multiplicities bound its summand's; and a
 * value is refused at once when some dim's multiplicities exceed those of
 * every *sink* of its label (the sites, and the program outputs' dims):
 * multiplicities never decrease along ops until the instance is reduced
 * or stored. */
#define MIRS__DEG_INF 15
#define MIRS__DEG_ATOMS 16
#define MIRS__LAB_NONE (-1)
#define MIRS__LAB_MAX 64

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

struct mirs_search {
  mirs_context *ctx;
  mirs__search_worker *refinder; /* re-finds results sent without text (sink) */
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
  double best_full;          /* cost of the cheapest result verified at full shape when found */
  bool have_best_full;
  double early_seconds;       /* wall seconds spent verifying new bests when found */
  mirs_eval_result *ref_eval; /* the program in float64 (float check, lazily) */
  bool ref_eval_limit;        /* ... too large for the interpreter */
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
  mirs__sink_entry *ent;
  size_t nent, capent;
  uint32_t *idx; /* open addressing: entry + 1 (0 = empty) */
  size_t idxcap;
  uint32_t *paths; /* the entries' paths */
  size_t npaths, cappaths;
  mirs__search_result *res;
  size_t nres, capres;
  mirs__stats stats; /* summed from the workers (and a resumed checkpoint) */
  double t0, wall;
  bool running; /* inside mirs_search_run (re-entry from a callback is refused) */
  char setup_stopped[256]; /* why the setup stopped ("": it did not) */
  double wall_before;   /* wall seconds of the runs a resumed checkpoint records */
  /* Parallel run (pool.c, api.c). */
  int threads;          /* workers of the next run (option threads, resolved) */
  int threads_used;     /* workers of the last run */
  _Atomic int halt;     /* MIRS__HALT_* bits; set from any thread or a signal handler */
  _Atomic int halt_why; /* MIRS__WHY_*: the first reason a run halted (0: none) */
  int why;              /* MIRS__WHY_*: why the last run is incomplete (0: it is not) */
  mirs__task *open;     /* unexplored work: seeds of the next run, open work after a stop */
  char *ckpt_path;      /* periodic checkpoints (mirs_search_set_checkpoint) */
  double ckpt_last;
  bool complete, ran, resumed;
  /* Distributed run (dist.c, --mpi): NULL in a single process. */
  struct mirs__dist *dist;
  /* Search-tree trace (trace.c, bench/glbtrace.c): NULL when off. */
  struct mirs__trace *trace;
};

/* Why workers stop (bits of mirs_search.halt; the context's own stop
 * requests, mirs_interrupt and the watchdog's limits, are core.h's
 * MIRS__STOP_* bits, which the pool turns into these). */
enum {
  MIRS__HALT_USER = 1,       /* mirs_search_stop, should_stop or mirs_interrupt */
  MIRS__HALT_LIMIT = 2,      /* max_states, time_limit, max_memory */
  MIRS__HALT_ERROR = 4,      /* a worker failed */
  MIRS__HALT_CHECKPOINT = 8  /* a periodic checkpoint is due (the run goes on) */
};
/* The first reason a run halted (mirs_search.halt_why), for its log line. */
enum {
  MIRS__WHY_NONE = 0,
  MIRS__WHY_USER,      /* mirs_search_stop or should_stop */
  MIRS__WHY_INTERRUPT, /* mirs_interrupt (a signal in the CLI) */
  MIRS__WHY_TIME,      /* time_limit */
  MIRS__WHY_MEMORY,    /* max_memory */
  MIRS__WHY_STATES,    /* max_states */
  MIRS__WHY_ERROR      /* a worker failed */
};

/* ---------------------------------------------------------------- space.c */

/* Parse the search options of ctx into sp; MIRS_INVALID_ARG naming the
 * option on a bad value. */
mirs_status mirs__search_space_parse(mirs_context *ctx, mirs__search_space *sp);
/* With option grid_dims, add to sp's grid.x sizes each d / 2^k of a dim d
 * of program's tensors up to the largest listed size (ascending, after the
 * listed ones; as many as the list holds). */
void mirs__search_space_dim_grids(mirs__search_space *sp, const mirs_graph *program);
/* Append the moves of w's current state to w's move arena (count in *n). */
mirs_status mirs__search_gen_moves(mirs__search_worker *w, uint32_t *n);
/* Budget class of op (op_budget): accumulators count as the reduction
 * they finish; -1 for ops without a budget (plain accum). */
int mirs__search_op_class(mirs_op op);
/* Whether a kernel op that leaves w's graph with nkops kernel ops and nbg
 * custom kernels must be the candidate's last op (the open custom kernel
 * closes as op g->nops + 1). */
bool mirs__search_is_last(const mirs__search_worker *w, int32_t nkops, int nbg);
/* Whether w's newest custom kernel (open or closed) was opened as the
 * candidate's last op.  Where one need not be last, each open move comes
 * in two variants: final (the last-kernel bounds hold, nothing follows its
 * close) and not final (another op follows; its grids have at most
 * mid_grid_dims dims > 1), so every candidate is reached once. */
static inline bool mirs__search_kernel_final(const mirs__search_worker *w) {
  return w->nbg > 0 && ((w->final >> (w->nbg - 1)) & 1u);
}
/* Program outputs no kernel tensor of w matches yet. */
int mirs__search_unmatched(const mirs__search_worker *w);
/* Whether the kernel-level state just reached by adding kernel op
 * g->nops - 1 (its expressions computed, not yet fingerprinted or
 * recorded) can still complete: the sink bound (merges_left) and the node
 * bound over all kernel tensors, where a later kernel op adds at most one
 * symbol of a kind its operator makes and a later custom kernel at most
 * max_block_ops - 2.  Option prune. */
bool mirs__search_kernel_alive(mirs__search_worker *w);
/* Whether pruning keeps block op `op` (reduced dim `dim`) on operands
 * whose expressions are in[0..nin), the first of shape s0, in the open
 * block graph; decided before the move is listed, so a pruned op is never
 * a move.  MIRS_NOMEM and the like as pruning reports them. */
mirs_status mirs__search_bop_keep(mirs__search_worker *w, mirs_op op, int dim, int nin,
                                  const mirs__abs_id *in, const mirs__shape *s0, bool *keep);
/* Budget class of a block op on operands in[] of bg (a div by an
 * accum_rms result has none: it finishes that rms_norm). */
int mirs__search_bop_class(const mirs__bgraph *bg, mirs_op op, int nin, const int32_t *in);
/* Set sp->budget from program's operators and the op_budget option. */
void mirs__search_space_budget(mirs__search_space *sp, const mirs_graph *program, int64_t slack);
/* Tile analysis of a new input tile (load) of the open block graph; klab:
 * the index labels of the loaded kernel tensor. */
void mirs__search_load_info(const mirs__bgraph *bg, const mirs__search_load *l, const int8_t *klab,
                            uint64_t atoms, const uint64_t *kdeg, mirs__search_btinfo *out);
/* Tile analysis of op on operands with infos in[] and tile shapes sh[]:
 * false when the tiles cannot line up (see space.c). */
bool mirs__search_tile_rule(const mirs__bgraph *bg, mirs_op op, int dim, int nin,
                            const mirs__search_btinfo *in, const mirs__shape *sh,
                            mirs__search_btinfo *out);

/* ---------------------------------------------------------------- index.c */

/* Label the dims of program's tensors into plab (program->nt *
 * MIRS_MAX_DIMS entries); set sp->reducible and the reduction sites.
 * When the program has an op the labelling does not know (a custom
 * kernel), more than MIRS__LAB_MAX classes or 64 inputs, every entry is
 * MIRS__LAB_NONE (no label refuses anything); with more than
 * MIRS__MAX_SITES reductions sp->nsites is -1 (no site check). */
mirs_status mirs__search_label_program(mirs_context *ctx, const mirs_graph *program, int8_t *plab,
                                       mirs__search_space *sp);
/* Multiplicities of a program input (input index i, labels lab): 1 in
 * input i for each labelled dim. */
void mirs__search_input_deg(const int8_t *lab, int i, uint64_t *deg);
/* One operand of the index rule: labels, inputs it depends on, index
 * multiplicities per dim (see "Index multiplicities"). */
typedef struct mirs__search_ix {
  const int8_t *lab;
  uint64_t atoms;
  const uint64_t *deg;
} mirs__search_ix;
/* Labels of op's result (rank nd; operands a, b: b = a for a unary op)
 * into out, its multiplicities into deg; false when op aligns or
 * contracts two different labels, reduces a label the program never
 * reduces, or reduces one with no matching site for its operands (inputs
 * and multiplicities), or when the result holds a dim whose
 * multiplicities no sink of its label bounds.  dim: the reduced dim
 * (SUM, ACCUM_SUM). */
bool mirs__search_label_rule(const mirs__search_space *sp, mirs_op op, int dim, int nd,
                             const mirs__search_ix *a, const mirs__search_ix *b, int8_t *out,
                             uint64_t *deg);
/* The rule for block op `op` on operands with infos in[0..nin) (rank nd):
 * sets out->lab, out->atoms and out->deg. */
bool mirs__search_bop_labels(const mirs__search_space *sp, mirs_op op, int dim, int nin, int nd,
                             const mirs__search_btinfo *in, mirs__search_btinfo *out);
/* The rule for kernel op `op` on w's kernel tensors in[0..nin) (rank nd):
 * labels into lab, the inputs it depends on into *atoms, multiplicities
 * into deg. */
bool mirs__search_kop_labels(const mirs__search_worker *w, mirs_op op, int dim, int nin,
                             const int32_t *in, int nd, int8_t *lab, uint64_t *atoms,
                             uint64_t *deg);

/* ---------------------------------------------------------------- reduce.c */

/* Most distinct extents a reduction maps (a graph with more is not reduced). */
#define MIRS__REDUCE_MAX 64

/* A reduction (see reduce.c): extent ext[i] becomes red[i] (extents not
 * listed stay), grid dims and forloops above parts become parts.
 * identity: nothing shrinks (n = 0, parts 0, hash 0). */
typedef struct mirs__reduce_map {
  int n;
  int32_t parts;
  bool identity;
  uint64_t hash;
  int64_t ext[MIRS__REDUCE_MAX], red[MIRS__REDUCE_MAX];
} mirs__reduce_map;

/* The reduction of g's inputs and first nops ops with tiles of at most
 * `tile` elements per dim and grid dims and forloops of at most `parts`
 * (>= 2); tile <= 0: the identity. */
void mirs__reduce_map_build(const mirs_graph *g, int32_t nops, int64_t tile, int32_t parts,
                            mirs__reduce_map *m);
/* Reduced extent of e under m. */
int64_t mirs__reduce_extent(const mirs__reduce_map *m, int64_t e);
/* Append op `op` of g to rg, which mirrors g's tensors before it under m
 * (names: keep g's tensor names, else fresh ones). */
mirs_status mirs__reduce_push_op(mirs_graph *rg, const mirs_graph *g, int32_t op,
                                 const mirs__reduce_map *m, bool names);
/* The same, then MIRS_SHAPE (op not added) unless its outputs have the
 * shapes m gives g's. */
mirs_status mirs__reduce_push_checked(mirs_graph *rg, const mirs_graph *g, int32_t op,
                                      const mirs__reduce_map *m, bool names);
/* The reduced graph of g's inputs and first nops ops under m (outputs
 * among them marked), allocated in ctx (the context of the fingerprint
 * store that will compute it). */
mirs_status mirs__reduce_graph(mirs_context *ctx, const mirs_graph *g, int32_t nops,
                               const mirs__reduce_map *m, bool names, mirs_graph **out);

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

/* ---------------------------------------------------------------- tree trace (trace.c)
 * A record of the search tree a one-worker search explores, for the
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
/* Tasks: new (quiet allocation in ctx; NULL when short of memory; path
 * NULL leaves the len path entries for the caller to fill), free. */
mirs__task *mirs__task_new(mirs_context *ctx, const uint32_t *path, int32_t len, uint32_t lo,
                           uint32_t hi);
void mirs__task_free(mirs_context *ctx, mirs__task *t);
void mirs__task_free_list(mirs_context *ctx, mirs__task *t);

/* ---------------------------------------------------------------- sink.c */

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
/* Re-find the result of hash h at path[0..len) with worker w (not in the
 * pool) and check that the sink then holds it as flags' ACCEPTED says (a
 * verdict made at full shape when it was found stands); the VERIFIED and
 * FLOAT_CHECKED verdicts are kept.  `from` names the source in messages
 * (a checkpoint file).  MIRS_STOPPED on a stop request; MIRS_INVALID_ARG
 * when it is not found again. */
mirs_status mirs__sink_restore(mirs__search_worker *w, const char *from, uint64_t h,
                               unsigned flags, const uint32_t *path, uint32_t len);
/* Add counters to the search's and its context's (workers stopped). */
void mirs__sink_add_stats(mirs_search *s, const mirs__stats *st);
/* Rank the results and float64-check the best (workers stopped). */
mirs_status mirs__sink_finish(mirs_search *s);
/* Choose the full-shape verification backend (the option verify) once. */
mirs_status mirs__sink_full_backend(mirs_search *s);

/* ---------------------------------------------------------------- pool.c */

/* Run the tasks in s->open on s->threads workers until they are done or
 * s->stop is set; afterwards s->open holds the unexplored work (empty when
 * the run completed) and the workers' counters are summed into s.  A
 * periodic checkpoint (s->ckpt_path) stops and restarts the workers. */
mirs_status mirs__pool_run(mirs_search *s);
/* CPUs this process may use: the affinity mask, lowered to
 * SLURM_CPUS_PER_TASK, replaced by OMP_NUM_THREADS when that is set. */
int mirs__pool_usable_cpus(void);

/* The pool as the distributed layer sees it (thread 0 only, from the
 * hooks below). */
typedef struct mirs__pool mirs__pool;
/* One task to hand to another rank: the oldest queued task of any worker
 * (it leaves the pool's count), else the shallowest unexplored range split
 * off w's running task (w NULL: none); NULL when there is nothing. */
mirs__task *mirs__pool_give(mirs__pool *p, mirs__search_worker *w);
/* Queue a task received from another rank on thread 0's deque. */
mirs_status mirs__pool_take(mirs__pool *p, mirs__task *t);
/* Whether any task of this process is queued or running. */
bool mirs__pool_busy(mirs__pool *p);
/* How many tasks of this process are queued or running. */
int64_t mirs__pool_pending(mirs__pool *p);
/* Global termination: every worker leaves when its deque is empty. */
void mirs__pool_finish(mirs__pool *p);

/* ---------------------------------------------------------------- dist.c */

/* The distributed layer (--mpi; the only file that includes mpi.h).  The
 * pool calls it only when s->dist is set, so a single process runs
 * exactly as without it. */
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

/* ---------------------------------------------------------------- checkpoint.c */

/* Write s's state (results as paths, open work, counters) to path
 * atomically. */
mirs_status mirs__checkpoint_write(mirs_search *s, const char *path);
/* Load a checkpoint written for the same program, options and format
 * into s (before its run): its open work becomes the seeds, its results
 * are re-found.  MIRS_INVALID_ARG naming the file and the mismatch for a
 * damaged, truncated or foreign file. */
mirs_status mirs__checkpoint_read(mirs_search *s, const char *path);

#endif
