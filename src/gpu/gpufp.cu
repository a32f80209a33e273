/* SPDX-License-Identifier: MIT */
/* src/gpu/gpufp.cu - the GPU fingerprint module: finite-field kernels and
 * the C ABI of gpufp_abi.h, built by nvcc into libmirsearch-gpufp.so and
 * loaded by the library on demand (src/gpu/gpufp.c).
 *
 * The field, the keyed randomness and every op's meaning are those of
 * src/verify/fingerprint.h; results are bit-identical to the CPU backend's
 * because (1) every op is exact modular arithmetic, so the order of
 * additions (a parallel sum, an atomic digest) and the way a residue is
 * reached (a lazily reduced 64-bit accumulator, one Fermat inverse per
 * value instead of a batch inversion) cannot change it, and (2) inputs and
 * PRF values come from cuRAND's own device API keyed as the contract
 * says: curand_init(K_t, sub, 4 * block, &st); curand4(&st) returns the
 * Philox4x32-10 block at counter (lo block, hi block, lo sub, hi sub)
 * under key (lo K_t, hi K_t) = mirs_philox_at(K_t, sub, 4 block + i).
 *
 * Every kernel is one elementwise loop body "for i in [0, n)": on the
 * device a grid-stride loop, in the host build (MIRS_GPUFP_HOST, the
 * same file compiled as C++) a plain loop, with host memory in place of
 * device memory and no streams.  cuRAND's device header compiles as host
 * C++ too (its Philox code has host paths), so the host build runs the
 * very curand_init/curand4 the device runs: the tests compare it with the
 * CPU backend on every example without a GPU.
 *
 * Every operator the CPU backend fingerprints has its kernel here (no
 * graph is sent back to the CPU): max and the accumulators' running max
 * in the keyed order (a total order, so any reduction order gives the
 * CPU's element), causal_mask's sentinel FP_NONE with the CPU's rules
 * (moved by loads, stores, transposes and gathers; absorbed by add/sub;
 * exp(-inf) = 0; kept by the elementwise ops), norms with eps, and the
 * layout ops as strided gathers.
 *
 * Invariants: every CUDA call's status is checked where it is made (GFP_CUDA)
 * and converted once into a MIRS_GPUFP_* code with a message naming the
 * call; a handle's work runs in order on its own stream; the arena only
 * grows and keeps its contents; a value is a residue pair or FP_NONE in
 * both parts. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curand_kernel.h>

#include "gpu/gpufp_abi.h"

#ifdef MIRS_GPUFP_HOST
#define GFP_GLOBAL static void
#define GFP_DEV static inline
#define GFP_FOR(i, n) for (int64_t i = 0; i < (n); i++)
#define GFP_LAUNCH(k, n, d) k
#define GFP_HD static inline
#define GFP_UNROLL
#else
#define GFP_HD __host__ __device__ __forceinline__
#define GFP_GLOBAL __global__ void
#define GFP_DEV __device__ __forceinline__
#define GFP_UNROLL _Pragma("unroll")
#define GFP_FOR(i, n)                                                                    \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);             \
       i += (int64_t)gridDim.x * blockDim.x)
#define GFP_THREADS 256
#define GFP_LAUNCH(k, n, d) k<<<gfp_blocks(n), GFP_THREADS, 0, (d)->stream>>>
/* Enough blocks to cover n (a grid-stride loop does the rest). */
static unsigned gfp_blocks(int64_t n) {
  int64_t b = (n + GFP_THREADS - 1) / GFP_THREADS;
  return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}
#endif

#define MIRS_GPUFP_STR2(x) #x
#define MIRS_GPUFP_STR(x) MIRS_GPUFP_STR2(x)

#define FP_P 2147483579u
#define FP_Q 1073741789u
#define FP_G 4u
#define FP_TRIAL_MUL 0x9E3779B97F4A7C15ull
#define FP_PRF_DOMAIN 0x4650524600000000ull
#define FP_MAX_DIMS MIRS_GPUFP_DIMS
/* causal_mask's -inf, and the start of a keyed running max: both parts
 * all ones (MIRS__FP_MASKED; no residue is that large). */
#define FP_NONE 0xFFFFFFFFu
/* Largest multiples of P and Q not above 2^63 (lazy reduction). */
#define FP_CP ((1ull << 63) / FP_P * FP_P)
#define FP_CQ ((1ull << 63) / FP_Q * FP_Q)

typedef mirs_gpufp_pair pair;

/* ---------------------------------------------------------------- the field */

GFP_DEV uint32_t add_mod(uint32_t x, uint32_t y, uint32_t m) {
  uint32_t s = x + y;
  return s >= m ? s - m : s;
}

/* (x - y) mod m for x, y < m. */
GFP_DEV uint32_t sub_mod(uint32_t x, uint32_t y, uint32_t m) {
  return x >= y ? x - y : x + (m - y);
}

/* (x * y) mod m. */
GFP_DEV uint32_t mul_mod(uint32_t x, uint32_t y, uint32_t m) {
  return (uint32_t)((uint64_t)x * y % m);
}

/* x^e mod m by square and multiply. */
GFP_DEV uint32_t pow_mod(uint32_t x, uint64_t e, uint32_t m) {
  uint64_t r = 1, b = x;
  for (; e; e >>= 1, b = b * b % m)
    if (e & 1)
      r = r * b % m;
  return (uint32_t)r;
}

/* Inverse in each part by Fermat; 0 maps to 0 (the contract's inv(0)). */
GFP_DEV pair fp_inv(pair x) {
  pair r = {x.a ? pow_mod(x.a, FP_P - 2, FP_P) : 0u, x.b ? pow_mod(x.b, FP_Q - 2, FP_Q) : 0u};
  return r;
}

/* Pairwise sum. */
GFP_DEV pair fp_add(pair x, pair y) {
  pair r = {add_mod(x.a, y.a, FP_P), add_mod(x.b, y.b, FP_Q)};
  return r;
}

/* Pairwise difference. */
GFP_DEV pair fp_sub(pair x, pair y) {
  pair r = {sub_mod(x.a, y.a, FP_P), sub_mod(x.b, y.b, FP_Q)};
  return r;
}

/* Pairwise product. */
GFP_DEV pair fp_mul(pair x, pair y) {
  pair r = {mul_mod(x.a, y.a, FP_P), mul_mod(x.b, y.b, FP_Q)};
  return r;
}

/* The pair (n mod P, n mod Q) of a count n. */
GFP_DEV pair fp_const(uint64_t n) {
  pair r = {(uint32_t)(n % FP_P), (uint32_t)(n % FP_Q)};
  return r;
}

/* K_t = seed ^ ((t + 1) * 0x9E3779B97F4A7C15). */
GFP_DEV uint64_t trial_key(uint64_t seed, int64_t t) {
  return seed ^ ((uint64_t)(t + 1) * FP_TRIAL_MUL);
}

/* The Philox block at counter `block` of subsequence sub under key, from
 * cuRAND's device API: curand_init(key, sub, 4 block) puts the counter at
 * (block, sub) with output position 0, so curand4 returns that block's
 * four words. */
GFP_DEV uint4 philox_words(uint64_t key, uint64_t sub, uint64_t block) {
  curandStatePhilox4_32_10_t st;
  curand_init((unsigned long long)key, (unsigned long long)sub, (unsigned long long)(block * 4),
              &st);
  return curand4(&st);
}

/* That block reduced to a pair: a = (w1 w0) mod P, b = (w3 w2) mod Q. */
GFP_DEV pair philox_pair(uint64_t key, uint64_t sub, uint64_t block) {
  uint4 w = philox_words(key, sub, block);
  pair r = {(uint32_t)((((uint64_t)w.y << 32) | w.x) % FP_P),
            (uint32_t)((((uint64_t)w.w << 32) | w.z) % FP_Q)};
  return r;
}

