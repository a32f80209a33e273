/* SPDX-License-Identifier: MIT */
/* src/verify/fingerprint.h - finite-field fingerprints of µGraphs: the
 * verification of complete candidates (docs/SOUNDNESS.md, docs/SEARCH.md),
 * the fingerprint-backend interface, and its CPU implementation.
 *
 * ---------------------------------------------------------------- the field
 * Every tensor element is a pair (a mod P, b mod Q) with
 *     P = 2147483579 = 2Q + 1 (a safe prime, < 2^31),
 *     Q = 1073741789 (prime; Q | P - 1),
 *     G = 4, of order Q mod P (a quadratic residue != 1 of a safe-prime group).
 * Since P < 2^31 a sum of two residues fits in 32 bits and a product in 64.
 *   add, sub, mul, square  act on both parts;
 *   div x/y                multiplies by the inverse of y in each part, with
 *                          inv(0) = 0 (deterministic; such an event is part of
 *                          the failure probability, see the bound below);
 *   exp (a, b)             = (G^b mod P, 0): the LAX construction.  The p-part
 *                          is a homomorphic image (exp(x+y) = exp(x)exp(y)
 *                          because G^(b1+b2) = G^b1 G^b2); the q-part of an
 *                          exp result has no meaning, so the tensor is flagged
 *                          *exp-dependent* and its q-parts are set to 0.
 *                          Exp-dependence propagates through +, -, *, /, sum,
 *                          matmul, rms_norm and the accumulators, and every
 *                          exp-dependent tensor has all q-parts 0 (canonical).
 *   exp of an exp-dependent argument has no sound fingerprint here (its
 *                          exponent would need a meaningful q-part): it is
 *                          detected statically, before computing anything, and
 *                          refused with MIRS_UNSUPPORTED naming the tensor.
 *   sqrt, silu, gelu, relu keyed pseudo-random functions (uninterpreted:
 *                          equal arguments give equal results).  Their
 *                          result is a fresh value in both parts and is NOT
 *                          exp-dependent: it is a function of the argument's
 *                          fingerprint, which is sound whatever the argument
 *                          (so exp(silu(exp(x))) is accepted, exp(exp(x)) not).
 *   neg, constants, pow,   see "Constants and the elementwise ops" below
 *   sigmoid, tanh, clamp,  (MIRS__FP_E_*) and docs/SOUNDNESS.md; abs is the
 *   abs,                   keyed PRF of the smaller pair of x and -x (even).
 *   transpose
 *   sum, matmul            sums of products in each part.
 *   mean(x, dim)           = sum over dim times inv(n), n the dim's size: the
 *                          exact field inverse (n < Q <= P, so n is a unit).
 *   max(x, dim)            the element of largest rank along dim, where
 *                          rank(x) = (mirs__fp_max_rank(K_t, x), x.a, x.b)
 *                          compared lexicographically: a keyed pseudo-random
 *                          total order on pairs.  Like the real max it is
 *                          commutative, associative, idempotent and returns
 *                          one of its arguments, so a max of tile maxes is
 *                          the max; identities of the real order (max(x+c)
 *                          = max(x)+c) do not hold (docs/SOUNDNESS.md).
 *                          The result keeps the argument's exp flag.
 *   ACCUM_MAX(x, dim)      the running max (same order) over dim and the loop.
 *   min(x, dim),           the element of smallest rank along dim (max's
 *   ACCUM_MIN(x, dim)      order reversed; running over the loop for
 *                          ACCUM_MIN): min(x, y) + max(x, y) = x + y, and
 *                          the min of distinct values is never their max.
 *                          A masked (-inf) argument is refused.
 *   ACCUM_ONLINE(y, m)     running max M of m (same order, per element, m
 *                          broadcast to y) and acc = acc*exp(M - M') +
 *                          y*exp(m - M') with exp as above (G^(q-part));
 *                          the first iteration sets acc = y.  So after the
 *                          loop acc = sum_i y_i exp(m_i - M_final) exactly
 *                          (exp is a homomorphism).  m must not be
 *                          exp-dependent (refused as exp of exp); the
 *                          result is exp-dependent.
 *   rms_norm(x)            = x * inv(sqrt_prf(S * inv(n))), S = sum of x^2 over
 *                          the last dim, n its size (mod P / mod Q).
 *   ACCUM_RMS(x)           = sqrt_prf(T * inv(tile_last * F)), T = sum over
 *                          the forloop of the row sums of x^2.  With the same
 *                          sqrt_prf, matmul(rms_norm(X), W) and
 *                          div(accum(matmul(x, w)), accum_rms(x)) agree exactly.
 *   causal_mask(x)         = x where kept, and the sentinel MIRS__FP_MASKED
 *                          (both parts all ones) where the reals have -inf:
 *                          the masked positions are a function of the
 *                          position alone, the same in every graph.  The
 *                          field has no -inf, so the sentinel may reach only
 *                          the uses where -inf's result is certain:
 *                          exp(masked) = (0, 0) (exp(-inf) = 0), masked + y
 *                          = y + masked = masked - y = masked (y finite or
 *                          masked: -inf + y = -inf), causal_mask(masked) =
 *                          masked, and the loads and stores that move it.
 *                          Any other use (mul, div, matmul, sum, y - masked,
 *                          an accumulator, a PRF) is refused statically
 *                          (MIRS_UNSUPPORTED), so a candidate using one
 *                          fails (docs/SOUNDNESS.md, "Masks").
 * Block graphs (custom ops) are evaluated with the semantics of
 * src/graph/interp.c, over the field.
 *
 * ---------------------------------------------------------------- randomness
 * These mappings are a contract: the GPU backend (cuRAND) must reproduce
 * them bit for bit.  Philox below is mirs_philox4x32_10 / mirs_philox_at.
 *   trial key   K_t = seed ^ ((t + 1) * 0x9E3779B97F4A7C15)  (mod 2^64), t = 0..k-1.
 *   input       element e (row-major) of the graph input named N, trial t:
 *               sub = mirs__hash_str(0, N); the Philox block at counter
 *               (lo32 e, hi32 e, lo32 sub, hi32 sub) under key (lo32 K_t,
 *               hi32 K_t) gives words w0..w3, i.e. w_i = mirs_philox_at(K_t,
 *               sub, 4e + i) = the four curand() values after
 *               curand_init(K_t, sub, 4e) (one curand4()).  Then
 *               a = (w1 << 32 | w0) mod P,  b = (w3 << 32 | w2) mod Q.
 *   PRF         op f in {SQRT, SILU, GELU, RELU} on (a, b), trial t: the
 *               same construction with sub = 0x4650524600000000 | f (f the
 *               mirs_op value from ops.def) and block index (b << 32 | a),
 *               i.e. w_i = mirs_philox_at(K_t, sub, 4 (b << 32 | a) + i).
 * Reducing a 64-bit word makes each residue's probability at most
 * (1 + 2^-32) / P (resp. / Q): uniform for every practical purpose.
 *
 * ---------------------------------------------------------------- the bound
 * Each tensor carries a degree estimate: inputs 1; add/sub max; mul and
 * matmul the sum; div numerator + denominator; square twice; sum and the
 * accumulators keep it; rms_norm x * inv(prf) adds 1; exp and PRF results
 * are fresh variables of degree 1.  Comparing outputs r (reference) and c
 * (candidate) uses D = max(deg r + deg c, the largest degree of an argument
 * of an exp or PRF either depends on).  Per trial, if r and c differ as
 * rational functions of the inputs (exp and PRF values taken as independent
 * variables), the numerator of r - c (degree <= deg r + deg c) vanishes at
 * a uniform random point with probability <= D/Q (Schwartz-Zippel; Q < P so
 * Q is the weaker field).  Trials use independent keys, so the false-accept
 * probability is <= (D/Q)^k; mirs__fp_trials_for picks the smallest k with
 * (D/Q)^k <= 2^target (default target -50).  Limits, stated honestly:
 *  - the degree rules are an estimate: "add = max" after a division assumes
 *    the terms share their denominator (true of the softmax and rms_norm
 *    patterns, where the denominator is constant along the summed index);
 *  - exp and PRF results are modelled as independent uniform values; that
 *    fails when two different arguments collide (probability <= the
 *    argument's degree / Q per pair of elements, not union-bounded here)
 *    and the PRF is treated as a random oracle;
 *  - a denominator that evaluates to 0 (inv(0) = 0) is not counted;
 *  - equality is decided in the model where only the field axioms, exp's
 *    homomorphism and "equal arguments give equal results" hold: graphs
 *    equal over the reals for other reasons (e.g. sqrt(x)^2 = x, or
 *    exp(x)/exp(x)*y = y where exp-dependence differs) may be rejected.
 *    The scheme is sound, not complete.
 * The verdict reports D and log2 of the bound; a caller that needs a
 * stronger bound recomputes with more trials.
 *
 * ---------------------------------------------------------------- the API
 * A store (one per worker) mirrors a prefix [0, nt) of a graph's kernel
 * tensors: metadata here (numel, degree, exp flag, digest) and values in
 * the backend, k trials per tensor.  The search adds one op and calls
 * mirs__fp_push_op (only the new op's outputs are computed, from its inputs'
 * fingerprints), and after mirs__graph_pop_op calls mirs__fp_truncate(s,
 * g->nt).  Nothing is allocated per op except when the store or its
 * scratch must grow (amortised doubling).
 * Invariants: s->t[i].off is the offset in pairs of tensor i's trial-0 value
 * in the backend's arena (trial j at off + j * numel), the offsets are
 * increasing and s->used = off + numel * trials of the last tensor; every
 * exp-dependent tensor has all q-parts 0; a tensor's digest is computed
 * lazily and dropped with the tensor. */
