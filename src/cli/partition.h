/* SPDX-License-Identifier: MIT */
/* src/cli/partition.h - `mirsearch partition` (partition.c): a whole
 * program cut into pieces, each searched or served from the result
 * cache, stitched, verified and written to an output directory. */
#ifndef MIRS_CLI_PARTITION_H
#define MIRS_CLI_PARTITION_H

#include <stdio.h>

#include "mirsearch.h"

/* What cli.c parsed for the command. */
typedef struct mirs__cli_partition_args {
  mirs_context *ctx;
  FILE *out, *err;
  const mirs_graph *program; /* parsed and validated */
  const char *dir;           /* output directory (--out or -o; NULL: NAME.partition) */
  int quiet, json, mpi;
} mirs__cli_partition_args;

/* Run the command; returns the exit status (0 done, 2 bad input or
 * usage, 3 resource or internal error, 4 stopped: the finished pieces are
 * in the cache and nothing was written). */
int mirs__cli_partition(const mirs__cli_partition_args *a);

#endif
