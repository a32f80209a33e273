/* SPDX-License-Identifier: MIT */
/* src/cli/show.c - `mirsearch show`: a readable summary of a µGraph's
 * kernels, or a Graphviz diagram (--dot).
 *
 * Invariants: everything here goes through the public API (the walking
 * views of mirsearch/graph.h and the cost query), so an embedder can print
 * the same summary; tests/consumer/consumer.c does, and tests/embedded.sh
 * compares the two.  The summary's format is documented in README.md
 * ("Reading a result"); change both together. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/show.h"

/* "[d0, d1, ...]" for n dims. */
static void put_dims(FILE *o, int n, const int64_t *d) {
  fputc('[', o);
  for (int i = 0; i < n; i++)
    fprintf(o, "%s%" PRId64, i ? ", " : "", d[i]);
  fputc(']', o);
}

/* "[a, b, c]". */
static void put3(FILE *o, const int *v) {
  fprintf(o, "[%d, %d, %d]", v[0], v[1], v[2]);
}

/* "NAME dtype[dims]" of kernel tensor t. */
static void put_tensor(FILE *o, const mirs_graph *g, mirs_tensor t) {
  int64_t d[MIRS_MAX_DIMS];
  int n = mirs_tensor_shape(g, t, d);
  fprintf(o, "%s %s", mirs_tensor_name(g, t), mirs_dtype_name(mirs_tensor_dtype(g, t)));
  put_dims(o, n, d);
}

/* ", 1.234 us" or ", infeasible: reason". */
static void put_cost(FILE *o, const mirs_cost *c) {
  if (c->feasible)
    fprintf(o, "%.3f us", c->seconds * 1e6);
  else
    fprintf(o, "infeasible: %s", c->reason);
}

/* show --cost: the terms of a predicted time (mirs_cost, docs/SEARCH.md
 * "Cost model"), and for a custom kernel what its plan gives them. */
static void put_terms(FILE *o, const mirs_cost *c, int custom) {
  if (!c->feasible)
    return;
  fprintf(o, "    cost: fixed %.3f us, memory %.3f us, compute %.3f us", c->fixed_seconds * 1e6,
          c->memory_seconds * 1e6, c->compute_seconds * 1e6);
  if (custom)
    fprintf(o, "; ~%d registers, %d stage%s, %d block%s per SM, bank conflicts %.2gx",
            c->registers, c->stages, c->stages == 1 ? "" : "s", c->blocks_per_sm,
            c->blocks_per_sm == 1 ? "" : "s", c->bank_conflicts);
  fputc('\n', o);
}

/* One block op line of a custom kernel. */
static void put_block_op(FILE *o, const mirs_graph *g, const mirs_block_graph *bg,
                         const mirs_block_op_view *b) {
  int64_t d[MIRS_MAX_DIMS];
  if (b->op == MIRS_OP_OUTPUT) {
    fprintf(o, "    %s = output(%s) omap=", mirs_tensor_name(g, b->dst),
            mirs_block_tensor_name(bg, b->inputs[0]));
    put3(o, b->omap);
    fputc('\n', o);
    return;
  }
  fprintf(o, "    %s = %s(", mirs_block_tensor_name(bg, b->output), mirs_op_name(b->op));
  if (b->op == MIRS_OP_INPUT)
    fputs(mirs_tensor_name(g, b->src), o);
  for (int i = 0; i < b->num_inputs; i++)
    fprintf(o, "%s%s", i ? ", " : "", mirs_block_tensor_name(bg, b->inputs[i]));
  if (b->dim >= 0)
    fprintf(o, ", dim=%d", b->dim);
  for (int i = 0; i < b->num_constants && i < 2; i++)
    fprintf(o, ", %.9g", b->constants[i]);
  fputs(") ", o);
  put_dims(o, mirs_block_tensor_shape(bg, b->output, d), d);
  if (b->op == MIRS_OP_INPUT) {
    fputs(" imap=", o);
    put3(o, b->imap);
    fprintf(o, " fmap=%d", b->fmap);
  }
  if (b->fused)
    fputs(" fused", o);
  fputc('\n', o);
}

