/* SPDX-License-Identifier: MIT */
/* tests/check_cli.c - the mirsearch command line, run in-process through
 * mirs__cli_main with temporary files standing in for stdout and stderr.
 *
 * Covers: --help/--version, `check` round trips on every example, `eval`
 * summaries (exact numbers, seeds, program vs µGraph), parse diagnostics,
 * usage errors and their exit statuses, and repeated calls in one process
 * (getopt state is reset on each call); searches run through it use no
 * result cache unless they name one, also when run by hand. */
#include "config.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

#include "cliutil.h"

/* Write text to a fresh temporary file ending in suffix; returns its
 * path (malloc'd; the caller unlinks and frees it). */
static char *write_temp(const char *text, const char *suffix) {
  char *path = malloc(600), name[64];
  ck_assert_ptr_nonnull(path);
  snprintf(name, sizeof name, "mirs_check_cli_XXXXXX%s", suffix);
  tu_tmp(path, 600, name);
  int fd = mkstemps(path, (int)strlen(suffix));
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

/* Assert that r is a usage-style failure: exit 2, nothing on stdout and
 * a "mirsearch: error:" message on stderr. */
static void assert_usage_error(const run *r) {
  ck_assert_int_eq(r->rc, 2);
  ck_assert_str_eq(r->out, "");
  ck_assert_msg(starts_with(r->err, "mirsearch: error: "), "stderr: %s", r->err);
}

/* Assert a usage error that also carries the --help hint. */
static void assert_usage_hint(const run *r) {
  assert_usage_error(r);
  ck_assert_msg(strstr(r->err, "Try 'mirsearch --help'.") != NULL, "stderr: %s", r->err);
}

/* Whether an examples/ file name ends in .graph or .ugraph. */
static int is_example(const char *name) {
  size_t n = strlen(name);
  return (n > 6 && strcmp(name + n - 6, ".graph") == 0) ||
         (n > 7 && strcmp(name + n - 7, ".ugraph") == 0);
}

/* Sorted list of example file names (NULL-terminated, malloc'd). */
static char **list_examples(int *count) {
  DIR *d = opendir(tu_src("examples"));
  ck_assert_ptr_nonnull(d);
  char **names = calloc(256, sizeof *names);
  ck_assert_ptr_nonnull(names);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (is_example(e->d_name) && n < 255)
      names[n++] = strdup(e->d_name);
  closedir(d);
  *count = n;
  return names;
}

/* Free a list from list_examples. */
static void free_list(char **names) {
  for (int i = 0; names[i]; i++)
    free(names[i]);
  free(names);
}

/* Summary line for a tensor of n values, computed independently of the
 * CLI (same definition as DESIGN's eval output). */
static void expected_line(char *buf, size_t size, const char *prefix, const double *v, int64_t n) {
  double sum = 0, sq = 0, mn = v[0], mx = v[0], ck = 0;
  for (int64_t i = 0; i < n; i++) {
    sum += v[i];
    sq += v[i] * v[i];
    mn = fmin(mn, v[i]);
    mx = fmax(mx, v[i]);
    ck += v[i] * (1.0 + (double)(i % 97) / 97.0);
  }
  snprintf(buf, size, "%s sum=%.9e l2=%.9e min=%.9e max=%.9e checksum=%.9e\n", prefix, sum + 0.0,
           sqrt(sq) + 0.0, mn + 0.0, mx + 0.0, ck + 0.0);
}

/* ---------------------------------------------------------------- help, version */

/* s without blanks and newlines (malloc'd): help text is wrapped, also
 * after commas in long lists. */
static char *squeeze(const char *s) {
  char *o = malloc(strlen(s) + 1), *q = o;
  ck_assert_ptr_nonnull(o);
  for (; *s; s++)
    if (*s != ' ' && *s != '\n')
      *q++ = *s;
  *q = '\0';
  return o;
}

START_TEST(test_help_lists_every_option) {
  const char *flags[] = {"--help", "-h"};
  for (int k = 0; k < 2; k++) {
    run r;
    run_cli(&r, flags[k], NULL);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert(starts_with(r.out, "Usage: mirsearch"));
    ck_assert_ptr_nonnull(strstr(r.out, "check FILE"));
    ck_assert_ptr_nonnull(strstr(r.out, "eval FILE"));
    ck_assert_uint_gt(mirs_option_count(), 0);
    for (size_t i = 0; i < mirs_option_count(); i++) {
      char buf[512];
      const char *help = mirs_option_help(i, buf, sizeof buf);
      char dashed[128];
      snprintf(dashed, sizeof dashed, "%s", mirs_option_name(i));
      for (char *p = dashed; *p; p++)
        *p = *p == '_' ? '-' : *p;
      ck_assert_msg(strstr(r.out, mirs_option_name(i)) != NULL || strstr(r.out, dashed) != NULL,
                    "missing %s", mirs_option_name(i));
      char *want = squeeze(help), *have = squeeze(r.out);
      ck_assert_msg(strstr(have, want) != NULL, "missing help text %s", help);
      free(want);
      free(have);
    }
    /* Every line fits an 80-column terminal (characters, not bytes). */
    int line = 1, cols = 0;
    for (const unsigned char *p = (const unsigned char *)r.out; *p; p++) {
      if (*p == '\n') {
        line++;
        cols = 0;
      } else if ((*p & 0xC0) != 0x80) {
        cols++;
        ck_assert_msg(cols <= 80, "--help line %d is wider than 80 columns", line);
      }
    }
    run_free(&r);
  }
}
END_TEST

START_TEST(test_version) {
  const char *flags[] = {"--version", "-V"};
  for (int k = 0; k < 2; k++) {
    run r;
    run_cli(&r, flags[k], NULL);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_str_eq(r.err, "");
    char first[128];
    snprintf(first, sizeof first, "mirsearch %s\n", mirs_version_string());
    ck_assert_msg(starts_with(r.out, first), "stdout: %s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, mirs_build_git_hash()));
    ck_assert_ptr_nonnull(strstr(r.out, mirs_build_features()));
    ck_assert_ptr_nonnull(strstr(r.out, "(match)"));
    run_free(&r);
  }
}
END_TEST

/* ---------------------------------------------------------------- check */

START_TEST(test_check_examples_round_trip) {
  int n;
  char **names = list_examples(&n);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n; i++) {
    char rel[512];
    snprintf(rel, sizeof rel, "examples/%s", names[i]);
    char *path = strdup(tu_src(rel));
    run a, b;
    run_cli(&a, "check", path, NULL);
    ck_assert_msg(a.rc == 0, "%s: exit %d, stderr: %s", path, a.rc, a.err);
    ck_assert_msg(a.out[0] != '\0', "%s: no output", path);
    ck_assert_msg(a.err[0] == '\0', "%s: stderr: %s", path, a.err);
    char *tmp = write_temp(a.out, strrchr(names[i], '.'));
    run_cli(&b, "check", tmp, NULL);
    ck_assert_msg(b.rc == 0, "%s again: exit %d, stderr: %s", path, b.rc, b.err);
    ck_assert_msg(strcmp(a.out, b.out) == 0, "%s does not round-trip:\n%s\n---\n%s", path, a.out,
                  b.out);
    unlink(tmp);
    free(tmp);
    free(path);
    run_free(&a);
    run_free(&b);
  }
  free_list(names);
}
END_TEST

START_TEST(test_check_options_anywhere) {
  char *path = strdup(tu_src("examples/gqa_small.graph"));
  run a, b, c;
  run_cli(&a, "check", path, NULL);
  run_cli(&b, "-q", "check", path, "--log-level=1", NULL);
  run_cli(&c, "check", "--set", "max_dims=4", path, "-v", "-v", NULL);
  ck_assert_int_eq(a.rc, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_int_eq(c.rc, 0);
  ck_assert_str_eq(a.out, b.out);
  ck_assert_str_eq(a.out, c.out);
  run_free(&a);
  run_free(&b);
  run_free(&c);
  free(path);
}
END_TEST

START_TEST(test_check_option_is_applied) {
  /* A rank-3 program is refused when max_dims is 2: the option reached
   * the library, in both spellings and through --set. */
  char *path = strdup(tu_src("examples/gqa_small.graph"));
  const char *forms[][2] = {
      {"--max-dims=2", NULL}, {"--max_dims=2", NULL}, {"--set", "max-dims=2"}};
  for (int k = 0; k < 3; k++) {
    run r;
    if (forms[k][1])
      run_cli(&r, forms[k][0], forms[k][1], "check", path, NULL);
    else
      run_cli(&r, forms[k][0], "check", path, NULL);
    ck_assert_msg(r.rc == 2, "%s: exit %d", forms[k][0], r.rc);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_ne(r.err, "");
    run_free(&r);
  }
  free(path);
}
END_TEST

START_TEST(test_check_malformed) {
  char *path = write_temp("input X : f16[2, 4]\nY = nosuchop(X)\noutput Y\n", ".graph");
  run r;
  run_cli(&r, "check", path, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_str_eq(r.out, "");
  /* FILE:LINE:COL: error: */
  ck_assert_msg(starts_with(r.err, path), "stderr: %s", r.err);
  const char *p = r.err + strlen(path);
  ck_assert_msg(*p == ':', "stderr: %s", r.err);
  char *end;
  long line = strtol(p + 1, &end, 10);
  ck_assert_int_eq(line, 2);
  ck_assert_msg(*end == ':', "stderr: %s", r.err);
  long col = strtol(end + 1, &end, 10);
  ck_assert_int_ge(col, 1);
  ck_assert_msg(starts_with(end, ": error:"), "stderr: %s", r.err);
  /* Diagnostics already printed are not repeated as a CLI error. */
  ck_assert_ptr_null(strstr(r.err, "mirsearch: error:"));
  run_free(&r);
  run_cli(&r, "eval", path, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_str_eq(r.out, "");
  ck_assert(starts_with(r.err, path));
  run_free(&r);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(test_check_malformed_directory) {
  /* Every file in tests/malformed is rejected with a diagnostic naming it. */
  DIR *d = opendir(tu_src("tests/malformed"));
  ck_assert_ptr_nonnull(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || !is_example(e->d_name))
      continue;
    char rel[512];
    snprintf(rel, sizeof rel, "tests/malformed/%s", e->d_name);
    char *path = strdup(tu_src(rel));
    run r;
    run_cli(&r, "check", path, NULL);
    ck_assert_msg(r.rc == 2, "%s: exit %d", path, r.rc);
    ck_assert_msg(r.out[0] == '\0', "%s: stdout: %s", path, r.out);
    ck_assert_msg(starts_with(r.err, path) && strstr(r.err, ": error: ") != NULL, "%s: stderr: %s",
                  path, r.err);
    run_free(&r);
    free(path);
  }
  closedir(d);
}
END_TEST

START_TEST(test_missing_file) {
  const char *path = "/nonexistent/dir/mirs_no_such_file.graph";
  const char *cmds[] = {"check", "eval"};
  for (int k = 0; k < 2; k++) {
    run r;
    run_cli(&r, cmds[k], path, NULL);
    assert_usage_error(&r);
    ck_assert_ptr_nonnull(strstr(r.err, path));
    run_free(&r);
  }
  run r;
  run_cli(&r, "check", "/tmp", NULL); /* a directory is not a program */
  assert_usage_error(&r);
  run_free(&r);
}
END_TEST

/* ---------------------------------------------------------------- eval */

START_TEST(test_eval_format_and_seeds) {
  char *path = strdup(tu_src("examples/gqa_small.graph"));
  run a, a2, b, c, d;
  run_cli(&a, "eval", path, "--seed", "1", NULL);
  run_cli(&a2, "--seed=1", "eval", path, NULL);
  run_cli(&b, "eval", "--seed", "2", path, NULL);
  run_cli(&c, "--set", "seed=1", "eval", path, NULL);
  run_cli(&d, "eval", path, NULL); /* default seed is 1 */
  ck_assert_int_eq(a.rc, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_str_eq(a.err, "");
  ck_assert_int_eq(count_lines(a.out), 1);
  ck_assert_msg(starts_with(a.out, "O f16[2, 8, 16] sum="), "stdout: %s", a.out);
  const char *keys[] = {" sum=", " l2=", " min=", " max=", " checksum="};
  for (int k = 0; k < 5; k++)
    ck_assert_ptr_nonnull(strstr(a.out, keys[k]));
  ck_assert_str_eq(a.out, a2.out);
  ck_assert_str_eq(a.out, c.out);
  ck_assert_str_eq(a.out, d.out);
  ck_assert_str_ne(a.out, b.out);
  run_free(&a);
  run_free(&a2);
  run_free(&b);
  run_free(&c);
  run_free(&d);
  free(path);
}
END_TEST

START_TEST(test_eval_exact_numbers) {
  /* Y = X * X over 200 elements (so the checksum weights wrap at 97),
   * and Z = sum over the last dim, checked against values computed from
   * mirs_input_value. */
  char *path = write_temp("program sq\n"
                          "input X : f32[2, 100]\n"
                          "Y = mul(X, X)\n"
                          "Z = sum(X, dim=1)\n"
                          "output Y, Z\n",
                          ".graph");
  run r;
  run_cli(&r, "eval", path, "--seed", "7", NULL);
  ck_assert_msg(r.rc == 0, "exit %d, stderr: %s", r.rc, r.err);
  double y[200], z[2] = {0, 0};
  for (int i = 0; i < 200; i++) {
    double x = mirs_input_value(7, "X", (uint64_t)i);
    y[i] = x * x;
    z[i / 100] += x;
  }
  char want[1024], line[512];
  expected_line(line, sizeof line, "Y f32[2, 100]", y, 200);
  snprintf(want, sizeof want, "%s", line);
  expected_line(line, sizeof line, "Z f32[2, 1]", z, 2);
  strncat(want, line, sizeof want - strlen(want) - 1);
  ck_assert_str_eq(r.out, want);
  run_free(&r);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(test_eval_equivalent_programs_agree) {
  /* Same function, different intermediate names and operand order: the
   * summary lines are identical. */
  char *p1 = write_temp("input A : f16[4, 8]\ninput B : f16[8, 4]\n"
                        "M = matmul(A, B)\nN = add(M, M)\nO = exp(N)\noutput O\n",
                        ".graph");
  char *p2 = write_temp("input A : f16[4, 8]\ninput B : f16[8, 4]\n"
                        "t0 = matmul(A, B)\nt1 = add(t0, t0)\nO = exp(t1)\noutput O\n",
                        ".graph");
  run a, b;
  run_cli(&a, "eval", p1, NULL);
  run_cli(&b, "eval", p2, NULL);
  ck_assert_msg(a.rc == 0, "stderr: %s", a.err);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_str_eq(a.out, b.out);
  run_free(&a);
  run_free(&b);
  unlink(p1);
  unlink(p2);
  free(p1);
  free(p2);
}
END_TEST

START_TEST(test_eval_program_vs_ugraph) {
  /* Every examples/X_small.graph with an X_small.ugraph beside it, and
   * every example against its own canonical form, evaluate identically. */
  int n;
  char **names = list_examples(&n);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (len < 12 || strcmp(names[i] + len - 12, "_small.graph") != 0)
      continue;
    char rel[512];
    snprintf(rel, sizeof rel, "examples/%s", names[i]);
    char *prog = strdup(tu_src(rel));
    snprintf(rel, sizeof rel, "examples/%.*s.ugraph", (int)(len - 6), names[i]);
    char *ug = strdup(tu_src(rel));
    run a, b, c;
    run_cli(&a, "eval", prog, NULL);
    ck_assert_msg(a.rc == 0, "%s: stderr: %s", prog, a.err);
    ck_assert_int_eq(count_lines(a.out), 1);
    if (access(ug, R_OK) == 0) {
      run_cli(&b, "eval", ug, NULL);
      ck_assert_msg(b.rc == 0, "%s: stderr: %s", ug, b.err);
      ck_assert_msg(strcmp(a.out, b.out) == 0, "%s vs %s:\n%s%s", prog, ug, a.out, b.out);
      run_free(&b);
    }
    run_cli(&b, "check", prog, NULL);
    char *tmp = write_temp(b.out, ".graph");
    run_cli(&c, "eval", tmp, NULL);
    ck_assert_str_eq(a.out, c.out);
    unlink(tmp);
    free(tmp);
    run_free(&a);
    run_free(&b);
    run_free(&c);
    free(prog);
    free(ug);
  }
  free_list(names);
}
END_TEST

/* ---------------------------------------------------------------- usage errors */

START_TEST(test_usage_errors) {
  char *path = strdup(tu_src("examples/gqa_small.graph"));
  run r;
  run_cli(&r, NULL); /* no command */
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "--bogus", "check", path, NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "--bogus"));
  run_free(&r);
  run_cli(&r, "-x", "check", path, NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "-x"));
  run_free(&r);
  run_cli(&r, "frobnicate", path, NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "frobnicate"));
  run_free(&r);
  run_cli(&r, "frobnicate", NULL);
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "check", NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "FILE"));
  run_free(&r);
  run_cli(&r, "eval", NULL);
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "check", path, "extra", NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "extra"));
  run_free(&r);
  run_cli(&r, "eval", path, "--seed", "abc", NULL);
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "eval", path, "--seed", NULL); /* missing argument */
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "--seed"));
  run_free(&r);
  run_cli(&r, "--help=yes", NULL);
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "--set", "max_dims", "check", path, NULL); /* no '=' */
  assert_usage_hint(&r);
  run_free(&r);
  run_cli(&r, "--set", "no_such_option=1", "check", path, NULL);
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "no_such_option"));
  run_free(&r);
  free(path);
}
END_TEST

