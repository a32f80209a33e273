/* tests/check_reliability.c - adversarial inputs (issue 19): verdicts that
 * must refuse rather than pass (degree sums past 2^64), work bounded from
 * any input, limits and stop requests honoured inside long operations. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "testutil.h"
#include "verify/prune.h"
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


/* A program of n chained ops: square(X) (mul(X, X) when mul) n times. */
static mirs_graph *chain_graph(mirs_context *ctx, int n, bool mul) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, "chain", &g), MIRS_OK);
  int64_t dims[2] = {8, 8};
  mirs_tensor x;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F16, 2, dims, &x), MIRS_OK);
  for (int i = 0; i < n; i++) {
    mirs_tensor in[2] = {x, x}, y;
    ck_assert_int_eq(mirs_graph_add_op(g, NULL, mul ? MIRS_OP_MUL : MIRS_OP_SQUARE, mul ? 2 : 1,
                                       in, &y),
                     MIRS_OK);
    x = y;
  }
  ck_assert_int_eq(mirs_graph_mark_output(g, x), MIRS_OK);
  return g;
}

/* X^(2^n) has 2^n factors: past MIRS__ABS_MAX_FACTORS the expression is
 * not built (MIRS__ABS_NONE, no error) and pruning keeps it. */
START_TEST(test_power_chain_bounded) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs__abs_arena a;
  ck_assert_int_eq(mirs__abs_arena_init(&a, ctx), MIRS_OK);
  mirs__abs_id e;
  ck_assert_int_eq(mirs__abs_atom(&a, "X", &e), MIRS_OK);
  int n = 0;
  while (e != MIRS__ABS_NONE && n < 40) {
    mirs__abs_id in[2] = {e, e};
    ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_SQUARE, in, 1, &e), MIRS_OK);
    n++;
  }
  ck_assert_int_eq(e, MIRS__ABS_NONE);
  ck_assert_int_eq(1 << (n - 1), MIRS__ABS_MAX_FACTORS); /* the first past the bound */
  ck_assert_int_eq(mirs_last_status(ctx), MIRS_OK);
  /* An operand without expression gives none. */
  mirs__abs_id x, in[2];
  ck_assert_int_eq(mirs__abs_atom(&a, "X", &x), MIRS_OK);
  in[0] = x;
  in[1] = MIRS__ABS_NONE;
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_ADD, in, 1, &e), MIRS_OK);
  ck_assert_int_eq(e, MIRS__ABS_NONE);
  mirs__abs_arena_free(&a);
  mirs_context_destroy(ctx);
}
END_TEST

/* A search of a 24-op chain (square, then mul(T, T)) used to build one
 * pruning query of 2^24 factors (27 min, 1.8 GB, limits ignored).  Now it
 * runs a bounded number of states quickly (no timing asserted here:
 * bench/RESULTS.md has the figures). */
