/* SPDX-License-Identifier: MIT */
/* src/graph/schedule.c - the block-graph schedule: which block op runs
 * when (once per block, per forloop iteration, after the loop) and where
 * each loaded or stored tile sits in its kernel tensor.  Every executor of
 * a custom kernel takes its order and its tile placement from here: the
 * float64 interpreter (interp.c) runs it through mirs__sched_run, the CUDA
 * generator (src/codegen/cuda.c) emits the same steps as code.
 *
 * Semantics (docs/FORMATS.md, the µGraph format): for each grid block b, each
 * accumulator starts at zero; for f in [0, F) every INPUT op loads the
 * tile whose dim d starts at b_g * tile_d where imap[g] == d and at
 * f * tile_d where fmap == d (else 0); a dim both partitioned and walked
 * starts at b_g * tile_d * F + f * tile_d (the grid picks a chunk of F
 * tiles, the forloop walks it: split-K), then per-iteration compute ops and
 * ACCUM ops run in op order; after the loop ACCUM_RMS results are finished
 * (sqrt(total / (tile_last_dim * F))), post ops run, and each OUTPUT op
 * stores its tile at b_g * tile_d along dim omap[g].
 *
 * Invariant: the graph is well formed (mirs__bg_well_formed); callers
 * check before building a schedule. */
#include <string.h>

#include "graph/graph.h"

/* The step block op i of bg takes in phase (0 init, 1 loop, 2 post), or -1. */
int mirs__sched_classify(const mirs__bgraph *bg, int32_t i, int phase) {
  const mirs__bop *op = &bg->ops[i];
  mirs__op_kind kind = mirs__graph_ops[op->op].kind;
  switch (phase) {
  case 0:
    return kind == MIRS__KIND_ACCUM ? MIRS__STEP_ZERO : -1;
  case 1:
    if (kind == MIRS__KIND_INPUT)
      return MIRS__STEP_LOAD;
    if (kind == MIRS__KIND_ACCUM)
      return MIRS__STEP_ACCUM;
    return kind != MIRS__KIND_OUTPUT && !bg->t[op->out].post ? MIRS__STEP_COMPUTE : -1;
  default:
    if (op->op == MIRS_OP_ACCUM_RMS)
      return MIRS__STEP_FINISH;
    if (kind == MIRS__KIND_OUTPUT)
      return MIRS__STEP_STORE;
    return kind != MIRS__KIND_INPUT && kind != MIRS__KIND_ACCUM && bg->t[op->out].post
               ? MIRS__STEP_COMPUTE
               : -1;
  }
}

/* Build bg's schedule: ZERO steps, loop steps, post steps, in op order. */
mirs_status mirs__sched_build(mirs_context *ctx, const mirs__bgraph *bg, mirs__sched *out) {
  memset(out, 0, sizeof *out);
  out->step = mirs__core_calloc(ctx, (size_t)bg->nops * 3 + 1, sizeof *out->step);
  if (!out->step)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  int32_t k = 0, count[3] = {0, 0, 0};
  for (int phase = 0; phase < 3; phase++)
    for (int32_t i = 0; i < bg->nops; i++) {
      int kind = mirs__sched_classify(bg, i, phase);
      if (kind >= 0) {
        out->step[k++] = (mirs__step){(mirs__step_kind)kind, i};
        count[phase]++;
      }
    }
  out->ninit = count[0];
  out->nloop = count[1];
  out->npost = count[2];
  return MIRS_OK;
}

/* Release the steps of s. */
void mirs__sched_free(mirs_context *ctx, mirs__sched *s) {
  if (!s)
    return;
  mirs__core_free(ctx, s->step);
  memset(s, 0, sizeof *s);
}

/* Placement of an INPUT op's tile (imap, fmap) or an OUTPUT op's (omap). */
void mirs__sched_place(const mirs__bgraph *bg, const mirs__bop *op, mirs__tile_place *p) {
  bool input = op->op == MIRS_OP_INPUT;
  int r = bg->t[input ? op->out : op->in[0]].shape.ndim;
  const mirs__shape *ts = &bg->t[input ? op->out : op->in[0]].shape;
  for (int d = 0; d < MIRS_MAX_DIMS; d++) {
    p->grid[d] = -1;
    p->forloop[d] = false;
    p->gunit[d] = d < r ? ts->d[d] : 1;
  }
  for (int gd = 0; gd < MIRS__GRID; gd++) {
    int32_t d = input ? op->imap[gd] : op->omap[gd];
    if (d >= 0 && d < r)
      p->grid[d] = gd;
  }
  if (input && op->fmap >= 0 && op->fmap < r) {
    p->forloop[op->fmap] = true;
    p->gunit[op->fmap] *= bg->forloop;
  }
}

