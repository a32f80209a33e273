/* SPDX-License-Identifier: MIT */
/* tests/check_api.c - the embedder's API: printing (mirs_graph_print must
 * succeed on success), strings through the context allocator, walking a
 * µGraph's kernels and block ops, the cost query, sized structs and the
 * JSON report of a search. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Counting allocator: every byte the library allocates goes through it. */
typedef struct counting {
  size_t live, calls;
} counting;

static void *count_alloc(void *user, void *ptr, size_t osize, size_t nsize) {
  counting *c = user;
  c->calls++;
  if (nsize == 0) {
    c->live -= osize;
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p)
    c->live += nsize - (ptr ? osize : 0);
  return p;
}

/* mirs_graph_print returned MIRS_IO after every successful non-empty print. */
START_TEST(test_print_ok) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.ugraph"), &g),
                   MIRS_OK);
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(mirs_graph_print(g, f), MIRS_OK);
  long printed = ftell(f);
  char *text = NULL;
  ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
  ck_assert_int_eq(printed, (long)strlen(text));
  ck_assert_int_gt(printed, 100);
  fclose(f);
  mirs_free(ctx, text);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* mirs_graph_to_string allocates through the context's allocator, and
 * mirs_free gives it back there. */
START_TEST(test_to_string_allocator) {
  counting c = {0, 0};
  mirs_context *ctx;
  ck_assert_int_eq(mirs_context_create_with_allocator(count_alloc, &c, &ctx), MIRS_OK);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &g),
                   MIRS_OK);
  size_t before = mirs_memory_current(ctx), live = c.live;
  char *text = NULL;
  ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(text, "rms_norm(X)"));
  ck_assert_uint_gt(mirs_memory_current(ctx), before);
  ck_assert_uint_gt(c.live, live);
  mirs_free(ctx, text);
  ck_assert_uint_eq(mirs_memory_current(ctx), before);
  ck_assert_uint_eq(c.live, live);
  mirs_free(ctx, NULL);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  ck_assert_uint_eq(c.live, 0);
}
END_TEST

/* Walk the fused rmsnorm_linear µGraph: one custom kernel, its launch
 * shape, maps and block ops, as the example file spells them. */