#ifndef MIRS_VERIFY_FINGERPRINT_H
#define MIRS_VERIFY_FINGERPRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

/* The elementwise ops added with constants (docs/SOUNDNESS.md "Constants
 * and the elementwise ops"), described once for both backends:
 *   NEG   (-a, -b)                       ADDC  x + c     MULC  x * c
 *   RSUBC c - x                          RDIVC c * inv(x) (inv(0) = 0, as div)
 *   POWN  (a^n, b^n) for pow by a natural n <= MIRS__FP_POW_MAX (exact);
 *   PRF   sigmoid, tanh, clamp and pow by any other exponent: the PRF of
 *         the op under the trial key XOR ktweak, a hash of the op's
 *         constants (0 for sigmoid and tanh), so pow and clamp are keyed
 *         by their constants.
 * c is the pair of the constant m * 10^e (mirs__fp_scalar); div_scalar
 * is MULC by inv(c).  transpose permutes elements (exact). */
enum {
  MIRS__FP_E_NEG = 1,
  MIRS__FP_E_ADDC,
  MIRS__FP_E_MULC,
  MIRS__FP_E_RSUBC,
  MIRS__FP_E_RDIVC,
  MIRS__FP_E_POWN,
  MIRS__FP_E_PRF,
  MIRS__FP_E_EVEN /* abs: the PRF of whichever of x and -x is smaller (a, then b) */
};
#define MIRS__FP_POW_MAX 64

