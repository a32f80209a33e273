/* SPDX-License-Identifier: MIT */
/* tests/check_search.c - the search engine (src/search): STR options and
 * the search options' validation, path replay, canonical order and
 * pruning not changing the result set, rediscovery of the fused
 * RMSNorm+Linear and attention µGraphs, float64 agreement of every
 * result, determinism, and the stop limits. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "mirsearch/search.h"
#include "mirsearch/verify.h"
#include "search/search.h"
#include "testutil.h"

#include "tiny_programs.h"

/* (X W)^2, squared and as a product: the space blow-up of issue 13. */
static const char *const SQUARE_XW = "program square_xw\n"
                                     "input X : f16[2, 8]\n"
                                     "input W : f16[8, 4]\n"
                                     "M = matmul(X, W)\n"
                                     "O = square(M)\n"
                                     "output O\n";
static const char *const MUL_XW = "program mul_xw\n"
                                  "input X : f16[2, 8]\n"
                                  "input W : f16[8, 4]\n"
                                  "M = matmul(X, W)\n"
                                  "O = mul(M, M)\n"
                                  "output O\n";

/* A division by a sum, which the normal form boxes: only the weight
 * models and Z3 refute what lies under the box (Z3 alone A·C). */
static const char *const TINY_BOXED = "program tiny_boxed\n"
                                      "input X : f16[4, 8]\n"
                                      "input A : f16[4, 8]\n"
                                      "input C : f16[4, 8]\n"
                                      "AA = mul(A, A)\n"
                                      "T = add(AA, C)\n"
                                      "O = div(X, T)\n"
                                      "output O\n";

/* Run a search of text under options kv; returns it (caller destroys). */
static mirs_search *run(mirs_context *ctx, const char *text, const char *const *kv) {
  set_opts(ctx, kv);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s = NULL;
  ck_assert_msg(mirs_search_create(ctx, g, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_graph_destroy(g);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  return s;
}

/* Sorted result hashes of s into out (at most cap); returns the count. */
static int hashes(const mirs_search *s, uint64_t *out, int cap) {
  int n = mirs_search_num_results(s);
  ck_assert_int_le(n, cap);
  for (int i = 0; i < n; i++)
    out[i] = mirs_search_result_hash(s, i);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
      uint64_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* Options of a small space for the tiny programs (with the operator
 * budget, so that the searches with pruning off stay small). */
static const char *const SMALL_SPACE[] = {"grid_x", "1,2", "grid_y", "1", "grid_z", "1",
                                          "forloop_ranges", "1,2", "max_block_ops", "8",
                                          "kernel_ops", "matmul,exp,add,rms_norm",
                                          "max_kernel_ops", "3", "op_budget", "0", NULL};

/* ---------------------------------------------------------------- options */

START_TEST(test_str_options) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  char buf[MIRS__OPT_STR_SIZE];
  ck_assert_int_eq(mirs_option_get(ctx, "grid_x", buf, sizeof buf), MIRS_OK);
  ck_assert_str_eq(buf, "1,2,4,8,16,32,64,128,256,512,1024,2048,4096");
  ck_assert_int_eq(mirs_option_set(ctx, "grid-x", " 2, 4 ,8"), MIRS_OK);
  ck_assert_int_eq(mirs_option_get(ctx, "grid_x", buf, sizeof buf), MIRS_OK);
  ck_assert_str_eq(buf, " 2, 4 ,8");
  char nd[1024];
  mirs_options_nondefault(ctx, nd, sizeof nd);
  ck_assert_ptr_nonnull(strstr(nd, "grid_x= 2, 4 ,8"));
  /* Malformed lists and items out of range are refused, value kept. */
  ck_assert_int_eq(mirs_option_set(ctx, "grid_x", "1,,2"), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "grid_x"));
  ck_assert_int_eq(mirs_option_set(ctx, "grid_x", "0"), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "out of range"));
  ck_assert_int_eq(mirs_option_set(ctx, "imap_dims", "-2"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "forloop_ranges", ""), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "grid_x", "4 4"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_get(ctx, "grid_x", buf, sizeof buf), MIRS_OK);
  ck_assert_str_eq(buf, " 2, 4 ,8");
  char big[400];
  memset(big, '1', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ck_assert_int_eq(mirs_option_set(ctx, "kernel_ops", big), MIRS_INVALID_ARG);
  int64_t v;
  ck_assert_int_eq(mirs_option_get_int(ctx, "grid_x", &v), MIRS_INVALID_ARG);
  /* Help text names the list type and bounds. */
  for (size_t i = 0; i < mirs_option_count(); i++)
    if (!strcmp(mirs_option_name(i), "grid_y")) {
      mirs_option_help(i, nd, sizeof nd);
      ck_assert_ptr_nonnull(strstr(nd, "--grid-y=LIST"));
      ck_assert_ptr_nonnull(strstr(nd, "items in [1, 65535]"));
    }
  /* Operator lists are checked by the search, naming the option. */
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", "matmul,frobnicate"), MIRS_OK);
  mirs_graph *g = parse(ctx, TINY);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_INVALID_ARG);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "block_ops"));
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "frobnicate"));
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", "matmul,input"), MIRS_OK);
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", "matmul,accum"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "kernel_ops", "accum"), MIRS_OK);
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "kernel_ops", "none"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "cost_device", "Z80"), MIRS_OK);
  ck_assert_int_ne(mirs_search_create(ctx, g, &s), MIRS_OK);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- replay */

