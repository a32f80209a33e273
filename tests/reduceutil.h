/* SPDX-License-Identifier: MIT */
/* tests/reduceutil.h - helpers shared by the reduction tests
 * (check_max.c, check_min.c, mirrors of each other): parse a file or a
 * text, verify, set options, a host run against the interpreter and a
 * complete search. Each asserts success (Check), so a test reads as its
 * steps. Include after testutil.h. */
#ifndef MIRS_TESTS_REDUCEUTIL_H
#define MIRS_TESTS_REDUCEUTIL_H

#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch/codegen.h"
#include "testutil.h"

/* Parse a file of the source tree. */
static inline mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

/* Parse text (a test's own program). */
static inline mirs_graph *parse(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), "t", &g) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  return g;
}

/* Verify candidate against program; returns the verdict's `equal`. */
static inline int verify(mirs_context *ctx, const mirs_graph *p, const mirs_graph *c) {
  mirs_verify_result r;
  memset(&r, 0, sizeof r);
  ck_assert_msg(mirs_verify(ctx, p, c, &r) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(r.equal, r.fingerprint_equal && (!r.float_checked ||
                                                     r.float_max_rel_error <= 1e-9));
  return r.equal;
}

/* Set name=value pairs (NULL-terminated) on ctx. */
static inline void set_opts(mirs_context *ctx, const char *const *kv) {
  for (int i = 0; kv && kv[i]; i += 2)
    ck_assert_msg(mirs_option_set(ctx, kv[i], kv[i + 1]) == MIRS_OK, "%s=%s: %s", kv[i],
                  kv[i + 1], mirs_last_error(ctx));
}

/* Host run of g on seed against the float64 evaluation of ref: the
 * largest relative error (infinity when the run has a NaN or inf). */
static inline double host_err(mirs_context *ctx, const mirs_graph *g, const mirs_graph *ref,
                       uint64_t seed) {
  mirs_eval_result *r = NULL, *e = NULL;
  double self = 0;
  ck_assert_msg(mirs_codegen_run(g, seed, MIRS_BACKEND_HOST, &r, &self) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  ck_assert_int_eq(mirs_graph_eval(ref, seed, &e), MIRS_OK);
  double err = mirs__eval_max_rel_error(e, r);
  for (int o = 0; o < mirs_eval_num_outputs(r); o++) {
    int64_t n = 0;
    const double *v = mirs_eval_output_values(r, o, &n);
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(v[i]))
        err = INFINITY;
  }
  mirs_eval_result_destroy(r);
  mirs_eval_result_destroy(e);
  return err;
}

/* Run a complete search of text under kv; the caller destroys it. */
static inline mirs_search *search(mirs_context *ctx, const char *text, const char *const *kv) {
  set_opts(ctx, kv);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s = NULL;
  ck_assert_msg(mirs_search_create(ctx, g, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_graph_destroy(g);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_int_eq(st.complete, 1);
  return s;
}

#endif
