/* SPDX-License-Identifier: MIT */
/* tests/check_layout.c - the layout operators reshape and permute, and
 * rms_norm's eps: parse errors with their positions, the canonical round
 * trip, the builder API, the float64 interpreter against values computed
 * here by hand from the inputs, fingerprints (equivalent layouts verify
 * equal, different permutations do not), and the generated code run on
 * the host: reshapes and permutes as strided views read by predefined
 * and custom kernels (16-byte cp.async where the view's last dim is
 * contiguous), producers storing in place of a permuted view a reshape
 * cannot read, copy kernels where no view is possible, and kernel-level
 * transposes as views (read by predefined and custom kernels, stored
 * into by a producer). */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "codegen/codegen.h"
#include "graph/graph.h"
#include "verify/fingerprint.h"

static void setup(void) {
  tu_scratch_make("layout");
}

static void teardown(void) {
  tu_scratch_remove();
}

START_TEST(test_parse_errors_have_positions) {
  static const char text[] = "program e\n"
                             "input X : f32[2, 3, 4]\n"
                             "A = reshape(X, shape=[5, 4])\n"
                             "B = reshape(X, shape=[-1, 2, -1])\n"
                             "C = reshape(X, shape=[0, 24])\n"
                             "D = permute(X, dims=[0, 1])\n"
                             "E = permute(X, dims=[0, 3, 1])\n"
                             "F = permute(X, dims=[0, 2, -1])\n"
                             "G = reshape(X, shape=[-1, 5])\n"
                             "H = reshape(X)\n"
                             "I = permute(X, dims=2)\n"
                             "J = reshape(X, shape=[24], dim=1)\n"
                             "K = reshape(X, shape=[])\n"
                             "L = reshape(X, X, shape=[24])\n"
                             "M = rms_norm(X, eps=2)\n"
                             "N = permute(X, shape=[0, 1, 2])\n"
                             "output X\n";
  static const char *const want[] = {
      ":3:22: error: reshape: element count mismatch: [2, 3, 4] has 24 elements, shape=[5, 4] has 20",
      ":4:30: error: reshape: shape= may hold only one -1",
      ":5:23: error: reshape: shape= entry 0 is not a dimension",
      ":6:21: error: permute: dims= has 2 entries, but [2, 3, 4] has rank 3",
      ":7:25: error: permute: dims= entry 3 is out of range for rank 3 (valid: -3 to 2)",
      ":8:28: error: permute: dims= is not a permutation: dim 2 appears twice",
      ":9:22: error: reshape: cannot infer the -1 of shape= for [2, 3, 4]",
      ":10:14: error: 'reshape' requires shape=[...]",
      ":11:21: error: dims= takes a list of integers",
      ":12:28: error: 'reshape' takes no dim= argument",
      ":13:22: error: shape= needs 1 to 6 entries, got 0",
      ":14:16: error: 'reshape' takes 1 argument, got 2",
      ":15:21: error: eps= must be a number in [0, 1)",
      ":16:16: error: unknown keyword argument 'shape' for 'permute'",
  };
  tu_assert_check_errors(text, want, sizeof want / sizeof want[0]);
}
END_TEST

START_TEST(test_round_trip) {
  const char *f = tu_put("rt.graph", "program p\n"
                                  "input X : f32[2, 3, 4]\n"
                                  "R = reshape(X, shape=[6, -1])\n"
                                  "P = permute(X, dims=[2, 0, -2])\n"
                                  "N = rms_norm(X, eps=1e-6)\n"
                                  "Z = rms_norm(X)\n"
                                  "output R, P, N, Z\n");
  static const char *const want[] = {
      "R = reshape(X, shape=[6, 4])\n", "P = permute(X, dims=[2, 0, 1])\n",
      "N = rms_norm(X, eps=1e-06)\n", "Z = rms_norm(X)\n" /* eps 0 is not written */
  };
  tu_assert_round_trip(f, want, sizeof want / sizeof want[0]);
  /* `show` writes the attributes; the reshape of an output is a kernel. */
  run r;
  tu_cli_ok(&r, "show", f, NULL);
  static const char *const shown[] = {"reshape(X, shape=[6, 4]) -> R", "permute(X, dims=[2, 0, 1]) -> P",
                                      "rms_norm(X, eps=1e-06) -> N", "program p: 4 kernels"};
  tu_assert_contains(r.out, shown, sizeof shown / sizeof shown[0]);
  run_free(&r);
}
END_TEST

