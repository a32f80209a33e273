/* SPDX-License-Identifier: MIT */
/* src/gpu/gpufp.c - the GPU fingerprint backend: the fingerprint-backend
 * interface of src/verify/fingerprint.h implemented on the device through
 * the module libmirsearch-gpufp.so (src/gpu/gpufp.cu, ABI in gpufp_abi.h),
 * and the choice of backend the option `verify` (auto|cpu|gpu) makes.
 *
 * The module is dlopen'ed where a GPU backend is asked for, never linked:
 * an embedder without CUDA loads nothing.  It is looked up at
 * $MIRS_GPUFP_LIB, then in pkglibdir (installed), then in the build tree.
 * Every module return code is converted into a mirs_status here, once,
 * with the module's message (which names the CUDA call and error).
 *
 * A store's values live in its handle's device arena, trial-major as on
 * the CPU (mirs__fp_meta.off); each store has its own stream, so the work
 * of several stores (the candidates of a batch) overlaps.  A custom
 * kernel runs the shared block-graph schedule (src/graph/schedule.c) with
 * every step batched over all trials and a chunk of grid blocks at once:
 * blocks are independent, so step-major order over blocks computes what
 * the block-major CPU order does; where several blocks store to one place
 * the module keeps the schedule's last writer (mirs_gpufp_tile.need).
 *
 * Invariant: the tile scratch holds, per (trial, block) of the current
 * chunk, s->tile_used pairs at s->bt[i].off, as the CPU backend's one
 * trial's tiles. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpufp_abi.h"
#include "verify/fingerprint.h"

/* Tile scratch budget in pairs (256 MiB): past it a custom kernel runs
 * its grid blocks in chunks. */
#define TILE_BUDGET (UINT64_C(1) << 25)

_Static_assert(sizeof(mirs_gpufp_pair) == sizeof(mirs__fp_pair), "pair layouts differ");
_Static_assert(MIRS_GPUFP_DIMS == MIRS_MAX_DIMS, "rank limits differ");

typedef struct gpu_state {
  const mirs_gpufp_abi *abi;
  mirs_gpufp_dev *dev;
} gpu_state;

/* Convert a module return code into a status with its message. */
static mirs_status gpu_fail(mirs_context *ctx, const gpu_state *g, int code, const char *what) {
  const char *msg = g && g->dev ? g->abi->last_error(g->dev) : "";
  mirs_status s = code == MIRS_GPUFP_NO_DEVICE     ? MIRS_NO_DEVICE
                  : code == MIRS_GPUFP_NOMEM       ? MIRS_NOMEM
                  : code == MIRS_GPUFP_CUDA        ? MIRS_CUDA
                  : code == MIRS_GPUFP_UNSUPPORTED ? MIRS_UNSUPPORTED
                                                   : MIRS_INTERNAL;
  return MIRS_FAIL(ctx, s, "GPU fingerprints: %s: %s", what, msg);
}

#define GPU_TRY(ctx, g, call, what)                                                                \
  do {                                                                                             \
    int r_ = (call);                                                                               \
    if (r_ != MIRS_GPUFP_OK)                                                                       \
      return gpu_fail((ctx), (g), r_, (what));                                                     \
  } while (0)

/* Open the module at path; NULL (dlerror in why) when it cannot be. */
static void *open_module(const char *path, char *why, size_t size) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, size, "%s", e ? e : "cannot be loaded");
  }
  return lib;
}

