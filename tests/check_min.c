/* SPDX-License-Identifier: MIT */
/* tests/check_min.c - min(x, dim) and accum_min, the mirror of max, and
 * abs(x), for quantization scales amax(abs(x)) (issue 29), end to end.
 *
 * Covered: parsing, printing and re-parsing; the API's reduction builder;
 * the float64 interpreter (min against a direct computation, NaN wins);
 * fingerprints (min is max's keyed order reversed: min(x) differs from
 * max(x), min + max of two values is their sum as in the reals, a min
 * over the wrong dim and a sum differ, accum_min equals the row min, a
 * masked min is refused); abstract expressions (min is not max, min of
 * min is min); host runs of the generated code (tree, plain and
 * accum_min kernels against the interpreter); the search (finds a
 * one-kernel accum_min form; prune on and off give the same results).
 * abs: interpreter, fingerprints (an even keyed function: abs(-x) =
 * abs(x) and abs(a - b) = abs(b - a) are accepted; abs is not x, -x,
 * relu(x) or sqrt(x * x)'s keyed sqrt; a masked abs is refused), the
 * per-row scale kernel tests/codegen/absmax.ugraph (verified, host run),
 * and a search of amax(abs(x)). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch/codegen.h"
#include "testutil.h"
#include "reduceutil.h"
#include "verify/absexpr.h"

/* Whether the fingerprints alone of two texts agree. */
static int fp_equal_text(mirs_context *ctx, const char *p, const char *c) {
  mirs_graph *a = parse(ctx, p), *b = parse(ctx, c);
  mirs_verify_result r;
  memset(&r, 0, sizeof r);
  ck_assert_msg(mirs_verify(ctx, a, b, &r) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_graph_destroy(b);
  mirs_graph_destroy(a);
  return r.fingerprint_equal;
}

/* verify() of two texts. */
static int verify_text(mirs_context *ctx, const char *p, const char *c) {
  mirs_graph *a = parse(ctx, p), *b = parse(ctx, c);
  int eq = verify(ctx, a, b);
  mirs_graph_destroy(b);
  mirs_graph_destroy(a);
  return eq;
}

static const char ROWMIN[] = "tests/codegen/accum_min.graph";
static const char ROWMIN_U[] = "tests/codegen/accum_min.ugraph";

START_TEST(test_parse_print_roundtrip) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *files[] = {ROWMIN, ROWMIN_U, "tests/codegen/min_tree.ugraph"};
  static const char *const want[] = {"min(X, dim=1)", "accum_min(m, dim=1)", "min(y, dim=0)"};
  for (int i = 0; i < 3; i++) {
    mirs_graph *g = load(ctx, files[i]);
    char *text = NULL;
    ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
    ck_assert_msg(strstr(text, want[i]) != NULL, "%s: no %s in\n%s", files[i], want[i], text);
    mirs_graph *h = parse(ctx, text);
    ck_assert_uint_eq(mirs_graph_hash(g), mirs_graph_hash(h));
    mirs_free(ctx, text);
    mirs_graph_destroy(h);
    mirs_graph_destroy(g);
  }
  /* The operators by name, where each may appear, and a hash apart from max's. */
  mirs_op op;
  ck_assert_int_eq(mirs_op_lookup("min", &op), MIRS_OK);
  ck_assert_int_eq(op, MIRS_OP_MIN);
  ck_assert_int_eq(mirs_op_lookup("accum_min", &op), MIRS_OK);
  ck_assert_int_eq(op, MIRS_OP_ACCUM_MIN);
  ck_assert(!(mirs__graph_ops[MIRS_OP_ACCUM_MIN].levels & MIRS_LEVEL_K));
  ck_assert(mirs__graph_ops[MIRS_OP_MIN].levels & MIRS_LEVEL_B);
  mirs_graph *a = parse(ctx, "input X : f16[4, 8]\nM = min(X, dim=1)\noutput M\n");
  mirs_graph *b = parse(ctx, "input X : f16[4, 8]\nM = max(X, dim=1)\noutput M\n");
  ck_assert_uint_ne(mirs_graph_hash(a), mirs_graph_hash(b));
  mirs_graph_destroy(b);
  mirs_graph_destroy(a);
  /* A block-only accumulator is refused at kernel level. */
  mirs_graph *bad = NULL;
  static const char K[] = "input X : f16[4, 8]\nM = accum_min(X, dim=1)\noutput M\n";
  ck_assert_int_ne(mirs_graph_parse_string(ctx, K, strlen(K), "t", &bad), MIRS_OK);
  ck_assert_ptr_null(bad);
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
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_MIN, 1, &x, &m), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_reduce(g, "M", MIRS_OP_MIN, x, 2, &m), MIRS_SHAPE);
  ck_assert_int_eq(mirs_graph_add_reduce(g, "M", MIRS_OP_MIN, x, 0, &m), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, m), MIRS_OK);
  int64_t out[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_tensor_shape(g, m, out), 2);
  ck_assert(out[0] == 1 && out[1] == 5);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_interp_min) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, "input X : f32[3, 5, 4]\nM = min(X, dim=1)\noutput M\n");
  mirs_eval_result *r = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 11, &r), MIRS_OK);
  int64_t n = 0;
  const double *v = mirs_eval_output_values(r, 0, &n);
  ck_assert_int_eq(n, 12);
  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) {
      double best = INFINITY, worst = -INFINITY;
      for (int b = 0; b < 5; b++) {
        double x = mirs_input_value(11, "X", (uint64_t)(a * 20 + b * 4 + c));
        best = fmin(best, x);
        worst = fmax(worst, x);
      }
      ck_assert_double_eq(v[a * 4 + c], best);
      ck_assert(best < worst); /* (distinct inputs: min is not max here) */
    }
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  /* A NaN wins, as in torch.amin: min(sqrt(-1)) over a row. */
  g = parse(ctx, "input X : f32[2, 3]\nN = neg(X)\nS = mul(N, N)\nT = neg(S)\n"
                 "Q = sqrt(T)\nM = min(Q, dim=1)\noutput M\n");
  ck_assert_int_eq(mirs_graph_eval(g, 3, &r), MIRS_OK);
  v = mirs_eval_output_values(r, 0, &n);
  ck_assert_int_eq(n, 2);
  ck_assert(isnan(v[0]) && isnan(v[1]));
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_fingerprints) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char MIN1[] = "input X : f16[4, 8]\nO = min(X, dim=1)\noutput O\n";
  /* min is not max (in the fingerprint itself, not only in floats), not
   * a sum, not a min over the other dim. */
  ck_assert_int_eq(fp_equal_text(ctx, MIN1, "input X : f16[4, 8]\nO = max(X, dim=1)\noutput O\n"),
                   0);
  ck_assert_int_eq(verify_text(ctx, MIN1, "input X : f16[4, 8]\nO = sum(X, dim=1)\noutput O\n"),
                   0);
  ck_assert_int_eq(verify_text(ctx, "input X : f16[4, 8]\nO = min(X, dim=0)\noutput O\n",
                               "input X : f16[4, 8]\nT = min(X, dim=1)\nO = min(T, dim=0)\n"
                               "output O\n"),
                   0);
  /* A min of column mins is the min of the whole tensor (both orders). */
  ck_assert_int_eq(verify_text(ctx,
                               "input X : f16[4, 8]\nT = min(X, dim=1)\nO = min(T, dim=0)\n"
                               "output O\n",
                               "input X : f16[4, 8]\nT = min(X, dim=0)\nO = min(T, dim=1)\n"
                               "output O\n"),
                   1);
  /* The reversed order: min(a, b) + max(a, b) = a + b over a pair. */
  ck_assert_int_eq(verify_text(ctx,
                               "input X : f16[4, 2]\nS = sum(X, dim=1)\noutput S\n",
                               "input X : f16[4, 2]\nA = min(X, dim=1)\nB = max(X, dim=1)\n"
                               "S = add(A, B)\noutput S\n"),
                   1);
  /* ... which three elements break. */
  ck_assert_int_eq(verify_text(ctx,
                               "input X : f16[4, 3]\nS = sum(X, dim=1)\noutput S\n",
                               "input X : f16[4, 3]\nA = min(X, dim=1)\nB = max(X, dim=1)\n"
                               "S = add(A, B)\noutput S\n"),
                   0);
  /* A masked min has no sound fingerprint (min(-inf, x) is -inf). */
  mirs_graph *p = parse(ctx, "input X : f16[4, 4]\nC = causal_mask(X)\nO = min(C, dim=1)\n"
                             "output O\n");
  mirs_verify_result r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(mirs_verify(ctx, p, p, &r), MIRS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "min"));
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_abs) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, "input X : f32[3, 5]\nA = abs(X)\noutput A\n");
  char *text = NULL;
  ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(text, "A = abs(X)"));
  mirs_free(ctx, text);
  mirs_eval_result *r = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 2, &r), MIRS_OK);
  int64_t n = 0;
  const double *v = mirs_eval_output_values(r, 0, &n);
  ck_assert_int_eq(n, 15);
  int neg = 0;
  for (int i = 0; i < 15; i++) {
    double x = mirs_input_value(2, "X", (uint64_t)i);
    ck_assert_double_eq(v[i], fabs(x));
    neg += x < 0;
  }
  ck_assert_int_gt(neg, 0); /* (the test sees a negative input) */
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  static const char A[] = "input X : f16[4, 8]\nA = abs(X)\noutput A\n";
  /* Even: abs(-x) = abs(x), abs(a - b) = abs(b - a), in the fingerprint. */
  ck_assert_int_eq(verify_text(ctx, A, "input X : f16[4, 8]\nN = neg(X)\nA = abs(N)\noutput A\n"),
                   1);
  ck_assert_int_eq(verify_text(ctx,
                               "input X : f16[4, 8]\ninput Y : f16[4, 8]\nD = sub(X, Y)\n"
                               "A = abs(D)\noutput A\n",
                               "input X : f16[4, 8]\ninput Y : f16[4, 8]\nD = sub(Y, X)\n"
                               "A = abs(D)\noutput A\n"),
                   1);
  /* Not the identity, neg, relu, or abs of another value. */
  static const char *const other[] = {
      "input X : f16[4, 8]\nA = mul(X, 1)\noutput A\n",
      "input X : f16[4, 8]\nA = neg(X)\noutput A\n",
      "input X : f16[4, 8]\nA = relu(X)\noutput A\n",
      "input X : f16[4, 8]\nS = mul(X, 2)\nA = abs(S)\noutput A\n"};
  for (int i = 0; i < 4; i++)
    ck_assert_msg(fp_equal_text(ctx, A, other[i]) == 0, "abs(X) fingerprints like case %d", i);
  /* A masked abs is refused (abs(-inf) = +inf has no field value). */
  mirs_graph *p = parse(ctx, "input X : f16[4, 4]\nC = causal_mask(X)\nA = abs(C)\n"
                             "output A\n");
  mirs_verify_result vr;
  memset(&vr, 0, sizeof vr);
  ck_assert_int_eq(mirs_verify(ctx, p, p, &vr), MIRS_UNSUPPORTED);
  mirs_graph_destroy(p);
  /* Per-row scales amax(abs(x)) / 127 and min(abs(x)) in one kernel. */
  p = load(ctx, "tests/codegen/absmax.graph");
  mirs_graph *c = load(ctx, "tests/codegen/absmax.ugraph");
  ck_assert_int_eq(verify(ctx, p, c), 1);
  mirs_graph *wrong = parse(ctx, "ugraph w\ninput X : f16[4, 256]\n"
                                 "S, N = custom(grid=[4, 1, 1], block=[64, 1, 1], forloop=4) {\n"
                                 "  x = input(X, imap=[0, -1, -1], fmap=1)\n"
                                 "  m = accum_max(x, dim=1)\n  a = abs(x)\n"
                                 "  n = accum_min(a, dim=1)\n  s = div(m, 127)\n"
                                 "  output(s, omap=[0, -1, -1])\n  output(n, omap=[0, -1, -1])\n"
                                 "}\noutput S, N\n");
  ck_assert_int_eq(verify(ctx, p, wrong), 0); /* (max(x), not max(abs(x))) */
  mirs_graph_destroy(wrong);
  mirs_graph_destroy(c);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_accum_min_equals_min) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = load(ctx, ROWMIN), *c = load(ctx, ROWMIN_U);
  mirs_eval_result *ra = NULL, *rb = NULL;
  ck_assert_int_eq(mirs_graph_eval(p, 9, &ra), MIRS_OK);
  ck_assert_int_eq(mirs_graph_eval(c, 9, &rb), MIRS_OK);
  ck_assert(mirs__eval_max_rel_error(ra, rb) == 0.0);
  mirs_eval_result_destroy(ra);
  mirs_eval_result_destroy(rb);
  ck_assert_int_eq(verify(ctx, p, c), 1);
  mirs_graph_destroy(c);
  /* A running max is not a running min. */
  c = parse(ctx, "ugraph h\ninput X : f16[4, 256]\n"
                 "M = custom(grid=[4, 1, 1], block=[64, 1, 1], forloop=4) {\n"
                 "  x = input(X, imap=[0, -1, -1], fmap=1)\n"
                 "  a = accum_max(x, dim=1)\n  output(a, omap=[0, -1, -1])\n}\n"
                 "N = min(X, dim=1)\noutput M, N\n");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  /* A running min over one iteration's tile only (accum, not accum_min). */
  c = parse(ctx, "ugraph h\ninput X : f16[4, 256]\n"
                 "M = custom(grid=[4, 1, 1], block=[64, 1, 1], forloop=4) {\n"
                 "  x = input(X, imap=[0, -1, -1], fmap=1)\n  m = min(x, dim=1)\n"
                 "  a = accum(m)\n  output(a, omap=[0, -1, -1])\n}\n"
                 "N = min(X, dim=1)\noutput M, N\n");
  ck_assert_int_eq(verify(ctx, p, c), 0);
  mirs_graph_destroy(c);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_abstract_expressions) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__abs_arena a;
  ck_assert_int_eq(mirs__abs_arena_init(&a, ctx), MIRS_OK);
  mirs__abs_id x, mn, mx, mm, mxn;
  ck_assert_int_eq(mirs__abs_atom(&a, "X", &x), MIRS_OK);
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_MIN, &x, 8, &mn), MIRS_OK);
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_MAX, &x, 8, &mx), MIRS_OK);
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_ACCUM_MIN, &mn, 4, &mm), MIRS_OK);
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_MAX, &mn, 4, &mxn), MIRS_OK);
  ck_assert_int_ne(mn, mx);  /* min is its own symbol */
  ck_assert_int_eq(mm, mn);  /* a min of mins is the min */
  ck_assert_int_ne(mxn, mn); /* a max of mins is not */
  ck_assert(!mirs__abs_is_max(&a, mn));
  mirs__abs_arena_free(&a);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_codegen_host_runs) {
  /* The generated kernels against the interpreter: accum_min (running min
   * in registers), block min as a shuffle tree and over dim 0, and the
   * predefined kernel min of a program. */
  static const char TREE_P[] = "program t\ninput X : f16[8, 128]\ninput Y : f16[16, 32]\n"
                               "O = min(X, dim=1)\nP = min(Y, dim=0)\noutput O, P\n";
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *tp = parse(ctx, TREE_P);
  mirs_graph *g[5] = {load(ctx, ROWMIN_U), load(ctx, "tests/codegen/min_tree.ugraph"),
                      load(ctx, ROWMIN), load(ctx, "tests/codegen/absmax.ugraph"),
                      load(ctx, "tests/codegen/absmax.graph")};
  mirs_graph *ref[5] = {load(ctx, ROWMIN), tp, load(ctx, ROWMIN),
                        load(ctx, "tests/codegen/absmax.graph"),
                        load(ctx, "tests/codegen/absmax.graph")};
  ck_assert_int_eq(verify(ctx, tp, g[1]), 1);
  for (int i = 0; i < 5; i++) {
    double err = host_err(ctx, g[i], ref[i], 4 + (uint64_t)i), tol = mirs_codegen_tolerance(g[i]);
    ck_assert_msg(err <= tol, "case %d: relative error %g > %g", i, err, tol);
  }
  /* The generated source takes fminf and starts at +inf. */
  char *src = NULL;
  ck_assert_msg(mirs_codegen_cuda(g[0], "rowmin", &src) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_ptr_nonnull(strstr(src, "fminf("));
  ck_assert_ptr_nonnull(strstr(src, "= INFINITY"));
  ck_assert_ptr_null(strstr(src, "fmaxf("));
  mirs_free(ctx, src);
  ck_assert_msg(mirs_codegen_cuda(g[3], "absmax", &src) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_ptr_nonnull(strstr(src, "fabsf("));
  mirs_free(ctx, src);
  for (int i = 0; i < 5; i++) {
    mirs_graph_destroy(g[i]);
    if (i != 1)
      mirs_graph_destroy(ref[i]);
  }
  mirs_graph_destroy(tp);
  mirs_context_destroy(ctx);
}
END_TEST

static const char ROWMIN_T[] = "program rowmin\ninput X : f16[4, 64]\nY = exp(X)\n"
                               "M = min(Y, dim=1)\noutput M\n";
static const char *const KV[] = {"threads", "1", "op_budget", "0", "grid_x", "1,4",
                                 "grid_y", "1", "grid_z", "1", "forloop_ranges", "1,2",
                                 "max_block_ops", "6", "kernel_ops", "exp",
                                 "max_kernel_ops", "2", NULL};

START_TEST(test_search_finds_accum_min) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_search *s = search(ctx, ROWMIN_T, KV);
  mirs_graph *p = parse(ctx, ROWMIN_T);
  int found = 0;
  for (int i = 0; i < mirs_search_num_results(s); i++) {
    const mirs_graph *r = mirs_search_result(s, i);
    char *text = NULL;
    ck_assert_int_eq(mirs_graph_to_string(r, &text), MIRS_OK);
    ck_assert_ptr_null(strstr(text, "max(")); /* (max is not offered: no max in the program) */
    if (strstr(text, "accum_min(") && strstr(text, "forloop=2")) {
      if (found++ == 0) /* one of them, independently */
        ck_assert_int_eq(verify(ctx, p, r), 1);
    }
    mirs_free(ctx, text);
  }
  ck_assert_int_gt(found, 0);
  mirs_graph_destroy(p);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

/* The sorted result hashes of a search of text under KV plus prune=value. */
static int result_set(const char *text, const char *value, uint64_t *out, int cap) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *const one[] = {"prune", value, NULL};
  set_opts(ctx, one);
  mirs_search *s = search(ctx, text, KV);
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
  /* A row min of exp, and the quantization scale amax(abs(x)). */
  static const char *const programs[] = {
      ROWMIN_T, "program absmax\ninput X : f16[4, 64]\nA = abs(X)\nM = max(A, dim=1)\n"
                "output M\n"};
  static uint64_t h1[512], h0[512];
  for (int i = 0; i < 2; i++) {
    int n1 = result_set(programs[i], "true", h1, 512);
    int n0 = result_set(programs[i], "false", h0, 512);
    ck_assert_int_gt(n1, 0);
    ck_assert_msg(n1 == n0, "program %d: %d results with pruning, %d without", i, n1, n0);
    ck_assert_mem_eq(h1, h0, sizeof(uint64_t) * (size_t)n1);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("min");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_parse_print_roundtrip);
  tcase_add_test(tc, test_api_reduce);
  tcase_add_test(tc, test_interp_min);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_test(tc, test_abs);
  tcase_add_test(tc, test_accum_min_equals_min);
  tcase_add_test(tc, test_abstract_expressions);
  tcase_add_test(tc, test_codegen_host_runs);
  tcase_add_test(tc, test_search_finds_accum_min);
  tcase_add_test(tc, test_prune_same_results);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(suite());
}
