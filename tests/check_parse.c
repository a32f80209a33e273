/* SPDX-License-Identifier: MIT */
/* tests/check_parse.c - the .graph / µGraph reader and the canonical
 * printer (src/graph/lex.c, parse.c, print.c; docs/FORMATS.md).
 *
 * Invariants checked: every file in tests/malformed/ fails with the
 * diagnostics its "# expect:" lines name (exact position, message
 * substring) and *out == NULL; no input crashes the parser or leaks
 * (memory returns to its pre-parse value once the stored diagnostics are
 * dropped); every example round-trips through print -> parse -> print
 * identically; allocation failure at any point gives MIRS_NOMEM cleanly. */
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph.h"
#include "graph/lex.h"
#include "testutil.h"

/* Drop the context's stored diagnostics and their array, so that
 * mirs_memory_current measures only what a parse kept. */
static void drop_diags(mirs_context *ctx) {
  mirs__core_diag_clear(ctx);
  mirs__core_free(ctx, ctx->diags);
  ctx->diags = NULL;
  ctx->diags_cap = 0;
}

/* Append printf-style text to buf (size bytes, *fo used), never past the end. */
static void addf(char *buf, size_t size, size_t *fo, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void addf(char *buf, size_t size, size_t *fo, const char *fmt, ...) {
  if (*fo + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *fo, size - *fo, fmt, ap);
  va_end(ap);
  if (n > 0)
    *fo = *fo + (size_t)n >= size ? size - 1 : *fo + (size_t)n;
}

/* A context whose log goes to a per-process buffer instead of stderr. */
static mirs_context *quiet_ctx(void) {
  static tu_log sink;
  return tu_ctx(&sink);
}

/* dst = a + b + c, cut to size (no printf, so no truncation warnings). */
static const char *cat3(char *dst, size_t size, const char *a, const char *b, const char *c) {
  size_t o = 0;
  const char *parts[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    for (const char *p = parts[i]; *p && o + 1 < size; p++)
      dst[o++] = *p;
  dst[o] = 0;
  return dst;
}

/* Read a whole file with stdio (tests do not depend on core's reader). */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 4096 > cap) {
      cap = cap ? 2 * cap : 8192;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0)
      break;
  }
  fclose(f);
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Sorted list of the names in dir ending with one of the suffixes. */
static int list_dir(const char *dir, const char *const *suffixes, char names[][256], int max) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open directory %s", dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    size_t l = strlen(e->d_name);
    for (const char *const *s = suffixes; *s; s++) {
      size_t sl = strlen(*s);
      if (l > sl && l < 256 && strcmp(e->d_name + l - sl, *s) == 0) {
        strcpy(names[n++], e->d_name);
        break;
      }
    }
  }
  closedir(d);
  qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
  return n;
}

/* Canonical text of g as a malloc'd string. */
static char *print_str(const mirs_graph *g) {
  mirs__buf b;
  mirs__buf_init(&b, g->ctx);
  mirs__graph_print(g, &b);
  ck_assert(!b.failed);
  char *s = malloc(b.len + 1);
  ck_assert_ptr_nonnull(s);
  memcpy(s, b.data, b.len);
  s[b.len] = 0;
  mirs__buf_free(&b);
  return s;
}

/* True when some stored diagnostic starts with prefix and contains sub. */
static bool has_diag(const mirs_context *ctx, const char *prefix, const char *sub) {
  for (size_t i = 0; i < mirs_diag_count(ctx); i++) {
    const char *m = mirs_diag_message(ctx, i);
    if (strncmp(m, prefix, strlen(prefix)) == 0 && strstr(m + strlen(prefix), sub))
      return true;
  }
  return false;
}

/* All stored diagnostics, one per line, into buf (for failure messages). */
static const char *all_diags(const mirs_context *ctx, char *buf, size_t size) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < mirs_diag_count(ctx) && o + 1 < size; i++) {
    int n = snprintf(buf + o, size - o, "    %s\n", mirs_diag_message(ctx, i));
    if (n < 0)
      break;
    o += (size_t)n;
  }
  return buf;
}

/* Parse text expecting failure; checks *out == NULL and no leak. */
static mirs_status parse_fail(mirs_context *ctx, const char *text, size_t len, const char *name) {
  drop_diags(ctx);
  mirs_graph *g = (mirs_graph *)(uintptr_t)1;
  mirs_status s = mirs__graph_parse(ctx, text, len, name, &g);
  ck_assert_msg(s != MIRS_OK, "%s: parsed although it should fail", name);
  ck_assert_ptr_null(g);
  ck_assert_uint_ge(mirs_diag_count(ctx), 1);
  return s;
}

