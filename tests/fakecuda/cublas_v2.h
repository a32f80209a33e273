/* SPDX-License-Identifier: MIT */
/* tests/fakecuda/cublas_v2.h - for tests/bench_emulated.sh: what a
 * `mirsearch bench` harness needs beyond the emulation header
 * (src/codegen/emu.h, included before this by the generated code):
 *  - cuBLAS's strided batched product on the host, with cuBLAS's
 *    column-major meaning (C[i + j ldc] = alpha sum_p A[i + p lda]
 *    B[p + j ldb] + beta C), so the harness's row-major-as-transposed
 *    call is checked against the float64 interpreter;
 *  - streams, events (host clock), asynchronous memsets, device
 *    properties and CUDA graphs (a capture runs the work once; a replay does nothing) as the
 *    runtime API spells them.
 * What the emulation header itself defines (cudaGetDevice, cudaMemset,
 * cudaStreamSynchronize, cudaDeviceGetAttribute with its small L2, ...)
 * is not repeated here.
 * Everything is synchronous; times are host times and mean nothing. */
#ifndef MIRS_FAKE_CUBLAS_V2_H
#define MIRS_FAKE_CUBLAS_V2_H

#include <chrono>

/* ---------------------------------------------------------------- runtime extras */

enum { cudaErrorUnknown = 999, cudaStreamNonBlocking = 1 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal = 1 };
struct cudaDeviceProp {
  char name[256];
  int multiProcessorCount;
};
typedef struct mirs_fake_event {
  double t;
} *cudaEvent_t;
typedef struct mirs_fake_graph {
  int unused;
} *cudaGraph_t;
typedef struct mirs_fake_graph_exec {
  int unused;
} *cudaGraphExec_t;

static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
  *s = NULL;
  return cudaSuccess;
}
/* (cudaMemsetAsync: the emulator's, mirsearch_emu.h.) */
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  snprintf(p->name, sizeof p->name, "Emulated H100");
  p->multiProcessorCount = 132;
  return cudaSuccess;
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = (cudaEvent_t)calloc(1, sizeof **e);
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = NULL) {
  e->t = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
             .count();
  return cudaSuccess;
}
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = (float)(b->t - a->t);
  return cudaSuccess;
}
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}
static inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  return cudaSuccess;
}
static inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g) {
  *g = (cudaGraph_t)calloc(1, sizeof **g);
  return *g ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t, unsigned long long) {
  *x = (cudaGraphExec_t)calloc(1, sizeof **x);
  return *x ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) {
  return cudaSuccess;
}
static inline cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  free(g);
  return cudaSuccess;
}
static inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  free(x);
  return cudaSuccess;
}

/* ---------------------------------------------------------------- cuBLAS */

typedef int cublasStatus_t;
typedef struct mirs_fake_blas {
  int unused;
} *cublasHandle_t;
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };

static inline cublasStatus_t cublasCreate(cublasHandle_t *h) {
  *h = (cublasHandle_t)calloc(1, sizeof **h);
  return *h ? CUBLAS_STATUS_SUCCESS : 3;
}
static inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
static inline cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
static inline float mirs_fake_ld(const void *p, long long i, cudaDataType t) {
  return t == CUDA_R_16F    ? __half2float(((const __half *)p)[i])
         : t == CUDA_R_16BF ? __bfloat162float(((const __nv_bfloat16 *)p)[i])
                            : ((const float *)p)[i];
}
static inline void mirs_fake_st(void *p, long long i, cudaDataType t, float v) {
  if (t == CUDA_R_16F)
    ((__half *)p)[i] = __float2half_rn(v);
  else if (t == CUDA_R_16BF)
    ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
  else
    ((float *)p)[i] = v;
}
static inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType at, int lda, long long sa, const void *B,
    cudaDataType bt, int ldb, long long sb, const void *beta, void *C, cudaDataType ct, int ldc,
    long long sc, int batch, cublasComputeType_t, cublasGemmAlgo_t) {
  if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || lda < m || ldb < k || ldc < m)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const float al = *(const float *)alpha, be = *(const float *)beta;
  for (int b = 0; b < batch; b++)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < m; i++) {
        float acc = 0;
        for (int p = 0; p < k; p++)
          acc += mirs_fake_ld(A, b * sa + i + (long long)p * lda, at) *
                 mirs_fake_ld(B, b * sb + p + (long long)j * ldb, bt);
        long long c = b * sc + i + (long long)j * ldc;
        mirs_fake_st(C, c, ct, al * acc + (be != 0 ? be * mirs_fake_ld(C, c, ct) : 0.0f));
      }
  return CUBLAS_STATUS_SUCCESS;
}

#endif
