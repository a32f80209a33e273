/* SPDX-License-Identifier: MIT */
/* tests/check_mask.c - the causal mask operator and mask inputs, end to end:
 *  - parsing: rank and arity errors reported with their positions;
 *  - the float64 interpreter: -inf exactly above the bottom-right aligned
 *    diagonal (m = n, m < n, m > n), and a block-level mask placed by the
 *    grid (rows) and the forloop (columns) equal to the kernel-level one;
 *  - block graphs refuse a mask whose tile has no single global position;
 *  - fingerprints: a masked program and its flash-style µGraph agree, the
 *    same µGraph without the mask does not, exp(masked) is 0 and masked
 *    entries the sentinel, a use of -inf the field cannot follow (mul) is
 *    refused;
 *  - the safe (max-shifted) causal program, the unshifted one, the flash
 *    kernel and the online-softmax kernel (accum_online) are one function
 *    (masked entries never win the max; a masked tile's -inf shift adds
 *    nothing), and the online kernel skips the masked tiles too;
 *  - the search: tiny causal, additive-bias and multiplicative-mask
 *    softmaxes give equal result sets with pruning on and off, and every
 *    result's generated code (host emulation) matches the program;
 *  - reduced instances: a causal attention with more keys than queries
 *    (n - m changes under the reduction) has the same results fingerprinted
 *    reduced as at full shape, each verified at full shape;
 *  - the generated code of a predefined (kernel-level) mask and of the
 *    flash-style custom kernel matches the program; tile skipping. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/plan.h"
#include "graph/graph.h"
#include "search/search.h"
#include "testutil.h"
#include "tiny_programs.h"
#include "verify/fingerprint.h"

/* Softmax of causal_mask(Q.K) at a tiny shape. */
static const char *const TINY_CAUSAL = "program tiny_causal\n"
                                       "input Q : f16[2, 8, 4]\n"
                                       "input K : f16[2, 4, 8]\n"
                                       "S = matmul(Q, K)\n"
                                       "M = causal_mask(S)\n"
                                       "E = exp(M)\n"
                                       "D = sum(E, dim=2)\n"
                                       "O = div(E, D)\n"
                                       "output O\n";

/* An additive mask input, broadcast over the heads. */
static const char *const TINY_BIAS = "program tiny_bias\n"
                                     "input Q : f16[2, 8, 4]\n"
                                     "input K : f16[2, 4, 8]\n"
                                     "input B : f16[1, 8, 8]\n"
                                     "S = matmul(Q, K)\n"
                                     "T = add(S, B)\n"
                                     "E = exp(T)\n"
                                     "D = sum(E, dim=2)\n"
                                     "O = div(E, D)\n"
                                     "output O\n";

/* A multiplicative mask input on the exponentials, broadcast over heads. */
static const char *const TINY_MULMASK = "program tiny_mulmask\n"
                                        "input Q : f16[2, 8, 4]\n"
                                        "input K : f16[2, 4, 8]\n"
                                        "input B : f16[1, 8, 8]\n"
                                        "S = matmul(Q, K)\n"
                                        "E = exp(S)\n"
                                        "F = mul(E, B)\n"
                                        "D = sum(F, dim=2)\n"
                                        "O = div(F, D)\n"
                                        "output O\n";

/* Causal attention at a small shape and its flash-style kernel: the
 * grid places the query rows (16 per block), the forloop walks the keys
 * (16 per iteration), so the block mask needs both offsets. */
static const char *const CAUSAL = "program causal\n"
                                  "input Q : f16[2, 64, 16]\n"
                                  "input K : f16[2, 16, 64]\n"
                                  "input V : f16[2, 64, 16]\n"
                                  "S = matmul(Q, K)\n"
                                  "M = causal_mask(S)\n"
                                  "E = exp(M)\n"
                                  "D = sum(E, dim=2)\n"
                                  "P = div(E, D)\n"
                                  "O = matmul(P, V)\n"
                                  "output O\n";