START_TEST(test_walk_custom_kernel) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.ugraph"), &g),
                   MIRS_OK);
  ck_assert_int_eq(mirs_graph_num_ops(g), 1);
  mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, 0, &kv), MIRS_OK);
  ck_assert_uint_eq(kv.struct_size, sizeof kv);
  ck_assert_int_eq(kv.op, MIRS_OP_CUSTOM);
  ck_assert_int_eq(kv.num_inputs, 2);
  ck_assert_str_eq(mirs_tensor_name(g, kv.inputs[0]), "X");
  ck_assert_str_eq(mirs_tensor_name(g, kv.inputs[1]), "W");
  ck_assert_int_eq(kv.num_outputs, 1);
  ck_assert_str_eq(mirs_tensor_name(g, kv.outputs[0]), "O");
  ck_assert_int_eq(mirs_tensor_producer(g, kv.outputs[0]), 0);
  ck_assert_int_eq(mirs_tensor_producer(g, kv.inputs[0]), -1);
  ck_assert_ptr_nonnull(kv.block);
  ck_assert_int_eq(kv.grid[0], 4);
  ck_assert_int_eq(kv.grid[1], 1);
  ck_assert_int_eq(kv.block_dims[0], 128);
  ck_assert_int_eq(kv.forloop, 8);
  ck_assert_int_eq(kv.num_block_ops, 7);
  static const mirs_op ops[] = {MIRS_OP_INPUT, MIRS_OP_INPUT, MIRS_OP_MATMUL, MIRS_OP_ACCUM,
                                MIRS_OP_ACCUM_RMS, MIRS_OP_DIV, MIRS_OP_OUTPUT};
  for (int i = 0; i < kv.num_block_ops; i++) {
    mirs_block_op_view bv = MIRS_BLOCK_OP_VIEW_INIT;
    ck_assert_int_eq(mirs_block_graph_op(kv.block, i, &bv), MIRS_OK);
    ck_assert_int_eq(bv.op, ops[i]);
  }
  mirs_block_op_view in = MIRS_BLOCK_OP_VIEW_INIT, out = MIRS_BLOCK_OP_VIEW_INIT,
                     dv = MIRS_BLOCK_OP_VIEW_INIT;
  ck_assert_int_eq(mirs_block_graph_op(kv.block, 1, &in), MIRS_OK);
  ck_assert_str_eq(mirs_tensor_name(g, in.src), "W");
  ck_assert_int_eq(in.imap[0], 1);
  ck_assert_int_eq(in.imap[1], -1);
  ck_assert_int_eq(in.fmap, 0);
  ck_assert_str_eq(mirs_block_tensor_name(kv.block, in.output), "w");
  int64_t dims[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_block_tensor_shape(kv.block, in.output, dims), 2);
  ck_assert_int_eq(dims[0], 16);
  ck_assert_int_eq(dims[1], 64);
  ck_assert_int_eq(mirs_block_graph_op(kv.block, 5, &dv), MIRS_OK);
  ck_assert_int_eq(dv.fused, 1);
  ck_assert_int_eq(dv.num_inputs, 2);
  ck_assert_str_eq(mirs_block_tensor_name(kv.block, dv.inputs[0]), "a");
  ck_assert_int_eq(mirs_block_graph_op(kv.block, 6, &out), MIRS_OK);
  ck_assert_int_eq(out.omap[0], 1);
  ck_assert_str_eq(mirs_tensor_name(g, out.dst), "O");
  ck_assert_int_eq(out.output, -1);
  /* Misuse is reported, not crashed on. */
  ck_assert_int_eq(mirs_block_graph_op(kv.block, 7, &out), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_kernel(g, 1, &kv), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_kernel(g, -1, &kv), MIRS_INVALID_ARG);
  ck_assert_ptr_null(mirs_block_tensor_name(kv.block, 99));
  mirs_kernel_view zero;
  memset(&zero, 0, sizeof zero);
  ck_assert_int_eq(mirs_graph_kernel(g, 0, &zero), MIRS_INVALID_ARG);
  /* A caller built against a smaller view gets only its part. */
  struct {
    mirs_kernel_view v;
    int guard;
  } small;
  memset(&small, 0x5a, sizeof small);
  small.v.struct_size = offsetof(mirs_kernel_view, num_outputs);
  ck_assert_int_eq(mirs_graph_kernel(g, 0, &small.v), MIRS_OK);
  ck_assert_uint_eq(small.v.struct_size, offsetof(mirs_kernel_view, num_outputs));
  ck_assert_int_eq(small.v.num_inputs, 2);
  ck_assert_int_eq(small.v.num_outputs, 0x5a5a5a5a);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The program's kernels: predefined ops with their tensors. */
START_TEST(test_walk_program) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &g),
                   MIRS_OK);
  ck_assert_int_eq(mirs_graph_num_ops(g), 2);
  mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, 1, &kv), MIRS_OK);
  ck_assert_int_eq(kv.op, MIRS_OP_MATMUL);
  ck_assert_ptr_null(kv.block);
  ck_assert_str_eq(mirs_tensor_name(g, kv.inputs[0]), "D");
  ck_assert_int_eq(mirs_tensor_producer(g, kv.inputs[0]), 0);
  ck_assert_int_eq(kv.forloop, 0);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The cost query: the fused kernel beats the two-launch program; a kernel's
 * cost has its shared memory; an unknown device is refused. */
