/* SPDX-License-Identifier: MIT */
/* src/cli/import.h - `mirsearch import MODEL.onnx [-o PROGRAM.graph]`:
 * ONNX models to .graph programs through the Python importer
 * (python/mirsearch/onnx_import.py, which reads the model with the onnx
 * package), checked with the library's parser before it is kept. */
#ifndef MIRS_CLI_IMPORT_H
#define MIRS_CLI_IMPORT_H

#include <stdio.h>

#include "mirsearch.h"

/* The most --input-shape options one import takes. */
#define MIRS__CLI_MAX_INPUT_SHAPES 16

/* Import model into output (NULL: print the program on out); messages on
 * err.  shapes[0..nshapes): "NAME=D0,D1,..." static dims for inputs
 * exported with dynamic axes, passed to the importer (which checks them).
 * Returns the exit status: 0 imported, 2 a model with unsupported
 * operators (each named with its node) or an unreadable model, 3 no
 * Python with the onnx package, an I/O error, or an importer that wrote
 * something the parser refuses. */
int mirs__cli_import(mirs_context *ctx, FILE *out, FILE *err, const char *model,
                     const char *output, const char *const *shapes, int nshapes);

#endif
