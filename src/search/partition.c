/* SPDX-License-Identifier: MIT */
/* src/search/partition.c - the public mirs_partition_*: a whole program
 * cut into pieces (partition_cut.c), each searched by mirs_search_run
 * (which consults the result cache, cache.c) or kept, and the bests
 * stitched into one µGraph of the program, verified against it.
 *
 * Stitching: the program's inputs first, then each piece's µGraph in the
 * pieces' (topological) order, its inputs x_i bound to the stitched
 * tensors of the piece's inputs and its outputs y_j given the program's
 * names of the tensors they stand for; its other tensors are named
 * p<piece>_<name> (made unique).  So the stitched graph has the
 * program's inputs and outputs by name, and `mirsearch verify` compares
 * the two directly.
 *
 * Over MPI the pieces are independent units of work: rank r searches
 * the pieces i with i mod ranks = r, each storing its results in the
 * result cache (a directory every rank shares); after every rank is done
 * (mirs_mpi_agree), rank 0 takes every piece from the cache (verifying
 * each again, as a hit always is), stitches and verifies.
 *
 * A piece next to a layout op of another piece (reading its result or
 * writing its input) keeps its search's best results: once every piece
 * has a best, each such piece takes the option that makes the whole
 * stitched µGraph cheapest (rank_in_place), since whether a layout op is
 * a view or a copy kernel depends on all its readers (views.c).
 *
 * Invariants: a stopped run stitches nothing (mirs_partition_result is
 * NULL) and leaves the pieces it finished in the cache; every piece's
 * best is owned by p; the stitched graph is reported only after it
 * verified equal to the program (or could not be fingerprinted at all:
 * then its float64 check decides and the report says so). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/cost.h"
#include "mirsearch/codegen.h"
#include "search/cache.h"
#include "search/partition.h"
#include "search/search.h"

const char *mirs__piece_kind_name(mirs_piece_kind k) {
  static const char *const names[] = {"searched", "cached", "library", "kept", "pending"};
  return (int)k >= 0 && k <= MIRS_PIECE_PENDING ? names[k] : "?";
}

/* ---------------------------------------------------------------- create */

/* Whether program op k moves elements without computing (a layout op or
 * a transpose: views.c may make it a view, or store through it). */
static bool moves_op(const mirs_graph *g, int32_t k) {
  return k >= 0 && (mirs__op_is_layout(g->ops[k].op) || g->ops[k].op == MIRS_OP_TRANSPOSE);
}

/* Mark the pieces at a layout op of another piece: those reading its
 * result (maybe a view, read at its strides) or writing its input (maybe
 * stored through it).  How such a piece's kernels read and write, and
 * whether the layout op is a view or a copy kernel, depend on one
 * another and on every other reader (views.c), so its candidates are
 * ranked again in the whole stitched µGraph (rank_in_place). */
static void mark_at_layout(mirs_partition *p) {
  const mirs_graph *g = p->program;
  for (int32_t i = 0; i < p->npieces; i++) {
    mirs__piece *pc = &p->piece[i];
    for (int32_t x = 0; x < pc->nin && !pc->at_layout; x++)
      pc->at_layout = moves_op(g, g->t[pc->in[x]].producer);
    for (int32_t y = 0; y < pc->nout && !pc->at_layout; y++)
      for (int32_t k = 0; k < g->nops && !pc->at_layout; k++)
        for (int32_t a = 0; a < g->ops[k].nin; a++)
          if (g->ops[k].in[a] == pc->out[y] && moves_op(g, k))
            pc->at_layout = true;
    pc->at_layout = pc->at_layout && pc->info.kind != MIRS_PIECE_LIBRARY;
    pc->choice = -1;
  }
}

mirs_status mirs_partition_create(mirs_context *ctx, const mirs_graph *program,
                                  mirs_partition **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!program || !out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_partition_create: NULL argument");
  *out = NULL;
  if (program->nout == 0)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "partition: the program has no outputs");
  for (int32_t k = 0; k < program->nops; k++)
    if (program->ops[k].op == MIRS_OP_CUSTOM)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "partition: the program holds a custom kernel (op %d): partition takes "
                       "a program (.graph) of predefined operators, not a µGraph",
                       (int)k);
  MIRS_CHECK(ctx, mirs__graph_validate(program));
  mirs_partition *p = mirs__core_calloc(ctx, 1, sizeof *p);
  if (!p)
    return MIRS_NOMEM;
  p->ctx = ctx;
  p->nranks = 1;
  p->stats.struct_size = sizeof p->stats;
  mirs_status st = mirs__graph_clone_in(ctx, program, &p->program);
  if (st == MIRS_OK)
    st = mirs__partition_cut(p);
  if (st != MIRS_OK) {
    mirs_partition_destroy(p);
    MIRS_CHECK(ctx, st);
  }
  mark_at_layout(p);
  p->stats.pieces = p->npieces;
  for (int32_t i = 0; i < p->npieces; i++)
    if (p->piece[i].info.kind == MIRS_PIECE_LIBRARY)
      p->stats.library++;
  p->stats.pending = p->npieces - p->stats.library;
  mirs__core_log(ctx, MIRS_LOG_INFO, "partition: %d ops in %d pieces (%d library calls)",
                 (int)program->nops, (int)p->npieces, p->stats.library);
  *out = p;
  return MIRS_OK;
}

