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

/* Fingerprint program and candidate with `trials` trials and compare. */
static mirs_status fingerprint_compare(mirs_context *ctx, const mirs__fp_backend *backend,
                                       const mirs_graph *program, const mirs_graph *candidate,
                                       int trials, mirs__fp_verdict *v, uint64_t *digest) {
  mirs__fp_store *ref = NULL, *cand = NULL;
  uint64_t seed = (uint64_t)ctx->opt.seed;
  mirs_status s = mirs__fp_store_new(ctx, backend, trials, seed, &ref);
  if (s == MIRS_OK)
    s = mirs__fp_store_new(ctx, backend, trials, seed, &cand);
  if (s == MIRS_OK)
    s = mirs__fp_compute_graph(ref, program);
  if (s == MIRS_OK)
    s = mirs__fp_compute_graph(cand, candidate);
  if (s == MIRS_OK)
    s = mirs__fp_compare_outputs(ref, program, cand, candidate, v);
  if (s == MIRS_OK && digest)
    s = mirs__fp_output_digest(cand, candidate, digest);
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
  return mirs__verify_fingerprints_on(ctx, NULL, program, candidate, trials, v, NULL);
}

/* The same on a given backend, with the candidate's output digest. */
mirs_status mirs__verify_fingerprints_on(mirs_context *ctx, const mirs__fp_backend *backend,
                                         const mirs_graph *program, const mirs_graph *candidate,
                                         int *trials, mirs__fp_verdict *v, uint64_t *digest) {
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
  MIRS_CHECK(ctx, fingerprint_compare(ctx, backend, program, candidate, *trials, v, digest));
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

/* Whether candidate takes the program's inputs: the same names, in the
 * same order (the positional arguments of its generated entry point),
 * with the same shapes.  Otherwise false with the difference in why. */
static bool same_inputs(const mirs_graph *program, const mirs_graph *candidate, char *why,
                        size_t whysize) {
  int32_t pi = 0, ci = 0;
  for (;;) {
    while (pi < program->nt && program->t[pi].producer >= 0)
      pi++;
    while (ci < candidate->nt && candidate->t[ci].producer >= 0)
      ci++;
    if (pi >= program->nt && ci >= candidate->nt)
      return true;
    if (ci >= candidate->nt) {
      snprintf(why, whysize, "the candidate lacks the program's input %s",
               program->t[pi].name);
      return false;
    }
    const mirs__ktensor *ct = &candidate->t[ci];
    int32_t in_prog = mirs_graph_find(program, ct->name);
    if (pi >= program->nt || in_prog < 0 || program->t[in_prog].producer >= 0) {
      int32_t j = pi < program->nt ? mirs_graph_find(candidate, program->t[pi].name) : -1;
      if (pi < program->nt && (j < 0 || candidate->t[j].producer >= 0))
        snprintf(why, whysize,
                 "the candidate has input %s where the program has input %s (a renamed input)",
                 ct->name, program->t[pi].name);
      else
        snprintf(why, whysize, "the candidate has input %s, which the program does not have",
                 ct->name);
      return false;
    }
    if (in_prog != pi) {
      snprintf(why, whysize,
               "the candidate takes its inputs in another order (%s where the program has %s): "
               "its generated code's arguments would differ",
               ct->name, program->t[pi].name);
      return false;
    }
    if (!mirs__shape_eq(&ct->shape, &program->t[pi].shape)) {
      char a[96], b[96];
      snprintf(why, whysize, "input %s is %s in the program but %s in the candidate", ct->name,
               mirs__shape_str(&program->t[pi].shape, a, sizeof a),
               mirs__shape_str(&ct->shape, b, sizeof b));
      return false;
    }
    pi++;
    ci++;
  }
}

/* Verify candidate against program into a whole result struct. */
static mirs_status verify_full(mirs_context *ctx, const mirs_graph *program,
                               const mirs_graph *candidate, mirs_verify_result *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->float_max_rel_error = NAN;
  MIRS_CHECK(ctx, mirs__graph_validate(program));
  MIRS_CHECK(ctx, mirs__graph_validate(candidate));
  /* Bounded work from any input: the fingerprints run each graph once per
   * trial (the sound test cannot be skipped, so past the limit: refuse). */
  for (int i = 0; i < 2; i++) {
    const mirs_graph *g = i ? candidate : program;
    uint64_t work = mirs__graph_work(g);
    if (work > (uint64_t)ctx->opt.eval_max_work)
      return MIRS_FAIL(ctx, MIRS_LIMIT,
                       "verifying %s needs about %llu element operations per fingerprint trial, "
                       "more than eval_max_work=%lld (raise the option to verify it)",
                       mirs_graph_name(g), (unsigned long long)work,
                       (long long)ctx->opt.eval_max_work);
  }
  /* The same inputs in the same order: a candidate with an extra (even
   * unused) input, its inputs reordered or one renamed is another
   * function to its caller. */
  if (!same_inputs(program, candidate, out->reason, sizeof out->reason))
    return MIRS_OK;
  /* Same-named inputs and outputs must have the same dtype: a candidate
   * that reads or writes f32 where the program has f16 is another function
   * to its caller, whatever the arithmetic says. */
  for (int32_t i = 0; i < program->nt; i++) {
    const mirs__ktensor *pt = &program->t[i];
    bool is_out = false;
    for (int32_t o = 0; o < program->nout; o++)
      is_out |= program->outputs[o] == i;
    if (pt->producer >= 0 && !is_out)
      continue;
    int32_t j = mirs_graph_find(candidate, pt->name);
    if (j >= 0 && candidate->t[j].dtype != pt->dtype) {
      out->degree = 0;
      snprintf(out->reason, sizeof out->reason,
               "%s %s is %s in the program but %s in the candidate",
               pt->producer < 0 ? "input" : "output", pt->name, mirs_dtype_name(pt->dtype),
               mirs_dtype_name(candidate->t[j].dtype));
      return MIRS_OK;
    }
  }
  int trials;
  mirs__fp_verdict v;
  const mirs__fp_backend *backend;
  MIRS_CHECK(ctx, mirs__fp_backend_choose(ctx, &backend, out->backend, sizeof out->backend));
  MIRS_CHECK(ctx, mirs__verify_fingerprints_on(ctx, backend, program, candidate, &trials, &v,
                                               &out->output_digest));
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
    out->float_max_rel_error = mirs__eval_max_rel_error(er, ec);
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

/* Verify candidate against program; fill at most size bytes of *out. */
mirs_status mirs_verify_sized(mirs_context *ctx, const mirs_graph *program,
                              const mirs_graph *candidate, mirs_verify_result *out, size_t size) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!program || !candidate || !out || size < sizeof(size_t))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_verify: NULL argument or struct size");
  mirs_verify_result full;
  mirs_status s = verify_full(ctx, program, candidate, &full);
  full.struct_size = size < sizeof full ? size : sizeof full;
  memcpy(out, &full, full.struct_size);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}
