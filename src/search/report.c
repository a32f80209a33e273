/* SPDX-License-Identifier: MIT */
/* src/search/report.c - the search report as JSON (report.json, and
 * mirs_search_report_json for embedders).
 *
 * Invariants: the report is a function of the finished search and the
 * context's options (no clocks read here); every string is JSON-escaped;
 * results appear best first, as the search sorted them, each with the
 * 1-based number of its group of equal cost, so ties are told apart by
 * hash and by their kernels' launch shapes.  Candidate file names match
 * what `mirsearch` writes: candidates/RANK-HASH.ugraph with RANK zero-padded
 * to at least four digits (mirs_search_result_file_name). */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/plan.h"
#include "search/search.h"

/* A JSON string literal for s. */
void mirs__json_str(mirs__buf *b, const char *s) {
  mirs__buf_puts(b, "\"");
  char one[8];
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      snprintf(one, sizeof one, "\\%c", *p);
    else if (*p < 0x20)
      snprintf(one, sizeof one, "\\u%04x", *p);
    else
      snprintf(one, sizeof one, "%c", *p);
    mirs__buf_puts(b, one);
  }
  mirs__buf_puts(b, "\"");
}

/* A JSON number (null when not finite: JSON has no infinity). */
void mirs__json_num(mirs__buf *b, double v) {
  if (isfinite(v))
    mirs__buf_printf(b, "%.9g", v);
  else
    mirs__buf_puts(b, "null");
}

/* The file name of result rank (1-based). */
static void candidate_name(char *buf, size_t size, int rank, uint64_t hash) {
  snprintf(buf, size, "%04d-%016" PRIx64 ".ugraph", rank, hash);
}

/* Public: the file name mirsearch gives result index. */
mirs_status mirs_search_result_file_name(const mirs_search *s, int index, char *buf, size_t size) {
  if (!s || !buf || size == 0 || index < 0 || (size_t)index >= mirs__sink_nresults(s))
    return MIRS_INVALID_ARG;
  int n = snprintf(buf, size, "%04d-%016" PRIx64 ".ugraph", index + 1,
                   mirs__sink_result(s, index)->hash);
  return n > 0 && (size_t)n < size ? MIRS_OK : MIRS_INVALID_ARG;
}

/* The launch list of one result: each kernel op with its cost and, for a
 * custom kernel, its grid, block, forloop range and shared memory. */
static mirs_status put_kernels(const mirs_search *s, const mirs_graph *g, mirs__buf *b) {
  mirs__buf_puts(b, "[");
  for (int32_t k = 0; k < g->nops; k++) {
    const mirs__kop *op = &g->ops[k];
    mirs__cost_kernel kc;
    MIRS_CHECK(s->ctx, mirs__cost_kernel_op(s->ctx, s->device, g, k, &kc));
    mirs__buf_printf(b, "%s{\"op\": \"%s\"", k ? ", " : "", mirs__graph_ops[op->op].name);
    if (op->op == MIRS_OP_CUSTOM && op->bg) {
      const mirs__bgraph *bg = op->bg;
      mirs__buf_printf(b,
                       ", \"grid\": [%" PRId32 ", %" PRId32 ", %" PRId32 "], \"block\": [%" PRId32
                       ", %" PRId32 ", %" PRId32 "], \"forloop\": %" PRId32
                       ", \"block_ops\": %" PRId32 ", \"smem_bytes\": %" PRId64,
                       bg->grid[0], bg->grid[1], bg->grid[2], bg->block[0], bg->block[1],
                       bg->block[2], bg->forloop, bg->nops, kc.smem);
    }
    /* A split-K pair run as one launch (docs/CODEGEN.md): the second
     * kernel's entry is its combine inside the first's launch. */
    if (kc.split_k == MIRS__SPLITK_HEAD)
      mirs__buf_printf(b, ", \"fused_with\": %" PRId32, k + 1);
    else if (kc.split_k == MIRS__SPLITK_TAIL)
      mirs__buf_printf(b, ", \"in_launch_of\": %" PRId32, k - 1);
    mirs__buf_puts(b, ", \"predicted_seconds\": ");
    mirs__json_num(b, kc.feasible ? kc.seconds : INFINITY);
    mirs__buf_puts(b, "}");
  }
  mirs__buf_puts(b, "]");
  return MIRS_OK;
}

