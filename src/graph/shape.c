/* SPDX-License-Identifier: MIT */
/* src/graph/shape.c - shape rules of every operator family (ops.def
 * "kind" column), shared by kernel and block level.
 *
 * Rules: elementwise binary ops need equal rank and broadcast size-1 dims;
 * matmul is [..., m, k] x [..., k, n] -> [..., m, n] with batch dims
 * broadcast the same way; sum keeps rank (size 1 at the reduced dim);
 * rms_norm and unary ops keep the shape; accum keeps it, accum_sum and
 * accum_max reduce dim=, accum_rms reduces the last dim, accum_online(y, m)
 * keeps y's shape (m broadcasts to it).  Reasons are single lines without
 * a trailing period, so callers can prefix positions. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"

const mirs__opinfo mirs__graph_ops[MIRS_OP_COUNT] = {
#define MIRS_OPDEF(name, spelling, arity, levels, kind)                                            \
  {spelling, arity, levels, MIRS__KIND_##kind},
#include "mirsearch/ops.def"
#undef MIRS_OPDEF
};

/* Number of elements, saturating. */
int64_t mirs__shape_numel(const mirs__shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++) {
    if (s->d[i] <= 0)
      return 0;
    if (n > INT64_MAX / s->d[i])
      return INT64_MAX;
    n *= s->d[i];
  }
  return n;
}

/* Shapes equal. */
bool mirs__shape_eq(const mirs__shape *a, const mirs__shape *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->d[i] != b->d[i])
      return false;
  return true;
}

/* "[2, 256, 64]". */
const char *mirs__shape_str(const mirs__shape *s, char *buf, size_t size) {
  size_t len = 0;
  int n = snprintf(buf, size, "[");
  len = n > 0 ? (size_t)n : 0;
  for (int i = 0; i < s->ndim && len < size; i++) {
    n = snprintf(buf + len, size - len, "%s%" PRId64, i ? ", " : "", s->d[i]);
    if (n < 0)
      break;
    len += (size_t)n;
  }
  if (len < size)
    snprintf(buf + len, size - len, "]");
  return buf;
}

/* Explain a refusal into why/whysize; a NULL why (the search, which only
 * needs the verdict) skips the formatting. */
#define WHY(...)                                                                                   \
  do {                                                                                             \
    if (why)                                                                                       \
      snprintf(why, whysize, __VA_ARGS__);                                                         \
  } while (0)

/* Broadcast dims [from, to) of a and b into out; false with a reason. */
static bool broadcast(const char *opname, const mirs__shape *a, const mirs__shape *b, int to,
                      mirs__shape *out, char *why, size_t whysize) {
  for (int i = 0; i < to; i++) {
    if (a->d[i] == b->d[i] || b->d[i] == 1)
      out->d[i] = a->d[i];
    else if (a->d[i] == 1)
      out->d[i] = b->d[i];
    else {
      char sa[96], sb[96];
      WHY("%s: cannot broadcast %s with %s (dim %d: %" PRId64 " vs %" PRId64 ")", opname,
          mirs__shape_str(a, sa, sizeof sa), mirs__shape_str(b, sb, sizeof sb), i, a->d[i],
          b->d[i]);
      return false;
    }
  }
  return true;
}

/* Normalise a possibly negative dim against rank; false with a reason. */
static bool norm_dim(const char *opname, int dim, int ndim, int *out, char *why, size_t whysize) {
  if (dim < -ndim || dim >= ndim) {
    WHY("%s: dim=%d is out of range for rank %d (valid: %d to %d)", opname, dim, ndim, -ndim,
        ndim - 1);
    return false;
  }
  *out = dim < 0 ? dim + ndim : dim;
  return true;
}