/* Field constants (see above; checked in tests/check_fingerprint.c). */
#define MIRS__FP_P UINT32_C(2147483579)
#define MIRS__FP_Q UINT32_C(1073741789)
#define MIRS__FP_G UINT32_C(4)
/* Trial-key multiplier and the Philox subsequence domain of the PRFs. */
#define MIRS__FP_TRIAL_MUL UINT64_C(0x9E3779B97F4A7C15)
#define MIRS__FP_PRF_DOMAIN UINT64_C(0x4650524600000000)
/* Most trials a store may hold, and the default target log2 of the bound. */
#define MIRS__FP_MAX_TRIALS 64
#define MIRS__FP_DEFAULT_LOG2_BOUND (-50.0)

/* The value -inf of a causal_mask's masked entries: both parts all ones,
 * outside [0, P) and [0, Q), so never equal to a field value. */
#define MIRS__FP_MASKED UINT32_C(0xFFFFFFFF)

/* One fingerprint value: a in [0, P), b in [0, Q), or both MIRS__FP_MASKED. */
typedef struct mirs__fp_pair {
  uint32_t a, b;
} mirs__fp_pair;

/* One elementwise op of the table above (code MIRS__FP_E_*). */
typedef struct mirs__fp_elem {
  int code;
  mirs__fp_pair c; /* ADDC, MULC, RSUBC, RDIVC: the constant */
  uint64_t n;      /* POWN: the exponent */
  uint64_t ktweak; /* PRF: XORed into the trial key */
} mirs__fp_elem;
/* Describe op with constants c; false for the ops not in the table. */
bool mirs__fp_elem_of(mirs_op op, const mirs__scalar *c, mirs__fp_elem *out);
/* The pair of the constant c. */
mirs__fp_pair mirs__fp_scalar(const mirs__scalar *c);
/* The exact field element of a finite real v >= 0 (an eps attribute):
 * its shortest decimal as mirs__fp_scalar maps it, past the decimal
 * range its exact binary value; 0 for v <= 0 or not finite. */
