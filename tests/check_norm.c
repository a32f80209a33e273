/* SPDX-License-Identifier: MIT */
/* tests/check_norm.c - mean and layer_norm end to end through the command
 * line (in-process): parse errors with their positions, the eps attribute's
 * canonical round trip, the float64 interpreter (layer_norm with eps=0
 * equals the spelled-out mean/sub/square/sqrt/div program), fingerprints
 * (that pair verifies equivalent, eps=1e-5 against it does not; a block
 * mean verifies, a block sum in its place does not), the search (results
 * with pruning on and off are the same set, the best is one kernel) and
 * the generated code run on the host (tree reductions included). */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"

static void setup(void) {
  tu_scratch_make("norm");
}

static void teardown(void) {
  tu_scratch_remove();
}

#define HEAD "input X : f16[2, 4]\ninput W : f16[4, 2]\n"

/* The programs the tests compare. */
static const char *const LN0 = "program p\n" HEAD "N = layer_norm(X, eps=0.0)\n"
                               "O = matmul(N, W)\noutput O\n";
static const char *const LN5 = "program p\n" HEAD "N = layer_norm(X)\n"
                               "O = matmul(N, W)\noutput O\n";
static const char *const SPELLED = "program p\n" HEAD "M = mean(X, dim=1)\nC = sub(X, M)\n"
                                   "S = square(C)\nV = mean(S, dim=1)\nD = sqrt(V)\n"
                                   "N = div(C, D)\nO = matmul(N, W)\noutput O\n";
/* The same with an epsilon written as a number operand (PyTorch's 1e-5). */
static const char *const SPELLED5 = "program p\n" HEAD "M = mean(X, dim=1)\nC = sub(X, M)\n"
                                    "S = square(C)\nV = mean(S, dim=1)\nE = add(V, 1e-5)\n"
                                    "D = sqrt(E)\nN = div(C, D)\nO = matmul(N, W)\noutput O\n";

START_TEST(test_parse_errors_have_positions) {
  static const char text[] = "program e\n"
                             "input X : f16[2, 4]\n"
                             "A = layer_norm(X, eps=-1)\n"
                             "B = mean(X)\n"
                             "C = mean(X, dim=0.5)\n"
                             "D = layer_norm(X, dim=1)\n"
                             "E = mean(X, dim=1, eps=1e-5)\n"
                             "F = layer_norm(X, eps=2.5)\n"
                             "G = mean(X, dim=2)\n"
                             "output A\n";
  static const char *const want[] = {
      ":3:23: error: eps= must be a number in [0, 1)",
      ":4:11: error: 'mean' requires dim=",
      ":5:17: error: dim= takes an integer, not a real number",
      ":6:19: error: 'layer_norm' takes no dim= argument",
      ":7:20: error: unknown keyword argument 'eps' for 'mean'",
      ":8:23: error: eps= must be a number in [0, 1)",
      ":9:17: error: mean: dim=2 is out of range for rank 2",
  };
  tu_assert_check_errors(text, want, sizeof want / sizeof want[0]);
}
END_TEST

START_TEST(test_eps_round_trip) {
  const char *f = tu_put("rt.graph", "program p\n" HEAD "N = layer_norm(X, eps=0.001)\n"
                                  "K = layer_norm(X)\nM = mean(N, dim=-1)\noutput M, K\n");
  static const char *const want[] = {"N = layer_norm(X, eps=0.001)\n",
                                     "K = layer_norm(X, eps=1e-05)\n", "M = mean(N, dim=1)\n"};
  tu_assert_round_trip(f, want, sizeof want / sizeof want[0]);
}
END_TEST

START_TEST(test_interp_layer_norm_equals_spelled) {
  run a, b, c;
  tu_cli_ok(&a, "eval", tu_put("ln0.graph", LN0), NULL);
  tu_cli_ok(&b, "eval", tu_put("sp.graph", SPELLED), NULL);
  tu_cli_ok(&c, "eval", tu_put("ln5.graph", LN5), NULL);
  ck_assert_str_eq(a.out, b.out);
  ck_assert_str_ne(a.out, c.out); /* eps is under the root */
  run_free(&a);
  run_free(&b);
  run_free(&c);
}
END_TEST

