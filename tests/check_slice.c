/* SPDX-License-Identifier: MIT */
/* tests/check_slice.c - the layout operator slice(x, dim=D, start=S,
 * len=L) (a fused QKV projection's split): parse errors at the value they
 * are about, the canonical round trip and `show`, the builder API, the
 * float64 interpreter against values computed here from the inputs,
 * fingerprints (equal slices verify equal, other starts do not), the
 * generated copy kernels (16 bytes a thread where the runs line up) run
 * on the host against eval, and `partition` of the GPT-2 block example
 * whose c_attn output is split in three. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "graph/graph.h"
#include "verify/fingerprint.h"

static void setup(void) {
  tu_scratch_make("slice");
}

static void teardown(void) {
  tu_scratch_remove();
}

START_TEST(test_parse_errors_have_positions) {
  const char *f = tu_put("bad.graph", "program e\n"
                                      "input X : f32[2, 3, 8]\n"
                                      "A = slice(X, dim=3, start=0, len=1)\n"
                                      "B = slice(X, dim=-1, start=8, len=1)\n"
                                      "C = slice(X, dim=1, start=1, len=3)\n"
                                      "D = slice(X, dim=1, start=1, len=0)\n"
                                      "E = slice(X, dim=1, start=-1, len=1)\n"
                                      "F = slice(X, dim=1, start=0)\n"
                                      "G = slice(X, X, dim=1, start=0, len=1)\n"
                                      "H = slice(X, dim=[1], start=0, len=1)\n"
                                      "I = slice(X, dims=1, start=0, len=1)\n"
                                      "J = slice(X, dim=-4, start=0, len=1)\n"
                                      "output X\n");
  run r;
  run_cli(&r, "check", f, NULL);
  ck_assert_int_eq(r.rc, 2);
  static const char *const want[] = {
      ":3:18: error: slice: dim=3 is out of range for [2, 3, 8] (valid: -3 to 2)",
      ":4:28: error: slice: start=8 is out of range for dim 2 of [2, 3, 8] (valid: 0 to 7)",
      ":5:34: error: slice: len=3 does not fit: dim 1 of [2, 3, 8] has 2 elements from start=1",
      ":6:34: error: slice: len=0 does not fit",
      ":7:27: error: slice: start=-1 is out of range for dim 1",
      ":8:28: error: 'slice' requires len=",
      ":9:14: error: 'slice' takes 1 argument, got 2",
      ":10:18: error: dim= takes an integer, not a list",
      ":11:14: error: unknown keyword argument 'dims' for 'slice'",
      ":12:18: error: slice: dim=-4 is out of range",
  };
  tu_assert_contains(r.err, want, sizeof want / sizeof want[0]);
  run_free(&r);
}
END_TEST

START_TEST(test_round_trip_and_show) {
  const char *f = tu_put("rt.graph", "program p\n"
                                     "input X : f32[2, 3, 8]\n"
                                     "A = slice(X, dim=-1, start=2, len=4)\n"
                                     "B = slice(X, dim=0, start=1, len=1)\n"
                                     "output A, B\n");
  static const char *const want[] = {"A = slice(X, dim=2, start=2, len=4)\n",
                                     "B = slice(X, dim=0, start=1, len=1)\n"};
  tu_assert_round_trip(f, want, sizeof want / sizeof want[0]);
  run r;
  run_cli(&r, "show", f, NULL);
  ck_assert_int_eq(r.rc, 0);
  static const char *const shown[] = {"slice(X, dim=2, start=2, len=4) -> A f32[2, 3, 4]",
                                      "slice(X, dim=0, start=1, len=1) -> B f32[1, 3, 8]",
                                      "program p: 2 kernels"};
  tu_assert_contains(r.out, shown, sizeof shown / sizeof shown[0]);
  run_free(&r);
}
END_TEST

START_TEST(test_builder_api) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, "api", &g), MIRS_OK);
  int64_t xd[] = {4, 192};
  mirs_tensor x, k, bad;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F16, 2, xd, &x), MIRS_OK);
  int64_t ks[] = {-1, 64, 64}, past[] = {1, 150, 64}, two[] = {1, 0};
  ck_assert_int_eq(mirs_graph_add_layout(g, "K", MIRS_OP_SLICE, x, 3, ks, &k), MIRS_OK);
  int64_t dims[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_tensor_shape(g, k, dims), 2);
  ck_assert(dims[0] == 4 && dims[1] == 64);
  ck_assert_int_eq(mirs_graph_add_layout(g, NULL, MIRS_OP_SLICE, x, 3, past, &bad), MIRS_SHAPE);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "len=64 does not fit"));
  ck_assert_int_eq(mirs_graph_add_layout(g, NULL, MIRS_OP_SLICE, x, 2, two, &bad), MIRS_SHAPE);
  /* mirs_graph_add_op cannot make one: the attribute is required. */
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_SLICE, 1, &x, &bad), MIRS_SHAPE);
  /* The kernel view reports the resolved {dim, start, len}. */
  mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, mirs_tensor_producer(g, k), &kv), MIRS_OK);
  ck_assert_int_eq(kv.op, MIRS_OP_SLICE);
  ck_assert_int_eq(kv.num_layout_dims, 3);
  ck_assert(kv.layout_dims[0] == 1 && kv.layout_dims[1] == 64 && kv.layout_dims[2] == 64);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_interp_by_hand) {
  /* X[a][b][c] of shape [2, 3, 8]; the input value of element e is
   * mirs_input_value(1, "X", e). */
  static const char *const prog = "program p\ninput X : f32[2, 3, 8]\n"
                                  "A = slice(X, dim=-1, start=2, len=4)\n"
                                  "B = slice(X, dim=1, start=1, len=2)\n"
                                  "C = slice(X, dim=0, start=1, len=1)\n"
                                  "output A, B, C\n";
  double x[48], a[24], b[32], c[24];
  for (int e = 0; e < 48; e++)
    x[e] = mirs_input_value(1, "X", (uint64_t)e);
  tu_eval_output(prog, "A", a, 24);
  tu_eval_output(prog, "B", b, 32);
  tu_eval_output(prog, "C", c, 24);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        ck_assert(a[(i * 3 + j) * 4 + k] == x[(i * 3 + j) * 8 + k + 2]); /* A [2, 3, 4] */
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 8; k++)
        ck_assert(b[(i * 2 + j) * 8 + k] == x[(i * 3 + j + 1) * 8 + k]); /* B [2, 2, 8] */
  for (int e = 0; e < 24; e++)
    ck_assert(c[e] == x[24 + e]); /* C [1, 3, 8] */
}
END_TEST

