/* SPDX-License-Identifier: MIT */
/* tests/check_graph.c - src/graph builder and shape rules: the public
 * builder API, every shape/dtype/name error, block-graph rules (imap,
 * fmap, omap, divisibility, loop/post phases, accumulators, fusion),
 * removal from the end, deep copy and whole-graph validation. */
#include "config.h"

#include "graph/graph.h"
#include "testutil.h"

/* Shape from a literal list. */
static mirs__shape shp(int n, int64_t a, int64_t b, int64_t c) {
  mirs__shape s = {.ndim = n, .d = {a, b, c}};
  return s;
}

/* Assert that the context's last error contains text. */
#define ck_err(ctx, text) ck_assert_msg(strstr(mirs_last_error(ctx), text), "error was: %s", \
                                        mirs_last_error(ctx))

START_TEST(test_public_builder) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_create(ctx, "gqa", &g), MIRS_OK);
  int64_t qd[3] = {2, 8, 16}, kd[3] = {2, 16, 32}, vd[3] = {2, 32, 16};
  mirs_tensor q, k, v, s, e, d, p, o;
  ck_assert_int_eq(mirs_graph_add_input(g, "Q", MIRS_F16, 3, qd, &q), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_input(g, "K", MIRS_F16, 3, kd, &k), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_input(g, "V", MIRS_F16, 3, vd, &v), MIRS_OK);
  mirs_tensor qk[2] = {q, k};
  ck_assert_int_eq(mirs_graph_add_op(g, "S", MIRS_OP_MATMUL, 2, qk, &s), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_EXP, 1, &s, &e), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_sum(g, "D", e, -1, &d), MIRS_OK);
  mirs_tensor ed[2] = {e, d};
  ck_assert_int_eq(mirs_graph_add_op(g, "P", MIRS_OP_DIV, 2, ed, &p), MIRS_OK);
  mirs_tensor pv[2] = {p, v};
  ck_assert_int_eq(mirs_graph_add_op(g, "O", MIRS_OP_MATMUL, 2, pv, &o), MIRS_OK);
  ck_assert_int_eq(mirs_graph_mark_output(g, o), MIRS_OK);
  ck_assert_int_eq(mirs_graph_validate(g), MIRS_OK);

  int64_t dims[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_tensor_shape(g, s, dims), 3);
  ck_assert_int_eq(dims[2], 32);
  ck_assert_int_eq(mirs_tensor_shape(g, d, dims), 3);
  ck_assert_int_eq(dims[2], 1);
  ck_assert_int_eq(g->ops[2].dim, 2); /* -1 normalised */
  ck_assert_str_eq(mirs_tensor_name(g, e), "t4"); /* fresh name */
  ck_assert_int_eq(mirs_graph_find(g, "P"), p);
  ck_assert_int_eq(mirs_graph_find(g, "nope"), -1);
  ck_assert_int_eq(mirs_graph_num_tensors(g), 8);
  ck_assert_int_eq(mirs_graph_num_ops(g), 5);
  ck_assert_int_eq(mirs_graph_num_custom(g), 0);
  ck_assert_int_eq(mirs_graph_num_outputs(g), 1);
  ck_assert_int_eq(mirs_graph_output(g, 0), o);
  ck_assert_int_eq(mirs_graph_output(g, 1), -1);
  ck_assert_str_eq(mirs_graph_name(g), "gqa");
  ck_assert_int_eq(mirs_tensor_dtype(g, o), MIRS_F16);
  mirs_graph_destroy(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_shape_errors) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, NULL, &g), MIRS_OK);
  ck_assert_str_eq(g->name, "program");
  mirs__shape a = shp(2, 4, 8, 0), b = shp(2, 6, 4, 0), c = shp(3, 2, 4, 8), one = shp(2, 4, 1, 0);
  int32_t A, B, C, O1, out;
  ck_assert_int_eq(mirs__graph_add_input(g, "A", MIRS_F16, &a, &A), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "B", MIRS_F16, &b, &B), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "C", MIRS_F16, &c, &C), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "O1", MIRS_F16, &one, &O1), MIRS_OK);
  int32_t ab[2] = {A, B}, ba[2] = {B, A}, ac[2] = {A, C}, ao[2] = {A, O1}, aa[2] = {A, A};
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, ab, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "inner dimensions differ: [4, 8] x [6, 4] (8 vs 6)");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, ba, -1, &out), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_ADD, 2, ab, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "cannot broadcast [4, 8] with [6, 4] (dim 0: 4 vs 6)");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_ADD, 2, ac, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "rank mismatch");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_MUL, 2, ao, -1, &out), MIRS_OK);
  ck_assert_int_eq(g->t[out].shape.d[1], 8); /* broadcast */
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_SUM, 1, &A, 2, &out), MIRS_SHAPE);
  ck_err(ctx, "sum: dim=2 is out of range for rank 2 (valid: -2 to 1)");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_SUM, 1, &A, -3, &out), MIRS_SHAPE);
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_EXP, 2, aa, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "exp takes 1 argument, got 2");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_ACCUM, 1, &A, -1, &out), MIRS_INVALID_ARG);
  ck_err(ctx, "block-level operator");
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_CUSTOM, 1, &A, -1, &out), MIRS_INVALID_ARG);
  int32_t bad = 99;
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_EXP, 1, &bad, -1, &out), MIRS_INVALID_ARG);
  /* matmul rank < 2 */
  mirs__shape v = shp(1, 8, 0, 0);
  int32_t V;
  ck_assert_int_eq(mirs__graph_add_input(g, "V", MIRS_F16, &v, &V), MIRS_OK);
  int32_t vv[2] = {V, V};
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, vv, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "rank >= 2");
  /* dtype mismatch */
  mirs__shape a32 = a;
  int32_t F;
  ck_assert_int_eq(mirs__graph_add_input(g, "F", MIRS_F32, &a32, &F), MIRS_OK);
  int32_t af[2] = {A, F};
  ck_assert_int_eq(mirs__graph_add_op(g, NULL, MIRS_OP_ADD, 2, af, -1, &out), MIRS_SHAPE);
  ck_err(ctx, "dtype mismatch: 'A' is f16, 'F' is f32");
  /* nothing was added by the failures */
  ck_assert_int_eq(g->nops, 2);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_input_errors) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "p", &g), MIRS_OK);
  mirs__shape s = shp(2, 4, 0, 0);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &s, NULL), MIRS_SHAPE);
  ck_err(ctx, "input 'X': dimension 1 is 0; dimensions must be >= 1");
  s = shp(2, 4, -3, 0);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &s, NULL), MIRS_SHAPE);
  s = shp(3, INT64_C(1) << 30, INT64_C(1) << 30, 4);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &s, NULL), MIRS_SHAPE);
  ck_err(ctx, "max_elements");
  s = shp(3, INT64_MAX, INT64_MAX, INT64_MAX); /* product overflows */
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &s, NULL), MIRS_SHAPE);
  s.ndim = 0;
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &s, NULL), MIRS_SHAPE);
  ck_err(ctx, "at least one dimension");
  s = shp(1, 4, 0, 0);
  ck_assert_int_eq(mirs__graph_add_input(g, "1X", MIRS_F16, &s, NULL), MIRS_INVALID_ARG);
  ck_err(ctx, "not a valid name");
  ck_assert_int_eq(mirs__graph_add_input(g, "output", MIRS_F16, &s, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__graph_add_input(g, "", MIRS_F16, &s, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", (mirs_dtype)7, &s, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_BF16, &s, NULL), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_BF16, &s, NULL), MIRS_INVALID_ARG);
  ck_err(ctx, "redefinition of 'X'");
  ck_assert_int_eq(mirs_option_set(ctx, "max_dims", "2"), MIRS_OK);
  s = shp(3, 2, 2, 2);
  ck_assert_int_eq(mirs__graph_add_input(g, "Y", MIRS_F16, &s, NULL), MIRS_SHAPE);
  ck_err(ctx, "rank 3 exceeds the limit of 2");
  /* outputs */
  ck_assert_int_eq(mirs__graph_mark_output(g, 5), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs__graph_mark_output(g, 0), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, 0), MIRS_INVALID_ARG);
  ck_err(ctx, "already an output");
  /* public API misuse is reported */
  ck_assert_int_eq(mirs_graph_add_input(NULL, "Z", MIRS_F16, 1, s.d, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_input(g, "Z", MIRS_F16, 9, s.d, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_input(g, "Z", MIRS_F16, 1, NULL, NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_SUM, 1, (mirs_tensor[]){0}, NULL),
                   MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_EXP, 1, NULL, NULL), MIRS_INVALID_ARG);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* X[8, 64] x W[64, 32] as one custom kernel with an RMS accumulator. */
static mirs_graph *fused_rms(mirs_context *ctx, int32_t gx, int32_t F, bool with_output) {
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "rms", &g), MIRS_OK);
  g->ugraph = true;
  mirs__shape xs = shp(2, 8, 64, 0), ws = shp(2, 64, 32, 0);
  int32_t X, W;
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &xs, &X), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_input(g, "W", MIRS_F16, &ws, &W), MIRS_OK);
  mirs__bgraph *bg;
  int32_t grid[3] = {gx, 1, 1}, block[3] = {128, 1, 1};
  ck_assert_int_eq(mirs__bg_new(ctx, grid, block, F, &bg), MIRS_OK);
  int32_t x, w, y, a, r, o;
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){-1, -1, -1}, 1, &x), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "w", W, (int32_t[]){1, -1, -1}, 0, &w), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "y", MIRS_OP_MATMUL, 2, (int32_t[]){x, w}, -1, false, &y),
                   MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "a", MIRS_OP_ACCUM, 1, &y, -1, false, &a), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "r", MIRS_OP_ACCUM_RMS, 1, &x, -1, false, &r), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "o", MIRS_OP_DIV, 2, (int32_t[]){a, r}, -1, true, &o),
                   MIRS_OK);
  ck_assert(bg->t[a].post && bg->t[o].post && !bg->t[y].post);
  ck_assert_int_eq(bg->t[x].shape.d[1], 64 / F);
  ck_assert_int_eq(bg->t[w].shape.d[0], 64 / F);
  ck_assert_int_eq(bg->t[w].shape.d[1], 32 / gx);
  ck_assert_int_eq(bg->t[r].shape.d[1], 1);
  if (with_output)
    ck_assert_int_eq(mirs__bg_add_output(g, bg, o, (int32_t[]){1, -1, -1}), MIRS_OK);
  int32_t first = -1;
  mirs_status s = mirs__graph_add_custom(g, bg, (const char *const[]){"O"}, &first);
  if (!with_output) {
    ck_assert_int_eq(s, MIRS_SHAPE);
    ck_err(ctx, "no output");
    mirs__graph_free(g);
    return NULL;
  }
  ck_assert_int_eq(s, MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, first), MIRS_OK);
  return g;
}