START_TEST(test_replay) {
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  mirs_graph *g = parse(ctx, TINY);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  mirs__search_worker *a, *b;
  ck_assert_int_eq(mirs__search_worker_new(s, &a), MIRS_OK);
  ck_assert_int_eq(mirs__search_worker_new(s, &b), MIRS_OK);
  uint64_t rng = 12345;
  int checked = 0;
  for (int walk = 0; walk < 60; walk++) {
    uint32_t path[32];
    int32_t len = 0;
    ck_assert_int_eq(mirs__search_replay(a, path, 0), MIRS_OK);
    for (int step = 0; step < 12 && len < 32; step++) {
      uint32_t n = a->frames[a->depth - 1].nmoves;
      if (n == 0)
        break;
      bool moved = false;
      for (int tries = 0; tries < 8 && !moved; tries++) {
        rng = rng * UINT64_C(6364136223846793005) + 1442695040888963407u;
        path[len] = (uint32_t)((rng >> 33) % n);
        if (mirs__search_replay(a, path, len + 1) == MIRS_OK)
          moved = true;
        else {
          mirs_clear_error(a->ctx); /* (a worker's errors are its own) */
          ck_assert_int_eq(mirs__search_replay(a, path, len), MIRS_OK);
        }
      }
      if (!moved)
        break;
      len++;
      uint32_t back[32];
      ck_assert_int_eq(mirs__search_path(a, back, 32), len);
      ck_assert_mem_eq(back, path, sizeof(uint32_t) * (size_t)len);
      /* Another worker, from wherever it is, rebuilds the same state. */
      ck_assert_int_eq(mirs__search_replay(b, path, len), MIRS_OK);
      ck_assert_uint_eq(mirs__search_state_hash(a), mirs__search_state_hash(b));
      ck_assert_int_eq(a->frames[a->depth - 1].nmoves, b->frames[b->depth - 1].nmoves);
      if (checked % 16 == 0) {
        /* So does a new worker, whose memo of pruning verdicts is empty:
         * the moves listed never depend on what a worker has seen. */
        mirs__search_worker *c;
        ck_assert_int_eq(mirs__search_worker_new(s, &c), MIRS_OK);
        ck_assert_int_eq(mirs__search_replay(c, path, len), MIRS_OK);
        ck_assert_uint_eq(mirs__search_state_hash(a), mirs__search_state_hash(c));
        ck_assert_int_eq(a->frames[a->depth - 1].nmoves, c->frames[c->depth - 1].nmoves);
        mirs__search_worker_free(c);
      }
      checked++;
    }
  }
  ck_assert_int_gt(checked, 100);
  /* Out-of-range indices are refused with a message. */
  uint32_t bad[1] = {1u << 30};
  ck_assert_int_eq(mirs__search_replay(a, bad, 1), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(a->ctx), "out of range"));
  mirs__search_worker_free(a);
  mirs__search_worker_free(b);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- completeness */

/* Result-hash sets of text under SMALL_SPACE, extra and (name, v1), and
 * under SMALL_SPACE, extra and (name, v2): equal, or (subset) the first a
 * non-empty subset of the second.  Returns how many more the second has. */
static int compare_sets(const char *text, const char *const *extra, const char *name,
                        const char *v1, const char *v2, bool subset) {
  static uint64_t h1[4096], h2[4096];
  mirs_context *c1 = tu_ctx(NULL), *c2 = tu_ctx(NULL);
  const char *const o1[] = {name, v1, NULL}, *const o2[] = {name, v2, NULL};
  set_opts(c1, SMALL_SPACE);
  set_opts(c2, SMALL_SPACE);
  set_opts(c1, extra);
  set_opts(c2, extra);
  mirs_search *s1 = run(c1, text, o1), *s2 = run(c2, text, o2);
  int n1 = hashes(s1, h1, 4096), n2 = hashes(s2, h2, 4096);
  mirs_search_stats st1, st2;
  mirs_search_get_stats(s1, &st1);
  mirs_search_get_stats(s2, &st2);
  ck_assert_int_eq(st1.complete, 1);
  ck_assert_int_eq(st2.complete, 1);
  ck_assert_int_gt(n1, 0);
  if (subset) {
    ck_assert_int_le(n1, n2);
    for (int i = 0, j = 0; i < n1; i++) {
      while (j < n2 && h2[j] < h1[i])
        j++;
      ck_assert_msg(j < n2 && h2[j] == h1[i], "%s=%s: result %016llx not found with %s=%s", name,
                    v1, (unsigned long long)h1[i], name, v2);
    }
  } else {
    ck_assert_msg(n1 == n2, "%s=%s: %d results, %s=%s: %d", name, v1, n1, name, v2, n2);
    ck_assert_mem_eq(h1, h2, sizeof(uint64_t) * (size_t)n1);
  }
  mirs_search_destroy(s1);
  mirs_search_destroy(s2);
  mirs_context_destroy(c1);
  mirs_context_destroy(c2);
  return n2 - n1;
}

/* Result-hash sets of text under SMALL_SPACE plus (name, value) are equal
 * to those under SMALL_SPACE plus (name, other). */
static void same_sets(const char *text, const char *name, const char *v1, const char *v2) {
  compare_sets(text, NULL, name, v1, v2, false);
}

START_TEST(test_canonical_same_results) {
  /* TINY (exp(X) + X.W) has independent ops feeding a commutative add:
   * canonical order must not fix which operand order the add gets. */
  same_sets(TINY_RMS, "canonical", "true", "false");
  same_sets(TINY, "canonical", "true", "false");
}
END_TEST

START_TEST(test_prune_same_results) {
  same_sets(TINY_RMS, "prune", "true", "false");
  /* (The node bound is part of pruning: a single last kernel must build
   * exp, both inputs and the output within max_block_ops.) */
  static const char *const sm[] = {"kernel_ops", "exp,sum,div", "max_kernel_ops", "2", NULL};
  compare_sets(TINY_SOFTMAX, sm, "prune", "true", "false", false);
  /* The kernel-level bounds: no kernel op makes the rms, so the one
   * custom kernel must (a matmul kernel op first leaves it non-last). */
  static const char *const mk[] = {"kernel_ops", "matmul,mul,div", NULL};
  compare_sets(TINY_RMS, mk, "prune", "true", "false", false);
}
END_TEST

