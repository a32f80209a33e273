/* tests/fuzz/fuzz_checkpoint.c - reading checkpoints: any bytes given as
 * DIR/checkpoint are refused with a message naming the file, or load (the
 * program, the options) and resume into a search that then runs a few
 * states without crashing.  An input that starts with the MIRSCKPT magic
 * gets its header's length and its trailing checksum recomputed first, so
 * mutations reach the payload's parser instead of all failing the
 * checksum (the seed corpus: real checkpoints of small searches, made
 * with fuzz_ctx's limits so their options match). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

/* The library's byte hash (core.h), which the checkpoint checksum uses. */
uint64_t mirs__hash_bytes(uint64_t h, const void *data, size_t len);

/* Make the envelope of a magic-led input consistent (length, checksum). */
static void fix_envelope(uint8_t *d, size_t n) {
  if (n < 40 || memcmp(d, "MIRSCKPT", 8) != 0)
    return;
  uint64_t L = (uint64_t)(n - 40);
  for (int k = 0; k < 8; k++)
    d[16 + k] = (uint8_t)(L >> (8 * k));
  uint64_t sum = mirs__hash_bytes(UINT64_C(0x6d697273636b7074), d, n - 8);
  for (int k = 0; k < 8; k++)
    d[n - 8 + k] = (uint8_t)(sum >> (8 * k));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/mirs_fuzz_ckpt.%ld", (long)getpid());
  uint8_t *copy = malloc(size + 1);
  if (!copy)
    return 0;
  memcpy(copy, data, size);
  fix_envelope(copy, size);
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(copy);
    return 0;
  }
  fwrite(copy, 1, size, f);
  fclose(f);
  free(copy);
  mirs_context *ctx = fuzz_ctx();
  mirs_graph *p = NULL;
  mirs_search *s = NULL;
  if (ctx) {
    mirs_status st = mirs_checkpoint_load_program(ctx, path, &p);
    if (st != MIRS_OK && !strstr(mirs_last_error(ctx), path))
      abort(); /* a refused checkpoint is named */
    mirs_option_set(ctx, "max_states", "50");
    mirs_option_set(ctx, "time_limit", "2");
    mirs_option_set(ctx, "threads", "1");
    if (st == MIRS_OK && mirs_search_create(ctx, p, &s) == MIRS_OK) {
      st = mirs_search_resume(s, path);
      if (st != MIRS_OK && st != MIRS_STOPPED && !strstr(mirs_last_error(ctx), path))
        abort();
      if (st == MIRS_OK)
        (void)mirs_search_run(s);
    }
  }
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  mirs_context_destroy(ctx);
  unlink(path);
  return 0;
}
