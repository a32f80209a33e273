/* SPDX-License-Identifier: MIT */
/* src/search/partition_cut.c - cutting a program into pieces the search
 * handles (docs/PARTITION.md "Pieces").
 *
 * Greedy and deterministic: the ops are visited in program order; an op
 * the search does not handle (not in its space for this program: named
 * in neither kernel_ops nor block_ops, nor offered by the search
 * whenever a program holds it) becomes a library piece of its own; any other op not yet
 * taken starts a piece, which then takes, one at a time, a neighbouring
 * op (one that reads a tensor of the piece, or writes one it reads) that
 * is supported and not yet taken, the one leaving the piece the fewest
 * inputs and outputs (lowest op index among equals), as long as the piece
 * stays within partition_max_ops / _inputs / _outputs, holds no exp of an
 * exp (no sound fingerprint) and stays convex: no path leaves the piece
 * and comes back to it, where a path may pass through the pieces made
 * before as through single nodes (each finished piece contracted), which
 * keeps the graph of pieces acyclic.  A grown piece that both reads and
 * writes out a tensor that may hold causal_mask's -inf (passes_mask) is
 * cut back to the last size that does not.  The pieces are then put in a
 * topological order (the lowest first op among the ready ones first) and
 * each becomes a program of its own: inputs x0, x1, ... in the order its
 * ops first read them, outputs y0, y1, ... in the order its ops write
 * them, so equal pieces have equal canonical hashes.
 *
 * Invariants: every op of the program is in exactly one piece; a piece's
 * ops are ascending (a topological order); the order of pieces is
 * topological (every input of a piece is a program input or an output of
 * an earlier piece). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/partition.h"
#include "search/search.h"
#include "verify/fingerprint.h"

/* Scratch of the cut. */
typedef struct cutter {
  mirs_partition *p;
  const mirs_graph *g;
  int32_t *cstart, *cons; /* consumers of tensor t: cons[cstart[t] .. cstart[t+1]) */
  int32_t *unit;          /* op -> piece, -1 while not taken */
  bool *in_s, *dexp;      /* op in the growing piece; has an exp upstream in it */
  bool *is_out;           /* tensor is a program output */
  bool *masked;           /* tensor may hold causal_mask's -inf (fingerprint.c) */
  uint32_t *seen, *tseen; /* op and tensor stamps (epoch) */
  uint32_t epoch;
  int32_t *stack;
  int32_t *cand;
  bool sup[MIRS_OP_COUNT];
} cutter;

/* Which operators the search can produce for this program, as the
 * search's own space says (space.c): those the options kernel_ops and
 * block_ops name, those it offers whenever a program holds them (a
 * causal mask), rms_norm and sum through their accumulators. */
