/* SPDX-License-Identifier: MIT */
/* mirsearch_emu.h - run mirsearch's generated CUDA C on the host.
 *
 * Compile the generated source as C++ with -DMIRS_HOST_EMULATION and this
 * header on the include path.  A launch runs the grid's blocks one after
 * another, in an order drawn from the seed below (index order under seed
 * 0), so code that depends on which block of a launch runs first or last
 * runs in many orders; the threads of a block are cooperative coroutines (ucontext),
 * each with its own stack.  The emulator is meant to catch what the
 * hardware would, so a test passes here only if it would pass there:
 *  - thread order: which runnable thread runs next is drawn from a seeded
 *    generator (mirs_emu_seed(), else the environment's MIRS_EMU_SEED,
 *    else 1; 0 runs threads in index order and never preempts, the old
 *    behaviour), and a thread may be switched out not only at barriers but
 *    at every emulated memory access (mirs_ld/mirs_st, MIRS_EMU_POINT()),
 *    so a missing __syncthreads() between a shared-memory write and another
 *    thread's read shows up in either order under some seed;
 *  - barriers: __syncthreads() releases when every thread of the block has
 *    arrived, the warp collectives (MMA stand-ins, shuffles, __syncwarp)
 *    when every lane of the warp has; a barrier some threads never reach is
 *    reported as a deadlock;
 *  - launch limits (an sm_90 part): block dims <= 1024 x 1024 x 64 and at
 *    most 1024 threads, grid.x < 2^31, grid.y and grid.z <= 65535, dynamic
 *    shared memory <= 48 KB unless cudaFuncSetAttribute(
 *    cudaFuncAttributeMaxDynamicSharedMemorySize) raised that kernel's
 *    limit (at most 227 KB).  A launch that breaks one does not run and
 *    leaves the error CUDA would for cudaGetLastError();
 *  - shared memory: poisoned with NaN (as f32, f16 and bf16) at each
 *    block's start, reads through mirs_ld bounds-checked against the
 *    launch's dynamic size, guard bytes on both sides checked at each
 *    block's end for stray writes;
 *  - programmatic dependent launch: cudaLaunchKernelEx with the programmatic
 *    stream serialization attribute runs the kernel as any launch (after
 *    the one before it, so ordering holds), and a thread of it that
 *    accesses global memory through mirs_ld/mirs_st or cp.async before its
 *    mirs_pdl_wait (griddepcontrol.wait) is a fault, as it would race with
 *    the previous kernel on the device; cudaDeviceGetAttribute reports
 *    compute capability 9.0 (mirs_emu::compute_major);
 *  - alignment: every emulated access is checked for its natural alignment,
 *    vector and cp.async stand-ins with MIRS_EMU_CHECK_ALIGN(ptr, bytes);
 *    cudaMalloc returns 256-byte aligned memory as the device does.
 * A fault (misaligned or out-of-bounds access, deadlock) prints what and
 * where and exits with status 3, as a kernel fault ends a CUDA program.
 * f16 and bf16 are stored as their bit patterns and converted with
 * round-to-nearest-even, as the CUDA intrinsics do.  mirs_mma_f16/bf16
 * emulate mma.sync.m16n8k16 and mirs_mma_tf32 mma.sync.m16n8k8 (row.col,
 * f32 accumulation) from the PTX fragment layouts: the lanes publish their
 * fragments, meet at a warp barrier, and each computes its four results
 * in float.  The sm_90a wgmma path (mirs_wg_desc, mirs_emu_wgmma,
 * mirs_wgmma_fence/commit/wait, mirs_fence_proxy_async) is emulated from
 * the PTX ISA's descriptor layouts, deferred to its wait_group (see the
 * wgmma section below).  Single-threaded; a test harness, not a library.
 * Stand-ins for further primitives (cp.async, ldmatrix, ...) build on:
 * MIRS_EMU_POINT() (a switch point), MIRS_EMU_CHECK_ALIGN, and in
 * namespace mirs_emu warp_sync() (a warp barrier), lane_id(), warp_id(),
 * exchange() (a value from another lane), smem_stray() (outside the
 * launch's shared memory) and fail() (a fault). */
#ifndef MIRSEARCH_EMU_H
#define MIRSEARCH_EMU_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#ifndef __shared__
/* A static __shared__ array: one copy, which the blocks (run one after
 * another) share in turn; not poisoned or bounds-checked (dynamic shared
 * memory, MIRS_SHARED_FLOATS, is). */
#define __shared__ static
#endif
#define MIRS_UNROLL
#define MIRS_NO_UNROLL
#define MIRS_NOINLINE /* (a device function not inlined: nothing to the host) */
#define MIRS_UNROLL2
#define MIRS_SHARED_FLOATS(name) float *const name = mirs_emu::smem

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

/* The CUDA runtime's codes for the errors the emulator reproduces. */
typedef int cudaError_t;
typedef struct mirs_emu_stream *cudaStream_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
       cudaErrorInvalidConfiguration = 9, cudaErrorInvalidDevice = 101,
       cudaErrorMisalignedAddress = 716, cudaErrorLaunchFailure = 719 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr {
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrL2CacheSize = 89
};
/* cudaLaunchKernelEx's configuration: the one launch attribute the
 * emulator knows is programmatic stream serialization. */
enum cudaLaunchAttributeID { cudaLaunchAttributeProgrammaticStreamSerialization = 6 };
union cudaLaunchAttributeValue {
  int programmaticStreamSerializationAllowed;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute *attrs;
  unsigned numAttrs;
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3 };

/* ---------------------------------------------------------------- 16-bit floats */

static inline uint32_t mirs_emu_fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float mirs_emu_bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};

/* float -> IEEE binary16, round to nearest even (overflow to inf, NaN kept). */
static inline __half __float2half_rn(float f) {
  uint32_t x = mirs_emu_fbits(f), sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  __half h;
  if (ax >= 0x7f800000u) { /* inf or NaN */
    h.bits = (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    return h;
  }
  if (ax >= 0x477ff000u) { /* rounds to >= 65520: inf */
    h.bits = (uint16_t)(sign | 0x7c00u);
    return h;
  }
  if (ax < 0x38800000u) { /* subnormal half (or zero): scale exactly, round */
    float a = mirs_emu_bitsf(ax) * 16777216.0f; /* 2^24: units of 2^-24 */
    float r = nearbyintf(a);                     /* default mode: nearest even */
    h.bits = (uint16_t)(sign | (uint32_t)r);
    return h;
  }
  uint32_t e = (ax >> 23) - 112, m = ax & 0x7fffffu;
  uint32_t v = (e << 10) | (m >> 13), rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (v & 1u)))
    v++;
  h.bits = (uint16_t)(sign | v);
  return h;
}

