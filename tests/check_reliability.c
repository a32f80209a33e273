/* tests/check_reliability.c - adversarial inputs (issue 19): verdicts that
 * must refuse rather than pass (degree sums past 2^64), work bounded from
 * any input, limits and stop requests honoured inside long operations. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "testutil.h"
#include "verify/fingerprint.h"

/* The field primes; X^e and X^e' agree at every point of both fields when
 * e = e' mod Q(Q-1) (P - 1 = 2Q divides Q(Q-1)), so such a pair differs as
 * polynomials but not as fingerprints. */
#define FP_P UINT64_C(2147483579)
#define FP_Q UINT64_C(1073741789)

/* t^e by squares and multiplies (e >= 1). */
static mirs_tensor power_of(mirs_graph *g, mirs_tensor t, uint64_t e) {
  mirs_tensor pw = t, acc = -1, r;
  for (int i = 0; e; i++, e >>= 1) {
    if (i > 0) {
      ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_SQUARE, 1, &pw, &r), MIRS_OK);
      pw = r;
    }
    if (e & 1) {
      if (acc < 0) {
        acc = pw;
      } else {
        mirs_tensor in[2] = {acc, pw};
        ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_MUL, 2, in, &r), MIRS_OK);
        acc = r;
      }
    }
  }
  return acc;
}

/* A program with input X : f32[64] and output O = X^e * X + X / (X - X),
 * where X^e = X^low * (X^base)^mult (base and mult 0: X^low alone).  The
 * division by zero makes every float64 output element non-finite, so the
 * float check cannot tell two such graphs apart: only the fingerprints and
 * their bound stand between them. */
static mirs_graph *power_graph(mirs_context *ctx, uint64_t low, uint64_t base, uint64_t mult) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, "pow", &g), MIRS_OK);
  int64_t dims[1] = {64};
  mirs_tensor x, m, z, q, o;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F32, 1, dims, &x), MIRS_OK);
  mirs_tensor acc = power_of(g, x, low);
  if (mult) {
    mirs_tensor in2[2] = {acc, power_of(g, power_of(g, x, base), mult)};
    ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_MUL, 2, in2, &acc), MIRS_OK);
  }
  mirs_tensor in[2] = {acc, x};
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_MUL, 2, in, &m), MIRS_OK);
  in[0] = x;
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_SUB, 2, in, &z), MIRS_OK);
  in[1] = z;
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_DIV, 2, in, &q), MIRS_OK);
  in[0] = m;
  in[1] = q;
  ck_assert_int_eq(mirs_graph_add_op(g, "O", MIRS_OP_ADD, 2, in, &o), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, o), MIRS_OK);
  return g;
}

/* X^(5 + 17 Q(Q-1)) (degree saturated at 2^64 - 1) against X^5: the sum of
 * the degrees used to wrap to 4, two trials ran, the fingerprints agreed
 * and the pair was reported equivalent with a bound of 2^0.  It must be
 * refused (no number of trials meets the bound), in both argument orders. */
START_TEST(test_degree_sum_saturates) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  /* 17 Q(Q-1) > 2^64: the degree saturates. */
  ck_assert(FP_Q * (FP_Q - 1) > UINT64_MAX / 17);
  mirs_graph *p = power_graph(ctx, 5, FP_Q * (FP_Q - 1), 17), *c = power_graph(ctx, 5, 0, 0);
  uint64_t dp = 0, dc = 0;
  ck_assert_int_eq(mirs__fp_graph_degree(p, &dp), MIRS_OK);
  ck_assert_int_eq(mirs__fp_graph_degree(c, &dc), MIRS_OK);
  ck_assert_uint_eq(dp, UINT64_MAX);
  ck_assert_uint_eq(dc, 6);
  /* The pair really is fingerprint-equal (what made the wrap unsound). */
  mirs__fp_store *a = NULL, *b = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 2, 1, &a), MIRS_OK);
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 2, 1, &b), MIRS_OK);
  ck_assert_int_eq(mirs__fp_compute_graph(a, p), MIRS_OK);
  ck_assert_int_eq(mirs__fp_compute_graph(b, c), MIRS_OK);
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__fp_compare_outputs(a, p, b, c, &v), MIRS_OK);
  ck_assert(v.equal);
  ck_assert(v.log2_bound == 0.0);
  mirs__fp_store_free(a);
  mirs__fp_store_free(b);

  mirs_verify_result r;
  ck_assert_int_eq(mirs_verify(ctx, p, c, &r), MIRS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "too high"));
  mirs_clear_error(ctx);
  ck_assert_int_eq(mirs_verify(ctx, c, p, &r), MIRS_UNSUPPORTED);
  mirs_clear_error(ctx);
  int trials;
  ck_assert_int_eq(mirs__verify_fingerprints(ctx, p, c, &trials, &v), MIRS_UNSUPPORTED);
  mirs_clear_error(ctx);
  ck_assert_uint_eq(mirs__fp_degree_add(UINT64_MAX, 5), UINT64_MAX);
  ck_assert_uint_eq(mirs__fp_degree_add(UINT64_C(1) << 63, UINT64_C(1) << 63), UINT64_MAX);
  ck_assert_uint_eq(mirs__fp_degree_mul(UINT64_MAX / 2, 3), UINT64_MAX);
  ck_assert_uint_eq(mirs__fp_degree_mul(7, 3), 21);
  mirs_graph_destroy(p);
  mirs_graph_destroy(c);
  mirs_context_destroy(ctx);
}
END_TEST

/* An infinity in the reference must not make every difference relative 0:
 * X/(X-X) (+inf or -inf by the sign of X) against X^2/(X-X) (+inf
 * everywhere) differ where X < 0; equal infinities compare equal. */
START_TEST(test_float_check_infinities) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  const char *a_txt = "input X : f32[64]\nZ = sub(X, X)\nO = div(X, Z)\noutput O\n";
  const char *b_txt = "input X : f32[64]\nZ = sub(X, X)\nS = square(X)\nO = div(S, Z)\noutput O\n";
  mirs_graph *a = NULL, *b = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, a_txt, strlen(a_txt), "a.graph", &a), MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_string(ctx, b_txt, strlen(b_txt), "b.graph", &b), MIRS_OK);
  mirs_verify_result r;
  ck_assert_int_eq(mirs_verify(ctx, a, a, &r), MIRS_OK);
  ck_assert_int_eq(r.equal, 1);
  ck_assert_int_eq(mirs_verify(ctx, a, b, &r), MIRS_OK);
  ck_assert_int_eq(r.equal, 0);
  mirs_graph_destroy(a);
  mirs_graph_destroy(b);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *reliability_suite(void) {
  Suite *s = suite_create("reliability");
  TCase *tc = tcase_create("verdicts");
  tcase_add_test(tc, test_degree_sum_saturates);
  tcase_add_test(tc, test_float_check_infinities);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(reliability_suite());
}
