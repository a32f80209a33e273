/* SPDX-License-Identifier: MIT */
/* src/search/splitk.c - the split-K (FlashDecoding) rewrite of a result.
 *
 * A custom kernel K with grid G, forloop F and only accum, accum_sum
 * and accum_online accumulators computes, per block, post(acc), each acc
 * a sum over f < F (accum_online's relative to the running max of its
 * shift).  Split s ways (s | F) along grid dim gs:
 *  - kernel 1 is K's loop with grid G[gs] = s and forloop F / s; when
 *    G[gs] > 1 the split takes gs over (what gs partitioned, each block
 *    now holds whole: the tiles grow G[gs] times, the cost model says
 *    whether they fit); each walked input is partitioned by gs along
 *    the dim it walks
 *    (split-K load, docs/FORMATS.md: block b_gs walks chunk b_gs), each
 *    other input is replicated along gs; it stores every accumulator as
 *    it is after its chunk (`dtype=f32`: partial sums of an unnormalised
 *    exp must not be rounded to 16 bits) and, for each distinct shift m
 *    of an accum_online, the chunk's running max of m: accum_max(m) over
 *    a dim where m's tile has extent 1 (a max over one element and the
 *    loop: exactly accum_online's running max, NaN and -inf included),
 *    stored f32; the grid dims placed along each tile's dims (a dim that
 *    came from grid dim g takes g, the others any free dim, gs included);
 *  - kernel 2 has K's grid less gs, forloop s and loads each partial tensor with
 *    the same placement less gs, which its forloop walks instead; accum
 *    sums the s partials of an accum / accum_sum back into K's
 *    accumulator tiles, and accum_online(acc_i, M_i) combines those of
 *    an accum_online: its running max becomes M = max M_i and its value
 *    sum_i acc_i exp(M_i - M) = sum over the whole loop of y exp(m - M),
 *    K's value (a chunk whose max is -inf adds nothing, as in K); K's
 *    post-loop ops follow unchanged and its outputs are stored at their
 *    kernel tensors' dtypes.
 * The sums are reassociated and the maxes taken in two steps, nothing
 * else: the variant is equal to K over the reals and in the fingerprint
 * field (a max of tile maxes is the max in its keyed order, and exp is a
 * homomorphism there, so the rescaled sum is exact), and the sink
 * verifies it like any result.  accum_max/min would need a max combine
 * and accum_rms a rescaling one: kernels with them are left alone.
 *
 * Invariants: the variant has g's inputs (same names, order, dtypes,
 * shapes) and outputs (same names); tensors after K get new ids, mapped
 * through `map`.  Nothing is allocated in g's context. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "search/splitk.h"

const int32_t mirs__splitk_factors[MIRS__SPLITK_NFACTORS] = {2, 4, 8, 16};

/* Whether g holds a load whose forloop walks a dim a grid dim partitions. */
bool mirs__splitk_has_split(const mirs_graph *g) {
  for (int32_t k = 0; k < g->nops; k++) {
    const mirs__bgraph *bg = g->ops[k].op == MIRS_OP_CUSTOM ? g->ops[k].bg : NULL;
    for (int32_t i = 0; bg && i < bg->nops; i++) {
      const mirs__bop *o = &bg->ops[i];
      for (int a = 0; o->op == MIRS_OP_INPUT && o->fmap >= 0 && a < MIRS__GRID; a++)
        if (o->imap[a] == o->fmap)
          return true;
    }
  }
  return false;
}

/* How kernel bg splits: the grid dim carrying the split, per
 * accumulator (in op order, at most MAX_ACC) its tile's placement, and
 * per distinct shift of its accum_onlines the running max kernel 1
 * stores (after the accumulators' partials). */
#define MAX_ACC 16
typedef struct plan {
  int gs;
  int nacc;
  int32_t acc[MAX_ACC];              /* block tensor of each accumulator */
  int32_t omap[MAX_ACC][MIRS__GRID]; /* kernel 1's omap of its partial (gs included) */
  int32_t shift[MAX_ACC];            /* accum_online: index of its shift in mx, else -1 */
  int nmx;
  int32_t mx[MAX_ACC];               /* block tensor of each distinct shift */
  int32_t mdim[MAX_ACC];             /* the dim its accum_max takes (extent 1 in kernel 1) */
  int32_t momap[MAX_ACC][MIRS__GRID]; /* kernel 1's omap of its running max */
  /* The finer combine: kernel 2's grid dim gs partitions dim cdim of
   * every tile cways ways (-1, 1: K's grid less gs); per partial whether
   * its tile has that dim whole (else extent 1: each block loads it). */
  int cdim;
  int32_t cways;
  bool cpart[2 * MAX_ACC];
} plan;

