/* tests/fuzz/fuzz_search.c - a bounded search of any program that parses
 * (few states, a small space, a time limit): no crash, no hang, and every
 * result verifies against the program. */
#include <stdlib.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mirs_context *ctx = fuzz_ctx();
  if (!ctx)
    return 0;
  mirs_option_set(ctx, "max_states", "200");
  mirs_option_set(ctx, "time_limit", "2");
  mirs_option_set(ctx, "max_kernel_ops", "3");
  mirs_option_set(ctx, "grid_x", "1,2");
  mirs_option_set(ctx, "grid_y", "1");
  mirs_option_set(ctx, "grid_z", "1");
  mirs_option_set(ctx, "forloop_ranges", "1,2");
  mirs_option_set(ctx, "float_check_top", "2");
  mirs_graph *g = NULL;
  mirs_search *s = NULL;
  if (mirs_graph_parse_string(ctx, (const char *)data, size, "fuzz.graph", &g) == MIRS_OK &&
      mirs_search_create(ctx, g, &s) == MIRS_OK && mirs_search_run(s) == MIRS_OK) {
    for (int i = 0; i < mirs_search_num_results(s) && i < 2; i++) {
      mirs_verify_result v;
      if (mirs_verify(ctx, g, mirs_search_result(s, i), &v) == MIRS_OK && !v.fingerprint_equal)
        abort(); /* a reported result is equivalent */
    }
  }
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return 0;
}
