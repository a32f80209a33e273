/* SPDX-License-Identifier: MIT */
/* src/gpu/device.c - GPU availability through the CUDA runtime.
 *
 * The only file in this module so far; it includes CUDA headers only
 * when configured with CUDA.  Without CUDA, or with no device, the
 * functions report MIRS_NO_DEVICE with a message saying why, so callers
 * (the --verify=auto choice, GPU tests that skip) can decide. */
#include "config.h"

#include <stdio.h>

#include "core/core.h"
#include "mirsearch/gpu.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

/* Convert a CUDA runtime error into a context error (once, at the boundary). */
static mirs_status cuda_fail(mirs_context *ctx, cudaError_t e, const char *what) {
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "%s: %s", what, cudaGetErrorString(e));
  return MIRS_FAIL(ctx, MIRS_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Number of usable CUDA devices. */
mirs_status mirs_gpu_device_count(mirs_context *ctx, int *count) {
  if (!ctx || !count)
    return MIRS_INVALID_ARG;
  *count = 0;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    return cuda_fail(ctx, e, "cudaGetDeviceCount");
  if (n == 0)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "the CUDA driver reports no device");
  *count = n;
  return MIRS_OK;
}

/* Name of device index. */
mirs_status mirs_gpu_device_name(mirs_context *ctx, int index, char *buf, size_t size) {
  if (!ctx || !buf || !size)
    return MIRS_INVALID_ARG;
  int n;
  MIRS_CHECK(ctx, mirs_gpu_device_count(ctx, &n));
  if (index < 0 || index >= n)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "device %d does not exist (%d devices)", index, n);
  struct cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, index);
  if (e != cudaSuccess)
    return cuda_fail(ctx, e, "cudaGetDeviceProperties");
  snprintf(buf, size, "%s (sm_%d%d, %zu MiB)", prop.name, prop.major, prop.minor,
           prop.totalGlobalMem >> 20);
  return MIRS_OK;
}

#else

/* Built without CUDA: there is no device. */
mirs_status mirs_gpu_device_count(mirs_context *ctx, int *count) {
  if (!ctx || !count)
    return MIRS_INVALID_ARG;
  *count = 0;
  return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "mirsearch was built without CUDA (configure --with-cuda)");
}

/* Built without CUDA: there is no device. */
mirs_status mirs_gpu_device_name(mirs_context *ctx, int index, char *buf, size_t size) {
  (void)index;
  if (!ctx || !buf || !size)
    return MIRS_INVALID_ARG;
  buf[0] = '\0';
  return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "mirsearch was built without CUDA (configure --with-cuda)");
}

#endif
