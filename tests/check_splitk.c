/* SPDX-License-Identifier: MIT */
/* tests/check_splitk.c - the split-K rewrite of a result (src/search/
 * splitk.c): the variants of a one-kernel attention µGraph (a free grid
 * dim, and grid dims taken over) are two kernels whose partials are f32,
 * print and parse back to themselves, fingerprint equal to the program,
 * and their generated code computes it on the host; online softmax
 * (accum_online) splits into partials relative to each chunk's running
 * max, stored too, that kernel 2 rescales (with a causal mask emptying
 * whole chunks); kernels it must not split (a max accumulator, a shift
 * with no extent-1 dim left, a split that does not divide the forloop)
 * give no variant; a search with split_k adds verified variants marked
 * in report.json (of online-softmax results too), the same on 1 and 2
 * threads. */
#include "config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/plan.h"
#include "graph/graph.h"
#include "search/splitk.h"
#include "testutil.h"

/* Parse a file of the source tree. */
static mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

/* The printed text of g (freed by the caller with mirs_free). */
static char *text_of(mirs_context *ctx, const mirs_graph *g) {
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  mirs__graph_print(g, &b);
  ck_assert(!b.failed);
  return b.data;
}

/* Variant v prints and parses back to itself (text and hash) and
 * fingerprints equal to program p (what: its source, for messages). */
static void expect_round_trip_verifies(mirs_context *ctx, const mirs_graph *v, const mirs_graph *p,
                                       const char *what) {
  char *t1 = text_of(ctx, v);
  mirs_graph *r = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, t1, strlen(t1), "variant", &r) == MIRS_OK, "%s\n%s",
                mirs_last_error(ctx), t1);
  char *t2 = text_of(ctx, r);
  ck_assert_str_eq(t1, t2);
  ck_assert_uint_eq(mirs_graph_hash(r), mirs_graph_hash(v));
  mirs_verify_result res;
  ck_assert_int_eq(mirs_verify(ctx, p, v, &res), MIRS_OK);
  ck_assert_msg(res.equal && res.fingerprint_equal, "%s: %s\n%s", what, res.reason, t1);
  mirs_free(ctx, t1);
  mirs_free(ctx, t2);
  mirs_graph_destroy(r);
}

static const char *const SOURCE = "tests/codegen/splitk_source_small.ugraph";

/* (grid dim, factor): x is free (grid 1); y and z are taken over. */
static const int CASES[][2] = {{0, 2}, {0, 4}, {1, 2}, {2, 4}};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

START_TEST(test_variants_verify) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, SOURCE), *p = load(ctx, "examples/gqa_small.graph");
  ck_assert(!mirs__splitk_has_split(g));
  mirs_graph *v = NULL;
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, CASES[_i][0], CASES[_i][1], &v), MIRS_OK);
  ck_assert_ptr_nonnull(v);
  ck_assert(mirs__splitk_has_split(v));
  ck_assert_int_eq(v->nops, 2);
  ck_assert_int_eq(mirs_graph_num_custom(v), 2);
  /* Kernel 1's partials (numerators, row sums) are f32; the output keeps
   * the program's name and dtype. */
  for (int32_t i = 0; i < v->ops[0].nout; i++)
    ck_assert_int_eq(v->t[v->ops[0].out[i]].dtype, MIRS_F32);
  ck_assert_int_eq(v->ops[0].bg->grid[CASES[_i][0]], CASES[_i][1]);
  ck_assert_int_eq(v->ops[0].bg->forloop, 4 / CASES[_i][1]);
  ck_assert_int_eq(v->ops[1].bg->forloop, CASES[_i][1]);
  ck_assert_int_eq(v->ops[1].bg->grid[CASES[_i][0]], 1);
  ck_assert_int_eq(v->nout, 1);
  ck_assert_str_eq(v->t[v->outputs[0]].name, "O");
  ck_assert_int_eq(v->t[v->outputs[0]].dtype, MIRS_F16);
  expect_round_trip_verifies(ctx, v, p, SOURCE);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* The generated code of variant v, run on the host with inputs of seed,
 * computes program p within v's tolerance (and agrees with itself). */
static void expect_runs(mirs_context *ctx, const mirs_graph *v, const mirs_graph *p, int seed) {
  mirs_eval_result *r = NULL, *e = NULL;
  double self = -1;
  ck_assert_msg(mirs_codegen_run(v, (uint64_t)seed, MIRS_BACKEND_HOST, &r, &self) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  ck_assert_int_eq(mirs_graph_eval(p, (uint64_t)seed, &e), MIRS_OK);
  double err = mirs__eval_max_rel_error(e, r);
  ck_assert_msg(err <= mirs_codegen_tolerance(v) && self <= mirs_codegen_tolerance(v),
                "relative error %g (against itself %g)", err, self);
  mirs_eval_result_destroy(r);
  mirs_eval_result_destroy(e);
}

/* The generated code of a variant computes the program (host run). */
START_TEST(test_variant_runs) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, SOURCE), *p = load(ctx, "examples/gqa_small.graph");
  mirs_graph *v = NULL;
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 0, 4, &v), MIRS_OK);
  ck_assert_ptr_nonnull(v);
  expect_runs(ctx, v, p, 9);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* Causal attention split along the keys: a block's mask positions are
 * those of its chunk (b * tile * F + f * tile), in the fingerprints and
 * in the generated code (host run), for a free grid dim and one taken
 * over. */
