/* SPDX-License-Identifier: MIT */
/* src/codegen/cost_api.c - the public cost query (mirsearch/graph.h, "cost
 * model"): the analytic model of cost.c on a named device profile.
 *
 * Invariants: the profiles are loaded per call (the same file the search
 * reads: installed, else compiled in) and released before returning, so
 * the query holds no state between calls; at most out->struct_size bytes
 * of the caller's struct are written. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cost.h"
#include "codegen/plan.h"

/* Fill the caller's struct from a full one, at most its struct_size. */
static mirs_status cost_copy(mirs_context *ctx, mirs_cost *out, const mirs_cost *full) {
  size_t want = out->struct_size;
  if (want < sizeof(size_t))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_cost: set struct_size = sizeof(mirs_cost)");
  size_t n = want < sizeof *full ? want : sizeof *full;
  memcpy(out, full, n);
  out->struct_size = n;
  return MIRS_OK;
}

/* Cost of the whole graph (op < 0) or of kernel op `op`. */
static mirs_status cost_query(mirs_context *ctx, const mirs_graph *g, int op, const char *device,
                              mirs_cost *out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!g || !out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_cost: NULL argument");
  if (out->struct_size < sizeof(size_t))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_cost: set struct_size = sizeof(mirs_cost)");
  if (op >= 0 && op >= g->nops)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_kernel_cost: op %d does not exist", op);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *d = NULL;
  mirs_status s = mirs__cost_profiles_load(ctx, NULL, &p);
  if (s == MIRS_OK)
    s = mirs__cost_find(ctx, p, device ? device : ctx->opt.cost_device, &d);
  mirs_cost full;
  memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.live = 1;
  if (s == MIRS_OK && op >= 0) {
    mirs__cost_kernel k;
    s = mirs__cost_kernel_op(ctx, d, g, op, &k);
    if (s == MIRS_OK) {
      full.seconds = k.feasible ? k.seconds : INFINITY;
      full.bytes = k.bytes;
      full.flops = k.flops;
      /* (a view launches nothing, nor the second kernel of a fused split-K pair) */
      full.kernels = !k.view && k.split_k != MIRS__SPLITK_TAIL;
      full.split_k_pair = k.split_k;
      full.smem_bytes = k.smem;
      full.blocks = k.blocks;
      full.live = k.custom ? k.live : 1;
      full.feasible = k.feasible;
      snprintf(full.reason, sizeof full.reason, "%s", k.reason);
      full.fixed_seconds = k.fixed_seconds;
      full.memory_seconds = k.mem_seconds;
      full.compute_seconds = k.compute_seconds;
      if (k.custom) {
        full.registers = (int)k.regs;
        full.stages = (int)k.stages;
        full.blocks_per_sm = (int)k.occupancy;
        full.bank_conflicts = k.smem_conflict;
      }
    }
  } else if (s == MIRS_OK) {
    mirs__cost_result r;
    s = mirs__cost_graph(ctx, d, g, &r);
    if (s == MIRS_OK) {
      full.seconds = r.feasible ? r.seconds : INFINITY;
      full.bytes = r.bytes;
      full.flops = r.flops;
      full.kernels = r.kernels;
      full.smem_bytes = r.smem_peak;
      full.feasible = r.feasible;
      full.fixed_seconds = r.fixed_seconds;
      full.memory_seconds = r.mem_seconds;
      full.compute_seconds = r.compute_seconds;
      snprintf(full.reason, sizeof full.reason, "%s", r.reason);
    }
  }
  mirs__cost_profiles_free(p);
  MIRS_CHECK(ctx, s);
  return cost_copy(ctx, out, &full);
}

/* Predicted time of g. */
mirs_status mirs_graph_cost(mirs_context *ctx, const mirs_graph *g, const char *device,
                            mirs_cost *out) {
  return cost_query(ctx, g, -1, device, out);
}

/* Predicted time of kernel op `op` of g. */
mirs_status mirs_graph_kernel_cost(mirs_context *ctx, const mirs_graph *g, int op,
                                   const char *device, mirs_cost *out) {
  if (op < 0)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_kernel_cost: op %d does not exist", op)
               : MIRS_INVALID_ARG;
  return cost_query(ctx, g, op, device, out);
}
