/* SPDX-License-Identifier: MIT */
/* src/codegen/bench.c - `mirsearch bench`: time a µGraph's generated code on
 * a GPU against the program as written (mirsearch/codegen.h,
 * mirs_codegen_bench).
 *
 * The harness is one CUDA translation unit that #includes two generated
 * sources: the candidate's (entry mirs_bench_cand) and the program's
 * (entry mirs_bench_base, whose simple kernels the baseline reuses for
 * every op but matmul; the generated prelude is guarded, so it appears
 * once).  The baseline runs the program's ops in order: cuBLAS
 * (cublasGemmStridedBatchedEx, f32 accumulation) for each matmul whose
 * batch dims are uniform and whose dtypes cuBLAS takes, the generated
 * kernel otherwise.  The harness runs in two processes: `check` runs
 * each configuration once into outputs poisoned with NaN and writes them
 * back; only when the library has found the candidate's outputs within
 * tolerance of the float64 interpreter does `time` run, so a wrong
 * kernel is never timed (a baseline beyond tolerance, which is the
 * program's own f16 overflow or a bug here, is timed and flagged).  Timing: warm-up runs, then each
 * run between two CUDA events on one stream, preceded (outside the events) by a memset of a buffer
 * twice the L2 size so no run reads what the last one left in L2; the
 * median, p10, p90, min and mean of the runs; optionally the same for a
 * CUDA graph captured from one run.
 *
 * Invariants: no candidate is timed before its outputs passed the check; the
 * inputs are mirs_graph_eval's seeded values (never zeros) rounded to
 * each input's dtype; every CUDA and cuBLAS status in the harness is
 * checked where it is returned; the temporary directory is removed on
 * every path. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/cost.h"
#include "mirsearch/codegen.h"
#include "mirsearch/gpu.h"

#define CAND_ENTRY "mirs_bench_cand"
#define BASE_ENTRY "mirs_bench_base"
/* Why a build without CUDA cannot bench. */
#define NO_CUDA                                                                                \
  "built without CUDA: `bench` needs nvcc and cuBLAS at configure time (./configure "          \
  "--with-cuda=DIR)"

/* C type of a stored element. */
static const char *stype(mirs_dtype t) {
  return t == MIRS_F16 ? "__half" : t == MIRS_BF16 ? "__nv_bfloat16" : "float";
}

/* cuBLAS's name of a storage dtype. */
static const char *cublas_type(mirs_dtype t) {
  return t == MIRS_F16 ? "CUDA_R_16F" : t == MIRS_BF16 ? "CUDA_R_16BF" : "CUDA_R_32F";
}

/* The input of g named name, or -1. */
static int32_t find_input(const mirs_graph *g, const char *name) {
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0 && strcmp(g->t[t].name, name) == 0)
      return t;
  return -1;
}

/* MIRS_SHAPE unless program p has the candidate c's inputs (by name,
 * dtype, shape) and outputs (by position, dtype, shape). */
static mirs_status check_match(const mirs_graph *c, const mirs_graph *p) {
  mirs_context *ctx = c->ctx;
  char d1[128], d2[128];
  int32_t nc = 0, np = 0;
  for (int32_t t = 0; t < c->nt; t++) {
    if (c->t[t].producer >= 0)
      continue;
    nc++;
    int32_t u = find_input(p, c->t[t].name);
    if (u < 0)
      return MIRS_FAIL(ctx, MIRS_SHAPE, "the program has no input '%s' (the candidate's)",
                       c->t[t].name);
    if (c->t[t].dtype != p->t[u].dtype || !mirs__shape_eq(&c->t[t].shape, &p->t[u].shape))
      return MIRS_FAIL(
          ctx, MIRS_SHAPE, "input '%s' is %s%s in the candidate, %s%s in the program", c->t[t].name,
          mirs_dtype_name(c->t[t].dtype), mirs__shape_str(&c->t[t].shape, d1, sizeof d1),
          mirs_dtype_name(p->t[u].dtype), mirs__shape_str(&p->t[u].shape, d2, sizeof d2));
  }
  for (int32_t t = 0; t < p->nt; t++)
    np += p->t[t].producer < 0;
  if (nc != np)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "the program has %d inputs, the candidate %d", (int)np,
                     (int)nc);
  if (c->nout != p->nout)
    return MIRS_FAIL(ctx, MIRS_SHAPE, "the program has %d outputs, the candidate %d", (int)p->nout,
                     (int)c->nout);
  for (int32_t i = 0; i < c->nout; i++) {
    const mirs__ktensor *a = &c->t[c->outputs[i]], *b = &p->t[p->outputs[i]];
    if (a->dtype != b->dtype || !mirs__shape_eq(&a->shape, &b->shape))
      return MIRS_FAIL(ctx, MIRS_SHAPE, "output %d is %s%s in the candidate, %s%s in the program",
                       (int)i + 1, mirs_dtype_name(a->dtype),
                       mirs__shape_str(&a->shape, d1, sizeof d1), mirs_dtype_name(b->dtype),
                       mirs__shape_str(&b->shape, d2, sizeof d2));
  }
  return MIRS_OK;
}

/* ---------------------------------------------------------------- the baseline */

/* Elements of the batch dims of shape s when it holds `batch` matrices of
 * rows x cols each or one broadcast matrix: the batch stride in elements
 * (rows * cols, or 0), or -1 when the batch dims mix both. */
static int64_t batch_stride(const mirs__shape *s, int64_t batch) {
  int64_t rows = s->d[s->ndim - 2], cols = s->d[s->ndim - 1];
  int64_t own = mirs__shape_numel(s) / (rows * cols);
  return own == batch ? rows * cols : own == 1 ? 0 : -1;
}

/* Whether matmul op o of p runs on cuBLAS: uniform batch strides and a
 * dtype combination cublasGemmEx accepts with f32 accumulation. */
static bool on_cublas(const mirs_graph *p, const mirs__kop *o) {
  const mirs__shape *cs = &p->t[o->out[0]].shape;
  int64_t batch = mirs__shape_numel(cs) / (cs->d[cs->ndim - 2] * cs->d[cs->ndim - 1]);
  mirs_dtype a = p->t[o->in[0]].dtype, b = p->t[o->in[1]].dtype, c = p->t[o->out[0]].dtype;
  return p->t[o->in[0]].shape.ndim >= 2 && p->t[o->in[1]].shape.ndim >= 2 &&
         batch_stride(&p->t[o->in[0]].shape, batch) >= 0 &&
         batch_stride(&p->t[o->in[1]].shape, batch) >= 0 && a == b && (c == a || c == MIRS_F32);
}

/* Name of program tensor t's device buffer in the harness. */
static void base_ptr(const mirs_graph *p, int32_t t, char *buf, size_t size) {
  t = mirs__codegen_view_root(p, t); /* (a view reads its root's buffer) */
  if (p->t[t].producer < 0) {
    snprintf(buf, size, "mb_in_%s", p->t[t].name);
    return;
  }
  for (int32_t i = 0; i < p->nout; i++)
    if (p->outputs[i] == t) {
      snprintf(buf, size, "mb_bout%d", (int)i);
      return;
    }
  snprintf(buf, size, "mb_bt%d", (int)t);
}