START_TEST(test_causal_variants) {
  static const int cases[][2] = {{2, 2}, {2, 4}, {1, 2}, {0, 4}};
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/splitk_causal_source_small.ugraph");
  mirs_graph *p = load(ctx, "examples/causal_attention_small.graph");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mirs_graph *v = NULL;
    ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, cases[i][0], cases[i][1], &v), MIRS_OK);
    ck_assert_ptr_nonnull(v);
    mirs_verify_result res;
    ck_assert_int_eq(mirs_verify(ctx, p, v, &res), MIRS_OK);
    ck_assert_msg(res.equal && res.fingerprint_equal, "case %zu: %s", i, res.reason);
    expect_runs(ctx, v, p, 5);
    mirs_graph_destroy(v);
  }
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* A kernel whose results are intermediates named as the builder names
 * fresh tensors (t<id>), followed by a tensor named as a partial would
 * be: the variant names its partials apart from every tensor of the
 * result, verifies and prints back to itself. */
START_TEST(test_variant_names) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/splitk_source_named.ugraph");
  mirs_graph *v = NULL;
  ck_assert_msg(mirs__splitk_variant(ctx, g, 0, 0, 2, &v) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(v->nops, 4);
  for (int32_t i = 0; i < v->ops[0].nout; i++) {
    const char *nm = v->t[v->ops[0].out[i]].name;
    ck_assert_msg(mirs__graph_find(g, nm) < 0, "partial %s is a name of the result", nm);
  }
  ck_assert_str_eq(v->t[v->ops[1].out[0]].name, "t3");
  char *t1 = text_of(ctx, v);
  mirs_graph *r = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, t1, strlen(t1), "variant", &r) == MIRS_OK, "%s\n%s",
                mirs_last_error(ctx), t1);
  mirs_verify_result res;
  ck_assert_int_eq(mirs_verify(ctx, g, v, &res), MIRS_OK);
  ck_assert_msg(res.equal, "%s\n%s", res.reason, t1);
  mirs_free(ctx, t1);
  mirs_graph_destroy(r);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The ops of block graph bg of kind op. */
static int count_ops(const mirs__bgraph *bg, mirs_op op) {
  int n = 0;
  for (int32_t i = 0; i < bg->nops; i++)
    n += bg->ops[i].op == op;
  return n;
}

/* Online softmax split s ways along grid dim gs (free or taken over):
 * kernel 1 stores the two accum_online partials and, once, the chunk's
 * running max of their shared shift (accum_max over its extent-1 dim),
 * all f32; kernel 2 combines both with accum_online on that max; the
 * variant prints back to itself, fingerprints equal to the program and
 * its generated code computes it on the host.  With a causal mask, the
 * chunks above the diagonal have a -inf running max. */
static const struct {
  const char *src, *prog;
  int gs, s;
} ONLINE[] = {
    {"tests/codegen/online_softmax.ugraph", "examples/gqa_safe_small.graph", 2, 2},
    {"tests/codegen/online_softmax.ugraph", "examples/gqa_safe_small.graph", 2, 4},
    {"tests/codegen/online_softmax.ugraph", "examples/gqa_safe_small.graph", 0, 2},
    {"tests/codegen/online_softmax.ugraph", "examples/gqa_safe_small.graph", 1, 4},
    {"tests/codegen/splitk_causal_safe_source_small.ugraph",
     "examples/causal_attention_safe_small.graph", 2, 4},
    {"tests/codegen/splitk_causal_safe_source_small.ugraph",
     "examples/causal_attention_safe_small.graph", 1, 2},
};
#define NONLINE ((int)(sizeof ONLINE / sizeof ONLINE[0]))

