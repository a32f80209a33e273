/* SPDX-License-Identifier: MIT */
/* src/search/cache.c - the result cache: the ranked results of a complete
 * search, kept in a file per key, so a repeated search (or a piece of a
 * partition met again) costs a verification instead of a search.
 *
 * The key (docs/PARTITION.md "Result cache") is what a search's results
 * are a function of:
 *   - the program's canonical hash (mirs__graph_hash: independent of op
 *     order and intermediate names; input and output names count);
 *   - every search option the results depend on: the checkpoint's list
 *     (mirs__checkpoint_options_text: all but threads, limits, logging,
 *     codegen, cache and partition options), less the fingerprint
 *     backend (`verify`: bit-identical on CPU and GPU) and the bench
 *     options;
 *   - the device profile's numbers (the cost model ranks the results);
 *   - mirsearch's version, the commit it was configured at, and a hash of
 *     the binary holding the code (the space and the cost model change
 *     between versions, and between rebuilds of one checkout);
 * Only complete searches are stored, so the limits (time, states, memory)
 * are not part of the key: a complete search's results do not depend on
 * them.  The file is DIR/KEY.mcache (KEY: 16 hex digits of a hash of all
 * of the above).
 *
 * Format (text, every length in bytes):
 *   mirsearch-cache 1
 *   program HASH
 *   keytext N         then N bytes of key text and a newline
 *   results K
 *   result HASH N     then N bytes of canonical µGraph text and a newline (K times)
 *   sources M         (optional) the split-K sources (search.h splitk_src),
 *   result HASH N     M times as above: not results, so that a hit pre-selects
 *                     the same sources (their variants are made again)
 *   end CHECKSUM      hash of every byte before this line
 *
 * Invariants: an entry is written to a temp file of its own in DIR
 * (mkstemp), synced and renamed over DIR/KEY.mcache, so a reader sees
 * a whole entry or none, whatever other processes write at once.  Nothing
 * read is trusted: a damaged or foreign entry (format, checksum, key text,
 * program hash, a graph whose canonical hash is not the one recorded) is
 * ignored with a warning; the results of a good one enter the sink as
 * unverified results and are verified at full shape and checked in float64
 * (mirs__sink_finish) exactly as a search's are, so a wrong graph in the
 * cache is dropped, never reported. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mirsearch/partition.h"
#include "codegen/cost.h"
#include "search/cache.h"
#include "search/checkpoint.h"
#include "search/search.h"
#include "search/splitk.h"

#define MAGIC "mirsearch-cache 1\n"
/* Largest entry read (K graphs of a few kilobytes each). */
#define MAX_ENTRY_BYTES (16u << 20)

/* Options left out of the key besides the checkpoint's runtime ones. */
static bool unkeyed_option(const char *line) {
  static const char *const names[] = {"verify=", "bench_reps=", "bench_warmup=",
                                      "bench_cuda_graph=", "emu_seed="};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strncmp(line, names[i], strlen(names[i])))
      return true;
  return false;
}

/* A hash of the file holding this code (the library, or the program it is
 * linked into), read once: the commit a build was configured at does not
 * change when a tree is rebuilt after `git pull` or an edit, and a cache
 * entry must not outlive the code that found it.  0 when unreadable. */
static uint64_t code_hash;
static pthread_once_t code_once = PTHREAD_ONCE_INIT;

static void code_hash_init(void) {
  Dl_info di;
  if (!dladdr(&code_hash, &di) || !di.dli_fname)
    return;
  FILE *f = fopen(di.dli_fname, "rb");
  if (!f)
    return;
  uint64_t h = mirs__hash_str(0, "code");
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    h = mirs__hash_bytes(h, buf, n);
  if (!ferror(f))
    code_hash = h;
  fclose(f);
}

/* The key text of s into b: version, code, device numbers, options. */
static mirs_status key_text(mirs_search *s, mirs__buf *b) {
  const mirs__cost_device *d = s->device;
  pthread_once(&code_once, code_hash_init);
  mirs__buf_printf(b, "mirsearch %s %s code %016" PRIx64 "\n", mirs_version_string(),
                   mirs_build_git_hash(), code_hash);
  mirs__buf_printf(b, "device %s %.17g %.17g %.17g %.17g %" PRId64 " %" PRId32 " %" PRId64
                      " %" PRId32 " %.17g %.17g %.17g %.17g %.17g\n",
                   d->name, d->hbm_bw, d->tc_peak, d->f32_peak, d->launch_s, d->smem_per_block,
                   d->sms, d->l2_bytes, d->max_threads_per_block, d->hbm_saturation,
                   d->bf16_peak, d->tf32_peak, d->smem_bw, d->mem_latency_s);
  char *opts = mirs__checkpoint_options_text(s->ctx);
  if (!opts)
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory (the cache key)");
  for (char *line = opts; *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (!unkeyed_option(line))
      mirs__buf_put(b, line, n);
    line += n;
  }
  free(opts);
  if (b->failed)
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory (the cache key)");
  return MIRS_OK;
}

