/* SPDX-License-Identifier: MIT */
/* tests/check_codegen.c - generated CUDA C, compiled as host C++ through
 * the emulation header and run on eval's seeded inputs (mirs_codegen_run
 * with MIRS_BACKEND_HOST):
 *  - the hand-written µGraphs of examples/ and the search's bests at small
 *    shape (examples/best/NAME_small.ugraph) match their *programs* in
 *    float64 within the dtype's tolerance;
 *  - the codegen test graphs (tests/codegen: tensor cores f16/bf16/tf32,
 *    every block op and accumulator, predefined kernels, workspace,
 *    broadcasting, an input copied to an output, reductions as warp-shuffle
 *    trees) match their interpreter;
 *  - graphs the generator was not written against: the search's best and
 *    sampled other results on small examples match their programs;
 *  - a deliberately wrong µGraph fails the comparison;
 *  - `run --backend=cuda` without a device says so (MIRS_NO_DEVICE);
 *  - the emulator catches what hardware would: races planted in
 *    hand-written kernels (tests/codegen/race.cu: a barrier removed, with
 *    the reader after or before its writer; a non-atomic shared total)
 *    fail under random thread orders while the synchronised kernels pass
 *    under every seed tried; launches beyond the
 *    device's limits fail as on the device; out-of-bounds shared memory,
 *    misaligned accesses and deadlocks end the run with a message
 *    (tests/codegen/emu_faults.cu); generated code gives the same result
 *    under several thread orders;
 *  - the generated C interface: a C11 caller (tests/codegen/consumer.c)
 *    includes the generated header, links the host-emulated object, and
 *    finds the contract enforced and the results right; an error pending
 *    from earlier work is returned as such and left pending
 *    (tests/codegen/pending.cu); kernel attributes are set once per
 *    device and a refused launch's error is returned (tests/codegen/
 *    attrs.cu on tests/codegen/big_smem.ugraph);
 *  - programmatic dependent launch (codegen_pdl): the kernels' prologues,
 *    the launches through cudaLaunchKernelEx on compute capability 9.0
 *    and plain ones below, with the same results (tests/codegen/pdl.cu on
 *    tests/codegen/f32_mixed.ugraph), none of it under codegen_pdl = 0;
 *    the emulator faults a global load before the wait (emu_faults.cu).
 * Skips (77) when there is no host C++ compiler. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/cost.h"
#include "codegen/plan.h"
#include "graph/graph.h"
#include "testutil.h"

/* Example µGraphs and their programs (small shapes: the emulation runs
 * every thread of every block on one core). */
static const char *const EXAMPLES[] = {"gqa_small", "mha_small", "rmsnorm_linear_small",
                                       "causal_attention_small"};
#define NEXAMPLES ((int)(sizeof EXAMPLES / sizeof EXAMPLES[0]))

static const char *const TESTGRAPHS[] = {
    "mma_f16",     "mma_pad",          "rms_bf16",      "f32_mixed",  "big_smem",
    "reduce_tree", "general_load",     "transpose_mma", "chain_attn", "chain_safe",
    "chain_split", "chain_split_safe", "chain_qknorm", "mma_swap",   "chain_chunks",
    "chain_nochunks", "chain_min", "chain_split_min", "splitk_gqa_small",
    "splitk_causal_small", "splitk_gqa_safe_small", "chain_hd128", "gqa_hd128_small",
    "chain_split_partials", "reduce_xwarp"};
#define NTESTGRAPHS ((int)(sizeof TESTGRAPHS / sizeof TESTGRAPHS[0]))

/* The search's bests at small shape (examples/best, scripts/search-bests.sh). */
static const char *const BESTS[] = {
    "gated_mlp",       "gqa", "lora", "mha", "mqa", "ntrans", "qknorm_attention", "rmsnorm_linear",
    "causal_attention", "gqa_safe", "mha_safe", "gqa_hd128"};
#define NBESTS ((int)(sizeof BESTS / sizeof BESTS[0]))

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

START_TEST(test_best_ugraphs_match_programs) {
  char up[256], pp[256];
  snprintf(up, sizeof up, "examples/best/%s_small.ugraph", BESTS[_i]);
  snprintf(pp, sizeof pp, "examples/%s_small.graph", BESTS[_i]);
  mirs_context *ctx = tu_ctx(NULL);
  /* A different thread order for each. */
  char seed[16];
  snprintf(seed, sizeof seed, "%d", 100 + _i);
  ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", seed), MIRS_OK);
  mirs_graph *g = load(ctx, up), *p = load(ctx, pp);
  double err = run_against(ctx, g, p, 5, up);
  ck_assert_msg(err <= mirs_codegen_tolerance(g), "%s: relative error %g", up, err);
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

/* Read stream f (not NULL) into buf as a string, and close it. */
static void read_closing(FILE *f, char *buf, size_t size) {
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = 0;
}

/* Split-K (one dim both partitioned by the grid and walked by the
 * forloop, partial sums stored f32): the µGraph prints back to its own
 * text, fingerprints equal
 * to the program's, and its generated code, run on the host, computes
 * the program (the grid's chunk offsets are b * tile * F, not b * tile:
 * with the latter the blocks would read overlapping keys). */
START_TEST(test_splitk_matches_program) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *up = "tests/codegen/splitk_gqa_small.ugraph";
  mirs_graph *g = load(ctx, up), *p = load(ctx, "examples/gqa_small.graph");
  static char text[4096], again[4096];
  read_closing(fopen(tu_src(up), "rb"), text, sizeof text);
  FILE *m = tmpfile();
  ck_assert_ptr_nonnull(m);
  ck_assert_int_eq(mirs_graph_print(g, m), MIRS_OK);
  rewind(m);
  read_closing(m, again, sizeof again);
  ck_assert_str_eq(again, text);
  /* The partial sums (output dtype=f32) are written and read as float. */
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(cu, "float *__restrict__ out0, float *__restrict__ out1)"));
  ck_assert_ptr_nonnull(strstr(cu, "(const float *__restrict__ in0, const float *__restrict__ in1, "
                                   "__half *__restrict__ out0)"));
  mirs_free(ctx, cu);
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(ctx, p, g, &v), MIRS_OK);
  ck_assert_msg(v.equal && v.fingerprint_equal, "%s: %s", up, v.reason);
  double err = run_against(ctx, g, p, 7, up);
  ck_assert_msg(err <= mirs_codegen_tolerance(g), "%s: relative error %g", up, err);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
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
  /* A ranking stops at once (no one candidate's failure): no errors,
   * nothing timed, no best. */
  const mirs_graph *cands[2] = {g, g};
  mirs_rank_entry rows[2];
  char x[] = "x", *errors[2] = {x, x};
  int best = 7;
  double rho = 0;
#ifdef MIRS_NVCC
  mirs_status want = MIRS_NO_DEVICE;
#else
  mirs_status want = MIRS_UNSUPPORTED;