START_TEST(test_power_chain_search) {
  for (int mul = 0; mul < 2; mul++) {
    tu_log log;
    mirs_context *ctx = tu_ctx(&log);
    ck_assert_int_eq(mirs_option_set(ctx, "max_states", "3000"), MIRS_OK);
    ck_assert_int_eq(mirs_option_set(ctx, "log_level", "1"), MIRS_OK);
    mirs_graph *g = chain_graph(ctx, 24, mul);
    mirs_search *s = NULL;
    ck_assert_msg(mirs_search_create(ctx, g, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
    ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
    mirs_search_stats st;
    ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
    ck_assert_uint_le(st.states_explored, 3000); /* max_states is exact */
    ck_assert_uint_gt(st.states_explored, 0);
    mirs_search_destroy(s);
    mirs_graph_destroy(g);
    mirs_context_destroy(ctx);
  }
}
END_TEST

/* Parse text; returns the status (the graph, if any, destroyed). */
static mirs_status parse_status(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  mirs_status st = mirs_graph_parse_string(ctx, text, strlen(text), "t.ugraph", &g);
  mirs_graph_destroy(g);
  return st;
}

/* Launch dims past CUDA's limits, a loop that walks nothing, a launch of
 * more than 2^32 block iterations, and an output dim past INT64_MAX are
 * refused when the graph is read (they used to be accepted, and eval ran
 * for hours or the block-size product overflowed). */
START_TEST(test_launch_limits) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  const char *head = "ugraph t\ninput X : f32[4, 4]\nO = custom(";
#define BODY                                                                 \
  ") {\n  x = input(X, imap=[-1, -1, -1], fmap=%s)\n  a = accum(x)\n" \
  "  output(a, omap=[-1, -1, -1])\n}\noutput O\n"
  struct {
    const char *launch, *fmap, *msg;
  } cases[] = {
      {"grid=[1, 1, 1], block=[2147483647, 2147483647, 2147483647], forloop=1", "-1",
       "CUDA allows at most 1024"},
      {"grid=[1, 1, 1], block=[128, 1, 128], forloop=1", "-1", "CUDA allows at most 64"},
      {"grid=[1, 1, 1], block=[128, 1, 1], forloop=2147483647", "-1", "walks no tile"},
      {"grid=[1, 65536, 1], block=[128, 1, 1], forloop=1", "-1", "65535"},
      {"grid=[2147483647, 1, 1], block=[128, 1, 1], forloop=4", "0", "block iterations"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024], b[512];
    snprintf(b, sizeof b, BODY, cases[i].fmap);
    snprintf(text, sizeof text, "%s%s%s", head, cases[i].launch, b);
    memset(&log, 0, sizeof log);
    ck_assert_int_ne(parse_status(ctx, text), MIRS_OK);
    ck_assert_msg(strstr(log.text, cases[i].msg) != NULL, "case %zu: %s", i, log.text);
    ck_assert_msg(strstr(log.text, "t.ugraph:") != NULL, "case %zu: no FILE:LINE:COL", i);
    mirs_clear_error(ctx);
  }
  /* A replicated tile of 2^40 elements placed by a grid of 2^31 - 1 blocks. */
  const char *big = "ugraph t\ninput X : f32[1099511627776]\n"
                    "O = custom(grid=[2147483647, 1, 1], block=[128, 1, 1], forloop=1) {\n"
                    "  x = input(X, imap=[-1, -1, -1], fmap=-1)\n  a = accum(x)\n"
                    "  output(a, omap=[0, -1, -1])\n}\noutput O\n";
  ck_assert_int_ne(parse_status(ctx, big), MIRS_OK);
  mirs_context_destroy(ctx);
}
END_TEST

/* Reading /dev/zero as a program stops at the size bound. */
START_TEST(test_file_size_bound) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, "/dev/zero", &g), MIRS_LIMIT);
  ck_assert_ptr_null(g);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "not a graph file"));
  mirs_context_destroy(ctx);
}
END_TEST

/* eval and verify refuse past eval_max_work, with the option named. */
START_TEST(test_eval_work_limit) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  const char *text = "ugraph t\ninput X : f32[4096, 4]\n"
                     "O = custom(grid=[4096, 1, 1], block=[128, 1, 1], forloop=1) {\n"
                     "  x = input(X, imap=[0, -1, -1], fmap=-1)\n  e = exp(x)\n  a = accum(e)\n"
                     "  output(a, omap=[0, -1, -1])\n}\noutput O\n";
  const char *prog = "input X : f32[4096, 4]\nO = exp(X)\noutput O\n";
  mirs_graph *g = NULL, *p = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, strlen(text), "t.ugraph", &g), MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_string(ctx, prog, strlen(prog), "p.graph", &p), MIRS_OK);
  mirs_verify_result r;
  ck_assert_int_eq(mirs_verify(ctx, p, g, &r), MIRS_OK);
  ck_assert_int_eq(r.equal, 1);
  ck_assert_int_eq(mirs_option_set(ctx, "eval_max_work", "10000"), MIRS_OK);
  mirs_eval_result *e = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 1, &e), MIRS_LIMIT);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "eval_max_work"));
  mirs_clear_error(ctx);
  ck_assert_int_eq(mirs_verify(ctx, p, g, &r), MIRS_LIMIT);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "eval_max_work"));
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* verify compares dtypes: the same function with an f32 output where the
 * program has f16 is not the program. */
