/* SPDX-License-Identifier: MIT */
/* src/search/space.c - the move space: which moves a search state has, in
 * a deterministic order (the index of a move in this list is what a path
 * records), and the cheap static filters applied while listing them.
 *
 * Filters (each sound for what the search looks for, each an option):
 *  - limits: max kernel ops, custom kernels, block ops (INPUT and OUTPUT
 *    ops count), input tiles and outputs per custom kernel; a block op is
 *    listed only if the ops left can still consume every unconsumed tile
 *    and close the kernel;
 *  - canonical order (option canonical): a new op must consume the
 *    previous op's result or have a larger key (op, dim, operands, new
 *    tiles) than it.  Picking, among the ready ops, the one with the
 *    smallest key yields an accepted order for every graph, so no graph is
 *    lost, and most permutations of independent ops are never built;
 *    identical ops on identical operands are never added twice.  Keys
 *    hold tensor ids, which depend on the order ops were added, so
 *    nothing else may: commutative ops (add, mul) are listed with both
 *    operand orders (an id-ordered "first operand created first" rule
 *    would make add(a, b) versus add(b, a) depend on which of two
 *    independent producers canonical order puts first, losing graphs);
 *  - divisibility: grid sizes and forloop ranges must divide some tensor
 *    dim, imaps and fmaps must divide their dims exactly;
 *  - tile analysis (option tile_check): every tile dim is tagged with what
 *    it covers of its tensor's dim (all of it, grid dim g's slice, the
 *    forloop iteration's slice) and every per-iteration value with its
 *    forloop dependence (invariant, slice, partial sum).  An op whose
 *    operands' dims do not line up (different slices combined, a
 *    contraction or reduction over a grid slice, which no block could
 *    complete), a non-linear op or a mismatched sum on a partial sum, or an
 *    accumulator of a value that would not add up to a complete result, is
 *    not listed.  A block output then has exactly one omap: grid dim g
 *    places the dim tagged with g's slice.
 * Everything else (operator semantics, abstract-expression pruning,
 * fingerprints) is checked when a move is applied (search.c). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "search/search.h"

/* ---------------------------------------------------------------- options */

/* Parse an integer list option into out (int32) with a clear error. */
static mirs_status parse_list(mirs_context *ctx, const char *name, const char *text, int64_t lo,
                              int64_t hi, int32_t *out, int *n) {
  int64_t tmp[MIRS__SEARCH_MAX_LIST];
  char why[160];
  if (!mirs__core_parse_int_list(text, lo, hi, tmp, MIRS__SEARCH_MAX_LIST, n, why, sizeof why))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s' %s", name, why);
  for (int i = 0; i < *n; i++)
    out[i] = (int32_t)tmp[i];
  return MIRS_OK;
}

/* Whether v is one of l[0..n). */
static bool in_list(const int32_t *l, int n, int32_t v) {
  for (int i = 0; i < n; i++)
    if (l[i] == v)
      return true;
  return false;
}

/* Grid.x sizes from the program's dims (see search.h). */
void mirs__search_space_dim_grids(mirs__search_space *sp, const mirs_graph *program) {
  int32_t top = 0;
  for (int i = 0; i < sp->ngx; i++)
    if (sp->gx[i] > top)
      top = sp->gx[i];
  for (;;) { /* the smallest size not listed yet, until none is left */
    int32_t best = INT32_MAX;
    for (int32_t t = 0; t < program->nt; t++)
      for (int d = 0; d < program->t[t].shape.ndim; d++)
        for (int64_t v = program->t[t].shape.d[d]; v >= 1; v /= 2) {
          if (v <= top && v < best && !in_list(sp->gx, sp->ngx, (int32_t)v))
            best = (int32_t)v;
          if (v % 2)
            break;
        }
    if (best == INT32_MAX || sp->ngx >= MIRS__SEARCH_MAX_LIST)
      return;
    sp->gx[sp->ngx++] = best;
  }
}

/* Parse a comma-separated operator list into set (ops allowed at level). */
static mirs_status parse_ops(mirs_context *ctx, const char *name, const char *text, int level,
                             bool *set) {
  memset(set, 0, sizeof(bool) * MIRS_OP_COUNT);
  if (!strcmp(text, "none"))
    return MIRS_OK;
  if (!text[strspn(text, " ,")])
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "option '%s' is empty (list operators, or say \"none\")", name);
  const char *p = text;
  while (*p) {
    while (*p == ' ' || *p == ',')
      p++;
    if (!*p)
      break;
    char word[32];
    size_t k = 0;
    while (*p && *p != ',' && *p != ' ') {
      if (k + 1 < sizeof word)
        word[k++] = *p;
      p++;
    }
    word[k] = '\0';
    mirs_op op;
    if (mirs_op_lookup(word, &op) != MIRS_OK || op == MIRS_OP_CUSTOM || op == MIRS_OP_INPUT ||
        op == MIRS_OP_OUTPUT || !(mirs__graph_ops[op].levels & level))
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "option '%s': '%s' is not a %s-level operator (want names like matmul, "
                       "exp, sum%s)",
                       name, word, level == MIRS_LEVEL_K ? "kernel" : "block",
                       level == MIRS_LEVEL_B ? ", accum" : "");
    set[op] = true;
  }
  return MIRS_OK;
}

/* Parse the search options of ctx into sp. */
mirs_status mirs__search_space_parse(mirs_context *ctx, mirs__search_space *sp) {
  const mirs__options *o = &ctx->opt;
  memset(sp, 0, sizeof *sp);
  sp->max_kops = (int)o->max_kernel_ops;
  sp->max_bops = (int)o->max_block_ops;
  sp->max_custom = (int)o->max_custom_kernels;
  sp->max_cin = (int)o->max_custom_inputs;
  sp->max_cin_after = (int)(o->max_custom_inputs_after_ops < o->max_custom_inputs
                                ? o->max_custom_inputs_after_ops
                                : o->max_custom_inputs);
  sp->mid_grid_dims = (int)o->mid_grid_dims;
  sp->mid_bops = (int)(o->mid_block_ops < o->max_block_ops ? o->mid_block_ops : o->max_block_ops);
  sp->max_cout = (int)(o->max_custom_outputs < MIRS__SEARCH_MAX_COUT ? o->max_custom_outputs
                                                                     : MIRS__SEARCH_MAX_COUT);
  sp->fusion = (int)o->fusion;
  sp->canonical = o->canonical != 0;
  sp->tile_check = o->tile_check != 0;
  sp->phase_canonical = o->phase_canonical != 0;
  sp->final_grid = o->final_grid != 0;
  sp->grid_order = o->grid_order != 0;
  sp->bounds = o->prune != 0;
  sp->constant_ops = o->constant_ops != 0;
  sp->index_check = o->index_check != 0;
  sp->reuse_kops = o->reuse_kernel_ops != 0;
  /* Multiplicities hold in the model of the abstract expressions (a
   * denominator never cancels), so they bound only with prune on. */
  sp->index_degree = o->index_degree != 0 && o->prune != 0;
  MIRS_CHECK(ctx, parse_list(ctx, "grid_x", o->grid_x, 1, 65535, sp->gx, &sp->ngx));
  MIRS_CHECK(ctx, parse_list(ctx, "grid_y", o->grid_y, 1, 65535, sp->gy, &sp->ngy));
  MIRS_CHECK(ctx, parse_list(ctx, "grid_z", o->grid_z, 1, 65535, sp->gz, &sp->ngz));
  MIRS_CHECK(ctx, parse_list(ctx, "block_dims", o->block_dims, 1, 1024, sp->blocks, &sp->nblocks));
  MIRS_CHECK(ctx, parse_list(ctx, "forloop_ranges", o->forloop_ranges, 1, 1048576, sp->franges,
                             &sp->nfranges));
  int32_t l[MIRS__SEARCH_MAX_LIST];
  int n;
  MIRS_CHECK(ctx, parse_list(ctx, "imap_dims", o->imap_dims, -1, MIRS_MAX_DIMS - 1, l, &n));
  for (int i = 0; i < n; i++)
    sp->imap_ok[l[i] + 1] = true;
  MIRS_CHECK(ctx, parse_list(ctx, "fmap_dims", o->fmap_dims, -1, MIRS_MAX_DIMS - 1, l, &n));
  for (int i = 0; i < n; i++)
    sp->fmap_ok[l[i] + 1] = true;
  MIRS_CHECK(ctx, parse_list(ctx, "omap_dims", o->omap_dims, 0, MIRS_MAX_DIMS - 1, l, &n));
  for (int i = 0; i < n; i++)
    sp->omap_ok[l[i]] = true;
  MIRS_CHECK(ctx, parse_ops(ctx, "kernel_ops", o->kernel_ops, MIRS_LEVEL_K, sp->kop));
  MIRS_CHECK(ctx, parse_ops(ctx, "block_ops", o->block_ops, MIRS_LEVEL_B, sp->bop));
  return MIRS_OK;
}

/* Budget class of op. */
int mirs__search_op_class(mirs_op op) {
  switch (op) {
  case MIRS_OP_ACCUM:
  case MIRS_OP_INPUT:
  case MIRS_OP_OUTPUT:
  case MIRS_OP_CUSTOM:
    return -1;
  case MIRS_OP_ACCUM_SUM:
    return MIRS_OP_SUM;
  case MIRS_OP_ACCUM_MAX:
    return MIRS_OP_MAX;
  case MIRS_OP_ACCUM_MIN:
    return MIRS_OP_MIN;
  case MIRS_OP_ACCUM_ONLINE: /* (offered only with a max: see below) */
    return -1;
  case MIRS_OP_ACCUM_RMS:
    return MIRS_OP_RMS_NORM;
  default:
    return (int)op;
  }
}

/* Budget class of block op `op` on operands in[] of bg: as
 * mirs__search_op_class, except that a div by an accum_rms result is the
 * rest of an rms_norm (x / rms(x) made explicit, counted by its
 * accum_rms) and has no class. */
int mirs__search_bop_class(const mirs__bgraph *bg, mirs_op op, int nin, const int32_t *in) {
  if (op == MIRS_OP_DIV && nin == 2 && in[1] >= 0 && in[1] < bg->nt &&
      bg->ops[bg->t[in[1]].producer].op == MIRS_OP_ACCUM_RMS)
    return -1;
  return mirs__search_op_class(op);
}

int mirs__search_op_dim(const mirs__search_space *sp, mirs_op op, int dim, const mirs__scalar *c) {
  int n = mirs__op_nconst(op);
  if (n == 0)
    return dim;
  for (int i = 0; i < sp->ncst; i++)
    if (sp->cst_op[i] == op && !memcmp(sp->cst[i], c, sizeof(mirs__scalar) * (size_t)n))
      return i;
  return MIRS__SEARCH_MAX_CST; /* (not the program's: no move makes it) */
}

/* Record op (with constants c) of the program: the ops added since the
 * LAX core are tried only when the program uses them, with its constants;
 * never the layout ops (reshape, permute: library calls, no moves). */
static void space_note_op(mirs__search_space *sp, mirs_op op, const mirs__scalar *c) {
  if (op >= MIRS_OP_NEG && !mirs__op_is_layout(op)) {
    sp->kop[op] = true;
    sp->bop[op] = true;
  }
  int n = mirs__op_nconst(op);
  if (n == 0 || sp->ncst >= MIRS__SEARCH_MAX_CST ||
      mirs__search_op_dim(sp, op, -1, c) < MIRS__SEARCH_MAX_CST)
    return;
  sp->cst_op[sp->ncst] = (uint8_t)op;
  memset(sp->cst[sp->ncst], 0, sizeof sp->cst[sp->ncst]);
  memcpy(sp->cst[sp->ncst], c, sizeof(mirs__scalar) * (size_t)n);
  sp->ncst++;
}

/* Whether kernel tensor t of g is max-shifted: sub(x, m) with m a max. */
static bool kernel_shifted(const mirs_graph *g, int32_t t) {
  int32_t p = g->t[t].producer;
  if (p < 0 || g->ops[p].op != MIRS_OP_SUB)
    return false;
  int32_t q = g->t[g->ops[p].in[1]].producer;
  return q >= 0 && g->ops[q].op == MIRS_OP_MAX;
}

/* Whether block tensor t of bg (in g) is max-shifted: sub(x, m) with m a
 * block max, an accum_max or a tile of a kernel max; or a tile of a
 * max-shifted kernel tensor. */
static bool block_shifted(const mirs_graph *g, const mirs__bgraph *bg, int32_t t) {
  const mirs__bop *o = &bg->ops[bg->t[t].producer];
  if (o->op == MIRS_OP_INPUT)
    return kernel_shifted(g, o->src);
  if (o->op != MIRS_OP_SUB)
    return false;
  const mirs__bop *m = &bg->ops[bg->t[o->in[1]].producer];
  if (m->op == MIRS_OP_INPUT) {
    int32_t q = g->t[m->src].producer;
    return q >= 0 && g->ops[q].op == MIRS_OP_MAX;
  }
  return m->op == MIRS_OP_MAX || m->op == MIRS_OP_ACCUM_MAX;
}

/* Whether every exp of program g takes a max-shifted argument (and it has
 * one): then the program cannot overflow where an unshifted exp would, and
 * no candidate may have an unshifted exp (a space rule, docs/SEARCH.md). */
static bool program_safe_exp(const mirs_graph *g) {
  int nexp = 0;
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (k->op == MIRS_OP_EXP && !kernel_shifted(g, k->in[0]))
      return false;
    nexp += k->op == MIRS_OP_EXP;
    for (int32_t j = 0; k->op == MIRS_OP_CUSTOM && j < k->bg->nops; j++) {
      const mirs__bop *o = &k->bg->ops[j];
      if (o->op == MIRS_OP_EXP && !block_shifted(g, k->bg, o->in[0]))
        return false;
      nexp += o->op == MIRS_OP_EXP;
    }
  }
  return nexp > 0;
}

/* Set the operator budget from the program (slack < 0: no budget) and
 * allow constant ops when the program has one. */