static inline float __half2float(__half h) {
  uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu,
           m = h.bits & 0x3ffu;
  if (e == 0)
    return (sign ? -1.0f : 1.0f) * (float)m * (1.0f / 16777216.0f);
  if (e == 31)
    return mirs_emu_bitsf(sign | 0x7f800000u | (m << 13));
  return mirs_emu_bitsf(sign | ((e + 112) << 23) | (m << 13));
}

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t x = mirs_emu_fbits(f);
  __nv_bfloat16 h;
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    h.bits = (uint16_t)((x >> 16) | 0x40u);
    return h;
  }
  x += 0x7fffu + ((x >> 16) & 1u);
  h.bits = (uint16_t)(x >> 16);
  return h;
}

static inline float __bfloat162float(__nv_bfloat16 h) {
  return mirs_emu_bitsf((uint32_t)h.bits << 16);
}

/* ---------------------------------------------------------------- launch machinery, scheduler */

namespace mirs_emu {

enum { RUN, AT_BLOCK, AT_WARP, DONE };
enum { STACK = 256 * 1024 };
/* The emulated device's limits (sm_90: H100, H200). */
enum : size_t {
  SMEM_DEFAULT = 48 * 1024, /* dynamic shared memory without the attribute */
  SMEM_OPTIN = 227 * 1024,  /* the most cudaFuncSetAttribute may allow */
  GUARD_LO = 4096,          /* guard bytes before and after a launch's shared memory */
  GUARD_HI = 16384
};
/* The guard bytes' pattern: a NaN no computation produces. */
static const uint32_t CANARY = 0x7fa5c3e1u;
/* Fresh shared memory: 0x7fff in each half is a NaN as f16 and as bf16,
 * and the word is a NaN as f32. */
static const uint32_t POISON = 0x7fff7fffu;

struct thread {
  ucontext_t ctx;
  char *stack;
  int state;
  int pos;     /* index in runnable[] while RUN */
  bool waited; /* passed mirs_pdl_wait in this block */
};

static unsigned char *smem_region; /* GUARD_LO + SMEM_OPTIN + GUARD_HI bytes */
static float *smem;                /* smem_region + GUARD_LO: the block's dynamic shared memory */
static size_t smem_bytes;          /* the running launch's dynamic size */
static thread *threads;
static int nthreads_cap, nthreads, current = -1;
static int *runnable, nrunnable;   /* threads in state RUN */
static int *warp_waiting;          /* per warp: lanes at a warp barrier */
static int block_waiting, ndone;   /* threads at __syncthreads(), returned */
static ucontext_t sched_ctx;
static std::function<void()> body;
/* Fragments the lanes of each warp publish for the warp collectives. */
static uint32_t (*frag_a)[32][4];
static uint32_t (*frag_b)[32][2];
static uint64_t (*shfl)[32];
/* Thread order: xorshift64* state; 0 until seeded. */
static uint64_t rng;
static bool in_order;              /* seed 0: index order, no preemption */
static cudaError_t last_error;     /* what cudaGetLastError() returns next */
/* Per kernel: the MaxDynamicSharedMemorySize attribute it was given. */
struct attribute {
  void (*fn)();
  size_t max_dynamic_smem;
};
static attribute attributes[256];
static int nattributes;
static long attribute_calls; /* cudaFuncSetAttribute calls (tests count them) */
static unsigned long launches;  /* launches that ran: per-block state of stand-ins is keyed by it */
/* Programmatic dependent launch: the device's compute capability (major;
 * 9: an sm_90 part, tests may lower it before the first call), whether
 * the running launch is a programmatic dependent, and how many such
 * launches ran (tests count them). */
static int compute_major = 9;
/* The PTX version a kernel reports it was compiled from (cudaFuncGetAttributes's
 * ptxVersion); 0: 10 x compute_major, as an sm_90 build on an sm_90 device. */
static int ptx_version = 0;
/* Its L2 in bytes: small, so a bench harness's cache flush stays at its floor. */
static int l2_bytes = 1 << 20;
static bool pdl_launch;
static unsigned long pdl_launches;

} // namespace mirs_emu

static dim3 threadIdx, blockIdx, blockDim, gridDim;

/* Seed the thread order (0: index order, no preemption).  Call before
 * the first launch; without a call, MIRS_EMU_SEED from the environment
 * (else 1) seeds it at the first launch. */
static inline void mirs_emu_seed(uint64_t seed) {
  mirs_emu::in_order = seed == 0;
  /* splitmix64 of the seed: never 0, and nearby seeds give unrelated orders. */
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  mirs_emu::rng = (z ^ (z >> 31)) | 1u;
}