mirs__fp_pair mirs__fp_real(double v);

/* Per-store counters (the lead maps them onto stats.def). */
typedef struct mirs__fp_stats {
  uint64_t ops;           /* kernel ops fingerprinted (a custom op once) */
  uint64_t inputs;        /* graph inputs generated */
  uint64_t elements;      /* kernel-tensor pairs written, all trials */
  uint64_t tile_elements; /* block-tile pairs written, all trials */
  uint64_t digests;       /* tensor digests computed (not cached hits) */
  uint64_t compares;      /* tensor comparisons */
  uint64_t refused;       /* ops refused (exp of an exp-dependent value) */
  uint64_t truncations;   /* pops (truncations that dropped tensors) */
} mirs__fp_stats;

/* Metadata of one kernel tensor (or, in s->bt, one block tensor). */
typedef struct mirs__fp_meta {
  int64_t numel;   /* elements per trial (block tensors: per tile) */
  uint64_t off;    /* kernel: arena offset of trial 0; block: tile-buffer offset */
  uint64_t degree; /* degree estimate (saturating) */
  uint64_t inner;  /* largest degree of an exp/PRF argument it depends on */
  uint64_t digest; /* valid when has_digest */
  bool exp_dep;    /* depends on an exp: q-parts are 0 */
  bool masked;     /* may hold MIRS__FP_MASKED (a causal_mask's -inf) */
  bool has_digest;
} mirs__fp_meta;

typedef struct mirs__fp_store mirs__fp_store;

/* The fingerprint-backend interface.  A backend owns the values (an arena
 * addressed by mirs__fp_meta.off, trial-major) and computes them; the store
 * owns the metadata, checks, the degree analysis and the comparisons.  When
 * compute_input/compute_op run, the new tensors' metadata is already in
 * s->t (and for a custom op the block tensors' in s->bt[0..bg->nt), with
 * tile offsets summing to s->tile_used per trial) and s->used is the arena
 * size needed.  On failure a backend sets the context error and returns
 * its status; the store then drops the new tensors. */
