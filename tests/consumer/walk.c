/* SPDX-License-Identifier: MIT */
/* tests/consumer/walk.c - an embedding compiler that superoptimises a
 * program and walks the best result, as an embedder would: built only
 * against the *installed* headers and library (pkg-config) by
 * tests/embedded.sh.
 *
 *   walk PROGRAM.graph RESULT.ugraph REPORT.json
 *
 * searches PROGRAM (a bounded search), writes its best result to RESULT
 * (for `mirsearch show RESULT` to summarise), the library's JSON report to
 * REPORT, and prints its own summary of the best result on stdout by
 * walking its kernels, launch shapes, maps and block ops through the
 * public views and the cost query.  The summary format is the one
 * `mirsearch show` documents (README "Reading a result"); embedded.sh
 * compares the two outputs byte for byte.  Written independently of
 * src/cli/show.c on purpose: it shows the public API is enough. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mirsearch.h>

static mirs_context *ctx;

/* Abort the test with the library's message. */
static void need(mirs_status s, const char *what) {
  if (s != MIRS_OK) {
    fprintf(stderr, "walk: %s: %s: %s\n", what, mirs_status_name(s), mirs_last_error(ctx));
    exit(1);
  }
}

/* "[a, b, ...]" of n 64-bit dims into buf. */
static const char *dims_str(char *buf, size_t size, int n, const int64_t *d) {
  size_t k = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && k < size; i++)
    k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, i ? ", " : "", d[i]);
  if (k < size)
    snprintf(buf + k, size - k, "]");
  return buf;
}

/* "NAME dtype[dims]" of a kernel tensor. */
static const char *tensor_str(char *buf, size_t size, const mirs_graph *g, mirs_tensor t) {
  int64_t d[MIRS_MAX_DIMS];
  char dims[128];
  snprintf(buf, size, "%s %s%s", mirs_tensor_name(g, t), mirs_dtype_name(mirs_tensor_dtype(g, t)),
           dims_str(dims, sizeof dims, mirs_tensor_shape(g, t, d), d));
  return buf;
}

/* "1.234 us" or "infeasible: why". */
static const char *cost_str(char *buf, size_t size, const mirs_cost *c) {
  if (c->feasible)
    snprintf(buf, size, "%.3f us", c->seconds * 1e6);
  else
    snprintf(buf, size, "infeasible: %s", c->reason);
  return buf;
}