/* ---------------------------------------------------------------- corpus */

START_TEST(test_malformed_corpus) {
  static char names[512][256];
  static const char *const sfx[] = {".graph", ".ugraph", NULL};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", tu_src("tests/malformed"));
  int n = list_dir(dir, sfx, names, 512);
  ck_assert_int_ge(n, 40);
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  static char failures[3000]; /* Check caps its message size */
  size_t fo = 0;
  int nexpect = 0;
  for (int i = 0; i < n; i++) {
    char path[4400];
    cat3(path, sizeof path, dir, "/", names[i]);
    size_t len;
    char *text = slurp(path, &len);
    drop_diags(ctx);
    size_t base = mirs_memory_current(ctx);
    mirs_graph *g = NULL;
    mirs_status s = mirs__graph_parse(ctx, text, len, names[i], &g);
    char diags[8192];
    if (s == MIRS_OK || g != NULL) {
      addf(failures, sizeof failures, &fo, "%s: parsed OK\n", names[i]);
      mirs__graph_free(g);
    }
    /* Expectations: leading "# expect: L:C: error: SUB" / "# expect-count: N" lines. */
    int nfile = 0;
    const char *p = text;
    for (;;) {
      const char *eol = memchr(p, '\n', len - (size_t)(p - text));
      if (!eol)
        break;
      char line[1024];
      size_t ll = (size_t)(eol - p) < sizeof line - 1 ? (size_t)(eol - p) : sizeof line - 1;
      memcpy(line, p, ll);
      line[ll] = 0;
      if (strncmp(line, "# expect: ", 10) == 0) {
        int ln, col, off = 0;
        ck_assert_msg(sscanf(line + 10, "%d:%d: error: %n", &ln, &col, &off) == 2 && off > 0,
                      "%s: bad expect line", names[i]);
        char prefix[512];
        char pos[64];
        snprintf(pos, sizeof pos, ":%d:%d: error: ", ln, col);
        cat3(prefix, sizeof prefix, names[i], pos, "");
        if (!has_diag(ctx, prefix, line + 10 + off))
          addf(failures, sizeof failures, &fo,
                                 "%s: missing '%s%s'; got:\n%s", names[i], prefix,
                                 line + 10 + off, all_diags(ctx, diags, sizeof diags));
        nfile++;
      } else if (strncmp(line, "# expect-count: ", 16) == 0) {
        size_t want = (size_t)atoi(line + 16);
        if (mirs_diag_count(ctx) != want)
          addf(failures, sizeof failures, &fo,
                                 "%s: %zu diagnostics, want %zu; got:\n%s", names[i],
                                 mirs_diag_count(ctx), want, all_diags(ctx, diags, sizeof diags));
      } else {
        break;
      }
      p = eol + 1;
    }
    if (nfile == 0)
      addf(failures, sizeof failures, &fo, "%s: no '# expect:' line\n",
                             names[i]);
    nexpect += nfile;
    drop_diags(ctx);
    if (mirs_memory_current(ctx) != base)
      addf(failures, sizeof failures, &fo, "%s: leaked %lld bytes\n",
                             names[i], (long long)mirs_memory_current(ctx) - (long long)base);
    free(text);
    if (fo > sizeof failures - 600)
      break;
  }
  ck_assert_msg(fo == 0, "malformed corpus failures:\n%s", failures);
  ck_assert_int_ge(nexpect, n);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- special inputs */

START_TEST(test_empty_input) {
  mirs_context *ctx = quiet_ctx();
  mirs_status s = parse_fail(ctx, "", 0, "empty.graph");
  ck_assert_int_eq(s, MIRS_PARSE);
  ck_assert_uint_eq(mirs_diag_count(ctx), 1);
  ck_assert(has_diag(ctx, "empty.graph:1:1: error: ", "no output statement"));
  /* NULL text with length 0 is an empty file too. */
  parse_fail(ctx, NULL, 0, "null.graph");
  ck_assert(has_diag(ctx, "null.graph:1:1: error: ", "no output statement"));
  /* Only comments, no final newline: the end of file is on line 2. */
  parse_fail(ctx, "# a\n# b", 7, "c.graph");
  ck_assert(has_diag(ctx, "c.graph:2:4: error: ", "no output statement"));
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_missing_file) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs_graph *g = NULL;
  const char *path = "/nonexistent-dir/missing.graph";
  mirs_status s = mirs_graph_parse_file(ctx, path, &g);
  ck_assert_int_eq(s, MIRS_IO);
  ck_assert_ptr_null(g);
  ck_assert_uint_eq(mirs_diag_count(ctx), 1);
  const char *m = mirs_diag_message(ctx, 0);
  ck_assert_msg(strncmp(m, "/nonexistent-dir/missing.graph: error: ", 39) == 0, "got '%s'", m);
  ck_assert_ptr_nonnull(strstr(log.text, "missing.graph: error: "));
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_crlf) {
  mirs_context *ctx = quiet_ctx();
  const char *lf = "program c\ninput A : f16[2, 3]\nB = exp(A)\noutput B\n";
  const char *crlf = "program c\r\ninput A : f16[2, 3]\r\nB = exp(A)  # note\r\noutput B\r\n";
  mirs_graph *g1 = NULL, *g2 = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, lf, strlen(lf), "lf", &g1), MIRS_OK);
  ck_assert_int_eq(mirs__graph_parse(ctx, crlf, strlen(crlf), "crlf", &g2), MIRS_OK);
  char *a = print_str(g1), *b = print_str(g2);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);
  mirs__graph_free(g1);
  mirs__graph_free(g2);
  /* Positions in a CRLF file count lines and bytes as with LF. */
  const char *bad = "input A : f16[2]\r\nB = exp(Z)\r\noutput B\r\n";
  parse_fail(ctx, bad, strlen(bad), "bad");
  ck_assert(has_diag(ctx, "bad:2:9: error: ", "undefined name 'Z'"));
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_nul_and_escapes) {
  mirs_context *ctx = quiet_ctx();
  static const char text[] = "input A : f16[2]\nB = exp(A)\x00\x01\nC\x7f = exp(A)\noutput B\n";
  parse_fail(ctx, text, sizeof text - 1, "nul");
  ck_assert(has_diag(ctx, "nul:2:11: error: ", "invalid character '\\x00'"));
  ck_assert(has_diag(ctx, "nul:3:2: error: ", "invalid character '\\x7f'"));
  /* A NUL inside a comment is just part of the comment. */
  static const char ok[] = "input A : f16[2] # \x00\xff\nB = exp(A)\noutput B\n";
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, ok, sizeof ok - 1, "ok", &g), MIRS_OK);
  mirs__graph_free(g);
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_long_lines) {
  mirs_context *ctx = quiet_ctx();
  size_t n = 1u << 20;
  char *text = malloc(n + 64);
  ck_assert_ptr_nonnull(text);
  /* A 1 MiB identifier. */
  memset(text, 'a', n);
  memcpy(text + n, " = exp(A)\n", 10);
  parse_fail(ctx, text, n + 10, "long");
  ck_assert(has_diag(ctx, "long:1:1: error: ", "is too long"));
  /* A 1 MiB number and a 1 MiB run of '['. */
  memcpy(text, "input A : f16[", 14);
  memset(text + 14, '9', n - 14);
  parse_fail(ctx, text, n, "num");
  ck_assert(has_diag(ctx, "num:1:15: error: ", "does not fit in 64 bits"));
  memset(text, '[', n);
  parse_fail(ctx, text, n, "brackets");
  ck_assert(has_diag(ctx, "brackets:1:1: error: ", "expected a statement"));
  /* Many short lines of errors stop at max_errors. */
  for (size_t i = 0; i + 2 <= n; i += 2)
    memcpy(text + i, "@\n", 2);
  parse_fail(ctx, text, n, "many");
  ck_assert_uint_eq(mirs_diag_count(ctx), (size_t)ctx->opt.max_errors + 1);
  free(text);
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_max_errors) {
  mirs_context *ctx = quiet_ctx();
  ck_assert_int_eq(mirs_option_set(ctx, "max_errors", "3"), MIRS_OK);
  const char *t = "A = exp(Z1)\nB = exp(Z2)\nC = exp(Z3)\nD = exp(Z4)\nE = exp(Z5)\n";
  parse_fail(ctx, t, strlen(t), "m");
  ck_assert_uint_eq(mirs_diag_count(ctx), 4);
  ck_assert(has_diag(ctx, "m:3:9: error: ", "undefined name 'Z3'"));
  ck_assert(has_diag(ctx, "m:4:9: error: ", "too many errors (the max_errors option is 3)"));
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_status_and_poison) {
  mirs_context *ctx = quiet_ctx();
  /* Only builder shape errors: MIRS_SHAPE; and no cascade from C. */
  const char *t = "input A : f16[2, 3]\nC = matmul(A, A)\nD = exp(C)\nE = add(D, C)\noutput E\n";
  ck_assert_int_eq(parse_fail(ctx, t, strlen(t), "s"), MIRS_SHAPE);
  ck_assert_uint_eq(mirs_diag_count(ctx), 1);
  ck_assert(has_diag(ctx, "s:2:5: error: ", "matmul"));
  /* The context's error names the first diagnostic. */
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "s:2:5: error: "));
  /* A syntax error as well: MIRS_PARSE. */
  const char *u = "input A : f16[2, 3]\nC = matmul(A, A)\nD = exp(C\noutput D\n";
  ck_assert_int_eq(parse_fail(ctx, u, strlen(u), "u"), MIRS_PARSE);
  ck_assert_uint_eq(mirs_diag_count(ctx), 2);
  /* A failed input declaration poisons its name too. */
  const char *v = "input A : f16[0]\nB = exp(A)\noutput B\n";
  parse_fail(ctx, v, strlen(v), "v");
  ck_assert_uint_eq(mirs_diag_count(ctx), 1);
  /* A failed custom header poisons its results and still checks its block. */
  const char *w = "input X : f16[4, 4]\n"
                  "O = custom(grid=[1, 1], block=[1, 1, 1], forloop=1) {\n"
                  "  x = input(X, imap=[-1, -1, -1], fmap=-1)\n"
                  "  y = exp(q)\n"
                  "  a = accum(x)\n"
                  "  output(a, omap=[-1, -1, -1])\n"
                  "}\n"
                  "P = exp(O)\n"
                  "output P\n";
  parse_fail(ctx, w, strlen(w), "w");
  ck_assert_uint_eq(mirs_diag_count(ctx), 2);
  ck_assert(has_diag(ctx, "w:2:17: error: ", "grid= needs exactly 3 entries"));
  ck_assert(has_diag(ctx, "w:4:11: error: ", "undefined name 'q'"));
  drop_diags(ctx);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- printer */