START_TEST(test_bad_option_values) {
  char *path = strdup(tu_src("examples/gqa_small.graph"));
  const char *bad[] = {"--max-dims=abc", "--max_dims=7",  "--max-dims=0",          "--log-level=9",
                       "--seed=-1",      "--max-errors=", "--eval-max-elements=1x"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    run r;
    run_cli(&r, bad[k], "check", path, NULL);
    assert_usage_error(&r);
    /* The library's message follows the prefix; it is never empty. */
    ck_assert_msg(strlen(r.err) > strlen("mirsearch: error: \n"), "%s: %s", bad[k], r.err);
    run_free(&r);
  }
  free(path);
}
END_TEST

START_TEST(test_verify) {
  char *prog = strdup(tu_src("examples/rmsnorm_linear_small.graph"));
  char *fused = strdup(tu_src("examples/rmsnorm_linear_small.ugraph"));
  char *other = strdup(tu_src("examples/gqa_small.ugraph"));
  run r;
  run_cli(&r, "verify", prog, fused, NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  ck_assert(starts_with(r.out, "equivalent: yes\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "fingerprints: equal ("));
  ck_assert_ptr_nonnull(strstr(r.out, "false-accept bound 2^-"));
  ck_assert_ptr_nonnull(strstr(r.out, "float64: max relative error"));
  run_free(&r);
  /* the program is trivially equivalent to itself */
  run_cli(&r, "verify", prog, prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  run_free(&r);
  /* a different function: exit 1, with the reason */
  run_cli(&r, "verify", prog, other, NULL);
  ck_assert_int_eq(r.rc, 1);
  ck_assert(starts_with(r.out, "equivalent: no\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "reason: the candidate")); /* (another program's inputs) */
  run_free(&r);
  /* a near miss: the operands of a matmul exchanged (square) */
  char *a = write_temp("input X : f32[4, 4]\ninput W : f32[4, 4]\nO = matmul(X, W)\noutput O\n",
                       ".graph");
  char *b = write_temp("input X : f32[4, 4]\ninput W : f32[4, 4]\nO = matmul(W, X)\noutput O\n",
                       ".graph");
  run_cli(&r, "verify", a, b, NULL);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_ptr_nonnull(strstr(r.out, "reason: fingerprints differ"));
  run_free(&r);
  /* The candidate's inputs must be the program's, in order: an extra
   * unused input, the inputs swapped, or one renamed is another function
   * to the caller (its best.cu takes other arguments), said as such. */
  static const struct {
    const char *text, *reason;
  } iface[] = {
      {"input X : f32[4, 4]\ninput W : f32[4, 4]\ninput Z : f32[4, 4]\nO = matmul(X, W)\n"
       "output O\n",
       "reason: the candidate has input Z, which the program does not have"},
      {"input W : f32[4, 4]\ninput X : f32[4, 4]\nO = matmul(X, W)\noutput O\n",
       "reason: the candidate takes its inputs in another order (W where the program has X)"},
      {"input X : f32[4, 4]\ninput V : f32[4, 4]\nO = matmul(X, V)\noutput O\n",
       "reason: the candidate has input V where the program has input W (a renamed input)"},
  };
  for (size_t k = 0; k < sizeof iface / sizeof *iface; k++) {
    char *cand = write_temp(iface[k].text, ".graph");
    run_cli(&r, "verify", a, cand, NULL);
    ck_assert_msg(r.rc == 1, "case %zu: rc %d: %s %s", k, r.rc, r.out, r.err);
    ck_assert(starts_with(r.out, "equivalent: no\n"));
    ck_assert_msg(strstr(r.out, iface[k].reason) != NULL, "case %zu: %s", k, r.out);
    run_free(&r);
    unlink(cand);
    free(cand);
  }
  /* exp of an exp cannot be fingerprinted soundly: refused, not verified */
  char *e = write_temp("input X : f32[4, 4]\nE = exp(X)\nO = exp(E)\noutput O\n", ".graph");
  run_cli(&r, "verify", e, e, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "mirsearch: error:"));
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  /* usage */
  run_cli(&r, "verify", prog, NULL);
  assert_usage_error(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "needs PROGRAM and CANDIDATE"));
  run_free(&r);
  unlink(a);
  unlink(b);
  unlink(e);
  free(a);
  free(b);
  free(e);
  free(prog);
  free(fused);
  free(other);
}
END_TEST

/* Read a whole file into a malloc'd string (NULL when missing). */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END); /* slurp reads up to the current position */
  char *s = slurp(f);
  fclose(f);
  return s;
}

START_TEST(test_search_outputs) {
  char dir[512];
  ck_assert_ptr_nonnull(mkdtemp(tu_tmp(dir, sizeof dir, "mirs-cli-search-XXXXXX")));
  char outdir[600], report[700], best[700];
  snprintf(outdir, sizeof outdir, "%s/out", dir);
  snprintf(report, sizeof report, "%s/report.json", outdir);
  snprintf(best, sizeof best, "%s/best.ugraph", outdir);
  char *prog = write_temp("program tiny\ninput X : f32[4, 8]\ninput W : f32[8, 4]\n"
                          "Y = matmul(X, W)\nO = exp(Y)\noutput O\n",
                          ".graph");
  run r;
  run_cli(&r, "-q", "--out", outdir, "--json", prog, NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  char *rep = read_text(report);
  ck_assert_ptr_nonnull(rep);
  ck_assert_msg(strcmp(r.out, rep) == 0, "--json output differs from report.json (%zu vs %zu bytes)",
                strlen(r.out), strlen(rep)); /* --json prints exactly the report */
  static const char *const fields[] = {
      "\"program\": \"tiny\"", "\"states_explored\": ", "\"candidates_verified\": ",
      "\"graphs_found\": ", "\"prune_calls\": ", "\"prune_cache_hits\": ", "\"solver_calls\": ",
      "\"wall_seconds\": ", "\"threads\": ", "\"ranks\": 1", "\"best\": ", "\"complete\": "};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    ck_assert_msg(strstr(rep, fields[i]), "report lacks %s", fields[i]);
  if (!strstr(rep, "\"best\": null")) {
    /* the best result is a file that verifies against the program */
    run v;
    run_cli(&v, "verify", prog, best, NULL);
    ck_assert_msg(v.rc == 0, "best does not verify: %.300s %.300s", v.out, v.err);
    run_free(&v);
    ck_assert_ptr_nonnull(strstr(rep, "\"kernels\": "));
  }
  free(rep);
  run_free(&r);
  /* a state limit stops early, says so, keeps a checkpoint and exits 4 */
  char ckpt[800];
  snprintf(ckpt, sizeof ckpt, "%s/checkpoint", outdir);
  run_cli(&r, "--out", outdir, "--max-states=5", prog, NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  rep = read_text(report);
  ck_assert_ptr_nonnull(strstr(rep, "\"complete\": false"));
  ck_assert_ptr_nonnull(strstr(r.out, "stopped early"));
  ck_assert_ptr_nonnull(strstr(r.err, "--resume="));
  ck_assert_int_eq(access(ckpt, F_OK), 0);
  free(rep);
  run_free(&r);
  /* resuming it completes the search with the uninterrupted results */
  char *full = NULL;
  {
    char outdir2[800], report2[900];
    snprintf(outdir2, sizeof outdir2, "%s/full", dir);
    snprintf(report2, sizeof report2, "%s/report.json", outdir2);
    run_cli(&r, "-q", "--out", outdir2, "--threads=1", prog, NULL);
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    run_free(&r);
    full = read_text(report2);
    ck_assert_ptr_nonnull(full);
  }
  char resume_arg[700];
  snprintf(resume_arg, sizeof resume_arg, "--resume=%s", outdir);
  run_cli(&r, "-q", resume_arg, "--threads=2", NULL);
  ck_assert_msg(r.rc == 0, "resume rc %d: %s", r.rc, r.err);
  run_free(&r);
  rep = read_text(report);
  ck_assert_ptr_nonnull(strstr(rep, "\"complete\": true"));
  ck_assert_str_eq(strstr(rep, "\"results\""), strstr(full, "\"results\""));
  ck_assert_int_ne(access(ckpt, F_OK), 0); /* complete: nothing left to resume */
  free(rep);
  free(full);
  /* --resume takes no FILE, and a directory without a checkpoint is refused */
  run_cli(&r, resume_arg, prog, NULL);
  assert_usage_error(&r);
  run_free(&r);
  run_cli(&r, "-q", resume_arg, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "no checkpoint"));
  run_free(&r);
  /* bad search options */
  run_cli(&r, "--threads=-1", prog, NULL);
  assert_usage_error(&r);
  run_free(&r);
  run_cli(&r, "--device=V100", "--out", outdir, prog, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "V100"));
  run_free(&r);
  /* an output path that is a file is refused */
  run_cli(&r, "-q", "--out", prog, prog, NULL);
  ck_assert_int_eq(r.rc, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "not a directory"));
  run_free(&r);
  unlink(prog);
  free(prog);
  char cmd[800];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_codegen_writes_header) {
  char *path = strdup(tu_src("examples/gqa_small.ugraph"));
  char dir[512];
  ck_assert_ptr_nonnull(mkdtemp(tu_tmp(dir, sizeof dir, "mirs_check_cli_cg_XXXXXX")));
  char cu[600], h[600], h2[600];
  snprintf(cu, sizeof cu, "%s/attn.cu", dir);
  snprintf(h, sizeof h, "%s/attn.h", dir);
  snprintf(h2, sizeof h2, "%s/other.h", dir);
  /* -o X.cu writes X.h beside it. */
  run r;
  run_cli(&r, "codegen", path, "-o", cu, NULL);
  ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  char *code = read_text(cu), *hdr = read_text(h);
  ck_assert_ptr_nonnull(code);
  ck_assert_ptr_nonnull(hdr);
  ck_assert_ptr_nonnull(strstr(hdr, "int mirs_gqa_small(const void *in_Q, const void *in_K, "));
  ck_assert_ptr_nonnull(strstr(hdr, "size_t mirs_gqa_small_workspace_bytes(void);"));
  ck_assert_ptr_nonnull(strstr(code, "extern \"C\" int mirs_gqa_small(const void *in_Q_"));
  free(code);
  free(hdr);
  /* --header=FILE with the code on stdout. */
  run_cli(&r, "codegen", "--header", h2, path, NULL);
  ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "extern \"C\" int mirs_gqa_small("));
  run_free(&r);
  hdr = read_text(h2);
  ck_assert_ptr_nonnull(hdr);
  ck_assert_ptr_nonnull(strstr(hdr, "MIRS_GEN_WORKSPACE = -4"));
  free(hdr);
  run_cli(&r, "codegen", "--header=", path, NULL);
  assert_usage_error(&r);
  run_free(&r);
  unlink(cu);
  unlink(h);
  unlink(h2);
  ck_assert_int_eq(rmdir(dir), 0);
  free(path);
}
END_TEST

