/* SPDX-License-Identifier: MIT */
/* tests/check_interp.c - the float64 reference interpreter (src/graph/interp.c).
 *
 * Kernel ops are checked against values computed here from
 * mirs_input_value directly; block-level semantics (grid and forloop
 * partitions, each accumulator, omap placement, post ops) against the
 * equivalent kernel program; the fused example µGraphs against their
 * programs under several seeds; the eval_max_elements limit; and
 * allocation failures at every point of a run (no leak, error reported). */
#include <math.h>
#include <stdint.h>

#include "graph/graph.h"
#include "testutil.h"

/* Shape from a rank and up to four dims. */
static mirs__shape shp(int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
  mirs__shape s = {.ndim = ndim, .d = {a, b, c, d}};
  return s;
}

/* Add input `name` of shape s to g and return its id. */
static int32_t add_in(mirs_graph *g, const char *name, mirs__shape s) {
  int32_t t = -1;
  ck_assert_int_eq(mirs__graph_add_input(g, name, MIRS_F16, &s, &t), MIRS_OK);
  return t;
}

/* Add kernel op op(a[, b]) (dim for sum) and return its result id. */
static int32_t add_op(mirs_graph *g, mirs_op op, int32_t a, int32_t b, int dim) {
  int32_t in[2] = {a, b}, t = -1;
  int nin = mirs__graph_ops[op].arity;
  mirs_status s = mirs__graph_add_op(g, NULL, op, nin, in, dim, &t);
  ck_assert_msg(s == MIRS_OK, "add_op %s: %s", mirs_op_name(op), mirs_last_error(g->ctx));
  return t;
}

/* Assert got == want to a relative 1e-13 (absolute near zero). */
static void close_to(double got, double want, const char *what, int64_t i) {
  double tol = 1e-13 * (fabs(want) > 1.0 ? fabs(want) : 1.0);
  ck_assert_msg(fabs(got - want) <= tol || (isnan(got) && isnan(want)),
                "%s[%lld]: got %.17g, want %.17g", what, (long long)i, got, want);
}

/* Input value of element e of input name under seed. */
static double iv(uint64_t seed, const char *name, int64_t e) {
  return mirs_input_value(seed, name, (uint64_t)e);
}

/* Max |a-b| / max |b| over n elements (0 when both are all zero). */
static double rel_err(const double *a, const double *b, int64_t n) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(a[i] - b[i]);
    if (d > num || isnan(d))
      num = isnan(d) ? INFINITY : d;
    if (fabs(b[i]) > den)
      den = fabs(b[i]);
  }
  return den > 0.0 ? num / den : num;
}

/* Evaluate g and return its values (asserting success). */
static double **run(const mirs_graph *g, uint64_t seed) {
  double **v = NULL;
  mirs_status s = mirs__interp_run(g, seed, &v);
  ck_assert_msg(s == MIRS_OK, "interp: %s", mirs_last_error(g->ctx));
  ck_assert_ptr_nonnull(v);
  return v;
}

/* Reference for a unary op. */
static double ref_unary(mirs_op op, double x) {
  switch (op) {
  case MIRS_OP_EXP: return exp(x);
  case MIRS_OP_SQUARE: return x * x;
  case MIRS_OP_SQRT: return sqrt(x);
  case MIRS_OP_SILU: return x / (1.0 + exp(-x));
  case MIRS_OP_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case MIRS_OP_RELU: return x > 0 ? x : 0.0;
  default: return NAN;
  }
}