START_TEST(test_solver_same_results) {
  /* Z3's countermodels and the unit weight models prune under the box
   * and lose no result: the sets with the solver on, with it off (unit
   * weights only) and with pruning off are equal. */
  static const char *const kv[] = {"kernel_ops", "mul,add,div", NULL};
  compare_sets(TINY_BOXED, kv, "prune_solver", "true", "false", false);
  compare_sets(TINY_BOXED, kv, "prune", "true", "false", false);
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  mirs_search *s = run(ctx, TINY_BOXED, kv);
  ck_assert_uint_gt(mirs_stat_value(ctx, MIRS__STAT_prune_weights), 0);
  ck_assert_uint_gt(mirs_stat_value(ctx, MIRS__STAT_solver_refuted), 0);
  ck_assert_uint_eq(mirs_stat_value(ctx, MIRS__STAT_solver_unknown), 0);
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_uint_gt(st.solver_calls, 0);
  ck_assert_uint_gt(st.prune_cache_hits, 0);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_grid_order_results) {
  /* Grid sizes x >= y >= z only: each graph left out is a permutation of
   * the grid axes of one kept (other hash, same function and cost). */
  static const char *const g3[] = {"grid_x", "1,2,4", "grid_y", "1,2,4", NULL};
  ck_assert_int_gt(compare_sets(TINY, g3, "grid_order", "true", "false", true), 0);
  ck_assert_int_gt(compare_sets(TINY_RMS, g3, "grid_order", "true", "false", true), 0);
}
END_TEST

START_TEST(test_final_variants) {
  /* A custom kernel that need not be last is opened twice: final (the
   * last-kernel bounds) and followed by a kernel op.  Kernel ops add
   * graphs (the softmax kernel, then a library matmul) and lose none. */
  static const char *const sm[] = {"max_kernel_ops", "2", NULL};
  ck_assert_int_gt(compare_sets(TINY_SOFTMAX, sm, "kernel_ops", "none", "matmul", true), 0);
  /* The kernels a kernel op follows take 1-D grids by default. */
  static const char *const g2[] = {"max_kernel_ops", "2", "kernel_ops", "matmul", "grid_y", "1,2",
                                   NULL};
  ck_assert_int_gt(compare_sets(TINY_SOFTMAX, g2, "mid_grid_dims", "1", "2", true), 0);
}
END_TEST

START_TEST(test_grid_dims) {
  /* Grid sizes from the program's dims (Mirage's dim / x): with 6 rows,
   * grid.x = 3 (6 / 2) joins the listed powers of two and adds graphs;
   * nothing above the largest listed size is added. */
  static const char *const t6 = "program tiny6\n"
                                "input X : f16[6, 8]\n"
                                "input W : f16[8, 8]\n"
                                "E = exp(X)\n"
                                "M = matmul(X, W)\n"
                                "Y = add(E, M)\n"
                                "output Y\n";
  static const char *const g4[] = {"grid_x", "1,2,4", NULL};
  ck_assert_int_gt(compare_sets(t6, g4, "grid_dims", "false", "true", true), 0);
  same_sets(t6, "grid_dims", "false", "true"); /* (grid_x 1,2: 3 is too large) */
  mirs__search_space sp;
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, g4);
  ck_assert_int_eq(mirs__search_space_parse(ctx, &sp), MIRS_OK);
  mirs_graph *g = parse(ctx, t6);
  mirs__search_space_dim_grids(&sp, g);
  ck_assert_int_eq(sp.ngx, 4);
  ck_assert_int_eq(sp.gx[3], 3);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_index_same_results) {
  /* Index labels refuse only ops no result needs. */
  same_sets(TINY_RMS, "index_check", "true", "false");
  same_sets(TINY, "index_check", "true", "false");
  static const char *const sm[] = {"kernel_ops", "exp,sum,div", "max_kernel_ops", "2", NULL};
  compare_sets(TINY_SOFTMAX, sm, "index_check", "true", "false", false);
}
END_TEST

START_TEST(test_index_degree) {
  /* Index multiplicities of (X W)^2: one factor of X and one of W per
   * instance of the contracted k; two through the rows and the columns. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, SQUARE_XW);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  const int8_t *x = &s->plab[0], *w = &s->plab[MIRS_MAX_DIMS];
  const mirs__search_space *sp = &s->space;
  uint64_t dx[MIRS_MAX_DIMS], dw[MIRS_MAX_DIMS], dm[MIRS_MAX_DIMS], d2[MIRS_MAX_DIMS];
  uint64_t dxx[MIRS_MAX_DIMS], dmm[MIRS_MAX_DIMS];
  int8_t lm[MIRS_MAX_DIMS], l2[MIRS_MAX_DIMS], lxx[MIRS_MAX_DIMS];
  mirs__search_input_deg(x, 0, dx);
  mirs__search_input_deg(w, 1, dw);
  mirs__search_ix xx = {x, 1, dx}, xw = {w, 2, dw};
  /* matmul(X, W): allowed; square of it: allowed (the program's output). */
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_MATMUL, -1, 2, &xx, &xw, lm, dm));
  ck_assert_uint_eq(dm[0], 0x1u);
  ck_assert_uint_eq(dm[1], 0x10u);
  mirs__search_ix xm = {lm, 3, dm};
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_SQUARE, -1, 2, &xm, &xm, l2, d2));
  ck_assert_uint_eq(d2[0], 0x2u);
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_MUL, -1, 2, &xm, &xm, l2, dmm));
  ck_assert_uint_eq(dmm[0], 0x2u);
  /* Its square again: four factors of X through the rows, no sink has as many. */
  mirs__search_ix x2 = {l2, 3, d2};
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SQUARE, -1, 2, &x2, &x2, lxx, dmm));
  /* square(X) and mul(X, X) hold x_k x_k: k must be summed, and the only
   * sum over k holds one factor of X.  With index_degree off they pass. */
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SQUARE, -1, 2, &xx, &xx, lxx, dxx));
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_MUL, -1, 2, &xx, &xx, lxx, dxx));
  ck_assert_uint_eq(dxx[1], 0x2u);
  mirs__search_space nodeg = *sp;
  nodeg.index_degree = false;
  ck_assert(mirs__search_label_rule(&nodeg, MIRS_OP_SQUARE, -1, 2, &xx, &xx, lxx, dxx));
  /* ... and the sum over k of x_k x_k w_k is refused at the reduction. */
  mirs__search_ix x3 = {lxx, 1, dxx};
  ck_assert(mirs__search_label_rule(&nodeg, MIRS_OP_MATMUL, -1, 2, &x3, &xw, lm, dm));
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_MATMUL, -1, 2, &x3, &xw, lm, dm));
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_index_degree_same_results) {
  /* The multiplicity bound loses no result: (X W)^2 in both spellings and
   * the programs with an rms and a softmax, without an operator budget
   * (which would hide the blow-up). */
  static const char *const nb[] = {"op_budget", "-1", "kernel_ops", "matmul,square,mul",
                                   "max_block_ops", "7", NULL};
  compare_sets(SQUARE_XW, nb, "index_degree", "true", "false", false);
  compare_sets(MUL_XW, nb, "index_degree", "true", "false", false);
  same_sets(TINY_RMS, "index_degree", "true", "false");
  same_sets(TINY, "index_degree", "true", "false");
  static const char *const sm[] = {"kernel_ops", "exp,sum,div", "max_kernel_ops", "2", NULL};
  compare_sets(TINY_SOFTMAX, sm, "index_degree", "true", "false", false);
}
END_TEST

