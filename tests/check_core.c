/* SPDX-License-Identifier: MIT */
/* tests/check_core.c - src/core: status table, versions, options,
 * allocation accounting and failure injection, errors and traces,
 * logging, diagnostics, atomic writes, hashing, Philox known answers. */
#include "config.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "testutil.h"

START_TEST(test_status_table) {
  ck_assert_str_eq(mirs_status_name(MIRS_OK), "OK");
  ck_assert_str_eq(mirs_status_name(MIRS_PARSE), "PARSE");
  ck_assert_str_eq(mirs_status_name((mirs_status)999), "?");
  ck_assert_int_eq(mirs_status_exit_code(MIRS_OK), 0);
  ck_assert_int_eq(mirs_status_exit_code(MIRS_PARSE), 2);
  ck_assert_int_eq(mirs_status_exit_code(MIRS_SHAPE), 2);
  ck_assert_int_eq(mirs_status_exit_code(MIRS_NOMEM), 3);
  ck_assert_int_eq(mirs_status_exit_code(MIRS_INTERNAL), 3);
  ck_assert_int_eq(mirs_status_exit_code(MIRS_STOPPED), 4);
  for (int s = 0; s < MIRS_STATUS_COUNT; s++) {
    ck_assert_ptr_nonnull(mirs_status_str((mirs_status)s));
    int e = mirs_status_exit_code((mirs_status)s);
    ck_assert(e == 0 || e == 2 || e == 3 || e == 4);
  }
}
END_TEST

START_TEST(test_versions_agree) {
  ck_assert_int_eq(mirs_version(), MIRS_VERSION);
  ck_assert_str_eq(mirs_version_string(), MIRS_VERSION_STRING);
  char buf[64];
  snprintf(buf, sizeof buf, "%d.%d.%d", MIRS_VERSION_MAJOR, MIRS_VERSION_MINOR,
           MIRS_VERSION_PATCH);
  ck_assert_str_eq(buf, MIRS_VERSION_STRING);
  /* The VERSION file drives both. */
  FILE *f = fopen(tu_src("VERSION"), "r");
  ck_assert_ptr_nonnull(f);
  char line[64] = "";
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  line[strcspn(line, "\n")] = '\0';
  ck_assert_str_eq(line, mirs_version_string());
  ck_assert_ptr_nonnull(strstr(mirs_build_features(), "cuda="));
  ck_assert_ptr_nonnull(mirs_build_git_hash());
  ck_assert_ptr_nonnull(mirs_build_compiler());
}
END_TEST