typedef struct mirs__fp_backend {
  const char *name;
  /* Create the backend state of store s. */
  mirs_status (*open)(mirs__fp_store *s, void **state);
  /* Fingerprint graph input t (all trials). */
  mirs_status (*compute_input)(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t t);
  /* Fingerprint every output of kernel op `op` of g from its inputs', in
   * trials [j0, j1). */
  mirs_status (*compute_op)(void *state, mirs__fp_store *s, const mirs_graph *g, int32_t op,
                            int j0, int j1);
  /* Copy count values of tensor t, trial `trial`, from element first. */
  mirs_status (*read)(void *state, const mirs__fp_store *s, int32_t t, int trial, int64_t first,
                      int64_t count, mirs__fp_pair *out);
  /* The digest of tensor t (definition at mirs__fp_digest). */
  mirs_status (*digest)(void *state, const mirs__fp_store *s, int32_t t, uint64_t *out);
  /* Release the state (the store is being freed). */
  void (*release)(void *state, mirs__fp_store *s);
  /* Optional (NULL: compared through read): the first trial and element
   * where tensor ta of a and tb of b (same backend, same numel and
   * trials) differ in p-parts, or q-parts too when qparts; -1 and -1
   * when equal.  Saves moving values off a device. */
  mirs_status (*compare)(void *sa, const mirs__fp_store *a, int32_t ta, void *sb,
                         const mirs__fp_store *b, int32_t tb, bool qparts, int *trial,
                         int64_t *elem);
} mirs__fp_backend;

/* The CPU backend (constant table). */
extern const mirs__fp_backend mirs__fp_cpu_backend;
/* The GPU backend (src/gpu/gpufp.c): values on the device, computed by the
 * module libmirsearch-gpufp.so, loaded when a store opens; bit-identical
 * to the CPU backend's.  Opening a store fails with MIRS_NO_DEVICE when
 * the module or a device is missing. */
extern const mirs__fp_backend mirs__fp_gpu_backend;
/* The backend the option `verify` selects for verification at full shape
 * (auto: the GPU when one is present and usable, else the CPU; cpu; gpu:
 * the GPU or an error: MIRS_UNSUPPORTED when built without CUDA, exit 2,
 * MIRS_NO_DEVICE or MIRS_CUDA naming the CUDA error, exit 3).  name gets
 * what was chosen in words ("cpu", "gpu: NVIDIA H100 ... (sm_90)", "cpu (no
 * usable GPU: ...)").  Implemented in src/gpu/gpufp.c, the module that may
 * see both this interface and CUDA. */
mirs_status mirs__fp_backend_choose(mirs_context *ctx, const mirs__fp_backend **out, char *name,
                                    size_t size);

struct mirs__fp_store {
  mirs_context *ctx;
  const mirs__fp_backend *backend;
  void *state;
  int trials;
  uint64_t seed;
  mirs__fp_meta *t; /* kernel tensors [0, nt) */
  int32_t nt;
  size_t capt;
  uint64_t used;     /* arena pairs in use */
  mirs__fp_meta *bt; /* block tensors of the custom op being computed */
  size_t capbt;
  uint64_t tile_used; /* tile pairs per trial of that custom op */
  int32_t partial;    /* tensors [partial, nt) hold trial 0 only (-1: none) */
  bool corner;        /* ... and of those only what grid block (0,0,0) stores
                         (mirs__fp_push_op_corner) */
  mirs__fp_stats stats;
};

/* Verdict of mirs__fp_compare_outputs. */
typedef struct mirs__fp_verdict {
  bool equal;         /* every reference output matched */
  int32_t ref_output; /* first mismatching reference tensor, or -1 */
  uint64_t degree;    /* D of the bound (max over outputs) */
  double log2_bound;  /* trials * log2(D / Q); 0 = no bound (D >= Q) */
  char why[256];      /* the mismatch, in words ("" when equal) */
} mirs__fp_verdict;

/* ---------------------------------------------------------------- field */

/* base^e mod m (m < 2^32). */
uint32_t mirs__fp_pow_mod(uint32_t base, uint64_t e, uint32_t m);
/* Inverse of x mod prime m by Fermat; inv(0) = 0. */
uint32_t mirs__fp_inv_mod(uint32_t x, uint32_t m);
/* Key of trial t under seed (see the header comment). */
uint64_t mirs__fp_trial_key(uint64_t seed, int trial);
/* Value of element `element` of the input whose name hashes to sub
 * (mirs__hash_str(0, name)) under trial key key. */
