/* SPDX-License-Identifier: MIT */
/* tests/check_max.c - max(x, dim), accum_max and accum_online (issue 29):
 * the operators of safe (max-shifted) and online softmax, end to end.
 *
 * Covered: parsing, printing and re-parsing; the API's reduction builder;
 * the float64 interpreter (max against a direct computation, the online
 * form against the program it computes); fingerprints (the online form
 * equals the max-shifted program and the unshifted one, a form without
 * the rescale and a max over the wrong dim differ, a max of an exp
 * shift is refused); host runs of the generated code; the search (the
 * one-kernel online form of safe attention is found; prune on and off
 * give the same results on small programs with max); and large logits
 * (input_scale): the max-shifted program and its online µGraph agree in
 * float64 and the generated code stays finite where the unshifted
 * kernel overflows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch/codegen.h"
#include "testutil.h"
#include "reduceutil.h"

/* The largest relative error between two graphs' float64 evaluations. */
static double eval_err(const mirs_graph *a, const mirs_graph *b, uint64_t seed) {
  mirs_eval_result *ra = NULL, *rb = NULL;
  ck_assert_int_eq(mirs_graph_eval(a, seed, &ra), MIRS_OK);
  ck_assert_int_eq(mirs_graph_eval(b, seed, &rb), MIRS_OK);
  double e = mirs__eval_max_rel_error(ra, rb);
  mirs_eval_result_destroy(ra);
  mirs_eval_result_destroy(rb);
  return e;
}

static const char SAFE_SMALL[] = "examples/gqa_safe_small.graph";
static const char ONLINE[] = "tests/codegen/online_softmax.ugraph";

START_TEST(test_parse_print_roundtrip) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *files[] = {SAFE_SMALL, ONLINE, "tests/codegen/accum_max.ugraph"};
  for (int i = 0; i < 3; i++) {
    mirs_graph *g = load(ctx, files[i]);
    char *text = NULL;
    ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
    static const char *const want[] = {"max(A, dim=2)", "accum_online(y, m)", "accum_max(m, dim=1)"};
    ck_assert_ptr_nonnull(strstr(text, want[i]));
    mirs_graph *h = parse(ctx, text);
    ck_assert_uint_eq(mirs_graph_hash(g), mirs_graph_hash(h));
    mirs_free(ctx, text);
    mirs_graph_destroy(h);
    mirs_graph_destroy(g);
  }
  /* The operators by name, and where each may appear. */
  mirs_op op;
  ck_assert_int_eq(mirs_op_lookup("max", &op), MIRS_OK);
  ck_assert_int_eq(op, MIRS_OP_MAX);
  ck_assert_int_eq(mirs_op_lookup("accum_online", &op), MIRS_OK);
  ck_assert_int_eq(mirs__graph_ops[op].arity, 2);
  ck_assert(!(mirs__graph_ops[MIRS_OP_ACCUM_MAX].levels & MIRS_LEVEL_K));
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_api_reduce) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, "api", &g), MIRS_OK);
  int64_t dims[2] = {3, 5};
  mirs_tensor x, m;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F32, 2, dims, &x), MIRS_OK);
  /* max needs its dim: the plain builder refuses it. */
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_MAX, 1, &x, &m), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "mirs_graph_add_reduce"));
  ck_assert_int_eq(mirs_graph_add_reduce(g, "M", MIRS_OP_EXP, x, 1, &m), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_reduce(g, "M", MIRS_OP_MAX, x, 2, &m), MIRS_SHAPE);
  ck_assert_int_eq(mirs_graph_add_reduce(g, "M", MIRS_OP_MAX, x, -1, &m), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, m), MIRS_OK);
  int64_t out[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_tensor_shape(g, m, out), 2);
  ck_assert(out[0] == 3 && out[1] == 1);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_interp_max) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, "input X : f32[3, 5, 4]\nM = max(X, dim=1)\noutput M\n");
  mirs_eval_result *r = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 11, &r), MIRS_OK);
  int64_t n = 0;
  const double *v = mirs_eval_output_values(r, 0, &n);
  ck_assert_int_eq(n, 12);
  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) {
      double best = -INFINITY;
      for (int b = 0; b < 5; b++)
        best = fmax(best, mirs_input_value(11, "X", (uint64_t)(a * 20 + b * 4 + c)));
      ck_assert_double_eq(v[a * 4 + c], best);
    }
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_online_form_equals_program) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = load(ctx, SAFE_SMALL), *u = load(ctx, "examples/gqa_small.graph");
  mirs_graph *c = load(ctx, ONLINE);
  ck_assert_int_eq(mirs_graph_validate(c), MIRS_OK);
  /* float64: the running max and rescales reproduce the row softmax. */
  ck_assert(eval_err(p, c, 3) < 1e-12);
  ck_assert(eval_err(u, p, 3) < 1e-12);
  /* Fingerprints: equal to the shifted program, and to the unshifted one
   * (a per-row shift cancels in the field, as it does in the reals). */
  ck_assert_int_eq(verify(ctx, p, c), 1);
  ck_assert_int_eq(verify(ctx, u, c), 1);
  mirs_graph_destroy(c);
  mirs_graph_destroy(u);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* The online form with one change: `from` replaced by `to` in its text. */
