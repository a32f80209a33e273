/* SPDX-License-Identifier: MIT */
/* src/graph/graph.c - building µGraphs: kernel tensors and ops, block
 * graphs of custom kernels, removal from the end, deep copy, validation.
 *
 * Every mutation goes through these functions so the invariants in
 * graph.h hold at all times: names are unique identifiers, shapes are
 * checked when an op is added (the reason becomes the context's error
 * message, which the parser turns into a positioned diagnostic), block
 * tiles divide their tensors exactly, and a block value is either
 * per-iteration or post-loop, never a mix.  On failure nothing is added. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"

static const char *const grid_axis[MIRS__GRID] = {"x", "y", "z"};

/* True if s is an identifier [A-Za-z_][A-Za-z0-9_]* that is not a keyword. */
bool mirs__graph_valid_name(const char *s) {
  static const char *const keywords[] = {"program", "ugraph", "input", "output"};
  if (!s || !*s)
    return false;
  /* The parser's limit (parse.c NAME_MAX_LEN): what is built must re-parse. */
  if (strnlen(s, MIRS__NAME_MAX + 1) > MIRS__NAME_MAX)
    return false;
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return false;
  for (const char *p = s + 1; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return false;
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
    if (!strcmp(s, keywords[i]))
      return false;
  return true;
}

/* Kernel tensor id by name, or -1. */
int32_t mirs__graph_find(const mirs_graph *g, const char *name) {
  for (int32_t i = 0; i < g->nt; i++)
    if (!strcmp(g->t[i].name, name))
      return i;
  return -1;
}

/* Block tensor id by name, or -1. */
int32_t mirs__bg_find(const mirs__bgraph *bg, const char *name) {
  for (int32_t i = 0; i < bg->nt; i++)
    if (!strcmp(bg->t[i].name, name))
      return i;
  return -1;
}

/* A fresh "<prefix><id>" name that is not taken (find_fn checks). */
static char *fresh_name(mirs_context *ctx, const char *prefix, int32_t id, const void *where,
                        int32_t (*find_fn)(const void *, const char *)) {
  char buf[48];
  snprintf(buf, sizeof buf, "%s%" PRId32, prefix, id);
  for (int k = 1; find_fn(where, buf) >= 0; k++)
    snprintf(buf, sizeof buf, "%s%" PRId32 "_%d", prefix, id, k);
  return mirs__core_strdup(ctx, buf);
}

static int32_t find_k(const void *g, const char *n) {
  return mirs__graph_find(g, n);
}
/* Where a block tensor name must be unique: its block graph and, so that
 * printed µGraphs parse back, the kernel graph's tensor names too. */
typedef struct bscope {
  const mirs_graph *g;
  const mirs__bgraph *bg;
} bscope;

static int32_t find_b(const void *where, const char *n) {
  const bscope *sc = where;
  int32_t i = mirs__bg_find(sc->bg, n);
  return i >= 0 ? i : (mirs__graph_find(sc->g, n) >= 0 ? INT32_MAX : -1);
}

/* Copy of name after checking it, or a fresh name when name is NULL. */
static mirs_status take_name(mirs_context *ctx, const char *name, const char *prefix, int32_t id,
                             const void *where, int32_t (*find_fn)(const void *, const char *),
                             char **out) {
  if (name) {
    if (!mirs__graph_valid_name(name))
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "'%.64s%s' is not a valid name (want [A-Za-z_][A-Za-z0-9_]*, at most %d "
                       "bytes, not a keyword)",
                       name, strlen(name) > 64 ? "..." : "", MIRS__NAME_MAX);
    if (!(find_fn == find_k ? ((const mirs_graph *)where)->names_indexed
                            : ((const bscope *)where)->g->names_indexed) &&
        find_fn(where, name) >= 0)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "redefinition of '%s'", name);
    *out = mirs__core_strdup(ctx, name);
  } else {
    *out = fresh_name(ctx, prefix, id, where, find_fn);
  }
  return *out ? MIRS_OK : MIRS_NOMEM;
}

/* ---------------------------------------------------------------- graph */

/* Create an empty graph. */
mirs_status mirs__graph_new(mirs_context *ctx, const char *name, mirs_graph **out) {
  *out = NULL;
  mirs_graph *g = mirs__core_calloc(ctx, 1, sizeof *g);
  if (!g)
    return MIRS_NOMEM;
  g->ctx = ctx;
  g->name = mirs__core_strdup(ctx, name ? name : "program");
  if (!g->name) {
    mirs__core_free(ctx, g);
    return MIRS_NOMEM;
  }
  MIRS_INC(&ctx->stats, graphs_built);
  *out = g;
  return MIRS_OK;
}

/* Free one kernel op's storage (not its tensors). */
static void kop_free(mirs_context *ctx, mirs__kop *op) {
  mirs__core_free(ctx, op->in);
  mirs__core_free(ctx, op->out);
  mirs__bg_free(ctx, op->bg);
  op->in = op->out = NULL;
  op->bg = NULL;
}

/* Free a graph and everything it owns. */
void mirs__graph_free(mirs_graph *g) {
  if (!g)
    return;
  mirs_context *ctx = g->ctx;
  for (int32_t i = 0; i < g->nops; i++)
    kop_free(ctx, &g->ops[i]);
  for (int32_t i = 0; i < g->nt; i++)
    mirs__core_free(ctx, g->t[i].name);
  mirs__core_free(ctx, g->ops);
  mirs__core_free(ctx, g->t);
  mirs__core_free(ctx, g->outputs);
  mirs__core_free(ctx, g->name);
  mirs__core_free(ctx, g);
}

/* Check a shape against the rank and element limits. */
static mirs_status check_shape(mirs_context *ctx, const char *what, const mirs__shape *s) {
  if (s->ndim < 1)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s: a tensor needs at least one dimension", what);
  if (s->ndim > ctx->opt.max_dims || s->ndim > MIRS_MAX_DIMS)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s: rank %d exceeds the limit of %" PRId64 " dimensions",
                     what, s->ndim, ctx->opt.max_dims < MIRS_MAX_DIMS ? ctx->opt.max_dims : (int64_t)MIRS_MAX_DIMS);
  for (int i = 0; i < s->ndim; i++)
    if (s->d[i] < 1)
      return MIRS_FAIL(ctx, MIRS_SHAPE, "%s: dimension %d is %" PRId64 "; dimensions must be >= 1",
                       what, i, s->d[i]);
  if (mirs__shape_numel(s) > ctx->opt.max_elements) {
    char buf[128];
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s: %s has more than %" PRId64 " elements (max_elements)",
                     what, mirs__shape_str(s, buf, sizeof buf), ctx->opt.max_elements);
  }
  return MIRS_OK;
}

