/* SPDX-License-Identifier: MIT */
/* tests/codegen/emu_faults.cu - hand-written kernels that break a device
 * rule, for the emulator's checks (tests/check_codegen.c).  Host C++ only:
 * compile with -DMIRS_HOST_EMULATION and mirsearch_emu.h on the include
 * path.  `emu_faults MODE` exits:
 *   launch limits (the launch must fail as on the device, leaving the
 *   CUDA error for cudaGetLastError, and the kernel must not run):
 *     smem      64 KB of dynamic shared memory: refused without the
 *               attribute, runs once cudaFuncSetAttribute raised the limit,
 *               refused again above the 227 KB the attribute may allow
 *     grid      grid.y = 65536, grid.z = 65536, 1025 threads, block.z = 65:
 *               each refused; grid.y = 65535 runs
 *     pdl       programmatic dependent launch (cudaLaunchKernelEx with the
 *               programmatic stream serialization attribute): a kernel
 *               that waits (mirs_pdl_wait) before its loads runs and is
 *               counted, an attribute the emulator does not know is
 *               refused, a plain launch needs no wait
 *     0 when the emulator behaved as the device, 1 otherwise;
 *   faults (the emulator must end the run, exit 3, saying what):
 *     oob-read  a load one float past the launch's dynamic shared memory
 *     oob-write a store one float past it
 *     misalign  a 16-byte access checked with MIRS_EMU_CHECK_ALIGN at an
 *               address 8 bytes past a 16-byte boundary
 *     deadlock  __syncthreads() reached by half the block
 *     pdl-early a programmatic dependent launch that loads from global
 *               memory before its mirs_pdl_wait (it would race with the
 *               kernel before it on the device). */
#include "mirsearch_emu.h"

#include <stdio.h>
#include <string.h>

/* Every thread writes and reads back the last float of its shared memory. */
__global__ void fill(int floats, int *ok) {
  MIRS_SHARED_FLOATS(s);
  if (threadIdx.x == 0)
    s[floats - 1] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0)
    *ok = mirs_ld(s + floats - 1) == 1.0f;
}

/* Counts the blocks that ran. */
__global__ void count(int *n) {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
    ++*n;
}

/* Reads (write = 0) or writes one float past `floats`. */
__global__ void stray(int floats, int write) {
  MIRS_SHARED_FLOATS(s);
  if (write)
    s[floats] = 1.0f;
  else
    (void)mirs_ld(s + floats);
}

/* A 16-byte access 8 bytes past a 16-byte boundary. */
__global__ void misaligned(const float *p) {
  const float *q = p + 2;
  MIRS_EMU_CHECK_ALIGN(q, 16);
}

/* Half the block waits at a barrier the other half never reaches. */
__global__ void half_barrier(void) {
  if (threadIdx.x < blockDim.x / 2)
    __syncthreads();
}

/* Whether a launch was refused with error e (and reset it). */
static bool refused(cudaError_t e, const char *what) {
  cudaError_t got = cudaGetLastError();
  if (got != e) {
    printf("emu_faults: %s: got %s, expected %s\n", what, cudaGetErrorName(got),
           cudaGetErrorName(e));
    return false;
  }
  return true;
}

/* Adds 1 to *n, its load after the wait (wait_first) or before it. */
__global__ void increment(float *n, int wait_first) {
  if (wait_first)
    mirs_pdl_wait();
  const float v = mirs_ld(n);
  if (!wait_first)
    mirs_pdl_wait();
  mirs_st(n, v + 1.0f);
}

/* Launch increment(n, wait_first) with attribute `id` (programmatic
 * stream serialization: allowed); the launch's status. */
static cudaError_t launch_ex(float *n, int wait_first, cudaLaunchAttributeID id) {
  cudaLaunchAttribute attr[1];
  attr[0].id = id;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(1);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, increment, n, wait_first);
}