#endif
  ck_assert_int_eq(mirs_codegen_rank_all(cands, 2, NULL, 1, rows, &best, &rho, NULL, errors), want);
  ck_assert_ptr_null(errors[0]);
  ck_assert_ptr_null(errors[1]);
  ck_assert_int_eq(best, -1);
  ck_assert(isnan(rho) && isnan(rows[0].median_us) && isnan(rows[1].median_us));
  ck_assert_int_eq(rows[0].checked, 0);
  ck_assert_int_eq(mirs_codegen_rank(cands, 2, NULL, 1, rows, &best, &rho, NULL), want);
  ck_assert_int_eq(mirs_codegen_rank_all(cands, 0, NULL, 1, rows, &best, &rho, NULL, errors),
                   MIRS_INVALID_ARG);
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
  ck_assert_ptr_nonnull(strstr(text, "extern \"C\" int my_attention(const void *in_Q_"));
  ck_assert_ptr_nonnull(strstr(text, "extern \"C\" size_t my_attention_workspace_bytes(void)"));
  mirs_free(ctx, text);
  ck_assert_int_eq(mirs_codegen_header(g, "2bad", &text), MIRS_INVALID_ARG);
  ck_assert_ptr_null(text);
  ck_assert_int_eq(mirs_codegen_header(g, "my_attention", &text), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(text, "int my_attention(const void *in_Q, const void *in_K"));
  ck_assert_ptr_nonnull(strstr(text, "size_t my_attention_workspace_bytes(void);"));
  ck_assert_ptr_nonnull(strstr(text, "const char *my_attention_status_string(int status);"));
  mirs_free(ctx, text);
  ck_assert_int_eq(mirs_codegen_header(NULL, NULL, &text), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_codegen_cuda(NULL, NULL, &text), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(mirs_codegen_emulation_header());
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- emulator, C interface */

/* A fresh temporary directory holding the emulation header, into dir. */
static void emu_dir(char *dir, size_t size) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, size, "%s/mirs-emu-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[700];
  snprintf(path, sizeof path, "%s/mirsearch_emu.h", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(mirs_codegen_emulation_header(), f);
  ck_assert_int_eq(fclose(f), 0);
}

/* Run a shell command; its exit status (-1 if it did not exit). */
static int sh(const char *cmd) {
  int rc = system(cmd);
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Compile source file rel of the tree as emulated host C++ into dir/exe. */
static void emu_build(const char *dir, const char *rel, const char *flags, const char *exe) {
  char cmd[9000];
  snprintf(cmd, sizeof cmd,
           "c++ -std=c++14 -O1 -Wall -Wextra -Werror -DMIRS_HOST_EMULATION %s -I'%s' -x c++ '%s' "
           "-o '%s/%s' > '%s/log' 2>&1",
           flags, dir, tu_src(rel), dir, exe, dir);
  int rc = sh(cmd);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "cat '%s/log'", dir);
    (void)sh(cmd);
  }
  ck_assert_msg(rc == 0, "%s does not compile (%s)", rel, flags);
}

/* Head dim 128 (examples/gqa_hd128): the hand-written online form of the
 * small example computes the program (fingerprints, host run), and a
 * kernel whose shared memory leaves room for one block an SM and whose
 * plan estimates more than 128 registers promises ptxas that one block
 * (__launch_bounds__(128, 1)): left to size it for 4 blocks, ptxas 13.0
 * gave the published best 128 registers and spilled 24 bytes on sm_90
 * (cuda.c min_blocks).  Kernels under either bound keep the plain
 * __launch_bounds__(128). */
START_TEST(test_head_dim_128) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/gqa_hd128_small.ugraph");
  mirs_graph *p = load(ctx, "examples/gqa_hd128_small.graph");
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(ctx, p, g, &v), MIRS_OK);
  ck_assert_msg(v.equal && v.fingerprint_equal, "gqa_hd128_small: %s", v.reason);
  double err = run_against(ctx, g, p, 11, "gqa_hd128_small");
  ck_assert_msg(err <= mirs_codegen_tolerance(g), "gqa_hd128_small: relative error %g", err);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  static const struct {
    const char *file, *head;
  } cases[] = {
      /* 217408 bytes, ~154 registers: one block an SM promised */
      {"tests/codegen/gqa_hd128.ugraph", "__launch_bounds__(128, 1) mirs_gqa_hd128_k0("},
      /* 63808 bytes (3 blocks an SM), ~130 registers */
      {"tests/codegen/chain_hd128.ugraph", "__launch_bounds__(128) mirs_chain_hd128_k0("},
      /* ~66 registers */
      {"tests/codegen/gqa_hd128_small.ugraph", "__launch_bounds__(128) mirs_gqa_hd128_small_k0("},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    g = load(ctx, cases[i].file);
    char *cu = NULL;
    ck_assert_msg(mirs_codegen_cuda(g, NULL, &cu) == MIRS_OK, "%s: %s", cases[i].file,
                  mirs_last_error(ctx));
    ck_assert_msg(strstr(cu, cases[i].head) != NULL, "%s: no '%s'", cases[i].file, cases[i].head);
    mirs_free(ctx, cu);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* Run dir/exe ARGS under thread-order seed `seed`, stdout and stderr to
 * dir/out; its exit status. */
static int emu_exec(const char *dir, const char *exe, const char *args, uint64_t seed) {
  char cmd[1600];
  snprintf(cmd, sizeof cmd, "MIRS_EMU_SEED=%llu '%s/%s' %s > '%s/out' 2>&1",
           (unsigned long long)seed, dir, exe, args, dir);
  return sh(cmd);
}

/* Whether dir/out contains text. */
static bool emu_said(const char *dir, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/out", dir);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return strstr(buf, text) != NULL;
}

/* Remove dir and what is in it. */
static void emu_clean(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(sh(cmd), 0);
}

enum { RACE_SEEDS = 8 };

START_TEST(test_emu_catches_planted_race) {
  char dir[512];
  emu_dir(dir, sizeof dir);
  emu_build(dir, "tests/codegen/race.cu", "-DSYNCED=0", "race0");
  emu_build(dir, "tests/codegen/race.cu", "-DSYNCED=1", "race1");
  /* A missing barrier with the reader after / before its writer, and a
   * lost update (caught only by switches between a read and a write). */
  static const char *const modes[3] = {"-1", "1", "sum"};
  for (int m = 0; m < 3; m++) {
    int caught = 0;
    for (uint64_t seed = 1; seed <= RACE_SEEDS; seed++) {
      int rc = emu_exec(dir, "race0", modes[m], seed);
      ck_assert_msg(rc == 0 || rc == 1, "race0 %s, seed %llu: exit %d", modes[m],
                    (unsigned long long)seed, rc);
      caught += rc == 1;
      if (rc == 1)
        ck_assert(emu_said(dir, "race: out["));
    }
    /* "Under some seeds" is enough; here every seed catches each race. */
    ck_assert_msg(caught > 0, "the race (%s) passed under all %d seeds", modes[m], RACE_SEEDS);
    for (uint64_t seed = 0; seed <= RACE_SEEDS; seed++)
      ck_assert_msg(emu_exec(dir, "race1", modes[m], seed) == 0,
                    "the synchronised kernel failed (%s, seed %llu)", modes[m],
                    (unsigned long long)seed);
  }
  /* Index order without preemption (seed 0, the old scheduler) misses
   * the race one way and the lost update: why the order is random. */
  ck_assert_int_eq(emu_exec(dir, "race0", "-1", 0), 0);
  ck_assert_int_eq(emu_exec(dir, "race0", "1", 0), 1);
  ck_assert_int_eq(emu_exec(dir, "race0", "sum", 0), 0);
  emu_clean(dir);
}
END_TEST

START_TEST(test_emu_device_limits_and_faults) {
  static const struct {
    const char *mode;
    int exit;
    const char *says;
  } cases[] = {
      {"smem", 0, "cudaFuncSetAttribute"},
      {"grid", 0, "grid.y and grid.z <= 65535"},
      {"oob-read", 3, "shared-memory load at byte 1024, outside the 1024 bytes"},
      {"oob-write", 3, "shared-memory store at byte 1024, past the 1024 bytes"},
      {"misalign", 3, "misaligned address: a 16-byte access"},
      {"deadlock", 3, "32 of 64 wait there, 32 returned"},
      {"pdl", 0, ""},
      {"pdl-early", 3, "a global-memory load before mirs_pdl_wait"},
  };
  char dir[512];
  emu_dir(dir, sizeof dir);
  emu_build(dir, "tests/codegen/emu_faults.cu", "", "faults");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = emu_exec(dir, "faults", cases[i].mode, 1);
    ck_assert_msg(rc == cases[i].exit, "emu_faults %s: exit %d, expected %d", cases[i].mode, rc,
                  cases[i].exit);
    ck_assert_msg(emu_said(dir, cases[i].says), "emu_faults %s: no '%s'", cases[i].mode,
                  cases[i].says);
  }
  emu_clean(dir);
}
END_TEST