START_TEST(test_unary) {
  const mirs_op ops[] = {MIRS_OP_EXP,  MIRS_OP_SQUARE, MIRS_OP_SQRT,
                         MIRS_OP_SILU, MIRS_OP_GELU,   MIRS_OP_RELU};
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "unary", &g), MIRS_OK);
  int32_t x = add_in(g, "X", shp(2, 3, 7, 0, 0));
  int32_t out[6];
  for (int i = 0; i < 6; i++)
    out[i] = add_op(g, ops[i], x, -1, 0);
  double **v = run(g, 5);
  int nan_seen = 0;
  for (int i = 0; i < 6; i++)
    for (int64_t e = 0; e < 21; e++) {
      double want = ref_unary(ops[i], iv(5, "X", e));
      nan_seen += isnan(want);
      close_to(v[out[i]][e], want, mirs_op_name(ops[i]), e);
    }
  ck_assert_int_gt(nan_seen, 0); /* sqrt of a negative input is NaN */
  /* Spot values of gelu's exact erf form. */
  ck_assert(fabs(ref_unary(MIRS_OP_GELU, 1.0) - 0.8413447460685429) < 1e-15);
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_binary_broadcast) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "bin", &g), MIRS_OK);
  int32_t a = add_in(g, "A", shp(3, 2, 3, 4, 0));
  int32_t b = add_in(g, "B", shp(3, 2, 1, 4, 0));
  int32_t c = add_in(g, "C", shp(3, 1, 3, 1, 0));
  int32_t add = add_op(g, MIRS_OP_ADD, a, b, 0);
  int32_t sub = add_op(g, MIRS_OP_SUB, b, a, 0);
  int32_t mul = add_op(g, MIRS_OP_MUL, a, c, 0);
  int32_t div = add_op(g, MIRS_OP_DIV, c, a, 0);
  int32_t bc = add_op(g, MIRS_OP_MUL, b, c, 0); /* both sides broadcast */
  double **v = run(g, 11);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        int64_t e = (i * 3 + j) * 4 + k;
        double av = iv(11, "A", e), bv = iv(11, "B", i * 4 + k), cv = iv(11, "C", j);
        close_to(v[add][e], av + bv, "add", e);
        close_to(v[sub][e], bv - av, "sub", e);
        close_to(v[mul][e], av * cv, "mul", e);
        close_to(v[div][e], cv / av, "div", e);
        close_to(v[bc][e], bv * cv, "mul(B, C)", e);
      }
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_matmul) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "mm", &g), MIRS_OK);
  int32_t a = add_in(g, "A", shp(3, 2, 3, 4, 0));
  int32_t b = add_in(g, "B", shp(3, 1, 4, 5, 0)); /* batch broadcast */
  int32_t p = add_in(g, "P", shp(2, 3, 4, 0, 0));
  int32_t q = add_in(g, "Q", shp(2, 4, 2, 0, 0));
  int32_t ab = add_op(g, MIRS_OP_MATMUL, a, b, 0);
  int32_t pq = add_op(g, MIRS_OP_MATMUL, p, q, 0);
  double **v = run(g, 3);
  for (int bi = 0; bi < 2; bi++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++) {
        double want = 0.0;
        for (int k = 0; k < 4; k++)
          want += iv(3, "A", (bi * 3 + i) * 4 + k) * iv(3, "B", k * 5 + j);
        close_to(v[ab][(bi * 3 + i) * 5 + j], want, "matmul", (bi * 3 + i) * 5 + j);
      }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) {
      double want = 0.0;
      for (int k = 0; k < 4; k++)
        want += iv(3, "P", i * 4 + k) * iv(3, "Q", k * 2 + j);
      close_to(v[pq][i * 2 + j], want, "matmul2d", i * 2 + j);
    }
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_sum_and_rmsnorm) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "red", &g), MIRS_OK);
  int32_t x = add_in(g, "X", shp(3, 2, 3, 4, 0));
  int32_t s0 = add_op(g, MIRS_OP_SUM, x, -1, 0);
  int32_t s1 = add_op(g, MIRS_OP_SUM, x, -1, 1);
  int32_t sl = add_op(g, MIRS_OP_SUM, x, -1, -1); /* negative: the last dim */
  int32_t rn = add_op(g, MIRS_OP_RMS_NORM, x, -1, 0);
  ck_assert_int_eq(g->t[sl].shape.d[2], 1);
  double **v = run(g, 7);
