/* SPDX-License-Identifier: MIT */
/* src/cli/show.h - `mirsearch show`: summary and Graphviz output of a
 * µGraph, written through the public API only. */
#ifndef MIRS_CLI_SHOW_H
#define MIRS_CLI_SHOW_H

#include <stdio.h>

#include "mirsearch.h"

/* The readable per-kernel summary (costs on the context's cost_device);
 * with `cost`, the terms of each predicted time under its line. */
mirs_status mirs__cli_show_summary(FILE *out, mirs_context *ctx, const mirs_graph *g,
                                   int cost);
/* A Graphviz (dot) diagram of g. */
mirs_status mirs__cli_show_dot(FILE *out, const mirs_graph *g);

#endif
