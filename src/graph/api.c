/* SPDX-License-Identifier: MIT */
/* src/graph/api.c - the public graph API (mirsearch/graph.h) on top of the
 * internal builder, parser, printer, hash and interpreter.
 *
 * This layer only checks arguments (misuse is reported, never crashed
 * on), converts between public and internal forms and owns the eval
 * result object; the work happens in the internal modules. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* Create an empty program. */
mirs_status mirs_graph_create(mirs_context *ctx, const char *name, mirs_graph **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_create: NULL out");
  *out = NULL;
  if (name && !mirs__graph_valid_name(name))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "mirs_graph_create: '%.64s%s' is not a valid program name (want "
                     "[A-Za-z_][A-Za-z0-9_]*, at most %d bytes, not a keyword)",
                     name, strlen(name) > 64 ? "..." : "", MIRS__NAME_MAX);
  MIRS_CHECK(ctx, mirs__graph_new(ctx, name, out));
  return MIRS_OK;
}

/* Destroy a graph. */
void mirs_graph_destroy(mirs_graph *g) {
  mirs__graph_free(g);
}

/* Add an input tensor. */
mirs_status mirs_graph_add_input(mirs_graph *g, const char *name, mirs_dtype dtype, int ndim,
                                 const int64_t *dims, mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  if (ndim < 1 || ndim > MIRS_MAX_DIMS || !dims)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG,
                     "mirs_graph_add_input: rank must be 1 to %d with a dims array", MIRS_MAX_DIMS);
  mirs__shape s = {.ndim = ndim};
  memcpy(s.d, dims, sizeof(int64_t) * (size_t)ndim);
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_input(g, name, dtype, &s, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Add a predefined kernel op. */
mirs_status mirs_graph_add_op(mirs_graph *g, const char *name, mirs_op op, int ninputs,
                              const mirs_tensor *inputs, mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  if ((unsigned)op < MIRS_OP_COUNT && mirs__op_has_dim(op))
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG,
                     "use mirs_graph_add_reduce for %s (it needs a dim)", mirs_op_name(op));
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_op(g, name, op, ninputs, inputs, -1, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Add a layout operator (reshape, permute) with its dims. */
mirs_status mirs_graph_add_layout(mirs_graph *g, const char *name, mirs_op op, mirs_tensor x,
                                  int ndims, const int64_t *dims, mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  if (!mirs__op_is_layout(op))
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG,
                     "mirs_graph_add_layout: %s is not reshape, permute or slice",
                     mirs_op_name(op) ? mirs_op_name(op) : "?");
  if (ndims < 1 || ndims > MIRS_MAX_DIMS || !dims)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "%s: needs 1 to %d dims, got %d", mirs_op_name(op),
                     MIRS_MAX_DIMS, ndims);
  mirs__shape lay = {.ndim = ndims};
  memcpy(lay.d, dims, sizeof(int64_t) * (size_t)ndims);
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_layout(g, name, op, x, &lay, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Add an operator with constants (decimal text, read exactly). */
mirs_status mirs_graph_add_const_op(mirs_graph *g, const char *name, mirs_op op, mirs_tensor x,
                                    int nconstants, const char *const *constants,
                                    mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  int n = (unsigned)op < MIRS_OP_COUNT ? mirs__op_nconst(op) : 0;
  if (n == 0)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_add_const_op: %s takes no constants",
                     (unsigned)op < MIRS_OP_COUNT ? mirs_op_name(op) : "?");
  if (nconstants != n || !constants)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "%s takes %d constant%s, got %d", mirs_op_name(op),
                     n, n == 1 ? "" : "s", nconstants);
  mirs__scalar c[2];
  for (int i = 0; i < n; i++) {
    const char *t = constants[i] ? constants[i] : "";
    int r = mirs__scalar_parse(t, strlen(t), &c[i]);
    if (r != 0)
      return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "%s: constant '%.60s' is %s", mirs_op_name(op), t,
                       r == 1   ? "longer than 18 significant digits"
                       : r == 2 ? "out of range"
                                : "not a decimal number");
  }
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_op_c(g, name, op, 1, &x, -1, c, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Add sum(x, dim). */
mirs_status mirs_graph_add_sum(mirs_graph *g, const char *name, mirs_tensor x, int dim,
                               mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_op(g, name, MIRS_OP_SUM, 1, &x, dim, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Add op(x, dim) for a reduction op. */
mirs_status mirs_graph_add_reduce(mirs_graph *g, const char *name, mirs_op op, mirs_tensor x,
                                  int dim, mirs_tensor *out) {
  if (!g)
    return MIRS_INVALID_ARG;
  if ((unsigned)op >= MIRS_OP_COUNT || mirs__graph_ops[op].kind != MIRS__KIND_REDUCE)
    return MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_add_reduce: %s is not a reduction",
                     mirs_op_name(op) ? mirs_op_name(op) : "?");
  int32_t id;
  MIRS_CHECK(g->ctx, mirs__graph_add_op(g, name, op, 1, &x, dim, &id));
  if (out)
    *out = id;
  return MIRS_OK;
}

/* Mark an output. */
mirs_status mirs_graph_mark_output(mirs_graph *g, mirs_tensor t) {
  if (!g)
    return MIRS_INVALID_ARG;
  MIRS_CHECK(g->ctx, mirs__graph_mark_output(g, t));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- queries */

const char *mirs_graph_name(const mirs_graph *g) {
  return g ? g->name : NULL;
}

int mirs_graph_num_tensors(const mirs_graph *g) {
  return g ? g->nt : 0;
}

int mirs_graph_num_outputs(const mirs_graph *g) {
  return g ? g->nout : 0;
}

mirs_tensor mirs_graph_output(const mirs_graph *g, int index) {
  return g && index >= 0 && index < g->nout ? g->outputs[index] : -1;
}

int mirs_graph_num_ops(const mirs_graph *g) {
  return g ? g->nops : 0;
}

/* Number of custom kernels. */
int mirs_graph_num_custom(const mirs_graph *g) {
  int n = 0;
  for (int32_t i = 0; g && i < g->nops; i++)
    n += g->ops[i].op == MIRS_OP_CUSTOM;
  return n;
}

mirs_tensor mirs_graph_find(const mirs_graph *g, const char *name) {
  return g && name ? mirs__graph_find(g, name) : -1;
}

const char *mirs_tensor_name(const mirs_graph *g, mirs_tensor t) {
  return g && t >= 0 && t < g->nt ? g->t[t].name : NULL;
}

mirs_dtype mirs_tensor_dtype(const mirs_graph *g, mirs_tensor t) {
  return g && t >= 0 && t < g->nt ? g->t[t].dtype : MIRS_F16;
}

/* Rank and dims of t. */
int mirs_tensor_shape(const mirs_graph *g, mirs_tensor t, int64_t dims[MIRS_MAX_DIMS]) {
  if (!g || t < 0 || t >= g->nt)
    return 0;
  const mirs__shape *s = &g->t[t].shape;
  if (dims)
    memcpy(dims, s->d, sizeof(int64_t) * (size_t)s->ndim);
  return s->ndim;
}

/* ---------------------------------------------------------------- text */

/* Parse text in memory. */
mirs_status mirs_graph_parse_string(mirs_context *ctx, const char *text, size_t len,
                                    const char *filename, mirs_graph **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!out || (!text && len))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_parse_string: NULL argument");
  *out = NULL;
  if (len > MIRS__MAX_FILE_BYTES)
    return MIRS_FAIL(ctx, MIRS_LIMIT, "%s: more than %d MiB; not a graph file",
                     filename ? filename : "<string>", MIRS__MAX_FILE_BYTES >> 20);
  MIRS_CHECK(ctx, mirs__graph_parse(ctx, text ? text : "", len, filename ? filename : "<string>",
                                    out));
  return MIRS_OK;
}

/* Parse a file. */
mirs_status mirs_graph_parse_file(mirs_context *ctx, const char *path, mirs_graph **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!out || !path)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_parse_file: NULL argument");
  *out = NULL;
  mirs__core_diag_clear(ctx);
  char *text;
  size_t len;
  mirs_status s = mirs__core_read_file(ctx, path, &text, &len);
  if (s != MIRS_OK) {
    /* Report as a diagnostic without position, keeping the error. */
    char msg[MIRS__ERRMSG_SIZE];
    memcpy(msg, ctx->err_msg, sizeof msg);
    const char *m = msg;
    size_t pl = strlen(path);
    if (!strncmp(m, path, pl) && !strncmp(m + pl, ": ", 2))
      m += pl + 2;
    mirs__core_diag(ctx, path, 0, 0, "%s", m);
    return mirs__core_trace(ctx, s, __func__, __FILE__, __LINE__);
  }
  s = mirs__graph_parse(ctx, text, len, path, out);
  mirs__core_free(ctx, text);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}

/* Print canonical text to f. */
mirs_status mirs_graph_print(const mirs_graph *g, FILE *f) {
  if (!g || !f)
    return g ? MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_print: NULL file") : MIRS_INVALID_ARG;
  mirs__buf b;
  mirs__buf_init(&b, g->ctx);
  mirs__graph_print(g, &b);
  if (b.failed) {
    mirs__buf_free(&b);
    return MIRS_NOMEM;
  }
  size_t len = b.len;
  size_t n = len ? fwrite(b.data, 1, len, f) : 0;
  mirs__buf_free(&b); /* resets b.len: compare with the length kept above */
  if (n != len || ferror(f))
    return MIRS_FAIL(g->ctx, MIRS_IO, "write error while printing graph");
  return MIRS_OK;
}

/* Canonical text in a string from the context's allocator. */
mirs_status mirs_graph_to_string(const mirs_graph *g, char **out) {
  if (!g || !out)
    return g ? MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_to_string: NULL out")
             : MIRS_INVALID_ARG;
  *out = NULL;
  mirs__buf b;
  mirs__buf_init(&b, g->ctx);
  mirs__graph_print(g, &b);
  if (b.failed) {
    mirs__buf_free(&b);
    return MIRS_NOMEM;
  }
  /* The buffer already comes from the context allocator, NUL-terminated. */
  if (!b.data) {
    b.data = mirs__core_calloc(g->ctx, 1, 1);
    if (!b.data)
      return MIRS_NOMEM;
  }
  *out = b.data;
  return MIRS_OK;
}

/* Write canonical text to path atomically. */
mirs_status mirs_graph_write_file(const mirs_graph *g, const char *path) {
  if (!g || !path)
    return g ? MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "mirs_graph_write_file: NULL path")
             : MIRS_INVALID_ARG;
  mirs__buf b;
  mirs__buf_init(&b, g->ctx);
  mirs__graph_print(g, &b);
  mirs_status s = b.failed ? MIRS_NOMEM : mirs__core_write_atomic(g->ctx, path, b.data, b.len);
  mirs__buf_free(&b);
  MIRS_CHECK(g->ctx, s);
  return MIRS_OK;
}

