/* SPDX-License-Identifier: MIT */
/* src/search/splitk.h - the split-K rewrite of a result (splitk.c): one
 * custom kernel whose accumulators all sum over the forloop (accum,
 * accum_sum, accum_online) becomes a kernel that sums a chunk of the loop
 * per block into f32 partials (an online sum's relative to the chunk's
 * running max, stored too) and a kernel that combines the partials
 * (adding them, or rescaling them to the overall max) and applies the
 * post-loop ops (FlashDecoding).  See docs/SEARCH.md "Split-K rewrite". */
#ifndef MIRS_SEARCH_SPLITK_H
#define MIRS_SEARCH_SPLITK_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"

/* The split factors tried, in order (each must divide the forloop). */
#define MIRS__SPLITK_NFACTORS 4
extern const int32_t mirs__splitk_factors[MIRS__SPLITK_NFACTORS];

/* Whether g already holds a split-K load (an input whose forloop walks a
 * dim a grid dim partitions): a product of the rewrite, not split again. */
bool mirs__splitk_has_split(const mirs_graph *g);

/* The variant of g (in ctx) with custom kernel op kop split s ways along
 * grid dim gs (0..2: x, y, z; one > 1 is taken over: what it partitioned
 * each block then holds whole), into *out; *out NULL (MIRS_OK) when that
 * kernel cannot be split so: not a custom kernel, s < 2 or not dividing
 * its forloop, an accumulator other than accum/accum_sum/accum_online,
 * an accum_online shift with no dim of extent 1 in the split kernel, or
 * an accumulator tile with too few dims to place every grid dim.  A graph
 * the builder refuses (a tile that no longer divides) is an error. */
mirs_status mirs__splitk_variant(mirs_context *ctx, const mirs_graph *g, int32_t kop, int gs,
                                 int32_t s, mirs_graph **out);

/* The same with a finer combine: kernel 2's grid dim gs (1 above)
 * partitions dim cdim of its tiles cways ways (cdim -1: as above), so
 * that a source grid leaving few blocks once gs is dropped combines in
 * more.  Kernel 1 then places no grid dim along cdim.  *out NULL also
 * when the combine cannot be so: a post-loop op of K not elementwise (or
 * a causal_mask), an output whose tile has dim cdim placed by another
 * grid dim, of extent 1 or not divisible by cways (or the outputs at
 * different extents), an accumulator or shift tile holding it at
 * another extent than the outputs' or 1.  Such a pair is two launches
 * (the code generator fuses only a kernel 2 of K's grid less gs). */
mirs_status mirs__splitk_variant_combine(mirs_context *ctx, const mirs_graph *g, int32_t kop,
                                         int gs, int32_t s, int cdim, int32_t cways,
                                         mirs_graph **out);

#endif
