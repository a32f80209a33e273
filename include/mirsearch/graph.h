/* SPDX-License-Identifier: MIT */
/* mirsearch/graph.h - tensor programs and µGraphs: build, parse, print,
 * hash, evaluate.
 *
 * A mirs_graph is a kernel graph: input tensors, operators and outputs.
 * A *program* (the .graph format) has only predefined operators; a
 * *µGraph* may also hold custom kernels, each a block graph (grid, block,
 * forloop, tile inputs via imap/fmap, block ops, accumulators, outputs via
 * omap) whose elementwise ops may be fused into thread-level chains.
 * Tensors are identified by small integers (mirs_tensor) local to a graph.
 * Every graph belongs to the context it was created from. */
#ifndef MIRSEARCH_GRAPH_H
#define MIRSEARCH_GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "mirsearch/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MIRS_MAX_DIMS 6

typedef enum mirs_dtype { MIRS_F16 = 0, MIRS_BF16 = 1, MIRS_F32 = 2 } mirs_dtype;

/* Where an operator may appear (bitmask). */
#define MIRS_LEVEL_K 1 /* kernel graph */
#define MIRS_LEVEL_B 2 /* block graph */

/* Operators, from mirsearch/ops.def. */
typedef enum mirs_op {
#define MIRS_OPDEF(name, spelling, arity, levels, kind) MIRS_OP_##name,
#include "mirsearch/ops.def"
#undef MIRS_OPDEF
  MIRS_OP_COUNT
} mirs_op;

/* Operator spelling ("matmul"), or NULL when out of range. */
MIRS_API const char *mirs_op_name(mirs_op op);
/* Operator by spelling; MIRS_NOT_FOUND when there is none. */
MIRS_API mirs_status mirs_op_lookup(const char *name, mirs_op *out);
/* "f16", "bf16", "f32". */
MIRS_API const char *mirs_dtype_name(mirs_dtype t);

typedef struct mirs_graph mirs_graph;
typedef int32_t mirs_tensor;

/* ---------------------------------------------------------------- builder */

/* Create an empty program named name (NULL: "program"). */
MIRS_API mirs_status mirs_graph_create(mirs_context *ctx, const char *name, mirs_graph **out);
MIRS_API void mirs_graph_destroy(mirs_graph *g);
/* Add an input tensor.  name must be a new identifier; dims are ≥ 1. */
MIRS_API mirs_status mirs_graph_add_input(mirs_graph *g, const char *name, mirs_dtype dtype,
                                          int ndim, const int64_t *dims, mirs_tensor *out);
/* Add a predefined kernel operator on inputs (arity per ops.def) whose
 * result is named name (NULL: a fresh name).  Shapes are checked now;
 * MIRS_SHAPE with a message on mismatch.  For a reduction (MIRS_OP_SUM,
 * MIRS_OP_MAX, MIRS_OP_MIN) use mirs_graph_add_sum or mirs_graph_add_reduce. */
MIRS_API mirs_status mirs_graph_add_op(mirs_graph *g, const char *name, mirs_op op, int ninputs,
                                       const mirs_tensor *inputs, mirs_tensor *out);
/* Add sum(x, dim=dim); dim may be negative (counted from the end). */
MIRS_API mirs_status mirs_graph_add_sum(mirs_graph *g, const char *name, mirs_tensor x, int dim,
                                        mirs_tensor *out);
/* Add a reduction op(x, dim=dim) (MIRS_OP_SUM, MIRS_OP_MEAN, MIRS_OP_MAX,
 * MIRS_OP_MIN); dim may be negative.  MIRS_INVALID_ARG for an op that reduces no dim. */
MIRS_API mirs_status mirs_graph_add_reduce(mirs_graph *g, const char *name, mirs_op op,
                                           mirs_tensor x, int dim, mirs_tensor *out);
/* Add an operator with constants on x: MIRS_OP_POW (exponent),
 * MIRS_OP_CLAMP (lo, hi), and the number-operand forms of the .graph
 * language: MIRS_OP_ADD_SCALAR x + c, MIRS_OP_MUL_SCALAR x * c,
 * MIRS_OP_DIV_SCALAR x / c, MIRS_OP_RSUB_SCALAR c - x, MIRS_OP_RDIV_SCALAR
 * c / x.  constants[0..nconstants) are decimal text ("0.125", "1e-5"),
 * read exactly (docs/FORMATS.md "Constants"), not rounded doubles.
 * MIRS_INVALID_ARG for another op, a wrong count or a malformed number. */
MIRS_API mirs_status mirs_graph_add_const_op(mirs_graph *g, const char *name, mirs_op op,
                                             mirs_tensor x, int nconstants,
                                             const char *const *constants, mirs_tensor *out);