START_TEST(test_canonical_print) {
  mirs_context *ctx = quiet_ctx();
  const char *messy = "  # leading comment\n"
                      "program   messy   # header\n"
                      "input\tA :f16[ 2,3 ]\n"
                      "input B : f16[3, 4]\n"
                      "C=matmul( A ,B )\n"
                      "output C\n"
                      "D = sum(C, dim=-1)\n"
                      "output D\n";
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, messy, strlen(messy), "messy", &g), MIRS_OK);
  char *s = print_str(g);
  ck_assert_str_eq(s, "program messy\n"
                      "input A : f16[2, 3]\n"
                      "input B : f16[3, 4]\n"
                      "C = matmul(A, B)\n"
                      "D = sum(C, dim=1)\n"
                      "output C, D\n");
  free(s);
  mirs__graph_free(g);
  /* Without a header the graph is named "program". */
  const char *nohdr = "input A : f32[2]\noutput A\n";
  ck_assert_int_eq(mirs__graph_parse(ctx, nohdr, strlen(nohdr), "x", &g), MIRS_OK);
  s = print_str(g);
  ck_assert_str_eq(s, "program program\ninput A : f32[2]\noutput A\n");
  free(s);
  mirs__graph_free(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_ugraph_print) {
  mirs_context *ctx = quiet_ctx();
  const char *u = "program mixed\n"
                  "input X : f16[2, 128]\n"
                  "input W : f16[128, 256]\n"
                  "O = custom(forloop=8, block=[128, 1, 1], grid=[4, 1, 1]) {\n"
                  "  x = input(X, fmap=1, imap=[-1, -1, -1])\n"
                  "  w = input(W, imap=[1, -1, -1], fmap=0)\n"
                  "  y = matmul(x, w)\n"
                  "  a = accum(y)\n"
                  "  r = accum_rms(x)\n"
                  "  o = div(a, r, fused=1)\n"
                  "  e = exp(o, fused=0)\n"
                  "  output(e, omap=[1, -1, -1])\n"
                  "}\n"
                  "P = relu(O)\n"
                  "output P\n";
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, u, strlen(u), "u", &g), MIRS_OK);
  ck_assert_int_eq(mirs_graph_num_custom(g), 1);
  ck_assert(!g->ugraph);
  char *s = print_str(g);
  ck_assert_str_eq(s, "ugraph mixed\n"
                      "input X : f16[2, 128]\n"
                      "input W : f16[128, 256]\n"
                      "O = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=8) {\n"
                      "  x = input(X, imap=[-1, -1, -1], fmap=1)\n"
                      "  w = input(W, imap=[1, -1, -1], fmap=0)\n"
                      "  y = matmul(x, w)\n"
                      "  a = accum(y)\n"
                      "  r = accum_rms(x)\n"
                      "  o = div(a, r, fused=1)\n"
                      "  e = exp(o)\n"
                      "  output(e, omap=[1, -1, -1])\n"
                      "}\n"
                      "P = relu(O)\n"
                      "output P\n");
  mirs__graph_free(g);
  mirs_graph *g2 = NULL;
  ck_assert_int_eq(mirs__graph_parse(ctx, s, strlen(s), "u2", &g2), MIRS_OK);
  ck_assert(g2->ugraph);
  char *s2 = print_str(g2);
  ck_assert_str_eq(s, s2);
  free(s);
  free(s2);
  mirs__graph_free(g2);
  mirs_context_destroy(ctx);
}
END_TEST

