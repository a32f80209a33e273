/* SPDX-License-Identifier: MIT */
/* src/codegen/codegen.h - CUDA C emission for µGraphs (cuda.c) and the
 * compile-and-run driver behind `mirsearch run` (run.c).
 *
 * The generated source is one translation unit: a prelude (CUDA headers,
 * or the host emulation header when MIRS_HOST_EMULATION is defined), one
 * `static __global__` function per kernel op, its C interface (the text of
 * mirs__codegen_header) and an `extern "C"` entry point
 * `int ENTRY(inputs..., outputs..., workspace, workspace_bytes, stream)`
 * taking `const void *` / `void *` only, with `ENTRY_workspace_bytes()`
 * and `ENTRY_status_string()`.  The same source compiles with nvcc for
 * sm_80/sm_90 and, through emu.h, as host C++.  run.c's driver helpers
 * (temporary directory, argv-based child processes, seeded inputs in and
 * outputs out as float64 files) are shared with bench.c, which times the
 * same code on a GPU. */
#ifndef MIRS_CODEGEN_CODEGEN_H
#define MIRS_CODEGEN_CODEGEN_H

#include <sys/types.h>

#include "core/core.h"
#include "graph/graph.h"
#include "mirsearch/codegen.h"

/* Append the CUDA C of g to out; the entry point is named entry (a C
 * identifier; NULL: "mirs_" + the graph's name).  MIRS_LIMIT, naming the
 * kernel, when a custom kernel's plan does not fit (shared memory over
 * 227 KB, a tile of 2^31 elements or more, over 1024 threads). */
mirs_status mirs__codegen_cuda(const mirs_graph *g, const char *entry, mirs__buf *out);
/* The same, with layout ops as strided views (views true: what
 * mirs__codegen_cuda emits) or only reshapes of dense tensors as views
 * (the program as written, for the benchmark's baseline; views.c). */
mirs_status mirs__codegen_cuda_views(const mirs_graph *g, const char *entry, bool views,
                                     mirs__buf *out);
/* Append the C header declaring g's generated interface (entry as above):
 * prototypes without CUDA types, the status codes and the contract. */
mirs_status mirs__codegen_header(const mirs_graph *g, const char *entry, mirs__buf *out);
/* Append a main() that reads g's inputs (doubles, in input order) from
 * argv[1], runs entry on them and writes its outputs (doubles, in output
 * order) to argv[2]; it #includes the generated source from `kernel.cu`.
 * Under MIRS_HOST_EMULATION an optional argv[3] seeds the emulator's
 * thread order (mirs_emu_seed). */
mirs_status mirs__codegen_harness(const mirs_graph *g, const char *entry, mirs__buf *out);
/* Default entry-point name of g into buf ("mirs_" + name, sanitised). */
void mirs__codegen_entry_name(const mirs_graph *g, char *buf, size_t size);
/* Relative tolerance of a generated-code run against the float64
 * interpreter for the storage dtype of a graph's tensors. */
double mirs__codegen_tolerance(mirs_dtype dt);

/* Grid size of a generated grid-stride kernel over n elements (256
 * threads a block). */
int64_t mirs__codegen_stride_blocks(int64_t n);

/* Where kernel tensor t's elements live in the generated code (views.c):
 * the buffer of tensor `buf` (t's own, an input's, an output's or
 * another intermediate's), element (c0, c1, ..) at off + sum c_d * st[d]
 * (kernels get the pointer buffer + off: tensor_ptr). */
typedef struct mirs__storage {
  int32_t buf;
  int64_t off;
  int64_t st[MIRS_MAX_DIMS];
} mirs__storage;
/* t's storage: with views, reshapes and permutes are strided views where
 * expressible (and a permuted result a reshape cannot view is stored in
 * place by its producer); without (the benchmark's program as written)
 * only a reshape of a dense tensor is a view. */
void mirs__codegen_storage(const mirs_graph *g, bool views, int32_t t, mirs__storage *s);
/* Whether kernel op `op` of g is a layout op that runs no kernel. */
bool mirs__codegen_op_is_view(const mirs_graph *g, bool views, int32_t op);
/* The same, with views (what the generated entry and the cost model do). */
bool mirs__codegen_is_view(const mirs_graph *g, int32_t op);
/* The tensor whose buffer kernel tensor t uses without views: t, or for
 * a reshape view the root of its chain of views. */
int32_t mirs__codegen_view_root(const mirs_graph *g, int32_t t);
/* Whether t's storage (with views) may be read 16 bytes at a time along
 * its last dim (elements of elsize bytes): last stride 1, rows, every
 * other stride and the offset whole 16-byte multiples. */