/* Place the grid dims of grid1 along the dims of block tensor t, none
 * of them along dim `avoid` (kernel 2's finer combine partitions it;
 * -1: none); false when its rank is too small. */
static bool place(const mirs_graph *g, const mirs__bgraph *bg, int32_t t, int gs, int avoid,
                  const int32_t grid1[MIRS__GRID], int32_t omap[MIRS__GRID]) {
  int r = bg->t[t].shape.ndim;
  bool used[MIRS_MAX_DIMS] = {false};
  if (avoid >= r)
    return false;
  for (int a = 0; a < MIRS__GRID; a++)
    omap[a] = -1;
  /* A dim the grid placed in K keeps that grid dim (its partial then
   * holds one copy of K's tiles); one gs placed is whole now. */
  for (int d = 0; d < r; d++) {
    mirs__dim_origin o;
    if (mirs__sched_dim_origin(g, bg, t, d, &o) && o.grid >= 0 && o.grid != gs &&
        grid1[o.grid] > 1 && omap[o.grid] < 0) {
      if (d == avoid)
        return false;
      omap[o.grid] = d;
      used[d] = true;
    }
  }
  if (avoid >= 0)
    used[avoid] = true;
  for (int a = 0; a < MIRS__GRID; a++) {
    if (grid1[a] == 1 || omap[a] >= 0)
      continue;
    int d = 0;
    while (d < r && used[d])
      d++;
    if (d == r)
      return false;
    omap[a] = d;
    used[d] = true;
  }
  return true;
}

/* The last dim of shift tile m that keeps extent 1 in kernel 1 (of grid
 * G[gs] = s), or -1: a dim gs placed in K grows G[gs] times when the
 * split takes gs over, the others keep their extents (a walked dim's
 * tile is extent / F either way). */
static int unit_dim(const mirs_graph *g, const mirs__bgraph *bg, int32_t m, int gs) {
  for (int d = bg->t[m].shape.ndim - 1; d >= 0; d--) {
    mirs__dim_origin o;
    bool grows = bg->grid[gs] > 1 &&
                 (!mirs__sched_dim_origin(g, bg, m, d, &o) || o.grid == gs);
    if (bg->t[m].shape.d[d] == 1 && !grows)
      return d;
  }
  return -1;
}

/* Record the shift of accum_online o in p (once per distinct tensor),
 * with its placement and the dim its running max reduces; false when it
 * cannot be stored so. */
static bool plan_shift(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *o,
                       const int32_t grid1[MIRS__GRID], plan *p) {
  int32_t m = o->in[1];
  for (int j = 0; j < p->nmx; j++)
    if (p->mx[j] == m) {
      p->shift[p->nacc] = j;
      return true;
    }
  if (p->nmx == MAX_ACC)
    return false;
  int d = unit_dim(g, bg, m, p->gs);
  if (d < 0 || !place(g, bg, m, p->gs, p->cdim, grid1, p->momap[p->nmx]))
    return false;
  p->mx[p->nmx] = m;
  p->mdim[p->nmx] = d;
  p->shift[p->nacc] = p->nmx++;
  return true;
}

/* The extent of dim d of block tensor t of bg in kernel 1 and 2 (K's
 * grid dim gs taken over: a dim it placed grows G[gs] times), or -1
 * when unknown (no single origin while G[gs] > 1). */
static int64_t split_extent(const mirs_graph *g, const mirs__bgraph *bg, int32_t t, int d, int gs) {
  if (d >= bg->t[t].shape.ndim)
    return -1;
  int64_t e = bg->t[t].shape.d[d];
  if (bg->grid[gs] == 1)
    return e;
  mirs__dim_origin o;
  if (!mirs__sched_dim_origin(g, bg, t, d, &o))
    return e == 1 ? 1 : -1;
  return o.grid == gs ? e * bg->grid[gs] : e;
}

/* Whether kernel 2 of plan p may partition dim p->cdim of its tiles
 * p->cways ways along gs: K's post-loop ops all elementwise (so the dim
 * is the same dim of every tile), every output's tile holding the dim
 * whole (no other grid dim placing it) at one extent that cways divides,
 * every accumulator and shift tile holding it at that extent or 1
 * (recorded in p->cpart, partials then shifts). */