START_TEST(test_reuse_kernel_ops_results) {
  /* A custom kernel that recomputes a kernel op (exp of a tile of X when
   * exp(X) is a kernel tensor) is left out: its results are a subset of
   * those with recomputation. */
  static const char *const sm[] = {"kernel_ops", "exp,sum,div,matmul", "op_budget", "-1", NULL};
  ck_assert_int_gt(compare_sets(TINY_SOFTMAX, sm, "reuse_kernel_ops", "true", "false", true), 0);
  static const char *const mk[] = {"kernel_ops", "matmul,exp,add", "op_budget", "-1", NULL};
  compare_sets(TINY, mk, "reuse_kernel_ops", "true", "false", true);
  same_sets(TINY_RMS, "reuse_kernel_ops", "true", "false");
}
END_TEST

START_TEST(test_index_labels) {
  /* The labels of a QKNorm-like program and what they refuse. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, "program q\n"
                             "input Q : f16[2, 8, 16]\ninput K : f16[2, 16, 128]\n"
                             "input V : f16[2, 128, 16]\n"
                             "nQ = rms_norm(Q)\nnV = rms_norm(V)\nA = matmul(nQ, K)\n"
                             "E = exp(A)\nS = sum(E, dim=2)\nD = div(E, S)\n"
                             "O = matmul(D, nV)\noutput O\n");
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  const int8_t *q = &s->plab[0], *k = &s->plab[MIRS_MAX_DIMS], *v = &s->plab[2 * MIRS_MAX_DIMS];
  /* batch b, rows i, head d (Q's and K's), sequence n, V's head d2. */
  int8_t b = q[0], i = q[1], d = q[2], n = k[2], d2 = v[2];
  ck_assert_int_ge(b, 0);
  ck_assert_int_eq(k[0], b);
  ck_assert_int_eq(v[0], b);
  ck_assert_int_eq(k[1], d);
  ck_assert_int_eq(v[1], n);
  ck_assert(b != i && b != d && b != n && b != d2 && i != d && i != n && d != n && d != d2 &&
            n != d2 && i != d2);
  const mirs__search_space *sp = &s->space;
  ck_assert_uint_eq(sp->reducible, (UINT64_C(1) << d) | (UINT64_C(1) << n) | (UINT64_C(1) << d2));
  const uint64_t Q = 1, K = 2, V = 4;
  /* Operands: inputs (multiplicity 1 per labelled dim), and exp(Q K) V
   * (Q and K inside exp through every dim, V once through its own). */
  uint64_t dq[MIRS_MAX_DIMS], dk[MIRS_MAX_DIMS], dv[MIRS_MAX_DIMS], de[MIRS_MAX_DIMS];
  mirs__search_input_deg(q, 0, dq);
  mirs__search_input_deg(k, 1, dk);
  mirs__search_input_deg(v, 2, dv);
  for (int e = 0; e < MIRS_MAX_DIMS; e++)
    de[e] = e < 2 ? 0xffu | dv[e] : dv[e];
  mirs__search_ix xq = {q, Q, dq}, xk = {k, K, dk}, xv = {v, V, dv}, xe = {v, Q | K | V, de};
  int8_t out[MIRS_MAX_DIMS];
  uint64_t deg[MIRS_MAX_DIMS];
  /* matmul(Q, K) contracts d, which the program contracts with Q and K. */
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_MATMUL, -1, 3, &xq, &xk, out, deg));
  ck_assert_int_eq(out[0], b);
  ck_assert_int_eq(out[1], i);
  ck_assert_int_eq(out[2], n);
  ck_assert_uint_eq(deg[0], 0x11u); /* the batch: one factor of Q and one of K */
  ck_assert_uint_eq(deg[1], 0x1u);
  ck_assert_uint_eq(deg[2], 0x10u);
  /* matmul(Q, V) would contract d with n. */
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_MATMUL, -1, 3, &xq, &xv, out, deg));
  /* A sum over the batch or the rows: never reduced by the program. */
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SUM, 0, 3, &xq, &xq, out, deg));
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SUM, 1, 3, &xq, &xq, out, deg));
  /* A sum of V over the sequence alone: every sum over n holds exp(Q K). */
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SUM, 1, 3, &xv, &xv, out, deg));
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_SUM, 1, 3, &xe, &xe, out, deg));
  ck_assert_int_eq(out[1], MIRS__LAB_NONE);
  ck_assert_uint_eq(deg[1], 0);
  /* rms over V's head is a site of V; a plain sum over it is none. */
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_RMS_NORM, -1, 3, &xv, &xv, out, deg));
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_SUM, 2, 3, &xv, &xv, out, deg));
  /* add aligns Q's head with V's: different labels. */
  ck_assert(!mirs__search_label_rule(sp, MIRS_OP_ADD, -1, 3, &xq, &xv, out, deg));
  /* V twice through n: still bounded, the program's sum over n holds
   * rms_norm(V), where V sits inside the rms through n (MIRS__DEG_INF). */
  ck_assert_uint_eq(dv[1], 0x100u);
  de[1] = 0xffu | 2u * dv[1];
  ck_assert(mirs__search_label_rule(sp, MIRS_OP_SUM, 1, 3, &xe, &xe, out, deg));
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_phase_order_same_results) {
  /* Loop body first, then accumulators: with a real loop (F > 1) every
   * graph keeps an order, so the set is unchanged. */
  static const char *const f2[] = {"forloop_ranges", "2", NULL};
  compare_sets(TINY_RMS, f2, "phase_canonical", "true", "false", false);
  compare_sets(TINY, f2, "phase_canonical", "true", "false", false);
  /* With F = 1 one placement of each graph is kept: a subset. */
  static const char *const f1[] = {"forloop_ranges", "1", NULL};
  compare_sets(TINY_RMS, f1, "phase_canonical", "true", "false", true);
  compare_sets(TINY, f1, "phase_canonical", "true", "false", true);
}
END_TEST

