/* SPDX-License-Identifier: MIT */
/* bench/gpufp_bench.c - time the full-shape verification of results, the
 * way the search's final phase runs it (src/search/sink.c): the program's
 * fingerprints once, then N candidates launched (each in its own store;
 * on the GPU each on its own stream, all in flight) and compared with the
 * program, on the CPU and on the GPU backend.  Candidates are the files
 * given, cycled to N (default 16: verify_full_max).
 *
 *   bench/gpufp_bench [-n N] [-b cpu,gpu] PROGRAM.graph CANDIDATE.ugraph...
 *
 * Prints one line per backend: the time of the N verifications (program
 * included, device set-up excluded and shown apart), whether every
 * candidate matched, and the digest of the last candidate's outputs,
 * which must be the same on both backends.  Exit 0 when every backend
 * ran and agreed, 1 otherwise, 77 when asked for the GPU and none is
 * usable.  (docs/GPU.md "GPU verification" records figures.) */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "mirsearch.h"
#include "verify/fingerprint.h"

#define MAX_N 256

/* Verify n candidates (cand[i % nc]) against p on backend b with trials;
 * *all_equal, *digest (of the last), *seconds. */
static mirs_status run(mirs_context *ctx, const mirs__fp_backend *b, const mirs_graph *p,
                       mirs_graph *const *cand, int nc, int n, int trials, bool *all_equal,
                       uint64_t *digest, double *seconds) {
  mirs__fp_store *ref = NULL, *s[MAX_N] = {NULL};
  uint64_t seed = 1;
  double t0 = mirs__core_now();
  mirs_status st = mirs__fp_store_new(ctx, b, trials, seed, &ref);
  if (st == MIRS_OK)
    st = mirs__fp_compute_graph(ref, p);
  for (int i = 0; i < n && st == MIRS_OK; i++) {
    st = mirs__fp_store_new(ctx, b, trials, seed, &s[i]);
    if (st == MIRS_OK)
      st = mirs__fp_compute_graph(s[i], cand[i % nc]);
  }
  *all_equal = true;
  for (int i = 0; i < n && st == MIRS_OK; i++) {
    mirs__fp_verdict v;
    st = mirs__fp_compare_outputs(ref, p, s[i], cand[i % nc], &v);
    if (st == MIRS_OK && !v.equal) {
      *all_equal = false;
      fprintf(stderr, "gpufp_bench: candidate %d differs: %s\n", i, v.why);
    }
    if (st == MIRS_OK && i == n - 1)
      st = mirs__fp_output_digest(s[i], cand[i % nc], digest);
  }
  *seconds = mirs__core_now() - t0;
  mirs__fp_store_free(ref);
  for (int i = 0; i < n; i++)
    mirs__fp_store_free(s[i]);
  return st;
}

int main(int argc, char **argv) {
  int n = 16, a = 1;
  const char *backends = "cpu,gpu";
  for (; a < argc && argv[a][0] == '-'; a++) {
    if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
      n = atoi(argv[++a]);
    else if (strcmp(argv[a], "-b") == 0 && a + 1 < argc)
      backends = argv[++a];
    else
      break;
  }
  if (argc - a < 2 || n < 1 || n > MAX_N) {
    fprintf(stderr, "usage: gpufp_bench [-n N (1..%d)] [-b cpu,gpu] PROGRAM.graph CANDIDATE...\n",
            MAX_N);
    return 2;
  }
  mirs_context *ctx;
  if (mirs_context_create(&ctx) != MIRS_OK)
    return 1;
  mirs_graph *p = NULL, *cand[64];
  int nc = 0;
  if (mirs_graph_parse_file(ctx, argv[a], &p) != MIRS_OK) {
    fprintf(stderr, "gpufp_bench: %s\n", mirs_last_error(ctx));
    return 2;
  }
  uint64_t dp = 0, d = 0;
  mirs__fp_graph_degree(p, &dp);
  for (int i = a + 1; i < argc && nc < 64; i++, nc++) {
    if (mirs_graph_parse_file(ctx, argv[i], &cand[nc]) != MIRS_OK) {
      fprintf(stderr, "gpufp_bench: %s\n", mirs_last_error(ctx));
      return 2;
    }
    uint64_t dc = 0;
    if (mirs__fp_graph_degree(cand[nc], &dc) != MIRS_OK) {
      fprintf(stderr, "gpufp_bench: %s\n", mirs_last_error(ctx));
      return 2;
    }
    if (mirs__fp_degree_add(dp, dc) > d)
      d = mirs__fp_degree_add(dp, dc);
  }
  int trials = mirs__fp_trials_for(d, MIRS__FP_DEFAULT_LOG2_BOUND);
  if (trials < 1) {
    fprintf(stderr, "gpufp_bench: degree %llu has no bound\n", (unsigned long long)d);
    return 2;
  }
  printf("gpufp_bench: %s, %d candidates (%d files), %d trials\n", mirs_graph_name(p), n, nc,
         trials);
  int rc = 0, ran = 0;
  uint64_t first_digest = 0;
  for (int k = 0; k < 2; k++) {
    const char *name = k ? "gpu" : "cpu";
    if (!strstr(backends, name))
      continue;
    const mirs__fp_backend *b = &mirs__fp_cpu_backend;
    char dev[384] = "cpu";
    double setup = 0;
    if (k) {
      /* The device's set-up (module load, CUDA context) apart. */
      double t0 = mirs__core_now();
      mirs_option_set(ctx, "verify", "gpu");
      if (mirs__fp_backend_choose(ctx, &b, dev, sizeof dev) != MIRS_OK) {
        printf("gpu: not usable: %s\n", mirs_last_error(ctx));
        if (!ran)
          rc = 77;
        continue;
      }
      setup = mirs__core_now() - t0;
    }
    bool eq = false;
    uint64_t digest = 0;
    double sec = 0;
    if (run(ctx, b, p, cand, nc, n, trials, &eq, &digest, &sec) != MIRS_OK) {
      printf("%s: failed: %s\n", name, mirs_last_error(ctx));
      rc = 1;
      continue;
    }
    printf("%s: %d full-shape verifications in %.3f s (%.1f ms each; set-up %.3f s) on %s; "
           "all equal: %s; digest %016llx\n",
           name, n, sec, 1e3 * sec / n, setup, dev, eq ? "yes" : "no", (unsigned long long)digest);
    if (ran && digest != first_digest) {
      printf("DIGESTS DIFFER between backends\n");
      rc = 1;
    }
    first_digest = digest;
    ran++;
  }
  mirs_graph_destroy(p);
  for (int i = 0; i < nc; i++)
    mirs_graph_destroy(cand[i]);
  mirs_context_destroy(ctx);
  return rc;
}
