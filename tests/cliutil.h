/* SPDX-License-Identifier: MIT */
/* tests/cliutil.h - run the mirsearch command line in-process (through
 * mirs__cli_main) with temporary files standing in for stdout and stderr,
 * and the checks built on it (a run that must succeed, `check`'s errors
 * and contents, round trips, verify, a program's eval, host runs of its
 * generated code); shared by the CLI test programs. */
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

/* Run `mirsearch ARGS...` (NULL-terminated; run_cli_va: first, then
 * those in ap) in-process into *r.  Without a cache named (--cache,
 * --cache-dir) the run uses none, as under make check
 * (AM_TESTS_ENVIRONMENT), also when a test program is run by hand: else
 * a search would read and write the user's result cache
 * (~/.cache/mirsearch; its key names the program, the options and the
 * build, so every checkout of one commit shares it), and a search meant
 * to stop at a limit or to resume would be served, complete, from an
 * entry an earlier search wrote (exit 0 instead of 4). */
static inline void run_cli_va(run *r, const char *first, va_list ap) {
  ck_assert_int_eq(setenv("MIRSEARCH_NO_CACHE", "1", 1), 0);
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = strdup("mirsearch");
  for (const char *a = first; a; a = va_arg(ap, const char *)) {
    ck_assert_int_lt(argc, MAX_ARGS);
    argv[argc++] = strdup(a);
  }
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

static inline void run_cli(run *r, const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  run_cli_va(r, first, ap);
  va_end(ap);
}

/* run_cli that must succeed (exit 0; else its stderr is the message). */
static inline void tu_cli_ok(run *r, const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  run_cli_va(r, first, ap);
  va_end(ap);
  ck_assert_msg(r->rc == 0, "mirsearch %s ...: exit %d: %s", first, r->rc, r->err);
}

/* The scratch directory of the running test, $TMPDIR/mirs_TAG_XXXXXX:
 * made by tu_scratch_make (a checked fixture's setup), removed with its
 * files by tu_scratch_remove (its teardown). */
static char tu_dir[512];

static inline void tu_scratch_make(const char *tag) {
  char name[64];
  snprintf(name, sizeof name, "mirs_%s_XXXXXX", tag);
  tu_tmp(tu_dir, sizeof tu_dir, name);
  ck_assert_ptr_nonnull(mkdtemp(tu_dir));
}

static inline void tu_scratch_remove(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tu_dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Write text to tu_dir/name; returns the path (static, overwritten per
 * call slot: 4 slots). */
static inline const char *tu_put(const char *name, const char *text) {
  static char paths[4][700];
  static int slot;
  char *p = paths[slot++ % 4];
  snprintf(p, 700, "%s/%s", tu_dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
  return p;
}

/* Assert that s contains every want[0..n). */
static inline void tu_assert_contains(const char *s, const char *const *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(strstr(s, want[i]), "missing \"%s\" in:\n%s", want[i], s);
}

/* `mirsearch check` of file `path` succeeds, its canonical text holds
 * every want[0..n), and that text checks again to itself (the round
 * trip). */
static inline void tu_assert_round_trip(const char *path, const char *const *want, size_t n);

/* Release what run_cli allocated. */
static inline void run_free(run *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

static inline void tu_assert_round_trip(const char *path, const char *const *want, size_t n) {
  run r, r2;
  run_cli(&r, "check", path, NULL);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  tu_assert_contains(r.out, want, n);
  run_cli(&r2, "check", tu_put("round_trip.graph", r.out), NULL);
  ck_assert_int_eq(r2.rc, 0);
  ck_assert_str_eq(r2.out, r.out);
  run_free(&r);
  run_free(&r2);
}

/* Exit status of `mirsearch verify PROG CAND` (0 equivalent, 1 not). */
static inline int tu_verify_rc(const char *prog, const char *cand) {
  run r;
  run_cli(&r, "verify", prog, cand, NULL);
  int rc = r.rc;
  run_free(&r);
  return rc;
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

/* `mirsearch check` of program text with errors exits 2, and its stderr
 * holds every want[0..n) (FILE:LINE:COL: error: ...). */
static inline void tu_assert_check_errors(const char *text, const char *const *want, size_t n) {
  run r;
  run_cli(&r, "check", tu_put("bad.graph", text), NULL);
  ck_assert_msg(r.rc == 2, "exit %d: %s", r.rc, r.err);
  tu_assert_contains(r.err, want, n);
  run_free(&r);
}

/* `mirsearch check PATH` succeeds, and its canonical text holds every
 * want[0..n). */
static inline void tu_assert_checks(const char *path, const char *const *want, size_t n) {
  run r;
  tu_cli_ok(&r, "check", path, NULL);
  tu_assert_contains(r.out, want, n);
  run_free(&r);
}

/* Parse text (as "t.graph") into a graph of ctx, asserting success. */
static inline mirs_graph *tu_parse(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), "t.graph", &g) == MIRS_OK,
                "parse: %s", mirs_last_error(ctx));
  return g;
}

/* Output `name` of the float64 eval of program text at seed 1: its n
 * values into v (asserting the count). */
static inline void tu_eval_output(const char *text, const char *name, double *v, int64_t n) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = tu_parse(ctx, text);
  mirs_eval_result *res = NULL;
  ck_assert_int_eq(mirs_graph_eval(g, 1, &res), MIRS_OK);
  int found = 0;
  for (int i = 0; i < mirs_eval_num_outputs(res); i++) {
    if (strcmp(mirs_eval_output_name(res, i), name) != 0)
      continue;
    int64_t count = 0;
    const double *o = mirs_eval_output_values(res, i, &count);
    ck_assert_int_eq(count, n);
    memcpy(v, o, sizeof(double) * (size_t)n);
    found = 1;
  }
  ck_assert_msg(found, "no output %s", name);
  mirs_eval_result_destroy(res);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}

/* `mirsearch run --backend=host` of path matches eval (where there is a
 * host C++ compiler). */
static inline void tu_assert_host_run(const char *path) {
  if (system("c++ --version >/dev/null 2>&1") != 0)
    return;
  run r;
  run_cli(&r, "run", "--backend=host", path, NULL);
  ck_assert_msg(r.rc == 0, "%s: rc %d: %s", path, r.rc, r.err);
  run_free(&r);
}

/* tu_assert_host_run of program text (written with f16 tensors) as it
 * is and with every f16 made f32, then bf16 (files TAG_<dtype>.graph). */
static inline void tu_assert_host_runs_by_dtype(const char *text0, const char *tag) {
  static const char *const dt[] = {"f16", "f32", "bf16"};
  for (int i = 0; i < 3; i++) {
    char text[2048], name[64];
    snprintf(text, sizeof text, "%s", text0);
    for (char *q = strstr(text, "f16"); q; q = strstr(q + strlen(dt[i]), "f16")) {
      char rest[2048];
      snprintf(rest, sizeof rest, "%s", q + 3);
      snprintf(q, sizeof text - (size_t)(q - text), "%s%s", dt[i], rest);
    }
    snprintf(name, sizeof name, "%s_%s.graph", tag, dt[i]);
    tu_assert_host_run(tu_put(name, text));
  }
}

#endif