#define FLASH_HEAD                                                                                 \
  "ugraph causal\n"                                                                                \
  "input Q : f16[2, 64, 16]\n"                                                                     \
  "input K : f16[2, 16, 64]\n"                                                                     \
  "input V : f16[2, 64, 16]\n"                                                                     \
  "O = custom(grid=[2, 4, 1], block=[128, 1, 1], forloop=4) {\n"                                   \
  "  q = input(Q, imap=[0, 1, -1], fmap=-1)\n"                                                     \
  "  k = input(K, imap=[0, -1, -1], fmap=2)\n"                                                     \
  "  v = input(V, imap=[0, -1, -1], fmap=1)\n"                                                     \
  "  s = matmul(q, k)\n"
#define FLASH_TAIL                                                                                 \
  "  y = matmul(e, v)\n"                                                                           \
  "  a = accum(y)\n"                                                                               \
  "  d = accum_sum(e, dim=2)\n"                                                                    \
  "  o = div(a, d, fused=1)\n"                                                                     \
  "  output(o, omap=[0, 1, -1])\n"                                                                 \
  "}\n"                                                                                            \
  "output O\n"
static const char *const FLASH = FLASH_HEAD "  m = causal_mask(s, fused=1)\n"
                                            "  e = exp(m, fused=1)\n" FLASH_TAIL;
static const char *const FLASH_UNMASKED = FLASH_HEAD "  e = exp(s, fused=1)\n" FLASH_TAIL;
/* The flash kernel with a second output, the unmasked row sums of Q.K over
 * every key: an accumulator a masked tile does not zero, so no tile may be
 * skipped. */
static const char *const FLASH_VSUM =
    "ugraph causal\n"
    "input Q : f16[2, 64, 16]\n"
    "input K : f16[2, 16, 64]\n"
    "input V : f16[2, 64, 16]\n"
    "O, W = custom(grid=[2, 4, 1], block=[128, 1, 1], forloop=4) {\n"
    "  q = input(Q, imap=[0, 1, -1], fmap=-1)\n"
    "  k = input(K, imap=[0, -1, -1], fmap=2)\n"
    "  v = input(V, imap=[0, -1, -1], fmap=1)\n"
    "  s = matmul(q, k)\n"
    "  m = causal_mask(s)\n"
    "  e = exp(m, fused=1)\n"
    "  y = matmul(e, v)\n"
    "  a = accum(y)\n"
    "  d = accum_sum(e, dim=2)\n"
    "  o = div(a, d, fused=1)\n"
    "  w = accum_sum(s, dim=2)\n"
    "  output(o, omap=[0, 1, -1])\n"
    "  output(w, omap=[0, 1, -1])\n"
    "}\n"
    "output O, W\n";

/* The safe (max-shifted) causal program, and its online-softmax kernel:
 * a key tile that the mask empties for a block row has a -inf row max,
 * a -inf shift (-inf - -inf = -inf) and adds nothing to accum_online. */
static const char *const CAUSAL_SAFE = "program causal_safe\n"
                                       "input Q : f16[2, 64, 16]\n"
                                       "input K : f16[2, 16, 64]\n"
                                       "input V : f16[2, 64, 16]\n"
                                       "S = matmul(Q, K)\n"
                                       "M = causal_mask(S)\n"
                                       "X = max(M, dim=2)\n"
                                       "C = sub(M, X)\n"
                                       "E = exp(C)\n"
                                       "D = sum(E, dim=2)\n"
                                       "P = div(E, D)\n"
                                       "O = matmul(P, V)\n"
                                       "output O\n";
static const char *const ONLINE = FLASH_HEAD "  w = causal_mask(s)\n"
                                             "  m = max(w, dim=2)\n"
                                             "  c = sub(w, m)\n"
                                             "  e = exp(c, fused=1)\n"
                                             "  y = matmul(e, v)\n"
                                             "  r = sum(e, dim=2)\n"
                                             "  a = accum_online(y, m)\n"
                                             "  d = accum_online(r, m)\n"
                                             "  o = div(a, d, fused=1)\n"
                                             "  output(o, omap=[0, 1, -1])\n"
                                             "}\n"
                                             "output O\n";

