/* SPDX-License-Identifier: MIT */
/* tests/check_fingerprint.c - finite-field fingerprints (src/verify/fingerprint.c).
 *
 * Field constants (P, Q prime, Q | P-1, G of order Q); the documented
 * Philox mappings of inputs and PRFs; equal fingerprints for equivalent
 * programs (ring laws, matmul laws, division, exp homomorphism, sums, the
 * rms_norm / accum_rms fusion, the example µGraphs against their programs);
 * different fingerprints for near misses (operand order, reduced dim,
 * swapped outputs, exchanged inputs, silu vs gelu, wrong fused epilogue);
 * refusal of exp of an exp; the bound and the trial count; incremental
 * evaluation with pops equal to whole-graph evaluation; allocation
 * failures; and no leaks (mirs_memory_current back to 0). */
#include <math.h>
#include <stdint.h>

#include "graph/graph.h"
#include "testutil.h"
#include "verify/fingerprint.h"

#define TRIALS 2
#define SEED 7

/* Shape from a rank and up to three dims. */
static mirs__shape shp(int ndim, int64_t a, int64_t b, int64_t c) {
  mirs__shape s = {.ndim = ndim, .d = {a, b, c}};
  return s;
}

/* Add input `name` of shape s to g and return its id. */
static int32_t add_in(mirs_graph *g, const char *name, mirs__shape s) {
  int32_t t = -1;
  ck_assert_int_eq(mirs__graph_add_input(g, name, MIRS_F16, &s, &t), MIRS_OK);
  return t;
}

/* Add kernel op op(a[, b]) named name (NULL: fresh) and return its id. */
static int32_t add_op(mirs_graph *g, const char *name, mirs_op op, int32_t a, int32_t b, int dim) {
  int32_t in[2] = {a, b}, t = -1;
  mirs_status s = mirs__graph_add_op(g, name, op, mirs__graph_ops[op].arity, in, dim, &t);
  ck_assert_msg(s == MIRS_OK, "add_op %s: %s", mirs_op_name(op), mirs_last_error(g->ctx));
  return t;
}

/* Add op named "O" and mark it as the output. */
static void out_op(mirs_graph *g, mirs_op op, int32_t a, int32_t b, int dim) {
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O", op, a, b, dim)), MIRS_OK);
}

/* A new empty graph. */
static mirs_graph *new_graph(mirs_context *ctx) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs__graph_new(ctx, NULL, &g), MIRS_OK);
  return g;
}

/* A new store with the test's trials and seed. */
static mirs__fp_store *new_store(mirs_context *ctx) {
  mirs__fp_store *s = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, TRIALS, SEED, &s), MIRS_OK);
  return s;
}

/* Fingerprint g whole, asserting success. */
static void compute(mirs__fp_store *s, const mirs_graph *g) {
  mirs_status st = mirs__fp_compute_graph(s, g);
  ck_assert_msg(st == MIRS_OK, "fingerprint: %s", mirs_last_error(g->ctx));
}

/* Builds one side of a comparison into g. */
typedef void (*build_fn)(mirs_graph *g);

/* Fingerprint the graphs ra and cb built by ref/cand and return whether
 * their outputs agree; also checks the bound reported and that nothing
 * leaks.  why receives the verdict's reason. */
static bool same(build_fn ref, build_fn cand, char *why, size_t whysize) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *rg = new_graph(ctx), *cg = new_graph(ctx);
  ref(rg);
  cand(cg);
  mirs__fp_store *rs = new_store(ctx), *cs = new_store(ctx);
  compute(rs, rg);
  compute(cs, cg);
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__fp_compare_outputs(rs, rg, cs, cg, &v), MIRS_OK);
  ck_assert(v.log2_bound < -40.0);
  if (why)
    snprintf(why, whysize, "%s", v.why);
  if (v.equal) {
    ck_assert_int_eq(v.ref_output, -1);
    ck_assert_int_ge(v.degree, 2);
  } else
    ck_assert(v.why[0] != '\0');
  mirs__fp_store_free(rs);
  mirs__fp_store_free(cs);
  mirs__graph_free(rg);
  mirs__graph_free(cg);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
  return v.equal;
}

/* Trial-division primality (enough for 31-bit numbers). */
static bool is_prime(uint64_t n) {
  if (n < 2)
    return false;
  for (uint64_t d = 2; d * d <= n; d++)
    if (n % d == 0)
      return false;
  return true;
}

/* ---------------------------------------------------------------- field and randomness */

START_TEST(test_field_constants) {
  ck_assert(MIRS__FP_P < (UINT64_C(1) << 31));
  ck_assert(is_prime(MIRS__FP_P));
  ck_assert(is_prime(MIRS__FP_Q));
  ck_assert_uint_eq((MIRS__FP_P - 1) % MIRS__FP_Q, 0);
  ck_assert_uint_ne(MIRS__FP_G % MIRS__FP_P, 1);
  ck_assert_uint_eq(mirs__fp_pow_mod(MIRS__FP_G, MIRS__FP_Q, MIRS__FP_P), 1);
  /* Q is prime, so G's order divides Q and is not 1: it is Q. */
  uint32_t xs[] = {1, 2, 3, 12345, MIRS__FP_Q - 1, MIRS__FP_P - 1};
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
    uint32_t x = xs[i];
    uint32_t ip = mirs__fp_inv_mod(x, MIRS__FP_P);
    ck_assert_uint_eq((uint64_t)x * ip % MIRS__FP_P, 1);
    if (x < MIRS__FP_Q) {
      uint32_t iq = mirs__fp_inv_mod(x, MIRS__FP_Q);
      ck_assert_uint_eq((uint64_t)x * iq % MIRS__FP_Q, 1);
    }
  }
  ck_assert_uint_eq(mirs__fp_inv_mod(0, MIRS__FP_P), 0);
  ck_assert_uint_eq(mirs__fp_inv_mod(0, MIRS__FP_Q), 0);
}
END_TEST

