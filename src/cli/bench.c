/* SPDX-License-Identifier: MIT */
/* src/cli/bench.c - `mirsearch bench`: the table or JSON of one timing run
 * (docs/GPU.md).  The measuring is the library's (mirs_codegen_bench);
 * this file turns its result into text: per configuration the median,
 * p10 and p90 in microseconds, the share of the HBM roofline (the
 * program's fewest bytes over the profile's bandwidth, over the median)
 * and of the matmul peak, and the speedup over the unfused program.
 *
 * Invariants: output goes to `out` only after the run succeeded; a run
 * whose check failed prints the errors and nothing timed, exit 1. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "mirsearch.h"

#define PROG "mirsearch"

/* Write s as a JSON string. */
static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(o, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(o, "\\u%04x", ch);
    else
      fputc(ch, o);
  }
  fputc('"', o);
}

/* A finite number as JSON, else null. */
static void json_num(FILE *o, double v) {
  if (isfinite(v))
    fprintf(o, "%.9g", v);
  else
    fputs("null", o);
}

/* Share (percent) of an ideal time in a measured median. */
static double share(double ideal_s, const mirs_bench_timing *t) {
  return t->reps > 0 && t->median_us > 0 ? 100.0 * ideal_s / (t->median_us * 1e-6) : NAN;
}

/* One configuration as a JSON object. */
static void json_config(FILE *o, const char *name, int graph, const mirs_bench_timing *t,
                        const mirs_bench_result *r, int first) {
  fprintf(o, "%s\n    {\"name\": ", first ? "" : ",");
  json_str(o, name);
  fprintf(o, ", \"cuda_graph\": %s, \"reps\": %d, \"median_us\": ", graph ? "true" : "false",
          t->reps);
  json_num(o, t->median_us);
  fputs(", \"p10_us\": ", o);
  json_num(o, t->p10_us);
  fputs(", \"p90_us\": ", o);
  json_num(o, t->p90_us);
  fputs(", \"min_us\": ", o);
  json_num(o, t->min_us);
  fputs(", \"mean_us\": ", o);
  json_num(o, t->mean_us);
  fputs(", \"hbm_roofline_pct\": ", o);
  json_num(o, share(r->bytes / r->hbm_bytes_per_s, t));
  fputs(", \"matmul_peak_pct\": ", o);
  json_num(o, r->flops > 0 ? share(r->flops / r->tc_flops_per_s, t) : NAN);
  fputc('}', o);
}

/* The speedup of the candidate over the baseline in one mode (NAN if untimed). */
static double speedup(const mirs_bench_timing *cand, const mirs_bench_timing *base) {
  return cand->reps > 0 && base->reps > 0 && cand->median_us > 0 ? base->median_us / cand->median_us
                                                                 : NAN;
}

/* The whole result as JSON. */
static void print_json(FILE *o, const mirs_bench_result *r, const char *cand_path,
                       const char *prog_path) {
  fputs("{\n  \"candidate\": ", o);
  json_str(o, cand_path);
  fputs(",\n  \"program\": ", o);
  if (prog_path)
    json_str(o, prog_path);
  else
    fputs("null", o);
  fputs(",\n  \"device\": ", o);
  json_str(o, r->device);
  fputs(",\n  \"profile\": ", o);
  json_str(o, r->profile);
  fprintf(o, ",\n  \"sms\": %d,\n  \"l2_bytes\": %.0f,\n  \"flush_bytes\": %.0f,", r->sms,
          r->l2_bytes, r->flush_bytes);
  fprintf(o, "\n  \"checked\": %s,\n  \"baseline_checked\": %s,\n  \"tolerance\": ",
          r->checked ? "true" : "false", r->baseline_checked ? "true" : "false");
  json_num(o, r->tolerance);
  fputs(",\n  \"candidate_error\": ", o);
  json_num(o, r->candidate_error);
  fputs(",\n  \"baseline_error\": ", o);
  json_num(o, r->has_baseline ? r->baseline_error : NAN);
  fprintf(o, ",\n  \"baseline_cublas_calls\": %d,\n  \"baseline_kernels\": %d,",
          r->baseline_cublas_calls, r->baseline_kernels);
  fputs("\n  \"bytes\": ", o);
  json_num(o, r->bytes);
  fputs(",\n  \"flops\": ", o);
  json_num(o, r->flops);
  fputs(",\n  \"hbm_bytes_per_s\": ", o);
  json_num(o, r->hbm_bytes_per_s);
  fputs(",\n  \"matmul_peak_flops_per_s\": ", o);
  json_num(o, r->tc_flops_per_s);
  fputs(",\n  \"configurations\": [", o);
  int first = 1;
  const struct {
    const char *name;
    int graph;
    const mirs_bench_timing *t;
  } rows[] = {{"candidate", 0, &r->candidate},
              {"unfused", 0, &r->baseline},
              {"candidate", 1, &r->candidate_graph},
              {"unfused", 1, &r->baseline_graph}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].t->reps > 0) {
      json_config(o, rows[i].name, rows[i].graph, rows[i].t, r, first);
      first = 0;
    }
  fputs("\n  ],\n  \"speedup\": ", o);
  json_num(o, speedup(&r->candidate, &r->baseline));
  fputs(",\n  \"speedup_cuda_graph\": ", o);
  json_num(o, speedup(&r->candidate_graph, &r->baseline_graph));
  fputs("\n}\n", o);
}