void mirs__search_space_budget(mirs__search_space *sp, const mirs_graph *program, int64_t slack) {
  sp->eps = 0.0;
  sp->reload = false;
  sp->ncst = 0;
  for (int32_t i = 0; i < program->nops; i++) {
    const mirs__kop *k = &program->ops[i];
    if (k->op != MIRS_OP_CUSTOM)
      space_note_op(sp, k->op, k->cst);
    for (int32_t j = 0; k->bg && j < k->bg->nops; j++)
      space_note_op(sp, k->bg->ops[j].op, k->bg->ops[j].cst);
  }
  for (int32_t i = program->nops - 1; i >= 0; i--) {
    const mirs__kop *k = &program->ops[i];
    if (k->op == MIRS_OP_MEAN || k->op == MIRS_OP_LAYER_NORM) /* offered when, and only */
      sp->reload = sp->bop[MIRS_OP_MEAN] = sp->bop[MIRS_OP_LAYER_NORM] = true; /* when, needed */
    if ((k->op == MIRS_OP_SUB || k->op == MIRS_OP_DIV) && k->in[0] == k->in[1])
      sp->constant_ops = true; /* the program needs a constant */
    if (mirs__op_has_eps(k->op) && (k->op == MIRS_OP_LAYER_NORM || k->eps != 0.0))
      sp->eps = k->eps; /* (an rms_norm without eps leaves a layer_norm's) */
    bool mask = k->op == MIRS_OP_CAUSAL_MASK;
    for (int32_t j = 0; k->op == MIRS_OP_CUSTOM && j < k->bg->nops; j++)
      mask = mask || k->bg->ops[j].op == MIRS_OP_CAUSAL_MASK;
    if (mask) /* offered at both levels when, and only when, the program masks */
      sp->kop[MIRS_OP_CAUSAL_MASK] = sp->bop[MIRS_OP_CAUSAL_MASK] = true;
  }
  /* max and its accumulators only where the program takes a max (an
   * online softmax needs the max to shift by). */
  bool has_max = false;
  for (int32_t i = 0; i < program->nops; i++) {
    const mirs__bgraph *bg = program->ops[i].bg;
    has_max = has_max || program->ops[i].op == MIRS_OP_MAX;
    for (int32_t j = 0; bg && j < bg->nops; j++)
      has_max = has_max || bg->ops[j].op == MIRS_OP_MAX || bg->ops[j].op == MIRS_OP_ACCUM_MAX;
  }
  if (!has_max)
    sp->kop[MIRS_OP_MAX] = sp->bop[MIRS_OP_MAX] = sp->bop[MIRS_OP_ACCUM_MAX] =
        sp->bop[MIRS_OP_ACCUM_ONLINE] = false;
  sp->safe_exp = has_max && program_safe_exp(program);
  /* min and its accumulator where the program takes a min (space_note_op
   * noted it at the levels it appears at); accum_min is block-level only. */
  if (sp->bop[MIRS_OP_MIN] || sp->bop[MIRS_OP_ACCUM_MIN])
    sp->kop[MIRS_OP_MIN] = sp->bop[MIRS_OP_MIN] = sp->bop[MIRS_OP_ACCUM_MIN] = true;
  sp->kop[MIRS_OP_ACCUM_MIN] = false;
  for (int i = 0; i < MIRS_OP_COUNT; i++)
    sp->budget[i] = slack < 0 ? INT32_MAX : (int32_t)slack;
  if (slack < 0)
    return;
  for (int32_t i = 0; i < program->nops; i++) {
    mirs_op op = program->ops[i].op;
    if (op == MIRS_OP_CUSTOM) { /* a µGraph as program: count its block ops */
      const mirs__bgraph *bg = program->ops[i].bg;
      for (int32_t j = 0; j < bg->nops; j++) {
        int c = mirs__search_bop_class(bg, bg->ops[j].op, bg->ops[j].nin, bg->ops[j].in);
        if (c >= 0)
          sp->budget[c]++;
      }
      continue;
    }
    sp->budget[mirs__search_op_class(op)]++;
  }
}

/* Whether one more op of op's class fits the budget. */
static bool within_budget(const mirs__search_worker *w, mirs_op op) {
  int c = mirs__search_op_class(op);
  return c < 0 || w->opcount[c] < w->s->space.budget[c];
}

/* ---------------------------------------------------------------- tile analysis */

/* Tile shape of load l of kernel tensor shape ks under bg's grid/forloop. */
static void load_shape(const mirs__bgraph *bg, const mirs__shape *ks, const mirs__search_load *l,
                       mirs__shape *out) {
  *out = *ks;
  for (int g = 0; g < MIRS__GRID; g++)
    if (l->imap[g] >= 0)
      out->d[l->imap[g]] /= bg->grid[g];
  if (l->fmap >= 0)
    out->d[l->fmap] /= bg->forloop;
}

/* Tile analysis of a new input tile. */
void mirs__search_load_info(const mirs__bgraph *bg, const mirs__search_load *l, const int8_t *klab,
                            uint64_t atoms, const uint64_t *kdeg, mirs__search_btinfo *out) {
  memset(out, 0, sizeof *out);
  memcpy(out->lab, klab, sizeof out->lab);
  memcpy(out->deg, kdeg, sizeof out->deg);
  out->atoms = atoms;
  for (int a = 0; a < MIRS__GRID; a++)
    if (l->imap[a] >= 0 && bg->grid[a] > 1)
      out->tag[l->imap[a]] = (int8_t)(MIRS__TAG_GX + a);
  if (l->fmap >= 0 && bg->forloop > 1) {
    out->tag[l->fmap] = MIRS__TAG_F;
    out->fdep = MIRS__FDEP_SLICE;
  }
}

/* Merge the tags of two aligned dims (sizes sa, sb); -1 if they cannot line up. */
static int merge_tag(int ta, int64_t sa, int tb, int64_t sb) {
  if (ta == tb)
    return ta;
  if (ta == MIRS__TAG_FULL && sa == 1)
    return tb;
  if (tb == MIRS__TAG_FULL && sb == 1)
    return ta;
  return -1;
}

/* True if any dim of info (rank nd) other than skip carries tag t. */
static bool has_tag(const mirs__search_btinfo *x, int nd, int skip, int t) {
  for (int d = 0; d < nd; d++)
    if (d != skip && x->tag[d] == t)
      return true;
  return false;
}

/* Tile analysis of op; false when the tiles cannot line up.  out always
 * receives a best-effort analysis (used when tile_check is off). */
bool mirs__search_tile_rule(const mirs__bgraph *bg, mirs_op op, int dim, int nin,
                            const mirs__search_btinfo *in, const mirs__shape *sh,
                            mirs__search_btinfo *out) {
  memset(out, 0, sizeof *out);
  int nd = sh[0].ndim;
  bool ok = true;
  bool partial = false;
  uint8_t f0 = in[0].fdep, f1 = nin > 1 ? in[1].fdep : MIRS__FDEP_INV;
  /* A tile max (PMAX) only shifts (add, sub), feeds another max or is the
   * shift of an online accumulator; a max never reduces a partial sum. */
  bool pm = f0 == MIRS__FDEP_PMAX || f1 == MIRS__FDEP_PMAX;
  if (pm && op != MIRS_OP_ADD && op != MIRS_OP_SUB && op != MIRS_OP_MAX &&
      op != MIRS_OP_ACCUM_MAX && !(op == MIRS_OP_ACCUM_ONLINE && f0 != MIRS__FDEP_PMAX))
    ok = false;
  if ((op == MIRS_OP_MAX || op == MIRS_OP_ACCUM_MAX || op == MIRS_OP_MIN ||
       op == MIRS_OP_ACCUM_MIN) && f0 == MIRS__FDEP_PARTIAL)
    ok = false;
  if (op == MIRS_OP_ACCUM_ONLINE && bg->forloop > 1 &&
      (f0 != MIRS__FDEP_PARTIAL || f1 != MIRS__FDEP_PMAX))
    ok = false;
  if (pm && (f0 == MIRS__FDEP_PARTIAL || f1 == MIRS__FDEP_PARTIAL) && op != MIRS_OP_ACCUM_ONLINE)
    ok = false;
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_TRANSPOSE:
    *out = in[0];
    out->tag[nd - 2] = in[0].tag[nd - 1];
    out->tag[nd - 1] = in[0].tag[nd - 2];
    if (f0 == MIRS__FDEP_PARTIAL)
      ok = false;
    break;
  case MIRS__KIND_UNARY:
  case MIRS__KIND_RMSNORM:
    *out = in[0];
    if (f0 == MIRS__FDEP_PARTIAL)
      ok = false;
    if (mirs__graph_ops[op].kind == MIRS__KIND_RMSNORM && in[0].tag[nd - 1] != MIRS__TAG_FULL)
      ok = false;
    break;
  case MIRS__KIND_BINARY: {
    for (int d = 0; d < nd; d++) {
      int t = merge_tag(in[0].tag[d], sh[0].d[d], in[1].tag[d], sh[1].d[d]);
      if (t < 0) {
        ok = false;
        t = in[0].tag[d];
      }
      out->tag[d] = (int8_t)t;
    }
    bool p0 = f0 == MIRS__FDEP_PARTIAL, p1 = f1 == MIRS__FDEP_PARTIAL;
    if (op == MIRS_OP_ADD || op == MIRS_OP_SUB) {
      if (p0 != p1)
        ok = false; /* part of a sum plus a whole value */
      partial = p0 && p1;
    } else if (op == MIRS_OP_MUL) {
      if (p0 && p1)
        ok = false;
      if ((p0 && f1 != MIRS__FDEP_INV) || (p1 && f0 != MIRS__FDEP_INV))
        ok = false;
      partial = p0 || p1;
    } else { /* DIV: a partial sum may be scaled by an invariant */
      if (p1 || (p0 && f1 != MIRS__FDEP_INV))
        ok = false;
      partial = p0;
    }
    break;
  }
  case MIRS__KIND_MATMUL: {
    for (int d = 0; d < nd - 2; d++) {
      int t = merge_tag(in[0].tag[d], sh[0].d[d], in[1].tag[d], sh[1].d[d]);
      if (t < 0) {
        ok = false;
        t = in[0].tag[d];
      }
      out->tag[d] = (int8_t)t;
    }
    int ka = in[0].tag[nd - 1], kb = in[1].tag[nd - 2];
    out->tag[nd - 2] = in[0].tag[nd - 2];
    out->tag[nd - 1] = in[1].tag[nd - 1];
    if (ka != kb || (ka != MIRS__TAG_FULL && ka != MIRS__TAG_F))
      ok = false; /* mismatched slices, or a contraction over a grid slice */
    bool p0 = f0 == MIRS__FDEP_PARTIAL, p1 = f1 == MIRS__FDEP_PARTIAL;
    if (ka == MIRS__TAG_F) {
      if (p0 || p1 || has_tag(out, nd, -1, MIRS__TAG_F))
        ok = false;
      partial = true;
    } else {
      if ((p0 && f1 != MIRS__FDEP_INV) || (p1 && f0 != MIRS__FDEP_INV))
        ok = false;
      partial = p0 || p1;
    }
    break;
  }
  case MIRS__KIND_REDUCE:
    *out = in[0];
    out->tag[dim] = MIRS__TAG_FULL;
    if (in[0].tag[dim] == MIRS__TAG_F) {
      /* (a mean over one iteration's slice is no part of the row's mean) */
      if (f0 == MIRS__FDEP_PARTIAL || has_tag(in, nd, dim, MIRS__TAG_F) || op == MIRS_OP_MEAN)
        ok = false;
      if (op == MIRS_OP_MIN) /* (a min over the loop is accum_min's, whole) */
        ok = false;
      if (op == MIRS_OP_MAX) { /* the tile's part of a max over the loop */
        for (int d = 0; d < nd; d++)
          if (d != dim && out->tag[d] != MIRS__TAG_FULL && out->tag[d] == out->tag[dim])
            ok = false;
        out->fdep = MIRS__FDEP_PMAX;
        out->uses = 0;
        return ok;
      }
      partial = true;
    } else if (in[0].tag[dim] != MIRS__TAG_FULL) {
      ok = false;
    } else {
      partial = f0 == MIRS__FDEP_PARTIAL;
    }
    break;
  case MIRS__KIND_ACCUM:
    *out = in[0];
    if (op == MIRS_OP_ACCUM || op == MIRS_OP_ACCUM_ONLINE) {
      if (f0 == MIRS__FDEP_SLICE || (f0 == MIRS__FDEP_INV && bg->forloop > 1))
        ok = false;
    } else {
      int d = op == MIRS_OP_ACCUM_RMS ? nd - 1 : dim;
      if (in[0].tag[d] != MIRS__TAG_FULL && in[0].tag[d] != MIRS__TAG_F)
        ok = false;
      if (f0 == MIRS__FDEP_SLICE && has_tag(in, nd, d, MIRS__TAG_F))
        ok = false;
      if (op == MIRS_OP_ACCUM_RMS && f0 == MIRS__FDEP_PARTIAL)
        ok = false;
      if ((op == MIRS_OP_ACCUM_SUM || op == MIRS_OP_ACCUM_MAX || op == MIRS_OP_ACCUM_MIN) &&
          f0 == MIRS__FDEP_INV && bg->forloop > 1)
        ok = false;
      out->tag[d] = MIRS__TAG_FULL;
    }
    for (int d = 0; d < nd; d++)
      if (out->tag[d] == MIRS__TAG_F)
        out->tag[d] = MIRS__TAG_FULL;
    out->fdep = MIRS__FDEP_INV;
    out->uses = 0;
    return ok;
  default:
    return false;
  }
  /* A grid slice on two dims of one value would be a diagonal block. */
  for (int d = 0; d < nd; d++)
    for (int e = d + 1; e < nd; e++)
      if (out->tag[d] != MIRS__TAG_FULL && out->tag[d] == out->tag[e])
        ok = false;
  out->fdep = partial                             ? MIRS__FDEP_PARTIAL
              : has_tag(out, nd, -1, MIRS__TAG_F) ? MIRS__FDEP_SLICE
              : pm                                ? MIRS__FDEP_PMAX /* (a shifted tile max) */
                                                  : MIRS__FDEP_INV;
  out->uses = 0;
  return ok;
}

/* ---------------------------------------------------------------- helpers */