START_TEST(test_philox_mapping) {
  uint64_t seed = 12345;
  uint64_t k0 = mirs__fp_trial_key(seed, 0), k1 = mirs__fp_trial_key(seed, 1);
  ck_assert_uint_eq(k0, seed ^ MIRS__FP_TRIAL_MUL);
  ck_assert_uint_eq(k1, seed ^ (2 * MIRS__FP_TRIAL_MUL));
  uint64_t sub = mirs__hash_str(0, "X");
  for (uint64_t e = 0; e < 9; e++) {
    mirs__fp_pair v = mirs__fp_input_value(k0, sub, e);
    uint64_t w[4];
    for (int i = 0; i < 4; i++)
      w[i] = mirs_philox_at(k0, sub, 4 * e + (uint64_t)i);
    ck_assert_uint_eq(v.a, ((w[1] << 32) | w[0]) % MIRS__FP_P);
    ck_assert_uint_eq(v.b, ((w[3] << 32) | w[2]) % MIRS__FP_Q);
    mirs__fp_pair again = mirs__fp_input_value(k0, sub, e);
    ck_assert(again.a == v.a && again.b == v.b);
    mirs__fp_pair other = mirs__fp_input_value(k1, sub, e);
    ck_assert(other.a != v.a || other.b != v.b);
    /* PRF: the same construction on its own subsequence. */
    mirs__fp_pair r = mirs__fp_prf(k0, MIRS_OP_SILU, v);
    uint64_t blk = ((uint64_t)v.b << 32) | v.a, psub = MIRS__FP_PRF_DOMAIN | MIRS_OP_SILU;
    for (int i = 0; i < 4; i++)
      w[i] = mirs_philox_at(k0, psub, 4 * blk + (uint64_t)i);
    ck_assert_uint_eq(r.a, ((w[1] << 32) | w[0]) % MIRS__FP_P);
    ck_assert_uint_eq(r.b, ((w[3] << 32) | w[2]) % MIRS__FP_Q);
    mirs__fp_pair rg = mirs__fp_prf(k0, MIRS_OP_GELU, v);
    ck_assert(rg.a != r.a || rg.b != r.b);
  }

  /* A store's inputs are exactly those values, trial-major. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = new_graph(ctx);
  int32_t x = add_in(g, "X", shp(2, 3, 5, 0));
  mirs__fp_store *s = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 3, seed, &s), MIRS_OK);
  compute(s, g);
  mirs__fp_pair buf[15];
  for (int j = 0; j < 3; j++) {
    ck_assert_int_eq(mirs__fp_read(s, x, j, 0, 15, buf), MIRS_OK);
    for (int e = 0; e < 15; e++) {
      mirs__fp_pair want = mirs__fp_input_value(mirs__fp_trial_key(seed, j), sub, (uint64_t)e);
      ck_assert(buf[e].a == want.a && buf[e].b == want.b);
      ck_assert(buf[e].a < MIRS__FP_P && buf[e].b < MIRS__FP_Q);
    }
  }
  /* exp maps the q-part to G^b mod P (and zeroes the q-part). */
  int32_t e = add_op(g, "E", MIRS_OP_EXP, x, -1, -1);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_OK);
  for (int j = 0; j < 3; j++) {
    mirs__fp_pair in[15];
    ck_assert_int_eq(mirs__fp_read(s, x, j, 0, 15, in), MIRS_OK);
    ck_assert_int_eq(mirs__fp_read(s, e, j, 0, 15, buf), MIRS_OK);
    for (int i = 0; i < 15; i++) {
      ck_assert_uint_eq(buf[i].a, mirs__fp_pow_mod(MIRS__FP_G, in[i].b, MIRS__FP_P));
      ck_assert_uint_eq(buf[i].b, 0);
    }
  }
  ck_assert_int_eq(mirs__fp_read(s, x, 3, 0, 1, buf), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__fp_read(s, x, 0, 10, 6, buf), MIRS_INVALID_ARG);
  ck_assert_uint_eq(s->stats.inputs, 1);
  ck_assert_uint_eq(s->stats.elements, 90);
  mirs__fp_store_free(s);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- equal pairs */

/* Square inputs X, Y, Z [4, 4]. */
static void xyz(mirs_graph *g, int32_t *x, int32_t *y, int32_t *z) {
  *x = add_in(g, "X", shp(2, 4, 4, 0));
  *y = add_in(g, "Y", shp(2, 4, 4, 0));
  *z = add_in(g, "Z", shp(2, 4, 4, 0));
}

/* Builder: O = X + Y. */
static void b_add_xy(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, x, y, -1);
}

/* Builder: O = Y + X. */
static void b_add_yx(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, y, x, -1);
}

/* Builder: O = X * Y. */
static void b_mul_xy(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, x, y, -1);
}

/* Builder: O = Y * X. */
static void b_mul_yx(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, y, x, -1);
}

/* Builder: O = (X + Y) + Z. */
static void b_add_assoc_l(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, add_op(g, NULL, MIRS_OP_ADD, x, y, -1), z, -1);
}

/* Builder: O = X + (Y + Z). */
static void b_add_assoc_r(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, x, add_op(g, NULL, MIRS_OP_ADD, y, z, -1), -1);
}

/* Builder: O = (X . Y) . Z. */
static void b_mm_assoc_l(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MATMUL, add_op(g, NULL, MIRS_OP_MATMUL, x, y, -1), z, -1);
}

/* Builder: O = X . (Y . Z). */
static void b_mm_assoc_r(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MATMUL, x, add_op(g, NULL, MIRS_OP_MATMUL, y, z, -1), -1);
}

/* Builder: O = X * (Y + Z). */
static void b_distrib_l(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, x, add_op(g, NULL, MIRS_OP_ADD, y, z, -1), -1);
}

/* Builder: O = X * Y + X * Z. */
static void b_distrib_r(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, add_op(g, NULL, MIRS_OP_MUL, x, y, -1),
         add_op(g, NULL, MIRS_OP_MUL, x, z, -1), -1);
}

/* Builder: O = X . (Y + Z). */
static void b_mm_distrib_l(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MATMUL, x, add_op(g, NULL, MIRS_OP_ADD, y, z, -1), -1);
}

/* Builder: O = X . Y + X . Z. */
static void b_mm_distrib_r(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, add_op(g, NULL, MIRS_OP_MATMUL, x, y, -1),
         add_op(g, NULL, MIRS_OP_MATMUL, x, z, -1), -1);
}

/* Builder: O = (X * Y) / Z. */
static void b_div_l(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_DIV, add_op(g, NULL, MIRS_OP_MUL, x, y, -1), z, -1);
}

/* Builder: O = X * (Y / Z). */
static void b_div_r(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, x, add_op(g, NULL, MIRS_OP_DIV, y, z, -1), -1);
}

/* Builder: O = exp(X + Y). */
static void b_exp_sum(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_EXP, add_op(g, NULL, MIRS_OP_ADD, x, y, -1), -1, -1);
}

