/* SPDX-License-Identifier: MIT */
/* mirsearch_emu.h - run mirsearch's generated CUDA C on the host.
 *
 * Compile the generated source as C++ with -DMIRS_HOST_EMULATION and this
 * header on the include path.  A launch runs the grid's blocks one after
 * another; the threads of a block are cooperative coroutines (ucontext),
 * each with its own stack, switched only at barriers: __syncthreads()
 * waits for every thread of the block, the warp-collective MMA stand-in
 * for every lane of the warp.  A block finishes when every thread has
 * returned; a barrier some threads never reach is reported as a deadlock.
 * f16 and bf16 are stored as their bit patterns and converted with
 * round-to-nearest-even, as the CUDA intrinsics do.  mirs_mma_f16/bf16
 * emulate mma.sync.m16n8k16 and mirs_mma_tf32 mma.sync.m16n8k8 (row.col,
 * f32 accumulation) from the PTX fragment layouts: the lanes publish their fragments, meet at a warp
 * barrier, and each computes its four results in float.
 * Single-threaded, no globals shared with other programs: a test harness. */
#ifndef MIRSEARCH_EMU_H
#define MIRSEARCH_EMU_H

#include <math.h>
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
#define __launch_bounds__(n)
#define MIRS_UNROLL
#define MIRS_SHARED_FLOATS(name) float *const name = mirs_emu::smem

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

typedef int cudaError_t;
typedef struct mirs_emu_stream *cudaStream_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
       cudaErrorLaunchFailure = 4 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
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

/* ---------------------------------------------------------------- threads */

namespace mirs_emu {

enum { RUN, AT_BLOCK, AT_WARP, DONE };
enum { STACK = 256 * 1024 };

struct thread {
  ucontext_t ctx;
  char *stack;
  int state;
};

static float *smem;
static size_t smem_cap;
static thread *threads;
static int nthreads_cap, nthreads, current;
static ucontext_t sched_ctx;
static std::function<void()> body;
/* Fragments the lanes of each warp publish for the MMA stand-in. */
static uint32_t (*frag_a)[32][4];
static uint32_t (*frag_b)[32][2];

} // namespace mirs_emu

static dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace mirs_emu {

static void fail(const char *what) {
  fprintf(stderr, "mirsearch_emu: %s\n", what);
  exit(3);
}

/* Make `i` the running thread: its coordinates become threadIdx. */
static void enter(int i) {
  current = i;
  threadIdx.x = (unsigned)i % blockDim.x;
  threadIdx.y = ((unsigned)i / blockDim.x) % blockDim.y;
  threadIdx.z = (unsigned)i / (blockDim.x * blockDim.y);
  if (swapcontext(&sched_ctx, &threads[i].ctx) != 0)
    fail("swapcontext failed");
}

/* Park the running thread in state st and return to the scheduler. */
static void wait_in(int st) {
  threads[current].state = st;
  if (swapcontext(&threads[current].ctx, &sched_ctx) != 0)
    fail("swapcontext failed");
}

static void entry(void) {
  body();
  threads[current].state = DONE;
}

/* Run one block to completion. */
static void run_block(void) {
  for (int i = 0; i < nthreads; i++) {
    thread *t = &threads[i];
    if (getcontext(&t->ctx) != 0)
      fail("getcontext failed");
    t->ctx.uc_stack.ss_sp = t->stack;
    t->ctx.uc_stack.ss_size = STACK;
    t->ctx.uc_link = &sched_ctx;
    makecontext(&t->ctx, entry, 0);
    t->state = RUN;
  }
  for (;;) {
    bool ran = false;
    for (int i = 0; i < nthreads; i++)
      if (threads[i].state == RUN) {
        enter(i);
        ran = true;
      }
    if (ran)
      continue;
    /* Everyone waits or is done: release a complete warp or block barrier. */
    int warps = (nthreads + 31) / 32;
    for (int w = 0; w < warps; w++) {
      int lo = w * 32, hi = lo + 32 < nthreads ? lo + 32 : nthreads, at = 0;
      for (int i = lo; i < hi; i++)
        at += threads[i].state == AT_WARP;
      if (at == hi - lo) {
        for (int i = lo; i < hi; i++)
          threads[i].state = RUN;
        ran = true;
      } else if (at > 0) {
        fail("deadlock: some lanes of a warp never reach the warp-collective operation");
      }
    }
    if (ran)
      continue;
    int done = 0, at_block = 0;
    for (int i = 0; i < nthreads; i++) {
      done += threads[i].state == DONE;
      at_block += threads[i].state == AT_BLOCK;
    }
    if (done == nthreads)
      return;
    if (at_block == nthreads) {
      for (int i = 0; i < nthreads; i++)
        threads[i].state = RUN;
      continue;
    }
    fail("deadlock: __syncthreads() not reached by every thread of the block");
  }
}

/* Run fn on every thread of every block of the grid. */
static void launch(dim3 grid, dim3 block, size_t smem_bytes, std::function<void()> fn) {
  int n = (int)(block.x * block.y * block.z);
  if (n < 1 || n > 1024)
    fail("invalid block size");
  if (n > nthreads_cap) {
    thread *t = (thread *)realloc(threads, sizeof(thread) * (size_t)n);
    if (!t)
      fail("out of memory");
    threads = t;
    for (int i = nthreads_cap; i < n; i++) {
      threads[i].stack = (char *)malloc(STACK);
      if (!threads[i].stack)
        fail("out of memory");
    }
    free(frag_a);
    free(frag_b);
    frag_a = (uint32_t(*)[32][4])calloc((size_t)(n + 31) / 32, sizeof *frag_a);
    frag_b = (uint32_t(*)[32][2])calloc((size_t)(n + 31) / 32, sizeof *frag_b);
    if (!frag_a || !frag_b)
      fail("out of memory");
    nthreads_cap = n;
  }
  if (smem_bytes > smem_cap) {
    free(smem);
    smem = (float *)calloc(smem_bytes / sizeof(float) + 1, sizeof(float));
    if (!smem)
      fail("out of memory");
    smem_cap = smem_bytes;
  }
  nthreads = n;
  body = fn;
  blockDim = block;
  gridDim = grid;
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        blockIdx = dim3(x, y, z);
        /* Fresh shared memory holds garbage on a GPU: poison it so a read
         * before a write shows up as NaN. */
        for (size_t i = 0; i < smem_bytes / sizeof(float); i++)
          smem[i] = NAN;
        run_block();
      }
  body = nullptr;
}

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

static inline void __syncthreads(void) {
  mirs_emu::wait_in(mirs_emu::AT_BLOCK);
}

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
static inline void mirs_ldmatrix_x2_trans(uint32_t r[2], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 2, true);
}
static inline void mirs_ldmatrix_x4_trans(uint32_t r[4], const void *p) {
  mirs_emu_async::ldmatrix(r, p, 4, true);
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
  ((void)(stream), mirs_emu::launch(grid, block, smem, [&]() { k args; }))

/* ---------------------------------------------------------------- runtime stand-ins */

static inline cudaError_t cudaGetLastError(void) {
  return cudaSuccess;
}
static inline const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "emulated CUDA error";
}
template <typename F> static inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) {
  return cudaSuccess;
}
static inline cudaError_t cudaMalloc(void **p, size_t n) {
  *p = malloc(n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) {
  memcpy(d, s, n);
  return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) {
  return cudaSuccess;
}

#endif
