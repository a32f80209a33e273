/* SPDX-License-Identifier: MIT */
/* tests/check_prune.c - src/verify abstract expressions and pruning: the
 * normal form (commutation, reassociation, distribution, merged sums,
 * division rules), the expressions of kernel and block graphs, the
 * verdicts the axioms must and must not give on RMSNorm+Linear and
 * attention, the shared cache (a repeated query makes no solver call),
 * one Z3 context per worker, two threads sharing one cache, `unknown`
 * never pruning, pruning disabled, LIFO release, and no leaks. */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>

#include "graph/graph.h"
#include "testutil.h"
#include "verify/prune.h"
#include "verify/z3check.h"

/* ---------------------------------------------------------------- helpers */

/* Parse a tiny s-expression into arena a: NAME | (op args...) with ops
 * add sub mul div exp sqrt silu gelu relu neg square, (sum K x), (rms N x),
 * (matmul K x y) = (sum K (mul x y)). */
static mirs__abs_id sx_parse(mirs__abs_arena *a, const char **p) {
  while (isspace((unsigned char)**p))
    (*p)++;
  char tok[64];
  size_t n = 0;
  if (**p != '(') {
    while (**p && !isspace((unsigned char)**p) && **p != ')' && n + 1 < sizeof tok)
      tok[n++] = *(*p)++;
    tok[n] = 0;
    mirs__abs_id id;
    ck_assert_int_eq(mirs__abs_atom(a, tok, &id), MIRS_OK);
    return id;
  }
  (*p)++;
  while (**p && !isspace((unsigned char)**p) && n + 1 < sizeof tok)
    tok[n++] = *(*p)++;
  tok[n] = 0;
  long long ext = 0;
  if (!strcmp(tok, "sum") || !strcmp(tok, "rms") || !strcmp(tok, "matmul")) {
    char *end;
    ext = strtoll(*p, &end, 10);
    *p = end;
  }
  mirs__abs_id x = sx_parse(a, p), y = MIRS__ABS_NONE, r = MIRS__ABS_NONE;
  while (isspace((unsigned char)**p))
    (*p)++;
  if (**p != ')')
    y = sx_parse(a, p);
  while (isspace((unsigned char)**p))
    (*p)++;
  ck_assert_int_eq(**p, ')');
  (*p)++;
  static const char *const fns[MIRS__ABS_FN_COUNT] = {
      "exp", "sqrt", "silu", "gelu", "relu", "neg", "max", "causal_mask", "sigmoid", "tanh", "pow", "clamp",
      "min", "abs"};
  mirs_status s = MIRS_INTERNAL;
  if (!strcmp(tok, "add"))
    s = mirs__abs_add(a, x, y, &r);
  else if (!strcmp(tok, "sub"))
    s = mirs__abs_sub(a, x, y, &r);
  else if (!strcmp(tok, "mul"))
    s = mirs__abs_mul(a, x, y, &r);
  else if (!strcmp(tok, "div"))
    s = mirs__abs_div(a, x, y, &r);
  else if (!strcmp(tok, "square"))
    s = mirs__abs_apply(a, MIRS_OP_SQUARE, &x, 0, &r);
  else if (!strcmp(tok, "sum"))
    s = mirs__abs_sum(a, ext, x, &r);
  else if (!strcmp(tok, "rms"))
    s = mirs__abs_rms(a, ext, x, &r);
  else if (!strcmp(tok, "matmul"))
    s = mirs__abs_apply(a, MIRS_OP_MATMUL, (mirs__abs_id[]){x, y}, ext, &r);
  else
    for (int i = 0; i < MIRS__ABS_FN_COUNT; i++)
      if (!strcmp(tok, fns[i]))
        s = mirs__abs_app(a, (mirs__abs_fn)i, x, &r);
  ck_assert_msg(s == MIRS_OK, "building %s failed", tok);
  return r;
}

/* The expression written as an s-expression. */
static mirs__abs_id E(mirs__abs_arena *a, const char *text) {
  const char *p = text;
  return sx_parse(a, &p);
}

/* Parse a .graph program. */
static mirs_graph *program(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, text, strlen(text), "test.graph", &g), MIRS_OK);
  return g;
}

/* Prune verdict for the s-expression text: true = kept. */
static bool keeps(mirs__prune_worker *w, const char *text) {
  bool keep = false;
  mirs__abs_id e = E(mirs__prune_worker_arena(w), text);
  ck_assert_int_eq(mirs__prune_check(w, e, &keep), MIRS_OK);
  return keep;
}

#define KEEP(w, t) ck_assert_msg(keeps((w), (t)), "should keep %s", (t))
#define PRUNE(w, t) ck_assert_msg(!keeps((w), (t)), "should prune %s", (t))

static const char *const RMSNORM = "program rmsnorm_linear\n"
                                   "input X : f16[16, 40]\n"
                                   "input W : f16[40, 16]\n"
                                   "N = rms_norm(X)\n"
                                   "O = matmul(N, W)\n"
                                   "output O\n";