/* The entry's path for key text k into path. */
static mirs_status entry_path(mirs_search *s, const mirs__buf *k, char *path, size_t size) {
  uint64_t h = mirs__hash_bytes(mirs__hash_mix(UINT64_C(0x6d69727363616368), mirs__graph_hash(s->program)),
                                k->data, k->len);
  int n = snprintf(path, size, "%s/%016" PRIx64 ".mcache", s->ctx->opt.cache_dir, h);
  if (n < 0 || (size_t)n >= size)
    return MIRS_FAIL(s->ctx, MIRS_INVALID_ARG, "cache_dir: path too long");
  return MIRS_OK;
}

bool mirs__cache_wanted(const mirs_search *s) {
  return s->ctx->opt.cache_dir[0] != '\0' && !s->resumed && !s->dist;
}

/* ---------------------------------------------------------------- reading */

/* A bounded reader over an entry's bytes. */
typedef struct reader {
  const char *p, *end;
} reader;

/* The next line (without its newline) into line (NUL-terminated); false
 * at the end or for a line longer than size - 1. */
static bool read_line(reader *r, char *line, size_t size) {
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  if (!nl || (size_t)(nl - r->p) >= size)
    return false;
  memcpy(line, r->p, (size_t)(nl - r->p));
  line[nl - r->p] = '\0';
  r->p = nl + 1;
  return true;
}

/* n bytes followed by a newline: their start in *out. */
static bool read_block(reader *r, uint64_t n, const char **out) {
  if (n >= (uint64_t)(r->end - r->p))
    return false;
  *out = r->p;
  if (r->p[n] != '\n')
    return false;
  r->p += n + 1;
  return true;
}

/* One cached result, parsed. */
typedef struct cached {
  mirs_graph *g;
  uint64_t hash;
  bool source; /* a split-K source, not a result */
} cached;

/* Parse result graph i of the entry at path: its text t[0..n), its hash h
 * recorded.  *why set when it is not a graph of that hash. */
static mirs_status parse_result(mirs_search *s, const char *path, const char *t, size_t n,
                                uint64_t h, cached *c, const char **why) {
  mirs_context *ctx = s->ctx;
  /* The parser reports errors as diagnostics at the error level; a
   * damaged entry is a warning, so they are kept quiet here. */
  int64_t level = ctx->opt.log_level;
  ctx->opt.log_level = -1;
  mirs_status st = mirs__graph_parse(ctx, t, n, path, &c->g);
  ctx->opt.log_level = level;
  if (st == MIRS_NOMEM)
    return st;
  if (st != MIRS_OK) {
    mirs_clear_error(ctx);
    *why = "a result does not parse";
    c->g = NULL;
    return MIRS_OK;
  }
  if (mirs__graph_hash(c->g) != h || mirs__graph_validate(c->g) != MIRS_OK) {
    mirs_clear_error(ctx);
    *why = "a result's canonical hash is not the one recorded";
    mirs__graph_free(c->g);
    c->g = NULL;
    return MIRS_OK;
  }
  c->hash = h;
  return MIRS_OK;
}

/* Read k `result HASH N` blocks from r into res[*nres..) (marked split-K
 * sources when `source`); *why set when one is malformed. */
static mirs_status read_results(mirs_search *s, const char *path, reader *r, uint64_t k,
                                bool source, cached *res, int *nres, const char **why) {
  char line[256];
  for (uint64_t i = 0; i < k && !*why; i++) {
    uint64_t h = 0, tn = 0;
    const char *t = NULL;
    if (!read_line(r, line, sizeof line) ||
        sscanf(line, "result %" SCNx64 " %" SCNu64, &h, &tn) != 2 || !read_block(r, tn, &t)) {
      *why = "malformed result";
      break;
    }
    MIRS_CHECK(s->ctx, parse_result(s, path, t, (size_t)tn, h, &res[*nres], why));
    if (!*why)
      res[(*nres)++].source = source;
  }
  return MIRS_OK;
}

