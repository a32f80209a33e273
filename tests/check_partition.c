/* SPDX-License-Identifier: MIT */
/* tests/check_partition.c - partitioning and the result cache through the
 * public API (mirsearch/partition.h): the cut (every op in one piece,
 * pieces in a topological order, x/y names), a run whose stitched µGraph
 * verifies against the program, a second run served from the cache (no
 * state explored), damaged and foreign cache entries ignored, library
 * pieces for operators the search does not handle, a stopped run, bad
 * arguments, the cache under mirs_search_run, the note of a stitched
 * graph checked in float64 only, a cut that passes no causal_mask
 * -inf from piece to piece, and a piece's candidates priced where they
 * run (reading their inputs' views: search/partition.h), in the whole
 * stitched µGraph (a later reader decides a view or a copy). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/partition.h"
#include "testutil.h"

/* A small gated MLP after an RMSNorm: five ops, cut into pieces of at
 * most two so each search takes a second at most. */
static const char mini[] = "program mini\n"
                           "input X : f16[4, 16]\n"
                           "input W1 : f16[16, 16]\n"
                           "input W2 : f16[16, 16]\n"
                           "N = rms_norm(X)\n"
                           "G1 = matmul(N, W1)\n"
                           "G2 = matmul(N, W2)\n"
                           "G = silu(G1)\n"
                           "U = mul(G, G2)\n"
                           "output U\n";

/* A context for partitions with a fresh cache directory in dir. */
static mirs_context *part_ctx(tu_log *l, char *dir, size_t size) {
  mirs_context *ctx = tu_ctx(l);
  tu_tmp(dir, size, "mirs_check_partition.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(mirs_option_set(ctx, "cache_dir", dir), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "partition_max_ops", "2"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "threads", "2"), MIRS_OK);
  return ctx;
}

static mirs_graph *parse(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, strlen(text), "mini.graph", &g), MIRS_OK);
  return g;
}

/* Remove the cache directory and its entries. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(dir);
}

/* The entries of dir (at most n) into names; returns how many. */
static int entries(const char *dir, char names[][4096], int n) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int k = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && k < n)
    if (strstr(e->d_name, ".mcache"))
      snprintf(names[k++], 4096, "%s/%s", dir, e->d_name);
  closedir(d);
  return k;
}