/* Builder: O = exp(X) * exp(Y). */
static void b_exp_prod(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, add_op(g, NULL, MIRS_OP_EXP, x, -1, -1),
         add_op(g, NULL, MIRS_OP_EXP, y, -1, -1), -1);
}

/* Builder: O = square(X). */
static void b_square(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_SQUARE, x, -1, -1);
}

/* Builder: O = X * X. */
static void b_x_times_x(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MUL, x, x, -1);
}

/* A [4, 5], B [5, 6]. */
static void ab(mirs_graph *g, int32_t *a, int32_t *b) {
  *a = add_in(g, "A", shp(2, 4, 5, 0));
  *b = add_in(g, "B", shp(2, 5, 6, 0));
}

/* Builder: O = sum(A . B, dim=-1). */
static void b_sum_of_mm(mirs_graph *g) {
  int32_t a, b;
  ab(g, &a, &b);
  out_op(g, MIRS_OP_SUM, add_op(g, NULL, MIRS_OP_MATMUL, a, b, -1), -1, -1);
}

/* Builder: O = A . sum(B, dim=-1). */
static void b_mm_of_sum(mirs_graph *g) {
  int32_t a, b;
  ab(g, &a, &b);
  out_op(g, MIRS_OP_MATMUL, a, add_op(g, NULL, MIRS_OP_SUM, b, -1, -1), -1);
}

/* Builder: O = div(E, sum(E)) . B with E = exp(A). */
static void b_softmax_l(mirs_graph *g) {
  int32_t a, b;
  ab(g, &a, &b);
  int32_t e = add_op(g, NULL, MIRS_OP_EXP, a, -1, -1);
  int32_t s = add_op(g, NULL, MIRS_OP_SUM, e, -1, 1);
  out_op(g, MIRS_OP_MATMUL, add_op(g, NULL, MIRS_OP_DIV, e, s, -1), b, -1);
}

/* Builder: O = (E . B) / sum(E) with E = exp(A). */
static void b_softmax_r(mirs_graph *g) {
  int32_t a, b;
  ab(g, &a, &b);
  int32_t e = add_op(g, NULL, MIRS_OP_EXP, a, -1, -1);
  int32_t s = add_op(g, NULL, MIRS_OP_SUM, e, -1, 1);
  out_op(g, MIRS_OP_DIV, add_op(g, NULL, MIRS_OP_MATMUL, e, b, -1), s, -1);
}

START_TEST(test_equal_pairs) {
  static const struct {
    const char *what;
    build_fn a, b;
  } cases[] = {
      {"add commutes", b_add_xy, b_add_yx},
      {"mul commutes", b_mul_xy, b_mul_yx},
      {"add associates", b_add_assoc_l, b_add_assoc_r},
      {"matmul associates", b_mm_assoc_l, b_mm_assoc_r},
      {"mul distributes", b_distrib_l, b_distrib_r},
      {"matmul distributes", b_mm_distrib_l, b_mm_distrib_r},
      {"(x*y)/z = x*(y/z)", b_div_l, b_div_r},
      {"exp(x+y) = exp(x)*exp(y)", b_exp_sum, b_exp_prod},
      {"square(x) = x*x", b_square, b_x_times_x},
      {"sum(A.B) = A.sum(B)", b_sum_of_mm, b_mm_of_sum},
      {"softmax then matmul", b_softmax_l, b_softmax_r},
      {"self", b_mm_assoc_l, b_mm_assoc_l},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char why[256];
    ck_assert_msg(same(cases[i].a, cases[i].b, why, sizeof why), "%s: %s", cases[i].what, why);
  }
}
END_TEST

/* ---------------------------------------------------------------- near misses */

/* Builder: O = X . Y. */
static void b_mm_xy(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MATMUL, x, y, -1);
}

/* Builder: O = Y . X. */
static void b_mm_yx(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_MATMUL, y, x, -1);
}

/* Builder: O = sum(X, dim=0) + Y. */
static void b_sum0(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  /* sum over dim 0 is [1, 4], over dim 1 [4, 1]: adding the square Y
   * broadcasts both to [4, 4], so only the reduced dim differs. */
  out_op(g, MIRS_OP_ADD, add_op(g, NULL, MIRS_OP_SUM, x, -1, 0), y, -1);
}

/* Builder: O = sum(X, dim=1) + Y. */
static void b_sum1(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, add_op(g, NULL, MIRS_OP_SUM, x, -1, 1), y, -1);
}

/* Builder: O = X - Y. */
static void b_sub_xy(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_SUB, x, y, -1);
}

/* Builder: O = Y - X. */
static void b_sub_yx(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_SUB, y, x, -1);
}

/* Builder: O = silu(X . Y). */
static void b_silu(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_SILU, add_op(g, NULL, MIRS_OP_MATMUL, x, y, -1), -1, -1);
}

/* Builder: O = gelu(X . Y). */
static void b_gelu(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_GELU, add_op(g, NULL, MIRS_OP_MATMUL, x, y, -1), -1, -1);
}

/* Builder: Outputs O1 = X + Y and O2 = X * Y. */
static void b_two_outputs(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O1", MIRS_OP_ADD, x, y, -1)), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O2", MIRS_OP_MUL, x, y, -1)), MIRS_OK);
}

/* Builder: Outputs O2 = X + Y and O1 = X * Y (names swapped). */
static void b_two_swapped(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O2", MIRS_OP_ADD, x, y, -1)), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O1", MIRS_OP_MUL, x, y, -1)), MIRS_OK);
}

/* Builder: b_two_outputs with inputs and outputs declared in another order. */
static void b_two_outputs_reordered(mirs_graph *g) {
  int32_t z = add_in(g, "Z", shp(2, 4, 4, 0));
  int32_t y = add_in(g, "Y", shp(2, 4, 4, 0));
  int32_t x = add_in(g, "X", shp(2, 4, 4, 0));
  (void)z;
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O2", MIRS_OP_MUL, y, x, -1)), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "O1", MIRS_OP_ADD, y, x, -1)), MIRS_OK);
}

/* Builder: O = X + Z. */
static void b_add_xz(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  out_op(g, MIRS_OP_ADD, x, z, -1);
}

/* Builder: O = X + Y on [4, 2] inputs. */
static void b_shape_other(mirs_graph *g) {
  int32_t a = add_in(g, "X", shp(2, 4, 2, 0)), b = add_in(g, "Y", shp(2, 4, 2, 0));
  out_op(g, MIRS_OP_ADD, a, b, -1);
}