/* One table row. */
static void print_row(FILE *o, const char *name, const mirs_bench_timing *t,
                      const mirs_bench_result *r) {
  if (t->reps < 1)
    return;
  double hbm = share(r->bytes / r->hbm_bytes_per_s, t);
  double mm = r->flops > 0 ? share(r->flops / r->tc_flops_per_s, t) : NAN;
  fprintf(o, "%-26s %5d %10.3f %10.3f %10.3f %9.1f%% ", name, t->reps, t->median_us, t->p10_us,
          t->p90_us, hbm);
  if (isfinite(mm))
    fprintf(o, "%9.1f%%\n", mm);
  else
    fputs("        -\n", o);
}

/* The result as a table. */
static void print_table(FILE *o, const mirs_bench_result *r, const char *cand_path) {
  fprintf(o, "bench %s on %s (%d SMs, L2 %.1f MB, %.1f MB written before each run; profile %s)\n",
          cand_path, r->device, r->sms, r->l2_bytes / 1e6, r->flush_bytes / 1e6, r->profile);
  fprintf(o, "check: candidate max relative error %.3e", r->candidate_error);
  if (r->has_baseline)
    fprintf(o, ", unfused %.3e", r->baseline_error);
  fprintf(o, " (tolerance %g)\n", r->tolerance);
  if (r->has_baseline && !r->baseline_checked)
    fprintf(o,
            "warning: the unfused program's outputs are beyond tolerance (its own %s "
            "intermediates overflow, or a baseline bug): timed anyway, flagged\n",
            "f16/bf16");
  fprintf(o, "roofline: %.0f bytes at %.0f GB/s, %.4g matmul flops at %.1f TFLOP/s\n", r->bytes,
          r->hbm_bytes_per_s / 1e9, r->flops, r->tc_flops_per_s / 1e12);
  fprintf(o, "%-26s %5s %10s %10s %10s %10s %10s\n", "configuration", "runs", "median us", "p10 us",
          "p90 us", "HBM roof", "mm peak");
  char base[64];
  snprintf(base, sizeof base, "unfused (%d cuBLAS, %d k)", r->baseline_cublas_calls,
           r->baseline_kernels);
  print_row(o, "candidate", &r->candidate, r);
  print_row(o, base, &r->baseline, r);
  print_row(o, "candidate, CUDA graph", &r->candidate_graph, r);
  print_row(o, "unfused, CUDA graph", &r->baseline_graph, r);
  double s = speedup(&r->candidate, &r->baseline),
         sg = speedup(&r->candidate_graph, &r->baseline_graph);
  if (isfinite(s)) {
    fprintf(o, "speedup over unfused: %.2fx", s);
    if (isfinite(sg))
      fprintf(o, " (CUDA graphs: %.2fx)", sg);
    fputc('\n', o);
  }
}

/* See bench.h. */
int mirs__cli_bench(mirs_context *ctx, FILE *out, FILE *err, const mirs_graph *candidate,
                    const mirs_graph *program, const char *cand_path, const char *prog_path,
                    const char *source_dir, int json) {
  mirs_status s;
  if (source_dir) {
    s = mirs_codegen_bench_sources(candidate, program, source_dir);
    if (s == MIRS_OK) {
      fprintf(out,
              "wrote %s/bench.cu (build: nvcc -std=c++17 -O2 -arch=sm_90 -I%s %s/bench.cu -o bench "
              "-lcublas)\n",
              source_dir, source_dir, source_dir);
      return 0;
    }
  } else {
    int64_t seed = 0;
    s = mirs_option_get_int(ctx, "seed", &seed);
    mirs_bench_result r = MIRS_BENCH_RESULT_INIT;
    if (s == MIRS_OK)
      s = mirs_codegen_bench(candidate, program, (uint64_t)seed, &r);
    if (s == MIRS_OK && !r.checked) {
      fprintf(err,
              PROG ": error: %s: nothing timed: the candidate's max relative error vs the "
                   "float64 interpreter is %.3e (tolerance %g)\n",
              cand_path, r.candidate_error, r.tolerance);
      return 1;
    }
    if (s == MIRS_OK) {
      if (json)
        print_json(out, &r, cand_path, prog_path);
      else
        print_table(out, &r, cand_path);
      return 0;
    }
  }
  const char *msg = mirs_last_error(ctx);
  fprintf(err, PROG ": error: %s\n", msg[0] ? msg : mirs_status_str(s));
  int code = mirs_status_exit_code(s);
  return code == 0 ? 3 : code;
}

