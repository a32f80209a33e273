/* SPDX-License-Identifier: MIT */
/* src/search/deque.h - a Chase–Lev work-stealing deque of pointers (Lê,
 * Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing for
 * Weak Memory Models", PPoPP'13), in C11 atomics.
 *
 * One owner pushes and pops at the bottom (LIFO: depth-first, the newest
 * and deepest work); any number of thieves steal at the top (FIFO: the
 * oldest, shallowest work).  Only the last element is contended, and only
 * there does the owner CAS.
 *
 * Layout: `top` (written by thieves' CAS and the owner's last-element CAS)
 * and `bottom` (written by the owner, read by thieves) sit on cache lines
 * of their own, so a thief's CAS on top does not evict the owner's bottom,
 * and the owner-only fields (`old`, `ctx`) on a third.  The ring grows by
 * doubling; an outgrown ring stays allocated until the deque is freed,
 * because a thief that loaded the old pointer may still read a slot of it.
 *
 * Invariants: top only grows; bottom - top is the number of elements
 * (transiently -1 in pop); slot i of the ring holds element i mod cap for
 * top <= i < bottom; elements are published by a release store of bottom
 * that thieves read with acquire, so whatever the owner wrote into an
 * element before pushing it is visible to the thief that steals it. */
#ifndef MIRS_SEARCH_DEQUE_H
#define MIRS_SEARCH_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

#define MIRS__CACHE_LINE 64

typedef struct mirs__deque_ring {
  int64_t cap; /* a power of two */
  struct mirs__deque_ring *older; /* the ring this one replaced (freed with the deque) */
  _Atomic(void *) slot[];
} mirs__deque_ring;

typedef struct mirs__deque {
  _Alignas(MIRS__CACHE_LINE) _Atomic int64_t top;
  _Alignas(MIRS__CACHE_LINE) _Atomic int64_t bottom;
  _Atomic(mirs__deque_ring *) ring;
  /* Owner only. */
  _Alignas(MIRS__CACHE_LINE) mirs_context *ctx;
} mirs__deque;

/* Result of a steal that lost a race (try another victim or again): an
 * address no element has. */
#define MIRS__DEQUE_ABORT ((void *)(uintptr_t)1)

/* An empty deque with room for 2^log2cap elements before it grows; the
 * rings are allocated through ctx (the owner's environment). */
mirs_status mirs__deque_init(mirs__deque *d, mirs_context *ctx, int log2cap);
/* Free the rings (no thread may use d any more). */
void mirs__deque_free(mirs__deque *d);
/* Owner: push x at the bottom.  MIRS_NOMEM when the ring cannot grow (x
 * is then not pushed). */
mirs_status mirs__deque_push(mirs__deque *d, void *x);
/* Owner: pop the newest element; NULL when empty. */
void *mirs__deque_pop(mirs__deque *d);
/* Thief: steal the oldest element; NULL when empty, MIRS__DEQUE_ABORT
 * when another thread took it first. */
void *mirs__deque_steal(mirs__deque *d);
/* Elements held (a snapshot: exact for the owner between its own calls). */
int64_t mirs__deque_size(mirs__deque *d);

#endif