static mirs_status supported_ops(mirs_context *ctx, const mirs_graph *g, bool sup[MIRS_OP_COUNT]) {
  mirs__search_space *sp = mirs__core_calloc(ctx, 1, sizeof *sp);
  if (!sp)
    return MIRS_NOMEM;
  mirs_status st = mirs__search_space_parse(ctx, sp);
  if (st == MIRS_OK) {
    mirs__search_space_budget(sp, g, -1);
    for (int op = 0; op < MIRS_OP_COUNT; op++)
      sup[op] = sp->kop[op] || sp->bop[op];
    sup[MIRS_OP_RMS_NORM] = sup[MIRS_OP_RMS_NORM] || sp->bop[MIRS_OP_ACCUM_RMS];
    sup[MIRS_OP_SUM] = sup[MIRS_OP_SUM] || sp->bop[MIRS_OP_ACCUM_SUM];
  }
  mirs__core_free(ctx, sp);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Build the consumer lists and the scratch.  MIRS_NOMEM on failure. */
static mirs_status cutter_init(cutter *c, mirs_partition *p) {
  mirs_context *ctx = p->ctx;
  const mirs_graph *g = p->program;
  memset(c, 0, sizeof *c);
  c->p = p;
  c->g = g;
  size_t nt = (size_t)g->nt, no = (size_t)g->nops, ne = 0;
  for (size_t k = 0; k < no; k++)
    ne += (size_t)g->ops[k].nin;
  c->cstart = mirs__core_calloc(ctx, nt + 1, sizeof *c->cstart);
  c->cons = mirs__core_calloc(ctx, ne + 1, sizeof *c->cons);
  c->unit = mirs__core_calloc(ctx, no + 1, sizeof *c->unit);
  c->in_s = mirs__core_calloc(ctx, no + 1, sizeof *c->in_s);
  c->dexp = mirs__core_calloc(ctx, no + 1, sizeof *c->dexp);
  c->is_out = mirs__core_calloc(ctx, nt + 1, sizeof *c->is_out);
  c->masked = mirs__core_calloc(ctx, nt + 1, sizeof *c->masked);
  c->seen = mirs__core_calloc(ctx, no + 1, sizeof *c->seen);
  c->tseen = mirs__core_calloc(ctx, nt + 1, sizeof *c->tseen);
  c->stack = mirs__core_calloc(ctx, ne + no + 1, sizeof *c->stack);
  c->cand = mirs__core_calloc(ctx, ne + no + 1, sizeof *c->cand);
  if (!c->cstart || !c->cons || !c->unit || !c->in_s || !c->dexp || !c->is_out || !c->masked ||
      !c->seen || !c->tseen || !c->stack || !c->cand)
    return MIRS_NOMEM;
  for (size_t k = 0; k < no; k++)
    for (int32_t i = 0; i < g->ops[k].nin; i++)
      c->cstart[g->ops[k].in[i] + 1]++;
  for (size_t t = 0; t < nt; t++)
    c->cstart[t + 1] += c->cstart[t];
  int32_t *fill = c->stack; /* (scratch: next free slot per tensor) */
  memcpy(fill, c->cstart, nt * sizeof *fill);
  for (size_t k = 0; k < no; k++)
    for (int32_t i = 0; i < g->ops[k].nin; i++)
      c->cons[fill[g->ops[k].in[i]]++] = (int32_t)k;
  for (size_t k = 0; k < no; k++)
    c->unit[k] = -1;
  for (int32_t i = 0; i < g->nout; i++)
    c->is_out[g->outputs[i]] = true;
  MIRS_CHECK(ctx, supported_ops(ctx, g, c->sup));
  MIRS_CHECK(ctx, mirs__fp_graph_masked(g, c->masked));
  return MIRS_OK;
}

static void cutter_free(cutter *c) {
  mirs_context *ctx = c->p->ctx;
  mirs__core_free(ctx, c->cstart);
  mirs__core_free(ctx, c->cons);
  mirs__core_free(ctx, c->unit);
  mirs__core_free(ctx, c->in_s);
  mirs__core_free(ctx, c->dexp);
  mirs__core_free(ctx, c->is_out);
  mirs__core_free(ctx, c->masked);
  mirs__core_free(ctx, c->seen);
  mirs__core_free(ctx, c->tseen);
  mirs__core_free(ctx, c->stack);
  mirs__core_free(ctx, c->cand);
}

/* Whether tensor t (written by the piece being grown) is read outside it
 * or is a program output. */
static bool read_outside(const cutter *c, int32_t t) {
  if (c->is_out[t])
    return true;
  for (int32_t i = c->cstart[t]; i < c->cstart[t + 1]; i++)
    if (!c->in_s[c->cons[i]])
      return true;
  return false;
}

/* Inputs and outputs of the piece S[0..n) (marked in in_s). */
static void count_io(cutter *c, const int32_t *S, int32_t n, int32_t *nin, int32_t *nout) {
  const mirs_graph *g = c->g;
  *nin = *nout = 0;
  c->epoch++;
  for (int32_t i = 0; i < n; i++) {
    const mirs__kop *k = &g->ops[S[i]];
    for (int32_t a = 0; a < k->nin; a++) {
      int32_t t = k->in[a], pr = g->t[t].producer;
      if ((pr < 0 || !c->in_s[pr]) && c->tseen[t] != c->epoch) {
        c->tseen[t] = c->epoch;
        (*nin)++;
      }
    }
    for (int32_t o = 0; o < k->nout; o++)
      if (read_outside(c, k->out[o]))
        (*nout)++;
  }
}

/* Whether an exp in S (ascending) has an exp upstream within S. */
static bool exp_of_exp(cutter *c, const int32_t *S, int32_t n) {
  const mirs_graph *g = c->g;
  for (int32_t i = 0; i < n; i++) {
    const mirs__kop *k = &g->ops[S[i]];
    bool dep = false;
    for (int32_t a = 0; a < k->nin; a++) {
      int32_t pr = g->t[k->in[a]].producer;
      if (pr >= 0 && c->in_s[pr] && (g->ops[pr].op == MIRS_OP_EXP || c->dexp[pr]))
        dep = true;
    }
    c->dexp[S[i]] = dep;
    if (dep && k->op == MIRS_OP_EXP)
      return true;
  }
  return false;
}

/* Whether S reads a tensor that may hold causal_mask's -inf from outside
 * and writes one out.  Its search fingerprints it with finite inputs, so
 * its best may use -inf where the field cannot (an accumulator writing it
 * out of a kernel), and the stitched graph would have no sound
 * fingerprint; a piece that makes the -inf itself (its causal_mask
 * inside) is searched knowing it, and one that ends it (an exp, a max
 * over rows that keep an element) writes finite values out. */
static bool passes_mask(const cutter *c, const int32_t *S, int32_t n) {
  const mirs_graph *g = c->g;
  bool reads = false, writes = false;
  for (int32_t i = 0; i < n; i++) {
    const mirs__kop *k = &g->ops[S[i]];
    for (int32_t a = 0; a < k->nin; a++) {
      int32_t t = k->in[a], pr = g->t[t].producer;
      reads = reads || (c->masked[t] && (pr < 0 || !c->in_s[pr]));
    }
    for (int32_t o = 0; o < k->nout; o++)
      writes = writes || (c->masked[k->out[o]] && read_outside(c, k->out[o]));
  }
  return reads && writes;
}

/* Push the consumers of op v's outputs; false when one is in S (a path
 * came back). */
static bool push_consumers(cutter *c, int32_t v, int32_t *top) {
  const mirs__kop *k = &c->g->ops[v];
  for (int32_t o = 0; o < k->nout; o++) {
    int32_t t = k->out[o];
    for (int32_t i = c->cstart[t]; i < c->cstart[t + 1]; i++) {
      int32_t w = c->cons[i];
      if (c->in_s[w])
        return false;
      if (c->seen[w] != c->epoch)
        c->stack[(*top)++] = w;
    }
  }
  return true;
}

/* Whether no path from S leaves it and returns, finished pieces
 * contracted (entering one of their ops reaches all of its ops). */
static bool convex(cutter *c, const int32_t *S, int32_t n) {
  c->epoch++;
  int32_t top = 0;
  for (int32_t i = 0; i < n; i++) {
    const mirs__kop *k = &c->g->ops[S[i]];
    for (int32_t o = 0; o < k->nout; o++) {
      int32_t t = k->out[o];
      for (int32_t j = c->cstart[t]; j < c->cstart[t + 1]; j++)
        if (!c->in_s[c->cons[j]] && c->seen[c->cons[j]] != c->epoch)
          c->stack[top++] = c->cons[j];
    }
  }
  while (top > 0) {
    int32_t v = c->stack[--top];
    if (c->seen[v] == c->epoch)
      continue;
    c->seen[v] = c->epoch;
    if (c->unit[v] < 0) {
      if (!push_consumers(c, v, &top))
        return false;
      continue;
    }
    const mirs__piece *q = &c->p->piece[c->unit[v]];
    for (int32_t i = 0; i < q->nops; i++) {
      c->seen[q->ops[i]] = c->epoch;
      if (!push_consumers(c, q->ops[i], &top))
        return false;
    }
  }
  return true;
}

/* Whether S[0..n) (marked) is an acceptable piece. */
static bool fits(cutter *c, const int32_t *S, int32_t n) {
  const mirs_context *ctx = c->p->ctx;
  if (n > ctx->opt.partition_max_ops)
    return false;
  int32_t nin, nout;
  count_io(c, S, n, &nin, &nout);
  if (nin > ctx->opt.partition_max_inputs || nout > ctx->opt.partition_max_outputs)
    return false;
  return !exp_of_exp(c, S, n) && convex(c, S, n);
}

/* Ops next to S (reading its tensors or writing ones it reads), not
 * taken and supported, ascending without repeats, into c->cand. */
static int32_t neighbours(cutter *c, const int32_t *S, int32_t n) {
  const mirs_graph *g = c->g;
  int32_t m = 0;
  c->epoch++;
  for (int32_t i = 0; i < n; i++) {
    const mirs__kop *k = &g->ops[S[i]];
    for (int32_t a = 0; a < k->nin; a++) {
      int32_t pr = g->t[k->in[a]].producer;
      if (pr >= 0 && c->seen[pr] != c->epoch) {
        c->seen[pr] = c->epoch;
        c->cand[m++] = pr;
      }
    }
    for (int32_t o = 0; o < k->nout; o++)
      for (int32_t j = c->cstart[k->out[o]]; j < c->cstart[k->out[o] + 1]; j++)
        if (c->seen[c->cons[j]] != c->epoch) {
          c->seen[c->cons[j]] = c->epoch;
          c->cand[m++] = c->cons[j];
        }
  }
  int32_t w = 0;
  for (int32_t i = 0; i < m; i++) {
    int32_t v = c->cand[i];
    if (c->unit[v] < 0 && !c->in_s[v] && c->sup[g->ops[v].op])
      c->cand[w++] = v;
  }
  for (int32_t i = 1; i < w; i++) /* (insertion sort: a handful) */
    for (int32_t j = i; j > 0 && c->cand[j - 1] > c->cand[j]; j--) {
      int32_t x = c->cand[j];
      c->cand[j] = c->cand[j - 1];
      c->cand[j - 1] = x;
    }
  return w;
}

/* Insert op j into the ascending S[0..n) (marked); its index. */
static int32_t insert_op(cutter *c, int32_t *S, int32_t n, int32_t j) {
  int32_t at = n;
  while (at > 0 && S[at - 1] > j) {
    S[at] = S[at - 1];
    at--;
  }
  S[at] = j;
  c->in_s[j] = true;
  return at;
}

/* Remove S[at] (n + 1 ops) again. */
static void remove_op(cutter *c, int32_t *S, int32_t n, int32_t at) {
  c->in_s[S[at]] = false;
  memmove(S + at, S + at + 1, sizeof *S * (size_t)(n - at));
}

/* Grow the piece that starts at op k (supported, not taken) into *pc:
 * each step adds the neighbour that fits and leaves the piece the fewest
 * input and output tensors (the traffic a fused piece still has; the
 * lowest op index among equals); then cut back while it passes
 * causal_mask's -inf on (passes_mask). */
static mirs_status grow(cutter *c, int32_t k, mirs__piece *pc) {
  mirs_context *ctx = c->p->ctx;
  int32_t cap = (int32_t)c->p->ctx->opt.partition_max_ops + 1;
  int32_t *S = mirs__core_alloc(ctx, sizeof *S * (size_t)cap);
  if (!S)
    return MIRS_NOMEM;
  int32_t *added_as = mirs__core_alloc(ctx, sizeof *added_as * (size_t)cap);
  if (!added_as) {
    mirs__core_free(ctx, S);
    return MIRS_NOMEM;
  }
  int32_t n = 0;
  S[n++] = k;
  added_as[0] = k;
  c->in_s[k] = true;
  for (bool added = true; added && n < cap - 1;) {
    int32_t m = neighbours(c, S, n), best = -1, best_io = INT32_MAX;
    const int32_t *cand = c->cand; /* (fits leaves c->cand as it is) */
    for (int32_t i = 0; i < m; i++) {
      int32_t at = insert_op(c, S, n, cand[i]);
      if (fits(c, S, n + 1)) {
        int32_t nin, nout;
        count_io(c, S, n + 1, &nin, &nout);
        if (nin + nout < best_io) {
          best_io = nin + nout;
          best = cand[i];
        }
      }
      remove_op(c, S, n, at);
    }
    added = best >= 0;
    if (added) {
      added_as[n] = best;
      insert_op(c, S, n++, best);
    }
  }
  /* A piece may pass causal_mask's -inf on while it grows (softmax: max,
   * sub, then the exp that ends it), not when done: back to the last
   * size that did not (each one fitted when it was reached). */
  while (n > 1 && passes_mask(c, S, n)) {
    int32_t at = 0;
    while (S[at] != added_as[n - 1])
      at++;
    n--;
    remove_op(c, S, n, at);
  }
  mirs__core_free(ctx, added_as);
  for (int32_t i = 0; i < n; i++)
    c->in_s[S[i]] = false;
  pc->ops = S;
  pc->nops = n;
  return MIRS_OK;
}

/* Whether every input of piece i is a program input or an output of a
 * placed piece. */
static bool ready(const cutter *c, int32_t i, const bool *placed) {
  const mirs__piece *pc = &c->p->piece[i];
  for (int32_t a = 0; a < pc->nops; a++) {
    const mirs__kop *k = &c->g->ops[pc->ops[a]];
    for (int32_t b = 0; b < k->nin; b++) {
      int32_t pr = c->g->t[k->in[b]].producer;
      if (pr >= 0 && c->unit[pr] != i && !placed[c->unit[pr]])
        return false;
    }
  }
  return true;
}

/* Put the pieces in a topological order, the lowest first op first among
 * the ready ones (the pieces are made in that order). */
static mirs_status order_pieces(cutter *c) {
  mirs_partition *p = c->p;
  mirs_context *ctx = p->ctx;
  int32_t n = p->npieces;
  bool *placed = mirs__core_calloc(ctx, (size_t)n + 1, sizeof *placed);
  int32_t *order = mirs__core_calloc(ctx, (size_t)n + 1, sizeof *order);
  mirs__piece *sorted = mirs__core_calloc(ctx, (size_t)n + 1, sizeof *sorted);
  if (!placed || !order || !sorted) {
    mirs__core_free(ctx, placed);
    mirs__core_free(ctx, order);
    mirs__core_free(ctx, sorted);
    return MIRS_NOMEM;
  }
  for (int32_t done = 0; done < n; done++) {
    int32_t pick = -1;
    for (int32_t i = 0; i < n && pick < 0; i++)
      if (!placed[i] && ready(c, i, placed))
        pick = i;
    if (NEVER(pick < 0)) /* (convex pieces of a DAG: one is always ready) */
      pick = 0;
    placed[pick] = true;
    order[done] = pick;
  }
  for (int32_t i = 0; i < n; i++)
    sorted[i] = p->piece[order[i]];
  for (int32_t i = 0; i < n; i++)
    for (int32_t a = 0; a < sorted[i].nops; a++)
      c->unit[sorted[i].ops[a]] = i;
  mirs__core_free(ctx, p->piece);
  p->piece = sorted;
  mirs__core_free(ctx, placed);
  mirs__core_free(ctx, order);
  return MIRS_OK;
}

/* The tensors piece pc reads (not writing them) in the order its ops
 * first read them, and those it writes that others read or that are
 * program outputs, in the order its ops write them. */
static mirs_status piece_io(cutter *c, mirs__piece *pc) {
  mirs_context *ctx = c->p->ctx;
  const mirs_graph *g = c->g;
  for (int32_t a = 0; a < pc->nops; a++)
    c->in_s[pc->ops[a]] = true;
  int32_t nin, nout;
  count_io(c, pc->ops, pc->nops, &nin, &nout);
  pc->in = mirs__core_calloc(ctx, (size_t)nin + 1, sizeof *pc->in);
  pc->out = mirs__core_calloc(ctx, (size_t)nout + 1, sizeof *pc->out);
  mirs_status st = pc->in && pc->out ? MIRS_OK : MIRS_NOMEM;
  c->epoch++;
  for (int32_t a = 0; a < pc->nops && st == MIRS_OK; a++) {
    const mirs__kop *k = &g->ops[pc->ops[a]];
    for (int32_t b = 0; b < k->nin; b++) {
      int32_t t = k->in[b], pr = g->t[t].producer;
      if ((pr < 0 || !c->in_s[pr]) && c->tseen[t] != c->epoch) {
        c->tseen[t] = c->epoch;
        pc->in[pc->nin++] = t;
      }
    }
    for (int32_t o = 0; o < k->nout; o++)
      if (read_outside(c, k->out[o]))
        pc->out[pc->nout++] = k->out[o];
  }
  for (int32_t a = 0; a < pc->nops; a++)
    c->in_s[pc->ops[a]] = false;
  return st;
}

/* Piece pc as a program of its own (inputs x_i, outputs y_j); tmap is
 * scratch of g->nt entries. */
static mirs_status piece_program(cutter *c, mirs__piece *pc, int32_t *tmap) {
  mirs_context *ctx = c->p->ctx;
  const mirs_graph *g = c->g;
  mirs_graph *q;
  MIRS_CHECK(ctx, mirs__graph_new(ctx, "piece", &q));
  mirs_status st = MIRS_OK;
  char name[32];
  for (int32_t i = 0; i < pc->nin && st == MIRS_OK; i++) {
    const mirs__ktensor *t = &g->t[pc->in[i]];
    snprintf(name, sizeof name, "x%d", (int)i);
    st = mirs__graph_add_input(q, name, t->dtype, &t->shape, &tmap[pc->in[i]]);
  }
  for (int32_t a = 0; a < pc->nops && st == MIRS_OK; a++) {
    const mirs__kop *k = &g->ops[pc->ops[a]];
    int32_t in[8];
    const char *nm = NULL;
    if (ALWAYS(k->nin <= 8 && k->nout == 1)) {
      for (int32_t b = 0; b < k->nin; b++)
        in[b] = tmap[k->in[b]];
      for (int32_t j = 0; j < pc->nout; j++)
        if (pc->out[j] == k->out[0]) {
          snprintf(name, sizeof name, "y%d", (int)j);
          nm = name;
        }
      st = mirs__graph_copy_op(q, nm, k, in, &tmap[k->out[0]]);
    } else {
      st = MIRS_FAIL(ctx, MIRS_INTERNAL, "partition: op %d has %d inputs and %d outputs",
                     (int)pc->ops[a], (int)k->nin, (int)k->nout);
    }
  }
  for (int32_t j = 0; j < pc->nout && st == MIRS_OK; j++)
    st = mirs__graph_mark_output(q, tmap[pc->out[j]]);
  if (st != MIRS_OK) {
    mirs__graph_free(q);
    MIRS_CHECK(ctx, st);
  }
  pc->prog = q;
  return MIRS_OK;
}

/* Cut p->program into p->piece[0..npieces), ordered, each with its
 * program.  The program holds predefined ops only (checked by the
 * caller). */
mirs_status mirs__partition_cut(mirs_partition *p) {
  mirs_context *ctx = p->ctx;
  const mirs_graph *g = p->program;
  cutter c;
  mirs_status st = cutter_init(&c, p);
  p->piece = st == MIRS_OK ? mirs__core_calloc(ctx, (size_t)g->nops + 1, sizeof *p->piece) : NULL;
  if (st == MIRS_OK && !p->piece)
    st = MIRS_NOMEM;
  for (int32_t k = 0; k < g->nops && st == MIRS_OK; k++) {
    if (c.unit[k] >= 0)
      continue;
    mirs__piece *pc = &p->piece[p->npieces];
    mirs_piece_info init = MIRS_PIECE_INFO_INIT;
    pc->info = init;
    if (!c.sup[g->ops[k].op]) {
      pc->ops = mirs__core_alloc(ctx, sizeof *pc->ops);
      if (!pc->ops) {
        st = MIRS_NOMEM;
        break;
      }
      pc->ops[0] = k;
      pc->nops = 1;
      pc->info.kind = MIRS_PIECE_LIBRARY;
    } else {
      st = grow(&c, k, pc);
    }
    if (st == MIRS_OK) {
      for (int32_t a = 0; a < pc->nops; a++)
        c.unit[pc->ops[a]] = p->npieces;
      p->npieces++;
    }
  }
  if (st == MIRS_OK)
    st = order_pieces(&c);
  int32_t *tmap = st == MIRS_OK ? mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *tmap) : NULL;
  if (st == MIRS_OK && !tmap)
    st = MIRS_NOMEM;
  for (int32_t i = 0; i < p->npieces && st == MIRS_OK; i++) {
    mirs__piece *pc = &p->piece[i];
    st = piece_io(&c, pc);
    if (st == MIRS_OK)
      st = piece_program(&c, pc, tmap);
    if (st == MIRS_OK) {
      pc->info.num_ops = pc->nops;
      pc->info.num_inputs = pc->nin;
      pc->info.num_outputs = pc->nout;
      pc->info.program_hash = mirs__graph_hash(pc->prog);
    }
  }
  mirs__core_free(ctx, tmap);
  cutter_free(&c);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}