static bool plan_combine(const mirs_graph *g, const mirs__bgraph *bg, plan *p) {
  int d = p->cdim;
  int64_t ext = -1;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (o->op == MIRS_OP_OUTPUT) {
      int64_t e = split_extent(g, bg, o->in[0], d, p->gs);
      for (int a = 0; a < MIRS__GRID; a++)
        if (a != p->gs && bg->grid[a] > 1 && o->omap[a] == d)
          return false;
      if (e < 2 || e % p->cways || (ext >= 0 && e != ext))
        return false;
      ext = e;
      continue;
    }
    if (o->out < 0 || !bg->t[o->out].post || mirs__graph_ops[o->op].kind == MIRS__KIND_ACCUM)
      continue;
    if (!mirs__op_is_elementwise(o->op) || o->op == MIRS_OP_CAUSAL_MASK)
      return false;
  }
  if (ext < 0)
    return false;
  for (int j = 0; j < p->nacc + p->nmx; j++) {
    int32_t t = j < p->nacc ? p->acc[j] : p->mx[j - p->nacc];
    const int32_t *om = j < p->nacc ? p->omap[j] : p->momap[j - p->nacc];
    int64_t e = split_extent(g, bg, t, d, p->gs);
    if (e != ext && e != 1)
      return false;
    for (int a = 0; a < MIRS__GRID; a++)
      if (om[a] == d)
        return false;
    p->cpart[j] = e == ext;
  }
  return true;
}

/* The plan of splitting kernel op k of g s ways along grid dim gs, its
 * combine partitioning dim cdim cways ways (cdim -1: not); false when it
 * cannot. */
static bool make_plan(const mirs_graph *g, const mirs__kop *k, int gs, int32_t s, int cdim,
                      int32_t cways, plan *p) {
  if (k->op != MIRS_OP_CUSTOM || s < 2 || gs < 0 || gs >= MIRS__GRID ||
      cdim >= MIRS_MAX_DIMS || (cdim >= 0 && cways < 2))
    return false;
  const mirs__bgraph *bg = k->bg;
  if (bg->forloop % s)
    return false;
  p->gs = gs;
  p->cdim = cdim < 0 ? -1 : cdim;
  p->cways = cdim < 0 ? 1 : cways;
  int32_t grid1[MIRS__GRID];
  memcpy(grid1, bg->grid, sizeof grid1);
  grid1[p->gs] = s;
  p->nacc = 0;
  p->nmx = 0;
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (mirs__graph_ops[o->op].kind != MIRS__KIND_ACCUM)
      continue;
    if ((o->op != MIRS_OP_ACCUM && o->op != MIRS_OP_ACCUM_SUM && o->op != MIRS_OP_ACCUM_ONLINE) ||
        p->nacc == MAX_ACC)
      return false;
    p->acc[p->nacc] = o->out;
    p->shift[p->nacc] = -1;
    if (o->op == MIRS_OP_ACCUM_ONLINE && !plan_shift(g, bg, o, grid1, p))
      return false;
    if (!place(g, bg, o->out, gs, p->cdim, grid1, p->omap[p->nacc]))
      return false;
    p->nacc++;
  }
  /* (every partial a named kernel tensor of kernel 1) */
  return p->nacc > 0 && p->nacc + p->nmx <= MAX_ACC && (p->cdim < 0 || plan_combine(g, bg, p));
}

/* Append compute or accumulator op o to nb, its operands and result
 * mapped through bmap. */
static mirs_status copy_bop(mirs_graph *rg, mirs__bgraph *nb, const mirs__bop *o, int32_t *bmap) {
  int32_t in[2];
  for (int a = 0; a < o->nin && a < 2; a++)
    in[a] = bmap[o->in[a]];
  MIRS_CHECK(rg->ctx, mirs__bg_add_op_c(rg, nb, NULL, o->op, o->nin, in, o->dim, o->fused, o->cst,
                                        &bmap[o->out]));
  nb->ops[nb->nops - 1].eps = o->eps;
  return MIRS_OK;
}

/* The names of kernel op k's results into nm (at most 64); false when
 * there are more. */
#define MAX_NAMES 64
static bool out_names(const mirs_graph *g, const mirs__kop *k, const char **nm) {
  if (k->nout > MAX_NAMES)
    return false;
  for (int32_t i = 0; i < k->nout; i++)
    nm[i] = g->t[k->out[i]].name;
  return true;
}