/* Infer the result shape of op on in[0..nin). */
bool mirs__shape_infer(mirs_op op, int nin, const mirs__shape *in, int dim, int *dim_out,
                       mirs__shape *out, char *why, size_t whysize) {
  if ((unsigned)op >= MIRS_OP_COUNT) {
    WHY("unknown operator");
    return false;
  }
  const mirs__opinfo *info = &mirs__graph_ops[op];
  if (info->arity >= 0 && nin != info->arity) {
    WHY("%s takes %d argument%s, got %d", info->name, info->arity, info->arity == 1 ? "" : "s",
        nin);
    return false;
  }
  if (dim_out)
    *dim_out = -1;
  char sa[96], sb[96];
  switch (info->kind) {
  case MIRS__KIND_UNARY:
  case MIRS__KIND_RMSNORM:
    if (op == MIRS_OP_CAUSAL_MASK && in[0].ndim < 2) { /* rows and columns */
      WHY("causal_mask needs rank >= 2 (it masks the last two dims), got %s",
          mirs__shape_str(&in[0], sa, sizeof sa));
      return false;
    }
    *out = in[0];
    return true;
  case MIRS__KIND_TRANSPOSE:
    if (in[0].ndim < 2) {
      WHY("%s: needs rank >= 2 (it swaps the last two dims), got %s", info->name,
          mirs__shape_str(&in[0], sa, sizeof sa));
      return false;
    }
    *out = in[0];
    out->d[out->ndim - 2] = in[0].d[in[0].ndim - 1];
    out->d[out->ndim - 1] = in[0].d[in[0].ndim - 2];
    return true;
  case MIRS__KIND_BINARY:
    if (in[0].ndim != in[1].ndim) {
      WHY("%s: rank mismatch: %s has rank %d, %s has rank %d", info->name,
          mirs__shape_str(&in[0], sa, sizeof sa), in[0].ndim,
          mirs__shape_str(&in[1], sb, sizeof sb), in[1].ndim);
      return false;
    }
    out->ndim = in[0].ndim;
    return broadcast(info->name, &in[0], &in[1], in[0].ndim, out, why, whysize);
  case MIRS__KIND_MATMUL: {
    const mirs__shape *a = &in[0], *b = &in[1];
    if (a->ndim < 2 || b->ndim < 2) {
      WHY("matmul needs operands of rank >= 2, got %s and %s", mirs__shape_str(a, sa, sizeof sa),
          mirs__shape_str(b, sb, sizeof sb));
      return false;
    }
    if (a->ndim != b->ndim) {
      WHY("matmul: rank mismatch: %s has rank %d, %s has rank %d",
          mirs__shape_str(a, sa, sizeof sa), a->ndim, mirs__shape_str(b, sb, sizeof sb), b->ndim);
      return false;
    }
    int n = a->ndim;
    if (a->d[n - 1] != b->d[n - 2]) {
      WHY("matmul: inner dimensions differ: %s x %s (%" PRId64 " vs %" PRId64 ")",
          mirs__shape_str(a, sa, sizeof sa), mirs__shape_str(b, sb, sizeof sb), a->d[n - 1],
          b->d[n - 2]);
      return false;
    }
    out->ndim = n;
    if (!broadcast("matmul", a, b, n - 2, out, why, whysize))
      return false;
    out->d[n - 2] = a->d[n - 2];
    out->d[n - 1] = b->d[n - 1];
    return true;
  }
  case MIRS__KIND_REDUCE:
  case MIRS__KIND_ACCUM: {
    *out = in[0];
    if (op == MIRS_OP_ACCUM)
      return true;
    if (op == MIRS_OP_ACCUM_ONLINE) {
      /* accum_online(y, m): m (the shift) broadcasts to y, which is kept. */
      bool fits = in[1].ndim == in[0].ndim;
      for (int d = 0; fits && d < in[0].ndim; d++)
        fits = in[1].d[d] == 1 || in[1].d[d] == in[0].d[d];
      if (!fits)
        WHY("accum_online: the shift %s does not broadcast to %s (same rank, each dim equal or 1)",
            mirs__shape_str(&in[1], sb, sizeof sb), mirs__shape_str(&in[0], sa, sizeof sa));
      return fits;
    }
    int d;
    if (op == MIRS_OP_ACCUM_RMS)
      d = in[0].ndim - 1;
    else if (!norm_dim(info->name, dim, in[0].ndim, &d, why, whysize))
      return false;
    out->d[d] = 1;
    if (dim_out && op != MIRS_OP_ACCUM_RMS)
      *dim_out = d;
    return true;
  }
  case MIRS__KIND_LAYOUT: /* (the shape is the attribute's: mirs__shape_layout) */
    WHY("%s needs its %s attribute", info->name,
        op == MIRS_OP_RESHAPE   ? "shape="
        : op == MIRS_OP_PERMUTE ? "dims="
                                : "dim=, start=, len=");
    return false;
  case MIRS__KIND_CUSTOM:
  case MIRS__KIND_INPUT:
  case MIRS__KIND_OUTPUT:
    break;
  }
  WHY("%s has no shape rule of its own", info->name);
  return false;
}