START_TEST(test_online_variants) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, ONLINE[_i].src), *p = load(ctx, ONLINE[_i].prog);
  mirs_graph *v = NULL;
  ck_assert_msg(mirs__splitk_variant(ctx, g, 0, ONLINE[_i].gs, ONLINE[_i].s, &v) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(v->nops, 2);
  const mirs__bgraph *k1 = v->ops[0].bg, *k2 = v->ops[1].bg;
  ck_assert_int_eq(v->ops[0].nout, 3);
  for (int32_t i = 0; i < v->ops[0].nout; i++)
    ck_assert_int_eq(v->t[v->ops[0].out[i]].dtype, MIRS_F32);
  ck_assert_int_eq(count_ops(k1, MIRS_OP_ACCUM_ONLINE), 2);
  ck_assert_int_eq(count_ops(k1, MIRS_OP_ACCUM_MAX), 1);
  for (int32_t i = 0; i < k1->nops; i++) /* (the max's dim has extent 1: a max over the loop) */
    if (k1->ops[i].op == MIRS_OP_ACCUM_MAX)
      ck_assert_int_eq(k1->t[k1->ops[i].in[0]].shape.d[k1->ops[i].dim], 1);
  ck_assert_int_eq(k1->grid[ONLINE[_i].gs], ONLINE[_i].s);
  ck_assert_int_eq(k2->forloop, ONLINE[_i].s);
  ck_assert_int_eq(count_ops(k2, MIRS_OP_ACCUM_ONLINE), 2);
  ck_assert_int_eq(count_ops(k2, MIRS_OP_ACCUM), 0);
  for (int32_t i = 0; i < k2->nops; i++) /* (both rescaled by the same stored max) */
    if (k2->ops[i].op == MIRS_OP_ACCUM_ONLINE) {
      const mirs__bop *m = &k2->ops[k2->t[k2->ops[i].in[1]].producer];
      ck_assert_int_eq(m->op, MIRS_OP_INPUT);
      ck_assert_int_eq(m->src, v->ops[0].out[2]);
    }
  ck_assert_int_eq(v->t[v->outputs[0]].dtype, MIRS_F16);
  expect_round_trip_verifies(ctx, v, p, ONLINE[_i].src);
  expect_runs(ctx, v, p, 7);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* Text t with the first occurrence of `from` replaced by `to` (malloc'd). */
static char *replaced(const char *t, const char *from, const char *to) {
  const char *at = strstr(t, from);
  ck_assert_msg(at != NULL, "no %s in\n%s", from, t);
  size_t n = strlen(t) - strlen(from) + strlen(to) + 1;
  char *w = malloc(n);
  ck_assert_ptr_nonnull(w);
  snprintf(w, n, "%.*s%s%s", (int)(at - t), t, to, at + strlen(from));
  return w;
}

/* Whether text w parses to a µGraph that verifies against p. */
static bool verifies(mirs_context *ctx, const mirs_graph *p, const char *w) {
  mirs_graph *m = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, w, strlen(w), "mutant", &m) == MIRS_OK, "%s\n%s",
                mirs_last_error(ctx), w);
  mirs_verify_result res;
  ck_assert_int_eq(mirs_verify(ctx, p, m, &res), MIRS_OK);
  mirs_graph_destroy(m);
  return res.equal;
}

/* Each rule is needed: kernel 2 summing the online partials with accum
 * instead of rescaling them, or kernel 1 storing the chunk's running
 * min of the shift instead of its max, is not the program (the
 * fingerprints tell; kernel 1 runs 2 iterations, so min and max differ). */
START_TEST(test_online_rules_matter) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, "tests/codegen/online_softmax.ugraph");
  mirs_graph *p = load(ctx, "examples/gqa_safe_small.graph");
  mirs_graph *v = NULL;
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 2, 2, &v), MIRS_OK);
  ck_assert_ptr_nonnull(v);
  char *t = text_of(ctx, v);
  ck_assert(verifies(ctx, p, t));
  /* Kernel 2's combines (after kernel 1's text) summed. */
  const mirs__bgraph *k2 = v->ops[1].bg;
  const char *k2text = strstr(strstr(t, "custom(") + 1, "custom(");
  ck_assert_ptr_nonnull(k2text);
  char *w = malloc(strlen(t) + 1);
  ck_assert_ptr_nonnull(w);
  strcpy(w, t);
  int n = 0;
  for (int32_t i = 0; i < k2->nops; i++) {
    const mirs__bop *o = &k2->ops[i];
    if (o->op != MIRS_OP_ACCUM_ONLINE)
      continue;
    char from[128], to[128];
    snprintf(from, sizeof from, "%s = accum_online(%s, %s)", k2->t[o->out].name,
             k2->t[o->in[0]].name, k2->t[o->in[1]].name);
    snprintf(to, sizeof to, "%s = accum(%s)", k2->t[o->out].name, k2->t[o->in[0]].name);
    size_t head = (size_t)(k2text - t); /* (kernel 2's names are kernel 1's too) */
    char *x = replaced(w + head, from, to);
    char *y = malloc(head + strlen(x) + 1);
    ck_assert_ptr_nonnull(y);
    snprintf(y, head + strlen(x) + 1, "%.*s%s", (int)head, w, x);
    free(x);
    free(w);
    w = y;
    n++;
  }
  ck_assert_int_eq(n, 2);
  ck_assert_msg(!verifies(ctx, p, w), "summed partials verified:\n%s", w);
  free(w);
  w = replaced(t, "accum_max(", "accum_min(");
  ck_assert_msg(!verifies(ctx, p, w), "running min verified:\n%s", w);
  free(w);
  mirs_free(ctx, t);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* No variant where the rewrite would be wrong or meaningless. */