START_TEST(test_cost_query) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p, *u;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &p),
                   MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.ugraph"), &u),
                   MIRS_OK);
  mirs_cost cp = MIRS_COST_INIT, cu = MIRS_COST_INIT, ck = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_cost(ctx, p, NULL, &cp), MIRS_OK);
  ck_assert_int_eq(mirs_graph_cost(ctx, u, "H100", &cu), MIRS_OK);
  ck_assert_int_eq(cp.kernels, 2);
  ck_assert_int_eq(cu.kernels, 1);
  ck_assert(cp.feasible && cu.feasible);
  ck_assert(cu.seconds > 0 && cu.seconds < cp.seconds);
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, u, 0, NULL, &ck), MIRS_OK);
  ck_assert(ck.smem_bytes > 0);
  ck_assert_int_eq(ck.blocks, 4);
  ck_assert(fabs(ck.seconds - cu.seconds) < 1e-15);
  ck_assert_int_eq(mirs_graph_cost(ctx, u, "NoSuchGPU", &cu), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "H100"));
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, u, 3, NULL, &ck), MIRS_INVALID_ARG);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* The terms of a predicted time (show --cost): a kernel's seconds lies
 * between its fixed cost plus the larger of memory and compute and its
 * fixed cost plus both (a cp.async pipeline overlaps all but one
 * iteration's worth); a predefined op's is exactly fixed plus the larger;
 * a graph's terms are its kernels' sums; a custom kernel has its plan's
 * registers, stages, occupancy and bank-conflict factor; the tail of a
 * split-K pair run as one launch has no fixed cost, its head one launch
 * more than a lone kernel (the counters' memset); and a caller's struct of
 * the size before these fields gets none of them. */
START_TEST(test_cost_terms) {
  static const char *const files[] = {"examples/rmsnorm_linear_small.graph",
                                      "examples/best/gqa_hd128.ugraph",
                                      "examples/best/gqa_safe.ugraph",
                                      "examples/best/rmsnorm_linear.ugraph"};
  mirs_context *ctx = tu_ctx(NULL);
  /* (a split-K pair as one launch: off by default) */
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK);
  double lone_fixed = -1, head_fixed = -1;
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    mirs_graph *g;
    ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src(files[f]), &g), MIRS_OK);
    mirs_cost total = MIRS_COST_INIT;
    ck_assert_int_eq(mirs_graph_cost(ctx, g, "H100", &total), MIRS_OK);
    ck_assert(total.feasible);
    double fixed = 0, mem = 0, comp = 0, eps = 1e-12;
    for (int k = 0; k < mirs_graph_num_ops(g); k++) {
      mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
      mirs_cost c = MIRS_COST_INIT;
      ck_assert_int_eq(mirs_graph_kernel(g, k, &kv), MIRS_OK);
      ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, k, "H100", &c), MIRS_OK);
      ck_assert(c.memory_seconds > 0 && c.compute_seconds > 0);
      double hi = fmax(c.memory_seconds, c.compute_seconds);
      ck_assert_msg(c.seconds >= c.fixed_seconds + hi - eps &&
                        c.seconds <= c.fixed_seconds + c.memory_seconds + c.compute_seconds + eps,
                    "%s kernel %d: %g not within its terms", files[f], k, c.seconds);
      if (kv.block) {
        ck_assert(c.registers > 0 && c.registers <= 255);
        ck_assert(c.stages >= 1 && c.blocks_per_sm >= 1 && c.bank_conflicts >= 1);
        if (c.split_k_pair == 2)
          ck_assert(c.fixed_seconds == 0);
        else if (c.split_k_pair == 1)
          head_fixed = c.fixed_seconds;
        else
          lone_fixed = c.fixed_seconds;
      } else {
        ck_assert(fabs(c.seconds - (c.fixed_seconds + hi)) < eps);
        ck_assert(c.registers == 0 && c.stages == 0 && c.blocks_per_sm == 0);
      }
      fixed += c.fixed_seconds;
      mem += c.memory_seconds;
      comp += c.compute_seconds;
    }
    ck_assert(fabs(total.fixed_seconds - fixed) < eps && fabs(total.memory_seconds - mem) < eps &&
              fabs(total.compute_seconds - comp) < eps);
    mirs_graph_destroy(g);
  }
  ck_assert(lone_fixed > 0 && head_fixed > lone_fixed);
  /* (a struct of the earlier size: the new fields are not written) */
  mirs_graph *u;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src(files[1]), &u), MIRS_OK);
  mirs_cost old = MIRS_COST_INIT;
  old.struct_size = offsetof(mirs_cost, fixed_seconds);
  old.fixed_seconds = -7;
  old.bank_conflicts = -7;
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, u, 1, NULL, &old), MIRS_OK);
  ck_assert_uint_eq(old.struct_size, offsetof(mirs_cost, fixed_seconds));
  ck_assert(old.seconds > 0 && old.fixed_seconds == -7 && old.bank_conflicts == -7);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* Sized structs: stats and verify results fill at most what was passed. */
