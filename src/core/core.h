/* SPDX-License-Identifier: MIT */
/* src/core/core.h - internal core: the context, errors with traces,
 * allocation through the context, options, statistics and logging.
 *
 * Invariants: all mutable library state hangs off a mirs_context (no
 * mutable globals).  Every allocation goes through mirs__core_alloc*, which
 * keeps a 16-byte header with the size so current/peak bytes are exact
 * and the embedder's allocator receives the old size.  An error is set
 * once where it is detected (MIRS_FAIL) and every caller that passes it
 * on adds a trace line (MIRS_CHECK), PETSc style. */
#ifndef MIRS_CORE_CORE_H
#define MIRS_CORE_CORE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mirsearch/core.h"

/* ---------------------------------------------------------------- options */

typedef enum { MIRS__OPT_INT, MIRS__OPT_BOOL, MIRS__OPT_DOUBLE, MIRS__OPT_STR } mirs__opt_type;

/* Longest STR option value, terminating NUL included.  STR values are
 * kept as text in the options struct itself (no allocation, so the struct
 * stays a plain value) and parsed by the module that uses them. */
#define MIRS__OPT_STR_SIZE 256

typedef struct mirs__options {
#define MIRS__OPT_FIELD_INT(name) int64_t name;
#define MIRS__OPT_FIELD_BOOL(name) int64_t name;
#define MIRS__OPT_FIELD_DOUBLE(name) double name;
#define MIRS__OPT_FIELD_STR(name) char name[MIRS__OPT_STR_SIZE];
#define MIRS_OPTION(name, type, def, lo, hi, help) MIRS__OPT_FIELD_##type(name)
#include "options.def"
#undef MIRS_OPTION
} mirs__options;

/* The options' indices, in table order (MIRS__OPT_COUNT of them). */
enum {
#define MIRS_OPTION(name, type, def, lo, hi, help) MIRS__OPTIDX_##name,
#include "options.def"
#undef MIRS_OPTION
  MIRS__OPT_COUNT
};

/* Parse a STR option's value as a comma-separated list of integers, each
 * in [lo, hi], into out[0..*n) (at most cap entries; blanks around items
 * are allowed).  False with a one-line reason in why on a malformed list,
 * an empty one, an item out of range or more than cap items. */
bool mirs__core_parse_int_list(const char *text, int64_t lo, int64_t hi, int64_t *out, int cap,
                               int *n, char *why, size_t whysize);

/* Default values, from options.def. */
void mirs__core_options_defaults(mirs__options *o);

/* ---------------------------------------------------------------- statistics */

enum {
#define MIRS_STAT(name, rel, desc) MIRS__STAT_##name,
#include "stats.def"
#undef MIRS_STAT
  MIRS__STAT_COUNT
};

typedef struct mirs__stats {
  uint64_t v[MIRS__STAT_COUNT];
} mirs__stats;

/* Increment a counter; hot code keeps a per-worker mirs__stats and adds it
 * to the context's with mirs__core_stats_add at the end. */
#define MIRS_INC(stats, name) ((stats)->v[MIRS__STAT_##name]++)
#define MIRS_ADD(stats, name, n) ((stats)->v[MIRS__STAT_##name] += (uint64_t)(n))
void mirs__core_stats_add(mirs_context *ctx, const mirs__stats *s);

/* ---------------------------------------------------------------- context */

#define MIRS__ERRMSG_SIZE 1024
#define MIRS__TRACE_SIZE 2048

#define MIRS__STOP_USER 1 /* mirs_interrupt */
#define MIRS__STOP_TIME 2 /* time limit (watchdog) */
#define MIRS__STOP_MEM 4  /* memory limit (watchdog) */
#define MIRS__MAX_HOOKS 64

struct mirs_context {
  mirs_alloc_fn alloc;
  void *alloc_user;
  atomic_size_t mem_current;
  atomic_size_t mem_peak;
  /* Test hook: when > 0, the Nth allocation from now fails (1 = the next). */
  atomic_long fail_countdown;
  /* Test hook (fault.c): MIRS_FAULT_INJECT's step number (0: none), what
   * happens there, and the durable-write steps counted so far. */
  long fault_at;
  int fault_kind;
  atomic_long fault_steps;

  mirs__options opt;
  /* Which options mirs_option_set has set (even to their default): a
   * resumed search refuses any of them that its checkpoint has otherwise. */
  unsigned char opt_given[MIRS__OPT_COUNT];
  mirs__stats stats;

  mirs_log_fn log_fn;
  void *log_user;

  mirs_status err_status;
  char err_msg[MIRS__ERRMSG_SIZE];
  char err_trace[MIRS__TRACE_SIZE];

  /* Diagnostics of the last parse (owned strings). */
  char **diags;
  size_t ndiags, diags_cap;

