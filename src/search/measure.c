/* SPDX-License-Identifier: MIT */
/* src/search/measure.c - a search's measured ranking (mirs_search_measure):
 * the cost model's first K results timed on the GPU by mirs_codegen_rank,
 * the fastest checked one becoming the best.
 * Invariants: the results, their order and their files never change (the
 * model's ranks stay in report.json; only "best" moves); without a GPU or
 * a CUDA build nothing is timed and the reason is kept for the report;
 * a result whose harness fails is not timed, its reason kept, and the
 * others are; any other failure leaves no measurement behind (the model
 * decides). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "search/search.h"

/* Drop the last measurement. */
void mirs__measured_free(mirs_search *s) {
  if (!s->measured)
    return;
  mirs__core_free(s->ctx, s->measured->rows);
  mirs__core_free(s->ctx, s->measured->fails);
  mirs__core_free(s->ctx, s->measured);
  s->measured = NULL;
}

/* Public: see search.h. */
mirs_status mirs_search_measure(mirs_search *s, int top) {
  if (!s)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = s->ctx;
  if (!s->ran)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_measure: the search has not run");
  mirs__measured_free(s);
  int n = mirs_search_num_results(s);
  int k = top > 0 ? top : (int)ctx->opt.measure_top;
  if (k > n)
    k = n;
  mirs__measured *m = mirs__core_calloc(ctx, 1, sizeof *m);
  if (!m)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the measured ranking)");
  m->best = -1;
  m->rho = NAN;
  s->measured = m;
  if (k <= 0) {
    snprintf(m->skipped, sizeof m->skipped, "%s", n ? "measure_top is 0" : "no result");
    return MIRS_OK;
  }
  const mirs_graph **cands = mirs__core_calloc(ctx, (size_t)k, sizeof *cands);
  m->rows = mirs__core_calloc(ctx, (size_t)k, sizeof *m->rows);
  m->fails = mirs__core_calloc(ctx, (size_t)k, sizeof *m->fails);
  if (!cands || !m->rows || !m->fails) {
    mirs__core_free(ctx, cands);
    mirs__measured_free(s);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the measured ranking)");
  }
  for (int i = 0; i < k; i++) {
    cands[i] = mirs_search_result(s, i);
    m->rows[i].predicted_seconds = mirs_search_result_cost(s, i);
  }
  mirs_bench_result last = MIRS_BENCH_RESULT_INIT;
  /* The search's time limit covers its measurement too: what the
   * deadline leaves untimed is cut, and what was timed stands. */
  double deadline = ctx->opt.time_limit > 0 ? s->t0 + ctx->opt.time_limit : 0;
  mirs_status st = mirs__codegen_rank(cands, k, s->program, (uint64_t)ctx->opt.seed, m->rows,
                                      &m->best, &m->rho, &last, m->fails, deadline);
  mirs__core_free(ctx, cands);
  if (st == MIRS_UNSUPPORTED || st == MIRS_NO_DEVICE) {
    /* Nothing to time on: the model's order, and the report says why. */
    snprintf(m->skipped, sizeof m->skipped, "%s", mirs_last_error(ctx));
    mirs__core_free(ctx, m->rows);
    mirs__core_free(ctx, m->fails);
    m->rows = NULL;
    m->fails = NULL;
    m->best = -1;
    mirs_clear_error(ctx);
    return MIRS_OK;
  }
  if (st != MIRS_OK) {
    mirs__measured_free(s);
    return st;
  }
  m->n = k;
  m->reps = last.candidate.reps;
  snprintf(m->device, sizeof m->device, "%s", last.device);
  return MIRS_OK;
}

/* Public: see search.h. */
int mirs_search_best(const mirs_search *s) {
  if (!s || mirs_search_num_results(s) < 1)
    return -1;
  return s->measured && s->measured->best >= 0 ? s->measured->best : 0;
}

/* Public: see search.h. */
int mirs_search_measured(const mirs_search *s) {
  return s && s->measured ? s->measured->n : 0;
}

/* Public: see search.h. */
double mirs_search_result_measured_us(const mirs_search *s, int index) {
  if (!s || !s->measured || index < 0 || index >= s->measured->n)
    return NAN;
  return s->measured->rows[index].median_us;
}

/* Public: see search.h. */
const char *mirs_search_result_measure_error(const mirs_search *s, int index) {
  if (!s || !s->measured || index < 0 || index >= s->measured->n ||
      s->measured->fails[index].status == MIRS_OK)
    return NULL;
  return s->measured->fails[index].why;
}
