/* SPDX-License-Identifier: MIT */
/* tests/check_examples.c - the search on every small example of
 * examples/: it completes, finds a single-kernel best, and every µGraph it
 * reports evaluates equal to its program in float64 on seeded random
 * inputs (independently of the search's own float64 check, which is
 * turned off here).  The examples whose default search takes longer than
 * about half a minute on one core are searched with op_budget=0 (the
 * default space less graphs that use an operator class more often than
 * the program does); the rest in the default space. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "mirsearch/search.h"
#include "testutil.h"

static const struct {
  const char *name;
  bool budget; /* op_budget=0 (else the default space) */
} EXAMPLES[] = {
    {"rmsnorm_linear_small", false},
    {"gated_mlp_small", false},
    {"ntrans_small", false},
    {"qknorm_attention_small", false},
    {"gqa_small", true},
    {"mha_small", true},
    {"mqa_small", true},
    {"lora_small", true},
    {"causal_attention_small", true},
};
#define NEXAMPLES ((int)(sizeof EXAMPLES / sizeof EXAMPLES[0]))

/* Seeds of the float64 comparison (two independent input draws). */
static const uint64_t SEEDS[] = {7, 20261124};

/* Whether output out of evaluation r equals the same-named output of
 * reference ref elementwise (relative 1e-9, absolute below magnitude 1);
 * why gets the first difference. */
static bool outputs_equal(const mirs_eval_result *ref, const mirs_eval_result *r, char *why,
                          size_t cap) {
  int n = mirs_eval_num_outputs(ref);
  if (mirs_eval_num_outputs(r) != n) {
    snprintf(why, cap, "%d outputs, the program has %d", mirs_eval_num_outputs(r), n);
    return false;
  }
  for (int i = 0; i < n; i++) {
    const char *name = mirs_eval_output_name(ref, i);
    int j = 0;
    while (j < n && strcmp(mirs_eval_output_name(r, j), name) != 0)
      j++;
    if (j == n) {
      snprintf(why, cap, "no output %s", name);
      return false;
    }
    int64_t na, nb;
    const double *a = mirs_eval_output_values(ref, i, &na);
    const double *b = mirs_eval_output_values(r, j, &nb);
    if (na != nb) {
      snprintf(why, cap, "output %s: %lld elements, the program has %lld", name, (long long)nb,
               (long long)na);
      return false;
    }
    for (int64_t k = 0; k < na; k++)
      if (!(fabs(a[k] - b[k]) <= 1e-9 * fmax(1.0, fabs(a[k])))) {
        snprintf(why, cap, "output %s element %lld: %.17g, the program %.17g", name, (long long)k,
                 b[k], a[k]);
        return false;
      }
  }
  return true;
}

START_TEST(test_example_results_eval_equal) {
  char path[256], why[256];
  snprintf(path, sizeof path, "examples/%s.graph", EXAMPLES[_i].name);
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "float_check_top", "0"), MIRS_OK);
  if (EXAMPLES[_i].budget)
    ck_assert_int_eq(mirs_option_set(ctx, "op_budget", "0"), MIRS_OK);
  mirs_graph *p = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(path), &p) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  mirs_search *s = NULL;
  ck_assert_msg(mirs_search_create(ctx, p, &s) == MIRS_OK, "%s", mirs_last_error(ctx));
  ck_assert_msg(mirs_search_run(s) == MIRS_OK, "%s", mirs_last_error(ctx));
  mirs_search_stats st;
  ck_assert_int_eq(mirs_search_get_stats(s, &st), MIRS_OK);
  ck_assert_int_eq(st.complete, 1);
  int n = mirs_search_num_results(s);
  ck_assert_int_gt(n, 0);
  /* The best graph is one fused kernel on every example. */
  ck_assert_int_eq(mirs_search_result_kernels(s, 0), 1);

  mirs_eval_result *ref[2];
  for (int k = 0; k < 2; k++)
    ck_assert_int_eq(mirs_graph_eval(p, SEEDS[k], &ref[k]), MIRS_OK);
  for (int i = 0; i < n; i++) {
    const mirs_graph *r = mirs_search_result(s, i);
    ck_assert_ptr_nonnull(r);
    for (int k = 0; k < 2; k++) {
      mirs_eval_result *e = NULL;
      ck_assert_msg(mirs_graph_eval(r, SEEDS[k], &e) == MIRS_OK, "%s result %d: %s",
                    EXAMPLES[_i].name, i, mirs_last_error(ctx));
      bool eq = outputs_equal(ref[k], e, why, sizeof why);
      ck_assert_msg(eq, "%s: result %d (%016llx) differs from the program (seed %llu): %s",
                    EXAMPLES[_i].name, i, (unsigned long long)mirs_search_result_hash(s, i),
                    (unsigned long long)SEEDS[k], why);
      mirs_eval_result_destroy(e);
    }
  }
  for (int k = 0; k < 2; k++)
    mirs_eval_result_destroy(ref[k]);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
}
END_TEST

/* The test suite. */
static Suite *suite(void) {
  Suite *s = suite_create("examples");
  TCase *tc = tcase_create("examples");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_example_results_eval_equal, 0, NEXAMPLES);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  return tu_run(suite());
}
