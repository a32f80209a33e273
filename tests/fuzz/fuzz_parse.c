/* tests/fuzz/fuzz_parse.c - the .graph / µGraph parser: any bytes parse
 * or fail with a diagnostic; what parses prints, re-parses to the same
 * text (the round-trip contract), validates and evaluates in bounds. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mirs_context *ctx = fuzz_ctx();
  if (!ctx)
    return 0;
  mirs_graph *g = NULL;
  if (mirs_graph_parse_string(ctx, (const char *)data, size, "fuzz.graph", &g) == MIRS_OK) {
    char *text = NULL, *again = NULL;
    mirs_graph *back = NULL;
    if (mirs_graph_to_string(g, &text) == MIRS_OK &&
        mirs_graph_parse_string(ctx, text, strlen(text), "canon.graph", &back) == MIRS_OK &&
        mirs_graph_to_string(back, &again) == MIRS_OK && strcmp(text, again) != 0)
      abort(); /* the canonical form must read back to itself */
    if (text && !back)
      abort(); /* what mirsearch writes, it reads back */
    mirs_free(ctx, text);
    mirs_free(ctx, again);
    mirs_graph_destroy(back);
    mirs_eval_result *r = NULL;
    if (mirs_graph_validate(g) == MIRS_OK && mirs_graph_eval(g, 1, &r) == MIRS_OK)
      mirs_eval_result_destroy(r);
  }
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return 0;
}