START_TEST(test_verify_dtypes) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  const char *a = "input X : f16[4, 4]\nO = exp(X)\noutput O\n";
  const char *b = "input X : f32[4, 4]\nO = exp(X)\noutput O\n";
  mirs_graph *ga = NULL, *gb = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, a, strlen(a), "a.graph", &ga), MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_string(ctx, b, strlen(b), "b.graph", &gb), MIRS_OK);
  mirs_verify_result r;
  ck_assert_int_eq(mirs_verify(ctx, ga, gb, &r), MIRS_OK);
  ck_assert_int_eq(r.equal, 0);
  ck_assert_ptr_nonnull(strstr(r.reason, "f16"));
  ck_assert_int_eq(mirs_verify(ctx, ga, ga, &r), MIRS_OK);
  ck_assert_int_eq(r.equal, 1);
  mirs_graph_destroy(ga);
  mirs_graph_destroy(gb);
  mirs_context_destroy(ctx);
}
END_TEST

/* Options: a leading 0 is decimal (--seed=010 is ten), 0x is hex; an empty
 * operator list is an error. */
START_TEST(test_option_values) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  int64_t v = 0;
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "010"), MIRS_OK);
  ck_assert_int_eq(mirs_option_get_int(ctx, "seed", &v), MIRS_OK);
  ck_assert_int_eq(v, 10);
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "0x10"), MIRS_OK);
  ck_assert_int_eq(mirs_option_get_int(ctx, "seed", &v), MIRS_OK);
  ck_assert_int_eq(v, 16);
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", ""), MIRS_OK); /* (checked by the search) */
  mirs_graph *g = chain_graph(ctx, 1, false);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "block_ops"));
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", " , "), MIRS_OK);
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_INVALID_ARG);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Names built through the library re-parse: longer than the parser's 256
 * bytes is refused when built. */
START_TEST(test_long_names) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  char name[300];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, name, &g), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_create(ctx, "p", &g), MIRS_OK);
  int64_t dims[1] = {4};
  mirs_tensor x;
  ck_assert_int_eq(mirs_graph_add_input(g, name, MIRS_F32, 1, dims, &x), MIRS_INVALID_ARG);
  name[256] = '\0';
  ck_assert_int_eq(mirs_graph_add_input(g, name, MIRS_F32, 1, dims, &x), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, x), MIRS_OK);
  char *text = NULL;
  ck_assert_int_eq(mirs_graph_to_string(g, &text), MIRS_OK);
  mirs_graph *back = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), "n.graph", &back) == MIRS_OK,
                "%s", log.text);
  mirs_free(ctx, text);
  mirs_graph_destroy(back);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* mirs_search_run called again from its own callback is refused.  The
 * stop poll runs on the thread that called mirs_search_run and the result
 * callback on whichever worker found the result: the status they share is
 * atomic. */
static mirs_search *reentry_search;
static _Atomic mirs_status reentry_status = MIRS_OK;
static void reentry_result(void *user, const mirs_graph *g, double cost) {
  (void)user;
  (void)g;
  (void)cost;
  if (reentry_status == MIRS_OK)
    reentry_status = mirs_search_run(reentry_search);
}
static int reentry_stop(void *user) {
  (void)user;
  if (reentry_status == MIRS_OK)
    reentry_status = mirs_search_run(reentry_search);
  return 0;
}

START_TEST(test_run_reentry) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  ck_assert_int_eq(mirs_option_set(ctx, "max_states", "2000"), MIRS_OK);
  mirs_graph *g = chain_graph(ctx, 2, false);
  ck_assert_int_eq(mirs_search_create(ctx, g, &reentry_search), MIRS_OK);
  ck_assert_int_eq(
      mirs_search_set_callbacks(reentry_search, NULL, reentry_result, reentry_stop, NULL),
      MIRS_OK);
  mirs_status st = mirs_search_run(reentry_search);
  ck_assert_int_eq(reentry_status, MIRS_INVALID_ARG);
  (void)st;
  mirs_search_destroy(reentry_search);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* --max-states is exact. */