/* The readable summary. */
mirs_status mirs__cli_show_summary(FILE *o, mirs_context *ctx, const mirs_graph *g, int cost) {
  int nops = mirs_graph_num_ops(g), ncustom = mirs_graph_num_custom(g);
  mirs_cost total = MIRS_COST_INIT;
  mirs_status s = mirs_graph_cost(ctx, g, NULL, &total);
  if (s != MIRS_OK)
    return s;
  char device[64] = "?";
  mirs_option_get(ctx, "cost_device", device, sizeof device);
  fprintf(o, "%s %s: %d kernel%s (%d custom), predicted ", ncustom ? "ugraph" : "program",
          mirs_graph_name(g), total.kernels, total.kernels == 1 ? "" : "s", ncustom);
  put_cost(o, &total);
  fprintf(o, " on %s\n", device);
  if (cost && total.feasible)
    fprintf(o, "cost: the kernels' fixed %.3f us, memory %.3f us, compute %.3f us (sums)\n",
            total.fixed_seconds * 1e6, total.memory_seconds * 1e6, total.compute_seconds * 1e6);
  fputs("inputs:", o);
  for (int t = 0, first = 1; t < mirs_graph_num_tensors(g); t++)
    if (mirs_tensor_producer(g, t) < 0) {
      fputs(first ? " " : ", ", o);
      put_tensor(o, g, t);
      first = 0;
    }
  fputc('\n', o);
  for (int k = 0; k < nops; k++) {
    mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
    mirs_cost kc = MIRS_COST_INIT;
    if ((s = mirs_graph_kernel(g, k, &kv)) != MIRS_OK ||
        (s = mirs_graph_kernel_cost(ctx, g, k, NULL, &kc)) != MIRS_OK)
      return s;
    fprintf(o, "kernel %d: ", k + 1);
    if (kv.block) {
      fputs("custom grid=", o);
      put3(o, kv.grid);
      fputs(" block=", o);
      put3(o, kv.block_dims);
      fprintf(o, " forloop=%d, smem %" PRId64 " B, ", kv.forloop, kc.smem_bytes);
      if (kc.live < 1) /* causal tile skipping (docs/CODEGEN.md) */
        fprintf(o, "%.0f%% of the tiles live, ", 100.0 * kc.live);
      put_cost(o, &kc);
      if (kc.split_k_pair == 1) /* (docs/CODEGEN.md "Split-K pairs") */
        fprintf(o, ", one launch with kernel %d (split-K pair; counters zeroed first)", k + 2);
      else if (kc.split_k_pair == 2)
        fprintf(o, " (in kernel %d's launch: the last block of each group combines)", k);
      fputc('\n', o);
      if (cost)
        put_terms(o, &kc, 1);
      for (int b = 0; b < kv.num_block_ops; b++) {
        mirs_block_op_view bv = MIRS_BLOCK_OP_VIEW_INIT;
        if ((s = mirs_block_graph_op(kv.block, b, &bv)) != MIRS_OK)
          return s;
        put_block_op(o, g, kv.block, &bv);
      }
      continue;
    }
    fprintf(o, "%s(", mirs_op_name(kv.op));
    for (int i = 0; i < kv.num_inputs; i++)
      fprintf(o, "%s%s", i ? ", " : "", mirs_tensor_name(g, kv.inputs[i]));
    if (kv.dim >= 0)
      fprintf(o, ", dim=%d", kv.dim);
    for (int i = 0; i < kv.num_constants && i < 2; i++)
      fprintf(o, ", %.9g", kv.constants[i]);
    if (kv.eps != 0.0)
      fprintf(o, ", eps=%.9g", kv.eps);
    if (kv.op == MIRS_OP_SLICE && kv.num_layout_dims == 3) /* ({dim, start, len}) */
      fprintf(o, ", dim=%" PRId64 ", start=%" PRId64 ", len=%" PRId64, kv.layout_dims[0],
              kv.layout_dims[1], kv.layout_dims[2]);
    for (int i = 0; kv.op != MIRS_OP_SLICE && i < kv.num_layout_dims; i++) /* (shape=, dims=) */
      fprintf(o, "%s%" PRId64 "%s", i ? ", " : kv.op == MIRS_OP_RESHAPE ? ", shape=[" : ", dims=[",
              kv.layout_dims[i], i + 1 == kv.num_layout_dims ? "]" : "");
    fputs(") -> ", o);
    put_tensor(o, g, kv.outputs[0]);
    fputs(", ", o);
    put_cost(o, &kc);
    fputc('\n', o);
    if (cost && kc.kernels > 0) /* (a view moves nothing) */
      put_terms(o, &kc, 0);
  }
  fputs("outputs:", o);
  for (int i = 0; i < mirs_graph_num_outputs(g); i++) {
    fputs(i ? ", " : " ", o);
    put_tensor(o, g, mirs_graph_output(g, i));
  }
  fputc('\n', o);
  return MIRS_OK;
}