/* Append m to w's move arena. */
static mirs_status push_move(mirs__search_worker *w, const mirs__search_move *m) {
  if (w->nmoves >= w->capmoves)
    MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->moves, &w->capmoves, w->nmoves + 1,
                                       sizeof *w->moves));
  w->moves[w->nmoves++] = *m;
  MIRS_INC(&w->stats, moves_generated);
  return MIRS_OK;
}

/* A zeroed move of kind k (padding included, so moves compare bytewise). */
static void move_init(mirs__search_move *m, int kind) {
  memset(m, 0, sizeof *m);
  m->kind = (uint8_t)kind;
  m->dim = -1;
  m->in[0] = m->in[1] = -1;
}

/* Lexicographic compare of two integer sequences, shorter first on a tie. */
static int seq_cmp(const int32_t *a, int na, const int32_t *b, int nb) {
  for (int i = 0; i < na && i < nb; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/* Compare kernel-op keys (op, dim, operands). */
static int kkey_cmp(int opa, int dima, const int32_t *ina, int na, int opb, int dimb,
                    const int32_t *inb, int nb) {
  if (opa != opb)
    return opa < opb ? -1 : 1;
  if (dima != dimb)
    return dima < dimb ? -1 : 1;
  return seq_cmp(ina, na, inb, nb);
}

/* Whether a new kernel op (or custom kernel, is_custom) with operands in
 * follows the previous kernel op in canonical order. */
static bool kernel_canonical(const mirs__search_worker *w, int op, int dim, const int32_t *in,
                             int nin, bool is_custom) {
  const mirs_graph *g = w->g;
  if (!w->s->space.canonical || g->nops == 0)
    return true;
  const mirs__kop *p = &g->ops[g->nops - 1];
  for (int i = 0; i < nin; i++)
    for (int j = 0; j < p->nout; j++)
      if (in[i] == p->out[j])
        return true;
  int pdim = mirs__search_op_dim(&w->s->space, p->op, p->dim, p->cst);
  int c = kkey_cmp(op, dim, in, nin, p->op, pdim, p->in, p->nin);
  return is_custom ? c >= 0 : c > 0;
}

/* Whether binary op(a, b) is a constant the space leaves out: x - x = 0,
 * x / x = 1 (unless constant_ops). */
static bool is_constant(const mirs__search_space *sp, mirs_op op, int32_t a, int32_t b) {
  return a == b && (op == MIRS_OP_SUB || op == MIRS_OP_DIV) && !sp->constant_ops;
}

/* ---------------------------------------------------------------- kernel moves */

/* Whether kernel tensor t is a kernel-op output that no op consumes
 * (dead unless a later op does) and, with `unmatched`, that no program
 * output matches.  Tensors from `fresh` on belong to the op being added,
 * whose uses and matches are not recorded yet. */
static bool kernel_free(const mirs__search_worker *w, int32_t t, int32_t fresh, bool unmatched) {
  if (w->g->t[t].producer < 0)
    return false;
  return t >= fresh || (w->kuses[t] == 0 && !(unmatched && w->kmatch[t] >= 0));
}

/* Kernel tensors kernel_free(.., fresh, unmatched), not counting the nin
 * operands in[] (which the op being added consumes). */
static int kernel_sinks(const mirs__search_worker *w, const int32_t *in, int nin, int32_t fresh,
                        bool unmatched) {
  const mirs_graph *g = w->g;
  int n = 0;
  for (int32_t t = 0; t < g->nt; t++) {
    if (!kernel_free(w, t, fresh, unmatched))
      continue;
    bool operand = false;
    for (int i = 0; i < nin; i++)
      operand = operand || in[i] == t;
    if (!operand)
      n++;
  }
  return n;
}

/* Whether transpose may apply to a value with expression e, produced by
 * op `producer` (see mirs__search_space.ntr). */
static bool transpose_ok(mirs__search_worker *w, mirs__abs_id e, mirs_op producer) {
  const mirs__search_space *sp = &w->s->space;
  if (producer == MIRS_OP_TRANSPOSE)
    return false; /* transpose(transpose(x)) = x */
  if (sp->ntr < 0 || e == MIRS__ABS_NONE)
    return true;
  uint64_t h = mirs__abs_hash(mirs__prune_worker_arena(w->pw), e);
  for (int i = 0; i < sp->ntr; i++)
    if (sp->tr_hash[i] == h)
      return true;
  return false;
}

/* List a predefined kernel op if its shapes work and it is canonical. */
static mirs_status try_kop(mirs__search_worker *w, mirs_op op, int nin, const int32_t *in,
                           int dim) {
  const mirs_graph *g = w->g;
  if (!within_budget(w, op))
    return MIRS_OK;
  if (op == MIRS_OP_EXP && w->s->space.safe_exp && !kernel_shifted(g, in[0]))
    return MIRS_OK; /* (the program's exps are all max-shifted) */
  /* The last op consumes every kernel tensor left to consume. */
  if (w->s->space.bounds && mirs__search_is_last(w, g->nops + 1, w->nbg) &&
      kernel_sinks(w, in, nin, g->nt, true) > 0) {
    MIRS_INC(&w->stats, bound_skips);
    return MIRS_OK;
  }
  mirs__shape sh[2];
  for (int i = 0; i < nin; i++)
    sh[i] = g->t[in[i]].shape;
  if (nin == 2 && g->t[in[0]].dtype != g->t[in[1]].dtype)
    return MIRS_OK;
  if (nin == 2 && is_constant(&w->s->space, op, in[0], in[1]))
    return MIRS_OK;
  if (op == MIRS_OP_TRANSPOSE &&
      !transpose_ok(w, w->kexpr[in[0]],
                    g->t[in[0]].producer < 0 ? MIRS_OP_INPUT : g->ops[g->t[in[0]].producer].op)) {
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK;
  }
  if (w->s->space.canonical && nin == 2 && mirs__op_is_commutative(op) && in[0] > in[1]) {
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK; /* add(b, a) is add(a, b) */
  }
  mirs__shape rs;
  int nd;
  if (!mirs__shape_infer(op, nin, sh, dim, &nd, &rs, NULL, 0))
    return MIRS_OK;
  if (mirs__op_nconst(op) > 0)
    nd = dim; /* (the constants' entry) */
  /* The same op on the same operands exists already. */
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (k->op == op && k->nin == nin &&
        mirs__search_op_dim(&w->s->space, k->op, k->dim, k->cst) == (nin ? nd : -1) &&
        !memcmp(k->in, in, sizeof(int32_t) * (size_t)nin)) {
      MIRS_INC(&w->stats, canonical_skips);
      return MIRS_OK;
    }
  }
  if (!kernel_canonical(w, op, nd, in, nin, false)) {
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK;
  }
  int8_t lab[MIRS_MAX_DIMS];
  uint64_t atoms, deg[MIRS_MAX_DIMS];
  if (w->s->space.index_check &&
      !mirs__search_kop_labels(w, op, nd, nin, in, sh[0].ndim, lab, &atoms, deg)) {
    MIRS_INC(&w->stats, index_skips);
    return MIRS_OK;
  }
  mirs__search_move m;
  move_init(&m, MIRS__MOVE_KOP);
  m.op = (uint8_t)op;
  m.nin = (uint8_t)nin;
  m.dim = (int8_t)(mirs__graph_ops[op].kind == MIRS__KIND_REDUCE || mirs__op_nconst(op) > 0 ? dim
                                                                                          : -1);
  for (int i = 0; i < nin; i++)
    m.in[i] = in[i];
  return push_move(w, &m);
}

/* Whether a kernel op that leaves the graph with nkops kernel ops and nbg
 * custom kernels must be the candidate's last op. */
bool mirs__search_is_last(const mirs__search_worker *w, int32_t nkops, int nbg) {
  const mirs__search_space *sp = &w->s->space;
  if (nkops >= sp->max_kops)
    return true;
  if (nbg < sp->max_custom)
    return false;
  for (int op = 0; op < MIRS_OP_COUNT; op++)
    if (sp->kop[op])
      return false;
  return true;
}

/* Program outputs no kernel tensor matches yet. */
int mirs__search_unmatched(const mirs__search_worker *w) {
  int n = 0;
  for (int32_t i = 0; i < w->s->program->nout; i++)
    if (w->nmatch[i] == 0)
      n++;
  return n;
}

/* Backtracking part of grid_places: grid dims a.. get dims distinct from
 * om[0..a). */
static bool grid_places_from(const mirs__search_space *sp, const int32_t *grid,
                             const mirs__shape *s, int a, int8_t *om) {
  if (a == MIRS__GRID)
    return true;
  om[a] = -1;
  if (grid[a] == 1)
    return grid_places_from(sp, grid, s, a + 1, om);
  for (int d = 0; d < s->ndim; d++) {
    bool used = false;
    for (int c = 0; c < a; c++)
      if (om[c] == d)
        used = true;
    if (used || !sp->omap_ok[d] || s->d[d] % grid[a])
      continue;
    om[a] = (int8_t)d;
    if (grid_places_from(sp, grid, s, a + 1, om))
      return true;
  }
  return false;
}

/* Whether n divides some dim of some kernel tensor of g. */
static bool divides_some_dim(const mirs_graph *g, int32_t n) {
  if (n <= 1)
    return true;
  for (int32_t t = 0; t < g->nt; t++)
    for (int d = 0; d < g->t[t].shape.ndim; d++)
      if (g->t[t].shape.d[d] >= n && g->t[t].shape.d[d] % n == 0)
        return true;
  return false;
}

/* Whether every grid dim > 1 can place a distinct dim of a tensor of
 * shape s (omap allowed, extent divisible): the grid of a custom kernel
 * that stores s. */
static bool grid_places(const mirs__search_space *sp, const int32_t *grid, const mirs__shape *s) {
  int8_t om[MIRS__GRID];
  return grid_places_from(sp, grid, s, 0, om);
}

/* Whether grid (x, y, z) is in grid_order's order: sizes non-increasing,
 * or their non-increasing order is not a candidate grid. */
static bool grid_sorted(const mirs__search_space *sp, int32_t x, int32_t y, int32_t z) {
  if (x >= y && y >= z)
    return true;
  int32_t s[3] = {x, y, z};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (s[j] > s[i]) {
        int32_t t = s[i];
        s[i] = s[j];
        s[j] = t;
      }
  return !(in_list(sp->gx, sp->ngx, s[0]) && in_list(sp->gy, sp->ngy, s[1]) &&
           in_list(sp->gz, sp->ngz, s[2]));
}

/* Sink bound under op_budget.  Let phi = the block sinks plus the kernel
 * tensors nothing consumes that the open kernel has not loaded (bstate.kfree:
 * for a last kernel those no output matches, which it must load; else all).
 * A candidate is complete with phi <= phicap: for a last kernel its
 * outputs (cout), else the program's outputs, as every kernel tensor
 * nothing consumes at the end is a distinct program output.  No op lowers
 * phi by more than the merges it uses: a tile comes with its first
 * consumer, so a unary op or accumulator keeps phi or raises it, a binary
 * op (block or kernel level) consumes at most two counted tensors and adds
 * its result, and a close turns block sinks into kernel tensors.  Merges:
 * one per op left in each binary op's budgeted class (the budget counts
 * block and kernel ops alike), and for a div by an accum_rms result (no
 * class) one per accum_rms result not consumed yet or still to come (it
 * merges only at that result's first use).  So phi - phicap <=
 * merges_left is necessary.  INT64_MAX when a binary class is unbounded. */
static int64_t merges_left(const mirs__search_worker *w, const mirs__bgraph *bg) {
  const mirs__search_space *sp = &w->s->space;
  int64_t n = 0;
  bool cls[MIRS_OP_COUNT] = {false};
  for (int op = 0; op < MIRS_OP_COUNT; op++) {
    mirs__op_kind kind = mirs__graph_ops[op].kind;
    if ((!sp->bop[op] && !sp->kop[op]) || (kind != MIRS__KIND_BINARY && kind != MIRS__KIND_MATMUL))
      continue;
    int c = mirs__search_op_class((mirs_op)op);
    if (c < 0 || sp->budget[c] == INT32_MAX)
      return INT64_MAX;
    cls[c] = true;
  }
  for (int c = 0; c < MIRS_OP_COUNT; c++)
    if (cls[c] && w->opcount[c] < sp->budget[c])
      n += sp->budget[c] - w->opcount[c];
  if (sp->bop[MIRS_OP_DIV] && sp->bop[MIRS_OP_ACCUM_RMS]) {
    int c = mirs__search_op_class(MIRS_OP_ACCUM_RMS);
    if (sp->budget[c] == INT32_MAX)
      return INT64_MAX;
    if (w->opcount[c] < sp->budget[c])
      n += sp->budget[c] - w->opcount[c];
    for (int32_t t = 0; bg && t < bg->nt; t++)
      if (w->bt[t].uses == 0 && bg->ops[bg->t[t].producer].op == MIRS_OP_ACCUM_RMS)
        n++;
  }
  return n;
}

/* The operator that makes symbol kind k (MIRS__ABS_SYM_*) at the kernel
 * level, or -1 (atoms are all inputs already). */
static int sym_maker(int k) {
  if (k == MIRS__ABS_SYM_RMS)
    return MIRS_OP_RMS_NORM;
  static const int fn_op[MIRS__ABS_FN_COUNT] = {
      MIRS_OP_EXP,  MIRS_OP_SQRT,        MIRS_OP_SILU,    MIRS_OP_GELU,
      MIRS_OP_RELU, MIRS_OP_SUB,         MIRS_OP_MAX,     MIRS_OP_CAUSAL_MASK,
      MIRS_OP_SIGMOID, MIRS_OP_TANH,     MIRS_OP_POW,     MIRS_OP_CLAMP,
      MIRS_OP_MIN, MIRS_OP_ABS};
  for (int f = 0; f < MIRS__ABS_FN_COUNT; f++)
    if (k == MIRS__ABS_SYM_APP(f))
      return fn_op[f];
  return -1;
}

/* Symbol nodes that one op can make two of: layer_norm makes an APP(sqrt)
 * and an APP(neg) (every other op at most one node), so with layer_norm
 * in the space the missing count overstates the ops needed by at most the
 * pairs it could make at once. */
static int64_t ln_pairs(const mirs__search_space *sp, const uint32_t *need, const uint32_t *have) {
  if (!sp->kop[MIRS_OP_LAYER_NORM] && !sp->bop[MIRS_OP_LAYER_NORM])
    return 0;
  int sq = MIRS__ABS_SYM_APP(MIRS__ABS_SQRT), ng = MIRS__ABS_SYM_APP(MIRS__ABS_NEG);
  int64_t a = need[sq] > have[sq] ? need[sq] - have[sq] : 0;
  int64_t b = need[ng] > have[ng] ? need[ng] - have[ng] : 0;
  return a < b ? a : b;
}

bool mirs__search_kernel_alive(mirs__search_worker *w) {
  const mirs__search_space *sp = &w->s->space;
  const mirs_graph *g = w->g, *p = w->s->program;
  if (!sp->bounds || g->nops == 0)
    return true;
  const mirs__kop *k = &g->ops[g->nops - 1];
  int64_t kops_left = sp->max_kops - g->nops, custom_left = sp->max_custom - w->nbg;
  /* Sink bound: the kernel tensors nothing consumes (the new op's
   * operands are consumed now) end as the program's outputs. */
  int64_t sinks = kernel_sinks(w, k->in, k->nin, k->out[0], false);
  int64_t merges = merges_left(w, NULL);
  int c = mirs__search_op_class((mirs_op)k->op);
  mirs__op_kind kind = mirs__graph_ops[k->op].kind;
  if (merges != INT64_MAX && c >= 0 && (kind == MIRS__KIND_BINARY || kind == MIRS__KIND_MATMUL) &&
      w->opcount[c] < sp->budget[c])
    merges--; /* (its own unit: opcount counts it once it is recorded) */
  if (merges != INT64_MAX && sinks - p->nout > merges)
    return false;
  /* Node bound over every kernel tensor. */
  if (!w->s->sym_need)
    return true;
  uint32_t mask = 0, have[MIRS__ABS_NSYM] = {0};
  for (int32_t i = 0; i < p->nout; i++) {
    bool may_match = false; /* (not fingerprinted yet) */
    for (int o = 0; o < k->nout; o++)
      may_match = may_match || mirs__shape_eq(&g->t[k->out[o]].shape, &p->t[p->outputs[i]].shape);
    if (w->nmatch[i] == 0 && !may_match)
      mask |= 1u << i;
  }
  if (!mask || !mirs__abs_count_symbols(mirs__prune_worker_arena(w->pw), w->kexpr, g->nt, have))
    return true;
  int64_t missing = 0;
  for (int s = 0; s < MIRS__ABS_NSYM; s++) {
    if (w->s->sym_need[mask][s] <= have[s])
      continue;
    missing += w->s->sym_need[mask][s] - have[s];
    int op = sym_maker(s);
    bool by_kop = op >= 0 && sp->kop[op];
    bool by_custom = op >= 0 && custom_left > 0 &&
                     (sp->bop[op] || (op == MIRS_OP_RMS_NORM && sp->bop[MIRS_OP_ACCUM_RMS]));
    if (s == MIRS__ABS_SYM_APP(MIRS__ABS_NEG)) /* neg(x) and c - x make it too */
      for (int o = MIRS_OP_NEG; o <= MIRS_OP_RSUB_SCALAR; o += MIRS_OP_RSUB_SCALAR - MIRS_OP_NEG) {
        by_kop = by_kop || sp->kop[o];
        by_custom = by_custom || (custom_left > 0 && sp->bop[o]);
      }
    if (!by_kop && !by_custom)
      return false;
  }
  missing -= ln_pairs(sp, w->s->sym_need[mask], have);
  return missing <= kops_left - custom_left + custom_left * (int64_t)(sp->max_bops - 2);
}

/* Most input tiles of a custom kernel opened on graph g. */
static int custom_inputs(const mirs__search_space *sp, const mirs_graph *g) {
  return g->nops > 0 ? sp->max_cin_after : sp->max_cin;
}

/* List the open moves of a custom kernel that is the candidate's last op
 * (last) or is followed by another op (!last). */
static mirs_status open_moves(mirs__search_worker *w, bool last) {
  const mirs__search_space *sp = &w->s->space;
  const mirs_graph *g = w->g;
  const mirs_graph *p = w->s->program;
  if (last && sp->final_grid && mirs__search_unmatched(w) > sp->max_cout)
    return MIRS_OK; /* one kernel cannot store them all */
  int maxrank = 0;
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].shape.ndim > maxrank)
      maxrank = g->t[t].shape.ndim;
  if (last && sp->bounds &&
      kernel_sinks(w, NULL, 0, g->nt, true) > custom_inputs(sp, g)) {
    MIRS_INC(&w->stats, bound_skips);
    return MIRS_OK; /* it cannot load every kernel tensor left to consume */
  }
  for (int ix = 0; ix < sp->ngx; ix++)
    for (int iy = 0; iy < sp->ngy; iy++)
      for (int iz = 0; iz < sp->ngz; iz++) {
        int32_t gx = sp->gx[ix], gy = sp->gy[iy], gz = sp->gz[iz];
        if ((gy > 1 && gx == 1) || (gz > 1 && gy == 1))
          continue; /* grid dims are used in order x, y, z */
        if (sp->grid_order && !grid_sorted(sp, gx, gy, gz)) {
          MIRS_INC(&w->stats, canonical_skips);
          continue;
        }
        if (!divides_some_dim(g, gx) || !divides_some_dim(g, gy) || !divides_some_dim(g, gz))
          continue;
        /* Each grid dim > 1 places a distinct dim of every output (omap),
         * and no block op raises the rank of its operands. */
        if ((gx > 1) + (gy > 1) + (gz > 1) > maxrank) {
          MIRS_INC(&w->stats, tile_skips);
          continue;
        }
        if (!last && (gx > 1) + (gy > 1) + (gz > 1) > sp->mid_grid_dims)
          continue;
        if (last && sp->final_grid) {
          int32_t grid[MIRS__GRID] = {gx, gy, gz};
          bool ok = true;
          for (int32_t i = 0; ok && i < p->nout; i++)
            if (w->nmatch[i] == 0 && !grid_places(sp, grid, &p->t[p->outputs[i]].shape))
              ok = false;
          if (!ok) {
            MIRS_INC(&w->stats, tile_skips);
            continue;
          }
        }
        for (int ib = 0; ib < sp->nblocks; ib++)
          for (int iF = 0; iF < sp->nfranges; iF++) {
            int32_t F = sp->franges[iF];
            if (!divides_some_dim(g, F))
              continue;
            mirs__search_move m;
            move_init(&m, MIRS__MOVE_OPEN);
            m.grid[0] = gx;
            m.grid[1] = gy;
            m.grid[2] = gz;
            m.block = sp->blocks[ib];
            m.forloop = F;
            m.final = last;
            MIRS_CHECK(w->ctx, push_move(w, &m));
          }
      }
  return MIRS_OK;
}