mirs_status mirs_partition_set_callbacks(mirs_partition *p, mirs_partition_progress_fn progress,
                                         mirs_partition_stop_fn should_stop, void *user) {
  if (!p)
    return MIRS_INVALID_ARG;
  p->progress = progress;
  p->should_stop = should_stop;
  p->user = user;
  return MIRS_OK;
}

mirs_status mirs_partition_set_mpi(mirs_partition *p) {
  if (!p)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = p->ctx;
  int rank = 0, n = 1;
  MIRS_CHECK(ctx, mirs_mpi_init(ctx, &rank, &n));
  if (!ctx->opt.cache_dir[0])
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "partition over MPI: the pieces' results travel through the result "
                     "cache: set cache_dir to a directory every rank shares");
  p->mpi = true;
  p->rank = rank;
  p->nranks = n;
  return MIRS_OK;
}

mirs_status mirs_partition_stop(mirs_partition *p) {
  if (!p)
    return MIRS_INVALID_ARG;
  atomic_store(&p->stop, 1);
  mirs_search *s = atomic_load(&p->cur);
  if (s)
    mirs_search_stop(s);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- one piece */

/* The piece search's should_stop: the partition's stop or its caller's. */
static int piece_should_stop(void *user) {
  mirs_partition *p = user;
  return atomic_load(&p->stop) || (p->should_stop && p->should_stop(p->user));
}

/* Keep piece pc as written (its program is what runs). */
static mirs_status keep_piece(mirs_partition *p, mirs__piece *pc, mirs_piece_kind kind) {
  MIRS_CHECK(p->ctx, mirs__graph_clone_in(p->ctx, pc->prog, &pc->best));
  pc->info.kind = kind;
  pc->info.cost_after = pc->info.cost_before;
  pc->info.speedup = 1;
  pc->info.best_hash = pc->info.program_hash;
  pc->choice = -1;
  return MIRS_OK;
}

/* Make option k of piece pc its best: candidate k, or the piece as
 * written (k = -1, kept). */
static mirs_status use_option(mirs_partition *p, mirs__piece *pc, int k) {
  mirs_graph *b;
  MIRS_CHECK(p->ctx, mirs__graph_clone_in(p->ctx, k < 0 ? pc->prog : pc->cand[k], &b));
  mirs__graph_free(pc->best);
  pc->best = b;
  pc->choice = k;
  pc->info.kind = k < 0                ? MIRS_PIECE_KEPT
                  : pc->info.from_cache ? MIRS_PIECE_CACHED
                                        : MIRS_PIECE_SEARCHED;
  pc->info.best_hash = k < 0 ? pc->info.program_hash : pc->cand_hash[k];
  return MIRS_OK;
}

/* Keep the best results of search s as piece pc's candidates: at most
 * MIRS__CACHE_RESULTS, what a cache entry keeps, so a piece served from
 * the cache (over MPI, another rank's) is ranked among the same results
 * as one searched here. */
static mirs_status keep_candidates(mirs_partition *p, mirs__piece *pc, const mirs_search *s) {
  for (int k = 0; k < pc->ncand; k++) /* (none: each piece runs once) */
    mirs__graph_free(pc->cand[k]);
  mirs__core_free(p->ctx, pc->cand);
  mirs__core_free(p->ctx, pc->cand_hash);
  pc->cand = NULL;
  pc->cand_hash = NULL;
  pc->ncand = 0;
  int n = mirs_search_num_results(s);
  n = n < MIRS__CACHE_RESULTS ? n : MIRS__CACHE_RESULTS;
  if (n < 1)
    return MIRS_OK;
  pc->cand = mirs__core_calloc(p->ctx, (size_t)n, sizeof *pc->cand);
  pc->cand_hash = mirs__core_calloc(p->ctx, (size_t)n, sizeof *pc->cand_hash);
  if (!pc->cand || !pc->cand_hash)
    return MIRS_NOMEM;
  for (; pc->ncand < n; pc->ncand++) {
    MIRS_CHECK(p->ctx,
               mirs__graph_clone_in(p->ctx, mirs_search_result(s, pc->ncand), &pc->cand[pc->ncand]));
    pc->cand_hash[pc->ncand] = mirs_search_result_hash(s, pc->ncand);
  }
  return MIRS_OK;
}

/* Take the search's best for piece i when it beats the piece as written,
 * both priced alone (a piece at a layout op keeps its candidates, ranked
 * again in place once every piece has a best: rank_in_place). */
static mirs_status take_best(mirs_partition *p, int32_t i, const mirs_search *s) {
  mirs__piece *pc = &p->piece[i];
  pc->info.from_cache = mirs_search_cache_status(s) == 1;
  if (pc->at_layout)
    MIRS_CHECK(p->ctx, keep_candidates(p, pc, s));
  double c0 = mirs_search_num_results(s) > 0 ? mirs_search_result_cost(s, 0) : INFINITY;
  if (!(c0 < pc->info.cost_before))
    return keep_piece(p, pc, MIRS_PIECE_KEPT);
  MIRS_CHECK(p->ctx, mirs__graph_clone_in(p->ctx, mirs_search_result(s, 0), &pc->best));
  pc->choice = 0;
  pc->info.kind = pc->info.from_cache ? MIRS_PIECE_CACHED : MIRS_PIECE_SEARCHED;
  pc->info.cost_after = c0;
  pc->info.speedup = pc->info.cost_before / c0;
  pc->info.kernels = mirs_search_result_kernels(s, 0);
  pc->info.best_hash = mirs_search_result_hash(s, 0);
  return MIRS_OK;
}

/* Search piece i (or take it from the cache, or keep it).  A search
 * stopped by an interrupt or the caller leaves it pending and stops the
 * partition; one stopped by a limit gives its best so far. */
static mirs_status run_piece(mirs_partition *p, int32_t i) {
  mirs_context *ctx = p->ctx;
  mirs__piece *pc = &p->piece[i];
  mirs_cost cost = MIRS_COST_INIT;
  MIRS_CHECK(ctx, mirs_graph_cost(ctx, pc->prog, NULL, &cost));
  pc->info.cost_before = cost.seconds;
  pc->info.kernels = cost.kernels;
  if (pc->info.kind == MIRS_PIECE_LIBRARY || pc->nout == 0)
    return keep_piece(p, pc, pc->info.kind == MIRS_PIECE_LIBRARY ? MIRS_PIECE_LIBRARY
                                                                  : MIRS_PIECE_KEPT);
  mirs_search *s = NULL;
  mirs_status st = mirs_search_create(ctx, pc->prog, &s);
  if (st == MIRS_UNSUPPORTED) {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "partition: piece %d is kept as written: %s", (int)i,
                   mirs_last_error(ctx));
    mirs_clear_error(ctx);
    return keep_piece(p, pc, MIRS_PIECE_KEPT);
  }
  MIRS_CHECK(ctx, st);
  st = mirs_search_set_callbacks(s, NULL, NULL, piece_should_stop, p);
  atomic_store(&p->cur, s);
  if (st == MIRS_OK && !piece_should_stop(p))
    st = mirs_search_run(s);
  atomic_store(&p->cur, NULL);
  mirs_search_stats ss;
  if (st == MIRS_OK)
    st = mirs_search_get_stats(s, &ss);
  if (st == MIRS_OK) {
    mirs_stop why = mirs_search_stop_why(s);
    pc->info.states_explored = ss.states_explored;
    pc->info.wall_seconds = ss.wall_seconds;
    pc->info.complete = ss.complete;
    p->stats.states_explored += ss.states_explored;
    if (!ss.complete && (why == MIRS_STOP_INTERRUPT || why == MIRS_STOP_CALLER ||
                         why == MIRS_STOP_NONE || piece_should_stop(p)))
      p->stats.stopped = 1;
    else
      st = take_best(p, i, s);
  }
  mirs_search_destroy(s);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- stitching */

/* A name for piece i's tensor `name` in r that neither r nor the program
 * has, into buf. */
static void stitched_name(const mirs_partition *p, const mirs_graph *r, int32_t i,
                          const char *name, char *buf, size_t size) {
  int n = snprintf(buf, size, "p%d_%s", (int)i, name);
  while (n > 0 && (size_t)n + 1 < size &&
         (mirs__graph_find(r, buf) >= 0 || mirs__graph_find(p->program, buf) >= 0)) {
    buf[n++] = '_';
    buf[n] = '\0';
  }
}

/* The index j of b's tensor t when it is output y_j (by name), else -1. */
static int32_t output_index(const mirs_graph *b, int32_t t, char letter) {
  const char *nm = b->t[t].name;
  char *end;
  if (!nm || nm[0] != letter || !nm[1])
    return -1;
  long j = strtol(nm + 1, &end, 10);
  return *end == '\0' && j >= 0 && j < INT32_MAX ? (int32_t)j : -1;
}

/* Add kernel op k of piece i's µGraph b to r, its tensors mapped by bmap
 * (b's tensor -> r's). */
static mirs_status stitch_op(mirs_partition *p, mirs_graph *r, int32_t i, const mirs_graph *b,
                             const mirs__kop *k, int32_t *bmap) {
  mirs_context *ctx = p->ctx;
  const mirs__piece *pc = &p->piece[i];
  char buf[8][MIRS__NAME_MAX + 16];
  const char *names[8];
  if (k->nout > 8 || (k->op != MIRS_OP_CUSTOM && k->nin > 8))
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "partition: a kernel op with %d outputs", (int)k->nout);
  for (int32_t o = 0; o < k->nout; o++) {
    int32_t j = output_index(b, k->out[o], 'y');
    bool is_out = false;
    for (int32_t q = 0; q < b->nout; q++)
      is_out = is_out || b->outputs[q] == k->out[o];
    if (is_out && j >= 0 && j < pc->nout)
      snprintf(buf[o], sizeof buf[o], "%s", p->program->t[pc->out[j]].name);
    else
      stitched_name(p, r, i, b->t[k->out[o]].name, buf[o], sizeof buf[o]);
    names[o] = buf[o];
  }
  int32_t first = -1;
  if (k->op != MIRS_OP_CUSTOM) {
    int32_t in[8];
    for (int32_t a = 0; a < k->nin; a++)
      in[a] = bmap[k->in[a]];
    MIRS_CHECK(ctx, mirs__graph_copy_op(r, names[0], k, in, &first));
  } else {
    mirs__bgraph *bg;
    MIRS_CHECK(ctx, mirs__bg_clone(ctx, k->bg, &bg));
    for (int32_t q = 0; q < bg->nops; q++)
      if (bg->ops[q].op == MIRS_OP_INPUT)
        bg->ops[q].src = bmap[bg->ops[q].src];
    MIRS_CHECK(ctx, mirs__graph_add_custom(r, bg, names, &first));
  }
  for (int32_t o = 0; o < k->nout; o++)
    bmap[k->out[o]] = first + o;
  return MIRS_OK;
}