/* Builder: Output P = X + Y (no O). */
static void b_no_output(mirs_graph *g) {
  int32_t x, y, z;
  xyz(g, &x, &y, &z);
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, "P", MIRS_OP_ADD, x, y, -1)), MIRS_OK);
}

START_TEST(test_near_misses) {
  static const struct {
    const char *what;
    build_fn a, b;
  } cases[] = {
      {"matmul(X,Y) vs matmul(Y,X)", b_mm_xy, b_mm_yx},
      {"sum over the wrong dim", b_sum0, b_sum1},
      {"sub(X,Y) vs sub(Y,X)", b_sub_xy, b_sub_yx},
      {"silu vs gelu", b_silu, b_gelu},
      {"two outputs swapped", b_two_outputs, b_two_swapped},
      {"another input", b_add_xy, b_add_xz},
      {"mul vs add", b_add_xy, b_mul_xy},
      {"shape differs", b_add_xy, b_shape_other},
      {"output missing", b_add_xy, b_no_output},
      {"exp(x)*exp(y) vs x*y", b_exp_prod, b_mul_xy},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char why[256];
    ck_assert_msg(!same(cases[i].a, cases[i].b, why, sizeof why), "%s: accepted", cases[i].what);
    ck_assert_msg(!same(cases[i].b, cases[i].a, why, sizeof why), "%s (reversed): accepted",
                  cases[i].what);
  }
  char why[256];
  ck_assert(same(b_two_outputs, b_two_outputs_reordered, why, sizeof why));
  ck_assert(!same(b_add_xy, b_no_output, why, sizeof why));
  ck_assert_msg(strstr(why, "not an output") != NULL, "%s", why);
  ck_assert(!same(b_add_xy, b_shape_other, why, sizeof why));
  ck_assert_msg(strstr(why, "shape") != NULL, "%s", why);
  ck_assert(!same(b_mm_xy, b_mm_yx, why, sizeof why));
  ck_assert_msg(strstr(why, "output O") != NULL, "%s", why);
}
END_TEST

/* matmul(X, W) vs matmul(W, X) with X, W square and exchanged inputs of
 * the same shape (the collision Mirage's non-random inputs suffered). */
START_TEST(test_exchanged_inputs) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = new_graph(ctx);
  int32_t x = add_in(g, "X", shp(2, 3, 3, 0)), w = add_in(g, "W", shp(2, 3, 3, 0));
  int32_t xw = add_op(g, "XW", MIRS_OP_MATMUL, x, w, -1);
  int32_t wx = add_op(g, "WX", MIRS_OP_MATMUL, w, x, -1);
  int32_t s1 = add_op(g, "S1", MIRS_OP_SUB, x, w, -1);
  int32_t s2 = add_op(g, "S2", MIRS_OP_SUB, w, x, -1);
  mirs__fp_store *s = new_store(ctx);
  compute(s, g);
  bool eq = true;
  ck_assert_int_eq(mirs__fp_tensor_equal(s, g, xw, s, g, wx, &eq), MIRS_OK);
  ck_assert(!eq);
  ck_assert_int_eq(mirs__fp_tensor_equal(s, g, s1, s, g, s2, &eq), MIRS_OK);
  ck_assert(!eq);
  ck_assert_int_eq(mirs__fp_tensor_equal(s, g, x, s, g, w, &eq), MIRS_OK);
  ck_assert(!eq);
  ck_assert_int_eq(mirs__fp_tensor_equal(s, g, xw, s, g, xw, &eq), MIRS_OK);
  ck_assert(eq);
  uint64_t d1, d2;
  ck_assert_int_eq(mirs__fp_digest(s, xw, &d1), MIRS_OK);
  ck_assert_int_eq(mirs__fp_digest(s, wx, &d2), MIRS_OK);
  ck_assert_uint_ne(d1, d2);
  /* Stores under another seed cannot be compared. */
  mirs__fp_store *o = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, TRIALS, SEED + 1, &o), MIRS_OK);
  compute(o, g);
  ck_assert_int_eq(mirs__fp_tensor_equal(s, g, xw, o, g, xw, &eq), MIRS_INVALID_ARG);
  mirs__fp_store_free(o);
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 0, SEED, &o), MIRS_INVALID_ARG);
  ck_assert_ptr_null(o);
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, MIRS__FP_MAX_TRIALS + 1, SEED, &o),
                   MIRS_INVALID_ARG);
  mirs__fp_store_free(s);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- block graphs */

/* A block graph with grid (gx, 1, 1), block 128 and forloop f. */
static mirs__bgraph *bg_make(mirs_graph *g, int32_t gx, int32_t f) {
  const int32_t grid[3] = {gx, 1, 1}, block[3] = {128, 1, 1};
  mirs__bgraph *bg = NULL;
  ck_assert_int_eq(mirs__bg_new(g->ctx, grid, block, f, &bg), MIRS_OK);
  return bg;
}

/* Load src with imap (ix, -1, -1) and fmap. */
static int32_t bg_in(mirs_graph *g, mirs__bgraph *bg, int32_t src, int32_t ix, int32_t fmap) {
  const int32_t imap[3] = {ix, -1, -1};
  int32_t t = -1;
  mirs_status s = mirs__bg_add_input(g, bg, NULL, src, imap, fmap, &t);
  ck_assert_msg(s == MIRS_OK, "bg input: %s", mirs_last_error(g->ctx));
  return t;
}

/* Block op op(a[, b]) named name. */
static int32_t bg_op(mirs_graph *g, mirs__bgraph *bg, const char *name, mirs_op op, int32_t a,
                     int32_t b, int dim) {
  int32_t in[2] = {a, b}, t = -1;
  mirs_status s = mirs__bg_add_op(g, bg, name, op, mirs__graph_ops[op].arity, in, dim, false, &t);
  ck_assert_msg(s == MIRS_OK, "bg op %s: %s", mirs_op_name(op), mirs_last_error(g->ctx));
  return t;
}

/* Store t with omap (ox, -1, -1) and attach bg, its output named "O". */
static void bg_finish(mirs_graph *g, mirs__bgraph *bg, int32_t t, int32_t ox) {
  const int32_t omap[3] = {ox, -1, -1};
  ck_assert_int_eq(mirs__bg_add_output(g, bg, t, omap), MIRS_OK);
  const char *names[1] = {"O"};
  int32_t first = -1;
  mirs_status s = mirs__graph_add_custom(g, bg, names, &first);
  ck_assert_msg(s == MIRS_OK, "add_custom: %s", mirs_last_error(g->ctx));
  ck_assert_int_eq(mirs__graph_mark_output(g, first), MIRS_OK);
}