/* Append a kernel tensor (name already owned by the caller's copy). */
static mirs_status push_tensor(mirs_graph *g, char *name, mirs_dtype dtype, const mirs__shape *s,
                               int32_t producer, int32_t out_index, int32_t *id) {
  if (mirs__core_grow(g->ctx, (void **)&g->t, &g->capt, (size_t)g->nt + 1, sizeof *g->t) !=
      MIRS_OK)
    return MIRS_NOMEM;
  mirs__ktensor *t = &g->t[g->nt];
  t->name = name;
  t->dtype = dtype;
  t->shape = *s;
  t->producer = producer;
  t->out_index = out_index;
  *id = g->nt++;
  return MIRS_OK;
}

/* Add a graph input. */
mirs_status mirs__graph_add_input(mirs_graph *g, const char *name, mirs_dtype dtype,
                                  const mirs__shape *shape, int32_t *out) {
  mirs_context *ctx = g->ctx;
  if ((unsigned)dtype > MIRS_F32)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "invalid dtype %d", (int)dtype);
  if (!name)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "an input needs a name");
  if (shape->ndim > MIRS_MAX_DIMS || shape->ndim < 0)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "input '%s': rank %d exceeds the limit of %d dimensions",
                     name, shape->ndim, MIRS_MAX_DIMS);
  char what[160];
  snprintf(what, sizeof what, "input '%s'", name);
  MIRS_CHECK(ctx, check_shape(ctx, what, shape));
  char *nm;
  MIRS_CHECK(ctx, take_name(ctx, name, "t", g->nt, g, find_k, &nm));
  int32_t id;
  if (push_tensor(g, nm, dtype, shape, -1, 0, &id) != MIRS_OK) {
    mirs__core_free(ctx, nm);
    return MIRS_NOMEM;
  }
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Reserve one more kernel op slot. */
static mirs_status reserve_op(mirs_graph *g) {
  return mirs__core_grow(g->ctx, (void **)&g->ops, &g->capops, (size_t)g->nops + 1, sizeof *g->ops);
}

static mirs_status add_kop(mirs_graph *g, const char *name, mirs_op op, int nin, const int32_t *in,
                           int dim, const mirs__scalar *c, const mirs__shape *lay, int32_t *out);

/* Add a predefined kernel op. */
mirs_status mirs__graph_add_op(mirs_graph *g, const char *name, mirs_op op, int nin,
                               const int32_t *in, int dim, int32_t *out) {
  return mirs__graph_add_op_c(g, name, op, nin, in, dim, NULL, out);
}

/* Whether constants c suit op (present exactly when op takes some; clamp's
 * bounds ordered); else the context's error. */
static mirs_status check_consts(mirs_context *ctx, mirs_op op, const mirs__scalar *c) {
  int n = mirs__op_nconst(op);
  if (n > 0 && !c)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "'%s' needs %d constant%s", mirs__graph_ops[op].name,
                     n, n == 1 ? "" : "s");
  if (op == MIRS_OP_CLAMP && c[0].v > c[1].v)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "clamp: the lower bound %g is above the upper bound %g",
                     c[0].v, c[1].v);
  if ((op == MIRS_OP_DIV_SCALAR) && c[0].m == 0)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "div: division by the constant 0");
  return MIRS_OK;
}

mirs_status mirs__graph_copy_op(mirs_graph *g, const char *name, const mirs__kop *k,
                                const int32_t *in, int32_t *out) {
  int32_t id = -1;
  if (mirs__op_is_layout(k->op))
    MIRS_CHECK(g->ctx, mirs__graph_add_layout(g, name, k->op, in[0], &k->lay, &id));
  else
    MIRS_CHECK(g->ctx, mirs__graph_add_op_c(g, name, k->op, k->nin, in, k->dim, k->cst, &id));
  g->ops[g->nops - 1].eps = k->eps;
  if (out)
    *out = id;
  return MIRS_OK;
}

mirs_status mirs__graph_add_op_c(mirs_graph *g, const char *name, mirs_op op, int nin,
                                 const int32_t *in, int dim, const mirs__scalar *c, int32_t *out) {
  return add_kop(g, name, op, nin, in, dim, c, NULL, out);
}

mirs_status mirs__graph_add_layout(mirs_graph *g, const char *name, mirs_op op, int32_t x,
                                   const mirs__shape *lay, int32_t *out) {
  if (!mirs__op_is_layout(op) || !lay)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "%s is not a layout operator with an attribute",
                     (unsigned)op < MIRS_OP_COUNT ? mirs__graph_ops[op].name : "?");
  return add_kop(g, name, op, 1, &x, -1, NULL, lay, out);
}

/* Add a predefined kernel op: the one builder behind add_op_c and
 * add_layout (lay: a layout op's attribute as written, else NULL). */