START_TEST(test_fingerprints) {
  const char *sp = tu_put("sp.graph", SPELLED);
  ck_assert_int_eq(tu_verify_rc(sp, tu_put("ln0.graph", LN0)), 0);
  ck_assert_int_eq(tu_verify_rc(sp, tu_put("ln5.graph", LN5)), 1);
  /* eps as an attribute and as a number operand: one field element. */
  const char *sp5 = tu_put("sp5.graph", SPELLED5);
  ck_assert_int_eq(tu_verify_rc(sp5, tu_put("ln5b.graph", LN5)), 0);
  ck_assert_int_eq(tu_verify_rc(sp5, tu_put("ln0b.graph", LN0)), 1);
  /* A block-level mean, and the same µGraph with a sum in its place. */
  const char *prog = tu_put("m.graph", "program m\n" HEAD "M = mean(X, dim=1)\nC = sub(X, M)\n"
                                    "O = matmul(C, W)\noutput O\n");
  static const char *const UG =
      "ugraph m\n" HEAD "O = custom(grid=[2, 1, 1], block=[128, 1, 1], forloop=1) {\n"
      "  b0 = input(X, imap=[0, -1, -1], fmap=-1)\n  b1 = %s(b0, dim=1)\n  b2 = sub(b0, b1)\n"
      "  b3 = input(W, imap=[-1, -1, -1], fmap=-1)\n  b4 = matmul(b2, b3)\n  b5 = accum(b4)\n"
      "  output(b5, omap=[0, -1, -1])\n}\noutput O\n";
  char text[1024];
  snprintf(text, sizeof text, UG, "mean");
  ck_assert_int_eq(tu_verify_rc(prog, tu_put("m.ugraph", text)), 0);
  snprintf(text, sizeof text, UG, "sum");
  ck_assert_int_eq(tu_verify_rc(prog, tu_put("s.ugraph", text)), 1);
}
END_TEST

/* The sorted result hashes of a search of `text` (restricted space, one
 * thread) with pruning on or off, into hashes (space-separated); the
 * number of results, and the best's kernel count in *kernels. */
static int search_hashes(const char *text, bool prune, char *hashes, size_t cap, int *kernels) {
  char out[700];
  snprintf(out, sizeof out, "--out=%s/out_%d", tu_dir, prune);
  run r;
  tu_cli_ok(&r, "-q", "--threads=1", prune ? "--prune=1" : "--prune=0", "--json", "--overwrite",
            "--no-cache", "--set", "kernel_ops=none", "--set",
            "block_ops=mean,layer_norm,sub,mul,matmul,accum,accum_sum", "--set", "max_block_ops=7",
            "--set", "max_custom_kernels=1", out, tu_put("s.graph", text), NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"complete\": true"));
  const char *k = strstr(r.out, "\"best\": {");
  ck_assert_ptr_nonnull(k);
  k = strstr(k, "\"kernels\": ");
  ck_assert_ptr_nonnull(k);
  *kernels = atoi(k + strlen("\"kernels\": "));
  /* The results list is sorted by (cost, hash): collect the hashes. */
  char list[64][17];
  int n = 0;
  for (const char *p = strstr(r.out, "\"results\": ["); p && (p = strstr(p, "\"hash\": \""));) {
    p += strlen("\"hash\": \"");
    ck_assert_int_lt(n, 64);
    memcpy(list[n], p, 16);
    list[n++][16] = '\0';
  }
  qsort(list, (size_t)n, sizeof list[0], (int (*)(const void *, const void *))strcmp);
  hashes[0] = '\0';
  for (int i = 0; i < n; i++) {
    strncat(hashes, list[i], cap - strlen(hashes) - 1);
    strncat(hashes, " ", cap - strlen(hashes) - 1);
  }
  run_free(&r);
  return n;
}