bool mirs__codegen_storage_vec(const mirs_graph *g, int32_t t, int elsize);
/* Whether kernel tensor t is dense in its own buffer (views on): not a
 * view, not stored through one. */
bool mirs__codegen_is_dense(const mirs_graph *g, int32_t t);
/* The dim of tile shape ts that a custom kernel's element load walks
 * fastest for a tensor stored at strides st: -1 for row-major (the last
 * dim), or the dim contiguous in memory when the last dim is strided (a
 * permuted or transposed view), so that consecutive threads read
 * consecutive addresses (cuda.c's emit_tile_coords follows it). */
int mirs__codegen_walk_dim(const mirs__shape *ts, const int64_t *st);
/* Sector factor of a walk over region ext (from the origin of storage
 * s): consecutive threads take consecutive accesses of `width` elements
 * of elsize bytes (width > 1: 16-byte chunks along the last dim), dim f
 * fastest (-1: row-major); warps of 32 threads each move every 32-byte
 * sector their accesses touch.  Returns the sectors the warps touch over
 * the fewest that their bytes need (ceil(bytes / 32) a warp): >= 1, 1
 * when coalesced, counted over the walk's first 8 warps. */
double mirs__codegen_sector_factor(const mirs__storage *s, const mirs__shape *ext, int elsize,
                                   int width, int f);
/* The sector factor of a custom kernel's tile of shape ts of kernel
 * tensor t (elements of elsize bytes): a load (16-byte chunks when vec,
 * else element loads in mirs__codegen_walk_dim's order) or, with store,
 * its element stores (row-major), over the same walk of the tile of t
 * stored dense (so 1 for a dense tensor or a contiguous view: a view
 * pays the sectors its strides add), averaged over the byte phases in a
 * sector of its tiles' origins (t's offset plus whole tiles along each
 * dim the tiles step through). */
double mirs__codegen_tile_sectors(const mirs_graph *g, int32_t t, const mirs__shape *ts,
                                  int elsize, bool vec, bool store);
/* The sector factor of predefined kernel op `op` reading its operand a
 * (threads walk the result in row-major order; a reshape copy its
 * input's order; a matmul's B a row at its last stride per step); 1 for
 * a matmul's A, reductions and norms (per-thread loops: not modelled). */
double mirs__codegen_operand_sectors(const mirs_graph *g, int32_t op, int32_t a);
/* The sector factor of predefined kernel op `op` writing its result (in
 * row-major order, at the result's storage strides: dense, or stored in
 * place of a view chain). */
double mirs__codegen_result_sectors(const mirs_graph *g, int32_t op);

/* ---------------------------------------------------------------- driver (run.c) */

/* An argument vector built from copies (exec wants char *, literals are const). */
typedef struct mirs__codegen_args {
  char store[24][1024];
  char *argv[25];
  int n; /* set to 0 before the first mirs__codegen_arg */
} mirs__codegen_args;

/* Host helpers every harness starts with (after the generated source). */
extern const char mirs__codegen_harness_io[];
/* Emit a harness's writing of g's outputs (device buffers PREFIX0..) as
 * float64 to argv[argi], declaring `fo` with decl ("FILE *" or ""). */
void mirs__codegen_emit_outputs(const mirs_graph *g, const char *ind, const char *decl, int argi,
                                const char *prefix, mirs__buf *b);
/* Append a copy of text (cut at 1023 bytes; 24 arguments at most). */
void mirs__codegen_arg(mirs__codegen_args *a, const char *text);
/* The nvcc to run: option codegen_nvcc, else configure's, else PATH's. */
const char *mirs__codegen_nvcc(mirs_context *ctx);
/* The nvcc command of mirs__codegen_nvcc_build into *cmd. */
mirs_status mirs__codegen_nvcc_args(mirs_context *ctx, const char *dir, const char *src,
                                    const char *out, const char *lib, mirs__codegen_args *cmd);
/* Compile dir/src with nvcc (-std=c++17 -O2 -I dir, a -gencode per
 * codegen_arch entry, -l lib unless NULL) into dir/out; its output goes
 * to dir/log; a failure is MIRS_INTERNAL "WHAT with NVCC (exit N):" and
 * nvcc's first lines; deadline as for mirs__codegen_spawn. */
mirs_status mirs__codegen_nvcc_build(mirs_context *ctx, const char *dir, const char *src,
                                     const char *out, const char *lib, double deadline,
                                     const char *what);
