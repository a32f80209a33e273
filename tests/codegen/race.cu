/* SPDX-License-Identifier: MIT */
/* tests/codegen/race.cu - a hand-written kernel with a planted race, for
 * the emulator's randomised thread order (tests/check_codegen.c).
 *
 * Each thread of a block writes its element to shared memory and then
 * reads its neighbour's: out[i] = 2 * in[i + d] within each block, d = -1
 * or +1 (argv[1]), the edge thread reading its own.  Compiled with
 * -DBARRIER=1 a __syncthreads() separates the write from the read and the
 * kernel is correct in any thread order; with -DBARRIER=0 the barrier is
 * missing and the result depends on which thread runs first.  In index
 * order (emulator seed 0, the old scheduler) d = -1 always works (thread
 * t-1 has written before thread t reads) and d = +1 never does: only a
 * random order catches the race in both directions.
 *
 *   race D        exit 0 when every element is right, 1 (and the first
 *                 wrong element) otherwise, 3 on an emulator fault.
 * Builds as host C++ (-DMIRS_HOST_EMULATION, mirsearch_emu.h, thread
 * order from MIRS_EMU_SEED) or with nvcc. */
#ifdef MIRS_HOST_EMULATION
#include "mirsearch_emu.h"
#else
#include <cuda_runtime.h>
#define MIRS_LAUNCH(k, grid, block, smem, stream, args) k<<<grid, block, smem, stream>>> args
#define MIRS_SHARED_FLOATS(name) extern __shared__ __align__(16) float name[]
#endif
#include <stdio.h>
#include <stdlib.h>

#ifndef BARRIER
#error "compile with -DBARRIER=0 (the race planted) or -DBARRIER=1"
#endif

enum { N = 64, BLOCKS = 4 };

/* out[i] = 2 * in[i + d] within the block (the edge thread: its own). */
__global__ void neighbour(const float *in, float *out, int d) {
  MIRS_SHARED_FLOATS(s);
  const int t = (int)threadIdx.x, i = (int)blockIdx.x * N + t;
  s[t] = 2.0f * in[i];
#if BARRIER
  __syncthreads();
#endif
  const int u = t + d < 0 || t + d >= N ? t : t + d;
  out[i] = s[u];
}

int main(int argc, char **argv) {
  const int d = argc > 1 ? atoi(argv[1]) : -1;
  if (d != -1 && d != 1) {
    fprintf(stderr, "usage: race -1|1\n");
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
  MIRS_LAUNCH(neighbour, dim3(BLOCKS), dim3(N), N * sizeof(float), (cudaStream_t)0, (in, out, d));
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost) != cudaSuccess) {
    fprintf(stderr, "race: the kernel failed\n");
    return 3;
  }
  for (int i = 0; i < N * BLOCKS; i++) {
    const int t = i % N, u = t + d < 0 || t + d >= N ? i : i + d;
    if (h_out[i] != 2.0f * h_in[u]) {
      printf("race: out[%d] = %g, expected %g\n", i, (double)h_out[i], 2.0 * h_in[u]);
      return 1;
    }
  }
  cudaFree(in);
  cudaFree(out);
  return 0;
}