START_TEST(test_hash_distinguishes_attributes) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *head = "program p\ninput X : f32[4, 12]\n";
  char a[256], b[256], c[256], d[256];
  snprintf(a, sizeof a, "%sS = slice(X, dim=1, start=0, len=4)\noutput S\n", head);
  snprintf(b, sizeof b, "%sS = slice(X, dim=1, start=4, len=4)\noutput S\n", head);
  snprintf(c, sizeof c, "%sS = slice(X, dim=-1, start=4, len=4)\noutput S\n", head);
  snprintf(d, sizeof d, "%sS = slice(X, dim=0, start=0, len=4)\noutput S\n", head);
  mirs_graph *ga = tu_parse(ctx, a), *gb = tu_parse(ctx, b), *gc = tu_parse(ctx, c), *gd = tu_parse(ctx, d);
  ck_assert(mirs_graph_hash(ga) != mirs_graph_hash(gb));
  ck_assert(mirs_graph_hash(gb) == mirs_graph_hash(gc)); /* the dim is resolved */
  ck_assert(mirs_graph_hash(ga) != mirs_graph_hash(gd));
  mirs_graph_destroy(ga);
  mirs_graph_destroy(gb);
  mirs_graph_destroy(gc);
  mirs_graph_destroy(gd);
  mirs_context_destroy(ctx);
}
END_TEST

