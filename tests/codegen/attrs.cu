/* SPDX-License-Identifier: MIT */
/* tests/codegen/attrs.cu - kernel attributes once per device, and launch
 * errors per launch (tests/check_codegen.c).  Includes the generated
 * big_smem.cu (tests/codegen/big_smem.ugraph: 112 KB of shared memory),
 * host-emulated:
 *  - two calls succeed and set the shared-memory attribute once;
 *  - when the device forgets it (the emulator's attributes cleared, as
 *    after a device reset, while the entry point's per-device flag stays
 *    set), the launch is refused as on the device and the call returns
 *    that launch's error, cudaErrorInvalidValue, without leaving it
 *    pending.
 * Exit 0 when all hold. */
#include "big_smem.cu"

#include <stdio.h>

int main(void) {
  void *x = NULL, *w = NULL, *y = NULL;
  if (cudaMalloc(&x, 64 * 64 * 2) || cudaMalloc(&w, 64 * 128 * 2) || cudaMalloc(&y, 64 * 128 * 2))
    return 3;
  memset(x, 0, 64 * 64 * 2);
  memset(w, 0, 64 * 128 * 2);
  for (int call = 0; call < 2; call++) {
    int st = mirs_big_smem(x, w, y, NULL, 0, NULL);
    if (st != MIRS_GEN_OK || mirs_emu::attribute_calls != 1) {
      printf("attrs: call %d: status %d (%s), %ld attribute calls\n", call, st,
             mirs_big_smem_status_string(st), mirs_emu::attribute_calls);
      return 1;
    }
  }
  mirs_emu::nattributes = 0;
  int st = mirs_big_smem(x, w, y, NULL, 0, NULL);
  if (st != cudaErrorInvalidValue || cudaPeekAtLastError() != cudaSuccess) {
    printf("attrs: without the attribute: status %d (%s), pending %d\n", st,
           mirs_big_smem_status_string(st), (int)cudaPeekAtLastError());
    return 1;
  }
  printf("attrs: set once per device; the refused launch's error returned (%s)\n",
         mirs_big_smem_status_string(st));
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return 0;
}