/* Parse text, expecting failure; the error message. */
static const char *parse_fails(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_int_ne(mirs_graph_parse_string(ctx, text, strlen(text), "bad.graph", &g), MIRS_OK);
  ck_assert_ptr_null(g);
  return mirs_last_error(ctx);
}

START_TEST(test_parse_errors) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  const char *e = parse_fails(ctx, "input X : f16[8]\nY = causal_mask(X)\noutput Y\n");
  ck_assert_msg(strstr(l.text, "bad.graph:2:") && strstr(l.text, "rank >= 2"), "%s | %s", e,
                l.text);
  memset(&l, 0, sizeof l);
  e = parse_fails(ctx, "input X : f16[8, 8]\nY = causal_mask(X, X)\noutput Y\n");
  ck_assert_msg(strstr(l.text, "bad.graph:2:") && strstr(l.text, "causal_mask"), "%s | %s", e,
                l.text);
  mirs_context_destroy(ctx);
}
END_TEST

/* Evaluate Y = causal_mask(X) for X f32[2, m, n] and check every entry. */
static void check_kernel_mask(int64_t m, int64_t n) {
  mirs_context *ctx = tu_ctx(NULL);
  char text[256];
  snprintf(text, sizeof text, "input X : f32[2, %lld, %lld]\nY = causal_mask(X)\noutput Y\n",
           (long long)m, (long long)n);
  mirs_graph *g = parse(ctx, text);
  mirs_eval_result *r = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 7, &r), MIRS_OK);
  int64_t count = 0;
  const double *y = mirs_eval_output_values(r, 0, &count);
  ck_assert_int_eq(count, 2 * m * n);
  int kept = 0;
  for (int64_t b = 0; b < 2; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t e = (b * m + i) * n + j;
        if (j <= i + (n - m)) {
          ck_assert_double_eq(y[e], mirs_input_value(7, "X", (uint64_t)e));
          kept++;
        } else {
          ck_assert_msg(isinf(y[e]) && y[e] < 0, "(%lld, %lld) of %lldx%lld not -inf",
                        (long long)i, (long long)j, (long long)m, (long long)n);
        }
      }
  ck_assert_int_gt(kept, 0);
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}

START_TEST(test_interp_kernel_mask) {
  check_kernel_mask(5, 5); /* lower triangle */
  check_kernel_mask(3, 7); /* more keys than queries: the diagonal moves right */
  check_kernel_mask(6, 2); /* more queries: the first rows are all masked */
}
END_TEST

/* Largest relative error between the float64 evaluations of a and b. */
static double eval_diff(const mirs_graph *a, const mirs_graph *b, uint64_t seed) {
  mirs_eval_result *ra = NULL, *rb = NULL;
  ck_assert_int_eq(mirs_graph_eval(a, seed, &ra), MIRS_OK);
  ck_assert_int_eq(mirs_graph_eval(b, seed, &rb), MIRS_OK);
  double err = mirs__eval_max_rel_error(ra, rb);
  mirs_eval_result_destroy(ra);
  mirs_eval_result_destroy(rb);
  return err;
}

