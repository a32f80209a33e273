/* SPDX-License-Identifier: MIT */
/* src/cli/import.h - `mirsearch import MODEL.onnx [-o PROGRAM.graph]`:
 * ONNX models to .graph programs through the Python importer
 * (python/mirsearch/onnx_import.py, which reads the model with the onnx
 * package), checked with the library's parser before it is kept. */
#ifndef MIRS_CLI_IMPORT_H
#define MIRS_CLI_IMPORT_H

#include <stdio.h>

#include "mirsearch.h"

/* Import model into output (NULL: print the program on out); messages on
 * err.  Returns the exit status: 0 imported, 2 a model with unsupported
 * operators (each named with its node) or an unreadable model, 3 no
 * Python with the onnx package, an I/O error, or an importer that wrote
 * something the parser refuses. */
int mirs__cli_import(mirs_context *ctx, FILE *out, FILE *err, const char *model,
                     const char *output);

#endif
