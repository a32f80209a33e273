/* SPDX-License-Identifier: MIT */
/* src/search/trace.c - the search-tree trace: a record of the tree a
 * one-worker search explores and of the time spent on each state, for the
 * scaling simulator (bench/glbsim.c, docs/SCALING.md).  Written by
 * bench/glbtrace.c; the search calls it only when s->trace is set.
 *
 * Format (binary; numbers are unsigned LEB128 varints):
 *   "MIRSTRC1", varint: number of moves of the root state;
 *   then records, each a byte: bits 0-1 the kind, bit 2 a new result was
 *   found in the record's interval, bit 3 a solver count follows, bit 4 a
 *   refused-move count follows:
 *   ENTER (0): move index, number of moves of the new state, [refused],
 *     [solver calls], ns since the previous record, ns of applying the
 *     move and generating the new state's moves (what a replay of the
 *     state costs; the rest of the interval is the refused moves before
 *     it and the check of a candidate);
 *   POP (1): [refused], [solver calls], ns since the previous record (the
 *     refused moves after the last child); a POP closes the state that
 *     the last unclosed ENTER opened, or the root;
 *   END (2): states entered, ns from the start to the end, CPU ns of the
 *     searching thread over the same span, solver calls, results found.
 * Refused: moves tried at the top frame and refused or pruned since the
 * previous record (the pool polls every 16 of these loop steps).  A
 * search stopped by a limit ends without the POPs of its open frames. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/search.h"
#include "verify/prune.h"

struct mirs__trace {
  FILE *f;
  unsigned char buf[1 << 16];
  size_t n;
  bool err;
  uint64_t t0, cpu0, last;
  uint64_t refused;
  uint64_t solver, found; /* the worker's counters at the previous record */
  uint64_t states;
};

enum { REC_ENTER = 0, REC_POP = 1, REC_END = 2 };
#define F_RESULT 4u
#define F_SOLVER 8u
#define F_REFUSED 16u

uint64_t mirs__trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void flush(mirs__trace *t) {
  if (t->n && fwrite(t->buf, 1, t->n, t->f) != t->n)
    t->err = true;
  t->n = 0;
}

static void put_byte(mirs__trace *t, unsigned v) {
  if (t->n == sizeof t->buf)
    flush(t);
  t->buf[t->n++] = (unsigned char)v;
}

static void put_var(mirs__trace *t, uint64_t v) {
  while (v >= 0x80) {
    put_byte(t, (unsigned)(v & 0x7f) | 0x80u);
    v >>= 7;
  }
  put_byte(t, (unsigned)v);
}

mirs_status mirs__trace_start(mirs_search *s, const char *path) {
  mirs__trace *t = calloc(1, sizeof *t);
  if (!t)
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory (a trace)");
  t->f = fopen(path, "wb");
  if (!t->f) {
    free(t);
    return MIRS_FAIL(s->ctx, MIRS_IO, "cannot create the trace file %s", path);
  }
  s->trace = t;
  return MIRS_OK;
}

/* The header (the root's move count), at the worker's first record. */
static void begin(mirs__trace *t, const mirs__search_worker *w) {
  if (t->t0)
    return;
  if (fwrite("MIRSTRC1", 1, 8, t->f) != 8)
    t->err = true;
  put_var(t, w->frames[0].nmoves);
  t->t0 = t->last = mirs__trace_now();
  t->cpu0 = cpu_now();
}

void mirs__trace_refused(mirs__trace *t) {
  t->refused++;
}

/* The flag byte and the counts common to ENTER and POP. */
static void head(mirs__trace *t, const mirs__search_worker *w, unsigned kind, uint32_t *idx,
                 uint32_t nmoves) {
  uint64_t solver = mirs__prune_worker_counters(w->pw)->solver_calls;
  uint64_t found = w->stats.v[MIRS__STAT_graphs_found];
  unsigned fl = kind;
  if (found != t->found)
    fl |= F_RESULT;
  if (solver != t->solver)
    fl |= F_SOLVER;
  if (t->refused)
    fl |= F_REFUSED;
  put_byte(t, fl);
  if (idx) {
    put_var(t, *idx);
    put_var(t, nmoves);
  }
  if (t->refused)
    put_var(t, t->refused);
  if (solver != t->solver)
    put_var(t, solver - t->solver);
  t->refused = 0;
  t->solver = solver;
  t->found = found;
}

void mirs__trace_enter(mirs__search_worker *w, uint32_t idx, uint64_t ta, uint64_t tb,
                       uint64_t tc) {
  mirs__trace *t = w->s->trace;
  uint64_t td = mirs__trace_now();
  if (!t->t0) {
    /* (the first state: the interval starts at its move) */
    begin(t, w);
    t->last = ta;
  }
  head(t, w, REC_ENTER, &idx, w->frames[w->depth - 1].nmoves);
  put_var(t, td > t->last ? td - t->last : 0);
  put_var(t, (tb - ta) + (td - tc));
  t->last = td;
  t->states++;
}

void mirs__trace_pop(mirs__search_worker *w) {
  mirs__trace *t = w->s->trace;
  begin(t, w);
  uint64_t now = mirs__trace_now();
  head(t, w, REC_POP, NULL, 0);
  put_var(t, now > t->last ? now - t->last : 0);
  t->last = now;
}

bool mirs__trace_end(mirs_search *s) {
  mirs__trace *t = s->trace;
  if (!t)
    return true;
  s->trace = NULL;
  if (t->t0) {
    put_byte(t, REC_END);
    put_var(t, t->states);
    put_var(t, t->last - t->t0);
    put_var(t, cpu_now() - t->cpu0);
    put_var(t, s->stats.v[MIRS__STAT_solver_calls]);
    put_var(t, s->stats.v[MIRS__STAT_graphs_found]);
  }
  flush(t);
  bool ok = !t->err && fclose(t->f) == 0;
  free(t);
  return ok;
}