static mirs_status add_kop(mirs_graph *g, const char *name, mirs_op op, int nin, const int32_t *in,
                           int dim, const mirs__scalar *c, const mirs__shape *lay, int32_t *out) {
  mirs_context *ctx = g->ctx;
  if ((unsigned)op >= MIRS_OP_COUNT)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "invalid operator %d", (int)op);
  MIRS_CHECK(ctx, check_consts(ctx, op, c));
  const mirs__opinfo *info = &mirs__graph_ops[op];
  if (op == MIRS_OP_CUSTOM)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "custom kernels are added with a block graph");
  if (!(info->levels & MIRS_LEVEL_K))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "'%s' is a block-level operator; it can only appear "
                     "inside a custom kernel", info->name);
  if (nin < 0 || nin > 2 || (nin > 0 && !in))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: bad argument list", info->name);
  mirs__shape shapes[2];
  for (int i = 0; i < nin; i++) {
    if (in[i] < 0 || in[i] >= g->nt)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: argument %d is not a tensor of this graph",
                       info->name, i + 1);
    shapes[i] = g->t[in[i]].shape;
  }
  if (nin == 2 && g->t[in[0]].dtype != g->t[in[1]].dtype)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s: dtype mismatch: '%s' is %s, '%s' is %s", info->name,
                     g->t[in[0]].name, mirs_dtype_name(g->t[in[0]].dtype), g->t[in[1]].name,
                     mirs_dtype_name(g->t[in[1]].dtype));
  mirs__shape rs, rlay = {0};
  int ndim = -1;
  char why[512];
  if (lay ? !mirs__shape_layout(op, &shapes[0], lay, &rlay, &rs, why, sizeof why)
          : !mirs__shape_infer(op, nin, shapes, dim, &ndim, &rs, why, sizeof why))
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s", why);
  char what[64];
  snprintf(what, sizeof what, "result of %s", info->name);
  MIRS_CHECK(ctx, check_shape(ctx, what, &rs));
  MIRS_CHECK(ctx, reserve_op(g));
  char *nm;
  MIRS_CHECK(ctx, take_name(ctx, name, "t", g->nt, g, find_k, &nm));
  mirs__kop k = {.op = op, .nin = nin, .nout = 1, .dim = ndim,
                 .eps = mirs__op_eps_default(op), .lay = rlay};
  k.in = mirs__core_alloc(ctx, sizeof(int32_t) * (size_t)(nin ? nin : 1));
  k.out = mirs__core_alloc(ctx, sizeof(int32_t));
  int32_t id;
  if (!k.in || !k.out || push_tensor(g, nm, g->t[in[0]].dtype, &rs, g->nops, 0, &id) != MIRS_OK) {
    mirs__core_free(ctx, k.in);
    mirs__core_free(ctx, k.out);
    mirs__core_free(ctx, nm);
    return MIRS_NOMEM;
  }
  memcpy(k.in, in, sizeof(int32_t) * (size_t)nin);
  k.out[0] = id;
  for (int i = 0; i < mirs__op_nconst(op); i++)
    k.cst[i] = c[i];
  g->ops[g->nops++] = k;
  MIRS_INC(&ctx->stats, ops_added);
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Mark t as the next output. */
mirs_status mirs__graph_mark_output(mirs_graph *g, int32_t t) {
  if (t < 0 || t >= g->nt)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "output: %" PRId32 " is not a tensor of this graph",
                     t);
  for (int32_t i = 0; i < g->nout; i++)
    if (g->outputs[i] == t)
      return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "'%s' is already an output", g->t[t].name);
  MIRS_CHECK(g->ctx, mirs__core_grow(g->ctx, (void **)&g->outputs, &g->capout, (size_t)g->nout + 1,
                                     sizeof *g->outputs));
  g->outputs[g->nout++] = t;
  return MIRS_OK;
}

/* Remove the last kernel op, its result tensors and their output marks. */
void mirs__graph_pop_op(mirs_graph *g) {
  if (g->nops == 0)
    return;
  mirs__kop *op = &g->ops[g->nops - 1];
  int32_t first = op->out[0];
  /* Results are the newest tensors unless an input was added after them. */
  if (NEVER(first + op->nout != g->nt))
    return;
  int32_t k = 0;
  for (int32_t i = 0; i < g->nout; i++)
    if (g->outputs[i] < first)
      g->outputs[k++] = g->outputs[i];
  g->nout = k;
  for (int32_t i = first; i < g->nt; i++)
    mirs__core_free(g->ctx, g->t[i].name);
  g->nt = first;
  kop_free(g->ctx, op);
  g->nops--;
}

/* ---------------------------------------------------------------- block graphs */

/* Create an empty block graph. */
mirs_status mirs__bg_new(mirs_context *ctx, const int32_t grid[MIRS__GRID],
                         const int32_t block[MIRS__GRID], int32_t forloop, mirs__bgraph **out) {
  *out = NULL;
  int64_t threads = 1;
  for (int i = 0; i < MIRS__GRID; i++) {
    if (grid[i] < 1)
      return MIRS_FAIL(ctx, MIRS_SHAPE, "grid.%s is %" PRId32 "; grid dims must be >= 1",
                       grid_axis[i], grid[i]);
    if (i > 0 && grid[i] > 65535)
      return MIRS_FAIL(ctx, MIRS_SHAPE, "grid.%s is %" PRId32 "; CUDA allows at most 65535",
                       grid_axis[i], grid[i]);
    if (block[i] < 1)
      return MIRS_FAIL(ctx, MIRS_SHAPE, "block.%s is %" PRId32 "; block dims must be >= 1",
                       grid_axis[i], block[i]);
    /* Each dim is checked before the product (three dims of 2^31 - 1
     * used to overflow it): CUDA allows x, y <= 1024, z <= 64. */
    if (block[i] > (i == 2 ? 64 : 1024))
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "block.%s is %" PRId32 "; CUDA allows at most %d (1024 threads, "
                       "block.z <= 64)",
                       grid_axis[i], block[i], i == 2 ? 64 : 1024);
    threads *= block[i];
  }
  if (block[2] > 64 || threads > 1024)
    return MIRS_FAIL(ctx, MIRS_SHAPE,
                     "block [%" PRId32 ", %" PRId32 ", %" PRId32 "] exceeds CUDA's limits "
                     "(1024 threads, block.z <= 64)",
                     block[0], block[1], block[2]);
  if (forloop < 1)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "forloop is %" PRId32 "; it must be >= 1", forloop);
  /* Launch size: CUDA allows 2^31 - 1 blocks along x, and each block's
   * loop runs F times; the interpreter and the fingerprints run every
   * (block, iteration), so the product is bounded (2^32: hours of work
   * beyond it, and no kernel a search would propose). */
  uint64_t launches = (uint64_t)grid[0] * (uint64_t)grid[1] * (uint64_t)grid[2];
  if (launches > MIRS__MAX_BLOCK_ITERATIONS / (uint64_t)forloop)
    return MIRS_FAIL(ctx, MIRS_SHAPE,
                     "grid [%" PRId32 ", %" PRId32 ", %" PRId32 "] x forloop %" PRId32
                     " is more than %llu block iterations",
                     grid[0], grid[1], grid[2], forloop,
                     (unsigned long long)MIRS__MAX_BLOCK_ITERATIONS);
  mirs__bgraph *bg = mirs__core_calloc(ctx, 1, sizeof *bg);
  if (!bg)
    return MIRS_NOMEM;
  memcpy(bg->grid, grid, sizeof bg->grid);
  memcpy(bg->block, block, sizeof bg->block);
  bg->forloop = forloop;
  *out = bg;
  return MIRS_OK;
}

