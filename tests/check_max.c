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
#include "testutil.h"

/* Parse a file of the source tree. */
static mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

/* Parse text (a test's own program). */
static mirs_graph *parse(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), "t", &g) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  return g;
}

/* Verify candidate against program; returns the verdict's `equal`. */
static int verify(mirs_context *ctx, const mirs_graph *p, const mirs_graph *c) {
  mirs_verify_result r;
  memset(&r, 0, sizeof r);
  ck_assert_msg(mirs_verify(ctx, p, c, &r) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(r.equal, r.fingerprint_equal && (!r.float_checked ||
                                                     r.float_max_rel_error <= 1e-9));
  return r.equal;
}

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
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(suite());
}
