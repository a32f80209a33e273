/* SPDX-License-Identifier: MIT */
/* src/codegen/plan.h - the kernel plan of one custom kernel op: how the
 * generated CUDA stages, loads, multiplies and accumulates its tiles.
 *
 * One plan is computed per custom kernel (mirs__plan_build) and read by
 * both the CUDA generator (cuda.c, which emits exactly what the plan says)
 * and the cost model (cost.c, which prices exactly that), so the model
 * ranks the kernel that will run: the shared memory it requests, the
 * pipeline depth, which matmuls run on tensor cores, the global traffic.
 *
 * Invariants: a plan is a pure function of (graph, kernel op, smem limit,
 * mma option, the context's codegen_wgmma option); building one allocates
 * nothing for block graphs of up to MIRS__PLAN_LOCAL tensors and ops (the
 * search costs kernels in its inner loop); offsets are 16-byte aligned;
 * smem == the dynamic shared memory the generated kernel requests at
 * launch. */
#ifndef MIRS_CODEGEN_PLAN_H
#define MIRS_CODEGEN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

#define MIRS__PLAN_LOCAL 48         /* tensors/ops planned without allocating */
#define MIRS__PLAN_SMEM_MAX (227 * 1024) /* bytes per block the generator targets (H100/H200) */
#define MIRS__PLAN_MAX_STAGES 8
#define MIRS__PLAN_REASON_SIZE 200
/* 16x8 tiles of C fragments (4 registers each) a warp keeps live at once
 * in an MMA product that is not accumulated: the generator runs a longer
 * row of tiles in chunks of at most this many. */
#define MIRS__PLAN_MMA_CHUNK 8

/* Tensor-core variant of a block matmul (see mirs__plan_op.mma). */
typedef enum mirs__plan_mma {
  MIRS__MMA_NONE, /* scalar FMA loop */
  MIRS__MMA_16,   /* m16n8k16 f16/bf16 from 16-bit tiles through ldmatrix */
  MIRS__MMA_TF32, /* m16n8k8 tf32 (an operand computed in f32) */
  MIRS__MMA_WG    /* sm_90a wgmma m64nNk16 from core8 tiles (codegen_wgmma; hopper.c) */
} mirs__plan_mma;

/* Where a value of the register chain lives (plan decision 8, plan.c). */
typedef enum mirs__plan_frag {
  MIRS__FRAG_NONE, /* a tile in shared memory, or absorbed into a producer's chain */
  MIRS__FRAG_C,    /* C fragments of the warp's 16-row strip: float [tiles][4] per lane */
  MIRS__FRAG_ROW   /* one value per row of the strip: float [2] per lane (rows gq, gq + 8) */
} mirs__plan_frag;

/* Where one block tensor lives. */
typedef struct mirs__plan_tensor {
  int64_t off;         /* smem byte offset of the tile (stage 0), or -1 (no tile) */
  int64_t aoff;        /* smem byte offset of an accumulator's running sums, or -1 */
  int64_t stage_bytes; /* input tiles: bytes of one stage buffer */
  int32_t next;        /* the fused op that absorbs this value in registers, or -1 */
  int32_t uses;        /* operand uses by block ops */
  int32_t stride;      /* stored elements from one row (last dim) to the next */
  int32_t rows;        /* stored rows (numel / last dim; more for a padded MMA A operand) */
  int8_t elsize;       /* bytes per stored element (input tiles: the source dtype; else 4) */
  int8_t stages;       /* input tiles: stage buffers (1 when loop-invariant) */
  bool input;          /* an INPUT op's tile, staged at its stored dtype */
  bool invariant;      /* input tile loaded once before the forloop (no fmap, or F == 1) */
  bool vec;            /* loaded with 16-byte cp.async (alignment proven from the shapes) */
  bool acc_smem;       /* accumulator: running sums in smem (too many per thread) */
  bool acc_mma;        /* accumulator: MMA C fragments in registers across the forloop */
  bool tree;           /* accum_sum/accum_rms: reduced by thread groups and warp shuffles */
  bool zero;           /* input tile of a K-padded MMA: its stage buffers are zeroed once,
                        * before any load (the padding columns / rows stay 0) */
  int8_t group;        /* tree: threads (lanes) per accumulator element, a power of 2 <= 32 */
  bool core8;          /* wgmma operand: 8x8 core matrices, no swizzle (hopper.c), no padding */
  int8_t frag;         /* mirs__plan_frag: kept in the register chain's layout (accumulators:
                        * their running values; their final values still get a tile) */
} mirs__plan_tensor;