/* Moves of a kernel-level state: opening a final custom kernel, then
 * predefined ops, then opening a kernel another op follows.  (The order
 * changes no result; a final kernel first finds the fused candidates,
 * usually the cheapest, before the long subtrees of library kernels.) */
static mirs_status gen_kernel(mirs__search_worker *w) {
  const mirs__search_space *sp = &w->s->space;
  const mirs_graph *g = w->g;
  if (g->nops >= sp->max_kops || mirs__search_kernel_final(w))
    return MIRS_OK; /* (nothing follows a final custom kernel) */
  /* A custom kernel opened now is the candidate's last op (final: it must
   * produce every program output not matched yet) or is followed by
   * another op; where it need not be last, both variants are listed. */
  bool custom = w->nbg < sp->max_custom;
  bool forced = custom && mirs__search_is_last(w, g->nops + 1, w->nbg + 1);
  if (custom)
    MIRS_CHECK(w->ctx, open_moves(w, true));
  for (int op = 0; op < MIRS_OP_COUNT; op++) {
    if (!sp->kop[op])
      continue;
    mirs__op_kind kind = mirs__graph_ops[op].kind;
    for (int32_t a = 0; a < g->nt; a++) {
      int32_t in[2] = {a, -1};
      if (mirs__op_nconst((mirs_op)op) > 0) {
        for (int j = 0; j < sp->ncst; j++)
          if (sp->cst_op[j] == op)
            MIRS_CHECK(w->ctx, try_kop(w, (mirs_op)op, 1, in, j));
      } else if (kind == MIRS__KIND_UNARY || kind == MIRS__KIND_RMSNORM ||
                 kind == MIRS__KIND_TRANSPOSE) {
        MIRS_CHECK(w->ctx, try_kop(w, (mirs_op)op, 1, in, -1));
      } else if (kind == MIRS__KIND_REDUCE) {
        for (int d = 0; d < g->t[a].shape.ndim; d++)
          if (g->t[a].shape.d[d] > 1)
            MIRS_CHECK(w->ctx, try_kop(w, (mirs_op)op, 1, in, d));
      } else if (kind == MIRS__KIND_BINARY || kind == MIRS__KIND_MATMUL) {
        for (int32_t b = 0; b < g->nt; b++) {
          in[1] = b;
          MIRS_CHECK(w->ctx, try_kop(w, (mirs_op)op, 2, in, -1));
        }
      }
    }
  }
  if (custom && !forced)
    MIRS_CHECK(w->ctx, open_moves(w, false));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- block moves */

/* Context of one block state's listing. */
typedef struct bstate {
  mirs__search_worker *w;
  const mirs__search_space *sp;
  const mirs_graph *g;
  const mirs__bgraph *bg;
  int remaining;             /* block ops left */
  int ninputs;               /* INPUT ops so far */
  int max_cin;               /* most INPUT ops: max_custom_inputs, or max_custom_inputs_after_ops
                                when kernel ops precede this kernel */
  int sinks, lsinks, psinks; /* unconsumed tensors: all, per-iteration, post-loop */
  int cout;                  /* most outputs: max_cout, or for a last kernel the
                                program outputs not matched yet (more would be dead) */
  bool post_started;         /* an accumulator exists: the post-loop phase began */
  uint64_t slice_labs;       /* labels a grid dim may slice (index_check): for a last
                                kernel those of the unmatched outputs' dims, else all */
  int8_t glab[MIRS__GRID];   /* with one output to store (index_check): the label grid
                                dim a slices in the loaded tiles, or MIRS__LAB_NONE */
  bool gsym;                 /* grid_order with glab: grid dims of equal size slice
                                labels in increasing order */
  int missing;               /* symbol nodes the unmatched outputs need that no block
                                tensor has (node bound; 0 when it does not apply) */
  int64_t merges;            /* most sink merges the ops left can make (op_budget;
                                INT64_MAX without a bound) */
  int kfree;                 /* kernel-op outputs nothing consumes, not loaded here (for a
                                last kernel those no output matches; merges_left) */
  uint64_t kmask;            /* those tensors (ids < 64) */
  int phicap;                /* sinks + kfree at the end (merges_left) */
  bool must_load;            /* a last kernel: the kfree tensors must be loaded here */
  size_t nloads;
  uint64_t opseen[4];        /* bit op_bit(op, in[0]) set for each block op (gen_bops): most
                                candidates match no op, and skip bop_in_order's scan */
} bstate;

/* The bit of a block op with first operand in0 in bstate.opseen. */
static inline unsigned op_bit(int op, int32_t in0) {
  return ((uint32_t)op * UINT32_C(0x9E3779B1) ^ (uint32_t)in0 * UINT32_C(0x85EBCA6B)) >> 24;
}

/* Append load candidate l to the worker's scratch list. */
static mirs_status add_load(mirs__search_worker *w, size_t *n, const mirs__search_load *l) {
  if (*n >= w->caploads)
    MIRS_CHECK(w->ctx,
               mirs__core_grow(w->ctx, (void **)&w->loads, &w->caploads, *n + 1, sizeof *w->loads));
  w->loads[(*n)++] = *l;
  return MIRS_OK;
}

/* Enumerate fmaps of a load whose imaps are fixed. */
static mirs_status loads_fmap(bstate *b, mirs__search_load *l, size_t *n) {
  const mirs__shape *ks = &b->g->t[l->src].shape;
  const mirs__bgraph *bg = b->bg;
  const mirs__bop *prev = NULL; /* a tile of l->src loaded already (sp->reload) */
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_INPUT && bg->ops[i].src == l->src)
      prev = &bg->ops[i];
  for (int a = 0; prev && a < MIRS__GRID; a++)
    if (prev->imap[a] != l->imap[a])
      return MIRS_OK; /* (the second tile covers the same rows, whole or by slices) */
  for (int f = -1; f < ks->ndim; f++) {
    if (!b->sp->fmap_ok[f + 1])
      continue;
    if (prev && (prev->fmap == -1) == (f == -1))
      continue;
    if (bg->forloop == 1 && f != -1)
      continue;
    if (f >= 0) {
      /* The loop's slices must be reduced before they leave it (accum_sum,
       * a contraction, accum_rms): a label the program never reduces
       * cannot be walked. */
      int8_t lab = b->w->klab[(size_t)l->src * MIRS_MAX_DIMS + (size_t)f];
      if (b->sp->index_check && lab >= 0 && !((b->sp->reducible >> lab) & 1)) {
        MIRS_INC(&b->w->stats, index_skips);
        continue;
      }
      bool used = false;
      int64_t size = ks->d[f];
      for (int a = 0; a < MIRS__GRID; a++)
        if (l->imap[a] == f)
          used = true;
      if (used || size % bg->forloop)
        continue;
    }
    l->fmap = (int8_t)f;
    MIRS_CHECK(b->w->ctx, add_load(b->w, n, l));
  }
  return MIRS_OK;
}