/* The keyed PRF of the unary op whose mirs_op value is op. */
GFP_DEV pair fp_prf(uint64_t key, int64_t op, pair x) {
  return philox_pair(key, FP_PRF_DOMAIN | (uint64_t)op, ((uint64_t)x.b << 32) | x.a);
}

/* The keyed rank of x in max's order (mirs__fp_max_rank): words w1 w0 of
 * the block at counter (b << 32 | a) of the PRF subsequence of MAX. */
GFP_DEV uint64_t max_rank(uint64_t key, int64_t max_op, pair x) {
  uint4 w = philox_words(key, FP_PRF_DOMAIN | (uint64_t)max_op, ((uint64_t)x.b << 32) | x.a);
  return ((uint64_t)w.y << 32) | w.x;
}

/* One step of a running max x (rank *rx, unset while x is FP_NONE) with
 * y: the larger in the keyed order (rank, then the residues) and its
 * rank; FP_NONE loses to everything.  The value of the CPU backend's
 * fp_max(key, x, y), computing y's rank once. */
GFP_DEV pair max_step(uint64_t key, int64_t max_op, pair x, uint64_t *rx, pair y) {
  if (y.a == FP_NONE || (x.a == y.a && x.b == y.b))
    return x;
  uint64_t ry = max_rank(key, max_op, y);
  if (x.a != FP_NONE &&
      (*rx > ry || (*rx == ry && (x.a > y.a || (x.a == y.a && x.b > y.b)))))
    return x;
  *rx = ry;
  return y;
}

/* The mirror of max_step for a running min: the smaller in the same
 * keyed order; FP_NONE (min's start: its argument is never masked) loses
 * to everything.  The value of the CPU backend's fp_min(key, x, y). */
GFP_DEV pair min_step(uint64_t key, int64_t max_op, pair x, uint64_t *rx, pair y) {
  if (y.a == FP_NONE || (x.a == y.a && x.b == y.b))
    return x;
  uint64_t ry = max_rank(key, max_op, y);
  if (x.a != FP_NONE &&
      (*rx < ry || (*rx == ry && (x.a < y.a || (x.a == y.a && x.b < y.b)))))
    return x;
  *rx = ry;
  return y;
}

/* An op's result in canonical form: an exp-dependent value has q-part 0,
 * except the sentinel where an operand may hold it (fp_compute). */
GFP_DEV pair canon(pair r, int64_t out_exp, int64_t masked) {
  if (out_exp && !(masked && r.a == FP_NONE))
    r.b = 0;
  return r;
}

/* mirs__hash_mix (src/core/util.c), for the digest. */
GFP_HD uint64_t hash_mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/* ---------------------------------------------------------------- index helpers */

/* Broadcast view of one operand against the output shape: strides per
 * output dim (0 where broadcast), as mirs__shape_bcast_strides. */
typedef struct bview {
  int64_t r;
  int64_t d[FP_MAX_DIMS];  /* output dims */
  int64_t sa[FP_MAX_DIMS]; /* first operand's strides */
  int64_t sb[FP_MAX_DIMS]; /* second operand's strides */
} bview;

/* Strides of in's dims as seen from out's (ranks aligned on the right): as
 * mirs__shape_bcast_strides, restated because the module links nothing of
 * the library (its ABI passes plain shapes). */
static void bcast_strides(const mirs_gpufp_shape *in, const mirs_gpufp_shape *out, int64_t *st) {
  int64_t stride = 1;
  for (int64_t d = out->ndim - 1; d >= 0; d--) {
    int64_t id = d - (out->ndim - in->ndim);
    if (id < 0) {
      st[d] = 0;
      continue;
    }
    st[d] = in->d[id] == 1 ? 0 : stride;
    stride *= in->d[id];
  }
}

/* The broadcast view of operands xs and zs against output os. */
static bview make_bview(const mirs_gpufp_shape *xs, const mirs_gpufp_shape *zs,
                        const mirs_gpufp_shape *os) {
  bview v;
  memset(&v, 0, sizeof v);
  v.r = os->ndim;
  for (int64_t k = 0; k < os->ndim; k++)
    v.d[k] = os->d[k];
  bcast_strides(xs, os, v.sa);
  bcast_strides(zs, os, v.sb);
  return v;
}

/* Elements of a shape. */
static int64_t shape_numel(const mirs_gpufp_shape *s) {
  int64_t n = 1;
  for (int64_t d = 0; d < s->ndim; d++)
    n *= s->d[d];
  return n;
}

/* Offset of flat index `row` over dims [0, nd) of d with strides st. */
GFP_DEV int64_t row_offset(const int64_t *d, int64_t nd, const int64_t *st, int64_t row) {
  int64_t off = 0;
  for (int64_t k = nd - 1; k >= 0; k--) {
    off += (row % d[k]) * st[k];
    row /= d[k];
  }
  return off;
}

/* ---------------------------------------------------------------- kernels */

/* Graph input: trial j (relative), element e. */
GFP_GLOBAL k_input(int64_t n, pair *y, int64_t numel, int64_t trial0, uint64_t seed,
                   uint64_t sub) {
  GFP_FOR(i, n) {
    int64_t j = i / numel, e = i % numel;
    y[i] = philox_pair(trial_key(seed, trial0 + j), sub, (uint64_t)e);
  }
}

/* Batched operand addressing. */
typedef struct opnd {
  pair *p; /* batch 0 */
  uint64_t stride;
} opnd;

/* Trial keys of batches: batch i belongs to trial trial0 + i / per_trial. */
typedef struct bkey {
  uint64_t seed;
  int64_t trial0, per_trial;
} bkey;

/* The trial key of batch `batch`. */
GFP_DEV uint64_t batch_key(bkey k, int64_t batch) {
  return trial_key(k.seed, k.trial0 + batch / k.per_trial);
}

/* UNARY: EXP, SQUARE, PRFs, elementwise over numel per batch
 * (exp(-inf) = 0: the sentinel's exp is (0, 0)). */
GFP_GLOBAL k_unary(int64_t n, opnd x, opnd y, int64_t numel, int64_t op, int64_t out_exp,
                   int64_t masked, bkey k) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    pair v = x.p[bt * x.stride + e], r;
    if (op == MIRS_GPUFP_EXP) {
      r.a = v.b == FP_NONE ? 0u : pow_mod(FP_G, v.b, FP_P);
      r.b = 0;
    } else if (op == MIRS_GPUFP_SQUARE) {
      r = fp_mul(v, v);
    } else {
      r = fp_prf(batch_key(k, bt), op, v);
    }
    y.p[bt * y.stride + e] = canon(r, out_exp, masked);
  }
}

/* ELEM: the ops of fingerprint.h's MIRS__FP_E_* table, elementwise; the
 * sentinel passes unchanged (only the ops keeping -inf take it). */