/* Load the module and check its ABI. */
static mirs_status load_abi(mirs_context *ctx, const mirs_gpufp_abi **out) {
  const char *env = getenv("MIRS_GPUFP_LIB");
  const char *paths[3] = {env && *env ? env : NULL, MIRS_PKGLIBDIR "/libmirsearch-gpufp.so",
                          MIRS_BUILD_GPUFP};
  char why[512] = "", tried[1024] = "";
  void *lib = NULL;
  const char *path = NULL;
  for (int i = 0; i < 3 && !lib; i++) {
    if (!paths[i])
      continue;
    lib = open_module(paths[i], why, sizeof why);
    path = paths[i];
    if (!lib) {
      size_t len = strlen(tried);
      snprintf(tried + len, sizeof tried - len, "%s%s", len ? "; " : "", why);
    }
  }
  if (!lib)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE,
                     "the GPU fingerprint module libmirsearch-gpufp.so cannot be loaded (%s); "
                     "set MIRS_GPUFP_LIB to its path",
                     tried);
  void *sym = dlsym(lib, MIRS_GPUFP_ABI_SYMBOL);
  mirs_gpufp_abi_get_fn get = NULL;
  memcpy(&get, &sym, sizeof get); /* (POSIX: a function pointer from dlsym) */
  const mirs_gpufp_abi *abi = get ? get() : NULL;
  if (!abi)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "%s has no %s", path, MIRS_GPUFP_ABI_SYMBOL);
  if (abi->version != MIRS_GPUFP_ABI_VERSION || abi->size < sizeof *abi)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE,
                     "%s speaks GPU fingerprint ABI version %u (size %u), this library %d "
                     "(size %zu): rebuild it with this mirsearch",
                     path, abi->version, abi->size, MIRS_GPUFP_ABI_VERSION, sizeof *abi);
  *out = abi;
  return MIRS_OK;
}

/* ---------------------------------------------------------------- backend */

static mirs_status gpu_open(mirs__fp_store *s, void **state) {
  mirs_context *ctx = s->ctx;
  const mirs_gpufp_abi *abi;
  MIRS_CHECK(ctx, load_abi(ctx, &abi));
  gpu_state *g = mirs__core_calloc(ctx, 1, sizeof *g);
  if (!g)
    return mirs__core_trace(ctx, MIRS_NOMEM, __func__, __FILE__, __LINE__);
  g->abi = abi;
  char msg[512] = "";
  int r = abi->open(0, &g->dev, msg, sizeof msg);
  if (r != MIRS_GPUFP_OK) {
    mirs__core_free(ctx, g);
    mirs_status st = r == MIRS_GPUFP_NO_DEVICE ? MIRS_NO_DEVICE
                     : r == MIRS_GPUFP_NOMEM   ? MIRS_NOMEM
                                               : MIRS_CUDA;
    return MIRS_FAIL(ctx, st, "no usable CUDA device for GPU fingerprints: %s", msg);
  }
  *state = g;
  return MIRS_OK;
}

/* Close a store's handle (waits for its work). */
static void gpu_release(void *state, mirs__fp_store *s) {
  gpu_state *g = state;
  if (!g)
    return;
  g->abi->close(g->dev);
  mirs__core_free(s->ctx, g);
}

/* Make the arena hold the store's s->used pairs. */
static mirs_status gpu_reserve(gpu_state *g, mirs__fp_store *s) {
  GPU_TRY(s->ctx, g, g->abi->reserve(g->dev, MIRS_GPUFP_ARENA, s->used + 1), "growing the arena");
  return MIRS_OK;
}

/* Generate graph input t for every trial, on the device. */
static mirs_status gpu_input(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t t) {
  gpu_state *gs = state;
  MIRS_CHECK(s->ctx, gpu_reserve(gs, s));
  GPU_TRY(s->ctx, gs,
          gs->abi->input(gs->dev, s->t[t].off, s->t[t].numel, 0, s->trials, s->seed,
                         mirs__hash_str(0, g->t[t].name)),
          "generating an input");
  return MIRS_OK;
}

/* Copy a graph shape into the ABI's. */
static void abi_shape(const mirs__shape *sh, mirs_gpufp_shape *out) {
  memset(out, 0, sizeof *out);
  out->ndim = sh->ndim;
  for (int d = 0; d < sh->ndim; d++)
    out->d[d] = sh->d[d];
}

/* Kind and code of compute op `op` with constants cst and eps (UNARY,
 * BINARY, MATMUL, REDUCE, RMSNORM, TRANSPOSE); a causal_mask's frame and
 * a layout op's view are the caller's. */