START_TEST(test_generated_code_in_random_orders) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "examples/gqa_small.ugraph");
  mirs_eval_result *first = NULL;
  for (int seed = 0; seed < 4; seed++) {
    char v[16];
    snprintf(v, sizeof v, "%d", seed * 7);
    ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", v), MIRS_OK);
    mirs_eval_result *r = NULL;
    double err = -1;
    ck_assert_msg(mirs_codegen_run(g, 2, MIRS_BACKEND_HOST, &r, &err) == MIRS_OK, "emu_seed %s: %s",
                  v, mirs_last_error(ctx));
    ck_assert_msg(err <= mirs_codegen_tolerance(g), "emu_seed %s: relative error %g", v, err);
    /* A race-free kernel computes the same bits in every order. */
    if (first)
      ck_assert_double_eq(mirs__eval_max_rel_error(first, r), 0.0);
    if (!first)
      first = r;
    else
      mirs_eval_result_destroy(r);
  }
  mirs_eval_result_destroy(first);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Write text to dir/name. */
static void put(const char *dir, const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_c_caller_of_generated_interface) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/iface.graph");
  char dir[512];
  emu_dir(dir, sizeof dir);
  char *cu = NULL, *h = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_header(g, NULL, &h), MIRS_OK);
  /* No CUDA type in the header (a C compiler without the toolkit reads it
   * below): pointers are void, the stream too. */
  ck_assert_ptr_nonnull(strstr(h, "int mirs_iface(const void *in_X, const void *in_W, void *out0, "
                                  "void *out1, void *workspace,\n    size_t workspace_bytes, "
                                  "void *stream);"));
  ck_assert_ptr_null(strstr(h, "__half"));
  ck_assert_ptr_nonnull(strstr(h, "16-byte aligned"));
  put(dir, "iface.cu", cu);
  put(dir, "iface.h", h);
  mirs_free(ctx, cu);
  mirs_free(ctx, h);
  const char *cc = getenv("CC");
  char consumer[4096], cmd[9000];
  ck_assert_ptr_nonnull(realpath(tu_src("tests/codegen/consumer.c"), consumer));
  snprintf(cmd, sizeof cmd,
           "cd '%s' && c++ -std=c++14 -O1 -Wall -Wextra -Werror -DMIRS_HOST_EMULATION -I. -x c++ "
           "-c iface.cu -o iface.o > log 2>&1 && "
           "%s -std=c11 -Wall -Wextra -Wpedantic -Werror -I. -c '%s' -o consumer.o >> log 2>&1 && "
           "c++ consumer.o iface.o -o consumer -lm >> log 2>&1",
           dir, cc && cc[0] ? cc : "cc", consumer);
  int rc = sh(cmd);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "cat '%s/log'", dir);
    (void)sh(cmd);
  }
  ck_assert_msg(rc == 0, "the C consumer of the generated interface does not build");
  rc = emu_exec(dir, "consumer", "", 1);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "cat '%s/out'", dir);
    (void)sh(cmd);
  }
  ck_assert_msg(rc == 0, "the C consumer failed (exit %d)", rc);
  ck_assert(emu_said(dir, "the C interface holds"));
  /* An error pending from earlier work is left to its owner. */
  emu_build(dir, "tests/codegen/pending.cu", "", "pending"); /* it includes dir/iface.cu */
  ck_assert_int_eq(emu_exec(dir, "pending", "", 1), 0);
  ck_assert(emu_said(dir, "the earlier error was left to its owner"));
  /* Kernel attributes once per device; a refused launch's error returned. */
  mirs_graph *big = load(ctx, "tests/codegen/big_smem.ugraph");
  ck_assert_int_eq(mirs_codegen_cuda(big, NULL, &cu), MIRS_OK);
  put(dir, "big_smem.cu", cu);
  mirs_free(ctx, cu);
  mirs_graph_destroy(big);
  emu_build(dir, "tests/codegen/attrs.cu", "", "attrs");
  rc = emu_exec(dir, "attrs", "", 1);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "cat '%s/out'", dir);
    (void)sh(cmd);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert(emu_said(dir, "set once per device"));
  emu_clean(dir);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The statements that open kernel `name`'s body in generated source cu
 * (after its signature's "{\n"), or NULL without that kernel. */
static const char *kernel_body(const char *cu, const char *name) {
  char sig[200];
  snprintf(sig, sizeof sig, " %s(", name);
  const char *k = strstr(cu, sig);
  const char *open = k ? strstr(k, ") {\n") : NULL;
  return open ? open + 4 : NULL;
}

/* Whether kernel `name` of cu opens with the PDL wait (wait), the
 * trigger (trigger), both (the wait first) or neither. */
static void check_prologue(const char *cu, const char *name, bool wait, bool trigger) {
  const char *body = kernel_body(cu, name);
  ck_assert_msg(body != NULL, "no kernel %s", name);
  const char *w = "    mirs_pdl_wait();", *t = "    mirs_pdl_trigger();";
  if (wait) {
    ck_assert_msg(strncmp(body, w, strlen(w)) == 0, "%s does not open with the wait", name);
    body = strchr(body, '\n') + 1;
  }
  ck_assert_msg((strncmp(body, t, strlen(t)) == 0) == trigger, "%s: trigger %s", name,
                trigger ? "missing" : "where no launch follows");
  if (trigger)
    body = strchr(body, '\n') + 1;
  ck_assert_msg(strncmp(body, w, strlen(w)) != 0, "%s: a wait after the prologue", name);
}

/* dir/out's first line (the harness's report) into buf. */
static void emu_line(const char *dir, char *buf, size_t size) {
  char path[700];
  snprintf(path, sizeof path, "%s/out", dir);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(fgets(buf, (int)size, f));
  fclose(f);
}

/* Programmatic dependent launch (codegen_pdl): every kernel after the
 * first of an entry opens with the wait, every kernel a launch follows
 * triggers, the launches after the first go through MIRS_PDL
 * (cudaLaunchKernelEx with the attribute on compute capability 9.0, a
 * plain launch below: tests/codegen/pdl.cu counts them, same results);
 * codegen_pdl = 0 and one-kernel entries have no griddepcontrol at all. */
static int count_str(const char *hay, const char *needle);

/* Trees of few long rows over all warps (codegen_xwarp, on by default):
 * ntrans's best spreads the one 4096-wide row a block of its two
 * rms_norms over the 4 warps
 * through the plan's scratch (16 more bytes of shared memory); with the
 * option off it keeps one warp a row, and either computes the graph. */
START_TEST(test_xwarp_option) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *big = load(ctx, "examples/best/ntrans.ugraph");
  char *on = NULL, *off = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(big, NULL, &on), MIRS_OK);
  /* (its two rms_norm trees, each its combine) */
  ck_assert_int_eq(count_str(on, "4 warps per row, warp-shuffle trees added across warps"), 2);
  ck_assert_int_eq(count_str(on, "mirs_xred[w] = "), 2);
  mirs_cost c1 = MIRS_COST_INIT, c0 = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, big, 0, "H100", &c1), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_xwarp", "0"), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(big, NULL, &off), MIRS_OK);
  ck_assert_int_eq(count_str(off, "mirs_xred"), 0);
  ck_assert_int_eq(count_str(off, "32 lanes per row, warp-shuffle tree"), 2);
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, big, 0, "H100", &c0), MIRS_OK);
  ck_assert_int_eq(c1.smem_bytes, c0.smem_bytes + 16);
  tu_assert_codegen_run(ctx, big, 5, mirs_codegen_tolerance(big));
  mirs_free(ctx, on);
  mirs_free(ctx, off);
  mirs_graph_destroy(big);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_programmatic_dependent_launch) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_pdl", "1"), MIRS_OK); /* (off by default) */
  mirs_graph *g = load(ctx, "tests/codegen/f32_mixed.ugraph");
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  /* Six kernels (custom k1, predefined others) and an output copy. */
  check_prologue(cu, "mirs_f32_mixed_k0", false, true);
  for (int k = 1; k <= 5; k++) {
    char name[64];
    snprintf(name, sizeof name, "mirs_f32_mixed_k%d", k);
    check_prologue(cu, name, true, true);
  }
  ck_assert_ptr_nonnull(strstr(cu, "griddepcontrol.wait;"));
  ck_assert_ptr_nonnull(strstr(cu, "griddepcontrol.launch_dependents;"));
  ck_assert_ptr_nonnull(strstr(cu, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
                                   "    asm volatile(\"griddepcontrol.wait;"));
  ck_assert_ptr_nonnull(strstr(cu, "\n    MIRS_LAUNCH(mirs_f32_mixed_k0, "));
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_f32_mixed_k1, "));
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_f32_mixed_k5, "));
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_copy_pdl<float>, "
                                   "dim3(1), dim3(256), 0, stream, (in_A, out3, 128LL, false)));"));
  ck_assert_ptr_nonnull(strstr(cu, "cudaLaunchAttributeProgrammaticStreamSerialization"));
  ck_assert_ptr_nonnull(strstr(cu, "cudaDevAttrComputeCapabilityMajor"));
  /* Run: the PDL path on an emulated sm_90, the plain one on sm_80. */
  char dir[512], line[2][256];
  emu_dir(dir, sizeof dir);
  put(dir, "f32_mixed.cu", cu);
  mirs_free(ctx, cu);
  emu_build(dir, "tests/codegen/pdl.cu", "", "pdl");
  /* (9 80: an sm_90 device running code JIT-compiled from sm_80 PTX,
   * whose kernels have no wait: launched plainly.) */
  static const char *const major[3] = {"9", "8", "9 80"};
  static const char *const launches[3] = {"pdl: 12 programmatic launches, ",
                                          "pdl: 0 programmatic launches, ",
                                          "pdl: 0 programmatic launches, "};
  char line3[256];
  ck_assert_int_eq(emu_exec(dir, "pdl", major[2], 5), 0);
  emu_line(dir, line3, sizeof line3);
  ck_assert_msg(strncmp(line3, launches[2], strlen(launches[2])) == 0, "PTX 8.0 on 9.0: %s", line3);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(emu_exec(dir, "pdl", major[i], 3 + (uint64_t)i), 0);
    emu_line(dir, line[i], sizeof line[i]);
    ck_assert_msg(strncmp(line[i], launches[i], strlen(launches[i])) == 0, "compute %s.0: %s",
                  major[i], line[i]);
  }
  ck_assert_str_eq(strstr(line[0], "checksum"), strstr(line[1], "checksum"));
  ck_assert_str_eq(strstr(line[0], "checksum"), strstr(line3, "checksum"));
  emu_clean(dir);
  /* codegen_pdl = 0: none of it. */
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_pdl", "0"), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_ptr_null(strstr(cu, "griddepcontrol"));
  ck_assert_ptr_null(strstr(cu, "pdl"));
  ck_assert_ptr_null(strstr(cu, "PDL"));
  ck_assert_ptr_nonnull(strstr(cu, "\n    MIRS_LAUNCH(mirs_f32_mixed_k1, "));
  mirs_free(ctx, cu);
  mirs_graph_destroy(g);
  /* gqa's best as two launches (its split-K pair not fused): the first
   * triggers, the second waits; fused, one launch and no PDL. */
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_pdl", "1"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "0"), MIRS_OK);
  g = load(ctx, "examples/best/gqa.ugraph");
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  check_prologue(cu, "mirs_gqa_k0", false, true);
  check_prologue(cu, "mirs_gqa_k1", true, false);
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_gqa_k1, "));
  mirs_free(ctx, cu);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_ptr_null(strstr(cu, "griddepcontrol"));
  ck_assert_ptr_null(strstr(cu, "MIRS_PDL"));
  mirs_free(ctx, cu);
  mirs_graph_destroy(g);
  /* Two output copies after a kernel: the first triggers, the last not. */
  static const char cp[] = "program cp\ninput X : f32[4]\ninput Z : f16[8]\nY = exp(X)\n"
                           "output Y, X, Z\n";
  ck_assert_int_eq(mirs_graph_parse_string(ctx, cp, strlen(cp), "cp.graph", &g), MIRS_OK);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  check_prologue(cu, "mirs_cp_k0", false, true);
  ck_assert_ptr_nonnull(strstr(cu, "MIRS_LAUNCH(mirs_copy_pdl<float>, dim3(1), dim3(256), 0, "
                                   "stream, (in_X, out1, 4LL, true)));"));
  ck_assert_ptr_nonnull(strstr(cu, "MIRS_LAUNCH(mirs_copy_pdl<__half>, dim3(1), dim3(256), 0, "
                                   "stream, (in_Z, out2, 8LL, false)));"));
  mirs_free(ctx, cu);
  mirs_graph_destroy(g);
  /* One kernel: nothing to overlap. */
  g = load(ctx, "examples/best/gqa_small.ugraph");
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_ptr_null(strstr(cu, "griddepcontrol"));
  ck_assert_ptr_null(strstr(cu, "MIRS_PDL"));
  mirs_free(ctx, cu);
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
    "  mirs_ldmatrix_x2(b, s + (8 + (lane & 7)) * 24 + ((lane >> 3) & 1) * 8);\n"
    "  for (int m = 0; m < 2; m++) {\n"
    "    int row = 8 + lane / 4, col = m * 8 + 2 * (lane % 4);\n"
    "    uint32_t want = G[row * 24 + col] | ((uint32_t)G[row * 24 + col + 1] << 16);\n"
    "    if (b[m] != want) bad |= 32;\n"
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
  ck_assert_msg(rc == 0,
                "emulation check failed (bits: 1 read before commit, 2 wait_group<1>, "
                "4 ldmatrix.x4, 8 ldmatrix.x2.trans, 16 shuffle, 32 ldmatrix.x2): %s",
                log);
}
END_TEST