/* Free a block graph. */
void mirs__bg_free(mirs_context *ctx, mirs__bgraph *bg) {
  if (!bg)
    return;
  for (int32_t i = 0; i < bg->nt; i++)
    mirs__core_free(ctx, bg->t[i].name);
  mirs__core_free(ctx, bg->t);
  mirs__core_free(ctx, bg->ops);
  mirs__core_free(ctx, bg);
}

/* Append a block op (and its result tensor when named/shaped). */
static mirs_status bg_push(const mirs_graph *g, mirs__bgraph *bg, const mirs__bop *op,
                           const char *name, const mirs__shape *shape, bool post, int32_t *out) {
  mirs_context *ctx = g->ctx;
  if (mirs__core_grow(ctx, (void **)&bg->ops, &bg->capops, (size_t)bg->nops + 1,
                      sizeof *bg->ops) != MIRS_OK)
    return MIRS_NOMEM;
  mirs__bop o = *op;
  if (shape) {
    if (mirs__core_grow(ctx, (void **)&bg->t, &bg->capt, (size_t)bg->nt + 1, sizeof *bg->t) !=
        MIRS_OK)
      return MIRS_NOMEM;
    char *nm;
    bscope sc = {g, bg};
    MIRS_CHECK(ctx, take_name(ctx, name, "b", bg->nt, &sc, find_b, &nm));
    bg->t[bg->nt] = (mirs__btensor){.name = nm, .shape = *shape, .producer = bg->nops, .post = post};
    o.out = bg->nt++;
  } else {
    o.out = -1;
  }
  bg->ops[bg->nops++] = o;
  if (out)
    *out = o.out;
  return MIRS_OK;
}

/* A block op with every map unset. */
static mirs__bop bop_blank(mirs_op op) {
  mirs__bop o;
  memset(&o, 0, sizeof o);
  o.op = op;
  o.in[0] = o.in[1] = -1;
  o.out = o.src = o.dst = o.dim = o.fmap = o.stored = -1;
  for (int i = 0; i < MIRS__GRID; i++)
    o.imap[i] = o.omap[i] = -1;
  return o;
}

/* Load kernel tensor src as a tile per forloop iteration. */
mirs_status mirs__bg_add_input(mirs_graph *g, mirs__bgraph *bg, const char *name, int32_t src,
                               const int32_t imap[MIRS__GRID], int32_t fmap, int32_t *out) {
  mirs_context *ctx = g->ctx;
  if (src < 0 || src >= g->nt)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "input: %" PRId32 " is not a tensor of this graph", src);
  const mirs__ktensor *kt = &g->t[src];
  mirs__shape tile = kt->shape;
  int nd = kt->shape.ndim;
  for (int i = 0; i < MIRS__GRID; i++) {
    int32_t d = imap[i];
    if (d == -1)
      continue;
    if (d < -1 || d >= nd)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "input(%s): imap for grid.%s is %" PRId32 "; want -1 or a dim in [0, %d)",
                       kt->name, grid_axis[i], d, nd);
    for (int j = 0; j < i; j++)
      if (imap[j] == d)
        return MIRS_FAIL(ctx, MIRS_SHAPE,
                         "input(%s): grid.%s and grid.%s both partition dim %" PRId32, kt->name,
                         grid_axis[j], grid_axis[i], d);
    if (tile.d[d] % bg->grid[i])
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "input(%s): dim %" PRId32 " (size %" PRId64 ") is not divisible by grid.%s "
                       "= %" PRId32,
                       kt->name, d, kt->shape.d[d], grid_axis[i], bg->grid[i]);
    tile.d[d] /= bg->grid[i];
  }
  if (fmap < -1 || fmap >= nd)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "input(%s): fmap is %" PRId32 "; want -1 or a dim in [0, %d)",
                     kt->name, fmap, nd);
  if (fmap >= 0) {
    /* A dim both partitioned and walked (split-K): the grid picks a chunk
     * and the forloop walks the chunk's tiles, so the chunk must divide. */
    for (int i = 0; i < MIRS__GRID; i++)
      if (imap[i] == fmap && tile.d[fmap] % bg->forloop)
        return MIRS_FAIL(ctx, MIRS_SHAPE,
                         "input(%s): dim %" PRId32 " (size %" PRId64 ") is partitioned by grid.%s "
                         "= %" PRId32 " into chunks of %" PRId64 " not divisible by forloop = %" PRId32,
                         kt->name, fmap, kt->shape.d[fmap], grid_axis[i], bg->grid[i],
                         tile.d[fmap], bg->forloop);
    if (tile.d[fmap] % bg->forloop)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "input(%s): dim %" PRId32 " (size %" PRId64 ") is not divisible by forloop "
                       "= %" PRId32,
                       kt->name, fmap, kt->shape.d[fmap], bg->forloop);
    tile.d[fmap] /= bg->forloop;
  }
  mirs__bop o = bop_blank(MIRS_OP_INPUT);
  o.src = src;
  memcpy(o.imap, imap, sizeof o.imap);
  o.fmap = fmap;
  return bg_push(g, bg, &o, name, &tile, false, out);
}

/* A compute or accumulator op on block tensors. */
mirs_status mirs__bg_add_op(mirs_graph *g, mirs__bgraph *bg, const char *name, mirs_op op, int nin,
                            const int32_t *in, int dim, bool fused, int32_t *out) {
  return mirs__bg_add_op_c(g, bg, name, op, nin, in, dim, fused, NULL, out);
}

