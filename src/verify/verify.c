/* SPDX-License-Identifier: MIT */
/* src/verify/verify.c - the public mirs_verify: one candidate against its
 * program, by fingerprints (the sound test, with its bound) and then in
 * float64 on random real inputs (a check on the arithmetic the fields
 * abstract away, e.g. the PRF-modelled sqrt).
 *
 * Invariant: the verdict never says "equal" unless every program output
 * matched in every fingerprint trial; the float64 check can only turn an
 * equal verdict into a rejection, never the reverse. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch/verify.h"
#include "verify/fingerprint.h"

/* Largest relative difference between same-named outputs of two eval
 * results: max|a-b| / max|b| per output (NaN at the same place counts as
 * equal; a NaN against a number as infinitely different). */
static double max_rel_error(const mirs_eval_result *ref, const mirs_eval_result *cand) {
  double worst = 0;
  for (int i = 0; i < mirs_eval_num_outputs(ref); i++) {
    const char *name = mirs_eval_output_name(ref, i);
    int j = 0;
    while (j < mirs_eval_num_outputs(cand) && strcmp(mirs_eval_output_name(cand, j), name))
      j++;
    int64_t n, m;
    const double *a = mirs_eval_output_values(ref, i, &n);
    const double *b = mirs_eval_output_values(cand, j, &m);
    if (!b || n != m)
      return INFINITY;
    double diff = 0, scale = 0;
    for (int64_t e = 0; e < n; e++) {
      /* Non-finite values must match exactly (NaN with NaN, an infinity
       * with the same infinity) and stay out of the scale: an infinity in
       * the reference would otherwise make every difference relative 0. */
      if (!isfinite(a[e]) || !isfinite(b[e])) {
        if (isnan(a[e]) ? !isnan(b[e]) : a[e] != b[e])
          return INFINITY;
        continue;
      }
      diff = fmax(diff, fabs(a[e] - b[e]));
      scale = fmax(scale, fabs(a[e]));
    }
    double rel = scale > 0 ? diff / scale : diff;
    worst = fmax(worst, rel);
  }
  return worst;
}

/* Fingerprint program and candidate with `trials` trials and compare. */
static mirs_status fingerprint_compare(mirs_context *ctx, const mirs_graph *program,
                                       const mirs_graph *candidate, int trials,
                                       mirs__fp_verdict *v) {
  mirs__fp_store *ref = NULL, *cand = NULL;
  uint64_t seed = (uint64_t)ctx->opt.seed;
  mirs_status s = mirs__fp_store_new(ctx, NULL, trials, seed, &ref);
  if (s == MIRS_OK)
    s = mirs__fp_store_new(ctx, NULL, trials, seed, &cand);
  if (s == MIRS_OK)
    s = mirs__fp_compute_graph(ref, program);
  if (s == MIRS_OK)
    s = mirs__fp_compute_graph(cand, candidate);
  if (s == MIRS_OK)
    s = mirs__fp_compare_outputs(ref, program, cand, candidate, v);
  mirs__fp_store_free(ref);
  mirs__fp_store_free(cand);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}

/* Fingerprint-compare program and candidate with the trials their degrees
 * need for the configured bound. */
mirs_status mirs__verify_fingerprints(mirs_context *ctx, const mirs_graph *program,
                                      const mirs_graph *candidate, int *trials,
                                      mirs__fp_verdict *v) {
  uint64_t dp, dc;
  MIRS_CHECK(ctx, mirs__fp_graph_degree(program, &dp));
  MIRS_CHECK(ctx, mirs__fp_graph_degree(candidate, &dc));
  /* Saturating: a wrapped sum would look small and pass with too few
   * trials (two graphs of degree ~2^63 each "verified" with bound 2^0). */
  uint64_t d = mirs__fp_degree_add(dp, dc);
  *trials = mirs__fp_trials_for(d, ctx->opt.verify_log2_bound);
  if (*trials < 1)
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "degree %s%llu is too high for a false-accept bound of 2^%g with the "
                     "fingerprint field",
                     d == UINT64_MAX ? ">= " : "", (unsigned long long)d,
                     ctx->opt.verify_log2_bound);
  MIRS_CHECK(ctx, fingerprint_compare(ctx, program, candidate, *trials, v));
  /* The verdict's own degree (which also counts exp/PRF arguments) must
   * meet the bound too: an equal verdict that does not is refused. */
  if (v->equal && (v->log2_bound >= 0 || v->log2_bound > ctx->opt.verify_log2_bound))
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "degree %s%llu: %d trials give a false-accept bound of 2^%g, not the "
                     "required 2^%g",
                     v->degree == UINT64_MAX ? ">= " : "", (unsigned long long)v->degree,
                     *trials, v->log2_bound, ctx->opt.verify_log2_bound);
  return MIRS_OK;
}

/* Verify candidate against program. */
mirs_status mirs_verify(mirs_context *ctx, const mirs_graph *program, const mirs_graph *candidate,
                        mirs_verify_result *out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!program || !candidate || !out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_verify: NULL argument");
  memset(out, 0, sizeof *out);
  out->float_max_rel_error = NAN;
  MIRS_CHECK(ctx, mirs__graph_validate(program));
  MIRS_CHECK(ctx, mirs__graph_validate(candidate));
  int trials;
  mirs__fp_verdict v;
  MIRS_CHECK(ctx, mirs__verify_fingerprints(ctx, program, candidate, &trials, &v));
  out->trials = trials;
  out->degree = v.degree;
  out->log2_bound = v.log2_bound;
  out->fingerprint_equal = v.equal;
  if (!v.equal) {
    snprintf(out->reason, sizeof out->reason, "fingerprints differ: %s", v.why);
    return MIRS_OK;
  }
  mirs_eval_result *er = NULL, *ec = NULL;
  mirs_status s = mirs_graph_eval(program, (uint64_t)ctx->opt.seed, &er);
  if (s == MIRS_OK)
    s = mirs_graph_eval(candidate, (uint64_t)ctx->opt.seed, &ec);
  if (s == MIRS_LIMIT) {
    snprintf(out->reason, sizeof out->reason, "float64 check skipped: %s", mirs_last_error(ctx));
    mirs_clear_error(ctx);
    out->equal = 1;
  } else if (s == MIRS_OK) {
    out->float_checked = 1;
    out->float_max_rel_error = max_rel_error(er, ec);
    out->equal = out->float_max_rel_error <= ctx->opt.float_tolerance;
    if (!out->equal)
      snprintf(out->reason, sizeof out->reason,
               "fingerprints agree but float64 outputs differ (max relative error %.3g > %g)",
               out->float_max_rel_error, ctx->opt.float_tolerance);
  }
  mirs_eval_result_destroy(er);
  mirs_eval_result_destroy(ec);
  MIRS_CHECK(ctx, s == MIRS_LIMIT ? MIRS_OK : s);
  return MIRS_OK;
}