static const char *const SEARCHED[] = {
    "program tm\ninput X : f16[2, 4]\ninput W : f16[4, 2]\nM = mean(X, dim=1)\n"
    "C = sub(X, M)\nO = matmul(C, W)\noutput O\n",
    "program tl\ninput X : f16[2, 4]\ninput Y : f16[2, 4]\nN = layer_norm(X, eps=0.001)\n"
    "O = mul(N, Y)\noutput O\n",
};

START_TEST(test_search_prune_on_off_equal) {
  char on[1200], off[1200];
  int kon, koff;
  int n = search_hashes(SEARCHED[_i], true, on, sizeof on, &kon);
  int m = search_hashes(SEARCHED[_i], false, off, sizeof off, &koff);
  ck_assert_int_ge(n, 1);
  ck_assert_int_eq(n, m);
  ck_assert_str_eq(on, off);
  ck_assert_int_eq(kon, 1);
  ck_assert_int_eq(koff, 1);
  /* The best runs on the host through the generated code. */
  char best[700];
  snprintf(best, sizeof best, "%s/out_1/best.ugraph", tu_dir);
  run r;
  tu_cli_ok(&r, "run", best, NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "max relative error vs float64 interpreter"));
  run_free(&r);
}
END_TEST

START_TEST(test_spelled_folds_to_layer_norm) {
  /* The search folds the spelled-out program into layer_norm(X, eps=0.0):
   * both find the same µGraphs, and the best holds a layer_norm op. */
  char a[1200], b[1200];
  int ka, kb;
  int n = search_hashes(SPELLED, true, a, sizeof a, &ka);
  int m = search_hashes(LN0, true, b, sizeof b, &kb);
  ck_assert_int_ge(n, 1);
  ck_assert_int_eq(n, m);
  ck_assert_str_eq(a, b);
  char best[700];
  snprintf(best, sizeof best, "%s/out_1/best.ugraph", tu_dir);
  static const char *const folded[] = {"layer_norm("};
  tu_assert_checks(best, folded, 1);
  /* With add(V, 1e-5) under the root it folds to layer_norm(X, eps=1e-5). */
  n = search_hashes(SPELLED5, true, a, sizeof a, &ka);
  m = search_hashes(LN5, true, b, sizeof b, &kb);
  ck_assert_int_ge(n, 1);
  ck_assert_int_eq(n, m);
  ck_assert_str_eq(a, b);
}
END_TEST

START_TEST(test_fused_layer_norm_linear) {
  /* LayerNorm+Linear in one kernel walking k: X loaded whole (its mean)
   * and by slices (the centred matmul and accum_rms with eps). */
  char out[700];
  snprintf(out, sizeof out, "--out=%s/fused", tu_dir);
  run r;
  tu_cli_ok(&r, "-q", "--threads=1", "--json", "--no-cache", "--set", "kernel_ops=none", "--set",
            "block_ops=mean,sub,matmul,accum,accum_rms,div", "--set", "forloop_ranges=4", "--set",
            "max_custom_kernels=1", out,
            tu_put("f.graph", "program f\ninput X : f16[2, 16]\ninput W : f16[16, 8]\n"
                              "N = layer_norm(X)\nO = matmul(N, W)\noutput O\n"),
            NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"complete\": true"));
  ck_assert_ptr_nonnull(strstr(r.out, "\"forloop\": 4"));
  run_free(&r);
  char best[700];
  snprintf(best, sizeof best, "%s/fused/best.ugraph", tu_dir);
  static const char *const fused[] = {"accum_rms(", ", eps=1e-05)", "forloop=4"};
  tu_assert_checks(best, fused, sizeof fused / sizeof fused[0]);
  tu_cli_ok(&r, "run", best, NULL);
  run_free(&r);
}
END_TEST

