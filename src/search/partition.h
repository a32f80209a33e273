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
  bool unranked; /* its results not priced in place: a piece before it had no best (MPI) */
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

/* Predicted seconds of candidates cand[0, n) for piece i in place (after
 * the bests of the pieces before it, reading its inputs through the
 * views they have there) into cost[], and of the piece as written into
 * *before, where *views: the piece reads a tensor that is not dense in
 * its own buffer there; else *views is false and nothing is priced (also
 * where a piece before i has no best yet). */
mirs_status mirs__partition_in_place(mirs_partition *p, int32_t i, const mirs_graph *const *cand,
                                     int n, double *cost, double *before, bool *views);

/* The piece kinds' names ("searched", "cached", "library", "kept", "pending"). */
const char *mirs__piece_kind_name(mirs_piece_kind k);

#endif