static const char *const ATTENTION = "program attention\n"
                                     "input Q : f16[16, 8]\n"
                                     "input K : f16[8, 32]\n"
                                     "input V : f16[32, 8]\n"
                                     "S = matmul(Q, K)\n"
                                     "E = exp(S)\n"
                                     "D = sum(E, dim=1)\n"
                                     "P = div(E, D)\n"
                                     "O = matmul(P, V)\n"
                                     "output O\n";

/* x / (A·C + A·D): a boxed denominator the syntax cannot see into. */
static const char *const BOXED = "program boxed\n"
                                 "input X : f16[8, 8]\n"
                                 "input A : f16[8, 8]\n"
                                 "input C : f16[8, 8]\n"
                                 "input D : f16[8, 8]\n"
                                 "AC = mul(A, C)\n"
                                 "AD = mul(A, D)\n"
                                 "T = add(AC, AD)\n"
                                 "O = div(X, T)\n"
                                 "output O\n";

/* x / (A·A + C): A·C is no subexpression, and only weights other than 0
 * and 1 show it (w_A = 1, w_C = 1.5 weigh A·C 2.5, the target 2). */
static const char *const BOXED_SQUARE = "program boxed_square\n"
                                        "input X : f16[8, 8]\n"
                                        "input A : f16[8, 8]\n"
                                        "input C : f16[8, 8]\n"
                                        "AA = mul(A, A)\n"
                                        "T = add(AA, C)\n"
                                        "O = div(X, T)\n"
                                        "output O\n";

/* The default configuration with pruning and the solver as given. */
static mirs__prune_config config(bool enabled, bool use_solver) {
  mirs__prune_config cfg;
  mirs__prune_config_default(&cfg);
  cfg.enabled = enabled;
  cfg.use_solver = use_solver;
  return cfg;
}

/* Shared state and one worker for program text. */
static void setup(mirs_context *ctx, const char *text, const mirs__prune_config *cfg,
                  mirs__prune_shared **sh, mirs__prune_worker **w) {
  mirs_graph *g = program(ctx, text);
  ck_assert_int_eq(mirs__prune_shared_new(ctx, g, cfg, sh), MIRS_OK);
  mirs_graph_destroy(g);
  ck_assert_int_eq(mirs__prune_worker_new(*sh, w), MIRS_OK);
}

/* Free worker, shared state and context, asserting nothing leaked. */
static void teardown(mirs_context *ctx, mirs__prune_shared *sh, mirs__prune_worker *w) {
  mirs__prune_worker_free(w);
  mirs__prune_shared_free(sh);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}

/* Print a worker's counters (the numbers the report quotes). */
static void show(const char *name, const mirs__prune_worker *w) {
  const mirs__prune_counters *c = mirs__prune_worker_counters(w);
  printf("%-10s calls %llu kept %llu pruned %llu syntactic %llu (yes %llu no %llu) "
         "cache %llu/%llu solver %llu (unsat %llu sat %llu unknown %llu) %.4f s contexts %llu\n",
         name, (unsigned long long)c->calls, (unsigned long long)c->kept,
         (unsigned long long)c->pruned, (unsigned long long)c->syntactic,
         (unsigned long long)c->syntactic_yes, (unsigned long long)c->syntactic_no,
         (unsigned long long)c->cache_hits, (unsigned long long)c->cache_misses,
         (unsigned long long)c->solver_calls, (unsigned long long)c->solver_unsat,
         (unsigned long long)c->solver_sat, (unsigned long long)c->solver_unknown,
         c->solver_seconds, (unsigned long long)c->solver_contexts);
}

/* ---------------------------------------------------------------- normal form */

START_TEST(test_normal_form) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__abs_arena a;
  ck_assert_int_eq(mirs__abs_arena_init(&a, ctx), MIRS_OK);
