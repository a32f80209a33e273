/* SPDX-License-Identifier: MIT */
/* tests/codegen/pdl.cu - programmatic dependent launches of a generated
 * entry point (tests/check_codegen.c).  Includes the generated
 * f32_mixed.cu (tests/codegen/f32_mixed.ugraph: six kernels, predefined
 * and custom, and an output copy), host-emulated.  `pdl MAJOR [PTX]` sets
 * the emulated device's compute capability to MAJOR.0 (and the PTX version
 * its kernels report they were compiled from to PTX: 80 is an sm_80 build
 * the driver JIT-compiled, whose kernels have no wait), calls the entry
 * point twice on fixed inputs and prints
 *   pdl: N programmatic launches, checksum X
 * N: the launches the emulator ran with the programmatic stream
 * serialization attribute (6 per call from MAJOR 9 on with code from PTX
 * 9.0 or later: every launch but the first; 0 otherwise), X: the sum of the outputs' values, weighted by
 * position (both compute capabilities must give the same).  Exit 0 when
 * both calls return MIRS_GEN_OK. */
#include "f32_mixed.cu"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  mirs_emu::compute_major = argc > 1 ? atoi(argv[1]) : 9;
  mirs_emu::ptx_version = argc > 2 ? atoi(argv[2]) : 0;
  enum { NA = 4 * 32, NP = 2 * 4 * 8, NR = 8 * 4, NH = 4, NM = 2 * 4 * 4 };
  float *a = NULL, *b = NULL, *p = NULL, *r = NULL, *e = NULL, *h = NULL, *m = NULL, *c = NULL;
  void *w = NULL;
  if (cudaMalloc((void **)&a, NA * 4) || cudaMalloc((void **)&b, NA * 4) ||
      cudaMalloc((void **)&p, NP * 4) || cudaMalloc((void **)&r, NR * 4) ||
      cudaMalloc((void **)&e, NA * 4) || cudaMalloc((void **)&h, NH * 4) ||
      cudaMalloc((void **)&m, NM * 4) || cudaMalloc((void **)&c, NA * 4) ||
      cudaMalloc(&w, mirs_f32_mixed_workspace_bytes()))
    return 3;
  for (int i = 0; i < NA; i++) {
    a[i] = (float)(i % 7) * 0.25f - 0.5f;
    b[i] = (float)(i % 5) * 0.125f + 0.25f;
  }
  for (int i = 0; i < NP; i++)
    p[i] = (float)(i % 3) - 1.0f;
  for (int i = 0; i < NR; i++)
    r[i] = (float)(i % 4) * 0.5f;
  for (int call = 0; call < 2; call++) {
    int st = mirs_f32_mixed(a, b, p, r, e, h, m, c, w, mirs_f32_mixed_workspace_bytes(), NULL);
    if (st != MIRS_GEN_OK) {
      printf("pdl: call %d: status %d (%s)\n", call, st, mirs_f32_mixed_status_string(st));
      return 1;
    }
  }
  double sum = 0;
  for (int i = 0; i < NA; i++)
    sum += (i + 1) * ((double)e[i] + 3.0 * c[i]);
  for (int i = 0; i < NH; i++)
    sum += (i + 1) * 5.0 * h[i];
  for (int i = 0; i < NM; i++)
    sum += (i + 1) * 7.0 * m[i];
  printf("pdl: %lu programmatic launches, checksum %.9e\n", mirs_emu::pdl_launches, sum);
  cudaFree(a);
  cudaFree(b);
  cudaFree(p);
  cudaFree(r);
  cudaFree(e);
  cudaFree(h);
  cudaFree(m);
  cudaFree(c);
  cudaFree(w);
  return 0;
}
