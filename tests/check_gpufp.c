/* SPDX-License-Identifier: MIT */
/* tests/check_gpufp.c - the GPU fingerprint backend without a GPU: its
 * kernels built as host C++ (tests/libgpufp-host.so, the same gpufp.cu
 * with MIRS_GPUFP_HOST and cuRAND's own device header), driven through the
 * library's real adapter (src/gpu/gpufp.c), must give values bit-identical
 * to the CPU backend's: every tensor, every trial, on every example (small
 * and published shapes), every committed uGraph and the code generator's
 * test kernels, plus what their outputs hide (block max and accumulator
 * state, the mask's sentinel through every op that may take it).
 * Skipped (77) where the host module was not built (no CUDA toolkit). */
#include "config.h"

#include <dirent.h>
#include <unistd.h>

#include "graph/graph.h"
#include "testutil.h"
#include "verify/fingerprint.h"

/* Path of the host module, or NULL when it is not there. */
static const char *host_module(void) {
  static char buf[4096];
  const char *top = getenv("top_builddir");
  snprintf(buf, sizeof buf, "%s/tests/libgpufp-host.so", top ? top : ".");
  return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Every tensor of g in stores a and b, all trials, value by value. */
static void expect_same_values(mirs__fp_store *a, mirs__fp_store *b, const mirs_graph *g,
                               const char *what) {
  for (int32_t t = 0; t < g->nt; t++) {
    int64_t n = a->t[t].numel;
    ck_assert_int_eq(n, b->t[t].numel);
    mirs__fp_pair *va = malloc(sizeof *va * (size_t)(n + 1));
    mirs__fp_pair *vb = malloc(sizeof *vb * (size_t)(n + 1));
    ck_assert_ptr_nonnull(va);
    ck_assert_ptr_nonnull(vb);
    for (int j = 0; j < a->trials; j++) {
      ck_assert_int_eq(mirs__fp_read(a, t, j, 0, n, va), MIRS_OK);
      ck_assert_int_eq(mirs__fp_read(b, t, j, 0, n, vb), MIRS_OK);
      for (int64_t e = 0; e < n; e++)
        if (va[e].a != vb[e].a || va[e].b != vb[e].b)
          ck_abort_msg("%s: tensor %s trial %d element %lld: cpu (%u, %u), gpu (%u, %u)", what,
                       g->t[t].name, j, (long long)e, va[e].a, va[e].b, vb[e].a, vb[e].b);
    }
    uint64_t da, db;
    ck_assert_int_eq(mirs__fp_digest(a, t, &da), MIRS_OK);
    ck_assert_int_eq(mirs__fp_digest(b, t, &db), MIRS_OK);
    ck_assert_msg(da == db, "%s: tensor %s: digests differ", what, g->t[t].name);
    bool eq = false;
    ck_assert_int_eq(mirs__fp_tensor_equal(b, g, t, b, g, t, &eq), MIRS_OK);
    ck_assert_msg(eq, "%s: tensor %s differs from itself on the GPU backend", what, g->t[t].name);
    free(va);
    free(vb);
  }
}

/* Fingerprint g on the CPU and on the host-built GPU kernels; compare. */
static void check_graph(mirs_context *ctx, const mirs_graph *g, int trials, const char *what) {
  mirs__fp_store *cpu = NULL, *gpu = NULL;
  ck_assert_int_eq(mirs__fp_store_new(ctx, &mirs__fp_cpu_backend, trials, 7, &cpu), MIRS_OK);
  mirs_status st = mirs__fp_store_new(ctx, &mirs__fp_gpu_backend, trials, 7, &gpu);
  ck_assert_msg(st == MIRS_OK, "%s: %s", what, mirs_last_error(ctx));
  ck_assert_msg(mirs__fp_compute_graph(cpu, g) == MIRS_OK, "%s: %s", what, mirs_last_error(ctx));
  ck_assert_msg(mirs__fp_compute_graph(gpu, g) == MIRS_OK, "%s: %s", what, mirs_last_error(ctx));
  expect_same_values(cpu, gpu, g, what);
  mirs__fp_store_free(cpu);
  mirs__fp_store_free(gpu);
}

/* Parse a file of the source tree. */
static mirs_graph *load(mirs_context *ctx, const char *rel) {
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_file(ctx, tu_src(rel), &g) == MIRS_OK, "%s: %s", rel,
                mirs_last_error(ctx));
  return g;
}

/* Every example: the .graph and .ugraph files of examples/, the .ugraph
 * files of examples/best/, and the code generator's test kernels in
 * tests/codegen/ (views, reduction trees, chained attention, mixed
 * precision) (paths relative to the source tree, sorted), found when the
 * suite is built so that a new example is covered unlisted. */