#define SAME(x, y) ck_assert_msg(E(&a, x) == E(&a, y), "%s != %s", x, y)
#define DIFF(x, y) ck_assert_msg(E(&a, x) != E(&a, y), "%s == %s", x, y)
  SAME("(add X W)", "(add W X)");
  SAME("(mul (mul X W) Y)", "(mul X (mul Y W))");
  SAME("(add (add X (mul W Y)) Z)", "(add (mul Y W) (add Z X))");
  SAME("(sum 4 (sum 10 X))", "(sum 40 X)"); /* nested sums merge */
  SAME("(sum 1 X)", "X");
  SAME("(sum 5 (mul X W))", "(mul (sum 5 X) W)"); /* sums commute with · */
  SAME("(mul (sum 2 X) (sum 3 W))", "(sum 6 (mul X W))");
  SAME("(sum 3 (add X W))", "(add (sum 3 X) (sum 3 W))");
  SAME("(mul (add X W) Y)", "(add (mul X Y) (mul W Y))"); /* distributivity */
  SAME("(mul (div X W) Y)", "(div (mul X Y) W)");         /* (a/b)·c = (a·c)/b */
  SAME("(div X (mul W Y))", "(div (div X W) Y)");         /* a/(b·c) = (a/b)/c */
  SAME("(add (div X Z) (div W Z))", "(div (add X W) Z)");
  SAME("(sum 4 (div X W))", "(div (sum 4 X) W)");
  SAME("(div X (sum 8 (mul W Y)))", "(div (div X (sum 2 W)) (sum 4 Y))");
  SAME("(square X)", "(mul X X)");
  SAME("(sub X W)", "(add (neg W) X)");
  SAME("(exp (add X W))", "(exp (add W X))");
  SAME("(matmul 8 X W)", "(sum 8 (mul W X))");
  DIFF("(sum 4 X)", "(sum 8 X)");
  DIFF("(div X W)", "(div W X)");
  DIFF("(add X X)", "(sum 2 X)"); /* no such axiom */
  DIFF("(exp X)", "(sqrt X)");
  DIFF("(rms 4 X)", "(rms 8 X)");

  /* Hashes are arena independent. */
  mirs__abs_arena b;
  ck_assert_int_eq(mirs__abs_arena_init(&b, ctx), MIRS_OK);
  ck_assert_int_eq(mirs__abs_hash(&a, E(&a, "(div (mul X W) (rms 4 (add X W)))")),
                   mirs__abs_hash(&b, E(&b, "(mul W (div X (rms 4 (add W X))))")));

  /* Printing. */
  mirs__buf buf;
  mirs__buf_init(&buf, ctx);
  mirs__abs_print(&a, E(&a, "(div (sum 4 (mul X W)) (rms 8 X))"), &buf);
  ck_assert_ptr_nonnull(strstr(buf.data, "rms(8, X)"));
  ck_assert_ptr_nonnull(strstr(buf.data, "sum(4, "));
  mirs__buf_free(&buf);

  /* LIFO release: ids before the mark stay, later ones are rebuilt equal. */
  mirs__abs_id keep = E(&a, "(exp X)");
  mirs__abs_mark m = mirs__abs_mark_get(&a);
  mirs__abs_id fresh = E(&a, "(sqrt (add (sum 3 Q) R))");
  uint64_t h = mirs__abs_hash(&a, fresh);
  mirs__abs_release(&a, m);
  ck_assert_int_eq(a.nn, m.nn);
  ck_assert_int_eq(E(&a, "(exp X)"), keep);
  mirs__abs_id again = E(&a, "(sqrt (add R (sum 3 Q)))");
  ck_assert_uint_eq(mirs__abs_hash(&a, again), h);
  ck_assert_int_eq(again, fresh);

  mirs__abs_arena_free(&b);
  mirs__abs_arena_free(&a);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
#undef SAME
#undef DIFF
}
END_TEST

/* ---------------------------------------------------------------- RMSNorm + Linear */

START_TEST(test_rmsnorm_linear) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, RMSNORM, NULL, &sh, &w);
  ck_assert_int_eq(mirs__prune_num_targets(sh), 1);
  KEEP(w, "(matmul 40 X W)");
  KEEP(w, "(matmul 10 X W)");         /* a tile matmul inside a forloop of 4 */
  KEEP(w, "(sum 4 (matmul 10 X W))"); /* its accumulation */
  KEEP(w, "(rms 40 X)");
  KEEP(w, "(div (matmul 40 X W) (rms 40 X))");
  KEEP(w, "(div X (rms 40 X))");
  KEEP(w, "(mul X W)");
  KEEP(w, "X");
  PRUNE(w, "(matmul 16 W X)"); /* matmul(W, X): contracted over 16, not 40 */
  PRUNE(w, "(exp X)");
  PRUNE(w, "(sqrt X)");
  PRUNE(w, "(sqrt (matmul 40 X W))");
  PRUNE(w, "(add X W)");
  PRUNE(w, "(rms 16 X)");
  PRUNE(w, "(rms 40 W)");
  KEEP(w, "(div W (rms 40 X))"); /* (X·W)/r = X·(W/r) */
  PRUNE(w, "(div X W)");
  PRUNE(w, "(div (matmul 40 X W) (rms 40 W))");
  show("rmsnorm", w);
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->solver_calls, 0);
  teardown(ctx, sh, w);
}
END_TEST

/* A division by a quotient or by a sum (a boxed denominator) is an
 * invariant symbol: junk such as X / (X / rms) is refuted by the syntax
 * against a target that has no such division, while equal writings agree
 * on it and a target that has one keeps the question open. */