START_TEST(test_interp_block_mask) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = parse(ctx, CAUSAL), *u = parse(ctx, FLASH), *x = parse(ctx, FLASH_UNMASKED);
  ck_assert_double_le(eval_diff(p, u, 3), 1e-12);
  ck_assert_double_gt(eval_diff(p, x, 3), 1e-3); /* the mask matters */
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_graph_destroy(x);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_unplaced_mask_refused) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  /* A sum over the forloop of tiles from different columns has no column. */
  parse_fails(ctx, "ugraph bad\n"
                   "input X : f16[8, 16]\n"
                   "O = custom(grid=[1, 1, 1], block=[128, 1, 1], forloop=2) {\n"
                   "  x = input(X, imap=[-1, -1, -1], fmap=1)\n"
                   "  a = accum(x)\n"
                   "  m = causal_mask(a)\n"
                   "  output(m, omap=[-1, -1, -1])\n"
                   "}\n"
                   "output O\n");
  ck_assert_msg(strstr(l.text, "global positions"), "%s", l.text);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_fingerprints) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  mirs_graph *p = parse(ctx, CAUSAL), *u = parse(ctx, FLASH), *x = parse(ctx, FLASH_UNMASKED);
  int trials = 0;
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__verify_fingerprints(ctx, p, u, &trials, &v), MIRS_OK);
  ck_assert_msg(v.equal, "%s", v.why);
  ck_assert_int_eq(mirs__verify_fingerprints(ctx, p, x, &trials, &v), MIRS_OK);
  ck_assert(!v.equal);

  /* Values: causal_mask(S) holds the sentinel exactly where masked, and
   * exp of it 0 there. */
  mirs__fp_store *s = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 1, 5, &s), MIRS_OK);
  ck_assert_int_eq(mirs__fp_compute_graph(s, p), MIRS_OK);
  int32_t tm = mirs__graph_find(p, "M"), te = mirs__graph_find(p, "E");
  static mirs__fp_pair mv[2 * 64 * 64], ev[2 * 64 * 64];
  ck_assert_int_eq(mirs__fp_read(s, tm, 0, 0, 2 * 64 * 64, mv), MIRS_OK);
  ck_assert_int_eq(mirs__fp_read(s, te, 0, 0, 2 * 64 * 64, ev), MIRS_OK);
  for (int64_t e = 0; e < 2 * 64 * 64; e++) {
    int64_t i = (e / 64) % 64, j = e % 64;
    bool masked = j > i;
    ck_assert_int_eq(mv[e].a == MIRS__FP_MASKED, masked);
    ck_assert_int_eq(ev[e].a == 0, masked);
  }
  mirs__fp_store_free(s);

  /* mul(causal_mask(S), S): -inf times a value of unknown sign. */
  mirs_graph *bad = parse(ctx, "input X : f16[4, 4]\nM = causal_mask(X)\nY = mul(M, X)\n"
                               "output Y\n");
  uint64_t degree = 0;
  ck_assert_int_eq(mirs__fp_graph_degree(bad, &degree), MIRS_UNSUPPORTED);
  ck_assert_msg(strstr(mirs_last_error(ctx), "-inf"), "%s", mirs_last_error(ctx));
  /* ... while add and sub of a finite value are followed. */
  mirs_graph *ok = parse(ctx, "input X : f16[4, 4]\nM = causal_mask(X)\nA = add(X, M)\n"
                              "B = sub(A, X)\nY = exp(B)\noutput Y\n");
  ck_assert_int_eq(mirs__fp_graph_degree(ok, &degree), MIRS_OK);
  mirs_graph_destroy(ok);
  mirs_graph_destroy(bad);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_graph_destroy(x);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_safe_and_online) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  mirs_graph *p = parse(ctx, CAUSAL), *sp = parse(ctx, CAUSAL_SAFE), *u = parse(ctx, FLASH),
             *on = parse(ctx, ONLINE);
  /* The max shift cancels (exp is a homomorphism, masked entries lose
   * the max): all four are one function, in float64 and fingerprints. */
  const mirs_graph *cands[] = {p, u, on};
  for (int i = 0; i < 3; i++) {
    ck_assert_double_le(eval_diff(sp, cands[i], 2), 1e-12);
    int trials = 0;
    mirs__fp_verdict v;
    ck_assert_int_eq(mirs__verify_fingerprints(ctx, sp, cands[i], &trials, &v), MIRS_OK);
    ck_assert_msg(v.equal, "candidate %d: %s", i, v.why);
  }
  /* The online kernel skips the masked key tiles too (a running max with
   * -inf, an online step adding 0). */
  mirs__plan pl;
  ck_assert_int_eq(mirs__plan_build(ctx, on, 0, MIRS__PLAN_SMEM_MAX, true, &pl), MIRS_OK);
  ck_assert(pl.skip.on);
  ck_assert_double_eq_tol(pl.live, 10.0 / 16.0, 1e-12);
  mirs__plan_free(&pl);
  /* A shift of the wrong sign, max(S) - causal_mask(S), is finite - (-inf)
   * = +inf, which the field cannot hold: refused. */
  mirs_graph *wrong = parse(ctx, "program w\ninput Q : f16[2, 64, 16]\ninput K : f16[2, 16, 64]\n"
                                 "input V : f16[2, 64, 16]\nS = matmul(Q, K)\nX = max(S, dim=2)\n"
                                 "M = causal_mask(S)\nC = sub(X, M)\nE = exp(C)\n"
                                 "D = sum(E, dim=2)\nP = div(E, D)\nO = matmul(P, V)\n"
                                 "output O\n");
  uint64_t degree = 0;
  ck_assert_int_eq(mirs__fp_graph_degree(wrong, &degree), MIRS_UNSUPPORTED);
  mirs_graph_destroy(wrong);
  mirs_graph_destroy(p);
  mirs_graph_destroy(sp);
  mirs_graph_destroy(u);
  mirs_graph_destroy(on);
  mirs_context_destroy(ctx);
}
END_TEST