#define MAX_EXAMPLES 256
static char *examples[MAX_EXAMPLES];
static int nexamples;

/* Order of two example paths. */
static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the .graph and .ugraph files of source-tree folder dir. */
static void find_examples(const char *dir) {
  DIR *d = opendir(tu_src(dir));
  if (!d) {
    fprintf(stderr, "check_gpufp: cannot list %s\n", tu_src(dir));
    exit(EXIT_FAILURE);
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    bool graph = n > 6 && strcmp(e->d_name + n - 6, ".graph") == 0;
    bool ugraph = n > 7 && strcmp(e->d_name + n - 7, ".ugraph") == 0;
    if (!graph && !ugraph)
      continue;
    if (nexamples == MAX_EXAMPLES) {
      fprintf(stderr, "check_gpufp: more than %d examples\n", MAX_EXAMPLES);
      exit(EXIT_FAILURE);
    }
    size_t len = strlen(dir) + n + 2;
    examples[nexamples] = malloc(len);
    if (!examples[nexamples])
      exit(EXIT_FAILURE);
    snprintf(examples[nexamples++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
}

/* Every example's program and every committed uGraph, every tensor. */
START_TEST(test_examples) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  const char *rel = examples[_i];
  mirs_graph *g = load(ctx, rel);
  /* Published shapes are large for a host loop (inputs of up to 2^27
   * elements, 30 s for gelu_mlp): one trial there, three (three trial
   * keys) at the small shapes. */
  int64_t numel = 0;
  for (int32_t t = 0; t < g->nt; t++)
    numel += mirs__shape_numel(&g->t[t].shape);
  check_graph(ctx, g, numel > (1 << 17) ? 1 : 3, rel);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Ops the examples lack: every PRF, square, sub, div, sum, rms_norm and
 * exp-dependent values through them, with broadcasting. */
START_TEST(test_ops) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  static const char text[] = "input X : f32[2, 3, 5]\n"
                             "input Y : f32[2, 1, 5]\n"
                             "A = sqrt(X)\n"
                             "B = silu(A)\n"
                             "C = gelu(B)\n"
                             "D = relu(C)\n"
                             "E = square(D)\n"
                             "F = sub(E, Y)\n"
                             "G = div(F, Y)\n"
                             "H = exp(G)\n"
                             "I = sum(H, dim=1)\n"
                             "J = div(H, I)\n"
                             "K = rms_norm(J)\n"
                             "L = mul(K, X)\n"
                             "M = rms_norm(X)\n"
                             "N = add(L, M)\n"
                             "output N\n";
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, sizeof text - 1, "ops", &g) == MIRS_OK, "%s",
                mirs_last_error(ctx));
  check_graph(ctx, g, 4, "ops");
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Parse text and compare its fingerprints on both backends. */
static void check_text(const char *text, int trials, const char *what) {
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, text, strlen(text), what, &g) == MIRS_OK, "%s: %s",
                what, mirs_last_error(ctx));
  check_graph(ctx, g, trials, what);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}

/* causal_mask's -inf through every op that may take it, at kernel level:
 * rows the mask empties (m > n) give a -inf max, exp-dependent masked
 * values keep their sentinel, the layout ops move it. */
START_TEST(test_masked_ops) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  check_text("input X : f32[2, 6, 4]\n"
             "input Y : f32[2, 6, 4]\n"
             "input Z : f32[2, 4, 6]\n"
             "M = causal_mask(X)\n"
             "T = transpose(Z)\n"
             "E = exp(T)\n"
             "F = causal_mask(E)\n"
             "A = add(M, Y)\n"
             "B = add(F, E)\n"
             "C = add(A, 2)\n"
             "D = mul(C, 3)\n"
             "G = div(D, 5)\n"
             "H = max(G, dim=2)\n"
             "K = sub(G, H)\n"
             "L = exp(K)\n"
             "O = sum(L, dim=2)\n"
             "N = max(B, dim=1)\n"
             "P = permute(G, dims=[2, 0, 1])\n"
             "R = reshape(P, shape=[4, 12])\n"
             "S = slice(G, dim=1, start=1, len=3)\n"
             "U = transpose(S)\n"
             "output O, N, R, U, H\n",
             3, "masked");
}
END_TEST

/* finite - (-inf) = +inf has no fingerprint: both backends refuse the op
 * that meets it (the static analysis admits masked - masked), at kernel
 * level and inside a custom kernel, and the GPU store then goes on. */
