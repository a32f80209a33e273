/* SPDX-License-Identifier: MIT */
/* tests/fakecuda/libcuda.c - a stand-in CUDA driver (libcuda.so.1) for
 * tests/bench_emulated.sh: one device, "Emulated H100", compute
 * capability 9.0, 80 GiB.  With it on LD_LIBRARY_PATH, mirsearch's GPU
 * discovery (src/gpu/device.c) finds a device, so `bench` goes past its
 * refusal and runs harnesses built by tests/fakecuda/nvcc on the host
 * emulation.  It exports only the entry points device.c looks up. */
#include <stddef.h>
#include <string.h>

int cuInit(unsigned flags);
int cuDeviceGetCount(int *n);
int cuDeviceGet(int *dev, int index);
int cuDeviceGetName(char *name, int len, int dev);
int cuDeviceGetAttribute(int *v, int attr, int dev);
int cuDeviceTotalMem_v2(size_t *bytes, int dev);
int cuGetErrorString(int e, const char **s);

int cuInit(unsigned flags) {
  (void)flags;
  return 0;
}
int cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
int cuDeviceGet(int *dev, int index) {
  *dev = index;
  return index == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
int cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  strncpy(name, "Emulated H100", (size_t)len);
  return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 75 ? 9 : 0; /* compute capability 9.0 (75: major, 76: minor) */
  return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = (size_t)80 << 30;
  return 0;
}
int cuGetErrorString(int e, const char **s) {
  *s = e ? "emulated error" : "no error";
  return 0;
}