START_TEST(test_max_states_exact) {
  for (int n = 1; n <= 3; n++) {
    tu_log log;
    mirs_context *ctx = tu_ctx(&log);
    char buf[16];
    snprintf(buf, sizeof buf, "%d", n);
    ck_assert_int_eq(mirs_option_set(ctx, "max_states", buf), MIRS_OK);
    mirs_graph *g = chain_graph(ctx, 2, false);
    mirs_search *s = NULL;
    ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
    ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
    mirs_search_stats st;
    ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
    ck_assert_uint_eq(st.states_explored, (uint64_t)n);
    mirs_search_destroy(s);
    mirs_graph_destroy(g);
    mirs_context_destroy(ctx);
  }
}
END_TEST

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A program whose search setup is expensive: fingerprints of a
 * 2048 x 2048 x 2048 matmul (minutes). */
static const char *const big_setup = "input A : f32[2048, 2048]\ninput B : f32[2048, 2048]\n"
                                     "C = matmul(A, B)\noutput C\n";

static void *interrupt_later(void *arg) {
  struct timespec ts = {0, 300000000L};
  nanosleep(&ts, NULL);
  mirs_interrupt(arg);
  return NULL;
}

/* The time limit and mirs_interrupt stop a search of a big program, setup
 * included (no timing asserted beyond a generous bound: the figures are in
 * bench/RESULTS.md). */
START_TEST(test_setup_stops) {
  for (int how = 0; how < 2; how++) {
    tu_log log;
    mirs_context *ctx = tu_ctx(&log);
    mirs_graph *g = NULL;
    ck_assert_int_eq(mirs_graph_parse_string(ctx, big_setup, strlen(big_setup), "b.graph", &g),
                     MIRS_OK);
    pthread_t th;
    if (how == 0)
      ck_assert_int_eq(mirs_option_set(ctx, "time_limit", "0.3"), MIRS_OK);
    else
      ck_assert_int_eq(pthread_create(&th, NULL, interrupt_later, ctx), 0);
    double t0 = now_s();
    mirs_search *s = NULL;
    ck_assert_msg(mirs_search_create(ctx, g, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
    /* Setup no longer fingerprints the program at full shape (that waits
     * for the final verification), so the stop may come during setup or
     * during the run: either way the whole search stops promptly, says it
     * is incomplete, and why. */
    ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
    double dt = now_s() - t0;
    ck_assert_msg(dt < 60.0, "the search took %.1f s to stop", dt);
    mirs_search_stats st;
    ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
    ck_assert_int_eq(st.complete, 0);
    ck_assert_ptr_nonnull(strstr(log.text, how == 0 ? "time limit" : "interrupted"));
    mirs_search_destroy(s);
    if (how == 1) {
      pthread_join(th, NULL);
      ck_assert(mirs_interrupted(ctx));
      mirs_interrupt_clear(ctx);
      ck_assert(!mirs_interrupted(ctx));
    }
    mirs_graph_destroy(g);
    mirs_context_destroy(ctx);
  }
}
END_TEST

/* An interrupt stops eval. */
START_TEST(test_eval_stops) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, big_setup, strlen(big_setup), "b.graph", &g),
                   MIRS_OK);
  mirs_interrupt(ctx);
  mirs_eval_result *e = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 1, &e), MIRS_STOPPED);
  mirs_interrupt_clear(ctx);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *reliability_suite(void) {
  Suite *s = suite_create("reliability");
  TCase *tc = tcase_create("verdicts");
  tcase_add_test(tc, test_degree_sum_saturates);
  tcase_add_test(tc, test_float_check_infinities);
  suite_add_tcase(s, tc);
  tc = tcase_create("bounded");
  tcase_add_test(tc, test_power_chain_bounded);
  tcase_add_test(tc, test_power_chain_search);
  tcase_add_test(tc, test_launch_limits);
  tcase_add_test(tc, test_file_size_bound);
  tcase_add_test(tc, test_eval_work_limit);
  tcase_add_test(tc, test_verify_dtypes);
  tcase_add_test(tc, test_option_values);
  tcase_add_test(tc, test_long_names);
  tcase_add_test(tc, test_run_reentry);
  tcase_add_test(tc, test_max_states_exact);
  suite_add_tcase(s, tc);
  tc = tcase_create("stops");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_setup_stops);
  tcase_add_test(tc, test_eval_stops);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(reliability_suite());
}