START_TEST(test_not_split) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, SOURCE);
  mirs_graph *v = (mirs_graph *)1;
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 0, 8, &v), MIRS_OK); /* 8 does not divide 4 */
  ck_assert_ptr_null(v);
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 0, 1, &v), MIRS_OK);
  ck_assert_ptr_null(v);
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 1, 0, 2, &v), MIRS_OK); /* no such op */
  ck_assert_ptr_null(v);
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 3, 2, &v), MIRS_OK); /* no such grid dim */
  ck_assert_ptr_null(v);
  mirs_graph_destroy(g);
  /* A running max (accum_max) needs a max combine: left alone. */
  g = load(ctx, "tests/codegen/accum_max.ugraph");
  for (int gs = 0; gs < MIRS__GRID; gs++) {
    ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, gs, 2, &v), MIRS_OK);
    ck_assert_ptr_null(v);
  }
  mirs_graph_destroy(g);
  /* An online shift whose only extent-1 dim grows when the split takes
   * its grid dim over has no running max to store: no variant there,
   * one where the split takes a free grid dim. */
  g = load(ctx, "tests/codegen/splitk_online_noshift.ugraph");
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 0, 2, &v), MIRS_OK);
  ck_assert_ptr_null(v);
  ck_assert_int_eq(mirs__splitk_variant(ctx, g, 0, 1, 2, &v), MIRS_OK);
  ck_assert_ptr_nonnull(v);
  mirs_graph_destroy(v);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* A search of gqa_small (forloop 4 only, so the results have loops to
 * split) with split_k under `threads` threads: its result hashes, in
 * order, into h (at most cap), their count; *variants the results the
 * rewrite made (report.json's marks), each verified again here. */
/* Whether the last search() was served from the result cache; how
 * many of its variants' kernels store a running max (online softmax). */
static bool served;
static int online;
static int fused; /* variants whose pair runs as one launch (codegen_fuse_split_k) */

static int search_of(const char *prog, int threads, int split_k, const char *cache, uint64_t *h,
                     int cap, int *variants) {
  mirs_context *ctx = tu_ctx(NULL);
  char v[16];
  /* (split-K pairs as one launch, off by default: the report's
   * in_launch_of marks are checked below) */
  static const char *const kv[][2] = {{"op_budget", "0"},
                                      {"forloop_ranges", "4"},
                                      {"log_level", "1"},
                                      {"codegen_fuse_split_k", "1"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    ck_assert_int_eq(mirs_option_set(ctx, kv[i][0], kv[i][1]), MIRS_OK);
  snprintf(v, sizeof v, "%d", threads);
  ck_assert_int_eq(mirs_option_set(ctx, "threads", v), MIRS_OK);
  snprintf(v, sizeof v, "%d", split_k);
  ck_assert_int_eq(mirs_option_set(ctx, "split_k", v), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "cache_dir", cache), MIRS_OK);
  mirs_graph *p = load(ctx, prog);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  int n = mirs_search_num_results(s);
  online = 0;
  fused = 0;
  ck_assert_int_le(n, cap);
  char *json = NULL;
  ck_assert_int_eq(mirs_search_report_json(s, 0, &json, NULL), MIRS_OK);
  *variants = 0;
  for (int i = 0; i < n; i++) {
    h[i] = mirs_search_result_hash(s, i);
    char mark[64];
    snprintf(mark, sizeof mark, "\"hash\": \"%016llx\"", (unsigned long long)h[i]);
    const char *at = strstr(json, mark);
    ck_assert_ptr_nonnull(at);
    const char *end = strchr(at, '}');
    const char *sk = strstr(at, "\"split_k\": true");
    if (sk && sk < end) {
      const mirs_graph *g = mirs_search_result(s, i);
      ck_assert(mirs__splitk_has_split(g));
      for (int32_t k = 0; k < g->nops; k++) /* (a split online kernel stores its max) */
        online += g->ops[k].op == MIRS_OP_CUSTOM &&
                  count_ops(g->ops[k].bg, MIRS_OP_ACCUM_MAX) > 0;
      /* A pair run as one launch is marked so in the report's launches. */
      bool pair = false;
      for (int32_t k = 0; k < g->nops; k++)
        pair = pair || mirs__plan_splitk_role(ctx, g, k, NULL) == MIRS__SPLITK_HEAD;
      const char *next = strstr(at + 1, "\"hash\": \"");
      const char *in = strstr(at, "\"in_launch_of\": ");
      ck_assert_int_eq(in != NULL && (!next || in < next), pair);
      fused += pair;
      if ((*variants)++ < 2) { /* (two of them verified again) */
        mirs_verify_result r;
        ck_assert_int_eq(mirs_verify(ctx, p, g, &r), MIRS_OK);
        ck_assert_msg(r.equal, "%016llx: %s", (unsigned long long)h[i], r.reason);
      }
    }
  }
  ck_assert_int_eq(strstr(json, "\"split_k_variants\"") != NULL, split_k > 0);
  served = strstr(json, "\"cache\": \"hit\"") != NULL;
  mirs_free(ctx, json);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
  return n;
}

/* search_of gqa_small. */
static int search(int threads, int split_k, const char *cache, uint64_t *h, int cap,
                  int *variants) {
  return search_of("examples/gqa_small.graph", threads, split_k, cache, h, cap, variants);
}

/* The rewrite adds verified, marked results, the same on 1 and 2
 * threads; split_k=0 adds none. */
START_TEST(test_search_adds_variants) {
  static uint64_t h0[4096], h1[4096], h2[4096];
  int v0, v1, v2;
  int n0 = search(1, 0, "", h0, 4096, &v0);
  int n1 = search(1, 2, "", h1, 4096, &v1);
  int n2 = search(2, 2, "", h2, 4096, &v2);
  ck_assert_int_eq(v0, 0);
  ck_assert_int_gt(v1, 0);
  ck_assert_int_eq(n1, n0 + v1);
  ck_assert_int_eq(n2, n1);
  ck_assert_int_eq(v2, v1);
  for (int i = 0; i < n1; i++)
    ck_assert_uint_eq(h1[i], h2[i]);
}
END_TEST

/* A search of gqa_safe_small (its results online-softmax kernels)
 * with split_k adds split variants of them, each storing its chunks'
 * running max, verified and marked, the same on 1 and 2 threads. */
START_TEST(test_search_adds_online_variants) {
  static uint64_t h1[4096], h2[4096];
  int v1, v2;
  int n1 = search_of("examples/gqa_safe_small.graph", 1, 2, "", h1, 4096, &v1);
  int o1 = online, f1 = fused;
  int n2 = search_of("examples/gqa_safe_small.graph", 2, 2, "", h2, 4096, &v2);
  ck_assert_int_gt(v1, 0);
  ck_assert_int_gt(o1, 0);
  ck_assert_int_gt(f1, 0);
  ck_assert_int_eq(online, o1);
  ck_assert_int_eq(n2, n1);
  ck_assert_int_eq(v2, v1);
  for (int i = 0; i < n1; i++)
    ck_assert_uint_eq(h1[i], h2[i]);
}
END_TEST

/* Search s's report.json holds text. */
static void expect_report_has(mirs_context *ctx, mirs_search *s, const char *text) {
  char *json = NULL;
  ck_assert_int_eq(mirs_search_report_json(s, 0, &json, NULL), MIRS_OK);
  ck_assert_msg(strstr(json, text) != NULL, "%s not in\n%s", text, json);
  mirs_free(ctx, json);
}

/* A search of program prog (into *p) with options kv[0..n), run. */
static mirs_search *run_with(mirs_context *ctx, const char *prog, const char *const kv[][2],
                             size_t n, mirs_graph **p) {
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(mirs_option_set(ctx, kv[i][0], kv[i][1]), MIRS_OK);
  *p = load(ctx, prog);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, *p, &s), MIRS_OK);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  return s;
}