/* Run a partition of text; check that the stitched graph verifies. */
static mirs_partition *run_ok(mirs_context *ctx, const mirs_graph *g) {
  mirs_partition *p = NULL;
  ck_assert_int_eq(mirs_partition_create(ctx, g, &p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_run(p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_stopped(p), 0);
  const mirs_graph *r = mirs_partition_result(p);
  ck_assert_ptr_nonnull(r);
  mirs_partition_stats s;
  ck_assert_int_eq(mirs_partition_get_stats(p, &s), MIRS_OK);
  ck_assert_int_eq(s.verify.equal, 1);
  ck_assert_int_eq(s.pending, 0);
  /* Independently of the run's own check. */
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(ctx, g, r, &v), MIRS_OK);
  ck_assert_msg(v.equal, "stitched graph differs: %s", v.reason);
  ck_assert(s.cost_after <= s.cost_before);
  return p;
}

/* A piece that reads a transposed view: Y = exp(Xt), Xt = permute(X) a
 * library piece (a view where it runs).  Two candidates for the exp
 * piece, priced alone (inputs dense, as its search ranks them) and in
 * place: A walks rows of Xt (64 x 8 blocks of [1, 512]), B its columns
 * (4096 blocks of [64, 1]).  Alone A is the cheaper; in place A's rows
 * are columns of X, a sector per element, and B is. */
static const char *const VIEW_PIECE = "program pv\ninput X : f16[4096, 64]\n"
                                      "Xt = permute(X, dims=[1, 0])\nY = exp(Xt)\noutput Y\n";
static const char *const VIEW_CAND =
    "ugraph c\ninput x0 : f16[64, 4096]\n"
    "y0 = custom(grid=[%s], block=[128, 1, 1], forloop=1) {\n"
    "  x = input(x0, imap=[%s], fmap=-1)\n  e = exp(x)\n  a = accum(e)\n"
    "  output(a, omap=[%s])\n}\noutput y0\n";

START_TEST(test_in_place_ranking) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = parse(ctx, VIEW_PIECE);
  mirs_partition *p = NULL;
  ck_assert_int_eq(mirs_partition_create(ctx, g, &p), MIRS_OK);
  ck_assert_int_eq(p->npieces, 2);
  ck_assert_int_eq(p->piece[0].info.kind, MIRS_PIECE_LIBRARY);
  /* (piece 0 as run_piece keeps a library piece) */
  ck_assert_int_eq(mirs__graph_clone(p->piece[0].prog, &p->piece[0].best), MIRS_OK);
  static const char *const maps[2][2] = {{"64, 8, 1", "0, 1, -1"}, {"4096, 1, 1", "1, -1, -1"}};
  mirs_graph *c[2];
  double alone[2], in_place[2], fixed[2], before = -1;
  for (int i = 0; i < 2; i++) {
    char text[1024];
    snprintf(text, sizeof text, VIEW_CAND, maps[i][0], maps[i][1], maps[i][1]);
    c[i] = parse(ctx, text);
    mirs_cost k = MIRS_COST_INIT;
    ck_assert_int_eq(mirs_graph_cost(ctx, c[i], NULL, &k), MIRS_OK);
    alone[i] = k.seconds;
    fixed[i] = k.fixed_seconds;
  }
  ck_assert(p->piece[1].at_layout);
  ck_assert(!p->piece[0].at_layout); /* (a library piece: nothing to choose) */
  ck_assert_int_eq(
      mirs__partition_in_place(p, 1, (const mirs_graph *const *)c, 2, in_place, &before),
      MIRS_OK);
  ck_assert_msg(alone[0] < alone[1], "alone: %g %g", alone[0], alone[1]);
  ck_assert_msg(in_place[1] < in_place[0], "in place: %g %g", in_place[0], in_place[1]);
  /* B reads the view as it reads a dense input; A pays the sectors (the
   * permute stays a view either way: the whole program is the piece). */
  ck_assert(fabs(in_place[1] - alone[1]) < 1e-12);
  /* (A's time beyond its launch and fixed cost: 6.4 times as long in
   * place on the calibrated H100 profile) */
  ck_assert_msg(in_place[0] - fixed[0] > 4 * (alone[0] - fixed[0]), "A in place %g, alone %g",
                in_place[0], alone[0]);
  /* The piece as written (exp through the view, 16x its reads) costs
   * more in place than alone. */
  mirs_cost w = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_cost(ctx, p->piece[1].prog, NULL, &w), MIRS_OK);
  ck_assert(before > w.seconds);
  /* A piece writing a permute's input is at a layout op too (its store
   * may go through the view); one far from any is not. */
  mirs_graph *d = parse(ctx, "program d\ninput X : f16[64, 64]\nY = exp(X)\nZ = max(Y, dim=1)\n"
                            "W = permute(Z, dims=[1, 0])\nV = exp(X)\noutput W\noutput V\n");
  mirs_partition *q = NULL;
  ck_assert_int_eq(mirs_option_set(ctx, "partition_max_ops", "2"), MIRS_OK);
  ck_assert_int_eq(mirs_partition_create(ctx, d, &q), MIRS_OK);
  ck_assert_int_eq(q->npieces, 3);
  for (int32_t i = 0; i < q->npieces; i++) {
    bool lib = q->piece[i].info.kind == MIRS_PIECE_LIBRARY;
    bool writes_z = !lib && q->piece[i].nops == 2;
    ck_assert_msg(q->piece[i].at_layout == writes_z, "piece %d", (int)i);
  }
  mirs_partition_destroy(q);
  mirs_graph_destroy(d);
  for (int i = 0; i < 2; i++)
    mirs_graph_destroy(c[i]);
  mirs_partition_destroy(p);
  /* The whole run: the search's best alone walks Xt's rows (6.66 us in
   * place, no better than the piece as written, which alone would be
   * kept); ranked in place, a kernel walking its columns is taken. */
  char dir[512];
  mirs_context *rc = part_ctx(NULL, dir, sizeof dir);
  mirs_partition *r = run_ok(rc, g);
  mirs_piece_info info = {.struct_size = sizeof info};
  ck_assert_int_eq(mirs_partition_piece(r, 1, &info), MIRS_OK);
  ck_assert_int_eq(info.kind, MIRS_PIECE_SEARCHED);
  /* (at least 0.5 us saved: a share of the total no longer says it, since
   * each kernel's fixed cost, cost.h MIRS__COST_KERNEL_FIXED_S, is in both) */
  ck_assert_msg(info.cost_before - info.cost_after > 0.5e-6, "%g us -> %g us",
                info.cost_before * 1e6, info.cost_after * 1e6);
  mirs_partition_destroy(r);
  mirs_context_destroy(rc);
  remove_dir(dir);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Whether a and b agree to a relative 1e-12. */