static bool op_code(mirs_op op, const mirs__scalar *cst, double eps, mirs_gpufp_op *o) {
  o->sqrt_op = MIRS_OP_SQRT;
  o->max_op = MIRS_OP_MAX;
  mirs__fp_pair fe = mirs__fp_real(eps);
  o->eps.a = fe.a;
  o->eps.b = fe.b;
  if (op == MIRS_OP_CAUSAL_MASK) {
    o->kind = MIRS_GPUFP_K_MASK;
    return true;
  }
  mirs__fp_elem e;
  if (mirs__fp_elem_of(op, cst, &e)) {
    o->kind = MIRS_GPUFP_K_ELEM;
    o->op = (int64_t)op;
    o->ecode = e.code;
    o->ca = e.c.a;
    o->cb = e.c.b;
    o->en = e.n;
    o->ktweak = e.ktweak;
    return true;
  }
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_TRANSPOSE:
    o->kind = MIRS_GPUFP_K_TRANSPOSE;
    return true;
  case MIRS__KIND_LAYOUT:
    o->kind = MIRS_GPUFP_K_GATHER;
    return true;
  case MIRS__KIND_UNARY:
    o->kind = MIRS_GPUFP_K_UNARY;
    o->op = op == MIRS_OP_EXP      ? (int64_t)MIRS_GPUFP_EXP
            : op == MIRS_OP_SQUARE ? (int64_t)MIRS_GPUFP_SQUARE
                                   : (int64_t)op;
    return true;
  case MIRS__KIND_BINARY:
    o->kind = MIRS_GPUFP_K_BINARY;
    o->op = op == MIRS_OP_ADD   ? MIRS_GPUFP_ADD
            : op == MIRS_OP_SUB ? MIRS_GPUFP_SUB
            : op == MIRS_OP_MUL ? MIRS_GPUFP_MUL
                                : MIRS_GPUFP_DIV;
    return op == MIRS_OP_ADD || op == MIRS_OP_SUB || op == MIRS_OP_MUL || op == MIRS_OP_DIV;
  case MIRS__KIND_MATMUL:
    o->kind = MIRS_GPUFP_K_MATMUL;
    return true;
  case MIRS__KIND_REDUCE:
    o->kind = op == MIRS_OP_MAX   ? MIRS_GPUFP_K_MAX
              : op == MIRS_OP_MIN ? MIRS_GPUFP_K_MIN
                                  : MIRS_GPUFP_K_SUM;
    o->mean = op == MIRS_OP_MEAN;
    return op == MIRS_OP_SUM || op == MIRS_OP_MEAN || op == MIRS_OP_MAX || op == MIRS_OP_MIN;
  case MIRS__KIND_RMSNORM:
    o->kind = MIRS_GPUFP_K_RMSNORM;
    o->centre = op == MIRS_OP_LAYER_NORM;
    return op == MIRS_OP_RMS_NORM || op == MIRS_OP_LAYER_NORM;
  default:
    return false;
  }
}

/* The view of layout op k (resolved attribute k->lay) on x's shape xs as
 * out (shape os) sees it: the strided form of MIRS__LAYOUT_COPY's index
 * map (a reshape keeps the row-major order, a permute takes x's strides
 * in the order of lay, a slice keeps them from the offset of its start). */
static void layout_view(const mirs__kop *k, const mirs__shape *xs, const mirs__shape *os,
                        mirs_gpufp_op *c) {
  int64_t st[MIRS_MAX_DIMS];
  for (int64_t d = xs->ndim - 1, s = 1; d >= 0; s *= xs->d[d], d--)
    st[d] = s;
  c->gbase = k->op == MIRS_OP_SLICE ? k->lay.d[1] * st[k->lay.d[0]] : 0;
  for (int64_t d = os->ndim - 1, s = 1; d >= 0; s *= os->d[d], d--)
    c->gst[d] = k->op == MIRS_OP_RESHAPE  ? s
                : k->op == MIRS_OP_PERMUTE ? st[k->lay.d[d]]
                                           : st[d];
}

