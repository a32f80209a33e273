/* tests/fuzz/fuzz_codegen.c - `codegen` and `show` on any input that
 * parses: the CUDA C generator, the readable summary and the Graphviz
 * output either produce text or refuse with a message; none crashes,
 * hangs or reads out of bounds (the parser's own properties are
 * fuzz_parse's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/show.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mirs_context *ctx = fuzz_ctx();
  if (!ctx)
    return 0;
  mirs_graph *g = NULL;
  if (mirs_graph_parse_string(ctx, (const char *)data, size, "fuzz.ugraph", &g) == MIRS_OK &&
      mirs_graph_validate(g) == MIRS_OK) {
    char *cu = NULL;
    mirs_status st = mirs_codegen_cuda(g, NULL, &cu);
    if (st == MIRS_OK && (!cu || !strstr(cu, "extern \"C\"")))
      abort(); /* generated code always has its C entry point */
    if (st != MIRS_OK && !mirs_last_error(ctx)[0])
      abort(); /* a refusal says why */
    mirs_free(ctx, cu);
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
      (void)mirs__cli_show_summary(sink, ctx, g, 1);
      (void)mirs__cli_show_dot(sink, g);
      fclose(sink);
    }
  }
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return 0;
}
