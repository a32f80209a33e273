/* SPDX-License-Identifier: MIT */
/* src/gpu/gpufp_abi.h - the narrow C ABI between libmirsearch and the GPU
 * fingerprint module libmirsearch-gpufp.so (src/gpu/gpufp.cu).
 *
 * Why a separate module: the library links no CUDA library
 * (docs/ARCHITECTURE.md, "Layers"); the module, built by nvcc with the CUDA
 * runtime linked statically, is dlopen'ed only when a GPU backend is
 * asked for (--verify=gpu or auto).  Its one exported symbol,
 * mirs_gpufp_abi_get, returns this table; the library refuses a table
 * whose version differs from MIRS_GPUFP_ABI_VERSION or whose size is
 * smaller than its own.
 *
 * The contract: plain C types only (no CUDA type crosses), every entry
 * returns a MIRS_GPUFP_* code, and every CUDA status is checked inside
 * the module and turned into one of those codes with a message
 * (last_error) that names the failing call and the CUDA error; the
 * library converts the code into a mirs_status once (src/gpu/gpufp.c).
 * A device handle owns one stream: work is queued asynchronously and
 * only read, digest, compare and sync wait, so several handles (several
 * fingerprint stores: the program and the candidates being verified)
 * have their work in flight at once.
 *
 * Values are pairs (a mod P, b mod Q) laid out as mirs__fp_pair; the
 * module computes exactly what src/verify/fingerprint.c specifies, with
 * the same keyed randomness (inputs and PRFs are cuRAND Philox4x32-10
 * outputs: curand_init(K_t, sub, 4 * block) then curand4), so results are
 * bit-identical to the CPU backend's.  The same source compiles as host
 * C++ (MIRS_GPUFP_HOST: memory is host memory, a launch is a loop) so the
 * tests check that equality without a GPU. */
#ifndef MIRS_GPU_GPUFP_ABI_H
#define MIRS_GPU_GPUFP_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the structs or entry points below. */
#define MIRS_GPUFP_ABI_VERSION 5
#define MIRS_GPUFP_DIMS 6
/* The symbol the library looks up in the module. */
#define MIRS_GPUFP_ABI_SYMBOL "mirs_gpufp_abi_get"

/* Return codes of every entry. */
enum {
  MIRS_GPUFP_OK = 0,
  MIRS_GPUFP_NO_DEVICE = 1, /* no driver, no device, driver too old */
  MIRS_GPUFP_CUDA = 2,      /* any other CUDA error */
  MIRS_GPUFP_NOMEM = 3,     /* device (or host) memory exhausted */
  MIRS_GPUFP_INVALID = 4,   /* a malformed request (a library bug) */
  MIRS_GPUFP_UNSUPPORTED = 5 /* a value with no fingerprint (finite - causal_mask's -inf) */
};

/* Buffers of a handle: the arena holds kernel tensors (all trials), the
 * tile scratch the block tiles of the custom kernel being computed. */
enum { MIRS_GPUFP_ARENA = 0, MIRS_GPUFP_TILE = 1 };

/* Compute kinds (mirs_gpufp_op.kind). */
enum {
  MIRS_GPUFP_K_UNARY = 0, /* op: EXP, SQUARE or a PRF (op = prf's mirs_op) */
  MIRS_GPUFP_K_BINARY,    /* op: ADD, SUB, MUL, DIV (size-1 broadcasting) */
  MIRS_GPUFP_K_MATMUL,    /* last two dims, batch dims broadcast */
  MIRS_GPUFP_K_SUM,       /* over dim; add: into out; mean: times inv(the dim's size) */
  MIRS_GPUFP_K_SUMSQ,     /* row sums of x^2 over the last dim, added into out */
  MIRS_GPUFP_K_RMSNORM,   /* (x - mu) * inv(sqrt_prf(sum((x - mu)^2) * inv(count) + eps))
                           * over the last dim; mu the row mean when centre, else 0 */
  MIRS_GPUFP_K_ACCUM,     /* out += x elementwise */
  MIRS_GPUFP_K_FINISH,    /* out = sqrt_prf(out * inv(count) + eps) (an ACCUM_RMS after the loop) */
  MIRS_GPUFP_K_ELEM,      /* ecode: a MIRS__FP_E_* op of fingerprint.h with ca/cb, en, ktweak */
  MIRS_GPUFP_K_TRANSPOSE, /* the last two dims of in[0] swapped */
  MIRS_GPUFP_K_MAX,       /* keyed max over dim (rank PRF of max_op); add: merged into out */
  MIRS_GPUFP_K_ONLINE,    /* an ACCUM_ONLINE step: in[0] y, in[1] the shift m (broadcast to
                           * y), out the accumulator followed by its running max */
  MIRS_GPUFP_K_MASK,      /* causal_mask of in[0] in the frame mask_* */
  MIRS_GPUFP_K_GATHER,    /* out element e = in[0] at gbase + sum over out's dims d of
                           * (e's coordinate d) * gst[d]: reshape, permute, slice */
  MIRS_GPUFP_K_MIN        /* keyed min over dim: K_MAX's order reversed (fp_min); add:
                           * merged into out (ACCUM_MIN's running min) */
};