GFP_GLOBAL k_elem(int64_t n, opnd x, opnd y, int64_t numel, int64_t op, int64_t code, pair c,
                  uint64_t en, uint64_t ktweak, int64_t out_exp, int64_t masked, bkey k) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    pair v = x.p[bt * x.stride + e], r;
    if (v.a == FP_NONE) {
      r = v;
    } else if (code == 1) {
      r = fp_sub(fp_const(0), v);
    } else if (code == 2) {
      r = fp_add(v, c);
    } else if (code == 3) {
      r = fp_mul(v, c);
    } else if (code == 4) {
      r = fp_sub(c, v);
    } else if (code == 5) {
      r = fp_mul(c, fp_inv(v));
    } else if (code == 6) {
      r.a = pow_mod(v.a, en, FP_P);
      r.b = pow_mod(v.b, en, FP_Q);
    } else if (code == 8) { /* EVEN: the PRF of the smaller of v and -v (a, then b) */
      pair m = fp_sub(fp_const(0), v);
      r = fp_prf(batch_key(k, bt) ^ ktweak, op, m.a < v.a || (m.a == v.a && m.b < v.b) ? m : v);
    } else {
      r = fp_prf(batch_key(k, bt) ^ ktweak, op, v);
    }
    y.p[bt * y.stride + e] = canon(r, out_exp, masked);
  }
}

/* TRANSPOSE: y = x with its last two dims (rows x cols) swapped. */
GFP_GLOBAL k_transpose(int64_t n, opnd x, opnd y, int64_t numel, int64_t rows, int64_t cols) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    int64_t m = e / (rows * cols), k = e % (rows * cols), r = k / cols, c = k % cols;
    y.p[bt * y.stride + m * rows * cols + c * rows + r] = x.p[bt * x.stride + e];
  }
}

/* A strided view: out dims d[] read at base + sum of coordinate * st,
 * right-aligned in FP_MAX_DIMS dims (leading ones of size 1), so that
 * the index loop unrolls and the view stays in registers. */
typedef struct gview {
  int64_t base;
  int64_t d[FP_MAX_DIMS];
  int64_t st[FP_MAX_DIMS];
} gview;

/* GATHER (reshape, permute, slice): y[e] = x at e's place in the view. */
GFP_GLOBAL k_gather(int64_t n, opnd x, opnd y, int64_t numel, gview g) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel, off = g.base, rest = e;
    GFP_UNROLL
    for (int k = FP_MAX_DIMS - 1; k >= 0; k--) {
      off += (rest % g.d[k]) * g.st[k];
      rest /= g.d[k];
    }
    y.p[bt * y.stride + e] = x.p[bt * x.stride + off];
  }
}

/* Inverses of numel values per batch into y (dense, batch stride numel). */
GFP_GLOBAL k_inverse(int64_t n, opnd x, pair *y, int64_t numel) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    y[i] = fp_inv(x.p[bt * x.stride + e]);
  }
}

/* BINARY with broadcasting (DIV arrives as MUL by the inverses).  Where
 * an operand may hold the sentinel (masked: ADD, SUB), -inf absorbs a
 * finite value; finite - (-inf) = +inf has none and sets *bad. */
GFP_GLOBAL k_binary(int64_t n, opnd a, opnd b, opnd y, bview v, int64_t op, int64_t out_exp,
                    int64_t masked, unsigned long long *bad) {
  int64_t numel = 1;
  for (int64_t d = 0; d < v.r; d++)
    numel *= v.d[d];
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    int64_t oa = 0, ob = 0, rest = e;
    for (int64_t d = v.r - 1; d >= 0; d--) {
      int64_t c = rest % v.d[d];
      rest /= v.d[d];
      oa += c * v.sa[d];
      ob += c * v.sb[d];
    }
    pair x = a.p[bt * a.stride + oa], z = b.p[bt * b.stride + ob], r;
    if (masked && (x.a == FP_NONE || z.a == FP_NONE)) {
      r = x.a == FP_NONE ? x : z;
      if (x.a != FP_NONE && op == MIRS_GPUFP_SUB)
        *bad = 1;
    } else if (op == MIRS_GPUFP_ADD) {
      r = fp_add(x, z);
    } else if (op == MIRS_GPUFP_SUB) {
      r = fp_sub(x, z);
    } else {
      r = fp_mul(x, z);
    }
    y.p[bt * y.stride + e] = canon(r, out_exp, masked);
  }
}

/* MATMUL: one output element per thread, a lazily reduced 64-bit
 * accumulator per part (a product of residues is below 2^62; subtracting
 * CP or CQ when bit 63 is set keeps it below 2^63 and its residue). */
GFP_GLOBAL k_matmul(int64_t n, opnd a, opnd b, opnd y, bview v, int64_t k, int64_t out_exp) {
  int64_t r = v.r, m = v.d[r - 2], nn = v.d[r - 1], numel = 1;
  for (int64_t d = 0; d < r; d++)
    numel *= v.d[d];
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    int64_t bi = e / (m * nn), row = (e / nn) % m, col = e % nn;
    const pair *pa = a.p + bt * a.stride + row_offset(v.d, r - 2, v.sa, bi) + row * k;
    const pair *pb = b.p + bt * b.stride + row_offset(v.d, r - 2, v.sb, bi) + col;
    uint64_t acca = 0, accb = 0;
    for (int64_t p = 0; p < k; p++) {
      pair x = pa[p], z = pb[p * nn];
      acca += (uint64_t)x.a * z.a;
      acca -= (0 - (acca >> 63)) & FP_CP;
      accb += (uint64_t)x.b * z.b;
      accb -= (0 - (accb >> 63)) & FP_CQ;
    }
    pair o = {(uint32_t)(acca % FP_P), (uint32_t)(accb % FP_Q)};
    if (out_exp)
      o.b = 0;
    y.p[bt * y.stride + e] = o;
  }
}

/* A reduction's geometry: outer x red x inner per batch, reduced over red. */
typedef struct rgeo {
  int64_t outer, red, inner;
} rgeo;

/* SUM over a dim, into y or added into it (add); mean: times inv(red). */
GFP_GLOBAL k_sum(int64_t n, opnd x, opnd y, rgeo g, int64_t add, int64_t mean, int64_t out_exp) {
  int64_t per = g.outer * g.inner;
  GFP_FOR(i, n) {
    int64_t bt = i / per, e = i % per, o = e / g.inner, in = e % g.inner;
    const pair *px = x.p + bt * x.stride + o * g.red * g.inner + in;
    pair s = add ? y.p[bt * y.stride + e] : fp_const(0);
    for (int64_t r = 0; r < g.red; r++)
      s = fp_add(s, px[r * g.inner]);
    if (mean)
      s = fp_mul(s, fp_inv(fp_const((uint64_t)g.red)));
    if (out_exp)
      s.b = 0;
    y.p[bt * y.stride + e] = s;
  }
}

/* MAX (MIN when least) over a dim in the keyed order, into y (starting
 * at FP_NONE) or merged into it (add: ACCUM_MAX's running max, ACCUM_MIN's
 * running min). */
GFP_GLOBAL k_max(int64_t n, opnd x, opnd y, rgeo g, int64_t add, int64_t least, int64_t max_op,
                 int64_t out_exp, int64_t masked, bkey k) {
  int64_t per = g.outer * g.inner;
  GFP_FOR(i, n) {
    int64_t bt = i / per, e = i % per, o = e / g.inner, in = e % g.inner;
    const pair *px = x.p + bt * x.stride + o * g.red * g.inner + in;
    uint64_t key = batch_key(k, bt), rank = 0;
    pair s = {FP_NONE, FP_NONE};
    if (add && y.p[bt * y.stride + e].a != FP_NONE) {
      s = y.p[bt * y.stride + e];
      rank = max_rank(key, max_op, s);
    }
    for (int64_t r = 0; r < g.red; r++)
      s = least ? min_step(key, max_op, s, &rank, px[r * g.inner])
                : max_step(key, max_op, s, &rank, px[r * g.inner]);
    y.p[bt * y.stride + e] = canon(s, out_exp, masked);
  }
}