namespace mirs_emu {

/* Report a fault of the running kernel (what and where) and end the
 * program, as a device fault ends a CUDA program. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...) {
  va_list ap;
  fputs("mirsearch_emu: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (current >= 0)
    fprintf(stderr, " (block (%u, %u, %u), thread (%u, %u, %u))", blockIdx.x, blockIdx.y,
            blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  fputc('\n', stderr);
  exit(3);
}

/* Seed the thread order from the environment unless mirs_emu_seed did. */
static void seed_once(void) {
  if (!rng) {
    const char *e = getenv("MIRS_EMU_SEED");
    mirs_emu_seed(e && *e ? strtoull(e, NULL, 10) : 1);
  }
}

/* The next pseudo-random number of the thread order. */
static inline uint64_t next_random(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* Thread i becomes runnable / stops being runnable. */
static inline void add_runnable(int i) {
  threads[i].state = RUN;
  threads[i].pos = nrunnable;
  runnable[nrunnable++] = i;
}
static inline void remove_runnable(int i) {
  int at = threads[i].pos;
  if (in_order) { /* keep index order: the lowest runs first */
    memmove(runnable + at, runnable + at + 1, sizeof(int) * (size_t)(nrunnable - at - 1));
    nrunnable--;
    for (int k = at; k < nrunnable; k++)
      threads[runnable[k]].pos = k;
  } else {
    int last = runnable[--nrunnable];
    runnable[at] = last;
    threads[last].pos = at;
  }
}

/* Make `i` the running thread (its coordinates become threadIdx) until
 * it parks at a barrier, yields or returns. */
static void enter(int i) {
  current = i;
  threadIdx.x = (unsigned)i % blockDim.x;
  threadIdx.y = ((unsigned)i / blockDim.x) % blockDim.y;
  threadIdx.z = (unsigned)i / (blockDim.x * blockDim.y);
  if (swapcontext(&sched_ctx, &threads[i].ctx) != 0)
    fail("swapcontext failed");
}

/* Back to the scheduler (the running thread stays in its state). */
static inline void to_scheduler(void) {
  if (swapcontext(&threads[current].ctx, &sched_ctx) != 0)
    fail("swapcontext failed");
}

/* Lanes of warp w (the last warp of a block may be partial). */
static inline int warp_lanes(int w) {
  return nthreads - w * 32 < 32 ? nthreads - w * 32 : 32;
}

/* Park the running thread at a block (AT_BLOCK) or warp (AT_WARP)
 * barrier; the last to arrive releases the others.  Returns when this
 * thread runs again, past the barrier. */
static void wait_in(int st) {
  int i = current;
  remove_runnable(i);
  threads[i].state = st;
  if (st == AT_BLOCK) {
    if (++block_waiting == nthreads) {
      block_waiting = 0;
      for (int k = 0; k < nthreads; k++)
        add_runnable(k);
    }
  } else {
    int w = i / 32;
    if (++warp_waiting[w] == warp_lanes(w)) {
      warp_waiting[w] = 0;
      for (int k = w * 32; k < w * 32 + warp_lanes(w); k++)
        add_runnable(k);
    }
  }
  to_scheduler();
}

/* A point where the hardware could run another thread: under a nonzero
 * seed, switch to a random runnable one with probability 1/8 (switching
 * at every point would multiply a run's time for little more coverage:
 * the order at each barrier is already random). */
static inline void point(void) {
  if (current < 0 || in_order || nthreads < 2)
    return;
  if ((next_random() >> 61) == 0)
    to_scheduler();
}

static void entry(void) {
  body();
  remove_runnable(current);
  threads[current].state = DONE;
  ndone++;
}

/* Whether p..p+n lies in the shared-memory region but outside this
 * launch's dynamic shared memory. */
static inline bool smem_stray(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  const unsigned char *lo = (const unsigned char *)smem;
  if (!smem_region || c + n <= smem_region || c >= smem_region + GUARD_LO + SMEM_OPTIN + GUARD_HI)
    return false;
  return c < lo || c + n > lo + smem_bytes;
}

/* Fail unless p is aligned to `bytes` (a power of two). */
static inline void check_align(const void *p, size_t bytes, const char *what, const char *file,
                               int line) {
  if ((uintptr_t)p & (bytes - 1))
    fail("misaligned address: a %zu-byte access to %p (%s, %s:%d) needs %zu-byte alignment", bytes,
         p, what, file, line, bytes);
}

/* Fail if a guard byte around the block's shared memory changed: some
 * thread wrote outside the launch's dynamic size. */
static void check_guards(void) {
  const uint32_t *lo = (const uint32_t *)smem_region;
  const uint32_t *hi = (const uint32_t *)((const unsigned char *)smem + smem_bytes);
  for (size_t k = 0; k < GUARD_LO / 4; k++)
    if (lo[k] != CANARY)
      fail("shared-memory store %zu bytes before the start of the block's dynamic shared memory",
           GUARD_LO - 4 * k);
  for (size_t k = 0; k < GUARD_HI / 4; k++)
    if (hi[k] != CANARY)
      fail("shared-memory store at byte %zu, past the %zu bytes of dynamic shared memory the launch "
           "requested",
           smem_bytes + 4 * k, smem_bytes);
}

/* Make thread i a fresh coroutine at the kernel's start, runnable. */
static void start_thread(int i) {
  thread *t = &threads[i];
  if (getcontext(&t->ctx) != 0)
    fail("getcontext failed");
  t->ctx.uc_stack.ss_sp = t->stack;
  t->ctx.uc_stack.ss_size = STACK;
  t->ctx.uc_link = &sched_ctx;
  t->waited = false;
  makecontext(&t->ctx, entry, 0);
  add_runnable(i);
}

/* Run one block to completion. */
static void run_block(void) {
  nrunnable = 0;
  block_waiting = 0;
  ndone = 0;
  for (int w = 0; w < (nthreads + 31) / 32; w++)
    warp_waiting[w] = 0;
  for (int i = 0; i < nthreads; i++)
    start_thread(i);
  while (nrunnable > 0) {
    int k = in_order ? 0 : (int)(next_random() % (uint64_t)nrunnable);
    enter(runnable[k]);
  }
  current = -1;
  if (ndone == nthreads)
    return;
  int at_warp = 0;
  for (int i = 0; i < nthreads; i++)
    at_warp += threads[i].state == AT_WARP;
  if (at_warp)
    fail("deadlock in block (%u, %u, %u): %d lanes wait at a warp-collective operation that other "
         "lanes of their warp never reach",
         blockIdx.x, blockIdx.y, blockIdx.z, at_warp);
  fail("deadlock in block (%u, %u, %u): __syncthreads() not reached by every thread of the block "
       "(%d of %d wait there, %d returned)",
       blockIdx.x, blockIdx.y, blockIdx.z, block_waiting, nthreads, ndone);
}

/* Grow the per-thread state to n threads. */
static void reserve_threads(int n) {
  if (n <= nthreads_cap)
    return;
  thread *t = (thread *)realloc(threads, sizeof(thread) * (size_t)n);
  int *r = (int *)realloc(runnable, sizeof(int) * (size_t)n);
  if (!t || !r)
    fail("out of memory");
  threads = t;
  runnable = r;
  for (int i = nthreads_cap; i < n; i++) {
    threads[i].stack = (char *)malloc(STACK);
    if (!threads[i].stack)
      fail("out of memory");
  }
  size_t warps = (size_t)(n + 31) / 32;
  free(frag_a);
  free(frag_b);
  free(shfl);
  free(warp_waiting);
  frag_a = (uint32_t(*)[32][4])calloc(warps, sizeof *frag_a);
  frag_b = (uint32_t(*)[32][2])calloc(warps, sizeof *frag_b);
  shfl = (uint64_t(*)[32])calloc(warps, sizeof *shfl);
  warp_waiting = (int *)calloc(warps, sizeof(int));
  if (!frag_a || !frag_b || !shfl || !warp_waiting)
    fail("out of memory");
  nthreads_cap = n;
}

/* A kernel's identity for its attributes. */
template <typename F> static inline void (*key(F *f))() {
  return reinterpret_cast<void (*)()>(f);
}

/* The MaxDynamicSharedMemorySize attribute of kernel fn (48 KB unset). */
static size_t max_dynamic_smem(void (*fn)()) {
  for (int i = 0; i < nattributes; i++)
    if (attributes[i].fn == fn)
      return attributes[i].max_dynamic_smem;
  return SMEM_DEFAULT;
}

/* Launch fn on every thread of every block of the grid, or leave the
 * error CUDA reports for a launch that breaks the device's limits (the
 * kernel then does not run, and that error is returned). */
static cudaError_t launch(void (*kernel)(), dim3 grid, dim3 block, size_t dyn_smem,
                          std::function<void()> fn) {
  unsigned long long n = (unsigned long long)block.x * block.y * block.z;
  if (block.x < 1 || block.y < 1 || block.z < 1 || block.x > 1024 || block.y > 1024 ||
      block.z > 64 || n > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1 ||
      grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    fprintf(stderr,
            "mirsearch_emu: launch refused: grid (%u, %u, %u), block (%u, %u, %u) "
            "(limits: grid.x < 2^31, grid.y and grid.z <= 65535, block <= (1024, 1024, 64) and "
            "1024 threads)\n",
            grid.x, grid.y, grid.z, block.x, block.y, block.z);
    return last_error = cudaErrorInvalidConfiguration;
  }
  if (dyn_smem > max_dynamic_smem(kernel)) {
    fprintf(stderr,
            "mirsearch_emu: launch refused: %zu bytes of dynamic shared memory, the kernel may use "
            "%zu (above 48 KB needs cudaFuncSetAttribute(kernel, "
            "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first)\n",
            dyn_smem, max_dynamic_smem(kernel));
    return last_error = cudaErrorInvalidValue;
  }
  seed_once();
  reserve_threads((int)n);
  if (!smem_region) {
    smem_region = (unsigned char *)aligned_alloc(256, GUARD_LO + SMEM_OPTIN + GUARD_HI);
    if (!smem_region)
      fail("out of memory");
    smem = (float *)(void *)(smem_region + GUARD_LO);
  }
  for (size_t k = 0; k < (GUARD_LO + SMEM_OPTIN + GUARD_HI) / 4; k++)
    memcpy(smem_region + 4 * k, &CANARY, 4);
  smem_bytes = dyn_smem;
  nthreads = (int)n;
  launches++;
  body = fn;
  blockDim = block;
  gridDim = grid;
  /* Block order: a permutation of the grid drawn from the seed (index
   * order under seed 0), since blocks of a launch run in no set order on
   * the device: code that depends on it (which block of a group arrives
   * last) runs in many orders over the seeds. */
  std::vector<dim3> order;
  order.reserve((size_t)grid.x * grid.y * grid.z);
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++)
        order.push_back(dim3(x, y, z));
  if (!in_order)
    for (size_t i = order.size(); i > 1; i--) {
      size_t j = (size_t)(next_random() % i);
      dim3 t = order[i - 1];
      order[i - 1] = order[j];
      order[j] = t;
    }
  for (const dim3 &bi : order) {
    blockIdx = bi;
    /* Fresh shared memory holds garbage on a GPU: poison it so a read
     * before a write shows up as NaN, read as f32, f16 or bf16. */
    for (size_t i = 0; i < dyn_smem / 4; i++)
      memcpy((unsigned char *)smem + 4 * i, &POISON, 4);
    run_block();
    check_guards();
  }
  body = nullptr;
  smem_bytes = 0;
  return cudaSuccess;
}

/* Fail on a global-memory access (what) at p by a thread of a programmatic
 * dependent launch that has not passed mirs_pdl_wait: on the device the
 * kernel before it may still be running (here it has completed, as every
 * launch runs to its end before the next, so only this check shows it). */
static inline void pdl_check(const void *p, const char *what) {
  const unsigned char *c = (const unsigned char *)p;
  if (!pdl_launch || current < 0 || threads[current].waited ||
      (smem_region && c >= smem_region && c < smem_region + GUARD_LO + SMEM_OPTIN + GUARD_HI))
    return;
  fail("a global-memory %s before mirs_pdl_wait (griddepcontrol.wait) in a programmatic dependent "
       "launch: the kernel before it may still be writing",
       what);
}

/* Checked natural-alignment access to p: alignment, shared-memory
 * bounds, and a point where another thread may run. */
template <typename T> static inline void access(const T *p, const char *what) {
  pdl_check(p, what);
  if ((uintptr_t)p % sizeof(T))
    fail("misaligned address: a %zu-byte %s of %p", sizeof(T), what, (const void *)p);
  if (smem_stray(p, sizeof(T)))
    fail("shared-memory %s at byte %td, outside the %zu bytes of dynamic shared memory the launch "
         "requested",
         what, (const unsigned char *)p - (const unsigned char *)smem, smem_bytes);
  point();
}

/* Warp collectives for other stand-ins: the running thread's lane and
 * warp, and a barrier of its warp. */
static inline int lane_id(void) {
  return current % 32;
}
static inline int warp_id(void) {
  return current / 32;
}
static inline void warp_sync(void) {
  wait_in(AT_WARP);
}

/* Every lane of the warp publishes v and gets lane src(lane)'s. */
template <typename T, typename F> static inline T exchange(unsigned mask, T v, F src) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  int w = warp_id(), n = warp_lanes(w);
  unsigned full = n == 32 ? 0xffffffffu : (1u << n) - 1u;
  if ((mask & full) != full)
    fail("a warp shuffle with mask 0x%08x: the emulator needs every lane of the warp", mask);
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  shfl[w][lane_id()] = bits;
  warp_sync(); /* every lane has published */
  int s = src(lane_id());
  if (s < 0 || s >= n)
    s = lane_id(); /* out of range: the lane keeps its value, as __shfl_*_sync does */
  bits = shfl[w][s];
  warp_sync(); /* nobody overwrites before all have read */
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
}

} // namespace mirs_emu