/* Elementwise op codes (mirs_gpufp_op.op for UNARY/BINARY other than PRFs). */
enum {
  MIRS_GPUFP_EXP = -1,
  MIRS_GPUFP_SQUARE = -2,
  MIRS_GPUFP_ADD = -3,
  MIRS_GPUFP_SUB = -4,
  MIRS_GPUFP_MUL = -5,
  MIRS_GPUFP_DIV = -6
};

typedef struct mirs_gpufp_pair {
  uint32_t a, b;
} mirs_gpufp_pair;

typedef struct mirs_gpufp_shape {
  int64_t ndim;
  int64_t d[MIRS_GPUFP_DIMS];
} mirs_gpufp_shape;

/* One operand over `batches` consecutive batches: batch i's values start
 * at pair off + i * stride of buffer `space`. */
typedef struct mirs_gpufp_operand {
  int64_t space;
  uint64_t off;
  uint64_t stride;
  mirs_gpufp_shape shape;
} mirs_gpufp_operand;

/* One compute step over batches (trials, or trials x grid blocks). */
typedef struct mirs_gpufp_op {
  int64_t kind;      /* MIRS_GPUFP_K_* */
  int64_t op;        /* MIRS_GPUFP_* code, or a PRF's mirs_op value (>= 0) */
  int64_t dim;       /* SUM: the reduced dim */
  int64_t add;       /* SUM: accumulate into out instead of overwriting */
  int64_t in_exp;    /* RMSNORM, FINISH: the argument is exp-dependent (q-parts 0) */
  int64_t out_exp;   /* zero the result's q-parts */
  uint64_t count;    /* FINISH: elements summed per row over the loop */
  int64_t sqrt_op;   /* mirs_op value of SQRT: the PRF of RMSNORM and FINISH */
  int64_t batches;   /* batches in this step */
  int64_t per_trial; /* batches per trial: batch i is trial trial0 + i / per_trial */
  int64_t trial0;
  uint64_t seed; /* the store's seed (trial keys K_t derive from it) */
  int64_t nin;
  mirs_gpufp_operand in[2];
  mirs_gpufp_operand out;
  int64_t ecode;    /* ELEM: the MIRS__FP_E_* code (1 neg, 2 x+c, 3 x*c, 4 c-x, 5 c/x, 6 x^n, 7 PRF,
                     * 8 even PRF) */
  uint32_t ca, cb;  /* ELEM: the constant's pair */
  uint64_t en;      /* ELEM: the exponent of x^n */
  uint64_t ktweak;  /* ELEM PRF: XORed into the trial key (op: the PRF's mirs_op) */
  int64_t max_op;   /* mirs_op value of MAX: the rank PRF of MAX, MIN and ONLINE */
  int64_t masked;   /* an operand may hold the sentinel -inf (both parts all ones):
                     * ADD/SUB absorb it, out_exp keeps its q-part */
  int64_t mean;     /* SUM: times the field inverse of the reduced dim's size */
  int64_t centre;   /* RMSNORM: subtract the row mean (layer_norm) */
  mirs_gpufp_pair eps; /* RMSNORM, FINISH: added to the mean of squares */
  /* MASK: the global row and column of the tile's element (0, 0) in
   * block 0 of the grid, the row and column counts m and n (kept iff
   * column <= row + n - m), and per grid dim the row and column shift
   * of one block; batch i runs linear block bfirst + i % per_trial over
   * grid_end (x fastest). */
  int64_t mask_org[4];
  int64_t mask_step[3][2];
  int64_t bfirst;
  int64_t grid_end[3];
  int64_t gbase;                 /* GATHER: in[0]'s offset of out element 0 */
  int64_t gst[MIRS_GPUFP_DIMS];  /* GATHER: in[0]'s stride per out dim */
} mirs_gpufp_op;

/* Tile movement kinds (mirs_gpufp_tile.kind). */
enum { MIRS_GPUFP_T_LOAD = 0, MIRS_GPUFP_T_STORE = 1, MIRS_GPUFP_T_ZERO = 2 };