/* ONLINE (one ACCUM_ONLINE step): per element, the running max M' of M
 * and the shift m (broadcast: v.sb), and acc = acc G^(M - M') + y G^(m -
 * M') in the p-part (q-parts 0); a masked m adds nothing, the first
 * iteration (M = FP_NONE) keeps no old acc.  acc's running max follows
 * its numel values. */
GFP_GLOBAL k_online(int64_t n, opnd y, opnd m, opnd acc, bview v, int64_t numel, int64_t max_op,
                    bkey k) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    pair mv = m.p[bt * m.stride + row_offset(v.d, v.r, v.sb, e)];
    pair *pa = acc.p + bt * acc.stride + e, run = pa[numel];
    uint64_t key = batch_key(k, bt), rank = run.a == FP_NONE ? 0 : max_rank(key, max_op, run);
    pair nm = max_step(key, max_op, run, &rank, mv);
    uint32_t val = 0;
    if (mv.a != FP_NONE)
      val = mul_mod(y.p[bt * y.stride + e].a, pow_mod(FP_G, sub_mod(mv.b, nm.b, FP_Q), FP_P), FP_P);
    if (run.a != FP_NONE)
      val = add_mod(val, mul_mod(pa->a, pow_mod(FP_G, sub_mod(run.b, nm.b, FP_Q), FP_P), FP_P),
                    FP_P);
    pa->a = val;
    pa->b = 0;
    pa[numel] = nm;
  }
}

/* MASK (causal_mask): y = x where the global column is at most the
 * global row + (n - m), else the sentinel; the frame of batch i's block
 * (mirs_gpufp_op.mask_*). */
typedef struct mframe {
  int64_t org[4];
  int64_t step[3][2];
  int64_t bfirst, ge[3];
} mframe;

GFP_GLOBAL k_mask(int64_t n, opnd x, opnd y, int64_t numel, int64_t rows, int64_t cols, mframe f,
                  int64_t per_trial) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    int64_t L = f.bfirst + bt % per_trial;
    int64_t bc[3] = {L % f.ge[0], (L / f.ge[0]) % f.ge[1], L / (f.ge[0] * f.ge[1])};
    int64_t r0 = f.org[0], c0 = f.org[1];
    for (int g = 0; g < 3; g++) {
      r0 += bc[g] * f.step[g][0];
      c0 += bc[g] * f.step[g][1];
    }
    int64_t row = (e / cols) % rows, col = e % cols;
    pair masked = {FP_NONE, FP_NONE};
    y.p[bt * y.stride + e] = c0 + col <= r0 + row + f.org[3] - f.org[2] ? x.p[bt * x.stride + e]
                                                                          : masked;
  }
}

/* Row sums of x^2 over the last dim (rows per batch), added into y. */
GFP_GLOBAL k_sumsq(int64_t n, opnd x, opnd y, int64_t rows, int64_t last) {
  GFP_FOR(i, n) {
    int64_t bt = i / rows, row = i % rows;
    const pair *px = x.p + bt * x.stride + row * last;
    pair s = y.p[bt * y.stride + row];
    for (int64_t j = 0; j < last; j++)
      s = fp_add(s, fp_mul(px[j], px[j]));
    y.p[bt * y.stride + row] = s;
  }
}

/* rms_norm and layer_norm, step 1: per row, mu = the mean when centre
 * (else 0) and inv(sqrt_prf(sum((x - mu)^2) * inv(last) + eps)), into r
 * (two pairs per row: the inverse, then mu). */
GFP_GLOBAL k_norm_rows(int64_t n, opnd x, pair *r, int64_t rows, int64_t last, int64_t centre,
                       pair eps, int64_t in_exp, int64_t sqrt_op, bkey k) {
  GFP_FOR(i, n) {
    int64_t bt = i / rows, row = i % rows;
    const pair *px = x.p + bt * x.stride + row * last;
    pair invn = fp_inv(fp_const((uint64_t)last)), mu = fp_const(0), s = fp_const(0);
    for (int64_t j = 0; centre && j < last; j++)
      mu = fp_add(mu, px[j]);
    mu = fp_mul(mu, invn);
    for (int64_t j = 0; j < last; j++) {
      pair d = fp_sub(px[j], mu);
      s = fp_add(s, fp_mul(d, d));
    }
    s = fp_add(fp_mul(s, invn), eps);
    if (in_exp)
      s.b = 0;
    r[2 * i] = fp_inv(fp_prf(batch_key(k, bt), sqrt_op, s));
    r[2 * i + 1] = mu;
  }
}

/* rms_norm and layer_norm, step 2: y = (x - mu[row]) * r[row]. */
GFP_GLOBAL k_norm_scale(int64_t n, opnd x, const pair *r, opnd y, int64_t numel, int64_t last,
                        int64_t out_exp) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    const pair *rr = r + 2 * (bt * (numel / last) + e / last);
    pair o = fp_mul(fp_sub(x.p[bt * x.stride + e], rr[1]), rr[0]);
    if (out_exp)
      o.b = 0;
    y.p[bt * y.stride + e] = o;
  }
}

/* ACCUM: y += x. */
GFP_GLOBAL k_accum(int64_t n, opnd x, opnd y, int64_t numel) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    y.p[bt * y.stride + e] = fp_add(y.p[bt * y.stride + e], x.p[bt * x.stride + e]);
  }
}

/* FINISH of an ACCUM_RMS: y = sqrt_prf(y * inv(count) + eps). */
GFP_GLOBAL k_finish(int64_t n, opnd y, int64_t numel, uint64_t count, pair eps, int64_t in_exp,
                    int64_t sqrt_op, bkey k) {
  GFP_FOR(i, n) {
    int64_t bt = i / numel, e = i % numel;
    pair v = fp_add(fp_mul(y.p[bt * y.stride + e], fp_inv(fp_const(count))), eps);
    if (in_exp)
      v.b = 0;
    y.p[bt * y.stride + e] = fp_prf(batch_key(k, bt), sqrt_op, v);
  }
}

/* Tile geometry for LOAD/STORE kernels. */
typedef struct tgeo {
  int64_t r;
  int64_t tile[FP_MAX_DIMS];
  int64_t kst[FP_MAX_DIMS]; /* kernel tensor strides */
  int64_t gdim[FP_MAX_DIMS];
  int64_t gunit[FP_MAX_DIMS]; /* elements per grid block along d */
  int64_t fdim, f;
  int64_t ge[3], need[3];
  int64_t bfirst, nblocks, numel;
  uint64_t tstride, kstride;
} tgeo;

/* Kernel-tensor index of tile element e of block L; false for a STORE
 * another block overwrites later in the schedule's order. */
GFP_DEV bool tile_index(const tgeo *g, int64_t L, int64_t e, bool store, int64_t *idx) {
  int64_t bc[3] = {L % g->ge[0], (L / g->ge[0]) % g->ge[1], L / (g->ge[0] * g->ge[1])};
  if (store)
    for (int k = 0; k < 3; k++)
      if (g->need[k] >= 0 && bc[k] != g->need[k])
        return false;
  int64_t off = 0, rest = e;
  for (int64_t d = g->r - 1; d >= 0; d--) {
    int64_t c = rest % g->tile[d];
    rest /= g->tile[d];
    if (g->gdim[d] >= 0)
      c += bc[g->gdim[d]] * g->gunit[d];
    if (g->fdim == d)
      c += g->f * g->tile[d];
    off += c * g->kst[d];
  }
  *idx = off;
  return true;
}