/* Search s's best result is equal to program p (mirs_verify) and its
 * report.json holds text; then s, p and ctx are freed. */
static void expect_best_equal_and_free(mirs_context *ctx, mirs_search *s, mirs_graph *p,
                                       const char *text) {
  mirs_verify_result r;
  ck_assert_int_eq(mirs_verify(ctx, p, mirs_search_result(s, 0), &r), MIRS_OK);
  ck_assert_msg(r.equal, "%s", r.reason);
  expect_report_has(ctx, s, text);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}

/* The pre-selection (sink.c splitk_preselect): a search of gqa at its
 * published shape (keys 4096; forloop 16 only, one result verified at
 * full shape, split_k_top 1) finds its best split-K form from a source
 * outside the top result: the best result is a variant, and not one of
 * the top result's (which were all the rewrite made before); report.json
 * counts the source. */
START_TEST(test_preselected_source) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[][2] = {
      {"op_budget", "0"}, {"forloop_ranges", "16"}, {"verify_full_max", "1"}, {"split_k", "1"},
      {"split_k_top", "1"}, {"threads", "1"},        {"cache_dir", ""},         {"log_level", "1"}};
  mirs_graph *p = NULL;
  mirs_search *s = run_with(ctx, "examples/gqa.graph", kv, sizeof kv / sizeof kv[0], &p);
  int n = mirs_search_num_results(s);
  /* The one search result (the top), and the plain variants of it. */
  const mirs_graph *top = NULL;
  for (int i = 0; i < n; i++)
    if (!mirs__splitk_has_split(mirs_search_result(s, i))) {
      ck_assert_ptr_null(top);
      top = mirs_search_result(s, i);
    }
  ck_assert_ptr_nonnull(top);
  uint64_t own[64];
  int nown = 0;
  for (int32_t k = 0; k < top->nops; k++)
    for (int gs = 0; gs < MIRS__GRID; gs++)
      for (int f = 0; f < MIRS__SPLITK_NFACTORS; f++) {
        mirs_graph *v = NULL;
        ck_assert_int_eq(mirs__splitk_variant(ctx, top, k, gs, mirs__splitk_factors[f], &v),
                         MIRS_OK);
        if (v && nown < 64)
          own[nown++] = mirs_graph_hash(v);
        mirs_graph_destroy(v);
      }
  const mirs_graph *best = mirs_search_result(s, 0);
  ck_assert(mirs__splitk_has_split(best));
  for (int i = 0; i < nown; i++)
    ck_assert_uint_ne(own[i], mirs_search_result_hash(s, 0));
  expect_best_equal_and_free(ctx, s, p, "\"split_k_preselect\": {\"sources\": 1,");
}
END_TEST

/* A search served from the result cache (which stores the variants
 * too) makes the same variants again from the results they came from,
 * not from the cached variants: the served list (the best
 * verify_full_max results, verified again, and their variants) is part
 * of the searched one and has its variants. */