START_TEST(test_final_grid_same_results) {
  /* Grids that cannot place the output are never opened for a last
   * kernel; nothing is lost (grid.y as well, so the placement matters). */
  static const char *const gy[] = {"grid_y", "1,2", "grid_x", "1,2,4", NULL};
  compare_sets(TINY_RMS, gy, "final_grid", "true", "false", false);
  compare_sets(TINY, gy, "final_grid", "true", "false", false);
}
END_TEST

START_TEST(test_space_from_program) {
  /* Constants x - x and x / x are tried only when the program has one;
   * accum_rms only helps when a program output has an rms. */
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  const char *const texts[] = {TINY, TINY_RMS,
                               "input X : f16[4, 8]\nC = div(X, X)\nO = add(X, C)\noutput O\n"};
  const bool constant[] = {false, false, true}, rms[] = {false, true, false};
  for (int i = 0; i < 3; i++) {
    mirs_graph *g = parse(ctx, texts[i]);
    mirs_search *s = NULL;
    ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
    ck_assert_int_eq(s->space.constant_ops, constant[i]);
    ck_assert_int_eq(s->space.rms_useful, rms[i]);
    if (i == 2) {
      ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
      ck_assert_int_gt(mirs_search_num_results(s), 0);
    }
    mirs_search_destroy(s);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- rediscovery */

/* Asserts that the µGraph in file ugraph (examples/) is among the results
 * of program file prog searched under kv, as one kernel with a finite
 * cost; returns the result count.  (tests/check_examples.c evaluates
 * every result of every small example in float64.) */
static int find_example(const char *prog, const char *ugraph, const char *const *kv) {
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, kv);
  mirs_graph *p = NULL, *u = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src(prog), &p), MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src(ugraph), &u), MIRS_OK);
  uint64_t want = mirs_graph_hash(u);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  int n = mirs_search_num_results(s), at = -1;
  for (int i = 0; i < n; i++)
    if (mirs_search_result_hash(s, i) == want)
      at = i;
  ck_assert_msg(at >= 0, "%s not among the %d results for %s", ugraph, n, prog);
  ck_assert_int_eq(mirs_search_result_kernels(s, at), 1);
  ck_assert(isfinite(mirs_search_result_cost(s, at)));
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
  return n;
}

/* ---------------------------------------------------------------- reduced instances */

/* Mid-size programs whose searches complete both with full-shape
 * fingerprints of every state and on reduced instances. */
static const char *const MID_RMS = "program mid_rms\n"
                                   "input X : f16[4, 64]\n"
                                   "input W : f16[64, 32]\n"
                                   "D = rms_norm(X)\n"
                                   "O = matmul(D, W)\n"
                                   "output O\n";
static const char *const MID_ATTN = "program mid_attn\n"
                                    "input Q : f16[2, 8, 32]\n"
                                    "input K : f16[2, 32, 64]\n"
                                    "input V : f16[2, 64, 16]\n"
                                    "A = matmul(Q, K)\n"
                                    "E = exp(A)\n"
                                    "S = sum(E, dim=2)\n"
                                    "D = div(E, S)\n"
                                    "O = matmul(D, V)\n"
                                    "output O\n";

/* The result sets of the old path (fp_reduce off: every state
 * fingerprinted at full shape) and the reduced instances (every extent
 * above 2 shrunk, results verified at full shape) are equal, and the
 * reduced run did fingerprint on reduced instances. */
static void same_reduced(const char *text, const char *const *space) {
  static const char *const kv[] = {"fp_reduce_min_elements", "0", "fp_reduce_tile", "2",
                                   "fp_reduce_parts", "2", "verify_full_max", "-1", NULL};
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  set_opts(ctx, space);
  mirs_search *s = run(ctx, text, kv);
  ck_assert_uint_gt(s->stats.v[MIRS__STAT_fp_reduced], 0);
  ck_assert_uint_eq(s->stats.v[MIRS__STAT_full_unverified], 0);
  ck_assert_uint_gt(s->stats.v[MIRS__STAT_full_verified], 0);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
  const char *const both[] = {"fp_reduce_min_elements", "0", "fp_reduce_tile", "2",
                              "fp_reduce_parts", "2", "verify_full_max", "-1", space[0], space[1], space[2], space[3],
                              space[4], space[5], NULL};
  compare_sets(text, both, "fp_reduce", "true", "false", false);
}