mirs_status mirs__bg_add_op_c(mirs_graph *g, mirs__bgraph *bg, const char *name, mirs_op op,
                              int nin, const int32_t *in, int dim, bool fused,
                              const mirs__scalar *c, int32_t *out) {
  mirs_context *ctx = g->ctx;
  if ((unsigned)op >= MIRS_OP_COUNT)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "invalid operator %d", (int)op);
  MIRS_CHECK(ctx, check_consts(ctx, op, c));
  const mirs__opinfo *info = &mirs__graph_ops[op];
  if (!(info->levels & MIRS_LEVEL_B) || op == MIRS_OP_INPUT || op == MIRS_OP_OUTPUT)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "'%s' cannot be used as a block operator here",
                     info->name);
  if (nin < 0 || nin > 2 || (nin > 0 && !in))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: bad argument list", info->name);
  mirs__shape shapes[2];
  bool any_post = false, any_loop = false;
  for (int i = 0; i < nin; i++) {
    if (in[i] < 0 || in[i] >= bg->nt)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: argument %d is not a tensor of this block",
                       info->name, i + 1);
    shapes[i] = bg->t[in[i]].shape;
    if (bg->t[in[i]].post)
      any_post = true;
    else
      any_loop = true;
  }
  if (fused && !mirs__op_is_elementwise(op))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "%s: only elementwise operators can be fused into a thread graph", info->name);
  mirs__shape rs;
  int ndim;
  char why[512];
  if (!mirs__shape_infer(op, nin, shapes, dim, &ndim, &rs, why, sizeof why))
    return MIRS_FAIL(ctx, MIRS_SHAPE, "%s", why);
  bool post;
  if (info->kind == MIRS__KIND_ACCUM) {
    if (any_post)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "%s: '%s' is already a post-loop value; accumulators take per-iteration "
                       "values",
                       info->name, bg->t[in[0]].name);
    post = true;
  } else {
    if (any_post && any_loop)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "%s: mixes per-iteration and post-loop (accumulated) values; accumulate "
                       "both first",
                       info->name);
    post = any_post;
  }
  mirs__bop o = bop_blank(op);
  o.nin = nin;
  for (int i = 0; i < nin; i++)
    o.in[i] = in[i];
  o.dim = ndim;
  o.fused = fused;
  o.eps = mirs__op_eps_default(op);
  for (int i = 0; i < mirs__op_nconst(op); i++)
    o.cst[i] = c[i];
  if (op == MIRS_OP_CAUSAL_MASK && !mirs__sched_mask_placed(g, bg, &o))
    return MIRS_FAIL(ctx, MIRS_SHAPE,
                     "causal_mask(%s): the tile's rows or columns do not come from one place "
                     "of a kernel tensor (operands from different places, or summed over the "
                     "forloop), so its global positions are unknown",
                     bg->t[in[0]].name);
  MIRS_CHECK(ctx, bg_push(g, bg, &o, name, &rs, post, out));
  MIRS_INC(&ctx->stats, ops_added);
  return MIRS_OK;
}

/* Store post tile t via omap. */
mirs_status mirs__bg_add_output(mirs_graph *g, mirs__bgraph *bg, int32_t t,
                                const int32_t omap[MIRS__GRID]) {
  return mirs__bg_add_output_dt(g, bg, t, omap, -1);
}

/* Store post tile t via omap into a kernel tensor of dtype stored (-1:
 * the kernel's default). */
mirs_status mirs__bg_add_output_dt(mirs_graph *g, mirs__bgraph *bg, int32_t t,
                                   const int32_t omap[MIRS__GRID], int32_t stored) {
  mirs_context *ctx = g->ctx;
  if (stored < -1 || stored > (int32_t)MIRS_F32)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "output: invalid dtype %" PRId32, stored);
  if (t < 0 || t >= bg->nt)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "output: %" PRId32 " is not a tensor of this block", t);
  const mirs__btensor *bt = &bg->t[t];
  if (!bt->post)
    return MIRS_FAIL(ctx, MIRS_SHAPE,
                     "output(%s): the value has not passed an accumulator; block outputs must be "
                     "complete (an accum* accumulator)",
                     bt->name);
  int nd = bt->shape.ndim;
  for (int i = 0; i < MIRS__GRID; i++) {
    int32_t d = omap[i];
    if (d < -1 || d >= nd)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "output(%s): omap for grid.%s is %" PRId32 "; want -1 or a dim in [0, %d)",
                       bt->name, grid_axis[i], d, nd);
    if (d == -1 && bg->grid[i] > 1)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "output(%s): grid.%s = %" PRId32 " but omap places it nowhere; blocks "
                       "would overwrite each other",
                       bt->name, grid_axis[i], bg->grid[i]);
    for (int j = 0; j < i; j++)
      if (d >= 0 && omap[j] == d)
        return MIRS_FAIL(ctx, MIRS_SHAPE,
                         "output(%s): grid.%s and grid.%s both place dim %" PRId32, bt->name,
                         grid_axis[j], grid_axis[i], d);
  }
  mirs__bop o = bop_blank(MIRS_OP_OUTPUT);
  o.nin = 1;
  o.in[0] = t;
  o.stored = stored;
  memcpy(o.omap, omap, sizeof o.omap);
  return bg_push(g, bg, &o, NULL, NULL, false, NULL);
}

/* Remove the last block op (and its result tensor). */
void mirs__bg_pop_op(mirs_context *ctx, mirs__bgraph *bg) {
  if (bg->nops == 0)
    return;
  mirs__bop *o = &bg->ops[bg->nops - 1];
  if (o->out >= 0 && ALWAYS(o->out == bg->nt - 1)) {
    mirs__core_free(ctx, bg->t[o->out].name);
    bg->nt--;
  }
  bg->nops--;
}

/* Shape of the kernel tensor an OUTPUT op writes (a dim past INT64_MAX
 * saturates, and the element limit then refuses the tensor). */
void mirs__bg_output_shape(const mirs__bgraph *bg, const mirs__bop *op, mirs__shape *out) {
  *out = bg->t[op->in[0]].shape;
  for (int i = 0; i < MIRS__GRID; i++)
    if (op->omap[i] >= 0) {
      int64_t *d = &out->d[op->omap[i]];
      *d = *d > INT64_MAX / bg->grid[i] ? INT64_MAX : *d * bg->grid[i];
    }
}

