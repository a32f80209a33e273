/* SPDX-License-Identifier: MIT */
/* src/search/wire.h - the binary encoding that checkpoints (checkpoint.c)
 * and MPI messages (dist.c) share: little-endian integers and doubles,
 * length-prefixed strings, tasks; and a bounds-checked reader.  See
 * docs/ARCHITECTURE.md and docs/FORMATS.md (the checkpoint file). */
#ifndef MIRS_SEARCH_WIRE_H
#define MIRS_SEARCH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "search/task.h"

/* Writers: append to b (b->failed set when memory is short). */
void mirs__wire_put(mirs__buf *b, const void *p, size_t n);
void mirs__wire_put_u8(mirs__buf *b, uint8_t v);
void mirs__wire_put_u32(mirs__buf *b, uint32_t v);
void mirs__wire_put_u64(mirs__buf *b, uint64_t v);
void mirs__wire_put_f64(mirs__buf *b, double v);
/* u32 length n, then n bytes. */
void mirs__wire_put_str(mirs__buf *b, const char *s, size_t n);
/* A task: lo, hi, len, then its path, each a u32. */
void mirs__wire_put_task(mirs__buf *b, const mirs__task *t);

/* A reader over bytes d[0..n): a read past the end sets bad and returns
 * NULL or 0 from then on, so a caller checks bad once after a run of
 * reads. */
typedef struct mirs__wire_reader {
  const unsigned char *d;
  size_t n, at;
  bool bad;
} mirs__wire_reader;

/* The next n bytes (NULL past the end). */
const void *mirs__wire_get(mirs__wire_reader *r, size_t n);
/* n bytes into v (left as they were past the end). */
void mirs__wire_get_into(mirs__wire_reader *r, void *v, size_t n);
uint32_t mirs__wire_get_u32(mirs__wire_reader *r);
uint64_t mirs__wire_get_u64(mirs__wire_reader *r);
double mirs__wire_get_f64(mirs__wire_reader *r);
/* A string written by mirs__wire_put_str: its bytes (not terminated),
 * length in *len. */
const char *mirs__wire_get_str(mirs__wire_reader *r, uint32_t *len);
/* A task written by mirs__wire_put_task, allocated quietly in ctx; NULL
 * with r->bad set when malformed or out of memory. */
mirs__task *mirs__wire_get_task(mirs_context *ctx, mirs__wire_reader *r);

#endif