/* `output(t, omap=.., dtype=D)`: the kernel tensor is stored as D (f32
 * partial sums), the text round-trips, a dtype equal to the kernel's
 * default is the default (printed without, same hash), a different one
 * changes the hash. */
START_TEST(test_output_dtype) {
  static const char base[] =
      "ugraph u\n"
      "input X : f16[8, 64]\n"
      "P = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=2) {\n"
      "  x = input(X, imap=[1, -1, -1], fmap=1)\n"
      "  s = accum_sum(x, dim=1)\n"
      "  output(s, omap=[1, -1, -1]%s)\n"
      "}\n"
      "O = custom(grid=[1, 1, 1], block=[128, 1, 1], forloop=4) {\n"
      "  p = input(P, imap=[-1, -1, -1], fmap=1)\n"
      "  a = accum(p)\n"
      "  output(a, omap=[-1, -1, -1]%s)\n"
      "}\n"
      "output O\n";
  static const char *const ann[][2] = {{"", ""}, {", dtype=f32", ", dtype=f16"},
                                       {", dtype=f16", ""}, {", dtype=f32", ""}};
  mirs_context *ctx = tu_ctx(NULL);
  uint64_t h[4];
  for (int i = 0; i < 4; i++) {
    char text[1024];
    snprintf(text, sizeof text, base, ann[i][0], ann[i][1]);
    mirs_graph *g = NULL;
    ck_assert_int_eq(mirs__graph_parse(ctx, text, strlen(text), "u.ugraph", &g), MIRS_OK);
    bool p32 = strstr(ann[i][0], "f32") != NULL;
    ck_assert_int_eq(g->t[1].dtype, p32 ? MIRS_F32 : MIRS_F16);
    ck_assert_int_eq(g->t[2].dtype, p32 && !ann[i][1][0] ? MIRS_F32 : MIRS_F16);
    char *t1 = print_str(g);
    if (i != 2)
      ck_assert_str_eq(t1, text);
    else /* dtype=f16 on an f16 kernel: the default */
      ck_assert_ptr_null(strstr(t1, "dtype="));
    h[i] = mirs_graph_hash(g);
    free(t1);
    mirs__graph_free(g);
  }
  ck_assert_uint_eq(h[0], h[2]);
  ck_assert_uint_ne(h[0], h[1]);
  ck_assert_uint_ne(h[1], h[3]);
  ck_assert_uint_ne(h[0], h[3]);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_roundtrip_examples) {
  static char names[256][256];
  static const char *const sfx[] = {".graph", ".ugraph", NULL};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", tu_src("examples"));
  int n = list_dir(dir, sfx, names, 256);
  ck_assert_int_ge(n, 16);
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  for (int i = 0; i < n; i++) {
    char path[4400];
    cat3(path, sizeof path, dir, "/", names[i]);
    size_t base = mirs_memory_current(ctx);
    mirs_graph *g = NULL;
    mirs_status s = mirs_graph_parse_file(ctx, path, &g);
    ck_assert_msg(s == MIRS_OK, "%s: %s\n%s", names[i], mirs_status_name(s), log.text);
    bool is_ugraph = strstr(names[i], ".ugraph") != NULL;
    ck_assert_int_eq(mirs_graph_num_custom(g) > 0 || g->ugraph, is_ugraph);
    char *t1 = print_str(g);
    mirs_graph *g2 = NULL;
    s = mirs__graph_parse(ctx, t1, strlen(t1), names[i], &g2);
    ck_assert_msg(s == MIRS_OK, "%s: printed text does not parse:\n%s\n%s", names[i], t1, log.text);
    char *t2 = print_str(g2);
    ck_assert_msg(strcmp(t1, t2) == 0, "%s: print is not idempotent:\n%s\n---\n%s", names[i], t1,
                  t2);
    ck_assert_int_eq(mirs_graph_num_tensors(g), mirs_graph_num_tensors(g2));
    ck_assert_int_eq(mirs_graph_num_ops(g), mirs_graph_num_ops(g2));
    free(t1);
    free(t2);
    mirs__graph_free(g);
    mirs__graph_free(g2);
    ck_assert_uint_eq(mirs_memory_current(ctx), base);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- robustness */

/* Deterministic 64-bit generator (splitmix64). */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

START_TEST(test_random_bytes) {
  mirs_context *ctx = quiet_ctx();
  uint64_t seed = 42;
  char buf[2048];
  for (int round = 0; round < 500; round++) {
    size_t len = (size_t)(rng_next(&seed) % sizeof buf);
    for (size_t i = 0; i < len; i++)
      buf[i] = (char)(rng_next(&seed) & 0xff);
    /* Exactly len bytes, no terminator: reading past len would be a bug
     * that the sanitizer build catches. */
    char *exact = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(exact);
    memcpy(exact, buf, len);
    parse_fail(ctx, exact, len, "random");
    drop_diags(ctx);
    free(exact);
  }
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_fuzz_mutations) {
  static char names[256][256];
  static const char *const sfx[] = {".graph", ".ugraph", NULL};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", tu_src("examples"));
  int n = list_dir(dir, sfx, names, 256);
  ck_assert_int_ge(n, 1);
  mirs_context *ctx = quiet_ctx();
  uint64_t seed = 7;
  static const char alphabet[] = "abAZ_09 \t\n\r#=:,()[]{}-@\x00\xff";
  int per = 4000 / n + 1, total = 0, ok = 0;
  for (int i = 0; i < n; i++) {
    char path[4400];
    cat3(path, sizeof path, dir, "/", names[i]);
    size_t len0;
    char *orig = slurp(path, &len0);
    char *m = malloc(len0 + 64);
    ck_assert_ptr_nonnull(m);
    for (int k = 0; k < per; k++) {
      memcpy(m, orig, len0);
      size_t len = len0;
      int edits = 1 + (int)(rng_next(&seed) % 4);
      for (int e = 0; e < edits && len > 0; e++) {
        size_t at = (size_t)(rng_next(&seed) % len);
        switch (rng_next(&seed) % 5) {
        case 0: /* delete a byte */
          memmove(m + at, m + at + 1, len - at - 1);
          len--;
          break;
        case 1: /* insert a byte */
          if (len < len0 + 60) {
            memmove(m + at + 1, m + at, len - at);
            m[at] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
            len++;
          }
          break;
        case 2: /* flip a bit */
          m[at] = (char)(m[at] ^ (1 << (rng_next(&seed) % 8)));
          break;
        case 3: /* replace with a syntax byte */
          m[at] = alphabet[rng_next(&seed) % (sizeof alphabet - 1)];
          break;
        default: /* truncate */
          len = at;
          break;
        }
      }
      drop_diags(ctx);
      size_t base = mirs_memory_current(ctx);
      char *exact = malloc(len ? len : 1);
      ck_assert_ptr_nonnull(exact);
      memcpy(exact, m, len);
      mirs_graph *g = NULL;
      mirs_status s = mirs__graph_parse(ctx, exact, len, names[i], &g);
      if (s == MIRS_OK) {
        ck_assert_ptr_nonnull(g);
        /* Whatever parsed also round-trips. */
        char *t1 = print_str(g);
        mirs_graph *g2 = NULL;
        ck_assert_msg(mirs__graph_parse(ctx, t1, strlen(t1), "again", &g2) == MIRS_OK,
                      "reprint of a mutant does not parse:\n%s", t1);
        char *t2 = print_str(g2);
        ck_assert_str_eq(t1, t2);
        free(t1);
        free(t2);
        mirs__graph_free(g2);
        mirs__graph_free(g);
        ok++;
      } else {
        ck_assert_ptr_null(g);
        ck_assert_uint_ge(mirs_diag_count(ctx), 1);
      }
      drop_diags(ctx);
      ck_assert_uint_eq(mirs_memory_current(ctx), base);
      free(exact);
      total++;
    }
    free(m);
    free(orig);
  }
  ck_assert_int_ge(total, 4000);
  ck_assert_int_lt(ok, total);
  mirs_context_destroy(ctx);
}
END_TEST

/* Fail the 1st, 2nd, ... allocation of a parse of text until it succeeds. */
static void alloc_failure_sweep(const char *text, size_t len, const char *name, bool valid) {
  mirs_context *ctx = quiet_ctx();
  drop_diags(ctx);
  size_t base = mirs_memory_current(ctx);
  int nomem = 0;
  for (long k = 1; k < 100000; k++) {
    mirs__core_fail_alloc_after(ctx, k);
    mirs_graph *g = NULL;
    mirs_status s = mirs__graph_parse(ctx, text, len, name, &g);
    bool fired = atomic_load(&ctx->fail_countdown) <= 0;
    mirs__core_fail_alloc_after(ctx, 0);
    if (s == MIRS_NOMEM) {
      ck_assert_ptr_null(g);
      nomem++;
    } else if (valid) {
      ck_assert_msg(s == MIRS_OK, "%s, failing allocation %ld: %s (%s)", name, k,
                    mirs_status_name(s), mirs_last_error(ctx));
      mirs__graph_free(g);
    } else {
      ck_assert_ptr_null(g);
    }
    drop_diags(ctx);
    ck_assert_msg(mirs_memory_current(ctx) == base, "%s: leak after failing allocation %ld", name,
                  k);
    if (!fired)
      break; /* the parse made fewer than k allocations: all points covered */
  }
  if (valid)
    ck_assert_int_ge(nomem, 3);
  mirs_context_destroy(ctx);
}

START_TEST(test_alloc_failure) {
  const char *files[] = {"examples/gqa.graph", "examples/qknorm_attention_small.graph",
                         "examples/gqa_small.ugraph", "examples/rmsnorm_linear_small.ugraph"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    FILE *f = fopen(tu_src(files[i]), "rb");
    if (!f)
      continue; /* .ugraph examples are written by another module's owner */
    fclose(f);
    size_t len;
    char *text = slurp(tu_src(files[i]), &len);
    alloc_failure_sweep(text, len, files[i], true);
    free(text);
  }
  const char *bad = "ugraph u\ninput X : f16[2, 128]\n"
                    "O = custom(grid=[2, 1, 1], block=[128, 1, 1], forloop=4) {\n"
                    "  x = input(X, imap=[1, -1, -1], fmap=-1)\n"
                    "  y = exp(Z)\n"
                    "  a = accum(x)\n"
                    "  output(a, omap=[1, -1, -1])\n"
                    "}\n"
                    "P = matmul(O, O)\n"
                    "output P, Q\n";
  alloc_failure_sweep(bad, strlen(bad), "bad", false);
}
END_TEST

/* ---------------------------------------------------------------- lexer */

START_TEST(test_lexer_tokens) {
  static const char text[] = "ab_1 12 3x -4 =:,()[]{}#c\r\n\r@";
  mirs__graph_lexer lx;
  mirs__graph_lex_init(&lx, text, sizeof text - 1);
  mirs__graph_tok_kind want[] = {
      MIRS__GRAPH_TOK_IDENT,  MIRS__GRAPH_TOK_INT,     MIRS__GRAPH_TOK_BADNAME,
      MIRS__GRAPH_TOK_MINUS,  MIRS__GRAPH_TOK_INT,     MIRS__GRAPH_TOK_EQ,
      MIRS__GRAPH_TOK_COLON,  MIRS__GRAPH_TOK_COMMA,   MIRS__GRAPH_TOK_LPAREN,
      MIRS__GRAPH_TOK_RPAREN, MIRS__GRAPH_TOK_LBRACK,  MIRS__GRAPH_TOK_RBRACK,
      MIRS__GRAPH_TOK_LBRACE, MIRS__GRAPH_TOK_RBRACE,  MIRS__GRAPH_TOK_NEWLINE,
      MIRS__GRAPH_TOK_BAD,    MIRS__GRAPH_TOK_BAD,     MIRS__GRAPH_TOK_EOF};
  mirs__graph_token t;
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    mirs__graph_lex_next(&lx, &t);
    ck_assert_msg(t.kind == want[i], "token %zu: kind %d, want %d", i, (int)t.kind, (int)want[i]);
    if (i == 1)
      ck_assert_uint_eq(t.value, 12);
    if (i == 15)
      ck_assert_int_eq(t.line, 2);
  }
  /* Overflow is flagged, EOF repeats. */
  static const char big[] = "18446744073709551615 18446744073709551616";
  mirs__graph_lex_init(&lx, big, sizeof big - 1);
  mirs__graph_lex_next(&lx, &t);
  ck_assert(!t.overflow);
  ck_assert_uint_eq(t.value, UINT64_MAX);
  mirs__graph_lex_next(&lx, &t);
  ck_assert(t.overflow);
  mirs__graph_lex_next(&lx, &t);
  ck_assert_int_eq(t.kind, MIRS__GRAPH_TOK_EOF);
  mirs__graph_lex_next(&lx, &t);
  ck_assert_int_eq(t.kind, MIRS__GRAPH_TOK_EOF);
  char buf[64];
  ck_assert_str_eq(mirs__graph_escape("a\x01\\b", 4, 10, buf, sizeof buf), "a\\x01\\\\b");
  ck_assert_str_eq(mirs__graph_escape("abcdef", 6, 3, buf, sizeof buf), "abc...");
}
END_TEST

/* A chain program of n ops: T0 = add(X, X), Ti = add(T(i-1), X). */
static char *chain_program(int n, size_t *len) {
  size_t cap = (size_t)n * 40 + 128, at = 0;
  char *t = malloc(cap);
  ck_assert_ptr_nonnull(t);
  at += (size_t)snprintf(t + at, cap - at, "input X : f32[4, 4]\n");
  for (int i = 0; i < n; i++)
    at += i ? (size_t)snprintf(t + at, cap - at, "T%d = add(T%d, X)\n", i, i - 1)
            : (size_t)snprintf(t + at, cap - at, "T0 = add(X, X)\n");
  at += (size_t)snprintf(t + at, cap - at, "output T%d\n", n - 1);
  *len = at;
  return t;
}

/* Process CPU seconds of the best of 3 parses of a chain of n ops. */
static double parse_seconds(mirs_context *ctx, int n) {
  size_t len;
  char *text = chain_program(n, &len);
  double best = 1e9;
  for (int k = 0; k < 3; k++) {
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    mirs_graph *g = NULL;
    ck_assert_int_eq(mirs_graph_parse_string(ctx, text, len, "chain.graph", &g), MIRS_OK);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    mirs_graph_destroy(g);
    double t = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    if (t < best)
      best = t;
  }
  free(text);
  return best;
}

/* Parsing is linear in the number of ops (names are hashed; each added
 * tensor's name used to be compared with every earlier one: 100k ops took
 * 15 s, a file at the size cap hours).  A 100k-op file parses correctly,
 * and 8 times the ops cost well under 8^2 times the CPU time (a ratio, so
 * the machine's speed does not matter; bench/parse_scaling.sh has the
 * times). */
START_TEST(test_large_file_linear) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  size_t len;
  char *text = chain_program(100000, &len);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, len, "chain.graph", &g), MIRS_OK);
  free(text);
  ck_assert_int_eq(mirs_graph_num_ops(g), 100000);
  ck_assert_int_eq(mirs_graph_num_tensors(g), 100001);
  ck_assert_int_eq(mirs__graph_find(g, "T99999"), 100000);
  ck_assert_int_eq(mirs__graph_find(g, "T0"), 1);
  ck_assert_int_eq(g->nout, 1);
  ck_assert_int_eq(g->outputs[0], 100000);
  ck_assert(!g->names_indexed); /* (the parser's own index is gone with it) */
  mirs_graph_destroy(g);
  /* A redefinition deep in a large file is still found. */
  text = chain_program(20000, &len);
  char *dup = strstr(text, "T15000 = ");
  ck_assert_ptr_nonnull(dup);
  memcpy(dup, "T7    ", 6); /* (the same length; T7 is defined earlier) */
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, len, "chain.graph", &g), MIRS_PARSE);
  ck_assert_msg(strstr(mirs_last_error(ctx), "redefined name 'T7'") != NULL, "%s",
                mirs_last_error(ctx));
  free(text);
  double small = parse_seconds(ctx, 10000), large = parse_seconds(ctx, 80000);
  ck_assert_msg(large < 24 * small + 0.05,
                "parsing 80k ops took %.3f s, 10k %.3f s: %.1fx for 8x the ops", large, small,
                large / small);
  mirs_context_destroy(ctx);
}
END_TEST

/* The test suite. */
static Suite *parse_suite(void) {
  Suite *s = suite_create("parse");
  TCase *tc = tcase_create("parse");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_lexer_tokens);
  tcase_add_test(tc, test_malformed_corpus);
  tcase_add_test(tc, test_empty_input);
  tcase_add_test(tc, test_missing_file);
  tcase_add_test(tc, test_crlf);
  tcase_add_test(tc, test_nul_and_escapes);
  tcase_add_test(tc, test_long_lines);
  tcase_add_test(tc, test_max_errors);
  tcase_add_test(tc, test_status_and_poison);
  tcase_add_test(tc, test_canonical_print);
  tcase_add_test(tc, test_large_file_linear);
  tcase_add_test(tc, test_ugraph_print);
  tcase_add_test(tc, test_roundtrip_examples);
  tcase_add_test(tc, test_output_dtype);
  tcase_add_test(tc, test_random_bytes);
  tcase_add_test(tc, test_fuzz_mutations);
  tcase_add_test(tc, test_alloc_failure);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the parse suite. */
int main(void) {
  return tu_run(parse_suite());
}