/* X [2, 32], W [32, 16]. */
static void xw(mirs_graph *g, int32_t *x, int32_t *w) {
  *x = add_in(g, "X", shp(2, 2, 32, 0));
  *w = add_in(g, "W", shp(2, 32, 16, 0));
}

/* Builder: O = matmul(rms_norm(X), W). */
static void b_rms_program(mirs_graph *g) {
  int32_t x, w;
  xw(g, &x, &w);
  out_op(g, MIRS_OP_MATMUL, add_op(g, NULL, MIRS_OP_RMS_NORM, x, -1, -1), w, -1);
}
/* The fused kernel: accum(x.w) / accum_rms(x) (epi = DIV), or a wrong
 * epilogue (MUL). */
static void rms_fused(mirs_graph *g, mirs_op epi) {
  int32_t x, w;
  xw(g, &x, &w);
  mirs__bgraph *bg = bg_make(g, 2, 4); /* W/O columns in slabs of 8; K in tiles of 8 */
  int32_t tx = bg_in(g, bg, x, -1, 1), tw = bg_in(g, bg, w, 1, 0);
  int32_t y = bg_op(g, bg, "y", MIRS_OP_MATMUL, tx, tw, -1);
  int32_t a = bg_op(g, bg, "a", MIRS_OP_ACCUM, y, -1, -1);
  int32_t r = bg_op(g, bg, "r", MIRS_OP_ACCUM_RMS, tx, -1, -1);
  bg_finish(g, bg, bg_op(g, bg, "o", epi, a, r, -1), 1);
}

/* Builder: The fused rms_norm-linear kernel. */
static void b_rms_fused(mirs_graph *g) {
  rms_fused(g, MIRS_OP_DIV);
}

/* Builder: The fused kernel with a wrong epilogue (mul for div). */
static void b_rms_fused_wrong(mirs_graph *g) {
  rms_fused(g, MIRS_OP_MUL);
}

/* Builder: O = sum(X, dim=1). */
static void b_sum_program(mirs_graph *g) {
  int32_t x = add_in(g, "X", shp(2, 2, 32, 0));
  out_op(g, MIRS_OP_SUM, x, -1, 1);
}

/* Builder: O = sum(X, dim=1) by a forloop accum_sum. */
static void b_sum_fused(mirs_graph *g) {
  int32_t x = add_in(g, "X", shp(2, 2, 32, 0));
  mirs__bgraph *bg = bg_make(g, 2, 4); /* grid splits rows, forloop walks columns */
  int32_t tx = bg_in(g, bg, x, 0, 1);
  bg_finish(g, bg, bg_op(g, bg, "s", MIRS_OP_ACCUM_SUM, tx, -1, 1), 0);
}

/* Builder: O = sqrt(sum(X, dim=1)) with the sqrt after the loop. */
static void b_sum_fused_sqrt(mirs_graph *g) {
  int32_t x = add_in(g, "X", shp(2, 2, 32, 0));
  mirs__bgraph *bg = bg_make(g, 2, 4);
  int32_t tx = bg_in(g, bg, x, 0, 1);
  int32_t s = bg_op(g, bg, "s", MIRS_OP_ACCUM_SUM, tx, -1, 1);
  bg_finish(g, bg, bg_op(g, bg, "n", MIRS_OP_SQRT, s, -1, -1), 0);
}

/* Builder: O = sqrt(sum(X, dim=1)). */
static void b_sum_sqrt_program(mirs_graph *g) {
  int32_t x = add_in(g, "X", shp(2, 2, 32, 0));
  out_op(g, MIRS_OP_SQRT, add_op(g, NULL, MIRS_OP_SUM, x, -1, 1), -1, -1);
}

START_TEST(test_block_graphs) {
  char why[256];
  ck_assert_msg(same(b_rms_program, b_rms_fused, why, sizeof why), "rms fusion: %s", why);
  ck_assert(!same(b_rms_program, b_rms_fused_wrong, why, sizeof why));
  ck_assert_msg(same(b_sum_program, b_sum_fused, why, sizeof why), "accum_sum: %s", why);
  ck_assert_msg(same(b_sum_sqrt_program, b_sum_fused_sqrt, why, sizeof why), "post sqrt: %s", why);
  ck_assert(!same(b_sum_program, b_sum_sqrt_program, why, sizeof why));
}
END_TEST

/* Parse examples/<rel>. */
static mirs_graph *parse(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  mirs_status s = mirs_graph_parse_file(ctx, tu_src(rel), &g);
  ck_assert_msg(s == MIRS_OK, "parse %s: %s", rel, mirs_last_error(ctx));
  return g;
}

/* Fingerprint examples/<name>.graph and .ugraph and assert they agree,
 * and that the ugraph disagrees with the program under another output
 * (its exp-dependent output against a mutated program). */
static void example(const char *name) {
  char gp[256], up[256];
  snprintf(gp, sizeof gp, "examples/%s.graph", name);
  snprintf(up, sizeof up, "examples/%s.ugraph", name);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *prog = parse(ctx, gp), *ug = parse(ctx, up);
  mirs__fp_store *ps = new_store(ctx), *us = new_store(ctx);
  compute(ps, prog);
  compute(us, ug);
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__fp_compare_outputs(ps, prog, us, ug, &v), MIRS_OK);
  ck_assert_msg(v.equal, "%s: %s", name, v.why);
  uint64_t d = 0;
  ck_assert_int_eq(mirs__fp_graph_degree(prog, &d), MIRS_OK);
  ck_assert_int_ge(d, 1);
  int k = mirs__fp_trials_for(v.degree, MIRS__FP_DEFAULT_LOG2_BOUND);
  printf("%s: D=%llu (program alone %llu), log2 bound with %d trials %.1f; %d trials for 2^-50\n",
         name, (unsigned long long)v.degree, (unsigned long long)d, TRIALS, v.log2_bound, k);
  fflush(stdout);
  ck_assert_int_ge(k, 1);
  ck_assert(v.log2_bound <= MIRS__FP_DEFAULT_LOG2_BOUND || k > TRIALS);
  ck_assert_uint_gt(us->stats.tile_elements, 0);
  mirs__fp_store_free(ps);
  mirs__fp_store_free(us);
  mirs__graph_free(prog);
  mirs__graph_free(ug);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}