  /* Stop requests (stop.c): MIRS__STOP_* bits, hooks, the watchdog. */
  atomic_int stop;
  atomic_int hook_lock;
  struct {
    void (*fn)(void *);
    void *arg;
  } hooks[MIRS__MAX_HOOKS];
  int nhooks;
  struct mirs__watch *watch;
  /* A worker environment (mirs__core_context_child): the parent whose
   * allocator and options it copies; NULL for a user's context. */
  mirs_context *parent;
  /* The options' device's launch in bytes (mirs__cost_launch_bytes), 0
   * until resolved; set to 0 when cost_device or device_profile is set. */
  atomic_llong launch_bytes;
};

/* A worker environment: a context of its own (error slot, counters,
 * allocation accounting) that shares parent's allocator, options and log
 * callback, so one search worker never writes the user's context.  The
 * embedder's allocator and log callback are then called from worker
 * threads (mirsearch/core.h says so).  Freed by mirs__core_context_merge. */
mirs_status mirs__core_context_child(mirs_context *parent, mirs_context **out);
/* Add child's counters to its parent's, raise the parent's peak by what
 * the child held at its peak (an upper bound of the joint peak), and
 * release the child (its blocks must all be freed). */
void mirs__core_context_merge(mirs_context *child);
/* Copy src's error (status, message, trace) into dst. */
void mirs__core_error_copy(mirs_context *dst, const mirs_context *src);

/* ---------------------------------------------------------------- stop requests */

/* Whether a stop was requested (mirs_interrupt, or a limit the watchdog
 * saw): one relaxed atomic load, cheap enough for any loop. */
static inline bool mirs__core_stopping(const mirs_context *ctx) {
  if (ctx->parent) /* a worker environment: the user's context holds the requests */
    ctx = ctx->parent;
  return atomic_load_explicit(&ctx->stop, memory_order_relaxed) != 0;
}
/* MIRS_STOPPED with the reason, noticed while doing `where`. */
mirs_status mirs__core_stopped(mirs_context *ctx, const char *where);
/* Register/remove fn(arg), called from the watchdog thread when a stop
 * trips (e.g. Z3_interrupt on a worker's solver). */
mirs_status mirs__core_hook_add(mirs_context *ctx, void (*fn)(void *), void *arg);
void mirs__core_hook_remove(mirs_context *ctx, void (*fn)(void *), void *arg);
/* Run a watchdog thread until mirs__core_watch_stop: it sets the limit
 * bits at the absolute deadline (mirs__core_now() time; 0 none) or past
 * mem_limit bytes held (0 none), and forwards any stop to the hooks
 * within ~20 ms.  watch_stop clears the limit bits it set. */
mirs_status mirs__core_watch_start(mirs_context *ctx, double deadline, size_t mem_limit);
void mirs__core_watch_stop(mirs_context *ctx);

/* ---------------------------------------------------------------- errors */

/* Record status s with a printf-style message as the context's error,
 * starting a new trace at (func, file, line).  Returns s. */
mirs_status mirs__core_fail(mirs_context *ctx, mirs_status s, const char *func, const char *file,
                            int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Append (func, file, line) to the error trace; returns s. */
mirs_status mirs__core_trace(mirs_context *ctx, mirs_status s, const char *func, const char *file,
                             int line);

/* Fail with a message: `return MIRS_FAIL(ctx, MIRS_SHAPE, "bad %d", x);` */
#define MIRS_FAIL(ctx, status, ...) \
  mirs__core_fail((ctx), (status), __func__, __FILE__, __LINE__, __VA_ARGS__)
/* Evaluate a call returning mirs_status; on failure add a trace line and
 * return the status from the enclosing function. */
#define MIRS_CHECK(ctx, call)                                                  \
  do {                                                                         \
    mirs_status mirs__s_ = (call);                                             \
    if (mirs__s_ != MIRS_OK)                                                   \
      return mirs__core_trace((ctx), mirs__s_, __func__, __FILE__, __LINE__); \
  } while (0)

/* SQLite-style defensive branches: conditions believed always true/false.
 * With MIRS_DEBUG they abort when wrong; otherwise they pass the value. */
#ifdef MIRS_DEBUG
#include <assert.h>
#define ALWAYS(x) (assert(x), 1)
#define NEVER(x) (assert(!(x)), 0)
#else
#define ALWAYS(x) (x)
#define NEVER(x) (x)
#endif

/* ---------------------------------------------------------------- memory */

/* Allocate n bytes (uninitialised) / zeroed / resize / free, through the
 * context's allocator.  NULL on failure after setting MIRS_NOMEM as the
 * context's error (callers return MIRS_NOMEM).  n == 0 returns a valid
 * unique pointer.  mirs__core_free(ctx, NULL) is a no-op. */
void *mirs__core_alloc(mirs_context *ctx, size_t n);
void *mirs__core_calloc(mirs_context *ctx, size_t count, size_t size);
void *mirs__core_realloc(mirs_context *ctx, void *p, size_t n);
void mirs__core_free(mirs_context *ctx, void *p);
/* Allocate n bytes, NULL on failure without touching ctx's error slot:
 * for blocks several threads share through one context (the accounting
 * is atomic; the error slot is not the caller's to write). */
void *mirs__core_alloc_quiet(mirs_context *ctx, size_t n);
/* Copy of s (NULL stays NULL only when s is NULL). */
char *mirs__core_strdup(mirs_context *ctx, const char *s);
/* Grow *arr (element size elem) so it holds at least need elements;
 * *cap is updated.  MIRS_NOMEM on failure with *arr unchanged. */
mirs_status mirs__core_grow(mirs_context *ctx, void **arr, size_t *cap, size_t need, size_t elem);
/* Test hook: make the n-th allocation from now fail (0 disables). */
void mirs__core_fail_alloc_after(mirs_context *ctx, long n);
/* Whether option `name` was set in ctx by mirs_option_set. */
bool mirs__core_option_given(const mirs_context *ctx, const char *name);
/* Read MIRS_FAULT_INJECT into a new context (fault.c; a no-op in builds
 * configured with --disable-fault-injection). */
void mirs__core_fault_init(mirs_context *ctx);

/* ---------------------------------------------------------------- logging */

void mirs__core_log(mirs_context *ctx, mirs_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void mirs__core_vlog(mirs_context *ctx, mirs_log_level level, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 0)))
#endif
    ;

