/* SPDX-License-Identifier: MIT */
/* bench/glbtrace.c - record the search tree of a one-worker search with the
 * time spent on every state (src/search/trace.c has the format), for the
 * scaling simulator bench/glbsim.c.  See docs/SCALING.md.
 *
 *   bench/glbtrace [--NAME=VALUE ...] PROGRAM.graph TRACE
 *
 * --NAME=VALUE sets a library option (as mirs_option_set: --time_limit=300;
 * dashes or underscores).  threads is forced to 1.  A search stopped by a
 * limit leaves a partial tree (the states it explored).  Prints one line:
 * states, search seconds, setup seconds (parse and search creation), and
 * the seconds after the search (ranking, float checks) that a run of
 * mirsearch spends too, and adopt_us: the microseconds rank 0 of a
 * distributed search spends taking one result found by another rank
 * (copying its canonical text, adding it to the sink), the mean over this
 * search's results, read_us: reading such a text back (parse, hash),
 * which rank 0 does only for the results it verifies or reports, and
 * text_bytes: the mean length of that text (what each result adds to the
 * outcome a rank sends rank 0). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirsearch/core.h"
#include "mirsearch/graph.h"
#include "mirsearch/search.h"
#include "search/search.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s [--NAME=VALUE ...] PROGRAM.graph TRACE\n", argv[0]);
    return 2;
  }
  double t0 = mirs__core_now();
  mirs_context *ctx;
  if (mirs_context_create(&ctx) != MIRS_OK)
    return 3;
  for (int i = 1; i < argc - 2; i++) {
    char name[128];
    const char *a = argv[i], *eq = strchr(a, '=');
    if (strncmp(a, "--", 2) != 0 || !eq || (size_t)(eq - a - 2) >= sizeof name) {
      fprintf(stderr, "%s: bad option %s (want --NAME=VALUE)\n", argv[0], a);
      return 2;
    }
    memcpy(name, a + 2, (size_t)(eq - a - 2));
    name[eq - a - 2] = 0;
    for (char *c = name; *c; c++)
      if (*c == '-')
        *c = '_';
    if (mirs_option_set(ctx, name, eq + 1) != MIRS_OK) {
      fprintf(stderr, "%s: %s\n", argv[0], mirs_last_error(ctx));
      return 2;
    }
  }
  mirs_graph *g = NULL;
  mirs_search *s = NULL;
  mirs_status st = mirs_option_set(ctx, "threads", "1");
  if (st == MIRS_OK)
    st = mirs_graph_parse_file(ctx, argv[argc - 2], &g);
  if (st == MIRS_OK)
    st = mirs_search_create(ctx, g, &s);
  if (st == MIRS_OK)
    st = mirs__trace_start(s, argv[argc - 1]);
  double t1 = mirs__core_now();
  if (st == MIRS_OK)
    st = mirs_search_run(s);
  double t2 = mirs__core_now();
  bool ok = s ? mirs__trace_end(s) : true;
  if (st != MIRS_OK || !ok) {
    fprintf(stderr, "%s: %s\n", argv[0], ok ? mirs_last_error(ctx) : "writing the trace failed");
    return 3;
  }
  mirs_search_stats ss;
  memset(&ss, 0, sizeof ss);
  mirs_search_get_stats_sized(s, &ss, sizeof ss);
  int nres = mirs_search_num_results(s);
  /* What rank 0 of a distributed search pays per result another rank
   * found (dist.c's merge_outcome): copying its canonical text, if it was
   * sent, and adopting it into the sink (mirs__sink_adopt: a new hash, its
   * path); the text is read back only for the results reported.
   * Measured on this search's results under fresh hashes, 20 rounds;
   * read_us is what reading one back costs (parse and hash). */
  double adopt = 0, readback = 0, tbytes = 0;
  size_t nadopt = 0;
  size_t nr = mirs__sink_nresults(s);
  /* (dist.c sends no text for a result matched on a reduced instance, and
   * a search that reduces the program matches them all: rank 0 re-finds
   * the few it verifies at their paths.) */
  bool sent = s->reduce_tile <= 0 || s->ctx->opt.verify_full_max < 0;
  /* Each result's text and path, once; the rounds then go over all the
   * results in turn, as rank 0 takes one rank's results after another. */
  char **texts = calloc(nr ? nr : 1, sizeof *texts);
  uint32_t(*paths)[64] = calloc(nr ? nr : 1, sizeof *paths);
  int32_t *lens = calloc(nr ? nr : 1, sizeof *lens);
  if (!texts || !paths || !lens)
    st = MIRS_NOMEM;
  for (size_t i = 0; i < nr && st == MIRS_OK; i++) {
    st = mirs_graph_to_string(mirs__sink_result(s, i)->g, &texts[i]);
    for (size_t e = 0; e < mirs__sink_nentries(s); e++) {
      mirs__sink_view v;
      mirs__sink_entry_view(s, e, &v);
      if (v.res == mirs__sink_result(s, i) && v.plen <= 64) {
        lens[i] = v.plen;
        memcpy(paths[i], v.path, sizeof *paths[i] * (size_t)lens[i]);
      }
    }
  }
  for (int round = 0; round < 20 && st == MIRS_OK; round++)
    for (size_t i = 0; i < nr && st == MIRS_OK; i++) {
      size_t tl = strlen(texts[i]);
      tbytes += sent ? (double)tl : 0.0;
      double a0 = mirs__core_now();
      mirs__search_result r = (*mirs__sink_result(s, i));
      r.g = NULL;
      r.text = NULL;
      r.tlen = 0;
      r.hash = (*mirs__sink_result(s, i)).hash ^ (UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(round + 1));
      if (sent) {
        r.text = mirs__core_alloc(s->ctx, tl + 1);
        if (!r.text) {
          st = MIRS_NOMEM;
          break;
        }
        memcpy(r.text, texts[i], tl + 1);
        r.tlen = tl;
      }
      st = mirs__sink_adopt(s, r.hash, paths[i], lens[i], 0, &r);
      double a1 = mirs__core_now();
      adopt += a1 - a0;
      mirs_graph *back = NULL;
      if (st == MIRS_OK)
        st = mirs_graph_parse_string(ctx, texts[i], tl, "result", &back);
      if (st == MIRS_OK && mirs_graph_hash(back) != (*mirs__sink_result(s, i)).hash)
        st = MIRS_INTERNAL;
      readback += mirs__core_now() - a1;
      nadopt++;
      mirs_graph_destroy(back);
    }
  for (size_t i = 0; texts && i < nr; i++)
    mirs_free(ctx, texts[i]);
  free(texts);
  free(paths);
  free(lens);
  if (st != MIRS_OK) {
    fprintf(stderr, "%s: adopting a result: %s\n", argv[0], mirs_last_error(ctx));
    return 3;
  }
  printf("states %llu results %d complete %d setup_s %.3f run_s %.3f search_wall_s %.3f "
         "adopt_us %.2f read_us %.1f text_bytes %.0f\n",
         (unsigned long long)ss.states_explored, nres, !mirs_search_stopped(s), t1 - t0, t2 - t1,
         ss.wall_seconds, nadopt ? adopt / (double)nadopt * 1e6 : 0.0,
         nadopt ? readback / (double)nadopt * 1e6 : 0.0, nadopt ? tbytes / (double)nadopt : 0.0);
  mirs_search_destroy(s);
  mirs_graph_destroy(g);
  mirs_context_destroy(ctx);
  return 0;
}
