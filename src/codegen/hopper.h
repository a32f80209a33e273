/* SPDX-License-Identifier: MIT */
/* src/codegen/hopper.h - the Hopper (sm_90a) tensor-core path: wgmma
 * with shared-memory matrix descriptors, behind the codegen_wgmma option.
 *
 * A narrow interface for plan.c (which matmuls take it, the layout of
 * their operand tiles), cost.c (its rate) and cuda.c (the helpers the
 * generated file defines, the product's k loop).  Everything else of a
 * kernel (loads, accumulators, epilogues) is the sm_80 path's: a warpgroup
 * m64nNk16 accumulator holds, per warp, exactly the C fragments of the
 * m16n8 tiles the sm_80 path gives that warp when each warp owns one
 * 16-row band of a 64-row tile (plan.c), so the two paths share them.
 *
 * Invariants: with codegen_wgmma = 0 nothing here changes a plan, a cost
 * or a byte of generated code; an operand tile in the core-matrix layout
 * (mirs__plan_tensor.core8) is read by its one wgmma matmul only. */
#ifndef MIRS_CODEGEN_HOPPER_H
#define MIRS_CODEGEN_HOPPER_H

#include <stdbool.h>

#include "codegen/plan.h"
#include "core/core.h"
#include "graph/graph.h"

/* Turn the MMA_16 matmuls of pl whose tiles allow it into MIRS__MMA_WG,
 * their operand tiles into the core-matrix layout (plan.h, core8), and
 * set pl->wgmma.  Called by mirs__plan_build after the input tiles are
 * laid out and before stages and offsets are chosen. */
void mirs__hopper_plan(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg);

/* Relative tensor-core rate of an MMA variant (mirs__plan_mma) under the
 * options of ctx: 1 is the device profile's f16/bf16 peak. */
double mirs__hopper_rate(const mirs_context *ctx, int mma);

/* Append the device helpers (descriptors, fences, commit/wait, one
 * wgmma function per N and dtype used) the kernels of g need; nothing
 * when no plan of plans[0..g->nops) uses wgmma. */
void mirs__hopper_emit_prelude(mirs__buf *b, const mirs_graph *g, const mirs__plan *plans);

/* Append the k loop of wgmma matmul op oi of bg (plan pl) adding the
 * product into `d` (float [N/8][4], this warp's C fragments): the
 * variables tid and warp are in scope, the operand tiles are tA and tB
 * (the tile pointers of in[0] and in[1]). */
void mirs__hopper_emit_kloop(mirs__buf *b, const mirs_graph *g, const mirs__bgraph *bg,
                             const mirs__plan *pl, int32_t oi, const char *ind);

#endif