/* Enumerate imaps for grid dims axis.. of load l, then its fmaps. */
static mirs_status loads_imap(bstate *b, mirs__search_load *l, int axis, size_t *n) {
  if (axis == MIRS__GRID)
    return loads_fmap(b, l, n);
  const mirs__shape *ks = &b->g->t[l->src].shape;
  int32_t gs = b->bg->grid[axis];
  if (gs == 1) {
    l->imap[axis] = -1;
    return loads_imap(b, l, axis + 1, n);
  }
  const int8_t *klab = &b->w->klab[(size_t)l->src * MIRS_MAX_DIMS];
  int8_t ga = b->glab[axis];
  for (int d = -1; d < ks->ndim; d++) {
    if (!b->sp->imap_ok[d + 1])
      continue;
    /* One stored output: all its data carries grid dim a's slice on one
     * label, ga once a tile chose it.  A tile holding ga whole cannot
     * meet the slices unless ga is reduced away first. */
    if (d < 0 && ga >= 0 && !((b->sp->reducible >> ga) & 1)) {
      bool holds = false;
      for (int e = 0; e < ks->ndim; e++)
        holds = holds || klab[e] == ga;
      if (holds) {
        MIRS_INC(&b->w->stats, index_skips);
        continue;
      }
    }
    if (d >= 0) {
      bool used = false;
      for (int a = 0; a < axis; a++)
        if (l->imap[a] == d)
          used = true;
      if (used || ks->d[d] % gs)
        continue;
      /* A grid slice is never reduced (tile rule), so it reaches the
       * kernel's outputs: for a last kernel it must be an output's index,
       * one no other grid dim slices (nor this tile's earlier grid dims). */
      int8_t lab = klab[d];
      bool clash = lab >= 0 && (!((b->slice_labs >> lab) & 1) || (ga >= 0 && lab != ga));
      for (int a = 0; lab >= 0 && a < MIRS__GRID; a++)
        if ((a != axis && b->glab[a] == lab) ||
            (a < axis && l->imap[a] >= 0 && klab[l->imap[a]] == lab))
          clash = true;
      if (clash) {
        MIRS_INC(&b->w->stats, index_skips);
        continue;
      }
      /* grid_order: permuting grid dims of equal size (with the imaps
       * and omaps) is the same computation at the same cost, so such
       * dims slice their labels in increasing order. */
      bool order = true;
      for (int c = 0; b->gsym && lab >= 0 && ga < 0 && c < MIRS__GRID; c++) {
        if (c == axis || b->bg->grid[c] != gs)
          continue;
        int8_t lc = b->glab[c];
        if (lc < 0 && c < axis && l->imap[c] >= 0)
          lc = klab[l->imap[c]];
        if (lc >= 0 && (c < axis ? lc > lab : lab > lc))
          order = false;
      }
      if (!order) {
        MIRS_INC(&b->w->stats, canonical_skips);
        continue;
      }
    }
    l->imap[axis] = (int8_t)d;
    MIRS_CHECK(b->w->ctx, loads_imap(b, l, axis + 1, n));
  }
  return MIRS_OK;
}

/* Operand descriptor: an existing block tensor (>= 0) or load ~j (< 0). */
typedef int32_t operand;

/* Shape and tile info of an operand (computed once per block state by
 * gen_block into the worker's scratch). */
static void operand_info(const bstate *b, operand x, mirs__shape *sh, mirs__search_btinfo *info) {
  int32_t i = x >= 0 ? x : b->bg->nt + ~x;
  *sh = b->w->opsh[i];
  *info = b->w->opinf[i];
}

/* Whether binary op kind `kind` can take shapes a, b at all (the cheap
 * part of the shape rule, checked before listing a pair). */
static bool pair_may_fit(mirs__op_kind kind, const mirs__shape *a, const mirs__shape *b) {
  if (a->ndim != b->ndim)
    return false;
  int n = a->ndim;
  if (kind == MIRS__KIND_MATMUL)
    return n >= 2 && a->d[n - 1] == b->d[n - 2];
  for (int d = 0; d < n; d++)
    if (a->d[d] != b->d[d] && a->d[d] != 1 && b->d[d] != 1)
      return false;
  return true;
}

/* Largest stride of the shape-pair memo (a byte per pair); past it pairs
 * are checked each time. */
#define SHFIT_MAX 2048

/* Hash of a shape for the intern table. */
static uint64_t shape_hash(const mirs__shape *s) {
  uint64_t h = (uint64_t)s->ndim * UINT64_C(0x9E3779B97F4A7C15);
  for (int d = 0; d < s->ndim; d++) {
    h = (h ^ (uint64_t)s->d[d]) * UINT64_C(0xBF58476D1CE4E5B9);
    h ^= h >> 31;
  }
  return h;
}

/* Intern shape s in the worker's table: *id its id. */
static mirs_status shape_id(mirs__search_worker *w, const mirs__shape *s, int32_t *id) {
  mirs_context *ctx = w->ctx;
  if (2 * (w->nshp + 1) > w->capshtab) { /* grow and rehash */
    size_t cap = w->capshtab ? 2 * w->capshtab : 256;
    int32_t *tab = mirs__core_calloc(ctx, cap, sizeof *tab);
    if (!tab)
      return MIRS_NOMEM;
    for (size_t k = 0; k < w->nshp; k++) {
      size_t at = (size_t)shape_hash(&w->shp[k]) & (cap - 1);
      while (tab[at])
        at = (at + 1) & (cap - 1);
      tab[at] = (int32_t)k + 1;
    }
    mirs__core_free(ctx, w->shtab);
    w->shtab = tab;
    w->capshtab = cap;
  }
  size_t at = (size_t)shape_hash(s) & (w->capshtab - 1);
  for (; w->shtab[at]; at = (at + 1) & (w->capshtab - 1))
    if (mirs__shape_eq(&w->shp[w->shtab[at] - 1], s)) {
      *id = w->shtab[at] - 1;
      return MIRS_OK;
    }
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->shp, &w->capshp, w->nshp + 1, sizeof *w->shp));
  size_t old = w->capshloc;
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->shloc, &w->capshloc, 2 * (w->nshp + 1),
                                  sizeof *w->shloc));
  for (size_t k = old; k < w->capshloc; k++)
    w->shloc[k] = -1;
  w->shp[w->nshp] = *s;
  w->shtab[at] = (int32_t)++w->nshp;
  *id = (int32_t)w->nshp - 1;
  return MIRS_OK;
}

/* Fit bits (bit 0 binary, bit 1 matmul) of shapes a, b. */
static uint8_t fit_bits(const mirs__shape *a, const mirs__shape *b) {
  return (uint8_t)((pair_may_fit(MIRS__KIND_BINARY, a, b) ? 1 : 0) |
                   (pair_may_fit(MIRS__KIND_MATMUL, a, b) ? 2 : 0));
}

/* Make the shape-pair memo hold ids below n; false when it cannot
 * (SHFIT_MAX, or no memory: pairs are then checked each time). */
static bool fit_reserve(mirs__search_worker *w, size_t n) {
  if (n <= w->shfitn)
    return true;
  size_t m = w->shfitn ? w->shfitn : 64;
  while (m < n)
    m *= 2;
  uint8_t *fit = m <= SHFIT_MAX ? mirs__core_calloc(w->ctx, m * m, 1) : NULL;
  if (!fit)
    return false;
  for (size_t r = 0; r < w->shfitn; r++)
    memcpy(&fit[r * m], &w->shfit[r * w->shfitn], w->shfitn);
  mirs__core_free(w->ctx, w->shfit);
  w->shfit = fit;
  w->shfitn = m;
  return true;
}

/* Fill the operand scratch: shapes and tile analyses of the block tensors
 * and of the nl load candidates. */
static mirs_status operand_table(bstate *b, size_t nl) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  size_t n = (size_t)bg->nt + nl;
  MIRS_CHECK(w->ctx,
             mirs__core_grow(w->ctx, (void **)&w->opsh, &w->capopsh, n + 1, sizeof *w->opsh));
  MIRS_CHECK(w->ctx,
             mirs__core_grow(w->ctx, (void **)&w->opinf, &w->capopinf, n + 1, sizeof *w->opinf));
  for (int32_t t = 0; t < bg->nt; t++) {
    w->opsh[t] = bg->t[t].shape;
    w->opinf[t] = w->bt[t];
  }
  for (size_t j = 0; j < nl; j++) {
    const mirs__search_load *l = &w->loads[j];
    load_shape(bg, &b->g->t[l->src].shape, l, &w->opsh[(size_t)bg->nt + j]);
    mirs__search_load_info(bg, l, &w->klab[(size_t)l->src * MIRS_MAX_DIMS], w->katoms[l->src],
                           &w->kdeg[(size_t)l->src * MIRS_MAX_DIMS],
                           &w->opinf[(size_t)bg->nt + j]);
  }
  /* Classes: equal shape and phase (loads are loop-body tiles). */
  MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->opcls, &w->capopcls, n + 1,
                                     sizeof *w->opcls));
  MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->clsmem, &w->capclsmem, n + 1,
                                     sizeof *w->clsmem));
  MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->clsoff, &w->capclsoff, n + 2,
                                     sizeof *w->clsoff));
  MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->clsrep, &w->capclsrep, n + 1,
                                     sizeof *w->clsrep));
  int32_t ncls = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = 0;
    MIRS_CHECK(w->ctx, shape_id(w, &w->opsh[i], &id));
    int32_t key = 2 * id + ((int32_t)i < bg->nt && bg->t[i].post);
    if (w->shloc[key] < 0) {
      w->shloc[key] = ncls;
      w->clsrep[ncls++] = key;
    }
    w->opcls[i] = w->shloc[key];
  }
  for (int32_t c = 0; c < ncls; c++)
    w->shloc[w->clsrep[c]] = -1;
  w->ncls = ncls;
  size_t nfit = (size_t)ncls * (size_t)ncls;
  MIRS_CHECK(w->ctx, mirs__core_grow(w->ctx, (void **)&w->clsfit, &w->capclsfit, nfit + 1,
                                     sizeof *w->clsfit));
  /* (Keys are 2 * shape id + phase; the memo is per shape-id pair.) */
  bool memo = fit_reserve(w, w->nshp);
  for (int32_t a = 0; a < ncls; a++) {
    int32_t ka = w->clsrep[a];
    uint8_t *row = memo ? &w->shfit[(size_t)(ka >> 1) * w->shfitn] : NULL;
    uint8_t *out = &w->clsfit[(size_t)a * (size_t)ncls];
    for (int32_t c = 0; c < ncls; c++) {
      int32_t kc = w->clsrep[c];
      if ((ka ^ kc) & 1) {
        out[c] = 0; /* phases differ */
      } else if (!row) {
        out[c] = fit_bits(&w->shp[ka >> 1], &w->shp[kc >> 1]);
      } else {
        uint8_t f = row[kc >> 1];
        if (!f)
          f = row[kc >> 1] = (uint8_t)(0x80 | fit_bits(&w->shp[ka >> 1], &w->shp[kc >> 1]));
        out[c] = f & 3;
      }
    }
  }
  memset(w->clsoff, 0, sizeof *w->clsoff * (size_t)(ncls + 1));
  for (size_t i = 0; i < n; i++)
    w->clsoff[w->opcls[i] + 1]++;
  for (int32_t c = 0; c < ncls; c++) {
    w->clsoff[c + 1] += w->clsoff[c];
    w->clsrep[c] = w->clsoff[c]; /* (now the fill cursor of class c) */
  }
  for (size_t i = 0; i < n; i++)
    w->clsmem[w->clsrep[w->opcls[i]]++] = (int32_t)i;
  return MIRS_OK;
}

/* Compare block-op keys: (op, dim, operand ids, the new tiles). */
static int bkey_cmp(const mirs__search_space *sp, const mirs__search_move *a,
                    const mirs__bop *p) {
  if (a->op != p->op)
    return a->op < p->op ? -1 : 1;
  int pdim = mirs__search_op_dim(sp, p->op, p->dim, p->cst);
  if (a->dim != pdim)
    return a->dim < pdim ? -1 : 1;
  int c = seq_cmp(a->in, a->nin, p->in, p->nin);
  if (c)
    return c;
  /* Same ids: p's operands are all existing tensors, a new tile sorts after. */
  return a->nload ? 1 : 0;
}

/* Phase order (option phase_canonical).  Loop-body ops never consume a
 * post-loop value, so every graph has an order that builds its whole loop
 * body first, then its accumulators and post-loop ops; only that order is
 * built (an accumulator may still load its input tile, since a tile comes
 * with its first consumer).  With forloop range 1 the body runs once and
 * `accum` is the identity, so placements around the accumulators are
 * interchangeable too; one is kept: accum_sum(x) is written accum(sum(x))
 * (accum_max(x): accum(max(x))), and a post-loop op needs an operand that is not a plain accum (one
 * derived from accum_rms), otherwise it runs in the loop body and its
 * result is accumulated.  False when op may not come now. */
static bool phase_canonical(const bstate *b, mirs_op op, int nin, const operand *x, bool post) {
  const mirs__bgraph *bg = b->bg;
  bool is_accum = mirs__graph_ops[op].kind == MIRS__KIND_ACCUM;
  if (b->post_started && !is_accum && !post)
    return false; /* a loop-body op after the post-loop phase began */
  if (bg->forloop != 1)
    return true;
  if (op == MIRS_OP_ACCUM_SUM || op == MIRS_OP_ACCUM_MAX || op == MIRS_OP_ACCUM_MIN)
    /* (accum(max(x)), accum(min(x)) likewise) */
    return false;
  if (!post || is_accum)
    return true;
  for (int i = 0; i < nin; i++)
    if (x[i] >= 0 && bg->ops[bg->t[x[i]].producer].op != MIRS_OP_ACCUM)
      return true;
  return false;
}

/* The kernel tensor operand x is a tile of (a new load or an input op's
 * tensor), or -1 for a computed block tensor. */
static int32_t tile_src(const bstate *b, operand x) {
  if (x < 0)
    return b->w->loads[~x].src;
  for (int32_t i = 0; i < b->bg->nops; i++)
    if (b->bg->ops[i].out == x)
      return b->bg->ops[i].op == MIRS_OP_INPUT ? b->bg->ops[i].src : -1;
  return -1;
}

/* reuse_kernel_ops: whether block op `op` on operands x (result tile
 * analysis out) recomputes a kernel op of the candidate: the same
 * elementwise op or matmul on tiles of that op's operands.  The tiles
 * line up (tile rule), so the result is the tile of the kernel op's
 * output under the merged maps; a matmul counts only when its
 * contraction is whole (no partial sum over the forloop). */