static mirs_graph *variant(mirs_context *ctx, const char *from, const char *to) {
  FILE *f = fopen(tu_src(ONLINE), "rb");
  ck_assert_ptr_nonnull(f);
  static char text[8192], out[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  char *at = strstr(text, from);
  ck_assert_ptr_nonnull(at);
  snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return parse(ctx, out);
}

START_TEST(test_fingerprints_reject_near_misses) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = load(ctx, SAFE_SMALL);
  /* No rescale: plain sums of exp(s - m_i) with per-tile shifts. */
  mirs_graph *c = variant(ctx, "a = accum_online(y, m)\n  d = accum_online(r, m)",
                          "a = accum(y)\n  d = accum(r)");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  /* The numerator rescaled, the denominator not. */
  c = variant(ctx, "d = accum_online(r, m)", "d = accum(r)");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  /* Numerator and denominator shifted by different running maxes. */
  c = variant(ctx, "d = accum_online(r, m)", "n = max(q, dim=2)\n  d = accum_online(r, n)");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  /* max over the wrong dim, and sum in place of max. */
  mirs_graph *r = parse(ctx, "input X : f16[4, 8]\nO = max(X, dim=0)\noutput O\n");
  mirs_graph *q = parse(ctx, "input X : f16[4, 8]\nT = max(X, dim=1)\nO = max(T, dim=0)\n"
                             "output O\n");
  ck_assert_int_eq(verify(ctx, r, q), 0);
  mirs_graph_destroy(q);
  mirs_graph *t = parse(ctx, "input X : f16[4, 8]\nO = sum(X, dim=0)\noutput O\n");
  ck_assert_int_eq(verify(ctx, r, t), 0);
  mirs_graph_destroy(t);
  mirs_graph_destroy(r);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_accum_max_equals_max) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = load(ctx, "tests/codegen/accum_max.graph");
  mirs_graph *c = load(ctx, "tests/codegen/accum_max.ugraph");
  ck_assert(eval_err(p, c, 9) == 0.0);
  ck_assert_int_eq(verify(ctx, p, c), 1);
  mirs_graph_destroy(c);
  /* A running max over half the row is not the row max. */
  c = parse(ctx, "ugraph h\ninput X : f16[4, 256]\n"
                 "M, N = custom(grid=[4, 1, 1], block=[64, 1, 1], forloop=2) {\n"
                 "  x = input(X, imap=[0, -1, -1], fmap=1)\n"
                 "  y = max(x, dim=1)\n  z = input(X, imap=[0, -1, -1], fmap=1)\n"
                 "  a = accum_max(y, dim=1)\n  b = accum_max(z, dim=1)\n"
                 "  output(a, omap=[0, -1, -1])\n  output(b, omap=[0, -1, -1])\n}\noutput M, N\n");
  ck_assert_int_eq(verify(ctx, p, c), 1); /* forloop 2 over 128-wide tiles: still the row */
  mirs_graph_destroy(c);
  /* A running sum is not a running max. */
  c = parse(ctx, "ugraph h\ninput X : f16[4, 256]\n"
                 "M = custom(grid=[4, 1, 1], block=[64, 1, 1], forloop=2) {\n"
                 "  x = input(X, imap=[0, -1, -1], fmap=1)\n"
                 "  a = accum_sum(x, dim=1)\n  output(a, omap=[0, -1, -1])\n}\n"
                 "N = max(X, dim=1)\noutput M, N\n");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_exp_of_max_of_exp_refused) {
  mirs_context *ctx = tu_ctx(NULL);
  /* The shift of accum_online must not depend on an exp (its exp has no
   * sound fingerprint, as exp(exp(x)) has none). */
  mirs_graph *p = load(ctx, SAFE_SMALL);
  mirs_graph *c = variant(ctx, "a = accum_online(y, m)", "w = max(e, dim=2)\n  a = accum_online(y, w)");
  mirs_verify_result r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(mirs_verify(ctx, p, c, &r), MIRS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "exp"));
  mirs_graph_destroy(c);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_codegen_host_runs) {
  /* The generated kernels of the new operators against the interpreter:
   * block max (tree and plain), accum_max, accum_online (its running max
   * in registers) and the predefined kernel max of a program. */
  static const char *const pairs[][2] = {
      {ONLINE, SAFE_SMALL},
      {"tests/codegen/accum_max.ugraph", "tests/codegen/accum_max.graph"},
      {SAFE_SMALL, SAFE_SMALL},
      {"examples/mha_safe_small.graph", "examples/mha_safe_small.graph"}};
  for (int i = 0; i < 4; i++) {
    mirs_context *ctx = tu_ctx(NULL);
    mirs_graph *g = load(ctx, pairs[i][0]), *p = load(ctx, pairs[i][1]);
    double err = host_err(ctx, g, p, 4 + (uint64_t)i), tol = mirs_codegen_tolerance(g);
    ck_assert_msg(err <= tol, "%s: relative error %g > %g", pairs[i][0], err, tol);
    mirs_graph_destroy(p);
    mirs_graph_destroy(g);
    mirs_context_destroy(ctx);
  }
}
END_TEST

