/* SPDX-License-Identifier: MIT */
/* tests/check_elem.c - the elementwise operators with constants and
 * transpose (neg, sigmoid, tanh, pow, clamp, number literals, transpose):
 * parse errors with positions, the printed form's round trip and hash,
 * the float64 interpreter, fingerprints (exact constant algebra, keyed
 * PRFs), the codegen's host run, and pruning on/off result sets. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch/codegen.h"
#include "testutil.h"
#include "verify/fingerprint.h"

/* Parse text; the status, the graph in *g (NULL on failure). */
static mirs_status parse(mirs_context *ctx, const char *text, mirs_graph **g) {
  *g = NULL;
  return mirs__graph_parse(ctx, text, strlen(text), "t.graph", g);
}

START_TEST(test_parse_errors) {
  static const struct {
    const char *line, *where;
  } bad[] = {
      {"A = add(1, 2)", "t.graph:2:12: error: 'add' of two numbers"},
      {"A = exp(X, 2)", "t.graph:2:12: error: 'exp' takes tensor arguments"},
      {"A = pow(X)", "t.graph:2:10: error: 'pow' takes 2 arguments"},
      {"A = clamp(X, 2, 1)", "t.graph:2:17: error: clamp: the lower bound"},
      {"A = div(X, 0)", "t.graph:2:12: error: division by the constant 0"},
      {"A = add_scalar(X, 1)", "t.graph:2:5: error: 'add_scalar' is internal"},
      {"A = mul(X, 1e999)", "t.graph:2:12: error: the number 1e999 is out of range"},
      {"A = pow(2, X)", "t.graph:2:9: error: 'pow' is pow(x, exponent): argument 1"},
      {"A = transpose(V)", "t.graph:2:5: error: transpose: needs rank >= 2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mirs_context *ctx = tu_ctx(NULL);
    char text[256];
    snprintf(text, sizeof text, "input X : f32[4, 4]\n%s\ninput V : f32[4]\noutput X\n",
             bad[i].line);
    if (strstr(bad[i].line, "(V)"))
      snprintf(text, sizeof text, "input V : f32[4]\n%s\noutput A\n", bad[i].line);
    mirs_graph *g;
    ck_assert_int_ne(parse(ctx, text, &g), MIRS_OK);
    ck_assert_msg(strstr(mirs_last_error(ctx), bad[i].where), "%s: got %s", bad[i].line,
                  mirs_last_error(ctx));
    mirs_context_destroy(ctx);
  }
}
END_TEST

static const char prog[] = "program t\n"
                           "input Q : f32[2, 4, 8]\n"
                           "input K : f32[2, 6, 8]\n"
                           "KT = transpose(K)\n"
                           "S = matmul(Q, KT)\n"
                           "A = mul(S, 0.125)\n"
                           "B = add(A, 1e-5)\n"
                           "C = sub(1, B)\n"
                           "D = div(C, 3)\n"
                           "E = div(2.5, D)\n"
                           "F = pow(B, 3)\n"
                           "G = clamp(E, -1, 1.5)\n"
                           "H = neg(G)\n"
                           "I = sigmoid(H)\n"
                           "J = tanh(F)\n"
                           "L = sub(J, 0.25)\n"
                           "M = add(L, I)\n"
                           "R = mul(M, M)\n"
                           "N = pow(R, 0.5)\n"
                           "output N\n";

START_TEST(test_round_trip_and_hash) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g, *h, *k;
  ck_assert_int_eq(parse(ctx, prog, &g), MIRS_OK);
  mirs__buf b1 = {ctx, NULL, 0, 0, false}, b2 = {ctx, NULL, 0, 0, false};
  mirs__graph_print(g, &b1);
  ck_assert_ptr_nonnull(strstr(b1.data, "A = mul(S, 0.125)"));
  ck_assert_ptr_nonnull(strstr(b1.data, "B = add(A, 0.00001)"));
  ck_assert_ptr_nonnull(strstr(b1.data, "C = sub(1, B)"));
  ck_assert_ptr_nonnull(strstr(b1.data, "L = add(J, -0.25)"));
  ck_assert_int_eq(parse(ctx, b1.data, &h), MIRS_OK);
  mirs__graph_print(h, &b2);
  ck_assert_str_eq(b1.data, b2.data);
  ck_assert_uint_eq(mirs__graph_hash(g), mirs__graph_hash(h));
  /* Another constant is another graph. */
  char other[sizeof prog];
  memcpy(other, prog, sizeof prog);
  memcpy(strstr(other, "0.125"), "0.126", 5);
  ck_assert_int_eq(parse(ctx, other, &k), MIRS_OK);
  ck_assert_uint_ne(mirs__graph_hash(g), mirs__graph_hash(k));
  /* The public view has the constants. */
  mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, 2, &kv), MIRS_OK);
  ck_assert_int_eq(kv.op, MIRS_OP_MUL_SCALAR);
  ck_assert_int_eq(kv.num_constants, 1);
  ck_assert_double_eq(kv.constants[0], 0.125);
  ck_assert_int_eq(mirs_graph_kernel(g, 8, &kv), MIRS_OK);
  ck_assert_int_eq(kv.op, MIRS_OP_CLAMP);
  ck_assert_int_eq(kv.num_constants, 2);
  ck_assert_double_eq(kv.constants[1], 1.5);
  mirs__core_free(ctx, b1.data);
  mirs__core_free(ctx, b2.data);
  mirs_graph_destroy(g);
  mirs_graph_destroy(h);
  mirs_graph_destroy(k);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_interp) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(parse(ctx, prog, &g), MIRS_OK);
  double **v;
  ck_assert_int_eq(mirs__interp_run(g, 7, &v), MIRS_OK);
  int32_t q = mirs__graph_find(g, "Q"), kk = mirs__graph_find(g, "K");
  /* Element (0, 1, 2) of every tensor, by hand. */
  double s = 0;
  for (int p = 0; p < 8; p++)
    s += v[q][1 * 8 + p] * v[kk][2 * 8 + p];
  double a = s * 0.125, b = a + 1e-5, c = 1 - b, d = c / 3, e = 2.5 / d, f = b * b * b;
  double gg = fmin(fmax(e, -1), 1.5), h = -gg, i = 1 / (1 + exp(-h)), j = tanh(f);
  double n = fabs(j - 0.25 + i);
  int32_t nt = mirs__graph_find(g, "N");
  ck_assert_double_eq_tol(v[nt][1 * 6 + 2], n, 1e-12);
  ck_assert_double_eq(v[mirs__graph_find(g, "KT")][2 * 6 + 1], v[kk][1 * 8 + 2]);
  mirs__interp_free(g, v);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Fingerprint verdict of a and b (programs over the same inputs). */