/* See bench.h. */
int mirs__cli_calibrate(mirs_context *ctx, FILE *out, FILE *err, const char *path,
                        const char *source_dir) {
  mirs_status s = mirs_codegen_calibrate(ctx, path, source_dir);
  if (s == MIRS_OK) {
    if (source_dir)
      fprintf(out,
              "wrote %s/calibrate.cu (build: nvcc -std=c++17 -O2 -arch=sm_90 %s/calibrate.cu "
              "-o calibrate -lcublas)\n",
              source_dir, source_dir);
    else
      fprintf(out, "wrote the measured device profile %s (use: --device-profile=%s)\n", path, path);
    return 0;
  }
  const char *msg = mirs_last_error(ctx);
  fprintf(err, PROG ": error: %s\n", msg[0] ? msg : mirs_status_str(s));
  int code = mirs_status_exit_code(s);
  return code == 0 ? 3 : code;
}

/* ---------------------------------------------------------------- measured ranking */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of the .ugraph files in DIR/candidates (at most cap). */
static int list_candidates(const char *dir, char **names, int cap) {
  char path[4200];
  snprintf(path, sizeof path, "%s/candidates", dir);
  DIR *d = opendir(path);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < cap) {
    size_t len = strlen(e->d_name);
    if (len > 7 && strcmp(e->d_name + len - 7, ".ugraph") == 0 && len < 250)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  return n;
}