/* Attach a block graph as a custom kernel op (takes ownership of bg). */
mirs_status mirs__graph_add_custom(mirs_graph *g, mirs__bgraph *bg, const char *const *names,
                                   int32_t *first_out) {
  mirs_context *ctx = g->ctx;
  int32_t nin = 0, nout = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    if (bg->ops[i].op == MIRS_OP_INPUT)
      nin++;
    else if (bg->ops[i].op == MIRS_OP_OUTPUT)
      nout++;
  }
  mirs_status s = MIRS_OK;
  if (nin == 0)
    s = MIRS_FAIL(ctx, MIRS_SHAPE, "custom kernel has no input");
  else if (nout == 0)
    s = MIRS_FAIL(ctx, MIRS_SHAPE, "custom kernel has no output");
  if (s != MIRS_OK) {
    mirs__bg_free(ctx, bg);
    return s;
  }
  mirs__kop k = {.op = MIRS_OP_CUSTOM, .nin = nin, .nout = nout, .dim = -1, .bg = bg};
  k.in = mirs__core_alloc(ctx, sizeof(int32_t) * (size_t)nin);
  k.out = mirs__core_alloc(ctx, sizeof(int32_t) * (size_t)nout);
  if (!k.in || !k.out || reserve_op(g) != MIRS_OK) {
    kop_free(ctx, &k);
    return MIRS_NOMEM;
  }
  int32_t first = g->nt, ki = 0, ko = 0;
  mirs_dtype dtype = MIRS_F16;
  bool have_dtype = false;
  for (int32_t i = 0; i < bg->nops && s == MIRS_OK; i++) {
    mirs__bop *o = &bg->ops[i];
    if (o->op == MIRS_OP_INPUT) {
      k.in[ki++] = o->src;
      if (!have_dtype) {
        dtype = g->t[o->src].dtype;
        have_dtype = true;
      }
    } else if (o->op == MIRS_OP_OUTPUT) {
      /* An explicit dtype equal to the default is the default: one
       * spelling (printer) and one hash per graph. */
      if (o->stored == (int32_t)dtype)
        o->stored = -1;
      mirs__shape sh;
      mirs__bg_output_shape(bg, o, &sh);
      char *nm = NULL;
      s = check_shape(ctx, "custom kernel output", &sh);
      if (s == MIRS_OK)
        s = take_name(ctx, names ? names[ko] : NULL, "t", g->nt, g, find_k, &nm);
      if (s == MIRS_OK) {
        int32_t id;
        s = push_tensor(g, nm, o->stored >= 0 ? (mirs_dtype)o->stored : dtype, &sh, g->nops, ko,
                        &id);
        if (s != MIRS_OK)
          mirs__core_free(ctx, nm);
        else {
          o->dst = id;
          k.out[ko++] = id;
        }
      }
    }
  }
  if (s != MIRS_OK) {
    for (int32_t i = first; i < g->nt; i++)
      mirs__core_free(ctx, g->t[i].name);
    g->nt = first;
    kop_free(ctx, &k);
    return s;
  }
  g->ops[g->nops++] = k;
  MIRS_INC(&ctx->stats, ops_added);
  if (first_out)
    *first_out = first;
  return MIRS_OK;
}

/* ---------------------------------------------------------------- copy */

/* Deep copy of a block graph. */
mirs_status mirs__bg_clone(mirs_context *ctx, const mirs__bgraph *src, mirs__bgraph **out) {
  mirs__bgraph *bg = mirs__core_calloc(ctx, 1, sizeof *bg);
  if (!bg)
    return MIRS_NOMEM;
  memcpy(bg->grid, src->grid, sizeof bg->grid);
  memcpy(bg->block, src->block, sizeof bg->block);
  bg->forloop = src->forloop;
  bg->t = mirs__core_calloc(ctx, (size_t)src->nt + 1, sizeof *bg->t);
  bg->ops = mirs__core_alloc(ctx, ((size_t)src->nops + 1) * sizeof *bg->ops);
  if (!bg->t || !bg->ops) {
    mirs__bg_free(ctx, bg);
    return MIRS_NOMEM;
  }
  bg->capt = (size_t)src->nt + 1;
  bg->capops = (size_t)src->nops + 1;
  memcpy(bg->ops, src->ops, (size_t)src->nops * sizeof *bg->ops);
  bg->nops = src->nops;
  for (int32_t i = 0; i < src->nt; i++) {
    bg->t[i] = src->t[i];
    bg->t[i].name = mirs__core_strdup(ctx, src->t[i].name);
    bg->nt = i + 1;
    if (!bg->t[i].name) {
      bg->nt = i;
      mirs__bg_free(ctx, bg);
      return MIRS_NOMEM;
    }
  }
  *out = bg;
  return MIRS_OK;
}

/* Deep copy of a graph. */
mirs_status mirs__graph_clone(const mirs_graph *g, mirs_graph **out) {
  return mirs__graph_clone_in(g->ctx, g, out);
}

/* Deep copy of g owned by ctx. */
mirs_status mirs__graph_clone_in(mirs_context *ctx, const mirs_graph *g, mirs_graph **out) {
  *out = NULL;
  mirs_graph *c;
  MIRS_CHECK(ctx, mirs__graph_new(ctx, g->name, &c));
  c->ugraph = g->ugraph;
  mirs_status s = MIRS_OK;
  if (mirs__core_grow(ctx, (void **)&c->t, &c->capt, (size_t)g->nt + 1, sizeof *c->t) != MIRS_OK ||
      mirs__core_grow(ctx, (void **)&c->ops, &c->capops, (size_t)g->nops + 1, sizeof *c->ops) !=
          MIRS_OK ||
      mirs__core_grow(ctx, (void **)&c->outputs, &c->capout, (size_t)g->nout + 1,
                      sizeof *c->outputs) != MIRS_OK)
    s = MIRS_NOMEM;
  for (int32_t i = 0; s == MIRS_OK && i < g->nt; i++) {
    c->t[i] = g->t[i];
    c->t[i].name = mirs__core_strdup(ctx, g->t[i].name);
    if (!c->t[i].name)
      s = MIRS_NOMEM;
    else
      c->nt = i + 1;
  }
  for (int32_t i = 0; s == MIRS_OK && i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    mirs__kop n = *k;
    n.bg = NULL;
    n.in = mirs__core_alloc(ctx, sizeof(int32_t) * (size_t)(k->nin ? k->nin : 1));
    n.out = mirs__core_alloc(ctx, sizeof(int32_t) * (size_t)k->nout);
    if (n.in && n.out && (!k->bg || mirs__bg_clone(ctx, k->bg, &n.bg) == MIRS_OK)) {
      memcpy(n.in, k->in, sizeof(int32_t) * (size_t)k->nin);
      memcpy(n.out, k->out, sizeof(int32_t) * (size_t)k->nout);
      c->ops[c->nops++] = n;
    } else {
      kop_free(ctx, &n);
      s = MIRS_NOMEM;
    }
  }
  if (s != MIRS_OK) {
    mirs__graph_free(c);
    return MIRS_NOMEM;
  }
  if (g->nout > 0) /* (no outputs: g->outputs may be NULL) */
    memcpy(c->outputs, g->outputs, sizeof(int32_t) * (size_t)g->nout);
  c->nout = g->nout;
  *out = c;
  return MIRS_OK;
}

/* ---------------------------------------------------------------- structure */