/* Parse an entry's bytes into res[0..*nres) (graphs of s's context).
 * *why set (and nothing kept) when it is damaged or foreign. */
static mirs_status parse_entry(mirs_search *s, const char *path, const char *d, size_t len,
                               const mirs__buf *key, cached *res, int *nres, const char **why) {
  *nres = 0;
  char line[256];
  /* The checksum line is last: everything before it is covered. */
  const char *endl = len >= 2 ? d + len - 1 : d;
  while (endl > d && endl[-1] != '\n')
    endl--;
  uint64_t sum = 0;
  if (len < sizeof MAGIC || d[len - 1] != '\n' ||
      sscanf(endl, "end %" SCNx64, &sum) != 1 || memcmp(d, MAGIC, strlen(MAGIC)) != 0) {
    *why = "not a complete cache entry (format)";
    return MIRS_OK;
  }
  if (mirs__hash_bytes(UINT64_C(0x6d63616368656e64), d, (size_t)(endl - d)) != sum) {
    *why = "checksum mismatch (damaged)";
    return MIRS_OK;
  }
  reader r = {d + strlen(MAGIC), endl};
  uint64_t ph = 0, n = 0, k = 0;
  const char *kt = NULL;
  if (!read_line(&r, line, sizeof line) || sscanf(line, "program %" SCNx64, &ph) != 1 ||
      !read_line(&r, line, sizeof line) || sscanf(line, "keytext %" SCNu64, &n) != 1 ||
      !read_block(&r, n, &kt) || !read_line(&r, line, sizeof line) ||
      sscanf(line, "results %" SCNu64, &k) != 1 || k > MIRS__CACHE_RESULTS) {
    *why = "malformed header";
    return MIRS_OK;
  }
  if (ph != mirs__graph_hash(s->program) || n != key->len || memcmp(kt, key->data, n) != 0) {
    *why = "written for another program, options, device profile or version (foreign)";
    return MIRS_OK;
  }
  MIRS_CHECK(s->ctx, read_results(s, path, &r, k, false, res, nres, why));
  /* The split-K sources, when the entry has them. */
  uint64_t m = 0;
  const char *save = r.p;
  if (!*why && read_line(&r, line, sizeof line)) {
    if (sscanf(line, "sources %" SCNu64, &m) != 1 || m > MIRS__CACHE_RESULTS)
      *why = "malformed sources";
  } else {
    r.p = save;
  }
  MIRS_CHECK(s->ctx, read_results(s, path, &r, m, true, res, nres, why));
  if (!*why && r.p != r.end)
    *why = "trailing bytes";
  if (*why) {
    for (int i = 0; i < *nres; i++)
      mirs__graph_free(res[i].g);
    *nres = 0;
  }
  return MIRS_OK;
}

/* Put the parsed results into the sink as unverified results (their cost
 * computed here, not read) and rank and verify them. */
static mirs_status adopt(mirs_search *s, cached *res, int nres) {
  mirs_context *ctx = s->ctx;
  static const uint32_t nopath[1] = {0};
  mirs_status st = MIRS_OK;
  for (int i = 0; i < nres; i++) {
    mirs__cost_result cr;
    if (mirs__splitk_has_split(res[i].g)) {
      /* A split-K variant (option split_k, in the key): the rewrite at
       * the end of mirs__sink_finish makes it again from the results it
       * came from, so the served list is the searched one. */
      mirs__graph_free(res[i].g);
      continue;
    }
    if (st == MIRS_OK) {
      res[i].g->ugraph = true;
      st = mirs__cost_graph(ctx, s->device, res[i].g, &cr);
    }
    if (st != MIRS_OK) {
      mirs__graph_free(res[i].g);
      continue;
    }
    mirs__search_result r = {.g = res[i].g, .hash = res[i].hash,
                             .cost = cr.feasible ? cr.seconds : INFINITY,
                             .kernels = cr.kernels, .reduced = true,
                             .source_only = res[i].source};
    /* (Takes r's graph, also on failure.) */
    st = mirs__sink_adopt(s, res[i].hash, nopath, 0, 0, &r);
  }
  MIRS_CHECK(ctx, st);
  s->complete = true;
  MIRS_CHECK(ctx, mirs__sink_finish(s));
  return MIRS_OK;
}

