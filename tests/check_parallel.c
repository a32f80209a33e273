/* SPDX-License-Identifier: MIT */
/* tests/check_parallel.c - the parallel engine (src/search/pool.c,
 * deque.c, sink.c, checkpoint.c): the same results (list, costs, every
 * graph's text) and counters for 1, 2 and 3 threads and for any splitting
 * of the work into tasks; stop-and-resume at many state counts, on other
 * thread counts, ends with the uninterrupted run's results; damaged,
 * truncated and foreign checkpoints are refused naming the file and the
 * mismatch; mirs_search_stop from another thread; the Chase–Lev deque
 * under a stress test (run it under --enable-tsan). */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mirsearch/search.h"
#include "search/deque.h"
#include "search/search.h"
#include "testutil.h"

#include "tiny_programs.h"

static const char *const PROGRAMS[] = {TINY, TINY_RMS, TINY_SOFTMAX};

static const char *const SMALL_SPACE[] = {"grid_x", "1,2", "grid_y", "1", "grid_z", "1",
                                          "forloop_ranges", "1,2", "max_block_ops", "8",
                                          "kernel_ops", "matmul,exp,add,rms_norm",
                                          "max_kernel_ops", "3", "op_budget", "0", NULL};

/* A context with the small space and `threads` workers. */
static mirs_context *ctx_for(int threads) {
  mirs_context *ctx = tu_ctx(NULL);
  set_opts(ctx, SMALL_SPACE);
  char t[16];
  snprintf(t, sizeof t, "%d", threads);
  ck_assert_int_eq(mirs_option_set(ctx, "threads", t), MIRS_OK);
  return ctx;
}

/* Everything a result list says, as text: each result's rank, hash, cost,
 * kernels and graph text, and the counters that must not depend on the
 * threads (malloc'd). */
static char *summary(const mirs_search *s) {
  size_t cap = 1 << 16, n = 0;
  char *out = malloc(cap);
  ck_assert_ptr_nonnull(out);
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  n += (size_t)snprintf(out + n, cap - n, "states %llu verified %llu found %llu complete %d\n",
                        (unsigned long long)st.states_explored,
                        (unsigned long long)st.candidates_verified,
                        (unsigned long long)st.graphs_found, st.complete);
  for (int i = 0; i < mirs_search_num_results(s); i++) {
    char *text = NULL;
    ck_assert_int_eq(mirs_graph_to_string(mirs_search_result(s, i), &text), MIRS_OK);
    size_t need = strlen(text) + 128;
    if (n + need >= cap) {
      cap = (n + need) * 2;
      out = realloc(out, cap);
      ck_assert_ptr_nonnull(out);
    }
    n += (size_t)snprintf(out + n, cap - n, "%d %016llx %.9g %d\n%s", i,
                          (unsigned long long)mirs_search_result_hash(s, i),
                          mirs_search_result_cost(s, i), mirs_search_result_kernels(s, i), text);
    mirs_free(mirs_graph_context(mirs_search_result(s, i)), text);
  }
  return out;
}

/* Search text on `threads` workers; its summary. */
static char *search_summary(const char *text, int threads) {
  mirs_context *ctx = ctx_for(threads);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(mirs_search_threads(s), threads);
  char *sum = summary(s);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return sum;
}

/* ---------------------------------------------------------------- threads */

START_TEST(test_threads_same_results) {
  for (size_t p = 0; p < sizeof PROGRAMS / sizeof *PROGRAMS; p++) {
    char *one = search_summary(PROGRAMS[p], 1);
    ck_assert_ptr_nonnull(strstr(one, "complete 1"));
    for (int t = 2; t <= 3; t++) {
      char *many = search_summary(PROGRAMS[p], t);
      ck_assert_msg(strcmp(one, many) == 0, "program %zu: %d threads differ from 1:\n%.400s\n--\n%.400s",
                    p, t, one, many);
      free(many);
    }
    free(one);
  }
}
END_TEST

/* ---------------------------------------------------------------- splitting */

/* Run program text as tasks split at random depths, in random order, on
 * one worker (seeded); its summary. */
