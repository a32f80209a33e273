/* SPDX-License-Identifier: MIT */
/* src/search/checkpoint.c - checkpoints of a search: what it has found and
 * what it has left, as paths, in a versioned, checksummed binary file.
 *
 * Layout (integers little-endian):
 *   0  "MIRSCKPT"           magic
 *   8  u32 format version   (MIRS__CKPT_VERSION)
 *   12 u32 0
 *   16 u64 payload bytes L
 *   24 u64 0
 *   32 payload:
 *        str  mirsearch version         (u32 length, bytes)
 *        u64  program's canonical hash
 *        str  program (canonical .ugraph text)
 *        str  search options ("name=value\n", every option the results
 *             depend on: not threads, limits, checkpoint_interval, log_level)
 *        u32 n, n x u64 counters (stats.def order); f64 wall, f64 solver s
 *        u32 n, n x (u64 hash, u8 flags, u32 len, len x u32 path)  results
 *             flags: 1 accepted, 2 verified at full shape, 4 checked in
 *             float64 (a resume keeps these verdicts instead of checking
 *             the results again: each is a function of the graph)
 *        u32 n, n x (u32 lo, u32 hi, u32 len, len x u32 path)          tasks
 *   32+L u64 checksum of bytes [0, 32+L)
 * A result is kept as the path it was found at (the smallest, sink.c): a
 * resumed search replays it and verifies it again, so the stored graphs
 * need no format of their own and cannot disagree with their paths.  The
 * tasks are the open work; resuming runs them on any number of workers.
 * The same task encoding is what a distributed search sends between
 * ranks.
 *
 * Reading refuses, naming the file and the mismatch, a file that is not a
 * checkpoint, another format version or mirsearch version, a truncated or
 * damaged one (length, checksum, malformed payload) and one written for
 * another program or other search options. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "search/wire.h"

#define MIRS__CKPT_VERSION 1
#define HEADER 32
static const char magic[8] = {'M', 'I', 'R', 'S', 'C', 'K', 'P', 'T'};

/* Options that do not change what a search finds (left out of the check). */
static bool runtime_option(const char *name) {
  static const char *const names[] = {"threads",      "checkpoint_interval", "log_level",
                                      "max_states",   "time_limit",          "max_memory",
                                      "max_errors",   "codegen_mma",         "codegen_cxx",
                                      "codegen_nvcc", "codegen_arch",        "cache_dir",
                                      "partition_max_ops", "partition_max_inputs",
                                      "partition_max_outputs", "measure_top", "codegen_pdl"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(name, names[i]))
      return true;
  return false;
}

/* ---------------------------------------------------------------- writing */

/* The search options the results depend on, as "name=value\n" lines
 * (malloc'd; NULL when out of memory).  Also the result cache's key
 * (cache.c), so a checkpoint and a cache entry agree on what a result
 * depends on. */
char *mirs__checkpoint_options_text(const mirs_context *ctx) {
  size_t cap = 8192, n = 0;
  char *t = malloc(cap);
  if (!t)
    return NULL;
  t[0] = '\0';
  for (size_t i = 0; i < mirs_option_count(); i++) {
    const char *name = mirs_option_name(i);
    if (runtime_option(name))
      continue;
    char v[MIRS__OPT_STR_SIZE + 8];
    mirs_option_get(ctx, name, v, sizeof v);
    size_t need = strlen(name) + strlen(v) + 3;
    if (n + need >= cap) {
      char *nt = realloc(t, cap * 2 + need);
      if (!nt) {
        free(t);
        return NULL;
      }
      t = nt;
      cap = cap * 2 + need;
    }
    n += (size_t)snprintf(t + n, cap - n, "%s=%s\n", name, v);
  }
  return t;
}

/* Checksum of a checkpoint's bytes. */
static uint64_t checksum(const unsigned char *d, size_t n) {
  return mirs__hash_bytes(UINT64_C(0x6d697273636b7074), d, n);
}