START_TEST(test_builder_api) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_create(ctx, "api", &g), MIRS_OK);
  int64_t xd[] = {2, 3, 4};
  mirs_tensor x, r, p, bad;
  ck_assert_int_eq(mirs_graph_add_input(g, "X", MIRS_F32, 3, xd, &x), MIRS_OK);
  int64_t rs[] = {-1, 12}, pd[] = {1, 2, 0}, dup[] = {1, 1, 0}, wrong[] = {5, 5};
  ck_assert_int_eq(mirs_graph_add_layout(g, "R", MIRS_OP_RESHAPE, x, 2, rs, &r), MIRS_OK);
  ck_assert_int_eq(mirs_graph_add_layout(g, "P", MIRS_OP_PERMUTE, x, 3, pd, &p), MIRS_OK);
  int64_t dims[MIRS_MAX_DIMS];
  ck_assert_int_eq(mirs_tensor_shape(g, r, dims), 2);
  ck_assert(dims[0] == 2 && dims[1] == 12);
  ck_assert_int_eq(mirs_tensor_shape(g, p, dims), 3);
  ck_assert(dims[0] == 3 && dims[1] == 4 && dims[2] == 2);
  ck_assert_int_eq(mirs_graph_add_layout(g, NULL, MIRS_OP_PERMUTE, x, 3, dup, &bad), MIRS_SHAPE);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "not a permutation"));
  ck_assert_int_eq(mirs_graph_add_layout(g, NULL, MIRS_OP_RESHAPE, x, 2, wrong, &bad), MIRS_SHAPE);
  ck_assert_int_eq(mirs_graph_add_layout(g, NULL, MIRS_OP_EXP, x, 2, rs, &bad), MIRS_INVALID_ARG);
  /* mirs_graph_add_op cannot make one: the attribute is required. */
  ck_assert_int_eq(mirs_graph_add_op(g, NULL, MIRS_OP_RESHAPE, 1, &x, &bad), MIRS_SHAPE);
  /* The kernel views report the resolved attribute. */
  mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, mirs_tensor_producer(g, r), &kv), MIRS_OK);
  ck_assert_int_eq(kv.op, MIRS_OP_RESHAPE);
  ck_assert_int_eq(kv.num_layout_dims, 2);
  ck_assert(kv.layout_dims[0] == 2 && kv.layout_dims[1] == 12);
  mirs_kernel_view pv = MIRS_KERNEL_VIEW_INIT;
  ck_assert_int_eq(mirs_graph_kernel(g, mirs_tensor_producer(g, p), &pv), MIRS_OK);
  ck_assert_int_eq(pv.num_layout_dims, 3);
  ck_assert(pv.layout_dims[0] == 1 && pv.layout_dims[1] == 2 && pv.layout_dims[2] == 0);
  ck_assert(pv.eps == 0.0);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_interp_by_hand) {
  /* X[a][b][c] of shape [2, 3, 4]; the input value of element e is
   * mirs_input_value(1, "X", e). */
  static const char *const prog = "program p\ninput X : f32[2, 3, 4]\n"
                                  "R = reshape(X, shape=[4, -1, 2])\n"
                                  "P = permute(X, dims=[2, 0, 1])\n"
                                  "Q = permute(X, dims=[1, -1, 0])\n"
                                  "N = rms_norm(X, eps=0.25)\n"
                                  "output R, P, Q, N\n";
  double x[24], r[24], p[24], q[24], nrm[24];
  for (int e = 0; e < 24; e++)
    x[e] = mirs_input_value(1, "X", (uint64_t)e);
  tu_eval_output(prog, "R", r, 24);
  tu_eval_output(prog, "P", p, 24);
  tu_eval_output(prog, "Q", q, 24);
  tu_eval_output(prog, "N", nrm, 24);
  for (int e = 0; e < 24; e++)
    ck_assert(r[e] == x[e]); /* row-major order kept */
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 4; c++) {
        double v = x[(a * 3 + b) * 4 + c];
        ck_assert(p[(c * 2 + a) * 3 + b] == v); /* P[c][a][b], shape [4, 2, 3] */
        ck_assert(q[(b * 4 + c) * 2 + a] == v); /* Q[b][c][a], shape [3, 4, 2] */
      }
  for (int row = 0; row < 6; row++) {
    double ss = 0;
    for (int c = 0; c < 4; c++)
      ss += x[row * 4 + c] * x[row * 4 + c];
    double rms = sqrt(ss / 4 + 0.25);
    for (int c = 0; c < 4; c++)
      ck_assert(fabs(nrm[row * 4 + c] - x[row * 4 + c] / rms) < 1e-12);
  }
}
END_TEST

START_TEST(test_hash_distinguishes_attributes) {
  mirs_context *ctx = tu_ctx(NULL);
  const char *head = "program p\ninput X : f32[2, 3, 4]\n";
  char a[256], b[256], c[256], d[256];
  snprintf(a, sizeof a, "%sP = permute(X, dims=[2, 0, 1])\noutput P\n", head);
  snprintf(b, sizeof b, "%sP = permute(X, dims=[2, 1, 0])\noutput P\n", head);
  snprintf(c, sizeof c, "%sP = reshape(X, shape=[4, 6])\noutput P\n", head);
  snprintf(d, sizeof d, "%sP = reshape(X, shape=[4, -1])\noutput P\n", head);
  mirs_graph *ga = tu_parse(ctx, a), *gb = tu_parse(ctx, b), *gc = tu_parse(ctx, c), *gd = tu_parse(ctx, d);
  ck_assert(mirs_graph_hash(ga) != mirs_graph_hash(gb));
  ck_assert(mirs_graph_hash(gc) == mirs_graph_hash(gd)); /* the -1 is resolved */
  mirs_graph_destroy(ga);
  mirs_graph_destroy(gb);
  mirs_graph_destroy(gc);
  mirs_graph_destroy(gd);
  mirs_context_destroy(ctx);
}
END_TEST

#define X334 "program p\ninput X : f32[3, 3, 4]\n"