/* Element offsets of op's tile in its kernel tensor for block b, iteration f. */
void mirs__sched_offsets(const mirs__bgraph *bg, const mirs__bop *op, const int32_t b[MIRS__GRID],
                         int32_t f, int64_t off[MIRS_MAX_DIMS]) {
  mirs__tile_place p;
  mirs__sched_place(bg, op, &p);
  const mirs__shape *ts = &bg->t[op->op == MIRS_OP_INPUT ? op->out : op->in[0]].shape;
  for (int d = 0; d < MIRS_MAX_DIMS; d++) {
    off[d] = 0;
    if (d >= ts->ndim)
      continue;
    if (p.grid[d] >= 0)
      off[d] += (int64_t)b[p.grid[d]] * p.gunit[d];
    if (p.forloop[d])
      off[d] += (int64_t)f * ts->d[d];
  }
}

/* Elements of a row summed by ACCUM_RMS over the whole loop. */
double mirs__sched_rms_count(const mirs__bgraph *bg, const mirs__bop *op) {
  const mirs__shape *xs = &bg->t[op->in[0]].shape;
  return (double)(xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1) * bg->forloop;
}

/* Origin of dim d of block tensor t (see graph.h): traced back through
 * the producers, which precede their results, so the recursion ends. */
bool mirs__sched_dim_origin(const mirs_graph *g, const mirs__bgraph *bg, int32_t t, int d,
                            mirs__dim_origin *o) {
  if (t < 0 || t >= bg->nt || d < 0 || d >= bg->t[t].shape.ndim)
    return false;
  const mirs__shape *ts = &bg->t[t].shape;
  const mirs__bop *op = &bg->ops[bg->t[t].producer];
  static const mirs__dim_origin none = {-1, false, 1, 1, 1};
  int r = ts->ndim;
  switch (mirs__graph_ops[op->op].kind) {
  case MIRS__KIND_INPUT: {
    mirs__tile_place p;
    mirs__sched_place(bg, op, &p);
    *o = (mirs__dim_origin){p.grid[d], p.forloop[d], ts->d[d], g->t[op->src].shape.d[d],
                            p.gunit[d]};
    return true;
  }
  case MIRS__KIND_MATMUL:
    if (d == r - 1)
      return mirs__sched_dim_origin(g, bg, op->in[1], d, o);
    if (d == r - 2 || bg->t[op->in[0]].shape.d[d] == ts->d[d])
      return mirs__sched_dim_origin(g, bg, op->in[0], d, o);
    return mirs__sched_dim_origin(g, bg, op->in[1], d, o);
  case MIRS__KIND_BINARY: {
    mirs__dim_origin ob;
    if (bg->t[op->in[1]].shape.d[d] == 1)
      return mirs__sched_dim_origin(g, bg, op->in[0], d, o);
    if (bg->t[op->in[0]].shape.d[d] == 1)
      return mirs__sched_dim_origin(g, bg, op->in[1], d, o);
    return mirs__sched_dim_origin(g, bg, op->in[0], d, o) &&
           mirs__sched_dim_origin(g, bg, op->in[1], d, &ob) && o->grid == ob.grid &&
           o->forloop == ob.forloop && o->unit == ob.unit && o->extent == ob.extent &&
           o->gunit == ob.gunit;
  }
  case MIRS__KIND_REDUCE:
    if (d == op->dim) {
      *o = none;
      return true;
    }
    return mirs__sched_dim_origin(g, bg, op->in[0], d, o);
  case MIRS__KIND_ACCUM:
    if (((op->op == MIRS_OP_ACCUM_SUM || op->op == MIRS_OP_ACCUM_MAX ||
          op->op == MIRS_OP_ACCUM_MIN) && d == op->dim) ||
        (op->op == MIRS_OP_ACCUM_RMS && d == r - 1)) {
      *o = none;
      return true;
    }
    /* Summed over the iterations: one place only if the loop never moved it. */
    return mirs__sched_dim_origin(g, bg, op->in[0], d, o) && !o->forloop;
  case MIRS__KIND_UNARY:
  case MIRS__KIND_RMSNORM:
    return mirs__sched_dim_origin(g, bg, op->in[0], d, o);
  case MIRS__KIND_TRANSPOSE: /* dim d is the operand's with the last two swapped */
    return mirs__sched_dim_origin(g, bg, op->in[0], d < r - 2 ? d : 2 * r - 3 - d, o);
  default:
    return false;
  }
}

/* Whether causal_mask op's rows and columns have origins. */
bool mirs__sched_mask_placed(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op) {
  int64_t org[4];
  int32_t b[MIRS__GRID] = {0, 0, 0};
  return mirs__sched_mask_frame(g, bg, op, b, 0, org);
}