/* A result entry's path, for ordering them. */
typedef struct entry_path {
  const uint32_t *p;
  int32_t len;
  uint32_t ent;
} entry_path;

/* Order entry paths lexicographically (a prefix first). */
static int entry_path_cmp(const void *a, const void *b) {
  const entry_path *x = a, *y = b;
  for (int32_t i = 0; i < x->len && i < y->len; i++)
    if (x->p[i] != y->p[i])
      return x->p[i] < y->p[i] ? -1 : 1;
  return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

/* A result's checks, by hash. */
typedef struct verdict {
  uint64_t hash;
  unsigned flags; /* MIRS__CKPT_VERIFIED, MIRS__CKPT_FLOAT_CHECKED */
} verdict;

static int verdict_cmp(const void *a, const void *b) {
  uint64_t x = ((const verdict *)a)->hash, y = ((const verdict *)b)->hash;
  return x < y ? -1 : x > y;
}

/* The check flags of the result of hash h among v[0..n) (sorted), 0 when
 * it is not a result (any more). */
static unsigned verdicts_of(const verdict *v, size_t n, uint64_t h) {
  verdict key = {h, 0};
  const verdict *f = n ? bsearch(&key, v, n, sizeof *v, verdict_cmp) : NULL;
  return f ? f->flags : 0;
}

/* Write the checkpoint of s. */
mirs_status mirs__checkpoint_write(mirs_search *s, const char *path) {
  mirs_context *ctx = s->ctx;
  char *prog = NULL, *opts = NULL;
  mirs_status st = mirs_graph_to_string(s->program, &prog);
  if (st != MIRS_OK)
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  opts = mirs__checkpoint_options_text(ctx);
  if (!opts) {
    mirs_free(ctx, prog);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a checkpoint)");
  }
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  mirs__wire_put(&b, magic, 8);
  mirs__wire_put_u32(&b, MIRS__CKPT_VERSION);
  mirs__wire_put_u32(&b, 0);
  mirs__wire_put_u64(&b, 0); /* payload length, set below */
  mirs__wire_put_u64(&b, 0);
  const char *ver = mirs_version_string();
  mirs__wire_put_str(&b, ver, strlen(ver));
  mirs__wire_put_u64(&b, mirs__graph_hash(s->program));
  mirs__wire_put_str(&b, prog, strlen(prog));
  mirs__wire_put_str(&b, opts, strlen(opts));
  mirs_free(ctx, prog);
  free(opts);
  mirs__wire_put_u32(&b, MIRS__STAT_COUNT);
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    mirs__wire_put_u64(&b, s->stats.v[i]);
  mirs__wire_put_f64(&b, s->wall);
  mirs__wire_put_f64(&b, s->solver_seconds);
  /* The results in path order: resuming replays each from the previous
   * one's state, so paths that share a prefix replay it once. */
  size_t nent = mirs__sink_nentries(s), nres = mirs__sink_nresults(s);
  entry_path *order = mirs__core_alloc(ctx, (nent + 1) * sizeof *order);
  if (!order) {
    mirs__buf_free(&b);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a checkpoint)");
  }
  for (size_t i = 0; i < nent; i++) {
    mirs__sink_view e;
    mirs__sink_entry_view(s, i, &e);
    order[i] = (entry_path){e.path, e.plen, (uint32_t)i};
  }
  qsort(order, nent, sizeof *order, entry_path_cmp);
  /* The results' verdicts by hash (the entries' result indices do not
   * survive the final ranking, which reorders and drops results). */
  verdict *verd = mirs__core_alloc(ctx, (nres + 1) * sizeof *verd);
  if (!verd) {
    mirs__core_free(ctx, order);
    mirs__buf_free(&b);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a checkpoint)");
  }
  for (size_t i = 0; i < nres; i++) {
    const mirs__search_result *r = mirs__sink_result(s, i);
    verd[i] = (verdict){r->hash, (unsigned)((r->verified ? MIRS__CKPT_VERIFIED : 0) |
                                            (r->float_checked ? MIRS__CKPT_FLOAT_CHECKED : 0))};
  }
  qsort(verd, nres, sizeof *verd, verdict_cmp);
  mirs__wire_put_u32(&b, (uint32_t)nent);
  for (size_t i = 0; i < nent; i++) {
    mirs__sink_view e;
    mirs__sink_entry_view(s, order[i].ent, &e);
    mirs__wire_put_u64(&b, e.hash);
    mirs__wire_put_u8(
        &b, (uint8_t)(e.accepted ? MIRS__CKPT_ACCEPTED | verdicts_of(verd, nres, e.hash) : 0));
    mirs__wire_put_u32(&b, (uint32_t)e.plen);
    for (int32_t k = 0; k < e.plen; k++)
      mirs__wire_put_u32(&b, e.path[k]);
  }
  mirs__core_free(ctx, order);
  mirs__core_free(ctx, verd);
  uint32_t ntasks = 0;
  for (const mirs__task *t = s->open; t; t = t->next)
    ntasks++;
  mirs__wire_put_u32(&b, ntasks);
  for (const mirs__task *t = s->open; t; t = t->next)
    mirs__wire_put_task(&b, t);
  if (!b.failed) {
    uint64_t L = b.len - HEADER;
    for (int k = 0; k < 8; k++)
      b.data[16 + k] = (char)(unsigned char)(L >> (8 * k));
    mirs__wire_put_u64(&b, checksum((const unsigned char *)b.data, b.len));
  }
  if (b.failed) {
    mirs__buf_free(&b);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a checkpoint)");
  }
  st = mirs__core_write_atomic(ctx, path, b.data, b.len);
  mirs__buf_free(&b);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- reading */