/* LOAD (tensor -> tile) or STORE (tile -> tensor) of every batch's tile. */
GFP_GLOBAL k_tile(int64_t n, pair *tiles, pair *tensor, tgeo g, int64_t store) {
  GFP_FOR(i, n) {
    int64_t per = g.nblocks * g.numel;
    int64_t j = i / per, b = (i % per) / g.numel, e = i % g.numel, idx;
    pair *t = tiles + (uint64_t)(j * g.nblocks + b) * g.tstride + e;
    if (tile_index(&g, g.bfirst + b, e, store != 0, &idx)) {
      pair *k = tensor + (uint64_t)j * g.kstride + idx;
      if (store)
        *k = *t;
      else
        *t = *k;
    }
  }
}

/* ZERO: clear numel pairs of every batch's tile. */
GFP_GLOBAL k_zero(int64_t n, pair *tiles, uint64_t stride, int64_t numel, int64_t none_from) {
  GFP_FOR(i, n) {
    uint32_t v = i % numel < none_from ? 0u : FP_NONE;
    pair z = {v, v};
    tiles[(uint64_t)(i / numel) * stride + i % numel] = z;
  }
}

#ifdef MIRS_GPUFP_HOST
static void atomic_add_u64(unsigned long long *p, unsigned long long v) {
  *p += v;
}
static void atomic_min_u64(unsigned long long *p, unsigned long long v) {
  if (v < *p)
    *p = v;
}
#else
__device__ static void atomic_add_u64(unsigned long long *p, unsigned long long v) {
  atomicAdd(p, v);
}
__device__ static void atomic_min_u64(unsigned long long *p, unsigned long long v) {
  atomicMin(p, v);
}
#endif

/* The digest's order-free sum (mirs__fp_digest): each thread sums its
 * share, a warp adds its threads' sums by shuffles, and one atomic per
 * warp (not per element) adds that into *sum. */
GFP_GLOBAL k_digest(int64_t n, const pair *x, unsigned long long *sum) {
  unsigned long long part = 0;
  GFP_FOR(i, n) { part += hash_mix((uint64_t)i, x[i].a); }
#ifdef MIRS_GPUFP_HOST
  atomic_add_u64(sum, part);
#else
  for (int o = 16; o > 0; o >>= 1)
    part += __shfl_down_sync(0xffffffffu, part, o);
  if ((threadIdx.x & 31) == 0)
    atomic_add_u64(sum, part);
#endif
}

/* First mismatching index, by atomic minimum. */
GFP_GLOBAL k_compare(int64_t n, const pair *x, const pair *y, int64_t qparts,
                     unsigned long long *first) {
  GFP_FOR(i, n) {
    if (x[i].a != y[i].a || (qparts && x[i].b != y[i].b))
      atomic_min_u64(first, (unsigned long long)i);
  }
}

/* ---------------------------------------------------------------- the handle */

struct mirs_gpufp_dev {
  int device;
  pair *buf[3]; /* arena, tile scratch, op scratch (DIV inverses, rms rows) */
  uint64_t cap[3];
  unsigned long long *word; /* device words: digest sum, first mismatch, a masked sub's +inf */
#ifndef MIRS_GPUFP_HOST
  cudaStream_t stream;
  int pools; /* cudaDevAttrMemoryPoolsSupported */
#endif
  char msg[512];
};

enum { SCRATCH = 2 };

/* Record a failure message (printf-style); returns code. */
static int fail(mirs_gpufp_dev *d, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return code;
}

/* Memory and launch primitives: mem_alloc and mem_free (a buffer),
 * mem_copy and mem_zero (queued on the handle's stream), launched (the
 * status of the last launch) and dev_sync (wait for the stream).  Host
 * build: libc, and nothing to wait for. */
#ifdef MIRS_GPUFP_HOST

static int mem_alloc(mirs_gpufp_dev *d, void **p, size_t bytes) {
  *p = malloc(bytes ? bytes : 1);
  return *p ? MIRS_GPUFP_OK : fail(d, MIRS_GPUFP_NOMEM, "out of host memory (%zu bytes)", bytes);
}
static void mem_free(mirs_gpufp_dev *d, void *p) {
  (void)d;
  free(p);
}
static int mem_copy(mirs_gpufp_dev *d, void *dst, const void *src, size_t bytes) {
  (void)d;
  if (bytes)
    memcpy(dst, src, bytes);
  return MIRS_GPUFP_OK;
}
static int mem_zero(mirs_gpufp_dev *d, void *p, size_t bytes) {
  (void)d;
  memset(p, 0, bytes);
  return MIRS_GPUFP_OK;
}
static int launched(mirs_gpufp_dev *d, const char *what) {
  (void)d;
  (void)what;
  return MIRS_GPUFP_OK;
}
static int dev_sync(mirs_gpufp_dev *d) {
  (void)d;
  return MIRS_GPUFP_OK;
}

#else

/* The boundary: a CUDA error becomes a code and a message, here only. */
static int cuda_fail(mirs_gpufp_dev *d, cudaError_t e, const char *what) {
  int code = MIRS_GPUFP_CUDA;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
      e == cudaErrorDevicesUnavailable || e == cudaErrorInvalidDevice ||
      e == cudaErrorStubLibrary || e == cudaErrorSystemDriverMismatch ||
      e == cudaErrorCompatNotSupportedOnDevice)
    code = MIRS_GPUFP_NO_DEVICE;
  else if (e == cudaErrorMemoryAllocation)
    code = MIRS_GPUFP_NOMEM;
  return fail(d, code, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define GFP_CUDA(d, call)                                                                     \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess)                                                                    \
      return cuda_fail((d), e_, #call);                                                       \
  } while (0)

/* Stream-ordered allocation where the device has memory pools, so that
 * growing one handle's arena does not wait for the other handles' work;
 * plain cudaMalloc/cudaFree (which synchronise) elsewhere. */
static int mem_alloc(mirs_gpufp_dev *d, void **p, size_t bytes) {
  if (d->pools)
    GFP_CUDA(d, cudaMallocAsync(p, bytes ? bytes : 1, d->stream));
  else
    GFP_CUDA(d, cudaMalloc(p, bytes ? bytes : 1));
  return MIRS_GPUFP_OK;
}
/* Free a buffer, ordered after the stream's work. */
static void mem_free(mirs_gpufp_dev *d, void *p) {
  if (!p)
    return;
  /* (an error here surfaces at the next synchronising call) */
  if (d->pools) {
    (void)cudaFreeAsync(p, d->stream);
  } else {
    (void)cudaStreamSynchronize(d->stream);
    (void)cudaFree(p);
  }
}
/* Queue a copy (either direction: unified addressing). */
static int mem_copy(mirs_gpufp_dev *d, void *dst, const void *src, size_t bytes) {
  if (bytes)
    GFP_CUDA(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, d->stream));
  return MIRS_GPUFP_OK;
}
/* Queue clearing bytes at p. */
static int mem_zero(mirs_gpufp_dev *d, void *p, size_t bytes) {
  GFP_CUDA(d, cudaMemsetAsync(p, 0, bytes, d->stream));
  return MIRS_GPUFP_OK;
}
/* The status of the last launch (a bad configuration shows here; a
 * fault in the kernel at the next synchronising call). */
static int launched(mirs_gpufp_dev *d, const char *what) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? MIRS_GPUFP_OK : cuda_fail(d, e, what);
}
/* Wait for the handle's stream. */
static int dev_sync(mirs_gpufp_dev *d) {
  GFP_CUDA(d, cudaStreamSynchronize(d->stream));
  return MIRS_GPUFP_OK;
}

#endif

#define GFP_TRY(x)                                                                            \
  do {                                                                                        \
    int r_ = (x);                                                                             \
    if (r_ != MIRS_GPUFP_OK)                                                                  \
      return r_;                                                                              \
  } while (0)