#ifndef MIRS_EMU_CHECK_ALIGN
/* Fail the run with a clear message unless ptr is aligned to `bytes`
 * (vector and cp.async stand-ins check their addresses with it). */
#define MIRS_EMU_CHECK_ALIGN(ptr, bytes)                                                           \
  mirs_emu::check_align((const void *)(ptr), (size_t)(bytes), #ptr, __FILE__, __LINE__)
#endif

/* A point where another thread may run (nothing on the device). */
#define MIRS_EMU_POINT() mirs_emu::point()

static inline void __syncthreads(void) {
  mirs_emu::wait_in(mirs_emu::AT_BLOCK);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)mirs_emu::exchange(mask, 0, [](int l) { return l; });
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return mirs_emu::exchange(mask, v, [=](int l) { return (l & ~(width - 1)) + (src & (width - 1)); });
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  return mirs_emu::exchange(mask, v, [=](int l) {
    int s = l ^ m;
    return (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l;
  });
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return mirs_emu::exchange(mask, v, [=](int l) {
    int s = l + (int)d;
    return (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l;
  });
}

/* Atomic read-modify-write: one thread runs at a time and nothing in it
 * is a switch point, so it is atomic as on the device. */
static inline float atomicAdd(float *p, float v) {
  MIRS_EMU_CHECK_ALIGN(p, sizeof *p);
  float old = *p;
  *p = old + v;
  return old;
}
static inline int atomicAdd(int *p, int v) {
  MIRS_EMU_CHECK_ALIGN(p, sizeof *p);
  int old = *p;
  *p = old + v;
  return old;
}
static inline unsigned atomicAdd(unsigned *p, unsigned v) {
  MIRS_EMU_CHECK_ALIGN(p, sizeof *p);
  unsigned old = *p;
  *p = old + v;
  return old;
}
/* Blocks run one after another, so a block's stores are visible to the
 * next before it starts: a fence is only a point where another thread of
 * the block may run. */
static inline void __threadfence(void) {
  mirs_emu::point();
}
/* A global load through L2 (ld.global.cg): a checked load here. */
template <typename T> static inline T __ldcg(const T *p) {
  mirs_emu::access(p, "load");
  return *p;
}

/* Global and shared loads and stores of the generated code (the device
 * prelude's, checked): widen to float, round to nearest even. */
static inline float mirs_ld(const float *p) {
  mirs_emu::access(p, "load");
  return *p;
}
static inline float mirs_ld(const __half *p) {
  mirs_emu::access(p, "load");
  return __half2float(*p);
}
static inline float mirs_ld(const __nv_bfloat16 *p) {
  mirs_emu::access(p, "load");
  return __bfloat162float(*p);
}
static inline void mirs_st(float *p, float v) {
  mirs_emu::access(p, "store");
  *p = v;
}
static inline void mirs_st(__half *p, float v) {
  mirs_emu::access(p, "store");
  *p = __float2half_rn(v);
}
static inline void mirs_st(__nv_bfloat16 *p, float v) {
  mirs_emu::access(p, "store");
  *p = __float2bfloat16_rn(v);
}

namespace mirs_emu {

/* 16-bit pair <-> floats for the MMA stand-in. */
static inline float lo_f16(uint32_t p) {
  __half h = {(uint16_t)(p & 0xffffu)};
  return __half2float(h);
}
static inline float hi_f16(uint32_t p) {
  __half h = {(uint16_t)(p >> 16)};
  return __half2float(h);
}
static inline float lo_bf16(uint32_t p) {
  __nv_bfloat16 h = {(uint16_t)(p & 0xffffu)};
  return __bfloat162float(h);
}
static inline float hi_bf16(uint32_t p) {
  __nv_bfloat16 h = {(uint16_t)(p >> 16)};
  return __bfloat162float(h);
}

static inline float lo_tf32(uint32_t p) {
  return mirs_emu_bitsf(p);
}

/* mma.sync.m16n8k8.row.col, f32 += tf32 x tf32, for this lane. */
static void mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  int w = current / 32, lane = current % 32;
  memcpy(frag_a[w][lane], a, sizeof(uint32_t) * 4);
  memcpy(frag_b[w][lane], b, sizeof(uint32_t) * 2);
  wait_in(AT_WARP);
  int g = lane >> 2, q = lane & 3;
  for (int h = 0; h < 4; h++) {
    int row = g + (h >> 1) * 8, col = q * 2 + (h & 1);
    float s = 0.0f;
    for (int k = 0; k < 8; k++) {
      /* A[row][k]: lane 4*(row%8) + k%4, register (row>=8) + 2*(k>=4). */
      float av = lo_tf32(frag_a[w][4 * (row % 8) + k % 4][(row >= 8) + 2 * (k >= 4)]);
      /* B[k][col]: lane 4*col + k%4, register k>=4. */
      float bv = lo_tf32(frag_b[w][4 * col + k % 4][k >= 4]);
      s += av * bv;
    }
    d[h] += s;
  }
  wait_in(AT_WARP);
}

/* mma.sync.m16n8k16.row.col, f32 += 16-bit x 16-bit, for this lane. */
static void mma(float d[4], const uint32_t a[4], const uint32_t b[2], bool bf) {
  int w = current / 32, lane = current % 32;
  memcpy(frag_a[w][lane], a, sizeof(uint32_t) * 4);
  memcpy(frag_b[w][lane], b, sizeof(uint32_t) * 2);
  wait_in(AT_WARP); /* every lane has published its fragments */
  float (*lo)(uint32_t) = bf ? lo_bf16 : lo_f16;
  float (*hi)(uint32_t) = bf ? hi_bf16 : hi_f16;
  int g = lane >> 2, q = lane & 3;
  for (int h = 0; h < 4; h++) {
    int row = g + (h >> 1) * 8, col = q * 2 + (h & 1);
    float s = 0.0f;
    for (int k = 0; k < 16; k++) {
      /* A[row][k]: lane 4*(row%8) + (k%8)/2, register (row>=8) + 2*(k>=8), half k%2. */
      int la = 4 * (row % 8) + (k % 8) / 2, ra = (row >= 8) + 2 * (k >= 8);
      uint32_t pa = frag_a[w][la][ra];
      float av = (k % 2) ? hi(pa) : lo(pa);
      /* B[k][col]: lane 4*col + (k%8)/2, register k>=8, half k%2. */
      int lb = 4 * col + (k % 8) / 2, rb = k >= 8;
      uint32_t pb = frag_b[w][lb][rb];
      float bv = (k % 2) ? hi(pb) : lo(pb);
      s += av * bv;
    }
    d[h] += s;
  }
  wait_in(AT_WARP); /* nobody overwrites the fragments before all have read */
}

} // namespace mirs_emu

static inline uint32_t mirs_pack_f16(float lo, float hi) {
  return (uint32_t)__float2half_rn(lo).bits | ((uint32_t)__float2half_rn(hi).bits << 16);
}
static inline uint32_t mirs_pack_bf16(float lo, float hi) {
  return (uint32_t)__float2bfloat16_rn(lo).bits | ((uint32_t)__float2bfloat16_rn(hi).bits << 16);
}
/* cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away. */
static inline uint32_t mirs_pack_tf32(float x) {
  uint32_t u = mirs_emu_fbits(x);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return u;
  return (u + 0x1000u) & 0xffffe000u;
}
static inline void mirs_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  mirs_emu::mma_tf32(d, a, b);
}
static inline void mirs_mma_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  mirs_emu::mma(d, a, b, false);
}
static inline void mirs_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  mirs_emu::mma(d, a, b, true);
}