static bool recomputes_kop(const bstate *b, mirs_op op, int nin, const operand *x,
                           const mirs__search_btinfo *out) {
  mirs__op_kind kind = mirs__graph_ops[op].kind;
  if (kind != MIRS__KIND_UNARY && kind != MIRS__KIND_BINARY && kind != MIRS__KIND_MATMUL)
    return false;
  if (kind == MIRS__KIND_MATMUL && out->fdep == MIRS__FDEP_PARTIAL)
    return false;
  int32_t src[2] = {-1, -1};
  for (int i = 0; i < nin; i++)
    if ((src[i] = tile_src(b, x[i])) < 0)
      return false;
  const mirs_graph *g = b->g;
  for (int32_t i = 0; i < g->nops; i++) {
    const mirs__kop *k = &g->ops[i];
    if (k->op != op || k->nin != nin)
      continue;
    if (k->in[0] == src[0] && (nin < 2 || k->in[1] == src[1]))
      return true;
    if (nin == 2 && mirs__op_is_commutative(op) && k->in[0] == src[1] && k->in[1] == src[0])
      return true;
  }
  return false;
}

/* The budget part of bop_bounded: true when a block op loading nload
 * new tiles, consuming consumed_sinks sinks (consumed_lsinks of them
 * loop-body ones), leaving kfree free kernel tensors and with a post-loop
 * result (rpost) leaves too few ops to consume every sink and close the
 * kernel.  Counts nothing. */
static inline bool budget_short(const bstate *b, int nload, int consumed_sinks,
                                int consumed_lsinks, bool rpost, int kfree) {
  int s2 = b->sinks - consumed_sinks + 1, l2 = b->lsinks - consumed_lsinks + (rpost ? 0 : 1);
  int need = (s2 > b->cout ? s2 - b->cout : 0) + (l2 > 0 ? 1 : 0) + 1;
  /* A last kernel loads every kernel tensor left to consume, two per op
   * at most, within max_custom_inputs. */
  if (b->must_load && (kfree + 1) / 2 + 1 > need)
    need = (kfree + 1) / 2 + 1;
  return b->remaining - nload - 1 < need ||
         (b->must_load && b->ninputs + nload + kfree > b->max_cin);
}

/* kfree less one when a tile of kernel tensor src is loaded. */
static inline int kfree_after(const bstate *b, int kfree, int32_t src) {
  return src < 64 && ((b->kmask >> src) & 1) ? kfree - 1 : kfree;
}

/* The budget, sink and node bounds of BOP move m (try_bop): false when
 * the ops left cannot complete the kernel after it.  consumed_sinks,
 * consumed_lsinks: the sinks (loop-body sinks) its operands consume;
 * rpost: its result is post-loop. */
static bool bop_bounded(bstate *b, mirs_op op, int nin, const mirs__search_move *m,
                        int consumed_sinks, int consumed_lsinks, bool rpost) {
  const mirs__bgraph *bg = b->bg;
  mirs__search_worker *w = b->w;
  /* Budget: the ops left must consume every sink and close the kernel. */
  int kfree = b->kfree;
  for (int k = 0; k < m->nload; k++)
    kfree = kfree_after(b, kfree, m->load[k].src);
  if (budget_short(b, m->nload, consumed_sinks, consumed_lsinks, rpost, kfree))
    return false;
  int s2 = b->sinks - consumed_sinks + 1;
  /* Sink bound (merges_left): a binary op uses a merge (a div by an
   * accum_rms result only at that result's first use). */
  if (s2 + kfree > b->phicap && b->merges != INT64_MAX) {
    int used = 0;
    if (nin == 2)
      used = mirs__search_bop_class(bg, op, nin, m->in) >= 0 || w->bt[m->in[1]].uses == 0;
    if (s2 + kfree - b->phicap > b->merges - used) {
      MIRS_INC(&w->stats, bound_skips);
      return false;
    }
  }
  /* Node bound: this move adds at most nload + 1 of the missing symbols,
   * each later op one, and an output op remains. */
  if (b->remaining - m->nload - 1 < b->missing - m->nload) {
    MIRS_INC(&w->stats, bound_skips);
    return false;
  }
  return true;
}

/* The order rules of BOP move m (try_bop): false (counted) when another
 * order of the same ops is the one listed. */
static bool bop_in_order(bstate *b, mirs_op op, int nin, const operand *x, bool is_accum,
                         const mirs__search_move *m) {
  const mirs__bgraph *bg = b->bg;
  mirs__search_worker *w = b->w;
  /* add and mul take their operands in one order (ids ascending; of two
   * new tiles, the first listed is loaded first): the other order is the
   * same graph (hash.c), and gen_close offers either operand for fusion. */
  if (b->sp->canonical && nin == 2 && mirs__op_is_commutative(op) &&
      (m->in[0] > m->in[1] || (x[0] < 0 && x[1] < 0 && ~x[0] > ~x[1]))) {
    MIRS_INC(&w->stats, canonical_skips);
    return false;
  }
  /* Never the same op on the same existing operands twice.  (The dim key
   * last: it may search the constants table.) */
  unsigned bit = op_bit(op, m->in[0]);
  if (m->nload == 0 && ((b->opseen[bit >> 6] >> (bit & 63)) & 1))
    for (int32_t i = 0; i < bg->nops; i++) {
      const mirs__bop *o = &bg->ops[i];
      if (o->op == op && o->in[0] == m->in[0] && o->nin == nin &&
          (nin < 2 || o->in[1] == m->in[1]) &&
          mirs__search_op_dim(b->sp, o->op, o->dim, o->cst) == m->dim) {
        MIRS_INC(&w->stats, canonical_skips);
        return false;
      }
    }
  /* Tiles get their ids when first used, so keys of ops with new tiles
   * depend on the order; the rule compares only ops without new tiles
   * (keys fixed), which keeps an accepted order for every graph: take the
   * ops with new tiles first, the others by smallest key. */
  bool p_loads = bg->nops >= 2 && bg->ops[bg->nops - 2].op == MIRS_OP_INPUT;
  if (b->sp->canonical && bg->nops > 0 && m->nload == 0 && !p_loads) {
    const mirs__bop *p = &bg->ops[bg->nops - 1];
    bool consumes = false;
    for (int i = 0; i < nin; i++)
      if (m->in[i] == p->out)
        consumes = true;
    /* At the phase boundary (phase_canonical) the first accumulator
     * follows the loop body whatever its key. */
    bool boundary = b->sp->phase_canonical && is_accum && !bg->t[p->out].post;
    if (!consumes && !boundary && bkey_cmp(b->sp, m, p) <= 0) {
      MIRS_INC(&w->stats, canonical_skips);
      return false;
    }
  }
  return true;
}

/* The filters of a block op candidate after the order rules: shapes,
 * tiles, reuse of a kernel op, index labels, transpose placement.  Their
 * verdict depends only on the op, its dims and its operands' contents
 * (shapes, tile analyses, labels, expressions, producers) in the open
 * block graph, so it is kept in the chain memo. */
enum {
  CHAIN_PASS = 1,
  CHAIN_SHAPE,     /* the shapes do not fit (not counted) */
  CHAIN_TILE,      /* tile_skips */
  CHAIN_REUSE,     /* recomputes a kernel op: canonical_skips */
  CHAIN_INDEX,     /* index_skips */
  CHAIN_TRANSPOSE  /* canonical_skips */
};

/* Count verdict v as the filter that gave it does. */
static void chain_count(mirs__search_worker *w, int v) {
  if (v == CHAIN_TILE)
    MIRS_INC(&w->stats, tile_skips);
  else if (v == CHAIN_REUSE || v == CHAIN_TRANSPOSE)
    MIRS_INC(&w->stats, canonical_skips);
  else if (v == CHAIN_INDEX)
    MIRS_INC(&w->stats, index_skips);
}

/* Run the chain on op (dim as listed, mdim its key) with operands x. */
static int chain_run(bstate *b, mirs_op op, int nin, const operand *x, int dim, int mdim) {
  const mirs__bgraph *bg = b->bg;
  mirs__search_worker *w = b->w;
  mirs__shape sh[2];
  mirs__search_btinfo info[2];
  for (int i = 0; i < nin; i++)
    operand_info(b, x[i], &sh[i], &info[i]);
  mirs__shape rs;
  int nd;
  if (!mirs__shape_infer(op, nin, sh, dim, &nd, &rs, NULL, 0))
    return CHAIN_SHAPE;
  mirs__search_btinfo out;
  if (!mirs__search_tile_rule(bg, op, mdim, nin, info, sh, &out) && b->sp->tile_check)
    return CHAIN_TILE;
  if (b->sp->reuse_kops && b->sp->tile_check && b->g->nops > 0 &&
      recomputes_kop(b, op, nin, x, &out))
    return CHAIN_REUSE;
  if (b->sp->index_check &&
      !mirs__search_bop_labels(b->sp, op, mdim, nin, sh[0].ndim, info, &out))
    return CHAIN_INDEX;
  mirs__abs_id e0 = x[0] >= 0 ? w->bexpr[x[0]] : w->kexpr[w->loads[~x[0]].src];
  if (op == MIRS_OP_TRANSPOSE &&
      !transpose_ok(w, e0, x[0] >= 0 ? bg->ops[bg->t[x[0]].producer].op : MIRS_OP_INPUT))
    return CHAIN_TRANSPOSE;
  return CHAIN_PASS;
}

/* The chain memo: a direct-mapped table per worker.  A key names the op,
 * its dims, its arity and its operands exactly: an existing block tensor
 * by its serial (w->tser), a new tile by its kernel tensor, imaps and
 * fmap together with the open block graph's serial (w->bgser), which
 * also stands for everything else the chain reads (the grid, the forloop
 * range, the kernel ops before the block).  Serials are never reused, so
 * an entry is never stale; a collision in the table only replaces an
 * entry.  Most candidates of a block state were candidates of its parent
 * too, with the same verdict. */
#define CHAIN_MEMO_SIZE ((size_t)1 << 14)
_Static_assert(MIRS_OP_COUNT <= 256, "an op fits the memo key's byte");
typedef struct mirs__search_cmemo {
  uint64_t k0, k1, blk;
  uint32_t opk; /* 0: an empty entry */
  int8_t verdict;
} mirs__search_cmemo;

/* The key part of operand x. */
static uint64_t chain_operand(const bstate *b, operand x) {
  if (x >= 0)
    return b->w->tser[x];
  const mirs__search_load *l = &b->w->loads[~x];
  return (uint64_t)(uint32_t)l->src << 32 | (uint64_t)(uint8_t)l->imap[0] << 24 |
         (uint64_t)(uint8_t)l->imap[1] << 16 | (uint64_t)(uint8_t)l->imap[2] << 8 |
         (uint64_t)(uint8_t)l->fmap;
}

/* The chain's verdict on a candidate, from the memo or run (and kept). */
static int chain_verdict(bstate *b, mirs_op op, int nin, const operand *x, int dim, int mdim) {
  mirs__search_worker *w = b->w;
  if (!w->cmemo) {
    w->cmemo = mirs__core_calloc(w->ctx, CHAIN_MEMO_SIZE, sizeof *w->cmemo);
    if (!w->cmemo) /* (no memory for the memo: the chain runs each time) */
      return chain_run(b, op, nin, x, dim, mdim);
  }
  uint32_t opk = 1u | (uint32_t)(uint8_t)op << 1 | (uint32_t)(uint8_t)dim << 9 |
                 (uint32_t)(uint8_t)mdim << 17 | (uint32_t)(nin - 1) << 25 |
                 (uint32_t)(x[0] < 0) << 26 | (uint32_t)(nin > 1 && x[1] < 0) << 27;
  uint64_t k0 = chain_operand(b, x[0]), k1 = nin > 1 ? chain_operand(b, x[1]) : 0,
           blk = w->bgser[w->nbg - 1];
  uint64_t h = mirs__hash_mix(mirs__hash_mix(mirs__hash_mix(opk, k0), k1), blk);
  mirs__search_cmemo *e = &w->cmemo[h & (CHAIN_MEMO_SIZE - 1)];
  if (e->opk == opk && e->k0 == k0 && e->k1 == k1 && e->blk == blk)
    return e->verdict;
  int v = chain_run(b, op, nin, x, dim, mdim);
  *e = (mirs__search_cmemo){k0, k1, blk, opk, (int8_t)v};
  return v;
}

/* List block op `op` on operands x[0..nin) (reduced dim `dim`) if it passes
 * the phase, shape, budget, tile and canonical filters. */