typedef struct mirs__plan_op {
  bool absorbed;  /* a fused op emitted inside its producer's register chain */
  int8_t mma;     /* mirs__plan_mma of a matmul */
  bool swap;      /* MMA_16 with the operands swapped (decision 2 of plan.c): C^T = B^T A^T,
                   * the B tile's N columns on the 16-row side, a skinny M on the 8 side */
  int32_t m_pad;  /* MMA: rows of the output computed (M rounded up to 16; 8 when swapped) */
  int32_t k_pad;  /* MMA: reduction length multiplied (K, or K rounded up to 16 with zeros) */
  int32_t acc;    /* MMA: accumulator whose C fragments it adds into, or -1 */
  int8_t group;   /* sum / rms_norm: lanes per reduced row (warp-shuffle tree), 1: one thread */
  bool chain;     /* emitted by the register chain (at the chain's first matmul) */
} mirs__plan_op;

/* Register-resident chain (decision 8 of plan.c): S = A·B on tensor cores,
 * elementwise ops and row reductions over S's rows, E·V on tensor cores
 * with E's C fragments reused as A fragments, and the accumulators they
 * feed, all in registers: E never goes through shared memory, row maxes,
 * mins and sums are quad shuffles.  Each 16-row strip belongs to ks warps
 * (warp w: strip w / ks, part w % ks), each with 1/ks of S's columns (E·V's
 * k range): a row max, min or sum over S is completed across them through a
 * small exchange in shared memory (the reduce tensor's tile: ks values per
 * row), the accumulators of E·V and of S's row sums are partial sums,
 * added across the ks warps once, after the loop, through `xoff`. */
typedef struct mirs__plan_chain {
  bool on;
  int32_t ks;       /* warps per 16-row strip (1: one warp owns whole rows) */
  int32_t nc;       /* key chunks: a warp runs its 1/ks of S's columns in nc
                     * chunks one after another, S through E·V for each (a
                     * linear chain only: plan.c key_chunks); 1 for none */
  bool chunkable;   /* linear, E·V straight into its accumulator: chunks allowed
                     * (plan.c chunk_by_regs takes them for a heavy whole strip) */
  int64_t xoff;     /* ks > 1: smem byte offset of the after-loop partial-sum exchange
                     * (in walked input tiles' stage buffers, dead after the loop,
                     * when they are large enough; else an area of its own) */
  int64_t xbytes;   /* its bytes */
  int32_t mm1, mm2; /* the block matmuls S = A·B and E·V */
  int8_t mma2;      /* E·V: MIRS__MMA_16 (E in [0, 1], or a bf16 V: A fragments packed
                     * from two C fragments) or MIRS__MMA_TF32 (A = {d0, d2, d1, d3}) */
} mirs__plan_chain;

/* Tile skipping (decision 7 of plan.c): a forloop that walks the columns
 * of a causal mask stops, in each block, after the last iteration whose
 * tile the mask leaves a kept element: fend = min(F, max(1, floor((row0 +
 * rows - 1 + diag) / cols) + 1)), row0 = blockIdx[row_grid] * rows (0
 * when row_grid < 0).  Sound because every accumulator adds 0 for an
 * entirely masked tile (the zero analysis of plan_skip). */
typedef struct mirs__plan_skip {
  bool on;
  int32_t mask;     /* the causal_mask block op whose frame decides */
  int32_t row_grid; /* grid dim placing the mask's rows, or -1 */
  int64_t rows;     /* mask tile rows (a block's query rows) */
  int64_t cols;     /* mask tile columns (keys per iteration) */
  int64_t diag;     /* n - m of the masked tensor */
} mirs__plan_skip;