/* ---------------------------------------------------------------- cp.async, ldmatrix, shuffles */
/* Self-contained stand-ins for the asynchronous copies, the ldmatrix
 * loads and the warp shuffles the generated kernels use.
 *  - mirs_cp_async16 only records the copy; mirs_cp_async_commit closes a
 *    group; mirs_cp_async_wait<N> performs the copies of every committed
 *    group but the newest N (what the hardware guarantees then).  A kernel
 *    that reads a tile without waiting reads the poisoned (NaN) or stale
 *    shared memory, so a missing wait shows as a wrong result.
 *  - ldmatrix and shuffles: the lanes publish their addresses or values,
 *    meet at a warp barrier, each takes its part, and meet again before
 *    anyone publishes anew (as the MMA stand-in does). */
#ifndef MIRS_EMU_CHECK_ALIGN
#define MIRS_EMU_CHECK_ALIGN(ptr, bytes)                                                         \
  do {                                                                                           \
    if ((uintptr_t)(const void *)(ptr) % (uintptr_t)(bytes) != 0) {                              \
      fprintf(stderr, "mirsearch_emu: %s:%d: misaligned %d-byte access at %p\n", __FILE__,       \
              __LINE__, (int)(bytes), (const void *)(ptr));                                      \
      exit(3);                                                                                   \
    }                                                                                            \
  } while (0)