mirs__fp_pair mirs__fp_input_value(uint64_t key, uint64_t sub, uint64_t element);
/* The rank of x in the keyed order that models max under trial key key:
 * the first two words of the Philox block at counter (b << 32 | a) of
 * subsequence MIRS__FP_PRF_DOMAIN | MIRS_OP_MAX, as w1 << 32 | w0. */
uint64_t mirs__fp_max_rank(uint64_t key, mirs__fp_pair x);
/* The keyed PRF of unary op (SQRT, SILU, GELU, RELU) on x under key. */
mirs__fp_pair mirs__fp_prf(uint64_t key, mirs_op op, mirs__fp_pair x);

/* ---------------------------------------------------------------- bound */

/* Saturating a + b for degrees: a degree past 2^64 - 1 stays 2^64 - 1,
 * which no number of trials bounds (so a verdict that needs it refuses). */
static inline uint64_t mirs__fp_degree_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
/* Saturating a * b for degrees (see mirs__fp_degree_add). */
static inline uint64_t mirs__fp_degree_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}
/* log2 of (D/Q)^trials (with D < 1 taken as 1); 0.0 when D >= Q (no bound). */
double mirs__fp_bound_log2(uint64_t degree, int trials);
/* Smallest k >= 1 with (D/Q)^k <= 2^log2_target, or -1 when none up to
 * MIRS__FP_MAX_TRIALS exists. */
int mirs__fp_trials_for(uint64_t degree, double log2_target);
/* Static degree of g's outputs, max over outputs of max(degree, inner), without
 * computing values; MIRS_UNSUPPORTED when g has an exp of an exp. */
mirs_status mirs__fp_graph_degree(const mirs_graph *g, uint64_t *degree);
/* Which of g's tensors may hold causal_mask's -inf as the fingerprints
 * see it (masked[t] for t < g->nt); an op they refuse passes it on. */
mirs_status mirs__fp_graph_masked(const mirs_graph *g, bool *masked);
/* Fingerprint program and candidate from scratch with the fewest trials
 * that hold the false-accept bound of their degrees to the option
 * verify_log2_bound, and compare their outputs: *trials and *v get the
 * trials used and the verdict.  MIRS_UNSUPPORTED (message set) when no
 * number of trials reaches the bound (the degree is too high). */
mirs_status mirs__verify_fingerprints(mirs_context *ctx, const mirs_graph *program,
                                      const mirs_graph *candidate, int *trials,
                                      mirs__fp_verdict *v);
/* The same on backend (NULL: the CPU); *digest (when not NULL) gets the
 * candidate's output digest (mirs__fp_output_digest). */
mirs_status mirs__verify_fingerprints_on(mirs_context *ctx, const mirs__fp_backend *backend,
                                         const mirs_graph *program, const mirs_graph *candidate,
                                         int *trials, mirs__fp_verdict *v, uint64_t *digest);

/* ---------------------------------------------------------------- store */

/* A store for `trials` trials under seed on backend (NULL: the CPU one). */
mirs_status mirs__fp_store_new(mirs_context *ctx, const mirs__fp_backend *backend, int trials,
                               uint64_t seed, mirs__fp_store **out);
/* Free s and everything it holds (NULL is a no-op). */
void mirs__fp_store_free(mirs__fp_store *s);
/* Keep only tensors [0, nt) (pop); no-op when nt >= s->nt. */
void mirs__fp_truncate(mirs__fp_store *s, int32_t nt);
/* Fingerprint kernel op `op` of g, whose outputs must be the next tensors
 * after the store's prefix (graph inputs in between are generated); the
 * incremental step of the search.  MIRS_UNSUPPORTED for exp of an
 * exp-dependent value, MIRS_LIMIT past eval_max_elements elements per trial,
 * MIRS_INVALID_ARG when the op is not next.  On failure s is unchanged. */
mirs_status mirs__fp_push_op(mirs__fp_store *s, const mirs_graph *g, int32_t op);
/* Like mirs__fp_push_op, but trial 0 only: the op's outputs are then
 * *partial* until mirs__fp_push_rest computes the other trials (or a
 * truncation drops them).  A search screens a candidate with
 * mirs__fp_trial0_equal before paying for every trial.  Digests and full
 * comparisons of a partial tensor fail with MIRS_INTERNAL. */
