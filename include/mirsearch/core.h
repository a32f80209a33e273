/* SPDX-License-Identifier: MIT */
/* mirsearch/core.h - context, status codes, options, logging, allocation.
 *
 * Error convention: every function that can fail returns mirs_status.
 * MIRS_OK (0) is success.  On failure the context keeps a message
 * (mirs_last_error) and a trace of where the error passed through
 * (mirs_error_trace); nothing has been half-done that the caller must undo.
 * Misuse (NULL handles, unknown option names, out-of-range values) is
 * reported as MIRS_INVALID_ARG, never crashed on.  The library never
 * calls exit() and never writes to stdout; messages go to the log
 * callback (stderr by default).
 *
 * A context is used by one thread at a time unless a function says
 * otherwise. */
#ifndef MIRSEARCH_CORE_H
#define MIRSEARCH_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "mirsearch/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(MIRS_BUILDING_LIBRARY)
#define MIRS_API __attribute__((visibility("default")))
#else
#define MIRS_API
#endif

/* Status codes, from mirsearch/status.def. */
typedef enum mirs_status {
#define MIRS_STATUS(name, exit_status, desc) MIRS_##name,
#include "mirsearch/status.def"
#undef MIRS_STATUS
  MIRS_STATUS_COUNT
} mirs_status;

/* Short name of a status ("OK", "PARSE", ...); "?" when out of range. */
MIRS_API const char *mirs_status_name(mirs_status s);
/* One-line description of a status. */
MIRS_API const char *mirs_status_str(mirs_status s);
/* Process exit status the CLI uses for s: 0, 2, 3 or 4. */
MIRS_API int mirs_status_exit_code(mirs_status s);

/* Run-time version; compare with MIRS_VERSION from mirsearch/version.h. */
MIRS_API int mirs_version(void);
MIRS_API const char *mirs_version_string(void);
/* Configured features, e.g. "cuda=yes mpi=yes sanitizers=no debug=no". */
MIRS_API const char *mirs_build_features(void);
/* Git commit the library was built from ("unknown" outside git). */
MIRS_API const char *mirs_build_git_hash(void);
/* Compiler that built the library. */
MIRS_API const char *mirs_build_compiler(void);

typedef struct mirs_context mirs_context;

/* Embedder-supplied allocator, in the style of Lua's lua_Alloc:
 *   nsize == 0: free ptr (osize is its size), return NULL;
 *   ptr == NULL: allocate nsize bytes;
 *   otherwise: resize ptr from osize to nsize bytes.
 * Must be thread-safe if the context is used by several threads. */
typedef void *(*mirs_alloc_fn)(void *user, void *ptr, size_t osize, size_t nsize);

/* Create a context with the default allocator (malloc) and default options.
 * Returns MIRS_NOMEM (and *out = NULL) when that fails. */
MIRS_API mirs_status mirs_context_create(mirs_context **out);
/* Create a context using alloc (NULL = default) with user pointer. */
MIRS_API mirs_status mirs_context_create_with_allocator(mirs_alloc_fn alloc, void *user,
                                                        mirs_context **out);
/* Release the context; every object created from it must be destroyed first
 * (leaks are reported on the log at warning level).  NULL is a no-op. */
MIRS_API void mirs_context_destroy(mirs_context *ctx);

/* Message for the last error on ctx ("" when none). */
MIRS_API const char *mirs_last_error(const mirs_context *ctx);
/* Where the last error passed through, one "function (file:line)" per line,
 * innermost first ("" when none). */
MIRS_API const char *mirs_error_trace(const mirs_context *ctx);
/* Status of the last error (MIRS_OK when none). */
MIRS_API mirs_status mirs_last_status(const mirs_context *ctx);
/* Forget the last error. */
MIRS_API void mirs_clear_error(mirs_context *ctx);

/* Ask the long operation running on ctx (a search, in any of its phases,
 * or mirs_graph_eval / mirs_verify) to stop at its next poll, within a
 * fraction of a second: a search then ends early (incomplete, MIRS_OK),
 * other calls return MIRS_STOPPED.  Async-signal-safe (one lock-free
 * atomic operation): call it from a SIGINT/SIGTERM handler.  The request
 * stays until mirs_interrupt_clear; mirs_interrupted tells whether it is
 * set. */
MIRS_API void mirs_interrupt(mirs_context *ctx);
MIRS_API void mirs_interrupt_clear(mirs_context *ctx);
MIRS_API int mirs_interrupted(const mirs_context *ctx);

/* Bytes currently allocated through ctx, and the most ever at once. */
MIRS_API size_t mirs_memory_current(const mirs_context *ctx);
MIRS_API size_t mirs_memory_peak(const mirs_context *ctx);