START_TEST(test_reduced_same_results) {
  static const char *const rms[] = {"grid_x", "1,2,4", "forloop_ranges", "1,4,8",
                                    "kernel_ops", "matmul,rms_norm", NULL};
  same_reduced(MID_RMS, rms);
  static const char *const attn[] = {"grid_x", "1,2", "forloop_ranges", "1,4",
                                     "kernel_ops", "matmul,exp,div", NULL};
  same_reduced(MID_ATTN, attn);
}
END_TEST

START_TEST(test_reduced_reports_best) {
  /* With verify_full_max=1 the reduced search reports one graph: the best
   * (cost, hash) of the full-shape path, verified at full shape when it
   * was found (the cheapest so far) and in float64. */
  static const char *const sp[] = {"grid_x", "1,2,4", "forloop_ranges", "1,4,8",
                                    "kernel_ops", "matmul,rms_norm", NULL};
  static const char *const full[] = {"fp_reduce", "false", NULL};
  static const char *const red[] = {"fp_reduce_min_elements", "0", "fp_reduce_tile", "2",
                                    "fp_reduce_parts", "2", "verify_full_max", "1", NULL};
  mirs_context *c1 = tu_ctx(NULL), *c2 = tu_ctx(NULL);
  set_opts(c1, SMALL_SPACE);
  set_opts(c1, sp);
  set_opts(c2, SMALL_SPACE);
  set_opts(c2, sp);
  mirs_search *s1 = run(c1, MID_RMS, full), *s2 = run(c2, MID_RMS, red);
  ck_assert_int_gt(mirs_search_num_results(s1), 1);
  ck_assert_int_eq(mirs_search_num_results(s2), 1);
  ck_assert_uint_eq(mirs_search_result_hash(s2, 0), mirs_search_result_hash(s1, 0));
  ck_assert_uint_eq(s2->stats.v[MIRS__STAT_full_unverified] + 1,
                    s2->stats.v[MIRS__STAT_graphs_found]);
  ck_assert_uint_gt(s2->stats.v[MIRS__STAT_float_checks], 0);
  mirs_search_destroy(s1);
  mirs_search_destroy(s2);
  mirs_context_destroy(c1);
  mirs_context_destroy(c2);
}
END_TEST

START_TEST(test_reduce_map) {
  /* The hand-written GQA kernel (grid 2 x 16, forloop 64), tiles of at
   * most 4 and grids and forloops of at most 4: K's 4096 keys walked by
   * the forloop become 4 iterations of 4 (16), the 256 query rows split
   * 16 ways 4 blocks of 4 (16), the unpartitioned head dim 64 one tile of
   * 4, and 2 stays.  The reduced kernel computes the reduced program. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = NULL, *u = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/gqa.graph"), &p), MIRS_OK);
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/gqa.ugraph"), &u), MIRS_OK);
  mirs__reduce_map m;
  mirs__reduce_map_build(u, u->nops, 4, 4, &m);
  ck_assert(!m.identity);
  ck_assert_int_eq(mirs__reduce_extent(&m, 4096), 16);
  ck_assert_int_eq(mirs__reduce_extent(&m, 256), 16);
  ck_assert_int_eq(mirs__reduce_extent(&m, 64), 4);
  ck_assert_int_eq(mirs__reduce_extent(&m, 2), 2);
  mirs_graph *rp = NULL, *ru = NULL;
  ck_assert_int_eq(mirs__reduce_graph(ctx, p, p->nops, &m, true, &rp), MIRS_OK);
  ck_assert_int_eq(mirs__reduce_graph(ctx, u, u->nops, &m, true, &ru), MIRS_OK);
  ck_assert_int_eq(rp->t[rp->outputs[0]].shape.d[1], 16);
  ck_assert_int_eq(ru->ops[0].bg->grid[1], 4);
  ck_assert_int_eq(ru->ops[0].bg->forloop, 4);
  mirs__fp_store *a, *b;
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 2, 1, &a), MIRS_OK);
  ck_assert_int_eq(mirs__fp_store_new(ctx, NULL, 2, 1, &b), MIRS_OK);
  ck_assert_int_eq(mirs__fp_compute_graph(a, rp), MIRS_OK);
  ck_assert_int_eq(mirs__fp_compute_graph(b, ru), MIRS_OK);
  mirs__fp_verdict v;
  ck_assert_int_eq(mirs__fp_compare_outputs(a, rp, b, ru, &v), MIRS_OK);
  ck_assert_msg(v.equal, "%s", v.why);
  /* Target 0 is the identity; so is a graph whose extents are all small. */
  mirs__reduce_map_build(u, u->nops, 0, 4, &m);
  ck_assert(m.identity);
  mirs__reduce_map_build(u, u->nops, 4096, 64, &m);
  ck_assert(m.identity);
  mirs__reduce_map_build(u, u->nops, 4096, 4, &m);
  ck_assert(!m.identity);
  mirs__fp_store_free(a);
  mirs__fp_store_free(b);
  mirs_graph_destroy(rp);
  mirs_graph_destroy(ru);
  mirs_graph_destroy(p);
  mirs_graph_destroy(u);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_finds_rmsnorm_linear) {
  /* The default space (it finishes in seconds on this example). */
  find_example("examples/rmsnorm_linear_small.graph", "examples/rmsnorm_linear_small.ugraph",
               NULL);
}
END_TEST

START_TEST(test_finds_attention) {
  static const char *const kv[] = {"grid_x", "4", "grid_y", "2", "grid_z", "1",
                                   "forloop_ranges", "4", NULL};
  find_example("examples/mha_small.graph", "examples/mha_small.ugraph", kv);
}
END_TEST

/* ---------------------------------------------------------------- results */

