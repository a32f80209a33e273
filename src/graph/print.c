/* SPDX-License-Identifier: MIT */
/* src/graph/print.c - the canonical text of a graph (docs/FORMATS.md).
 *
 * Invariants: the output is a function of the graph alone (no addresses,
 * no options), and mirs__graph_parse reads it back into a graph that
 * prints identically.  Layout: a header (`ugraph NAME` when g->ugraph is
 * set or the graph holds a custom kernel, else `program NAME`); then, in
 * kernel-tensor id order, each input's `input` line and, at the first
 * result of each op, that op's statement (a custom kernel with its block,
 * indented two spaces); then one `output` line.  Reduced dims are printed
 * non-negative (the builder normalises them); `fused=1` only when set;
 * a reshape's shape= resolved (no -1), a permute's dims= and a slice's
 * dim= non-negative. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* Write the graph name as an identifier: bytes outside [A-Za-z0-9_] become
 * '_', a leading digit gets a '_' prefix, an empty name reads "program". */
static void put_ident(mirs__buf *b, const char *name) {
  if (!name || !name[0]) {
    mirs__buf_puts(b, "program");
    return;
  }
  if (name[0] >= '0' && name[0] <= '9')
    mirs__buf_puts(b, "_");
  char one[2] = {0, 0};
  for (const char *s = name; *s; s++) {
    char c = *s;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    one[0] = ok ? c : '_';
    mirs__buf_puts(b, one);
  }
}

/* "[d0, d1, ...]". */
static void put_dims(mirs__buf *b, const mirs__shape *s) {
  mirs__buf_puts(b, "[");
  for (int i = 0; i < s->ndim; i++)
    mirs__buf_printf(b, "%s%" PRId64, i ? ", " : "", s->d[i]);
  mirs__buf_puts(b, "]");
}

/* ", eps=E" with the shortest E that reads back as the same double (the
 * format round-trips), always with a '.' or an exponent, so it lexes as a
 * real (1e-05, 0.001, 0.0). */
static void put_eps(mirs__buf *b, double eps) {
  char s[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, eps);
    if (strtod(s, NULL) == eps)
      break;
  }
  mirs__buf_printf(b, ", eps=%s%s", s, strpbrk(s, ".e") ? "" : ".0");
}

/* "[a, b, c]" for a grid-sized map or dims triple. */
static void put3(mirs__buf *b, const int32_t v[MIRS__GRID]) {
  mirs__buf_printf(b, "[%" PRId32 ", %" PRId32 ", %" PRId32 "]", v[0], v[1], v[2]);
}

/* "name(args" of a unary op on tensor x, with its constants written as
 * the language has them: add(x, c), mul(x, c), div(x, c), sub(c, x),
 * div(c, x), pow(x, e), clamp(x, lo, hi). */
static void put_call(mirs__buf *b, mirs_op op, const char *x, const mirs__scalar *cst) {
  char c0[64], c1[64];
  int n = mirs__op_nconst(op);
  if (n > 0)
    mirs__scalar_str(&cst[0], c0, sizeof c0);
  switch (op) {
  case MIRS_OP_ADD_SCALAR:
    mirs__buf_printf(b, "add(%s, %s", x, c0);
    break;
  case MIRS_OP_MUL_SCALAR:
    mirs__buf_printf(b, "mul(%s, %s", x, c0);
    break;
  case MIRS_OP_DIV_SCALAR:
    mirs__buf_printf(b, "div(%s, %s", x, c0);
    break;
  case MIRS_OP_RSUB_SCALAR:
    mirs__buf_printf(b, "sub(%s, %s", c0, x);
    break;
  case MIRS_OP_RDIV_SCALAR:
    mirs__buf_printf(b, "div(%s, %s", c0, x);
    break;
  case MIRS_OP_CLAMP:
    mirs__buf_printf(b, "clamp(%s, %s, %s", x, c0, mirs__scalar_str(&cst[1], c1, sizeof c1));
    break;
  default:
    mirs__buf_printf(b, "%s(%s", mirs__graph_ops[op].name, x);
    if (n > 0)
      mirs__buf_printf(b, ", %s", c0);
    break;
  }
}