/* Kernel 1 of plan p for kernel k (inputs mapped through map) into *out. */
static mirs_status kernel1(mirs_graph *rg, const mirs__kop *k, int32_t s, const plan *p,
                           const int32_t *map, mirs__bgraph **out) {
  mirs_context *ctx = rg->ctx;
  const mirs__bgraph *bg = k->bg;
  int32_t grid1[MIRS__GRID], *bmap;
  memcpy(grid1, bg->grid, sizeof grid1);
  grid1[p->gs] = s;
  mirs__bgraph *nb;
  MIRS_CHECK(ctx, mirs__bg_new(ctx, grid1, bg->block, bg->forloop / s, &nb));
  bmap = mirs__core_alloc(ctx, sizeof *bmap * ((size_t)bg->nt + 1));
  mirs_status st = bmap ? MIRS_OK : MIRS_NOMEM;
  for (int32_t i = 0; st == MIRS_OK && i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (o->op == MIRS_OP_OUTPUT || (o->out >= 0 && bg->t[o->out].post &&
                                    mirs__graph_ops[o->op].kind != MIRS__KIND_ACCUM))
      continue; /* (the post-loop ops and the stores are kernel 2's) */
    if (o->op == MIRS_OP_INPUT) {
      int32_t imap[MIRS__GRID];
      memcpy(imap, o->imap, sizeof imap);
      imap[p->gs] = o->fmap; /* the chunk of the walked dim, or replicated */
      st = mirs__bg_add_input(rg, nb, NULL, map[o->src], imap, o->fmap, &bmap[o->out]);
      continue;
    }
    st = copy_bop(rg, nb, o, bmap);
  }
  /* The chunk's running max of each shift (docs/SEARCH.md). */
  int32_t run[MAX_ACC];
  for (int j = 0; st == MIRS_OK && j < p->nmx; j++) {
    if (NEVER(nb->t[bmap[p->mx[j]]].shape.d[p->mdim[j]] != 1))
      st = MIRS_FAIL(ctx, MIRS_SHAPE, "split-K: shift %s has extent %lld along dim %d",
                     bg->t[p->mx[j]].name, (long long)nb->t[bmap[p->mx[j]]].shape.d[p->mdim[j]],
                     (int)p->mdim[j]);
    else
      st = mirs__bg_add_op(rg, nb, NULL, MIRS_OP_ACCUM_MAX, 1, &bmap[p->mx[j]], p->mdim[j], false,
                           &run[j]);
  }
  for (int j = 0; st == MIRS_OK && j < p->nacc; j++)
    st = mirs__bg_add_output_dt(rg, nb, bmap[p->acc[j]], p->omap[j], (int32_t)MIRS_F32);
  for (int j = 0; st == MIRS_OK && j < p->nmx; j++)
    st = mirs__bg_add_output_dt(rg, nb, run[j], p->momap[j], (int32_t)MIRS_F32);
  mirs__core_free(ctx, bmap);
  if (st != MIRS_OK) {
    mirs__bg_free(ctx, nb);
    return st;
  }
  *out = nb;
  return MIRS_OK;
}

/* Load partial kernel tensor part, stored by kernel 1 with omap, into
 * kernel 2 nb as tile *t: the same placement less gs, whose dim the
 * forloop walks; gs then partitions dim cdim (the finer combine; -1:
 * gs is 1). */
static mirs_status load_partial(mirs_graph *rg, mirs__bgraph *nb, int32_t part,
                                const int32_t omap[MIRS__GRID], int gs, int cdim, int32_t *t) {
  int32_t imap[MIRS__GRID];
  memcpy(imap, omap, sizeof imap);
  imap[gs] = cdim;
  return mirs__bg_add_input(rg, nb, NULL, part, imap, omap[gs], t);
}

/* Kernel 2 of plan p for kernel k: the partials are kernel tensors
 * part[0..nacc) and the running maxes part[nacc..nacc+nmx), K's outputs
 * keep their dtypes. */
