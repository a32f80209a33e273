/* SPDX-License-Identifier: MIT */
/* src/graph/view.c - read-only views for embedders who walk a graph: its
 * kernel ops, a custom kernel's launch shape and its block ops
 * (mirsearch/graph.h, "walking a graph").
 *
 * Invariants: a view is a copy of scalar fields plus pointers into the
 * graph's own arrays (never copies that could go stale silently); at most
 * out->struct_size bytes of a view are written, so a caller compiled
 * against an older, smaller struct is safe.  A mirs_block_graph handed out
 * is the graph's mirs__bgraph itself. */
#include "config.h"

#include <string.h>

#include "graph/graph.h"

struct mirs_block_graph {
  mirs__bgraph bg;
};

/* Copy n bytes of a filled view into the caller's, at most its struct_size. */
static mirs_status view_copy(void *out, const void *full, size_t full_size) {
  size_t want;
  memcpy(&want, out, sizeof want);
  if (want < sizeof(size_t))
    return MIRS_INVALID_ARG;
  size_t n = want < full_size ? want : full_size;
  memcpy(out, full, n);
  memcpy(out, &n, sizeof n); /* struct_size says how much was filled */
  return MIRS_OK;
}

/* Kernel op index of g. */
mirs_status mirs_graph_kernel(const mirs_graph *g, int index, mirs_kernel_view *out) {
  if (!g || !out)
    return MIRS_INVALID_ARG;
  if (index < 0 || index >= g->nops)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_kernel: op %d does not exist (%d ops)",
                     index, (int)g->nops);
  const mirs__kop *k = &g->ops[index];
  mirs_kernel_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.op = k->op;
  v.num_inputs = k->nin;
  v.num_outputs = k->nout;
  v.inputs = k->in;
  v.outputs = k->out;
  v.dim = mirs__op_has_dim(k->op) ? k->dim : -1;
  v.num_constants = mirs__op_nconst(k->op);
  for (int i = 0; i < v.num_constants; i++)
    v.constants[i] = k->cst[i].v;
  v.eps = mirs__op_has_eps(k->op) ? k->eps : 0.0;
  v.num_layout_dims = mirs__op_is_layout(k->op) ? k->lay.ndim : 0;
  for (int i = 0; i < v.num_layout_dims; i++)
    v.layout_dims[i] = k->lay.d[i];
  if (k->op == MIRS_OP_CUSTOM && k->bg) {
    const mirs__bgraph *bg = k->bg;
    v.block = (const mirs_block_graph *)(const void *)bg;
    for (int i = 0; i < MIRS__GRID; i++) {
      v.grid[i] = bg->grid[i];
      v.block_dims[i] = bg->block[i];
    }
    v.forloop = bg->forloop;
    v.num_block_ops = bg->nops;
    v.num_block_tensors = bg->nt;
  }
  if (view_copy(out, &v, sizeof v) != MIRS_OK)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_kernel: set out->struct_size");
  return MIRS_OK;
}

/* Block op index of a custom kernel. */
mirs_status mirs_block_graph_op(const mirs_block_graph *handle, int index,
                                mirs_block_op_view *out) {
  if (!handle || !out)
    return MIRS_INVALID_ARG;
  const mirs__bgraph *bg = &handle->bg;
  if (index < 0 || index >= bg->nops)
    return MIRS_INVALID_ARG;
  const mirs__bop *op = &bg->ops[index];
  mirs_block_op_view v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.op = op->op;
  v.num_inputs = op->op == MIRS_OP_INPUT ? 0 : op->nin;
  v.inputs[0] = v.inputs[1] = -1;
  for (int i = 0; i < v.num_inputs && i < 2; i++)
    v.inputs[i] = op->in[i];
  v.output = op->out;
  v.dim = mirs__op_has_dim(op->op) ? op->dim : -1;
  v.fused = op->fused;
  v.num_constants = mirs__op_nconst(op->op);
  for (int i = 0; i < v.num_constants; i++)
    v.constants[i] = op->cst[i].v;
  v.src = op->op == MIRS_OP_INPUT ? op->src : -1;
  v.fmap = op->op == MIRS_OP_INPUT ? op->fmap : -1;
  v.dst = op->op == MIRS_OP_OUTPUT ? op->dst : -1;
  for (int i = 0; i < MIRS__GRID; i++) {
    v.imap[i] = op->op == MIRS_OP_INPUT ? op->imap[i] : -1;
    v.omap[i] = op->op == MIRS_OP_OUTPUT ? op->omap[i] : -1;
  }
  return view_copy(out, &v, sizeof v);
}

/* Name of block tensor t. */
const char *mirs_block_tensor_name(const mirs_block_graph *handle, int t) {
  return handle && t >= 0 && t < handle->bg.nt ? handle->bg.t[t].name : NULL;
}

/* Tile shape of block tensor t. */
int mirs_block_tensor_shape(const mirs_block_graph *handle, int t, int64_t dims[MIRS_MAX_DIMS]) {
  if (!handle || t < 0 || t >= handle->bg.nt)
    return 0;
  const mirs__shape *s = &handle->bg.t[t].shape;
  if (dims)
    memcpy(dims, s->d, sizeof(int64_t) * (size_t)s->ndim);
  return s->ndim;
}

/* Producer of kernel tensor t. */
int mirs_tensor_producer(const mirs_graph *g, mirs_tensor t) {
  return g && t >= 0 && t < g->nt ? g->t[t].producer : -1;
}

/* Owning context. */
mirs_context *mirs_graph_context(const mirs_graph *g) {
  return g ? g->ctx : NULL;
}