/* One step of a durable write (create, write, sync, rename, remove) that
 * the library or a client is about to take, named by `what`: returns 0 to
 * go on.  Fault injection for tests (built unless configure was given
 * --disable-fault-injection): when the environment variable
 * MIRS_FAULT_INJECT was "N:enospc" or "N:kill" as ctx was created, the
 * Nth step counted in ctx returns -1 with errno = ENOSPC (after a
 * warning naming the step) or raises SIGKILL, so a test can stop a write
 * at each of its steps in turn (docs/PARALLEL.md, tests/durability.sh). */
MIRS_API int mirs_io_step(mirs_context *ctx, const char *what);

/* Write len bytes to path atomically: a temp file beside it, fsync,
 * rename.  On failure path is left as it was (MIRS_IO with the reason). */
MIRS_API mirs_status mirs_write_file_atomic(mirs_context *ctx, const char *path, const void *data,
                                            size_t len);

/* Release memory the library returned to the caller (mirs_graph_to_string,
 * mirs_search_report_json), through ctx's allocator.  NULL is a no-op. */
MIRS_API void mirs_free(mirs_context *ctx, void *ptr);

/* ---------------------------------------------------------------- options */

/* Set an option by name (from the table printed by mirs_options_help):
 * value is parsed per the option's type and range-checked.  '-' and '_'
 * are interchangeable in names.  MIRS_INVALID_ARG on an unknown name, a
 * malformed value or one out of range (the message says which). */
MIRS_API mirs_status mirs_option_set(mirs_context *ctx, const char *name, const char *value);
/* Read an option as text into buf (always NUL-terminated). */
MIRS_API mirs_status mirs_option_get(const mirs_context *ctx, const char *name, char *buf,
                                     size_t size);
/* Read an integer or boolean option. */
MIRS_API mirs_status mirs_option_get_int(const mirs_context *ctx, const char *name,
                                         int64_t *value);
/* Number of options and their names in table order (NULL past the end). */
MIRS_API size_t mirs_option_count(void);
MIRS_API const char *mirs_option_name(size_t index);
/* Help text of option `index`: "--name=TYPE  help (default D, range [lo, hi])". */
MIRS_API const char *mirs_option_help(size_t index, char *buf, size_t size);
/* Write "name=value" for each option that differs from its default,
 * space-separated, into buf (for banners and reports). */
MIRS_API void mirs_options_nondefault(const mirs_context *ctx, char *buf, size_t size);

/* ---------------------------------------------------------------- logging */

typedef enum mirs_log_level {
  MIRS_LOG_ERROR = 0,
  MIRS_LOG_WARNING = 1,
  MIRS_LOG_INFO = 2,
  MIRS_LOG_DEBUG = 3,
  MIRS_LOG_TRACE = 4
} mirs_log_level;

/* Receives each message at or below the log_level option.  Diagnostics for
 * input files arrive at MIRS_LOG_ERROR already formatted as
 * "FILE:LINE:COL: error: message".  The default writes the message and a
 * newline to stderr. */
typedef void (*mirs_log_fn)(void *user, mirs_log_level level, const char *message);
/* Install a log callback (NULL restores the default). */
MIRS_API void mirs_set_log_callback(mirs_context *ctx, mirs_log_fn fn, void *user);

/* ---------------------------------------------------------------- diagnostics */

/* Diagnostics from the last parse on ctx (each "FILE:LINE:COL: error: msg"
 * or "FILE: error: msg" where no position applies). */
MIRS_API size_t mirs_diag_count(const mirs_context *ctx);
MIRS_API const char *mirs_diag_message(const mirs_context *ctx, size_t index);

/* ---------------------------------------------------------------- statistics */

/* Number of statistics counters, their names, and their values on ctx. */
MIRS_API size_t mirs_stat_count(void);
MIRS_API const char *mirs_stat_name(size_t index);
MIRS_API const char *mirs_stat_description(size_t index);
MIRS_API uint64_t mirs_stat_value(const mirs_context *ctx, size_t index);

/* ---------------------------------------------------------------- random */

/* Philox4x32-10 (the generator cuRAND's curandStatePhilox4_32_10_t uses):
 * the four 32-bit words for counter ctr under key key. */
MIRS_API void mirs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* The value curand() returns after curand_init(seed, subsequence, offset):
 * word offset%4 of Philox(counter = (offset/4, subsequence), key = seed). */
MIRS_API uint32_t mirs_philox_at(uint64_t seed, uint64_t subsequence, uint64_t offset);

#ifdef __cplusplus
}
#endif
#endif
