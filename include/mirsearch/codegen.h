/* SPDX-License-Identifier: MIT */
/* mirsearch/codegen.h - CUDA C for a µGraph, and running it.
 *
 * mirs_codegen_cuda emits one self-contained CUDA translation unit: one
 * kernel per kernel op (custom kernels fused, with tensor cores for
 * f16/bf16 matmul tiles on sm_80 and later) and a C-callable entry point
 *
 *   int ENTRY(const void *in_<input>..., void *out<i>...,
 *             void *workspace, size_t workspace_bytes, void *stream);
 *   size_t ENTRY_workspace_bytes(void);
 *   const char *ENTRY_status_string(int status);
 *
 * taking device pointers to dense row-major tensors (inputs in the
 * graph's input order, outputs in its output order) and launching on
 * stream (a cudaStream_t).  mirs_codegen_header emits the matching C
 * header: no CUDA type in it, the status codes (0 success, > 0 a
 * cudaError_t, < 0 a broken contract: NULL, misaligned or aliased
 * pointers, a short workspace, an earlier error pending) and the contract
 * (16-byte aligned pointers, outputs overlapping nothing).  The same
 * source compiles as host C++ through the emulation header
 * (mirs_codegen_emulation_header), which is how mirs_codegen_run checks
 * it without a GPU.  No CUDA headers are needed to use this file. */
#ifndef MIRSEARCH_CODEGEN_H
#define MIRSEARCH_CODEGEN_H

#include "mirsearch/core.h"
#include "mirsearch/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA C of g into *text: NUL-terminated, from g's context allocator;
 * release it with mirs_free(mirs_graph_context(g), text).  entry
 * names the entry point (a C identifier; NULL: "mirs_" + the graph name).
 * A custom kernel whose tiles exceed shared memory (227 KB) keeps them in
 * a per-block slice of the workspace instead. */
MIRS_API mirs_status mirs_codegen_cuda(const mirs_graph *g, const char *entry, char **text);
/* The C header of the same entry point into *text (released the same
 * way): include it from C or C++ to call the code mirs_codegen_cuda
 * emitted for the same g and entry. */
MIRS_API mirs_status mirs_codegen_header(const mirs_graph *g, const char *entry, char **text);
/* The host emulation header the generated code includes as
 * "mirsearch_emu.h" when compiled with -DMIRS_HOST_EMULATION. */
MIRS_API const char *mirs_codegen_emulation_header(void);

typedef enum mirs_backend {
  MIRS_BACKEND_HOST = 0, /* host C++ compiler + emulation header */
  MIRS_BACKEND_CUDA = 1  /* nvcc, run on device 0 */
} mirs_backend;

/* Compile g's generated code for backend, run it on the seeded inputs of
 * mirs_graph_eval (rounded to each input's dtype; on the host, the
 * emulator's thread order is seeded by the option emu_seed), and return
 * its outputs as an eval result (in float64) and the largest relative error
 * (max |x - ref| / max |ref| per output) against the float64 interpreter.
 * MIRS_NO_DEVICE for MIRS_BACKEND_CUDA without a usable GPU; MIRS_INTERNAL
 * with the compiler's first lines when the code does not compile. */
MIRS_API mirs_status mirs_codegen_run(const mirs_graph *g, uint64_t seed, mirs_backend backend,
                                      mirs_eval_result **out, double *max_rel_error);
/* The relative error a run of g may show: set by its storage dtype
 * (f16 1e-2, bf16 6e-2, f32 1e-4). */
MIRS_API double mirs_codegen_tolerance(const mirs_graph *g);

/* ---------------------------------------------------------------- timing on a GPU */

/* Times of one configuration over bench_reps runs, in microseconds
 * (reps == 0: not timed). */
typedef struct mirs_bench_timing {
  int reps;
  double median_us, p10_us, p90_us, min_us, mean_us;
} mirs_bench_timing;

/* What mirs_codegen_bench measured.  Set struct_size (MIRS_BENCH_RESULT_INIT);
 * at most that many bytes are written. */
typedef struct mirs_bench_result {
  size_t struct_size;
  char device[128];  /* the GPU's name */
  char profile[32];  /* device profile of the roofline figures (option cost_device) */
  int sms;           /* multiprocessors of the GPU */
  double l2_bytes;   /* its L2 cache */
  double flush_bytes; /* bytes written to evict L2 before every timed run */
  int has_baseline;  /* a program was given: the unfused baseline ran too */
  int checked;       /* the candidate's outputs within tolerance: only then was anything timed */
  int baseline_checked; /* the baseline's too (the program's own f16 intermediates can
                           overflow, as attention's row sums do: then it is timed anyway,
                           the same work, and flagged) */
  double tolerance;  /* relative error allowed (the storage dtype's) */
  double candidate_error, baseline_error; /* max relative error vs the float64 interpreter */
  mirs_bench_timing candidate, baseline;  /* launches on a stream */
  mirs_bench_timing candidate_graph, baseline_graph; /* CUDA graph replays (bench_cuda_graph) */
  int baseline_cublas_calls, baseline_kernels; /* what the baseline launches */
  double bytes;    /* fewest HBM bytes: each program input read and output written once */
  double flops;    /* matmul flops of the program (2 m n k per product) */
  double hbm_bytes_per_s, tc_flops_per_s; /* the profile's bandwidth and matmul peak */
} mirs_bench_result;

