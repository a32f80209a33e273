/* SPDX-License-Identifier: MIT */
/* tests/codegen/pending.cu - the generated entry point leaves an earlier
 * CUDA error to its owner (tests/check_codegen.c): with an error pending
 * on the thread it launches nothing, returns MIRS_GEN_PENDING_ERROR and
 * the error is still there for cudaPeekAtLastError/cudaGetLastError; once
 * the owner has taken it, the same call succeeds.  Host C++ through the
 * emulation header; includes the generated iface.cu (tests/codegen/
 * iface.graph).  Exit 0 when all hold. */
#include "iface.cu"

#include <stdio.h>

int main(void) {
  void *x = NULL, *w = NULL, *y = NULL, *s = NULL, *ws = NULL;
  size_t wsb = mirs_iface_workspace_bytes();
  if (cudaMalloc(&x, 4 * 8 * 4) || cudaMalloc(&w, 8 * 16 * 4) || cudaMalloc(&y, 4 * 16 * 4) ||
      cudaMalloc(&s, 4 * 4) || cudaMalloc(&ws, wsb))
    return 3;
  memset(y, 0, 4 * 16 * 4);
  /* Somebody's earlier mistake: an invalid device, not yet read. */
  if (cudaSetDevice(1) != cudaErrorInvalidDevice)
    return 3;
  int st = mirs_iface(x, w, y, s, ws, wsb, NULL);
  if (st != MIRS_GEN_PENDING_ERROR) {
    printf("pending: status %d (%s), expected MIRS_GEN_PENDING_ERROR\n", st,
           mirs_iface_status_string(st));
    return 1;
  }
  if (cudaPeekAtLastError() != cudaErrorInvalidDevice || cudaGetLastError() != cudaErrorInvalidDevice) {
    printf("pending: the earlier error was swallowed\n");
    return 1;
  }
  st = mirs_iface(x, w, y, s, ws, wsb, NULL);
  if (st != MIRS_GEN_OK) {
    printf("pending: status %d (%s) once the error was taken\n", st, mirs_iface_status_string(st));
    return 1;
  }
  printf("pending: the earlier error was left to its owner\n");
  return 0;
}