START_TEST(test_custom_kernel) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = fused_rms(ctx, 4, 8, true);
  int32_t O = mirs__graph_find(g, "O");
  ck_assert_int_eq(O, 2);
  ck_assert_int_eq(g->t[O].shape.ndim, 2);
  ck_assert_int_eq(g->t[O].shape.d[0], 8);
  ck_assert_int_eq(g->t[O].shape.d[1], 32); /* tile 8 x grid.x 4 */
  ck_assert_int_eq(g->ops[0].op, MIRS_OP_CUSTOM);
  ck_assert_int_eq(g->ops[0].nin, 2);
  ck_assert_int_eq(g->ops[0].bg->ops[6].dst, O);
  ck_assert_int_eq(mirs__graph_validate(g), MIRS_OK);
  ck_assert_int_eq(mirs_graph_num_custom(g), 1);
  /* clone is deep and equal */
  mirs_graph *c;
  ck_assert_int_eq(mirs__graph_clone(g, &c), MIRS_OK);
  ck_assert_ptr_ne(c->ops[0].bg, g->ops[0].bg);
  ck_assert_str_eq(c->ops[0].bg->t[5].name, "o");
  ck_assert_int_eq(c->nout, 1);
  mirs__graph_free(g);
  ck_assert_int_eq(mirs__graph_validate(c), MIRS_OK);
  mirs__graph_free(c);
  ck_assert_int_eq((int)(fused_rms(ctx, 4, 8, false) == NULL), 1);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_block_rules) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "p", &g), MIRS_OK);
  mirs__shape xs = shp(2, 8, 64, 0);
  int32_t X;
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &xs, &X), MIRS_OK);
  mirs__bgraph *bg;
  int32_t block[3] = {128, 1, 1};
  /* grid / block / forloop ranges */
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){0, 1, 1}, block, 1, &bg), MIRS_SHAPE);
  ck_err(ctx, "grid.x is 0");
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 70000, 1}, block, 1, &bg), MIRS_SHAPE);
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, (int32_t[]){2048, 1, 1}, 1, &bg),
                   MIRS_SHAPE);
  ck_err(ctx, "1024 threads");
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, block, 0, &bg), MIRS_SHAPE);
  ck_err(ctx, "forloop is 0");
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){2, 4, 1}, block, 4, &bg), MIRS_OK);
  int32_t x, t;
  /* imap / fmap */
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, X, (int32_t[]){2, -1, -1}, -1, &t), MIRS_SHAPE);
  ck_err(ctx, "imap for grid.x is 2");
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, X, (int32_t[]){0, 0, -1}, -1, &t), MIRS_SHAPE);
  ck_err(ctx, "grid.x and grid.y both partition dim 0");
  /* One dim both partitioned and walked (split-K): grid.y = 4 picks a
   * chunk of dim 1, forloop = 4 walks its tiles. */
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, X, (int32_t[]){-1, 1, -1}, 1, &t), MIRS_OK);
  ck_assert_int_eq(bg->t[t].shape.d[1], xs.d[1] / 16);
  {
    mirs__tile_place pl;
    mirs__sched_place(bg, &bg->ops[bg->t[t].producer], &pl);
    ck_assert_int_eq(pl.grid[1], 1);
    ck_assert(pl.forloop[1]);
    ck_assert_int_eq(pl.gunit[1], xs.d[1] / 4);
    int64_t off[MIRS_MAX_DIMS];
    mirs__sched_offsets(bg, &bg->ops[bg->t[t].producer], (int32_t[]){0, 3, 0}, 2, off);
    ck_assert_int_eq(off[1], 3 * (xs.d[1] / 4) + 2 * (xs.d[1] / 16));
  }
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, X, (int32_t[]){-1, -1, -1}, 2, &t), MIRS_SHAPE);
  ck_err(ctx, "fmap is 2");
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, X, (int32_t[]){-2, -1, -1}, -1, &t), MIRS_SHAPE);
  mirs__shape odd = shp(2, 6, 64, 0);
  int32_t Y;
  ck_assert_int_eq(mirs__graph_add_input(g, "Y", MIRS_F16, &odd, &Y), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, Y, (int32_t[]){-1, 0, -1}, -1, &t), MIRS_SHAPE);
  ck_err(ctx, "dim 0 (size 6) is not divisible by grid.y = 4");
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, Y, (int32_t[]){-1, -1, -1}, 0, &t), MIRS_SHAPE);
  ck_err(ctx, "not divisible by forloop = 4");
  /* 24 divides by grid.y = 4 and by forloop = 4, but its chunks of 6 do
   * not divide by the forloop: refused. */
  mirs__shape z24 = shp(2, 2, 24, 0);
  int32_t Z;
  ck_assert_int_eq(mirs__graph_add_input(g, "Z", MIRS_F16, &z24, &Z), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, NULL, Z, (int32_t[]){-1, 1, -1}, 1, &t), MIRS_SHAPE);
  ck_err(ctx, "partitioned by grid.y = 4 into chunks of 6 not divisible by forloop = 4");
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){0, -1, -1}, 1, &x), MIRS_OK);
  ck_assert_int_eq(bg->t[x].shape.d[0], 4);
  ck_assert_int_eq(bg->t[x].shape.d[1], 16);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){0, -1, -1}, 1, &t),
                   MIRS_INVALID_ARG);
  ck_err(ctx, "redefinition of 'x'");
  /* block names may not shadow kernel tensors (printed text must parse back) */
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "Y", X, (int32_t[]){0, -1, -1}, 1, &t),
                   MIRS_INVALID_ARG);
  ck_err(ctx, "redefinition of 'Y'");
  mirs__shape one = shp(1, 2, 0, 0);
  char fresh[16];
  snprintf(fresh, sizeof fresh, "b%d", bg->nt);
  ck_assert_int_eq(mirs__graph_add_input(g, fresh, MIRS_F16, &one, NULL), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, NULL, MIRS_OP_EXP, 1, &x, -1, false, &t), MIRS_OK);
  ck_assert_str_ne(bg->t[t].name, fresh);
  mirs__bg_pop_op(ctx, bg);
  /* phases */
  int32_t e, a, s, m;
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "e", MIRS_OP_EXP, 1, &x, -1, false, &e), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "a", MIRS_OP_ACCUM, 1, &e, -1, false, &a), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, NULL, MIRS_OP_ACCUM, 1, &a, -1, false, &t), MIRS_SHAPE);
  ck_err(ctx, "already a post-loop value");
  ck_assert_int_eq(mirs__bg_add_op(g, bg, NULL, MIRS_OP_ADD, 2, (int32_t[]){a, e}, -1, false, &t),
                   MIRS_SHAPE);
  ck_err(ctx, "mixes per-iteration and post-loop");
  ck_assert_int_eq(mirs__bg_add_op(g, bg, NULL, MIRS_OP_MATMUL, 2, (int32_t[]){x, x}, -1, true, &t),
                   MIRS_INVALID_ARG);
  ck_err(ctx, "only elementwise operators can be fused");
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "s", MIRS_OP_ACCUM_SUM, 1, &e, -1, false, &s), MIRS_OK);
  ck_assert_int_eq(bg->t[s].shape.d[1], 1);
  ck_assert_int_eq(bg->ops[bg->t[s].producer].dim, 1);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, NULL, MIRS_OP_INPUT, 1, &x, -1, false, &t),
                   MIRS_INVALID_ARG);
  /* outputs: must be post and placed */
  ck_assert_int_eq(mirs__bg_add_output(g, bg, e, (int32_t[]){0, 1, -1}), MIRS_SHAPE);
  ck_err(ctx, "has not passed an accumulator");
  ck_assert_int_eq(mirs__bg_add_output(g, bg, a, (int32_t[]){0, -1, -1}), MIRS_SHAPE);
  ck_err(ctx, "grid.y = 4 but omap places it nowhere");
  ck_assert_int_eq(mirs__bg_add_output(g, bg, a, (int32_t[]){0, 0, -1}), MIRS_SHAPE);
  ck_err(ctx, "both place dim 0");
  ck_assert_int_eq(mirs__bg_add_output(g, bg, a, (int32_t[]){0, 5, -1}), MIRS_SHAPE);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "m", MIRS_OP_SQRT, 1, &a, -1, true, &m), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_output(g, bg, m, (int32_t[]){0, 1, -1}), MIRS_OK);
  /* pop removes from the end */
  int32_t nops = bg->nops, nt = bg->nt;
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "z", MIRS_OP_RELU, 1, &a, -1, false, &t), MIRS_OK);
  mirs__bg_pop_op(ctx, bg);
  ck_assert_int_eq(bg->nops, nops);
  ck_assert_int_eq(bg->nt, nt);
  ck_assert_int_eq(mirs__graph_add_custom(g, bg, NULL, &t), MIRS_OK);
  mirs__shape os;
  mirs__bg_output_shape(g->ops[0].bg, &g->ops[0].bg->ops[g->ops[0].bg->nops - 1], &os);
  ck_assert_int_eq(os.d[0], 8);
  ck_assert_int_eq(os.d[1], 64); /* tile 16 x grid.y 4 */
  ck_assert_int_eq(mirs__graph_mark_output(g, t), MIRS_OK);
  /* fused sqrt on an accumulator with a single consumer is valid */
  ck_assert_int_eq(mirs__graph_validate(g), MIRS_OK);
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_fusion_validation) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g;
  ck_assert_int_eq(mirs__graph_new(ctx, "p", &g), MIRS_OK);
  mirs__shape xs = shp(2, 8, 64, 0);
  int32_t X, t;
  ck_assert_int_eq(mirs__graph_add_input(g, "X", MIRS_F16, &xs, &X), MIRS_OK);
  /* fused onto a loaded tile */
  mirs__bgraph *bg;
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, (int32_t[]){128, 1, 1}, 1, &bg),
                   MIRS_OK);
  int32_t x, e, a, b2;
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){-1, -1, -1}, -1, &x), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "e", MIRS_OP_EXP, 1, &x, -1, true, &e), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "a", MIRS_OP_ACCUM, 1, &e, -1, false, &a), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_output(g, bg, a, (int32_t[]){-1, -1, -1}), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_custom(g, bg, NULL, &t), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, t), MIRS_OK);
  ck_assert_int_eq(mirs__graph_validate(g), MIRS_SHAPE);
  ck_err(ctx, "is a loaded tile");
  mirs__graph_pop_op(g);
  ck_assert_int_eq(g->nops, 0);
  ck_assert_int_eq(g->nout, 0);
  ck_assert_int_eq(g->nt, 1);
  ck_assert_int_eq(mirs__graph_validate(g), MIRS_SHAPE);
  ck_err(ctx, "has no output");
  /* fused into a value with two consumers */
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, (int32_t[]){128, 1, 1}, 1, &bg),
                   MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_input(g, bg, "x", X, (int32_t[]){-1, -1, -1}, -1, &x), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "e", MIRS_OP_EXP, 1, &x, -1, false, &e), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "s", MIRS_OP_SQUARE, 1, &e, -1, true, &b2), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "m", MIRS_OP_MUL, 2, (int32_t[]){e, b2}, -1, false, &b2),
                   MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_op(g, bg, "a", MIRS_OP_ACCUM, 1, &b2, -1, false, &a), MIRS_OK);
  ck_assert_int_eq(mirs__bg_add_output(g, bg, a, (int32_t[]){-1, -1, -1}), MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_custom(g, bg, (const char *const[]){"O"}, &t), MIRS_OK);
  ck_assert_int_eq(mirs__graph_mark_output(g, t), MIRS_OK);
  ck_assert_int_eq(mirs__graph_validate(g), MIRS_SHAPE);
  ck_err(ctx, "which has 2 consumers");
  /* custom with no input */
  ck_assert_int_eq(mirs__bg_new(ctx, (int32_t[]){1, 1, 1}, (int32_t[]){128, 1, 1}, 1, &bg),
                   MIRS_OK);
  ck_assert_int_eq(mirs__graph_add_custom(g, bg, NULL, &t), MIRS_SHAPE);
  ck_err(ctx, "no input");
  mirs__graph_free(g);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_pop_and_alloc_failures) {
  mirs_context *ctx = tu_ctx(NULL);
  /* Every allocation failure while building leaves a consistent graph
   * that frees cleanly. */
  for (long n = 1; n < 200; n++) {
    mirs_graph *g = NULL;
    mirs__core_fail_alloc_after(ctx, n);
    bool failed = false;
    if (mirs__graph_new(ctx, "p", &g) != MIRS_OK) {
      failed = true;
    } else {
      mirs__shape xs = shp(2, 8, 64, 0), ws = shp(2, 64, 32, 0);
      int32_t X, W, Y, Z;
      failed = mirs__graph_add_input(g, "X", MIRS_F16, &xs, &X) != MIRS_OK ||
               mirs__graph_add_input(g, "W", MIRS_F16, &ws, &W) != MIRS_OK ||
               mirs__graph_add_op(g, "Y", MIRS_OP_MATMUL, 2, (int32_t[]){X, W}, -1, &Y) !=
                   MIRS_OK ||
               mirs__graph_add_op(g, NULL, MIRS_OP_SUM, 1, &Y, 1, &Z) != MIRS_OK ||
               mirs__graph_mark_output(g, Z) != MIRS_OK;
      mirs_graph *c = NULL;
      if (!failed)
        failed = mirs__graph_clone(g, &c) != MIRS_OK;
      mirs__graph_free(c);
      if (!failed) {
        mirs__graph_pop_op(g);
        ck_assert_int_eq(g->nops, 1);
        ck_assert_int_eq(g->nout, 0);
        ck_assert_int_eq(g->nt, 3);
      }
      mirs__graph_free(g);
    }
    mirs__core_fail_alloc_after(ctx, 0);
    ck_assert_uint_eq(mirs_memory_current(ctx), 0);
    if (!failed)
      break;
    ck_assert_int_eq(mirs_last_status(ctx), MIRS_NOMEM);
  }
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_op_table) {
  mirs_op op;
  ck_assert_int_eq(mirs_op_lookup("rms_norm", &op), MIRS_OK);
  ck_assert_int_eq(op, MIRS_OP_RMS_NORM);
  ck_assert_int_eq(mirs_op_lookup("conv", &op), MIRS_NOT_FOUND);
  ck_assert_str_eq(mirs_op_name(MIRS_OP_ACCUM_SUM), "accum_sum");
  ck_assert_ptr_null(mirs_op_name(MIRS_OP_COUNT));
  ck_assert_str_eq(mirs_dtype_name(MIRS_BF16), "bf16");
  for (int i = 0; i < MIRS_OP_COUNT; i++) {
    ck_assert_int_eq(mirs_op_lookup(mirs_op_name((mirs_op)i), &op), MIRS_OK);
    ck_assert_int_eq(op, i);
    ck_assert(mirs__graph_ops[i].levels != 0);
  }
  ck_assert(mirs__op_is_elementwise(MIRS_OP_DIV));
  ck_assert(!mirs__op_is_elementwise(MIRS_OP_SUM));
}
END_TEST

static Suite *graph_suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("builder");
  tcase_add_test(tc, test_public_builder);
  tcase_add_test(tc, test_shape_errors);
  tcase_add_test(tc, test_input_errors);
  tcase_add_test(tc, test_custom_kernel);
  tcase_add_test(tc, test_block_rules);
  tcase_add_test(tc, test_fusion_validation);
  tcase_add_test(tc, test_pop_and_alloc_failures);
  tcase_add_test(tc, test_op_table);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(graph_suite());
}