static bool fp_equal(const char *a, const char *b) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *ga, *gb;
  ck_assert_int_eq(parse(ctx, a, &ga), MIRS_OK);
  ck_assert_int_eq(parse(ctx, b, &gb), MIRS_OK);
  int trials;
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__verify_fingerprints(ctx, ga, gb, &trials, &v), MIRS_OK);
  mirs_graph_destroy(ga);
  mirs_graph_destroy(gb);
  mirs_context_destroy(ctx);
  return v.equal;
}

#define HEAD "input Q : f16[2, 4, 8]\ninput K : f16[2, 6, 8]\n"
START_TEST(test_fingerprints) {
  const char *ref = HEAD "KT = transpose(K)\nS = matmul(Q, KT)\nT = mul(S, 0.25)\n"
                         "E = exp(T)\noutput E\n";
  /* The scale moved onto Q, and 0.25 written as a division: exact. */
  ck_assert(fp_equal(ref, HEAD "QS = div(Q, 4)\nKT = transpose(K)\nS = matmul(QS, KT)\n"
                               "E = exp(S)\noutput E\n"));
  /* Another scale, a missing transpose's twin (K^T^T^T), neg twice. */
  ck_assert(!fp_equal(ref, HEAD "QS = mul(Q, 0.5)\nKT = transpose(K)\nS = matmul(QS, KT)\n"
                                "E = exp(S)\noutput E\n"));
  ck_assert(fp_equal(ref, HEAD "A = transpose(K)\nB = transpose(A)\nKT = transpose(B)\n"
                              "N = neg(Q)\nM = neg(N)\nS = matmul(M, KT)\nT = mul(S, 0.25)\n"
                              "E = exp(T)\noutput E\n"));
  /* pow by a natural is exact (x^2 = x*x); clamp is keyed by its bounds. */
  ck_assert(fp_equal(HEAD "P = pow(Q, 2)\noutput P\n", HEAD "P = mul(Q, Q)\noutput P\n"));
  ck_assert(!fp_equal(HEAD "P = clamp(Q, -1, 1)\noutput P\n",
                      HEAD "P = clamp(Q, -1, 2)\noutput P\n"));
  ck_assert(fp_equal(HEAD "P = sub(1, Q)\nR = div(1, P)\noutput R\n",
                     HEAD "N = neg(Q)\nP = add(N, 1)\nR = div(1, P)\noutput R\n"));
  ck_assert(!fp_equal(HEAD "P = sigmoid(Q)\noutput P\n", HEAD "P = tanh(Q)\noutput P\n"));
  /* Scaling commutes with a causal mask (-inf / 4 = -inf): exact too. */
  const char *masked = HEAD "KT = transpose(K)\nS = matmul(Q, KT)\nT = mul(S, 0.25)\n"
                            "M = causal_mask(T)\nE = exp(M)\noutput E\n";
  ck_assert(fp_equal(masked, HEAD "KT = transpose(K)\nS = matmul(Q, KT)\nM = causal_mask(S)\n"
                                  "T = div(M, 4)\nE = exp(T)\noutput E\n"));
  ck_assert(!fp_equal(masked, HEAD "KT = transpose(K)\nS = matmul(Q, KT)\nM = causal_mask(S)\n"
                                   "T = div(M, 2)\nE = exp(T)\noutput E\n"));
}
END_TEST

