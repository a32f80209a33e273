/* tests/fuzz/fuzz.h - shared by the fuzz harnesses: a context with small
 * limits (no input may make one run long) and a log that goes nowhere. */
#ifndef MIRS_TESTS_FUZZ_H
#define MIRS_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "mirsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_log(void *user, mirs_log_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

/* A context whose every limit is small: a harness run stays bounded
 * whatever the input (the point of issue 19's "bounded work"). */
static inline mirs_context *fuzz_ctx(void) {
  mirs_context *ctx = NULL;
  if (mirs_context_create(&ctx) != MIRS_OK)
    return NULL;
  mirs_set_log_callback(ctx, fuzz_log, NULL);
  mirs_option_set(ctx, "max_elements", "65536");
  mirs_option_set(ctx, "eval_max_elements", "262144");
  mirs_option_set(ctx, "eval_max_work", "4000000");
  mirs_option_set(ctx, "max_errors", "20");
  return ctx;
}

#endif
