/* SPDX-License-Identifier: MIT */
/* tests/check_codegen.c - generated CUDA C, compiled as host C++ through
 * the emulation header and run on eval's seeded inputs (mirs_codegen_run
 * with MIRS_BACKEND_HOST):
 *  - the hand-written µGraphs of examples/ match their *programs* in
 *    float64 within the dtype's tolerance;
 *  - the codegen test graphs (tests/codegen: tensor cores f16/bf16/tf32,
 *    every block op and accumulator, predefined kernels, workspace,
 *    broadcasting, an input copied to an output, reductions as warp-shuffle
 *    trees) match their interpreter;
 *  - graphs the generator was not written against: the search's best and
 *    sampled other results on small examples match their programs;
 *  - a deliberately wrong µGraph fails the comparison;
 *  - `run --backend=cuda` without a device says so (MIRS_NO_DEVICE).
 * Skips (77) when there is no host C++ compiler. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cost.h"
#include "graph/graph.h"
#include "testutil.h"

/* Example µGraphs and their programs (small shapes: the emulation runs
 * every thread of every block on one core). */
static const char *const EXAMPLES[] = {"gqa_small", "mha_small", "rmsnorm_linear_small"};
#define NEXAMPLES ((int)(sizeof EXAMPLES / sizeof EXAMPLES[0]))

static const char *const TESTGRAPHS[] = {"mma_f16", "rms_bf16", "f32_mixed", "reduce_tree",
                                          "general_load"};
#define NTESTGRAPHS ((int)(sizeof TESTGRAPHS / sizeof TESTGRAPHS[0]))

/* Small examples searched for results the generator was not written against. */
static const char *const SEARCHED[] = {"rmsnorm_linear_small", "gated_mlp_small", "lora_small"};
#define NSEARCHED ((int)(sizeof SEARCHED / sizeof SEARCHED[0]))

/* Parse a file of the source tree. */
static mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

/* Host-run g on seed; its outputs' largest relative error against the
 * float64 evaluation of ref (the program, or g itself). */
static double run_against(mirs_context *ctx, const mirs_graph *g, const mirs_graph *ref,
                          uint64_t seed, const char *what) {
  mirs_eval_result *r = NULL, *e = NULL;
  double self = 0;
  ck_assert_msg(mirs_codegen_run(g, seed, MIRS_BACKEND_HOST, &r, &self) == MIRS_OK, "%s: %s",
                what, mirs_last_error(ctx));
  ck_assert_int_eq(mirs_graph_eval(ref, seed, &e), MIRS_OK);
  double err = mirs__eval_max_rel_error(e, r);
  mirs_eval_result_destroy(r);
  mirs_eval_result_destroy(e);
  return err;
}

