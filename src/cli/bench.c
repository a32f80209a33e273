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

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

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
