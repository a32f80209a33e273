/* SPDX-License-Identifier: MIT */
/* mirsearch/gpu.h - GPU availability.  No CUDA headers are needed to use
 * this file; a library built without CUDA reports MIRS_NO_DEVICE. */
#ifndef MIRSEARCH_GPU_H
#define MIRSEARCH_GPU_H

#include "mirsearch/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices usable by this process.  MIRS_NO_DEVICE (and
 * *count = 0) when the library was built without CUDA or the driver
 * reports none; the context's message says why. */
MIRS_API mirs_status mirs_gpu_device_count(mirs_context *ctx, int *count);
/* Name of device `index` into buf. */
MIRS_API mirs_status mirs_gpu_device_name(mirs_context *ctx, int index, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