#define X412 "program p\ninput X : f32[4, 12]\n"

START_TEST(test_fingerprints) {
  /* A slice of a slice is one slice; the slice of a permute is the permute
   * of a slice; a slice of the whole dim is x; another start differs. */
  const char *one = tu_put("one.graph", X412 "S = slice(X, dim=1, start=6, len=3)\n"
                                             "E = exp(S)\noutput E\n");
  const char *two = tu_put("two.graph", X412 "A = slice(X, dim=1, start=4, len=8)\n"
                                             "S = slice(A, dim=1, start=2, len=3)\n"
                                             "E = exp(S)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(one, two), 0);
  const char *off = tu_put("off.graph", X412 "S = slice(X, dim=1, start=5, len=3)\n"
                                             "E = exp(S)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(one, off), 1);
  const char *ps = tu_put("ps.graph", X412 "P = permute(X, dims=[1, 0])\n"
                                           "S = slice(P, dim=0, start=6, len=3)\n"
                                           "E = exp(S)\noutput E\n");
  const char *sp = tu_put("sp.graph", X412 "S = slice(X, dim=1, start=6, len=3)\n"
                                           "P = permute(S, dims=[1, 0])\n"
                                           "E = exp(P)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(ps, sp), 0);
  one = tu_put("one.graph", X412 "S = slice(X, dim=1, start=6, len=3)\n" /* (tu_put's 4 slots) */
                                 "E = exp(S)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(ps, one), 1); /* (transposed) */
  const char *id = tu_put("id.graph", X412 "E = exp(X)\noutput E\n");
  const char *all = tu_put("all.graph", X412 "S = slice(X, dim=0, start=0, len=4)\n"
                                             "E = exp(S)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(id, all), 0);
  /* (the GPU backend's slice kernel: tests/check_gpufp.c) */
}
END_TEST

/* A fused QKV projection split three ways along the last dim: views of
 * Y at offsets 0, 64 and 128 (64 halves a row), read in place by A and
 * B; slices that are outputs are copies: one that keeps the last dim
 * (16-byte copies), one whose start breaks the 16-byte runs (element
 * copies) and one of a view. */
static const char *const CG = "program cg\n"
                              "input X : f16[8, 64]\ninput W : f16[64, 192]\n"
                              "Y = matmul(X, W)\n"
                              "Q = slice(Y, dim=1, start=0, len=64)\n"
                              "K = slice(Y, dim=1, start=64, len=64)\n"
                              "V = slice(Y, dim=-1, start=128, len=64)\n"
                              "R = slice(Y, dim=0, start=2, len=4)\n"
                              "U = slice(Y, dim=1, start=3, len=60)\n"
                              "Y3 = reshape(Y, shape=[8, 3, 64])\n"
                              "Z = slice(Y3, dim=1, start=1, len=1)\n"
                              "A = add(Q, K)\nB = add(A, V)\n"
                              "output B, R, U, Z\n";

START_TEST(test_codegen_copies) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = tu_parse(ctx, CG);
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, "sl", &cu), MIRS_OK);
  static const char *const want[] = {
      "/* op 1: Q = slice(Y): a view, no kernel */",
      "/* op 2: K = slice(Y): a view, no kernel */",
      "/* op 3: V = slice(Y): a view, no kernel */",
      "kernel 4: slice -> R (16-byte copies of the slice's rows)",
      "kernel 5: slice -> U (element copies of the slice, in order)",
      "kernel 7: slice -> Z (16-byte copies of the slice's rows)",
      "const long long s = 384LL + c0 * 192 + c1 * 8;", /* R: from row 2 */
      "const long long s = 3LL + c0 * 192 + c1 * 1;",   /* U: element by element */
      "const long long s = 64LL + c0 * 192 + c2 * 8;",  /* Z: Y3's middle third */
      "mirs_copy16(out0 + e * 8, in0 + s);",
      "/* op 6: Y3 = reshape(Y): a view, no kernel */",
      /* A = Q + K: both Y's rows of 192, K from Y's buffer + 64 */
      "v = mirs_ld(in0 + (c0 * 192 + c1 * 1)) + mirs_ld(in1 + (c0 * 192 + c1 * 1));",
      "(__half *)((char *)workspace + 0), ((__half *)((char *)workspace + 0) + 64), ",
  };
  tu_assert_contains(cu, want, sizeof want / sizeof want[0]);
  /* The cost model: a slice moves its result twice (read, write), in
   * 32-byte sectors (docs/CODEGEN.md, "Sectors in the cost model"): R's
   * rows are whole sectors, so exactly twice; U's start 6 bytes into a
   * sector makes each warp's 64 bytes touch 3 sectors (one warp, across
   * two rows, 4): 25 sectors for 16 in the 8 warps counted, so its read
   * moves 25/16 of its bytes. */
  mirs_cost c = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 4, NULL, &c), MIRS_OK);
  ck_assert(c.bytes == 2.0 * 4 * 192 * 2);
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 5, NULL, &c), MIRS_OK);
  ck_assert(c.bytes == 8 * 60 * 2 * (1.0 + 25.0 / 16));
  mirs_free(ctx, cu);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_host_run) {
  /* The copies in f16, f32 (other vector widths: 4 floats) and bf16. */
  tu_assert_host_runs_by_dtype(CG, "cg");
}
END_TEST