/* An integer option's value, or def when this build has no such option. */
static int64_t int_option(mirs_context *ctx, const char *name, int64_t def) {
  int64_t v = def;
  if (mirs_option_get_int(ctx, name, &v) != MIRS_OK) {
    mirs_clear_error(ctx);
    v = def;
  }
  return v;
}

/* The whole report into b. */
static mirs_status put_report(const mirs_search *s, int top, mirs__buf *b) {
  mirs_context *ctx = s->ctx;
  mirs_search_stats st;
  MIRS_CHECK(ctx, mirs_search_get_stats(s, &st));
  char opts[4096];
  mirs_options_nondefault(ctx, opts, sizeof opts);
  int n = (int)mirs__sink_nresults(s), listed = top > 0 && top < n ? top : n;
  mirs__cost_result unfused;
  MIRS_CHECK(ctx, mirs__cost_graph(ctx, s->device, s->program, &unfused));
  double base = unfused.feasible ? unfused.seconds : INFINITY;
  /* The best result was found when the first result of best cost was. */
  double to_best = 0;
  for (size_t i = 0;
       i < mirs__sink_nresults(s) && mirs__sink_result(s, i)->cost == mirs__sink_result(s, 0)->cost;
       i++)
    if (i == 0 || mirs__sink_result(s, i)->found_at < to_best)
      to_best = mirs__sink_result(s, i)->found_at;
  if (to_best > st.wall_seconds)
    to_best = st.wall_seconds;

  mirs__buf_puts(b, "{\n  \"program\": ");
  mirs__json_str(b, s->program->name);
  mirs__buf_puts(b, ",\n  \"mirsearch_version\": ");
  mirs__json_str(b, mirs_version_string());
  mirs__buf_puts(b, ",\n  \"device\": ");
  mirs__json_str(b, s->device->name);
  /* Which fingerprint backend verified the results at full shape (null:
   * none ran, every result was verified when found). */
  mirs__buf_puts(b, ",\n  \"verify_backend\": ");
  if (s->full_backend_name[0])
    mirs__json_str(b, s->full_backend_name);
  else
    mirs__buf_puts(b, "null");
  mirs__buf_printf(b, ",\n  \"full_verify_seconds\": %.6f", s->full_seconds);
  /* The times are the cost model's on that profile, unless
   * mirs_search_measure timed the first results on a GPU (measure.c):
   * then those carry measured times too, and the fastest is the best. */
  const mirs__measured *m = s->measured;
  bool measured = m && m->n > 0 && m->best >= 0;
  int bi = n > 0 ? mirs_search_best(s) : -1;
  mirs__buf_printf(b, ",\n  \"times\": \"%s\",\n  \"measurement\": ",
                   measured ? "measured" : "predicted");
  if (!m) {
    mirs__buf_puts(b, "null");
  } else if (m->n == 0) {
    mirs__buf_puts(b, "{\"skipped\": ");
    mirs__json_str(b, m->skipped);
    mirs__buf_puts(b, "}");
  } else {
    mirs__buf_printf(b, "{\"top\": %d, \"device\": ", m->n);
    mirs__json_str(b, m->device);
    mirs__buf_printf(b, ", \"reps\": %d, \"best_rank\": ", m->reps);
    if (m->best >= 0)
      mirs__buf_printf(b, "%d", m->best + 1);
    else
      mirs__buf_puts(b, "null");
    mirs__buf_puts(b, ", \"rank_correlation\": ");
    mirs__json_num(b, m->rho);
    /* (Results whose harness failed, and those the time limit left: not
     * timed, each says why.) */
    int failed = 0, cut = 0;
    for (int i = 0; i < m->n; i++) {
      cut += m->fails[i].cut;
      failed += m->fails[i].status != MIRS_OK && !m->fails[i].cut;
    }
    mirs__buf_printf(b, ", \"failed\": %d, \"cut_by_time_limit\": %d}", failed, cut);
  }
  mirs__buf_puts(b, ",\n  \"device_profile\": ");
  mirs__json_str(b, s->profiles ? s->profiles->source : "");
  mirs__buf_puts(b, ",\n  \"options\": ");
  mirs__json_str(b, opts);
  mirs__buf_printf(b,
                   ",\n  \"states_explored\": %" PRIu64 ",\n  \"candidates_verified\": %" PRIu64
                   ",\n  \"graphs_found\": %" PRIu64 ",\n  \"prune_calls\": %" PRIu64
                   ",\n  \"prune_cache_hits\": %" PRIu64 ",\n  \"solver_calls\": %" PRIu64
                   ",\n  \"wall_seconds\": %.6f,\n  \"solver_seconds\": %.6f"
                   ",\n  \"time_to_best_seconds\": %.6f,\n  \"fingerprint_trials\": %d"
                   ",\n  \"log2_false_accept_bound\": %g,\n  \"threads\": %" PRId64
                   ",\n  \"ranks\": %" PRId64 ",\n  \"complete\": %s,\n  \"counters\": {",
                   st.states_explored, st.candidates_verified, st.graphs_found, st.prune_calls,
                   st.prune_cache_hits, st.solver_calls, st.wall_seconds, st.solver_seconds,
                   to_best, st.fingerprint_trials, st.log2_false_accept_bound,
                   int_option(ctx, "threads", 1), (int64_t)mirs__dist_ranks(s),
                   st.complete ? "true" : "false");
  for (size_t i = 0; i < mirs_stat_count(); i++)
    mirs__buf_printf(b, "%s\"%s\": %" PRIu64, i ? ", " : "", mirs_stat_name(i),
                     mirs_stat_value(ctx, i));
  mirs__buf_puts(b, "}");
  /* Whether the results came from the result cache (cache.c; then no
   * state was explored), were stored in it, or neither. */
  static const char *const cache[] = {"none", "hit", "stored"};
  mirs__buf_printf(b, ",\n  \"cache\": \"%s\"",
                   s->cache_state >= 0 && s->cache_state <= 2 ? cache[s->cache_state] : "none");
  mirs__dist_report(s, b);
  if (ctx->opt.split_k) { /* (the pre-selection: sink.c splitk_preselect) */
    mirs__buf_printf(b, ",\n  \"split_k_variants\": %" PRId64, s->splitk_variants);
    mirs__buf_printf(b,
                     ",\n  \"split_k_preselect\": {\"sources\": %zu, \"variants_priced\": %" PRId64
                     ", \"seconds\": %.6f}",
                     s->splitk_nsrc, s->splitk_priced, s->splitk_pre_seconds);
  }
  mirs__buf_printf(
      b, ",\n  \"unfused\": {\"kernels\": %" PRId32 ", \"predicted_seconds\": ", unfused.kernels);
  mirs__json_num(b, base);
  mirs__buf_puts(b, "},\n");
  char file[64];
  if (n > 0) {
    const mirs__search_result *br = mirs__sink_result(s, (size_t)bi);
    mirs__buf_printf(b, "  \"best\": {\"hash\": \"%016" PRIx64 "\", \"rank\": %d, \"cost\": ",
                     br->hash, bi + 1);
    mirs__json_num(b, br->cost);
    mirs__buf_printf(b, ", \"kernels\": %" PRId32 ", \"predicted_seconds\": ", br->kernels);
    mirs__json_num(b, br->cost);
    mirs__buf_puts(b, ", \"speedup_vs_unfused\": ");
    mirs__json_num(b, base / br->cost);
    if (measured) {
      mirs__buf_puts(b, ", \"measured_seconds\": ");
      mirs__json_num(b, m->rows[bi].median_us * 1e-6);
    }
    mirs__buf_printf(b, ", \"float64_checked\": %s", br->float_checked ? "true" : "false");
    if (br->split_k) /* (made by the split-K rewrite, option split_k) */
      mirs__buf_puts(b, ", \"split_k\": true");
    mirs__buf_puts(b, ", \"file\": \"best.ugraph\"},\n");
  } else {
    mirs__buf_puts(b, "  \"best\": null,\n");
  }
  mirs__buf_printf(b, "  \"results_total\": %d,\n  \"results_listed\": %d,\n  \"groups\": [", n,
                   listed);
  int groups = 0;
  for (int i = 0; i < listed;) {
    int j = i;
    while (j < listed && mirs__sink_result(s, j)->cost == mirs__sink_result(s, i)->cost)
      j++;
    mirs__buf_printf(b, "%s\n    {\"group\": %d, \"cost\": ", groups ? "," : "", groups + 1);
    mirs__json_num(b, mirs__sink_result(s, i)->cost);
    mirs__buf_printf(b, ", \"count\": %d, \"first_rank\": %d, \"last_rank\": %d}", j - i, i + 1, j);
    groups++;
    i = j;
  }
  mirs__buf_printf(b, "%s],\n  \"results\": [", groups ? "\n  " : "");
  groups = 0;
  for (int i = 0; i < listed; i++) {
    const mirs__search_result *r = mirs__sink_result(s, i);
    if (i == 0 || r->cost != mirs__sink_result(s, i - 1)->cost)
      groups++;
    candidate_name(file, sizeof file, i + 1, r->hash);
    mirs__buf_printf(
        b, "%s\n    {\"rank\": %d, \"group\": %d, \"hash\": \"%016" PRIx64 "\", \"cost\": ",
        i ? "," : "", i + 1, groups, r->hash);
    mirs__json_num(b, r->cost);
    mirs__buf_printf(b, ", \"kernels\": %" PRId32 "%s, \"file\": \"candidates/%s\", \"launches\": ",
                     r->kernels, r->split_k ? ", \"split_k\": true" : "", file);
    MIRS_CHECK(ctx, put_kernels(s, r->g, b));
    if (m && i < m->n) {
      const mirs_rank_entry *e = &m->rows[i];
      mirs__buf_printf(b, ", \"checked\": %s, \"measured_seconds\": ",
                       e->checked ? "true" : "false");
      mirs__json_num(b, e->median_us * 1e-6);
      mirs__buf_puts(b, ", \"measured_p10_seconds\": ");
      mirs__json_num(b, e->p10_us * 1e-6);
      mirs__buf_puts(b, ", \"measured_p90_seconds\": ");
      mirs__json_num(b, e->p90_us * 1e-6);
      const char *why = mirs_search_result_measure_error(s, i);
      if (why) {
        mirs__buf_puts(b, ", \"measure_error\": ");
        mirs__json_str(b, why);
      }
    }
    mirs__buf_puts(b, "}");
  }
  mirs__buf_printf(b, "%s]\n}\n", listed ? "\n  " : "");
  return b->failed ? MIRS_NOMEM : MIRS_OK;
}

/* Public: the report as JSON. */
mirs_status mirs_search_report_json(const mirs_search *s, int top, char **out, size_t *len) {
  if (!s || !out)
    return MIRS_INVALID_ARG;
  *out = NULL;
  if (len)
    *len = 0;
  if (!s->ran)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "mirs_search_report_json: the search has not run");
  mirs__buf b;
  mirs__buf_init(&b, s->ctx);
  mirs_status st = put_report(s, top, &b);
  if (st != MIRS_OK) {
    mirs__buf_free(&b);
    MIRS_CHECK(s->ctx, st);
  }
  *out = b.data;
  if (len)
    *len = b.len;
  return MIRS_OK;
}