typedef struct mirs__plan {
  int32_t nthreads, nwarps;
  int32_t nt, nops;
  int32_t stages;       /* pipeline depth over forloop iterations (walked tiles) */
  int64_t smem;         /* bytes of dynamic shared memory per block */
  int32_t regs;         /* registers per thread, estimated */
  int64_t blocks;       /* grid size */
  double bytes;         /* global traffic of the whole grid */
  double stage_bytes;   /* bytes one forloop iteration loads (walked tiles) */
  double inflight;      /* bytes a block keeps in flight while it computes */
  bool pipelined;       /* loads of later iterations overlap compute (stages >= 2, cp.async) */
  bool wgmma;           /* some matmul is MIRS__MMA_WG: the kernel needs sm_90a */
  mirs__plan_skip skip; /* tile skipping under a causal mask */
  mirs__plan_chain chain; /* the register-resident matmul chain, if any */
  double live;          /* iterations run / (blocks * F): 1 without skipping */
  /* Shared-memory traffic of one block (smem.c, mirs__plan_smem_traffic):
   * bank slots in bytes (4 per scalar element access, the bytes moved for
   * cp.async fills and ldmatrix), each access times its bank-conflict
   * factor (wavefronts / ideal wavefronts). */
  double smem_loop;     /* per forloop iteration run */
  double smem_once;     /* outside the forloop (loop-invariant fills, write-backs, post ops) */
  double smem_conflict; /* largest bank-conflict factor of any access (1: conflict-free) */
  bool pad;             /* staging pads strides against bank conflicts (codegen_smem_pad) */
  bool xwarp;           /* trees of few long rows over all warps (codegen_xwarp, mirs__plan_xwarp) */
  int64_t xred;         /* smem byte offset of the cross-warp reduction scratch (one float
                         * per warp: trees whose rows are fewer than the warps,
                         * mirs__plan_xwarp), or -1 */
  bool feasible;
  char reason[MIRS__PLAN_REASON_SIZE];
  mirs__plan_tensor *t; /* [nt] */
  mirs__plan_op *op;    /* [nops] */
  mirs_context *ctx;    /* set when t/op were allocated */
  mirs__plan_tensor local_t[MIRS__PLAN_LOCAL];
  mirs__plan_op local_op[MIRS__PLAN_LOCAL];
} mirs__plan;

/* MMA output tiles of block matmul op i (a plan_op with mma set): 16x8
 * tiles of the M-padded output, or, swapped, 16-column tiles (16 of N by
 * the 8 padded rows), over all batches. */
int64_t mirs__plan_mma_tiles(const mirs__plan *pl, const mirs__bgraph *bg, int32_t i);

/* The last iteration + 1 that block (bx, by, bz) of a skipping plan runs
 * (F when pl does not skip). */
int64_t mirs__plan_fend(const mirs__plan *pl, const mirs__bgraph *bg, const int64_t b[MIRS__GRID]);

/* Warps per row of a shuffle tree over rows rows of len elements, grp
 * lanes a row: when a tree has full warps (grp 32), at most half of the
 * block's warps would have a row, and a lane of one warp would walk at
 * least MIRS__XWARP_MIN_STEPS of a row's elements, every row takes
 * nwarps / rows warps (each its share of the row, the warps' totals
 * added through pl->xred in a fixed order, two barriers); else 1.  The
 * generator (cuda.c) and place() ask this. */
#define MIRS__XWARP_MIN_STEPS 32
int mirs__plan_xwarp(const mirs__plan *pl, int64_t rows, int64_t len, int grp);

/* Plan custom kernel op ki of g for smem_limit bytes of shared memory per
 * block (stages are chosen to fit; a kernel that cannot fit, or whose
 * tiles need 64-bit index math, gets feasible = false and a reason).  mma:
 * tensor cores allowed.  MIRS_NOMEM only for block graphs larger than
 * MIRS__PLAN_LOCAL.  Release with mirs__plan_free. */
/* The dtype block tensor t is stored at: an input tile's source dtype,
 * the same for the transpose of a loaded tile (a 16-bit copy, exact, that
 * a tensor-core matmul reads as it reads a loaded tile), else F32. */