/* The shape rule of reshape: equal element counts, one -1 inferred. */
static bool reshape_rule(const mirs__shape *xs, const mirs__shape *lay, mirs__shape *out,
                         char *why, size_t whysize) {
  char sa[96], sb[96];
  int infer = -1;
  int64_t known = 1, n = mirs__shape_numel(xs);
  if (lay->ndim < 1 || lay->ndim > MIRS_MAX_DIMS) {
    WHY("reshape: shape= needs 1 to %d dims, got %d", MIRS_MAX_DIMS, lay->ndim);
    return false;
  }
  *out = *lay;
  for (int i = 0; i < lay->ndim; i++) {
    if (lay->d[i] == -1 && infer < 0) {
      infer = i;
    } else if (lay->d[i] == -1) {
      WHY("reshape: shape= has more than one -1 (dims %d and %d)", infer, i);
      return false;
    } else if (lay->d[i] < 1) {
      WHY("reshape: shape= dim %d is %" PRId64 "; dims must be >= 1 (or one -1, inferred)", i,
          lay->d[i]);
      return false;
    } else if (known > INT64_MAX / lay->d[i]) { /* (saturates: cannot match) */
      known = INT64_MAX;
    } else {
      known *= lay->d[i];
    }
  }
  if (infer >= 0) {
    if (known > n || n % known != 0) {
      WHY("reshape: cannot infer the -1 of shape= for %s: %" PRId64
          " elements are not a multiple of %" PRId64, mirs__shape_str(xs, sa, sizeof sa), n, known);
      return false;
    }
    out->d[infer] = n / known;
    known = n;
  }
  if (known != n) {
    WHY("reshape: element count mismatch: %s has %" PRId64 " elements, shape=%s has %s%" PRId64,
        mirs__shape_str(xs, sa, sizeof sa), n, mirs__shape_str(lay, sb, sizeof sb),
        known == INT64_MAX ? "more than " : "", known == INT64_MAX ? n : known);
    return false;
  }
  return true;
}

/* The shape rule of permute: dims= a permutation of x's dims. */
static bool permute_rule(const mirs__shape *xs, const mirs__shape *lay, mirs__shape *lay_out,
                         mirs__shape *out, char *why, size_t whysize) {
  char sa[96];
  int r = xs->ndim;
  if (lay->ndim != r) {
    WHY("permute: dims= has %d entries, but %s has rank %d (a permutation of 0..%d)", lay->ndim,
        mirs__shape_str(xs, sa, sizeof sa), r, r - 1);
    return false;
  }
  bool seen[MIRS_MAX_DIMS] = {false};
  lay_out->ndim = r;
  out->ndim = r;
  for (int i = 0; i < r; i++) {
    int64_t d = lay->d[i];
    if (d < -r || d >= r) {
      WHY("permute: dims= entry %d is %" PRId64 ", out of range for rank %d (valid: %d to %d)", i,
          d, r, -r, r - 1);
      return false;
    }
    d = d < 0 ? d + r : d;
    if (seen[d]) {
      WHY("permute: dims= is not a permutation: dim %" PRId64 " appears twice", d);
      return false;
    }
    seen[d] = true;
    lay_out->d[i] = d;
    out->d[i] = xs->d[d];
  }
  return true;
}

/* The shape rule of slice: lay = {dim, start, len} within x's dims. */
static bool slice_rule(const mirs__shape *xs, const mirs__shape *lay, mirs__shape *lay_out,
                       mirs__shape *out, char *why, size_t whysize) {
  char sa[96];
  int r = xs->ndim;
  if (lay->ndim != 3) {
    WHY("slice: needs dim, start and len (3 values), got %d", lay->ndim);
    return false;
  }
  int64_t d = lay->d[0], start = lay->d[1], len = lay->d[2];
  if (d < -r || d >= r) {
    WHY("slice: dim=%" PRId64 " is out of range for %s (valid: %d to %d)", d,
        mirs__shape_str(xs, sa, sizeof sa), -r, r - 1);
    return false;
  }
  d = d < 0 ? d + r : d;
  int64_t size = xs->d[d];
  if (start < 0 || start >= size) {
    WHY("slice: start=%" PRId64 " is out of range for dim %" PRId64 " of %s (valid: 0 to %" PRId64
        ")",
        start, d, mirs__shape_str(xs, sa, sizeof sa), size - 1);
    return false;
  }
  if (len < 1 || len > size - start) {
    WHY("slice: len=%" PRId64 " does not fit: dim %" PRId64 " of %s has %" PRId64
        " elements from start=%" PRId64 " (valid: 1 to %" PRId64 ")",
        len, d, mirs__shape_str(xs, sa, sizeof sa), size - start, start, size - start);
    return false;
  }
  *out = *xs;
  out->d[d] = len;
  *lay_out = (mirs__shape){.ndim = 3, .d = {d, start, len}};
  return true;
}