static mirs_status try_bop(bstate *b, mirs_op op, int nin, const operand *x, int dim) {
  const mirs__bgraph *bg = b->bg;
  mirs__search_worker *w = b->w;
  if (!within_budget(w, op) &&
      !(nin == 2 && x[1] >= 0 && mirs__search_bop_class(bg, op, nin, x) < 0))
    return MIRS_OK;
  if (op == MIRS_OP_EXP && b->sp->safe_exp &&
      (x[0] < 0 ? !kernel_shifted(b->g, w->loads[~x[0]].src) : !block_shifted(b->g, bg, x[0])))
    return MIRS_OK; /* (the program's exps are all max-shifted) */
  /* (The move's other fields are cleared only when it is listed: most
   * candidates stop at a filter, and clearing the whole move is a
   * measurable share of the search.) */
  mirs__search_move m;
  m.kind = MIRS__MOVE_BOP;
  m.op = (uint8_t)op;
  m.nin = (uint8_t)nin;
  m.nload = 0;
  m.dim = -1;
  m.in[0] = m.in[1] = -1;
  bool post[2] = {false, false};
  int consumed_sinks = 0, consumed_lsinks = 0;
  for (int i = 0; i < nin; i++) {
    if (x[i] < 0) {
      if (i == 1 && x[1] == x[0]) {
        m.in[1] = m.in[0];
      } else {
        m.load[m.nload] = w->loads[~x[i]];
        m.in[i] = bg->nt + m.nload;
        m.nload++;
      }
    } else {
      m.in[i] = x[i];
      post[i] = bg->t[x[i]].post;
      if (w->bt[x[i]].uses == 0 && (i == 0 || x[1] != x[0])) {
        consumed_sinks++;
        if (!post[i])
          consumed_lsinks++;
      }
    }
  }
  if (b->ninputs + m.nload > b->max_cin)
    return MIRS_OK;
  if (m.nload == 2 && m.load[0].src == m.load[1].src)
    return MIRS_OK; /* one tile per kernel tensor */
  bool is_accum = mirs__graph_ops[op].kind == MIRS__KIND_ACCUM;
  if (is_accum && post[0])
    return MIRS_OK;
  if (op == MIRS_OP_CAUSAL_MASK && x[0] >= 0) { /* (a new tile is always placed) */
    mirs__bop probe = {.op = op, .nin = 1, .in = {x[0], -1}, .out = -1};
    if (!mirs__sched_mask_placed(w->g, bg, &probe))
      return MIRS_OK;
  }
  if (b->sp->phase_canonical && !phase_canonical(b, op, nin, x, post[0])) {
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK;
  }
  /* With forloop range 1 and no useful accum_rms no post-loop op is ever
   * possible (phase_canonical), so every accumulator's result is an output
   * and every loop-body sink left needs its own accumulator. */
  if (b->sp->phase_canonical && bg->forloop == 1 && !b->sp->rms_useful && is_accum &&
      b->psinks + 1 + b->lsinks - consumed_lsinks > b->cout)
    return MIRS_OK;
  bool rpost = is_accum || post[0];
  if (!bop_bounded(b, op, nin, &m, consumed_sinks, consumed_lsinks, rpost))
    return MIRS_OK;
  /* The order rules first (cheap), then shapes and tiles. */
  m.dim = (int8_t)(mirs__op_has_dim(op) || mirs__op_nconst(op) > 0 ? dim : -1);
  if (nin == 2 && is_constant(b->sp, op, m.in[0], m.in[1]))
    return MIRS_OK;
  if (!bop_in_order(b, op, nin, x, is_accum, &m))
    return MIRS_OK;
  /* (gen_block lists only pairs in one phase whose shapes may fit.) */
  int verdict = chain_verdict(b, op, nin, x, dim, m.dim);
  if (verdict != CHAIN_PASS) {
    chain_count(w, verdict);
    return MIRS_OK;
  }
  /* Pruning by abstract expressions, before the move is listed. */
  mirs__shape sh0;
  mirs__search_btinfo inf0;
  operand_info(b, x[0], &sh0, &inf0);
  mirs__abs_id e[2];
  for (int i = 0; i < nin; i++)
    e[i] = x[i] >= 0 ? w->bexpr[x[i]] : w->kexpr[w->loads[~x[i]].src];
  bool keep;
  MIRS_CHECK(w->ctx, mirs__search_bop_keep(w, op, m.dim, nin, e, &sh0, &keep));
  if (!keep)
    return MIRS_OK;
  mirs__search_move full;
  move_init(&full, MIRS__MOVE_BOP);
  full.op = m.op;
  full.nin = m.nin;
  full.nload = m.nload;
  full.dim = m.dim;
  full.in[0] = m.in[0];
  full.in[1] = m.in[1];
  for (int k = 0; k < m.nload; k++)
    full.load[k] = m.load[k];
  return push_move(w, &full);
}

/* List the closing moves: outputs with omaps and fused-flag choices. */
/* A fusable op of a block graph and its fusion choices (gen_close). */
typedef struct fusable {
  int op;
  int nopt;
  uint8_t opt[3]; /* 0: not fused, 1: fuse in[0], 2: swap, fuse in[1] */
} fusable;

/* The fusion choices of the open block graph into fus[0..64); returns
 * how many ops have some. */
static int close_fusions(bstate *b, fusable *fus) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  const mirs__search_space *sp = b->sp;
  /* Fusable elementwise ops: the operand fused into (in[0]) computed, not
   * loaded, in the same phase, and consumed only by this op.  An add or
   * mul may fuse either operand (the other is then swapped into in[0]);
   * maximal fusion (fusion=1) takes, of two candidates, the one with the
   * smaller structural hash, which does not depend on the operand order
   * the op was built with. */
  int nfus = 0;
  for (int32_t i = 0; i < bg->nops && i < 64; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (!mirs__op_is_elementwise(o->op))
      continue;
    bool ok[2] = {false, false};
    for (int a = 0; a < o->nin; a++) {
      if (a == 1 && (!mirs__op_is_commutative(o->op) || o->in[1] == o->in[0]))
        break;
      const mirs__btensor *t = &bg->t[o->in[a]];
      ok[a] = bg->ops[t->producer].op != MIRS_OP_INPUT && t->post == bg->t[o->out].post &&
              w->bt[o->in[a]].uses == 1;
    }
    if (!ok[0] && !ok[1])
      continue;
    if (ok[0] && ok[1] && sp->fusion == 1) {
      uint64_t h0 = mirs__graph_btensor_hash(b->g, bg, o->in[0]);
      uint64_t h1 = mirs__graph_btensor_hash(b->g, bg, o->in[1]);
      ok[h1 < h0 ? 0 : 1] = false;
    }
    fus[nfus].op = i;
    fus[nfus].nopt = 0;
    if (sp->fusion == 2)
      fus[nfus].opt[fus[nfus].nopt++] = 0;
    for (int a = 0; a < 2; a++)
      if (ok[a])
        fus[nfus].opt[fus[nfus].nopt++] = (uint8_t)(a + 1);
    nfus++;
  }
  /* Bound the fusion choices (each a CLOSE move): past it, fuse in[0]
   * where possible (maximal chains), as fusion=1 does with one choice. */
  int64_t combos = 1;
  for (int i = 0; i < nfus && combos <= (1 << MIRS__SEARCH_MAX_FUSABLE); i++)
    combos *= fus[i].nopt;
  if (sp->fusion == 0 || combos > (1 << MIRS__SEARCH_MAX_FUSABLE))
    for (int i = 0; i < nfus; i++) {
      uint8_t first = fus[i].opt[fus[i].nopt - 1];
      for (int c = 0; c < fus[i].nopt; c++)
        if (fus[i].opt[c] != 0) {
          first = fus[i].opt[c];
          break;
        }
      fus[i].opt[0] = sp->fusion == 0 ? 0 : first;
      fus[i].nopt = 1;
    }
  return nfus;
}

/* The omaps of output k of CLOSE move m into choice[0..64): derived from
 * the tile tags (option tile_check), or every choice; returns how many
 * (0: the block graph cannot close). */
static int close_omaps(bstate *b, const mirs__search_move *m, int k,
                       int8_t (*choice)[MIRS__GRID]) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  const mirs__search_space *sp = b->sp;
  const mirs__shape *s = &bg->t[m->out[k]].shape;
  int n = 0;
  if (sp->tile_check) {
    int8_t om[MIRS__GRID];
    bool ok = true;
    for (int a = 0; a < MIRS__GRID; a++) {
      om[a] = -1;
      if (bg->grid[a] == 1)
        continue;
      for (int d = 0; d < s->ndim; d++)
        if (w->bt[m->out[k]].tag[d] == MIRS__TAG_GX + a)
          om[a] = (int8_t)d;
      if (om[a] < 0 || !sp->omap_ok[om[a]])
        ok = false;
    }
    if (!ok) {
      MIRS_INC(&w->stats, tile_skips);
      return 0;
    }
    memcpy(choice[n++], om, sizeof om);
    return n;
  }
  for (int dx = -1; dx < s->ndim; dx++)
    for (int dy = -1; dy < s->ndim; dy++)
      for (int dz = -1; dz < s->ndim; dz++) {
        int8_t om[MIRS__GRID] = {(int8_t)dx, (int8_t)dy, (int8_t)dz};
        bool ok = true;
        for (int a = 0; a < MIRS__GRID && ok; a++) {
          if ((bg->grid[a] == 1) != (om[a] == -1) || (om[a] >= 0 && !sp->omap_ok[om[a]]))
            ok = false;
          for (int c = 0; c < a && ok; c++)
            if (om[a] >= 0 && om[a] == om[c])
              ok = false;
        }
        if (ok && n < 64)
          memcpy(choice[n++], om, sizeof om);
      }
  return n;
}

static mirs_status gen_close(bstate *b) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  mirs__search_move m;
  move_init(&m, MIRS__MOVE_CLOSE);
  for (int32_t t = 0; t < bg->nt; t++)
    if (w->bt[t].uses == 0)
      m.out[m.nout++] = t;
  /* The custom kernel's place in the kernel-level canonical order. */
  int32_t srcs[64] = {0};
  int nsrc = 0;
  for (int32_t i = 0; i < bg->nops && nsrc < 64; i++)
    if (bg->ops[i].op == MIRS_OP_INPUT)
      srcs[nsrc++] = bg->ops[i].src;
  if (!kernel_canonical(w, MIRS_OP_CUSTOM, -1, srcs, nsrc, true)) {
    MIRS_INC(&w->stats, canonical_skips);
    return MIRS_OK;
  }
  fusable fus[64];
  int nfus = close_fusions(b, fus);
  /* Omaps: derived from the tile tags, or every choice. */
  int8_t choice[MIRS__SEARCH_MAX_COUT][64][MIRS__GRID];
  int nchoice[MIRS__SEARCH_MAX_COUT];
  for (int k = 0; k < m.nout; k++)
    if ((nchoice[k] = close_omaps(b, &m, k, choice[k])) == 0)
      return MIRS_OK;
  /* Enumerate omap combinations times fusion choices (mixed radix). */
  int idx[MIRS__SEARCH_MAX_COUT] = {0};
  for (;;) {
    for (int k = 0; k < m.nout; k++)
      memcpy(m.omap[k], choice[k][idx[k]], MIRS__GRID);
    int fi[64] = {0};
    for (;;) {
      m.fused = m.swap = 0;
      for (int i = 0; i < nfus; i++) {
        uint8_t c = fus[i].opt[fi[i]];
        if (c)
          m.fused |= UINT64_C(1) << fus[i].op;
        if (c == 2)
          m.swap |= UINT64_C(1) << fus[i].op;
      }
      MIRS_CHECK(w->ctx, push_move(w, &m));
      int i = 0;
      while (i < nfus && ++fi[i] == fus[i].nopt)
        fi[i++] = 0;
      if (i == nfus)
        break;
    }
    int k = 0;
    while (k < m.nout && ++idx[k] == nchoice[k])
      idx[k++] = 0;
    if (k == m.nout)
      break;
  }
  return MIRS_OK;
}

/* Moves of a block-level state: close, then block ops. */
/* The bounds of the candidate's last custom kernel (gen_block): outputs
 * left to match, the labels its grid may slice, must_load, and the
 * symbols still missing (node bound). */
static void block_final_bounds(bstate *b) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  int unmatched = mirs__search_unmatched(w);
  if (unmatched < b->cout)
    b->cout = unmatched;
  if (b->sp->index_check && b->sp->tile_check) {
    const mirs_graph *p = w->s->program;
    b->slice_labs = 0;
    for (int32_t i = 0; i < p->nout; i++)
      for (int d = 0; w->nmatch[i] == 0 && d < p->t[p->outputs[i]].shape.ndim; d++) {
        int8_t lab = w->s->plab[(size_t)p->outputs[i] * MIRS_MAX_DIMS + (size_t)d];
        if (lab >= 0)
          b->slice_labs |= UINT64_C(1) << lab;
      }
    /* One output: the grid dims' labels are those the tiles chose. */
    b->gsym = b->cout == 1 && b->sp->grid_order;
    for (int32_t i = 0; b->cout == 1 && i < bg->nops; i++) {
      const mirs__bop *o = &bg->ops[i];
      if (o->op != MIRS_OP_INPUT)
        continue;
      for (int a = 0; a < MIRS__GRID; a++)
        if (o->imap[a] >= 0 && bg->grid[a] > 1)
          b->glab[a] = w->klab[(size_t)o->src * MIRS_MAX_DIMS + (size_t)o->imap[a]];
    }
  }
  /* A kernel-op output that nothing consumes and no output matches
   * would be dead: the last kernel must load it. */
  b->must_load = b->sp->bounds;
  /* Node bound: with only program inputs to load (no kernel op yet),
   * each op adds at most one symbol node, so the unmatched outputs'
   * symbols that no block tensor has yet take one op each. */
  if (w->s->sym_need && b->g->nops == 0) {
    uint32_t mask = 0, have[MIRS__ABS_NSYM] = {0};
    for (int32_t i = 0; i < w->s->program->nout; i++)
      if (w->nmatch[i] == 0)
        mask |= 1u << i;
    if (mirs__abs_count_symbols(mirs__prune_worker_arena(w->pw), w->bexpr, bg->nt, have))
      for (int k = 0; k < MIRS__ABS_NSYM; k++)
        if (w->s->sym_need[mask][k] > have[k])
          b->missing += (int)(w->s->sym_need[mask][k] - have[k]);
    b->missing -= (int)ln_pairs(b->sp, w->s->sym_need[mask], have);
  }
}

/* Whether every block op of nin operands (an accumulator or not) with
 * first operand x0 fails the budget test of bop_bounded, whatever its
 * second operand: that test is run with the best second operand there
 * could be, an existing loop-body sink (a new tile adds a load, which
 * costs at least as much as it frees).  Most candidates of a state near
 * its op budget end there, so gen_bops does not try them at all. */
static bool bops_short(const bstate *b, bool is_accum, int nin, operand x0) {
  int nload = 0, cs = nin > 1 ? 1 : 0, kfree = b->kfree;
  bool post = false;
  if (x0 < 0) {
    nload = 1;
    kfree = kfree_after(b, kfree, b->w->loads[~x0].src);
  } else {
    post = b->bg->t[x0].post;
    cs += b->w->bt[x0].uses == 0;
  }
  int lcs = cs - (x0 >= 0 && b->w->bt[x0].uses == 0 && post);
  return budget_short(b, nload, cs, lcs, is_accum || post, kfree);
}

/* The block ops of the open block graph on its operands: existing
 * tensors 0..nt-1, then the nl loads ~0..~(nl-1) (gen_block). */
