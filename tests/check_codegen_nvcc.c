/* SPDX-License-Identifier: MIT */
/* tests/check_codegen_nvcc.c - the generated CUDA C compiles with the
 * toolkit's nvcc for sm_80 and sm_90 with zero warnings (-Werror
 * all-warnings, host code -Wall -Wextra): every example µGraph and
 * program, the search's bests (examples/best), the codegen test graphs,
 * and the results of a search (graphs the generator was not written
 * against), plus the `run --backend=cuda` harness, linked into one
 * program against the CUDA runtime: one nvcc invocation for all of them
 * (nvcc is slow); and the emulator's hand-written tests/codegen/race.cu.
 * Skips (77) without nvcc. */
#include "config.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "testutil.h"

#ifdef MIRS_NVCC
static const char *const NVCC = MIRS_NVCC;
#else
static const char *const NVCC = "nvcc";
#endif

static char dir[512];
static int ngraphs;
static FILE *all;

/* Write g's CUDA C (entry t<N>) as dir/gN.cu and include it from all.cu. */
static void add_graph(mirs_context *ctx, const mirs_graph *g, const char *what) {
  char entry[32], path[700];
  snprintf(entry, sizeof entry, "t%d", ngraphs);
  char *text = NULL;
  ck_assert_msg(mirs_codegen_cuda(g, entry, &text) == MIRS_OK, "%s: %s", what,
                mirs_last_error(ctx));
  snprintf(path, sizeof path, "%s/g%d.cu", dir, ngraphs);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "/* %s */\n%s", what, text);
  ck_assert_int_eq(fclose(f), 0);
  mirs_free(ctx, text);
  fprintf(all, "#include \"g%d.cu\"\n", ngraphs);
  ngraphs++;
}

/* Add every file of the source directory rel ending in ext. */
static void add_dir(mirs_context *ctx, const char *rel, const char *ext) {
  char d[4096];
  memcpy(d, tu_src(rel), sizeof d);
  d[sizeof d - 1] = '\0';
  DIR *dp = opendir(d);
  ck_assert_ptr_nonnull(dp);
  struct dirent *e;
  while ((e = readdir(dp)) != NULL) {
    size_t n = strlen(e->d_name), m = strlen(ext);
    if (n <= m || strcmp(e->d_name + n - m, ext) != 0)
      continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", d, e->d_name);
    mirs_graph *g = NULL;
    ck_assert_msg(mirs_graph_parse_file(ctx, path, &g) == MIRS_OK, "%s: %s", path,
                  mirs_last_error(ctx));
    add_graph(ctx, g, path);
    mirs_graph_destroy(g);
  }
  closedir(dp);
}

START_TEST(test_nvcc_compiles_generated_code) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/mirs-nvcc-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[700];
  snprintf(path, sizeof path, "%s/all.cu", dir);
  all = fopen(path, "w");
  ck_assert_ptr_nonnull(all);
  /* g0 is the program whose run harness is appended below. */
  mirs_graph *p = NULL;
  ck_assert_int_eq(mirs_graph_parse_file(ctx, tu_src("examples/rmsnorm_linear_small.graph"), &p),
                   MIRS_OK);
  add_graph(ctx, p, "rmsnorm_linear_small (harness)");
  add_dir(ctx, "examples", ".ugraph");
  /* tests/ptx_static.sh compiles these too, but it may be an expected
   * failure, which would hide a compile error. */
  add_dir(ctx, "examples/best", ".ugraph");
  add_dir(ctx, "examples", ".graph");
  add_dir(ctx, "tests/codegen", ".ugraph");
  /* A search's results: graphs nobody wrote by hand. */
  ck_assert_int_eq(mirs_option_set(ctx, "float_check_top", "0"), MIRS_OK);
  mirs_search *s = NULL;
  ck_assert_int_eq(mirs_search_create(ctx, p, &s), MIRS_OK);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 0);
  for (int i = 0; i < n && i < 16; i++) {
    char what[64];
    snprintf(what, sizeof what, "rmsnorm_linear_small result %d", i);
    add_graph(ctx, mirs_search_result(s, i), what);
  }
  /* The run harness of g0 (its code is already included). */
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  ck_assert_int_eq(mirs__codegen_harness(p, "t0", &b), MIRS_OK);
  const char *h = strstr(b.data, "#include \"kernel.cu\"");
  ck_assert_ptr_nonnull(h);
  fwrite(b.data, 1, (size_t)(h - b.data), all);
  fputs(h + strlen("#include \"kernel.cu\""), all);
  mirs__buf_free(&b);
  ck_assert_int_eq(fclose(all), 0);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);

  char cmd[9000];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && '%s' -std=c++17 -O1 -Werror all-warnings -Xcompiler -Wall,-Wextra "
           "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "
           "all.cu -o all > log 2>&1",
           dir, NVCC);
  int rc = system(cmd);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "head -40 '%s/log'", dir);
    if (system(cmd) != 0)
      fprintf(stderr, "(no log)\n");
  }
  ck_assert_msg(rc == 0, "nvcc failed on the generated code of %d graphs (kept in %s)", ngraphs,
                dir);
  /* The emulator's hand-written race kernels are CUDA too (for a device
   * run of the same checks). */
  char race[4096];
  ck_assert_ptr_nonnull(realpath(tu_src("tests/codegen/race.cu"), race));
  snprintf(cmd, sizeof cmd,
           "cd '%s' && '%s' -std=c++17 -O1 -Werror all-warnings -Xcompiler -Wall,-Wextra "
           "-gencode=arch=compute_80,code=sm_80 -DSYNCED=0 -x cu '%s' -o race > log 2>&1",
           dir, NVCC, race);
  rc = system(cmd);
  if (rc != 0) {
    snprintf(cmd, sizeof cmd, "head -40 '%s/log'", dir);
    if (system(cmd) != 0)
      fprintf(stderr, "(no log)\n");
  }
  ck_assert_msg(rc == 0, "nvcc failed on tests/codegen/race.cu (kept in %s)", dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* The test suite. */
static Suite *suite(void) {
  Suite *s = suite_create("codegen_nvcc");
  TCase *tc = tcase_create("nvcc");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_nvcc_compiles_generated_code);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite; skip without nvcc. */
int main(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "'%s' --version >/dev/null 2>&1", NVCC);
  if (system(cmd) != 0) {
    printf("nvcc (%s) not found: skipped\n", NVCC);
    return 77;
  }
  return tu_run(suite());
}