START_TEST(test_example_ugraphs_match_programs) {
  char up[256], pp[256];
  snprintf(up, sizeof up, "examples/%s.ugraph", EXAMPLES[_i]);
  snprintf(pp, sizeof pp, "examples/%s.graph", EXAMPLES[_i]);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, up), *p = load(ctx, pp);
  double tol = mirs_codegen_tolerance(g);
  ck_assert(tol >= 1e-4 && tol <= 0.1);
  uint64_t seed = 1 + (uint64_t)_i;
  double err = run_against(ctx, g, p, seed, up);
  ck_assert_msg(err <= tol, "%s seed %llu: relative error %g > %g", up, (unsigned long long)seed,
                err, tol);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_codegen_graphs_match_interpreter) {
  char up[256];
  snprintf(up, sizeof up, "tests/codegen/%s.ugraph", TESTGRAPHS[_i]);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, up);
  mirs_eval_result *r = NULL;
  double err = -1;
  ck_assert_msg(mirs_codegen_run(g, 3, MIRS_BACKEND_HOST, &r, &err) == MIRS_OK, "%s: %s", up,
                mirs_last_error(ctx));
  /* The f32 graph's error is tiny, so a tolerance only an f16 run needs
   * could hide a wrong kernel there: demand 1e-5. */
  double tol = strcmp(TESTGRAPHS[_i], "f32_mixed") == 0 ? 1e-5 : mirs_codegen_tolerance(g);
  ck_assert_msg(err >= 0 && err <= tol, "%s: relative error %g > %g", up, err, tol);
  ck_assert_int_eq(mirs_eval_num_outputs(r), g->nout);
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_wrong_ugraph_fails) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/wrong_gqa_small.ugraph");
  mirs_graph *p = load(ctx, "examples/gqa_small.graph");
  double err = run_against(ctx, g, p, 1, "wrong_gqa_small");
  ck_assert_msg(err > 100 * mirs_codegen_tolerance(g), "a wrong µGraph passed: error %g", err);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_search_results_match_programs) {
  char pp[256];
  snprintf(pp, sizeof pp, "examples/%s.graph", SEARCHED[_i]);
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "float_check_top", "0"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "op_budget", "0"), MIRS_OK);
  mirs_graph *p = load(ctx, pp);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 0);
  /* The best and the last result (the most unlike the hand-written ones). */
  int pick[2] = {0, n - 1};
  for (int k = 0; k < 2; k++) {
    if (k > 0 && pick[k] == pick[k - 1])
      continue;
    const mirs_graph *r = mirs_search_result(s, pick[k]);
    char what[300];
    snprintf(what, sizeof what, "%s result %d of %d", SEARCHED[_i], pick[k], n);
    double err = run_against(ctx, r, p, 11, what);
    ck_assert_msg(err <= mirs_codegen_tolerance(r), "%s: relative error %g", what, err);
  }
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_cuda_backend_without_device) {
  mirs_context *ctx = tu_ctx(NULL);
  int count = 0;
  if (mirs_gpu_device_count(ctx, &count) == MIRS_OK && count > 0) {
    mirs_context_destroy(ctx);
    return; /* a GPU is present: nothing to check here */
  }
  mirs_graph *g = load(ctx, "examples/gqa_small.ugraph");
  mirs_eval_result *r = NULL;
  double err = 0;
  ck_assert_int_eq(mirs_codegen_run(g, 1, MIRS_BACKEND_CUDA, &r, &err), MIRS_NO_DEVICE);
  ck_assert_ptr_null(r);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "no CUDA device"));
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_codegen_api_errors) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "examples/gqa_small.ugraph");
  char *text = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, "1bad", &text), MIRS_INVALID_ARG);
  ck_assert_ptr_null(text);
  ck_assert_int_eq(mirs_codegen_cuda(g, "my_attention", &text), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(text, "extern \"C\" cudaError_t my_attention("));
  ck_assert_ptr_nonnull(strstr(text, "extern \"C\" size_t my_attention_workspace_bytes(void)"));
  mirs_free(ctx, text);
  ck_assert_int_eq(mirs_codegen_cuda(NULL, NULL, &text), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(mirs_codegen_emulation_header());
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Kernels whose plan cannot run are refused with a clear message (no
 * global-memory fallback): a tile of 2^32 elements (32-bit index math
 * would overflow, issue 27 item 6) and tiles over 227 KB of shared memory. */
START_TEST(test_refused_kernels) {
  static const char *const huge =
      "ugraph huge\ninput X : f16[65536, 65536]\n"
      "Y = custom(grid=[1, 1, 1], block=[128, 1, 1], forloop=1) {\n"
      "  x = input(X, imap=[-1, -1, -1], fmap=-1)\n  a = accum(x)\n"
      "  output(a, omap=[-1, -1, -1])\n}\noutput Y\n";
  static const char *const big =
      "ugraph big\ninput X : f16[256, 1024]\n"
      "Y = custom(grid=[1, 1, 1], block=[128, 1, 1], forloop=1) {\n"
      "  x = input(X, imap=[-1, -1, -1], fmap=-1)\n  a = accum(x)\n"
      "  output(a, omap=[-1, -1, -1])\n}\noutput Y\n";
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  char *text = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, huge, strlen(huge), "huge.ugraph", &g), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &text), MIRS_LIMIT);
  ck_assert_ptr_null(text);
  ck_assert_msg(strstr(mirs_last_error(ctx), "4294967296 elements") &&
                    strstr(mirs_last_error(ctx), "2^31"),
                "%s", mirs_last_error(ctx));
  mirs_graph_destroy(g);
  ck_assert_int_eq(mirs_graph_parse_string(ctx, big, strlen(big), "big.ugraph", &g), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &text), MIRS_LIMIT);
  ck_assert_msg(strstr(mirs_last_error(ctx), "shared memory"), "%s", mirs_last_error(ctx));
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The emulation of cp.async, ldmatrix and __shfl_xor_sync, against
 * their PTX definitions: a one-warp kernel compiled with the emulation
 * header checks each lane's registers and that a read before
 * cp.async.wait_group sees the poisoned (NaN) shared memory. */