START_TEST(test_example_rmsnorm_linear_small) {
  example("rmsnorm_linear_small");
}
END_TEST

START_TEST(test_example_gqa_small) {
  example("gqa_small");
}
END_TEST

START_TEST(test_example_mha_small) {
  example("mha_small");
}
END_TEST

START_TEST(test_example_rmsnorm_linear) {
  example("rmsnorm_linear");
}
END_TEST

START_TEST(test_example_gqa) {
  example("gqa");
}
END_TEST

/* The one-block screen: grid block (0,0,0) alone fills the corner of the
 * output.  Swapping which grid dim walks Q's batch and rows keeps block
 * (0,0,0)'s tiles (and the corner) and breaks every other block; a mul
 * for the division (the shapes allow no wrong reduction dim) breaks all. */
START_TEST(test_corner_screen) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *prog = parse(ctx, "examples/gqa_small.graph");
  const char *head = "ugraph gqa_small\n"
                     "input Q : f16[2, 8, 16]\n"
                     "input K : f16[2, 16, 128]\n"
                     "input V : f16[2, 128, 16]\n"
                     "O = custom(grid=[2, 2, 1], block=[128, 1, 1], forloop=4) {\n"
                     "  q = input(Q, imap=[",
             *mid = ", -1], fmap=-1)\n"
                    "  k = input(K, imap=[0, -1, -1], fmap=2)\n"
                    "  v = input(V, imap=[0, -1, -1], fmap=1)\n"
                    "  s = matmul(q, k)\n"
                    "  e = exp(s, fused=1)\n"
                    "  y = matmul(e, v)\n"
                    "  a = accum(y)\n"
                    "  d = accum_sum(e, dim=2)\n"
                    "  o = ",
             *tail = "(a, d, fused=1)\n"
                     "  output(o, omap=[0, 1, -1])\n"
                     "}\n"
                     "output O\n";
  static const char *const variant[3][2] = {{"0, 1", "div"}, {"1, 0", "div"}, {"0, 1", "mul"}};
  const bool corner_eq[3] = {true, true, false}, full_eq[3] = {true, false, false};
  mirs__fp_store *ps = new_store(ctx);
  compute(ps, prog);
  for (int i = 0; i < 3; i++) {
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s%s%s", head, variant[i][0], mid, variant[i][1], tail);
    mirs_graph *ug = NULL;
    ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), "v.ugraph", &ug) == MIRS_OK,
                  "parse: %s", mirs_last_error(ctx));
    const mirs__kop *k = &ug->ops[ug->nops - 1];
    const mirs__bop *out = &k->bg->ops[k->bg->nops - 1];
    ck_assert_int_eq(out->op, MIRS_OP_OUTPUT);
    mirs__fp_store *us = new_store(ctx);
    ck_assert_int_eq(mirs__fp_push_op_corner(us, ug, ug->nops - 1), MIRS_OK);
    ck_assert(us->corner);
    ck_assert_int_eq(mirs__fp_push_rest(us, ug, ug->nops - 1), MIRS_INTERNAL); /* one block */
    mirs_clear_error(ctx);
    bool eq = !corner_eq[i];
    ck_assert_int_eq(mirs__fp_trial0_corner_equal(ps, prog, prog->outputs[0], us, ug, out->dst,
                                                  &k->bg->t[out->in[0]].shape, &eq),
                     MIRS_OK);
    ck_assert_msg(eq == corner_eq[i], "variant %d: corner", i);
    /* A tile larger than the tensor is refused. */
    mirs__shape big = ug->t[out->dst].shape;
    big.d[0]++;
    ck_assert_int_eq(mirs__fp_trial0_corner_equal(ps, prog, prog->outputs[0], us, ug, out->dst,
                                                  &big, &eq),
                     MIRS_INVALID_ARG);
    mirs_clear_error(ctx);
    mirs__fp_truncate(us, ug->nt - 1);
    ck_assert(!us->corner);
    ck_assert_int_eq(us->partial, -1);
    compute(us, ug);
    mirs__fp_verdict v;
    ck_assert_int_eq(mirs__fp_compare_outputs(ps, prog, us, ug, &v), MIRS_OK);
    ck_assert_msg(v.equal == full_eq[i], "variant %d: full", i);
    if (!full_eq[i])
      ck_assert_int_eq(v.ref_output, prog->outputs[0]);
    mirs__fp_store_free(us);
    mirs__graph_free(ug);
  }
  mirs__fp_store_free(ps);
  mirs__graph_free(prog);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- refusal */

