/* SPDX-License-Identifier: MIT */
/* src/codegen/cost.h - the analytic cost model and the device profiles it
 * reads (docs/SEARCH.md "Cost model", docs/CODEGEN.md for the plan).
 *
 * A device profile holds datasheet numbers for one GPU (bandwidth, peaks,
 * launch latency, shared memory per block, SMs, L2).  Profiles come from a
 * profile file (data/devices.profile, installed under $(pkgdatadir)), or
 * from the same file compiled into the library, so the library works
 * uninstalled.  The model prices each kernel op as
 *   launch latency + max(bytes / bandwidth, flops / peak)
 * (a custom kernel: its on-chip time, max(flops / peak, shared-memory
 * bytes / shared-memory bandwidth), in place of flops / peak) and a graph
 * as the sum over its kernel ops.  It needs no GPU, touches no
 * clock and no random numbers: equal inputs give bit-equal results.
 *
 * Invariants: a loaded mirs__cost_profiles holds at least one device, every
 * numeric field is finite and > 0 (smem_bw: or 0, not priced), and no two devices share a name or alias
 * (ignoring case).  Costing allocates nothing, so it may run in the
 * search's inner loop; a profile set is read-only after loading and may be
 * shared by threads. */
#ifndef MIRS_CODEGEN_COST_H
#define MIRS_CODEGEN_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

#define MIRS__COST_NAME_SIZE 32
#define MIRS__COST_DESC_SIZE 96
#define MIRS__COST_MAX_ALIASES 8
#define MIRS__COST_REASON_SIZE 256

/* One GPU, in SI units (bytes/s, flop/s, seconds, bytes). */
typedef struct mirs__cost_device {
  char name[MIRS__COST_NAME_SIZE];
  char description[MIRS__COST_DESC_SIZE];
  char aliases[MIRS__COST_MAX_ALIASES][MIRS__COST_NAME_SIZE];
  int naliases;
  double hbm_bw;          /* HBM bandwidth, bytes/s */
  double tc_peak;         /* dense f16 tensor-core peak (f32 accumulate), flop/s */
  double bf16_peak;       /* dense bf16 tensor-core peak, flop/s (key tc_bf16_tflops;
                           * absent: tc_peak, as every device so far has it) */
  double tf32_peak;       /* dense tf32 tensor-core peak, flop/s (key tc_tf32_tflops;
                           * absent: half of tc_peak, as every device so far has it) */
  double f32_peak;        /* f32 non-tensor peak, flop/s */
  double launch_s;        /* launch latency, s */
  int64_t smem_per_block; /* opt-in maximum, bytes */
  int32_t sms;
  int64_t l2_bytes;
  int32_t max_threads_per_block;
  double hbm_saturation; /* fraction of SMs that saturates HBM, (0, 1] */
  double mem_latency_s;  /* loaded HBM latency, s (key mem_latency_us; absent: 0.7 us): the
                          * bytes in flight over it bound a kernel's bandwidth */
  double smem_bw;        /* shared-memory bandwidth of one SM, bytes/s; 0 (the key
                          * smem_gbps absent): shared-memory traffic is not priced */
} mirs__cost_device;

/* A set of device profiles, in file order. */
typedef struct mirs__cost_profiles {
  mirs_context *ctx;
  mirs__cost_device *dev;
  int32_t n;
  size_t cap;
  char *source; /* path read, or "<built-in devices.profile>" */
} mirs__cost_profiles;

/* Cost of one kernel op.  Seconds are +inf when infeasible. */
/* Latency terms of the model, calibrated on the first device measurements
 * (H200, bench/device/2026-11-27-h200, bench/cost_vs_measured.py;
 * docs/SEARCH.md "Latency terms").  Global to the model, not per example
 * or device:
 * WARPS_TO_SATURATE: resident warps per SM sub-partition (4 per SM) at
 *   which the tensor, CUDA-core and shared-memory pipes reach their peak;
 *   with fewer, a warp's dependent chain (ldmatrix -> mma -> exp -> mma,
 *   shuffles) is exposed and the SM runs at warps / this of its peak.
 * ITER_SYNC_S: per forloop iteration of a block, the cp.async wait and the
 *   __syncthreads that hand a stage from the loads to the compute, paid
 *   by every block in turn (blocks resident together overlap theirs).
 * KERNEL_FIXED_S: what a kernel costs, event to event with L2 flushed,
 *   beyond the profile's launch_us (back-to-back launch throughput): the
 *   start-up of its blocks, the first loads from a cold L2 and TLB, the
 *   drain of its last stores.
 * SFU_FLOPS: a special function (exp, sqrt, division) on the SFU: 16
 *   results per clock per SM against 128 FMA lanes (256 flops), so one
 *   costs 16 flops of the f32 peak in the on-chip time (the flop count,
 *   `flops`, still says 4). */
#define MIRS__COST_WARPS_TO_SATURATE 2.0
#define MIRS__COST_ITER_SYNC_S 0.1e-6
#define MIRS__COST_KERNEL_FIXED_S 4.0e-6
#define MIRS__COST_SFU_FLOPS 16.0

