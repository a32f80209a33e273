/* SPDX-License-Identifier: MIT */
/* src/search/wire.c - the binary encoding of checkpoints and MPI messages.
 *
 * Integers are little-endian whatever the host (a checkpoint moves between
 * machines); a reader never reads past its bytes (a damaged file or
 * message sets `bad`, which its caller turns into one error). */
#include "config.h"

#include <string.h>

#include "search/wire.h"

void mirs__wire_put(mirs__buf *b, const void *p, size_t n) {
  mirs__buf_put(b, p, n);
}

void mirs__wire_put_u8(mirs__buf *b, uint8_t v) {
  mirs__wire_put(b, &v, 1);
}

void mirs__wire_put_u32(mirs__buf *b, uint32_t v) {
  unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  mirs__wire_put(b, c, 4);
}

void mirs__wire_put_u64(mirs__buf *b, uint64_t v) {
  mirs__wire_put_u32(b, (uint32_t)v);
  mirs__wire_put_u32(b, (uint32_t)(v >> 32));
}

void mirs__wire_put_f64(mirs__buf *b, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  mirs__wire_put_u64(b, u);
}

void mirs__wire_put_str(mirs__buf *b, const char *s, size_t n) {
  mirs__wire_put_u32(b, (uint32_t)n);
  mirs__wire_put(b, s, n);
}

void mirs__wire_put_task(mirs__buf *b, const mirs__task *t) {
  mirs__wire_put_u32(b, t->lo);
  mirs__wire_put_u32(b, t->hi);
  mirs__wire_put_u32(b, (uint32_t)t->len);
  for (int32_t k = 0; k < t->len; k++)
    mirs__wire_put_u32(b, t->path[k]);
}

const void *mirs__wire_get(mirs__wire_reader *r, size_t n) {
  if (r->bad || n > r->n - r->at) {
    r->bad = true;
    return NULL;
  }
  const void *p = r->d + r->at;
  r->at += n;
  return p;
}

void mirs__wire_get_into(mirs__wire_reader *r, void *v, size_t n) {
  const void *p = mirs__wire_get(r, n);
  if (p)
    memcpy(v, p, n);
}

uint32_t mirs__wire_get_u32(mirs__wire_reader *r) {
  const unsigned char *c = mirs__wire_get(r, 4);
  return c ? (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24
           : 0;
}

uint64_t mirs__wire_get_u64(mirs__wire_reader *r) {
  uint64_t lo = mirs__wire_get_u32(r);
  return lo | (uint64_t)mirs__wire_get_u32(r) << 32;
}

double mirs__wire_get_f64(mirs__wire_reader *r) {
  uint64_t u = mirs__wire_get_u64(r);
  double v;
  memcpy(&v, &u, sizeof v);
  return v;
}

const char *mirs__wire_get_str(mirs__wire_reader *r, uint32_t *len) {
  *len = mirs__wire_get_u32(r);
  return mirs__wire_get(r, *len);
}

mirs__task *mirs__wire_get_task(mirs_context *ctx, mirs__wire_reader *r) {
  uint32_t lo = mirs__wire_get_u32(r), hi = mirs__wire_get_u32(r), len = mirs__wire_get_u32(r);
  if (r->bad || len > (r->n - r->at) / 4) {
    r->bad = true;
    return NULL;
  }
  mirs__task *t = mirs__task_new(ctx, NULL, (int32_t)len, lo, hi);
  if (!t) {
    r->bad = true;
    return NULL;
  }
  for (uint32_t k = 0; k < len; k++)
    t->path[k] = mirs__wire_get_u32(r);
  return t;
}