static const char emu_program[] =
    "#include \"mirsearch_emu.h\"\n"
    "static int bad;\n"
    "static uint16_t G[16 * 24];\n"
    "static void kernel(void) {\n"
    "  float *sm = mirs_emu::smem;\n"
    "  uint16_t *s = (uint16_t *)sm;\n"
    "  const int lane = threadIdx.x;\n"
    "  /* 16 rows x 24 columns, 3 chunks of 16 bytes per row: 48 chunks. */\n"
    "  for (int i = lane; i < 48; i += 32)\n"
    "    mirs_cp_async16(s + (i / 3) * 24 + (i % 3) * 8, G + (i / 3) * 24 + (i % 3) * 8);\n"
    "  mirs_cp_async_commit();\n"
    "  if (lane == 0 && sm[0] == sm[0]) bad |= 1; /* not yet copied: NaN */\n"
    "  mirs_cp_async_wait<1>();\n"
    "  if (lane == 0 && sm[0] == sm[0]) bad |= 2; /* the only group is the newest */\n"
    "  mirs_cp_async_wait<0>();\n"
    "  __syncthreads();\n"
    "  uint32_t a[4], b[2];\n"
    "  mirs_ldmatrix_x4(a, s + (lane & 15) * 24 + (lane >> 4) * 8);\n"
    "  for (int m = 0; m < 4; m++) {\n"
    "    int row = (m & 1) * 8 + lane / 4, col = (m >> 1) * 8 + 2 * (lane % 4);\n"
    "    uint32_t want = G[row * 24 + col] | ((uint32_t)G[row * 24 + col + 1] << 16);\n"
    "    if (a[m] != want) bad |= 4;\n"
    "  }\n"
    "  mirs_ldmatrix_x2_trans(b, s + (lane & 15) * 24 + 16);\n"
    "  for (int m = 0; m < 2; m++) {\n"
    "    int k0 = m * 8 + 2 * (lane % 4), n = 16 + lane / 4;\n"
    "    uint32_t want = G[k0 * 24 + n] | ((uint32_t)G[(k0 + 1) * 24 + n] << 16);\n"
    "    if (b[m] != want) bad |= 8;\n"
    "  }\n"
    "  float v = (float)(lane + 1);\n"
    "  for (int m = 16; m >= 1; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);\n"
    "  if (v != 528.0f) bad |= 16;\n"
    "}\n"
    "int main(void) {\n"
    "  for (int i = 0; i < 16 * 24; i++) G[i] = (uint16_t)(i * 7 + 1);\n"
    "  MIRS_LAUNCH(kernel, dim3(1), dim3(32), 16 * 24 * 2, 0, ());\n"
    "  printf(\"%d\\n\", bad);\n"
    "  return bad != 0;\n"
    "}\n";