/* A path (u32 length, then its indices) into *buf (grown in ctx). */
static mirs_status get_path(mirs_context *ctx, mirs__wire_reader *r, uint32_t **buf, size_t *cap,
                            uint32_t *len) {
  *len = mirs__wire_get_u32(r);
  if (r->bad || *len > (r->n - r->at) / 4) {
    r->bad = true;
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, mirs__core_grow(ctx, (void **)buf, cap, (size_t)*len + 1, sizeof **buf));
  for (uint32_t k = 0; k < *len; k++)
    (*buf)[k] = mirs__wire_get_u32(r);
  return MIRS_OK;
}

/* A read checkpoint: the file's bytes and where its sections start. */
typedef struct ckpt {
  char *data;
  size_t len;
  mirs__wire_reader r; /* positioned after the options */
  uint64_t prog_hash;
  const char *prog, *opts;
  uint32_t prog_len, opts_len;
} ckpt;

/* Read and check the envelope of the checkpoint at path: magic, format
 * and mirsearch versions, length, checksum. */
static mirs_status ckpt_open(mirs_context *ctx, const char *path, ckpt *c) {
  memset(c, 0, sizeof *c);
  size_t n;
  /* A checkpoint grows with the results (no graph file's 64 MiB cap);
   * only a regular file is one (a FIFO would block). */
  MIRS_CHECK(ctx, mirs__core_read_file_limit(ctx, path, SIZE_MAX / 4, "a checkpoint", true,
                                             &c->data, &n));
  c->len = n;
  const unsigned char *d = (const unsigned char *)c->data;
  mirs_status st = MIRS_INVALID_ARG;
  if (n < 8 || memcmp(d, magic, 8) != 0) {
    if (n < 8 && n > 0 && !memcmp(d, magic, n))
      MIRS_FAIL(ctx, st, "%s: truncated checkpoint (%zu bytes)", path, n);
    else
      MIRS_FAIL(ctx, st, "%s: not a mirsearch checkpoint (no MIRSCKPT magic)", path);
  } else if (n < HEADER + 8) {
    MIRS_FAIL(ctx, st, "%s: truncated checkpoint (%zu bytes; a checkpoint has at least %d)", path,
              n, HEADER + 8);
  } else {
    mirs__wire_reader h = {d, n, 8, false};
    uint32_t ver = mirs__wire_get_u32(&h);
    (void)mirs__wire_get_u32(&h);
    uint64_t L = mirs__wire_get_u64(&h);
    if (ver != MIRS__CKPT_VERSION)
      MIRS_FAIL(ctx, st, "%s: checkpoint format version %u; this mirsearch reads version %d",
                path, ver, MIRS__CKPT_VERSION);
    else if (L > n || HEADER + L + 8 != n)
      MIRS_FAIL(ctx, st,
                "%s: truncated or damaged checkpoint (%zu bytes; its header says %" PRIu64 ")",
                path, n, (uint64_t)HEADER + L + 8);
    else {
      mirs__wire_reader t = {d, n, HEADER + (size_t)L, false};
      uint64_t sum = mirs__wire_get_u64(&t);
      if (sum != checksum(d, HEADER + (size_t)L))
        MIRS_FAIL(ctx, st, "%s: damaged checkpoint (checksum mismatch)", path);
      else {
        c->r = (mirs__wire_reader){d, HEADER + (size_t)L, HEADER, false};
        uint32_t vl;
        const char *v = mirs__wire_get_str(&c->r, &vl);
        const char *mine = mirs_version_string();
        c->prog_hash = mirs__wire_get_u64(&c->r);
        c->prog = mirs__wire_get_str(&c->r, &c->prog_len);
        c->opts = mirs__wire_get_str(&c->r, &c->opts_len);
        if (c->r.bad)
          MIRS_FAIL(ctx, st, "%s: damaged checkpoint (malformed header)", path);
        else if (vl != strlen(mine) || memcmp(v, mine, vl) != 0)
          MIRS_FAIL(ctx, st, "%s: written by mirsearch %.*s; this is mirsearch %s", path,
                    (int)(vl > 64 ? 64 : vl), v, mine);
        else
          st = MIRS_OK;
      }
    }
  }
  if (st != MIRS_OK) {
    mirs__core_free(ctx, c->data);
    c->data = NULL;
  }
  return st;
}