START_TEST(test_codegen_host_run) {
  /* Rows of 256: the block ops reduce as warp-shuffle trees; the program
   * itself runs as predefined kernels. */
  const char *prog = tu_put("w.graph", "program w\ninput X : f16[4, 256]\ninput Y : f16[4, 256]\n"
                                    "N = layer_norm(X, eps=0.001)\nM = mean(X, dim=1)\n"
                                    "P = mul(N, Y)\nO = add(P, M)\noutput O\n");
  const char *ug = tu_put(
      "w.ugraph", "ugraph w\ninput X : f16[4, 256]\ninput Y : f16[4, 256]\n"
                  "O = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=1) {\n"
                  "  b0 = input(X, imap=[0, -1, -1], fmap=-1)\n  b1 = layer_norm(b0, eps=0.001)\n"
                  "  b2 = mean(b0, dim=1)\n  b3 = input(Y, imap=[0, -1, -1], fmap=-1)\n"
                  "  b4 = mul(b1, b3)\n  b5 = add(b4, b2)\n  b6 = accum(b5)\n"
                  "  output(b6, omap=[0, -1, -1])\n}\noutput O\n");
  ck_assert_int_eq(tu_verify_rc(prog, ug), 0);
  run c;
  tu_cli_ok(&c, "codegen", ug, NULL);
  ck_assert_ptr_nonnull(strstr(c.out, "__shfl_xor_sync"));
  ck_assert_ptr_nonnull(strstr(c.out, "const float mu = ss / 256.0f;"));
  run_free(&c);
  const char *files[2] = {prog, ug};
  for (int i = 0; i < 2; i++) {
    run r;
    tu_cli_ok(&r, "run", files[i], NULL);
    ck_assert_ptr_nonnull(strstr(r.out, "max relative error vs float64 interpreter"));
    run_free(&r);
  }
}
END_TEST

START_TEST(test_codegen_rows_over_threads) {
  /* 256 rows of 16 on 32 threads: rms_norm and layer_norm still reduce
   * each row once (4 lanes a row, 8 rows a lane group in turn), never
   * the element-wise form that sums the whole row again for every
   * element (qknorm_attention's V tile ran 20 times the model's time on
   * an H200 that way). */
  const char *prog = tu_put("r.graph", "program r\ninput X : f16[256, 16]\n"
                                    "N = rms_norm(X)\nL = layer_norm(X)\nO = add(N, L)\noutput O\n");
  const char *ug = tu_put(
      "r.ugraph", "ugraph r\ninput X : f16[256, 16]\n"
                  "O = custom(grid=[1, 1, 1], block=[32, 1, 1], forloop=1) {\n"
                  "  b0 = input(X, imap=[-1, -1, -1], fmap=-1)\n  b1 = rms_norm(b0)\n"
                  "  b2 = layer_norm(b0)\n  b3 = add(b1, b2)\n  b4 = accum(b3)\n"
                  "  output(b4, omap=[-1, -1, -1])\n}\noutput O\n");
  ck_assert_int_eq(tu_verify_rc(prog, ug), 0);
  run c;
  tu_cli_ok(&c, "codegen", ug, NULL);
  ck_assert_ptr_nonnull(strstr(c.out, "b1 = rms_norm: 4 lanes per row, warp-shuffle tree"));
  ck_assert_ptr_nonnull(strstr(c.out, "b2 = layer_norm: 4 lanes per row, warp-shuffle tree"));
  ck_assert_ptr_nonnull(strstr(c.out, "for (int r = 0; r < 32; r++)"));
  ck_assert_ptr_null(strstr(c.out, "for (int p = 0; p < 16; p++)"));
  run_free(&c);
  run r;
  tu_cli_ok(&r, "run", ug, NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "max relative error vs float64 interpreter"));
  run_free(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("norm");
  TCase *tc = tcase_create("norm");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_parse_errors_have_positions);
  tcase_add_test(tc, test_eps_round_trip);
  tcase_add_test(tc, test_interp_layer_norm_equals_spelled);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_loop_test(tc, test_search_prune_on_off_equal, 0,
                      (int)(sizeof SEARCHED / sizeof SEARCHED[0]));
  tcase_add_test(tc, test_spelled_folds_to_layer_norm);
  tcase_add_test(tc, test_fused_layer_norm_linear);
  tcase_add_test(tc, test_codegen_host_run);
  tcase_add_test(tc, test_codegen_rows_over_threads);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(suite());
}