/* Canonical hash. */
uint64_t mirs_graph_hash(const mirs_graph *g) {
  return g ? mirs__graph_hash(g) : 0;
}

/* Whole-graph check. */
mirs_status mirs_graph_validate(const mirs_graph *g) {
  if (!g)
    return MIRS_INVALID_ARG;
  MIRS_CHECK(g->ctx, mirs__graph_validate(g));
  return MIRS_OK;
}

/* ---------------------------------------------------------------- evaluation */

struct mirs_eval_result {
  mirs_context *ctx;
  int n;
  char **names;
  mirs__shape *shapes;
  double **values;
};

/* An eval result holding copies of g's outputs: outvals[i] has the
 * values of output i (numel of its tensor). */
mirs_status mirs__eval_result_make(const mirs_graph *g, const double *const *outvals,
                                   mirs_eval_result **out) {
  mirs_context *ctx = g->ctx;
  *out = NULL;
  mirs_eval_result *r = mirs__core_calloc(ctx, 1, sizeof *r);
  if (r) {
    r->ctx = ctx;
    r->names = mirs__core_calloc(ctx, (size_t)g->nout + 1, sizeof *r->names);
    r->shapes = mirs__core_calloc(ctx, (size_t)g->nout + 1, sizeof *r->shapes);
    r->values = mirs__core_calloc(ctx, (size_t)g->nout + 1, sizeof *r->values);
  }
  if (!r || !r->names || !r->shapes || !r->values) {
    mirs_eval_result_destroy(r);
    return MIRS_NOMEM;
  }
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    r->n = i + 1;
    r->shapes[i] = g->t[t].shape;
    r->names[i] = mirs__core_strdup(ctx, g->t[t].name);
    /* An output listed twice shares nothing: copy the values. */
    size_t n = (size_t)mirs__shape_numel(&g->t[t].shape);
    r->values[i] = mirs__core_alloc(ctx, n * sizeof(double));
    if (!r->names[i] || !r->values[i]) {
      mirs_eval_result_destroy(r);
      return MIRS_NOMEM;
    }
    memcpy(r->values[i], outvals[i], n * sizeof(double));
  }
  *out = r;
  return MIRS_OK;
}