START_TEST(test_sized_structs) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p, *u;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &p),
                   MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.ugraph"), &u),
                   MIRS_OK);
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(ctx, p, u, &v), MIRS_OK);
  ck_assert_uint_eq(v.struct_size, sizeof v);
  ck_assert_int_eq(v.equal, 1);
  struct {
    mirs_verify_result v;
    int guard;
  } small;
  memset(&small, 0x33, sizeof small);
  size_t part = offsetof(mirs_verify_result, trials);
  ck_assert_int_eq(mirs_verify_sized(ctx, p, u, &small.v, part), MIRS_OK);
  ck_assert_uint_eq(small.v.struct_size, part);
  ck_assert_int_eq(small.v.equal, 1);
  ck_assert_int_eq(small.v.trials, 0x33333333);
  ck_assert_int_eq(mirs_verify_sized(ctx, p, u, &small.v, 0), MIRS_INVALID_ARG);

  mirs_search *s;
  ck_assert_int_eq(mirs_option_set(ctx, "max_states", "200"), MIRS_OK);
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_uint_eq(st.struct_size, sizeof st);
  ck_assert_int_eq(mirs_search_get_stats_sized(s, &st, 3), MIRS_INVALID_ARG);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* The report: valid-looking JSON with groups, launches and the unfused time;
 * top limits the listed results. */
START_TEST(test_report_json) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &p),
                   MIRS_OK);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  char *json = NULL;
  size_t len = 0;
  ck_assert_int_eq(mirs_search_report_json(s, 0, &json, &len), MIRS_INVALID_ARG); /* not run */
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 1);
  ck_assert_int_eq(mirs_search_report_json(s, 0, &json, &len), MIRS_OK);
  ck_assert_uint_eq(len, strlen(json));
  ck_assert_ptr_nonnull(strstr(json, "\"unfused\": {\"kernels\": 2, \"predicted_seconds\": "));
  ck_assert_ptr_nonnull(strstr(json, "\"groups\": ["));
  ck_assert_ptr_nonnull(strstr(json, "\"launches\": [{\"op\": \"custom\", \"grid\": ["));
  ck_assert_ptr_nonnull(strstr(json, "\"smem_bytes\": "));
  ck_assert_ptr_nonnull(strstr(json, "\"forloop\": "));
  ck_assert_ptr_nonnull(strstr(json, "\"speedup_vs_unfused\": "));
  char want[64];
  snprintf(want, sizeof want, "\"results_total\": %d", n);
  ck_assert_ptr_nonnull(strstr(json, want));
  int ranks = 0;
  for (const char *q = json; (q = strstr(q, "{\"rank\": ")) != NULL; q++)
    ranks++;
  ck_assert_int_eq(ranks, n);
  mirs_free(ctx, json);
  ck_assert_int_eq(mirs_search_report_json(s, 1, &json, &len), MIRS_OK);
  ranks = 0;
  for (const char *q = json; (q = strstr(q, "{\"rank\": ")) != NULL; q++)
    ranks++;
  ck_assert_int_eq(ranks, 1);
  ck_assert_ptr_nonnull(strstr(json, "\"results_listed\": 1,"));
  mirs_free(ctx, json);
  char name[64];
  ck_assert_int_eq(mirs_search_result_file_name(s, 0, name, sizeof name), MIRS_OK);
  ck_assert_int_eq((int)strlen(name), 4 + 1 + 16 + 7);
  ck_assert_int_eq(strncmp(name, "0001-", 5), 0);
  ck_assert_int_eq(mirs_search_result_file_name(s, n, name, sizeof name), MIRS_INVALID_ARG);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *api_suite(void) {
  Suite *s = suite_create("api");
  TCase *t = tcase_create("api");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, test_print_ok);
  tcase_add_test(t, test_to_string_allocator);
  tcase_add_test(t, test_walk_custom_kernel);
  tcase_add_test(t, test_walk_program);
  tcase_add_test(t, test_cost_query);
  tcase_add_test(t, test_cost_terms);
  tcase_add_test(t, test_sized_structs);
  tcase_add_test(t, test_report_json);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  return tu_run(api_suite());
}