/* The small search space of the tests (every program here completes in
 * well under a second with pruning). */
static const char *const SPACE[] = {"grid_x", "1,2", "grid_y", "1", "grid_z", "1",
                                    "forloop_ranges", "1,2", "max_block_ops", "8",
                                    "kernel_ops", "matmul,exp,add,mul", "max_kernel_ops", "3",
                                    "op_budget", "0", "float_check_top", "0", NULL};

/* Search text under SPACE and (name, value); the sorted result hashes into
 * h (at most cap); returns the search (destroy it) with *n results. */
static mirs_search *search(mirs_context *ctx, const char *text, const char *prune, uint64_t *h,
                           int cap, int *n) {
  set_opts(ctx, SPACE);
  const char *const kv[] = {"prune", prune, NULL};
  set_opts(ctx, kv);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s = NULL;
  ck_assert_msg(mirs_search_create(ctx, g, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_graph_destroy(g);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_int_eq(st.complete, 1);
  *n = mirs_search_num_results(s);
  ck_assert_int_le(*n, cap);
  for (int i = 0; i < *n; i++)
    h[i] = mirs_graph_hash(mirs_search_result(s, i));
  for (int i = 1; i < *n; i++) /* (insertion sort: a few results) */
    for (int j = i; j > 0 && h[j - 1] > h[j]; j--) {
      uint64_t t = h[j];
      h[j] = h[j - 1];
      h[j - 1] = t;
    }
  return s;
}

static const char *const *const SEARCHED[] = {&TINY_CAUSAL, &TINY_BIAS, &TINY_MULMASK};

START_TEST(test_search_prune_same_results) {
  uint64_t h1[256], h2[256];
  int n1 = 0, n2 = 0;
  mirs_context *c1 = tu_ctx(NULL), *c2 = tu_ctx(NULL);
  mirs_search *s1 = search(c1, *SEARCHED[_i], "true", h1, 256, &n1);
  mirs_search *s2 = search(c2, *SEARCHED[_i], "false", h2, 256, &n2);
  ck_assert_int_gt(n1, 0);
  ck_assert_msg(n1 == n2, "prune on: %d results, off: %d", n1, n2);
  ck_assert_mem_eq(h1, h2, sizeof(uint64_t) * (size_t)n1);
  mirs_search_destroy(s1);
  mirs_search_destroy(s2);
  mirs_context_destroy(c1);
  mirs_context_destroy(c2);
}
END_TEST

/* Host-run g on seed against the float64 evaluation of program p. */
static double run_against(mirs_context *ctx, const mirs_graph *g, const mirs_graph *p,
                          uint64_t seed) {
  mirs_eval_result *r = NULL, *e = NULL;
  double self = 0;
  ck_assert_msg(mirs_codegen_run(g, seed, MIRS_BACKEND_HOST, &r, &self) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  ck_assert_int_eq(mirs_graph_eval(p, seed, &e), MIRS_OK);
  double err = mirs__eval_max_rel_error(e, r);
  mirs_eval_result_destroy(r);
  mirs_eval_result_destroy(e);
  return err;
}

START_TEST(test_search_results_run) {
  uint64_t h[256];
  int n = 0;
  mirs_context *ctx = tu_ctx(NULL);
  mirs_search *s = search(ctx, *SEARCHED[_i], "true", h, 256, &n);
  mirs_graph *p = parse(ctx, *SEARCHED[_i]);
  bool custom_mask = false;
  for (int i = 0; i < n; i++) {
    const mirs_graph *r = mirs_search_result(s, i);
    double err = run_against(ctx, r, p, 21 + (uint64_t)i);
    ck_assert_msg(err <= mirs_codegen_tolerance(r), "result %d: relative error %g", i, err);
    for (int32_t k = 0; k < r->nops; k++)
      for (int32_t j = 0; r->ops[k].op == MIRS_OP_CUSTOM && j < r->ops[k].bg->nops; j++)
        custom_mask = custom_mask || r->ops[k].bg->ops[j].op == MIRS_OP_CAUSAL_MASK;
  }
  if (_i == 0) /* the mask is searched at the block level too */
    ck_assert(custom_mask);
  mirs_graph_destroy(p);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

/* Causal attention with n > m, for the reduced instances. */
static const char *const MID_CAUSAL = "program mid_causal\n"
                                      "input Q : f16[2, 8, 16]\n"
                                      "input K : f16[2, 16, 32]\n"
                                      "input V : f16[2, 32, 16]\n"
                                      "A = matmul(Q, K)\n"
                                      "M = causal_mask(A)\n"
                                      "E = exp(M)\n"
                                      "S = sum(E, dim=2)\n"
                                      "D = div(E, S)\n"
                                      "O = matmul(D, V)\n"
                                      "output O\n";

START_TEST(test_reduced_same_results) {
  static const char *const space[] = {
      "grid_x", "1,2", "grid_y", "1", "grid_z", "1", "forloop_ranges", "1,4",
      "max_block_ops", "8", "max_kernel_ops", "3", "kernel_ops", "matmul,exp,div",
      "op_budget", "0", "float_check_top", "0", "verify_full_max", "-1", NULL};
  static const char *const red[] = {"fp_reduce_min_elements", "0", "fp_reduce_tile", "2",
                                    "fp_reduce_parts", "2", NULL};
  static const char *const full[] = {"fp_reduce", "false", NULL};
  mirs_context *c1 = tu_ctx(NULL), *c2 = tu_ctx(NULL);
  set_opts(c1, space);
  set_opts(c1, red);
  set_opts(c2, space);
  set_opts(c2, full);
  mirs_graph *g1 = parse(c1, MID_CAUSAL), *g2 = parse(c2, MID_CAUSAL);
  mirs_search *s1 = NULL, *s2 = NULL;
  ck_assert_int_eq(mirs_search_create(c1, g1, &s1), MIRS_OK);
  ck_assert_int_eq(mirs_search_create(c2, g2, &s2), MIRS_OK);
  ck_assert_msg(mirs_search_run(s1) == MIRS_OK, "%s", mirs_last_error(c1));
  ck_assert_msg(mirs_search_run(s2) == MIRS_OK, "%s", mirs_last_error(c2));
  ck_assert_uint_gt(s1->stats.v[MIRS__STAT_fp_reduced], 0);
  ck_assert_uint_eq(s1->stats.v[MIRS__STAT_full_unverified], 0);
  int n = mirs_search_num_results(s1);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(n, mirs_search_num_results(s2));
  for (int i = 0; i < n; i++) /* (both sorted by cost, then hash) */
    ck_assert_uint_eq(mirs_search_result_hash(s1, i), mirs_search_result_hash(s2, i));
  mirs_search_destroy(s1);
  mirs_search_destroy(s2);
  mirs_graph_destroy(g1);
  mirs_graph_destroy(g2);
  mirs_context_destroy(c1);
  mirs_context_destroy(c2);
}
END_TEST

START_TEST(test_codegen_masks) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = parse(ctx, CAUSAL), *u = parse(ctx, FLASH);
  /* The program itself: predefined kernels, the mask one of them. */
  double err = run_against(ctx, p, p, 4);
  ck_assert_msg(err <= mirs_codegen_tolerance(p), "program: relative error %g", err);
  err = run_against(ctx, u, p, 4);
  ck_assert_msg(err <= mirs_codegen_tolerance(u), "flash kernel: relative error %g", err);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* Host-run g on seed against the float64 evaluation of program p. */
static double run_against(mirs_context *ctx, const mirs_graph *g, const mirs_graph *p,
                          uint64_t seed);

/* The plan of g's custom kernel (the last kernel op). */
static void plan_of(mirs_context *ctx, const mirs_graph *g, mirs__plan *pl) {
  ck_assert_int_eq(mirs__plan_build(ctx, g, g->nops - 1, MIRS__PLAN_SMEM_MAX, true, pl), MIRS_OK);
  ck_assert(pl->feasible);
}

/* Bytes of the walked (per-iteration) tiles a plan loads over the grid. */
static double walked_bytes(const mirs_graph *g, const mirs__plan *pl) {
  const mirs__bgraph *bg = g->ops[g->nops - 1].bg;
  double total = 0;
  for (int32_t t = 0; t < bg->nt; t++)
    if (pl->t[t].input && !pl->t[t].invariant)
      total += (double)mirs__shape_numel(&bg->t[t].shape) * pl->t[t].elsize;
  return total * (double)bg->forloop * pl->live * (double)pl->blocks;
}

START_TEST(test_tile_skipping) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *u = parse(ctx, FLASH), *x = parse(ctx, FLASH_UNMASKED), *w = parse(ctx, FLASH_VSUM);
  mirs__plan pu, px, pw;
  plan_of(ctx, u, &pu);
  plan_of(ctx, x, &px);
  plan_of(ctx, w, &pw);
  /* Block row y (query rows 16y..16y+15) needs key tiles 0..y: 10 of 16. */
  ck_assert(pu.skip.on);
  ck_assert_double_eq_tol(pu.live, 10.0 / 16.0, 1e-12);
  for (int64_t y = 0; y < 4; y++) {
    int64_t b[MIRS__GRID] = {1, y, 0};
    ck_assert_int_eq(mirs__plan_fend(&pu, u->ops[0].bg, b), y + 1);
  }
  ck_assert(!px.skip.on);
  ck_assert_double_eq(px.live, 1.0);
  ck_assert(!pw.skip.on); /* the sum of V needs every key tile */
  /* ... and the public cost query says so. */
  mirs_cost cu = MIRS_COST_INIT, cx = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, u, 0, "H100", &cu), MIRS_OK);
  ck_assert_int_eq(mirs_graph_kernel_cost(ctx, x, 0, "H100", &cx), MIRS_OK);
  ck_assert_double_eq_tol(cu.live, 10.0 / 16.0, 1e-12);
  ck_assert_double_eq(cx.live, 1.0);
  /* Fewer bytes, so less memory time.  (Not necessarily less time: the
   * 8 blocks run in one wave, so the kernel lasts as long as its longest
   * block, the last query rows' with every key tile, and the mask's
   * arithmetic adds compute; on the calibrated H100 profile this small
   * kernel is compute-bound, 8.72 against 8.68 us.) */
  ck_assert_double_lt(cu.memory_seconds, cx.memory_seconds);
  ck_assert_double_lt(cu.memory_seconds, 0.8 * cx.memory_seconds);
  /* The traffic counts the live tiles only. */
  ck_assert_double_lt(pu.bytes, px.bytes);
  ck_assert_double_eq_tol(pu.bytes - walked_bytes(u, &pu), px.bytes - walked_bytes(x, &px), 1e-6);
  /* The generated loop ends at fend, and both kernels compute their programs. */
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  ck_assert_int_eq(mirs__codegen_cuda(u, NULL, &b), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(b.data, "for (int f = 0; f < fend; f++)"));
  mirs__buf_free(&b);
  char text[1024];
  snprintf(text, sizeof text, "%sW = sum(S, dim=2)\noutput W\n", CAUSAL);
  mirs_graph *p = parse(ctx, text);
  double err = run_against(ctx, w, p, 9);
  ck_assert_msg(err <= mirs_codegen_tolerance(w), "flash with a row sum: relative error %g", err);
  mirs__plan_free(&pu);
  mirs__plan_free(&px);
  mirs__plan_free(&pw);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_graph_destroy(x);
  mirs_graph_destroy(w);
  mirs_context_destroy(ctx);
}
END_TEST

/* More keys than queries (decoding with a KV cache): the diagonal is
 * bottom-right aligned, n - m = 32 more keys are live per block row. */
START_TEST(test_tile_skipping_more_keys) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const prog = "program kv\n"
                                  "input Q : f16[2, 32, 16]\n"
                                  "input K : f16[2, 16, 64]\n"
                                  "input V : f16[2, 64, 16]\n"
                                  "S = matmul(Q, K)\n"
                                  "M = causal_mask(S)\n"
                                  "E = exp(M)\n"
                                  "D = sum(E, dim=2)\n"
                                  "P = div(E, D)\n"
                                  "O = matmul(P, V)\n"
                                  "output O\n";
  static const char *const kern = "ugraph kv\n"
                                  "input Q : f16[2, 32, 16]\n"
                                  "input K : f16[2, 16, 64]\n"
                                  "input V : f16[2, 64, 16]\n"
                                  "O = custom(grid=[2, 2, 1], block=[128, 1, 1], forloop=4) {\n"
                                  "  q = input(Q, imap=[0, 1, -1], fmap=-1)\n"
                                  "  k = input(K, imap=[0, -1, -1], fmap=2)\n"
                                  "  v = input(V, imap=[0, -1, -1], fmap=1)\n"
                                  "  s = matmul(q, k)\n"
                                  "  m = causal_mask(s, fused=1)\n"
                                  "  e = exp(m, fused=1)\n" FLASH_TAIL;
  mirs_graph *p = parse(ctx, prog), *u = parse(ctx, kern);
  mirs__plan pl;
  plan_of(ctx, u, &pl);
  ck_assert(pl.skip.on);
  ck_assert_int_eq(pl.skip.diag, 32);
  /* Row block 0 (rows 0..15) sees keys 0..47: 3 tiles; row block 1 all 4. */
  ck_assert_double_eq_tol(pl.live, 7.0 / 8.0, 1e-12);
  mirs__plan_free(&pl);
  int trials = 0;
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__verify_fingerprints(ctx, p, u, &trials, &v), MIRS_OK);
  ck_assert_msg(v.equal, "%s", v.why);
  double err = run_against(ctx, u, p, 13);
  ck_assert_msg(err <= mirs_codegen_tolerance(u), "relative error %g", err);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* The published-shape example: about half of the key tiles are loaded. */
START_TEST(test_tile_skipping_published) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/causal_attention.ugraph"), &g),
                   MIRS_OK);
  mirs__plan pl;
  plan_of(ctx, g, &pl);
  ck_assert(pl.skip.on);
  ck_assert_double_eq_tol(pl.live, 136.0 / 256.0, 1e-12);
  mirs__plan_free(&pl);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("mask");
  TCase *tc = tcase_create("mask");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_parse_errors);
  tcase_add_test(tc, test_interp_kernel_mask);
  tcase_add_test(tc, test_interp_block_mask);
  tcase_add_test(tc, test_unplaced_mask_refused);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_test(tc, test_safe_and_online);
  tcase_add_loop_test(tc, test_search_prune_same_results, 0, 3);
  tcase_add_loop_test(tc, test_search_results_run, 0, 3);
  tcase_add_test(tc, test_reduced_same_results);
  tcase_add_test(tc, test_codegen_masks);
  tcase_add_test(tc, test_tile_skipping);
  tcase_add_test(tc, test_tile_skipping_published);
  tcase_add_test(tc, test_tile_skipping_more_keys);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(suite());
}
