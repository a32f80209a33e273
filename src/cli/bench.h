/* SPDX-License-Identifier: MIT */
/* src/cli/bench.h - `mirsearch bench`: time a µGraph's generated code on
 * the GPU against the unfused program and print the table (or JSON),
 * through the public API only (mirs_codegen_bench). */
#ifndef MIRS_CLI_BENCH_H
#define MIRS_CLI_BENCH_H

#include <stdio.h>

#include "mirsearch.h"

/* Bench candidate (read from cand_path) against program (NULL: none,
 * from prog_path) and print the result to out (JSON when json), messages
 * to err.  With source_dir, only write the harness sources there.
 * Returns the exit status: 0 timed, 1 an output beyond tolerance (nothing
 * timed), 2 bad input or built without CUDA, 3 no GPU or a failed run. */
int mirs__cli_bench(mirs_context *ctx, FILE *out, FILE *err, const mirs_graph *candidate,
                    const mirs_graph *program, const char *cand_path, const char *prog_path,
                    const char *source_dir, int json);

/* `bench --calibrate=PATH`: measure GPU 0 and write a device profile to
 * path (with source_dir: only write the program there).  Returns the
 * exit status (0, 2 built without CUDA, 3 no GPU or a failed run). */
int mirs__cli_calibrate(mirs_context *ctx, FILE *out, FILE *err, const char *path,
                        const char *source_dir);

/* `bench --rank=DIR`: time the model's top `top` results of a search's
 * output directory (DIR/candidates, in rank order; 16 when top <= 0),
 * write DIR/measured.json (predicted and measured seconds of each, their
 * Spearman rank correlation, the measured best) and the measured best
 * as DIR/best_measured.ugraph, and print the table.  Exit 0, 2 (no
 * candidates, built without CUDA) or 3 (no GPU, a failed run). */
int mirs__cli_rank(mirs_context *ctx, FILE *out, FILE *err, const char *dir, long top);

#endif