#endif

namespace mirs_emu_async {
enum { MAX_THREADS = 1024, MAX_PENDING = 1 << 16 };
struct copy {
  void *dst;
  const void *src;
  int group;
};
/* Per thread: its pending copies, the groups it committed, the block they belong to. */
struct queue {
  std::vector<copy> c;
  int committed;
  int waits; /* cp.async.wait_group calls (a wgmma needs a proxy fence after the last) */
  unsigned bx, by, bz;
  bool used;
};
static queue *queues;
static const unsigned char *ldm_addr[32][32];
static float shfl_val[32][32];

static queue *mine(void) {
  if (!queues) {
    queues = new queue[MAX_THREADS]();
  }
  queue *q = &queues[mirs_emu::current];
  /* A new block on this thread: nothing of the previous one is pending. */
  if (!q->used || q->bx != blockIdx.x || q->by != blockIdx.y || q->bz != blockIdx.z) {
    q->c.clear();
    q->committed = 0;
    q->waits = 0;
    q->bx = blockIdx.x;
    q->by = blockIdx.y;
    q->bz = blockIdx.z;
    q->used = true;
  }
  return q;
}
} // namespace mirs_emu_async

static inline void mirs_cp_async16(void *dst, const void *src) {
  MIRS_EMU_CHECK_ALIGN(dst, 16);
  MIRS_EMU_CHECK_ALIGN(src, 16);
  mirs_emu::pdl_check(src, "cp.async load");
  mirs_emu_async::queue *q = mirs_emu_async::mine();
  if (q->c.size() >= (size_t)mirs_emu_async::MAX_PENDING)
    mirs_emu::fail("too many cp.async copies pending (missing cp.async.wait_group?)");
  q->c.push_back({dst, src, q->committed});
}
static inline void mirs_cp_async_commit(void) {
  mirs_emu_async::mine()->committed++;
}
template <int N> static inline void mirs_cp_async_wait(void) {
  mirs_emu_async::queue *q = mirs_emu_async::mine();
  int done = q->committed - N;
  q->waits++;
  size_t k = 0;
  for (size_t i = 0; i < q->c.size(); i++) {
    if (q->c[i].group < done)
      memcpy(q->c[i].dst, q->c[i].src, 16);
    else
      q->c[k++] = q->c[i];
  }
  q->c.resize(k);
}

namespace mirs_emu_async {
/* ldmatrix .x1/.x2/.x4 (n matrices), plain or transposed, for this lane. */
static void ldmatrix(uint32_t *r, const void *p, int n, bool trans) {
  int w = mirs_emu::current / 32, lane = mirs_emu::current % 32;
  MIRS_EMU_CHECK_ALIGN(p, 16);
  ldm_addr[w][lane] = (const unsigned char *)p;
  mirs_emu::wait_in(mirs_emu::AT_WARP);
  for (int m = 0; m < n; m++) {
    if (!trans) { /* row lane / 4, 16-bit elements 2 (lane % 4) and + 1 */
      memcpy(&r[m], ldm_addr[w][m * 8 + lane / 4] + 4 * (lane % 4), 4);
    } else { /* column lane / 4, rows 2 (lane % 4) and + 1 */
      uint16_t lo, hi;
      memcpy(&lo, ldm_addr[w][m * 8 + 2 * (lane % 4)] + 2 * (lane / 4), 2);
      memcpy(&hi, ldm_addr[w][m * 8 + 2 * (lane % 4) + 1] + 2 * (lane / 4), 2);
      r[m] = (uint32_t)lo | ((uint32_t)hi << 16);
    }
  }
  mirs_emu::wait_in(mirs_emu::AT_WARP);
}
} // namespace mirs_emu_async

static inline void mirs_ldmatrix_x4(uint32_t r[4], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 4, false);
}
static inline void mirs_ldmatrix_x2(uint32_t r[2], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 2, false);
}
static inline void mirs_ldmatrix_x2_trans(uint32_t r[2], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 2, true);
}
static inline void mirs_ldmatrix_x4_trans(uint32_t r[4], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 4, true);
}
/* ---------------------------------------------------------------- wgmma (sm_90a) */
/* Stand-ins for the warpgroup MMA of the Hopper path (codegen/hopper.c):
 *  - mirs_wg_desc encodes a shared-memory matrix descriptor as the device
 *    does (start address, LBO, SBO, each >> 4 in 14 bits, swizzle bits 0),
 *    the address being the byte offset in the launch's shared memory;
 *  - mirs_emu_wgmma queues wgmma.mma_async m64nNk16 (f32 += A.B, A
 *    K-major, B N-major, no swizzle) for this thread; mirs_wgmma_commit
 *    closes a group and mirs_wgmma_wait<N> performs every group but the
 *    newest N, reading the operands from shared memory through the
 *    descriptors then, as the PTX ISA's canonical layouts say: so reading
 *    the accumulators before the wait, a wrong LBO/SBO or start, or
 *    operands overwritten before the wait give wrong results;
 *  - each thread computes its own fragment (warp w % 4 of the warpgroup
 *    rows 16 (w % 4) + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1):
 *    the m64nNk16 f32 accumulator layout), so no warpgroup barrier is
 *    needed; a block must be whole warpgroups;
 *  - checked faults: a wgmma without wgmma.fence since the thread's last
 *    wait_group, or without fence.proxy.async since its last
 *    cp.async.wait_group (the copies would not be visible to the async
 *    proxy), an operand outside the launch's shared memory, a swizzled
 *    descriptor, a wgmma still pending when its thread starts the next
 *    block, threads of one warpgroup issuing different wgmma (descriptors,
 *    shape or type: .sync.aligned wants them warpgroup-uniform). */