static char *split_summary(const char *text, uint64_t seed) {
  mirs_context *ctx = ctx_for(1);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  mirs__search_worker *w;
  ck_assert_int_eq(mirs__search_worker_new(s, &w), MIRS_OK);
  mirs__task *tasks[4096];
  int n = 0;
  tasks[n++] = mirs__task_new(ctx, NULL, 0, 0, w->frames[0].nmoves);
  uint64_t rng = seed;
  int splits = 0;
  while (n > 0) {
    rng = rng * UINT64_C(6364136223846793005) + 1442695040888963407u;
    int k = (int)((rng >> 33) % (uint64_t)n);
    mirs__task *t = tasks[k];
    tasks[k] = tasks[--n];
    ck_assert_int_eq(mirs__search_task_start(w, t), MIRS_OK);
    mirs__task_free(ctx, t);
    bool done = false;
    while (!done) {
      rng = rng * UINT64_C(6364136223846793005) + 1442695040888963407u;
      uint32_t budget = 1 + (uint32_t)((rng >> 33) % 40);
      uint64_t states = (rng >> 20) % 3 == 0 ? UINT64_MAX : 1 + (rng >> 24) % 20;
      ck_assert_int_eq(mirs__search_task_steps(w, budget, states, &done), MIRS_OK);
      if (done)
        break;
      int r = (int)((rng >> 45) % 8);
      if (r == 0 && n < 4000) {
        mirs__task *x = mirs__search_split(w, ctx);
        if (x) {
          tasks[n++] = x;
          splits++;
        }
      } else if (r == 1 && n < 3900) {
        /* Stop: the whole rest of this task goes back as tasks. */
        mirs__task *list = NULL;
        ck_assert_int_eq(mirs__search_leftover(w, ctx, &list), MIRS_OK);
        while (list) {
          mirs__task *x = list;
          list = x->next;
          x->next = NULL;
          tasks[n++] = x;
        }
        break;
      }
    }
  }
  ck_assert_int_gt(splits, 3);
  mirs__stats st = w->stats;
  mirs__search_worker_free(w);
  mirs__sink_add_stats(s, &st);
  s->complete = true;
  s->ran = true;
  ck_assert_int_eq(mirs__sink_finish(s), MIRS_OK);
  char *sum = summary(s);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return sum;
}

START_TEST(test_split_any_order) {
  for (size_t p = 0; p < sizeof PROGRAMS / sizeof *PROGRAMS; p++) {
    char *ref = search_summary(PROGRAMS[p], 1);
    for (uint64_t seed = 1; seed <= 3; seed++) {
      char *x = split_summary(PROGRAMS[p], seed * 7919 + p);
      ck_assert_msg(strcmp(ref, x) == 0, "program %zu seed %llu: split run differs:\n%.300s\n--\n%.300s",
                    p, (unsigned long long)seed, ref, x);
      free(x);
    }
    free(ref);
  }
}
END_TEST

/* ---------------------------------------------------------------- stop and resume */