START_TEST(test_fingerprints) {
  const char *id = tu_put("id.graph", X334 "E = exp(X)\noutput E\n");
  /* permute(permute(x)) with inverse dims, and reshape there and back, are x. */
  const char *back = tu_put("back.graph", X334 "P = permute(X, dims=[2, 0, 1])\n"
                                          "Q = permute(P, dims=[1, 2, 0])\n"
                                          "R = reshape(Q, shape=[9, 4])\n"
                                          "S = reshape(R, shape=[3, -1, 4])\n"
                                          "E = exp(S)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(id, back), 0);
  /* A permutation that is not the identity, or a reshape that reorders
   * nothing but a permute that does, differ. */
  const char *swap = tu_put("swap.graph", X334 "P = permute(X, dims=[1, 0, 2])\n"
                                          "E = exp(P)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(id, swap), 1);
  const char *other = tu_put("other.graph", X334 "P = permute(X, dims=[1, 0, 2])\n"
                                            "Q = permute(P, dims=[1, 0, 2])\n"
                                            "E = exp(Q)\noutput E\n");
  ck_assert_int_eq(tu_verify_rc(id, other), 0);
  ck_assert_int_eq(tu_verify_rc(swap, other), 1);
  /* permute of the last two dims is transpose. */
  const char *pt = tu_put("pt.graph", X334 "P = permute(X, dims=[0, 2, 1])\noutput P\n");
  const char *tr = tu_put("tr.graph", X334 "P = transpose(X)\noutput P\n");
  ck_assert_int_eq(tu_verify_rc(pt, tr), 0);
}
END_TEST

START_TEST(test_rms_norm_eps_fingerprints) {
  /* rms_norm(x, eps=e) is x / sqrt(mean(x^2) + e): the attribute and the
   * number operand are one field element; eps=0 differs. */
  const char *sp = tu_put("sp.graph", X334 "S = square(X)\nM = mean(S, dim=-1)\n"
                                      "V = add(M, 1e-6)\nD = sqrt(V)\nN = div(X, D)\noutput N\n");
  ck_assert_int_eq(tu_verify_rc(sp, tu_put("n6.graph", X334 "N = rms_norm(X, eps=1e-6)\noutput N\n")), 0);
  ck_assert_int_eq(tu_verify_rc(sp, tu_put("n0.graph", X334 "N = rms_norm(X)\noutput N\n")), 1);
  /* (the GPU backend's layout and eps kernels: tests/check_gpufp.c) */
}
END_TEST

/* Print g into a malloc'd string. */
static char *print_graph(const mirs_graph *g) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(mirs_graph_print(g, f), MIRS_OK);
  fclose(f);
  return text;
}

START_TEST(test_spelled_rms_norm_folds) {
  /* div(X, sqrt(mean(square(X)) + eps)), and PyTorch's X * rsqrt(...)
   * written mul(X, div(1, D)), fold into rms_norm(X, eps); the folded
   * program fingerprints like the spelled one; a norm of another tensor,
   * or one over a dim that is not the last, does not fold. */
  static const char *const forms[] = {
      X334 "S = square(X)\nM = mean(S, dim=2)\nV = add(M, 1e-6)\nD = sqrt(V)\n"
           "N = div(X, D)\noutput N\n",
      X334 "S = mul(X, X)\nM = mean(S, dim=-1)\nV = add(M, 1e-6)\nD = sqrt(V)\n"
           "R = div(1, D)\nN = mul(R, X)\noutput N\n",
      X334 "S = square(X)\nM = mean(S, dim=2)\nD = sqrt(M)\nN = div(X, D)\noutput N\n",
  };
  static const char *const want[] = {"N = rms_norm(X, eps=1e-06)\n", "N = rms_norm(X, eps=1e-06)\n",
                                     "N = rms_norm(X)\n"};
  mirs_context *ctx = tu_ctx(NULL);
  for (int i = 0; i < 3; i++) {
    mirs_graph *g = tu_parse(ctx, forms[i]), *f = NULL;
    ck_assert_int_eq(mirs__graph_fold_norms(g, &f), MIRS_OK);
    ck_assert_ptr_nonnull(f);
    char *text = print_graph(f);
    ck_assert_msg(strstr(text, want[i]), "form %d folded to:\n%s", i, text);
    ck_assert_int_eq(mirs_graph_num_ops(f), 1);
    ck_assert_int_eq(tu_verify_rc(tu_put("spelled.graph", forms[i]), tu_put("folded.graph", text)), 0);
    free(text);
    mirs_graph_destroy(f);
    mirs_graph_destroy(g);
  }
  static const char *const kept[] = {
      "program p\ninput X : f32[3, 4]\ninput Y : f32[3, 4]\nS = square(Y)\n"
      "M = mean(S, dim=1)\nD = sqrt(M)\nN = div(X, D)\noutput N\n",
      "program p\ninput X : f32[4, 4]\nS = square(X)\nM = mean(S, dim=0)\nD = sqrt(M)\n"
      "N = div(X, D)\noutput N\n",
  };
  for (int i = 0; i < 2; i++) {
    mirs_graph *g = tu_parse(ctx, kept[i]), *f = NULL;
    ck_assert_int_eq(mirs__graph_fold_norms(g, &f), MIRS_OK);
    ck_assert_ptr_null(f);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* A program with every codegen case of the layout ops: reshapes and
 * permutes that are views (of a graph input, of an intermediate, of an
 * output's buffer), read at their strides by predefined kernels (E, F,
 * G); an intermediate (F) and a permuted one (G, whose merge Gm no view
 * can express) stored by their producer where their layout op's result
 * lives; copies where a result is an output (R of a shared tensor, Kt
 * moving the last dim: 32x32 tiles through shared memory, Xo keeping it:
 * 16-byte copies) or
 * a reshape cannot view a graph input's permute (Xm). */
static const char *const CG = "program cg\n"
                              "input X : f16[8, 64]\ninput W : f16[64, 64]\n"
                              "Xv = reshape(X, shape=[8, 4, 16])\n"
                              "Xp = permute(Xv, dims=[1, 0, 2])\n"
                              "Q = matmul(X, W)\n"
                              "Q3 = reshape(Q, shape=[8, 4, 16])\n"
                              "Qh = permute(Q3, dims=[1, 0, 2])\n"
                              "Kt = permute(Q3, dims=[1, 2, 0])\n"
                              "E = exp(Qh)\nF = add(E, Xp)\n"
                              "R = reshape(F, shape=[4, 128])\n"
                              "K2 = reshape(Kt, shape=[4, 128])\n"
                              "S = add(R, K2)\n"
                              "Xm = reshape(Xp, shape=[8, 64])\n"
                              "G = exp(Xp)\nGt = permute(G, dims=[1, 0, 2])\n"
                              "Gm = reshape(Gt, shape=[8, 64])\n"
                              "Y = matmul(Gm, W)\nZ = add(Y, Xm)\n"
                              "Xo = permute(Xv, dims=[1, 0, 2])\n"
                              "output S, Kt, R, Z, Xo\n";

/* Every want[0..n) occurs in the generated code cu (naming the missing one). */
static void assert_code_has(const char *cu, const char *const *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(strstr(cu, want[i]), "missing in the generated code: \"%s\"", want[i]);
}

/* Number of occurrences of s in text. */
static int count_of(const char *text, const char *s) {
  int n = 0;
  for (const char *p = strstr(text, s); p; p = strstr(p + 1, s))
    n++;
  return n;
}

/* Generated code cu (entry point entry) compiles warning-free as
 * host C++ (where there is a compiler). */
static void assert_compiles(const char *cu, const char *entry) {
  if (system("c++ --version >/dev/null 2>&1") != 0)
    return;
  char path[700], hdr[700], cmd[3000];
  snprintf(path, sizeof path, "%s/%s.cu", tu_dir, entry);
  snprintf(hdr, sizeof hdr, "%s/mirsearch_emu.h", tu_dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(cu, f);
  fclose(f);
  f = fopen(hdr, "w");
  ck_assert_ptr_nonnull(f);
  fputs(mirs_codegen_emulation_header(), f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "c++ -std=c++14 -O1 -Wall -Wextra -Werror -DMIRS_HOST_EMULATION -I'%s' -c -x c++ "
           "'%s' -o '%s/%s.o' > '%s/log' 2>&1", tu_dir, path, tu_dir, entry, tu_dir);
  ck_assert_msg(system(cmd) == 0, "the generated code does not compile cleanly (%s/log)", tu_dir);
}

/* The generated code of graph text (entry point `entry`) holds every
 * want[0..n), launches `kernels` kernels, as many as the cost model
 * counts, and compiles cleanly as host C++. */
static void assert_codegen(mirs_context *ctx, const char *text, const char *entry,
                           const char *const *want, size_t n, int kernels) {
  mirs_graph *g = tu_parse(ctx, text);
  char *cu = NULL, launch[64];
  ck_assert_int_eq(mirs_codegen_cuda(g, entry, &cu), MIRS_OK);
  assert_code_has(cu, want, n);
  snprintf(launch, sizeof launch, "MIRS_LAUNCH(%s_k", entry); /* (plain, or in MIRS_PDL) */
  ck_assert_int_eq(count_of(cu, launch), kernels);
  mirs_cost c = MIRS_COST_INIT;
  ck_assert_int_eq(mirs_graph_cost(ctx, g, NULL, &c), MIRS_OK);
  ck_assert_int_eq(c.kernels, kernels);
  assert_compiles(cu, entry);
  mirs_free(ctx, cu);
  mirs_graph_destroy(g);
}

START_TEST(test_codegen_views_and_copies) {
  mirs_context *ctx = tu_ctx(NULL);
  /* The workspace holds Q, E, Xm, Gt (G's buffer) and Y (1 KB each at
   * 256-byte steps): no view has one, F is stored in R's (out2). */
  static const char *const want[] = {
      "/* op 0: Xv = reshape(X): a view, no kernel */",
      "/* op 1: Xp = permute(Xv): a view, no kernel */",
      "/* op 3: Q3 = reshape(Q): a view, no kernel */",
      "/* op 4: Qh = permute(Q3): a view, no kernel */",
      "/* op 8: R = reshape(F): a view, no kernel */",
      "/* op 9: K2 = reshape(Kt): a view, no kernel */",
      "/* op 13: Gt = permute(G): a view, no kernel */",
      "/* op 14: Gm = reshape(Gt): a view, no kernel */",
      "kernel 5: permute -> Kt (32x32 tiles through shared memory: reads along dim 1",
      "          tile[j][tx] = in0[si + cf + cl * 64LL];",
      "          out0[so + cf * 8LL + cl] = tile[tx][j];",
      "MIRS_LAUNCH(lay_k5, dim3(4), dim3(256), 0, stream, ",
      "kernel 11: reshape -> Xm (a copy in order of a strided view)",
      "kernel 17: permute -> Xo (16-byte copies",
      "mirs_copy16(out0 + e * 8, in0 + s);",
      /* E reads Qh at Q's strides; G stores at the strides of Gt's buffer */
      "const float x = mirs_ld(in0 + (c0 * 16 + c1 * 64 + c2 * 1));",
      "mirs_st(out0 + (c0 * 16 + c1 * 64 + c2 * 1), v);",
      "MIRS_LAUNCH(lay_k7, dim3(2), dim3(256), 0, stream, ((__half *)((char *)workspace + 1024), "
      "in_X, out2));",
      "MIRS_LAUNCH(lay_k10, dim3(2), dim3(256), 0, stream, (out2, out1, out0));",
      "size_t lay_workspace_bytes(void) { return 5120; }",
  };
  assert_codegen(ctx, CG, "lay", want, sizeof want / sizeof want[0], 10);
  mirs_context_destroy(ctx);
}
END_TEST

/* `mirsearch run --backend=host` of the program and of f32 and bf16
 * variants: every output matches eval within the dtype's tolerance. */
START_TEST(test_host_run) {
  tu_assert_host_runs_by_dtype(CG, "cg");
}
END_TEST

/* good verifies against prog, bad does not, and good runs on the host. */
static void assert_verifies_and_runs(const char *prog, const char *good, const char *bad) {
  ck_assert_int_eq(tu_verify_rc(prog, good), 0);
  ck_assert_int_eq(tu_verify_rc(prog, bad), 1);
  tu_assert_host_run(good);
}

START_TEST(test_rms_norm_eps_codegen) {
  /* rms_norm(x, eps=0.5) as a predefined kernel and inside a custom
   * kernel: the generated code matches eval (an eps this large is far
   * outside the tolerance when left out), the block form verifies against
   * the program and another eps does not. */
  const char *prog = tu_put("r.graph", "program r\ninput X : f32[4, 8]\n"
                                       "N = rms_norm(X, eps=0.5)\noutput N\n");
  static const char *const UG = "ugraph r\ninput X : f32[4, 8]\n"
                                "N = custom(grid=[4, 1, 1], block=[32, 1, 1], forloop=1) {\n"
                                "  b0 = input(X, imap=[0, -1, -1], fmap=-1)\n  b1 = accum(b0)\n"
                                "  b2 = rms_norm(b1, eps=%s)\n  output(b2, omap=[0, -1, -1])\n}\n"
                                "output N\n";
  char text[512];
  snprintf(text, sizeof text, UG, "0.5");
  const char *ug = tu_put("r.ugraph", text);
  snprintf(text, sizeof text, UG, "0.25");
  assert_verifies_and_runs(prog, ug, tu_put("r2.ugraph", text));
  tu_assert_host_run(prog);
}
END_TEST

START_TEST(test_rms_norm_eps_search) {
  /* The search finds rms_norm(X, eps=1e-6) . W in one kernel whose RMS
   * accumulator carries the eps; the best verifies against the program. */
  const char *prog = tu_put("rl.graph", "program rl\ninput X : f16[2, 128]\n"
                                        "input W : f16[128, 256]\n"
                                        "D = rms_norm(X, eps=1e-6)\nO = matmul(D, W)\noutput O\n");
  char out[700], best[700];
  snprintf(out, sizeof out, "--out=%s/rl", tu_dir);
  snprintf(best, sizeof best, "%s/rl/best.ugraph", tu_dir);
  run r;
  tu_cli_ok(&r, "-q", "--threads=2", "--no-cache", "--json", out, prog, NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "\"complete\": true"));
  run_free(&r);
  static const char *const eps[] = {"eps=1e-06)"};
  tu_assert_checks(best, eps, 1);
  ck_assert_int_eq(tu_verify_rc(prog, best), 0);
}
END_TEST

/* Attention over 4 heads of 16 written as a model writes it: Q, K, V
 * [T, d] split into heads by reshape and permute, merged back after. */
static const char *const HEADS =
    "program heads\ninput Q : f16[8, 64]\ninput K : f16[8, 64]\ninput V : f16[8, 64]\n"
    "Q3 = reshape(Q, shape=[8, 4, 16])\nQh = permute(Q3, dims=[1, 0, 2])\n"
    "K3 = reshape(K, shape=[8, 4, 16])\nKt = permute(K3, dims=[1, 2, 0])\n"
    "V3 = reshape(V, shape=[8, 4, 16])\nVh = permute(V3, dims=[1, 0, 2])\n"
    "S = matmul(Qh, Kt)\nE = exp(S)\nD = sum(E, dim=2)\nP = div(E, D)\nO = matmul(P, Vh)\n"
    "Ot = permute(O, dims=[1, 0, 2])\nOm = reshape(Ot, shape=[8, 64])\noutput Om\n";
/* The same in one kernel: grid.x walks the heads, each block loads its
 * head's columns of Q, K and V (imap: dim 1 split by the grid) and stores
 * its [T, 16] slice of the merged result (omap): the head split and merge
 * are the tile maps, no layout op is left.  %s is the softmax's dim. */
static const char *const HEADS_UG =
    "ugraph heads\ninput Q : f16[8, 64]\ninput K : f16[8, 64]\ninput V : f16[8, 64]\n"
    "Om = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=1) {\n"
    "  q = input(Q, imap=[1, -1, -1], fmap=-1)\n  k = input(K, imap=[1, -1, -1], fmap=-1)\n"
    "  kt = transpose(k)\n  v = input(V, imap=[1, -1, -1], fmap=-1)\n"
    "  s = matmul(q, kt)\n  e = exp(s)\n  d = sum(e, dim=%s)\n  p = div(e, d)\n"
    "  o = matmul(p, v)\n  a = accum(o)\n  output(a, omap=[1, -1, -1])\n}\noutput Om\n";

START_TEST(test_heads_in_tile_maps) {
  const char *prog = tu_put("heads.graph", HEADS);
  char text[1024];
  snprintf(text, sizeof text, HEADS_UG, "1");
  const char *ug = tu_put("heads.ugraph", text);
  snprintf(text, sizeof text, HEADS_UG, "0"); /* the softmax over the wrong dim */
  assert_verifies_and_runs(prog, ug, tu_put("heads_bad.ugraph", text));
}
END_TEST

/* Reshapes of a permuted view (Ap: A's heads, strides 16, 64, 1): a
 * split of the contiguous last dim, a split of the strided dim 1 and
 * size-1 dims added are views at the strides PyTorch's view gives; a
 * merge of dims 1 and 2 (not contiguous: 64 != 16) is a copy kernel
 * reading the view in order.  G's split and merge into [4, 128] cannot be
 * stored in place either (undoing it needs G's columns at two strides):
 * a copy.  Every output matches eval on the host. */
static const char *const VS = "program vs\ninput X : f16[8, 64]\nA = exp(X)\n"
                              "A3 = reshape(A, shape=[8, 4, 16])\nAp = permute(A3, dims=[1, 0, 2])\n"
                              "B = reshape(Ap, shape=[4, 8, 4, 4])\n"
                              "C = reshape(Ap, shape=[4, 2, 4, 16])\n"
                              "D = reshape(Ap, shape=[1, 4, 8, 16, 1])\n"
                              "E = reshape(Ap, shape=[4, 128])\n"
                              "Bx = exp(B)\nCx = exp(C)\nDx = exp(D)\nEx = exp(E)\nG = exp(X)\n"
                              "G3 = reshape(G, shape=[8, 4, 16])\nGp = permute(G3, dims=[1, 0, 2])\n"
                              "Gm = reshape(Gp, shape=[4, 128])\nGx = exp(Gm)\n"
                              "output Bx, Cx, Dx, Ex, Gx\n";

START_TEST(test_reshape_view_rules) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const want[] = {
      "/* op 3: B = reshape(Ap): a view, no kernel */",
      "/* op 4: C = reshape(Ap): a view, no kernel */",
      "/* op 5: D = reshape(Ap): a view, no kernel */",
      "kernel 6: reshape -> E (a copy in order of a strided view)",
      "kernel 14: reshape -> Gm (a copy in order of a strided view)",
      "mirs_ld(in0 + (c0 * 16 + c1 * 64 + c2 * 4 + c3 * 1))",
      "mirs_ld(in0 + (c0 * 16 + c1 * 256 + c2 * 64 + c3 * 1))",
      "mirs_ld(in0 + (c1 * 16 + c2 * 64 + c3 * 1))",
  };
  assert_codegen(ctx, VS, "vs", want, sizeof want / sizeof want[0], 9);
  tu_assert_host_run(tu_put("vs.graph", VS));
  mirs_context_destroy(ctx);
}
END_TEST

/* The heads program with its merged result projected (A = Om . W): the
 * µGraph below computes the attention in one custom kernel that reads
 * the head split as views of Q, K, V and whose result O the projection
 * reads through the merge (%s: the outputs). */
static const char *const HV_UG =
    "ugraph hv\ninput Q : f16[8, 64]\ninput K : f16[8, 64]\ninput V : f16[8, 64]\n"
    "input W : f16[64, 64]\n"
    "Q3 = reshape(Q, shape=[8, 4, 16])\nQh = permute(Q3, dims=[1, 0, 2])\n"
    "K3 = reshape(K, shape=[8, 4, 16])\nKt = permute(K3, dims=[1, 2, 0])\n"
    "V3 = reshape(V, shape=[8, 4, 16])\nVh = permute(V3, dims=[1, 0, 2])\n"
    "O = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=1) {\n"
    "  q = input(Qh, imap=[0, -1, -1], fmap=-1)\n  k = input(Kt, imap=[0, -1, -1], fmap=-1)\n"
    "  v = input(Vh, imap=[0, -1, -1], fmap=-1)\n  s = matmul(q, k)\n  e = exp(s)\n"
    "  d = sum(e, dim=2)\n  p = div(e, d)\n  o = matmul(p, v)\n  a = accum(o)\n"
    "  output(a, omap=[0, -1, -1])\n}\n"
    "Ot = permute(O, dims=[1, 0, 2])\nOm = reshape(Ot, shape=[8, 64])\nA = matmul(Om, W)\n"
    "output %s\n";

START_TEST(test_views_in_custom_kernels) {
  mirs_context *ctx = tu_ctx(NULL);
  /* (The program: HEADS, its result projected.) */
  char prog[1200];
  snprintf(prog, sizeof prog, "%.*sinput W : f16[64, 64]\nA = matmul(Om, W)\noutput A\n",
           (int)(strstr(HEADS, "output Om") - HEADS), HEADS);
  char text[2048];
  snprintf(text, sizeof text, HV_UG, "A");
  const char *ug = tu_put("hv.ugraph", text);
  ck_assert_int_eq(tu_verify_rc(tu_put("hv.graph", prog), ug), 0);
  /* Load side: Qh and Vh, whose last dim is contiguous, by 16-byte
   * cp.async from Q's and V's buffers at the heads' strides (head h at
   * 16, row t at 64); Kt, whose last dim is strided, by element loads
   * in memory order (consecutive threads along its contiguous dim 1).
   * Store side: O goes straight into the merged layout (Ot dense in its
   * buffer, the workspace's only tensor), which A reads as Om. */
  static const char *const want[] = {
      "/* op 1: Qh = permute(Q3): a view, no kernel */",
      "/* op 3: Kt = permute(K3): a view, no kernel */",
      "/* op 5: Vh = permute(V3): a view, no kernel */",
      "/* op 7: Ot = permute(O): a view, no kernel */",
      "/* op 8: Om = reshape(Ot): a view, no kernel */",
      "/* q: tile of Qh (cp.async 16 bytes) */",
      "const __half *const g0 = in0 + (long long)blockIdx.x * 16LL + (long long)r0 * 64LL + q0 * 8;",
      "/* v: tile of Vh (cp.async 16 bytes) */",
      "/* k: tile of Kt */",
      "const int c1 = e % 16; /* (contiguous in memory) */",
      "= in1[(c0 + (long long)blockIdx.x * 1) * 16LL + (c1) * 1LL + (c2) * 64LL];",
      "mirs_st(out0 + ((c0 + (long long)blockIdx.x * 1) * 16LL + (c1) * 64LL + (c2) * 1LL), ",
      "MIRS_LAUNCH(hv_k6, dim3(4, 1, 1), dim3(128, 1, 1), ",
      "(in_Q, in_K, in_V, (__half *)((char *)workspace + 0)));",
      "size_t hv_workspace_bytes(void) { return 1024; }",
  };
  assert_codegen(ctx, text, "hv", want, sizeof want / sizeof want[0], 2);
  tu_assert_host_run(ug);
  /* Other outputs.  O too: its buffer is the caller's, dense, so the
   * merge's reshape copies the strided view Ot in order (a kernel).  Om:
   * the attention kernel stores O straight into the caller's buffer in
   * the merged layout (Ot and Om views of it).  Every output matches eval. */
  static const char *const with_o[] = {
      "/* op 7: Ot = permute(O): a view, no kernel */",
      "kernel 8: reshape -> Om (a copy in order of a strided view)",
      "      const long long s = c0 * 16 + c1 * 128 + c2 * 1;\n      out0[e] = in0[s];",
  };
  static const char *const om[] = {
      "/* op 8: Om = reshape(Ot): a view, no kernel */",
      "(in_Q, in_K, in_V, out0));",
      "mirs_st(out0 + ((c0 + (long long)blockIdx.x * 1) * 16LL + (c1) * 64LL + (c2) * 1LL), ",
  };
  static const struct {
    const char *outputs;
    const char *const *want;
    int kernels;
  } cases[] = {{"A, O", with_o, 3}, {"Om", om, 2}};
  for (int i = 0; i < 2; i++) {
    char name[32];
    snprintf(text, sizeof text, HV_UG, cases[i].outputs);
    snprintf(name, sizeof name, "hv_%d.ugraph", i);
    assert_codegen(ctx, text, "hv", cases[i].want, 3, cases[i].kernels);
    tu_assert_host_run(tu_put(name, text));
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* Kernel-level transposes as views (views.c: the permute of the last two
 * dims): Kt, read by a predefined matmul at K's strides swapped; Et, an
 * output, which E's producer stores into transposed; Xt, read by an
 * elementwise kernel; and Xtt, a transpose of the view Xt (X's own
 * strides again). */
static const char *const TP = "program tp\n"
                              "input Q : f16[2, 8, 16]\ninput K : f16[2, 8, 16]\n"
                              "input X : f16[16, 8]\n"
                              "Kt = transpose(K)\nS = matmul(Q, Kt)\nE = exp(S)\n"
                              "Et = transpose(E)\nXt = transpose(X)\nXtt = transpose(Xt)\n"
                              "Y = add(Xtt, X)\nZ = exp(Xt)\noutput Et, Y, Z\n";

START_TEST(test_transpose_views) {
  mirs_context *ctx = tu_ctx(NULL);
  static const char *const want[] = {
      "/* op 0: Kt = transpose(K): a view, no kernel */",
      "/* op 3: Et = transpose(E): a view, no kernel */",
      "/* op 4: Xt = transpose(X): a view, no kernel */",
      "/* op 5: Xtt = transpose(Xt): a view, no kernel */",
      /* S reads Kt as K [2, 8, 16] with its last two strides swapped */
      "const long long ib = c0 * 128 + c2 * 16;",
      "v += mirs_ld(in0 + (ia + p)) * mirs_ld(in1 + (ib + p * 1));",
      /* E is stored straight into Et's buffer (the caller's), transposed */
      "mirs_st(out0 + (c0 * 64 + c1 * 1 + c2 * 8), v);",
      /* Y reads Xtt at X's own strides; Z reads Xt at X's swapped */
      "v = mirs_ld(in0 + (c0 * 8 + c1 * 1)) + mirs_ld(in1 + (c0 * 8 + c1 * 1));",
      "const float x = mirs_ld(in0 + (c0 * 1 + c1 * 8));",
      "(in_Q, in_K, (__half *)((char *)workspace + 0)));",
      "(in_X, in_X, out1));",
  };
  assert_codegen(ctx, TP, "tp", want, sizeof want / sizeof want[0], 4);
  /* The program as written (the benchmark's baseline): transpose kernels. */
  mirs_graph *g = tu_parse(ctx, TP);
  int32_t nviews = 0;
  for (int32_t i = 0; i < g->nops; i++)
    nviews += mirs__codegen_op_is_view(g, false, i);
  ck_assert_int_eq(nviews, 0);
  mirs_graph_destroy(g);
  tu_assert_host_runs_by_dtype(TP, "tp");
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_transpose_view_in_custom_kernel) {
  mirs_context *ctx = tu_ctx(NULL);
  /* Custom kernels reading the transposed view: K's tile by element
   * loads in memory order (Kt's dim 1 is K's contiguous last dim), in a
   * matmul (f16: tensor cores) and an elementwise kernel (f16, f32); each
   * verifies against its program and runs on the host. */
  static const char *const UG =
      "ugraph tk\ninput Q : f16[2, 64, 16]\ninput K : f16[2, 64, 16]\nKt = transpose(K)\n"
      "S = custom(grid=[2, 1, 1], block=[128, 1, 1], forloop=1) {\n"
      "  q = input(Q, imap=[0, -1, -1], fmap=-1)\n  k = input(Kt, imap=[0, -1, -1], fmap=-1)\n"
      "  s = matmul(q, k)\n  a = accum(s)\n  output(a, omap=[0, -1, -1])\n}\noutput S\n";
  static const char *const want_ug[] = {
      "/* op 0: Kt = transpose(K): a view, no kernel */",
      "/* k: tile of Kt */",
      "const int c1 = e % 16; /* (contiguous in memory) */",
      "= in1[(c0 + (long long)blockIdx.x * 1) * 1024LL + (c1) * 1LL + (c2) * 16LL];",
  };
  assert_codegen(ctx, UG, "tk", want_ug, sizeof want_ug / sizeof want_ug[0], 1);
  ck_assert_int_eq(tu_verify_rc(tu_put("tk.graph", "program tk\ninput Q : f16[2, 64, 16]\n"
                                                   "input K : f16[2, 64, 16]\nKt = transpose(K)\n"
                                                   "S = matmul(Q, Kt)\noutput S\n"),
                                tu_put("tk.ugraph", UG)),
                   0);
  tu_assert_host_run(tu_put("tk.ugraph", UG));
  static const char *const EX[] = {
      "program te\ninput K : f16[2, 64, 16]\nKt = transpose(K)\nE = exp(Kt)\noutput E\n",
      "ugraph te\ninput K : f16[2, 64, 16]\nKt = transpose(K)\n"
      "E = custom(grid=[2, 2, 1], block=[128, 1, 1], forloop=1) {\n"
      "  k = input(Kt, imap=[0, 2, -1], fmap=-1)\n  e = exp(k)\n  a = accum(e)\n"
      "  output(a, omap=[0, 2, -1])\n}\noutput E\n"};
  static const char *const dt[] = {"f16", "f32"};
  for (int i = 0; i < 2; i++) {
    char text[2][1024], name[2][32];
    for (int j = 0; j < 2; j++) {
      snprintf(text[j], sizeof text[j], "%s", EX[j]);
      for (char *q = strstr(text[j], "f16"); q; q = strstr(q + 3, "f16"))
        memcpy(q, dt[i], 3);
      snprintf(name[j], sizeof name[j], "te_%s.%s", dt[i], j ? "ugraph" : "graph");
    }
    const char *ug = tu_put(name[1], text[1]);
    ck_assert_int_eq(tu_verify_rc(tu_put(name[0], text[0]), ug), 0);
    tu_assert_host_run(ug);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* A custom kernel reading row b of Xt = transpose(X), X f16[%d, %d]:
 * through the view, each row is a column of X (a sector per element). */
static const char *const CV_UG =
    "ugraph cv\ninput X : f16[%d, %d]\nXt = transpose(X)\n"
    "O = custom(grid=[%d, 1, 1], block=[128, 1, 1], forloop=1) {\n"
    "  x = input(Xt, imap=[0, -1, -1], fmap=-1)\n  e = exp(x)\n  a = accum(e)\n"
    "  output(a, omap=[0, -1, -1])\n}\noutput O\n";

START_TEST(test_copy_or_view) {
  /* Reading the transposed view moves 16x its f16 bytes (a sector per
   * element); a tiled copy kernel first moves 2x (coalesced both ways)
   * and a launch (13.4 MB at H100 rates), then the kernel reads dense.
   * At 64 x 64 (8 KB) the view wins: 1 kernel; at 4096 x 4096 (32 MB)
   * the copy does: 512 MB through the view against 109 MB. */
  mirs_context *ctx = tu_ctx(NULL);
  static const struct {
    int n;
    const char *want;
    int kernels;
    double copy_bytes, kernel_bytes;
  } cases[] = {
      {64, "/* op 0: Xt = transpose(X): a view, no kernel */", 1, 0, 16 * 8192.0 + 8192.0},
      {4096, "kernel 0: transpose -> Xt (32x32 tiles through shared memory: reads along dim 0", 2,
       2 * 33554432.0, 2 * 33554432.0},
  };
  for (int i = 0; i < 2; i++) {
    char text[1024];
    int n = cases[i].n;
    snprintf(text, sizeof text, CV_UG, n, n, n);
    const char *const want[] = {cases[i].want};
    assert_codegen(ctx, text, "cv", want, 1, cases[i].kernels);
    mirs_graph *g = tu_parse(ctx, text);
    mirs_cost c = MIRS_COST_INIT;
    ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 0, NULL, &c), MIRS_OK);
    ck_assert(c.bytes == cases[i].copy_bytes);
    ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 1, NULL, &c), MIRS_OK);
    ck_assert_msg(c.bytes == cases[i].kernel_bytes, "%d: %.0f bytes", n, c.bytes);
    mirs_graph_destroy(g);
  }
  mirs_context_destroy(ctx);
}
END_TEST

/* The same choice at n = 800: the view moves 16 x 1.28 MB = 20.5 MB, the
 * copy 3.84 MB and a launch, in bytes of the device the options select:
 * the H100's 4 us at 3.35 TB/s (13.4 MB: a copy), the H200's at 4.8 TB/s
 * (19.2 MB: the view), a profile file's (0.5 us at 4.8 TB/s: a copy).
 * The generated code and the cost model follow the same choice. */
START_TEST(test_copy_or_view_device) {
  mirs_context *ctx = tu_ctx(NULL);
  char text[1024], path[512];
  tu_tmp(path, sizeof path, "mirs-cv-XXXXXX");
  snprintf(text, sizeof text, CV_UG, 800, 800, 800);
  mirs_graph *g = tu_parse(ctx, text);
  static const char *const copy[] = {"kernel 0: transpose -> Xt (32x32 tiles"};
  static const char *const view[] = {"/* op 0: Xt = transpose(X): a view, no kernel */"};
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  static const char prof[] = "device H200\n  hbm_gbps = 4800\n  tc_f16_tflops = 989.4\n"
                             "  f32_tflops = 67\n  launch_us = 0.5\n  smem_per_block = 232448\n"
                             "  sms = 132\n  l2_bytes = 52428800\n";
  ck_assert_int_eq(write(fd, prof, sizeof prof - 1), (int)(sizeof prof - 1));
  close(fd);
  const struct {
    const char *opt, *value;
    bool view;
  } steps[] = {{NULL, NULL, false},
               {"cost_device", "H200", true},
               {"device_profile", path, false},
               {"device_profile", "", true}};
  for (int i = 0; i < 4; i++) {
    if (steps[i].opt)
      ck_assert_int_eq(mirs_option_set(ctx, steps[i].opt, steps[i].value), MIRS_OK);
    ck_assert_msg(mirs__codegen_is_view(g, 0) == steps[i].view, "step %d", i);
    assert_codegen(ctx, text, "cv", steps[i].view ? view : copy, 1, steps[i].view ? 1 : 2);
    mirs_cost c = MIRS_COST_INIT;
    ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 0, NULL, &c), MIRS_OK);
    ck_assert_int_eq(c.kernels, steps[i].view ? 0 : 1);
  }
  /* A cost asked for another device than the options' chooses by that
   * device: H200 (a view) with the options' H100, H100 (a copy) with the
   * options' H200; and equals the cost with that device selected. */
  static const char *const devs[2][2] = {{"H100", "H200"}, {"H200", "H100"}};
  for (int i = 0; i < 2; i++) {
    bool as_view = strcmp(devs[i][1], "H200") == 0;
    ck_assert_int_eq(mirs_option_set(ctx, "cost_device", devs[i][0]), MIRS_OK);
    mirs_cost k = MIRS_COST_INIT, w = MIRS_COST_INIT, sel = MIRS_COST_INIT;
    ck_assert_int_eq(mirs_graph_kernel_cost(ctx, g, 0, devs[i][1], &k), MIRS_OK);
    ck_assert_msg(k.kernels == !as_view && (k.bytes == 0) == as_view, "%s: %d kernels, %.0f bytes",
                  devs[i][1], k.kernels, k.bytes);
    ck_assert_int_eq(mirs_graph_cost(ctx, g, devs[i][1], &w), MIRS_OK);
    ck_assert_int_eq(w.kernels, as_view ? 1 : 2);
    ck_assert_int_eq(mirs__codegen_is_view(g, 0), !as_view); /* (the options' choice stays) */
    ck_assert_int_eq(mirs_option_set(ctx, "cost_device", devs[i][1]), MIRS_OK);
    ck_assert_int_eq(mirs_graph_cost(ctx, g, NULL, &sel), MIRS_OK);
    ck_assert_msg(w.seconds == sel.seconds, "%s: %g, selected %g", devs[i][1], w.seconds,
                  sel.seconds);
  }
  unlink(path);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

START_TEST(test_causal_mask_through_transpose) {
  /* Causal attention with K stored [b, n, d] and transposed in the kernel
   * (as the decoder example's scores are): the mask's columns trace back
   * through the transpose to K's key tiles, so the flash form is one
   * kernel; it verifies, and a kernel that loads the wrong key tiles
   * does not. */
  static const char *const PROG =
      "program cat\ninput Q : f16[2, 64, 16]\ninput K : f16[2, 64, 16]\ninput V : f16[2, 64, 16]\n"
      "Kt = transpose(K)\nS = matmul(Q, Kt)\nM = causal_mask(S)\nE = exp(M)\n"
      "D = sum(E, dim=2)\nP = div(E, D)\nO = matmul(P, V)\noutput O\n";
  static const char *const UG =
      "ugraph cat\ninput Q : f16[2, 64, 16]\ninput K : f16[2, 64, 16]\ninput V : f16[2, 64, 16]\n"
      "O = custom(grid=[2, 4, 1], block=[128, 1, 1], forloop=%d) {\n"
      "  q = input(Q, imap=[0, 1, -1], fmap=-1)\n  k = input(K, imap=[0, %s], fmap=%s)\n"
      "  kt = transpose(k)\n  v = input(V, imap=[0, %s], fmap=%s)\n  s = matmul(q, kt)\n"
      "  m = causal_mask(s, fused=1)\n  e = exp(m, fused=1)\n  y = matmul(e, v)\n"
      "  a = accum(y)\n  d = accum_sum(e, dim=2)\n  o = div(a, d, fused=1)\n"
      "  output(o, omap=[0, 1, -1])\n}\noutput O\n";
  char text[1200];
  const char *prog = tu_put("cat.graph", PROG);
  snprintf(text, sizeof text, UG, 4, "-1, -1", "1", "-1, -1", "1");
  const char *ug = tu_put("cat.ugraph", text);
  snprintf(text, sizeof text, UG, 1, "1, -1", "-1", "1, -1", "-1"); /* keys of the query tile only */
  assert_verifies_and_runs(prog, ug, tu_put("cat_bad.ugraph", text));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("layout");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_parse_errors_have_positions);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_builder_api);
  tcase_add_test(tc, test_interp_by_hand);
  tcase_add_test(tc, test_hash_distinguishes_attributes);
  tcase_add_test(tc, test_fingerprints);
  tcase_add_test(tc, test_rms_norm_eps_fingerprints);
  tcase_add_test(tc, test_spelled_rms_norm_folds);
  tcase_add_test(tc, test_rms_norm_eps_codegen);
  tcase_add_test(tc, test_rms_norm_eps_search);
  tcase_add_test(tc, test_heads_in_tile_maps);
  tcase_add_test(tc, test_causal_mask_through_transpose);
  tcase_add_test(tc, test_codegen_views_and_copies);
  tcase_add_test(tc, test_views_in_custom_kernels);
  tcase_add_test(tc, test_transpose_views);
  tcase_add_test(tc, test_transpose_view_in_custom_kernel);
  tcase_add_test(tc, test_copy_or_view);
  tcase_add_test(tc, test_reshape_view_rules);
  tcase_add_test(tc, test_host_run);
  suite_add_tcase(s, tc);
  /* (a case of its own: tests/tmpdir.sh runs it with /tmp read-only) */
  TCase *dev = tcase_create("copy_or_view_device");
  tcase_add_checked_fixture(dev, setup, teardown);
  tcase_set_timeout(dev, 120);
  tcase_add_test(dev, test_copy_or_view_device);
  suite_add_tcase(s, dev);
  return s;
}

int main(void) {
  return tu_run(suite());
}