static mirs_status kernel2(mirs_graph *rg, const mirs_graph *g, const mirs__kop *k, int32_t s,
                           const plan *p, const int32_t *part, mirs__bgraph **out) {
  mirs_context *ctx = rg->ctx;
  const mirs__bgraph *bg = k->bg;
  int32_t grid2[MIRS__GRID];
  memcpy(grid2, bg->grid, sizeof grid2);
  grid2[p->gs] = p->cways;
  mirs__bgraph *nb;
  MIRS_CHECK(ctx, mirs__bg_new(ctx, grid2, bg->block, s, &nb));
  int32_t *bmap = mirs__core_alloc(ctx, sizeof *bmap * ((size_t)bg->nt + 1));
  mirs_status st = bmap ? MIRS_OK : MIRS_NOMEM;
  /* The running maxes first (accum_online takes them), then each
   * accumulator's partials, combined by its rule. */
  int32_t run[MAX_ACC];
  for (int j = 0; st == MIRS_OK && j < p->nmx; j++)
    st = load_partial(rg, nb, part[p->nacc + j], p->momap[j], p->gs,
                      p->cdim >= 0 && p->cpart[p->nacc + j] ? p->cdim : -1, &run[j]);
  for (int j = 0; st == MIRS_OK && j < p->nacc; j++) {
    int32_t t[2];
    st = load_partial(rg, nb, part[j], p->omap[j], p->gs,
                      p->cdim >= 0 && p->cpart[j] ? p->cdim : -1, &t[0]);
    if (st != MIRS_OK)
      break;
    if (p->shift[j] >= 0) {
      t[1] = run[p->shift[j]];
      st = mirs__bg_add_op(rg, nb, NULL, MIRS_OP_ACCUM_ONLINE, 2, t, -1, false, &bmap[p->acc[j]]);
    } else {
      st = mirs__bg_add_op(rg, nb, NULL, MIRS_OP_ACCUM, 1, t, -1, false, &bmap[p->acc[j]]);
    }
  }
  int ko = 0;
  for (int32_t i = 0; st == MIRS_OK && i < bg->nops; i++) {
    const mirs__bop *o = &bg->ops[i];
    if (o->op == MIRS_OP_OUTPUT) {
      int32_t omap[MIRS__GRID];
      memcpy(omap, o->omap, sizeof omap);
      omap[p->gs] = p->cdim; /* (each block holds what gs placed whole, or its part) */
      for (int a = 0; p->cdim >= 0 && a < MIRS__GRID; a++)
        if (a != p->gs && grid2[a] == 1 && omap[a] == p->cdim)
          omap[a] = -1; /* (a grid dim of 1 block named it) */
      st = mirs__bg_add_output_dt(rg, nb, bmap[o->in[0]], omap,
                                  (int32_t)g->t[k->out[ko++]].dtype);
      continue;
    }
    if (o->out < 0 || !bg->t[o->out].post || mirs__graph_ops[o->op].kind == MIRS__KIND_ACCUM)
      continue;
    st = copy_bop(rg, nb, o, bmap);
  }
  mirs__core_free(ctx, bmap);
  if (st != MIRS_OK) {
    mirs__bg_free(ctx, nb);
    return st;
  }
  *out = nb;
  return MIRS_OK;
}

/* Append kernel op k of g to rg, its kernel tensors mapped through map
 * (and its results' ids recorded there). */
static mirs_status copy_op(mirs_graph *rg, const mirs_graph *g, const mirs__kop *k, int32_t *map) {
  mirs_context *ctx = rg->ctx;
  int32_t first = rg->nt;
  if (k->op != MIRS_OP_CUSTOM) {
    int32_t in[8];
    if (k->nin > 8)
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "split-K: an op of %d inputs", (int)k->nin);
    for (int32_t a = 0; a < k->nin; a++)
      in[a] = map[k->in[a]];
    MIRS_CHECK(ctx, mirs__graph_copy_op(rg, g->t[k->out[0]].name, k, in, NULL));
  } else {
    mirs__bgraph *nb;
    MIRS_CHECK(ctx, mirs__bg_clone(ctx, k->bg, &nb));
    for (int32_t i = 0; i < nb->nops; i++)
      if (nb->ops[i].op == MIRS_OP_INPUT)
        nb->ops[i].src = map[nb->ops[i].src];
    const char *nm[MAX_NAMES];
    if (!out_names(g, k, nm)) {
      mirs__bg_free(ctx, nb);
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "split-K: a kernel of %d outputs", (int)k->nout);
    }
    MIRS_CHECK(ctx, mirs__graph_add_custom(rg, nb, nm, NULL)); /* takes nb */
  }
  for (int32_t i = 0; i < k->nout; i++)
    map[k->out[i]] = first + i;
  return MIRS_OK;
}

/* Names of the nacc partials of kernel k into buf/nm: `<k's first
 * result>_part<j>`, suffixed until no tensor of g or rg has it.  Fresh
 * names (t<id>) would not do: the tensors of g copied after the partials
 * keep their names, and g's own t<id> names sit at those very ids. */