#define X(i, j, k) iv(7, "X", ((i) * 3 + (j)) * 4 + (k))
  for (int j = 0; j < 3; j++)
    for (int k = 0; k < 4; k++)
      close_to(v[s0][j * 4 + k], X(0, j, k) + X(1, j, k), "sum0", j * 4 + k);
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++)
      close_to(v[s1][i * 4 + k], X(i, 0, k) + X(i, 1, k) + X(i, 2, k), "sum1", i * 4 + k);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double s = 0.0, ss = 0.0;
      for (int k = 0; k < 4; k++) {
        s += X(i, j, k);
        ss += X(i, j, k) * X(i, j, k);
      }
      close_to(v[sl][i * 3 + j], s, "sum-1", i * 3 + j);
      double rms = sqrt(ss / 4.0);
      for (int k = 0; k < 4; k++)
        close_to(v[rn][(i * 3 + j) * 4 + k], X(i, j, k) / rms, "rms_norm", (i * 3 + j) * 4 + k);
    }
#undef X
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Grid dims and forloop of a custom op under test. */
static mirs__bgraph *bg_make(mirs_graph *g, int32_t gx, int32_t gy, int32_t gz, int32_t f) {
  const int32_t grid[3] = {gx, gy, gz}, block[3] = {128, 1, 1};
  mirs__bgraph *bg = NULL;
  ck_assert_int_eq(mirs__bg_new(g->ctx, grid, block, f, &bg), MIRS_OK);
  return bg;
}

/* Load kernel tensor src into bg with imap (x, y, z) and fmap. */
static int32_t bg_in(mirs_graph *g, mirs__bgraph *bg, int32_t src, int32_t ix, int32_t iy,
                     int32_t iz, int32_t fmap) {
  const int32_t imap[3] = {ix, iy, iz};
  int32_t t = -1;
  mirs_status s = mirs__bg_add_input(g, bg, NULL, src, imap, fmap, &t);
  ck_assert_msg(s == MIRS_OK, "bg input: %s", mirs_last_error(g->ctx));
  return t;
}

/* Add block op op(a[, b]) with dim and fused. */
static int32_t bg_op(mirs_graph *g, mirs__bgraph *bg, mirs_op op, int32_t a, int32_t b, int dim,
                     bool fused) {
  int32_t in[2] = {a, b}, t = -1;
  mirs_status s =
      mirs__bg_add_op(g, bg, NULL, op, mirs__graph_ops[op].arity, in, dim, fused, &t);
  ck_assert_msg(s == MIRS_OK, "bg op %s: %s", mirs_op_name(op), mirs_last_error(g->ctx));
  return t;
}

/* Store t with omap (x, y, z). */
static void bg_out(mirs_graph *g, mirs__bgraph *bg, int32_t t, int32_t ox, int32_t oy, int32_t oz) {
  const int32_t omap[3] = {ox, oy, oz};
  mirs_status s = mirs__bg_add_output(g, bg, t, omap);
  ck_assert_msg(s == MIRS_OK, "bg output: %s", mirs_last_error(g->ctx));
}

/* Attach bg to g; returns its first output tensor. */
static int32_t bg_close(mirs_graph *g, mirs__bgraph *bg) {
  int32_t first = -1;
  mirs_status s = mirs__graph_add_custom(g, bg, NULL, &first);
  ck_assert_msg(s == MIRS_OK, "add_custom: %s", mirs_last_error(g->ctx));
  return first;
}

/* Assert the values of tensors a (in ga) and b (in gb) agree to 1e-12. */
static void same_values(const mirs_graph *ga, double **va, int32_t a, const mirs_graph *gb,
                        double **vb, int32_t b) {
  ck_assert(mirs__shape_eq(&ga->t[a].shape, &gb->t[b].shape));
  int64_t n = mirs__shape_numel(&ga->t[a].shape);
  double err = rel_err(va[a], vb[b], n);
  ck_assert_msg(err <= 1e-12, "relative error %g", err);
}