START_TEST(test_emu_primitives) {
  const char *tmp = getenv("TMPDIR");
  char dir[512], path[600], cmd[2000];
  snprintf(dir, sizeof dir, "%s/mirs_emu_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/mirsearch_emu.h", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(mirs_codegen_emulation_header(), f);
  fclose(f);
  snprintf(path, sizeof path, "%s/t.cpp", dir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(emu_program, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "cd '%s' && c++ -std=c++14 -O1 -DMIRS_HOST_EMULATION -I. -o t t.cpp >log 2>&1 && ./t >>log 2>&1",
           dir);
  int rc = system(cmd);
  char log[4096] = "";
  snprintf(path, sizeof path, "%s/log", dir);
  f = fopen(path, "r");
  if (f) {
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = 0;
    fclose(f);
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_msg(rc == 0, "emulation check failed (bits: 1 read before commit, 2 wait_group<1>, "
                         "4 ldmatrix.x4, 8 ldmatrix.x2.trans, 16 shuffle): %s", log);
}
END_TEST

/* The kernel plan's shared memory (what the cost model prices) is what
 * the generated kernel requests at launch, for the example µGraphs at
 * their published and small shapes. */
START_TEST(test_plan_smem_matches_launch) {
  static const char *const files[] = {"examples/rmsnorm_linear.ugraph", "examples/gqa.ugraph",
                                      "examples/rmsnorm_linear_small.ugraph",
                                      "examples/gqa_small.ugraph", "examples/mha_small.ugraph",
                                      "tests/codegen/mma_f16.ugraph", "tests/codegen/reduce_tree.ugraph"};
  mirs_context *ctx = tu_ctx(NULL);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *h100 = NULL;
  ck_assert_int_eq(mirs__cost_profiles_builtin(ctx, &p), MIRS_OK);
  ck_assert_int_eq(mirs__cost_find(ctx, p, "H100", &h100), MIRS_OK);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    mirs_graph *g = load(ctx, files[i]);
    char *text = NULL;
    ck_assert_int_eq(mirs_codegen_cuda(g, "k", &text), MIRS_OK);
    int checked = 0;
    for (int32_t op = 0; op < g->nops; op++) {
      if (g->ops[op].op != MIRS_OP_CUSTOM)
        continue;
      mirs__cost_kernel kc;
      ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, op, &kc), MIRS_OK);
      ck_assert(kc.feasible);
      char key[64];
      snprintf(key, sizeof key, "MIRS_LAUNCH(k_k%d, ", (int)op);
      const char *at = strstr(text, key);
      ck_assert_msg(at != NULL, "%s: no launch of kernel %d", files[i], (int)op);
      /* MIRS_LAUNCH(k_kN, dim3(..), dim3(..), SMEM, stream, ... */
      const char *c = strstr(at, "), dim3(");
      ck_assert_ptr_nonnull(c);
      c = strstr(c + 1, "), ");
      ck_assert_ptr_nonnull(c);
      long long smem = strtoll(c + 3, NULL, 10);
      ck_assert_msg(smem == kc.smem, "%s kernel %d: launch requests %lld bytes, plan %lld",
                    files[i], (int)op, smem, (long long)kc.smem);
      checked++;
    }
    ck_assert_int_gt(checked, 0);
    mirs_free(ctx, text);
    mirs_graph_destroy(g);
  }
  mirs__cost_profiles_free(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* The test suite. */
static Suite *suite(void) {
  Suite *s = suite_create("codegen");
  TCase *tc = tcase_create("codegen");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_codegen_api_errors);
  tcase_add_test(tc, test_refused_kernels);
  tcase_add_test(tc, test_emu_primitives);
  tcase_add_test(tc, test_plan_smem_matches_launch);
  tcase_add_test(tc, test_cuda_backend_without_device);
  tcase_add_loop_test(tc, test_example_ugraphs_match_programs, 0, NEXAMPLES);
  tcase_add_loop_test(tc, test_codegen_graphs_match_interpreter, 0, NTESTGRAPHS);
  tcase_add_test(tc, test_wrong_ugraph_fails);
  tcase_add_loop_test(tc, test_search_results_match_programs, 0, NSEARCHED);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite; skip without a host C++ compiler. */
int main(void) {
  if (system("c++ --version >/dev/null 2>&1") != 0) {
    printf("no host C++ compiler (c++): skipped\n");
    return 77;
  }
  return tu_run(suite());
}