/* Emit run_base(): the program's ops in order on `stream`. */
static void emit_baseline(const mirs_graph *p, mirs__buf *b) {
  char x[300], y[300], z[300];
  mirs__buf_puts(b,
                 "\n/* The program as written: cuBLAS for matmuls, the generated simple kernels\n"
                 " * for the other ops, in program order. */\n"
                 "static cudaError_t run_base(cudaStream_t stream) {\n"
                 "    cudaError_t err = cudaSuccess;\n"
                 "    if (cublasSetStream(mb_blas, stream) != CUBLAS_STATUS_SUCCESS)\n"
                 "        return cudaErrorUnknown;\n");
  for (int32_t i = 0; i < p->nops; i++) {
    const mirs__kop *o = &p->ops[i];
    base_ptr(p, o->out[0], z, sizeof z);
    mirs__buf_printf(b, "    /* op %d: %s -> %s%s */\n", (int)i, mirs__graph_ops[o->op].name,
                     p->t[o->out[0]].name, mirs__codegen_op_is_view(p, false, i) ? ", a view" : "");
    if (mirs__codegen_op_is_view(p, false, i)) /* (as the generated entry: no kernel) */
      continue;
    if (o->op == MIRS_OP_MATMUL && on_cublas(p, o)) {
      const mirs__shape *as = &p->t[o->in[0]].shape, *cs = &p->t[o->out[0]].shape;
      int64_t m = cs->d[cs->ndim - 2], n = cs->d[cs->ndim - 1], k = as->d[as->ndim - 1];
      int64_t batch = mirs__shape_numel(cs) / (m * n);
      base_ptr(p, o->in[0], x, sizeof x);
      base_ptr(p, o->in[1], y, sizeof y);
      /* Row-major C = A B is column-major C^T = B^T A^T: B first. */
      mirs__buf_printf(
          b,
          "    {\n        const float alpha = 1.0f, beta = 0.0f;\n"
          "        cublasStatus_t st = cublasGemmStridedBatchedEx(mb_blas, CUBLAS_OP_N, "
          "CUBLAS_OP_N, %" PRId64 ", %" PRId64 ", %" PRId64 ", &alpha,\n"
          "            %s, %s, %" PRId64 ", %" PRId64 ", %s, %s, %" PRId64 ", %" PRId64 ", &beta,\n"
          "            %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64
          ", CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);\n"
          "        if (st != CUBLAS_STATUS_SUCCESS)\n"
          "            return cudaErrorUnknown;\n    }\n",
          n, m, k, y, cublas_type(p->t[o->in[1]].dtype), n,
          batch_stride(&p->t[o->in[1]].shape, batch), x, cublas_type(p->t[o->in[0]].dtype), k,
          batch_stride(as, batch), z, cublas_type(p->t[o->out[0]].dtype), n, m * n, batch);
      continue;
    }
    mirs__buf_printf(
        b, "    MIRS_LAUNCH(" BASE_ENTRY "_k%d, dim3(%" PRId64 "), dim3(256), 0, stream, (", (int)i,
        mirs__codegen_stride_blocks(mirs__shape_numel(&p->t[o->out[0]].shape)));
    for (int32_t a = 0; a < o->nin; a++) {
      base_ptr(p, o->in[a], x, sizeof x);
      mirs__buf_printf(b, "%s, ", x);
    }
    mirs__buf_printf(b,
                     "%s));\n    err = cudaGetLastError();\n    if (err != cudaSuccess)\n"
                     "        return err;\n",
                     z);
  }
  /* Outputs that are inputs or listed twice: copies, as the generated entry does. */
  for (int32_t i = 0; i < p->nout; i++) {
    int32_t t = p->outputs[i];
    base_ptr(p, t, x, sizeof x);
    char own[32];
    snprintf(own, sizeof own, "mb_bout%d", (int)i);
    if (strcmp(x, own) == 0)
      continue;
    int64_t n = mirs__shape_numel(&p->t[t].shape);
    mirs__buf_printf(b,
                     "    MIRS_LAUNCH(mirs_copy<%s>, dim3(%" PRId64
                     "), dim3(256), 0, stream, (%s, %s, %" PRId64
                     "LL));\n    err = cudaGetLastError();\n    if (err != cudaSuccess)\n"
                     "        return err;\n",
                     stype(p->t[t].dtype), mirs__codegen_stride_blocks(n), x, own, n);
  }
  mirs__buf_puts(b, "    return err;\n}\n");
}

/* ---------------------------------------------------------------- the harness */

/* Timing and statistics, the same for every harness. */
static const char harness_timing[] =
    "inline void mb_blas_check(cublasStatus_t s, const char *what) {\n"
    "    if (s != CUBLAS_STATUS_SUCCESS) {\n"
    "        fprintf(stderr, \"%s: cuBLAS status %d\\n\", what, (int)s);\n"
    "        exit(3);\n    }\n}\n"
    "typedef cudaError_t (*mb_fn)(cudaStream_t);\n"
    "static int mb_cmp(const void *a, const void *b) {\n"
    "    float x = *(const float *)a, y = *(const float *)b;\n"
    "    return x < y ? -1 : x > y;\n}\n";

/* The timing loop (a second literal: C compilers need support only 4095
 * characters in one). */
static const char harness_time_loop[] =
    "/* One configuration: warm-up, then each run between two events after\n"
    " * a write of the flush buffer (outside the events) that evicts L2. */\n"
    "static void mb_time(FILE *fo, const char *label, mb_fn f, bool graph, cudaStream_t s,\n"
    "                    int reps, int warmup, void *flush, size_t flush_bytes) {\n"
    "    cudaGraphExec_t exec = NULL;\n"
    "    if (graph) {\n"
    "        cudaGraph_t g = NULL;\n"
    "        mirs_h_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "
    "\"cudaStreamBeginCapture\");\n"
    "        cudaError_t e = f(s);\n"
    "        cudaError_t e2 = cudaStreamEndCapture(s, &g);\n"
    "        mirs_h_check(e, label);\n"
    "        mirs_h_check(e2, \"cudaStreamEndCapture\");\n"
    "        mirs_h_check(cudaGraphInstantiate(&exec, g, 0), \"cudaGraphInstantiate\");\n"
    "        mirs_h_check(cudaGraphDestroy(g), \"cudaGraphDestroy\");\n"
    "    }\n"
    "    for (int w = 0; w < warmup; w++)\n"
    "        mirs_h_check(graph ? cudaGraphLaunch(exec, s) : f(s), label);\n"
    "    mirs_h_check(cudaStreamSynchronize(s), label);\n"
    "    cudaEvent_t *ev = (cudaEvent_t *)malloc(2 * (size_t)reps * sizeof *ev);\n"
    "    float *ms = (float *)malloc((size_t)reps * sizeof *ms);\n"
    "    if (!ev || !ms) {\n        fprintf(stderr, \"out of memory\\n\");\n        exit(3);\n    "
    "}\n"
    "    for (int r = 0; r < 2 * reps; r++)\n"
    "        mirs_h_check(cudaEventCreate(&ev[r]), \"cudaEventCreate\");\n"
    "    for (int r = 0; r < reps; r++) {\n"
    "        mirs_h_check(cudaMemsetAsync(flush, r & 0xff, flush_bytes, s), \"cudaMemsetAsync\");\n"
    "        mirs_h_check(cudaEventRecord(ev[2 * r], s), \"cudaEventRecord\");\n"
    "        mirs_h_check(graph ? cudaGraphLaunch(exec, s) : f(s), label);\n"
    "        mirs_h_check(cudaEventRecord(ev[2 * r + 1], s), \"cudaEventRecord\");\n"
    "    }\n"
    "    mirs_h_check(cudaStreamSynchronize(s), label);\n"
    "    double sum = 0;\n"
    "    for (int r = 0; r < reps; r++) {\n"
    "        mirs_h_check(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]), "
    "\"cudaEventElapsedTime\");\n"
    "        sum += ms[r];\n    }\n"
    "    qsort(ms, (size_t)reps, sizeof *ms, mb_cmp);\n"
    "    double med = reps % 2 ? ms[reps / 2] : 0.5 * ((double)ms[reps / 2 - 1] + ms[reps / 2]);\n"
    "    int i10 = (int)(0.1 * (reps - 1) + 0.5), i90 = (int)(0.9 * (reps - 1) + 0.5);\n"
    "    fprintf(fo, \"%s %d %.6f %.6f %.6f %.6f %.6f\\n\", label, reps, 1e3 * med, 1e3 * "
    "ms[i10],\n"
    "            1e3 * ms[i90], 1e3 * ms[0], 1e3 * sum / reps);\n"
    "    for (int r = 0; r < 2 * reps; r++)\n"
    "        cudaEventDestroy(ev[r]);\n"
    "    free(ev);\n    free(ms);\n"
    "    if (exec)\n        mirs_h_check(cudaGraphExecDestroy(exec), \"cudaGraphExecDestroy\");\n"
    "}\n";

/* The harness's head: includes, buffers, run_cand, run_base. */
static void emit_harness_head(const mirs_graph *c, const mirs_graph *p, mirs__buf *b) {
  char x[300];
  mirs__buf_printf(
      b,
      "/* mirsearch bench harness for %s, generated by mirsearch %s.\n"
      " *   bench check IN OUT_CAND [OUT_BASE]   one run each; outputs as float64\n"
      " *   bench time IN RESULT REPS WARMUP GRAPH   timings, one line per configuration\n"
      " * IN holds the inputs as float64 in the candidate's input order. */\n"
      "#include \"cand.cu\"\n",
      c->name, mirs_version_string());
  if (p)
    mirs__buf_puts(b, "#include \"base.cu\"\n");
  mirs__buf_puts(b, "#include <cublas_v2.h>\n#include <string.h>\n");
  mirs__buf_puts(b, mirs__codegen_harness_io);
  mirs__buf_puts(b, harness_timing);
  mirs__buf_puts(b, harness_time_loop);
  mirs__buf_puts(b, "\nstatic cublasHandle_t mb_blas;\nstatic void *mb_cws;\n");
  for (int32_t t = 0; t < c->nt; t++)
    if (c->t[t].producer < 0)
      mirs__buf_printf(b, "static %s *mb_in_%s;\n", stype(c->t[t].dtype), c->t[t].name);
  for (int32_t i = 0; i < c->nout; i++) {
    mirs__buf_printf(b, "static %s *mb_cout%d;\n", stype(c->t[c->outputs[i]].dtype), (int)i);
    if (p)
      mirs__buf_printf(b, "static %s *mb_bout%d;\n", stype(c->t[c->outputs[i]].dtype), (int)i);
  }
  for (int32_t t = 0; p && t < p->nt; t++) {
    base_ptr(p, t, x, sizeof x);
    if (strncmp(x, "mb_bt", 5) == 0 && mirs__codegen_view_root(p, t) == t) /* (once a buffer) */
      mirs__buf_printf(b, "static %s *%s;\n", stype(p->t[t].dtype), x);
  }
  /* The entry point returns 0, a cudaError_t (> 0) or a broken contract
   * (< 0: a harness bug, reported and fatal). */
  mirs__buf_puts(b, "\n/* The candidate's generated entry point. */\n"
                    "static cudaError_t run_cand(cudaStream_t stream) {\n"
                    "    const int st = " CAND_ENTRY "(");
  for (int32_t t = 0; t < c->nt; t++)
    if (c->t[t].producer < 0)
      mirs__buf_printf(b, "mb_in_%s, ", c->t[t].name);
  for (int32_t i = 0; i < c->nout; i++)
    mirs__buf_printf(b, "mb_cout%d, ", (int)i);
  mirs__buf_puts(b, "mb_cws, " CAND_ENTRY "_workspace_bytes(), (void *)stream);\n"
                    "    if (st < 0) {\n"
                    "        fprintf(stderr, \"candidate: %s\\n\", " CAND_ENTRY "_status_string(st));\n"
                    "        exit(3);\n    }\n"
                    "    return (cudaError_t)st;\n}\n");
  if (p)
    emit_baseline(p, b);
}

