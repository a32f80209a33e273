/* SPDX-License-Identifier: MIT */
/* tests/check_hopper.c - the Hopper path (codegen_wgmma = 1, src/codegen/
 * hopper.c) without a GPU:
 *  - the emulator's wgmma stand-ins against the PTX ISA's canonical
 *    layouts and accumulator layout, independent of the generator
 *    (tests/codegen/wgmma.cu), and the faults they catch (no
 *    wgmma.fence, no fence.proxy.async, accumulators read before the
 *    wait, LBO and SBO exchanged);
 *  - the plan: wgmma for the matmuls whose tiles allow it (the test graphs
 *    tests/codegen/wgmma_*.ugraph), never for the others (skinny M,
 *    swapped operands), never for a matmul of the register chain (the
 *    published gqa, gqa_safe, mqa and causal_attention bests' Q.K, whose
 *    tiles allow it: they took wgmma before the chain), never without the
 *    option, and the generated code byte for byte the sm_80 path's
 *    without it; the launch requests the plan's shared memory;
 *  - the cost model: mma.sync at 2/3 of the peak under the option, wgmma
 *    at the peak;
 *  - generated wgmma kernels run on the host under several thread orders
 *    and equal the interpreter within tolerance AND the sm_80 path's
 *    outputs bit for bit (the emulated mma.sync and wgmma add the same 16
 *    products in the same order, so any layout error shows).
 * Skips (77) when there is no host C++ compiler. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codegen/cost.h"
#include "codegen/plan.h"
#include "graph/graph.h"
#include "testutil.h"

static mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

static int sh(const char *cmd) {
  int rc = system(cmd);
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* ---------------------------------------------------------------- emulator */