START_TEST(test_options) {
  mirs_context *ctx = tu_ctx(NULL);
  int64_t v;
  ck_assert_int_eq(mirs_option_get_int(ctx, "seed", &v), MIRS_OK);
  ck_assert_int_eq(v, 1);
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "42"), MIRS_OK);
  ck_assert_int_eq(mirs_option_get_int(ctx, "seed", &v), MIRS_OK);
  ck_assert_int_eq(v, 42);
  ck_assert_int_eq(mirs_option_set(ctx, "log-level", "3"), MIRS_OK); /* '-' == '_' */
  ck_assert_int_eq(ctx->opt.log_level, 3);
  char buf[256];
  mirs_options_nondefault(ctx, buf, sizeof buf);
  ck_assert_str_eq(buf, "seed=42 log_level=3");
  ck_assert_int_eq(mirs_option_get(ctx, "seed", buf, sizeof buf), MIRS_OK);
  ck_assert_str_eq(buf, "42");
  /* errors */
  ck_assert_int_eq(mirs_option_set(ctx, "no_such_option", "1"), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "unknown option 'no_such_option'"));
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "12x"), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "expects an integer"));
  ck_assert_int_eq(mirs_option_set(ctx, "log_level", "9"), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "must be in [0, 4]"));
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "-1"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "seed", "99999999999999999999999"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, NULL, "1"), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(NULL, "seed", "1"), MIRS_INVALID_ARG);
  ck_assert_int_eq(ctx->opt.seed, 42); /* failed sets change nothing */
  /* table listing and help */
  ck_assert_uint_gt(mirs_option_count(), 0);
  for (size_t i = 0; i < mirs_option_count(); i++) {
    char help[1024];
    ck_assert_ptr_nonnull(mirs_option_name(i));
    ck_assert_ptr_nonnull(strstr(mirs_option_help(i, help, sizeof help), "default"));
  }
  ck_assert_ptr_null(mirs_option_name(mirs_option_count()));
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_alloc_accounting) {
  mirs_context *ctx = tu_ctx(NULL);
  size_t base = mirs_memory_current(ctx);
  void *a = mirs__core_alloc(ctx, 1000);
  void *b = mirs__core_calloc(ctx, 10, 100);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(((uintptr_t)a) % 16, 0);
  ck_assert_uint_eq(mirs_memory_current(ctx), base + 2000);
  for (int i = 0; i < 1000; i++)
    ck_assert_int_eq(((unsigned char *)b)[i], 0);
  a = mirs__core_realloc(ctx, a, 5000);
  ck_assert_uint_eq(mirs_memory_current(ctx), base + 6000);
  mirs__core_free(ctx, a);
  mirs__core_free(ctx, b);
  mirs__core_free(ctx, NULL);
  ck_assert_uint_eq(mirs_memory_current(ctx), base);
  ck_assert_uint_ge(mirs_memory_peak(ctx), base + 6000);
  /* overflow is refused, not wrapped */
  ck_assert_ptr_null(mirs__core_calloc(ctx, SIZE_MAX / 2, 4));
  ck_assert_int_eq(mirs_last_status(ctx), MIRS_NOMEM);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_alloc_failure_injection) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs__core_fail_alloc_after(ctx, 3);
  void *a = mirs__core_alloc(ctx, 8), *b = mirs__core_alloc(ctx, 8);
  void *c = mirs__core_alloc(ctx, 8), *d = mirs__core_alloc(ctx, 8);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_null(c);
  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(mirs_last_status(ctx), MIRS_NOMEM);
  mirs__core_free(ctx, a);
  mirs__core_free(ctx, b);
  mirs__core_free(ctx, d);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

/* A counting embedder allocator. */
typedef struct counting {
  long calls;
  size_t live;
} counting;

static void *counting_alloc(void *user, void *ptr, size_t osize, size_t nsize) {
  counting *c = user;
  c->calls++;
  c->live -= ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p)
    c->live += nsize;
  return p;
}

START_TEST(test_embedder_allocator) {
  counting c = {0, 0};
  mirs_context *ctx = NULL;
  ck_assert_int_eq(mirs_context_create_with_allocator(counting_alloc, &c, &ctx), MIRS_OK);
  mirs_graph *g;
  ck_assert_int_eq(mirs_graph_create(ctx, "p", &g), MIRS_OK);
  int64_t d[2] = {4, 8};
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F32, 2, d, NULL), MIRS_OK);
  mirs_graph_destroy(g);
  ck_assert_int_gt(c.calls, 3);
  mirs_context_destroy(ctx);
  ck_assert_uint_eq(c.live, 0);
}
END_TEST

static mirs_status inner(mirs_context *ctx) {
  return MIRS_FAIL(ctx, MIRS_SHAPE, "bad thing %d", 7);
}

static mirs_status outer(mirs_context *ctx) {
  MIRS_CHECK(ctx, inner(ctx));
  return MIRS_OK;
}

