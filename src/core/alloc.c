/* SPDX-License-Identifier: MIT */
/* src/core/alloc.c - allocation through the context.
 *
 * Every block carries a 16-byte header holding its size, so the context
 * can keep exact current/peak byte counts and hand the embedder's
 * allocator the old size (Lua's lua_Alloc protocol).  Counters are atomic
 * because worker threads share one context.  A test hook makes the n-th
 * allocation fail so error paths can be exercised. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define HDR 16 /* keeps user pointers 16-byte aligned */

/* Account for a change of delta bytes (positive or negative). */
static void account(mirs_context *ctx, size_t add, size_t sub) {
  size_t cur = atomic_fetch_add(&ctx->mem_current, add) + add;
  if (sub)
    cur = atomic_fetch_sub(&ctx->mem_current, sub) - sub;
  size_t peak = atomic_load(&ctx->mem_peak);
  while (cur > peak && !atomic_compare_exchange_weak(&ctx->mem_peak, &peak, cur)) {
  }
}

/* True when the test hook says this allocation must fail. */
static bool injected_failure(mirs_context *ctx) {
  long n = atomic_load(&ctx->fail_countdown);
  if (n <= 0)
    return false;
  n = atomic_fetch_sub(&ctx->fail_countdown, 1);
  return n == 1;
}

/* Resize a block, header included; on failure set ctx's error unless quiet. */
static void *resize(mirs_context *ctx, void *p, size_t n, bool quiet) {
  size_t old = 0;
  unsigned char *base = NULL;
  if (p) {
    base = (unsigned char *)p - HDR;
    memcpy(&old, base, sizeof old);
  }
  unsigned char *nb = NULL;
  if (n <= SIZE_MAX - HDR && !injected_failure(ctx))
    nb = ctx->alloc(ctx->alloc_user, base, base ? old + HDR : 0, n + HDR);
  if (!nb) {
    if (!quiet)
      MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (%zu bytes requested)", n);
    return NULL;
  }
  memcpy(nb, &n, sizeof n);
  if (n >= old)
    account(ctx, n - old, 0);
  else
    account(ctx, 0, old - n);
  return nb + HDR;
}

/* Resize a block through the context's allocator. */
void *mirs__core_realloc(mirs_context *ctx, void *p, size_t n) {
  return resize(ctx, p, n, false);
}

/* Allocate n bytes without touching ctx's error slot. */
void *mirs__core_alloc_quiet(mirs_context *ctx, size_t n) {
  return resize(ctx, NULL, n, true);
}

/* Allocate n uninitialised bytes. */
void *mirs__core_alloc(mirs_context *ctx, size_t n) {
  return mirs__core_realloc(ctx, NULL, n);
}

/* Allocate count*size zeroed bytes, failing on overflow. */
void *mirs__core_calloc(mirs_context *ctx, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (%zu x %zu bytes requested)", count, size);
    return NULL;
  }
  void *p = mirs__core_alloc(ctx, count * size);
  if (p)
    memset(p, 0, count * size);
  return p;
}

/* Free a block from mirs__core_alloc; NULL is a no-op. */
void mirs__core_free(mirs_context *ctx, void *p) {
  if (!p)
    return;
  unsigned char *base = (unsigned char *)p - HDR;
  size_t old;
  memcpy(&old, base, sizeof old);
  ctx->alloc(ctx->alloc_user, base, old + HDR, 0);
  account(ctx, 0, old);
}

/* Copy a NUL-terminated string. */
char *mirs__core_strdup(mirs_context *ctx, const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = mirs__core_alloc(ctx, n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* Grow an array geometrically so it holds at least need elements. */
mirs_status mirs__core_grow(mirs_context *ctx, void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return MIRS_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2 / elem)
      return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (array of %zu elements)", need);
    ncap *= 2;
  }
  void *p = mirs__core_realloc(ctx, *arr, ncap * elem);
  if (!p)
    return MIRS_NOMEM;
  *arr = p;
  *cap = ncap;
  return MIRS_OK;
}

/* Make the n-th allocation from now fail (0 disables the hook). */
void mirs__core_fail_alloc_after(mirs_context *ctx, long n) {
  atomic_store(&ctx->fail_countdown, n);
}

/* Bytes currently allocated through ctx. */
size_t mirs_memory_current(const mirs_context *ctx) {
  return ctx ? atomic_load(&((mirs_context *)(uintptr_t)ctx)->mem_current) : 0;
}

/* Most bytes ever allocated at once through ctx. */
size_t mirs_memory_peak(const mirs_context *ctx) {
  return ctx ? atomic_load(&((mirs_context *)(uintptr_t)ctx)->mem_peak) : 0;
}

/* Public release of memory the library handed to the caller. */
void mirs_free(mirs_context *ctx, void *ptr) {
  if (ctx)
    mirs__core_free(ctx, ptr);
}