START_TEST(test_cache_serves_same) {
  char dir[4096];
  tu_tmp(dir, sizeof dir, "mirs_splitk_cache.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static uint64_t h1[4096], h2[4096];
  int v1, v2;
  int n1 = search(1, 2, dir, h1, 4096, &v1);
  ck_assert(!served);
  int n2 = search(1, 2, dir, h2, 4096, &v2);
  ck_assert(served);
  ck_assert_int_gt(v1, 0);
  ck_assert_int_le(n2, n1);
  ck_assert_int_eq(v2, v1);
  for (int i = 0; i < n2; i++) {
    bool in = false;
    for (int j = 0; j < n1 && !in; j++)
      in = h1[j] == h2[i];
    ck_assert_msg(in, "served result %d (%016llx) was not searched", i,
                  (unsigned long long)h2[i]);
  }
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A search stopped by its time limit keeps its results: the rewrite,
 * which runs in the last part of the limit (after the search phase),
 * ends there instead of failing the search on the stop (it used to fail
 * with "time limit reached" and no result). */
START_TEST(test_time_limit_keeps_results) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const kv[][2] = {{"forloop_ranges", "4"}, {"log_level", "1"},
                                      {"threads", "1"},        {"split_k", "2"},
                                      {"cache_dir", ""},       {"time_limit", "1"}};
  mirs_graph *p = NULL;
  mirs_search *s = run_with(ctx, "examples/gqa_small.graph", kv, sizeof kv / sizeof kv[0], &p);
  ck_assert_int_gt(mirs_search_num_results(s), 0); /* (the first come within 0.3 s) */
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

#ifdef MIRS_FAULT_INJECTION
/* The gqa search of test_preselected_source (its best a variant of a
 * pre-selected source, predicted 22.3 us against the top result's 28.6
 * us) with the options extra[0..n) and the environment variable `env` set to
 * `val` (NULL: none) while it runs. */
static mirs_search *gqa_search(mirs_context *ctx, const char *const extra[][2], size_t n,
                               const char *env, const char *val, mirs_graph **p) {
  static const char *const kv[][2] = {
      {"op_budget", "0"}, {"forloop_ranges", "16"}, {"verify_full_max", "1"},
      {"split_k", "1"},   {"split_k_top", "1"},     {"threads", "1"},
      {"cache_dir", ""},  {"log_level", "1"},       {"verify_early", "false"}};
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(mirs_option_set(ctx, extra[i][0], extra[i][1]), MIRS_OK);
  if (env)
    ck_assert_int_eq(setenv(env, val, 1), 0);
  mirs_search *s = run_with(ctx, "examples/gqa.graph", kv, sizeof kv / sizeof kv[0], p);
  if (env)
    ck_assert_int_eq(unsetenv(env), 0);
  return s;
}

/* Under a time limit the final phase verifies the results and the
 * split-K variants in one order, that of predicted time: when the limit
 * comes after one full-shape verification (the test hook
 * MIRS_TEST_FINAL_VERIFICATIONS standing for a limit reached there), that
 * one went to the fastest candidate, the variant that is the best of a
 * search with no limit, and the result it beats is left unverified and
 * unreported.  (The full-shape verification of the top result used to
 * come first and take it: no variant was verified.) */
START_TEST(test_time_limit_verifies_fastest_first) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *p = NULL;
  mirs_search *s = gqa_search(ctx, NULL, 0, NULL, NULL, &p);
  ck_assert(mirs__splitk_has_split(mirs_search_result(s, 0)));
  uint64_t best = mirs_search_result_hash(s, 0);
  double cost = mirs_search_result_cost(s, 0);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);

  ctx = tu_ctx(NULL);
  static const char *const lim[][2] = {{"time_limit", "3600"}};
  s = gqa_search(ctx, lim, 1, "MIRS_TEST_FINAL_VERIFICATIONS", "1", &p);
  ck_assert_int_eq(mirs_search_num_results(s), 1);
  ck_assert_uint_eq(mirs_search_result_hash(s, 0), best);
  ck_assert(mirs_search_result_cost(s, 0) == cost);
  expect_best_equal_and_free(ctx, s, p, "\"split_k_variants\": 1");
}
END_TEST

/* A time limit that does not cut the final phase changes nothing here:
 * the same results as with no limit (the top result verified, its
 * variants and the pre-selected source's), in the same order. */
START_TEST(test_time_limit_same_when_not_cut) {
  uint64_t h[2][64];
  int n[2];
  for (int with = 0; with < 2; with++) {
    mirs_context *ctx = tu_ctx(NULL);
    mirs_graph *p = NULL;
    static const char *const lim[][2] = {{"time_limit", "3600"}};
    mirs_search *s = gqa_search(ctx, lim, with ? 1 : 0, NULL, NULL, &p);
    n[with] = mirs_search_num_results(s);
    ck_assert_int_le(n[with], 64);
    for (int i = 0; i < n[with]; i++)
      h[with][i] = mirs_search_result_hash(s, i);
    mirs_search_destroy(s);
    mirs_graph_destroy(p);
    mirs_context_destroy(ctx);
  }
  ck_assert_int_gt(n[0], 2);
  ck_assert_int_eq(n[1], n[0]);
  for (int i = 0; i < n[0]; i++)
    ck_assert_uint_eq(h[1][i], h[0][i]);
}
END_TEST

/* A variant that fails with an error of its own (not a verdict: here
 * injected, MIRS_TEST_SPLITK_FAIL, as one that cannot be built, verified
 * or priced) is skipped with a warning naming it and the error: the
 * rewrite goes on with the next, so the search succeeds with all its
 * results and every other variant (with and without a time limit). */