/* Run `mode` with the device counter n; the exit status. */
static int run_mode(const char *mode, int *n) {
  if (strcmp(mode, "smem") == 0) {
    const int bytes = 64 * 1024;
    MIRS_LAUNCH(fill, dim3(1), dim3(32), bytes, 0, (bytes / 4, n));
    bool good = refused(cudaErrorInvalidValue, "64 KB without the attribute") && *n == 0;
    good = good && cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        bytes) == cudaSuccess;
    MIRS_LAUNCH(fill, dim3(1), dim3(32), bytes, 0, (bytes / 4, n));
    good = good && refused(cudaSuccess, "64 KB with the attribute") && *n == 1;
    good = good && cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        228 * 1024) == cudaErrorInvalidValue;
    good = good && refused(cudaErrorInvalidValue, "the attribute above 227 KB");
    return good ? 0 : 1;
  }
  if (strcmp(mode, "grid") == 0) {
    MIRS_LAUNCH(count, dim3(1, 65536), dim3(1), 0, 0, (n));
    bool good = refused(cudaErrorInvalidConfiguration, "grid.y = 65536");
    MIRS_LAUNCH(count, dim3(1, 1, 65536), dim3(1), 0, 0, (n));
    good = good && refused(cudaErrorInvalidConfiguration, "grid.z = 65536");
    MIRS_LAUNCH(count, dim3(1), dim3(1025), 0, 0, (n));
    good = good && refused(cudaErrorInvalidConfiguration, "1025 threads");
    MIRS_LAUNCH(count, dim3(1), dim3(1, 1, 65), 0, 0, (n));
    good = good && refused(cudaErrorInvalidConfiguration, "block.z = 65") && *n == 0;
    MIRS_LAUNCH(count, dim3(1, 65535), dim3(1), 0, 0, (n));
    good = good && refused(cudaSuccess, "grid.y = 65535") && *n == 65535;
    return good ? 0 : 1;
  }
  if (strcmp(mode, "oob-read") == 0 || strcmp(mode, "oob-write") == 0) {
    MIRS_LAUNCH(stray, dim3(1), dim3(32), 1024, 0, (256, mode[4] == 'w'));
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
  }
  if (strcmp(mode, "misalign") == 0) {
    MIRS_LAUNCH(misaligned, dim3(1), dim3(1), 0, 0, ((const float *)n));
    return 0;
  }
  if (strcmp(mode, "deadlock") == 0) {
    MIRS_LAUNCH(half_barrier, dim3(1), dim3(64), 0, 0, ());
    return 0;
  }
  if (strcmp(mode, "pdl") == 0 || strcmp(mode, "pdl-early") == 0) {
    float *f = (float *)n;
    *f = 0.0f;
    int major = 0;
    bool good = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess &&
                major == 9;
    good = good && launch_ex(f, mode[3] != '-', cudaLaunchAttributeProgrammaticStreamSerialization) ==
                       cudaSuccess;
    good = good && *f == 1.0f && mirs_emu::pdl_launches == 1;
    good = good && launch_ex(f, 1, (cudaLaunchAttributeID)1) == cudaErrorInvalidValue &&
           refused(cudaErrorInvalidValue, "an unknown launch attribute") && *f == 1.0f;
    MIRS_LAUNCH(increment, dim3(1), dim3(1), 0, 0, (f, 0));
    good = good && refused(cudaSuccess, "a plain launch loading before its wait") && *f == 2.0f &&
           mirs_emu::pdl_launches == 1;
    return good ? 0 : 1;
  }
  fprintf(stderr, "usage: emu_faults smem|grid|oob-read|oob-write|misalign|deadlock|pdl|pdl-early\n");
  return 2;
}

int main(int argc, char **argv) {
  int *n = NULL;
  if (cudaMalloc((void **)&n, sizeof(int)) != cudaSuccess)
    return 3;
  *n = 0;
  int rc = run_mode(argc > 1 ? argv[1] : "", n);
  cudaFree(n);
  return rc;
}
