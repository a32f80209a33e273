/* SPDX-License-Identifier: MIT */
/* mirsearch/verify.h - check that a µGraph computes the same function as
 * a program: finite-field fingerprints (sound, with a false-accept bound)
 * and a float64 comparison on random real inputs. */
#ifndef MIRSEARCH_VERIFY_H
#define MIRSEARCH_VERIFY_H

#include "mirsearch/core.h"
#include "mirsearch/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mirs_verify_result {
  size_t struct_size; /* bytes the library filled (mirs_verify passes sizeof for you) */
  int equal; /* 1: fingerprints equal and the float64 check passed or was skipped */
  int fingerprint_equal; /* 1: every program output matched in every trial */
  int trials; /* fingerprint trials run */
  uint64_t degree; /* degree estimate D behind the bound */
  double log2_bound; /* false-accept probability <= 2^log2_bound (0: no bound) */
  int float_checked; /* 1: the float64 comparison ran */
  double float_max_rel_error; /* max over outputs of max|a-b| / max|b| */
  char reason[320]; /* why not equal, or why the float64 check was skipped */
  /* Appended (the struct is sized): */
  char backend[384]; /* fingerprint backend used: "cpu", "gpu: DEVICE", "cpu (no usable GPU: ...)" */
  uint64_t output_digest; /* digest of the candidate's output fingerprints (all trials):
                             equal on every backend */
} mirs_verify_result;

/* Compare candidate with program, output by output (matched by name).
 * The fingerprints run on the backend the option `verify` picks
 * (auto|cpu|gpu; gpu fails with MIRS_UNSUPPORTED when the library was
 * built without CUDA, MIRS_NO_DEVICE when there is no usable device).
 * Trials are chosen so the false-accept bound is at most
 * 2^verify_log2_bound (an option); the float64 check uses the seed option
 * and float_tolerance, and is skipped (with the reason said) when the
 * graphs are larger than eval_max_elements.  MIRS_OK whatever the verdict;
 * MIRS_UNSUPPORTED when either graph has an exp of an exp (no sound
 * fingerprint exists), other statuses for invalid graphs or resources. */
MIRS_API mirs_status mirs_verify_sized(mirs_context *ctx, const mirs_graph *program,
                                       const mirs_graph *candidate, mirs_verify_result *out,
                                       size_t size);
/* Fills at most sizeof *out bytes: a program built against an older,
 * smaller mirs_verify_result stays safe with a newer library. */
#define mirs_verify(ctx, program, candidate, out) \
  mirs_verify_sized((ctx), (program), (candidate), (out), sizeof *(out))

#ifdef __cplusplus
}
#endif
#endif