START_TEST(test_exp_of_exp_refused) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g = new_graph(ctx);
  int32_t x = add_in(g, "X", shp(2, 4, 4, 0)), y = add_in(g, "Y", shp(2, 4, 4, 0));
  int32_t e = add_op(g, "E", MIRS_OP_EXP, x, -1, -1);
  mirs__fp_store *s = new_store(ctx);
  compute(s, g);
  int32_t nt = s->nt;
  /* exp(exp(X)) */
  int32_t ee = add_op(g, "EE", MIRS_OP_EXP, e, -1, -1);
  (void)ee;
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_UNSUPPORTED);
  ck_assert_msg(strstr(mirs_last_error(ctx), "EE = exp(E)") != NULL, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(s->nt, nt);
  ck_assert_uint_eq(s->stats.refused, 1);
  uint64_t d;
  ck_assert_int_eq(mirs__fp_graph_degree(g, &d), MIRS_UNSUPPORTED);
  mirs__graph_pop_op(g);
  mirs__fp_truncate(s, g->nt);
  /* exp(add(exp(X), Y)): the dependence passes through add. */
  int32_t a = add_op(g, "A", MIRS_OP_ADD, e, y, -1);
  add_op(g, "EA", MIRS_OP_EXP, a, -1, -1);
  ck_assert_int_eq(mirs__fp_extend(s, g), MIRS_UNSUPPORTED);
  ck_assert_msg(strstr(mirs_last_error(ctx), "EA") != NULL, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(s->nt, g->nt - 1); /* A was computed, EA refused */
  mirs__graph_pop_op(g);
  mirs__fp_truncate(s, g->nt);
  /* exp(silu(exp(X))) is sound: the PRF result is a fresh value. */
  int32_t sl = add_op(g, "SL", MIRS_OP_SILU, e, -1, -1);
  add_op(g, "ES", MIRS_OP_EXP, sl, -1, -1);
  ck_assert_msg(mirs__fp_extend(s, g) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(s->nt, g->nt);
  ck_assert(s->t[e].exp_dep && s->t[a].exp_dep && !s->t[sl].exp_dep);
  /* The q-parts of exp-dependent tensors are canonical zeros. */
  mirs__fp_pair buf[16];
  ck_assert_int_eq(mirs__fp_read(s, a, 1, 0, 16, buf), MIRS_OK);
  for (int i = 0; i < 16; i++)
    ck_assert_uint_eq(buf[i].b, 0);
  mirs__fp_store_free(s);
  mirs__graph_free(g);

  /* In a block graph: the refusal names the block tensor. */
  g = new_graph(ctx);
  x = add_in(g, "X", shp(2, 2, 32, 0));
  mirs__bgraph *bg = bg_make(g, 2, 4);
  int32_t tx = bg_in(g, bg, x, 0, 1);
  int32_t t1 = bg_op(g, bg, "t1", MIRS_OP_EXP, tx, -1, -1);
  int32_t t2 = bg_op(g, bg, "t2", MIRS_OP_EXP, t1, -1, -1);
  bg_finish(g, bg, bg_op(g, bg, "acc", MIRS_OP_ACCUM, t2, -1, -1), 0);
  s = new_store(ctx);
  ck_assert_int_eq(mirs__fp_compute_graph(s, g), MIRS_UNSUPPORTED);
  ck_assert_msg(strstr(mirs_last_error(ctx), "t2 (custom op writing O) = exp(t1)") != NULL, "%s",
                mirs_last_error(ctx));
  ck_assert_int_eq(s->nt, 1); /* the input; the failed op left nothing */
  mirs__fp_store_free(s);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- bound */

START_TEST(test_bound) {
  /* D = 6: log2(6/Q) ~ -27.4 per trial, so two trials reach 2^-50. */
  ck_assert_int_eq(mirs__fp_trials_for(6, -50.0), 2);
  ck_assert(mirs__fp_bound_log2(6, 2) <= -50.0);
  ck_assert(mirs__fp_bound_log2(6, 1) > -50.0);
  ck_assert(fabs(mirs__fp_bound_log2(6, 1) - (log2(6.0) - log2((double)MIRS__FP_Q))) < 1e-6);
  ck_assert_int_eq(mirs__fp_trials_for(1, -50.0), 2);
  ck_assert_int_eq(mirs__fp_trials_for(0, -29.0), 1);
  /* D = 2^20: a little under 2^-10 per trial (Q < 2^30), so five trials
   * reach 2^-49 but 2^-50 takes six. */
  ck_assert_int_eq(mirs__fp_trials_for(UINT64_C(1) << 20, -49.0), 5);
  ck_assert_int_eq(mirs__fp_trials_for(UINT64_C(1) << 20, -50.0), 6);
  ck_assert_int_eq(mirs__fp_trials_for(MIRS__FP_Q, -50.0), -1);
  ck_assert(mirs__fp_bound_log2(MIRS__FP_Q, 4) == 0.0);
  ck_assert_int_eq(mirs__fp_trials_for(MIRS__FP_Q / 2, -50.0), 50); /* about 2^-1 a trial */
  ck_assert_int_eq(mirs__fp_trials_for(MIRS__FP_Q / 2, -70.0), -1); /* beyond 64 trials */
  /* Static degrees of the programs. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = new_graph(ctx);
  b_rms_program(g); /* rms_norm: 1 + 1, matmul: + 1 */
  uint64_t d = 0;
  ck_assert_int_eq(mirs__fp_graph_degree(g, &d), MIRS_OK);
  ck_assert_uint_eq(d, 3);
  mirs__graph_free(g);
  g = new_graph(ctx);
  b_rms_fused(g);
  ck_assert_int_eq(mirs__fp_graph_degree(g, &d), MIRS_OK);
  ck_assert_uint_eq(d, 3);
  mirs__graph_free(g);
  g = new_graph(ctx);
  b_div_l(g); /* (x*y)/z: 2 + 1 */
  ck_assert_int_eq(mirs__fp_graph_degree(g, &d), MIRS_OK);
  ck_assert_uint_eq(d, 3);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- incremental */

START_TEST(test_incremental) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = new_graph(ctx);
  mirs__fp_store *s = new_store(ctx);
  int32_t a = add_in(g, "A", shp(2, 4, 8, 0)), b = add_in(g, "B", shp(2, 8, 4, 0));
  int32_t m = add_op(g, NULL, MIRS_OP_MATMUL, a, b, -1);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_OK); /* generates A, B too */
  ck_assert_int_eq(s->nt, 3);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_INVALID_ARG); /* twice */
  /* A move that is then undone. */
  add_op(g, NULL, MIRS_OP_RELU, m, -1, -1);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_OK);
  mirs__graph_pop_op(g);
  mirs__fp_truncate(s, g->nt);
  ck_assert_int_eq(s->nt, 3);
  ck_assert_uint_eq(s->stats.truncations, 1);
  /* An input declared after ops, then a custom op reading it. */
  int32_t c = add_in(g, "C", shp(2, 4, 4, 0));
  int32_t e = add_op(g, NULL, MIRS_OP_EXP, m, -1, -1);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_OK); /* generates C */
  int32_t dv = add_op(g, NULL, MIRS_OP_DIV, e, add_op(g, NULL, MIRS_OP_SUM, e, -1, 1), -1);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_INVALID_ARG); /* sum not done */
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 2), MIRS_OK);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_OK);
  {
    mirs__bgraph *bg = bg_make(g, 2, 2);
    int32_t tx = bg_in(g, bg, dv, 0, 1), tc = bg_in(g, bg, c, -1, 0);
    int32_t y = bg_op(g, bg, NULL, MIRS_OP_MATMUL, tx, tc, -1);
    int32_t acc = bg_op(g, bg, NULL, MIRS_OP_ACCUM, y, -1, -1);
    int32_t r = bg_op(g, bg, NULL, MIRS_OP_ACCUM_RMS, tx, -1, -1);
    bg_finish(g, bg, bg_op(g, bg, NULL, MIRS_OP_DIV, acc, r, -1), 0);
  }
  /* Trial 0 first (the search's screen): the op is partial until the
   * other trials are computed; digests and further pushes refuse it. */
  ck_assert_int_eq(mirs__fp_push_op_first(s, g, g->nops - 1), MIRS_OK);
  ck_assert_int_eq(s->partial, s->nt - 1);
  uint64_t dd;
  ck_assert_int_eq(mirs__fp_digest(s, s->nt - 1, &dd), MIRS_INTERNAL);
  ck_assert_int_eq(mirs__fp_push_op(s, g, g->nops - 1), MIRS_INTERNAL);
  mirs_clear_error(ctx);
  mirs__fp_truncate(s, s->nt - 1); /* dropped, as a screened-out move is */
  ck_assert_int_eq(s->partial, -1);
  ck_assert_int_eq(mirs__fp_push_op_first(s, g, g->nops - 1), MIRS_OK);
  ck_assert_int_eq(mirs__fp_push_rest(s, g, g->nops - 1), MIRS_OK);
  ck_assert_int_eq(s->partial, -1);
  ck_assert_int_eq(mirs__fp_push_rest(s, g, g->nops - 1), MIRS_OK); /* nothing left */
  add_op(g, "Z", MIRS_OP_SILU, add_op(g, NULL, MIRS_OP_ADD, g->nt - 1, c, -1), -1, -1);
  ck_assert_int_eq(mirs__fp_extend(s, g), MIRS_OK);
  ck_assert_int_eq(s->nt, g->nt);

  /* The whole graph from scratch in another store agrees tensor by tensor. */
  mirs__fp_store *w = new_store(ctx);
  compute(w, g);
  for (int32_t t = 0; t < g->nt; t++) {
    uint64_t d1, d2;
    bool eq = false;
    ck_assert_int_eq(mirs__fp_digest(s, t, &d1), MIRS_OK);
    ck_assert_int_eq(mirs__fp_digest(w, t, &d2), MIRS_OK);
    ck_assert_uint_eq(d1, d2);
    ck_assert_int_eq(mirs__fp_tensor_equal(s, g, t, w, g, t, &eq), MIRS_OK);
    ck_assert_msg(eq, "tensor %s", g->t[t].name);
    ck_assert_uint_eq(s->t[t].degree, w->t[t].degree);
    ck_assert(s->t[t].exp_dep == w->t[t].exp_dep);
  }
  /* Trial-0 equality agrees; a same-shaped other tensor differs. */
  bool eq0 = false;
  ck_assert_int_eq(mirs__fp_trial0_equal(s, g, g->nt - 1, w, g, g->nt - 1, &eq0), MIRS_OK);
  ck_assert(eq0);
  ck_assert(mirs__shape_eq(&g->t[m].shape, &g->t[c].shape));
  ck_assert_int_eq(mirs__fp_trial0_equal(s, g, m, w, g, c, &eq0), MIRS_OK);
  ck_assert(!eq0);
  ck_assert_uint_gt(w->stats.elements, 0);
  ck_assert_uint_eq(w->stats.ops, (uint64_t)g->nops);
  ck_assert_uint_gt(s->stats.ops, (uint64_t)g->nops); /* the undone relu too */
  /* Recomputing in place is idempotent. */
  uint64_t before;
  ck_assert_int_eq(mirs__fp_digest(w, g->nt - 1, &before), MIRS_OK);
  compute(w, g);
  uint64_t after;
  ck_assert_int_eq(mirs__fp_digest(w, g->nt - 1, &after), MIRS_OK);
  ck_assert_uint_eq(before, after);
  mirs__fp_store_free(s);
  mirs__fp_store_free(w);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* Every allocation of a store's life fails in turn: an error (never a
 * crash or leak), and success once enough allocations are allowed. */