START_TEST(test_large_logits) {
  /* Inputs scaled by 7: attention logits reach about 200 in magnitude.
   * The max-shifted program and its online µGraph agree in float64; the
   * online kernel's host run is finite and within tolerance, where the
   * unshifted kernel's exp overflows (inf / inf = NaN).  Inputs rounded to
   * f16 in the reference too, so the comparison measures the kernel. */
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"input_scale", "7", "round_inputs", "1", NULL};
  set_opts(ctx, kv);
  mirs_graph *p = load(ctx, SAFE_SMALL), *c = load(ctx, ONLINE);
  mirs_graph *u = load(ctx, "examples/gqa_small.ugraph");
  /* The logits: A of the program. */
  mirs_eval_result *r = NULL;
  mirs_graph *la = parse(ctx, "input Q : f16[2, 8, 16]\ninput K : f16[2, 16, 128]\n"
                              "A = matmul(Q, K)\noutput A\n");
  ck_assert_int_eq(mirs_graph_eval(la, 5, &r), MIRS_OK);
  int64_t n = 0;
  const double *a = mirs_eval_output_values(r, 0, &n);
  double big = 0;
  for (int64_t i = 0; i < n; i++)
    big = fmax(big, fabs(a[i]));
  ck_assert_msg(big > 150 && big < 400, "largest logit %g", big);
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(la);
  ck_assert(eval_err(p, c, 5) < 1e-12);
  ck_assert_int_eq(verify(ctx, p, c), 1);
  double err = host_err(ctx, c, p, 5);
  ck_assert_msg(err <= mirs_codegen_tolerance(c), "online kernel: relative error %g", err);
  ck_assert_msg(isinf(host_err(ctx, u, p, 5)), "the unshifted kernel did not overflow");
  mirs_graph_destroy(u);
  mirs_graph_destroy(c);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* Safe attention small enough to search in a test. */
static const char TINY_SAFE[] = "program tiny_safe\ninput Q : f16[1, 4, 8]\n"
                                "input K : f16[1, 8, 32]\ninput V : f16[1, 32, 8]\n"
                                "A = matmul(Q, K)\nM = max(A, dim=2)\nC = sub(A, M)\n"
                                "E = exp(C)\nS = sum(E, dim=2)\nD = div(E, S)\n"
                                "O = matmul(D, V)\noutput O\n";