/* Add a layout operator on x: MIRS_OP_RESHAPE (dims: the result shape,
 * row-major order kept, equal element count, at most one -1 inferred),
 * MIRS_OP_PERMUTE (dims: a permutation of x's dims, result dim i is x's
 * dim dims[i]; negative entries count from the end) or MIRS_OP_SLICE
 * (ndims 3, dims {dim, start, len}: elements start..start+len-1 along
 * dim, a negative dim counted from the end).  MIRS_SHAPE with a message
 * when dims do not fit x; MIRS_INVALID_ARG for another op. */
MIRS_API mirs_status mirs_graph_add_layout(mirs_graph *g, const char *name, mirs_op op,
                                           mirs_tensor x, int ndims, const int64_t *dims,
                                           mirs_tensor *out);
/* Mark t as the next output. */
MIRS_API mirs_status mirs_graph_mark_output(mirs_graph *g, mirs_tensor t);

/* ---------------------------------------------------------------- queries */

MIRS_API const char *mirs_graph_name(const mirs_graph *g);
MIRS_API int mirs_graph_num_tensors(const mirs_graph *g);
MIRS_API int mirs_graph_num_outputs(const mirs_graph *g);
MIRS_API mirs_tensor mirs_graph_output(const mirs_graph *g, int index);
/* Number of kernel operators, and how many of them are custom kernels. */
MIRS_API int mirs_graph_num_ops(const mirs_graph *g);
MIRS_API int mirs_graph_num_custom(const mirs_graph *g);
/* Tensor by name, or -1. */
MIRS_API mirs_tensor mirs_graph_find(const mirs_graph *g, const char *name);
MIRS_API const char *mirs_tensor_name(const mirs_graph *g, mirs_tensor t);
MIRS_API mirs_dtype mirs_tensor_dtype(const mirs_graph *g, mirs_tensor t);
/* Rank of t (0 on a bad id) and its dims copied to dims[0..rank). */
MIRS_API int mirs_tensor_shape(const mirs_graph *g, mirs_tensor t, int64_t dims[MIRS_MAX_DIMS]);
/* Kernel op that produces t (index in [0, mirs_graph_num_ops)), or -1 for a
 * graph input or a bad id. */
MIRS_API int mirs_tensor_producer(const mirs_graph *g, mirs_tensor t);
/* The context g was created from. */
MIRS_API mirs_context *mirs_graph_context(const mirs_graph *g);

/* ---------------------------------------------------------------- walking a graph
 *
 * Read-only views of a graph's kernel ops and of a custom kernel's block
 * graph.  Pointers in a view (inputs, outputs, block) point into g: they
 * stay valid, unchanged, until g is modified (mirs_graph_add_*) or
 * destroyed; a result of a search lives as long as its search object.
 * Views are caller-allocated: set struct_size = sizeof the struct (the
 * MIRS_VIEW_INIT macros do), and the library fills at most that many bytes,
 * so a program built against an older, smaller struct keeps working.
 *
 *   for (int k = 0; k < mirs_graph_num_ops(g); k++) {
 *     mirs_kernel_view kv = MIRS_KERNEL_VIEW_INIT;
 *     mirs_graph_kernel(g, k, &kv);
 *     if (kv.block)
 *       for (int b = 0; b < kv.num_block_ops; b++) {
 *         mirs_block_op_view bv = MIRS_BLOCK_OP_VIEW_INIT;
 *         mirs_block_graph_op(kv.block, b, &bv);
 *       }
 *   } */

/* A custom kernel's block graph (owned by its graph). */
typedef struct mirs_block_graph mirs_block_graph;

typedef struct mirs_kernel_view {
  size_t struct_size;          /* set by the caller: sizeof(mirs_kernel_view) */
  mirs_op op;                  /* MIRS_OP_CUSTOM for a custom kernel */
  int num_inputs, num_outputs;
  const mirs_tensor *inputs;   /* kernel tensors read */
  const mirs_tensor *outputs;  /* kernel tensors written */
  int dim;                     /* sum: the reduced dim; else -1 */
  /* Custom kernels only (else NULL and zeros): */
  const mirs_block_graph *block;
  int grid[3];                 /* grid.x, grid.y, grid.z */
  int block_dims[3];           /* threads per block, x, y, z */
  int forloop;                 /* forloop range F */
  int num_block_ops, num_block_tensors;
  /* Constants: pow's exponent, clamp's bounds, the number operand of
   * add/mul/div/sub (op is then MIRS_OP_ADD_SCALAR etc.), as doubles. */
  int num_constants;
  double constants[2];
  /* Appended: layer_norm's and rms_norm's eps (else 0), and the layout
   * ops' attribute: a reshape's result shape, a permute's dims (result
   * dim i is input dim layout_dims[i]), a slice's {dim, start, len};
   * num_layout_dims 0 for other ops. */
  double eps;
  int num_layout_dims;
  int64_t layout_dims[MIRS_MAX_DIMS];
} mirs_kernel_view;
#define MIRS_KERNEL_VIEW_INIT {sizeof(mirs_kernel_view), MIRS_OP_COUNT, 0, 0, NULL, NULL, -1, NULL, {0, 0, 0}, {0, 0, 0}, 0, 0, 0, 0, {0, 0}, 0, 0, {0, 0, 0, 0, 0, 0}}