START_TEST(test_partition_gpt2_block) {
  /* The GPT-2 block with its fused c_attn: the three slices are library
   * pieces, the rest is searched (bounded), the stitched µGraph verifies
   * against the whole program and its code runs on the host like eval. */
  char out[700], best[700];
  snprintf(out, sizeof out, "%s/gpt2", tu_dir);
  snprintf(best, sizeof best, "%s/gpt2/best.ugraph", tu_dir);
  ck_assert_int_eq(setenv("MIRSEARCH_NO_CACHE", "1", 1), 0);
  run r;
  run_cli(&r, "partition", "--threads=1", "--time-limit=2", "-o", out,
          tu_src("examples/gpt2_block_small.graph"), NULL);
  ck_assert_msg(r.rc == 0, "partition: rc %d: %s", r.rc, r.err);
  static const char *const want[] = {"library          Q=slice", "library          K=slice",
                                     "library          V=slice",
                                     "stitched uGraph verified against the program: "};
  tu_assert_contains(r.out, want, sizeof want / sizeof want[0]);
  run_free(&r);
  /* The slices, reshapes and permutes are views in best.cu: Q, K, V read
   * at their offsets of the QKV buffer, no layout copy kernel. */
  char cu[700];
  snprintf(cu, sizeof cu, "%s/gpt2/best.cu", tu_dir);
  FILE *f = fopen(cu, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  ck_assert_int_gt(size, 0);
  rewind(f);
  char *code = malloc((size_t)size + 1);
  ck_assert_ptr_nonnull(code);
  code[fread(code, 1, (size_t)size, f)] = '\0';
  fclose(f);
  static const char *const views[] = {"Q = slice(QKV): a view, no kernel */",
                                      "K = slice(QKV): a view, no kernel */",
                                      "V = slice(QKV): a view, no kernel */"};
  tu_assert_contains(code, views, sizeof views / sizeof views[0]);
  ck_assert_msg(!strstr(code, ": slice -> ") && !strstr(code, ": permute -> "),
                "best.cu of the GPT-2 block has a layout copy kernel");
  free(code);
  tu_assert_host_run(best);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("slice");
  TCase *tc = tcase_create("slice");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_parse_errors_have_positions);
  tcase_add_test(tc, test_round_trip_and_show);
  tcase_add_test(tc, test_builder_api);
  tcase_add_test(tc, test_interp_by_hand);
  tcase_add_test(tc, test_hash_distinguishes_attributes);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_test(tc, test_codegen_copies);
  tcase_add_test(tc, test_host_run);
  tcase_add_test(tc, test_partition_gpt2_block);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run_with_cxx(suite()); /* (host runs of the generated code) */
}