#define MIRS_BENCH_TIMING_INIT {0, 0, 0, 0, 0, 0}
#define MIRS_BENCH_RESULT_INIT                                                                     \
  {sizeof(mirs_bench_result), "", "", 0, 0, 0, 0, 0, 0, 0, 0, 0, MIRS_BENCH_TIMING_INIT,          \
   MIRS_BENCH_TIMING_INIT, MIRS_BENCH_TIMING_INIT, MIRS_BENCH_TIMING_INIT, 0, 0, 0, 0, 0, 0}

/* Time candidate's generated code on GPU 0 against the unfused program.
 * Compiles (nvcc, cuBLAS) a harness holding the candidate's code and the
 * program as written (cuBLAS for matmuls, the generator's simple kernels
 * for the other ops), runs both once on mirs_graph_eval's seeded inputs
 * and checks every output against the float64 interpreter of the program
 * (of the candidate when program is NULL: then there is no baseline);
 * only when the candidate's are within tolerance (out->checked) does it
 * time each (a baseline beyond tolerance is timed too, and flagged by
 * out->baseline_checked = 0): bench_warmup
 * runs, then bench_reps runs between CUDA events, each after writing a
 * buffer twice the size of L2 (and, with bench_cuda_graph, the same as
 * graph replays).  A run of the harness that fails is MIRS_CUDA; one
 * that has not ended after 300 s is killed (MIRS_LIMIT), as is the work
 * under way at the time_limit option, counted from the call.
 * MIRS_UNSUPPORTED when built without nvcc;
 * MIRS_NO_DEVICE without a usable GPU; MIRS_SHAPE when the program's
 * inputs or outputs differ from the candidate's. */
MIRS_API mirs_status mirs_codegen_bench(const mirs_graph *candidate, const mirs_graph *program,
                                        uint64_t seed, mirs_bench_result *out);

/* One candidate of mirs_codegen_rank. */
typedef struct mirs_rank_entry {
  double predicted_seconds; /* the cost model's time: set by the caller */
  int checked;              /* within tolerance of the float64 interpreter: only then timed */
  double median_us, p10_us, p90_us; /* the candidate's timing (NAN when not timed) */
  double rank_model, rank_measured; /* 1-based among the timed (ties averaged), else NAN */
} mirs_rank_entry;

/* Time n candidates of program (NULL: each against itself) on GPU 0, each
 * as mirs_codegen_bench does (checked first: a wrong kernel is never
 * timed; the harnesses compile in parallel first, as many at once as the
 * threads option, else the CPUs the process may use, allow; then each is
 * checked and timed alone), and rank them: rows[i] gets cands[i]'s check and times and its
 * ranks by predicted and by measured time; *best the index of the fastest
 * checked candidate (-1: none); *rho Spearman's rank correlation of the
 * two orders over the timed candidates (NAN under 2).  last (may be NULL)
 * receives a mirs_bench_result of the ranking (device, reps).
 * A candidate whose harness fails (it does not compile, a run of it
 * fails, or one has not ended after 300 s and is killed) is neither
 * checked nor timed, and the others are ranked all the same: then
 * errors[i] (errors: n pointers, or NULL) is why, a string from the
 * context's allocator (release each with mirs_free; NULL where the
 * harness ran), and MIRS_OK is returned.  Errors that are no one
 * candidate's (no CUDA build: MIRS_UNSUPPORTED, no device:
 * MIRS_NO_DEVICE, a stop request, the time_limit option counted from the
 * call: MIRS_LIMIT, no memory or disk) stop the ranking and are
 * returned, with every errors[i] NULL. */
MIRS_API mirs_status mirs_codegen_rank_all(const mirs_graph *const *cands, int n,
                                           const mirs_graph *program, uint64_t seed,
                                           mirs_rank_entry *rows, int *best, double *rho,
                                           mirs_bench_result *last, char **errors);
/* mirs_codegen_rank_all without errors: a candidate's failed harness is
 * returned instead (the first one's status, its message naming the
 * candidate), after every row, *best and *rho are set. */
MIRS_API mirs_status mirs_codegen_rank(const mirs_graph *const *cands, int n,
                                       const mirs_graph *program, uint64_t seed,
                                       mirs_rank_entry *rows, int *best, double *rho,
                                       mirs_bench_result *last);
/* Write the sources mirs_codegen_bench compiles into the existing
 * directory dir (cand.cu, base.cu, bench.cu; build with `nvcc -I DIR
 * DIR/bench.cu -lcublas`): needs neither nvcc nor a GPU. */
MIRS_API mirs_status mirs_codegen_bench_sources(const mirs_graph *candidate,
                                                const mirs_graph *program, const char *dir);

/* Measure GPU 0 (copy bandwidth, the share of SMs that saturates it, the
 * loaded memory latency, kernel launch interval, cuBLAS f16, bf16 and
 * tf32 tensor-core rates, f32 FMA rate; its
 * SMs, L2, shared memory and threads per block) and write a device
 * profile (data/devices.profile's format; the device named H100, H200 or
 * A100 when the GPU's name contains it) to path, atomically, for
 * --device-profile=FILE (option device_profile).  With source_dir, only
 * write the program (calibrate.cu) there: no nvcc or GPU needed.  Errors
 * as mirs_codegen_bench's. */
MIRS_API mirs_status mirs_codegen_calibrate(mirs_context *ctx, const char *path,
                                            const char *source_dir);

#ifdef __cplusplus
}
#endif
#endif