typedef struct mirs_block_op_view {
  size_t struct_size;   /* set by the caller: sizeof(mirs_block_op_view) */
  mirs_op op;           /* MIRS_OP_INPUT, MIRS_OP_OUTPUT, an accumulator or a compute op */
  int num_inputs;
  int inputs[2];        /* block tensors read */
  int output;           /* block tensor written; -1 for an output op */
  int dim;              /* sum, accum_sum: the reduced dim; else -1 */
  int fused;            /* 1: fused into its first argument's producer (thread level) */
  mirs_tensor src;      /* input op: the kernel tensor loaded; else -1 */
  int imap[3];          /* input op: tensor dim each grid dim partitions (-1 replicate) */
  int fmap;             /* input op: tensor dim the forloop walks (-1 none) */
  int omap[3];          /* output op: output dim each grid dim places the tile at (-1) */
  mirs_tensor dst;      /* output op: the kernel tensor written; else -1 */
  int num_constants;    /* as in mirs_kernel_view */
  double constants[2];
} mirs_block_op_view;
#define MIRS_BLOCK_OP_VIEW_INIT {sizeof(mirs_block_op_view), MIRS_OP_COUNT, 0, {-1, -1}, -1, -1, 0, -1, {-1, -1, -1}, -1, {-1, -1, -1}, -1, 0, {0, 0}}

/* Kernel op `index` (in the order ops were added, a topological order).
 * MIRS_INVALID_ARG on a bad index or a struct_size of 0. */
MIRS_API mirs_status mirs_graph_kernel(const mirs_graph *g, int index, mirs_kernel_view *out);
/* Block op `index` of a custom kernel. */
MIRS_API mirs_status mirs_block_graph_op(const mirs_block_graph *bg, int index,
                                         mirs_block_op_view *out);
/* Name of block tensor t (NULL on a bad id); its tile shape (rank returned). */
MIRS_API const char *mirs_block_tensor_name(const mirs_block_graph *bg, int t);
MIRS_API int mirs_block_tensor_shape(const mirs_block_graph *bg, int t,
                                     int64_t dims[MIRS_MAX_DIMS]);

/* ---------------------------------------------------------------- text */

/* Parse a .graph program or a µGraph file.  Every error in the file is
 * reported (mirs_diag_count / the log callback) as FILE:LINE:COL: error:
 * and the result is MIRS_PARSE (or MIRS_SHAPE, MIRS_IO) with *out = NULL. */
MIRS_API mirs_status mirs_graph_parse_file(mirs_context *ctx, const char *path, mirs_graph **out);
/* Same for text in memory; filename is used in diagnostics. */
MIRS_API mirs_status mirs_graph_parse_string(mirs_context *ctx, const char *text, size_t len,
                                             const char *filename, mirs_graph **out);
/* Canonical text: parsed again it prints identically. */
MIRS_API mirs_status mirs_graph_print(const mirs_graph *g, FILE *f);
/* Canonical text, NUL-terminated, allocated through g's context allocator;
 * release it with mirs_free(mirs_graph_context(g), text). */
MIRS_API mirs_status mirs_graph_to_string(const mirs_graph *g, char **out);
/* Write the canonical text to path atomically (temp file, fsync, rename). */
MIRS_API mirs_status mirs_graph_write_file(const mirs_graph *g, const char *path);

/* ---------------------------------------------------------------- identity */

/* Canonical 64-bit hash: equal for graphs that differ only in the order
 * operators were added and in intermediate tensor names. */
MIRS_API uint64_t mirs_graph_hash(const mirs_graph *g);
/* Check the whole graph (shapes, block-graph validity); MIRS_OK or an error. */
MIRS_API mirs_status mirs_graph_validate(const mirs_graph *g);

/* ---------------------------------------------------------------- cost model */