/* A small search space (as tests/check_search.c's), then opts. */
static void small_space(mirs_context *ctx, const char *const *opts) {
  static const char *const space[] = {"grid_x", "1,2", "grid_y", "1", "grid_z", "1",
                                      "forloop_ranges", "1,2", "max_block_ops", "8",
                                      "kernel_ops", "matmul,exp,add", "max_kernel_ops", "3",
                                      "op_budget", "0", "threads", "1", NULL};
  for (const char *const *o = space; *o; o += 2)
    ck_assert_int_eq(mirs_option_set(ctx, o[0], o[1]), MIRS_OK);
  for (const char *const *o = opts; o && *o; o += 2)
    ck_assert_int_eq(mirs_option_set(ctx, o[0], o[1]), MIRS_OK);
}

/* Result hashes of a search of text (pruning on or off) in the small space. */
static int search_hashes(const char *text, bool prune, const char *kops, uint64_t *h, int max) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *const opts[] = {"prune", prune ? "1" : "0", "max_kernel_ops", kops, NULL};
  small_space(ctx, opts);
  mirs_graph *g;
  ck_assert_int_eq(parse(ctx, text, &g), MIRS_OK);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  int n = mirs_search_num_results(s);
  for (int i = 0; i < n && i < max; i++)
    h[i] = mirs_graph_hash(mirs_search_result(s, i));
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return n;
}

/* Programs with every new operator, and the most kernel ops searched. */
static const char *const PRUNE_PROGRAMS[][2] = {
    {"input X : f16[2, 16]\ninput W : f16[8, 16]\nWT = transpose(W)\nS = matmul(X, WT)\n"
     "T = mul(S, 0.5)\nU = add(T, 1)\nO = neg(U)\noutput O\n",
     "3"},
    {"input X : f16[2, 16]\ninput W : f16[16, 8]\nH = matmul(X, W)\nG = tanh(H)\n"
     "S = sigmoid(G)\nP = pow(S, 2)\nO = clamp(P, 0, 0.5)\noutput O\n",
     "2"},
    {"input X : f16[2, 16]\ninput W : f16[16, 8]\nH = matmul(X, W)\nA = add(H, 4)\n"
     "P = pow(A, 1.5)\nR = div(1, P)\nO = sub(2, R)\nD = div(O, 3)\noutput D\n",
     "2"},
};