/* True when bg's ops reference tensors in range with the ranks and
 * accumulator shapes the evaluators rely on; else false with the first
 * bad op index in *bad_op.  Graphs built by this file always pass; the
 * check protects evaluators from a corrupted graph. */
bool mirs__bg_well_formed(const mirs_graph *g, const mirs__bgraph *bg, int32_t *bad_op) {
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *op = &bg->ops[i];
    bool ok = (unsigned)op->op < MIRS_OP_COUNT;
    mirs__op_kind kind = ok ? mirs__graph_ops[op->op].kind : MIRS__KIND_CUSTOM;
    if (!ok || kind == MIRS__KIND_CUSTOM) {
      ok = false;
    } else if (kind == MIRS__KIND_INPUT) {
      ok = op->out >= 0 && op->out < bg->nt && op->src >= 0 && op->src < g->nt &&
           bg->t[op->out].shape.ndim == g->t[op->src].shape.ndim;
    } else {
      int need = mirs__graph_ops[op->op].arity;
      ok = op->nin == need && need >= 1 && need <= 2;
      for (int a = 0; ok && a < op->nin; a++)
        ok = op->in[a] >= 0 && op->in[a] < bg->nt;
      if (ok && kind == MIRS__KIND_OUTPUT)
        ok = op->dst >= 0 && op->dst < g->nt &&
             g->t[op->dst].shape.ndim == bg->t[op->in[0]].shape.ndim;
      else if (ok)
        ok = op->out >= 0 && op->out < bg->nt;
      if (ok && kind == MIRS__KIND_ACCUM) {
        const mirs__shape *xs = &bg->t[op->in[0]].shape, *ys = &bg->t[op->out].shape;
        int rd = op->op == MIRS_OP_ACCUM || op->op == MIRS_OP_ACCUM_ONLINE ? -1
                 : mirs__op_has_dim(op->op)                                  ? op->dim
                                                                             : xs->ndim - 1;
        ok = xs->ndim == ys->ndim && (rd == -1 || (rd >= 0 && rd < xs->ndim));
        for (int d = 0; ok && d < xs->ndim; d++)
          ok = ys->d[d] == (d == rd ? 1 : xs->d[d]);
        if (ok && op->op == MIRS_OP_ACCUM_ONLINE) { /* the shift broadcasts to y */
          const mirs__shape *ms = &bg->t[op->in[1]].shape;
          ok = ms->ndim == xs->ndim;
          for (int d = 0; ok && d < xs->ndim; d++)
            ok = ms->d[d] == 1 || ms->d[d] == xs->d[d];
        }
      }
      if (ok && kind == MIRS__KIND_REDUCE)
        ok = op->dim >= 0 && op->dim < bg->t[op->in[0]].shape.ndim;
    }
    if (!ok) {
      if (bad_op)
        *bad_op = i;
      return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- validation */

/* Check one custom kernel's block graph as a whole. */
static mirs_status validate_bg(mirs_context *ctx, const mirs_graph *g, int32_t kop,
                               const mirs__bgraph *bg) {
  const char *kname = g->t[g->ops[kop].out[0]].name;
  /* A loop no tile walks repeats the same work F times (F x the input for
   * an accum): no search proposes one, and F = 2^31 - 1 made eval run for
   * hours. */
  bool walked = bg->forloop == 1;
  for (int32_t i = 0; i < bg->nops && !walked; i++)
    walked = bg->ops[i].op == MIRS_OP_INPUT && bg->ops[i].fmap >= 0;
  if (!walked)
    return MIRS_FAIL(ctx, MIRS_SHAPE,
                     "custom kernel %s: forloop is %" PRId32 " but no input has an fmap (a loop "
                     "that walks no tile)",
                     kname, bg->forloop);
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (!o->fused)
      continue;
    const mirs__btensor *arg = &bg->t[o->in[0]];
    const mirs__bop *prod = &bg->ops[arg->producer];
    if (prod->op == MIRS_OP_INPUT)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "custom kernel %s: '%s' is fused, but its first argument '%s' is a loaded "
                       "tile, not the result of a block operator",
                       kname, bg->t[o->out].name, arg->name);
    if (arg->post != bg->t[o->out].post)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "custom kernel %s: '%s' is fused across the end of the forloop", kname,
                       bg->t[o->out].name);
    int consumers = 0;
    for (int32_t j = 0; j < bg->nops; j++)
      for (int a = 0; a < bg->ops[j].nin; a++)
        if (bg->ops[j].in[a] == o->in[0])
          consumers++;
    if (consumers != 1)
      return MIRS_FAIL(ctx, MIRS_SHAPE,
                       "custom kernel %s: '%s' is fused into '%s', which has %d consumers; a "
                       "fused chain needs its intermediate to have exactly one",
                       kname, bg->t[o->out].name, arg->name, consumers);
  }
  return MIRS_OK;
}

/* Check the whole graph. */
mirs_status mirs__graph_validate(const mirs_graph *g) {
  mirs_context *ctx = g->ctx;
  if (g->nout == 0)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "graph '%s' has no output", g->name);
  for (int32_t i = 0; i < g->nops; i++)
    if (g->ops[i].op == MIRS_OP_CUSTOM)
      MIRS_CHECK(ctx, validate_bg(ctx, g, i, g->ops[i].bg));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- work */

/* Saturating a + b and a * b for work counts. */
static uint64_t work_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static uint64_t work_mul(uint64_t a, uint64_t b) {
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Work of one op on shapes: the output's elements, times the contracted
 * extent for a matmul, plus the input's elements for a reduction. */
static uint64_t op_work(mirs_op op, const mirs__shape *in0, const mirs__shape *out) {
  uint64_t w = (uint64_t)mirs__shape_numel(out);
  if (op == MIRS_OP_MATMUL && in0 && in0->ndim > 0)
    w = work_mul(w, (uint64_t)in0->d[in0->ndim - 1]);
  else if (in0)
    w = work_add(w, (uint64_t)mirs__shape_numel(in0));
  return w;
}

/* Estimated work of evaluating g once (see eval_max_work), saturating. */
uint64_t mirs__graph_work(const mirs_graph *g) {
  uint64_t total = 0;
  for (int32_t i = 0; i < g->nt; i++)
    if (g->t[i].producer < 0)
      total = work_add(total, (uint64_t)mirs__shape_numel(&g->t[i].shape));
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (k->op != MIRS_OP_CUSTOM) {
      total = work_add(total, op_work(k->op, k->nin > 0 ? &g->t[k->in[0]].shape : NULL,
                                      &g->t[k->out[0]].shape));
      continue;
    }
    const mirs__bgraph *bg = k->bg;
    uint64_t per = 0; /* one block, one iteration */
    for (int32_t j = 0; j < bg->nops; j++) {
      const mirs__bop *o = &bg->ops[j];
      const mirs__shape *in0 = o->nin > 0 && o->in[0] >= 0 ? &bg->t[o->in[0]].shape : NULL;
      const mirs__shape *out = o->out >= 0 ? &bg->t[o->out].shape : in0;
      if (out)
        per = work_add(per, op_work(o->op, in0, out));
    }
    uint64_t blocks = (uint64_t)bg->grid[0] * (uint64_t)bg->grid[1] * (uint64_t)bg->grid[2];
    total = work_add(total, work_mul(work_mul(per, blocks), (uint64_t)bg->forloop));
  }
  return total;
}

