/* SPDX-License-Identifier: MIT */
/* src/core/context.c - the context's life after creation (worker
 * contexts, merging them back, release) and "what library is this":
 * run-time version (to compare with the header's), git hash, compiler
 * and configured features.
 *
 * Creation and release live here, not in alloc.c: creation reads the
 * fault-injection setting (fault.c, which logs) and release reports
 * through the log (log.c), which itself allocates through alloc.c, so
 * keeping both out of alloc.c keeps the allocator free of calls into the
 * log (no call cycle among core's files). */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "mirsearch/version.h"

/* The default allocator: realloc/free with the lua_Alloc protocol. */
static void *default_alloc(void *user, void *ptr, size_t osize, size_t nsize) {
  (void)user;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

/* Context creation: the one allocation made without a context (through
 * the caller's allocator directly). */
mirs_status mirs_context_create_with_allocator(mirs_alloc_fn alloc, void *user,
                                               mirs_context **out) {
  if (!out)
    return MIRS_INVALID_ARG;
  *out = NULL;
  if (!alloc)
    alloc = default_alloc;
  mirs_context *ctx = alloc(user, NULL, 0, sizeof *ctx);
  if (!ctx)
    return MIRS_NOMEM;
  memset(ctx, 0, sizeof *ctx);
  ctx->alloc = alloc;
  ctx->alloc_user = user;
  atomic_init(&ctx->mem_current, 0);
  atomic_init(&ctx->mem_peak, 0);
  atomic_init(&ctx->fail_countdown, 0);
  atomic_init(&ctx->fault_steps, 0);
  atomic_init(&ctx->launch_bytes, 0);
  mirs__core_fault_init(ctx);
  mirs__core_options_defaults(&ctx->opt);
  *out = ctx;
  return MIRS_OK;
}

/* Create a context with the default allocator. */
mirs_status mirs_context_create(mirs_context **out) {
  return mirs_context_create_with_allocator(NULL, NULL, out);
}

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
  atomic_store(&(*out)->launch_bytes, atomic_load(&parent->launch_bytes));
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
