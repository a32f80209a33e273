/* SPDX-License-Identifier: MIT */
/* src/core/util.c - small services the modules share: a growable text
 * buffer, whole-file read, atomic file write, stable 64-bit hashing and a
 * monotonic clock, the CPUs the process may use.
 *
 * Invariants: an atomic write either leaves the complete new file at path
 * or leaves path as it was (temp file in the same directory, fsync,
 * rename, fsync of the directory); hashes never depend on addresses,
 * time or the platform. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"

/* ---------------------------------------------------------------- buffer */

/* Start an empty buffer. */
void mirs__buf_init(mirs__buf *b, mirs_context *ctx) {
  b->ctx = ctx;
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

/* Release the buffer's storage. */
void mirs__buf_free(mirs__buf *b) {
  mirs__core_free(b->ctx, b->data);
  mirs__buf_init(b, b->ctx);
}

/* Make room for n more bytes plus a NUL. */
static bool buf_reserve(mirs__buf *b, size_t n) {
  if (b->failed)
    return false;
  if (mirs__core_grow(b->ctx, (void **)&b->data, &b->cap, b->len + n + 1, 1) != MIRS_OK) {
    b->failed = true;
    return false;
  }
  return true;
}

/* Append formatted text. */
void mirs__buf_printf(mirs__buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !buf_reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Append n raw bytes (also for binary messages and files). */
void mirs__buf_put(mirs__buf *b, const void *p, size_t n) {
  if (!buf_reserve(b, n))
    return;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

/* Append a string. */
void mirs__buf_puts(mirs__buf *b, const char *s) {
  size_t n = strlen(s);
  if (!buf_reserve(b, n))
    return;
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

/* ---------------------------------------------------------------- files */

/* Read a whole file, NUL-terminated. */
mirs_status mirs__core_read_file(mirs_context *ctx, const char *path, char **out, size_t *len) {
  return mirs__core_read_file_limit(ctx, path, MIRS__MAX_FILE_BYTES, "a graph file", false, out,
                                    len);
}

/* Read a whole file of at most `limit` bytes (`what` names the kind in
 * the message when it is larger), NUL-terminated.  Opening never blocks:
 * a FIFO without a writer reads as empty (and with regular_only, any file
 * that is not a regular one is refused), so a stray FIFO cannot hang a
 * run in open(2). */
mirs_status mirs__core_read_file_limit(mirs_context *ctx, const char *path, size_t limit,
                                       const char *what, bool regular_only, char **out,
                                       size_t *len) {
  *out = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return MIRS_FAIL(ctx, MIRS_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return MIRS_FAIL(ctx, MIRS_IO, "%s: is a directory", path);
  }
  if (regular_only && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    close(fd);
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: not a regular file (%s)", path,
                     S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket");
  }
  /* Reads block again (a pipe with a writer is read to its end). */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return MIRS_FAIL(ctx, MIRS_IO, "%s: cannot open: %s", path, strerror(e));
  }
  size_t cap = 0, n = 0;
  char *buf = NULL;
  for (;;) {
    if (n > limit) { /* (/dev/zero, or a file of another kind) */
      mirs__core_free(ctx, buf);
      fclose(f);
      if (limit >= ((size_t)1 << 20))
        return MIRS_FAIL(ctx, MIRS_LIMIT, "%s: more than %zu MiB; not %s", path, limit >> 20,
                         what);
      return MIRS_FAIL(ctx, MIRS_LIMIT, "%s: more than %zu bytes; not %s", path, limit, what);
    }
    if (mirs__core_grow(ctx, (void **)&buf, &cap, n + 65536 + 1, 1) != MIRS_OK) {
      mirs__core_free(ctx, buf);
      fclose(f);
      return MIRS_NOMEM;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0)
      break;
  }
  if (ferror(f)) {
    int e = errno;
    mirs__core_free(ctx, buf);
    fclose(f);
    return MIRS_FAIL(ctx, MIRS_IO, "%s: read error: %s", path, strerror(e));
  }
  fclose(f);
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return MIRS_OK;
}

/* Write data to path atomically (temp file, fsync, rename, fsync dir). */
mirs_status mirs__core_write_atomic(mirs_context *ctx, const char *path, const void *data,
                                    size_t len) {
  size_t plen = strlen(path);
  char *tmp = mirs__core_alloc(ctx, plen + 32);
  if (!tmp)
    return MIRS_NOMEM;
  snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
  int fd = mirs_io_step(ctx, "create a temp file") != 0
               ? -1
               : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    /* named by the file asked for: the temp name means nothing to a user */
    mirs_status s = MIRS_FAIL(ctx, MIRS_IO, "%s: cannot create: %s", path, strerror(errno));
    mirs__core_free(ctx, tmp);
    return s;
  }
  const char *p = data;
  size_t left = len;
  int bad = mirs_io_step(ctx, "write a temp file") != 0;
  while (left && !bad) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      bad = 1;
      break;
    }
    p += w;
    left -= (size_t)w;
  }
  if (bad) {
    mirs_status s = MIRS_FAIL(ctx, MIRS_IO, "%s: write error: %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    mirs__core_free(ctx, tmp);
    return s;
  }
  int synced = mirs_io_step(ctx, "sync a temp file") == 0 && fsync(fd) == 0;
  int e = errno;
  if (close(fd) != 0 && synced) {
    synced = 0;
    e = errno;
  }
  if (!synced) {
    mirs_status s = MIRS_FAIL(ctx, MIRS_IO, "%s: cannot sync: %s", path, strerror(e));
    unlink(tmp);
    mirs__core_free(ctx, tmp);
    return s;
  }
  if (mirs_io_step(ctx, "rename a temp file into place") != 0 || rename(tmp, path) != 0) {
    mirs_status s = MIRS_FAIL(ctx, MIRS_IO, "%s: cannot rename into place: %s", path,
                              strerror(errno));
    unlink(tmp);
    mirs__core_free(ctx, tmp);
    return s;
  }
  /* Make the rename itself durable. */
  memcpy(tmp, path, plen + 1);
  int dfd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    /* (A failure here leaves the new file in place, only not yet
     * durable: the write is not reported as failed.) */
    if (mirs_io_step(ctx, "sync the directory") == 0)
      (void)fsync(dfd);
    close(dfd);
  }
  mirs__core_free(ctx, tmp);
  return MIRS_OK;
}