/* Grow buffer `space` to at least `pairs` pairs (amortised doubling). */
static int gfp_reserve(mirs_gpufp_dev *d, int64_t space, uint64_t pairs) {
  if (space < 0 || space > SCRATCH)
    return fail(d, MIRS_GPUFP_INVALID, "reserve: no buffer %lld", (long long)space);
  if (pairs <= d->cap[space])
    return MIRS_GPUFP_OK;
  uint64_t cap = d->cap[space] * 2 > pairs ? d->cap[space] * 2 : pairs;
  void *p = NULL;
  GFP_TRY(mem_alloc(d, &p, cap * sizeof(pair)));
  if (space == MIRS_GPUFP_ARENA) {
    int r = mem_copy(d, p, d->buf[space], d->cap[space] * sizeof(pair));
    if (r != MIRS_GPUFP_OK) {
      mem_free(d, p);
      return r;
    }
  }
  mem_free(d, d->buf[space]);
  d->buf[space] = (pair *)p;
  d->cap[space] = cap;
  return MIRS_GPUFP_OK;
}

/* Open device `device`: a stream, the device words; the ABI's open. */
static int gfp_open(int device, mirs_gpufp_dev **out, char *msg, size_t msgsize) {
  *out = NULL;
  mirs_gpufp_dev *d = (mirs_gpufp_dev *)calloc(1, sizeof *d);
  if (!d) {
    snprintf(msg, msgsize, "out of host memory");
    return MIRS_GPUFP_NOMEM;
  }
  d->device = device;
  int r = MIRS_GPUFP_OK;
#ifndef MIRS_GPUFP_HOST
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    r = cuda_fail(d, e, "cudaGetDeviceCount");
  else if (n == 0)
    r = fail(d, MIRS_GPUFP_NO_DEVICE, "cudaGetDeviceCount: no CUDA device");
  else if (device < 0 || device >= n)
    r = fail(d, MIRS_GPUFP_NO_DEVICE, "CUDA device %d does not exist (%d devices)", device, n);
  else if ((e = cudaSetDevice(device)) != cudaSuccess)
    r = cuda_fail(d, e, "cudaSetDevice");
  else if ((e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking)) != cudaSuccess)
    r = cuda_fail(d, e, "cudaStreamCreateWithFlags");
  else if ((e = cudaDeviceGetAttribute(&d->pools, cudaDevAttrMemoryPoolsSupported, device)) !=
           cudaSuccess)
    r = cuda_fail(d, e, "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolsSupported)");
#endif
  if (r == MIRS_GPUFP_OK)
    r = mem_alloc(d, (void **)&d->word, 3 * sizeof *d->word);
  if (r == MIRS_GPUFP_OK) /* (the flag of a SUB's finite - -inf starts clear) */
    r = mem_zero(d, d->word + 2, sizeof *d->word);
  if (r != MIRS_GPUFP_OK) {
    snprintf(msg, msgsize, "%s", d->msg);
#ifndef MIRS_GPUFP_HOST
    if (d->stream)
      (void)cudaStreamDestroy(d->stream);
#endif
    free(d);
    return r;
  }
  *out = d;
  return MIRS_GPUFP_OK;
}

/* Free a handle after its work (the ABI's close). */
static void gfp_close(mirs_gpufp_dev *d) {
  if (!d)
    return;
  for (int i = 0; i < 3; i++)
    mem_free(d, d->buf[i]);
  mem_free(d, d->word);
#ifndef MIRS_GPUFP_HOST
  (void)cudaStreamSynchronize(d->stream);
  (void)cudaStreamDestroy(d->stream);
#endif
  free(d);
}

/* The handle's last message. */
static const char *gfp_last_error(const mirs_gpufp_dev *d) {
  return d ? d->msg : "no handle";
}

/* The device's name and compute capability. */
static int gfp_describe(mirs_gpufp_dev *d, char *buf, size_t size) {
#ifdef MIRS_GPUFP_HOST
  (void)d;
  snprintf(buf, size, "host emulation of the GPU fingerprint kernels");
#else
  cudaDeviceProp p;
  GFP_CUDA(d, cudaGetDeviceProperties(&p, d->device));
  snprintf(buf, size, "%s (sm_%d%d)", p.name, p.major, p.minor);
#endif
  return MIRS_GPUFP_OK;
}

/* Queue the generation of one graph input (all requested trials). */
static int gfp_input(mirs_gpufp_dev *d, uint64_t off, int64_t numel, int64_t trial0,
                     int64_t trials, uint64_t seed, uint64_t sub) {
  int64_t n = numel * trials;
  if (n <= 0)
    return MIRS_GPUFP_OK;
  if (off + (uint64_t)n > d->cap[MIRS_GPUFP_ARENA])
    return fail(d, MIRS_GPUFP_INVALID, "input outside the arena");
  GFP_LAUNCH(k_input, n, d)(n, d->buf[MIRS_GPUFP_ARENA] + off, numel, trial0, seed, sub);
  return launched(d, "k_input");
}

/* Resolve an operand against the handle's buffers. */
static int operand(mirs_gpufp_dev *d, const mirs_gpufp_operand *o, int64_t batches, opnd *out) {
  if (o->space < 0 || o->space > MIRS_GPUFP_TILE)
    return fail(d, MIRS_GPUFP_INVALID, "operand in no buffer");
  uint64_t end = o->off + (uint64_t)(batches - 1) * o->stride + (uint64_t)shape_numel(&o->shape);
  if (batches < 1 || end > d->cap[o->space])
    return fail(d, MIRS_GPUFP_INVALID, "operand outside its buffer (%llu > %llu pairs)",
                (unsigned long long)end, (unsigned long long)d->cap[o->space]);
  out->p = d->buf[o->space] + o->off;
  out->stride = o->stride;
  return MIRS_GPUFP_OK;
}

/* The geometry of a reduction of shape xs over dim. */
static rgeo reduce_geo(const mirs_gpufp_shape *xs, int64_t dim) {
  rgeo g = {1, xs->d[dim], 1};
  for (int64_t k = 0; k < dim; k++)
    g.outer *= xs->d[k];
  for (int64_t k = dim + 1; k < xs->ndim; k++)
    g.inner *= xs->d[k];
  return g;
}

/* Queue a binary op; where a finite value minus -inf (no fingerprint)
 * occurs, k_binary sets the handle's flag that the next sync reports. */
static int binary(mirs_gpufp_dev *d, const mirs_gpufp_op *op, opnd x, opnd z, opnd y) {
  int64_t B = op->batches;
  const mirs_gpufp_shape *os = &op->out.shape;
  bview v = make_bview(&op->in[0].shape, &op->in[1].shape, os);
  int64_t code = op->op, n = B * shape_numel(os);
  if (code == MIRS_GPUFP_DIV) {
    int64_t nb = shape_numel(&op->in[1].shape);
    GFP_TRY(gfp_reserve(d, SCRATCH, (uint64_t)(B * nb)));
    GFP_LAUNCH(k_inverse, B * nb, d)(B * nb, z, d->buf[SCRATCH], nb);
    GFP_TRY(launched(d, "k_inverse"));
    z.p = d->buf[SCRATCH];
    z.stride = (uint64_t)nb;
    code = MIRS_GPUFP_MUL;
  }
  GFP_LAUNCH(k_binary, n, d)(n, x, z, y, v, code, op->out_exp, op->masked, d->word + 2);
  return launched(d, "k_binary");
}

/* Wait for the handle's queued work; report (once) a finite - -inf that a
 * SUB met since the last call (the ABI's sync). */
