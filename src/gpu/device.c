/* SPDX-License-Identifier: MIT */
/* src/gpu/device.c - GPU availability through the CUDA runtime.
 *
 * The only file in this module so far.  Configured with CUDA, it loads
 * the CUDA driver at run time (dlopen of libcuda.so.1), so the library
 * links no CUDA library and works on machines without one.  Without
 * CUDA, or with no driver or device, the functions report MIRS_NO_DEVICE
 * with a message saying why, so callers (the --verify=auto choice, GPU
 * tests that skip) can decide. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "mirsearch/gpu.h"

#ifdef HAVE_CUDA
#include <dlfcn.h>

/* The CUDA driver API, loaded at run time: libmirsearch has no link-time
 * CUDA dependency (an embedder without a GPU needs no CUDA library, and
 * the installed library names no toolkit path), and the driver's C ABI
 * is stable across toolkit versions.  Only plain-int and pointer
 * signatures are used, so no CUDA header is needed either. */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_errstr_fn)(int, const char **);

enum {
  CU_SUCCESS = 0,
  CU_ERROR_STUB_LIBRARY = 34, /* the toolkit's link stub, not a driver */
  CU_ERROR_INSUFFICIENT_DRIVER = 35,
  CU_ERROR_NO_DEVICE = 100,
  CU_ATTR_CC_MAJOR = 75,
  CU_ATTR_CC_MINOR = 76
};

/* The loaded driver and the entry points used. */
typedef struct cu_driver {
  void *lib;
  cu_init_fn init;
  cu_count_fn count;
  cu_get_fn get;
  cu_name_fn name;
  cu_attr_fn attr;
  cu_mem_fn mem;
  cu_errstr_fn errstr;
} cu_driver;

/* Convert a driver error into a context error (once, at the boundary). */
static mirs_status cu_fail(mirs_context *ctx, const cu_driver *d, int e, const char *what) {
  const char *msg = NULL;
  if (!d->errstr || d->errstr(e, &msg) != CU_SUCCESS || !msg)
    msg = "unknown CUDA driver error";
  if (e == CU_ERROR_NO_DEVICE || e == CU_ERROR_INSUFFICIENT_DRIVER || e == CU_ERROR_STUB_LIBRARY)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "%s: %s", what, msg);
  return MIRS_FAIL(ctx, MIRS_CUDA, "%s: %s (error %d)", what, msg, e);
}

/* Load the driver and initialise it; MIRS_NO_DEVICE when there is none. */
static mirs_status cu_open(mirs_context *ctx, cu_driver *d) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    const char *why = dlerror();
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "no CUDA driver (libcuda.so.1): %s",
                     why ? why : "not found");
  }
  /* POSIX dlsym returns void *; converting it to a function pointer is the
   * documented use (memcpy keeps -Wpedantic quiet about it). */
#define CU_SYM(field, sym)                        \
  do {                                            \
    void *p_ = dlsym(d->lib, sym);                \
    memcpy(&d->field, &p_, sizeof d->field);      \
  } while (0)
  CU_SYM(init, "cuInit");
  CU_SYM(count, "cuDeviceGetCount");
  CU_SYM(get, "cuDeviceGet");
  CU_SYM(name, "cuDeviceGetName");
  CU_SYM(attr, "cuDeviceGetAttribute");
  CU_SYM(mem, "cuDeviceTotalMem_v2");
  CU_SYM(errstr, "cuGetErrorString");
#undef CU_SYM
  if (!d->init || !d->count || !d->get || !d->name || !d->attr || !d->mem) {
    dlclose(d->lib);
    d->lib = NULL;
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "the CUDA driver (libcuda.so.1) lacks an entry point");
  }
  int e = d->init(0);
  if (e != CU_SUCCESS) {
    mirs_status s = cu_fail(ctx, d, e, "cuInit");
    dlclose(d->lib);
    d->lib = NULL;
    return s;
  }
  return MIRS_OK;
}

/* Number of devices on an opened driver. */
static mirs_status cu_count(mirs_context *ctx, const cu_driver *d, int *count) {
  int n = 0, e = d->count(&n);
  if (e != CU_SUCCESS)
    return cu_fail(ctx, d, e, "cuDeviceGetCount");
  if (n == 0)
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "the CUDA driver reports no device");
  *count = n;
  return MIRS_OK;
}

/* Number of usable CUDA devices. */
mirs_status mirs_gpu_device_count(mirs_context *ctx, int *count) {
  if (!ctx || !count)
    return MIRS_INVALID_ARG;
  *count = 0;
  cu_driver d;
  MIRS_CHECK(ctx, cu_open(ctx, &d));
  mirs_status s = cu_count(ctx, &d, count);
  dlclose(d.lib);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}

/* Name of device index. */
mirs_status mirs_gpu_device_name(mirs_context *ctx, int index, char *buf, size_t size) {
  if (!ctx || !buf || !size)
    return MIRS_INVALID_ARG;
  buf[0] = '\0';
  cu_driver d;
  MIRS_CHECK(ctx, cu_open(ctx, &d));
  int n = 0, dev = 0, major = 0, minor = 0, e;
  size_t mem = 0;
  char name[256] = "";
  mirs_status s = cu_count(ctx, &d, &n);
  if (s == MIRS_OK && (index < 0 || index >= n))
    s = MIRS_FAIL(ctx, MIRS_INVALID_ARG, "device %d does not exist (%d devices)", index, n);
  if (s == MIRS_OK && (e = d.get(&dev, index)) != CU_SUCCESS)
    s = cu_fail(ctx, &d, e, "cuDeviceGet");
  if (s == MIRS_OK && (e = d.name(name, (int)sizeof name - 1, dev)) != CU_SUCCESS)
    s = cu_fail(ctx, &d, e, "cuDeviceGetName");
  if (s == MIRS_OK && ((e = d.attr(&major, CU_ATTR_CC_MAJOR, dev)) != CU_SUCCESS ||
                       (e = d.attr(&minor, CU_ATTR_CC_MINOR, dev)) != CU_SUCCESS))
    s = cu_fail(ctx, &d, e, "cuDeviceGetAttribute");
  if (s == MIRS_OK && (e = d.mem(&mem, dev)) != CU_SUCCESS)
    s = cu_fail(ctx, &d, e, "cuDeviceTotalMem");
  dlclose(d.lib);
  MIRS_CHECK(ctx, s);
  name[sizeof name - 1] = '\0';
  snprintf(buf, size, "%s (sm_%d%d, %zu MiB)", name, major, minor, mem >> 20);
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