/* main's first part: read the inputs, allocate outputs, workspaces, the
 * cuBLAS handle and the stream; open `if (check) {` with the outputs
 * poisoned. */
static void emit_main_setup(const mirs_graph *c, const mirs_graph *p, mirs__buf *b) {
  char x[300];
  /* main: allocate, then check or time. */
  mirs__buf_puts(b, "\nint main(int argc, char **argv) {\n"
                    "    bool check = argc >= 4 && strcmp(argv[1], \"check\") == 0;\n"
                    "    if (!check && !(argc == 7 && strcmp(argv[1], \"time\") == 0)) {\n"
                    "        fprintf(stderr, \"usage: bench check IN OUT_CAND [OUT_BASE] | "
                    "bench time IN RESULT REPS WARMUP GRAPH\\n\");\n"
                    "        return 2;\n    }\n"
                    "    FILE *fi = fopen(argv[2], \"rb\");\n"
                    "    if (!fi) {\n        perror(argv[2]);\n        return 3;\n    }\n");
  for (int32_t t = 0; t < c->nt; t++)
    if (c->t[t].producer < 0)
      mirs__buf_printf(b, "    mb_in_%s = mirs_h_in<%s>(fi, %" PRId64 ");\n", c->t[t].name,
                       stype(c->t[t].dtype), mirs__shape_numel(&c->t[t].shape));
  mirs__buf_puts(b, "    fclose(fi);\n");
  for (int32_t i = 0; i < c->nout; i++) {
    const mirs__ktensor *o = &c->t[c->outputs[i]];
    int64_t n = mirs__shape_numel(&o->shape);
    mirs__buf_printf(b,
                     "    mirs_h_check(cudaMalloc((void **)&mb_cout%d, %" PRId64
                     " * sizeof(%s)), \"cudaMalloc\");\n",
                     (int)i, n, stype(o->dtype));
    if (p)
      mirs__buf_printf(b,
                       "    mirs_h_check(cudaMalloc((void **)&mb_bout%d, %" PRId64
                       " * sizeof(%s)), \"cudaMalloc\");\n",
                       (int)i, n, stype(o->dtype));
  }
  for (int32_t t = 0; p && t < p->nt; t++) {
    base_ptr(p, t, x, sizeof x);
    if (strncmp(x, "mb_bt", 5) == 0 && mirs__codegen_view_root(p, t) == t) /* (once a buffer) */
      mirs__buf_printf(b,
                       "    mirs_h_check(cudaMalloc((void **)&%s, %" PRId64
                       " * sizeof(%s)), \"cudaMalloc\");\n",
                       x, mirs__shape_numel(&p->t[t].shape), stype(p->t[t].dtype));
  }
  mirs__buf_puts(
      b, "    if (" CAND_ENTRY "_workspace_bytes())\n"
         "        mirs_h_check(cudaMalloc(&mb_cws, " CAND_ENTRY
         "_workspace_bytes()), \"cudaMalloc\");\n"
         "    /* cuBLAS gets its workspace up front, so a graph capture allocates nothing. */\n"
         "    void *blas_ws = NULL;\n"
         "    const size_t blas_ws_bytes = (size_t)32 << 20;\n"
         "    mirs_h_check(cudaMalloc(&blas_ws, blas_ws_bytes), \"cudaMalloc\");\n"
         "    mb_blas_check(cublasCreate(&mb_blas), \"cublasCreate\");\n"
         "    mb_blas_check(cublasSetWorkspace(mb_blas, blas_ws, blas_ws_bytes), "
         "\"cublasSetWorkspace\");\n"
         "    cudaStream_t s;\n"
         "    mirs_h_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "
         "\"cudaStreamCreate\");\n"
         "    if (check) {\n"
         "        /* Outputs poisoned (NaN in every dtype): an element never written fails. */\n");
  for (int32_t i = 0; i < c->nout; i++) {
    const mirs__ktensor *o = &c->t[c->outputs[i]];
    int64_t n = mirs__shape_numel(&o->shape);
    mirs__buf_printf(b,
                     "        mirs_h_check(cudaMemset(mb_cout%d, 0xff, %" PRId64
                     " * sizeof(%s)), \"cudaMemset\");\n",
                     (int)i, n, stype(o->dtype));
    if (p)
      mirs__buf_printf(b,
                       "        mirs_h_check(cudaMemset(mb_bout%d, 0xff, %" PRId64
                       " * sizeof(%s)), \"cudaMemset\");\n",
                       (int)i, n, stype(o->dtype));
  }
}

/* main's check branch: one run of each, outputs as float64. */
static void emit_main_check(const mirs_graph *c, const mirs_graph *p, mirs__buf *b) {
  mirs__buf_puts(
      b, "        mirs_h_check(run_cand(s), \"candidate\");\n"
         "        mirs_h_check(cudaStreamSynchronize(s), \"candidate\");\n");
  mirs__codegen_emit_outputs(c, "        ", "FILE *", 3, "mb_cout", b);
  if (p) {
    mirs__buf_puts(
        b, "        if (argc < 5) {\n            fprintf(stderr, \"check: no OUT_BASE\\n\");\n"
           "            return 2;\n        }\n"
           "        mirs_h_check(run_base(s), \"baseline\");\n"
           "        mirs_h_check(cudaStreamSynchronize(s), \"baseline\");\n");
    mirs__codegen_emit_outputs(c, "        ", "", 4, "mb_bout", b);
  }
}

/* Emit the harness: buffers, run_cand/run_base and main(). */
static void emit_harness(const mirs_graph *c, const mirs_graph *p, mirs__buf *b) {
  emit_harness_head(c, p, b);
  emit_main_setup(c, p, b);
  emit_main_check(c, p, b);
  mirs__buf_puts(
      b, "        return 0;\n    }\n"
         "    int reps = atoi(argv[4]), warmup = atoi(argv[5]);\n"
         "    bool graph = atoi(argv[6]) != 0;\n"
         "    if (reps < 1 || warmup < 0) {\n        fprintf(stderr, \"bad REPS or WARMUP\\n\");\n"
         "        return 2;\n    }\n"
         "    int dev = 0, l2 = 0;\n"
         "    mirs_h_check(cudaGetDevice(&dev), \"cudaGetDevice\");\n"
         "    cudaDeviceProp prop;\n"
         "    mirs_h_check(cudaGetDeviceProperties(&prop, dev), \"cudaGetDeviceProperties\");\n"
         "    mirs_h_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "
         "\"cudaDeviceGetAttribute\");\n"
         "    /* Twice L2 (at least 64 MiB): written before every timed run. */\n"
         "    size_t flush_bytes = 2 * (size_t)l2;\n"
         "    if (flush_bytes < ((size_t)64 << 20))\n        flush_bytes = (size_t)64 << 20;\n"
         "    void *flush = NULL;\n"
         "    mirs_h_check(cudaMalloc(&flush, flush_bytes), \"cudaMalloc\");\n"
         "    FILE *fo = fopen(argv[3], \"w\");\n"
         "    if (!fo) {\n        perror(argv[3]);\n        return 3;\n    }\n"
         "    fprintf(fo, \"device %s\\nsms %d\\nl2 %d\\nflush %zu\\n\", prop.name, "
         "prop.multiProcessorCount, l2, flush_bytes);\n"
         "    mb_time(fo, \"cand\", run_cand, false, s, reps, warmup, flush, flush_bytes);\n");
  if (p)
    mirs__buf_puts(
        b, "    mb_time(fo, \"base\", run_base, false, s, reps, warmup, flush, flush_bytes);\n");
  mirs__buf_puts(b, "    if (graph) {\n"
                    "        mb_time(fo, \"cand_graph\", run_cand, true, s, reps, warmup, flush, "
                    "flush_bytes);\n");
  if (p)
    mirs__buf_puts(b, "        mb_time(fo, \"base_graph\", run_base, true, s, reps, warmup, flush, "
                      "flush_bytes);\n");
  mirs__buf_puts(b,
                 "    }\n"
                 "    if (fclose(fo) != 0) {\n        perror(argv[3]);\n        return 3;\n    }\n"
                 "    cublasDestroy(mb_blas);\n"
                 "    return 0;\n}\n");
}