static mirs_status gen_bops(bstate *b, size_t nl) {
  mirs__search_worker *w = b->w;
  const mirs__bgraph *bg = b->bg;
  mirs_context *ctx = w->ctx;
  int32_t nops = bg->nt + (int32_t)nl;
  /* Candidates whose budget is short (bops_short) are not tried: try_bop
   * would refuse them without counting anything, since the only counted
   * filter before its budget test, phase_canonical, refuses nothing that
   * the loop below does not skip first unless the forloop range is 1.
   * The first operands left, per (arity, accumulator), in firsts[c]
   * (ascending, as the loop takes them). */
  bool skip_short = !(b->sp->phase_canonical && bg->forloop == 1);
#define OPERAND(i) ((i) < bg->nt ? (operand)(i) : (operand) ~((i)-bg->nt))
  for (int32_t i = 0; i < bg->nops; i++) {
    unsigned bit = op_bit(bg->ops[i].op, bg->ops[i].in[0]);
    b->opseen[bit >> 6] |= UINT64_C(1) << (bit & 63);
  }
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)&w->firsts, &w->capfirsts,
                                  4 * (size_t)nops + 1, sizeof *w->firsts));
  int32_t *firsts[4], nfirsts[4] = {0, 0, 0, 0};
  for (int c = 0; c < 4; c++) {
    firsts[c] = w->firsts + (size_t)c * (size_t)nops;
    for (int32_t i = 0; i < nops; i++)
      if (!skip_short || !bops_short(b, c >> 1, 1 + (c & 1), OPERAND(i)))
        firsts[c][nfirsts[c]++] = i;
  }
  for (int op = 0; op < MIRS_OP_COUNT; op++) {
    if (!b->sp->bop[op] || (!within_budget(w, (mirs_op)op) && op != MIRS_OP_DIV))
      continue; /* (a div by an accum_rms result is outside the budget) */
    mirs__op_kind kind = mirs__graph_ops[op].kind;
    bool is_accum = kind == MIRS__KIND_ACCUM;
    /* (The operands the branches below give the op.) */
    bool unary = mirs__op_nconst((mirs_op)op) > 0 || kind == MIRS__KIND_UNARY ||
                 kind == MIRS__KIND_RMSNORM || kind == MIRS__KIND_TRANSPOSE ||
                 op == MIRS_OP_ACCUM || op == MIRS_OP_ACCUM_RMS ||
                 (op != MIRS_OP_ACCUM_ONLINE && mirs__op_has_dim((mirs_op)op));
    int nin = unary ? 1 : 2, kc = (is_accum ? 2 : 0) + nin - 1;
    for (int32_t f = 0; f < nfirsts[kc]; f++) {
      int32_t i = firsts[kc][f];
      /* (What try_bop refuses for any second operand: an accumulator of a
       * post-loop value, a loop-body op once the post-loop phase began.) */
      bool post_i = i < bg->nt && bg->t[i].post;
      if ((is_accum && post_i) ||
          (b->sp->phase_canonical && b->post_started && !is_accum && !post_i))
        continue;
      operand x[2] = {OPERAND(i), 0};
      mirs__shape sh0;
      mirs__search_btinfo inf0;
      operand_info(b, x[0], &sh0, &inf0);
      if (mirs__op_nconst((mirs_op)op) > 0) {
        for (int j = 0; j < b->sp->ncst; j++)
          if (b->sp->cst_op[j] == op)
            MIRS_CHECK(ctx, try_bop(b, (mirs_op)op, 1, x, j));
      } else if (kind == MIRS__KIND_UNARY || kind == MIRS__KIND_RMSNORM ||
                 kind == MIRS__KIND_TRANSPOSE || op == MIRS_OP_ACCUM || op == MIRS_OP_ACCUM_RMS) {
        MIRS_CHECK(ctx, try_bop(b, (mirs_op)op, 1, x, -1));
      } else if (op == MIRS_OP_ACCUM_ONLINE) {
        /* The shift: a tile max of this block (a max or one derived from it). */
        for (int32_t j = 0; j < bg->nt; j++)
          if (!bg->t[j].post && w->bt[j].fdep == MIRS__FDEP_PMAX) {
            x[1] = (operand)j;
            MIRS_CHECK(ctx, try_bop(b, (mirs_op)op, 2, x, -1));
          }
      } else if (mirs__op_has_dim((mirs_op)op)) {
        for (int d = 0; d < sh0.ndim; d++)
          if (sh0.d[d] > 1 || (inf0.tag[d] != MIRS__TAG_FULL))
            MIRS_CHECK(ctx, try_bop(b, (mirs_op)op, 1, x, d));
      } else if (kind == MIRS__KIND_BINARY || kind == MIRS__KIND_MATMUL) {
        /* Second operands: the classes (phase, shape) that may fit.  An
         * add or mul takes operand indices ascending (the order rule of
         * try_bop: ids ascending, new tiles after existing tensors). */
        uint8_t bit = kind == MIRS__KIND_MATMUL ? 2 : 1;
        int32_t from = b->sp->canonical && mirs__op_is_commutative((mirs_op)op) ? i : 0;
        const uint8_t *fit = &w->clsfit[(size_t)w->opcls[i] * (size_t)w->ncls];
        for (int32_t c = 0; c < w->ncls; c++) {
          if (!(fit[c] & bit))
            continue;
          for (int32_t k = w->clsoff[c]; k < w->clsoff[c + 1]; k++) {
            int32_t j = w->clsmem[k];
            if (j < from)
              continue;
            x[1] = OPERAND(j);
            /* Two new tiles: the first operand's tile is loaded first; a
             * pair of new tiles in the other order is another move. */
            MIRS_CHECK(ctx, try_bop(b, (mirs_op)op, 2, x, -1));
          }
        }
      }
    }
  }
#undef OPERAND
  return MIRS_OK;
}

static mirs_status gen_block(mirs__search_worker *w) {
  bstate b = {.w = w, .sp = &w->s->space, .g = w->g, .bg = w->bgs[w->nbg - 1]};
  const mirs__bgraph *bg = b.bg;
  mirs_context *ctx = w->ctx;
  b.remaining = (mirs__search_kernel_final(w) ? b.sp->max_bops : b.sp->mid_bops) - bg->nops;
  b.max_cin = custom_inputs(b.sp, b.g);
  b.cout = b.sp->max_cout;
  b.slice_labs = ~UINT64_C(0);
  for (int a = 0; a < MIRS__GRID; a++)
    b.glab[a] = MIRS__LAB_NONE;
  if (mirs__search_kernel_final(w))
    block_final_bounds(&b);
  if (b.missing > 0 && b.remaining < b.missing + 1) {
    MIRS_INC(&w->stats, bound_skips);
    return MIRS_OK;
  }
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_INPUT)
      b.ninputs++;
  for (int32_t t = 0; t < bg->nt; t++) {
    if (bg->t[t].post)
      b.post_started = true;
    if (w->bt[t].uses == 0) {
      b.sinks++;
      if (!bg->t[t].post)
        b.lsinks++;
      else
        b.psinks++;
    }
  }
  /* Kernel-op outputs nothing consumes (merges_left). */
  b.phicap = b.must_load ? b.cout : (int)w->s->program->nout;
  for (int32_t t = 0; b.sp->bounds && t < b.g->nt; t++) {
    if (!kernel_free(w, t, b.g->nt, b.must_load))
      continue;
    bool loaded = false;
    for (int32_t i = 0; i < bg->nops && !loaded; i++)
      loaded = bg->ops[i].op == MIRS_OP_INPUT && bg->ops[i].src == t;
    if (loaded)
      continue;
    if (t >= 64) { /* (not tracked: no bound) */
      b.kfree = 0;
      b.kmask = 0;
      b.must_load = false;
      b.phicap = INT32_MAX;
      break;
    }
    b.kfree++;
    b.kmask |= UINT64_C(1) << t;
  }
  b.merges = b.sp->bounds ? merges_left(w, bg) : INT64_MAX;
  if ((b.merges != INT64_MAX && b.sinks + b.kfree - b.phicap > b.merges) ||
      (b.must_load && b.ninputs + b.kfree > b.max_cin)) {
    MIRS_INC(&w->stats, bound_skips);
    return MIRS_OK;
  }
  if (b.sp->tile_check && (b.ninputs >= b.max_cin || b.remaining < 2)) {
    /* No tile can be loaded any more.  Tile tags come only from loads and
     * every output must carry each grid dim's slice (its omap), and with
     * F > 1 only a tile the forloop walks can be accumulated: a grid dim
     * that no tile partitions, or a loop no tile walks, is a dead end. */
    bool walked = bg->forloop == 1;
    bool split[MIRS__GRID] = {false, false, false};
    for (int32_t i = 0; i < bg->nops; i++)
      if (bg->ops[i].op == MIRS_OP_INPUT) {
        walked = walked || bg->ops[i].fmap >= 0;
        for (int a = 0; a < MIRS__GRID; a++)
          split[a] = split[a] || bg->ops[i].imap[a] >= 0;
      }
    for (int a = 0; a < MIRS__GRID; a++)
      if (bg->grid[a] > 1 && !split[a])
        walked = false;
    if (!walked) {
      MIRS_INC(&w->stats, tile_skips);
      return MIRS_OK;
    }
  }
  /* (A close that leaves an output's symbol unbuilt cannot match it.) */
  if (b.lsinks == 0 && b.sinks >= 1 && b.sinks <= b.cout && b.sinks <= b.remaining &&
      b.missing == 0 && !(b.must_load && b.kfree > 0))
    MIRS_CHECK(ctx, gen_close(&b));
  if (b.remaining < 2)
    return MIRS_OK;
  size_t nl = 0;
  if (b.ninputs < b.max_cin)
    for (int32_t src = 0; src < b.g->nt; src++) {
      /* Each kernel tensor is one input of a custom kernel (as in Mirage):
       * a second tile of the same tensor is not offered. */
      int loaded = 0;
      for (int32_t i = 0; i < bg->nops; i++)
        if (bg->ops[i].op == MIRS_OP_INPUT && bg->ops[i].src == src)
          loaded++;
      if (loaded > (b.sp->reload && bg->forloop > 1 ? 1 : 0))
        continue; /* (sp->reload: a second tile, whole or by slices: loads_fmap) */
      mirs__search_load l = {.src = src, .imap = {-1, -1, -1}, .fmap = -1};
      MIRS_CHECK(ctx, loads_imap(&b, &l, 0, &nl));
    }
  b.nloads = nl;
  MIRS_CHECK(ctx, operand_table(&b, nl));
  return gen_bops(&b, nl);
}

/* Append the moves of w's current state to the move arena. */
mirs_status mirs__search_gen_moves(mirs__search_worker *w, uint32_t *n) {
  size_t start = w->nmoves;
  if (w->open)
    MIRS_CHECK(w->ctx, gen_block(w));
  else
    MIRS_CHECK(w->ctx, gen_kernel(w));
  *n = (uint32_t)(w->nmoves - start);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- the block-op filter
 * Pruning of block ops decided while the moves are listed (moved here from
 * search.c so that the filter sits next to the moves it filters). */


/* Check expression e; *keep false when pruned. */
mirs_status mirs__search_prune_check(mirs__search_worker *w, mirs__abs_id e, bool *keep) {
  MIRS_INC(&w->stats, prune_calls);
  mirs_status st = mirs__prune_check(w->pw, e, keep);
  if (st == MIRS_SOLVER) {
    /* A solver error keeps the op (unknown never prunes); say it once. */
    mirs__core_log(w->ctx, MIRS_LOG_DEBUG, "search: solver error kept an op: %s",
                   mirs_last_error(w->ctx));
    mirs_clear_error(w->ctx);
    *keep = true;
    return MIRS_OK;
  }
  MIRS_CHECK(w->ctx, st);
  if (!*keep)
    MIRS_INC(&w->stats, prune_pruned);
  return MIRS_OK;
}

/* A builder or fingerprint refusal (not an error of the search). */
static bool refusal(mirs_status st) {
  return st == MIRS_SHAPE || st == MIRS_INVALID_ARG || st == MIRS_UNSUPPORTED || st == MIRS_LIMIT;
}

/* Status st of a failed step of a move: an error of the search is
 * returned; a refusal is counted under stat and becomes MIRS_OK (the move
 * is just not applied). */
mirs_status mirs__search_refused(mirs__search_worker *w, mirs_status st, int stat) {
  if (!refusal(st))
    return st;
  mirs_clear_error(w->ctx);
  w->stats.v[stat]++;
  return MIRS_OK;
}

/* (Keys set bit 1 so that a stored key is never 0, the empty slot; bit 0
 * of a slot is the verdict, 1 = keep.) */
mirs_status mirs__search_bop_keep(mirs__search_worker *w, mirs_op op, int dim, int nin,
                                  const mirs__abs_id *in, const mirs__shape *s0, bool *keep) {
  mirs__abs_arena *a = mirs__prune_worker_arena(w->pw);
  for (int i = 0; i < nin; i++)
    if (in[i] == MIRS__ABS_NONE) { /* no expression (too large): kept, as unknown */
      MIRS_INC(&w->stats, prune_calls);
      *keep = true;
      return MIRS_OK;
    }
  const mirs__scalar *c = NULL;
  if (mirs__op_nconst(op) > 0) { /* dim: the constants' entry */
    c = w->s->space.cst[dim];
    dim = -1;
  }
  int64_t ext = mirs__abs_bop_extent(op, dim, s0, w->bgs[w->nbg - 1]->forloop);
  uint64_t k = mirs__hash_mix(mirs__hash_mix((uint64_t)op + 1, (uint64_t)ext), (uint64_t)nin);
  if (c)
    k = mirs__hash_mix(k, mirs__op_const_hash(op, c));
  for (int i = 0; i < nin; i++)
    k = mirs__hash_mix(k, mirs__abs_hash(a, in[i]));
  k |= 2;
  uint64_t *slot = &w->pmemo[(k >> 2) & (MIRS__PMEMO_SIZE - 1)];
  if ((*slot | 1) == (k | 1)) {
    *keep = *slot & 1;
    MIRS_INC(&w->stats, prune_memo);
    return MIRS_OK;
  }
  mirs__abs_mark mark = mirs__abs_mark_get(a);
  mirs__abs_id e;
  mirs_status st = mirs__abs_apply_c(a, op, in, ext, c, &e);
  if (st == MIRS_OK) {
    st = mirs__search_prune_check(w, e, keep);
  } else {
    *keep = false; /* (an extent past 64 bits: no program has one) */
    st = mirs__search_refused(w, st, MIRS__STAT_moves_failed);
  }
  mirs__abs_release(a, mark);
  MIRS_CHECK(w->ctx, st);
  *slot = (k & ~UINT64_C(1)) | (*keep ? 1 : 0);
  return MIRS_OK;
}