/* A temporary checkpoint path. */
static void temp_path(char *buf, size_t size) {
  const char *dir = getenv("TMPDIR");
  snprintf(buf, size, "%s/mirs-ckpt-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(buf);
  ck_assert_int_ge(fd, 0);
  close(fd);
}

/* Stop text after max_states on `t1` threads, checkpoint, resume on t2
 * threads (possibly stopping again at 2 * max_states), and so on until
 * complete; the summary of the final run. */
static char *stop_resume_summary(const char *text, int64_t max_states, int t1, int t2) {
  char path[512];
  temp_path(path, sizeof path);
  int threads = t1, rounds = 0;
  bool resumed = false;
  char *sum = NULL;
  for (;;) {
    mirs_context *ctx = ctx_for(threads);
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", (long long)(max_states * (rounds + 1)));
    ck_assert_int_eq(mirs_option_set(ctx, "max_states", rounds < 3 ? ms : "0"), MIRS_OK);
    mirs_graph *g = parse(ctx, text);
    mirs_search *s;
    ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
    if (resumed)
      ck_assert_msg(mirs_search_resume(s, path) == MIRS_OK, "%s", mirs_last_error(ctx));
    ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
    if (!mirs_search_stopped(s)) {
      sum = summary(s);
      mirs_search_destroy(s);
      mirs_graph_destroy(g);
      mirs_context_destroy(ctx);
      break;
    }
    /* max_states is exact on any thread count */
    mirs_search_stats st;
    ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
    ck_assert_uint_eq(st.states_explored, (uint64_t)(max_states * (rounds + 1)));
    ck_assert_str_eq(mirs_search_stop_reason(s), "the state limit");
    ck_assert_int_eq(mirs_search_stop_why(s), MIRS_STOP_STATES);
    ck_assert_int_eq(mirs_search_checkpoint(s, path), MIRS_OK);
    mirs_search_destroy(s);
    mirs_graph_destroy(g);
    mirs_context_destroy(ctx);
    resumed = true;
    rounds++;
    threads = threads == t1 ? t2 : t1;
  }
  unlink(path);
  return sum;
}

START_TEST(test_stop_resume_many_points) {
  for (size_t p = 0; p < sizeof PROGRAMS / sizeof *PROGRAMS; p++) {
    char *ref = search_summary(PROGRAMS[p], 1);
    static const int64_t points[] = {1, 7, 64, 200, 1000, 3001};
    for (size_t i = 0; i < sizeof points / sizeof *points; i++) {
      int t1 = 1 + (int)(i % 2), t2 = 1 + (int)((i + p) % 3);
      char *x = stop_resume_summary(PROGRAMS[p], points[i], t1, t2);
      ck_assert_msg(strcmp(ref, x) == 0,
                    "program %zu, stops every %lld states (%d/%d threads):\n%.300s\n--\n%.300s", p,
                    (long long)points[i], t1, t2, ref, x);
      free(x);
    }
    free(ref);
  }
}
END_TEST

/* Periodic checkpoints stop and restart the workers many times: the run
 * still ends with the uninterrupted results, and the last periodic
 * checkpoint resumes to them too. */
START_TEST(test_periodic_checkpoints) {
  char path[512];
  temp_path(path, sizeof path);
  unlink(path);
  char *ref = search_summary(TINY_SOFTMAX, 1);
  mirs_context *ctx = ctx_for(2);
  /* Short enough that even a fast run of this small search writes several
   * (at 2 ms one run of a distcheck wrote none). */
  ck_assert_int_eq(mirs_option_set(ctx, "checkpoint_interval", "0.0002"), MIRS_OK);
  ck_assert_int_eq(mirs_option_set(ctx, "log_level", "1"), MIRS_OK); /* no line per checkpoint */
  mirs_graph *g = parse(ctx, TINY_SOFTMAX);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_set_checkpoint(s, path), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  char *x = summary(s);
  ck_assert_msg(strcmp(ref, x) == 0, "with periodic checkpoints:\n%.300s\n--\n%.300s", ref, x);
  free(x);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  ck_assert_int_eq(access(path, F_OK), 0); /* at least one was written */
  ctx = ctx_for(3);
  g = parse(ctx, TINY_SOFTMAX);
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_msg(mirs_search_resume(s, path) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  x = summary(s);
  ck_assert_msg(strcmp(ref, x) == 0, "resumed from a periodic checkpoint:\n%.300s\n--\n%.300s",
                ref, x);
  free(x);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  free(ref);
  unlink(path);
}
END_TEST

/* ---------------------------------------------------------------- refused checkpoints */

/* Write a checkpoint of TINY stopped after 300 states into path. */
static void make_checkpoint(const char *path) {
  mirs_context *ctx = ctx_for(1);
  ck_assert_int_eq(mirs_option_set(ctx, "max_states", "300"), MIRS_OK);
  mirs_graph *g = parse(ctx, TINY);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  ck_assert(mirs_search_stopped(s));
  ck_assert_int_eq(mirs_search_checkpoint(s, path), MIRS_OK);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}

/* Resume text (options kv on top of the small space) from path: the
 * status, and the message in msg. */
static mirs_status try_resume(const char *text, const char *const *kv, const char *path,
                              char *msg, size_t size) {
  mirs_context *ctx = ctx_for(1);
  set_opts(ctx, kv);
  mirs_graph *g = parse(ctx, text);
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  mirs_status st = mirs_search_resume(s, path);
  snprintf(msg, size, "%s", mirs_last_error(ctx));
  if (st == MIRS_OK)
    ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return st;
}

/* Read a whole file. */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *d = malloc((size_t)len + 1);
  ck_assert_int_eq(fread(d, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return d;
}

static void spit(const char *path, const unsigned char *d, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fwrite(d, 1, n, f), n);
  fclose(f);
}

/* Expect resuming TINY from bytes d[0..n) to be refused with a message
 * naming the file and containing `why`. */
static void expect_refused(const char *path, const unsigned char *d, size_t n, const char *why) {
  spit(path, d, n);
  char msg[1024];
  mirs_status st = try_resume(TINY, NULL, path, msg, sizeof msg);
  ck_assert_msg(st == MIRS_INVALID_ARG, "%s: status %d (%s)", why, st, msg);
  ck_assert_msg(strstr(msg, path) && strstr(msg, why), "expected '%s' naming the file: %s", why,
                msg);
  ck_assert_int_eq(mirs_status_exit_code(st), 2);
}

START_TEST(test_checkpoint_refused) {
  char path[512], bad[520];
  temp_path(path, sizeof path);
  snprintf(bad, sizeof bad, "%s.bad", path);
  make_checkpoint(path);
  size_t n;
  unsigned char *d = slurp(path, &n);
  char msg[1024];
  /* The good one resumes. */
  ck_assert_msg(try_resume(TINY, NULL, path, msg, sizeof msg) == MIRS_OK, "%s", msg);
  /* Truncated anywhere. */
  expect_refused(bad, d, n - 1, "truncated");
  expect_refused(bad, d, n / 2, "truncated");
  expect_refused(bad, d, 20, "truncated");
  expect_refused(bad, d, 5, "truncated");
  /* A flipped byte in the payload, or in the checksum. */
  unsigned char *e = malloc(n);
  memcpy(e, d, n);
  e[n / 2] ^= 0x40;
  expect_refused(bad, e, n, "checksum");
  memcpy(e, d, n);
  e[n - 3] ^= 1;
  expect_refused(bad, e, n, "checksum");
  /* Not a checkpoint at all; another format version. */
  expect_refused(bad, (const unsigned char *)"program tiny\ninput X : f16[4, 8]\n", 33,
                 "not a mirsearch checkpoint");
  memcpy(e, d, n);
  e[8] = 99;
  expect_refused(bad, e, n, "format version 99");
  free(e);
  /* Another program; other search options. */
  ck_assert_int_eq(try_resume(TINY_RMS, NULL, path, msg, sizeof msg), MIRS_INVALID_ARG);
  ck_assert_msg(strstr(msg, path) && strstr(msg, "another program"), "%s", msg);
  static const char *const other[] = {"grid_x", "1,4", NULL};
  ck_assert_int_eq(try_resume(TINY, other, path, msg, sizeof msg), MIRS_INVALID_ARG);
  ck_assert_msg(strstr(msg, path) && strstr(msg, "'grid_x' differs"), "%s", msg);
  /* A missing file is an I/O error naming it. */
  unlink(bad);
  ck_assert_int_eq(try_resume(TINY, NULL, bad, msg, sizeof msg), MIRS_IO);
  ck_assert_ptr_nonnull(strstr(msg, bad));
  /* The program and options come back from the checkpoint. */
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_checkpoint_load_program(ctx, path, &g), MIRS_OK);
  ck_assert_str_eq(mirs_graph_name(g), "tiny");
  char v[64];
  mirs_option_get(ctx, "grid_x", v, sizeof v);
  ck_assert_str_eq(v, "1,2");
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  /* ...unless the context already sets one to another value. */
  ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "forloop_ranges", "4"), MIRS_OK);
  ck_assert_int_eq(mirs_checkpoint_load_program(ctx, path, &g), MIRS_INVALID_ARG);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "forloop_ranges"));
  mirs_context_destroy(ctx);
  free(d);
  unlink(path);
}
END_TEST

