/* SPDX-License-Identifier: MIT */
/* src/core/context.c - the context's life after creation (worker
 * contexts, merging them back, release) and "what library is this":
 * run-time version (to compare with the header's), git hash, compiler
 * and configured features.
 *
 * Creation lives in alloc.c because it is the one allocation made without
 * a context; release is here because it reports through the log (log.c),
 * which itself allocates through alloc.c: keeping both out of alloc.c
 * keeps the allocator free of calls into the log. */
#include "config.h"

#include <stdatomic.h>

#include "core/core.h"
#include "mirsearch/version.h"

/* Run-time version number. */
int mirs_version(void) {
  return MIRS_VERSION;
}

/* Run-time version string. */
const char *mirs_version_string(void) {
  return MIRS_VERSION_STRING;
}

/* Configured features. */
const char *mirs_build_features(void) {
  return MIRS_FEATURES;
}

/* Git commit of the build. */
const char *mirs_build_git_hash(void) {
  return MIRS_GIT_HASH;
}

/* Compiler of the build. */
const char *mirs_build_compiler(void) {
  return MIRS_CC_VERSION;
}

/* A worker environment of parent. */
mirs_status mirs__core_context_child(mirs_context *parent, mirs_context **out) {
  mirs_status st = mirs_context_create_with_allocator(parent->alloc, parent->alloc_user, out);
  if (st != MIRS_OK)
    return MIRS_FAIL(parent, st, "out of memory (a worker context)");
  (*out)->opt = parent->opt;
  (*out)->log_fn = parent->log_fn;
  (*out)->log_user = parent->log_user;
  (*out)->parent = parent;
  return MIRS_OK;
}

/* Fold a worker environment into its parent and release it. */
void mirs__core_context_merge(mirs_context *child) {
  if (!child)
    return;
  mirs_context *p = child->parent;
  if (p) {
    mirs__core_stats_add(p, &child->stats);
    size_t joint = atomic_load(&p->mem_current) + atomic_load(&child->mem_peak);
    size_t peak = atomic_load(&p->mem_peak);
    while (joint > peak && !atomic_compare_exchange_weak(&p->mem_peak, &peak, joint)) {
    }
  }
  mirs_context_destroy(child);
}

/* Release a context, reporting blocks still allocated through it. */
void mirs_context_destroy(mirs_context *ctx) {
  if (!ctx)
    return;
  mirs__core_diag_clear(ctx);
  mirs__core_free(ctx, ctx->diags);
  ctx->diags = NULL;
  size_t left = atomic_load(&ctx->mem_current);
  if (left)
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "mirsearch: warning: context destroyed with %zu bytes still allocated", left);
  ctx->alloc(ctx->alloc_user, ctx, sizeof *ctx, 0);
}
