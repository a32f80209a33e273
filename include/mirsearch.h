/* SPDX-License-Identifier: MIT */
/* mirsearch.h - the public API of libmirsearch, a parallel superoptimizer
 * for tensor programs.  Include this one header; link with
 * `pkg-config --libs mirsearch`.  All names carry the mirs_ / MIRS_ prefix.
 *
 *   mirsearch/core.h   context, status codes, options, logging, Philox
 *   mirsearch/graph.h  programs and µGraphs: build, parse, print, hash, eval
 *   mirsearch/gpu.h    GPU availability (no CUDA headers required)
 *   mirsearch/codegen.h CUDA C for a µGraph; compile and run it (host or GPU)
 *   mirsearch/verify.h one candidate against its program (fingerprints, float64)
 *   mirsearch/search.h the superoptimiser: search, verify, rank
 *   mirsearch/partition.h whole programs: pieces searched (or cached), stitched */
#ifndef MIRSEARCH_H
#define MIRSEARCH_H

#include "mirsearch/version.h"
#include "mirsearch/core.h"
#include "mirsearch/graph.h"
#include "mirsearch/gpu.h"
#include "mirsearch/codegen.h"
#include "mirsearch/verify.h"
#include "mirsearch/search.h"
#include "mirsearch/partition.h"

#endif
