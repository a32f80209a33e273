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

#ifdef __cplusplus
}
#endif
#endif