START_TEST(test_float_check_counted) {
  /* The float64 check of the best results shows in the context's
   * counters (report.json's "counters"). */
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"float_check_top", "3", NULL};
  set_opts(ctx, SMALL_SPACE);
  uint64_t before = mirs_stat_value(ctx, MIRS__STAT_float_checks);
  mirs_search *s = run(ctx, TINY_RMS, kv);
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 0);
  ck_assert_uint_eq(mirs_stat_value(ctx, MIRS__STAT_float_checks) - before, (uint64_t)(n < 3 ? n : 3));
  ck_assert_uint_eq(mirs_stat_value(ctx, MIRS__STAT_float_rejects), 0);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_float_check_beyond_work) {
  /* A result may need many times the program's float64 work (every block
   * and forloop iteration counts): with eval_max_work between the two, the
   * search still ends with every result, those past the limit keeping
   * their fingerprint verdict unchecked, instead of failing. */
  mirs_context *c1 = tu_ctx(NULL), *c2 = tu_ctx(NULL);
  static const char *const all[] = {"float_check_top", "1000", NULL};
  set_opts(c1, SMALL_SPACE);
  set_opts(c2, SMALL_SPACE);
  mirs_search *s1 = run(c1, TINY_RMS, all);
  int n = mirs_search_num_results(s1);
  ck_assert_int_gt(n, 0);
  mirs_graph *p = parse(c2, TINY_RMS);
  uint64_t pw = mirs__graph_work(p), most = 0;
  for (int i = 0; i < n; i++) {
    uint64_t w = mirs__graph_work(mirs_search_result(s1, i));
    most = w > most ? w : most;
  }
  ck_assert_msg(most > pw, "no result needs more work than the program (%llu): nothing tested",
                (unsigned long long)pw);
  char lim[32];
  snprintf(lim, sizeof lim, "%llu", (unsigned long long)pw);
  ck_assert_int_eq(mirs_option_set(c2, "eval_max_work", lim), MIRS_OK);
  uint64_t before = mirs_stat_value(c2, MIRS__STAT_float_checks);
  mirs_search *s2 = run(c2, TINY_RMS, all);
  ck_assert_int_eq(mirs_search_num_results(s2), n);
  for (int i = 0; i < n; i++)
    ck_assert_uint_eq(mirs_search_result_hash(s2, i), mirs_search_result_hash(s1, i));
  ck_assert_uint_lt(mirs_stat_value(c2, MIRS__STAT_float_checks) - before, (uint64_t)n);
  mirs_graph_destroy(p);
  mirs_search_destroy(s1);
  mirs_search_destroy(s2);
  mirs_context_destroy(c1);
  mirs_context_destroy(c2);
}
END_TEST

START_TEST(test_results_eval_equal) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"float_check_top", "0", NULL};
  set_opts(ctx, SMALL_SPACE);
  mirs_search *s = run(ctx, TINY_RMS, kv);
  mirs_graph *p = parse(ctx, TINY_RMS);
  mirs_eval_result *ref;
  ck_assert_int_eq(mirs_graph_eval(p, 7, &ref), MIRS_OK);
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 0);
  double prev = -1;
  for (int i = 0; i < n; i++) {
    const mirs_graph *r = mirs_search_result(s, i);
    ck_assert_int_eq(mirs_graph_validate(r), MIRS_OK);
    ck_assert_uint_eq(mirs_graph_hash(r), mirs_search_result_hash(s, i));
    ck_assert(mirs_search_result_cost(s, i) >= prev);
    prev = mirs_search_result_cost(s, i);
    mirs_eval_result *e;
    ck_assert_int_eq(mirs_graph_eval(r, 7, &e), MIRS_OK);
    ck_assert_int_eq(mirs_eval_num_outputs(e), 1);
    ck_assert_str_eq(mirs_eval_output_name(e, 0), "O");
    int64_t n1, n2;
    const double *a = mirs_eval_output_values(ref, 0, &n1), *b = mirs_eval_output_values(e, 0, &n2);
    ck_assert_int_eq(n1, n2);
    for (int64_t j = 0; j < n1; j++)
      ck_assert_msg(fabs(a[j] - b[j]) <= 1e-9 * fmax(1.0, fabs(a[j])), "result %d elem %lld", i,
                    (long long)j);
    /* Printed results parse back to the same graph. */
    char *text;
    ck_assert_int_eq(mirs_graph_to_string(r, &text), MIRS_OK);
    mirs_graph *back;
    ck_assert_int_eq(mirs_graph_parse_string(ctx, text, strlen(text), "r.ugraph", &back), MIRS_OK);
    ck_assert_uint_eq(mirs_graph_hash(back), mirs_graph_hash(r));
    mirs_graph_destroy(back);
    mirs_free(ctx, text);
    mirs_eval_result_destroy(e);
  }
  mirs_eval_result_destroy(ref);
  mirs_graph_destroy(p);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_bound_per_result) {
  /* The search's trials cover candidates of up to twice the program's
   * degree.  With pruning off, (X·Y·Z·Z)/(Z·Z) (degree 6) computes X·Y
   * (degree 2), and at a bound of 2^-27.2 one trial covers degree 2 + 4
   * but not 2 + 6: such results are verified again with two trials, and
   * every result passes mirs_verify, which takes the trials its own
   * degree needs. */
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"prune", "false", "kernel_ops", "mul,div",
                                   "max_kernel_ops", "4", "max_custom_kernels", "0",
                                   "verify_log2_bound", "-27.2", "float_check_top", "0", NULL};
  const char *text = "input X : f16[4, 4]\ninput Y : f16[4, 4]\ninput Z : f16[4, 4]\n"
                     "O = mul(X, Y)\noutput O\n";
  mirs_search *s = run(ctx, text, kv);
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_int_eq(st.fingerprint_trials, 1);
  ck_assert(st.log2_false_accept_bound == -27.2);
  ck_assert_uint_gt(mirs_stat_value(ctx, MIRS__STAT_fp_reverified), 0);
  ck_assert_uint_eq(mirs_stat_value(ctx, MIRS__STAT_fp_reverify_rejects), 0);
  mirs_graph *p = parse(ctx, text);
  int n = mirs_search_num_results(s), more = 0;
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    mirs_verify_result v;
    ck_assert_int_eq(mirs_verify(ctx, p, mirs_search_result(s, i), &v), MIRS_OK);
    ck_assert_msg(v.equal && v.log2_bound <= -27.2, "result %d: %s", i, v.reason);
    more += v.trials > 1;
  }
  ck_assert_int_gt(more, 0);
  mirs_graph_destroy(p);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_deterministic) {
  uint64_t best = 0;
  int count = -1;
  for (int rep = 0; rep < 3; rep++) {
    mirs_context *ctx = tu_ctx(NULL);
    set_opts(ctx, SMALL_SPACE);
    mirs_search *s = run(ctx, TINY, NULL);
    ck_assert_int_gt(mirs_search_num_results(s), 0);
    if (rep == 0) {
      best = mirs_search_result_hash(s, 0);
      count = mirs_search_num_results(s);
    }
    ck_assert_uint_eq(mirs_search_result_hash(s, 0), best);
    ck_assert_int_eq(mirs_search_num_results(s), count);
    mirs_search_destroy(s);
    mirs_context_destroy(ctx);
  }
}
END_TEST