/* What a new user meets first, each as the docs say it: --threads=0 (the
 * option table's "the CPUs this process may use"); a --device-profile
 * that is not there is bad input (exit 2, like a missing program); a
 * codegen whose code cannot be written leaves no header behind; bench
 * --source-dir=DIR creates DIR; an option of another command is refused
 * (it would be ignored); the manual keeps option names whole (no
 * hyphenation) and names DIR/checkpoint; --help's exit status covers run
 * and bench. */
START_TEST(test_first_mistakes) {
  char *path = strdup(tu_src("examples/gqa_small.ugraph"));
  char *prog = strdup(tu_src("examples/gqa_small.graph"));
  char dir[512];
  ck_assert_ptr_nonnull(mkdtemp(tu_tmp(dir, sizeof dir, "mirs_check_cli_first_XXXXXX")));
  char buf[700], buf2[700];
  run r;
  run_cli(&r, "--threads=0", "check", path, NULL);
  ck_assert_msg(r.rc == 0, "--threads=0: exit %d: %s", r.rc, r.err);
  run_free(&r);
  snprintf(buf, sizeof buf, "--device-profile=%s/none.profile", dir);
  run_cli(&r, buf, "show", path, NULL);
  assert_usage_error(&r);
  ck_assert_msg(strstr(r.err, "none.profile") != NULL, "stderr: %s", r.err);
  run_free(&r);
  snprintf(buf, sizeof buf, "--device-profile=%s", dir);
  run_cli(&r, buf, "show", path, NULL);
  assert_usage_error(&r);
  run_free(&r);
  /* show --cost: a terms line under each kernel; not with --dot */
  run_cli(&r, "show", "--cost", path, NULL);
  ck_assert_msg(r.rc == 0, "show --cost: exit %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "\n    cost: fixed "));
  ck_assert_ptr_nonnull(strstr(r.out, " registers, "));
  run_free(&r);
  run_cli(&r, "show", "--cost", "--dot", path, NULL);
  assert_usage_error(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "--cost"));
  run_free(&r);
  char hdr[800], cu[800];
  snprintf(hdr, sizeof hdr, "%s/k.h", dir);
  snprintf(cu, sizeof cu, "%s/missing/k.cu", dir);
  run_cli(&r, "codegen", path, "--header", hdr, "-o", cu, NULL);
  ck_assert_int_ne(r.rc, 0);
  ck_assert_msg(strstr(r.err, cu) != NULL, "names the file asked for: %s", r.err);
  ck_assert_msg(strstr(r.err, ".tmp.") == NULL, "names a temp file: %s", r.err);
  ck_assert_msg(access(hdr, F_OK) != 0, "a header without its code was left");
  run_free(&r);
  snprintf(buf, sizeof buf, "--source-dir=%s/src", dir);
  run_cli(&r, "bench", path, "--program", prog, buf, NULL);
  ck_assert_msg(r.rc == 0, "bench --source-dir: exit %d: %s", r.rc, r.err);
  run_free(&r);
  snprintf(buf2, sizeof buf2, "%s/src/bench.cu", dir);
  ck_assert_int_eq(access(buf2, F_OK), 0);
  snprintf(buf, sizeof buf, "--source-dir=%s/nope/src", dir);
  run_cli(&r, "bench", path, "--program", prog, buf, NULL);
  assert_usage_error(&r);
  run_free(&r);
  /* An option of another command is refused, not ignored. */
  const char *misplaced[][4] = {{"eval", "--program", prog, "--program"},
                                {"run", "--header", hdr, "--header"},
                                {"codegen", "--backend", "host", "--backend"},
                                {"check", "--source-dir", dir, "--source-dir"},
                                {"show", "-o", cu, "-o"}};
  for (size_t i = 0; i < sizeof misplaced / sizeof misplaced[0]; i++) {
    run_cli(&r, misplaced[i][0], misplaced[i][1], misplaced[i][2], path, NULL);
    assert_usage_hint(&r);
    ck_assert_msg(strstr(r.err, misplaced[i][3]) && strstr(r.err, misplaced[i][0]), "stderr: %s",
                  r.err);
    run_free(&r);
  }
  run_cli(&r, "-o", dir, prog, NULL); /* a search's directory is --out */
  assert_usage_hint(&r);
  ck_assert_ptr_nonnull(strstr(r.err, "--out=DIR"));
  run_free(&r);
  run_cli(&r, "--man", NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\n.nh\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "DIR/checkpoint"));
  run_free(&r);
  run_cli(&r, "--help", NULL);
  char *help = squeeze(r.out);
  ck_assert_ptr_nonnull(strstr(help, "runandbench:thegeneratedcode'soutputsoff"));
  free(help);
  run_free(&r);
  snprintf(buf, sizeof buf, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(buf), 0);
  free(path);
  free(prog);
}
END_TEST

