/* SPDX-License-Identifier: MIT */
/* src/search/partition_report.c - the partition's report: partition.json
 * (mirs_partition_report_json) and the table people read
 * (mirs_partition_report_table).
 *
 * Invariants: both are functions of the finished (or stopped) partition
 * and the context's options, no clock read here; pieces appear in the
 * order the stitched graph runs them; every time is the cost model's
 * prediction on the profile the option cost_device names. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/partition.h"
#include "search/search.h"

/* Piece i's ops as JSON: each op's operator, the program tensor it
 * defines and its index among the program's ops. */
static void piece_ops_json(const mirs_partition *p, const mirs__piece *pc, mirs__buf *b) {
  const mirs_graph *g = p->program;
  mirs__buf_puts(b, "[");
  for (int32_t a = 0; a < pc->nops; a++) {
    const mirs__kop *k = &g->ops[pc->ops[a]];
    mirs__buf_printf(b, "%s{\"index\": %d, \"op\": ", a ? ", " : "", (int)pc->ops[a]);
    mirs__json_str(b, mirs_op_name(k->op));
    mirs__buf_puts(b, ", \"defines\": ");
    mirs__json_str(b, k->nout > 0 ? g->t[k->out[0]].name : "");
    mirs__buf_puts(b, "}");
  }
  mirs__buf_puts(b, "]");
}

/* A list of program tensors' names as JSON. */
static void names_json(const mirs_graph *g, const int32_t *t, int32_t n, mirs__buf *b) {
  mirs__buf_puts(b, "[");
  for (int32_t i = 0; i < n; i++) {
    mirs__buf_puts(b, i ? ", " : "");
    mirs__json_str(b, g->t[t[i]].name);
  }
  mirs__buf_puts(b, "]");
}

/* Piece i as a JSON object. */
static void piece_json(const mirs_partition *p, int32_t i, mirs__buf *b) {
  const mirs__piece *pc = &p->piece[i];
  const mirs_piece_info *v = &pc->info;
  mirs__buf_printf(b, "    {\"index\": %d, \"kind\": \"%s\", \"from_cache\": %s, \"ops\": ", (int)i,
                   mirs__piece_kind_name(v->kind), v->from_cache ? "true" : "false");
  piece_ops_json(p, pc, b);
  mirs__buf_puts(b, ",\n     \"inputs\": ");
  names_json(p->program, pc->in, pc->nin, b);
  mirs__buf_puts(b, ", \"outputs\": ");
  names_json(p->program, pc->out, pc->nout, b);
  mirs__buf_printf(b, ",\n     \"program_hash\": \"%016" PRIx64 "\", \"best_hash\": \"%016" PRIx64
                      "\", \"predicted_seconds_before\": ",
                   v->program_hash, v->best_hash);
  mirs__json_num(b, v->cost_before);
  mirs__buf_puts(b, ", \"predicted_seconds_after\": ");
  mirs__json_num(b, v->kind == MIRS_PIECE_PENDING ? NAN : v->cost_after);
  mirs__buf_puts(b, ", \"speedup\": ");
  mirs__json_num(b, v->kind == MIRS_PIECE_PENDING ? NAN : v->speedup);
  mirs__buf_printf(b,
                   ", \"kernels\": %d, \"complete\": %s, \"states_explored\": %" PRIu64
                   ", \"wall_seconds\": %.6f}",
                   v->kernels, v->complete ? "true" : "false", v->states_explored,
                   v->wall_seconds);
}

/* The verification of the stitched graph as a JSON object. */
static void verify_json(const mirs_partition *p, mirs__buf *b) {
  const mirs_verify_result *v = &p->stats.verify;
  if (!p->result) {
    mirs__buf_puts(b, "null");
    return;
  }
  mirs__buf_printf(b,
                   "{\"equal\": %s, \"fingerprint_equal\": %s, \"trials\": %d, "
                   "\"log2_false_accept_bound\": %g, \"float64_checked\": %s, "
                   "\"float64_max_rel_error\": ",
                   v->equal ? "true" : "false", v->fingerprint_equal ? "true" : "false", v->trials,
                   v->log2_bound, v->float_checked ? "true" : "false");
  mirs__json_num(b, v->float_max_rel_error);
  mirs__buf_puts(b, ", \"backend\": ");
  mirs__json_str(b, v->backend);
  mirs__buf_puts(b, ", \"note\": ");
  mirs__json_str(b, v->reason);
  mirs__buf_puts(b, "}");
}

/* Hand the text in b to the caller (*out, *len), or fail on memory. */
static mirs_status give(mirs_context *ctx, mirs__buf *b, char **out, size_t *len) {
  if (b->failed) {
    mirs__buf_free(b);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the partition report)");
  }
  *out = b->data;
  if (len)
    *len = b->len;
  return MIRS_OK;
}