bool mirs__shape_layout(mirs_op op, const mirs__shape *xs, const mirs__shape *lay,
                        mirs__shape *lay_out, mirs__shape *out, char *why, size_t whysize) {
  if (op == MIRS_OP_RESHAPE) {
    if (!reshape_rule(xs, lay, out, why, whysize))
      return false;
    *lay_out = *out;
    return true;
  }
  if (op == MIRS_OP_PERMUTE)
    return permute_rule(xs, lay, lay_out, out, why, whysize);
  if (op == MIRS_OP_SLICE)
    return slice_rule(xs, lay, lay_out, out, why, whysize);
  WHY("%s is not a layout operator", (unsigned)op < MIRS_OP_COUNT ? mirs__graph_ops[op].name : "?");
  return false;
}

/* Strides (in elements) of in's dims as seen from out's dims, ranks
 * aligned on the right; 0 where in is missing or has size 1 (broadcast). */
void mirs__shape_bcast_strides(const mirs__shape *in, const mirs__shape *out,
                               int64_t st[MIRS_MAX_DIMS]) {
  int64_t stride = 1;
  for (int d = out->ndim - 1; d >= 0; d--) {
    int id = d - (out->ndim - in->ndim);
    if (id < 0) {
      st[d] = 0;
      continue;
    }
    st[d] = in->d[id] == 1 ? 0 : stride;
    stride *= in->d[id];
  }
}

/* Offset of flat row `row` over dims [0, nd) of shape s, with strides st. */
int64_t mirs__shape_row_offset(const mirs__shape *s, int nd, const int64_t *st, int64_t row) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (row % s->d[d]) * st[d];
    row /= s->d[d];
  }
  return off;
}

/* Copy the tile of shape ts at off[] between a row-major tensor (shape ks,
 * buffer k) and a dense tile buffer t, elements of elem bytes: load
 * (tensor -> tile) or store.  False when the tile does not lie inside.
 * Hot in the fingerprints of custom kernels (one call per tile and block),
 * where tiles are small: inner tile dims that span the whole tensor dim
 * are merged into one contiguous run, and the outer dims are walked by an
 * odometer rather than a division per run. */
bool mirs__shape_copy_tile(const mirs__shape *ks, void *k, const mirs__shape *ts, void *t,
                           const int64_t off[MIRS_MAX_DIMS], size_t elem, bool store) {
  int r = ts->ndim;
  if (r != ks->ndim)
    return false;
  for (int d = 0; d < r; d++)
    if (off[d] < 0 || off[d] + ts->d[d] > ks->d[d])
      return false;
  int64_t kst[MIRS_MAX_DIMS];
  int64_t stride = 1, base = 0;
  for (int d = r - 1; d >= 0; d--) {
    kst[d] = stride;
    stride *= ks->d[d];
    base += off[d] * kst[d];
  }
  /* The run: dims [outer, r) are contiguous in the tensor, since every
   * dim inside dim `outer` is whole. */
  int outer = r > 0 ? r - 1 : 0;
  int64_t run = r > 0 ? ts->d[r - 1] : 1;
  while (outer > 0 && ts->d[outer] == ks->d[outer])
    run *= ts->d[--outer];
  size_t bytes = (size_t)run * elem;
  int64_t idx[MIRS_MAX_DIMS] = {0}, rows = mirs__shape_numel(ts) / run, ko = base;
  char *pt = t;
  for (int64_t row = 0; row < rows; row++, pt += bytes) {
    char *pk = (char *)k + (size_t)ko * elem;
    if (store)
      memcpy(pk, pt, bytes);
    else
      memcpy(pt, pk, bytes);
    for (int d = outer - 1; d >= 0; d--) { /* next run: the odometer over dims [0, outer) */
      ko += kst[d];
      if (++idx[d] < ts->d[d])
        break;
      ko -= idx[d] * kst[d];
      idx[d] = 0;
    }
  }
  return true;
}