START_TEST(test_quotient_divisors) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_config cfg = config(true, false);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, RMSNORM, &cfg, &sh, &w);
  mirs__abs_arena *a = mirs__prune_worker_arena(w);
  /* x/(y·z) = (x/y)/z: a quotient divisor on both sides or on neither */
  uint32_t b1 = mirs__abs_node_at(a, E(a, "(div A (mul (div B C) D))"))->bits;
  uint32_t b2 = mirs__abs_node_at(a, E(a, "(div (div A (div B C)) D)"))->bits;
  ck_assert(b1 & MIRS__ABS_BIT_QDIV);
  ck_assert_uint_eq(b1, b2);
  ck_assert(!(mirs__abs_node_at(a, E(a, "(div (div A B) C)"))->bits & MIRS__ABS_BIT_QDIV));
  ck_assert(!(mirs__abs_node_at(a, E(a, "(div A (sum 4 B))"))->bits & MIRS__ABS_BIT_QDIV));
  ck_assert(mirs__abs_node_at(a, E(a, "(div A (add B C))"))->bits & MIRS__ABS_BIT_QDIV);
  /* x·(y/z) = (x·y)/z and sum(i, x/y) = sum(i, x)/y keep the divisor */
  ck_assert_uint_eq(mirs__abs_node_at(a, E(a, "(mul A (div B (div C D)))"))->bits,
                    mirs__abs_node_at(a, E(a, "(div (mul A B) (div C D))"))->bits);
  ck_assert_uint_eq(mirs__abs_node_at(a, E(a, "(sum 4 (div A (add B C)))"))->bits,
                    mirs__abs_node_at(a, E(a, "(div (sum 4 A) (add B C))"))->bits);
  /* it reaches through applications */
  ck_assert(mirs__abs_node_at(a, E(a, "(exp (div A (div B C)))"))->bits & MIRS__ABS_BIT_QDIV);
  PRUNE(w, "(div X (div X (rms 40 X)))");
  PRUNE(w, "(div (matmul 40 X W) (div (matmul 40 X W) (rms 40 X)))");
  PRUNE(w, "(rms 40 (div X (div X (rms 40 X))))");
  PRUNE(w, "(div W (mul W (div (sum 40 X) (rms 40 X))))");
  KEEP(w, "(div (matmul 40 X W) (rms 40 X))");
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->solver_calls, 0);
  mirs__prune_worker_free(w);
  mirs__prune_shared_free(sh);
  /* a target that divides by a sum: the QDIV bit leaves the question
   * open, and the unit weight model K = 2, w_C = 1 closes it (X/(A/C)
   * weighs 4, X/(A·C + A·D) 2), with the solver off */
  setup(ctx, BOXED, &cfg, &sh, &w);
  PRUNE(w, "(div X (div A C))");
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->weight_refuted, 1);
  KEEP(w, "(div X (add (mul A C) (mul A D)))");
  teardown(ctx, sh, w);
}
END_TEST

/* The expressions of a custom kernel computing RMSNorm+Linear in one
 * block graph equal the reference's. */
START_TEST(test_block_graph_expr) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, RMSNORM, NULL, &sh, &w);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "ugraph", &g), MIRS_OK);
  mirs__shape xs = {.ndim = 2, .d = {16, 40}}, ws = {.ndim = 2, .d = {40, 16}};
  int32_t X, W, first;
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &xs, &X), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "W", MIRS_F16, &ws, &W), MIRS_OK);
  mirs__bgraph *bg;
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, (int32_t[]){128, 1, 1}, 4, &bg),
                   MIRS_OK);
  int32_t x, wt, y, acc, r, o;
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){-1, -1, -1}, 1, &x), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "w", W, (int32_t[]){-1, -1, -1}, 0, &wt), MIRS_OK);
  ck_assert_int_eq(
      mirs__bg_add_op(g, bg, "y", MIRS_OP_MATMUL, 2, (int32_t[]){x, wt}, -1, false, &y), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "a", MIRS_OP_ACCUM, 1, &y, -1, false, &acc), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "r", MIRS_OP_ACCUM_RMS, 1, &x, -1, false, &r), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "o", MIRS_OP_DIV, 2, (int32_t[]){acc, r}, -1, false, &o),
                   MIRS_OK);

  /* Incrementally, op by op, as the search does; each op is kept. */
  mirs__abs_arena *a = mirs__prune_worker_arena(w);
  mirs__abs_id kexpr[8], bexpr[8];
  ck_assert_int_eq(mirs__abs_atom(a, "X", &kexpr[X]), MIRS_OK);
  ck_assert_int_eq(mirs__abs_atom(a, "W", &kexpr[W]), MIRS_OK);
  for (int32_t i = 0; i < bg->nops; i++) {
    ck_assert_int_eq(mirs__abs_bop(a, bg, i, kexpr, bexpr), MIRS_OK);
    bool keep = false;
    ck_assert_int_eq(mirs__prune_check(w, bexpr[bg->ops[i].out], &keep), MIRS_OK);
    ck_assert_msg(keep, "block op %d pruned", i);
  }
  ck_assert_int_eq(mirs__abs_hash(a, bexpr[y]), mirs__abs_hash(a, E(a, "(matmul 10 X W)")));
  ck_assert_int_eq(mirs__abs_hash(a, bexpr[r]), mirs__abs_hash(a, E(a, "(rms 40 X)")));

  ck_assert_int_eq(mirs__bg_add_output(g, bg, o, (int32_t[]){-1, -1, -1}), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_custom(g, bg, (const char *const[]){"O"}, &first), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, first), MIRS_OK);
  mirs__abs_id all[8];
  ck_assert_int_eq(mirs__abs_graph(a, g, all), MIRS_OK);
  const mirs__abs_arena *ta = mirs__prune_target_arena(sh);
  ck_assert_uint_eq(mirs__abs_hash(a, all[first]), mirs__abs_hash(ta, mirs__prune_target(sh, 0)));
  mirs__graph_free(g);
  teardown(ctx, sh, w);
}
END_TEST