mirs_dtype mirs__plan_tile_dtype(const mirs_graph *g, const mirs__bgraph *bg, int32_t t);
mirs_status mirs__plan_build(mirs_context *ctx, const mirs_graph *g, int32_t ki,
                             int64_t smem_limit, bool mma, mirs__plan *p);
/* Fill pl->smem_loop, smem_once and smem_conflict from a built plan of
 * block graph bg (smem.c; called by mirs__plan_build). */
void mirs__plan_smem_traffic(mirs__plan *pl, const mirs_graph *g, const mirs__bgraph *bg);
/* Bank-conflict factor of one warp-wide shared-memory access: lane l
 * (0..31, only lanes with addr[l] >= 0) touches `width` (1 to 16) bytes from byte
 * address addr[l]; the number of wavefronts it takes (32 banks of 4
 * bytes, distinct 4-byte words of one bank serialise, equal words are
 * broadcast) over the fewest any access of that many bytes takes. */
double mirs__plan_bank_factor(const int64_t addr[32], int width);
/* Whether no two byte ranges of pl's shared memory that are in use at the
 * same time overlap (plan.c): every tile, stage buffer, accumulator
 * area, the chain's row exchanges and after-loop exchange, each live
 * before, during and/or after the forloop.  Ranges that only share bytes
 * across phases (the after-loop exchange in dead stage buffers, the row
 * exchanges in tiles written after the loop) pass.  On an overlap,
 * false and a sentence in why. */
bool mirs__plan_check_smem(const mirs__plan *pl, const mirs__bgraph *bg, char *why, size_t n);
void mirs__plan_free(mirs__plan *p);

/* A split-K pair (src/search/splitk.c) that runs as one launch (cuda.c,
 * docs/CODEGEN.md "Split-K pairs"): kernel k1 stores f32 partials with
 * grid[gs] = s, kernel k2 = k1 + 1 runs on k1's grid with grid[gs] = 1
 * and forloop s and walks them.  The fused kernel runs k1's body; the
 * last of the s blocks of a group (the blocks that differ only in gs) to
 * arrive, counted by an atomic counter per group in the workspace, then
 * runs k2's body as k2's block (x, y, z with gs's component 0). */
typedef struct mirs__splitk_pair {
  int32_t k1, k2; /* the kernel ops (k2 == k1 + 1) */
  int32_t gs;     /* the grid dim of k1 that splits k2's loop */
  int32_t s;      /* k1's grid[gs] == k2's forloop */
  int64_t groups; /* k2's blocks: one 32-bit arrival counter each */
} mirs__splitk_pair;

/* Whether kernels k1 and k1 + 1 of g form a split-K pair that is safe to
 * run as one launch, checked from the µGraph's structure (not its names):
 * two custom kernels with equal thread blocks, k2's grid equal to k1's
 * but for one dim gs where k2 has 1 and k1 s >= 2 blocks, k2's forloop s;
 * k1's results read by k2 only (no other kernel, not graph outputs); and
 * each of k2's reads of a partial walks it, one tile per iteration, along
 * the tensor dim k1's gs places it on (one tile per block), every other
 * dim placed alike by both grids, and k1's blocks writing disjoint tiles,
 * so that k2's block (x, y, z) with gs's component 0 reads exactly what
 * k1's blocks (x, y, z) with any gs component wrote.  On true *info is
 * filled (when given); on false a sentence in why (when given). */
bool mirs__plan_splitk_pair(const mirs_graph *g, int32_t k1, mirs__splitk_pair *info, char *why,
                            size_t n);
/* What kernel op `op` of g is under ctx's option codegen_fuse_split_k
 * (0: none): the first (HEAD) or second (TAIL) kernel of a pair that runs
 * as one launch, pairs taken left to right, a kernel in one at most; the
 * pair in *info (when given).  The generator and the cost model both ask
 * this, so the model prices what is emitted. */
enum { MIRS__SPLITK_NONE, MIRS__SPLITK_HEAD, MIRS__SPLITK_TAIL };
int mirs__plan_splitk_role(const mirs_context *ctx, const mirs_graph *g, int32_t op,
                           mirs__splitk_pair *info);

#endif