/* Write cand.cu, base.cu (with a program) and bench.cu into dir. */
static mirs_status write_sources(const mirs_graph *c, const mirs_graph *p, const char *dir) {
  mirs_context *ctx = c->ctx;
  mirs__buf cand, base, harness;
  mirs__buf_init(&cand, ctx);
  mirs__buf_init(&base, ctx);
  mirs__buf_init(&harness, ctx);
  mirs_status s = mirs__codegen_cuda(c, CAND_ENTRY, &cand);
  if (s == MIRS_OK && p)
    s = mirs__codegen_cuda_views(p, BASE_ENTRY, false, &base);
  if (s == MIRS_OK)
    emit_harness(c, p, &harness);
  if (s == MIRS_OK && (cand.failed || base.failed || harness.failed))
    s = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory");
  if (s == MIRS_OK)
    s = mirs__codegen_put_file(ctx, dir, "cand.cu", cand.data, cand.len);
  if (s == MIRS_OK && p)
    s = mirs__codegen_put_file(ctx, dir, "base.cu", base.data, base.len);
  if (s == MIRS_OK)
    s = mirs__codegen_put_file(ctx, dir, "bench.cu", harness.data, harness.len);
  mirs__buf_free(&cand);
  mirs__buf_free(&base);
  mirs__buf_free(&harness);
  return s;
}

/* Validate the pair; MIRS_SHAPE when they do not match. */
static mirs_status check_pair(const mirs_graph *c, const mirs_graph *p) {
  MIRS_CHECK(c->ctx, mirs__graph_validate(c));
  if (p) {
    if (p->ctx != c->ctx)
      return MIRS_FAIL(c->ctx, MIRS_INVALID_ARG,
                       "mirs_codegen_bench: the graphs have different contexts");
    MIRS_CHECK(c->ctx, mirs__graph_validate(p));
    MIRS_CHECK(c->ctx, check_match(c, p));
  }
  return MIRS_OK;
}

/* Public: the harness sources, for inspection or a build elsewhere. */
mirs_status mirs_codegen_bench_sources(const mirs_graph *candidate, const mirs_graph *program,
                                       const char *dir) {
  if (!candidate)
    return MIRS_INVALID_ARG;
  if (!dir)
    return MIRS_FAIL(candidate->ctx, MIRS_INVALID_ARG, "mirs_codegen_bench_sources: NULL dir");
  MIRS_CHECK(candidate->ctx, check_pair(candidate, program));
  MIRS_CHECK(candidate->ctx, write_sources(candidate, program, dir));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- the driver */

#ifdef MIRS_NVCC
/* Bytes of one element. */
static int64_t esize(mirs_dtype t) {
  return t == MIRS_F32 ? 4 : 2;
}

/* Parse the `time` run's result file into r. */
static mirs_status read_timings(mirs_context *ctx, const char *path, mirs_bench_result *r) {
  char *text = NULL;
  size_t len = 0;
  MIRS_CHECK(ctx, mirs__core_read_file(ctx, path, &text, &len));
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    mirs_bench_timing t;
    char label[32];
    if (strncmp(line, "device ", 7) == 0) {
      snprintf(r->device, sizeof r->device, "%s", line + 7);
    } else if (strncmp(line, "sms ", 4) == 0) {
      r->sms = atoi(line + 4);
    } else if (strncmp(line, "l2 ", 3) == 0) {
      r->l2_bytes = atof(line + 3);
    } else if (strncmp(line, "flush ", 6) == 0) {
      r->flush_bytes = atof(line + 6);
    } else if (sscanf(line, "%31s %d %lf %lf %lf %lf %lf", label, &t.reps, &t.median_us, &t.p10_us,
                      &t.p90_us, &t.min_us, &t.mean_us) == 7) {
      if (strcmp(label, "cand") == 0)
        r->candidate = t;
      else if (strcmp(label, "base") == 0)
        r->baseline = t;
      else if (strcmp(label, "cand_graph") == 0)
        r->candidate_graph = t;
      else if (strcmp(label, "base_graph") == 0)
        r->baseline_graph = t;
    }
  }
  mirs__core_free(ctx, text);
  if (r->candidate.reps < 1)
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "the bench harness reported no timings in %s", path);
  return MIRS_OK;
}

/* The program's fewest HBM bytes and its matmul flops and their ideal
 * time on d's tensor cores (f16/bf16) or CUDA cores (f32). */
static void roofline(const mirs_graph *p, const mirs__cost_device *d, mirs_bench_result *r) {
  double bytes = 0, flops = 0, seconds = 0;
  for (int32_t t = 0; t < p->nt; t++)
    if (p->t[t].producer < 0)
      bytes += (double)mirs__shape_numel(&p->t[t].shape) * (double)esize(p->t[t].dtype);
  for (int32_t i = 0; i < p->nout; i++) {
    const mirs__ktensor *o = &p->t[p->outputs[i]];
    bytes += (double)mirs__shape_numel(&o->shape) * (double)esize(o->dtype);
  }
  for (int32_t i = 0; i < p->nops; i++) {
    const mirs__kop *o = &p->ops[i];
    if (o->op != MIRS_OP_MATMUL)
      continue;
    const mirs__shape *as = &p->t[o->in[0]].shape;
    double f =
        2.0 * (double)mirs__shape_numel(&p->t[o->out[0]].shape) * (double)as->d[as->ndim - 1];
    flops += f;
    mirs_dtype dt = p->t[o->in[0]].dtype;
    seconds += f / (dt == MIRS_F32 ? d->f32_peak : dt == MIRS_BF16 ? d->bf16_peak : d->tc_peak);
  }
  r->bytes = bytes;
  r->flops = flops;
  r->hbm_bytes_per_s = d->hbm_bw;
  /* The peak the program's mix of matmuls would reach. */
  r->tc_flops_per_s = seconds > 0 ? flops / seconds : d->tc_peak;
}

/* How long one run of a harness may last, in seconds: a check or a
 * timing run takes seconds (a CUDA context, one or a few hundred
 * launches, the data files); one that has not ended by then hangs (a
 * kernel that never finishes) and is killed, a failure of that
 * candidate's. */
#define BENCH_RUN_LIMIT_S 300.0

static double run_limit(void) {
#ifdef MIRS_FAULT_INJECTION
  /* (Tests: a shorter limit.) */
  const char *e = getenv("MIRS_TEST_BENCH_RUN_LIMIT");
  if (e && atof(e) > 0)
    return atof(e);
#endif
  return BENCH_RUN_LIMIT_S;
}

/* Run dir/bench with up to 6 arguments after it (args[0] names the run);
 * a non-zero exit is MIRS_CUDA, a run past run_limit() or the ranking's
 * deadline (0: none) MIRS_LIMIT. */
