/* SPDX-License-Identifier: MIT */
/* src/search/partition.h - the partition's state (partition.c), shared
 * with its report (partition_report.c).  See docs/PARTITION.md. */
#ifndef MIRS_SEARCH_PARTITION_H
#define MIRS_SEARCH_PARTITION_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/core.h"
#include "graph/graph.h"
#include "mirsearch/partition.h"

/* One piece: a convex, connected set of the program's ops. */
typedef struct mirs__piece {
  int32_t *ops; /* program op indices, ascending (a topological order) */
  int32_t nops;
  int32_t *in;  /* program tensors read: piece input x_i is in[i] */
  int32_t nin;
  int32_t *out; /* program tensors other units read, or program outputs: y_j */
  int32_t nout;
  mirs_graph *prog; /* the piece as a program of its own */
  mirs_graph *best; /* what the stitched graph runs for it (after run) */
  int32_t r_first, r_end; /* its kernel ops in the stitched graph: [r_first, r_end) */
  bool at_layout; /* reads a layout op's result or writes one's input (partition.c) */
  mirs_graph **cand;   /* at_layout: its search's best results, ranked again in place */
  uint64_t *cand_hash; /* their canonical hashes */
  int ncand;
  int choice; /* what best is: cand[choice], or the piece as written (-1) */
  mirs_piece_info info;
} mirs__piece;

struct mirs_partition {
  mirs_context *ctx;
  mirs_graph *program; /* a private copy */
  mirs__piece *piece;  /* in the order the stitched graph runs them */
  int32_t npieces;
  mirs_graph *result; /* the stitched µGraph (NULL until a run finishes) */
  mirs_partition_stats stats;
  mirs_partition_progress_fn progress;
  mirs_partition_stop_fn should_stop;
  void *user;
  _Atomic int stop;            /* mirs_partition_stop */
  _Atomic(mirs_search *) cur;  /* the piece search running now (to forward a stop) */
  bool ran, mpi;
  int rank, nranks;
};

/* Cut p->program into ordered pieces with their programs (partition_cut.c). */
mirs_status mirs__partition_cut(mirs_partition *p);

/* Predicted seconds of the whole stitched µGraph with candidate cand[j]
 * for piece i and every other piece's best into cost[j] (j < n), and
 * with piece i as written into *before: what the in-place ranking of a
 * piece at a layout op compares.  Every other piece must have a best. */
mirs_status mirs__partition_in_place(mirs_partition *p, int32_t i, const mirs_graph *const *cand,
                                     int n, double *cost, double *before);

/* The piece kinds' names ("searched", "cached", "library", "kept", "pending"). */
const char *mirs__piece_kind_name(mirs_piece_kind k);

#endif
