/* SPDX-License-Identifier: MIT */
/* src/codegen/codegen.h - CUDA C emission for µGraphs (cuda.c) and the
 * compile-and-run driver behind `mirsearch run` (run.c).
 *
 * The generated source is one translation unit: a prelude (CUDA headers,
 * or the host emulation header when MIRS_HOST_EMULATION is defined), one
 * `static __global__` function per kernel op, and an `extern "C"` entry
 * point `ENTRY(inputs..., outputs..., workspace, stream)` with
 * `ENTRY_workspace_bytes()`.  The same source compiles with nvcc for
 * sm_80/sm_90 and, through emu.h, as host C++. */
#ifndef MIRS_CODEGEN_CODEGEN_H
#define MIRS_CODEGEN_CODEGEN_H

#include "core/core.h"
#include "graph/graph.h"

/* Append the CUDA C of g to out; the entry point is named entry (a C
 * identifier; NULL: "mirs_" + the graph's name).  MIRS_LIMIT, naming the
 * kernel, when a custom kernel's plan does not fit (shared memory over
 * 227 KB, a tile of 2^31 elements or more, over 1024 threads). */
mirs_status mirs__codegen_cuda(const mirs_graph *g, const char *entry, mirs__buf *out);
/* Append a main() that reads g's inputs (doubles, in input order) from
 * argv[1], runs entry on them and writes its outputs (doubles, in output
 * order) to argv[2]; it #includes the generated source from `kernel.cu`. */
mirs_status mirs__codegen_harness(const mirs_graph *g, const char *entry, mirs__buf *out);
/* Default entry-point name of g into buf ("mirs_" + name, sanitised). */
void mirs__codegen_entry_name(const mirs_graph *g, char *buf, size_t size);
/* Relative tolerance of a generated-code run against the float64
 * interpreter for the storage dtype of a graph's tensors. */
double mirs__codegen_tolerance(mirs_dtype dt);

/* The host emulation header (src/codegen/emu.h), as text. */
extern const char mirs__codegen_emu_h[];

#endif