START_TEST(test_error_trace) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_str_eq(mirs_last_error(ctx), "");
  ck_assert_int_eq(outer(ctx), MIRS_SHAPE);
  ck_assert_str_eq(mirs_last_error(ctx), "bad thing 7");
  ck_assert_int_eq(mirs_last_status(ctx), MIRS_SHAPE);
  const char *tr = mirs_error_trace(ctx);
  ck_assert_ptr_nonnull(strstr(tr, "inner ("));
  ck_assert_ptr_nonnull(strstr(tr, "\nouter ("));
  ck_assert_ptr_nonnull(strstr(tr, "check_core.c:"));
  mirs_clear_error(ctx);
  ck_assert_str_eq(mirs_last_error(ctx), "");
  ck_assert_int_eq(mirs_last_status(ctx), MIRS_OK);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_logging_levels) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs__core_log(ctx, MIRS_LOG_INFO, "info %d", 1);
  mirs__core_log(ctx, MIRS_LOG_DEBUG, "debug %d", 2); /* above default level 2 */
  ck_assert_int_eq(log.count, 1);
  ck_assert_str_eq(log.text, "info 1\n");
  ck_assert_int_eq(mirs_option_set(ctx, "log_level", "0"), MIRS_OK);
  mirs__core_log(ctx, MIRS_LOG_WARNING, "quiet");
  ck_assert_int_eq(log.count, 1);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_diagnostics) {
  tu_log log;
  mirs_context *ctx = tu_ctx(&log);
  mirs__core_diag(ctx, "a.graph", 3, 7, "undefined name '%s'", "Q");
  mirs__core_diag(ctx, "a.graph", 0, 0, "cannot open");
  ck_assert_uint_eq(mirs_diag_count(ctx), 2);
  ck_assert_str_eq(mirs_diag_message(ctx, 0), "a.graph:3:7: error: undefined name 'Q'");
  ck_assert_str_eq(mirs_diag_message(ctx, 1), "a.graph: error: cannot open");
  ck_assert_ptr_null(mirs_diag_message(ctx, 2));
  ck_assert_int_eq(log.count, 2);
  mirs__core_diag_clear(ctx);
  ck_assert_uint_eq(mirs_diag_count(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_atomic_write) {
  mirs_context *ctx = tu_ctx(NULL);
  char dir[512];
  ck_assert_ptr_nonnull(mkdtemp(tu_tmp(dir, sizeof dir, "mirs-core-XXXXXX")));
  char path[600];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  ck_assert_int_eq(mirs__core_write_atomic(ctx, path, "hello\n", 6), MIRS_OK);
  char *text;
  size_t len;
  ck_assert_int_eq(mirs__core_read_file(ctx, path, &text, &len), MIRS_OK);
  ck_assert_uint_eq(len, 6);
  ck_assert_str_eq(text, "hello\n");
  mirs__core_free(ctx, text);
  /* A write into a missing directory fails and leaves nothing behind. */
  char bad[700];
  snprintf(bad, sizeof bad, "%s/missing/out.txt", dir);
  ck_assert_int_eq(mirs__core_write_atomic(ctx, bad, "x", 1), MIRS_IO);
  ck_assert_int_eq(mirs__core_read_file(ctx, bad, &text, &len), MIRS_IO);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "cannot open"));
  ck_assert_int_eq(mirs__core_read_file(ctx, dir, &text, &len), MIRS_IO);
  unlink(path);
  rmdir(dir);
  ck_assert_uint_eq(mirs_memory_current(ctx), 0);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_hash_stable) {
  /* Deterministic, order- and length-sensitive mixing. */
  ck_assert_uint_eq(mirs__hash_str(0, "abc"), mirs__hash_str(0, "abc"));
  ck_assert_uint_ne(mirs__hash_str(0, "abc"), mirs__hash_str(0, "abd"));
  ck_assert_uint_ne(mirs__hash_bytes(0, "", 0), mirs__hash_bytes(0, "\0", 1));
  ck_assert_uint_ne(mirs__hash_mix(1, 2), mirs__hash_mix(2, 1));
  uint64_t h = mirs__hash_mix(0, 0);
  ck_assert_uint_ne(h, 0);
}
END_TEST

/* Random123's kat_vectors for philox4x32 10 rounds. */
START_TEST(test_philox_known_answers) {
  static const uint32_t v[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    mirs_philox4x32_10(v[i], v[i] + 4, out);
    for (int j = 0; j < 4; j++)
      ck_assert_uint_eq(out[j], v[i][6 + j]);
  }
}
END_TEST

/* mirs_philox_at follows curand_init(seed, subsequence, offset) + curand(). */
START_TEST(test_philox_curand_mapping) {
  uint64_t seed = UINT64_C(0x0123456789abcdef), sub = UINT64_C(0xfedcba9876543210);
  for (uint64_t off = 0; off < 12; off++) {
    uint64_t blk = off / 4;
    uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), (uint32_t)sub, (uint32_t)(sub >> 32)};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    mirs_philox4x32_10(ctr, key, out);
    ck_assert_uint_eq(mirs_philox_at(seed, sub, off), out[off % 4]);
  }
  /* A large offset carries into the counter's second word. */
  uint64_t off = (UINT64_C(1) << 34) + 5;
  uint32_t ctr[4] = {1, 1, 0, 0}, key[2] = {7, 0}, out[4];
  mirs_philox4x32_10(ctr, key, out);
  ck_assert_uint_eq(mirs_philox_at(7, 0, off), out[1]);
}
END_TEST