/* Grid partition (two grid dims) plus forloop with accum: X . W. */
START_TEST(test_block_matmul) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *k, *u;
  ck_assert_int_eq(mirs__graph_new(ctx, "k", &k), MIRS_OK);
  ck_assert_int_eq(mirs__graph_new(ctx, "u", &u), MIRS_OK);
  int32_t kx = add_in(k, "X", shp(2, 4, 8, 0, 0)), kw = add_in(k, "W", shp(2, 8, 6, 0, 0));
  int32_t ko = add_op(k, MIRS_OP_MATMUL, kx, kw, 0);
  int32_t ux = add_in(u, "X", shp(2, 4, 8, 0, 0)), uw = add_in(u, "W", shp(2, 8, 6, 0, 0));
  mirs__bgraph *bg = bg_make(u, 3, 2, 1, 4);
  int32_t x = bg_in(u, bg, ux, -1, 0, -1, 1); /* rows by grid.y, K by the loop */
  int32_t w = bg_in(u, bg, uw, 1, -1, -1, 0); /* cols by grid.x, K by the loop */
  ck_assert_int_eq(bg->t[x].shape.d[0], 2);
  ck_assert_int_eq(bg->t[x].shape.d[1], 2);
  int32_t y = bg_op(u, bg, MIRS_OP_MATMUL, x, w, 0, false);
  int32_t a = bg_op(u, bg, MIRS_OP_ACCUM, y, -1, 0, false);
  bg_out(u, bg, a, 1, 0, -1);
  int32_t uo = bg_close(u, bg);
  double **vk = run(k, 9), **vu = run(u, 9);
  same_values(k, vk, ko, u, vu, uo);
  mirs__interp_free(k, vk);
  mirs__interp_free(u, vu);
  mirs__graph_free(k);
  mirs__graph_free(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* accum_sum over the forloop and the grid: sum(X, dim=1), and square of
 * it computed by a post op; two outputs of one kernel. */
START_TEST(test_block_accum_sum) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *k, *u;
  ck_assert_int_eq(mirs__graph_new(ctx, "k", &k), MIRS_OK);
  ck_assert_int_eq(mirs__graph_new(ctx, "u", &u), MIRS_OK);
  int32_t kx = add_in(k, "X", shp(2, 4, 12, 0, 0));
  int32_t ks = add_op(k, MIRS_OP_SUM, kx, -1, 1);
  int32_t ksq = add_op(k, MIRS_OP_SQUARE, ks, -1, 0);
  int32_t ux = add_in(u, "X", shp(2, 4, 12, 0, 0));
  mirs__bgraph *bg = bg_make(u, 2, 1, 1, 3);
  int32_t x = bg_in(u, bg, ux, 0, -1, -1, 1);
  int32_t s = bg_op(u, bg, MIRS_OP_ACCUM_SUM, x, -1, 1, false);
  int32_t q = bg_op(u, bg, MIRS_OP_SQUARE, s, -1, 0, false); /* post op */
  ck_assert(bg->t[q].post);
  bg_out(u, bg, s, 0, -1, -1);
  bg_out(u, bg, q, 0, -1, -1);
  int32_t us = bg_close(u, bg);
  int32_t usq = us + 1;
  ck_assert_int_eq(u->t[usq].out_index, 1);
  double **vk = run(k, 4), **vu = run(u, 4);
  same_values(k, vk, ks, u, vu, us);
  same_values(k, vk, ksq, u, vu, usq);
  mirs__interp_free(k, vk);
  mirs__interp_free(u, vu);
  mirs__graph_free(k);
  mirs__graph_free(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* accum_rms: rms over the whole row walked by the forloop, and the
 * rms_norm(X) that dividing by it gives. */
START_TEST(test_block_accum_rms) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *k, *u;
  ck_assert_int_eq(mirs__graph_new(ctx, "k", &k), MIRS_OK);
  ck_assert_int_eq(mirs__graph_new(ctx, "u", &u), MIRS_OK);
  int32_t kx = add_in(k, "X", shp(2, 3, 12, 0, 0));
  int32_t kr = add_op(k, MIRS_OP_RMS_NORM, kx, -1, 0);
  int32_t ux = add_in(u, "X", shp(2, 3, 12, 0, 0));
  /* kernel 1: r = rms(X) per row, forloop over the row in 4 tiles. */
  mirs__bgraph *bg = bg_make(u, 3, 1, 1, 4);
  int32_t x = bg_in(u, bg, ux, 0, -1, -1, 1);
  int32_t r = bg_op(u, bg, MIRS_OP_ACCUM_RMS, x, -1, -1, false);
  ck_assert_int_eq(bg->t[r].shape.d[1], 1);
  bg_out(u, bg, r, 0, -1, -1);
  int32_t ur = bg_close(u, bg);
  /* kernel 2: X / r with the grid over columns and r replicated. */
  bg = bg_make(u, 2, 1, 1, 1);
  x = bg_in(u, bg, ux, 1, -1, -1, -1);
  int32_t rr = bg_in(u, bg, ur, -1, -1, -1, -1);
  int32_t d = bg_op(u, bg, MIRS_OP_DIV, x, rr, 0, false);
  int32_t a = bg_op(u, bg, MIRS_OP_ACCUM, d, -1, 0, false);
  bg_out(u, bg, a, 1, -1, -1);
  int32_t uo = bg_close(u, bg);
  double **vk = run(k, 8), **vu = run(u, 8);
  same_values(k, vk, kr, u, vu, uo);
  for (int i = 0; i < 3; i++) {
    double ss = 0.0;
    for (int j = 0; j < 12; j++)
      ss += iv(8, "X", i * 12 + j) * iv(8, "X", i * 12 + j);
    close_to(vu[ur][i], sqrt(ss / 12.0), "rms", i);
  }
  mirs__interp_free(k, vk);
  mirs__interp_free(u, vu);
  mirs__graph_free(k);
  mirs__graph_free(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* omap placement: a kernel that copies X's [2, 3] tiles into transposed
 * block positions, checked element by element. */
START_TEST(test_block_omap) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *u;
  ck_assert_int_eq(mirs__graph_new(ctx, "u", &u), MIRS_OK);
  int32_t ux = add_in(u, "X", shp(2, 4, 9, 0, 0));
  mirs__bgraph *bg = bg_make(u, 2, 3, 1, 1);
  int32_t x = bg_in(u, bg, ux, 0, 1, -1, -1); /* tile [2, 3] */
  int32_t a = bg_op(u, bg, MIRS_OP_ACCUM, x, -1, 0, false);
  bg_out(u, bg, a, 1, 0, -1); /* grid.x -> out dim 1, grid.y -> out dim 0 */
  int32_t uo = bg_close(u, bg);
  ck_assert_int_eq(u->t[uo].shape.d[0], 6);
  ck_assert_int_eq(u->t[uo].shape.d[1], 6);
  double **vu = run(u, 2);
  for (int bx = 0; bx < 2; bx++)
    for (int by = 0; by < 3; by++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
          double want = iv(2, "X", (bx * 2 + i) * 9 + by * 3 + j);
          int64_t e = (by * 2 + i) * 6 + bx * 3 + j;
          close_to(vu[uo][e], want, "omap", e);
        }
  mirs__interp_free(u, vu);
  mirs__graph_free(u);
  mirs_context_destroy(ctx);
}
END_TEST

/* Parse path (a file under examples/) into a graph. */
static mirs_graph *parse(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  mirs_status s = mirs_graph_parse_file(ctx, tu_src(rel), &g);
  ck_assert_msg(s == MIRS_OK, "parse %s: %s", rel, mirs_last_error(ctx));
  return g;
}

/* Evaluate examples/<name>.graph and .ugraph under nseeds seeds with the
 * public API and assert the outputs agree; returns the worst relative error. */
static double compare_example(const char *name, int nseeds) {
  char gp[256], up[256];
  snprintf(gp, sizeof gp, "examples/%s.graph", name);
  snprintf(up, sizeof up, "examples/%s.ugraph", name);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *prog = parse(ctx, gp), *ug = parse(ctx, up);
  ck_assert_int_eq(mirs_graph_validate(ug), MIRS_OK);
  ck_assert_int_eq(mirs_graph_num_custom(ug), 1);
  ck_assert_int_eq(mirs_graph_num_ops(ug), 1);
  double worst = 0.0;
  for (int k = 0; k < nseeds; k++) {
    uint64_t seed = 1 + 1000 * (uint64_t)k;
    mirs_eval_result *rp = NULL, *ru = NULL;
    ck_assert_int_eq(mirs_graph_eval(prog, seed, &rp), MIRS_OK);
    ck_assert_int_eq(mirs_graph_eval(ug, seed, &ru), MIRS_OK);
    ck_assert_int_eq(mirs_eval_num_outputs(rp), mirs_eval_num_outputs(ru));
    for (int o = 0; o < mirs_eval_num_outputs(rp); o++) {
      ck_assert_str_eq(mirs_eval_output_name(rp, o), mirs_eval_output_name(ru, o));
      int64_t np = 0, nu = 0;
      const double *vp = mirs_eval_output_values(rp, o, &np);
      const double *vu = mirs_eval_output_values(ru, o, &nu);
      ck_assert_int_eq(np, nu);
      ck_assert_int_gt(np, 0);
      double err = rel_err(vu, vp, np);
      if (err > worst)
        worst = err;
    }
    mirs_eval_result_destroy(rp);
    mirs_eval_result_destroy(ru);
  }
  printf("%s: max relative error over %d seed%s: %.3g\n", name, nseeds, nseeds > 1 ? "s" : "",
         worst);
  fflush(stdout);
  ck_assert_msg(worst <= 1e-12, "%s: relative error %g", name, worst);
  mirs_graph_destroy(prog);
  mirs_graph_destroy(ug);
  mirs_context_destroy(ctx);
  return worst;
}

START_TEST(test_example_rmsnorm_linear_small) {
  compare_example("rmsnorm_linear_small", 3);
}
END_TEST

START_TEST(test_example_gqa_small) {
  compare_example("gqa_small", 3);
}
END_TEST

START_TEST(test_example_mha_small) {
  compare_example("mha_small", 3);
}
END_TEST

START_TEST(test_example_rmsnorm_linear) {
  compare_example("rmsnorm_linear", 3);
}
END_TEST

START_TEST(test_example_gqa) {
  compare_example("gqa", 3);
}
END_TEST

START_TEST(test_limit) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "big", &g), MIRS_OK);
  int32_t a = add_in(g, "A", shp(2, 8, 8, 0, 0));
  ck_assert_int_eq(mirs__graph_mark_output(g, add_op(g, MIRS_OP_EXP, a, -1, 0)), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "eval_max_elements", "127"), MIRS_OK);
  size_t base = mirs_memory_current(ctx);
  double **v = NULL;
  ck_assert_int_eq(mirs__interp_run(g, 1, &v), MIRS_LIMIT);
  ck_assert_ptr_null(v);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "eval_max_elements"));
  ck_assert_uint_eq(mirs_memory_current(ctx), base);
  mirs_eval_result *r = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 1, &r), MIRS_LIMIT);
  ck_assert_ptr_null(r);
  ck_assert_int_eq(mirs_option_set(ctx, "eval_max_elements", "128"), MIRS_OK);
  v = run(g, 1);
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Every allocation of a run with a custom op fails in turn: the run
 * reports NOMEM and leaves memory exactly as it found it. */