/* The value of option `name` in a checkpoint's options text, copied into
 * buf; false when absent. */
static bool ckpt_option(const ckpt *c, const char *name, char *buf, size_t size) {
  size_t nl = strlen(name);
  const char *p = c->opts, *end = c->opts + c->opts_len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
      eol = end;
    if ((size_t)(eol - p) > nl && !memcmp(p, name, nl) && p[nl] == '=') {
      size_t vl = (size_t)(eol - p) - nl - 1;
      if (vl >= size)
        vl = size - 1;
      memcpy(buf, p + nl + 1, vl);
      buf[vl] = '\0';
      return true;
    }
    p = eol + 1;
  }
  return false;
}

/* Compare ctx's search options with the checkpoint's: MIRS_INVALID_ARG
 * naming the first that differs. */
static mirs_status ckpt_check_options(mirs_context *ctx, const char *path, const ckpt *c) {
  for (size_t i = 0; i < mirs_option_count(); i++) {
    const char *name = mirs_option_name(i);
    if (runtime_option(name))
      continue;
    char mine[MIRS__OPT_STR_SIZE + 8], theirs[MIRS__OPT_STR_SIZE + 8];
    mirs_option_get(ctx, name, mine, sizeof mine);
    if (!ckpt_option(c, name, theirs, sizeof theirs))
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "%s: the checkpoint does not record search option '%s'", path, name);
    if (strcmp(mine, theirs) != 0)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "%s: search option '%s' differs: the checkpoint has '%s', this search '%s'",
                       path, name, theirs, mine);
  }
  return MIRS_OK;
}

/* Re-find the recorded result of hash h at path[0..len) with worker w (not
 * in the pool), then let the sink check it (mirs__sink_restored).
 * MIRS_STOPPED on a stop request; MIRS_INVALID_ARG when it cannot be
 * replayed or is not found again. */