/* Why one candidate's harness failed (MIRS_OK: it did not): it did not
 * compile (MIRS_INTERNAL), a run of it failed (MIRS_CUDA) or did not end
 * in time (MIRS_LIMIT), or its outputs were not what it was to write. */
typedef struct mirs__bench_failure {
  mirs_status status;
  bool cut; /* no failure of its own: the deadline came before it was timed (MIRS_LIMIT) */
  char why[640];
} mirs__bench_failure;
/* mirs_codegen_bench of n candidates against one program (each pair
 * checked) into rs[0..n) (whole structs): the harnesses compile in
 * parallel first, then each is checked and timed in turn.  With fails
 * NULL the first error stops it; else a failure of one candidate's
 * harness goes to fails[i] (that candidate unchecked, untimed) and the
 * others go on: only errors that are no one candidate's (no device, a
 * stop request, no memory or disk) stop it.  At deadline (mirs__core_now()
 * seconds; 0: none) the build or run under way is killed: MIRS_LIMIT
 * without fails; with them every candidate not timed by then is marked
 * cut, and the times taken stand.  mirs_codegen_rank's engine. */
mirs_status mirs__codegen_bench_many(const mirs_graph *const *cands, int n,
                                     const mirs_graph *program, uint64_t seed,
                                     mirs_bench_result *rs, mirs__bench_failure *fails,
                                     double deadline);
/* mirs_codegen_rank_all with the failures and the deadline as
 * mirs__codegen_bench_many's (fails: n of them, required). */
mirs_status mirs__codegen_rank(const mirs_graph *const *cands, int n, const mirs_graph *program,
                               uint64_t seed, mirs_rank_entry *rows, int *best, double *rho,
                               mirs_bench_result *last, mirs__bench_failure *fails,
                               double deadline);
/* The device profile (data/devices.profile's format) into b from the
 * `key value` lines the calibration program printed (text): the optional
 * keys it did not measure are left out, said in a comment; a required
 * one missing is MIRS_INTERNAL. */
mirs_status mirs__codegen_cal_profile(mirs_context *ctx, const char *text, mirs__buf *b);
/* Write len bytes to dir/name. */
mirs_status mirs__codegen_put_file(mirs_context *ctx, const char *dir, const char *name,
                                   const void *data, size_t len);
/* Run argv with stdout and stderr appended to log, in a process group of
 * its own; its exit status into *status (-1 when it could not start,
 * 128+N for signal N).  At the deadline (mirs__core_now() seconds; 0:
 * none, MIRS_LIMIT) or on a stop request of ctx the whole group is killed. */
mirs_status mirs__codegen_spawn(mirs_context *ctx, char *const *argv, const char *log,
                                double deadline, int *status);
/* mirs__codegen_spawn in parts: start the child (its group's leader),
 * wait for it (what names it in messages; the deadline and stop requests
 * as above), or kill its group and reap it. */
mirs_status mirs__codegen_spawn_start(mirs_context *ctx, char *const *argv, const char *log,
                                      pid_t *pid);
mirs_status mirs__codegen_spawn_wait(mirs_context *ctx, pid_t pid, double deadline,
                                     const char *what, int *status);
void mirs__codegen_spawn_kill(pid_t pid);
/* mirs__codegen_spawn, and a non-zero exit is status `fail`: "WHAT (exit
 * N):" and the log's first lines. */
mirs_status mirs__codegen_spawn_checked(mirs_context *ctx, char *const *argv, const char *log,
                                        double deadline, mirs_status fail, const char *what);
/* The first 8 lines of a log file into buf (empty when unreadable). */
void mirs__codegen_log_head(const char *log, char *buf, size_t size);
/* A new private directory $TMPDIR/mirsearch-WHAT-XXXXXX into dir. */
mirs_status mirs__codegen_tmpdir(mirs_context *ctx, const char *what, char *dir, size_t size);
/* Remove names[0..n) from dir, then dir itself. */
void mirs__codegen_remove_dir(const char *dir, const char *const *names, size_t n);
/* g's seeded inputs (mirs_graph_eval's, float64, input order) to dir/name. */
mirs_status mirs__codegen_write_inputs(const mirs_graph *g, uint64_t seed, const char *dir,
                                       const char *name);
/* g's outputs (float64, output order) read from path as an eval result. */
mirs_status mirs__codegen_read_outputs(const mirs_graph *g, const char *path,
                                       mirs_eval_result **out);
/* MIRS_NO_DEVICE "no CUDA device: WHY" unless a CUDA device is usable. */
mirs_status mirs__codegen_need_device(mirs_context *ctx);

/* The host emulation header (src/codegen/emu.h), as text. */
extern const char mirs__codegen_emu_h[];

#endif