static bool near(double a, double b) {
  return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* Xt = permute(X), read by Y = exp(Xt) and Z = sum(Xt, dim=1), each op a
 * piece.  Y as written reads the view a sector per element, so with it
 * alone the permute is cheaper as a copy kernel (views.c), and the exp
 * piece, priced before the later readers were known, kept its program.
 * One of its results walks Xt's columns (X's rows): with it the permute
 * is a view for both readers, and the whole program is 13.6 -> 10.1 us.
 * Ranked in the whole stitched µGraph, that is the choice; the table's
 * rows add up to its cost, which is the stitched graph's, and no option
 * of a piece at the permute makes the whole cheaper. */
static const char *const LATER_READER = "program pv3\ninput X : f16[4096, 128]\n"
                                        "Xt = permute(X, dims=[1, 0])\nY = exp(Xt)\n"
                                        "Z = sum(Xt, dim=1)\noutput Y\noutput Z\n";

START_TEST(test_ranked_in_whole_graph) {
  char dir[512];
  mirs_context *ctx = part_ctx(NULL, dir, sizeof dir);
  ck_assert_int_eq(mirs_option_set(ctx, "partition_max_ops", "1"), MIRS_OK);
  mirs_graph *g = parse(ctx, LATER_READER);
  mirs_partition *p = run_ok(ctx, g);
  ck_assert_int_eq(p->npieces, 3);
  const mirs_graph *r = mirs_partition_result(p);
  mirs_partition_stats st;
  ck_assert_int_eq(mirs_partition_get_stats(p, &st), MIRS_OK);
  mirs_cost whole = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_cost(ctx, r, NULL, &whole), MIRS_OK);
  ck_assert_msg(near(st.cost_after, whole.seconds), "%g %g", st.cost_after, whole.seconds);
  ck_assert_int_eq(st.kernels, whole.kernels);
  double rows = 0;
  for (int i = 0; i < 3; i++) {
    mirs_piece_info info = MIRS_PIECE_INFO_INIT;
    ck_assert_int_eq(mirs_partition_piece(p, i, &info), MIRS_OK);
    rows += info.cost_after;
  }
  ck_assert_msg(near(rows, st.cost_after), "rows %g, whole %g", rows, st.cost_after);
  /* The permute is a view: the exp's result reads it, not a copy. */
  ck_assert_int_eq(p->piece[1].info.kind, MIRS_PIECE_SEARCHED);
  ck_assert_int_eq(whole.kernels, 2);
  ck_assert_msg(st.cost_after < 0.8 * st.cost_before, "%g -> %g us", st.cost_before * 1e6,
                st.cost_after * 1e6);
  /* No option of the exp or the sum piece (its search's results, served
   * from the cache, or its program) makes the whole cheaper. */
  for (int32_t i = 1; i < 3; i++) {
    mirs_search *s = NULL;
    ck_assert_int_eq(mirs_search_create(ctx, p->piece[i].prog, &s), MIRS_OK);
    ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
    ck_assert_int_eq(mirs_search_cache_status(s), 1);
    int n = mirs_search_num_results(s);
    ck_assert_int_ge(n, 1);
    const mirs_graph *cand[16];
    double cost[16], before;
    n = n < 16 ? n : 16;
    for (int j = 0; j < n; j++)
      cand[j] = mirs_search_result(s, j);
    ck_assert_int_eq(mirs__partition_in_place(p, i, cand, n, cost, &before), MIRS_OK);
    ck_assert_msg(st.cost_after <= before * (1 + 1e-12), "piece %d as written: %g < %g", (int)i,
                  before, st.cost_after);
    for (int j = 0; j < n; j++)
      ck_assert_msg(st.cost_after <= cost[j] * (1 + 1e-12), "piece %d result %d: %g < %g",
                    (int)i, j, cost[j], st.cost_after);
    mirs_search_destroy(s);
  }
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* Every op in exactly one piece; every piece's inputs defined earlier. */
START_TEST(test_cut) {
  tu_log l;
  char dir[512];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  mirs_graph *g = parse(ctx, mini);
  mirs_partition *p;
  ck_assert_int_eq(mirs_partition_create(ctx, g, &p), MIRS_OK);
  int n = mirs_partition_num_pieces(p), seen[5] = {0};
  ck_assert_int_ge(n, 3);
  int defined[16] = {0};
  for (int t = 0; t < mirs_graph_num_tensors(g); t++)
    defined[t] = mirs_tensor_producer(g, t) < 0;
  for (int i = 0; i < n; i++) {
    mirs_piece_info info = MIRS_PIECE_INFO_INIT;
    ck_assert_int_eq(mirs_partition_piece(p, i, &info), MIRS_OK);
    ck_assert_int_le(info.num_ops, 2);
    ck_assert_int_eq(info.kind, MIRS_PIECE_PENDING);
    const mirs_graph *q = mirs_partition_piece_program(p, i);
    ck_assert_uint_eq(mirs_graph_hash(q), info.program_hash);
    ck_assert_int_eq(mirs_graph_num_outputs(q), info.num_outputs);
    ck_assert_str_eq(mirs_tensor_name(q, mirs_graph_output(q, 0)), "y0");
    ck_assert_int_ge(mirs_graph_find(q, "x0"), 0);
    for (int j = 0; j < info.num_ops; j++) {
      int op = mirs_partition_piece_op(p, i, j);
      ck_assert_int_ge(op, 0);
      seen[op]++;
      mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
      ck_assert_int_eq(mirs_graph_kernel(g, op, &kv), MIRS_OK);
      for (int a = 0; a < kv.num_inputs; a++) {
        int pr = mirs_tensor_producer(g, kv.inputs[a]);
        int inside = 0;
        for (int b = 0; b < info.num_ops; b++)
          inside |= mirs_partition_piece_op(p, i, b) == pr;
        ck_assert_msg(defined[kv.inputs[a]] || inside, "piece %d reads a later tensor", i);
      }
    }
    for (int j = 0; j < info.num_ops; j++) {
      mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
      mirs_graph_kernel(g, mirs_partition_piece_op(p, i, j), &kv);
      defined[kv.outputs[0]] = 1;
    }
    ck_assert_ptr_null(mirs_partition_piece_best(p, i));
  }
  for (int k = 0; k < 5; k++)
    ck_assert_int_eq(seen[k], 1);
  ck_assert_int_eq(mirs_partition_piece_op(p, 0, 99), -1);
  ck_assert_ptr_null(mirs_partition_result(p));
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* A run verifies; a second run takes every piece from the cache. */
START_TEST(test_run_then_cache) {
  tu_log l;
  char dir[512];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  mirs_graph *g = parse(ctx, mini);
  mirs_partition *p = run_ok(ctx, g);
  mirs_partition_stats s1;
  mirs_partition_get_stats(p, &s1);
  ck_assert_int_eq(s1.cached, 0);
  ck_assert_int_gt(s1.searched + s1.kept, 0);
  ck_assert_uint_gt(s1.states_explored, 0);
  uint64_t h1 = mirs_graph_hash(mirs_partition_result(p));
  char *cu = NULL, *json = NULL, *table = NULL;
  size_t len = 0;
  ck_assert_int_eq(mirs_partition_cuda(p, NULL, &cu), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(cu, "__global__"));
  ck_assert_int_eq(mirs_partition_report_json(p, &json, &len), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(json, "\"pieces\""));
  ck_assert_int_eq(mirs_partition_report_table(p, &table, NULL), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(table, "whole program"));
  mirs_free(ctx, cu);
  mirs_free(ctx, json);
  mirs_free(ctx, table);
  mirs_partition_destroy(p);

  p = run_ok(ctx, g);
  mirs_partition_stats s2;
  mirs_partition_get_stats(p, &s2);
  ck_assert_uint_eq(s2.states_explored, 0); /* no search ran */
  ck_assert_int_eq(s2.searched, 0);
  ck_assert_int_eq(s2.cached + s2.kept, s1.searched + s1.kept);
  for (int i = 0; i < mirs_partition_num_pieces(p); i++) {
    mirs_piece_info info = MIRS_PIECE_INFO_INIT;
    mirs_partition_piece(p, i, &info);
    ck_assert_int_eq(info.from_cache, 1);
  }
  ck_assert_uint_eq(mirs_graph_hash(mirs_partition_result(p)), h1);
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* Damaged, truncated and foreign entries are ignored with a warning. */
START_TEST(test_bad_entries) {
  tu_log l;
  char dir[512], names[8][4096];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  mirs_graph *g = parse(ctx, mini);
  mirs_partition_destroy(run_ok(ctx, g));
  int n = entries(dir, names, 8);
  ck_assert_int_ge(n, 3);
  /* 2: another key's entry in its place; 0: one byte changed; 1: cut short. */
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", names[0], names[2]);
  ck_assert_int_eq(system(cmd), 0);
  FILE *f = fopen(names[0], "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 40, SEEK_SET);
  int ch = fgetc(f);
  fseek(f, 40, SEEK_SET);
  fputc(ch ^ 1, f);
  fclose(f);
  ck_assert_int_eq(truncate(names[1], 30), 0);
  l.len = 0;
  l.text[0] = '\0';
  mirs_partition *p = run_ok(ctx, g);
  mirs_partition_stats s;
  mirs_partition_get_stats(p, &s);
  ck_assert_uint_gt(s.states_explored, 0); /* the bad ones were searched again */
  ck_assert_ptr_nonnull(strstr(l.text, "checksum mismatch"));
  ck_assert_ptr_nonnull(strstr(l.text, "not a complete cache entry"));
  ck_assert_ptr_nonnull(strstr(l.text, "foreign"));
  mirs_partition_destroy(p);
  /* ... and rewritten: a third run is all hits. */
  p = run_ok(ctx, g);
  mirs_partition_get_stats(p, &s);
  ck_assert_uint_eq(s.states_explored, 0);
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* An operator the search does not handle stays a library call. */
START_TEST(test_library_piece) {
  tu_log l;
  char dir[512];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  ck_assert_int_eq(mirs_option_set(ctx, "kernel_ops", "matmul,mul"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "block_ops", "matmul,mul,rms_norm,accum,accum_rms"),
                   MIRS_OK);
  mirs_graph *g = parse(ctx, mini);
  mirs_partition *p = run_ok(ctx, g);
  int library = 0;
  for (int i = 0; i < mirs_partition_num_pieces(p); i++) {
    mirs_piece_info info = MIRS_PIECE_INFO_INIT;
    mirs_partition_piece(p, i, &info);
    if (info.kind == MIRS_PIECE_LIBRARY) {
      library++;
      ck_assert_int_eq(info.num_ops, 1);
      mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
      mirs_graph_kernel(g, mirs_partition_piece_op(p, i, 0), &kv);
      ck_assert_int_eq(kv.op, MIRS_OP_SILU);
      ck_assert_uint_eq(mirs_graph_hash(mirs_partition_piece_best(p, i)), info.program_hash);
    }
  }
  ck_assert_int_eq(library, 1);
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

static void stop_after_first(void *user, int piece, int done, int total) {
  (void)piece;
  (void)total;
  if (done >= 1)
    mirs_partition_stop(user);
}

/* A stopped run stitches nothing; the pieces it finished are cached. */
START_TEST(test_stopped) {
  tu_log l;
  char dir[512];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  mirs_graph *g = parse(ctx, mini);
  mirs_partition *p;
  ck_assert_int_eq(mirs_partition_create(ctx, g, &p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_set_callbacks(p, stop_after_first, NULL, p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_run(p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_stopped(p), 1);
  ck_assert_ptr_null(mirs_partition_result(p));
  char *cu = NULL;
  ck_assert_int_eq(mirs_partition_cuda(p, NULL, &cu), MIRS_INVALID_ARG);
  mirs_partition_stats s;
  mirs_partition_get_stats(p, &s);
  ck_assert_int_ge(s.pending, 1);
  ck_assert_int_eq(mirs_partition_run(p), MIRS_INVALID_ARG); /* once */
  mirs_partition_destroy(p);
  p = run_ok(ctx, g);
  mirs_piece_info info = MIRS_PIECE_INFO_INIT;
  mirs_partition_piece(p, 0, &info);
  ck_assert_int_eq(info.from_cache, 1);
  ck_assert_uint_eq(info.states_explored, 0);
  mirs_partition_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* Misuse is reported, not crashed on. */
START_TEST(test_bad_arguments) {
  tu_log l;
  mirs_context *ctx = tu_ctx(&l);
  mirs_partition *p = NULL;
  mirs_graph *g = parse(ctx, mini);
  ck_assert_int_eq(mirs_partition_create(NULL, g, &p), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_partition_create(ctx, NULL, &p), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_partition_run(NULL), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_partition_num_pieces(NULL), 0);
  ck_assert_ptr_null(mirs_partition_result(NULL));
  mirs_graph *u = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.ugraph"), &u),
                   MIRS_OK);
  ck_assert_int_eq(mirs_partition_create(ctx, u, &p), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "custom kernel"));
  ck_assert_int_eq(mirs_option_set(ctx, "partition_max_ops", "0"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_partition_create(ctx, g, &p), MIRS_OK);
  mirs_piece_info info = MIRS_PIECE_INFO_INIT;
  ck_assert_int_eq(mirs_partition_piece(p, 99, &info), MIRS_INVALID_ARG);
  ck_assert_ptr_null(mirs_partition_piece_program(p, -1));
  mirs_partition_destroy(p);
  mirs_partition_destroy(NULL);
  char buf[8];
  ck_assert_int_ne(mirs_cache_default_dir(buf, sizeof buf), MIRS_OK);
  mirs_graph_destroy(u);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* mirs_search_run stores a complete search and serves it again. */
START_TEST(test_search_cache) {
  tu_log l;
  char dir[512];
  mirs_context *ctx = part_ctx(&l, dir, sizeof dir);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &g),
                   MIRS_OK);
  uint64_t best[2];
  for (int round = 0; round < 2; round++) {
    mirs_search *s;
    ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
    ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
    mirs_search_stats st;
    mirs_search_get_stats(s, &st);
    ck_assert_int_eq(st.complete, 1);
    ck_assert_int_eq(mirs_search_cache_status(s), round == 0 ? 2 : 1);
    if (round == 1) {
      ck_assert_uint_eq(st.states_explored, 0);
      char ck[600];
      snprintf(ck, sizeof ck, "%s/ckpt", dir);
      ck_assert_int_eq(mirs_search_checkpoint(s, ck), MIRS_INVALID_ARG);
    }
    ck_assert_int_gt(mirs_search_num_results(s), 0);
    best[round] = mirs_search_result_hash(s, 0);
    char *json = NULL;
    ck_assert_int_eq(mirs_search_report_json(s, 1, &json, NULL), MIRS_OK);
    ck_assert_ptr_nonnull(strstr(json, round == 0 ? "\"cache\": \"stored\"" : "\"cache\": \"hit\""));
    mirs_free(ctx, json);
    mirs_search_destroy(s);
  }
  ck_assert_uint_eq(best[0], best[1]);
  /* Another option the results depend on: another key, a miss. */
  ck_assert_int_eq(mirs_option_set(ctx, "max_kernel_ops", "4"), MIRS_OK);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  ck_assert_int_eq(mirs_search_cache_status(s), 2);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  remove_dir(dir);
}
END_TEST

/* A partition of a small program (pieces of at most two ops), run. */
typedef struct small_run {
  tu_log l;
  char dir[512];
  mirs_context *ctx;
  mirs_graph *g;
  mirs_partition *p;
  mirs_partition_stats s;
} small_run;

/* Partition text into r; the stitched graph must compute it. */
static void small_start(small_run *r, const char *text) {
  r->ctx = part_ctx(&r->l, r->dir, sizeof r->dir);
  r->g = parse(r->ctx, text);
  ck_assert_int_eq(mirs_partition_create(r->ctx, r->g, &r->p), MIRS_OK);
  ck_assert_int_eq(mirs_partition_run(r->p), MIRS_OK);
  ck_assert_ptr_nonnull(mirs_partition_result(r->p));
  ck_assert_int_eq(mirs_partition_get_stats(r->p, &r->s), MIRS_OK);
  ck_assert_msg(r->s.verify.equal, "%s", r->s.verify.reason);
}

/* Free what small_start made, its cache directory too. */
static void small_end(small_run *r) {
  mirs_partition_destroy(r->p);
  mirs_graph_destroy(r->g);
  mirs_context_destroy(r->ctx);
  remove_dir(r->dir);
}

/* An exp of an exp across two pieces (each piece alone has a sound
 * fingerprint, the whole has none) is checked in float64 only, and the
 * note gives the verifier's own refusal, word for word (it once was one
 * fixed guess for every refusal). */
START_TEST(test_float64_only_note) {
  small_run r;
  small_start(&r, "program expexp\n"
                  "input X : f32[8, 8]\n"
                  "A = exp(X)\n"
                  "B = exp(A)\n"
                  "output B\n");
  const mirs_verify_result *sv = &r.s.verify;
  ck_assert_int_eq(mirs_partition_num_pieces(r.p), 2);
  ck_assert(sv->float_checked && !sv->fingerprint_equal && sv->trials == 0);
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(r.ctx, r.g, mirs_partition_result(r.p), &v), MIRS_UNSUPPORTED);
  const char *why = mirs_last_error(r.ctx);
  ck_assert_ptr_nonnull(strstr(why, "B = exp(A): the argument already depends on an exp"));
  ck_assert_msg(strstr(sv->reason, why), "note: %s\nverifier: %s", sv->reason, why);
  char *json = NULL;
  ck_assert_int_eq(mirs_partition_report_json(r.p, &json, NULL), MIRS_OK);
  ck_assert_ptr_nonnull(strstr(json, "\"note\": \"float64 only, no sound fingerprint: B = exp(A)"));
  mirs_free(r.ctx, json);
  small_end(&r);
}
END_TEST

/* A masked softmax: no piece takes causal_mask's -inf in and writes it
 * out again (piece Mx, C would: searched with M a finite input, its best
 * accumulates the masked C out of its kernel, which the field cannot
 * fingerprint), so the stitched graph verifies by fingerprints. */
START_TEST(test_mask_not_passed_on) {
  small_run r;
  small_start(&r, "program masked\n"
                  "input S : f32[8, 8]\n"
                  "Ss = mul(S, 0.25)\n"
                  "M = causal_mask(Ss)\n"
                  "Mx = max(M, dim=1)\n"
                  "C = sub(M, Mx)\n"
                  "E = exp(C)\n"
                  "output E\n");
  const mirs_verify_result *sv = &r.s.verify;
  ck_assert_msg(sv->fingerprint_equal && sv->trials > 0, "note: %s", sv->reason);
  ck_assert_str_eq(sv->reason, "");
  int mx = -1, c = -1; /* the pieces holding Mx (op 2) and C (op 3) */
  for (int i = 0; i < mirs_partition_num_pieces(r.p); i++)
    for (int j = 0, op; (op = mirs_partition_piece_op(r.p, i, j)) >= 0; j++) {
      mx = op == 2 ? i : mx;
      c = op == 3 ? i : c;
    }
  ck_assert_int_ne(mx, c);
  mirs_verify_result v;
  ck_assert_int_eq(mirs_verify(r.ctx, r.g, mirs_partition_result(r.p), &v), MIRS_OK);
  ck_assert(v.equal);
  small_end(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("partition");
  TCase *tc = tcase_create("partition");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_cut);
  tcase_add_test(tc, test_in_place_ranking);
  tcase_add_test(tc, test_ranked_in_whole_graph);
  tcase_add_test(tc, test_run_then_cache);
  tcase_add_test(tc, test_bad_entries);
  tcase_add_test(tc, test_library_piece);
  tcase_add_test(tc, test_stopped);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_search_cache);
  tcase_add_test(tc, test_float64_only_note);
  tcase_add_test(tc, test_mask_not_passed_on);
  suite_add_tcase(s, tc);
  return tu_run(s);
}