static mirs_status run_harness(mirs_context *ctx, const char *dir, const char *const *args, int n,
                               double deadline) {
  char prog[1024], log[1024], what[128];
  const char *run = strcmp(args[0], "time") == 0 ? "timing" : args[0];
  snprintf(prog, sizeof prog, "%s/bench", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(what, sizeof what, "the bench harness's %s run failed", run);
  mirs__codegen_args a;
  a.n = 0;
  mirs__codegen_arg(&a, prog);
  for (int i = 0; i < n; i++)
    mirs__codegen_arg(&a, args[i]);
  double limit = run_limit(), until = mirs__core_now() + limit;
  bool by_deadline = deadline > 0 && deadline < until;
  mirs_status s =
      mirs__codegen_spawn_checked(ctx, a.argv, log, by_deadline ? deadline : until, MIRS_CUDA, what);
  if (s == MIRS_LIMIT && !by_deadline)
    return MIRS_FAIL(ctx, MIRS_LIMIT, "the bench harness's %s run had not ended after %g s: killed",
                     run, limit);
  return s;
}

/* Whether status s of a candidate's build, runs or their outputs is that
 * candidate's failure (not the machine's or the caller's: no device, no
 * memory or disk, a stop request). */
static bool harness_fault(mirs_status s) {
  return s == MIRS_INTERNAL || s == MIRS_CUDA || s == MIRS_LIMIT;
}

/* The files a harness directory may hold. */
static const char *const bench_files[] = {"cand.cu",  "base.cu",   "bench.cu", "in.bin", "cand.bin",
                                          "base.bin", "times.txt", "bench",    "log"};
#define N_BENCH_FILES (sizeof bench_files / sizeof bench_files[0])

/* A candidate's harness: its directory and its build. */
typedef struct bench_job {
  char dir[900];
  pid_t pid;
  bool made, building;
  bool failed; /* its build failed (kept going: mirs__bench_failure) */
} bench_job;

/* Start the build of candidate c's harness: a new directory, the
 * sources, nvcc in the background. */
static mirs_status bench_start(const mirs_graph *c, const mirs_graph *p, bench_job *j) {
  mirs_context *ctx = c->ctx;
  MIRS_CHECK(ctx, mirs__codegen_tmpdir(ctx, "bench", j->dir, sizeof j->dir));
  j->made = true;
  MIRS_CHECK(ctx, write_sources(c, p, j->dir));
  mirs__codegen_args a;
  MIRS_CHECK(ctx, mirs__codegen_nvcc_args(ctx, j->dir, "bench.cu", "bench", "cublas", &a));
  char log[1024];
  snprintf(log, sizeof log, "%s/log", j->dir);
  MIRS_CHECK(ctx, mirs__codegen_spawn_start(ctx, a.argv, log, &j->pid));
  j->building = true;
  return MIRS_OK;
}

/* Wait for j's build (until deadline, 0: none; then MIRS_LIMIT); a
 * failure is MIRS_INTERNAL with nvcc's first lines. */
static mirs_status bench_built(mirs_context *ctx, bench_job *j, double deadline) {
  const char *nvcc = mirs__codegen_nvcc(ctx);
  int st;
  j->building = false;
  MIRS_CHECK(ctx, mirs__codegen_spawn_wait(ctx, j->pid, deadline, nvcc, &st));
  if (st != 0) {
    char log[1024], head[1024];
    snprintf(log, sizeof log, "%s/log", j->dir);
    mirs__codegen_log_head(log, head, sizeof head);
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "the bench harness does not compile with %s (exit %d):\n%s",
                     nvcc, st, head);
  }
  return MIRS_OK;
}

/* Check and time c's built harness in dir against the float64 reference
 * ref (see mirs_codegen_bench); the run's data files are removed after. */
static mirs_status bench_run(const mirs_graph *c, const mirs_graph *p, uint64_t seed,
                             const char *dir, const mirs_eval_result *ref, double deadline,
                             mirs_bench_result *r) {
  mirs_context *ctx = c->ctx;
  char path[4][1024];
  snprintf(path[0], sizeof path[0], "%s/in.bin", dir);
  snprintf(path[1], sizeof path[1], "%s/cand.bin", dir);
  snprintf(path[2], sizeof path[2], "%s/base.bin", dir);
  snprintf(path[3], sizeof path[3], "%s/times.txt", dir);
  mirs_eval_result *got = NULL;
  mirs_status s = mirs__codegen_write_inputs(c, seed, dir, "in.bin");
  if (s == MIRS_OK) {
    const char *args[] = {"check", path[0], path[1], path[2]};
    s = run_harness(ctx, dir, args, p ? 4 : 3, deadline);
  }
  r->tolerance = mirs_codegen_tolerance(c);
  r->candidate_error = r->baseline_error = NAN;
  if (s == MIRS_OK)
    s = mirs__codegen_read_outputs(c, path[1], &got);
  if (s == MIRS_OK) {
    r->candidate_error = mirs__eval_max_rel_error(ref, got);
    mirs_eval_result_destroy(got);
    got = NULL;
  }
  if (s == MIRS_OK && p)
    s = mirs__codegen_read_outputs(c, path[2], &got);
  if (s == MIRS_OK && p)
    r->baseline_error = mirs__eval_max_rel_error(ref, got);
  mirs_eval_result_destroy(got);
  /* A NaN error (an unwritten, poisoned element) fails too.  The
   * baseline is the program as written: its own f16 intermediates may
   * overflow (attention's row sums at published shapes do), which no
   * kernel of ours can fix; it is timed anyway (the same work), flagged. */
  r->checked = s == MIRS_OK && r->candidate_error <= r->tolerance;
  r->baseline_checked = s == MIRS_OK && p && r->baseline_error <= r->tolerance;
  if (s == MIRS_OK && r->checked) {
    char reps[32], warmup[32];
    snprintf(reps, sizeof reps, "%" PRId64, ctx->opt.bench_reps);
    snprintf(warmup, sizeof warmup, "%" PRId64, ctx->opt.bench_warmup);
    const char *args[] = {"time", path[0], path[3],
                          reps,   warmup,  ctx->opt.bench_cuda_graph ? "1" : "0"};
    s = run_harness(ctx, dir, args, 6, deadline);
    if (s == MIRS_OK)
      s = read_timings(ctx, path[3], r);
  }
  /* At published shapes the inputs and outputs are large: gone before
   * the next candidate's. */
  for (int k = 0; k < 3; k++)
    (void)unlink(path[k]);
  return s;
}

/* Harnesses built before the first of them runs, at most. */
#define BENCH_ROUND 64

/* How many harnesses compile at once: the CPUs this process may use (at
 * most the threads option when that is set), at most n. */
static int bench_jobs(mirs_context *ctx, int n) {
  int j = mirs__core_usable_cpus();
  if (ctx->opt.threads > 0 && ctx->opt.threads < j)
    j = (int)ctx->opt.threads;
  return j < n ? j : n;
}

/* One line a candidate of a ranking, as its check and timing end: a
 * long ranking says where it is. */
static void log_candidate(mirs_context *ctx, int i, int n, const mirs_bench_result *r,
                          const mirs__bench_failure *f) {
  if (f && f->status != MIRS_OK)
    mirs__core_log(ctx, MIRS_LOG_INFO, "bench: candidate %d of %d: not timed (%.*s)", i + 1, n,
                   (int)strcspn(f->why, "\n"), f->why);
  else if (!r->checked)
    mirs__core_log(ctx, MIRS_LOG_INFO,
                   "bench: candidate %d of %d: wrong, not timed (relative error %.3g, "
                   "tolerance %g)",
                   i + 1, n, r->candidate_error, r->tolerance);
  else
    mirs__core_log(ctx, MIRS_LOG_INFO, "bench: candidate %d of %d: %.3f us (median of %d)", i + 1,
                   n, r->candidate.median_us, r->candidate.reps);
}

/* Whether deadline (0: none) has passed. */
static bool past(double deadline) {
  return deadline > 0 && mirs__core_now() >= deadline;
}

/* Candidate i's harness failed with s (a harness_fault): the error goes
 * to *f, off the context, and the ranking goes on. */
static mirs_status keep_going(mirs_context *ctx, mirs_status s, mirs__bench_failure *f) {
  f->status = s;
  snprintf(f->why, sizeof f->why, "%s", mirs_last_error(ctx));
  mirs_clear_error(ctx);
  return MIRS_OK;
}

/* mirs_codegen_bench of cands[0..n) against one program into rs[0..n)
 * (full structs).  The harnesses compile first, bench_jobs at a time;
 * then each is checked and timed in turn, nothing else running (timings
 * never overlap each other or a compile); so in rounds of BENCH_ROUND.  The float64 reference of a
 * program is evaluated once, before anything compiles (it also bounds
 * the sizes involved).  The first error stops it, unless fails is set
 * and the error is one candidate's (harness_fault): then it goes to
 * fails[i] and the others go on.  At the deadline (0: none) the build or
 * run under way is killed: without fails that is MIRS_LIMIT; with them,
 * every candidate not timed by then is marked cut and the rest stands.
 * Every child is killed and every directory removed on every path. */
