/* SPDX-License-Identifier: MIT */
/* src/core/log.c - logging, diagnostics and statistics of a context.
 *
 * Messages at or below the log_level option go to the context's callback
 * (stderr by default).  Diagnostics are also kept in the context so an
 * embedder can read them after a parse; storing one never fails the
 * caller (a diagnostic that cannot be stored is still logged). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"

/* Default sink: the message and a newline on stderr. */
static void default_log(void *user, mirs_log_level level, const char *message) {
  (void)user;
  (void)level;
  fprintf(stderr, "%s\n", message);
}

/* Install a log callback; NULL restores the default. */
void mirs_set_log_callback(mirs_context *ctx, mirs_log_fn fn, void *user) {
  if (!ctx)
    return;
  ctx->log_fn = fn;
  ctx->log_user = user;
}

/* Format and deliver a message if its level is enabled. */
void mirs__core_vlog(mirs_context *ctx, mirs_log_level level, const char *fmt, va_list ap) {
  if (!ctx || (int64_t)level > ctx->opt.log_level)
    return;
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (ctx->log_fn)
    ctx->log_fn(ctx->log_user, level, msg);
  else
    default_log(NULL, level, msg);
}

/* printf-style front end of mirs__core_vlog. */
void mirs__core_log(mirs_context *ctx, mirs_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mirs__core_vlog(ctx, level, fmt, ap);
  va_end(ap);
}

/* Forget the stored diagnostics. */
void mirs__core_diag_clear(mirs_context *ctx) {
  for (size_t i = 0; i < ctx->ndiags; i++)
    mirs__core_free(ctx, ctx->diags[i]);
  ctx->ndiags = 0;
}

/* Report one diagnostic: logged always, stored when memory allows. */
void mirs__core_diag(mirs_context *ctx, const char *file, int line, int col, const char *fmt, ...) {
  char msg[1536], full[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (line > 0)
    snprintf(full, sizeof full, "%s:%d:%d: error: %s", file, line, col, msg);
  else
    snprintf(full, sizeof full, "%s: error: %s", file, msg);
  MIRS_INC(&ctx->stats, diagnostics);
  mirs__core_log(ctx, MIRS_LOG_ERROR, "%s", full);
  /* Storing must not disturb an error the caller is about to report. */
  mirs_status saved = ctx->err_status;
  char saved_msg[sizeof ctx->err_msg];
  memcpy(saved_msg, ctx->err_msg, sizeof saved_msg);
  if (mirs__core_grow(ctx, (void **)&ctx->diags, &ctx->diags_cap, ctx->ndiags + 1,
                      sizeof *ctx->diags) == MIRS_OK) {
    char *copy = mirs__core_strdup(ctx, full);
    if (copy)
      ctx->diags[ctx->ndiags++] = copy;
  }
  ctx->err_status = saved;
  memcpy(ctx->err_msg, saved_msg, sizeof saved_msg);
}

/* Number of stored diagnostics. */
size_t mirs_diag_count(const mirs_context *ctx) {
  return ctx ? ctx->ndiags : 0;
}

/* Stored diagnostic index, or NULL. */
const char *mirs_diag_message(const mirs_context *ctx, size_t index) {
  return ctx && index < ctx->ndiags ? ctx->diags[index] : NULL;
}

/* ---------------------------------------------------------------- statistics */

static const struct {
  const char *name, *rel, *desc;
} stat_table[] = {
#define MIRS_STAT(name, rel, desc) {#name, #rel, desc},
#include "stats.def"
#undef MIRS_STAT
};

/* Add a worker's counters into the context's. */
void mirs__core_stats_add(mirs_context *ctx, const mirs__stats *s) {
  for (size_t i = 0; i < MIRS__STAT_COUNT; i++)
    ctx->stats.v[i] += s->v[i];
}

/* Number of statistics counters. */
size_t mirs_stat_count(void) {
  return MIRS__STAT_COUNT;
}

/* Name of counter index. */
const char *mirs_stat_name(size_t index) {
  return index < MIRS__STAT_COUNT ? stat_table[index].name : NULL;
}

/* Description of counter index. */
const char *mirs_stat_description(size_t index) {
  return index < MIRS__STAT_COUNT ? stat_table[index].desc : NULL;
}

/* Value of counter index on ctx. */
uint64_t mirs_stat_value(const mirs_context *ctx, size_t index) {
  return ctx && index < MIRS__STAT_COUNT ? ctx->stats.v[index] : 0;
}