/* The kernel plan's shared memory (what the cost model prices) is what
 * the generated kernel requests at launch, for the example µGraphs at
 * their published and small shapes. */
START_TEST(test_plan_smem_matches_launch) {
  static const char *const files[] = {"examples/rmsnorm_linear.ugraph",
                                      "examples/gqa.ugraph",
                                      "examples/rmsnorm_linear_small.ugraph",
                                      "examples/gqa_small.ugraph",
                                      "examples/mha_small.ugraph",
                                      "tests/codegen/mma_f16.ugraph",
                                      "tests/codegen/reduce_tree.ugraph",
                                      "tests/codegen/mma_swap.ugraph"};
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

/* Key chunks for a heavy whole strip (plan.c chunk_by_regs): causal
 * attention at forloop=8 (16 tiles of S a warp, within the C registers'
 * cap) is estimated over the threshold whole and runs in 2 chunks of 8
 * tiles; gqa and mqa at their published shapes (144 and 148) stay whole;
 * an online softmax (gqa_safe, 150) never takes chunks.  (The published
 * one-kernel bests as they were before split-K by default: tests/codegen/prev_*.) */
START_TEST(test_chunk_by_regs) {
  static const struct {
    const char *file;
    int32_t nc;
  } cases[] = {{"tests/codegen/chain_heavy.ugraph", 2},
               {"tests/codegen/prev_gqa.ugraph", 1},
               {"tests/codegen/prev_mqa.ugraph", 1},
               {"tests/codegen/prev_gqa_safe.ugraph", 1}};
  mirs_context *ctx = tu_ctx(NULL);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *g = load(ctx, cases[i].file);
    mirs__plan pl;
    ck_assert_int_eq(mirs__plan_build(ctx, g, g->nops - 1, MIRS__PLAN_SMEM_MAX, true, &pl),
                     MIRS_OK);
    ck_assert_msg(pl.chain.on && pl.chain.nc == cases[i].nc, "%s: chain %d, %d key chunks",
                  cases[i].file, (int)pl.chain.on, (int)pl.chain.nc);
    ck_assert_int_le(pl.regs, 152);
    mirs__plan_free(&pl);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* The register estimate of row trees in the forloop (plan.c tree_offsets):
 * the rotated offsets of a tree whose lanes read J elements each are held
 * across the loop where nvcc unrolls the lanes' loop whole (J <= 64).
 * splitk_online_trees (the default gqa_safe search's split-K variant
 * f155ae2008cc5f59): kernel 1's two J = 16 trees, 124 registers on sm_80
 * and sm_90 (nvcc 13.0), estimated 84 without them, 132 with;
 * unchained_online's J = 128 trees (unrolled by 16, nothing held; 94 / 80
 * registers) stay at 98; ntrans at forloop=1 (46 / 47) holds no epilogue
 * addresses across a loop: 63, not 79. */
START_TEST(test_tree_regs) {
  static const struct {
    const char *file;
    int32_t lo, hi; /* bounds on the first custom kernel's estimate */
  } cases[] = {{"tests/codegen/splitk_online_trees.ugraph", 124 - 2, 140},
               {"tests/codegen/unchained_online.ugraph", 94 - 2, 110},
               {"examples/best/ntrans.ugraph", 47 - 2, 63}};
  mirs_context *ctx = tu_ctx(NULL);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *g = load(ctx, cases[i].file);
    int32_t ki = 0;
    while (ki < g->nops && !g->ops[ki].bg)
      ki++;
    ck_assert_int_lt(ki, g->nops);
    mirs__plan pl;
    ck_assert_int_eq(mirs__plan_build(ctx, g, ki, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
    ck_assert_msg(pl.regs >= cases[i].lo && pl.regs <= cases[i].hi, "%s: ~%d registers",
                  cases[i].file, (int)pl.regs);
    mirs__plan_free(&pl);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* Run `file` host-emulated in three thread orders (emu_seed): each within
 * its dtype's tolerance of the float64 interpreter, all the same bits. */
static void check_thread_orders(mirs_context *ctx, const char *file) {
  mirs_graph *g = load(ctx, file);
  mirs_eval_result *first = NULL;
  for (int seed = 0; seed < 3; seed++) {
    char v[16];
    snprintf(v, sizeof v, "%d", seed * 5 + 2);
    ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", v), MIRS_OK);
    mirs_eval_result *r = NULL;
    double err = -1;
    ck_assert_msg(mirs_codegen_run(g, 7, MIRS_BACKEND_HOST, &r, &err) == MIRS_OK,
                  "%s emu_seed %s: %s", file, v, mirs_last_error(ctx));
    ck_assert_msg(err <= mirs_codegen_tolerance(g), "%s emu_seed %s: relative error %g", file, v,
                  err);
    if (first) {
      ck_assert_double_eq(mirs__eval_max_rel_error(first, r), 0.0);
      mirs_eval_result_destroy(r);
    } else {
      first = r;
    }
  }
  mirs_eval_result_destroy(first);
  mirs_graph_destroy(g);
}

/* The register chain (plan decision 8): planned where the warps divide
 * into the 16-row strips of S = Q·K and E·V (ks warps a strip), E gets no
 * shared memory (a split strip's row values get an exchange of ks values
 * per row), E·V is 16-bit when E is in [0, 1] (exp of S minus its row
 * max) and tf32 otherwise, and the kernels compute the same bits in every
 * thread order. */
START_TEST(test_register_chain) {
  static const struct {
    const char *file;
    bool on;
    int mma2;
    int32_t e;  /* E, the tensor b<e> */
    int32_t ks; /* warps per strip */
  } cases[] = {{"tests/codegen/chain_attn.ugraph", true, MIRS__MMA_TF32, 4, 1},
               {"tests/codegen/chain_safe.ugraph", true, MIRS__MMA_16, 5, 1},
               {"tests/codegen/chain_split.ugraph", true, MIRS__MMA_TF32, 4, 4},
               {"tests/codegen/chain_split_safe.ugraph", true, MIRS__MMA_16, 5, 4},
               {"tests/codegen/chain_qknorm.ugraph", true, MIRS__MMA_TF32, 4, 4},
               {"tests/codegen/prev_gqa.ugraph", true, MIRS__MMA_TF32, 3, 1},
               {"tests/codegen/prev_gqa_safe.ugraph", true, MIRS__MMA_16, 5, 1},
               {"tests/codegen/prev_causal_attention.ugraph", true, MIRS__MMA_TF32, 4, 1},
               {"tests/codegen/prev_mha.ugraph", true, MIRS__MMA_TF32, 3, 4},
               {"tests/codegen/prev_mha_safe.ugraph", true, MIRS__MMA_16, 5, 4},
               /* rms_norm(Q)·K and E·rms_norm(V): tf32 with computed operands */
               {"tests/codegen/prev_qknorm_attention.ugraph", true, MIRS__MMA_TF32, 4, 4},
               /* a strip's 8-column tiles (8) do not split over 16 warps */
               {"tests/codegen/chain_nosplit.ugraph", false, 0, 4, 0},
               /* key chunks: 4 of 8 tiles a warp; none for an online softmax */
               {"tests/codegen/chain_chunks.ugraph", true, MIRS__MMA_TF32, 4, 2},
               {"tests/codegen/mqa_wide.ugraph", true, MIRS__MMA_TF32, 3, 1},
               {"tests/codegen/chain_nochunks.ugraph", false, 0, 5, 0},
               /* a row min, as a row max: quad shuffles (and the strip's exchange) */
               {"tests/codegen/chain_min.ugraph", true, MIRS__MMA_TF32, 4, 1},
               {"tests/codegen/chain_split_min.ugraph", true, MIRS__MMA_TF32, 4, 4}};
  mirs_context *ctx = tu_ctx(NULL);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *g = load(ctx, cases[i].file);
    int32_t ki = g->nops - 1;
    const mirs__bgraph *bg = g->ops[ki].bg;
    mirs__plan pl, off;
    ck_assert_int_eq(mirs__plan_build(ctx, g, ki, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
    ck_assert_int_eq(mirs__plan_build(ctx, g, ki, MIRS__PLAN_SMEM_MAX, false, &off), MIRS_OK);
    ck_assert_msg(pl.chain.on == cases[i].on, "%s: chain %d", cases[i].file, (int)pl.chain.on);
    ck_assert(!off.chain.on);
    char name[8];
    snprintf(name, sizeof name, "b%d", (int)cases[i].e);
    int32_t e = 0;
    while (e < bg->nt && strcmp(bg->t[e].name, name) != 0)
      e++;
    ck_assert_int_lt(e, bg->nt);
    if (cases[i].on) {
      ck_assert_int_eq(pl.chain.mma2, cases[i].mma2);
      ck_assert_int_eq(pl.op[pl.chain.mm2].mma, cases[i].mma2);
      ck_assert_int_eq(bg->ops[pl.chain.mm2].in[0], e);
      ck_assert_int_eq(pl.t[e].frag, MIRS__FRAG_C);
      ck_assert_int_eq(pl.chain.ks, cases[i].ks);
      /* 8-column tiles of S a warp holds at once: at most 16 (64 registers) */
      const mirs__shape *ss = &bg->t[bg->ops[pl.chain.mm1].out].shape;
      int64_t ntl = ss->d[ss->ndim - 1] / 8 / pl.chain.ks;
      ck_assert_int_eq(pl.chain.nc, ntl > 16 ? ntl / 8 : 1);
      ck_assert_int_eq(pl.t[e].off, -1); /* no tile: E stays in registers */
      if (cases[i].ks == 1)
        ck_assert_int_lt(pl.smem, off.smem);
    } else {
      ck_assert_int_ge(pl.t[e].off, 0);
    }
    mirs__plan_free(&pl);
    mirs__plan_free(&off);
    mirs_graph_destroy(g);
  }
  /* The small chains (key chunks included) in three thread orders:
   * within tolerance, same bits. */
  static const int small[] = {0, 1, 2, 3, 4, 12, 15, 16};
  ck_assert_ptr_nonnull(strstr(cases[12].file, "chain_chunks"));
  ck_assert_ptr_nonnull(strstr(cases[15].file, "chain_min"));
  for (size_t si = 0; si < sizeof small / sizeof small[0]; si++)
    check_thread_orders(ctx, cases[small[si]].file);
  mirs_context_destroy(ctx);
}
END_TEST

/* The first kernel of a split-K online softmax keeps its register chain
 * (plan.c try_chain): the row max it stores beside its online sums,
 * accum_max of a row value, is a row accumulator of the chain, so S and E
 * stay in registers and E·V is 16-bit, as in the one-kernel form.  Before,
 * that accumulator refused the chain: S, E and the partials went through
 * shared memory and E·V ran as tf32 (gqa_safe's split-K best 37.5 us
 * predicted on H100, 25.3 with the chain).  Small and published shapes;
 * the small one run in three thread orders: within tolerance, same bits. */
START_TEST(test_chain_split_partials) {
  static const struct {
    const char *file;
    int32_t ks; /* warps per strip */
  } cases[] = {{"tests/codegen/chain_split_partials.ugraph", 4},
               {"tests/codegen/splitk_gqa_safe.ugraph", 2}};
  mirs_context *ctx = tu_ctx(NULL);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *g = load(ctx, cases[i].file);
    ck_assert(g->ops[0].bg && g->ops[1].bg);
    const mirs__bgraph *bg = g->ops[0].bg;
    mirs__plan pl, off;
    ck_assert_int_eq(mirs__plan_build(ctx, g, 0, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
    ck_assert_int_eq(mirs__plan_build(ctx, g, 0, MIRS__PLAN_SMEM_MAX, false, &off), MIRS_OK);
    ck_assert_msg(pl.chain.on, "%s: no chain", cases[i].file);
    ck_assert_int_eq(pl.chain.ks, cases[i].ks);
    ck_assert_int_eq(pl.chain.mma2, MIRS__MMA_16);
    int32_t nmax = 0;
    for (int32_t j = 0; j < bg->nops; j++) {
      if (bg->ops[j].op != MIRS_OP_ACCUM_MAX)
        continue;
      nmax++;
      ck_assert(pl.op[j].chain);
      ck_assert_int_eq(pl.t[bg->ops[j].out].frag, MIRS__FRAG_ROW);
    }
    ck_assert_int_eq(nmax, 1);
    ck_assert_int_lt(pl.smem, off.smem);
    mirs__plan_free(&pl);
    mirs__plan_free(&off);
    mirs_graph_destroy(g);
  }
  check_thread_orders(ctx, cases[0].file);
  mirs_context_destroy(ctx);
}
END_TEST

/* A skinny matmul (M <= 8) runs with its operands swapped (plan.c
 * plan_swap): M padded to 8 rather than 16, so the cost model prices half
 * the tensor-core work, on m16n8k16 and on tf32; M = 64 stays direct. */
START_TEST(test_skinny_mma_swapped) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *h100 = NULL;
  ck_assert_int_eq(mirs__cost_profiles_builtin(ctx, &p), MIRS_OK);
  ck_assert_int_eq(mirs__cost_find(ctx, p, "H100", &h100), MIRS_OK);
  static const struct {
    const char *file;
    int32_t op, matmul, mma;
    bool swap;
    int32_t m_pad;
    double tc_flops; /* blocks x iterations x 2 * m_pad * N * K_pad */
  } cases[] = {
      /* M = 3, K = 8 padded to 16 */
      {"tests/codegen/mma_swap.ugraph", 0, 2, MIRS__MMA_16, true, 8, 2.0 * 8 * 2 * 8 * 80 * 16},
      {"tests/codegen/mma_swap.ugraph", 1, 2, MIRS__MMA_16, true, 8, 2.0 * 1 * 2 * 8 * 80 * 64},
      {"tests/codegen/mma_swap.ugraph", 2, 3, MIRS__MMA_TF32, true, 8, 2.0 * 4 * 2 * 8 * 80 * 16},
      /* M = 8, K = 4 padded to 16; tf32 at K = 32 */
      {"tests/codegen/mma_pad.ugraph", 0, 2, MIRS__MMA_16, true, 8, 2.0 * 16 * 2 * 8 * 64 * 16},
      {"tests/codegen/mma_pad.ugraph", 1, 3, MIRS__MMA_TF32, true, 8, 2.0 * 2 * 2 * 8 * 64 * 32},
      /* M = 64: direct */
      {"tests/codegen/mma_f16.ugraph", 0, 2, MIRS__MMA_16, false, 64, -1},
      {"tests/codegen/mma_f16.ugraph", 0, 6, MIRS__MMA_TF32, false, 64, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *g = load(ctx, cases[i].file);
    mirs__plan pl;
    ck_assert_int_eq(mirs__plan_build(ctx, g, cases[i].op, MIRS__PLAN_SMEM_MAX, true, &pl),
                     MIRS_OK);
    ck_assert_int_eq(g->ops[cases[i].op].bg->ops[cases[i].matmul].op, MIRS_OP_MATMUL);
    const mirs__plan_op *po = &pl.op[cases[i].matmul];
    ck_assert_msg(po->mma == cases[i].mma && po->swap == cases[i].swap &&
                      po->m_pad == cases[i].m_pad,
                  "%s kernel %d: mma %d swap %d m_pad %d", cases[i].file, (int)cases[i].op,
                  (int)po->mma, (int)po->swap, (int)po->m_pad);
    mirs__plan_free(&pl);
    if (cases[i].tc_flops > 0) {
      mirs__cost_kernel kc;
      ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, cases[i].op, &kc), MIRS_OK);
      ck_assert_double_eq(kc.tc_flops, cases[i].tc_flops);
    }
    mirs_graph_destroy(g);
  }
  mirs__cost_profiles_free(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* Shared memory reused across phases (plan.c place): the split strips'
 * per-iteration row exchanges sit in tiles written only after the loop,
 * the after-loop exchange in dead stage buffers.  Every plan of the
 * published bests and the chain test graphs passes the lifetime check
 * (mirs__plan_check_smem); mha_safe's and chain_split_safe's exchanges
 * share bytes with such tiles and their plans shrink by the two
 * exchanges (2 x 256 bytes); and the check fails once an exchange is put
 * over data in use during the loop (a K or V stage buffer, Q, the other
 * exchange).  The host runs of chain_split_safe in three thread orders
 * (test_register_chain) and of mha_safe at small shape exercise the
 * reuse itself. */
START_TEST(test_smem_lifetimes) {
  static const char *const files[] = {
      "examples/best/gated_mlp.ugraph",        "examples/best/gqa.ugraph",
      "examples/best/lora.ugraph",             "examples/best/mha.ugraph",
      "examples/best/mqa.ugraph",              "examples/best/ntrans.ugraph",
      "examples/best/qknorm_attention.ugraph", "examples/best/rmsnorm_linear.ugraph",
      "examples/best/causal_attention.ugraph", "examples/best/gqa_safe.ugraph",
      "examples/best/mha_safe.ugraph",         "tests/codegen/chain_split.ugraph",
      "tests/codegen/chain_split_safe.ugraph", "tests/codegen/chain_qknorm.ugraph",
      "tests/codegen/mqa_wide.ugraph",         "tests/codegen/big_smem.ugraph"};
  mirs_context *ctx = tu_ctx(NULL);
  char why[256];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    mirs_graph *g = load(ctx, files[i]);
    for (int32_t ki = 0; ki < g->nops; ki++) {
      if (g->ops[ki].op != MIRS_OP_CUSTOM)
        continue;
      mirs__plan pl;
      ck_assert_int_eq(mirs__plan_build(ctx, g, ki, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
      ck_assert_msg(mirs__plan_check_smem(&pl, g->ops[ki].bg, why, sizeof why), "%s: %s",
                    files[i], why);
      mirs__plan_free(&pl);
    }
    mirs_graph_destroy(g);
  }
  static const struct {
    const char *file;
    int64_t smem; /* bytes per block with the exchanges in dead tiles */
  } reuse[] = {{"tests/codegen/prev_mha_safe.ugraph", 76608 - 512},
               {"tests/codegen/chain_split_safe.ugraph", 13632 - 512}};
  for (size_t i = 0; i < sizeof reuse / sizeof reuse[0]; i++) {
    mirs_graph *g = load(ctx, reuse[i].file);
    int32_t ki = g->nops - 1;
    const mirs__bgraph *bg = g->ops[ki].bg;
    mirs__plan pl;
    ck_assert_int_eq(mirs__plan_build(ctx, g, ki, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
    ck_assert(pl.chain.on && pl.chain.ks > 1);
    ck_assert_int_eq(pl.smem, reuse[i].smem);
    int32_t x[2], nx = 0, q = -1, kv[2], nkv = 0; /* the exchanges; Q; K and V */
    for (int32_t t = 0; t < bg->nt; t++) {
      if (pl.t[t].frag == MIRS__FRAG_ROW && pl.t[t].off >= 0 &&
          mirs__graph_ops[bg->ops[bg->t[t].producer].op].kind != MIRS__KIND_ACCUM && nx < 2)
        x[nx++] = t;
      if (pl.t[t].input && pl.t[t].invariant)
        q = t;
      else if (pl.t[t].input && nkv < 2)
        kv[nkv++] = t;
    }
    ck_assert_int_eq(nx, 2);
    ck_assert_int_eq(nkv, 2);
    ck_assert_int_ge(q, 0);
    /* both inside the plan's tiles written after the loop */
    ck_assert_int_lt(pl.t[x[1]].off + 256, pl.smem + 1);
    int64_t keep = pl.t[x[0]].off;
    int32_t over[] = {kv[0], kv[1], q, x[1]};
    for (size_t o = 0; o < sizeof over / sizeof over[0]; o++) {
      pl.t[x[0]].off = pl.t[over[o]].off + 16;
      ck_assert_msg(!mirs__plan_check_smem(&pl, bg, why, sizeof why),
                    "%s: an exchange over %s passes the lifetime check", reuse[i].file,
                    bg->t[over[o]].name);
    }
    pl.t[x[0]].off = keep;
    ck_assert(mirs__plan_check_smem(&pl, bg, why, sizeof why));
    mirs__plan_free(&pl);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* Split-K pairs run as one launch (docs/CODEGEN.md "Split-K pairs"): the
 * published split-K bests and test graphs (accum and accum_online
 * combines, a causal one) fuse, and their fused code, run on the host in
 * several block orders (emu_seed permutes the blocks, so which block of a
 * group arrives last varies; 0 runs them in index order), computes the
 * float64 interpreter's outputs.  The full-shape bests take 30-90 s a
 * run on the emulator: gqa's runs here in one order, the others (mha,
 * mqa, qknorm_attention, splitk_gqa_safe: run once each by hand,
 * bench/RESULTS.md "Split-K pairs as one launch") on the device check's
 * runs step, so that make check stays short; the small graphs run in
 * four orders. */
static const struct {
  const char *file;
  const char *seeds[4];
} FUSED[] = {
    {"tests/codegen/splitk_gqa_safe_small.ugraph", {"0", "1", "2", "9"}},
    {"tests/codegen/splitk_causal_small.ugraph", {"0", "3", "4", "11"}},
    {"examples/best/gqa.ugraph", {"7"}}};
#define NFUSED ((int)(sizeof FUSED / sizeof FUSED[0]))

/* Occurrences of needle in hay. */
static int count_str(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

START_TEST(test_splitk_fused_runs) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK); /* (off by default) */
  mirs_graph *g = load(ctx, FUSED[_i].file);
  mirs__splitk_pair pair;
  ck_assert_int_eq(mirs__plan_splitk_role(ctx, g, g->nops - 2, &pair), MIRS__SPLITK_HEAD);
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_int_eq(count_str(cu, "    MIRS_LAUNCH("), 1);
  ck_assert_int_eq(count_str(cu, "cudaMemsetAsync((char *)workspace"), 1);
  ck_assert_int_eq(count_str(cu, "atomicAdd(arrivals + "), 1);
  mirs_free(ctx, cu);
  for (int s = 0; s < 4 && FUSED[_i].seeds[s]; s++) {
    ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", FUSED[_i].seeds[s]), MIRS_OK);
    mirs_eval_result *r = NULL;
    double err = -1;
    ck_assert_msg(mirs_codegen_run(g, 3, MIRS_BACKEND_HOST, &r, &err) == MIRS_OK,
                  "%s emu_seed %s: %s", FUSED[_i].file, FUSED[_i].seeds[s], mirs_last_error(ctx));
    ck_assert_msg(err >= 0 && err <= mirs_codegen_tolerance(g), "%s emu_seed %s: relative error %g",
                  FUSED[_i].file, FUSED[_i].seeds[s], err);
    mirs_eval_result_destroy(r);
  }
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* A split-K pair between two other launches (codegen_pdl and
 * codegen_fuse_split_k together): the pair's counters are zeroed before
 * the first launch, so no memset comes between two programmatic
 * dependent launches; the fused kernel waits for the kernel before it
 * and triggers the one after it, its bodies have no prologue of their
 * own; the code computes the graph in several block orders (the
 * emulator faults on a global access before the wait of a dependent). */
START_TEST(test_splitk_fused_pdl) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_pdl", "1"), MIRS_OK); /* (both off by default) */
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK);
  mirs_graph *g = load(ctx, "tests/codegen/splitk_pdl_small.ugraph");
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  const char *memset = strstr(cu, "    err = cudaMemsetAsync((char *)workspace");
  const char *first = strstr(cu, "\n    MIRS_LAUNCH(mirs_splitk_pdl_small_k0, ");
  ck_assert_ptr_nonnull(memset);
  ck_assert_ptr_nonnull(first);
  ck_assert(memset < first);
  ck_assert_int_eq(count_str(cu, "cudaMemsetAsync("), 1);
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_splitk_pdl_small_k1, "));
  ck_assert_ptr_nonnull(strstr(cu, "\n    err = MIRS_PDL(pdl, MIRS_LAUNCH(mirs_splitk_pdl_small_k3, "));
  ck_assert_int_eq(count_str(cu, "MIRS_LAUNCH(mirs_splitk_pdl_small_k2"), 0);
  check_prologue(cu, "mirs_splitk_pdl_small_k0", false, true);
  check_prologue(cu, "mirs_splitk_pdl_small_k1", true, true);
  check_prologue(cu, "mirs_splitk_pdl_small_k3", true, false);
  ck_assert_int_eq(count_str(cu, "    mirs_pdl_wait(); /*"), 2);
  mirs_free(ctx, cu);
  static const char *const seeds[] = {"0", "3", "8"};
  for (int s = 0; s < 3; s++) {
    ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", seeds[s]), MIRS_OK);
    tu_assert_codegen_run(ctx, g, 3, mirs_codegen_tolerance(g));
  }
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Expect mirs__plan_splitk_pair to reject kernels 0 and 1 of g with a
 * reason containing `reason`. */
static void expect_rejected(const mirs_graph *g, const char *reason) {
  char why[256];
  ck_assert_msg(!mirs__plan_splitk_pair(g, 0, NULL, why, sizeof why), "accepted; expected: %s",
                reason);
  ck_assert_msg(strstr(why, reason) != NULL, "rejected with \"%s\", expected \"%s\"", why, reason);
}

/* The pair predicate: an earlier best of gqa (tests/codegen/splitk_pair_gqa)
 * is a pair (gs = z, s = 4, a counter per block of the 16 x 2 combine),
 * and each condition broken in turn (the graph edited in place, then
 * restored) is a rejection with its reason; a plain program has no pair. */
START_TEST(test_splitk_pair_predicate) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK); /* (off by default) */
  mirs_graph *g = load(ctx, "tests/codegen/splitk_pair_gqa.ugraph");
  mirs__splitk_pair pair;
  char why[256];
  ck_assert_msg(mirs__plan_splitk_pair(g, 0, &pair, why, sizeof why), "%s", why);
  ck_assert_int_eq(pair.k1, 0);
  ck_assert_int_eq(pair.k2, 1);
  ck_assert_int_eq(pair.gs, 2);
  ck_assert_int_eq(pair.s, 4);
  ck_assert_int_eq(pair.groups, 32);
  ck_assert_int_eq(mirs__plan_splitk_role(ctx, g, 0, NULL), MIRS__SPLITK_HEAD);
  ck_assert_int_eq(mirs__plan_splitk_role(ctx, g, 1, NULL), MIRS__SPLITK_TAIL);
  ck_assert(!mirs__plan_splitk_pair(g, 1, NULL, NULL, 0));
  mirs__bgraph *b1 = g->ops[0].bg, *b2 = g->ops[1].bg;
  /* k2's read of O_part0 and k1's write of it */
  mirs__bop *r = NULL, *w = NULL;
  for (int32_t i = 0; i < b2->nops; i++)
    if (b2->ops[i].op == MIRS_OP_INPUT && !r)
      r = &b2->ops[i];
  for (int32_t i = 0; i < b1->nops; i++)
    if (b1->ops[i].op == MIRS_OP_OUTPUT && b1->ops[i].dst == r->src)
      w = &b1->ops[i];
  ck_assert_ptr_nonnull(w);
  b2->block[0] = 64;
  expect_rejected(g, "thread blocks differ");
  b2->block[0] = 128;
  b2->forloop = 2;
  expect_rejected(g, "forloop (2) is not the split (4)");
  b2->forloop = 4;
  b2->grid[0] = 8;
  expect_rejected(g, "more than one dim");
  b2->grid[0] = 16;
  b2->grid[2] = 2;
  expect_rejected(g, "not the first with one dim set to 1");
  b2->grid[2] = 1;
  int32_t out0 = g->outputs[0];
  g->outputs[0] = r->src;
  expect_rejected(g, "graph output");
  g->outputs[0] = out0;
  r->fmap = 1; /* walked along a dim k1's grid does not split it on */
  expect_rejected(g, "not split along the dim");
  r->fmap = 2;
  w->omap[2] = -1; /* k1's z blocks all write the same tile */
  expect_rejected(g, "not split along the dim");
  w->omap[2] = 2;
  w->omap[1] = -1; /* k1's y blocks write one tile, k2 reads it by y */
  expect_rejected(g, "placed differently");
  r->imap[1] = -1; /* both replicate along y: another group's blocks write the same */
  expect_rejected(g, "grid dim 1 write the same partial");
  r->imap[1] = 0;
  w->omap[1] = 0;
  b2->t[r->out].shape.d[2] = 32;
  expect_rejected(g, "tile shapes differ");
  b2->t[r->out].shape.d[2] = 64;
  ck_assert_msg(mirs__plan_splitk_pair(g, 0, NULL, why, sizeof why), "restored: %s", why);
  /* Another kernel reads a partial. */
  mirs_tensor x = r->src, y = -1;
  ck_assert_int_eq(mirs_graph_add_op(g, "E", MIRS_OP_EXP, 1, &x, &y), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, y), MIRS_OK);
  expect_rejected(g, "read by kernel 2");
  mirs_graph_destroy(g);
  g = load(ctx, "examples/gqa.graph");
  expect_rejected(g, "not two custom kernels");
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* codegen_fuse_split_k=0 (the default) keeps the two launches (and no
 * counters), and the cost model prices what is emitted: fused, one launch, the first
 * kernel plus a launch_s for the memset plus the tail; unfused, the two
 * kernels as before. */
START_TEST(test_splitk_fuse_option) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "1"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_pdl", "1"), MIRS_OK);
  mirs_graph *g = load(ctx, "examples/best/gqa.ugraph");
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *d = NULL;
  ck_assert_int_eq(mirs__cost_profiles_builtin(ctx, &p), MIRS_OK);
  ck_assert_int_eq(mirs__cost_find(ctx, p, "H200", &d), MIRS_OK);
  mirs__cost_result fused, apart;
  mirs__cost_kernel h1, t1, h0, t0;
  ck_assert_int_eq(mirs__cost_graph(ctx, d, g, &fused), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, d, g, 0, &h1), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, d, g, 1, &t1), MIRS_OK);
  char *cu = NULL;
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_int_eq(count_str(cu, "MIRS_LAUNCH(mirs_"), 1);
  ck_assert_ptr_nonnull(strstr(cu, "__ldcg(in1 + "));
  mirs_free(ctx, cu);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_fuse_split_k", "0"), MIRS_OK);
  ck_assert_int_eq(mirs__plan_splitk_role(ctx, g, 0, NULL), MIRS__SPLITK_NONE);
  ck_assert_int_eq(mirs__plan_splitk_role(ctx, g, 1, NULL), MIRS__SPLITK_NONE);
  ck_assert_int_eq(mirs_codegen_cuda(g, NULL, &cu), MIRS_OK);
  ck_assert_int_eq(count_str(cu, "MIRS_LAUNCH(mirs_"), 2); /* (the second a PDL one) */
  ck_assert_ptr_null(strstr(cu, "arrivals"));
  ck_assert_ptr_null(strstr(cu, "cudaMemsetAsync"));
  ck_assert_ptr_null(strstr(cu, "__ldcg"));
  mirs_free(ctx, cu);
  ck_assert_int_eq(mirs__cost_graph(ctx, d, g, &apart), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, d, g, 0, &h0), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, d, g, 1, &t0), MIRS_OK);
  ck_assert_int_eq(fused.kernels, 1);
  ck_assert_int_eq(apart.kernels, 2);
  ck_assert_int_eq(h1.split_k, MIRS__SPLITK_HEAD);
  ck_assert_int_eq(t1.split_k, MIRS__SPLITK_TAIL);
  ck_assert_int_eq(h0.split_k, MIRS__SPLITK_NONE);
  ck_assert_double_eq_tol(h1.seconds, h0.seconds + d->launch_s, 1e-12);
  ck_assert_double_eq_tol(apart.seconds, h0.seconds + t0.seconds, 1e-12);
  ck_assert_double_eq_tol(fused.seconds, h1.seconds + t1.seconds, 1e-12);
  /* the tail: no launch or fixed cost, one block (gqa's 32 combining
   * blocks are one wave of latency-bound loads: the same time as one) */
  ck_assert(t1.seconds > 0 &&
            t1.seconds <= t0.seconds - d->launch_s - MIRS__COST_KERNEL_FIXED_S + 1e-12);
  ck_assert_double_eq_tol(t1.bytes, t0.bytes, 1e-6);
  ck_assert(fused.seconds < apart.seconds);
  mirs__cost_profiles_free(p);
  mirs_graph_destroy(g);
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
  tcase_add_test(tc, test_register_chain);
  tcase_add_test(tc, test_chain_split_partials);
  tcase_add_test(tc, test_chunk_by_regs);
  tcase_add_test(tc, test_tree_regs);
  tcase_add_test(tc, test_smem_lifetimes);
  tcase_add_test(tc, test_skinny_mma_swapped);
  tcase_add_test(tc, test_cuda_backend_without_device);
  tcase_add_loop_test(tc, test_example_ugraphs_match_programs, 0, NEXAMPLES);
  tcase_add_loop_test(tc, test_best_ugraphs_match_programs, 0, NBESTS);
  tcase_add_loop_test(tc, test_codegen_graphs_match_interpreter, 0, NTESTGRAPHS);
  tcase_add_test(tc, test_wrong_ugraph_fails);
  tcase_add_test(tc, test_splitk_matches_program);
  tcase_add_test(tc, test_head_dim_128);
  tcase_add_test(tc, test_splitk_pair_predicate);
  tcase_add_test(tc, test_splitk_fuse_option);
  tcase_add_loop_test(tc, test_splitk_fused_runs, 0, NFUSED);
  tcase_add_loop_test(tc, test_search_results_match_programs, 0, NSEARCHED);
  tcase_add_test(tc, test_emu_catches_planted_race);
  tcase_add_test(tc, test_emu_device_limits_and_faults);
  tcase_add_test(tc, test_generated_code_in_random_orders);
  tcase_add_test(tc, test_c_caller_of_generated_interface);
  tcase_add_test(tc, test_programmatic_dependent_launch);
  tcase_add_test(tc, test_xwarp_option);
  tcase_add_test(tc, test_splitk_fused_pdl);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite; skip without a host C++ compiler. */
int main(void) {
  return tu_run_with_cxx(suite());
}