mirs_status mirs__cache_serve(mirs_search *s, bool *hit) {
  mirs_context *ctx = s->ctx;
  *hit = false;
  mirs__buf key;
  mirs__buf_init(&key, ctx);
  char path[4096];
  mirs_status st = key_text(s, &key);
  if (st == MIRS_OK)
    st = entry_path(s, &key, path, sizeof path);
  char *d = NULL;
  size_t len = 0;
  if (st == MIRS_OK && access(path, F_OK) == 0) {
    if (mirs__core_read_file_limit(ctx, path, MAX_ENTRY_BYTES, "cache entry", true, &d, &len) !=
        MIRS_OK) {
      mirs__core_log(ctx, MIRS_LOG_WARNING, "cache: %s; ignored", mirs_last_error(ctx));
      mirs_clear_error(ctx);
    }
  }
  cached res[2 * MIRS__CACHE_RESULTS];
  int nres = 0;
  const char *why = NULL;
  if (st == MIRS_OK && d)
    st = parse_entry(s, path, d, len, &key, res, &nres, &why);
  mirs__core_free(ctx, d);
  mirs__buf_free(&key);
  MIRS_CHECK(ctx, st);
  if (why)
    mirs__core_log(ctx, MIRS_LOG_WARNING, "cache: %s: %s; ignored, searching", path, why);
  if (!d || why)
    return MIRS_OK;
  int nsources = 0; /* (not results: dropped once pre-selected) */
  for (int i = 0; i < nres; i++)
    nsources += res[i].source;
  MIRS_CHECK(ctx, adopt(s, res, nres));
  nres -= nsources;
  *hit = true;
  s->cache_state = MIRS__CACHE_HIT;
  size_t kept = mirs__sink_nresults(s);
  if (kept < (size_t)nres && s->complete) {
    /* Verified like a search's results, some failed: the entry is wrong
     * (they are dropped, the rest verified); remove it so the next run
     * searches. */
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "cache: %s: %d of its %d results did not verify against the program and "
                   "were dropped; the entry is removed",
                   path, nres - (int)kept, nres);
    unlink(path);
  }
  mirs__core_log(ctx, MIRS_LOG_INFO, "cache: served from %s (%zu results, verified again)", path,
                 kept);
  return MIRS_OK;
}

/* ---------------------------------------------------------------- writing */

/* Create dir and its missing parents (mode 0755). */
static int make_dirs(const char *dir) {
  char p[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof p)
    return -1;
  memcpy(p, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0')
      continue;
    char c = p[i];
    p[i] = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
      return -1;
    p[i] = c;
  }
  return 0;
}

/* Write len bytes to path atomically through a temp file of a unique
 * name in the same directory (mkstemp: two writers of one entry, even in
 * one process, never share a temp file), synced, then renamed over path.
 * MIRS_IO with the reason; the temp file is removed on failure. */
static mirs_status write_entry(mirs_context *ctx, const char *path, const char *data,
                               size_t len) {
  char tmp[4096 + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mirs_io_step(ctx, "create a cache temp file") != 0 ? -1 : mkstemp(tmp);
  if (fd < 0)
    return MIRS_FAIL(ctx, MIRS_IO, "%s: cannot create a temp file: %s", path, strerror(errno));
  bool ok = mirs_io_step(ctx, "write a cache temp file") == 0;
  for (size_t off = 0; ok && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    ok = w > 0;
    off += ok ? (size_t)w : 0;
  }
  int e = errno;
  ok = ok && fchmod(fd, 0644) == 0 && mirs_io_step(ctx, "sync a cache temp file") == 0 &&
       fsync(fd) == 0;
  if (!ok)
    e = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && (mirs_io_step(ctx, "rename a cache temp file") != 0 || rename(tmp, path) != 0)) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    unlink(tmp);
    return MIRS_FAIL(ctx, MIRS_IO, "%s: cannot write: %s", path, strerror(e ? e : EIO));
  }
  return MIRS_OK;
}