/* One block-graph statement, indented. */
static void put_bop(const mirs_graph *g, const mirs__bgraph *bg, const mirs__bop *op,
                    mirs__buf *b) {
  const char *opname = mirs__graph_ops[op->op].name;
  if (op->op == MIRS_OP_OUTPUT) {
    mirs__buf_printf(b, "  output(%s, omap=", bg->t[op->in[0]].name);
    put3(b, op->omap);
    if (op->stored >= 0)
      mirs__buf_printf(b, ", dtype=%s", mirs_dtype_name((mirs_dtype)op->stored));
    mirs__buf_puts(b, ")\n");
    return;
  }
  if (mirs__op_nconst(op->op) > 0) {
    mirs__buf_printf(b, "  %s = ", bg->t[op->out].name);
    put_call(b, op->op, bg->t[op->in[0]].name, op->cst);
  } else {
    mirs__buf_printf(b, "  %s = %s(", bg->t[op->out].name, opname);
  }
  if (op->op == MIRS_OP_INPUT) {
    mirs__buf_printf(b, "%s, imap=", g->t[op->src].name);
    put3(b, op->imap);
    mirs__buf_printf(b, ", fmap=%" PRId32 ")\n", op->fmap);
    return;
  }
  if (mirs__op_nconst(op->op) == 0) {
    for (int i = 0; i < op->nin; i++)
      mirs__buf_printf(b, "%s%s", i ? ", " : "", bg->t[op->in[i]].name);
  }
  if (mirs__op_has_dim(op->op))
    mirs__buf_printf(b, ", dim=%" PRId32, op->dim);
  if (mirs__op_shows_eps(op->op, op->eps))
    put_eps(b, op->eps);
  if (op->fused)
    mirs__buf_puts(b, ", fused=1");
  mirs__buf_puts(b, ")\n");
}

/* One kernel op statement (a custom kernel with its whole block). */
static void put_kop(const mirs_graph *g, const mirs__kop *op, mirs__buf *b) {
  for (int i = 0; i < op->nout; i++)
    mirs__buf_printf(b, "%s%s", i ? ", " : "", g->t[op->out[i]].name);
  if (op->op == MIRS_OP_CUSTOM) {
    const mirs__bgraph *bg = op->bg;
    mirs__buf_puts(b, " = custom(grid=");
    put3(b, bg->grid);
    mirs__buf_puts(b, ", block=");
    put3(b, bg->block);
    mirs__buf_printf(b, ", forloop=%" PRId32 ") {\n", bg->forloop);
    for (int32_t i = 0; i < bg->nops; i++)
      put_bop(g, bg, &bg->ops[i], b);
    mirs__buf_puts(b, "}\n");
    return;
  }
  if (mirs__op_nconst(op->op) > 0) {
    mirs__buf_puts(b, " = ");
    put_call(b, op->op, g->t[op->in[0]].name, op->cst);
  } else {
    mirs__buf_printf(b, " = %s(", mirs__graph_ops[op->op].name);
    for (int i = 0; i < op->nin; i++)
      mirs__buf_printf(b, "%s%s", i ? ", " : "", g->t[op->in[i]].name);
  }
  if (mirs__op_has_dim(op->op))
    mirs__buf_printf(b, ", dim=%" PRId32, op->dim);
  if (mirs__op_shows_eps(op->op, op->eps))
    put_eps(b, op->eps);
  if (op->op == MIRS_OP_SLICE) {
    mirs__buf_printf(b, ", dim=%" PRId64 ", start=%" PRId64 ", len=%" PRId64, op->lay.d[0],
                     op->lay.d[1], op->lay.d[2]);
  } else if (mirs__op_is_layout(op->op)) {
    mirs__buf_puts(b, op->op == MIRS_OP_RESHAPE ? ", shape=" : ", dims=");
    put_dims(b, &op->lay);
  }
  mirs__buf_puts(b, ")\n");
}

/* Canonical text of g into b. */
void mirs__graph_print(const mirs_graph *g, mirs__buf *b) {
  bool ugraph = g->ugraph;
  for (int32_t i = 0; i < g->nops; i++)
    if (g->ops[i].op == MIRS_OP_CUSTOM)
      ugraph = true;
  mirs__buf_puts(b, ugraph ? "ugraph " : "program ");
  put_ident(b, g->name);
  mirs__buf_puts(b, "\n");
  for (int32_t t = 0; t < g->nt; t++) {
    const mirs__ktensor *kt = &g->t[t];
    if (kt->producer < 0) {
      mirs__buf_printf(b, "input %s : %s", kt->name, mirs_dtype_name(kt->dtype));
      put_dims(b, &kt->shape);
      mirs__buf_puts(b, "\n");
    } else if (kt->out_index == 0) {
      put_kop(g, &g->ops[kt->producer], b);
    }
  }
  if (g->nout > 0) {
    mirs__buf_puts(b, "output ");
    for (int32_t i = 0; i < g->nout; i++)
      mirs__buf_printf(b, "%s%s", i ? ", " : "", g->t[g->outputs[i]].name);
    mirs__buf_puts(b, "\n");
  }
}