/* ---------------------------------------------------------------- attention */

START_TEST(test_attention) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, ATTENTION, NULL, &sh, &w);
  KEEP(w, "(matmul 8 Q K)");
  KEEP(w, "(exp (matmul 8 Q K))");
  KEEP(w, "(matmul 32 (exp (matmul 8 Q K)) V)");
  KEEP(w, "(matmul 8 (exp (matmul 8 Q K)) V)"); /* a tile of it */
  KEEP(w, "(sum 32 (exp (matmul 8 Q K)))");     /* the accumulated sum of exp */
  KEEP(w, "(sum 4 (sum 8 (exp (matmul 8 Q K))))");
  KEEP(w, "(div (exp (matmul 8 Q K)) (sum 32 (exp (matmul 8 Q K))))");
  KEEP(w, "(div (matmul 32 (exp (matmul 8 Q K)) V) (sum 32 (exp (matmul 8 Q K))))");
  KEEP(w, "(mul (exp (matmul 8 Q K)) V)");
  PRUNE(w, "(matmul 8 Q V)");
  PRUNE(w, "(exp Q)");
  PRUNE(w, "(exp (matmul 8 Q V))");
  PRUNE(w, "(sqrt (matmul 8 Q K))");
  PRUNE(w, "(add Q K)");
  PRUNE(w, "(matmul 32 Q K)");
  PRUNE(w, "(exp (exp (matmul 8 Q K)))");
  PRUNE(w, "(mul (matmul 8 Q K) V)"); /* V never meets S outside exp */
  /* the sum over the exp: no axiom splits sum(32, E) into a sum and E */
  PRUNE(w, "(div (sum 32 (exp (matmul 8 Q K))) (exp (matmul 8 Q K)))");
  PRUNE(w, "(div (exp (matmul 8 Q K)) (sum 8 (exp (matmul 8 Q K))))"); /* a partial sum */
  KEEP(w, "(div (sum 32 (exp (matmul 8 Q K))) (sum 32 (exp (matmul 8 Q K))))");
  KEEP(w, "(div (sum 8 (exp (matmul 8 Q K))) (sum 32 (exp (matmul 8 Q K))))");
  show("attention", w);
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->solver_calls, 0);
  teardown(ctx, sh, w);
}
END_TEST

/* Sums of terms: a common cofactor makes a sub-sum a subexpression. */
START_TEST(test_sums) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx,
        "input X : f16[8, 8]\ninput Y : f16[8, 8]\ninput Z : f16[8, 8]\n"
        "A = add(X, Y)\nB = mul(A, Z)\nO = silu(B)\noutput O\n",
        NULL, &sh, &w);
  KEEP(w, "(add X Y)");
  KEEP(w, "(mul Z (add Y X))");
  KEEP(w, "(add (mul X Z) (mul Y Z))");
  KEEP(w, "(mul X Z)");
  KEEP(w, "(silu (add (mul X Z) (mul Z Y)))");
  PRUNE(w, "(silu (mul X Z))");
  PRUNE(w, "(add X Z)");
  PRUNE(w, "(mul X Y)");
  PRUNE(w, "(div X Z)");
  show("sums", w);
  teardown(ctx, sh, w);
}
END_TEST

/* ---------------------------------------------------------------- solver, cache */

START_TEST(test_cache_and_solver) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, BOXED, NULL, &sh, &w);
  const mirs__prune_counters *c = mirs__prune_worker_counters(w);
  KEEP(w, "(div X (add (mul A C) (mul A D)))"); /* the target itself: syntactic */
  ck_assert_uint_eq(c->solver_calls, 0);
  ck_assert_uint_eq(c->solver_contexts, 0); /* no context until needed */
  /* x/a ⊑ x/(a·c + a·d) needs factoring the denominator: only Z3 sees it */
  KEEP(w, "(div X A)");
  ck_assert_uint_eq(c->solver_calls, 1);
  ck_assert_uint_eq(c->solver_unsat, 1);
  ck_assert_uint_eq(c->cache_misses, 1);
  KEEP(w, "(div X A)");
  ck_assert_uint_eq(c->solver_calls, 1); /* a cache hit, no solver call */
  ck_assert_uint_eq(c->cache_hits, 1);
  KEEP(w, "(div X (add C D))");
  ck_assert_uint_eq(c->solver_sat, 0);
  /* Syntactic refutations still work around boxes. */
  PRUNE(w, "(exp X)");
  PRUNE(w, "(sum 4 X)");
  ck_assert_uint_eq(c->solver_contexts, 1); /* one context for all queries */
  ck_assert_uint_eq(c->solver_calls, 2);
  show("boxed", w);
  teardown(ctx, sh, w);
}
END_TEST