/* Operator spelling. */
const char *mirs_op_name(mirs_op op) {
  return (unsigned)op < MIRS_OP_COUNT ? mirs__graph_ops[op].name : NULL;
}

/* Operator by spelling. */
mirs_status mirs_op_lookup(const char *name, mirs_op *out) {
  if (!name || !out)
    return MIRS_INVALID_ARG;
  for (int i = 0; i < MIRS_OP_COUNT; i++)
    if (!strcmp(mirs__graph_ops[i].name, name)) {
      *out = (mirs_op)i;
      return MIRS_OK;
    }
  return MIRS_NOT_FOUND;
}

/* dtype spelling. */
const char *mirs_dtype_name(mirs_dtype t) {
  switch (t) {
  case MIRS_F16:
    return "f16";
  case MIRS_BF16:
    return "bf16";
  case MIRS_F32:
    return "f32";
  }
  return "?";
}

/* ---------------------------------------------------------------- constants */

int mirs__op_nconst(mirs_op op) {
  switch (op) {
  case MIRS_OP_CLAMP:
    return 2;
  case MIRS_OP_POW:
  case MIRS_OP_ADD_SCALAR:
  case MIRS_OP_MUL_SCALAR:
  case MIRS_OP_DIV_SCALAR:
  case MIRS_OP_RSUB_SCALAR:
  case MIRS_OP_RDIV_SCALAR:
    return 1;
  default:
    return 0;
  }
}

int mirs__scalar_parse(const char *s, size_t len, mirs__scalar *out) {
  const char *end = s + len;
  bool neg = s < end && *s == '-';
  s += neg;
  int64_t m = 0, e = 0;
  int digits = 0, seen = 0;
  bool frac = false;
  for (; s < end && ((*s >= '0' && *s <= '9') || (*s == '.' && !frac)); s++) {
    if (*s == '.') {
      frac = true;
      continue;
    }
    seen++;
    if (digits > 0 || *s != '0') {
      if (++digits > 18)
        return 1;
      m = m * 10 + (*s - '0');
    }
    if (frac)
      e--;
  }
  if (seen == 0)
    return 3;
  if (s < end) { /* the exponent */
    if (*s != 'e' && *s != 'E')
      return 3;
    s++;
    bool eneg = s < end && *s == '-';
    if (s < end && (*s == '+' || *s == '-'))
      s++;
    if (s == end)
      return 3;
    int64_t x = 0;
    for (; s < end; s++) {
      if (*s < '0' || *s > '9')
        return 3;
      if (x < 100000)
        x = x * 10 + (*s - '0');
    }
    e += eneg ? -x : x;
  }
  if (e < -MIRS__SCALAR_EXP_MAX - 18 || e > MIRS__SCALAR_EXP_MAX ||
      !mirs__scalar_make(neg ? -m : m, (int32_t)e, out) || out->v != out->v || out->v * 0 != 0)
    return 2;
  return 0;
}

bool mirs__scalar_make(int64_t m, int32_t e, mirs__scalar *out) {
  while (m != 0 && m % 10 == 0 && e < MIRS__SCALAR_EXP_MAX) {
    m /= 10;
    e++;
  }
  if (m == 0)
    e = 0;
  if (e > MIRS__SCALAR_EXP_MAX || e < -MIRS__SCALAR_EXP_MAX)
    return false;
  out->m = m;
  out->e = e;
  char buf[64];
  /* strtod of the exact decimal: the correctly rounded double. */
  out->v = strtod(mirs__scalar_str(out, buf, sizeof buf), NULL);
  return true;
}

bool mirs__scalar_of_double(double v, mirs__scalar *out) {
  if (!isfinite(v))
    return false;
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  return mirs__scalar_parse(buf, strlen(buf), out) == 0;
}

const char *mirs__scalar_str(const mirs__scalar *c, char *buf, size_t size) {
  char dig[32];
  uint64_t mag = c->m < 0 ? (uint64_t)0 - (uint64_t)c->m : (uint64_t)c->m;
  snprintf(dig, sizeof dig, "%" PRIu64, mag);
  int nd = (int)strlen(dig);
  const char *sign = c->m < 0 ? "-" : "";
  if (c->e >= 0 && c->e <= 6)
    snprintf(buf, size, "%s%s%.*s", sign, dig, (int)c->e, "000000");
  else if (c->e < 0 && -c->e < nd)
    snprintf(buf, size, "%s%.*s.%s", sign, nd + (int)c->e, dig, dig + nd + c->e);
  else if (c->e < 0 && -c->e - nd <= 6)
    snprintf(buf, size, "%s0.%.*s%s", sign, -(int)c->e - nd, "000000", dig);
  else
    snprintf(buf, size, "%s%se%d", sign, dig, (int)c->e);
  return buf;
}

bool mirs__scalar_uint(const mirs__scalar *c, int64_t max, int64_t *n) {
  if (c->m < 0 || c->e < 0 || c->e > 18)
    return false;
  int64_t v = c->m;
  for (int32_t i = 0; i < c->e; i++) {
    if (v > max / 10)
      return false;
    v *= 10;
  }
  if (v > max)
    return false;
  *n = v;
  return true;
}

uint64_t mirs__op_const_hash(mirs_op op, const mirs__scalar *c) {
  uint64_t h = 0;
  for (int i = 0; i < mirs__op_nconst(op); i++)
    h = mirs__hash_mix(mirs__hash_mix(h ^ 0x5ca1a4, (uint64_t)c[i].m), (uint64_t)(int64_t)c[i].e);
  return h;
}