/* Public front end of mirs__core_write_atomic. */
mirs_status mirs_write_file_atomic(mirs_context *ctx, const char *path, const void *data,
                                   size_t len) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!path || (!data && len))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_write_file_atomic: NULL argument");
  MIRS_CHECK(ctx, mirs__core_write_atomic(ctx, path, data, len));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- hashing */

/* Mix len bytes into h, eight at a time, length included. */
uint64_t mirs__hash_bytes(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  h = mirs__hash_mix(h, (uint64_t)len);
  while (len >= 8) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
      v |= (uint64_t)p[i] << (8 * i);
    h = mirs__hash_mix(h, v);
    p += 8;
    len -= 8;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return mirs__hash_mix(h, v);
}

/* Mix a NUL-terminated string into h. */
uint64_t mirs__hash_str(uint64_t h, const char *s) {
  return mirs__hash_bytes(h, s, strlen(s));
}

/* Monotonic seconds. */
double mirs__core_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPUs this process may use: see core.h. */
int mirs__core_usable_cpus(void) {
  long n = 0;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    n = CPU_COUNT(&set);
#endif
  if (n < 1)
    n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    n = 1;
  const char *e = getenv("SLURM_CPUS_PER_TASK");
  char *end;
  long v;
  if (e && *e && (v = strtol(e, &end, 10)) > 0 && !*end && v < n)
    n = v;
  e = getenv("OMP_NUM_THREADS");
  if (e && *e && (v = strtol(e, &end, 10)) > 0 && (!*end || *end == ','))
    n = v;
  return n > 4096 ? 4096 : (int)n;
}