/* A tile step of a custom kernel over trials [trial0, trial0 + trials)
 * and the linear grid blocks [bfirst, bfirst + nblocks) (x fastest over
 * grid_end): batch (j, b) is tile scratch at tile_off + (j * nblocks + b)
 * * tile_stride.  LOAD/STORE move a tile of shape `tile` at element
 * offsets (per dim d) block[grid_of_dim[d]] * grid_unit[d] (when >= 0)
 * plus f * tile[d] (when forloop_dim == d; grid_unit[d] is tile[d], or
 * tile[d] * F when the grid and the forloop both place dim d) from/to the kernel tensor of
 * shape `tensor` whose trial j starts at arena tensor_off + j *
 * tensor_stride.  A STORE is done only by blocks whose coordinate along
 * every grid dim g with need[g] >= 0 equals need[g]: the last block in
 * the schedule's order among those writing one place, whose value the
 * sequential schedule leaves there.  ZERO sets zero_numel pairs (the
 * accumulator's state), those from none_from on to the keyed max's start
 * (both parts all ones: ACCUM_MAX, ACCUM_MIN, ACCUM_ONLINE's running max), the
 * others to zero. */
typedef struct mirs_gpufp_tile {
  int64_t kind;
  int64_t trial0, trials;
  int64_t bfirst, nblocks;
  int64_t grid_end[3];
  int64_t need[3];
  mirs_gpufp_shape tile;
  mirs_gpufp_shape tensor;
  int64_t grid_of_dim[MIRS_GPUFP_DIMS];
  int64_t grid_unit[MIRS_GPUFP_DIMS];
  int64_t forloop_dim;
  int64_t f;
  uint64_t tile_off, tile_stride;
  uint64_t tensor_off, tensor_stride;
  int64_t zero_numel, none_from;
} mirs_gpufp_tile;

typedef struct mirs_gpufp_dev mirs_gpufp_dev;

typedef struct mirs_gpufp_abi {
  uint32_t version;  /* MIRS_GPUFP_ABI_VERSION */
  uint32_t size;     /* sizeof (mirs_gpufp_abi) of the module */
  const char *build; /* what the module was built as ("cuda ...", "host emulation") */
  /* Open device `device` with a stream of its own; on failure *out is
   * NULL and msg (msgsize bytes) says why. */
  int (*open)(int device, mirs_gpufp_dev **out, char *msg, size_t msgsize);
  /* Wait for the handle's work and free everything it holds. */
  void (*close)(mirs_gpufp_dev *d);
  /* The message of the handle's last failure. */
  const char *(*last_error)(const mirs_gpufp_dev *d);
  /* The device's name and capability, e.g. "NVIDIA H100 (sm_90)". */
  int (*describe)(mirs_gpufp_dev *d, char *buf, size_t size);
  /* Make buffer `space` hold at least `pairs` pairs: the arena keeps its
   * contents, the tile scratch need not. */
  int (*reserve)(mirs_gpufp_dev *d, int64_t space, uint64_t pairs);
  /* Generate a graph input: trial j (j in [trial0, trial0 + trials)) at
   * arena off + (j - trial0) * numel, element e from Philox subsequence
   * sub under K_j (fingerprint.h, "randomness"). */
  int (*input)(mirs_gpufp_dev *d, uint64_t off, int64_t numel, int64_t trial0, int64_t trials,
               uint64_t seed, uint64_t sub);
  int (*compute)(mirs_gpufp_dev *d, const mirs_gpufp_op *op);
  int (*tile)(mirs_gpufp_dev *d, const mirs_gpufp_tile *t);
  /* Copy count arena pairs from off to host memory (waits). */
  int (*read)(mirs_gpufp_dev *d, uint64_t off, uint64_t count, mirs_gpufp_pair *out);
  /* The digest of mirs__fp_digest over `trials` trials of numel pairs at
   * arena off (waits). */
  int (*digest)(mirs_gpufp_dev *d, uint64_t off, int64_t numel, int64_t trials, uint64_t *out);
  /* First index i < count where a's arena pair at offa + i differs from
   * b's at offb + i (p-parts; q-parts too when qparts), or -1 (waits for
   * both handles; they must be on one device). */
  int (*compare)(mirs_gpufp_dev *a, uint64_t offa, mirs_gpufp_dev *b, uint64_t offb, uint64_t count,
                 int64_t qparts, int64_t *first);
  /* Wait for the handle's queued work; MIRS_GPUFP_UNSUPPORTED (once) when
   * a SUB since the last sync met a finite value minus causal_mask's -inf
   * (+inf: no fingerprint; the caller syncs after an op that may). */
  int (*sync)(mirs_gpufp_dev *d);
} mirs_gpufp_abi;

typedef const mirs_gpufp_abi *(*mirs_gpufp_abi_get_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