/* ---------------------------------------------------------------- stop from another thread */

static void *stopper(void *arg) {
  usleep(100000);
  mirs_search_stop(arg);
  return NULL;
}

START_TEST(test_stop_from_thread) {
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "threads", "2"), MIRS_OK);
  mirs_graph *g = parse(ctx, TINY_SOFTMAX); /* the default space: long enough */
  mirs_search *s;
  ck_assert_int_eq(mirs_search_create(ctx, g, &s), MIRS_OK);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, stopper, s), 0);
  ck_assert_int_eq(mirs_search_run(s), MIRS_OK);
  pthread_join(th, NULL);
  mirs_search_stats st;
  mirs_search_get_stats(s, &st);
  ck_assert_int_eq(st.complete, 0);
  ck_assert(mirs_search_stopped(s));
  ck_assert_int_eq(mirs_search_stop(NULL), MIRS_INVALID_ARG);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- deque stress */

#define ITEMS 200000
#define THIEVES 3

typedef struct stress {
  mirs__deque dq;
  _Atomic int taken[ITEMS];
  _Atomic int done;
  _Atomic long stolen;
} stress;

static void *thief(void *arg) {
  stress *x = arg;
  long n = 0;
  while (!atomic_load(&x->done) || mirs__deque_size(&x->dq) > 0) {
    void *v = mirs__deque_steal(&x->dq);
    if (v && v != MIRS__DEQUE_ABORT) {
      intptr_t *item = v;
      atomic_fetch_add(&x->taken[*item], 1);
      n++;
    }
  }
  atomic_fetch_add(&x->stolen, n);
  return NULL;
}