START_TEST(test_input_values) {
  double sum = 0, lo = 1, hi = -1;
  for (uint64_t e = 0; e < 100000; e++) {
    double x = mirs_input_value(1, "X", e);
    ck_assert(x >= -1.0 && x < 1.0);
    sum += x;
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  ck_assert(sum / 100000 < 0.01 && sum / 100000 > -0.01);
  ck_assert(lo < -0.999 && hi > 0.999);
  ck_assert(mirs_input_value(1, "X", 0) != mirs_input_value(1, "Y", 0));
  ck_assert(mirs_input_value(1, "X", 0) != mirs_input_value(2, "X", 0));
  ck_assert(mirs_input_value(1, "X", 5) == mirs_input_value(1, "X", 5));
}
END_TEST

START_TEST(test_stats_table) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_uint_eq(mirs_stat_count(), MIRS__STAT_COUNT);
  for (size_t i = 0; i < mirs_stat_count(); i++) {
    ck_assert_ptr_nonnull(mirs_stat_name(i));
    ck_assert_ptr_nonnull(mirs_stat_description(i));
  }
  mirs__stats s = {{0}};
  MIRS_INC(&s, graphs_built);
  MIRS_ADD(&s, graphs_built, 2);
  size_t before = (size_t)mirs_stat_value(ctx, MIRS__STAT_graphs_built);
  mirs__core_stats_add(ctx, &s);
  ck_assert_uint_eq(mirs_stat_value(ctx, MIRS__STAT_graphs_built), before + 3);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_null_safety) {
  ck_assert_int_eq(mirs_context_create(NULL), MIRS_INVALID_ARG);
  mirs_context_destroy(NULL);
  ck_assert_str_eq(mirs_last_error(NULL), "no context");
  ck_assert_uint_eq(mirs_memory_current(NULL), 0);
  ck_assert_uint_eq(mirs_diag_count(NULL), 0);
  mirs_set_log_callback(NULL, NULL, NULL);
  int n = -1;
  ck_assert_int_eq(mirs_gpu_device_count(NULL, &n), MIRS_INVALID_ARG);
}
END_TEST

START_TEST(test_gpu_reports) {
  mirs_context *ctx = tu_ctx(NULL);
  int n = -1;
  mirs_status s = mirs_gpu_device_count(ctx, &n);
  if (s == MIRS_OK) {
    ck_assert_int_gt(n, 0);
    char name[256];
    ck_assert_int_eq(mirs_gpu_device_name(ctx, 0, name, sizeof name), MIRS_OK);
    ck_assert_int_gt((int)strlen(name), 0);
  } else {
    ck_assert_int_eq(n, 0);
    ck_assert(s == MIRS_NO_DEVICE || s == MIRS_CUDA);
    ck_assert_int_gt((int)strlen(mirs_last_error(ctx)), 0);
  }
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *core_suite(void) {
  Suite *s = suite_create("core");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_status_table);
  tcase_add_test(tc, test_versions_agree);
  tcase_add_test(tc, test_options);
  tcase_add_test(tc, test_alloc_accounting);
  tcase_add_test(tc, test_alloc_failure_injection);
  tcase_add_test(tc, test_embedder_allocator);
  tcase_add_test(tc, test_error_trace);
  tcase_add_test(tc, test_logging_levels);
  tcase_add_test(tc, test_diagnostics);
  tcase_add_test(tc, test_atomic_write);
  tcase_add_test(tc, test_hash_stable);
  tcase_add_test(tc, test_philox_known_answers);
  tcase_add_test(tc, test_philox_curand_mapping);
  tcase_add_test(tc, test_input_values);
  tcase_add_test(tc, test_stats_table);
  tcase_add_test(tc, test_null_safety);
  tcase_add_test(tc, test_gpu_reports);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(core_suite());
}