/* Diagnostics: clear the list (start of a parse) and add one, formatted
 * "FILE:LINE:COL: error: msg" (line 0: "FILE: error: msg"); the message
 * also goes to the log at MIRS_LOG_ERROR.  Adding never fails: on memory
 * exhaustion the diagnostic is logged but not stored. */
void mirs__core_diag_clear(mirs_context *ctx);
void mirs__core_diag(mirs_context *ctx, const char *file, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* ---------------------------------------------------------------- text buffer */

/* A growable string owned by a context, for printers. */
typedef struct mirs__buf {
  mirs_context *ctx;
  char *data;
  size_t len, cap;
  bool failed; /* an allocation failed; data holds what fitted */
} mirs__buf;

void mirs__buf_init(mirs__buf *b, mirs_context *ctx);
void mirs__buf_free(mirs__buf *b);
void mirs__buf_printf(mirs__buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void mirs__buf_puts(mirs__buf *b, const char *s);
void mirs__buf_put(mirs__buf *b, const void *p, size_t n);

/* ---------------------------------------------------------------- files */

/* Write len bytes to path atomically: a temp file in the same directory,
 * fsync, rename over path.  On failure nothing is left at path that was
 * not there before, and the temp file is removed. */
mirs_status mirs__core_write_atomic(mirs_context *ctx, const char *path, const void *data,
                                    size_t len);
/* Read a whole file into a NUL-terminated buffer (free with
 * mirs__core_free).  MIRS_IO with "path: strerror" on failure. */
/* Largest file mirs__core_read_file reads (a graph file is kilobytes). */
#define MIRS__MAX_FILE_BYTES (64 << 20)
mirs_status mirs__core_read_file(mirs_context *ctx, const char *path, char **out, size_t *len);
/* The same with another size limit (`what` names the file's kind in the
 * message), and refusing anything but a regular file when regular_only. */
mirs_status mirs__core_read_file_limit(mirs_context *ctx, const char *path, size_t limit,
                                       const char *what, bool regular_only, char **out,
                                       size_t *len);

/* ---------------------------------------------------------------- hashing */

/* 64-bit mixing helpers for canonical hashes (stable across runs and
 * platforms: never seeded from addresses or time). */
/* splitmix64's finaliser: spreads the bits of x. */
static inline uint64_t mirs__hash_fin(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  x ^= x >> 31;
  return x;
}

/* Mix one 64-bit value into h (a splitmix64-style finaliser on h ^ v).
 * Inline: the search mixes for every block op it lists (the prune memo's
 * key) and every fingerprint digest. */
static inline uint64_t mirs__hash_mix(uint64_t h, uint64_t v) {
  return mirs__hash_fin(h ^ (v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2)));
}
uint64_t mirs__hash_bytes(uint64_t h, const void *data, size_t len);
uint64_t mirs__hash_str(uint64_t h, const char *s);

/* Monotonic seconds. */
double mirs__core_now(void);
/* CPUs this process may use: its affinity mask (else the online CPUs),
 * at most SLURM_CPUS_PER_TASK, or OMP_NUM_THREADS when set; 1 to 4096. */
int mirs__core_usable_cpus(void);

#endif