START_TEST(test_deque_stress) {
  mirs_context *ctx = tu_ctx(NULL);
  stress *x = calloc(1, sizeof *x);
  intptr_t *items = malloc(sizeof *items * ITEMS);
  ck_assert_int_eq(mirs__deque_init(&x->dq, ctx, 2), MIRS_OK); /* small: it must grow */
  pthread_t th[THIEVES];
  for (int i = 0; i < THIEVES; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, thief, x), 0);
  long popped = 0;
  uint64_t rng = 42;
  for (intptr_t i = 0; i < ITEMS; i++) {
    items[i] = i; /* written before the push: the thief must see it */
    ck_assert_int_eq(mirs__deque_push(&x->dq, &items[i]), MIRS_OK);
    rng = rng * UINT64_C(6364136223846793005) + 1442695040888963407u;
    if ((rng >> 60) < 7) {
      void *v = mirs__deque_pop(&x->dq);
      if (v) {
        atomic_fetch_add(&x->taken[*(intptr_t *)v], 1);
        popped++;
      }
    }
  }
  void *v;
  while ((v = mirs__deque_pop(&x->dq)) != NULL) {
    atomic_fetch_add(&x->taken[*(intptr_t *)v], 1);
    popped++;
  }
  atomic_store(&x->done, 1);
  for (int i = 0; i < THIEVES; i++)
    pthread_join(th[i], NULL);
  ck_assert_int_eq(popped + atomic_load(&x->stolen), ITEMS);
  for (int i = 0; i < ITEMS; i++)
    ck_assert_msg(atomic_load(&x->taken[i]) == 1, "item %d taken %d times", i,
                  atomic_load(&x->taken[i]));
  ck_assert_int_gt(atomic_load(&x->stolen), 0);
  mirs__deque_free(&x->dq);
  free(items);
  free(x);
  mirs_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- usable CPUs */

START_TEST(test_usable_cpus) {
  ck_assert_int_ge(mirs__core_usable_cpus(), 1);
  setenv("OMP_NUM_THREADS", "3", 1);
  ck_assert_int_eq(mirs__core_usable_cpus(), 3);
  unsetenv("OMP_NUM_THREADS");
  setenv("SLURM_CPUS_PER_TASK", "1", 1);
  ck_assert_int_eq(mirs__core_usable_cpus(), 1);
  unsetenv("SLURM_CPUS_PER_TASK");
}
END_TEST

static Suite *parallel_suite(void) {
  Suite *s = suite_create("parallel");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_usable_cpus);
  tcase_add_test(tc, test_deque_stress);
  tcase_add_test(tc, test_threads_same_results);
  tcase_add_test(tc, test_split_any_order);
  tcase_add_test(tc, test_stop_resume_many_points);
  tcase_add_test(tc, test_periodic_checkpoints);
  tcase_add_test(tc, test_checkpoint_refused);
  tcase_add_test(tc, test_stop_from_thread);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(parallel_suite());
}