START_TEST(test_search_prune_equal) {
  const char *text = PRUNE_PROGRAMS[_i][0], *kops = PRUNE_PROGRAMS[_i][1];
  uint64_t on[256], off[256];
  int non = search_hashes(text, true, kops, on, 256);
  int noff = search_hashes(text, false, kops, off, 256);
  ck_assert_msg(non > 0, "no result (pruned search; %d without pruning)", noff);
  ck_assert_int_eq(non, noff);
  for (int i = 0; i < non && i < 256; i++) {
    bool found = false;
    for (int j = 0; j < noff && j < 256; j++)
      found = found || on[i] == off[j];
    ck_assert_msg(found, "result %d of the pruned search is missing without pruning", i);
  }
}
END_TEST

/* Attention written as models write it (K [b, n, d] transposed, a
 * 1/sqrt(d) scale) still fuses into one kernel: the transpose is done on
 * K's loaded tile; the best µGraph runs on the host within tolerance. */
START_TEST(test_attention_one_kernel) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *const opts[] = {"kernel_ops", "none", "max_kernel_ops", "1", "max_block_ops", "12",
                              NULL};
  small_space(ctx, opts);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/attention_scaled_small.graph"), &g),
                   MIRS_OK);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  ck_assert_int_gt(mirs_search_num_results(s), 0);
  ck_assert_int_eq(mirs_search_result_kernels(s, 0), 1);
  const mirs_graph *best = mirs_search_result(s, 0);
  bool transposed_tile = false;
  for (int32_t i = 0; i < best->ops[0].bg->nops; i++)
    transposed_tile = transposed_tile || best->ops[0].bg->ops[i].op == MIRS_OP_TRANSPOSE;
  ck_assert(transposed_tile);
  tu_assert_codegen_run(ctx, best, 3, mirs_codegen_tolerance(best));
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The generated code of the program itself (every new op as a predefined
 * kernel, constants as float literals) on the host. */
START_TEST(test_codegen_host) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(parse(ctx, prog, &g), MIRS_OK);
  tu_assert_codegen_run(ctx, g, 5, 1e-4); /* f32 storage */
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The library API builds the same graph as the text. */
START_TEST(test_api) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g, *t;
  ck_assert_int_eq(mirs_graph_create(ctx, "p", &g), MIRS_OK);
  int64_t dims[2] = {4, 8};
  mirs_tensor x, a, b, c;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F32, 2, dims, &x), MIRS_OK);
  const char *s[] = {"0.125"}, *lh[] = {"-1", "1.5"}, *bad[] = {"1.2.3"};
  ck_assert_int_eq(mirs_graph_add_const_op(g, "A", MIRS_OP_MUL_SCALAR, x, 1, s, &a), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_const_op(g, "B", MIRS_OP_CLAMP, a, 2, lh, &b), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_op(g, "C", MIRS_OP_TRANSPOSE, 1, &b, &c), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, c), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_const_op(g, NULL, MIRS_OP_POW, x, 1, bad, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_const_op(g, NULL, MIRS_OP_EXP, x, 1, s, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_POW, 1, &x, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(parse(ctx,
                         "program p\ninput X : f32[4, 8]\nA = mul(X, 0.125)\n"
                         "B = clamp(A, -1, 1.5)\nC = transpose(B)\noutput C\n",
                         &t),
                   MIRS_OK);
  ck_assert_uint_eq(mirs_graph_hash(g), mirs_graph_hash(t));
  mirs_graph_destroy(g);
  mirs_graph_destroy(t);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *elem_suite(void) {
  Suite *s = suite_create("elem");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_parse_errors);
  tcase_add_test(tc, test_round_trip_and_hash);
  tcase_add_test(tc, test_interp);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_loop_test(tc, test_search_prune_equal, 0,
                      (int)(sizeof PRUNE_PROGRAMS / sizeof PRUNE_PROGRAMS[0]));
  tcase_add_test(tc, test_attention_one_kernel);
  tcase_add_test(tc, test_codegen_host);
  tcase_add_test(tc, test_api);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(elem_suite());
}
