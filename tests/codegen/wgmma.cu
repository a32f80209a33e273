/* SPDX-License-Identifier: MIT */
/* tests/codegen/wgmma.cu - the emulator's wgmma stand-ins (emu.h) against
 * the PTX ISA's own description, independent of the generator
 * (tests/check_hopper.c).
 *
 * One warpgroup computes D = A.B, m64n16k16, f16.  The operands are placed
 * in shared memory by the canonical layouts of the PTX ISA table
 * ("Canonical Layouts", no swizzle; T = 8 16-bit elements per 16 bytes):
 *  - A, K-major ((8,m),(T,2k)):((1T,SBO),(1,LBO)), with SBO = 256 and
 *    LBO = 128 bytes (not the generator's choice: its K groups are
 *    farther apart than its row groups);
 *  - B, N-major ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)), the ISA's worked
 *    example ((8,1,2),(8,2)):((1,8,64),(8,128)): LBO = 256, SBO = 128 bytes.
 * Each thread reads back its accumulator fragment by the ISA's m64nNk16
 * D layout (row 16 (warp % 4) + lane / 4 (+ 8 for registers 2, 3 of each
 * 4), column 8 (i / 4) + 2 (lane % 4) + i % 2) and compares with a
 * reference product (small values: exact in f32).
 *
 * Modes: ok (exit 0); swap (LBO and SBO exchanged in both descriptors:
 * exit 1, wrong values); early (the accumulators read before
 * wgmma.wait_group: exit 1); nofence (no wgmma.fence: exit 3); noproxy
 * (no fence.proxy.async after the shared-memory writes: exit 3); split
 * (warp 3 gives B other LBO and SBO: not warpgroup-uniform, exit 3).
 * Emulator only (-DMIRS_HOST_EMULATION). */
#ifndef MIRS_HOST_EMULATION
#error "tests/codegen/wgmma.cu tests the host emulator: compile with -DMIRS_HOST_EMULATION"
#endif
#include "mirsearch_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 64, N = 16, K = 16, NT = 128 };

static float a_val(int r, int c) {
  return (float)((r * 3 + c * 5) % 7 - 3) * 0.25f;
}
static float b_val(int k, int n) {
  return (float)((k * 2 + n * 3) % 5 - 2) * 0.5f;
}
/* Element offsets of the canonical layouts above. */
static int a_off(int r, int c) {
  return (r % 8) * 8 + (r / 8) * 128 + (c % 8) + (c / 8) * 64;
}
static int b_off(int k, int n) {
  return (n % 8) + (n / 8) * 64 + (k % 8) * 8 + (k / 8) * 128;
}

static int mode; /* 0 ok, 1 swap, 2 early, 3 nofence, 4 noproxy, 5 split */

__global__ void product(float *out) {
  MIRS_SHARED_FLOATS(s);
  __half *sa = (__half *)s, *sb = (__half *)s + M * K;
  const int t = (int)threadIdx.x;
  for (int e = t; e < M * K; e += NT)
    sa[a_off(e / K, e % K)] = __float2half_rn(a_val(e / K, e % K));
  for (int e = t; e < K * N; e += NT)
    sb[b_off(e / N, e % N)] = __float2half_rn(b_val(e / N, e % N));
  if (mode != 4)
    mirs_fence_proxy_async();
  __syncthreads();
  float d[N / 8][4] = {};
  uint64_t da = mode == 1 ? mirs_wg_desc(sa, 256, 128) : mirs_wg_desc(sa, 128, 256);
  uint64_t db = mode == 1 ? mirs_wg_desc(sb, 128, 256) : mirs_wg_desc(sb, 256, 128);
  if (mode == 5 && t / 32 == 3)
    db = mirs_wg_desc(sb, 128, 256);
  if (mode != 3)
    mirs_wgmma_fence();
  mirs_emu_wgmma(&d[0][0], N, da, db, false);
  mirs_wgmma_commit();
  float early[N / 8][4];
  memcpy(early, d, sizeof d);
  mirs_wgmma_wait<0>();
  const int warp = t / 32, lane = t % 32;
  for (int i = 0; i < N / 2; i++) {
    int row = 16 * (warp % 4) + lane / 4 + 8 * ((i % 4) / 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    out[row * N + col] = mode == 2 ? early[i / 4][i % 4] : d[i / 4][i % 4];
  }
}

int main(int argc, char **argv) {
  static const char *const modes[] = {"ok", "swap", "early", "nofence", "noproxy", "split"};
  mode = -1;
  for (int i = 0; i < 6; i++)
    if (argc > 1 && strcmp(argv[1], modes[i]) == 0)
      mode = i;
  if (mode < 0) {
    fprintf(stderr, "usage: wgmma ok|swap|early|nofence|noproxy|split\n");
    return 2;
  }
  float *out = NULL, h[M * N];
  if (cudaMalloc((void **)&out, sizeof h) != cudaSuccess)
    return 3;
  MIRS_LAUNCH(product, dim3(1), dim3(NT), (M * K + K * N) * 2, (cudaStream_t)0, (out));
  if (cudaGetLastError() != cudaSuccess ||
      cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess)
    return 3;
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++) {
      float ref = 0.0f;
      for (int k = 0; k < K; k++)
        ref += a_val(r, k) * b_val(k, c);
      if (h[r * N + c] != ref) {
        printf("wgmma: D[%d][%d] = %g, expected %g\n", r, c, (double)h[r * N + c], (double)ref);
        return 1;
      }
    }
  cudaFree(out);
  return 0;
}