/* What only Z3 refutes: A·C against X / (A·A + C) needs weights other
 * than 0 and 1.  The refutation is cached; without the solver the op is
 * kept. */
START_TEST(test_solver_refutes) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, BOXED_SQUARE, NULL, &sh, &w);
  const mirs__prune_counters *c = mirs__prune_worker_counters(w);
  PRUNE(w, "(mul A C)");
  PRUNE(w, "(mul A C)");
  ck_assert_uint_eq(c->weight_refuted, 0);
  ck_assert_uint_eq(c->solver_calls, 1);
  ck_assert_uint_eq(c->solver_sat, 1);
  ck_assert_uint_eq(c->cache_hits, 1);
  KEEP(w, "(mul A A)");
  KEEP(w, "(div X (add (mul A A) C))");
  show("solver", w);
  mirs__prune_worker_free(w);
  mirs__prune_shared_free(sh);
  mirs__prune_config cfg = config(true, false);
  setup(ctx, BOXED_SQUARE, &cfg, &sh, &w);
  KEEP(w, "(mul A C)");
  teardown(ctx, sh, w);
}
END_TEST

/* A solver that gives up (resource limit 1) never prunes. */
START_TEST(test_unknown_keeps) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, BOXED, NULL, &sh, &w);
  mirs__prune_worker_set_limits(w, 1, 1);
  const mirs__prune_counters *c = mirs__prune_worker_counters(w);
  KEEP(w, "(div X A)");
  KEEP(w, "(div A (add C D))");
  KEEP(w, "(div X (add C D))");
  ck_assert_uint_eq(c->solver_calls, 3);
  ck_assert_uint_eq(c->solver_unknown, 3);
  ck_assert_uint_eq(c->pruned, 0);
  KEEP(w, "(div X A)"); /* cached as unknown: kept, not asked again */
  ck_assert_uint_eq(c->solver_calls, 3);
  ck_assert_uint_eq(
      mirs__prune_cache_get(
          sh, mirs__prune_pair_key(
                  mirs__abs_hash(mirs__prune_worker_arena(w),
                                 E(mirs__prune_worker_arena(w), "(div X A)")),
                  mirs__abs_hash(mirs__prune_target_arena(sh), mirs__prune_target(sh, 0)))),
      MIRS__PRUNE_UNKNOWN);
  show("unknown", w);
  teardown(ctx, sh, w);
}
END_TEST

/* Pruning disabled keeps everything; the solver is never used. */
START_TEST(test_disabled) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_config cfg = config(false, true);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, ATTENTION, &cfg, &sh, &w);
  KEEP(w, "(matmul 8 Q V)");
  KEEP(w, "(sqrt Q)");
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->calls, 2);
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->pruned, 0);
  teardown(ctx, sh, w);
}
END_TEST

/* Without the solver, undecided pairs that no unit weight refutes are
 * kept unasked. */
START_TEST(test_no_solver) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_config cfg = config(true, false);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, BOXED, &cfg, &sh, &w);
  KEEP(w, "(div X A)");
  PRUNE(w, "(div C X)"); /* a unit weight refutes it, solver or not */
  PRUNE(w, "(exp X)");
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->solver_calls, 0);
  ck_assert_uint_eq(mirs__prune_worker_counters(w)->solver_contexts, 0);
  teardown(ctx, sh, w);
}
END_TEST

/* ---------------------------------------------------------------- weight models */

/* Unit weight models and term counts refute what the boxed normal form
 * cannot see into: an atom squared (K = 1: weight 2 against 1), a divisor
 * moved into a numerator (K = 2, w_X = 1: C / X weighs 2, X / (A·C + A·D)
 * 1), and a sum of more terms than the target has. */