START_TEST(test_emu_wgmma_against_the_isa) {
  static const struct {
    const char *mode;
    int exit;
    const char *says; /* in its output */
  } cases[] = {{"ok", 0, ""},
               {"swap", 1, "wgmma: D["},
               {"early", 1, "wgmma: D["},
               {"nofence", 3, "without wgmma.fence"},
               {"noproxy", 3, "without fence.proxy.async"},
               {"split", 3, "differs between its threads"}};
  const char *tmp = getenv("TMPDIR");
  char dir[512], cmd[9000];
  snprintf(dir, sizeof dir, "%s/mirs-wg-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "%s/mirsearch_emu.h", dir);
  FILE *f = fopen(cmd, "w");
  ck_assert_ptr_nonnull(f);
  fputs(mirs_codegen_emulation_header(), f);
  ck_assert_int_eq(fclose(f), 0);
  snprintf(cmd, sizeof cmd,
           "c++ -std=c++14 -O1 -Wall -Wextra -Werror -DMIRS_HOST_EMULATION -I'%s' -x c++ '%s' "
           "-o '%s/wg' > '%s/log' 2>&1",
           dir, tu_src("tests/codegen/wgmma.cu"), dir, dir);
  ck_assert_msg(sh(cmd) == 0, "tests/codegen/wgmma.cu does not compile (%s/log)", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int seed = 0; seed < 3; seed++) {
      snprintf(cmd, sizeof cmd, "MIRS_EMU_SEED=%d '%s/wg' %s > '%s/out' 2>&1", seed * 5, dir,
               cases[i].mode, dir);
      int rc = sh(cmd);
      ck_assert_msg(rc == cases[i].exit, "wgmma %s, seed %d: exit %d, expected %d", cases[i].mode,
                    seed * 5, rc, cases[i].exit);
      snprintf(cmd, sizeof cmd, "grep -qF '%s' '%s/out'", cases[i].says, dir);
      ck_assert_msg(!cases[i].says[0] || sh(cmd) == 0, "wgmma %s, seed %d: no '%s' in its output",
                    cases[i].mode, seed * 5, cases[i].says);
    }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(sh(cmd), 0);
}
END_TEST

/* ---------------------------------------------------------------- plan, cost */

/* MIRS__MMA_WG matmuls of g's custom kernels (plans with smem limit 227 KB);
 * *chains (when not NULL): those kernels whose plan has the register chain
 * (plan.c decision 8). */
static int wg_count(mirs_context *ctx, const mirs_graph *g, int *chains) {
  int n = 0;
  if (chains)
    *chains = 0;
  for (int32_t i = 0; i < g->nops; i++) {
    if (g->ops[i].op != MIRS_OP_CUSTOM)
      continue;
    mirs__plan pl;
    ck_assert_int_eq(mirs__plan_build(ctx, g, i, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
    const mirs__bgraph *bg = g->ops[i].bg;
    if (chains)
      *chains += pl.chain.on;
    for (int32_t j = 0; j < bg->nops; j++) {
      if (pl.op[j].mma != MIRS__MMA_WG)
        continue;
      n++;
      ck_assert(pl.wgmma);
      for (int a = 0; a < 2; a++) { /* dense core-matrix operand tiles */
        const mirs__plan_tensor *pt = &pl.t[bg->ops[j].in[a]];
        const mirs__shape *s = &bg->t[bg->ops[j].in[a]].shape;
        ck_assert(pt->core8);
        ck_assert_int_eq(pt->stride, s->d[s->ndim - 1]);
      }
    }
    mirs__plan_free(&pl);
  }
  return n;
}

static const char *const PICKED[] = {"tests/codegen/wgmma_f16.ugraph",
                                     "tests/codegen/wgmma_bf16.ugraph"};
/* Q.K's tiles allow wgmma, but the register chain takes it. */
static const char *const CHAINED[] = {"examples/best/gqa.ugraph", "examples/best/gqa_safe.ugraph",
                                      "examples/best/mqa.ugraph",
                                      "examples/best/causal_attention.ugraph"};
static const char *const NOT_PICKED[] = {"examples/best/mha.ugraph",
                                         "examples/best/rmsnorm_linear.ugraph",
                                         "examples/best/gated_mlp.ugraph",
                                         "examples/best/lora.ugraph",
                                         "examples/best/qknorm_attention.ugraph",
                                         "examples/gqa_small.ugraph",
                                         "tests/codegen/mma_f16.ugraph"};

START_TEST(test_plan_picks_wgmma_where_tiles_allow) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *h100 = NULL;
  ck_assert_int_eq(mirs__cost_profiles_builtin(ctx, &p), MIRS_OK);
  ck_assert_int_eq(mirs__cost_find(ctx, p, "H100", &h100), MIRS_OK);
  for (size_t i = 0; i < sizeof PICKED / sizeof *PICKED; i++) {
    mirs_graph *g = load(ctx, PICKED[i]);
    ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "0"), MIRS_OK);
    ck_assert_int_eq(wg_count(ctx, g, NULL), 0);
    char *off = NULL, *on = NULL;
    ck_assert_int_eq(mirs_codegen_cuda(g, "k", &off), MIRS_OK);
    ck_assert_ptr_null(strstr(off, "mirs_wgmma"));
    ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "1"), MIRS_OK);
    ck_assert_msg(wg_count(ctx, g, NULL) == 1, "%s: no wgmma matmul", PICKED[i]);
    ck_assert_int_eq(mirs_codegen_cuda(g, "k", &on), MIRS_OK);
    ck_assert_ptr_nonnull(strstr(on, "mirs_wgmma_commit();"));
    ck_assert_ptr_nonnull(strstr(on, "mirs_fence_proxy_async();"));
    ck_assert_ptr_nonnull(strstr(on, "wgmma.mma_async.sync.aligned.m64n"));
    /* The launch requests the wgmma plan's shared memory (no padding). */
    for (int32_t op = 0; op < g->nops; op++) {
      if (g->ops[op].op != MIRS_OP_CUSTOM)
        continue;
      mirs__cost_kernel kc;
      ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, op, &kc), MIRS_OK);
      char key[64];
      snprintf(key, sizeof key, "MIRS_LAUNCH(k_k%d, ", (int)op);
      const char *c = strstr(on, key);
      ck_assert_ptr_nonnull(c);
      c = strstr(strstr(c, "), dim3(") + 1, "), ");
      ck_assert_msg(strtoll(c + 3, NULL, 10) == kc.smem, "%s: launch smem != plan %lld", PICKED[i],
                    (long long)kc.smem);
    }
    mirs_free(ctx, off);
    mirs_free(ctx, on);
    mirs_graph_destroy(g);
  }
  /* Skinny M (padded to 16 for mma.sync, or swapped), computed operands,
   * the register chain: sm_80 path, and the same code as without the
   * option. */
  size_t nnot = sizeof NOT_PICKED / sizeof *NOT_PICKED, nch = sizeof CHAINED / sizeof *CHAINED;
  for (size_t i = 0; i < nnot + nch; i++) {
    const char *path = i < nnot ? NOT_PICKED[i] : CHAINED[i - nnot];
    mirs_graph *g = load(ctx, path);
    ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "1"), MIRS_OK);
    int chains = 0;
    ck_assert_msg(wg_count(ctx, g, &chains) == 0, "%s: wgmma picked", path);
    ck_assert_msg(i < nnot || chains > 0, "%s: no register chain", path);
    char *on = NULL, *off = NULL;
    ck_assert_int_eq(mirs_codegen_cuda(g, "k", &on), MIRS_OK);
    ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "0"), MIRS_OK);
    ck_assert_int_eq(mirs_codegen_cuda(g, "k", &off), MIRS_OK);
    ck_assert_str_eq(on, off);
    mirs_free(ctx, off);
    mirs_free(ctx, on);
    mirs_graph_destroy(g);
  }
  mirs__cost_profiles_free(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_cost_rates) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *h100 = NULL;
  ck_assert_int_eq(mirs__cost_profiles_builtin(ctx, &p), MIRS_OK);
  ck_assert_int_eq(mirs__cost_find(ctx, p, "H100", &h100), MIRS_OK);
  /* A wgmma kernel: the same flops either way; on chip no slower with
   * wgmma (its operands read once from shared memory, at the peak). */
  mirs_graph *g = load(ctx, "tests/codegen/wgmma_f16.ugraph");
  mirs__cost_kernel k0, k1;
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "0"), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, 0, &k0), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "1"), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, 0, &k1), MIRS_OK);
  ck_assert_double_eq(k0.tc_flops, k1.tc_flops);
  ck_assert(k1.compute_seconds <= k0.compute_seconds);
  mirs_graph_destroy(g);
  /* An mma.sync kernel (mma_f16: its operands feed two ops each, so no
   * wgmma): its f16 tensor-core time 1.5x under the option, which shows in
   * the on-chip time where tensor cores bound an iteration (the latency
   * terms take the larger of tensor cores and shared memory). */
  g = load(ctx, "tests/codegen/mma_f16.ugraph");
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "0"), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, 0, &k0), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", "1"), MIRS_OK);
  ck_assert_int_eq(mirs__cost_kernel_op(ctx, h100, g, 0, &k1), MIRS_OK);
  ck_assert(k0.tc_flops > 0);
  ck_assert_double_eq(k0.tc_flops, k1.tc_flops);
  ck_assert(k1.compute_seconds >= k0.compute_seconds);
  mirs_graph_destroy(g);
  mirs__cost_profiles_free(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- host runs */

/* Host-run g with codegen_wgmma = on under thread order seed. */
static mirs_eval_result *run(mirs_context *ctx, const mirs_graph *g, bool on, int seed,
                             double *err) {
  char v[16];
  snprintf(v, sizeof v, "%d", seed);
  ck_assert_int_eq(mirs_option_set(ctx, "emu_seed", v), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "codegen_wgmma", on ? "1" : "0"), MIRS_OK);
  mirs_eval_result *r = NULL;
  ck_assert_msg(mirs_codegen_run(g, 3, MIRS_BACKEND_HOST, &r, err) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  return r;
}

static const char *const RUNS[] = {"tests/codegen/wgmma_f16.ugraph",
                                   "tests/codegen/wgmma_bf16.ugraph"};

START_TEST(test_wgmma_runs_match) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, RUNS[_i]);
  double err = -1;
  mirs_eval_result *ref = run(ctx, g, false, 1, &err);
  ck_assert(err <= mirs_codegen_tolerance(g));
  for (int s = 0; s < 3; s++) {
    mirs_eval_result *r = run(ctx, g, true, 1 + 7 * s, &err);
    ck_assert_msg(err <= mirs_codegen_tolerance(g), "%s seed %d: relative error %g", RUNS[_i],
                  1 + 7 * s, err);
    ck_assert_msg(mirs__eval_max_rel_error(ref, r) == 0.0, "%s seed %d: differs from mma.sync",
                  RUNS[_i], 1 + 7 * s);
    mirs_eval_result_destroy(r);
  }
  mirs_eval_result_destroy(ref);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hopper");
  TCase *tc = tcase_create("hopper");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_emu_wgmma_against_the_isa);
  tcase_add_test(tc, test_plan_picks_wgmma_where_tiles_allow);
  tcase_add_test(tc, test_cost_rates);
  tcase_add_loop_test(tc, test_wgmma_runs_match, 0, (int)(sizeof RUNS / sizeof *RUNS));
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run_with_cxx(suite());
}