START_TEST(test_alloc_failure) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g = new_graph(ctx);
  b_rms_fused(g);
  uint64_t want = 0;
  {
    mirs__fp_store *s = new_store(ctx);
    compute(s, g);
    ck_assert_int_eq(mirs__fp_digest(s, g->outputs[0], &want), MIRS_OK);
    mirs__fp_store_free(s);
  }
  size_t base = mirs_memory_current(ctx);
  bool done = false;
  for (long n = 1; n < 200 && !done; n++) {
    mirs__fp_store *s = NULL;
    mirs__core_fail_alloc_after(ctx, n);
    mirs_status st = mirs__fp_store_new(ctx, NULL, TRIALS, SEED, &s);
    if (st == MIRS_OK)
      st = mirs__fp_compute_graph(s, g);
    mirs__core_fail_alloc_after(ctx, 0);
    if (st == MIRS_OK) {
      uint64_t d;
      ck_assert_int_eq(mirs__fp_digest(s, g->outputs[0], &d), MIRS_OK);
      ck_assert_uint_eq(d, want);
      done = true;
    } else {
      ck_assert_int_eq(st, MIRS_NOMEM);
      if (s) {
        /* A failed step leaves a usable store: finish without the hook. */
        compute(s, g);
        uint64_t d;
        ck_assert_int_eq(mirs__fp_digest(s, g->outputs[0], &d), MIRS_OK);
        ck_assert_uint_eq(d, want);
      }
    }
    mirs__fp_store_free(s);
    ck_assert_uint_eq(mirs_memory_current(ctx), base);
  }
  ck_assert(done);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* The suite. */
static Suite *fingerprint_suite(void) {
  Suite *s = suite_create("fingerprint");
  TCase *f = tcase_create("field");
  tcase_add_test(f, test_field_constants);
  tcase_add_test(f, test_philox_mapping);
  tcase_add_test(f, test_bound);
  suite_add_tcase(s, f);
  TCase *e = tcase_create("equivalence");
  tcase_add_test(e, test_equal_pairs);
  tcase_add_test(e, test_near_misses);
  tcase_add_test(e, test_exchanged_inputs);
  tcase_add_test(e, test_block_graphs);
  tcase_add_test(e, test_exp_of_exp_refused);
  suite_add_tcase(s, e);
  TCase *i = tcase_create("store");
  tcase_add_test(i, test_incremental);
  tcase_add_test(i, test_alloc_failure);
  suite_add_tcase(s, i);
  TCase *x = tcase_create("examples");
  tcase_set_timeout(x, 300);
  tcase_add_test(x, test_example_rmsnorm_linear_small);
  tcase_add_test(x, test_example_gqa_small);
  tcase_add_test(x, test_example_mha_small);
  tcase_add_test(x, test_corner_screen);
  tcase_add_test(x, test_example_rmsnorm_linear);
  tcase_add_test(x, test_example_gqa);
  suite_add_tcase(s, x);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(fingerprint_suite());
}
