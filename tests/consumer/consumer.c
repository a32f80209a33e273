/* SPDX-License-Identifier: MIT */
/* tests/consumer/consumer.c - a toy embedding compiler: builds a program
 * through the API (no file), evaluates it, parses the same program from
 * text, and checks that both agree and that versions match.  Compiled
 * against the *installed* library with pkg-config by tests/embedded.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mirsearch.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    mirs_status s_ = (call);                                                         \
    if (s_ != MIRS_OK) {                                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, mirs_status_name(s_),            \
              mirs_last_error(ctx));                                                 \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(void) {
  if (mirs_version() != MIRS_VERSION) {
    fprintf(stderr, "header %s vs library %s\n", MIRS_VERSION_STRING, mirs_version_string());
    return 1;
  }
  mirs_context *ctx;
  if (mirs_context_create(&ctx) != MIRS_OK)
    return 1;
  mirs_graph *g;
  CHECK(mirs_graph_create(ctx, "lora", &g));
  int64_t xd[2] = {4, 8}, wd[2] = {8, 16}, ad[2] = {8, 2}, bd[2] = {2, 16};
  mirs_tensor X, W, A, B, XW, XA, XAB, O;
  CHECK(mirs_graph_add_input(g, "X", MIRS_F16, 2, xd, &X));
  CHECK(mirs_graph_add_input(g, "W", MIRS_F16, 2, wd, &W));
  CHECK(mirs_graph_add_input(g, "A", MIRS_F16, 2, ad, &A));
  CHECK(mirs_graph_add_input(g, "B", MIRS_F16, 2, bd, &B));
  CHECK(mirs_graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, (mirs_tensor[]){X, W}, &XW));
  CHECK(mirs_graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, (mirs_tensor[]){X, A}, &XA));
  CHECK(mirs_graph_add_op(g, NULL, MIRS_OP_MATMUL, 2, (mirs_tensor[]){XA, B}, &XAB));
  CHECK(mirs_graph_add_op(g, "O", MIRS_OP_ADD, 2, (mirs_tensor[]){XW, XAB}, &O));
  CHECK(mirs_graph_mark_output(g, O));

  const char *text = "program lora\n"
                     "input X : f16[4, 8]\ninput W : f16[8, 16]\n"
                     "input A : f16[8, 2]\ninput B : f16[2, 16]\n"
                     "XA = matmul(X, A)\nXW = matmul(X, W)\n"
                     "O = add(XW, matmul_free_name)\noutput O\n";
  mirs_graph *bad = NULL;
  if (mirs_graph_parse_string(ctx, text, strlen(text), "embedded.graph", &bad) == MIRS_OK ||
      bad || mirs_diag_count(ctx) == 0) {
    fprintf(stderr, "a bad program parsed\n");
    return 1;
  }
  const char *good = "program lora\n"
                     "input X : f16[4, 8]\ninput W : f16[8, 16]\n"
                     "input A : f16[8, 2]\ninput B : f16[2, 16]\n"
                     "XA = matmul(X, A)\nXW = matmul(X, W)\nXAB = matmul(XA, B)\n"
                     "O = add(XW, XAB)\noutput O\n";
  mirs_graph *p;
  CHECK(mirs_graph_parse_string(ctx, good, strlen(good), "embedded.graph", &p));
  if (mirs_graph_hash(p) != mirs_graph_hash(g)) {
    fprintf(stderr, "API-built and parsed programs hash differently\n");
    return 1;
  }
  mirs_eval_result *r1, *r2;
  CHECK(mirs_graph_eval(g, 7, &r1));
  CHECK(mirs_graph_eval(p, 7, &r2));
  int64_t n1, n2;
  const double *v1 = mirs_eval_output_values(r1, 0, &n1), *v2 = mirs_eval_output_values(r2, 0, &n2);
  if (n1 != 64 || n2 != 64)
    return 1;
  for (int64_t i = 0; i < n1; i++)
    if (fabs(v1[i] - v2[i]) > 1e-12)
      return 1;
  mirs_eval_result_destroy(r1);
  mirs_eval_result_destroy(r2);
  mirs_graph_destroy(p);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  printf("embedded consumer OK (mirsearch %s)\n", mirs_version_string());
  return 0;
}