#define PART_NAME 48
static void part_names(const mirs_graph *g, const mirs_graph *rg, const mirs__kop *k, int nacc,
                       char buf[][PART_NAME], const char **nm) {
  const char *base = g->t[k->out[0]].name;
  for (int j = 0; j < nacc; j++) {
    for (int n = 0;; n++) {
      snprintf(buf[j], PART_NAME, n ? "%.24s_part%d_%d" : "%.24s_part%d", base, j, n);
      bool taken = mirs__graph_find(g, buf[j]) >= 0 || mirs__graph_find(rg, buf[j]) >= 0;
      for (int i = 0; i < j && !taken; i++)
        taken = !strcmp(buf[i], buf[j]);
      if (!taken)
        break;
    }
    nm[j] = buf[j];
  }
}

/* Append kernel op k of g split by plan p to rg. */
static mirs_status split_op(mirs_graph *rg, const mirs_graph *g, const mirs__kop *k, int32_t s,
                            const plan *p, int32_t *map) {
  mirs_context *ctx = rg->ctx;
  mirs__bgraph *b1 = NULL, *b2 = NULL;
  MIRS_CHECK(ctx, kernel1(rg, k, s, p, map, &b1));
  char pbuf[MAX_ACC][PART_NAME];
  const char *pnm[MAX_ACC];
  part_names(g, rg, k, p->nacc + p->nmx, pbuf, pnm);
  int32_t first;
  MIRS_CHECK(ctx, mirs__graph_add_custom(rg, b1, pnm, &first)); /* takes b1 */
  int32_t part[MAX_ACC];
  for (int j = 0; j < p->nacc + p->nmx; j++)
    part[j] = first + j;
  MIRS_CHECK(ctx, kernel2(rg, g, k, s, p, part, &b2));
  const char *nm[MAX_NAMES];
  if (!out_names(g, k, nm)) {
    mirs__bg_free(ctx, b2);
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "split-K: a kernel of %d outputs", (int)k->nout);
  }
  first = rg->nt;
  MIRS_CHECK(ctx, mirs__graph_add_custom(rg, b2, nm, NULL)); /* takes b2 */
  for (int32_t i = 0; i < k->nout; i++)
    map[k->out[i]] = first + i;
  return MIRS_OK;
}

/* Public within the library: g with kernel op kop split s ways along
 * gs, its combine partitioning dim cdim cways ways. */
mirs_status mirs__splitk_variant_combine(mirs_context *ctx, const mirs_graph *g, int32_t kop,
                                         int gs, int32_t s, int cdim, int32_t cways,
                                         mirs_graph **out) {
  *out = NULL;
  plan p;
  if (kop < 0 || kop >= g->nops || !make_plan(g, &g->ops[kop], gs, s, cdim, cways, &p))
    return MIRS_OK;
  mirs_graph *rg;
  MIRS_CHECK(ctx, mirs__graph_new(ctx, g->name, &rg));
  int32_t *map = mirs__core_alloc(ctx, sizeof *map * ((size_t)g->nt + 1));
  mirs_status st = map ? MIRS_OK : MIRS_NOMEM;
  for (int32_t t = 0; st == MIRS_OK && t < g->nt; t++) {
    const mirs__ktensor *kt = &g->t[t];
    if (kt->producer < 0)
      st = mirs__graph_add_input(rg, kt->name, kt->dtype, &kt->shape, &map[t]);
    else if (kt->out_index == 0 && kt->producer == kop)
      st = split_op(rg, g, &g->ops[kop], s, &p, map);
    else if (kt->out_index == 0)
      st = copy_op(rg, g, &g->ops[kt->producer], map);
  }
  for (int32_t i = 0; st == MIRS_OK && i < g->nout; i++)
    st = mirs__graph_mark_output(rg, map[g->outputs[i]]);
  if (st == MIRS_OK)
    st = mirs__graph_validate(rg);
  mirs__core_free(ctx, map);
  if (st != MIRS_OK) {
    mirs__graph_free(rg);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  rg->ugraph = true;
  *out = rg;
  return MIRS_OK;
}

mirs_status mirs__splitk_variant(mirs_context *ctx, const mirs_graph *g, int32_t kop, int gs,
                                 int32_t s, mirs_graph **out) {
  return mirs__splitk_variant_combine(ctx, g, kop, gs, s, -1, 1, out);
}
