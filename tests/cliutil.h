/* SPDX-License-Identifier: MIT */
/* tests/cliutil.h - run the mirsearch command line in-process (through
 * mirs__cli_main) with temporary files standing in for stdout and stderr;
 * shared by the CLI test programs. */
#ifndef MIRS_TESTS_CLIUTIL_H
#define MIRS_TESTS_CLIUTIL_H

#include <stdarg.h>

#include "cli/cli.h"
#include "testutil.h"

#define MAX_ARGS 32

/* What one run of the program produced. */
typedef struct run {
  int rc;
  char *out; /* malloc'd, NUL-terminated */
  char *err;
} run;

/* Read a whole stream from its start into a malloc'd string. */
static inline char *slurp(FILE *f) {
  ck_assert_int_eq(fflush(f), 0);
  long size = ftell(f);
  ck_assert_int_ge(size, 0);
  rewind(f);
  char *s = malloc((size_t)size + 1);
  ck_assert_ptr_nonnull(s);
  size_t n = fread(s, 1, (size_t)size, f);
  s[n] = '\0';
  return s;
}

/* Run `mirsearch ARGS...` (NULL-terminated) in-process into *r. */
static inline void run_cli(run *r, const char *first, ...) {
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = strdup("mirsearch");
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *)) {
    ck_assert_int_lt(argc, MAX_ARGS);
    argv[argc++] = strdup(a);
  }
  va_end(ap);
  argv[argc] = NULL;
  /* getopt permutes argv; keep the originals to free them. */
  char *owned[MAX_ARGS + 2];
  memcpy(owned, argv, sizeof argv);
  FILE *out = tmpfile(), *err = tmpfile();
  ck_assert_ptr_nonnull(out);
  ck_assert_ptr_nonnull(err);
  r->rc = mirs__cli_main(argc, argv, out, err);
  r->out = slurp(out);
  r->err = slurp(err);
  fclose(out);
  fclose(err);
  for (int i = 0; i < argc; i++)
    free(owned[i]);
}

/* Release what run_cli allocated. */
static inline void run_free(run *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

/* Whether s begins with prefix. */
static inline int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Number of newline-terminated lines in s. */
static inline int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

#endif