mirs_status mirs_partition_report_json(const mirs_partition *p, char **out, size_t *len) {
  if (!p)
    return MIRS_INVALID_ARG;
  if (!out)
    return MIRS_FAIL(p->ctx, MIRS_INVALID_ARG, "mirs_partition_report_json: NULL argument");
  const mirs_partition_stats *s = &p->stats;
  mirs__buf b;
  mirs__buf_init(&b, p->ctx);
  mirs__buf_puts(&b, "{\n  \"program\": ");
  mirs__json_str(&b, p->program->name);
  mirs__buf_puts(&b, ",\n  \"device\": ");
  mirs__json_str(&b, p->ctx->opt.cost_device);
  mirs__buf_printf(&b,
                   ",\n  \"times\": \"predicted\",\n  \"ops\": %d,\n  \"pieces_total\": %d,\n"
                   "  \"searched\": %d,\n  \"cached\": %d,\n  \"library\": %d,\n  \"kept\": %d,\n"
                   "  \"pending\": %d,\n  \"stopped\": %s,\n  \"ranks\": %d,\n"
                   "  \"predicted_seconds_before\": ",
                   (int)p->program->nops, s->pieces, s->searched, s->cached, s->library, s->kept,
                   s->pending, s->stopped ? "true" : "false", p->mpi ? p->nranks : 1);
  mirs__json_num(&b, p->result ? s->cost_before : NAN);
  mirs__buf_puts(&b, ",\n  \"predicted_seconds_after\": ");
  mirs__json_num(&b, p->result ? s->cost_after : NAN);
  mirs__buf_puts(&b, ",\n  \"speedup\": ");
  mirs__json_num(&b, p->result ? s->speedup : NAN);
  mirs__buf_printf(&b, ",\n  \"kernels\": %d,\n  \"verified\": ", s->kernels);
  verify_json(p, &b);
  mirs__buf_printf(&b,
                   ",\n  \"states_explored\": %" PRIu64 ",\n  \"wall_seconds\": %.6f,\n"
                   "  \"best\": %s,\n  \"pieces\": [\n",
                   s->states_explored, s->wall_seconds, p->result ? "\"best.ugraph\"" : "null");
  for (int32_t i = 0; i < p->npieces; i++) {
    piece_json(p, i, &b);
    mirs__buf_puts(&b, i + 1 < p->npieces ? ",\n" : "\n");
  }
  mirs__buf_puts(&b, "  ]\n}\n");
  MIRS_CHECK(p->ctx, give(p->ctx, &b, out, len));
  return MIRS_OK;
}

/* Piece pc's ops as "D=rms_norm O=matmul" into buf (cut with "..."). */
static void ops_text(const mirs_partition *p, const mirs__piece *pc, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int32_t a = 0; a < pc->nops && n < size; a++) {
    const mirs__kop *k = &p->program->ops[pc->ops[a]];
    int w = snprintf(buf + n, size - n, "%s%s=%s", a ? " " : "",
                     k->nout > 0 ? p->program->t[k->out[0]].name : "?", mirs_op_name(k->op));
    n += w > 0 ? (size_t)w : 0;
  }
  if (n >= size && size > 4)
    memcpy(buf + size - 4, "...", 4);
}

mirs_status mirs_partition_report_table(const mirs_partition *p, char **out, size_t *len) {
  if (!p)
    return MIRS_INVALID_ARG;
  if (!out)
    return MIRS_FAIL(p->ctx, MIRS_INVALID_ARG, "mirs_partition_report_table: NULL argument");
  const mirs_partition_stats *s = &p->stats;
  mirs__buf b;
  mirs__buf_init(&b, p->ctx);
  mirs__buf_printf(&b, "%5s  %-8s  %-5s  %-36s %12s %12s %8s\n", "piece", "kind", "cache", "ops",
                   "before (us)", "after (us)", "speedup");
  int incomplete = 0;
  for (int32_t i = 0; i < p->npieces; i++) {
    const mirs_piece_info *v = &p->piece[i].info;
    char ops[37];
    ops_text(p, &p->piece[i], ops, sizeof ops);
    bool done = v->kind != MIRS_PIECE_PENDING;
    mirs__buf_printf(&b, "%5d  %-8s  %-5s  %-36s %12.3f ", (int)i, mirs__piece_kind_name(v->kind),
                     v->from_cache ? "hit" : "", ops, v->cost_before * 1e6);
    bool cut = v->kind == MIRS_PIECE_SEARCHED && !v->complete;
    incomplete += cut;
    if (done)
      mirs__buf_printf(&b, "%12.3f %7.2fx%s\n", v->cost_after * 1e6, v->speedup, cut ? "*" : "");
    else
      mirs__buf_printf(&b, "%12s %8s\n", "-", "-");
  }
  if (incomplete > 0)
    mirs__buf_printf(&b, "* %d search%s stopped by a limit: the best found so far (not cached)\n",
                     incomplete, incomplete == 1 ? "" : "es");
  mirs__buf_printf(&b, "%d ops in %d pieces: %d searched, %d from the cache, %d kept, %d library, "
                       "%d pending\n",
                   (int)p->program->nops, s->pieces, s->searched, s->cached, s->kept, s->library,
                   s->pending);
  if (p->result) {
    const mirs_verify_result *v = &s->verify;
    mirs__buf_printf(&b, "whole program: predicted %.3f us -> %.3f us (%.2fx), %d kernel%s\n",
                     s->cost_before * 1e6, s->cost_after * 1e6, s->speedup, s->kernels,
                     s->kernels == 1 ? "" : "s");
    mirs__buf_printf(&b, "stitched uGraph verified against the program: fingerprints %s",
                     v->fingerprint_equal ? "equal" : "not run");
    if (v->trials > 0)
      mirs__buf_printf(&b, " (%d trials, false-accept bound 2^%g)", v->trials, v->log2_bound);
    if (v->float_checked)
      mirs__buf_printf(&b, ", float64 max relative error %.3g", v->float_max_rel_error);
    else
      mirs__buf_printf(&b, ", float64 not run (%s)", v->reason);
    mirs__buf_puts(&b, "\n");
  } else {
    mirs__buf_puts(&b, "stopped: nothing stitched (the finished pieces are in the cache)\n");
  }
  MIRS_CHECK(p->ctx, give(p->ctx, &b, out, len));
  return MIRS_OK;
}