/* Predicted time of a graph, or of one of its kernel ops, under the
 * analytic cost model (launch latency + max(bytes / bandwidth, flops /
 * peak) per kernel) for a device profile (docs/SEARCH.md, "Cost model").
 * Caller-allocated; set struct_size (MIRS_COST_INIT). */
typedef struct mirs_cost {
  size_t struct_size;  /* set by the caller: sizeof(mirs_cost) */
  double seconds;      /* predicted; +inf when infeasible */
  double bytes;        /* device-memory bytes moved */
  double flops;
  int kernels;         /* kernel launches (1 for one kernel op, 0 for a reshape or permute view) */
  int64_t smem_bytes;  /* shared memory per block (largest kernel's for a graph) */
  int64_t blocks;      /* thread blocks of a custom kernel (0 for predefined ops and graphs) */
  int feasible;        /* 0: e.g. shared memory over the device's limit (see reason) */
  char reason[256];
  double live;         /* custom kernel: share of its forloop tiles run (below 1 when
                        * causal tile skipping leaves out masked key tiles); else 1 */
  int split_k_pair;    /* kernel op of a split-K pair run as one launch (option
                        * codegen_fuse_split_k, docs/CODEGEN.md): 1 the first kernel (its
                        * launch runs the second too; seconds include the counters' memset),
                        * 2 the second (no launch of its own: kernels 0, seconds its tail,
                        * one block's combine); 0 otherwise and for graphs */
  /* The terms of `seconds` (docs/SEARCH.md, "Cost model"; a graph: the
   * sums over its kernels).  A kernel's seconds is fixed_seconds plus
   * max(memory, compute) plus the shorter of the two over the forloop's
   * iterations where a cp.async pipeline overlaps them, else plus both. */
  double fixed_seconds;   /* the launch and a kernel's fixed cost (a fused split-K pair's first
                           * kernel: and its counters' memset; its second kernel: 0) */
  double memory_seconds;  /* device-memory bytes over the bandwidth the kernel reaches (its
                           * blocks' share of the device, the bytes they keep in flight) */
  double compute_seconds; /* custom kernel: the on-chip time of its busiest SM (tensor cores,
                           * shared memory, CUDA cores, at the share of the peak its resident
                           * warps reach); predefined op: its flops at the peak rates */
  int registers;          /* custom kernel: registers per thread, the plan's estimate; else 0 */
  int stages;             /* custom kernel: cp.async pipeline stages (1: none); else 0 */
  int blocks_per_sm;      /* custom kernel: blocks resident per SM (shared memory, threads,
                           * registers); else 0 */
  double bank_conflicts;  /* custom kernel: the worst shared-memory bank-conflict factor of its
                           * plan (1: none); else 0 */
} mirs_cost;
#define MIRS_COST_INIT {sizeof(mirs_cost), 0, 0, 0, 0, 0, 0, 0, "", 0, 0, 0, 0, 0, 0, 0, 0, 0}

/* Cost of g on device (a profile name like "H100"; NULL: the context's
 * cost_device option).  MIRS_INVALID_ARG naming the known devices when
 * there is no such profile. */
MIRS_API mirs_status mirs_graph_cost(mirs_context *ctx, const mirs_graph *g, const char *device,
                                     mirs_cost *out);
/* Cost of kernel op `op` of g. */
MIRS_API mirs_status mirs_graph_kernel_cost(mirs_context *ctx, const mirs_graph *g, int op,
                                            const char *device, mirs_cost *out);

/* ---------------------------------------------------------------- evaluation */

typedef struct mirs_eval_result mirs_eval_result;

/* Evaluate g in float64 on random inputs drawn from Philox keyed by
 * (seed, input name, element): uniform in [-1, 1).  A program and a µGraph
 * with the same input names see the same inputs. */
MIRS_API mirs_status mirs_graph_eval(const mirs_graph *g, uint64_t seed, mirs_eval_result **out);
MIRS_API void mirs_eval_result_destroy(mirs_eval_result *r);
MIRS_API int mirs_eval_num_outputs(const mirs_eval_result *r);
MIRS_API const char *mirs_eval_output_name(const mirs_eval_result *r, int index);
/* Element count and row-major values of output index. */
MIRS_API const double *mirs_eval_output_values(const mirs_eval_result *r, int index,
                                               int64_t *count);
MIRS_API int mirs_eval_output_shape(const mirs_eval_result *r, int index,
                                    int64_t dims[MIRS_MAX_DIMS]);
/* The input value the interpreter uses for element `element` of the input
 * named name under seed: uniform in [-1, 1). */
MIRS_API double mirs_input_value(uint64_t seed, const char *name, uint64_t element);

#ifdef __cplusplus
}
#endif
#endif