START_TEST(test_rewrite_skips_failed_variant) {
  static uint64_t h0[4096], h1[4096];
  int v0, v1;
  int n0 = search(1, 0, "", h0, 4096, &v0);
  int n1 = search(1, 2, "", h1, 4096, &v1);
  ck_assert_int_gt(v1, 1);
  static const char *const when[2][2] = {{"time_limit", "0"}, {"time_limit", "3600"}};
  for (int w = 0; w < 2; w++) {
    tu_log log;
    mirs_context *ctx = tu_ctx(&log);
    static const char *const kv[][2] = {{"op_budget", "0"}, {"forloop_ranges", "4"},
                                        {"log_level", "1"}, {"threads", "1"},
                                        {"split_k", "2"},   {"cache_dir", ""}};
    ck_assert_int_eq(mirs_option_set(ctx, when[w][0], when[w][1]), MIRS_OK);
    ck_assert_int_eq(setenv("MIRS_TEST_SPLITK_FAIL", "1", 1), 0);
    mirs_graph *p = NULL;
    mirs_search *s = run_with(ctx, "examples/gqa_small.graph", kv, sizeof kv / sizeof kv[0], &p);
    ck_assert_int_eq(unsetenv("MIRS_TEST_SPLITK_FAIL"), 0);
    ck_assert_msg(strstr(log.text, "failed: injected failure (MIRS_TEST_SPLITK_FAIL=1); skipped"),
                  "%s", log.text);
    int n = mirs_search_num_results(s), v = 0;
    for (int i = 0; i < n; i++)
      v += mirs__splitk_has_split(mirs_search_result(s, i));
    ck_assert_int_eq(v, v1 - 1); /* (the first variant tried, and only it, lost) */
    ck_assert_int_eq(n, n1 - 1);
    for (int i = 0; i < n0; i++) {
      bool in = false;
      for (int j = 0; j < n && !in; j++)
        in = mirs_search_result_hash(s, j) == h0[i];
      ck_assert_msg(in, "result %016llx of the search lost", (unsigned long long)h0[i]);
    }
    expect_report_has(ctx, s, "\"split_k_variants\"");
    mirs_search_destroy(s);
    mirs_graph_destroy(p);
    mirs_context_destroy(ctx);
  }
}
END_TEST
#endif

/* An allocator that fails one allocation: the `at`-th after it is armed
 * (by the log line that opens the split-K rewrite), then none. */
typedef struct {
  atomic_long armed, count, at, fired;
  atomic_int warned;
} fail_alloc;

static void *failing_alloc(void *user, void *ptr, size_t osize, size_t nsize) {
  fail_alloc *fa = user;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (atomic_load(&fa->armed) && atomic_fetch_add(&fa->count, 1) + 1 == atomic_load(&fa->at)) {
    atomic_fetch_add(&fa->fired, 1);
    return NULL;
  }
  return realloc(ptr, nsize);
}

static void arm_on_rewrite(void *user, mirs_log_level level, const char *msg) {
  fail_alloc *fa = user;
  (void)level;
  if (strstr(msg, "split-K rewrite of the best") && strstr(msg, "begins"))
    atomic_store(&fa->armed, 1);
  if (strstr(msg, "split-K variant of result") && strstr(msg, "failed: out of memory"))
    atomic_store(&fa->warned, 1);
}

/* Out of memory in the rewrite (the 1st, 40th, 400th, 4000th allocation
 * after it begins) is said and ends it: the search succeeds with all the
 * results of a search without the rewrite (it used to fail the whole
 * search, losing them), and its report is written. */
