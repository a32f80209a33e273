/* SPDX-License-Identifier: MIT */
/* src/codegen/rank.c - ranking candidates by measured time
 * (mirs_codegen_rank): each one benched as mirs_codegen_bench does, then
 * the model's order compared with the measured one (Spearman's rank
 * correlation).  Used by `bench --rank` on a search's output directory
 * and by a search that times its own best results (mirs_search_measure).
 * Invariant: a candidate that fails its check is never timed and never
 * ranked; nor is one whose harness fails (does not compile, a run of it
 * fails or hangs), and the others are ranked all the same. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "codegen/codegen.h"
#include "core/core.h"
#include "graph/graph.h"
#include "mirsearch/codegen.h"

/* Ranks (1-based, ties averaged) of v[0..n) into r, by value ascending. */
static void ranks(const double *v, double *r, int n) {
  for (int i = 0; i < n; i++) {
    int below = 0, equal = 0;
    for (int j = 0; j < n; j++) {
      below += v[j] < v[i];
      equal += v[j] == v[i];
    }
    r[i] = below + (equal + 1) / 2.0;
  }
}

/* Fill the rows' ranks among the timed ones; Spearman's rho (NAN under 2). */
static double spearman(mirs_rank_entry *rows, int n, double *buf) {
  double *pv = buf, *mv = buf + n, *pr = buf + 2 * n, *mr = buf + 3 * n;
  int m = 0;
  for (int i = 0; i < n; i++) {
    rows[i].rank_model = rows[i].rank_measured = NAN;
    if (isfinite(rows[i].median_us)) {
      pv[m] = rows[i].predicted_seconds;
      mv[m] = rows[i].median_us;
      m++;
    }
  }
  ranks(pv, pr, m);
  ranks(mv, mr, m);
  double mean = (m + 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
  for (int i = 0, k = 0; i < n; i++) {
    if (!isfinite(rows[i].median_us))
      continue;
    rows[i].rank_model = pr[k];
    rows[i].rank_measured = mr[k];
    sxy += (pr[k] - mean) * (mr[k] - mean);
    sxx += (pr[k] - mean) * (pr[k] - mean);
    syy += (mr[k] - mean) * (mr[k] - mean);
    k++;
  }
  return m >= 2 && sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* Internal: see codegen.h. */
mirs_status mirs__codegen_rank(const mirs_graph *const *cands, int n, const mirs_graph *program,
                               uint64_t seed, mirs_rank_entry *rows, int *best, double *rho,
                               mirs_bench_result *last, mirs__bench_failure *fails,
                               double deadline) {
  if (!cands || n < 1 || !rows || !best || !rho || !cands[0] || !fails)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = cands[0]->ctx;
  *best = -1;
  *rho = NAN;
  for (int i = 0; i < n; i++) {
    rows[i].checked = 0;
    rows[i].median_us = rows[i].p10_us = rows[i].p90_us = NAN;
    rows[i].rank_model = rows[i].rank_measured = NAN;
  }
  for (int i = 0; i < n; i++)
    if (!cands[i])
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_codegen_rank: candidate %d is NULL", i);
  mirs_bench_result *rs = mirs__core_calloc(ctx, (size_t)n, sizeof *rs);
  if (!rs)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (ranking %d candidates)", n);
  mirs_status st = mirs__codegen_bench_many(cands, n, program, seed, rs, fails, deadline);
  int ran = -1; /* the last candidate whose harness ran */
  for (int i = 0; st == MIRS_OK && i < n; i++) {
    const mirs_bench_result *r = &rs[i];
    if (fails[i].status != MIRS_OK)
      continue;
    ran = i;
    rows[i].checked = r->checked;
    if (r->checked) {
      rows[i].median_us = r->candidate.median_us;
      rows[i].p10_us = r->candidate.p10_us;
      rows[i].p90_us = r->candidate.p90_us;
      if (*best < 0 || rows[i].median_us < rows[*best].median_us)
        *best = i;
    }
  }
  if (st == MIRS_OK && last && last->struct_size >= sizeof(size_t)) {
    /* (The device, reps and profile are the same for every candidate
     * that ran; where none did, the last one's still name them.) */
    const mirs_bench_result *r = &rs[ran >= 0 ? ran : n - 1];
    size_t k = last->struct_size < sizeof *rs ? last->struct_size : sizeof *rs;
    memcpy((char *)last + sizeof(size_t), (const char *)r + sizeof(size_t), k - sizeof(size_t));
  }
  mirs__core_free(ctx, rs);
  MIRS_CHECK(ctx, st);
  double *buf = mirs__core_alloc(ctx, 4 * (size_t)n * sizeof *buf);
  if (!buf)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (ranking %d candidates)", n);
  *rho = spearman(rows, n, buf);
  mirs__core_free(ctx, buf);
  return MIRS_OK;
}

/* Public: see codegen.h. */
mirs_status mirs_codegen_rank_all(const mirs_graph *const *cands, int n,
                                  const mirs_graph *program, uint64_t seed, mirs_rank_entry *rows,
                                  int *best, double *rho, mirs_bench_result *last,
                                  char **errors) {
  if (!cands || n < 1 || !cands[0])
    return MIRS_INVALID_ARG;
  mirs_context *ctx = cands[0]->ctx;
  for (int i = 0; errors && i < n; i++)
    errors[i] = NULL;
  mirs__bench_failure *f = mirs__core_calloc(ctx, (size_t)n, sizeof *f);
  if (!f)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (ranking %d candidates)", n);
  double deadline = ctx->opt.time_limit > 0 ? mirs__core_now() + ctx->opt.time_limit : 0;
  mirs_status st = mirs__codegen_rank(cands, n, program, seed, rows, best, rho, last, f, deadline);
  /* The time limit is the call's, not a candidate's: an error, as for any
   * stop. */
  int timed = 0, cut = 0;
  for (int i = 0; st == MIRS_OK && i < n; i++) {
    cut += f[i].cut;
    timed += isfinite(rows[i].median_us);
  }
  if (cut > 0)
    st = MIRS_FAIL(ctx, MIRS_LIMIT,
                   "stopped at the time limit (--time-limit=%g) with %d of %d candidates timed",
                   ctx->opt.time_limit, timed, n);
  int first = -1;
  for (int i = 0; st == MIRS_OK && i < n; i++) {
    if (f[i].status == MIRS_OK)
      continue;
    if (first < 0)
      first = i;
    if (errors) {
      size_t len = strlen(f[i].why) + 1;
      errors[i] = mirs__core_alloc(ctx, len);
      if (!errors[i]) {
        st = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (ranking %d candidates)", n);
        break;
      }
      memcpy(errors[i], f[i].why, len);
    }
  }
  if (st != MIRS_OK && errors)
    for (int i = 0; i < n; i++) {
      mirs__core_free(ctx, errors[i]);
      errors[i] = NULL;
    }
  /* Without errors to hold them, the first failure is the status. */
  if (st == MIRS_OK && !errors && first >= 0)
    st = MIRS_FAIL(ctx, f[first].status, "candidate %d: %s", first, f[first].why);
  mirs__core_free(ctx, f);
  return st;
}

/* Public: see codegen.h. */
mirs_status mirs_codegen_rank(const mirs_graph *const *cands, int n, const mirs_graph *program,
                              uint64_t seed, mirs_rank_entry *rows, int *best, double *rho,
                              mirs_bench_result *last) {
  return mirs_codegen_rank_all(cands, n, program, seed, rows, best, rho, last, NULL);
}