/* Add µGraph b of piece i (its best, or a candidate) to r: its inputs
 * bound through tmap (program tensor -> r's), its outputs entered in
 * tmap. */
static mirs_status stitch_piece(mirs_partition *p, mirs_graph *r, int32_t i, const mirs_graph *b,
                                int32_t *tmap) {
  mirs_context *ctx = p->ctx;
  const mirs__piece *pc = &p->piece[i];
  int32_t *bmap = mirs__core_calloc(ctx, (size_t)b->nt + 1, sizeof *bmap);
  if (!bmap)
    return MIRS_NOMEM;
  mirs_status st = MIRS_OK;
  for (int32_t t = 0; t < b->nt && st == MIRS_OK; t++) {
    bmap[t] = -1;
    if (b->t[t].producer < 0) {
      int32_t x = output_index(b, t, 'x');
      if (x < 0 || x >= pc->nin || tmap[pc->in[x]] < 0)
        st = MIRS_FAIL(ctx, MIRS_INTERNAL, "partition: piece %d's graph has a stray input %s",
                       (int)i, b->t[t].name);
      else
        bmap[t] = tmap[pc->in[x]];
    }
  }
  p->piece[i].r_first = r->nops;
  for (int32_t k = 0; k < b->nops && st == MIRS_OK; k++)
    st = stitch_op(p, r, i, b, &b->ops[k], bmap);
  p->piece[i].r_end = r->nops;
  for (int32_t q = 0; q < b->nout && st == MIRS_OK; q++) {
    int32_t j = output_index(b, b->outputs[q], 'y');
    if (j < 0 || j >= pc->nout)
      st = MIRS_FAIL(ctx, MIRS_INTERNAL, "partition: piece %d's graph has a stray output", (int)i);
    else
      tmap[pc->out[j]] = bmap[b->outputs[q]];
  }
  mirs__core_free(ctx, bmap);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* The stitched µGraph of every piece's best into *out, validated; with
 * alt, piece i's µGraph is alt instead (a candidate priced in place). */
static mirs_status stitch_with(mirs_partition *p, int32_t i, const mirs_graph *alt,
                               mirs_graph **out) {
  mirs_context *ctx = p->ctx;
  const mirs_graph *g = p->program;
  mirs_graph *r;
  MIRS_CHECK(ctx, mirs__graph_new(ctx, g->name, &r));
  r->ugraph = true;
  int32_t *tmap = mirs__core_calloc(ctx, (size_t)g->nt + 1, sizeof *tmap);
  mirs_status st = tmap ? MIRS_OK : MIRS_NOMEM;
  for (int32_t t = 0; t < g->nt && st == MIRS_OK; t++) {
    tmap[t] = -1;
    if (g->t[t].producer < 0)
      st = mirs__graph_add_input(r, g->t[t].name, g->t[t].dtype, &g->t[t].shape, &tmap[t]);
  }
  for (int32_t k = 0; k < p->npieces && st == MIRS_OK; k++)
    st = stitch_piece(p, r, k, alt && k == i ? alt : p->piece[k].best, tmap);
  for (int32_t q = 0; q < g->nout && st == MIRS_OK; q++)
    st = mirs__graph_mark_output(r, tmap[g->outputs[q]]);
  if (st == MIRS_OK)
    st = mirs__graph_validate(r);
  mirs__core_free(ctx, tmap);
  if (st != MIRS_OK) {
    mirs__graph_free(r);
    MIRS_CHECK(ctx, st);
  }
  *out = r;
  return MIRS_OK;
}

/* The stitched µGraph of every piece's best into *out. */
static mirs_status stitch(mirs_partition *p, mirs_graph **out) {
  MIRS_CHECK(p->ctx, stitch_with(p, -1, NULL, out));
  return MIRS_OK;
}

/* Predicted seconds and kernel launches of kernel ops [first, end) of g. */
static mirs_status price_range(mirs_context *ctx, const mirs_graph *g, int32_t first, int32_t end,
                               double *seconds, int *kernels) {
  *seconds = 0;
  *kernels = 0;
  for (int32_t k = first; k < end; k++) {
    mirs_cost c = MIRS_COST_INIT;
    MIRS_CHECK(ctx, mirs_graph_kernel_cost(ctx, g, k, NULL, &c));
    *seconds += c.seconds;
    *kernels += c.kernels;
  }
  return MIRS_OK;
}

/* The options' device, loaded once for a ranking in place. */
typedef struct pricer {
  mirs__cost_profiles *prof;
  const mirs__cost_device *dev;
} pricer;

static mirs_status pricer_open(mirs_context *ctx, pricer *pr) {
  pr->prof = NULL;
  pr->dev = NULL;
  mirs_status st = mirs__cost_profiles_load(ctx, NULL, &pr->prof);
  if (st == MIRS_OK)
    st = mirs__cost_find(ctx, pr->prof, ctx->opt.cost_device, &pr->dev);
  if (st != MIRS_OK)
    mirs__cost_profiles_free(pr->prof);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Predicted seconds of the whole stitched µGraph, piece i's µGraph
 * replaced by alt when not NULL: what `mirsearch show` of best.ugraph
 * would say were alt taken. */
static mirs_status price_whole(mirs_partition *p, const pricer *pr, int32_t i,
                               const mirs_graph *alt, double *seconds) {
  mirs_graph *r;
  MIRS_CHECK(p->ctx, stitch_with(p, i, alt, &r));
  mirs__cost_result c;
  mirs_status st = mirs__cost_graph(p->ctx, pr->dev, r, &c);
  *seconds = c.seconds;
  mirs__graph_free(r);
  MIRS_CHECK(p->ctx, st);
  return MIRS_OK;
}

mirs_status mirs__partition_in_place(mirs_partition *p, int32_t i, const mirs_graph *const *cand,
                                     int n, double *cost, double *before) {
  pricer pr;
  MIRS_CHECK(p->ctx, pricer_open(p->ctx, &pr));
  mirs_status st = price_whole(p, &pr, i, p->piece[i].prog, before);
  for (int j = 0; j < n && st == MIRS_OK; j++)
    st = price_whole(p, &pr, i, cand[j], &cost[j]);
  mirs__cost_profiles_free(pr.prof);
  MIRS_CHECK(p->ctx, st);
  return MIRS_OK;
}

/* Passes over the pieces at layout ops at most (each one that changes a
 * choice lowers the whole program's cost; two or three settle it). */
#define RANK_PASSES 4

/* Choose piece i's option (a candidate or the piece as written) that
 * makes the whole stitched µGraph cheapest, the other pieces as they
 * are; *cur is the whole program's cost now, and after.  A change needs
 * a strictly lower cost (the first such option in order, the piece as
 * written first), so the passes end. */
static mirs_status rank_piece(mirs_partition *p, const pricer *pr, int32_t i, double *cur,
                              bool *changed) {
  mirs__piece *pc = &p->piece[i];
  int best = pc->choice;
  double low = *cur;
  for (int k = -1; k < pc->ncand; k++) {
    if (k == pc->choice)
      continue;
    double c;
    MIRS_CHECK(p->ctx, price_whole(p, pr, i, k < 0 ? pc->prog : pc->cand[k], &c));
    if (c < low) {
      low = c;
      best = k;
    }
  }
  if (best != pc->choice) {
    MIRS_CHECK(p->ctx, use_option(p, pc, best));
    *cur = low;
    *changed = true;
  }
  return MIRS_OK;
}

/* Rank the pieces at layout ops where they run (mark_at_layout): whether
 * a layout op is a view or a copy kernel, and what a kernel reading or
 * writing it through its view costs, depend on every reader in the whole
 * program (views.c), so each such piece's options (its candidates, the
 * piece as written) are priced by the whole stitched µGraph's cost with
 * the other pieces' bests, the cheapest taken, piece after piece, until
 * a pass changes nothing.  The bests stitched are then what was priced:
 * the table's whole-program line is `mirsearch show` of best.ugraph.
 * Each such piece's `before` is the piece as written where it runs. */
static mirs_status rank_in_place(mirs_partition *p) {
  mirs_context *ctx = p->ctx;
  int n = 0;
  for (int32_t i = 0; i < p->npieces; i++)
    n += p->piece[i].at_layout;
  if (n == 0)
    return MIRS_OK;
  pricer pr;
  MIRS_CHECK(ctx, pricer_open(ctx, &pr));
  double cur;
  mirs_status st = price_whole(p, &pr, -1, NULL, &cur);
  bool changed = true;
  for (int pass = 0; pass < RANK_PASSES && changed && st == MIRS_OK; pass++) {
    changed = false;
    for (int32_t i = 0; i < p->npieces && st == MIRS_OK; i++)
      if (p->piece[i].at_layout && p->piece[i].ncand > 0)
        st = rank_piece(p, &pr, i, &cur, &changed);
  }
  mirs__cost_profiles_free(pr.prof);
  for (int32_t i = 0; i < p->npieces && st == MIRS_OK; i++) {
    mirs__piece *pc = &p->piece[i];
    if (!pc->at_layout)
      continue;
    mirs_graph *r;
    int kernels;
    st = stitch_with(p, i, pc->prog, &r);
    if (st == MIRS_OK)
      st = price_range(ctx, r, pc->r_first, pc->r_end, &pc->info.cost_before, &kernels);
    mirs__graph_free(r);
    char what[32] = "the piece as written";
    if (pc->choice >= 0)
      snprintf(what, sizeof what, "result %d", pc->choice);
    if (st == MIRS_OK && pc->ncand > 0)
      mirs__core_log(ctx, MIRS_LOG_INFO,
                     "partition: piece %d is at a layout op: its %d results and the piece as "
                     "written priced in the whole stitched µGraph; %s taken (whole program "
                     "%.3f us)",
                     (int)i, pc->ncand, what, cur * 1e6);
  }
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* Price each piece where it runs, not alone: after, its ops in the
 * stitched graph r; before, a library piece's op in the program.  There
 * a reshape or permute that is a view costs nothing and launches
 * nothing, and a kernel reads its inputs through their views (alone, a
 * layout op's result is an output, hence a copy, and inputs are dense),
 * so the rows add up to the whole-program line. */
static mirs_status price_pieces(mirs_partition *p, const mirs_graph *r) {
  for (int32_t i = 0; i < p->npieces; i++) {
    mirs__piece *pc = &p->piece[i];
    MIRS_CHECK(p->ctx, price_range(p->ctx, r, pc->r_first, pc->r_end, &pc->info.cost_after,
                                   &pc->info.kernels));
    if (pc->info.kind == MIRS_PIECE_LIBRARY) { /* (one op, the program's op i in order) */
      int kernels;
      int32_t op = pc->nops == 1 ? pc->ops[0] : -1;
      if (op >= 0)
        MIRS_CHECK(p->ctx, price_range(p->ctx, p->program, op, op + 1, &pc->info.cost_before,
                                       &kernels));
    }
    pc->info.speedup = pc->info.cost_after > 0 ? pc->info.cost_before / pc->info.cost_after : 1;
  }
  return MIRS_OK;
}

/* Verify the stitched graph r against the program and cost both. */
static mirs_status check_stitched(mirs_partition *p, const mirs_graph *r) {
  mirs_context *ctx = p->ctx;
  mirs_verify_result *v = &p->stats.verify;
  mirs_status st = mirs_verify(ctx, p->program, r, v);
  if (st == MIRS_UNSUPPORTED) {
    /* Each piece was fingerprinted alone, its inputs random finite
     * values; the whole program may still have no sound fingerprint: an
     * exp of an exp across two pieces, or causal_mask's -inf reaching a
     * use the field cannot take in a piece that read it as a finite
     * input (the cut keeps a piece from passing it on, partition_cut.c,
     * which removes the common case).  Float64 decides, and the note
     * says which refusal it was, in the verifier's words. */
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "partition: the stitched µGraph cannot be fingerprinted against the whole "
                   "program (%s); it is checked in float64 only",
                   mirs_last_error(ctx));
    char why[sizeof v->reason - 40]; /* (the note's prefix and the reason fit) */
    snprintf(why, sizeof why, "%s", mirs_last_error(ctx));
    mirs_clear_error(ctx);
    mirs_eval_result *a = NULL, *b = NULL;
    st = mirs_graph_eval(p->program, (uint64_t)ctx->opt.seed, &a);
    if (st == MIRS_OK)
      st = mirs_graph_eval(r, (uint64_t)ctx->opt.seed, &b);
    if (st == MIRS_OK) {
      v->float_checked = 1;
      v->float_max_rel_error = mirs__eval_max_rel_error(a, b);
      v->equal = v->float_max_rel_error <= ctx->opt.float_tolerance;
      snprintf(v->reason, sizeof v->reason, "float64 only, no sound fingerprint: %s", why);
    }
    mirs_eval_result_destroy(a);
    mirs_eval_result_destroy(b);
  }
  MIRS_CHECK(ctx, st);
  if (!v->equal)
    return MIRS_FAIL(ctx, MIRS_INTERNAL,
                     "partition: the stitched µGraph does not compute the program (%s)",
                     v->reason);
  mirs_cost a = MIRS_COST_INIT, b = MIRS_COST_INIT;
  MIRS_CHECK(ctx, mirs_graph_cost(ctx, p->program, NULL, &a));
  MIRS_CHECK(ctx, mirs_graph_cost(ctx, r, NULL, &b));
  p->stats.cost_before = a.seconds;
  p->stats.cost_after = b.seconds;
  p->stats.speedup = b.seconds > 0 ? a.seconds / b.seconds : 1; /* (no ops: 0 / 0) */
  p->stats.kernels = b.kernels;
  MIRS_CHECK(ctx, price_pieces(p, r));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- run */

/* Count the pieces by kind. */
static void count_kinds(mirs_partition *p) {
  mirs_partition_stats *s = &p->stats;
  s->searched = s->cached = s->library = s->kept = s->pending = 0;
  for (int32_t i = 0; i < p->npieces; i++) {
    mirs_piece_kind k = p->piece[i].best ? p->piece[i].info.kind : MIRS_PIECE_PENDING;
    p->piece[i].info.kind = k;
    s->searched += k == MIRS_PIECE_SEARCHED;
    s->cached += k == MIRS_PIECE_CACHED;
    s->library += k == MIRS_PIECE_LIBRARY;
    s->kept += k == MIRS_PIECE_KEPT;
    s->pending += k == MIRS_PIECE_PENDING;
  }
}

/* Run the pieces i with i mod step == first, in order, until stopped. */
static mirs_status run_pieces(mirs_partition *p, int first, int step, int *done) {
  for (int32_t i = first; i < p->npieces && !p->stats.stopped; i += step) {
    if (piece_should_stop(p) || mirs_interrupted(p->ctx)) {
      p->stats.stopped = 1;
      break;
    }
    MIRS_CHECK(p->ctx, run_piece(p, i));
    if (!p->stats.stopped && p->progress)
      p->progress(p->user, (int)i, ++*done, (int)p->npieces);
  }
  return MIRS_OK;
}

mirs_status mirs_partition_run(mirs_partition *p) {
  if (!p)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = p->ctx;
  if (p->ran)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_partition_run: this partition has already run");
  p->ran = true;
  double t0 = mirs__core_now();
  int done = 0;
  mirs_status st = MIRS_OK;
  if (p->mpi && p->nranks > 1) {
    /* Each rank its share, into the shared cache; then rank 0 all of
     * them (cache hits for the other ranks' shares). */
    st = run_pieces(p, p->rank, p->nranks, &done);
    int code = st != MIRS_OK ? 3 : p->stats.stopped ? 4 : 0;
    int all = mirs_mpi_agree(code);
    if (st == MIRS_OK && all == 4)
      p->stats.stopped = 1;
    else if (st == MIRS_OK && all != 0)
      st = MIRS_FAIL(ctx, MIRS_MPI, "partition: another rank failed on its pieces");
    if (st == MIRS_OK && p->rank == 0 && !p->stats.stopped) {
      done = 0;
      for (int32_t i = 0; i < p->npieces && st == MIRS_OK && !p->stats.stopped; i++)
        if (!p->piece[i].best)
          st = run_pieces(p, (int)i, (int)p->npieces, &done);
    }
  } else {
    st = run_pieces(p, 0, 1, &done);
  }
  if (st == MIRS_OK && !p->stats.stopped && p->rank == 0)
    st = rank_in_place(p);
  count_kinds(p);
  if (st == MIRS_OK && !p->stats.stopped && p->rank == 0) {
    mirs_graph *r = NULL;
    st = stitch(p, &r);
    if (st == MIRS_OK)
      st = check_stitched(p, r);
    if (st == MIRS_STOPPED) { /* (interrupted while verifying: a stop like any other) */
      mirs_clear_error(ctx);
      p->stats.stopped = 1;
      st = MIRS_OK;
    } else if (st == MIRS_OK) {
      p->result = r;
      r = NULL;
    }
    mirs__graph_free(r);
  }
  p->stats.wall_seconds = mirs__core_now() - t0;
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- accessors */

int mirs_partition_stopped(const mirs_partition *p) {
  return p && p->stats.stopped;
}

const mirs_graph *mirs_partition_program(const mirs_partition *p) {
  return p ? p->program : NULL;
}

int mirs_partition_num_pieces(const mirs_partition *p) {
  return p ? (int)p->npieces : 0;
}

mirs_status mirs_partition_piece(const mirs_partition *p, int index, mirs_piece_info *out) {
  if (!p)
    return MIRS_INVALID_ARG;
  if (!out || index < 0 || index >= p->npieces || out->struct_size < sizeof(size_t))
    return MIRS_FAIL(p->ctx, MIRS_INVALID_ARG,
                     "mirs_partition_piece: bad index %d or struct_size not set", index);
  size_t n = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
  mirs_piece_info v = p->piece[index].info;
  v.struct_size = n;
  memcpy(out, &v, n);
  return MIRS_OK;
}

const mirs_graph *mirs_partition_piece_program(const mirs_partition *p, int index) {
  return p && index >= 0 && index < p->npieces ? p->piece[index].prog : NULL;
}

const mirs_graph *mirs_partition_piece_best(const mirs_partition *p, int index) {
  return p && index >= 0 && index < p->npieces ? p->piece[index].best : NULL;
}

int mirs_partition_piece_op(const mirs_partition *p, int index, int j) {
  if (!p || index < 0 || index >= p->npieces || j < 0 || j >= p->piece[index].nops)
    return -1;
  return (int)p->piece[index].ops[j];
}

const mirs_graph *mirs_partition_result(const mirs_partition *p) {
  return p ? p->result : NULL;
}

mirs_status mirs_partition_get_stats_sized(const mirs_partition *p, mirs_partition_stats *out,
                                           size_t size) {
  if (!p)
    return MIRS_INVALID_ARG;
  if (!out || size < sizeof(size_t))
    return MIRS_FAIL(p->ctx, MIRS_INVALID_ARG, "mirs_partition_get_stats: NULL or short struct");
  mirs_partition_stats v = p->stats;
  v.struct_size = size < sizeof v ? size : sizeof v;
  memcpy(out, &v, v.struct_size);
  return MIRS_OK;
}

mirs_status mirs_partition_cuda(const mirs_partition *p, const char *entry, char **text) {
  if (!p)
    return MIRS_INVALID_ARG;
  if (!p->result || !text)
    return MIRS_FAIL(p->ctx, MIRS_INVALID_ARG,
                     "mirs_partition_cuda: no stitched µGraph (not run, stopped, or NULL text)");
  MIRS_CHECK(p->ctx, mirs_codegen_cuda(p->result, entry, text));
  return MIRS_OK;
}

void mirs_partition_destroy(mirs_partition *p) {
  if (!p)
    return;
  mirs_context *ctx = p->ctx;
  for (int32_t i = 0; i < p->npieces; i++) {
    mirs__core_free(ctx, p->piece[i].ops);
    mirs__core_free(ctx, p->piece[i].in);
    mirs__core_free(ctx, p->piece[i].out);
    mirs__graph_free(p->piece[i].prog);
    mirs__graph_free(p->piece[i].best);
    for (int k = 0; k < p->piece[i].ncand; k++)
      mirs__graph_free(p->piece[i].cand[k]);
    mirs__core_free(ctx, p->piece[i].cand);
    mirs__core_free(ctx, p->piece[i].cand_hash);
  }
  mirs__core_free(ctx, p->piece);
  mirs__graph_free(p->result);
  mirs__graph_free(p->program);
  mirs__core_free(ctx, p);
}