START_TEST(test_alloc_failure) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *u;
  ck_assert_int_eq(mirs__graph_new(ctx, "u", &u), MIRS_OK);
  int32_t ux = add_in(u, "X", shp(2, 4, 8, 0, 0)), uw = add_in(u, "W", shp(2, 8, 6, 0, 0));
  mirs__bgraph *bg = bg_make(u, 3, 2, 1, 4);
  int32_t x = bg_in(u, bg, ux, -1, 0, -1, 1);
  int32_t w = bg_in(u, bg, uw, 1, -1, -1, 0);
  int32_t y = bg_op(u, bg, MIRS_OP_MATMUL, x, w, 0, false);
  int32_t a = bg_op(u, bg, MIRS_OP_ACCUM, y, -1, 0, false);
  bg_out(u, bg, a, 1, 0, -1);
  int32_t uo = bg_close(u, bg);
  (void)add_op(u, MIRS_OP_EXP, uo, -1, 0);
  size_t base = mirs_memory_current(ctx);
  int failures = 0;
  for (long n = 1; n < 100; n++) {
    double **v = NULL;
    mirs__core_fail_alloc_after(ctx, n);
    mirs_status s = mirs__interp_run(u, 1, &v);
    mirs__core_fail_alloc_after(ctx, 0);
    if (s == MIRS_OK) {
      ck_assert_ptr_nonnull(v);
      mirs__interp_free(u, v);
      ck_assert_uint_eq(mirs_memory_current(ctx), base);
      break;
    }
    ck_assert_int_eq(s, MIRS_NOMEM);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(mirs_memory_current(ctx), base);
    failures++;
  }
  ck_assert_int_ge(failures, 5); /* array, 4 tensors, tile buffers */
  mirs__graph_free(u);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_stats_counted) {
  mirs_context *ctx = tu_ctx(NULL);
  size_t iops = SIZE_MAX, iel = SIZE_MAX;
  for (size_t i = 0; i < mirs_stat_count(); i++) {
    if (strcmp(mirs_stat_name(i), "ops_evaluated") == 0)
      iops = i;
    if (strcmp(mirs_stat_name(i), "elements_evaluated") == 0)
      iel = i;
  }
  ck_assert_uint_ne(iops, SIZE_MAX);
  ck_assert_uint_ne(iel, SIZE_MAX);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "s", &g), MIRS_OK);
  int32_t a = add_in(g, "A", shp(2, 2, 5, 0, 0));
  int32_t e = add_op(g, MIRS_OP_EXP, a, -1, 0);
  (void)add_op(g, MIRS_OP_SUM, e, -1, 1);
  uint64_t ops0 = mirs_stat_value(ctx, iops), el0 = mirs_stat_value(ctx, iel);
  double **v = run(g, 1);
  ck_assert_uint_eq(mirs_stat_value(ctx, iops) - ops0, 2);
  ck_assert_uint_eq(mirs_stat_value(ctx, iel) - el0, 10 + 10 + 2);
  mirs__interp_free(g, v);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The suite. */
static Suite *interp_suite(void) {
  Suite *s = suite_create("interp");
  TCase *k = tcase_create("kernel");
  tcase_add_test(k, test_unary);
  tcase_add_test(k, test_binary_broadcast);
  tcase_add_test(k, test_matmul);
  tcase_add_test(k, test_sum_and_rmsnorm);
  tcase_add_test(k, test_limit);
  tcase_add_test(k, test_stats_counted);
  suite_add_tcase(s, k);
  TCase *b = tcase_create("block");
  tcase_add_test(b, test_block_matmul);
  tcase_add_test(b, test_block_accum_sum);
  tcase_add_test(b, test_block_accum_rms);
  tcase_add_test(b, test_block_omap);
  tcase_add_test(b, test_alloc_failure);
  suite_add_tcase(s, b);
  TCase *x = tcase_create("examples");
  tcase_set_timeout(x, 300);
  tcase_add_test(x, test_example_rmsnorm_linear_small);
  tcase_add_test(x, test_example_gqa_small);
  tcase_add_test(x, test_example_mha_small);
  tcase_add_test(x, test_example_rmsnorm_linear);
  tcase_add_test(x, test_example_gqa);
  suite_add_tcase(s, x);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(interp_suite());
}