START_TEST(test_rewrite_failure_keeps_results) {
  static uint64_t h0[4096];
  int v0;
  int n0 = search(1, 0, "", h0, 4096, &v0);
  static const long AT[] = {1, 40, 400, 4000};
  int warned = 0;
  for (size_t a = 0; a < sizeof AT / sizeof AT[0]; a++) {
    fail_alloc fa;
    atomic_init(&fa.armed, 0);
    atomic_init(&fa.count, 0);
    atomic_init(&fa.at, AT[a]);
    atomic_init(&fa.fired, 0);
    atomic_init(&fa.warned, 0);
    mirs_context *ctx = NULL;
    ck_assert_int_eq(mirs_context_create_with_allocator(failing_alloc, &fa, &ctx), MIRS_OK);
    mirs_set_log_callback(ctx, arm_on_rewrite, &fa);
    static const char *const kv[][2] = {{"op_budget", "0"}, {"forloop_ranges", "4"},
                                        {"log_level", "3"}, {"threads", "1"},
                                        {"split_k", "2"},   {"cache_dir", ""}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
      ck_assert_int_eq(mirs_option_set(ctx, kv[i][0], kv[i][1]), MIRS_OK);
    mirs_graph *p = load(ctx, "examples/gqa_small.graph");
    mirs_search *s = NULL;
    ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
    ck_assert_msg(mirs_search_run(s) == MIRS_OK, "at %ld: %s", AT[a], mirs_last_error(ctx));
    ck_assert_int_eq(atomic_load(&fa.armed), 1);
    ck_assert_int_eq(atomic_load(&fa.fired), 1);
    warned += atomic_load(&fa.warned);
    int n = mirs_search_num_results(s);
    for (int i = 0; i < n0; i++) {
      bool in = false;
      for (int j = 0; j < n && !in; j++)
        in = mirs_search_result_hash(s, j) == h0[i];
      ck_assert_msg(in, "at %ld: result %016llx of the search lost", AT[a],
                    (unsigned long long)h0[i]);
    }
    expect_report_has(ctx, s, "\"split_k_variants\"");
    mirs_search_destroy(s);
    mirs_graph_destroy(p);
    mirs_context_destroy(ctx);
  }
  ck_assert_int_gt(warned, 0); /* (some failure was one of a variant's own) */
}
END_TEST

/* The finer combine (mirs__splitk_variant_combine): kernel 2's grid dim
 * gs partitions a dim of the output no other grid dim places (the rows,
 * or the columns the source kept whole), by each factor that divides
 * it: the variants fingerprint equal to the program, kernel 1 places no
 * grid dim along that dim, and one runs on the host; a dim another grid
 * dim partitions, a factor not dividing it, fewer than 2 ways and a dim
 * past the rank give none. */
static const struct {
  const char *src, *prog;
  int gs, dim; /* a grid dim gs and an output dim another grid dim places */
} COMBINE[] = {
    {"tests/codegen/splitk_source_small.ugraph", "examples/gqa_small.graph", 0, 0},
    {"tests/codegen/online_softmax.ugraph", "examples/gqa_safe_small.graph", 2, 0},
};

START_TEST(test_combine_variants) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, COMBINE[_i].src), *p = load(ctx, COMBINE[_i].prog);
  int made = 0, ran = 0;
  for (int gs = 0; gs < MIRS__GRID; gs++)
    for (int32_t s = 2; s <= 4; s *= 2)
      for (int d = 0; d < 4; d++)
        for (int32_t c = 2; c <= 16; c *= 2) {
          mirs_graph *v = NULL;
          ck_assert_msg(mirs__splitk_variant_combine(ctx, g, 0, gs, s, d, c, &v) == MIRS_OK,
                        "%s", mirs_last_error(ctx));
          if (!v)
            continue;
          made++;
          const mirs__bgraph *k1 = v->ops[0].bg, *k2 = v->ops[1].bg;
          ck_assert_int_eq(k1->grid[gs], s);
          ck_assert_int_eq(k2->grid[gs], c);
          ck_assert_int_eq(k2->forloop, s);
          /* The outputs' dim d is partitioned by gs only, d divided c ways. */
          for (int32_t i = 0; i < k2->nops; i++)
            if (k2->ops[i].op == MIRS_OP_OUTPUT) {
              ck_assert_int_eq(k2->ops[i].omap[gs], d);
              ck_assert_int_eq(v->t[v->outputs[0]].shape.d[d] % c, 0);
            }
          for (int32_t i = 0; i < k1->nops; i++)
            for (int a = 0; k1->ops[i].op == MIRS_OP_OUTPUT && a < MIRS__GRID; a++)
              ck_assert_int_ne(k1->ops[i].omap[a], d);
          /* (no fused pair: kernel 2 is not K's grid less gs) */
          ck_assert_int_eq(mirs__plan_splitk_role(ctx, v, 0, NULL), MIRS__SPLITK_NONE);
          char what[96];
          snprintf(what, sizeof what, "%s gs %d s %d dim %d ways %d", COMBINE[_i].src, gs,
                   (int)s, d, (int)c);
          expect_round_trip_verifies(ctx, v, p, what);
          if (ran++ == 0)
            expect_runs(ctx, v, p, 5);
          mirs_graph_destroy(v);
        }
  ck_assert_int_gt(made, 0);
  /* A dim another grid dim partitions in the output (the groups), a
   * factor not dividing the dim, ways < 2 and a dim past the rank give
   * none. */
  static const int32_t none[][2] = {{-2, 2}, {1, 3}, {1, 1}, {3, 2}};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    mirs_graph *v = NULL;
    int d = none[i][0] == -2 ? COMBINE[_i].dim : none[i][0];
    ck_assert_int_eq(
        mirs__splitk_variant_combine(ctx, g, 0, COMBINE[_i].gs, 2, d, none[i][1], &v), MIRS_OK);
    ck_assert_msg(!v, "dim %d ways %d", d, (int)none[i][1]);
  }
  mirs_graph_destroy(g);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* Suite of the split-K tests. */
static Suite *splitk_suite(void) {
  Suite *s = suite_create("splitk");
  TCase *tc = tcase_create("rewrite");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_variants_verify, 0, NCASES);
  tcase_add_test(tc, test_variant_runs);
  tcase_add_test(tc, test_variant_names);
  tcase_add_test(tc, test_causal_variants);
  tcase_add_loop_test(tc, test_online_variants, 0, NONLINE);
  tcase_add_test(tc, test_online_rules_matter);
  tcase_add_test(tc, test_not_split);
  tcase_add_loop_test(tc, test_combine_variants, 0, (int)(sizeof COMBINE / sizeof COMBINE[0]));
  tcase_add_test(tc, test_search_adds_variants);
  tcase_add_test(tc, test_search_adds_online_variants);
  tcase_add_test(tc, test_cache_serves_same);
  tcase_add_test(tc, test_preselected_source);
  tcase_add_test(tc, test_time_limit_keeps_results);
  tcase_add_test(tc, test_rewrite_failure_keeps_results);
#ifdef MIRS_FAULT_INJECTION
  tcase_add_test(tc, test_time_limit_verifies_fastest_first);
  tcase_add_test(tc, test_time_limit_same_when_not_cut);
  tcase_add_test(tc, test_rewrite_skips_failed_variant);
#endif
  suite_add_tcase(s, tc);
  return s;
}

/* Run the split-K suite. */
int main(void) {
  return tu_run(splitk_suite());
}