static mirs_status bench_many(const mirs_graph *const *cands, int n, const mirs_graph *p,
                              uint64_t seed, mirs_bench_result *rs, mirs__bench_failure *fails,
                              double deadline) {
  mirs_context *ctx = cands[0]->ctx;
  MIRS_CHECK(ctx, mirs__codegen_need_device(ctx));
  mirs__cost_profiles *prof = NULL;
  const mirs__cost_device *d = NULL;
  mirs_status s = mirs__cost_profiles_load(ctx, NULL, &prof);
  if (s == MIRS_OK)
    s = mirs__cost_find(ctx, prof, ctx->opt.cost_device, &d);
  for (int i = 0; s == MIRS_OK && i < n; i++) {
    mirs_bench_result *r = &rs[i];
    if (fails) {
      fails[i].status = MIRS_OK;
      fails[i].cut = false;
      fails[i].why[0] = '\0';
    }
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->has_baseline = p != NULL;
    snprintf(r->profile, sizeof r->profile, "%s", d->name);
    roofline(p ? p : cands[i], d, r);
    for (int32_t k = 0; p && k < p->nops; k++) {
      const mirs__kop *o = &p->ops[k];
      if (o->op == MIRS_OP_MATMUL && on_cublas(p, o))
        r->baseline_cublas_calls++;
      else
        r->baseline_kernels += !mirs__codegen_op_is_view(p, false, k);
    }
  }
  mirs__cost_profiles_free(prof);
  MIRS_CHECK(ctx, s);
  mirs_eval_result *pref = NULL;
  if (p)
    MIRS_CHECK(ctx, mirs_graph_eval(p, seed, &pref));
  bench_job *jobs = mirs__core_calloc(ctx, (size_t)n, sizeof *jobs);
  if (!jobs) {
    mirs_eval_result_destroy(pref);
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (%d bench harnesses)", n);
  }
  /* In rounds of at most BENCH_ROUND candidates: a harness is about a
   * megabyte, and a ranking of thousands would otherwise hold them all. */
  int round = BENCH_ROUND;
#ifdef MIRS_FAULT_INJECTION
  /* (Tests: smaller rounds.) */
  const char *e = getenv("MIRS_TEST_BENCH_ROUND");
  if (e && atoi(e) > 0)
    round = atoi(e);
#endif
  int width = bench_jobs(ctx, n < round ? n : round);
  int cut = past(deadline) ? 0 : -1; /* the first candidate the deadline left untimed */
  for (int lo = 0; s == MIRS_OK && cut < 0 && lo < n; lo += round) {
    int hi = n - lo < round ? n : lo + round, started = lo;
    double t0 = mirs__core_now();
    for (; s == MIRS_OK && started < hi && started < lo + width; started++)
      s = bench_start(cands[started], p, &jobs[started]);
    for (int i = lo; s == MIRS_OK && cut < 0 && i < hi; i++) {
      s = bench_built(ctx, &jobs[i], deadline);
      if (s != MIRS_OK && fails && past(deadline)) {
        mirs_clear_error(ctx);
        s = MIRS_OK;
        cut = lo;
      } else if (s != MIRS_OK && fails && harness_fault(s)) {
        jobs[i].failed = true;
        s = keep_going(ctx, s, &fails[i]);
      }
      if (s == MIRS_OK && cut < 0 && started < hi) {
        s = bench_start(cands[started], p, &jobs[started]);
        started++;
      }
    }
    if (s == MIRS_OK && cut < 0 && n > 1)
      mirs__core_log(ctx, MIRS_LOG_INFO, "bench: %d harnesses compiled in %.1f s, %d at a time",
                     hi - lo, mirs__core_now() - t0, width);
    for (int i = lo; s == MIRS_OK && cut < 0 && i < hi; i++) {
      if (jobs[i].failed) { /* (its build failed) */
        if (n > 1)
          log_candidate(ctx, i, n, &rs[i], &fails[i]);
        continue;
      }
      mirs_eval_result *ref = pref;
      if (!p)
        s = mirs_graph_eval(cands[i], seed, &ref);
      if (s == MIRS_OK)
        s = bench_run(cands[i], p, seed, jobs[i].dir, ref, deadline, &rs[i]);
      if (!p)
        mirs_eval_result_destroy(ref);
      if (s != MIRS_OK && fails && past(deadline)) {
        mirs_clear_error(ctx);
        s = MIRS_OK;
        cut = i;
      } else if (s != MIRS_OK && fails && harness_fault(s)) {
        rs[i].checked = rs[i].baseline_checked = 0;
        s = keep_going(ctx, s, &fails[i]);
      }
      if (s == MIRS_OK && cut < 0 && n > 1)
        log_candidate(ctx, i, n, &rs[i], fails ? &fails[i] : NULL);
    }
    for (int i = lo; i < hi; i++) {
      if (jobs[i].building)
        mirs__codegen_spawn_kill(jobs[i].pid);
      if (jobs[i].made)
        mirs__codegen_remove_dir(jobs[i].dir, bench_files, N_BENCH_FILES);
      jobs[i].building = jobs[i].made = jobs[i].failed = false;
    }
  }
  mirs__core_free(ctx, jobs);
  mirs_eval_result_destroy(pref);
  if (s == MIRS_OK && cut >= 0 && !fails)
    return MIRS_FAIL(ctx, MIRS_LIMIT, "bench: stopped at the time limit (--time-limit=%g)",
                     ctx->opt.time_limit);
  for (int i = cut; s == MIRS_OK && cut >= 0 && i < n; i++)
    if (fails[i].status == MIRS_OK) {
      rs[i].checked = rs[i].baseline_checked = 0;
      fails[i].status = MIRS_LIMIT;
      fails[i].cut = true;
      snprintf(fails[i].why, sizeof fails[i].why,
               "not timed: the time limit (--time-limit=%g) came first", ctx->opt.time_limit);
    }
  return s;
}

#endif

/* Public: time candidate against program on GPU 0. */
mirs_status mirs_codegen_bench(const mirs_graph *candidate, const mirs_graph *program,
                               uint64_t seed, mirs_bench_result *out) {
  if (!candidate)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = candidate->ctx;
  if (!out || out->struct_size < sizeof(size_t))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "mirs_codegen_bench: set out->struct_size = sizeof(mirs_bench_result)");
  MIRS_CHECK(ctx, check_pair(candidate, program));
#ifndef MIRS_NVCC
  (void)seed;
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED, "%s", NO_CUDA);
#else
  mirs_bench_result r;
  double deadline = ctx->opt.time_limit > 0 ? mirs__core_now() + ctx->opt.time_limit : 0;
  MIRS_CHECK(ctx, bench_many(&candidate, 1, program, seed, &r, NULL, deadline));
  size_t n = out->struct_size < sizeof r ? out->struct_size : sizeof r;
  r.struct_size = n;
  memcpy(out, &r, n);
  return MIRS_OK;
#endif
}

/* Internal: see codegen.h. */
mirs_status mirs__codegen_bench_many(const mirs_graph *const *cands, int n,
                                     const mirs_graph *program, uint64_t seed,
                                     mirs_bench_result *rs, mirs__bench_failure *fails,
                                     double deadline) {
  mirs_context *ctx = cands[0]->ctx;
  for (int i = 0; i < n; i++)
    MIRS_CHECK(ctx, check_pair(cands[i], program));
#ifndef MIRS_NVCC
  (void)seed;
  (void)rs;
  (void)fails;
  (void)deadline;
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED, "%s", NO_CUDA);
#else
  return bench_many(cands, n, program, seed, rs, fails, deadline);
#endif
}

/* ---------------------------------------------------------------- calibration */

/* The calibration program: the device's properties, then measured copy
 * bandwidth, launch interval, f16, bf16 and tf32 tensor-core and f32 rates, and the
 * share of SMs that saturates HBM; `key value` lines on stdout.  Inputs
 * are never zeros (a matrix product of zeros runs faster). */
static const char calibrate_head[] =
    "/* mirsearch bench --calibrate: measure what the cost model's device profile holds. */\n"
    "#include <cublas_v2.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
    "#include <cuda_runtime.h>\n"
    "#include <stdio.h>\n#include <stdlib.h>\n\n"
    "#define CK(x) mirs_c_check((x), #x)\n"
    "static void mirs_c_check(cudaError_t e, const char *what) {\n"
    "    if (e != cudaSuccess) {\n"
    "        fprintf(stderr, \"%s: %s\\n\", what, cudaGetErrorString(e));\n        exit(3);\n    "
    "}\n}\n"
    "static void mirs_c_blas(cublasStatus_t s, const char *what) {\n"
    "    if (s != CUBLAS_STATUS_SUCCESS) {\n"
    "        fprintf(stderr, \"%s: cuBLAS status %d\\n\", what, (int)s);\n        exit(3);\n    "
    "}\n}\n"
    "__global__ void mirs_c_empty(void) {}\n"
    "template <typename T> __global__ void mirs_c_fill(T *p, size_t n) {\n"
    "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (size_t)gridDim.x * blockDim.x) {\n"
    "        unsigned h = (unsigned)i * 2654435761u;\n"
    "        p[i] = T(((h >> 8) & 0xffff) / 32768.0f - 1.0f);\n    }\n}\n"
    "__global__ void mirs_c_copy(const float4 *s, float4 *d, size_t n) {\n"
    "    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (size_t)gridDim.x * blockDim.x)\n        d[i] = s[i];\n}\n"
    "/* K 16-byte loads a thread in flight: each round's addresses depend on\n"
    " * the last round's first value (the data are zeros), so no more are. */\n"
    "template <int K> __global__ void mirs_c_chase(const float4 *s4, size_t per_block, int *out) {\n"
    "    const int4 *p = (const int4 *)s4 + blockIdx.x * per_block + threadIdx.x;\n"
    "    const size_t step = (size_t)K * blockDim.x;\n"
    "    int acc = 0, off = 0;\n"
    "    for (size_t i = 0; i + step <= per_block; i += step) {\n"
    "        int4 v[K];\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < K; j++) v[j] = __ldcg(p + off + i + (size_t)j * blockDim.x);\n"
    "        off = v[0].x;\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < K; j++) acc += v[j].y + v[j].z + v[j].w;\n    }\n"
    "    out[blockIdx.x * blockDim.x + threadIdx.x] = acc + off;\n}\n"
    "/* 8 independent FMA chains a thread; the result is stored so none is dead. */\n"
    "__global__ void mirs_c_fma(float *out, int iters) {\n"
    "    float a[8];\n"
    "    for (int j = 0; j < 8; j++) a[j] = threadIdx.x * 1e-3f + j;\n"
    "    for (int i = 0; i < iters; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 8; j++) a[j] = fmaf(a[j], 0.9999f, 1e-4f);\n"
    "    float s = 0;\n    for (int j = 0; j < 8; j++) s += a[j];\n"
    "    out[blockIdx.x * blockDim.x + threadIdx.x] = s;\n}\n";