/* Print the summary of g. */
static void summarise(const mirs_graph *g) {
  char a[256], b[256], dev[64] = "?";
  mirs_cost total = MIRS_COST_INIT;
  need(mirs_graph_cost(ctx, g, NULL, &total), "mirs_graph_cost");
  need(mirs_option_get(ctx, "cost_device", dev, sizeof dev), "cost_device");
  int nk = mirs_graph_num_ops(g), nc = mirs_graph_num_custom(g);
  printf("%s %s: %d kernel%s (%d custom), predicted %s on %s\n", nc ? "ugraph" : "program",
         mirs_graph_name(g), nk, nk == 1 ? "" : "s", nc, cost_str(a, sizeof a, &total), dev);
  printf("inputs:");
  const char *sep = " ";
  for (mirs_tensor t = 0; t < mirs_graph_num_tensors(g); t++) {
    if (mirs_tensor_producer(g, t) >= 0)
      continue;
    printf("%s%s", sep, tensor_str(a, sizeof a, g, t));
    sep = ", ";
  }
  printf("\n");
  for (int k = 0; k < nk; k++) {
    mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
    mirs_cost kc = MIRS_COST_INIT;
    need(mirs_graph_kernel(g, k, &kv), "mirs_graph_kernel");
    need(mirs_graph_kernel_cost(ctx, g, k, NULL, &kc), "mirs_graph_kernel_cost");
    if (!kv.block) {
      char args[256] = "";
      for (int i = 0; i < kv.num_inputs; i++) {
        strcat(args, i ? ", " : "");
        strcat(args, mirs_tensor_name(g, kv.inputs[i]));
      }
      if (kv.dim >= 0)
        snprintf(args + strlen(args), sizeof args - strlen(args), ", dim=%d", kv.dim);
      printf("kernel %d: %s(%s) -> %s, %s\n", k + 1, mirs_op_name(kv.op), args,
             tensor_str(a, sizeof a, g, kv.outputs[0]), cost_str(b, sizeof b, &kc));
      continue;
    }
    printf("kernel %d: custom grid=[%d, %d, %d] block=[%d, %d, %d] forloop=%d, smem %" PRId64
           " B, %s\n",
           k + 1, kv.grid[0], kv.grid[1], kv.grid[2], kv.block_dims[0], kv.block_dims[1],
           kv.block_dims[2], kv.forloop, kc.smem_bytes, cost_str(b, sizeof b, &kc));
    for (int i = 0; i < kv.num_block_ops; i++) {
      mirs_block_op_view op = MIRS_BLOCK_OP_VIEW_INIT;
      need(mirs_block_graph_op(kv.block, i, &op), "mirs_block_graph_op");
      if (op.op == MIRS_OP_OUTPUT) {
        printf("    %s = output(%s) omap=[%d, %d, %d]\n", mirs_tensor_name(g, op.dst),
               mirs_block_tensor_name(kv.block, op.inputs[0]), op.omap[0], op.omap[1],
               op.omap[2]);
        continue;
      }
      char args[256] = "";
      if (op.op == MIRS_OP_INPUT)
        strcat(args, mirs_tensor_name(g, op.src));
      for (int j = 0; j < op.num_inputs; j++) {
        strcat(args, j ? ", " : "");
        strcat(args, mirs_block_tensor_name(kv.block, op.inputs[j]));
      }
      if (op.dim >= 0)
        snprintf(args + strlen(args), sizeof args - strlen(args), ", dim=%d", op.dim);
      int64_t d[MIRS_MAX_DIMS];
      printf("    %s = %s(%s) %s", mirs_block_tensor_name(kv.block, op.output),
             mirs_op_name(op.op), args,
             dims_str(a, sizeof a, mirs_block_tensor_shape(kv.block, op.output, d), d));
      if (op.op == MIRS_OP_INPUT)
        printf(" imap=[%d, %d, %d] fmap=%d", op.imap[0], op.imap[1], op.imap[2], op.fmap);
      printf("%s\n", op.fused ? " fused" : "");
    }
  }
  printf("outputs:");
  for (int i = 0; i < mirs_graph_num_outputs(g); i++)
    printf("%s%s", i ? ", " : " ", tensor_str(a, sizeof a, g, mirs_graph_output(g, i)));
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: walk PROGRAM.graph RESULT.ugraph REPORT.json\n");
    return 2;
  }
  if (mirs_context_create(&ctx) != MIRS_OK)
    return 1;
  mirs_graph *p;
  need(mirs_graph_parse_file(ctx, argv[1], &p), "parse");
  need(mirs_option_set(ctx, "max_states", "20000"), "max_states");
  mirs_search *s;
  need(mirs_search_create(ctx, p, &s), "mirs_search_create");
  need(mirs_search_run(s), "mirs_search_run");
  if (mirs_search_num_results(s) < 1) {
    fprintf(stderr, "walk: no result\n");
    return 1;
  }
  mirs_search_stats st;
  need(mirs_search_get_stats(s, &st), "stats");
  if (st.struct_size != sizeof st)
    return 1;
  const mirs_graph *best = mirs_search_result(s, 0);
  need(mirs_graph_write_file(best, argv[2]), "write result");
  char *json = NULL;
  size_t len = 0;
  need(mirs_search_report_json(s, 0, &json, &len), "report");
  FILE *f = fopen(argv[3], "w");
  if (!f || fwrite(json, 1, len, f) != len || fclose(f) != 0)
    return 1;
  mirs_free(ctx, json);
  summarise(best);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
  return 0;
}