/* A search run through run_cli uses no result cache unless it names one,
 * whatever the environment (a test program run by hand has neither make
 * check's MIRSEARCH_NO_CACHE=1 nor a private cache): else a search a
 * test stops or resumes is served complete from the user's cache. */
START_TEST(test_runs_use_no_cache) {
  char dir[512];
  ck_assert_ptr_nonnull(mkdtemp(tu_tmp(dir, sizeof dir, "mirs-cli-nocache-XXXXXX")));
  char xdg[600], out[600], cmd[800];
  snprintf(xdg, sizeof xdg, "%s/xdg", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  ck_assert_int_eq(setenv("XDG_CACHE_HOME", xdg, 1), 0); /* (the user's default cache) */
  ck_assert_int_eq(unsetenv("MIRSEARCH_NO_CACHE"), 0);
  char *prog = write_temp("program t\ninput X : f32[4, 8]\nO = exp(X)\noutput O\n", ".graph");
  for (int k = 0; k < 2; k++) { /* (a second run would be a hit) */
    run r;
    run_cli(&r, "-q", "--json", "--overwrite", "--out", out, prog, NULL);
    ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
    ck_assert_msg(strstr(r.out, "\"cache\": \"none\""), "run %d: %.400s", k, r.out);
    run_free(&r);
  }
  ck_assert_int_ne(access(xdg, F_OK), 0); /* nothing written there */
  unlink(prog);
  free(prog);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_twice_in_one_process) {
  /* A failing parse of the options must not leave getopt mid-way for the
   * next call, and the options of one call must not leak into the next. */
  char *path = strdup(tu_src("examples/lora_small.graph"));
  run a, b, c, d;
  run_cli(&a, "eval", path, "--seed", "3", NULL);
  run_cli(&b, "-q", "--bogus", "eval", path, NULL);
  run_cli(&c, "-qv", "eval", path, "--seed=3", NULL);
  run_cli(&d, "eval", path, NULL);
  ck_assert_int_eq(a.rc, 0);
  ck_assert_int_eq(b.rc, 2);
  ck_assert_int_eq(c.rc, 0);
  ck_assert_int_eq(d.rc, 0);
  ck_assert_str_eq(a.out, c.out);
  ck_assert_str_ne(a.out, d.out); /* seed 3 did not persist */
  run_free(&a);
  run_free(&b);
  run_free(&c);
  run_free(&d);
  free(path);
}
END_TEST

/* All CLI tests. */
static Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_help_lists_every_option);
  tcase_add_test(tc, test_version);
  tcase_add_test(tc, test_check_examples_round_trip);
  tcase_add_test(tc, test_check_options_anywhere);
  tcase_add_test(tc, test_check_option_is_applied);
  tcase_add_test(tc, test_check_malformed);
  tcase_add_test(tc, test_check_malformed_directory);
  tcase_add_test(tc, test_missing_file);
  tcase_add_test(tc, test_eval_format_and_seeds);
  tcase_add_test(tc, test_eval_exact_numbers);
  tcase_add_test(tc, test_eval_equivalent_programs_agree);
  tcase_add_test(tc, test_eval_program_vs_ugraph);
  tcase_add_test(tc, test_usage_errors);
  tcase_add_test(tc, test_bad_option_values);
  tcase_add_test(tc, test_verify);
  tcase_add_test(tc, test_search_outputs);
  tcase_add_test(tc, test_runs_use_no_cache);
  tcase_add_test(tc, test_twice_in_one_process);
  tcase_add_test(tc, test_codegen_writes_header);
  tcase_add_test(tc, test_first_mistakes);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the CLI suite. */
int main(void) {
  return tu_run(cli_suite());
}