static int gfp_sync(mirs_gpufp_dev *d) {
  unsigned long long bad = 0;
  GFP_TRY(mem_copy(d, &bad, d->word + 2, sizeof bad));
  GFP_TRY(dev_sync(d));
  if (!bad)
    return MIRS_GPUFP_OK;
  GFP_TRY(mem_zero(d, d->word + 2, sizeof *d->word));
  return fail(d, MIRS_GPUFP_UNSUPPORTED,
              "sub: a finite value minus causal_mask's -inf is +inf, which has no "
              "finite-field fingerprint; refusing to verify this graph");
}

/* The frame of a MASK step. */
static mframe mask_frame(const mirs_gpufp_op *op) {
  mframe f;
  memcpy(f.org, op->mask_org, sizeof f.org);
  memcpy(f.step, op->mask_step, sizeof f.step);
  f.bfirst = op->bfirst;
  for (int g = 0; g < 3; g++)
    f.ge[g] = op->grid_end[g] < 1 ? 1 : op->grid_end[g];
  return f;
}

/* The strided view of a GATHER step (out's dims, right-aligned). */
static gview gather_view(const mirs_gpufp_op *op) {
  gview g;
  int64_t r = op->out.shape.ndim, pad = FP_MAX_DIMS - r;
  g.base = op->gbase;
  for (int64_t k = 0; k < FP_MAX_DIMS; k++) {
    g.d[k] = k < pad ? 1 : op->out.shape.d[k - pad];
    g.st[k] = k < pad ? 0 : op->gst[k - pad];
  }
  return g;
}

/* Queue one compute step (the kernels of mirs_gpufp_op.kind). */
static int gfp_compute(mirs_gpufp_dev *d, const mirs_gpufp_op *op) {
  int64_t B = op->batches;
  if (B < 1 || op->per_trial < 1 || op->nin < 1 || op->nin > 2)
    return fail(d, MIRS_GPUFP_INVALID, "compute: bad batches or arity");
  opnd x, z = {NULL, 0}, y;
  GFP_TRY(operand(d, &op->in[0], B, &x));
  if (op->nin > 1)
    GFP_TRY(operand(d, &op->in[1], B, &z));
  GFP_TRY(operand(d, &op->out, B, &y));
  const mirs_gpufp_shape *xs = &op->in[0].shape, *os = &op->out.shape;
  int64_t numel = shape_numel(os), n = B * numel;
  int64_t last = xs->ndim > 0 ? xs->d[xs->ndim - 1] : 1;
  bkey k = {op->seed, op->trial0, op->per_trial};
  pair eps = {op->eps.a, op->eps.b};
  switch (op->kind) {
  case MIRS_GPUFP_K_UNARY:
    GFP_LAUNCH(k_unary, n, d)(n, x, y, numel, op->op, op->out_exp, op->masked, k);
    return launched(d, "k_unary");
  case MIRS_GPUFP_K_ELEM: {
    pair c = {op->ca, op->cb};
    GFP_LAUNCH(k_elem, n, d)(n, x, y, numel, op->op, op->ecode, c, op->en, op->ktweak,
                             op->out_exp, op->masked, k);
    return launched(d, "k_elem");
  }
  case MIRS_GPUFP_K_TRANSPOSE:
    if (xs->ndim < 2)
      return fail(d, MIRS_GPUFP_INVALID, "transpose of rank < 2");
    GFP_LAUNCH(k_transpose, n, d)(n, x, y, numel, xs->d[xs->ndim - 2], xs->d[xs->ndim - 1]);
    return launched(d, "k_transpose");
  case MIRS_GPUFP_K_GATHER: {
    if (os->ndim < 1 || os->ndim > FP_MAX_DIMS)
      return fail(d, MIRS_GPUFP_INVALID, "gather of rank %lld", (long long)os->ndim);
    gview g = gather_view(op);
    /* The farthest element read must lie inside in[0]. */
    int64_t far = g.base;
    for (int64_t a = 0; a < FP_MAX_DIMS; a++)
      far += (g.d[a] - 1) * g.st[a];
    if (g.base < 0 || far >= shape_numel(xs))
      return fail(d, MIRS_GPUFP_INVALID, "gather outside its operand");
    GFP_LAUNCH(k_gather, n, d)(n, x, y, numel, g);
    return launched(d, "k_gather");
  }
  case MIRS_GPUFP_K_MASK:
    if (xs->ndim < 2)
      return fail(d, MIRS_GPUFP_INVALID, "causal_mask of rank < 2");
    GFP_LAUNCH(k_mask, n, d)(n, x, y, numel, xs->d[xs->ndim - 2], xs->d[xs->ndim - 1],
                             mask_frame(op), op->per_trial);
    return launched(d, "k_mask");
  case MIRS_GPUFP_K_BINARY:
    if (op->nin != 2)
      return fail(d, MIRS_GPUFP_INVALID, "binary op with one operand");
    return binary(d, op, x, z, y);
  case MIRS_GPUFP_K_MATMUL: {
    if (op->nin != 2 || os->ndim < 2)
      return fail(d, MIRS_GPUFP_INVALID, "matmul: bad operands");
    bview v = make_bview(xs, &op->in[1].shape, os);
    GFP_LAUNCH(k_matmul, n, d)(n, x, z, y, v, last, op->out_exp);
    return launched(d, "k_matmul");
  }
  case MIRS_GPUFP_K_SUM:
  case MIRS_GPUFP_K_MAX:
  case MIRS_GPUFP_K_MIN: {
    if (op->dim < 0 || op->dim >= xs->ndim)
      return fail(d, MIRS_GPUFP_INVALID, "reduction: bad dim");
    rgeo g = reduce_geo(xs, op->dim);
    n = B * g.outer * g.inner;
    if (op->kind == MIRS_GPUFP_K_SUM) {
      GFP_LAUNCH(k_sum, n, d)(n, x, y, g, op->add, op->mean, op->out_exp);
      return launched(d, "k_sum");
    }
    GFP_LAUNCH(k_max, n, d)(n, x, y, g, op->add, op->kind == MIRS_GPUFP_K_MIN, op->max_op,
                            op->out_exp, op->masked, k);
    return launched(d, "k_max");
  }
  case MIRS_GPUFP_K_ONLINE: {
    if (op->nin != 2 || op->in[1].shape.ndim != xs->ndim ||
        op->out.off + (uint64_t)(B - 1) * op->out.stride + 2 * (uint64_t)numel >
            d->cap[op->out.space])
      return fail(d, MIRS_GPUFP_INVALID, "accum_online: bad operands");
    bview v = make_bview(xs, &op->in[1].shape, os);
    GFP_LAUNCH(k_online, n, d)(n, x, z, y, v, numel, op->max_op, k);
    return launched(d, "k_online");
  }
  case MIRS_GPUFP_K_SUMSQ: {
    int64_t rows = shape_numel(xs) / last;
    n = B * rows;
    GFP_LAUNCH(k_sumsq, n, d)(n, x, y, rows, last);
    return launched(d, "k_sumsq");
  }
  case MIRS_GPUFP_K_RMSNORM: {
    int64_t rows = numel / last;
    GFP_TRY(gfp_reserve(d, SCRATCH, 2 * (uint64_t)(B * rows)));
    GFP_LAUNCH(k_norm_rows, B * rows, d)(B * rows, x, d->buf[SCRATCH], rows, last, op->centre,
                                         eps, op->in_exp, op->sqrt_op, k);
    GFP_TRY(launched(d, "k_norm_rows"));
    GFP_LAUNCH(k_norm_scale, n, d)(n, x, d->buf[SCRATCH], y, numel, last, op->out_exp);
    return launched(d, "k_norm_scale");
  }
  case MIRS_GPUFP_K_ACCUM:
    GFP_LAUNCH(k_accum, n, d)(n, x, y, numel);
    return launched(d, "k_accum");
  case MIRS_GPUFP_K_FINISH:
    /* The accumulator is out (in[0] names its argument, for in_exp). */
    GFP_LAUNCH(k_finish, n, d)(n, y, numel, op->count, eps, op->in_exp, op->sqrt_op, k);
    return launched(d, "k_finish");
  default:
    return fail(d, MIRS_GPUFP_INVALID, "compute: unknown kind %lld", (long long)op->kind);
  }
}