/* An arena operand: tensor t of g, trials from j0. */
static void arena_opnd(const mirs__fp_store *s, const mirs_graph *g, int32_t t, int j0,
                       mirs_gpufp_operand *o) {
  o->space = MIRS_GPUFP_ARENA;
  o->stride = (uint64_t)s->t[t].numel;
  o->off = s->t[t].off + (uint64_t)j0 * o->stride;
  abi_shape(&g->t[t].shape, &o->shape);
}

/* A tile operand: block tensor b of bg. */
static void tile_opnd(const mirs__fp_store *s, const mirs__bgraph *bg, int32_t b,
                      mirs_gpufp_operand *o) {
  o->space = MIRS_GPUFP_TILE;
  o->stride = s->tile_used;
  o->off = s->bt[b].off;
  abi_shape(&bg->t[b].shape, &o->shape);
}

/* Whether op (arguments in[0..nin), metadata m) is a SUB whose subtrahend
 * may hold causal_mask's -inf: finite - -inf has no fingerprint, and the
 * module reports it at the next sync (the CPU backend at the op). */
static bool may_inf(mirs_op op, int32_t nin, const int32_t *in, const mirs__fp_meta *m) {
  return op == MIRS_OP_SUB && nin > 1 && m[in[1]].masked;
}

/* Wait for g's work and report a finite - -inf met since the last wait. */
static mirs_status gpu_sync(mirs_context *ctx, gpu_state *g) {
  GPU_TRY(ctx, g, g->abi->sync(g->dev), "waiting for a subtraction under a causal mask");
  return MIRS_OK;
}

/* One custom kernel's evaluation over a chunk of grid blocks. */
typedef struct gpu_custom {
  gpu_state *g;
  mirs__fp_store *s;
  const mirs_graph *kg;
  const mirs__bgraph *bg;
  int j0, trials;
  int64_t gend[MIRS__GRID];
  int64_t bfirst, nb;
  bool may_inf; /* a SUB ran whose subtrahend may hold -inf: sync to learn */
} gpu_custom;

/* Fill the tile step of LOAD/STORE op at iteration f. */
static void tile_step(const gpu_custom *u, const mirs__bop *op, int32_t f, mirs_gpufp_tile *t) {
  bool load = op->op == MIRS_OP_INPUT;
  int32_t bt = load ? op->out : op->in[0], kt = load ? op->src : op->dst;
  mirs__tile_place p;
  mirs__sched_place(u->bg, op, &p);
  memset(t, 0, sizeof *t);
  t->kind = load ? MIRS_GPUFP_T_LOAD : MIRS_GPUFP_T_STORE;
  t->trial0 = u->j0;
  t->trials = u->trials;
  t->bfirst = u->bfirst;
  t->nblocks = u->nb;
  bool placed[MIRS__GRID] = {false, false, false};
  for (int d = 0; d < MIRS_MAX_DIMS; d++) {
    t->grid_of_dim[d] = p.grid[d];
    t->grid_unit[d] = p.gunit[d];
    if (p.grid[d] >= 0)
      placed[p.grid[d]] = true;
  }
  t->forloop_dim = -1;
  for (int d = 0; d < MIRS_MAX_DIMS; d++)
    if (p.forloop[d])
      t->forloop_dim = d;
  for (int a = 0; a < MIRS__GRID; a++) {
    t->grid_end[a] = u->gend[a];
    /* Blocks differing only along an unplaced grid dim store to one
     * place: the schedule's last one (coordinate gend - 1) wins. */
    t->need[a] = !load && !placed[a] && u->gend[a] > 1 ? u->gend[a] - 1 : -1;
  }
  t->f = f;
  abi_shape(&u->bg->t[bt].shape, &t->tile);
  abi_shape(&u->kg->t[kt].shape, &t->tensor);
  t->tile_off = u->s->bt[bt].off;
  t->tile_stride = u->s->tile_used;
  t->tensor_stride = (uint64_t)u->s->t[kt].numel;
  t->tensor_off = u->s->t[kt].off + (uint64_t)u->j0 * t->tensor_stride;
}

