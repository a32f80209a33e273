/* SPDX-License-Identifier: MIT */
/* src/search/reduce.h - reduced instances of a graph (reduce.c): small tiles,
 * grids and forloops for fingerprints.  See docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_REDUCE_H
#define MIRS_SEARCH_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

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

#endif
