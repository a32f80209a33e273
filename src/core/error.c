/* SPDX-License-Identifier: MIT */
/* src/core/error.c - status codes and per-context errors with traces.
 *
 * The status table comes from mirsearch/status.def.  An error is recorded
 * once where it is detected (mirs__core_fail starts a new message and
 * trace); each function that passes it upward appends one trace line
 * (mirs__core_trace).  Messages are truncated, never overflowed. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"

static const struct {
  const char *name;
  int exit_status;
  const char *desc;
} status_table[] = {
#define MIRS_STATUS(name, exit_status, desc) {#name, exit_status, desc},
#include "mirsearch/status.def"
#undef MIRS_STATUS
};

/* Short name of a status. */
const char *mirs_status_name(mirs_status s) {
  return (unsigned)s < MIRS_STATUS_COUNT ? status_table[s].name : "?";
}

/* One-line description of a status. */
const char *mirs_status_str(mirs_status s) {
  return (unsigned)s < MIRS_STATUS_COUNT ? status_table[s].desc : "unknown status";
}

/* Process exit status for a status code. */
int mirs_status_exit_code(mirs_status s) {
  return (unsigned)s < MIRS_STATUS_COUNT ? status_table[s].exit_status : 3;
}

/* Append "func (file:line)" to the trace, dropping it when full. */
static void trace_append(mirs_context *ctx, const char *func, const char *file, int line) {
  size_t len = strlen(ctx->err_trace);
  if (len + 1 >= sizeof ctx->err_trace)
    return;
  snprintf(ctx->err_trace + len, sizeof ctx->err_trace - len, "%s%s (%s:%d)", len ? "\n" : "",
           func, file, line);
}

/* Record a new error with a formatted message. */
mirs_status mirs__core_fail(mirs_context *ctx, mirs_status s, const char *func, const char *file,
                            int line, const char *fmt, ...) {
  if (!ctx)
    return s;
  ctx->err_status = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err_msg, sizeof ctx->err_msg, fmt, ap);
  va_end(ap);
  ctx->err_trace[0] = '\0';
  trace_append(ctx, func, file, line);
  return s;
}

/* Add a trace line to the current error. */
mirs_status mirs__core_trace(mirs_context *ctx, mirs_status s, const char *func, const char *file,
                             int line) {
  if (ctx) {
    if (ctx->err_status == MIRS_OK) {
      /* A status arrived without a message (e.g. from a callback). */
      ctx->err_status = s;
      snprintf(ctx->err_msg, sizeof ctx->err_msg, "%s", mirs_status_str(s));
    }
    trace_append(ctx, func, file, line);
  }
  return s;
}

/* Message of the last error. */
const char *mirs_last_error(const mirs_context *ctx) {
  return ctx ? ctx->err_msg : "no context";
}

/* Trace of the last error. */
const char *mirs_error_trace(const mirs_context *ctx) {
  return ctx ? ctx->err_trace : "";
}

/* Status of the last error. */
mirs_status mirs_last_status(const mirs_context *ctx) {
  return ctx ? ctx->err_status : MIRS_INVALID_ARG;
}

/* Copy an error between contexts (a worker's to its search's). */
void mirs__core_error_copy(mirs_context *dst, const mirs_context *src) {
  if (!dst || !src || dst == src)
    return;
  dst->err_status = src->err_status;
  memcpy(dst->err_msg, src->err_msg, sizeof dst->err_msg);
  memcpy(dst->err_trace, src->err_trace, sizeof dst->err_trace);
}

/* Forget the last error. */
void mirs_clear_error(mirs_context *ctx) {
  if (!ctx)
    return;
  ctx->err_status = MIRS_OK;
  ctx->err_msg[0] = '\0';
  ctx->err_trace[0] = '\0';
}