/* A DOT string literal (names are identifiers; quotes kept safe anyway). */
static void dot_label(FILE *o, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', o);
    fputc(*s, o);
  }
}

/* The Graphviz diagram: kernel tensors as ellipses, predefined kernels
 * as boxes, each custom kernel as a cluster of its block ops. */
mirs_status mirs__cli_show_dot(FILE *o, const mirs_graph *g) {
  fputs("digraph \"", o);
  dot_label(o, mirs_graph_name(g));
  fputs("\" {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n", o);
  for (int t = 0; t < mirs_graph_num_tensors(g); t++) {
    int64_t d[MIRS_MAX_DIMS];
    int n = mirs_tensor_shape(g, t, d);
    fprintf(o, "  t%d [shape=ellipse, label=\"", t);
    dot_label(o, mirs_tensor_name(g, t));
    fprintf(o, "\\n%s", mirs_dtype_name(mirs_tensor_dtype(g, t)));
    put_dims(o, n, d);
    fputs("\"];\n", o);
  }
  for (int k = 0; k < mirs_graph_num_ops(g); k++) {
    mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
    mirs_status s = mirs_graph_kernel(g, k, &kv);
    if (s != MIRS_OK)
      return s;
    if (!kv.block) {
      fprintf(o, "  k%d [shape=box, label=\"%s", k, mirs_op_name(kv.op));
      if (kv.dim >= 0)
        fprintf(o, " dim=%d", kv.dim);
      fputs("\"];\n", o);
      for (int i = 0; i < kv.num_inputs; i++)
        fprintf(o, "  t%d -> k%d;\n", (int)kv.inputs[i], k);
      for (int i = 0; i < kv.num_outputs; i++)
        fprintf(o, "  k%d -> t%d;\n", k, (int)kv.outputs[i]);
      continue;
    }
    fprintf(o, "  subgraph cluster_k%d {\n    label=\"kernel %d: grid=", k, k + 1);
    put3(o, kv.grid);
    fputs(" block=", o);
    put3(o, kv.block_dims);
    fprintf(o, " forloop=%d\";\n    style=rounded;\n", kv.forloop);
    for (int b = 0; b < kv.num_block_ops; b++) {
      mirs_block_op_view bv = MIRS_BLOCK_OP_VIEW_INIT;
      if ((s = mirs_block_graph_op(kv.block, b, &bv)) != MIRS_OK)
        return s;
      fprintf(o, "    k%db%d [shape=box%s, label=\"", k, b, bv.fused ? ", style=dashed" : "");
      if (bv.output >= 0) {
        dot_label(o, mirs_block_tensor_name(kv.block, bv.output));
        fputs(" = ", o);
      }
      fprintf(o, "%s", mirs_op_name(bv.op));
      if (bv.op == MIRS_OP_INPUT)
        fprintf(o, " imap=[%d,%d,%d] fmap=%d", bv.imap[0], bv.imap[1], bv.imap[2], bv.fmap);
      if (bv.op == MIRS_OP_OUTPUT)
        fprintf(o, " omap=[%d,%d,%d]", bv.omap[0], bv.omap[1], bv.omap[2]);
      fputs("\"];\n", o);
    }
    fputs("  }\n", o);
    /* Edges: from each block tensor's producer to its consumers. */
    for (int b = 0; b < kv.num_block_ops; b++) {
      mirs_block_op_view bv = MIRS_BLOCK_OP_VIEW_INIT;
      if ((s = mirs_block_graph_op(kv.block, b, &bv)) != MIRS_OK)
        return s;
      if (bv.op == MIRS_OP_INPUT)
        fprintf(o, "  t%d -> k%db%d;\n", (int)bv.src, k, b);
      if (bv.op == MIRS_OP_OUTPUT)
        fprintf(o, "  k%db%d -> t%d;\n", k, b, (int)bv.dst);
      for (int i = 0; i < bv.num_inputs; i++)
        for (int p = 0; p < b; p++) {
          mirs_block_op_view pv = MIRS_BLOCK_OP_VIEW_INIT;
          if (mirs_block_graph_op(kv.block, p, &pv) == MIRS_OK && pv.output == bv.inputs[i])
            fprintf(o, "  k%db%d -> k%db%d;\n", k, p, k, b);
        }
    }
  }
  fputs("}\n", o);
  return MIRS_OK;
}