static const char calibrate_helpers[] =
    "/* Median of n event intervals of f, in ms. */\n"
    "template <typename F> static float mirs_c_time(F f, int n) {\n"
    "    cudaEvent_t a, b;\n    CK(cudaEventCreate(&a));\n    CK(cudaEventCreate(&b));\n"
    "    f();\n    CK(cudaDeviceSynchronize());\n"
    "    float t[16], x;\n    if (n > 16) n = 16;\n"
    "    for (int r = 0; r < n; r++) {\n"
    "        CK(cudaEventRecord(a));\n        f();\n        CK(cudaEventRecord(b));\n"
    "        CK(cudaEventSynchronize(b));\n        CK(cudaEventElapsedTime(&t[r], a, b));\n    }\n"
    "    for (int i = 1; i < n; i++)\n"
    "        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) { x = t[j]; t[j] = t[j - 1]; t[j - 1] "
    "= x; }\n"
    "    return t[n / 2];\n}\n\n"
    "/* TFLOPS of an m^3 product of T matrices (type ty) through cuBLAS, compute\n"
    " * type ct, on non-zero data; the median of 7.  -1 (said on stderr) where\n"
    " * the memory or the product is refused, so that a type the library\n"
    " * lacks costs only its own key. */\n"
    "template <typename T>\n"
    "static double mirs_c_gemm(cublasHandle_t h, int sms, cudaDataType ty, cublasComputeType_t "
    "ct) {\n"
    "    const int m = 8192;\n    const size_t bytes = (size_t)m * m * sizeof(T);\n"
    "    T *A = NULL, *B = NULL, *C = NULL;\n"
    "    if (cudaMalloc(&A, bytes) != cudaSuccess || cudaMalloc(&B, bytes) != cudaSuccess ||\n"
    "        cudaMalloc(&C, bytes) != cudaSuccess) {\n"
    "        fprintf(stderr, \"type %d: no memory for the product\\n\", (int)ty);\n"
    "        (void)cudaGetLastError();\n"
    "        cudaFree(A);\n        cudaFree(B);\n        cudaFree(C);\n        return -1;\n    }\n"
    "    mirs_c_fill<T><<<sms * 8, 256>>>(A, (size_t)m * m);\n"
    "    mirs_c_fill<T><<<sms * 8, 256>>>(B, (size_t)m * m);\n    CK(cudaGetLastError());\n"
    "    const float one = 1.0f, zero = 0.0f;\n"
    "    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;\n"
    "    float mm = mirs_c_time([&] {\n"
    "        cublasStatus_t x = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, A, ty, m,\n"
    "                                        B, ty, m, &zero, C, ty, m, ct, CUBLAS_GEMM_DEFAULT);\n"
    "        if (x != CUBLAS_STATUS_SUCCESS) bs = x;\n    }, 7);\n"
    "    CK(cudaFree(A));\n    CK(cudaFree(B));\n    CK(cudaFree(C));\n"
    "    if (bs != CUBLAS_STATUS_SUCCESS) {\n"
    "        fprintf(stderr, \"type %d: cublasGemmEx status %d\\n\", (int)ty, (int)bs);\n"
    "        return -1;\n    }\n"
    "    return 2.0 * m * (double)m * m / (mm * 1e-3) / 1e12;\n}\n\n";

/* Its main() (a literal of its own: C compilers need support only 4095
 * characters in one). */
static const char calibrate_main[] =
    "int main(void) {\n"
    "    cudaDeviceProp p;\n    CK(cudaGetDeviceProperties(&p, 0));\n"
    "    int l2 = 0, smem = 0;\n"
    "    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));\n"
    "    CK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));\n"
    "    printf(\"name %s\\nsms %d\\nl2_bytes %d\\nsmem_per_block %d\\nmax_threads_per_block "
    "%d\\n\",\n"
    "           p.name, p.multiProcessorCount, l2, smem, p.maxThreadsPerBlock);\n"
    "    /* Shared memory: 32 banks of 4 bytes a clock per SM, at the peak clock. */\n"
    "    int clk = 0;\n    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));\n"
    "    printf(\"smem_gbps %.1f\\n\", 128.0 * clk * 1e3 / 1e9);\n"
    "    /* HBM: a 1 GiB copy by a grid-stride kernel, bytes read + written. */\n"
    "    const size_t bytes = (size_t)1 << 30, n4 = bytes / 16;\n"
    "    float4 *s4, *d4;\n    CK(cudaMalloc(&s4, bytes));\n    CK(cudaMalloc(&d4, bytes));\n"
    "    CK(cudaMemset(s4, 0x3c, bytes));\n"
    "    const int sms = p.multiProcessorCount;\n"
    "    float full = mirs_c_time([&] { mirs_c_copy<<<sms * 8, 256>>>(s4, d4, n4); }, 9);\n"
    "    double gbps = 2.0 * bytes / (full * 1e-3) / 1e9;\n"
    "    printf(\"hbm_gbps %.1f\\n\", gbps);\n"
    "    /* The fewest SMs (in eighths) whose blocks reach 90% of that. */\n"
    "    double sat = 1.0;\n"
    "    for (int e = 1; e <= 8; e++) {\n"
    "        int blocks = sms * e / 8 > 0 ? sms * e / 8 : 1;\n"
    "        float t = mirs_c_time([&] { mirs_c_copy<<<blocks, 1024>>>(s4, d4, n4); }, 5);\n"
    "        if (full / t >= 0.9) { sat = e / 8.0; break; }\n    }\n"
    "    printf(\"hbm_saturation %.3f\\n\", sat);\n"
    "    /* Loaded latency: one block of 256 threads an SM, K loads each in\n"
    "     * flight; while that bounds the bandwidth (under 60% of the copy's),\n"
    "     * bytes in flight over bandwidth is the latency (median of those K). */\n"
    "    CK(cudaMemset(s4, 0, bytes));\n"
    "    int *cout;\n    CK(cudaMalloc(&cout, (size_t)sms * 256 * sizeof(int)));\n"
    "    const size_t per = n4 / sms;\n"
    "    float lat[3];\n    int nl = 0;\n"
    "    double first = 0;\n"
    "    for (int k = 1; k <= 4; k *= 2) {\n"
    "        float t = mirs_c_time([&] {\n"
    "            if (k == 1) mirs_c_chase<1><<<sms, 256>>>(s4, per, cout);\n"
    "            else if (k == 2) mirs_c_chase<2><<<sms, 256>>>(s4, per, cout);\n"
    "            else mirs_c_chase<4><<<sms, 256>>>(s4, per, cout);\n        }, 5);\n"
    "        CK(cudaGetLastError());\n"
    "        double moved = (double)sms * (per / (256 * k)) * (256 * k) * 16;\n"
    "        double bw = moved / (t * 1e-3), in = (double)sms * 256 * k * 16;\n"
    "        printf(\"mem_chase_k%d_gbps %.1f\\n\", k, bw / 1e9);\n"
    "        if (k == 1) first = in / bw;\n"
    "        if (bw < 0.6 * gbps * 1e9) lat[nl++] = (float)(in / bw);\n    }\n"
    "    for (int i = 1; i < nl; i++)\n"
    "        for (int j = i; j > 0 && lat[j - 1] > lat[j]; j--) { float x = lat[j]; lat[j] = "
    "lat[j - 1]; lat[j - 1] = x; }\n"
    "    printf(\"mem_latency_us %.3f\\n\", 1e6 * (nl ? lat[nl / 2] : first));\n"
    "    CK(cudaFree(cout));\n"
    "    CK(cudaFree(s4));\n    CK(cudaFree(d4));\n";