static const char *const sub_inf[] = {
    "input X : f32[4, 4]\nM = causal_mask(X)\nT = transpose(M)\nS = sub(M, T)\noutput S\n",
    "ugraph inf\ninput X : f32[4, 4]\n"
    "Y = custom(grid=[1, 1, 1], block=[128, 1, 1], forloop=1) {\n"
    "  x = input(X, imap=[-1, -1, -1], fmap=-1)\n  m = causal_mask(x)\n  t = transpose(m)\n"
    "  s = sub(m, t)\n  e = exp(s)\n  a = accum(e)\n  output(a, omap=[-1, -1, -1])\n}\n"
    "output Y\n"};
START_TEST(test_masked_sub_refused) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = NULL, *ok = NULL;
  ck_assert_msg(mirs_graph_parse_string(ctx, sub_inf[_i], strlen(sub_inf[_i]), "inf", &g) ==
                    MIRS_OK,
                "%s", mirs_last_error(ctx));
  static const char fine[] = "input X : f32[4, 4]\nM = causal_mask(X)\nE = exp(M)\noutput E\n";
  ck_assert_int_eq(mirs_graph_parse_string(ctx, fine, sizeof fine - 1, "fine", &ok), MIRS_OK);
  const mirs__fp_backend *b[2] = {&mirs__fp_cpu_backend, &mirs__fp_gpu_backend};
  uint64_t digest[2];
  for (int i = 0; i < 2; i++) {
    mirs__fp_store *s = NULL;
    ck_assert_int_eq(mirs__fp_store_new(ctx, b[i], 2, 5, &s), MIRS_OK);
    ck_assert_int_eq(mirs__fp_compute_graph(s, g), MIRS_UNSUPPORTED);
    ck_assert_msg(strstr(mirs_last_error(ctx), "+inf") != NULL, "%s", mirs_last_error(ctx));
    ck_assert_int_eq(mirs__fp_compute_graph(s, ok), MIRS_OK);
    ck_assert_int_eq(mirs__fp_output_digest(s, ok, &digest[i]), MIRS_OK);
    mirs__fp_store_free(s);
  }
  ck_assert(digest[0] == digest[1]);
  mirs_graph_destroy(g);
  mirs_graph_destroy(ok);
  mirs_context_destroy(ctx);
}
END_TEST

/* Block state the examples' outputs do not show (softmax cancels the
 * choice of max): a raw accum_online accumulator (it depends on the
 * final running max), accum_max of masked tiles over the loop, a block
 * max and a causal_mask placed by two grid dims and the loop; and the
 * norms with eps at both levels. */
START_TEST(test_block_state) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  check_text("ugraph state\n"
             "input Q : f16[2, 64, 16]\n"
             "input K : f16[2, 16, 64]\n"
             "input V : f16[2, 64, 16]\n"
             "A, X, W = custom(grid=[2, 4, 1], block=[128, 1, 1], forloop=4) {\n"
             "  q = input(Q, imap=[0, 1, -1], fmap=-1)\n"
             "  k = input(K, imap=[0, -1, -1], fmap=2)\n"
             "  v = input(V, imap=[0, -1, -1], fmap=1)\n"
             "  s = matmul(q, k)\n"
             "  w = causal_mask(s)\n"
             "  m = max(w, dim=2)\n"
             "  c = sub(w, m)\n"
             "  e = exp(c, fused=1)\n"
             "  y = matmul(e, v)\n"
             "  a = accum_online(y, m)\n"
             "  x = accum_max(w, dim=2)\n"
             "  n = accum_max(m, dim=2)\n"
             "  output(a, omap=[0, 1, -1])\n"
             "  output(x, omap=[0, 1, -1])\n"
             "  output(n, omap=[0, 1, -1])\n"
             "}\n"
             "output A, X, W\n",
             3, "online");
  check_text("ugraph norms\n"
             "input X : f16[4, 256]\n"
             "input Y : f16[4, 256]\n"
             "N = layer_norm(X, eps=0.001)\n"
             "R = rms_norm(Y, eps=1e-6)\n"
             "M = mean(X, dim=1)\n"
             "O, P = custom(grid=[4, 1, 1], block=[128, 1, 1], forloop=4) {\n"
             "  b0 = input(X, imap=[0, -1, -1], fmap=1)\n"
             "  b1 = layer_norm(b0, eps=0.001)\n"
             "  b2 = mean(b1, dim=1)\n"
             "  b3 = rms_norm(b0, eps=0.25)\n"
             "  b4 = add(b3, b2)\n"
             "  b5 = accum(b4)\n"
             "  b6 = accum_rms(b0, eps=1e-05)\n"
             "  output(b5, omap=[0, -1, -1])\n"
             "  output(b6, omap=[0, -1, -1])\n"
             "}\n"
             "output N, R, M, O, P\n",
             3, "norms");
}
END_TEST