/* The frame of block causal_mask o at iteration f: block 0's, and each
 * grid dim's shift (the frame is affine in the block coordinates). */
static bool mask_frame(const gpu_custom *u, const mirs__bop *o, int32_t f, mirs_gpufp_op *c) {
  int32_t b[MIRS__GRID] = {0, 0, 0};
  if (!mirs__sched_mask_frame(u->kg, u->bg, o, b, f, c->mask_org))
    return false;
  for (int g = 0; g < MIRS__GRID; g++) {
    int64_t org[4];
    b[g] = 1;
    if (!mirs__sched_mask_frame(u->kg, u->bg, o, b, f, org))
      return false;
    b[g] = 0;
    c->mask_step[g][0] = org[0] - c->mask_org[0];
    c->mask_step[g][1] = org[1] - c->mask_org[1];
    c->grid_end[g] = u->gend[g];
  }
  c->bfirst = u->bfirst;
  return true;
}

/* The compute op of block step o (COMPUTE, ACCUM or FINISH) at iteration f. */
static mirs_status block_op(const gpu_custom *u, const mirs__bop *o, int kind, int32_t f,
                            mirs_gpufp_op *c) {
  const mirs__fp_store *s = u->s;
  memset(c, 0, sizeof *c);
  c->batches = (int64_t)u->trials * u->nb;
  c->per_trial = u->nb;
  c->trial0 = u->j0;
  c->seed = s->seed;
  c->sqrt_op = MIRS_OP_SQRT;
  c->nin = o->nin < 2 ? 1 : 2;
  for (int a = 0; a < c->nin; a++)
    tile_opnd(s, u->bg, o->in[a], &c->in[a]);
  tile_opnd(s, u->bg, o->out, &c->out);
  c->in_exp = s->bt[o->in[0]].exp_dep;
  c->masked = s->bt[o->in[0]].masked || (c->nin > 1 && s->bt[o->in[1]].masked);
  bool known = op_code(o->op, o->cst, o->eps, c); /* (sqrt_op, max_op, eps for every step) */
  if (kind == MIRS__STEP_COMPUTE) {
    if (!known)
      return MIRS_FAIL(s->ctx, MIRS_INTERNAL, "block op %s has no GPU fingerprint kernel",
                       mirs__graph_ops[o->op].name);
    if (c->kind == MIRS_GPUFP_K_MASK && !mask_frame(u, o, f, c))
      return MIRS_FAIL(s->ctx, MIRS_INTERNAL, "block causal_mask %s has no tile position",
                       u->bg->t[o->out].name);
    c->dim = o->dim;
    c->out_exp = s->bt[o->out].exp_dep;
  } else if (kind == MIRS__STEP_FINISH) {
    c->kind = MIRS_GPUFP_K_FINISH;
    c->count = (uint64_t)mirs__sched_rms_count(u->bg, o);
  } else if (o->op == MIRS_OP_ACCUM_MAX || o->op == MIRS_OP_ACCUM_MIN) {
    c->kind = o->op == MIRS_OP_ACCUM_MAX ? MIRS_GPUFP_K_MAX : MIRS_GPUFP_K_MIN;
    c->dim = o->dim;
    c->add = 1;
  } else if (o->op == MIRS_OP_ACCUM_ONLINE) {
    c->kind = MIRS_GPUFP_K_ONLINE;
  } else if (o->op == MIRS_OP_ACCUM) {
    c->kind = MIRS_GPUFP_K_ACCUM;
  } else if (o->op == MIRS_OP_ACCUM_SUM) {
    c->kind = MIRS_GPUFP_K_SUM;
    c->dim = o->dim;
    c->add = 1;
  } else if (o->op == MIRS_OP_ACCUM_RMS) {
    c->kind = MIRS_GPUFP_K_SUMSQ;
  } else {
    return MIRS_FAIL(s->ctx, MIRS_UNSUPPORTED, "%s has no GPU fingerprint kernel",
                     mirs__graph_ops[o->op].name);
  }
  return MIRS_OK;
}