mirs_status mirs__fp_push_op_first(mirs__fp_store *s, const mirs_graph *g, int32_t op);
/* Like mirs__fp_push_op_first for custom op `op`, but only grid block
 * (0,0,0) runs: each output holds that block's tile (the corner, its
 * omap offsets all 0) and nothing else is defined.  Screens with
 * mirs__fp_trial0_corner_equal; the op must be truncated afterwards
 * (mirs__fp_push_rest refuses it). */
mirs_status mirs__fp_push_op_corner(mirs__fp_store *s, const mirs_graph *g, int32_t op);
/* Whether tensor ta of ga in a and tb of gb in b have equal shapes and
 * equal trial-0 fingerprints on the corner [0, tile->d[i]) of every dim
 * (tile: the block tensor the block stores; its rank is theirs). */
mirs_status mirs__fp_trial0_corner_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                         mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                         const mirs__shape *tile, bool *equal);
/* Compute the remaining trials of the partial op `op` (its outputs are
 * the store's last tensors).  On failure the op is dropped. */
mirs_status mirs__fp_push_rest(mirs__fp_store *s, const mirs_graph *g, int32_t op);
/* Whether tensor ta of ga in a and tb of gb in b have equal shapes and
 * equal trial-0 fingerprints (either may be partial): a necessary
 * condition of mirs__fp_tensor_equal. */
mirs_status mirs__fp_trial0_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                  mirs__fp_store *b, const mirs_graph *gb, int32_t tb,
                                  bool *equal);
/* Extend the store from its (valid) prefix to all of g's tensors. */
mirs_status mirs__fp_extend(mirs__fp_store *s, const mirs_graph *g);
/* Fingerprint the whole graph from scratch (truncate to 0, then extend). */
mirs_status mirs__fp_compute_graph(mirs__fp_store *s, const mirs_graph *g);
/* Copy count values of tensor t in trial `trial` from element first. */
mirs_status mirs__fp_read(const mirs__fp_store *s, int32_t t, int trial, int64_t first,
                          int64_t count, mirs__fp_pair *out);
/* 64-bit digest of tensor t over all trials (cached):
 *   x = sum over trials j, elements e of mirs__hash_mix(j * numel + e, a_{j,e}) mod 2^64,
 *   digest = mirs__hash_mix(mirs__hash_mix(numel, trials), x).
 * Only p-parts enter, so fingerprint-equal tensors (mirs__fp_tensor_equal)
 * always have equal digests; the sum is order-free (a GPU reduction). */
mirs_status mirs__fp_digest(mirs__fp_store *s, int32_t t, uint64_t *out);
/* Whether tensor ta of ga in a and tb of gb in b have equal shapes and
 * fingerprints in every trial (p-parts; q-parts too unless either is
 * exp-dependent).  The stores must share trials and seed. */
mirs_status mirs__fp_tensor_equal(mirs__fp_store *a, const mirs_graph *ga, int32_t ta,
                                  mirs__fp_store *b, const mirs_graph *gb, int32_t tb, bool *equal);
/* One digest of g's outputs in s: mirs__hash_mix over the outputs in
 * order of each output's digest (what `mirsearch verify` prints, so CPU
 * and GPU runs can be compared). */
mirs_status mirs__fp_output_digest(mirs__fp_store *s, const mirs_graph *g, uint64_t *out);
/* Compare cand's outputs with ref's by name: every reference output must be
 * an output of cand with the same name, the same shape and equal
 * fingerprints (extra candidate outputs are ignored).  Both stores must
 * hold all tensors of their graphs.  Fills v (degree and bound included). */
mirs_status mirs__fp_compare_outputs(mirs__fp_store *ref, const mirs_graph *rg,
                                     mirs__fp_store *cand, const mirs_graph *cg,
                                     mirs__fp_verdict *v);

#endif