/* A custom kernel whose tiles (all trials, all blocks) pass the tile
 * budget runs its grid in chunks (here 5 blocks, then 3): the same values. */
START_TEST(test_chunked_grid) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  ck_assert_int_eq(mirs_option_set(ctx, "eval_max_elements", "20000"), MIRS_OK);
  mirs_graph *g = load(ctx, "examples/mha_small.ugraph");
  check_graph(ctx, g, 3, "chunked");
  mirs_graph_destroy(g);
  /* A causal mask's frame in chunks after the first (the block of batch
   * i is the chunk's first block plus i). */
  g = load(ctx, "examples/best/causal_attention_small.ugraph");
  check_graph(ctx, g, 3, "chunked mask");
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The search's partial pushes on the GPU backend: trial 0 first, then the
 * rest, and the corner block alone, against the CPU's (a plain and a
 * masked kernel). */
static const char *const partial_files[] = {"examples/mha_small.ugraph",
                                            "examples/best/causal_attention_small.ugraph"};
START_TEST(test_partial_and_corner) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  mirs_graph *g = load(ctx, partial_files[_i]);
  mirs__fp_store *s[2] = {NULL, NULL};
  const mirs__fp_backend *b[2] = {&mirs__fp_cpu_backend, &mirs__fp_gpu_backend};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(mirs__fp_store_new(ctx, b[i], 3, 11, &s[i]), MIRS_OK);
    int32_t op = g->nops - 1;
    ck_assert_int_eq(mirs__fp_push_op_corner(s[i], g, op), MIRS_OK);
  }
  /* The corner: trial 0 of the output's block (0,0,0) tile. */
  int32_t out = g->outputs[0];
  const mirs__bgraph *bg = g->ops[g->nops - 1].bg;
  const mirs__shape *tile = NULL;
  for (int32_t i = 0; i < bg->nops; i++)
    if (bg->ops[i].op == MIRS_OP_OUTPUT)
      tile = &bg->t[bg->ops[i].in[0]].shape;
  ck_assert_ptr_nonnull(tile);
  bool eq = false;
  ck_assert_int_eq(mirs__fp_trial0_corner_equal(s[0], g, out, s[1], g, out, tile, &eq), MIRS_OK);
  ck_assert(eq);
  for (int i = 0; i < 2; i++) {
    mirs__fp_truncate(s[i], out);
    ck_assert_int_eq(mirs__fp_push_op_first(s[i], g, g->nops - 1), MIRS_OK);
  }
  ck_assert_int_eq(mirs__fp_trial0_equal(s[0], g, out, s[1], g, out, &eq), MIRS_OK);
  ck_assert(eq);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(mirs__fp_push_rest(s[i], g, g->nops - 1), MIRS_OK);
  expect_same_values(s[0], s[1], g, "partial");
  ck_assert_int_eq(mirs__fp_tensor_equal(s[0], g, out, s[1], g, out, &eq), MIRS_OK);
  ck_assert(eq);
  for (int i = 0; i < 2; i++)
    mirs__fp_store_free(s[i]);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* Inputs of any name (64-bit subsequences) and trial keys: the values
 * generated by cuRAND's curand_init(K_t, sub, 4e) + curand4 in the module
 * equal mirs__fp_input_value, the contract's mapping on the CPU. */
START_TEST(test_input_keying) {
  if (!host_module())
    return;
  setenv("MIRS_GPUFP_LIB", host_module(), 1);
  mirs_context *ctx = tu_ctx(NULL);
  static const char text[] = "input Q : f32[7, 9]\ninput longer_name_9 : f32[7, 9]\n"
                             "S = add(Q, longer_name_9)\noutput S\n";
  mirs_graph *g = NULL;
  ck_assert_int_eq(mirs_graph_parse_string(ctx, text, sizeof text - 1, "keys", &g), MIRS_OK);
  const uint64_t seeds[] = {0, 1, UINT64_C(0xFFFFFFFFFFFFFFFF), UINT64_C(0x123456789ABCDEF0)};
  for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    mirs__fp_store *s = NULL;
    ck_assert_int_eq(mirs__fp_store_new(ctx, &mirs__fp_gpu_backend, 5, seeds[k], &s), MIRS_OK);
    ck_assert_int_eq(mirs__fp_compute_graph(s, g), MIRS_OK);
    for (int32_t t = 0; t < 2; t++) {
      uint64_t sub = mirs__hash_str(0, g->t[t].name);
      for (int j = 0; j < 5; j++) {
        mirs__fp_pair v[63];
        ck_assert_int_eq(mirs__fp_read(s, t, j, 0, 63, v), MIRS_OK);
        for (int e = 0; e < 63; e++) {
          mirs__fp_pair w = mirs__fp_input_value(mirs__fp_trial_key(seeds[k], j), sub, (uint64_t)e);
          ck_assert_uint_eq(v[e].a, w.a);
          ck_assert_uint_eq(v[e].b, w.b);
        }
      }
    }
    mirs__fp_store_free(s);
  }
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
}
END_TEST