/* measured.json: each row's predicted and measured time, the correlation. */
static char *rank_json(const mirs_bench_result *r, char *const *files,
                       const mirs_rank_entry *rows, char *const *errors, int n, int best,
                       double rho) {
  char *text = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&text, &len);
  if (!o)
    return NULL;
  fputs("{\n  \"times\": \"measured\",\n  \"device\": ", o);
  json_str(o, r->device);
  fprintf(o, ",\n  \"reps\": %d,\n  \"rank_correlation\": ", r->candidate.reps);
  json_num(o, rho);
  fputs(",\n  \"best\": ", o);
  if (best >= 0)
    json_str(o, files[best]);
  else
    fputs("null", o);
  fputs(",\n  \"results\": [", o);
  for (int i = 0; i < n; i++) {
    fprintf(o, "%s\n    {\"model_rank\": %d, \"file\": ", i ? "," : "", i + 1);
    json_str(o, files[i]);
    fputs(", \"predicted_seconds\": ", o);
    json_num(o, rows[i].predicted_seconds);
    fputs(", \"measured_seconds\": ", o);
    json_num(o, rows[i].median_us * 1e-6);
    fputs(", \"measured_p10_seconds\": ", o);
    json_num(o, rows[i].p10_us * 1e-6);
    fputs(", \"measured_p90_seconds\": ", o);
    json_num(o, rows[i].p90_us * 1e-6);
    fprintf(o, ", \"checked\": %s", rows[i].checked ? "true" : "false");
    if (errors[i]) { /* its harness failed: not checked, not timed */
      fputs(", \"error\": ", o);
      json_str(o, errors[i]);
    }
    fputs("}", o);
  }
  fputs("\n  ]\n}\n", o);
  if (fclose(o) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* bench --rank's outputs: DIR/measured.json, DIR/best_measured.ugraph
 * (removed where nothing was timed: an earlier ranking's is not left)
 * and the table on out.  The exit status (3: a file not written). */
static int rank_outputs(mirs_context *ctx, FILE *out, FILE *err, const char *dir,
                        const mirs_bench_result *r, char *const *files,
                        const mirs_graph *const *cands, const mirs_rank_entry *rows,
                        char *const *errors, int n, int best, double rho) {
  char *json = rank_json(r, files, rows, errors, n, best, rho);
  char path[4200];
  snprintf(path, sizeof path, "%s/measured.json", dir);
  if (!json || mirs_write_file_atomic(ctx, path, json, strlen(json)) != MIRS_OK) {
    free(json);
    fprintf(err, PROG ": error: cannot write %s\n", path);
    return 3;
  }
  free(json);
  snprintf(path, sizeof path, "%s/best_measured.ugraph", dir);
  if (best < 0 && unlink(path) != 0 && errno != ENOENT) {
    fprintf(err, PROG ": error: cannot remove %s: %s\n", path, strerror(errno));
    return 3;
  }
  if (best >= 0 && mirs_graph_write_file(cands[best], path) != MIRS_OK) {
    fprintf(err, PROG ": error: cannot write %s: %s\n", path, mirs_last_error(ctx));
    return 3;
  }
  fprintf(out, "ranking %s on %s: the model's top %d, timed (median of %d runs, L2 flushed)\n",
          dir, r->device, n, r->candidate.reps);
  fprintf(out, "%-36s %12s %12s %10s %10s\n", "result", "predicted us", "measured us",
          "model rank", "meas. rank");
  for (int i = 0; i < n; i++)
    fprintf(out, "%-36s %12.3f %12.3f %10.1f %10.1f%s\n", files[i],
            rows[i].predicted_seconds * 1e6, rows[i].median_us, rows[i].rank_model,
            rows[i].rank_measured,
            errors[i]         ? "  (its harness failed: not timed)"
            : rows[i].checked ? ""
                              : "  (wrong: not timed)");
  fprintf(out, "rank correlation (Spearman): %.3f\n", rho);
  if (best >= 0)
    fprintf(out, "measured best: %s -> %s/best_measured.ugraph; %s/measured.json\n", files[best],
            dir, dir);
  return 0;
}

/* See bench.h. */
int mirs__cli_rank(mirs_context *ctx, FILE *out, FILE *err, const char *dir, long top) {
  enum { MAXC = 256 };
  char *names[MAXC], *files[MAXC];
  const mirs_graph *cands[MAXC];
  mirs_graph *owned[MAXC];
  int k = top > 0 && top < MAXC ? (int)top : 16;
  int n = list_candidates(dir, names, MAXC);
  if (n <= 0) {
    fprintf(err,
            PROG ": error: %s/candidates: no candidate µGraphs (a search's output directory?)\n",
            dir);
    return 2;
  }
  if (n > k) {
    for (int i = k; i < n; i++)
      free(names[i]);
    n = k;
  }
  mirs_rank_entry rows[MAXC];
  char *errors[MAXC] = {NULL};
  int64_t seed = 1;
  (void)mirs_option_get_int(ctx, "seed", &seed);
  int rc = 0, loaded = 0;
  for (int i = 0; i < n; i++)
    files[i] = NULL;
  for (int i = 0; rc == 0 && i < n; i++) {
    char path[4500];
    size_t len = strlen("candidates/") + strlen(names[i]) + 1;
    files[i] = malloc(len);
    if (!files[i]) {
      rc = 3;
      break;
    }
    snprintf(files[i], len, "candidates/%s", names[i]);
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    mirs_graph *g = NULL;
    mirs_cost c = MIRS_COST_INIT;
    mirs_status s = mirs_graph_parse_file(ctx, path, &g);
    if (s == MIRS_OK)
      s = mirs_graph_cost(ctx, g, NULL, &c);
    if (g)
      owned[loaded++] = g;
    if (s != MIRS_OK) {
      const char *msg = mirs_last_error(ctx);
      fprintf(err, PROG ": error: %s: %s\n", path, msg[0] ? msg : mirs_status_str(s));
      rc = mirs_status_exit_code(s);
      rc = rc == 0 ? 3 : rc;
      break;
    }
    cands[i] = g;
    rows[i].predicted_seconds = c.seconds;
  }
  int best = -1;
  double rho = NAN;
  mirs_bench_result r = MIRS_BENCH_RESULT_INIT;
  if (rc == 0) {
    mirs_status s =
        mirs_codegen_rank_all(cands, n, NULL, (uint64_t)seed, rows, &best, &rho, &r, errors);
    if (s != MIRS_OK) {
      const char *msg = mirs_last_error(ctx);
      fprintf(err, PROG ": error: %s: %s\n", dir, msg[0] ? msg : mirs_status_str(s));
      rc = mirs_status_exit_code(s);
      rc = rc == 0 ? 3 : rc;
    }
  }
  if (rc == 0)
    rc = rank_outputs(ctx, out, err, dir, &r, files, cands, rows, errors, n, best, rho);
  /* A candidate whose harness failed is the generator's defect: each
   * one said, and the exit status is not 0, though the others were
   * ranked and the files written. */
  for (int i = 0; i < n; i++)
    if (errors[i]) {
      fprintf(err, PROG ": error: %s/%s: %s\n", dir, files[i], errors[i]);
      rc = rc == 0 ? 3 : rc;
    }
  for (int i = 0; i < n; i++)
    mirs_free(ctx, errors[i]);
  for (int i = 0; i < loaded; i++)
    mirs_graph_destroy(owned[i]);
  for (int i = 0; i < n; i++) {
    free(names[i]);
    free(files[i]);
  }
  return rc;
}