namespace mirs_emu_async {
struct wgmma_op {
  float *d;
  int n, group;
  uint64_t da, db;
  bool bf;
};
struct wg_queue {
  std::vector<wgmma_op> q;
  int committed, proxy_waits;
  size_t issued; /* wgmma of this thread in this block */
  bool fenced, proxied;
  unsigned long launch; /* the block (launch, bx, by, bz) the state is of */
  unsigned bx, by, bz;
  bool used;
};
static wg_queue *wg_queues;
/* Per warpgroup of the running block: the wgmma its threads issued, in
 * order (.sync.aligned: all 128 issue the same ones). */
struct wg_issue {
  uint64_t da, db;
  int n;
  bool bf;
};
struct wg_group {
  std::vector<wg_issue> log;
  unsigned long launch;
  unsigned bx, by, bz;
  bool used;
};
static wg_group wg_groups[MAX_THREADS / 128];

/* Check that the running thread's k-th wgmma is its warpgroup's k-th. */
static void wg_aligned(size_t k, uint64_t da, uint64_t db, int n, bool bf) {
  wg_group *g = &wg_groups[mirs_emu::current / 128];
  if (!g->used || g->launch != mirs_emu::launches || g->bx != blockIdx.x || g->by != blockIdx.y ||
      g->bz != blockIdx.z) {
    g->log.clear();
    g->launch = mirs_emu::launches;
    g->bx = blockIdx.x;
    g->by = blockIdx.y;
    g->bz = blockIdx.z;
    g->used = true;
  }
  if (k == g->log.size()) {
    g->log.push_back({da, db, n, bf});
    return;
  }
  const wg_issue &e = g->log[k];
  if (e.da != da || e.db != db || e.n != n || e.bf != bf)
    mirs_emu::fail("wgmma.mma_async.sync.aligned #%zu of warpgroup %d differs between its threads "
                   "(descriptors 0x%llx, 0x%llx, n%d against 0x%llx, 0x%llx, n%d): the operands "
                   "must be warpgroup-uniform",
                   k, mirs_emu::current / 128, (unsigned long long)da, (unsigned long long)db, n,
                   (unsigned long long)e.da, (unsigned long long)e.db, e.n);
}

static wg_queue *wg_mine(void) {
  if (!wg_queues)
    wg_queues = new wg_queue[MAX_THREADS]();
  wg_queue *w = &wg_queues[mirs_emu::current];
  if (!w->used || w->launch != mirs_emu::launches || w->bx != blockIdx.x || w->by != blockIdx.y ||
      w->bz != blockIdx.z) {
    if (w->used && !w->q.empty())
      mirs_emu::fail("%zu wgmma operations never waited for (missing wgmma.wait_group) in "
                     "block (%u, %u, %u)",
                     w->q.size(), w->bx, w->by, w->bz);
    w->q.clear();
    w->launch = mirs_emu::launches;
    w->committed = 0;
    w->issued = 0;
    w->fenced = w->proxied = false;
    w->bx = blockIdx.x;
    w->by = blockIdx.y;
    w->bz = blockIdx.z;
    w->used = true;
  }
  return w;
}

/* The 16-bit element at byte offset off of shared memory, as a float. */
static float wg_elem(uint64_t off, bool bf) {
  if (off + 2 > mirs_emu::smem_bytes)
    mirs_emu::fail("wgmma operand at shared-memory byte %llu, outside the %zu bytes the launch "
                   "requested",
                   (unsigned long long)off, mirs_emu::smem_bytes);
  uint16_t h;
  memcpy(&h, (const unsigned char *)mirs_emu::smem + off, 2);
  return bf ? __bfloat162float(__nv_bfloat16{h}) : __half2float(__half{h});
}

/* Perform one queued wgmma for the running thread. */
static void wg_run(const wgmma_op &o) {
  uint64_t sa = (o.da & 0x3FFFu) << 4, la = ((o.da >> 16) & 0x3FFFu) << 4,
           ta = ((o.da >> 32) & 0x3FFFu) << 4;
  uint64_t sb = (o.db & 0x3FFFu) << 4, lb = ((o.db >> 16) & 0x3FFFu) << 4,
           tb = ((o.db >> 32) & 0x3FFFu) << 4;
  if ((o.da >> 62) != 0 || (o.db >> 62) != 0)
    mirs_emu::fail("wgmma descriptor with a swizzle mode: the emulator knows no-swizzle only");
  int wq = (mirs_emu::current / 32) % 4, lane = mirs_emu::current % 32;
  for (int j = 0; j < o.n / 8; j++)
    for (int h = 0; h < 4; h++) {
      int row = 16 * wq + lane / 4 + 8 * (h >> 1), col = 8 * j + 2 * (lane % 4) + (h & 1);
      float s = 0.0f;
      for (int k = 0; k < 16; k++) {
        /* A K-major: core matrices 8 rows apart at SBO, 8 columns apart at LBO. */
        float a = wg_elem(sa + (uint64_t)(k / 8) * la + (uint64_t)(row / 8) * ta +
                              (uint64_t)(row % 8) * 16 + (uint64_t)(k % 8) * 2,
                          o.bf);
        /* B N-major: 8 columns (N) apart at SBO, 8 k-rows apart at LBO. */
        float b = wg_elem(sb + (uint64_t)(col / 8) * tb + (uint64_t)(k / 8) * lb +
                              (uint64_t)(k % 8) * 16 + (uint64_t)(col % 8) * 2,
                          o.bf);
        s += a * b;
      }
      o.d[j * 4 + h] += s;
    }
}
} // namespace mirs_emu_async

static inline uint64_t mirs_wg_desc(const void *p, unsigned lbo, unsigned sbo) {
  const unsigned char *c = (const unsigned char *)p, *lo = (const unsigned char *)mirs_emu::smem;
  if (c < lo || c >= lo + mirs_emu::smem_bytes || (c - lo) % 16 != 0)
    mirs_emu::fail("wgmma descriptor of %p: not a 16-byte aligned address in the launch's shared "
                   "memory",
                   p);
  uint64_t a = (uint64_t)(c - lo);
  return ((a & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |
         ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32);
}
static inline void mirs_wgmma_fence(void) {
  mirs_emu_async::wg_mine()->fenced = true;
}
static inline void mirs_fence_proxy_async(void) {
  mirs_emu_async::wg_queue *w = mirs_emu_async::wg_mine();
  w->proxied = true;
  w->proxy_waits = mirs_emu_async::mine()->waits;
}
static inline void mirs_emu_wgmma(float *d, int n, uint64_t da, uint64_t db, bool bf) {
  if (mirs_emu::nthreads % 128 != 0)
    mirs_emu::fail("wgmma in a block of %d threads: a warpgroup is 128", mirs_emu::nthreads);
  mirs_emu_async::wg_queue *w = mirs_emu_async::wg_mine();
  if (!w->fenced)
    mirs_emu::fail("wgmma.mma_async without wgmma.fence since the last wgmma.wait_group");
  if (!w->proxied || w->proxy_waits != mirs_emu_async::mine()->waits)
    mirs_emu::fail("wgmma.mma_async without fence.proxy.async after this thread's shared-memory "
                   "writes and its last cp.async.wait_group (not visible to wgmma's async proxy)");
  mirs_emu_async::wg_aligned(w->issued++, da, db, n, bf);
  w->q.push_back({d, n, w->committed, da, db, bf});
  MIRS_EMU_POINT();
}
static inline void mirs_wgmma_commit(void) {
  mirs_emu_async::wg_mine()->committed++;
}
template <int N> static inline void mirs_wgmma_wait(void) {
  mirs_emu_async::wg_queue *w = mirs_emu_async::wg_mine();
  int done = w->committed - N;
  size_t k = 0;
  for (size_t i = 0; i < w->q.size(); i++) {
    if (w->q[i].group < done)
      mirs_emu_async::wg_run(w->q[i]);
    else
      w->q[k++] = w->q[i];
  }
  w->q.resize(k);
  w->fenced = false;
}

/* __fdividef: the device's fast division (2 ulp); exact here. */
static inline float __fdividef(float a, float b) {
  return a / b;
}
/* __shfl_xor_sync over the whole warp (mask: all 32 lanes). */
static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  (void)mask;
  int w = mirs_emu::current / 32, lane = mirs_emu::current % 32;
  mirs_emu_async::shfl_val[w][lane] = v;
  mirs_emu::wait_in(mirs_emu::AT_WARP);
  float r = mirs_emu_async::shfl_val[w][(lane ^ lane_mask) & 31];
  mirs_emu::wait_in(mirs_emu::AT_WARP);
  return r;
}