/* Evaluate g and keep its outputs. */
mirs_status mirs_graph_eval(const mirs_graph *g, uint64_t seed, mirs_eval_result **out) {
  if (!g)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = g->ctx;
  if (!out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_graph_eval: NULL out");
  *out = NULL;
  MIRS_CHECK(ctx, mirs__graph_validate(g));
  double **vals;
  MIRS_CHECK(ctx, mirs__interp_run(g, seed, &vals));
  const double **outvals = mirs__core_calloc(ctx, (size_t)g->nout + 1, sizeof *outvals);
  mirs_status s = MIRS_NOMEM;
  if (outvals) {
    for (int32_t i = 0; i < g->nout; i++)
      outvals[i] = vals[g->outputs[i]];
    s = mirs__eval_result_make(g, outvals, out);
  }
  mirs__core_free(ctx, outvals);
  mirs__interp_free(g, vals);
  return s;
}

/* Largest relative difference between same-named outputs of two eval
 * results: max|a-b| / max|a| per output (non-finite values must match
 * exactly; otherwise the difference is infinite). */
double mirs__eval_max_rel_error(const mirs_eval_result *ref, const mirs_eval_result *cand) {
  double worst = 0;
  for (int i = 0; i < mirs_eval_num_outputs(ref); i++) {
    const char *name = mirs_eval_output_name(ref, i);
    int j = 0;
    while (j < mirs_eval_num_outputs(cand) && strcmp(mirs_eval_output_name(cand, j), name))
      j++;
    int64_t n, m;
    const double *a = mirs_eval_output_values(ref, i, &n);
    const double *b = mirs_eval_output_values(cand, j, &m);
    if (!b || n != m)
      return INFINITY;
    double diff = 0, scale = 0;
    for (int64_t e = 0; e < n; e++) {
      /* Non-finite values must match exactly (NaN with NaN, an infinity
       * with the same infinity) and stay out of the scale: an infinity in
       * the reference would otherwise make every difference relative 0. */
      if (!isfinite(a[e]) || !isfinite(b[e])) {
        if (isnan(a[e]) ? !isnan(b[e]) : a[e] != b[e])
          return INFINITY;
        continue;
      }
      diff = fmax(diff, fabs(a[e] - b[e]));
      scale = fmax(scale, fabs(a[e]));
    }
    double rel = scale > 0 ? diff / scale : diff;
    worst = fmax(worst, rel);
  }
  return worst;
}

/* Release an eval result. */
void mirs_eval_result_destroy(mirs_eval_result *r) {
  if (!r)
    return;
  mirs_context *ctx = r->ctx;
  for (int i = 0; i < r->n; i++) {
    if (r->names)
      mirs__core_free(ctx, r->names[i]);
    if (r->values)
      mirs__core_free(ctx, r->values[i]);
  }
  mirs__core_free(ctx, r->names);
  mirs__core_free(ctx, r->shapes);
  mirs__core_free(ctx, r->values);
  mirs__core_free(ctx, r);
}

int mirs_eval_num_outputs(const mirs_eval_result *r) {
  return r ? r->n : 0;
}

const char *mirs_eval_output_name(const mirs_eval_result *r, int index) {
  return r && index >= 0 && index < r->n ? r->names[index] : NULL;
}

/* Values of output index. */
const double *mirs_eval_output_values(const mirs_eval_result *r, int index, int64_t *count) {
  if (!r || index < 0 || index >= r->n) {
    if (count)
      *count = 0;
    return NULL;
  }
  if (count)
    *count = mirs__shape_numel(&r->shapes[index]);
  return r->values[index];
}

/* Shape of output index. */
int mirs_eval_output_shape(const mirs_eval_result *r, int index, int64_t dims[MIRS_MAX_DIMS]) {
  if (!r || index < 0 || index >= r->n)
    return 0;
  if (dims)
    memcpy(dims, r->shapes[index].d, sizeof(int64_t) * (size_t)r->shapes[index].ndim);
  return r->shapes[index].ndim;
}
