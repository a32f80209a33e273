/* SPDX-License-Identifier: MIT */
/* src/search/space.h - the move space (space.c): moves, the options that bound
 * them, tile analysis, and the block-op filter applied while the moves of
 * a state are listed.  See docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_SPACE_H
#define MIRS_SEARCH_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"
#include "search/index.h"
#include "verify/prune.h"

/* Largest list-valued option parsed (items). */
#define MIRS__SEARCH_MAX_LIST 64
/* Most outputs of one custom kernel the engine supports (option bound). */
#define MIRS__SEARCH_MAX_COUT 8
/* fusion=2 enumerates fused-flag subsets of at most this many ops. */
#define MIRS__SEARCH_MAX_FUSABLE 10

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

#define MIRS__SEARCH_MAX_CST 16

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
  double eps;        /* the eps of every layer_norm, rms_norm and accum_rms the search
                        adds: the program's first layer_norm's or nonzero rms_norm eps,
                        else 0 (mirs__search_space_budget) */
  bool reload;       /* a kernel tensor may be loaded twice in a custom kernel with a
                        forloop, once whole and once by slices: the program takes a
                        row mean (mean, layer_norm), which a loop over the row needs
                        before its first iteration (set with eps) */
  bool safe_exp;     /* every exp of the program is max-shifted: so is every exp of a
                        candidate (mirs__search_space_budget) */
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
  /* The program's ops with constants (mirs__op_nconst), distinct (op,
   * constants) pairs: the only ones tried.  A move of such an op carries
   * the entry's index in its dim field (mirs__search_op_dim). */
  int ncst;
  uint8_t cst_op[MIRS__SEARCH_MAX_CST];
  mirs__scalar cst[MIRS__SEARCH_MAX_CST][2];
  /* Where transpose is tried (a canonical form; transpose commutes with
   * elementwise ops, so placing it anywhere only makes equal graphs): on
   * values whose abstract expression is that of a value the program
   * transposes (hashes below), never on a transpose's result.  ntr < 0:
   * anywhere (a program with a block-level transpose). */
  int ntr;
  uint64_t tr_hash[MIRS__SEARCH_MAX_CST];
} mirs__search_space;

/* The dim key of an op in canonical comparisons and in moves: its
 * constants' entry in sp's table for an op with constants, else dim. */
int mirs__search_op_dim(const mirs__search_space *sp, mirs_op op, int dim, const mirs__scalar *c);

/* Forloop dependence of a per-iteration block tensor (tile analysis). */
enum {
  MIRS__FDEP_INV = 0,    /* the same every iteration (or a post-loop value) */
  MIRS__FDEP_SLICE = 1,  /* a dim holds the iteration's slice */
  MIRS__FDEP_PARTIAL = 2, /* this iteration's part of a sum over the forloop */
  MIRS__FDEP_PMAX = 3     /* this iteration's part of a max over the forloop (a tile max) */
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

typedef struct mirs_search mirs_search;
typedef struct mirs__search_worker mirs__search_worker;

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

/* Entries of a worker's block-op verdict memo (a power of two). */
#define MIRS__PMEMO_SIZE ((size_t)1 << 16)
/* Check expression e (counted as a prune call); *keep false when pruned.
 * A solver error keeps the op (unknown never prunes). */
mirs_status mirs__search_prune_check(mirs__search_worker *w, mirs__abs_id e, bool *keep);
/* Status st of a failed step of a move: an error of the search is
 * returned; a refusal (builder or fingerprint) is counted under counter
 * stat and becomes MIRS_OK (the move is just not applied). */
mirs_status mirs__search_refused(mirs__search_worker *w, mirs_status st, int stat);

#endif