/* The rest of main() (4095 characters again). */
static const char calibrate_main2[] =
    "    /* Launch interval: 1000 empty kernels back to back on one stream. */\n"
    "    float launch = mirs_c_time([&] { for (int i = 0; i < 1000; i++) mirs_c_empty<<<1, "
    "32>>>(); }, 5);\n"
    "    CK(cudaGetLastError());\n"
    "    printf(\"launch_us %.3f\\n\", launch / 1000 * 1e3);\n"
    "    /* Tensor cores: an 8192^3 product through cuBLAS for each type,\n"
    "     * f32 accumulation. */\n"
    "    cublasHandle_t h;\n    mirs_c_blas(cublasCreate(&h), \"cublasCreate\");\n"
    "    double tf = mirs_c_gemm<__half>(h, sms, CUDA_R_16F, CUBLAS_COMPUTE_32F);\n"
    "    if (tf <= 0)\n        exit(3);\n"
    "    printf(\"tc_f16_tflops %.1f\\n\", tf);\n"
    "    /* (Optional keys: printed where measured.) */\n"
    "    tf = mirs_c_gemm<__nv_bfloat16>(h, sms, CUDA_R_16BF, CUBLAS_COMPUTE_32F);\n"
    "    if (tf > 0)\n        printf(\"tc_bf16_tflops %.1f\\n\", tf);\n"
    "    tf = mirs_c_gemm<float>(h, sms, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);\n"
    "    if (tf > 0)\n        printf(\"tc_tf32_tflops %.1f\\n\", tf);\n"
    "    cublasDestroy(h);\n"
    "    /* f32 CUDA cores: 8 FMA chains a thread, 8 blocks of 1024 per SM. */\n"
    "    float *o;\n    const int iters = 4096, threads = sms * 8 * 1024;\n"
    "    CK(cudaMalloc(&o, (size_t)threads * 4));\n"
    "    float f = mirs_c_time([&] { mirs_c_fma<<<sms * 8, 1024>>>(o, iters); }, 5);\n"
    "    CK(cudaGetLastError());\n"
    "    printf(\"f32_tflops %.1f\\n\", 2.0 * 8 * iters * (double)threads / (f * 1e-3) / 1e12);\n"
    "    CK(cudaFree(o));\n    return 0;\n}\n";

/* The measured value of key in the calibration output, or NAN. */
static double cal_value(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, key, k) == 0 && p[k] == ' ')
      return atof(p + k + 1);
  return NAN;
}

/* Internal: see codegen.h. */
mirs_status mirs__codegen_cal_profile(mirs_context *ctx, const char *text, mirs__buf *b) {
  static const char *const keys[] = {"hbm_gbps",       "tc_f16_tflops",  "tc_bf16_tflops",
                                     "tc_tf32_tflops", "f32_tflops",     "launch_us",
                                     "hbm_saturation", "mem_latency_us", "smem_gbps"};
  static const char *const ints[] = {"smem_per_block", "sms", "l2_bytes", "max_threads_per_block"};
  char gpu[128] = "GPU";
  const char *nl = strstr(text, "name ");
  if (nl) {
    size_t n = strcspn(nl + 5, "\n");
    snprintf(gpu, sizeof gpu, "%.*s", (int)(n < sizeof gpu ? n : sizeof gpu - 1), nl + 5);
  }
  /* The device's name: the known profile its name contains, so that
   * --device-profile=FILE alone ranks for it; else the name's letters. */
  char name[MIRS__COST_NAME_SIZE] = "";
  static const char *const known[] = {"H200", "H100", "A100"};
  for (size_t i = 0; i < sizeof known / sizeof known[0] && !name[0]; i++)
    if (strstr(gpu, known[i]))
      snprintf(name, sizeof name, "%s", known[i]);
  if (!name[0]) {
    size_t j = 0;
    for (const char *p = gpu; *p && j + 1 < sizeof name; p++)
      if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          *p == '-')
        name[j++] = *p;
    name[j] = '\0';
    if (!name[0])
      snprintf(name, sizeof name, "GPU");
  }
  mirs__buf_printf(b,
                   "# Calibrated by `mirsearch bench --calibrate` (mirsearch %s) on %s.\n"
                   "# Measured: hbm_gbps (1 GiB grid-stride copy, bytes read + written),\n"
                   "# hbm_saturation (fewest eighths of the SMs reaching 90%% of it),\n"
                   "# mem_latency_us (bytes in flight over the bandwidth of loads whose\n"
                   "# number in flight bounds it: 1, 2, 4 of 16 bytes a thread, 256 an SM),\n"
                   "# launch_us (1000 empty kernels back to back), tc_f16_tflops,\n"
                   "# tc_bf16_tflops and tc_tf32_tflops (cuBLAS 8192^3 products of f16,\n"
                   "# bf16 and f32 in tf32, f32 accumulation, non-zero data), f32_tflops (FMA\n"
                   "# chains); medians of event-timed repetitions; smem_gbps is 128 bytes a\n"
                   "# clock per SM at the peak clock the device reports.  Read by\n"
                   "# --device-profile=FILE (data/devices.profile has the format).\n"
                   "device %s\n  description = %s (measured)\n",
                   mirs_version_string(), gpu, name, gpu);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    double v = cal_value(text, keys[i]);
    /* The optional keys are left out where not measured (the model's
     * defaults then), said in the file. */
    bool optional = strcmp(keys[i], "tc_bf16_tflops") == 0 ||
                    strcmp(keys[i], "tc_tf32_tflops") == 0 ||
                    strcmp(keys[i], "mem_latency_us") == 0;
    if (optional && !(v > 0 && isfinite(v))) {
      mirs__buf_printf(b, "  # %s: not measured (the default)\n", keys[i]);
      continue;
    }
    if (!(v > 0) || !isfinite(v))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "the calibration measured no valid %s", keys[i]);
    if (strcmp(keys[i], "hbm_saturation") == 0 && v > 1)
      v = 1;
    mirs__buf_printf(b, "  %s = %.6g\n", keys[i], v);
  }
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    double v = cal_value(text, ints[i]);
    if (!(v >= 1))
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "the calibration read no valid %s", ints[i]);
    mirs__buf_printf(b, "  %s = %.0f\n", ints[i], v);
  }
  return b->failed ? MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory") : MIRS_OK;
}

/* Public: measure GPU 0 and write a device profile to path. */
mirs_status mirs_codegen_calibrate(mirs_context *ctx, const char *path, const char *source_dir) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!path && !source_dir)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_codegen_calibrate: no path and no source_dir");
  mirs__buf src;
  mirs__buf_init(&src, ctx);
  mirs__buf_puts(&src, calibrate_head);
  mirs__buf_puts(&src, calibrate_helpers);
  mirs__buf_puts(&src, calibrate_main);
  mirs__buf_puts(&src, calibrate_main2);
  mirs_status s = src.failed ? MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory") : MIRS_OK;
  if (s == MIRS_OK && source_dir) {
    s = mirs__codegen_put_file(ctx, source_dir, "calibrate.cu", src.data, src.len);
    mirs__buf_free(&src);
    return s;
  }
#ifndef MIRS_NVCC
  mirs__buf_free(&src);
  if (s != MIRS_OK)
    return s;
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                   "built without CUDA: `bench --calibrate` needs nvcc and cuBLAS at configure "
                   "time (./configure --with-cuda=DIR)");
#else
  if (s == MIRS_OK)
    s = mirs__codegen_need_device(ctx);
  char dir[900] = "";
  if (s == MIRS_OK)
    s = mirs__codegen_tmpdir(ctx, "calibrate", dir, sizeof dir);
  if (s != MIRS_OK) {
    mirs__buf_free(&src);
    return s;
  }
  s = mirs__codegen_put_file(ctx, dir, "calibrate.cu", src.data, src.len);
  mirs__buf_free(&src);
  if (s == MIRS_OK)
    s = mirs__codegen_nvcc_build(ctx, dir, "calibrate.cu", "calibrate", "cublas", 0,
                                 "the calibration program does not compile");
  char prog[1024], outp[1024];
  snprintf(prog, sizeof prog, "%s/calibrate", dir);
  snprintf(outp, sizeof outp, "%s/out.txt", dir);
  if (s == MIRS_OK) {
    mirs__codegen_args a;
    a.n = 0;
    mirs__codegen_arg(&a, prog);
    s = mirs__codegen_spawn_checked(ctx, a.argv, outp, 0, MIRS_CUDA, "the calibration run failed");
  }
  char *text = NULL;
  size_t len = 0;
  if (s == MIRS_OK)
    s = mirs__core_read_file(ctx, outp, &text, &len);
  mirs__buf prof;
  mirs__buf_init(&prof, ctx);
  if (s == MIRS_OK)
    s = mirs__codegen_cal_profile(ctx, text, &prof);
  /* The file must parse as a profile before it replaces anything. */
  mirs__cost_profiles *check = NULL;
  if (s == MIRS_OK)
    s = mirs__cost_profiles_parse(ctx, prof.data, prof.len, path, &check);
  mirs__cost_profiles_free(check);
  if (s == MIRS_OK)
    s = mirs__core_write_atomic(ctx, path, prof.data, prof.len);
  mirs__buf_free(&prof);
  mirs__core_free(ctx, text);
  static const char *const names[] = {"calibrate.cu", "calibrate", "out.txt", "log"};
  mirs__codegen_remove_dir(dir, names, sizeof names / sizeof names[0]);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
#endif
}