START_TEST(test_search_finds_online_form) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"threads", "1", "max_block_ops", "13", "grid_x", "1,4",
                                   "grid_y", "1", "grid_z", "1", "forloop_ranges", "1,2",
                                   "max_kernel_ops", "2", NULL};
  mirs_search *s = search(ctx, TINY_SAFE, kv);
  mirs_graph *p = parse(ctx, TINY_SAFE);
  int online = 0;
  for (int i = 0; i < mirs_search_num_results(s); i++) {
    const mirs_graph *r = mirs_search_result(s, i);
    char *text = NULL;
    ck_assert_int_eq(mirs_graph_to_string(r, &text), MIRS_OK);
    if (strstr(text, "accum_online") && strstr(text, "forloop=2") &&
        mirs_search_result_kernels(s, i) == 1) {
      online++;
      if (online == 1) { /* one of them, independently */
        ck_assert_int_eq(verify(ctx, p, r), 1);
        ck_assert_ptr_nonnull(strstr(text, " = max("));
      }
    }
    mirs_free(ctx, text);
  }
  ck_assert_int_gt(online, 0);
  mirs_graph_destroy(p);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

/* The sorted result hashes of a search of text under kv plus name=value. */
static int result_set(const char *text, const char *const *kv, const char *name,
                      const char *value, uint64_t *out, int cap) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *const one[] = {name, value, NULL};
  set_opts(ctx, one);
  mirs_search *s = search(ctx, text, kv);
  int n = mirs_search_num_results(s);
  ck_assert_int_le(n, cap);
  for (int i = 0; i < n; i++) {
    uint64_t h = mirs_search_result_hash(s, i);
    int j = i;
    for (; j > 0 && out[j - 1] > h; j--)
      out[j] = out[j - 1];
    out[j] = h;
  }
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
  return n;
}

START_TEST(test_prune_same_results) {
  /* Pruning loses no result on programs with max: the shifted softmax
   * (whose unshifted forms are results too) and a plain row max. */
  static const char *const programs[] = {
      "program rowmax_tiny\ninput X : f16[2, 4, 8]\ninput V : f16[2, 8, 4]\n"
      "M = max(X, dim=2)\nC = sub(X, M)\nE = exp(C)\nS = sum(E, dim=2)\nD = div(E, S)\n"
      "O = matmul(D, V)\noutput O\n",
      "program rowmax\ninput X : f16[4, 16]\nY = exp(X)\nM = max(Y, dim=1)\noutput M\n"};
  static const char *const kv[] = {"threads", "1", "op_budget", "0", "grid_x", "1,2",
                                   "grid_y", "1", "grid_z", "1", "forloop_ranges", "1,2",
                                   "max_block_ops", "10", "kernel_ops", "max,exp",
                                   "max_kernel_ops", "3", NULL};
  static uint64_t h1[512], h0[512];
  for (int i = 0; i < 2; i++) {
    int n1 = result_set(programs[i], kv, "prune", "true", h1, 512);
    int n0 = result_set(programs[i], kv, "prune", "false", h0, 512);
    ck_assert_int_gt(n1, 0);
    ck_assert_msg(n1 == n0, "program %d: %d results with pruning, %d without", i, n1, n0);
    ck_assert_mem_eq(h1, h0, sizeof(uint64_t) * (size_t)n1);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("max");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_parse_print_roundtrip);
  tcase_add_test(tc, test_api_reduce);
  tcase_add_test(tc, test_interp_max);
  tcase_add_test(tc, test_online_form_equals_program);
  tcase_add_test(tc, test_fingerprints_reject_near_misses);
  tcase_add_test(tc, test_accum_max_equals_max);
  tcase_add_test(tc, test_exp_of_max_of_exp_refused);
  tcase_add_test(tc, test_codegen_host_runs);
  tcase_add_test(tc, test_large_logits);
  tcase_add_test(tc, test_search_finds_online_form);
  tcase_add_test(tc, test_prune_same_results);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(suite());
}