/* Run the steps of phase (0 init, 1 loop, 2 post) at iteration f. */
static mirs_status run_phase(gpu_custom *u, int phase, int32_t f) {
  mirs_context *ctx = u->s->ctx;
  gpu_state *g = u->g;
  const mirs__bgraph *bg = u->bg;
  for (int32_t i = 0; i < bg->nops; i++) {
    int kind = mirs__sched_classify(bg, i, phase);
    if (kind < 0)
      continue;
    const mirs__bop *o = &bg->ops[i];
    if (kind == MIRS__STEP_LOAD || kind == MIRS__STEP_STORE) {
      mirs_gpufp_tile t;
      tile_step(u, o, f, &t);
      GPU_TRY(ctx, g, g->abi->tile(g->dev, &t), "moving tiles of a custom kernel");
    } else if (kind == MIRS__STEP_ZERO) {
      mirs_gpufp_tile t;
      memset(&t, 0, sizeof t);
      t.kind = MIRS_GPUFP_T_ZERO;
      t.trials = u->trials;
      t.nblocks = u->nb;
      abi_shape(&bg->t[o->out].shape, &t.tile);
      /* (fc_zero: a running max or min starts at the none value) */
      t.zero_numel = mirs__sched_state_numel(bg, o->out);
      t.none_from = o->op == MIRS_OP_ACCUM_MAX || o->op == MIRS_OP_ACCUM_MIN ? 0
                    : o->op == MIRS_OP_ACCUM_ONLINE ? u->s->bt[o->out].numel
                                                    : t.zero_numel;
      t.tile_off = u->s->bt[o->out].off;
      t.tile_stride = u->s->tile_used;
      GPU_TRY(ctx, g, g->abi->tile(g->dev, &t), "zeroing accumulators");
    } else {
      mirs_gpufp_op c;
      MIRS_CHECK(ctx, block_op(u, o, kind, f, &c));
      u->may_inf = u->may_inf || may_inf(o->op, o->nin, o->in, u->s->bt);
      GPU_TRY(ctx, g, g->abi->compute(g->dev, &c), "a block op of a custom kernel");
    }
    if (kind != MIRS__STEP_ZERO && kind != MIRS__STEP_STORE && kind != MIRS__STEP_FINISH)
      u->s->stats.tile_elements +=
          (uint64_t)u->s->bt[o->out].numel * (uint64_t)u->nb * (uint64_t)u->trials;
  }
  return MIRS_OK;
}

/* Custom kernel k in trials [j0, j1): every grid block (or the corner
 * block only), chunked so the tile scratch stays within its budget. */
static mirs_status gpu_custom_op(gpu_state *g, mirs__fp_store *s, const mirs_graph *kg,
                                 const mirs__kop *k, int j0, int j1) {
  mirs_context *ctx = s->ctx;
  gpu_custom u = {g, s, kg, k->bg, j0, j1 - j0, {1, 1, 1}, 0, 0, false};
  int64_t nblocks = 1;
  for (int a = 0; a < MIRS__GRID; a++) {
    u.gend[a] = s->corner ? 1 : k->bg->grid[a];
    nblocks *= u.gend[a];
  }
  uint64_t per = (s->tile_used ? s->tile_used : 1) * (uint64_t)u.trials;
  /* The tile scratch also stays within eval_max_elements pairs (which
   * bounds the other fingerprint buffers; the tests lower it to run the
   * chunked path). */
  uint64_t budget = TILE_BUDGET;
  if ((uint64_t)ctx->opt.eval_max_elements < budget)
    budget = (uint64_t)ctx->opt.eval_max_elements;
  int64_t chunk = (int64_t)(budget / per);
  if (chunk < 1)
    chunk = 1;
  if (chunk > nblocks)
    chunk = nblocks;
  GPU_TRY(ctx, g, g->abi->reserve(g->dev, MIRS_GPUFP_TILE, per * (uint64_t)chunk + 1),
          "allocating tiles");
  mirs_status st = MIRS_OK;
  for (u.bfirst = 0; st == MIRS_OK && u.bfirst < nblocks; u.bfirst += chunk) {
    u.nb = nblocks - u.bfirst < chunk ? nblocks - u.bfirst : chunk;
    st = run_phase(&u, 0, 0);
    for (int32_t f = 0; st == MIRS_OK && f < k->bg->forloop; f++)
      st = mirs__core_stopping(ctx)
               ? mirs__core_stopped(ctx, "fingerprinting a custom kernel on the GPU")
               : run_phase(&u, 1, f);
    if (st == MIRS_OK)
      st = run_phase(&u, 2, 0);
  }
  /* (one wait per kernel op, not per iteration: the op fails as a whole) */
  if (st == MIRS_OK)
    return u.may_inf ? gpu_sync(ctx, g) : MIRS_OK;
  /* An op that stops or fails after a SUB that may meet -inf was queued
   * still drains the handle's flag (the sync clears it; its verdict is
   * moot), so a later op on this store is not refused for this one. */
  if (u.may_inf)
    (void)g->abi->sync(g->dev);
  return st;
}