START_TEST(test_weights) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__prune_shared *sh;
  mirs__prune_worker *w;
  setup(ctx, BOXED, NULL, &sh, &w);
  const mirs__prune_counters *c = mirs__prune_worker_counters(w);
  PRUNE(w, "(mul X X)");
  PRUNE(w, "(mul C C)");
  PRUNE(w, "(div C X)");
  PRUNE(w, "(div D (mul A X))");
  PRUNE(w, "(mul C D)");         /* two units: w_C = w_D = 1 weigh it 2, the target 1 */
  PRUNE(w, "(add X (add X X))"); /* term counts: 3 against 2 */
  ck_assert_uint_eq(c->weight_refuted, 6);
  ck_assert_uint_eq(c->solver_calls, 0);
  /* True subexpressions are never refuted. */
  KEEP(w, "(div X A)");
  KEEP(w, "(div X (add C D))");
  KEEP(w, "(add C D)");
  KEEP(w, "(mul A (add C D))");
  KEEP(w, "(div (div X A) (add C D))");
  ck_assert_uint_eq(c->solver_sat, 0);
  show("weights", w);
  teardown(ctx, sh, w);
}
END_TEST

/* A random expression over atoms X, A, C, D of depth <= d, written into
 * buf; the text of each subterm goes to subs (count *ns). */
static void random_expr(uint64_t *rng, int d, char *buf, size_t cap, char subs[][512], int *ns) {
  static const char *const atoms[] = {"X", "A", "C", "D"};
  *rng = *rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
  unsigned r = (unsigned)(*rng >> 33);
  if (d == 0 || r % 5 == 0) {
    snprintf(buf, cap, "%s", atoms[r / 5 % 4]);
  } else {
    char a[512], b[512];
    random_expr(rng, d - 1, a, sizeof a, subs, ns);
    static const char *const bin[] = {"add", "mul", "div", "sub"};
    static const char *const un[] = {"exp", "sqrt", "neg"};
    switch (r / 5 % 6) {
    case 0:
    case 1:
    case 2:
      random_expr(rng, d - 1, b, sizeof b, subs, ns);
      snprintf(buf, cap, "(%s %s %s)", bin[r / 30 % 4], a, b);
      break;
    case 3:
      snprintf(buf, cap, "(%s %s)", un[r / 30 % 3], a);
      break;
    case 4:
      snprintf(buf, cap, "(sum %u %s)", 1u << (r / 30 % 4), a);
      break;
    default:
      snprintf(buf, cap, "(rms %u %s)", 2u << (r / 30 % 2), a);
      break;
    }
  }
  if (*ns < 64 && strlen(buf) < 512)
    snprintf(subs[(*ns)++], 512, "%s", buf);
}

/* Soundness of both refuters: no subterm of a random expression is ever
 * refuted against it, by a unit weight or by Z3's countermodel search
 * (each subterm is a subexpression by the axiom argument ⊑ application). */
START_TEST(test_refuters_sound) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__abs_arena a;
  ck_assert_int_eq(mirs__abs_arena_init(&a, ctx), MIRS_OK);
  mirs__z3_solver *z;
  ck_assert_int_eq(mirs__z3_new(ctx, 0, 0, &z), MIRS_OK);
  uint64_t rng = 20261124;
  int checked = 0, refuted_other = 0;
  for (int round = 0; round < 150; round++) {
    static char subs[64][512];
    char text[4096];
    int ns = 0;
    random_expr(&rng, 4, text, sizeof text, subs, &ns);
    mirs__abs_id t = E(&a, text);
    for (int k = 0; k < ns; k++) {
      mirs__abs_id e = E(&a, subs[k]);
      ck_assert_msg(!mirs__prune_weights_refute(&a, e, &a, t), "weights refute %s in %s", subs[k],
                    text);
      mirs__z3_answer ans;
      ck_assert_int_eq(mirs__z3_refute(z, &a, e, &a, t, &ans), MIRS_OK);
      ck_assert_msg(ans != MIRS__Z3_SAT, "z3 refutes %s in %s", subs[k], text);
      checked++;
      /* The other way round a strict subterm is refuted now and then
       * (the refuters are not vacuous). */
      if (mirs__abs_hash(&a, e) != mirs__abs_hash(&a, t)) {
        ck_assert_int_eq(mirs__z3_refute(z, &a, t, &a, e, &ans), MIRS_OK);
        refuted_other += ans == MIRS__Z3_SAT;
      }
    }
  }
  ck_assert_int_gt(checked, 300);
  ck_assert_int_gt(refuted_other, 100);
  mirs__z3_free(z);
  mirs__abs_arena_free(&a);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- threads */

static const char *const THREAD_QUERIES[] = {
    "(div X A)",         "(div C X)",         "(div X (add C D))", "(exp X)",
    "(div A (add C D))", "(add (mul A C) X)", "(mul A C)",         "(div (mul X C) A)",
    "(sqrt X)",          "(div D X)",         "(add A D)",         "(div X (mul A C))",
};
#define NQ (sizeof THREAD_QUERIES / sizeof *THREAD_QUERIES)

typedef struct thread_arg {
  mirs__prune_shared *sh;
  bool verdict[NQ];
  mirs_status status;
  mirs__prune_counters counters;
} thread_arg;

