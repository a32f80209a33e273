/* SPDX-License-Identifier: MIT */
/* tests/tiny_programs.h - tiny programs the search tests share (each
 * searched to completion in well under a second) and their helpers;
 * include after testutil.h. */
#ifndef MIRS_TESTS_TINY_PROGRAMS_H
#define MIRS_TESTS_TINY_PROGRAMS_H

/* Y = exp(X) + matmul(X, W) at a tiny shape. */
static const char *const TINY = "program tiny\n"
                                "input X : f16[4, 8]\n"
                                "input W : f16[8, 8]\n"
                                "E = exp(X)\n"
                                "M = matmul(X, W)\n"
                                "Y = add(E, M)\n"
                                "output Y\n";

/* A tiny RMSNorm + Linear. */
static const char *const TINY_RMS = "program tiny_rms\n"
                                    "input X : f16[2, 16]\n"
                                    "input W : f16[16, 8]\n"
                                    "D = rms_norm(X)\n"
                                    "O = matmul(D, W)\n"
                                    "output O\n";

/* A tiny softmax over the last dim with a batch dim, then a product:
 * labels (batch, row, col), sums over col and the contracted dim. */
static const char *const TINY_SOFTMAX = "program tiny_softmax\n"
                                        "input X : f16[2, 4, 8]\n"
                                        "input V : f16[2, 8, 4]\n"
                                        "E = exp(X)\n"
                                        "S = sum(E, dim=2)\n"
                                        "D = div(E, S)\n"
                                        "O = matmul(D, V)\n"
                                        "output O\n";

/* Parse text into a program on ctx. */
static inline mirs_graph *parse(mirs_context *ctx, const char *text) {
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, strlen(text), "test.graph", &g), MIRS_OK);
  return g;
}

/* Set options given as name, value pairs (NULL-terminated). */
static inline void set_opts(mirs_context *ctx, const char *const *kv) {
  for (; kv && kv[0]; kv += 2)
    ck_assert_msg(mirs_option_set(ctx, kv[0], kv[1]) == MIRS_OK, "%s=%s: %s", kv[0], kv[1],
                  mirs_last_error(ctx));
}

#endif