static mirs_status restore_result(mirs__search_worker *w, const char *from, uint64_t h,
                                  unsigned flags, const uint32_t *path, uint32_t len) {
  mirs_search *s = w->s;
  mirs_context *ctx = s->ctx;
  mirs_status st = mirs__search_restore(w, path, (int32_t)len);
  if (st == MIRS_STOPPED) { /* a stop request while loading, not bad data */
    mirs__core_error_copy(ctx, w->ctx);
    return st;
  }
  if (st != MIRS_OK) {
    mirs__core_error_copy(ctx, w->ctx);
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: result %016llx cannot be replayed: %s", from,
                     (unsigned long long)h, mirs_last_error(w->ctx));
  }
  if (mirs_last_status(w->ctx) != MIRS_OK)
    mirs_clear_error(w->ctx);
  return mirs__sink_restored(s, from, h, flags);
}

/* Load the checkpoint into s. */
mirs_status mirs__checkpoint_read(mirs_search *s, const char *path) {
  mirs_context *ctx = s->ctx;
  ckpt c;
  MIRS_CHECK(ctx, ckpt_open(ctx, path, &c));
  mirs_status st = MIRS_OK;
  uint64_t mine = mirs__graph_hash(s->program);
  if (c.prog_hash != mine)
    st = MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                   "%s: written for another program (hash %016" PRIx64 "; this one is %016" PRIx64
                   ")",
                   path, c.prog_hash, mine);
  if (st == MIRS_OK) {
    /* Paths index moves, which depend on the program's tensor order too. */
    char *text = NULL;
    st = mirs_graph_to_string(s->program, &text);
    if (st == MIRS_OK && (strlen(text) != c.prog_len || memcmp(text, c.prog, c.prog_len) != 0))
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "%s: written for the same program with its tensors in another order", path);
    mirs_free(ctx, text);
  }
  if (st == MIRS_OK)
    st = ckpt_check_options(ctx, path, &c);
  mirs__wire_reader *r = &c.r;
  mirs__stats stats = {{0}};
  double wall = 0, solver = 0;
  if (st == MIRS_OK) {
    uint32_t ns = mirs__wire_get_u32(r);
    if (ns != MIRS__STAT_COUNT && !r->bad)
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: %u counters; this mirsearch has %d", path, ns,
                     MIRS__STAT_COUNT);
    for (uint32_t i = 0; st == MIRS_OK && i < ns && !r->bad; i++)
      stats.v[i] = mirs__wire_get_u64(r);
    wall = mirs__wire_get_f64(r);
    solver = mirs__wire_get_f64(r);
  }
  mirs__search_worker *w = NULL;
  if (st == MIRS_OK)
    st = mirs__search_worker_new(s, &w);
  /* Results: re-found at their paths (and verified again on the way). */
  uint32_t nent = st == MIRS_OK ? mirs__wire_get_u32(r) : 0;
  uint32_t *path_buf = NULL;
  size_t cap = 0;
  for (uint32_t i = 0; st == MIRS_OK && i < nent && !r->bad; i++) {
    uint64_t h = mirs__wire_get_u64(r);
    const unsigned char *acc = mirs__wire_get(r, 1);
    uint32_t len;
    st = get_path(ctx, r, &path_buf, &cap, &len);
    if (st != MIRS_OK || r->bad)
      break;
    st = restore_result(w, path, h, acc ? *acc : 0, path_buf, len);
  }
  /* Tasks: checked by positioning a worker at each. */
  uint32_t ntasks = st == MIRS_OK && !r->bad ? mirs__wire_get_u32(r) : 0;
  mirs__task *open = NULL, **tail = &open;
  for (uint32_t i = 0; st == MIRS_OK && i < ntasks && !r->bad; i++) {
    uint32_t lo = mirs__wire_get_u32(r), hi = mirs__wire_get_u32(r), len;
    st = get_path(ctx, r, &path_buf, &cap, &len);
    if (st != MIRS_OK || r->bad)
      break;
    mirs__task *t = mirs__task_new(ctx, path_buf, (int32_t)len, lo, hi);
    if (!t) {
      st = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a checkpoint's tasks)");
      break;
    }
    *tail = t;
    tail = &t->next;
    st = mirs__search_task_start(w, t);
    if (st == MIRS_STOPPED)
      mirs__core_error_copy(ctx, w->ctx);
    else if (st != MIRS_OK)
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: task %u does not fit this search: %s", path, i,
                     mirs_last_error(w->ctx));
  }
  if (st == MIRS_OK && (r->bad || r->at != r->n))
    st = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: damaged checkpoint (malformed %s)", path,
                   r->bad ? "payload" : "end of payload");
  mirs__core_free(ctx, path_buf);
  mirs__search_worker_free(w);
  mirs__core_free(ctx, c.data);
  if (st != MIRS_OK) {
    mirs__task_free_list(ctx, open);
    return st;
  }
  mirs__task_free_list(ctx, s->open);
  s->open = open;
  s->stats = stats;
  mirs__core_stats_add(ctx, &stats);
  s->wall_before = wall;
  s->wall = wall;
  s->solver_seconds = solver;
  s->resumed = true;
  return MIRS_OK;
}