/* The choice of backend: cpu is the CPU; a bad value is refused; gpu
 * with a module that cannot be loaded is MIRS_NO_DEVICE (exit 3) naming
 * it; gpu with the host module is that module. */
START_TEST(test_choose) {
  mirs_context *ctx = tu_ctx(NULL);
  const mirs__fp_backend *b = NULL;
  char name[384];
  ck_assert_int_eq(mirs_option_set(ctx, "verify", "cpu"), MIRS_OK);
  ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_OK);
  ck_assert_ptr_eq(b, &mirs__fp_cpu_backend);
  ck_assert_str_eq(name, "cpu");
  ck_assert_int_eq(mirs_option_set(ctx, "verify", "fast"), MIRS_OK);
  ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_INVALID_ARG);
  ck_assert_int_eq(mirs_option_set(ctx, "verify", "gpu"), MIRS_OK);
#ifdef HAVE_CUDA
  setenv("MIRS_GPUFP_LIB", "/nonexistent/libmirsearch-gpufp.so", 1);
  mirs_status st = mirs__fp_backend_choose(ctx, &b, name, sizeof name);
  /* (the installed or build-tree module may still load: then no device) */
  ck_assert_msg(st == MIRS_NO_DEVICE || st == MIRS_OK, "%s", mirs_last_error(ctx));
  /* A library that is not the module: refused, naming the missing entry. */
  setenv("MIRS_GPUFP_LIB", "libm.so.6", 1);
  ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_NO_DEVICE);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "mirs_gpufp_abi_get"));
  if (host_module()) {
    setenv("MIRS_GPUFP_LIB", host_module(), 1);
    ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_OK);
    ck_assert_ptr_eq(b, &mirs__fp_gpu_backend);
    ck_assert_msg(strstr(name, "host emulation") != NULL, "%s", name);
  }
#else
  ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(mirs_last_error(ctx), "without CUDA"));
  ck_assert_int_eq(mirs_option_set(ctx, "verify", "auto"), MIRS_OK);
  ck_assert_int_eq(mirs__fp_backend_choose(ctx, &b, name, sizeof name), MIRS_OK);
  ck_assert_ptr_eq(b, &mirs__fp_cpu_backend);
#endif
  mirs_context_destroy(ctx);
}
END_TEST

static Suite *gpufp_suite(void) {
  Suite *s = suite_create("gpufp");
  TCase *ex = tcase_create("examples");
  tcase_set_timeout(ex, 600);
  tcase_add_loop_test(ex, test_examples, 0, nexamples);
  suite_add_tcase(s, ex);
  TCase *tc = tcase_create("host");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_ops);
  tcase_add_test(tc, test_masked_ops);
  tcase_add_loop_test(tc, test_masked_sub_refused, 0, (int)(sizeof sub_inf / sizeof *sub_inf));
  tcase_add_test(tc, test_block_state);
  tcase_add_test(tc, test_chunked_grid);
  tcase_add_loop_test(tc, test_partial_and_corner, 0,
                      (int)(sizeof partial_files / sizeof *partial_files));
  tcase_add_test(tc, test_input_keying);
  tcase_add_test(tc, test_choose);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  find_examples("examples");
  find_examples("examples/best");
  find_examples("tests/codegen");
  qsort(examples, (size_t)nexamples, sizeof *examples, by_name);
  /* (a tree without its examples would pass vacuously) */
  if (nexamples < 60) {
    fprintf(stderr, "check_gpufp: only %d examples found under %s\n", nexamples,
            tu_src("examples"));
    return EXIT_FAILURE;
  }
  if (!host_module())
    fprintf(stderr, "check_gpufp: tests/libgpufp-host.so not built (no CUDA toolkit): the "
                    "comparisons are skipped\n");
  int rc = tu_run(gpufp_suite());
  return rc == EXIT_SUCCESS && !host_module() ? 77 : rc;
}
