/* SPDX-License-Identifier: MIT */
/* tests/codegen/race.cu - hand-written kernels with planted races, for
 * the emulator's randomised thread order (tests/check_codegen.c).
 *
 * `race -1` and `race 1`: each thread of a block writes its element to
 * shared memory and then reads its neighbour's: out[i] = 2 * in[i + d]
 * within each block (the edge thread reads its own).  With -DSYNCED=1 a
 * __syncthreads() separates the write from the read and the kernel is
 * right in any thread order; with -DSYNCED=0 the barrier is missing and
 * the result depends on which thread runs first.  In index order
 * (emulator seed 0, the old scheduler) d = -1 always works (thread t-1
 * has written before thread t reads) and d = +1 never does: only a random
 * order catches the race in both directions.
 *
 * `race sum`: every thread adds its element into one shared total, a
 * read-modify-write (mirs_ld, then mirs_st) with -DSYNCED=0, atomicAdd
 * with -DSYNCED=1.  Whole segments between barriers run one at a time in
 * the emulator, so the lost update shows only when a thread is switched
 * out between its read and its write: the emulator's switch points at
 * memory accesses, not only at barriers.
 *
 * Exit 0 when every element is right, 1 (and the first wrong element)
 * otherwise, 3 on an emulator fault.  Builds as host C++
 * (-DMIRS_HOST_EMULATION, mirsearch_emu.h, thread order from
 * MIRS_EMU_SEED) or with nvcc. */
#ifdef MIRS_HOST_EMULATION
#include "mirsearch_emu.h"
#else
#include <cuda_runtime.h>
#define MIRS_LAUNCH(k, grid, block, smem, stream, args) k<<<grid, block, smem, stream>>> args
#define MIRS_SHARED_FLOATS(name) extern __shared__ __align__(16) float name[]
__device__ __forceinline__ float mirs_ld(const float *p) { return *p; }
__device__ __forceinline__ void mirs_st(float *p, float v) { *p = v; }
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SYNCED
#error "compile with -DSYNCED=0 (the races planted) or -DSYNCED=1"
#endif

enum { N = 64, BLOCKS = 4 };

/* out[i] = 2 * in[i + d] within the block (the edge thread: its own). */
__global__ void neighbour(const float *in, float *out, int d) {
  MIRS_SHARED_FLOATS(s);
  const int t = (int)threadIdx.x, i = (int)blockIdx.x * N + t;
  s[t] = 2.0f * in[i];
#if SYNCED
  __syncthreads();
#endif
  const int u = t + d < 0 || t + d >= N ? t : t + d;
  out[i] = s[u];
}

/* out[b] = the sum of block b's elements. */
__global__ void total(const float *in, float *out) {
  MIRS_SHARED_FLOATS(s);
  const int t = (int)threadIdx.x, i = (int)blockIdx.x * N + t;
  if (t == 0)
    s[0] = 0.0f;
  __syncthreads();
#if SYNCED
  atomicAdd(s, in[i]);
#else
  mirs_st(s, mirs_ld(s) + in[i]);
#endif
  __syncthreads();
  if (t == 0)
    out[blockIdx.x] = s[0];
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const bool sum = strcmp(mode, "sum") == 0;
  const int d = atoi(mode);
  if (!sum && d != -1 && d != 1) {
    fprintf(stderr, "usage: race -1|1|sum\n");
    return 2;
  }
  float h_in[N * BLOCKS], h_out[N * BLOCKS];
  for (int i = 0; i < N * BLOCKS; i++)
    h_in[i] = (float)(i + 1);
  float *in = NULL, *out = NULL;
  if (cudaMalloc((void **)&in, sizeof h_in) != cudaSuccess ||
      cudaMalloc((void **)&out, sizeof h_out) != cudaSuccess ||
      cudaMemcpy(in, h_in, sizeof h_in, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "race: cannot set up the buffers\n");
    return 3;
  }
  if (sum)
    MIRS_LAUNCH(total, dim3(BLOCKS), dim3(N), sizeof(float), (cudaStream_t)0, (in, out));
  else
    MIRS_LAUNCH(neighbour, dim3(BLOCKS), dim3(N), N * sizeof(float), (cudaStream_t)0,
                (in, out, d));
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "race: the kernel failed\n");
    return 3;
  }
  int rc = 0;
  for (int b = 0; sum && b < BLOCKS && rc == 0; b++) {
    float expect = 0.0f; /* small integers: exact in any order */
    for (int t = 0; t < N; t++)
      expect += h_in[b * N + t];
    if (h_out[b] != expect) {
      printf("race: out[%d] = %g, expected %g\n", b, (double)h_out[b], (double)expect);
      rc = 1;
    }
  }
  for (int i = 0; !sum && i < N * BLOCKS && rc == 0; i++) {
    const int t = i % N, u = t + d < 0 || t + d >= N ? i : i + d;
    if (h_out[i] != 2.0f * h_in[u]) {
      printf("race: out[%d] = %g, expected %g\n", i, (double)h_out[i], 2.0 * h_in[u]);
      rc = 1;
    }
  }
  cudaFree(in);
  cudaFree(out);
  return rc;
}
