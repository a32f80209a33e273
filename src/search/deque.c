/* SPDX-License-Identifier: MIT */
/* src/search/deque.c - the Chase–Lev deque (see deque.h for the layout and
 * invariants).  Each memory order is explained where it is chosen.
 *
 * One deviation from the paper, for ThreadSanitizer's sake and no cost on
 * x86: push publishes bottom with a release *store* instead of a release
 * fence followed by a relaxed store (TSan does not model standalone
 * fences, and would otherwise report the element's contents as raced). */
#include "config.h"

#include <string.h>

#include "search/deque.h"

/* A ring of cap slots. */
static mirs__deque_ring *ring_new(mirs_context *ctx, int64_t cap) {
  mirs__deque_ring *r =
      mirs__core_alloc(ctx, sizeof *r + (size_t)cap * sizeof(_Atomic(void *)));
  if (!r)
    return NULL;
  r->cap = cap;
  r->older = NULL;
  for (int64_t i = 0; i < cap; i++)
    atomic_init(&r->slot[i], NULL);
  return r;
}

/* An empty deque. */
mirs_status mirs__deque_init(mirs__deque *d, mirs_context *ctx, int log2cap) {
  memset(d, 0, sizeof *d);
  d->ctx = ctx;
  atomic_init(&d->top, 0);
  atomic_init(&d->bottom, 0);
  mirs__deque_ring *r = ring_new(ctx, (int64_t)1 << log2cap);
  if (!r)
    return MIRS_NOMEM;
  atomic_init(&d->ring, r);
  return MIRS_OK;
}

/* Free every ring. */
void mirs__deque_free(mirs__deque *d) {
  mirs__deque_ring *r = atomic_load_explicit(&d->ring, memory_order_relaxed);
  while (r) {
    mirs__deque_ring *o = r->older;
    mirs__core_free(d->ctx, r);
    r = o;
  }
  atomic_store_explicit(&d->ring, NULL, memory_order_relaxed);
}

/* Owner: push x. */
mirs_status mirs__deque_push(mirs__deque *d, void *x) {
  /* Relaxed: only the owner writes bottom. */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  /* Acquire: pairs with a thief's CAS of top, so the slots it emptied are
   * not overwritten before it read them. */
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  mirs__deque_ring *r = atomic_load_explicit(&d->ring, memory_order_relaxed);
  if (b - t > r->cap - 1) {
    mirs__deque_ring *n = ring_new(d->ctx, r->cap * 2);
    if (!n)
      return MIRS_NOMEM;
    for (int64_t i = t; i < b; i++)
      atomic_store_explicit(&n->slot[i & (n->cap - 1)],
                            atomic_load_explicit(&r->slot[i & (r->cap - 1)], memory_order_relaxed),
                            memory_order_relaxed);
    n->older = r; /* a thief may still read r: freed with the deque */
    /* Release: a thief that loads the new ring (acquire) sees its slots. */
    atomic_store_explicit(&d->ring, n, memory_order_release);
    r = n;
  }
  /* Relaxed: the element is published by the release store of bottom. */
  atomic_store_explicit(&r->slot[b & (r->cap - 1)], x, memory_order_relaxed);
  /* Release: everything written into x and its slot happens before a
   * thief's acquire load of bottom that sees b + 1. */
  atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
  return MIRS_OK;
}

/* Owner: pop the newest element. */
void *mirs__deque_pop(mirs__deque *d) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
  mirs__deque_ring *r = atomic_load_explicit(&d->ring, memory_order_relaxed);
  /* Relaxed store, then a seq_cst fence: the claim on slot b (bottom
   * lowered) must be globally ordered before we read top, or a thief and
   * the owner could both take the last element (store-load ordering,
   * which only a full fence gives). */
  atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  void *x = NULL;
  if (t <= b) {
    x = atomic_load_explicit(&r->slot[b & (r->cap - 1)], memory_order_relaxed);
    if (t == b) {
      /* The last element: race the thieves for it.  seq_cst on success
       * orders the CAS with their fenced reads of bottom. */
      if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                   memory_order_relaxed))
        x = NULL; /* a thief won */
      atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    }
  } else {
    /* Empty: restore bottom. */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
  }
  return x;
}

/* Thief: steal the oldest element. */
void *mirs__deque_steal(mirs__deque *d) {
  /* Acquire on top: we read slots an earlier thief's CAS let go of. */
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  /* seq_cst fence: top is read before bottom in every thread's view (the
   * mirror of the fence in pop). */
  atomic_thread_fence(memory_order_seq_cst);
  /* Acquire: pairs with push's release store, so the element's contents
   * are visible once we see it counted. */
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
  if (t >= b)
    return NULL;
  /* Acquire: pairs with the release store of a grown ring. */
  mirs__deque_ring *r = atomic_load_explicit(&d->ring, memory_order_acquire);
  void *x = atomic_load_explicit(&r->slot[t & (r->cap - 1)], memory_order_relaxed);
  /* seq_cst CAS: claims element t against the owner's pop and other
   * thieves; on failure someone else took it. */
  if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                               memory_order_relaxed))
    return MIRS__DEQUE_ABORT;
  return x;
}

/* Elements held. */
int64_t mirs__deque_size(mirs__deque *d) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  return b > t ? b - t : 0;
}