/* The causal-mask frame of op's tile in block b, iteration f. */
bool mirs__sched_mask_frame(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op,
                            const int32_t b[MIRS__GRID], int32_t f, int64_t org[4]) {
  int32_t x = op->in[0];
  int r = bg->t[x].shape.ndim;
  for (int k = 0; k < 2; k++) {
    mirs__dim_origin o;
    if (r < 2 || !mirs__sched_dim_origin(g, bg, x, r - 2 + k, &o))
      return false;
    org[k] = (o.grid >= 0 ? (int64_t)b[o.grid] * o.gunit : 0) +
             (o.forloop ? (int64_t)f * o.unit : 0);
    org[2 + k] = o.extent;
  }
  return true;
}

/* Run step kind `kind` of block op i (block b, iteration f) with the
 * callbacks of x. */
static mirs_status run_step(const mirs__bgraph *bg, int kind, int32_t i,
                            const mirs__sched_exec *x, void *user, const int32_t b[MIRS__GRID],
                            int32_t f) {
  const mirs__bop *op = &bg->ops[i];
  int64_t off[MIRS_MAX_DIMS];
  switch ((mirs__step_kind)kind) {
  case MIRS__STEP_ZERO:
    return x->zero(user, op);
  case MIRS__STEP_LOAD:
    mirs__sched_offsets(bg, op, b, f, off);
    return x->load(user, op, off);
  case MIRS__STEP_COMPUTE:
    return x->compute(user, op);
  case MIRS__STEP_ACCUM:
    return x->accum(user, op);
  case MIRS__STEP_FINISH:
    return x->finish(user, op);
  case MIRS__STEP_STORE:
    mirs__sched_offsets(bg, op, b, 0, off);
    return x->store(user, op, off);
  }
  return MIRS_OK;
}

/* Run the steps of phase (0 init, 1 loop, 2 post) with the callbacks of
 * x: the n steps listed in steps, or, when steps is NULL, each op that
 * has one in this phase. */
static mirs_status run_phase(const mirs__bgraph *bg, int phase, const mirs__step *steps,
                             int32_t n, const mirs__sched_exec *x, void *user,
                             const int32_t b[MIRS__GRID], int32_t f) {
  if (x->at)
    x->at(user, b, f);
  mirs_status s = MIRS_OK;
  if (steps) {
    for (int32_t k = 0; k < n && s == MIRS_OK; k++)
      s = run_step(bg, steps[k].kind, steps[k].op, x, user, b, f);
    return s;
  }
  for (int32_t i = 0; i < bg->nops && s == MIRS_OK; i++) {
    int kind = mirs__sched_classify(bg, i, phase);
    if (kind >= 0)
      s = run_step(bg, kind, i, x, user, b, f);
  }
  return s;
}

/* Block graphs of at most this many ops have their steps listed once per
 * mirs__sched_run, on the stack (the fingerprints run a custom kernel's
 * phases once per block and iteration, for every candidate kernel);
 * larger ones are classified as they run. */
#define SCHED_LISTED 64

/* Run the schedule over the grid blocks below grid_end (NULL: the whole
 * grid; x fastest) and every forloop iteration.  Allocates nothing. */
mirs_status mirs__sched_run(const mirs__bgraph *bg, const int32_t *grid_end,
                            const mirs__sched_exec *x, void *user) {
  const int32_t *end = grid_end ? grid_end : bg->grid;
  mirs__step steps[3][SCHED_LISTED];
  int32_t n[3] = {0, 0, 0};
  bool listed = bg->nops <= SCHED_LISTED;
  for (int phase = 0; listed && phase < 3; phase++)
    for (int32_t i = 0; i < bg->nops; i++) {
      int kind = mirs__sched_classify(bg, i, phase);
      if (kind >= 0)
        steps[phase][n[phase]++] = (mirs__step){(mirs__step_kind)kind, i};
    }
  int32_t b[MIRS__GRID];
  for (b[2] = 0; b[2] < end[2]; b[2]++)
    for (b[1] = 0; b[1] < end[1]; b[1]++)
      for (b[0] = 0; b[0] < end[0]; b[0]++) {
        mirs_status st = run_phase(bg, 0, listed ? steps[0] : NULL, n[0], x, user, b, 0);
        for (int32_t f = 0; st == MIRS_OK && f < bg->forloop; f++)
          st = run_phase(bg, 1, listed ? steps[1] : NULL, n[1], x, user, b, f);
        if (st == MIRS_OK)
          st = run_phase(bg, 2, listed ? steps[2] : NULL, n[2], x, user, b, 0);
        if (st != MIRS_OK)
          return st;
      }
  return MIRS_OK;
}