/* Queue one tile step (LOAD, STORE or ZERO), after checking the geometry. */
static int gfp_tile(mirs_gpufp_dev *d, const mirs_gpufp_tile *t) {
  int64_t numel = t->kind == MIRS_GPUFP_T_ZERO ? t->zero_numel : shape_numel(&t->tile);
  int64_t n = t->trials * t->nblocks * numel;
  if (n <= 0)
    return MIRS_GPUFP_OK;
  uint64_t tend = t->tile_off + (uint64_t)(t->trials * t->nblocks - 1) * t->tile_stride +
                  (uint64_t)numel;
  if (tend > d->cap[MIRS_GPUFP_TILE])
    return fail(d, MIRS_GPUFP_INVALID, "tile step outside the tile scratch");
  pair *tiles = d->buf[MIRS_GPUFP_TILE] + t->tile_off;
  if (t->kind == MIRS_GPUFP_T_ZERO) {
    GFP_LAUNCH(k_zero, n, d)(n, tiles, t->tile_stride, numel, t->none_from);
    return launched(d, "k_zero");
  }
  tgeo g;
  memset(&g, 0, sizeof g);
  g.r = t->tile.ndim;
  if (t->tensor.ndim != g.r)
    return fail(d, MIRS_GPUFP_INVALID, "tile and tensor ranks differ");
  int64_t stride = 1;
  for (int64_t k = g.r - 1; k >= 0; k--) {
    g.kst[k] = stride;
    stride *= t->tensor.d[k];
    g.tile[k] = t->tile.d[k];
    g.gdim[k] = t->grid_of_dim[k];
    g.gunit[k] = t->grid_unit[k];
    if (g.gdim[k] >= 0 && g.gunit[k] < t->tile.d[k])
      return fail(d, MIRS_GPUFP_INVALID, "a grid unit is smaller than its tile (dim %lld)",
                  (long long)k);
    /* The farthest tile must lie inside the tensor (mirs__shape_copy_tile). */
    int64_t far = t->tile.d[k];
    if (g.gdim[k] >= 0)
      far += (t->grid_end[g.gdim[k]] - 1) * g.gunit[k];
    if (t->forloop_dim == k)
      far += t->f * t->tile.d[k];
    if (far > t->tensor.d[k])
      return fail(d, MIRS_GPUFP_INVALID, "a tile lies outside its tensor (dim %lld)",
                  (long long)k);
  }
  uint64_t kend = t->tensor_off + (uint64_t)(t->trials - 1) * t->tensor_stride + (uint64_t)stride;
  if (kend > d->cap[MIRS_GPUFP_ARENA])
    return fail(d, MIRS_GPUFP_INVALID, "tile step's tensor outside the arena");
  g.fdim = t->forloop_dim;
  g.f = t->f;
  for (int k = 0; k < 3; k++) {
    g.ge[k] = t->grid_end[k];
    g.need[k] = t->need[k];
  }
  g.bfirst = t->bfirst;
  g.nblocks = t->nblocks;
  g.numel = numel;
  g.tstride = t->tile_stride;
  g.kstride = t->tensor_stride;
  int64_t store = t->kind == MIRS_GPUFP_T_STORE;
  GFP_LAUNCH(k_tile, n, d)(n, tiles, d->buf[MIRS_GPUFP_ARENA] + t->tensor_off, g, store);
  return launched(d, "k_tile");
}

/* Copy arena values to the host and wait. */
static int gfp_read(mirs_gpufp_dev *d, uint64_t off, uint64_t count, mirs_gpufp_pair *out) {
  if (off + count > d->cap[MIRS_GPUFP_ARENA])
    return fail(d, MIRS_GPUFP_INVALID, "read outside the arena");
  GFP_TRY(mem_copy(d, out, d->buf[MIRS_GPUFP_ARENA] + off, count * sizeof(pair)));
  return dev_sync(d);
}

/* The digest of trials x numel pairs at off, reduced on the device. */
static int gfp_digest(mirs_gpufp_dev *d, uint64_t off, int64_t numel, int64_t trials,
                      uint64_t *out) {
  int64_t n = numel * trials;
  if (off + (uint64_t)n > d->cap[MIRS_GPUFP_ARENA])
    return fail(d, MIRS_GPUFP_INVALID, "digest outside the arena");
  GFP_TRY(mem_zero(d, d->word, sizeof *d->word));
  if (n > 0) {
    GFP_LAUNCH(k_digest, n, d)(n, d->buf[MIRS_GPUFP_ARENA] + off, d->word);
    GFP_TRY(launched(d, "k_digest"));
  }
  unsigned long long x = 0;
  GFP_TRY(mem_copy(d, &x, d->word, sizeof x));
  GFP_TRY(dev_sync(d));
  *out = hash_mix(hash_mix((uint64_t)numel, (uint64_t)trials), x);
  return MIRS_GPUFP_OK;
}

/* First index where two arenas differ, found on a's stream. */
static int gfp_compare(mirs_gpufp_dev *a, uint64_t offa, mirs_gpufp_dev *b, uint64_t offb,
                       uint64_t count, int64_t qparts, int64_t *first) {
  *first = -1;
  if (offa + count > a->cap[MIRS_GPUFP_ARENA] || offb + count > b->cap[MIRS_GPUFP_ARENA])
    return fail(a, MIRS_GPUFP_INVALID, "compare outside an arena");
  if (a != b)
    GFP_TRY(dev_sync(b)); /* b's values must be final before a's stream reads them */
  unsigned long long none = ~0ull, got = ~0ull;
  GFP_TRY(mem_copy(a, a->word + 1, &none, sizeof none));
  if (count > 0) {
    int64_t n = (int64_t)count;
    GFP_LAUNCH(k_compare, n, a)(n, a->buf[MIRS_GPUFP_ARENA] + offa, b->buf[MIRS_GPUFP_ARENA] + offb,
                                qparts, a->word + 1);
    GFP_TRY(launched(a, "k_compare"));
  }
  GFP_TRY(mem_copy(a, &got, a->word + 1, sizeof got));
  GFP_TRY(dev_sync(a));
  *first = got == ~0ull ? -1 : (int64_t)got;
  return MIRS_GPUFP_OK;
}

static const mirs_gpufp_abi gfp_abi = {
    MIRS_GPUFP_ABI_VERSION,
    (uint32_t)sizeof(mirs_gpufp_abi),
#ifdef MIRS_GPUFP_HOST
    "host emulation (MIRS_GPUFP_HOST)",
#else
    "cuda " MIRS_GPUFP_STR(CUDART_VERSION),
#endif
    gfp_open,
    gfp_close,
    gfp_last_error,
    gfp_describe,
    gfp_reserve,
    gfp_input,
    gfp_compute,
    gfp_tile,
    gfp_read,
    gfp_digest,
    gfp_compare,
    gfp_sync,
};

extern "C" __attribute__((visibility("default"))) const mirs_gpufp_abi *mirs_gpufp_abi_get(void) {
  return &gfp_abi;
}