typedef struct mirs__cost_kernel {
  int32_t op; /* kernel op index */
  bool custom;
  double seconds;         /* launch + KERNEL_FIXED_S + max(memory, compute) and more: cost.c */
  double fixed_seconds;   /* the launch and KERNEL_FIXED_S in seconds (a fused split-K pair's
                           * first kernel: and its counters' memset; its tail and views: 0) */
  double mem_seconds;     /* bytes / effective bandwidth */
  double compute_seconds; /* predefined: tc_flops / tc peak + simt_flops / f32 peak; custom:
                           * the on-chip time of the busiest SM (latency terms, cost.c) */
  double bytes;           /* HBM bytes moved */
  double flops;           /* tc_flops + simt_flops */
  double tc_flops;        /* on tensor cores (f16/bf16 and tf32 MMA, padded rows included) */
  double tf32_flops;      /* the part of tc_flops in tf32 (at the profile's tf32 peak) */
  double bf16_flops;      /* the part of tc_flops in bf16 (at the profile's bf16 peak) */
  double simt_flops;      /* on CUDA cores */
  int64_t smem;           /* shared memory per block, bytes (0 for predefined ops) */
  int64_t blocks;         /* grid.x * grid.y * grid.z (0 for predefined ops) */
  double utilisation;     /* min(1, blocks / sms) (1 for predefined ops) */
  int32_t stages;         /* custom: pipeline stages of its plan */
  int32_t regs;           /* custom: registers per thread, estimated by its plan */
  int32_t occupancy;      /* custom: resident blocks per SM (shared memory, threads, registers) */
  bool pipelined;         /* custom: loads overlap compute (cp.async stages) */
  double inflight;        /* custom: bytes in flight device-wide (resident blocks x plan) */
  double live;            /* custom: the plan's live share of forloop tiles (1: no skipping) */
  double eta;             /* custom: share of the SM's peak rates its resident warps reach */
  double smem_bytes;      /* custom: bank-slot bytes through shared memory, all blocks, each
                           * access times its bank-conflict factor (plan.h smem_loop) */
  double smem_seconds;    /* smem_bytes / (smem_bw * SMs in use); 0 without smem_bw */
  double smem_conflict;   /* custom: the plan's worst bank-conflict factor (1: none) */
  bool view;              /* a layout op that is a view: no kernel, nothing moved */
  int8_t split_k;         /* MIRS__SPLITK_HEAD / TAIL: a kernel of a split-K pair run as one
                           * launch (plan.h; the tail is no launch), else MIRS__SPLITK_NONE */
  bool feasible;
  char reason[MIRS__COST_REASON_SIZE]; /* why infeasible; "" otherwise */
} mirs__cost_kernel;

/* Cost of a whole graph: sums over its kernel ops. */
typedef struct mirs__cost_result {
  double seconds; /* +inf when infeasible */
  double bytes;
  double flops;
  int32_t kernels;   /* kernel launches = kernel ops */
  int64_t smem_peak; /* largest per-block shared memory of any kernel */
  double fixed_seconds, mem_seconds, compute_seconds; /* sums of the kernels' terms */
  bool feasible;
  char reason[MIRS__COST_REASON_SIZE]; /* first infeasible kernel's reason */
} mirs__cost_result;

/* ---------------------------------------------------------------- profiles */

/* Parse profile text (filename for diagnostics).  Every malformed line is
 * reported as FILE:LINE:COL: error: message through mirs__core_diag (the
 * context's diagnostic list is cleared first); then MIRS_PARSE with *out =
 * NULL.  An empty file (no device) is an error too. */
mirs_status mirs__cost_profiles_parse(mirs_context *ctx, const char *text, size_t len,
                                      const char *filename, mirs__cost_profiles **out);
/* Read and parse the profile file at path (MIRS_IO when unreadable). */
mirs_status mirs__cost_profiles_load_file(mirs_context *ctx, const char *path,
                                          mirs__cost_profiles **out);
/* The table compiled in from data/devices.profile. */
mirs_status mirs__cost_profiles_builtin(mirs_context *ctx, mirs__cost_profiles **out);
/* The profiles a program should use: path if non-NULL (an error if it
 * cannot be read); else the file of the device_profile option
 * (--device-profile=FILE: a calibrated profile) when set; else the installed $(pkgdatadir)/devices.profile when
 * the library was built with MIRS_PKGDATADIR and that file exists; else
 * the compiled-in table. */
mirs_status mirs__cost_profiles_load(mirs_context *ctx, const char *path,
                                     mirs__cost_profiles **out);
/* Release a profile set (NULL is a no-op). */
void mirs__cost_profiles_free(mirs__cost_profiles *p);
/* The compiled-in default profile path ("" when none was configured). */
const char *mirs__cost_default_path(void);
/* Device by name or alias, ignoring case.  MIRS_INVALID_ARG listing the
 * known names when there is none. */
mirs_status mirs__cost_find(mirs_context *ctx, const mirs__cost_profiles *p, const char *name,
                            const mirs__cost_device **out);
/* A kernel launch in bytes of HBM traffic on the device the options of
 * ctx select (cost_device in device_profile's file or the installed or
 * built-in profiles): launch latency x bandwidth, what a copy kernel
 * costs beyond its bytes (views.c's view-or-copy choice).  Resolved once
 * per context and kept (mirs_option_set of either option forgets it);
 * where the profile cannot be read, the H100's 13.4 MB, not kept, and
 * ctx's last error as it was. */
int64_t mirs__cost_launch_bytes(mirs_context *ctx);
/* Keep d's launch bytes as ctx's (d: the device its options select). */
void mirs__cost_note_device(mirs_context *ctx, const mirs__cost_device *d);

/* ---------------------------------------------------------------- costing */

/* Cost of kernel op `op` of g on device d. */
mirs_status mirs__cost_kernel_op(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                                 int32_t op, mirs__cost_kernel *out);
/* Cost of the whole graph g on device d (sum over kernel ops; infeasible
 * when any kernel is).  Allocates nothing (for block graphs of up to
 * MIRS__PLAN_LOCAL tensors and ops). */
mirs_status mirs__cost_graph(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                             mirs__cost_result *out);
/* A human-readable per-kernel breakdown and total, one kernel per line,
 * appended to b (for reports and --verbose output). */
mirs_status mirs__cost_print(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                             mirs__buf *b);

#endif