/* The entry's bytes for s into b (key text k). */
static mirs_status entry_bytes(mirs_search *s, const mirs__buf *k, mirs__buf *b, size_t n) {
  mirs__buf_puts(b, MAGIC);
  mirs__buf_printf(b, "program %016" PRIx64 "\nkeytext %zu\n", mirs__graph_hash(s->program), k->len);
  mirs__buf_put(b, k->data, k->len);
  mirs__buf_printf(b, "\nresults %zu\n", n);
  mirs__buf g;
  mirs__buf_init(&g, s->ctx);
  for (size_t i = 0; i < n; i++) {
    const mirs__search_result *r = mirs__sink_result(s, i);
    g.len = 0;
    mirs__graph_print(r->g, &g);
    mirs__buf_printf(b, "result %016" PRIx64 " %zu\n", r->hash, g.len);
    mirs__buf_put(b, g.data, g.len);
    mirs__buf_puts(b, "\n");
  }
  if (s->splitk_nsrc > 0)
    mirs__buf_printf(b, "sources %zu\n", s->splitk_nsrc);
  for (size_t i = 0; i < s->splitk_nsrc; i++) {
    const mirs__search_result *r = &s->splitk_src[i];
    g.len = 0;
    mirs__graph_print(r->g, &g);
    mirs__buf_printf(b, "result %016" PRIx64 " %zu\n", r->hash, g.len);
    mirs__buf_put(b, g.data, g.len);
    mirs__buf_puts(b, "\n");
  }
  bool failed = g.failed;
  mirs__buf_free(&g);
  mirs__buf_printf(b, "end %016" PRIx64 "\n",
                   mirs__hash_bytes(UINT64_C(0x6d63616368656e64), b->data, b->len));
  if (failed || b->failed)
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory (a cache entry)");
  return MIRS_OK;
}

/* Results an entry of s keeps: the best MIRS__CACHE_RESULTS, and no more
 * than a hit verifies again (verify_full_max), so a good entry never
 * loses results on a hit. */
static size_t entry_results(const mirs_search *s) {
  size_t n = mirs__sink_nresults(s);
  int64_t vmax = s->ctx->opt.verify_full_max;
  if (n > MIRS__CACHE_RESULTS)
    n = MIRS__CACHE_RESULTS;
  if (vmax >= 0 && (int64_t)n > vmax)
    n = (size_t)vmax;
  return n;
}

void mirs__cache_store(mirs_search *s) {
  mirs_context *ctx = s->ctx;
  size_t n = entry_results(s);
  /* (verify_full_max 0 with results: a hit could verify none of them.) */
  if (!s->complete || s->open || s->cache_state == MIRS__CACHE_HIT ||
      (n == 0 && mirs__sink_nresults(s) > 0))
    return;
  for (size_t i = 0; i < n; i++)
    if (!mirs__sink_result(s, i)->g)
      return; /* (mirs__sink_finish reads every graph; never so) */
  if (s->splitk_nsrc > MIRS__CACHE_RESULTS)
    return; /* (a hit would not pre-select the same split-K sources) */
  mirs__buf key, b;
  mirs__buf_init(&key, ctx);
  mirs__buf_init(&b, ctx);
  char path[4096];
  mirs_status st = key_text(s, &key);
  if (st == MIRS_OK)
    st = entry_path(s, &key, path, sizeof path);
  if (st == MIRS_OK)
    st = entry_bytes(s, &key, &b, n);
  if (st == MIRS_OK && make_dirs(ctx->opt.cache_dir) != 0)
    st = MIRS_FAIL(ctx, MIRS_IO, "%s: cannot create: %s", ctx->opt.cache_dir, strerror(errno));
  if (st == MIRS_OK)
    st = write_entry(ctx, path, b.data, b.len);
  if (st == MIRS_OK) {
    s->cache_state = MIRS__CACHE_STORED;
    mirs__core_log(ctx, MIRS_LOG_DEBUG, "cache: stored %s", path);
  } else {
    mirs__core_log(ctx, MIRS_LOG_WARNING, "cache: not stored: %s", mirs_last_error(ctx));
    mirs_clear_error(ctx);
  }
  mirs__buf_free(&key);
  mirs__buf_free(&b);
}

/* ---------------------------------------------------------------- public */

mirs_status mirs_cache_default_dir(char *buf, size_t size) {
  if (!buf || size == 0)
    return MIRS_INVALID_ARG;
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int n;
  /* (The XDG spec ignores a relative XDG_CACHE_HOME.) */
  if (x && x[0] == '/')
    n = snprintf(buf, size, "%s/mirsearch", x);
  else if (h && h[0])
    n = snprintf(buf, size, "%s/.cache/mirsearch", h);
  else
    return MIRS_NOT_FOUND;
  return n > 0 && (size_t)n < size ? MIRS_OK : MIRS_INVALID_ARG;
}

int mirs_search_cache_status(const mirs_search *s) {
  return s ? s->cache_state : 0;
}