/* ---------------------------------------------------------------- public */

/* The program a checkpoint was written for, with its search options set in
 * ctx (an option ctx already sets to another value is refused). */
mirs_status mirs_checkpoint_load_program(mirs_context *ctx, const char *path,
                                         mirs_graph **program) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!path || !program)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_checkpoint_load_program: NULL argument");
  *program = NULL;
  ckpt c;
  MIRS_CHECK(ctx, ckpt_open(ctx, path, &c));
  mirs__options def;
  mirs__core_options_defaults(&def);
  mirs_context *dctx = NULL;
  mirs_status st = mirs_context_create(&dctx);
  for (size_t i = 0; st == MIRS_OK && i < mirs_option_count(); i++) {
    const char *name = mirs_option_name(i);
    if (runtime_option(name))
      continue;
    char mine[MIRS__OPT_STR_SIZE + 8], theirs[MIRS__OPT_STR_SIZE + 8], dv[MIRS__OPT_STR_SIZE + 8];
    if (!ckpt_option(&c, name, theirs, sizeof theirs)) {
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "%s: the checkpoint does not record search option '%s'", path, name);
      break;
    }
    mirs_option_get(ctx, name, mine, sizeof mine);
    mirs_option_get(dctx, name, dv, sizeof dv);
    /* Given explicitly (also to its default) or changed from the
     * default: it must be the checkpoint's. */
    if ((mirs__core_option_given(ctx, name) || strcmp(mine, dv) != 0) &&
        strcmp(mine, theirs) != 0) {
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "%s: search option '%s' is '%s' here but '%s' in the checkpoint (a resumed "
                     "search keeps its options)",
                     path, name, mine, theirs);
      break;
    }
    st = mirs_option_set(ctx, name, theirs);
    if (st != MIRS_OK) {
      /* (a value no option takes: the file was damaged or forged) */
      char why[256];
      snprintf(why, sizeof why, "%s", mirs_last_error(ctx));
      st = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: damaged checkpoint (%s)", path, why);
    }
  }
  mirs_context_destroy(dctx);
  if (st == MIRS_OK)
    st = mirs_graph_parse_string(ctx, c.prog, c.prog_len, path, program);
  if (st == MIRS_OK && mirs__graph_hash(*program) != c.prog_hash) {
    mirs_graph_destroy(*program);
    *program = NULL;
    st = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: damaged checkpoint (its program does not match "
                   "its hash)", path);
  }
  mirs__core_free(ctx, c.data);
  MIRS_CHECK(ctx, st);
  return MIRS_OK;
}