/* ---------------------------------------------------------------- limits */

/* Stop callback: stop at once.  (Atomic counts: should_stop runs on the
 * searching thread, on_result on worker threads, with one user pointer.) */
static int stop_now(void *user) {
  atomic_fetch_add((_Atomic int *)user, 1);
  return 1;
}

/* Result callback: count. */
static void count_result(void *user, const mirs_graph *g, double cost) {
  (void)g;
  (void)cost;
  atomic_fetch_add((_Atomic int *)user, 1);
}

START_TEST(test_limits) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[] = {"max_states", "50", NULL};
  mirs_search *s = run(ctx, TINY, kv);
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_int_eq(st.complete, 0);
  ck_assert_uint_le(st.states_explored, 50 + 64);
  ck_assert_int_eq(mirs_search_run(s), MIRS_INVALID_ARG); /* runs once */
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);

  ctx = tu_ctx(NULL);
  static const char *const kt[] = {"time_limit", "0.2", "kernel_ops",
                                   "matmul,add,mul,div,exp,sum,rms_norm", NULL};
  double t0 = mirs__core_now();
  s = run(ctx, "input Q : f16[2, 8, 16]\ninput K : f16[2, 16, 128]\ninput V : f16[2, 128, 16]\n"
               "A = matmul(Q, K)\nE = exp(A)\nS = sum(E, dim=2)\nD = div(E, S)\n"
               "O = matmul(D, V)\noutput O\n",
          kt);
  ck_assert_double_lt(mirs__core_now() - t0, 10.0);
  mirs_search_get_stats(s, &st);
  ck_assert_int_eq(st.complete, 0);
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);

  /* The memory bound stops the search cleanly too, and says so. */
  static tu_log log;
  ctx = tu_ctx(&log);
  static const char *const km[] = {"max_memory", "100000", NULL};
  s = run(ctx, TINY, km);
  mirs_search_get_stats(s, &st);
  ck_assert_int_eq(st.complete, 0);
  ck_assert_ptr_nonnull(strstr(log.text, "memory limit"));
  mirs_search_destroy(s);
  mirs_context_destroy(ctx);

  /* should_stop stops cleanly; results are still reported and sorted.
   * (One thread: should_stop is polled by the searching thread only, and
   * on a loaded machine another worker could finish this small space
   * before that thread first runs.) */
  ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  ck_assert_int_eq(mirs_option_set(ctx, "threads", "1"), MIRS_OK);
  mirs_graph *g = parse(ctx, TINY);
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  _Atomic int polled = 0, found = 0;
  ck_assert_int_eq(mirs_search_set_callbacks(s, NULL, count_result, stop_now, &polled), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  mirs_search_get_stats(s, &st);
  ck_assert_int_eq(st.complete, 0);
  ck_assert_int_ge(polled, 1);
  mirs_search_destroy(s);
  /* on_result sees every result. */
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_set_callbacks(s, NULL, count_result, NULL, &found), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  ck_assert_int_eq(atomic_load(&found), mirs_search_num_results(s));
  ck_assert_ptr_null(mirs_search_result(s, -1));
  ck_assert_ptr_null(mirs_search_result(s, atomic_load(&found)));
  ck_assert(isnan(mirs_search_result_cost(s, atomic_load(&found))));
  mirs_search_destroy(s);
  /* Misuse is reported. */
  ck_assert_int_eq(mirs_search_run(NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_search_create(ctx, NULL, &s), MIRS_INVALID_ARG);
  mirs_search_destroy(NULL);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The test suite. */
static Suite *suite(void) {
  Suite *s = suite_create("search");
  TCase *tc = tcase_create("search");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_str_options);
  tcase_add_test(tc, test_replay);
  tcase_add_test(tc, test_canonical_same_results);
  tcase_add_test(tc, test_prune_same_results);
  tcase_add_test(tc, test_solver_same_results);
  tcase_add_test(tc, test_grid_order_results);
  tcase_add_test(tc, test_float_check_counted);
  tcase_add_test(tc, test_float_check_beyond_work);
  tcase_add_test(tc, test_index_same_results);
  tcase_add_test(tc, test_final_variants);
  tcase_add_test(tc, test_grid_dims);
  tcase_add_test(tc, test_index_labels);
  tcase_add_test(tc, test_index_degree);
  tcase_add_test(tc, test_index_degree_same_results);
  tcase_add_test(tc, test_reuse_kernel_ops_results);
  tcase_add_test(tc, test_phase_order_same_results);
  tcase_add_test(tc, test_final_grid_same_results);
  tcase_add_test(tc, test_space_from_program);
  tcase_add_test(tc, test_finds_rmsnorm_linear);
  tcase_add_test(tc, test_finds_attention);
  tcase_add_test(tc, test_results_eval_equal);
  tcase_add_test(tc, test_bound_per_result);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_reduced_same_results);
  tcase_add_test(tc, test_reduced_reports_best);
  tcase_add_test(tc, test_reduce_map);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(suite());
}