/* One worker asking every query, twice, in its own order. */
static void *thread_main(void *p) {
  thread_arg *t = p;
  mirs__prune_worker *w;
  t->status = mirs__prune_worker_new(t->sh, &w);
  if (t->status != MIRS_OK)
    return NULL;
  for (int rep = 0; rep < 2 && t->status == MIRS_OK; rep++)
    for (size_t i = 0; i < NQ && t->status == MIRS_OK; i++) {
      const char *q = THREAD_QUERIES[i];
      const char *pp = q;
      mirs__abs_id e = sx_parse(mirs__prune_worker_arena(w), &pp);
      t->status = mirs__prune_check(w, e, &t->verdict[i]);
    }
  t->counters = *mirs__prune_worker_counters(w);
  mirs__prune_worker_free(w);
  return NULL;
}

START_TEST(test_threads) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = program(ctx, BOXED);
  /* The reference: one thread on its own cache. */
  mirs__prune_shared *sh1, *sh2;
  ck_assert_int_eq(mirs__prune_shared_new(ctx, g, NULL, &sh1), MIRS_OK);
  ck_assert_int_eq(mirs__prune_shared_new(ctx, g, NULL, &sh2), MIRS_OK);
  mirs_graph_destroy(g);
  thread_arg ref = {.sh = sh1};
  thread_main(&ref);
  ck_assert_int_eq(ref.status, MIRS_OK);
  thread_arg t[2] = {{.sh = sh2}, {.sh = sh2}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, &t[i]), 0);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  uint64_t calls = 0;
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(t[i].status, MIRS_OK);
    for (size_t q = 0; q < NQ; q++)
      ck_assert_msg(t[i].verdict[q] == ref.verdict[q], "thread %d differs on %s", i,
                    THREAD_QUERIES[q]);
    /* A worker opens its solver context lazily, at its first cache
     * miss: a thread scheduled after the other has proved everything
     * opens none. */
    ck_assert_uint_le(t[i].counters.solver_contexts, 1);
    calls += t[i].counters.solver_calls;
  }
  ck_assert_uint_ge(t[0].counters.solver_contexts + t[1].counters.solver_contexts, 1);
  /* Every solver-decided fact was proved at most once per thread, and the
   * second pass of each thread only hit the cache. */
  ck_assert_uint_le(calls, 2 * ref.counters.solver_calls);
  ck_assert_uint_ge(t[0].counters.cache_hits + t[1].counters.cache_hits,
                    2 * ref.counters.solver_calls);
  printf("threads    reference solver calls %llu, two threads together %llu\n",
         (unsigned long long)ref.counters.solver_calls, (unsigned long long)calls);
  mirs__prune_shared_free(sh1);
  mirs__prune_shared_free(sh2);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- errors */

START_TEST(test_errors) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__abs_arena a;
  ck_assert_int_eq(mirs__abs_arena_init(&a, ctx), MIRS_OK);
  mirs__abs_id x = E(&a, "X"), r;
  ck_assert_int_eq(mirs__abs_sum(&a, 0, x, &r), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__abs_sum(&a, INT64_MAX, x, &r), MIRS_OK);
  ck_assert_int_eq(mirs__abs_sum(&a, 4, r, &r), MIRS_LIMIT);
  ck_assert_int_eq(mirs__abs_apply(&a, MIRS_OP_CUSTOM, &x, 0, &r), MIRS_INVALID_ARG);
  mirs__prune_config cfg;
  mirs__prune_config_default(&cfg);
  cfg.cache_log2 = 2;
  mirs_graph *g = program(ctx, RMSNORM);
  mirs__prune_shared *sh;
  ck_assert_int_eq(mirs__prune_shared_new(ctx, g, &cfg, &sh), MIRS_INVALID_ARG);
  ck_assert_ptr_null(sh);
  /* Allocation failures while building leave nothing behind. */
  for (long n = 1; n < 40; n++) {
    mirs__core_fail_alloc_after(ctx, n);
    mirs_status s = mirs__prune_shared_new(ctx, g, NULL, &sh);
    mirs__core_fail_alloc_after(ctx, 0);
    if (s == MIRS_OK)
      mirs__prune_shared_free(sh);
    else
      ck_assert_int_eq(s, MIRS_NOMEM);
  }
  mirs_graph_destroy(g);
  mirs__abs_arena_free(&a);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *suite(void) {
  Suite *s = suite_create("prune");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_normal_form);
  tcase_add_test(tc, test_rmsnorm_linear);
  tcase_add_test(tc, test_quotient_divisors);
  tcase_add_test(tc, test_block_graph_expr);
  tcase_add_test(tc, test_attention);
  tcase_add_test(tc, test_sums);
  tcase_add_test(tc, test_cache_and_solver);
  tcase_add_test(tc, test_solver_refutes);
  tcase_add_test(tc, test_unknown_keeps);
  tcase_add_test(tc, test_disabled);
  tcase_add_test(tc, test_no_solver);
  tcase_add_test(tc, test_weights);
  tcase_add_test(tc, test_refuters_sound);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(suite());
}
