/* SPDX-License-Identifier: MIT */
/* tests/testutil.h - helpers shared by the Check test programs: paths to
 * the source tree, temporary paths under $TMPDIR, a context whose log is
 * captured instead of printed,
 * a host run of generated code, and running a test suite with Check's
 * summary on stdout. */
#ifndef MIRS_TESTS_TESTUTIL_H
#define MIRS_TESTS_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirsearch.h"

/* Absolute path of a file in the source tree (top_srcdir from make check;
 * "." when run by hand from the top of the tree). */
static inline const char *tu_src(const char *rel) {
  static char buf[4096];
  const char *top = getenv("top_srcdir");
  snprintf(buf, sizeof buf, "%s/%s", top ? top : ".", rel);
  return buf;
}

/* $TMPDIR/name into buf (/tmp where TMPDIR is unset or empty): where a
 * test's mkstemp/mkdtemp templates go, so its temporary files are where
 * the caller says (tests/tmpdir.sh runs one with /tmp read-only). */
static inline char *tu_tmp(char *buf, size_t size, const char *name) {
  const char *dir = getenv("TMPDIR");
  int n = snprintf(buf, size, "%s/%s", dir && *dir ? dir : "/tmp", name);
  ck_assert_msg(n > 0 && (size_t)n < size, "$TMPDIR too long for %s", name);
  return buf;
}

/* Captured log: every message appended, one per line. */
typedef struct tu_log {
  char text[65536];
  size_t len;
  int count;
} tu_log;

static inline void tu_log_fn(void *user, mirs_log_level level, const char *msg) {
  tu_log *l = user;
  (void)level;
  l->count++;
  int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%s\n", msg);
  if (n > 0) {
    l->len += (size_t)n;
    if (l->len >= sizeof l->text)
      l->len = sizeof l->text - 1;
  }
}

/* A new context logging into l (cleared). */
static inline mirs_context *tu_ctx(tu_log *l) {
  mirs_context *ctx = NULL;
  ck_assert_int_eq(mirs_context_create(&ctx), MIRS_OK);
  if (l) {
    memset(l, 0, sizeof *l);
    mirs_set_log_callback(ctx, tu_log_fn, l);
  }
  return ctx;
}

/* The generated code of g run on the host (mirs_codegen_run) on inputs
 * of seed: it must run, within relative error tol of g's own float64
 * evaluation. */
static inline void tu_assert_codegen_run(mirs_context *ctx, const mirs_graph *g, uint64_t seed,
                                         double tol) {
  mirs_eval_result *r = NULL;
  double err = -1;
  ck_assert_msg(mirs_codegen_run(g, seed, MIRS_BACKEND_HOST, &r, &err) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  ck_assert_double_le(err, tol);
  mirs_eval_result_destroy(r);
}

/* Run suite s; returns the process exit status. */
static inline int tu_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Run suite s where a host C++ compiler (c++) is present, which host runs
 * of generated code need; else skip (77). */
static inline int tu_run_with_cxx(Suite *s) {
  if (system("c++ --version >/dev/null 2>&1") != 0) {
    printf("no host C++ compiler (c++): skipped\n");
    return 77;
  }
  return tu_run(s);
}

#endif