#define MIRS_LAUNCH(k, grid, block, smem, stream, args)                                          \
  ((void)(stream), mirs_emu::launch(mirs_emu::key(k), grid, block, smem, [&]() { k args; }))

/* ---------------------------------------------------------------- programmatic dependent launch */

/* griddepcontrol.wait: the launches run one after another, so what the
 * kernels before wrote is there; it marks the thread as past its wait
 * (pdl_check) and is a switch point. */
static inline void mirs_pdl_wait(void) {
  mirs_emu::threads[mirs_emu::current].waited = true;
  mirs_emu::point();
}
/* griddepcontrol.launch_dependents: nothing to schedule early here; a
 * switch point. */
static inline void mirs_pdl_trigger(void) {
  mirs_emu::point();
}
/* Launch k with cfg: a programmatic dependent launch when cfg has the
 * programmatic stream serialization attribute set (counted in
 * mirs_emu::pdl_launches; its threads must pass mirs_pdl_wait before a
 * global-memory access), otherwise as MIRS_LAUNCH.  An attribute the
 * emulator does not know is refused (cudaErrorInvalidValue). */
template <typename... P, typename... A>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *cfg, void (*k)(P...),
                                             A &&...args) {
  bool pdl = false;
  for (unsigned i = 0; i < cfg->numAttrs; i++) {
    if (cfg->attrs[i].id != cudaLaunchAttributeProgrammaticStreamSerialization)
      return mirs_emu::last_error = cudaErrorInvalidValue;
    pdl = cfg->attrs[i].val.programmaticStreamSerializationAllowed != 0;
  }
  (void)cfg->stream;
  mirs_emu::pdl_launch = pdl;
  cudaError_t e = mirs_emu::launch(mirs_emu::key(k), cfg->gridDim, cfg->blockDim,
                                   cfg->dynamicSmemBytes, [&]() { k(args...); });
  mirs_emu::pdl_launch = false;
  mirs_emu::pdl_launches += pdl && e == cudaSuccess;
  return e;
}

/* ---------------------------------------------------------------- runtime stand-ins */

/* The last error, reset (cudaGetLastError) or kept (cudaPeekAtLastError). */
static inline cudaError_t cudaGetLastError(void) {
  cudaError_t e = mirs_emu::last_error;
  mirs_emu::last_error = cudaSuccess;
  return e;
}
static inline cudaError_t cudaPeekAtLastError(void) {
  return mirs_emu::last_error;
}
static inline const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice:
    return "cudaErrorInvalidDevice";
  case cudaErrorMisalignedAddress:
    return "cudaErrorMisalignedAddress";
  case cudaErrorLaunchFailure:
    return "cudaErrorLaunchFailure";
  default:
    return "cudaErrorUnknown";
  }
}
static inline const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorMisalignedAddress:
    return "misaligned address";
  case cudaErrorLaunchFailure:
    return "unspecified launch failure";
  default:
    return "unknown error";
  }
}
/* Records the kernel's dynamic shared-memory limit for its launches
 * (the device's opt-in maximum at most, as on the device). */
template <typename F>
static inline cudaError_t cudaFuncSetAttribute(F *fn, cudaFuncAttribute attr, int value) {
  mirs_emu::attribute_calls++;
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      (size_t)value > mirs_emu::SMEM_OPTIN)
    return mirs_emu::last_error = cudaErrorInvalidValue;
  void (*k)() = mirs_emu::key(fn);
  int i = 0;
  while (i < mirs_emu::nattributes && mirs_emu::attributes[i].fn != k)
    i++;
  if (i == mirs_emu::nattributes) {
    if (i == (int)(sizeof mirs_emu::attributes / sizeof mirs_emu::attributes[0]))
      mirs_emu::fail("more than %d kernels with attributes", i);
    mirs_emu::nattributes++;
  }
  mirs_emu::attributes[i].fn = k;
  mirs_emu::attributes[i].max_dynamic_smem = (size_t)value;
  return cudaSuccess;
}
/* One emulated device, ordinal 0. */
static inline cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
/* Its compute capability (mirs_emu::compute_major: 9 unless a test set
 * it; minor 0) and L2 size (mirs_emu::l2_bytes). */
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
  if (d != 0)
    return mirs_emu::last_error = cudaErrorInvalidDevice;
  *v = a == cudaDevAttrComputeCapabilityMajor ? mirs_emu::compute_major
       : a == cudaDevAttrL2CacheSize          ? mirs_emu::l2_bytes
                                              : 0;
  return cudaSuccess;
}
/* A kernel's attributes: the PTX version its code was compiled from
 * (mirs_emu::ptx_version, by default the emulated device's: compute_major
 * x 10, as an sm_90 build reports 90), the binary's; the rest 0. */
struct cudaFuncAttributes {
  int ptxVersion, binaryVersion, numRegs, maxThreadsPerBlock;
  size_t sharedSizeBytes, localSizeBytes, constSizeBytes;
};
template <typename T> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, T *) {
  memset(a, 0, sizeof *a);
  a->binaryVersion = 10 * mirs_emu::compute_major;
  a->ptxVersion = mirs_emu::ptx_version > 0 ? mirs_emu::ptx_version : a->binaryVersion;
  return cudaSuccess;
}
static inline cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : (mirs_emu::last_error = cudaErrorInvalidDevice);
}
/* 256-byte aligned, as cudaMalloc's memory is. */
static inline cudaError_t cudaMalloc(void **p, size_t n) {
  *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
  return *p ? cudaSuccess : (mirs_emu::last_error = cudaErrorMemoryAllocation);
}
static inline cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) {
  memcpy(d, s, n);
  return cudaSuccess;
}
static inline cudaError_t cudaMemset(void *d, int v, size_t n) {
  memset(d, v, n);
  return cudaSuccess;
}
/* Stream order is call order here: done at once. */
static inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t) {
  memset(d, v, n);
  return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) {
  return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}

#endif