/* Fingerprint kernel op `op` in trials [j0, j1): one launch, or a custom
 * kernel's schedule. */
static mirs_status gpu_op(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t op, int j0,
                          int j1) {
  gpu_state *gs = state;
  mirs_context *ctx = s->ctx;
  const mirs__kop *k = &g->ops[op];
  MIRS_CHECK(ctx, gpu_reserve(gs, s));
  if (k->op == MIRS_OP_CUSTOM)
    return gpu_custom_op(gs, s, g, k, j0, j1);
  mirs_gpufp_op c;
  memset(&c, 0, sizeof c);
  if (!op_code(k->op, k->cst, k->eps, &c))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "%s has no GPU fingerprint kernel",
                     mirs__graph_ops[k->op].name);
  int32_t out = k->out[0];
  const mirs__shape *xs = &g->t[k->in[0]].shape;
  if (c.kind == MIRS_GPUFP_K_GATHER)
    layout_view(k, xs, &g->t[out].shape, &c);
  if (c.kind == MIRS_GPUFP_K_MASK) { /* the whole tensor: fp_mask's frame with org NULL */
    c.mask_org[2] = xs->d[xs->ndim - 2];
    c.mask_org[3] = xs->d[xs->ndim - 1];
  }
  c.dim = k->dim;
  c.batches = j1 - j0;
  c.per_trial = 1;
  c.trial0 = j0;
  c.seed = s->seed;
  c.nin = k->nin < 2 ? 1 : 2;
  for (int a = 0; a < c.nin; a++)
    arena_opnd(s, g, k->in[a], j0, &c.in[a]);
  arena_opnd(s, g, out, j0, &c.out);
  c.in_exp = s->t[k->in[0]].exp_dep;
  c.out_exp = s->t[out].exp_dep;
  c.masked = s->t[k->in[0]].masked || (c.nin > 1 && s->t[k->in[1]].masked);
  GPU_TRY(ctx, gs, gs->abi->compute(gs->dev, &c), mirs__graph_ops[k->op].name);
  return may_inf(k->op, k->nin, k->in, s->t) ? gpu_sync(ctx, gs) : MIRS_OK;
}

/* Copy values of tensor t, trial `trial`, to the host. */
static mirs_status gpu_read(void *state, const mirs__fp_store *s, int32_t t, int trial,
                            int64_t first, int64_t count, mirs__fp_pair *out) {
  gpu_state *g = state;
  uint64_t off = s->t[t].off + (uint64_t)trial * (uint64_t)s->t[t].numel + (uint64_t)first;
  GPU_TRY(s->ctx, g, g->abi->read(g->dev, off, (uint64_t)count, (mirs_gpufp_pair *)out),
          "reading values");
  return MIRS_OK;
}

/* The digest of tensor t (mirs__fp_digest), reduced on the device. */
static mirs_status gpu_digest(void *state, const mirs__fp_store *s, int32_t t, uint64_t *out) {
  gpu_state *g = state;
  GPU_TRY(s->ctx, g, g->abi->digest(g->dev, s->t[t].off, s->t[t].numel, s->trials, out),
          "computing a digest");
  return MIRS_OK;
}

