/* tests/fuzz/fuzz_verify.c - mirs_verify on two graphs from one input
 * (program and candidate, split at the first "\n%%\n"): never a crash,
 * and never "equal" without the configured bound. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  size_t cut = size;
  for (size_t i = 0; i + 4 <= size; i++)
    if (!memcmp(text + i, "\n%%\n", 4)) {
      cut = i;
      break;
    }
  if (cut == size)
    return 0;
  mirs_context *ctx = fuzz_ctx();
  if (!ctx)
    return 0;
  mirs_graph *p = NULL, *c = NULL;
  if (mirs_graph_parse_string(ctx, text, cut + 1, "p.graph", &p) == MIRS_OK &&
      mirs_graph_parse_string(ctx, text + cut + 4, size - cut - 4, "c.ugraph", &c) == MIRS_OK) {
    mirs_verify_result v;
    if (mirs_verify(ctx, p, c, &v) == MIRS_OK && v.equal && !(v.log2_bound <= -50.0))
      abort(); /* an equal verdict must meet the stated bound */
  }
  mirs_graph_destroy(p);
  mirs_graph_destroy(c);
  mirs_context_destroy(ctx);
  return 0;
}