/* First difference between tensor ta of a and tb of b, on the device. */
static mirs_status gpu_compare(void *sa, const mirs__fp_store *a, int32_t ta, void *sb,
                               const mirs__fp_store *b, int32_t tb, bool qparts, int *trial,
                               int64_t *elem) {
  gpu_state *ga = sa, *gb = sb;
  uint64_t n = (uint64_t)a->t[ta].numel;
  int64_t first = -1;
  GPU_TRY(a->ctx, ga,
          ga->abi->compare(ga->dev, a->t[ta].off, gb->dev, b->t[tb].off, n * (uint64_t)a->trials,
                           qparts, &first),
          "comparing tensors");
  *trial = first < 0 ? -1 : (int)(first / (int64_t)n);
  *elem = first < 0 ? -1 : first % (int64_t)n;
  return MIRS_OK;
}

const mirs__fp_backend mirs__fp_gpu_backend = {
    .name = "gpu",
    .open = gpu_open,
    .compute_input = gpu_input,
    .compute_op = gpu_op,
    .read = gpu_read,
    .digest = gpu_digest,
    .release = gpu_release,
    .compare = gpu_compare,
};

/* ---------------------------------------------------------------- choice */

#ifdef HAVE_CUDA
/* Open and describe device 0 (the probe of auto and gpu; a build without
 * CUDA has nothing to open). */
static mirs_status probe(mirs_context *ctx, char *name, size_t size) {
  const mirs_gpufp_abi *abi;
  MIRS_CHECK(ctx, load_abi(ctx, &abi));
  gpu_state g = {abi, NULL};
  char msg[512] = "", dev[256] = "";
  int r = abi->open(0, &g.dev, msg, sizeof msg);
  if (r != MIRS_GPUFP_OK)
    return MIRS_FAIL(ctx, r == MIRS_GPUFP_NO_DEVICE ? MIRS_NO_DEVICE : MIRS_CUDA,
                     "no usable CUDA device for GPU fingerprints: %s", msg);
  r = abi->describe(g.dev, dev, sizeof dev);
  mirs_status st = r == MIRS_GPUFP_OK ? MIRS_OK : gpu_fail(ctx, &g, r, "describing the device");
  abi->close(g.dev);
  MIRS_CHECK(ctx, st);
  snprintf(name, size, "gpu: %s", dev);
  return MIRS_OK;
}
#endif

/* The backend of the option `verify` (see fingerprint.h). */
mirs_status mirs__fp_backend_choose(mirs_context *ctx, const mirs__fp_backend **out, char *name,
                                    size_t size) {
  const char *v = ctx->opt.verify;
  *out = &mirs__fp_cpu_backend;
  snprintf(name, size, "cpu");
  bool gpu = strcmp(v, "gpu") == 0, autom = strcmp(v, "auto") == 0;
  if (!gpu && !autom) {
    if (strcmp(v, "cpu") == 0)
      return MIRS_OK;
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option verify must be auto, cpu or gpu, not '%s'", v);
  }
#ifndef HAVE_CUDA
  if (gpu)
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "--verify=gpu: mirsearch was built without CUDA (configure found no nvcc, "
                     "or --without-cuda); use --verify=cpu or auto");
  snprintf(name, size, "cpu (built without CUDA)");
  return MIRS_OK;
#else
  char dev[320];
  mirs_status st = probe(ctx, dev, sizeof dev);
  if (st == MIRS_OK) {
    *out = &mirs__fp_gpu_backend;
    snprintf(name, size, "%s", dev);
    return MIRS_OK;
  }
  if (gpu)
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  const char *why = mirs_last_error(ctx), *prefix = "no usable CUDA device for GPU fingerprints: ";
  if (strncmp(why, prefix, strlen(prefix)) == 0)
    why += strlen(prefix);
  snprintf(name, size, "cpu (no usable GPU: %.200s)", why);
  mirs_clear_error(ctx);
  return MIRS_OK;
#endif
}
