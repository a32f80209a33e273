/* SPDX-License-Identifier: MIT */
/* src/codegen/cost.c - device profiles (parser, built-in table, lookup) and
 * the analytic cost model that ranks µGraphs without a GPU.
 *
 * Model (docs/SEARCH.md "Cost model").  Per kernel op, with
 * fixed = launch (the profile's launch_us) + KERNEL_FIXED_S (cost.h):
 *   time = fixed + max(memory, compute)        (predefined ops)
 *   time = fixed + max(memory, on)             (pipelined custom kernels
 *          + min(memory, on) / F                over F iterations: one
 *                                               iteration is exposed)
 *   time = fixed + memory + on                 (custom kernels without a
 *                                               cp.async pipeline)
 *   memory  = bytes / min(bw * ub, inflight / mem_latency)   (the profile's,
 *             else MEM_LATENCY_S)
 *   compute = tc_flops at the f16 peak (its bf16 part at the bf16 peak)
 *             + simt_flops / f32_peak
 * and, for custom kernels, the on-chip time of the busiest SM (the
 * latency terms, calibrated on the first H200 measurements; cost.h):
 *   n     = ceil(B / sms) blocks on it, r = min(n, occupancy) resident,
 *           waves = ceil(n / occupancy)
 *   eta   = min(1, r * warps per block / 4 / WARPS_TO_SATURATE): the share
 *           of the SM's peak rates its resident warps reach (4 sub-
 *           partitions; with one warp in each, a warp's dependent chain
 *           of ldmatrix, mma, exp and shuffles is exposed)
 *   block = F * (max(tc_it, smem_it) + simt_it) + max(tc_1, smem_1) + simt_1
 *           one block's work at one SM's peaks: tensor cores (bf16 and
 *           tf32 at their own peaks) overlap its shared-memory traffic (smem_loop per
 *           iteration, smem_once outside, smem.c, bank conflicts
 *           included), CUDA-core work follows them (it reads their
 *           results), each special function at SFU_FLOPS
 *   on    = n * block / eta + waves * F * (1 + x) * ITER_SYNC_S
 *           (x: row values a split strip of the register chain exchanges
 *           through shared memory per iteration, each behind a barrier)
 *           (F: the live iterations; under causal tile skipping in one
 *           wave, the longest block's, which sets the kernel's end)
 * (no smem part when the profile has no smem_gbps).  The reported
 * smem_seconds stays the grid's bank-slot bytes over the busy SMs'
 * shared-memory bandwidth, B * (F * smem_loop + smem_once) / (smem_bw *
 * min(B, sms)), for comparison.
 * Predefined ops are assumed to be library kernels that fill the device
 * (ub = 1, full peaks, no latency bound).  A custom kernel is priced from its
 * kernel plan (plan.h), the one the CUDA generator emits: its shared
 * memory decides feasibility (over the device's limit: infeasible, so the
 * search drops it), its stages and tile bytes give the bytes each block
 * keeps in flight, its MMA choices decide which matmuls run on tensor
 * cores (m16n8k16 at the f16 peak, or the bf16 one, padded rows
 * included; tf32 at the tf32 peak, half the f16 one unless the profile
 * says otherwise; under codegen_wgmma, wgmma at the peak and mma.sync at 2/3 of it,
 * hopper.c; scalar-path matmuls on CUDA cores).  With B = grid.x*grid.y*grid.z:
 *   u  = min(1, B / sms)                 the busy share of the SMs (reported);
 *   ub = min(1, B / (hbm_saturation*sms)) a fraction of the SMs already
 *        saturates HBM, so bandwidth is lost only below that;
 *   inflight = resident blocks (min(B, sms * blocks per SM by shared
 *        memory, threads and the plan's register estimate)) * the
 *        plan's bytes in flight per block:
 *        Little's law bounds bandwidth by inflight / latency.
 * Bytes are HBM traffic in 32-byte sectors: each global access is counted
 * at the sectors its warps touch (views.c, mirs__codegen_sector_factor:
 * a strided tile of a transposed view moves a sector per lane), with no
 * credit for L2 hits: every block loads its
 * own tile of every input, so a replicated input is re-read by each block
 * (that is what makes a bad grid expensive), F times when the forloop walks
 * it (fmap >= 0) and once when it does not (the tile is loop-invariant and
 * stays in shared memory).
 *
 * Flops per element: add, sub, mul, square, relu 1; div, exp, sqrt 4 (one
 * special-function-unit op: the SFU has a fraction of the FMA lanes); silu
 * 9 (exp, add, div); gelu 11 (tanh form: tanh 4 + 7 arithmetic).  matmul
 * 2*M*N*K*batch (tensor cores when the plan says MMA, else f32
 * CUDA cores); sum numel(input); rms_norm 3*numel (square, add, scale);
 * accum numel(in) per iteration (none when the MMA adds into its C
 * fragments), accum_sum too, accum_rms 2*numel(in) per iteration plus
 * 5*numel(out) after the loop (scale and sqrt).  Everything but
 * tensor-core matmul runs at the f32 peak.
 *
 * Invariants: no mutable globals; parsing never stops at the first error
 * (every malformed line gets a diagnostic, up to the max_errors option);
 * costing is a pure function of (device, graph). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "codegen/codegen.h"
#include "codegen/cost.h"
#include "codegen/hopper.h"
#include "codegen/plan.h"

#define BUILTIN_NAME "<built-in devices.profile>"
#define SPECIAL_FLOPS 4.0
#define MEM_LATENCY_S 0.7e-6    /* loaded HBM latency where the profile has no mem_latency_us */
#define MAX_THREADS_PER_SM 2048 /* resident threads per SM (sm_80, sm_90) */
#define REGS_PER_SM 65536       /* 32-bit registers per SM (sm_80, sm_90) */
/* The latency terms (WARPS_TO_SATURATE, ITER_SYNC_S, KERNEL_FIXED_S,
 * SFU_FLOPS) are in cost.h, where the tests read them. */
#define WARPS_TO_SATURATE MIRS__COST_WARPS_TO_SATURATE
#define ITER_SYNC_S MIRS__COST_ITER_SYNC_S
#define KERNEL_FIXED_S MIRS__COST_KERNEL_FIXED_S
#define SFU_FLOPS MIRS__COST_SFU_FLOPS

/* The profile file, one C string per line, generated at build time from
 * data/devices.profile (see Makefile.am). */
static const char *const builtin_lines[] = {
#include "codegen/devices_profile.inc"
};

/* ---------------------------------------------------------------- profile keys */

typedef enum { KEY_NUM, KEY_I32, KEY_I64, KEY_TEXT, KEY_ALIASES } key_type;

typedef struct key_info {
  const char *name;
  key_type type;
  size_t offset; /* into mirs__cost_device */
  bool required;
  double scale; /* KEY_NUM: file unit -> SI */
  double max;   /* numeric keys: largest value accepted (file units) */
} key_info;

static const key_info keys[] = {
    {"description", KEY_TEXT, offsetof(mirs__cost_device, description), false, 1, 0},
    {"aliases", KEY_ALIASES, offsetof(mirs__cost_device, aliases), false, 1, 0},
    {"hbm_gbps", KEY_NUM, offsetof(mirs__cost_device, hbm_bw), true, 1e9, 1e9},
    {"tc_f16_tflops", KEY_NUM, offsetof(mirs__cost_device, tc_peak), true, 1e12, 1e9},
    {"tc_bf16_tflops", KEY_NUM, offsetof(mirs__cost_device, bf16_peak), false, 1e12, 1e9},
    {"tc_tf32_tflops", KEY_NUM, offsetof(mirs__cost_device, tf32_peak), false, 1e12, 1e9},
    {"f32_tflops", KEY_NUM, offsetof(mirs__cost_device, f32_peak), true, 1e12, 1e9},
    {"launch_us", KEY_NUM, offsetof(mirs__cost_device, launch_s), true, 1e-6, 1e9},
    {"smem_per_block", KEY_I64, offsetof(mirs__cost_device, smem_per_block), true, 1, 1e15},
    {"sms", KEY_I32, offsetof(mirs__cost_device, sms), true, 1, 1e6},
    {"l2_bytes", KEY_I64, offsetof(mirs__cost_device, l2_bytes), true, 1, 1e15},
    {"max_threads_per_block", KEY_I32, offsetof(mirs__cost_device, max_threads_per_block), false, 1,
     1e6},
    {"hbm_saturation", KEY_NUM, offsetof(mirs__cost_device, hbm_saturation), false, 1, 1},
    {"smem_gbps", KEY_NUM, offsetof(mirs__cost_device, smem_bw), false, 1e9, 1e9},
    {"mem_latency_us", KEY_NUM, offsetof(mirs__cost_device, mem_latency_s), false, 1e-6, 1e3},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= 32, "parser.seen has one bit per key");

/* ---------------------------------------------------------------- small text helpers */

/* ASCII lower case of c. */
static int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Case-insensitive equality of a and b (ASCII; locale-independent). */
static bool name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (lower((unsigned char)*a) != lower((unsigned char)*b))
      return false;
  return *a == *b;
}

/* True for a character allowed in a device name. */
static bool name_char(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

/* True for a blank (space or tab). */
static bool blank(int c) {
  return c == ' ' || c == '\t';
}

/* Parse a plain decimal s[0..n) ("12", "3.35", "1e3", ".5") into *v without
 * strtod, so the C locale of the embedding program does not matter.  With
 * int_only, digits only.  Returns false when malformed. */
static bool parse_decimal(const char *s, size_t n, bool int_only, double *v) {
  size_t i = 0;
  uint64_t mant = 0;
  int exp10 = 0, ndig = 0;
  bool any = false;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = true) {
    if (ndig < 19) {
      mant = mant * 10 + (uint64_t)(s[i] - '0');
      if (mant)
        ndig++;
    } else {
      exp10++;
    }
  }
  if (!int_only && i < n && s[i] == '.') {
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = true) {
      if (ndig < 19) {
        mant = mant * 10 + (uint64_t)(s[i] - '0');
        if (mant)
          ndig++;
        exp10--;
      }
    }
  }
  if (!any)
    return false;
  if (!int_only && i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    int sign = 1, e = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
      sign = s[i++] == '-' ? -1 : 1;
    if (i >= n || s[i] < '0' || s[i] > '9')
      return false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
      if (e < 10000)
        e = e * 10 + (s[i] - '0');
    exp10 += sign * e;
  }
  if (i != n)
    return false;
  /* Exact for mant < 2^53 and |exp10| <= 22 (powers of ten exact in
   * double, one rounding): every number a profile needs. */
  static const double tens[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double m = (double)mant;
  if (exp10 >= 0 && exp10 <= 22)
    *v = m * tens[exp10];
  else if (exp10 < 0 && exp10 >= -22)
    *v = m / tens[-exp10];
  else
    *v = m * pow(10.0, exp10);
  return true;
}

/* ---------------------------------------------------------------- profile parser */

typedef struct parser {
  mirs_context *ctx;
  const char *file;
  mirs__cost_profiles *p;
  int errors;
  bool stopped;          /* max_errors reached: further diagnostics are dropped */
  bool open;             /* a device section is open (p->dev[p->n - 1]) */
  bool bad_header;       /* its `device` line was malformed: skip missing-key checks */
  int dev_line, dev_col; /* where the open section's name is */
  uint32_t seen;         /* keys set in the open section (bit per keys[] index) */
  int key_line[32];      /* line each seen key was set on (indexed like keys[]) */
} parser;

/* Report a diagnostic at (line, col), honouring the max_errors option. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void
perr(parser *ps, int line, int col, const char *fmt, ...) {
  ps->errors++;
  if (ps->stopped)
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mirs__core_diag(ps->ctx, ps->file, line, col, "%s", msg);
  if (ps->errors >= ps->ctx->opt.max_errors) {
    mirs__core_diag(ps->ctx, ps->file, line, col, "too many errors; stopping");
    ps->stopped = true;
  }
}

/* The device (index < limit) whose name or alias equals name, or -1. */
static int32_t find_dev(const mirs__cost_profiles *p, int32_t limit, const char *name) {
  for (int32_t i = 0; i < limit; i++) {
    if (name_eq(p->dev[i].name, name))
      return i;
    for (int a = 0; a < p->dev[i].naliases; a++)
      if (name_eq(p->dev[i].aliases[a], name))
        return i;
  }
  return -1;
}

/* Close the open section: report each missing required key at its name. */
static void close_section(parser *ps) {
  if (!ps->open)
    return;
  mirs__cost_device *d = &ps->p->dev[ps->p->n - 1];
  for (int k = 0; k < NKEYS && !ps->bad_header; k++)
    if (keys[k].required && !(ps->seen & (UINT32_C(1) << k)))
      perr(ps, ps->dev_line, ps->dev_col, "device %s lacks required key '%s'", d->name,
           keys[k].name);
  /* The optional rates of the other tensor-core types: as every device
   * so far has them, bf16 at the f16 rate and tf32 at half of it. */
  if (d->bf16_peak <= 0)
    d->bf16_peak = d->tc_peak;
  if (d->tf32_peak <= 0)
    d->tf32_peak = d->tc_peak / 2;
  if (d->mem_latency_s <= 0)
    d->mem_latency_s = MEM_LATENCY_S;
  ps->open = false;
}

/* `device NAME` (the name from s[at]): check the name and open a new
 * section.  A malformed header still opens one, so the keys that follow
 * are checked without a cascade of "outside a section" errors. */
static mirs_status parse_device(parser *ps, int line, const char *s, size_t n, size_t at) {
  size_t i = at;
  while (i < n && blank(s[i]))
    i++;
  size_t start = i;
  while (i < n && !blank(s[i]))
    i++;
  size_t len = i - start;
  int col = (int)start + 1;
  bool bad = false;
  close_section(ps);
  if (len == 0) {
    perr(ps, line, col, "missing device name after 'device'");
    bad = true;
  }
  for (size_t j = start; j < i && !bad; j++)
    if (!name_char((unsigned char)s[j])) {
      perr(ps, line, (int)j + 1,
           "invalid character '%c' in device name (allowed: A-Z a-z 0-9 _ . -)", s[j]);
      bad = true;
    }
  if (!bad && len >= MIRS__COST_NAME_SIZE) {
    perr(ps, line, col, "device name longer than %d characters", MIRS__COST_NAME_SIZE - 1);
    bad = true;
  }
  size_t rest = i;
  while (rest < n && blank(s[rest]))
    rest++;
  if (!bad && rest < n)
    perr(ps, line, (int)rest + 1, "unexpected text after the device name");
  mirs__cost_profiles *p = ps->p;
  if (mirs__core_grow(ps->ctx, (void **)&p->dev, &p->cap, (size_t)p->n + 1, sizeof *p->dev) !=
      MIRS_OK)
    return MIRS_NOMEM;
  mirs__cost_device *d = &p->dev[p->n];
  memset(d, 0, sizeof *d);
  if (!bad) {
    memcpy(d->name, s + start, len);
    d->name[len] = '\0';
  }
  d->max_threads_per_block = 1024;
  d->hbm_saturation = 1.0;
  int32_t dup = bad ? -1 : find_dev(p, p->n, d->name);
  if (dup >= 0)
    perr(ps, line, col, "duplicate device '%s' (already named by device %s)", d->name,
         p->dev[dup].name);
  p->n++;
  ps->open = true;
  ps->bad_header = bad;
  ps->dev_line = line;
  ps->dev_col = col;
  ps->seen = 0;
  return MIRS_OK;
}

/* `aliases = a, b, ...`: value s[vs..n) on line. */
static void parse_aliases(parser *ps, int line, const char *s, size_t vs, size_t n) {
  mirs__cost_profiles *p = ps->p;
  mirs__cost_device *d = &p->dev[p->n - 1];
  size_t i = vs;
  while (i <= n) {
    while (i < n && blank(s[i]))
      i++;
    size_t start = i;
    while (i < n && s[i] != ',')
      i++;
    size_t end = i;
    while (end > start && blank(s[end - 1]))
      end--;
    int col = (int)start + 1;
    size_t len = end - start;
    if (len == 0) {
      perr(ps, line, col, "empty alias");
    } else {
      bool ok = true;
      for (size_t j = start; j < end && ok; j++)
        if (!name_char((unsigned char)s[j])) {
          perr(ps, line, (int)j + 1, "invalid character '%c' in alias", s[j]);
          ok = false;
        }
      if (ok && len >= MIRS__COST_NAME_SIZE) {
        perr(ps, line, col, "alias longer than %d characters", MIRS__COST_NAME_SIZE - 1);
        ok = false;
      }
      if (ok && d->naliases >= MIRS__COST_MAX_ALIASES) {
        perr(ps, line, col, "more than %d aliases", MIRS__COST_MAX_ALIASES);
        ok = false;
      }
      if (ok) {
        char a[MIRS__COST_NAME_SIZE];
        memcpy(a, s + start, len);
        a[len] = '\0';
        int32_t dup = find_dev(p, p->n, a);
        if (dup >= 0)
          perr(ps, line, col, "duplicate device name '%s' (already named by device %s)", a,
               p->dev[dup].name);
        else
          memcpy(d->aliases[d->naliases++], a, len + 1);
      }
    }
    i++; /* past the comma (or the end) */
  }
}

/* `key = value` on line; s[0..n) is the line without its comment, at the
 * first non-blank. */
static void parse_key(parser *ps, int line, const char *s, size_t n, size_t at) {
  size_t i = at;
  while (i < n && (name_char((unsigned char)s[i])))
    i++;
  size_t klen = i - at;
  int kcol = (int)at + 1;
  if (klen == 0) {
    perr(ps, line, kcol, "expected 'device NAME' or 'key = value'");
    return;
  }
  char key[64];
  snprintf(key, sizeof key, "%.*s", (int)(klen < 63 ? klen : 63), s + at);
  while (i < n && blank(s[i]))
    i++;
  if (i >= n || s[i] != '=') {
    perr(ps, line, i < n ? (int)i + 1 : (int)n + 1, "expected '=' after '%s'", key);
    return;
  }
  size_t vs = i + 1;
  while (vs < n && blank(s[vs]))
    vs++;
  size_t ve = n;
  while (ve > vs && blank(s[ve - 1]))
    ve--;
  int k = 0;
  while (k < NKEYS && strcmp(keys[k].name, key) != 0)
    k++;
  if (k == NKEYS) {
    char known[512];
    size_t len = 0;
    known[0] = '\0';
    for (int j = 0; j < NKEYS && len < sizeof known; j++) {
      int w = snprintf(known + len, sizeof known - len, "%s%s", j ? ", " : "", keys[j].name);
      if (w > 0)
        len += (size_t)w;
    }
    perr(ps, line, kcol, "unknown key '%s' (known: %s)", key, known);
    return;
  }
  if (!ps->open) {
    perr(ps, line, kcol, "'%s' outside a device section (start one with 'device NAME')", key);
    return;
  }
  if (ps->seen & (UINT32_C(1) << k)) {
    perr(ps, line, kcol, "duplicate key '%s' (already set on line %d)", key, ps->key_line[k]);
    return;
  }
  ps->seen |= UINT32_C(1) << k;
  ps->key_line[k] = line;
  mirs__cost_device *d = &ps->p->dev[ps->p->n - 1];
  int vcol = (int)vs + 1;
  if (ve == vs) {
    perr(ps, line, vcol, "missing value for '%s'", key);
    return;
  }
  const key_info *ki = &keys[k];
  switch (ki->type) {
  case KEY_TEXT: {
    size_t len = ve - vs;
    if (len >= MIRS__COST_DESC_SIZE) {
      perr(ps, line, vcol, "%s longer than %d characters", key, MIRS__COST_DESC_SIZE - 1);
      return;
    }
    char *dst = (char *)d + ki->offset;
    memcpy(dst, s + vs, len);
    dst[len] = '\0';
    return;
  }
  case KEY_ALIASES:
    parse_aliases(ps, line, s, vs, ve);
    return;
  case KEY_NUM:
  case KEY_I32:
  case KEY_I64: {
    double v;
    bool is_int = ki->type != KEY_NUM;
    if (!parse_decimal(s + vs, ve - vs, is_int, &v)) {
      perr(ps, line, vcol, "bad number '%.*s' for %s (expected %s)", (int)(ve - vs), s + vs, key,
           is_int ? "a positive integer" : "a positive decimal such as 3.35 or 1e3");
      return;
    }
    if (!(v > 0) || !(v <= ki->max)) {
      perr(ps, line, vcol, "%s must be in (0, %g], not %.*s", key, ki->max, (int)(ve - vs), s + vs);
      return;
    }
    if (ki->type == KEY_I32)
      *(int32_t *)((char *)d + ki->offset) = (int32_t)v;
    else if (ki->type == KEY_I64)
      *(int64_t *)((char *)d + ki->offset) = (int64_t)v;
    else
      *(double *)((char *)d + ki->offset) = v * ki->scale;
    return;
  }
  }
}

/* Parse one line s[0..n) (no newline). */
static mirs_status parse_line(parser *ps, int line, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '#') {
      n = i;
      break;
    }
  if (n > 0 && s[n - 1] == '\r')
    n--;
  while (n > 0 && blank(s[n - 1]))
    n--;
  size_t at = 0;
  while (at < n && blank(s[at]))
    at++;
  if (at == n)
    return MIRS_OK;
  for (size_t i = at; i < n; i++)
    if (s[i] == '\0' || (unsigned char)s[i] < 0x20) {
      if (s[i] != '\t') {
        perr(ps, line, (int)i + 1, "control character 0x%02x", (unsigned)(unsigned char)s[i]);
        return MIRS_OK;
      }
    }
  if (n - at >= 6 && memcmp(s + at, "device", 6) == 0 && (n - at == 6 || blank(s[at + 6])))
    return parse_device(ps, line, s, n, at + 6);
  parse_key(ps, line, s, n, at);
  return MIRS_OK;
}

/* Parse profile text; see cost.h. */
mirs_status mirs__cost_profiles_parse(mirs_context *ctx, const char *text, size_t len,
                                      const char *filename, mirs__cost_profiles **out) {
  if (!ctx || !out || (!text && len))
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_profiles_parse: NULL argument")
               : MIRS_INVALID_ARG;
  *out = NULL;
  if (!filename)
    filename = "<profile>";
  mirs__core_diag_clear(ctx);
  mirs__cost_profiles *p = mirs__core_calloc(ctx, 1, sizeof *p);
  if (!p)
    return MIRS_NOMEM;
  p->ctx = ctx;
  p->source = mirs__core_strdup(ctx, filename);
  if (!p->source) {
    mirs__cost_profiles_free(p);
    return MIRS_NOMEM;
  }
  parser ps = {.ctx = ctx, .file = filename, .p = p};
  int line = 1;
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i == len || text[i] == '\n') {
      if (i > start || i < len) {
        mirs_status s = parse_line(&ps, line, text + start, i - start);
        if (s != MIRS_OK) {
          mirs__cost_profiles_free(p);
          return mirs__core_trace(ctx, s, __func__, __FILE__, __LINE__);
        }
      }
      line++;
      start = i + 1;
    }
  }
  close_section(&ps);
  if (p->n == 0 && ps.errors == 0)
    perr(&ps, 0, 0, "no device defined (expected 'device NAME' sections)");
  if (ps.errors) {
    mirs__cost_profiles_free(p);
    return MIRS_FAIL(ctx, MIRS_PARSE, "%s: %d error%s in device profile", filename, ps.errors,
                     ps.errors == 1 ? "" : "s");
  }
  *out = p;
  return MIRS_OK;
}

/* Read the file at path and parse it. */
mirs_status mirs__cost_profiles_load_file(mirs_context *ctx, const char *path,
                                          mirs__cost_profiles **out) {
  if (!ctx || !path || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_profiles_load_file: NULL argument")
               : MIRS_INVALID_ARG;
  *out = NULL;
  /* A named profile that is not there (or is a directory) is bad input,
   * exit 2, as a missing program file is; a failing read stays MIRS_IO. */
  struct stat st;
  int found = stat(path, &st) == 0;
  if (!found && (errno == ENOENT || errno == ENOTDIR))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: no such device profile file: %s", path,
                     strerror(errno));
  if (found && S_ISDIR(st.st_mode))
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "%s: a directory, not a device profile file", path);
  char *text;
  size_t len;
  MIRS_CHECK(ctx, mirs__core_read_file(ctx, path, &text, &len));
  mirs_status s = mirs__cost_profiles_parse(ctx, text, len, path, out);
  mirs__core_free(ctx, text);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}

/* Join the compiled-in lines and parse them. */
mirs_status mirs__cost_profiles_builtin(mirs_context *ctx, mirs__cost_profiles **out) {
  if (!ctx || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_profiles_builtin: NULL argument")
               : MIRS_INVALID_ARG;
  *out = NULL;
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  for (size_t i = 0; i < sizeof builtin_lines / sizeof builtin_lines[0]; i++)
    mirs__buf_puts(&b, builtin_lines[i]);
  if (b.failed) {
    mirs__buf_free(&b);
    return MIRS_NOMEM;
  }
  mirs_status s = mirs__cost_profiles_parse(ctx, b.data ? b.data : "", b.len, BUILTIN_NAME, out);
  mirs__buf_free(&b);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}

/* The installed profile path, from configure's pkgdatadir. */
const char *mirs__cost_default_path(void) {
#ifdef MIRS_PKGDATADIR
  return MIRS_PKGDATADIR "/devices.profile";
#else
  return "";
#endif
}

/* path, else the device_profile option's file, else the installed file
 * if present, else the built-in table. */
mirs_status mirs__cost_profiles_load(mirs_context *ctx, const char *path,
                                     mirs__cost_profiles **out) {
  if (!ctx || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_profiles_load: NULL argument")
               : MIRS_INVALID_ARG;
  if (!path && ctx->opt.device_profile[0])
    path = ctx->opt.device_profile;
  if (path) {
    MIRS_CHECK(ctx, mirs__cost_profiles_load_file(ctx, path, out));
    return MIRS_OK;
  }
  const char *def = mirs__cost_default_path();
  FILE *f = *def ? fopen(def, "rb") : NULL;
  if (f) {
    fclose(f);
    MIRS_CHECK(ctx, mirs__cost_profiles_load_file(ctx, def, out));
    return MIRS_OK;
  }
  MIRS_CHECK(ctx, mirs__cost_profiles_builtin(ctx, out));
  return MIRS_OK;
}

/* Free the set and its devices. */
void mirs__cost_profiles_free(mirs__cost_profiles *p) {
  if (!p)
    return;
  mirs_context *ctx = p->ctx;
  mirs__core_free(ctx, p->dev);
  mirs__core_free(ctx, p->source);
  mirs__core_free(ctx, p);
}

/* Look a device up by name or alias, ignoring case. */
mirs_status mirs__cost_find(mirs_context *ctx, const mirs__cost_profiles *p, const char *name,
                            const mirs__cost_device **out) {
  if (!ctx || !p || !name || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_find: NULL argument")
               : MIRS_INVALID_ARG;
  *out = NULL;
  int32_t i = find_dev(p, p->n, name);
  if (i >= 0) {
    *out = &p->dev[i];
    return MIRS_OK;
  }
  char known[512];
  size_t len = 0;
  known[0] = '\0';
  for (int32_t j = 0; j < p->n && len < sizeof known; j++) {
    int w = snprintf(known + len, sizeof known - len, "%s%s", j ? ", " : "", p->dev[j].name);
    if (w > 0)
      len += (size_t)w;
  }
  return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "unknown device '%s' (known: %s; from %s)", name, known,
                   p->source);
}

/* The H100 profile's launch in bytes (4 us at 3.35 TB/s): the figure
 * where no profile can be read. */
#define H100_LAUNCH_BYTES 13400000

/* Device d's launch in bytes: its launch latency at its bandwidth. */
static long long launch_bytes_of(const mirs__cost_device *d) {
  double v = d->launch_s * d->hbm_bw;
  return v < 1 ? 1 : (long long)llround(v);
}

void mirs__cost_note_device(mirs_context *ctx, const mirs__cost_device *d) {
  atomic_store(&ctx->launch_bytes, launch_bytes_of(d));
}

int64_t mirs__cost_launch_bytes(mirs_context *ctx) {
  if (!ctx)
    return H100_LAUNCH_BYTES;
  long long v = atomic_load(&ctx->launch_bytes);
  if (v > 0)
    return v;
  /* (Asked in the middle of costing or generating code: a failure here
   * is the cost model's to report, so the error slot is left as it was.) */
  mirs_status es = ctx->err_status;
  char msg[MIRS__ERRMSG_SIZE], trace[MIRS__TRACE_SIZE];
  memcpy(msg, ctx->err_msg, sizeof msg);
  memcpy(trace, ctx->err_trace, sizeof trace);
  mirs__cost_profiles *p = NULL;
  const mirs__cost_device *d = NULL;
  mirs_status st = mirs__cost_profiles_load(ctx, NULL, &p);
  if (st == MIRS_OK)
    st = mirs__cost_find(ctx, p, ctx->opt.cost_device, &d);
  if (st == MIRS_OK)
    mirs__cost_note_device(ctx, d);
  mirs__cost_profiles_free(p);
  if (st != MIRS_OK) {
    ctx->err_status = es;
    memcpy(ctx->err_msg, msg, sizeof msg);
    memcpy(ctx->err_trace, trace, sizeof trace);
    return H100_LAUNCH_BYTES;
  }
  return atomic_load(&ctx->launch_bytes);
}

/* ---------------------------------------------------------------- costing */

/* Bytes per element of a dtype. */
static int64_t elsize(mirs_dtype t) {
  return t == MIRS_F32 ? 4 : 2;
}

/* Flops per output element of an elementwise op (see the file comment). */
static double elementwise_flops(mirs_op op) {
  switch (op) {
  case MIRS_OP_ADD:
  case MIRS_OP_SUB:
  case MIRS_OP_MUL:
  case MIRS_OP_SQUARE:
  case MIRS_OP_RELU:
  case MIRS_OP_ABS:
  case MIRS_OP_NEG:
  case MIRS_OP_ADD_SCALAR:
  case MIRS_OP_MUL_SCALAR:
  case MIRS_OP_RSUB_SCALAR:
  case MIRS_OP_TRANSPOSE:
  case MIRS_OP_RESHAPE:
  case MIRS_OP_PERMUTE:
  case MIRS_OP_SLICE:
    return 1;
  case MIRS_OP_CAUSAL_MASK: /* a compare of the global indices and a select */
  case MIRS_OP_CLAMP:
    return 2;
  case MIRS_OP_DIV:
  case MIRS_OP_EXP:
  case MIRS_OP_SQRT:
  case MIRS_OP_DIV_SCALAR:
  case MIRS_OP_RDIV_SCALAR:
    return SPECIAL_FLOPS;
  case MIRS_OP_SIGMOID:
  case MIRS_OP_TANH:
  case MIRS_OP_POW: /* (exp2(c * log2 x); a small natural exponent costs less, not modelled) */
    return 2 * SPECIAL_FLOPS + 1;
  case MIRS_OP_SILU:
    return SPECIAL_FLOPS + 1 + SPECIAL_FLOPS;
  case MIRS_OP_GELU:
    return SPECIAL_FLOPS + 7;
  case MIRS_OP_MATMUL:
  case MIRS_OP_SUM:
  case MIRS_OP_MEAN:
  case MIRS_OP_RMS_NORM:
  case MIRS_OP_LAYER_NORM:
  case MIRS_OP_CUSTOM:
  case MIRS_OP_INPUT:
  case MIRS_OP_OUTPUT:
  case MIRS_OP_ACCUM:
  case MIRS_OP_ACCUM_SUM:
  case MIRS_OP_ACCUM_RMS:
  case MIRS_OP_MAX:
  case MIRS_OP_ACCUM_MAX:
  case MIRS_OP_MIN:
  case MIRS_OP_ACCUM_MIN:
  case MIRS_OP_ACCUM_ONLINE:
  case MIRS_OP_COUNT:
    break;
  }
  return 1;
}

/* Special-function results (SFU) per element of op: the exps, square
 * roots and divisions elementwise_flops prices at SPECIAL_FLOPS each. */
static double special_functions(mirs_op op) {
  switch (op) {
  case MIRS_OP_DIV:
  case MIRS_OP_EXP:
  case MIRS_OP_SQRT:
  case MIRS_OP_DIV_SCALAR:
  case MIRS_OP_RDIV_SCALAR:
  case MIRS_OP_GELU:
    return 1;
  case MIRS_OP_SIGMOID:
  case MIRS_OP_TANH:
  case MIRS_OP_POW:
  case MIRS_OP_SILU:
    return 2;
  default:
    return 0;
  }
}

/* Flops of a compute op (not INPUT/OUTPUT/ACCUM*) with argument shapes
 * a (and b for binary ops) and result shape r. */
static double op_flops(mirs_op op, const mirs__shape *a, const mirs__shape *r) {
  double nr = (double)mirs__shape_numel(r);
  switch (mirs__graph_ops[op].kind) {
  case MIRS__KIND_MATMUL:
    return 2.0 * nr * (double)a->d[a->ndim - 1];
  case MIRS__KIND_REDUCE:
    return (double)mirs__shape_numel(a);
  case MIRS__KIND_RMSNORM: /* (layer_norm: a second pass for the variance) */
    return (op == MIRS_OP_LAYER_NORM ? 5.0 : 3.0) * (double)mirs__shape_numel(a);
  case MIRS__KIND_UNARY:
  case MIRS__KIND_BINARY:
  case MIRS__KIND_TRANSPOSE: /* (a move per element) */
  case MIRS__KIND_LAYOUT:
    return nr * elementwise_flops(op);
  case MIRS__KIND_CUSTOM:
  case MIRS__KIND_INPUT:
  case MIRS__KIND_OUTPUT:
  case MIRS__KIND_ACCUM:
    break;
  }
  return 0;
}

/* "kernel 3 (O = custom)" into buf, for reasons and reports. */
static const char *kernel_label(const mirs_graph *g, int32_t op, char *buf, size_t size) {
  const mirs__kop *k = &g->ops[op];
  const char *res = k->nout > 0 ? g->t[k->out[0]].name : "?";
  snprintf(buf, size, "kernel %d (%s = %s)", (int)op, res, mirs__graph_ops[k->op].name);
  return buf;
}

/* Time of a kernel from its counts and utilisations. */
static void finish_time(const mirs__cost_device *d, mirs__cost_kernel *k, double u, double ub) {
  k->flops = k->tc_flops + k->simt_flops;
  k->mem_seconds = k->bytes / (d->hbm_bw * ub);
  double tc = k->tc_flops + k->bf16_flops * (d->tc_peak / d->bf16_peak - 1.0);
  k->compute_seconds = tc / (d->tc_peak * u) + k->simt_flops / (d->f32_peak * u);
  k->fixed_seconds = d->launch_s + KERNEL_FIXED_S;
  k->seconds = k->fixed_seconds +
               (k->mem_seconds > k->compute_seconds ? k->mem_seconds : k->compute_seconds);
}

/* Predefined kernel op: inputs read once, outputs written once, each at
 * the sector bytes its walk moves (views.c: a strided operand of a view,
 * a result stored in place of a view chain). */
static void cost_predefined(const mirs__cost_device *d, const mirs_graph *g, int32_t opi,
                            const mirs__kop *op, mirs__cost_kernel *k) {
  bool half = true, bf16 = false;
  for (int32_t i = 0; i < op->nin; i++) {
    const mirs__ktensor *t = &g->t[op->in[i]];
    /* (a slice reads only the elements of x that it keeps) */
    const mirs__shape *rd = op->op == MIRS_OP_SLICE ? &g->t[op->out[0]].shape : &t->shape;
    k->bytes += (double)mirs__shape_numel(rd) * (double)elsize(t->dtype) *
                mirs__codegen_operand_sectors(g, opi, i);
    half = half && t->dtype != MIRS_F32;
    bf16 = bf16 || t->dtype == MIRS_BF16;
  }
  for (int32_t i = 0; i < op->nout; i++) {
    const mirs__ktensor *t = &g->t[op->out[i]];
    k->bytes += (double)mirs__shape_numel(&t->shape) * (double)elsize(t->dtype) *
                (i == 0 ? mirs__codegen_result_sectors(g, opi) : 1.0);
  }
  const mirs__shape *a = &g->t[op->in[0]].shape, *r = &g->t[op->out[0]].shape;
  double f = op_flops(op->op, a, r);
  if (op->op == MIRS_OP_MATMUL && half) {
    k->tc_flops = f;
    k->bf16_flops = bf16 ? f : 0; /* (at the bf16 peak) */
  } else
    k->simt_flops = f;
  k->utilisation = 1;
  finish_time(d, k, 1, 1);
}

/* The shared-memory term of a custom kernel: the bank-slot bytes its plan
 * moves through shared memory per block (smem.c: per live iteration and
 * once, bank conflicts included), over all blocks, at the shared-memory
 * bandwidth of the SMs they occupy (blocks beyond the SMs queue). */
static void cost_smem(const mirs__cost_device *d, const mirs__plan *pl, double F,
                      mirs__cost_kernel *k) {
  double B = (double)pl->blocks, busy = B < d->sms ? B : (double)d->sms;
  k->smem_bytes = B * (F * pl->smem_loop + pl->smem_once);
  k->smem_conflict = pl->smem_conflict;
  k->smem_seconds = d->smem_bw > 0 && busy > 0 ? k->smem_bytes / (d->smem_bw * busy) : 0;
}

/* Custom kernel: priced from its kernel plan (plan.h), the one the CUDA
 * generator emits.  See the file comment. */
static mirs_status cost_custom(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                               int32_t opi, const mirs__kop *op, bool tail, int32_t with,
                               mirs__cost_kernel *k) {
  const mirs__bgraph *bg = op->bg;
  int64_t limit = d->smem_per_block < MIRS__PLAN_SMEM_MAX ? d->smem_per_block : MIRS__PLAN_SMEM_MAX;
  mirs__plan pl;
  MIRS_CHECK(ctx, mirs__plan_build(ctx, g, opi, limit, ctx->opt.codegen_mma != 0, &pl));
  /* The launch's shared memory and registers: its own plan's, or for the
   * first kernel of a fused split-K pair (`with`: the second) the larger
   * of the two bodies' (cuda.c fused_smem; ptxas allots the larger). */
  int64_t smem = pl.smem;
  int32_t regs = pl.regs;
  if (with >= 0) {
    mirs__plan p2;
    mirs_status st = mirs__plan_build(ctx, g, with, limit, ctx->opt.codegen_mma != 0, &p2);
    if (st != MIRS_OK) {
      mirs__plan_free(&pl);
      return st;
    }
    if (p2.smem > smem)
      smem = p2.smem;
    if (p2.regs > regs)
      regs = p2.regs;
    mirs__plan_free(&p2);
  }
  double F = (bg->forloop > 0 ? bg->forloop : 1) * pl.live; /* the live iterations */
  double loop_tc = 0, loop_tf32 = 0, loop_simt = 0, post_simt = 0, post_tc = 0, post_tf32 = 0;
  double loop_bf16 = 0, post_bf16 = 0; /* (the part of loop_tc, post_tc in bf16) */
  double loop_slow = 0, post_slow = 0; /* peak-equivalent flops of slower MMA variants */
  double loop_sfu = 0, post_sfu = 0;   /* special-function results (SFU_FLOPS each) */
  for (int32_t i = 0; i < bg->nops; i++) {
    const mirs__bop *b = &bg->ops[i];
    const mirs__btensor *res = b->out >= 0 ? &bg->t[b->out] : NULL;
    switch (mirs__graph_ops[b->op].kind) {
    case MIRS__KIND_ACCUM: {
      double nin = (double)mirs__shape_numel(&bg->t[b->in[0]].shape);
      double nres = (double)mirs__shape_numel(&res->shape);
      if (b->op == MIRS_OP_ACCUM_ONLINE) { /* a max, two exps, a multiply-add */
        loop_simt += (2.0 * SPECIAL_FLOPS + 3.0) * nin;
        loop_sfu += 2.0 * nin;
      } else if (!pl.t[b->out].acc_mma) { /* else the MMA adds into the C fragments */
        loop_simt += b->op == MIRS_OP_ACCUM_RMS ? 2.0 * nin : nin;
      }
      if (b->op == MIRS_OP_ACCUM_RMS) {
        post_simt += (1.0 + SPECIAL_FLOPS) * nres;
        post_sfu += nres;
      }
      break;
    }
    case MIRS__KIND_UNARY:
    case MIRS__KIND_BINARY:
    case MIRS__KIND_MATMUL:
    case MIRS__KIND_REDUCE:
    case MIRS__KIND_RMSNORM:
    case MIRS__KIND_TRANSPOSE: {
      double f = op_flops(b->op, &bg->t[b->in[0]].shape, &res->shape);
      double *dst = res->post ? &post_simt : &loop_simt;
      *(res->post ? &post_sfu : &loop_sfu) +=
          (double)mirs__shape_numel(&res->shape) * special_functions(b->op);
      if (pl.op[i].mma != MIRS__MMA_NONE) {
        /* Tensor cores compute the padded rows and K columns too. */
        int r = res->shape.ndim;
        const mirs__shape *as = &bg->t[b->in[0]].shape;
        f = f * (double)pl.op[i].m_pad / (double)res->shape.d[r - 2];
        f = f * (double)pl.op[i].k_pad / (double)as->d[as->ndim - 1];
        /* (At rate r of the tensor-core peak: tf32 1/2, hopper.c) */
        double rate = mirs__hopper_rate(ctx, pl.op[i].mma);
        if (pl.op[i].mma != MIRS__MMA_TF32)
          dst = res->post ? &post_tc : &loop_tc;
        else
          dst = res->post ? &post_tf32 : &loop_tf32;
        if (rate != 1.0 && pl.op[i].mma != MIRS__MMA_TF32)
          *(res->post ? &post_slow : &loop_slow) += f * (1.0 / rate - 1.0);
        if (pl.op[i].mma != MIRS__MMA_TF32 &&
            (mirs__plan_tile_dtype(g, bg, b->in[0]) == MIRS_BF16 ||
             mirs__plan_tile_dtype(g, bg, b->in[1]) == MIRS_BF16))
          *(res->post ? &post_bf16 : &loop_bf16) += f;
      }
      *dst += f;
      break;
    }
    case MIRS__KIND_INPUT:
    case MIRS__KIND_OUTPUT:
    case MIRS__KIND_CUSTOM:
    case MIRS__KIND_LAYOUT: /* (kernel level only) */
      break;
    }
  }
  /* (The second kernel of a split-K pair run as one launch is timed over
   * its whole grid too, mirs__cost_kernel_op: its combines lengthen the
   * first kernel's blocks, so with more groups than the SMs hold at once
   * they add waves; with fewer, one wave lasts as long as one block's
   * combine.) */
  double B = (double)pl.blocks;
  k->bytes = pl.bytes;
  k->tc_flops = B * (F * (loop_tc + loop_tf32) + post_tc + post_tf32);
  k->simt_flops = B * (F * loop_simt + post_simt);
  double tf32_flops = B * (F * loop_tf32 + post_tf32);
  k->tf32_flops = tf32_flops;
  k->bf16_flops = B * (F * loop_bf16 + post_bf16);
  k->smem = smem;
  k->blocks = pl.blocks;
  k->stages = pl.stages;
  k->regs = regs;
  k->pipelined = pl.pipelined;
  k->live = pl.live;
  double u = B / d->sms;
  double ub = B / (d->hbm_saturation * d->sms);
  k->utilisation = u < 1 ? u : 1;
  /* Latency-bound loads (Little's law): the blocks resident at once keep
   * pl.inflight bytes each in flight; bandwidth is at most that over the
   * memory latency. */
  int64_t occ = smem > 0 ? d->smem_per_block / smem : 32;
  int64_t by_threads = pl.nthreads > 0 ? MAX_THREADS_PER_SM / pl.nthreads : 1;
  if (occ > by_threads)
    occ = by_threads;
  int64_t by_regs = regs > 0 && pl.nthreads > 0
                        ? REGS_PER_SM / ((int64_t)regs * pl.nthreads)
                        : 32;
  if (occ > by_regs)
    occ = by_regs;
  if (occ > 32)
    occ = 32;
  if (occ < 1)
    occ = 1;
  double resident = (double)d->sms * (double)occ;
  if (resident > B)
    resident = B;
  k->inflight = resident * pl.inflight;
  double bw = d->hbm_bw * (ub < 1 ? ub : 1);
  double latency_bw = k->inflight / d->mem_latency_s;
  if (k->inflight > 0 && latency_bw < bw)
    bw = latency_bw;
  k->flops = k->tc_flops + k->simt_flops;
  k->mem_seconds = k->bytes / bw;
  /* On-chip time of the blocks one SM runs (latency terms, file comment
   * and docs/SEARCH.md): each block's work at the SM's peak rates, tensor
   * cores (bf16 and tf32 at their peaks, slower MMA variants at theirs) and shared
   * memory overlapping within an iteration (ldmatrix of the next k-step
   * under the MMAs of this one) and the CUDA-core work after them (it
   * depends on their results); divided by the share of the peak the SM's
   * resident warps reach; plus each iteration's stage hand-over. */
  double nsm = ceil(B / d->sms); /* blocks on the busiest SM */
  double res_sm = nsm < (double)occ ? nsm : (double)occ, waves = ceil(nsm / (double)occ);
  double warps_sub = res_sm * (double)pl.nwarps / 4.0; /* per sub-partition */
  double eta = warps_sub / WARPS_TO_SATURATE;
  if (eta > 1)
    eta = 1;
  k->eta = eta;
  double tc_sm = d->tc_peak / d->sms, f32_sm = d->f32_peak / d->sms;
  double sfu_extra = SFU_FLOPS - SPECIAL_FLOPS; /* (simt flops count SPECIAL_FLOPS of each) */
  /* (bf16 and tf32 at their peaks: time at the f16 peak scaled up) */
  double x_bf16 = d->tc_peak / d->bf16_peak - 1.0, x_tf32 = d->tc_peak / d->tf32_peak;
  double it_tc = (loop_tc + x_bf16 * loop_bf16 + x_tf32 * loop_tf32 + loop_slow) / tc_sm;
  double it_smem = d->smem_bw > 0 ? pl.smem_loop / d->smem_bw : 0;
  double it_simt = (loop_simt + sfu_extra * loop_sfu) / f32_sm;
  double once_tc = (post_tc + x_bf16 * post_bf16 + x_tf32 * post_tf32 + post_slow) / tc_sm;
  double once_smem = d->smem_bw > 0 ? pl.smem_once / d->smem_bw : 0;
  double once_simt = (post_simt + sfu_extra * post_sfu) / f32_sm;
  /* Under causal tile skipping blocks run different numbers of
   * iterations; when all are resident at once (one wave) the kernel lasts
   * as long as the longest, the block of the last query rows, not the
   * average the bytes and flops use. */
  double Fb = F;
  if (pl.skip.on && waves <= 1) {
    int64_t last[MIRS__GRID];
    for (int dd = 0; dd < MIRS__GRID; dd++)
      last[dd] = bg->grid[dd] > 0 ? bg->grid[dd] - 1 : 0;
    Fb = (double)mirs__plan_fend(&pl, bg, last);
  }
  double block = Fb * ((it_tc > it_smem ? it_tc : it_smem) + it_simt) +
                 (once_tc > once_smem ? once_tc : once_smem) + once_simt;
  cost_smem(d, &pl, F, k);
  /* Split strips of the register chain complete each row max or sum the
   * iteration needs across the strip's warps through shared memory: one
   * more barrier-separated hand-over per such value (as cuda.c counts them
   * in the kernel's comment). */
  double hand_overs = 1;
  if (pl.chain.on && pl.chain.ks > 1)
    for (int32_t t = 0; t < bg->nt; t++)
      hand_overs += pl.t[t].frag == MIRS__FRAG_ROW && bg->t[t].producer >= 0 &&
                    mirs__graph_ops[bg->ops[bg->t[t].producer].op].kind == MIRS__KIND_REDUCE;
  double on = eta > 0 ? nsm * block / eta + waves * Fb * hand_overs * ITER_SYNC_S : 0;
  k->compute_seconds = on;
  /* Without a pipeline a block waits for its loads, then computes; with
   * one, loads of later iterations overlap the compute of this one, and
   * only one iteration of the shorter side is exposed (the first loads
   * of a compute-bound kernel, the last compute of a memory-bound one):
   * of two variants that both saturate HBM, the finer pipeline wins.
   * (The latency of the first stage is in mem_seconds: Little's law.) */
  double lo = k->mem_seconds < on ? k->mem_seconds : on;
  double hi = k->mem_seconds < on ? on : k->mem_seconds;
  double body = pl.pipelined ? hi + lo / F : k->mem_seconds + on;
  k->fixed_seconds = tail ? 0 : d->launch_s + KERNEL_FIXED_S;
  k->occupancy = (int32_t)occ;
  k->seconds = k->fixed_seconds + body;
  char label[160];
  if (!pl.feasible) {
    k->feasible = false;
    snprintf(k->reason, sizeof k->reason, "%s: %s on %s", kernel_label(g, opi, label, sizeof label),
             pl.reason, d->name);
  } else if (pl.nthreads > d->max_threads_per_block) {
    k->feasible = false;
    snprintf(k->reason, sizeof k->reason, "%s: %lld threads per block exceed the %d allowed on %s",
             kernel_label(g, opi, label, sizeof label), (long long)pl.nthreads,
             (int)d->max_threads_per_block, d->name);
  }
  if (!k->feasible)
    k->seconds = INFINITY;
  mirs__plan_free(&pl);
  return MIRS_OK;
}

/* g as views.c must see it to cost it on device d: which layout op is
 * a view and which a copy kernel weighs a launch in bytes of the device
 * g's own context selects (copy_wins), so where that is not d's (a cost
 * asked for another device than the options', or by another context), a
 * copy of g held by a child of ctx noted with d, into *copy (released by
 * off_device); else g itself and *copy NULL.  The search costs with the
 * options' device: no copy there. */
static mirs_status on_device(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                             mirs_context **child, mirs_graph **copy) {
  *child = NULL;
  *copy = NULL;
  if (mirs__cost_launch_bytes(g->ctx) == launch_bytes_of(d))
    return MIRS_OK;
  MIRS_CHECK(ctx, mirs__core_context_child(ctx, child));
  mirs__cost_note_device(*child, d);
  mirs_status st = mirs__graph_clone_in(*child, g, copy);
  if (st != MIRS_OK) {
    mirs__core_context_merge(*child);
    *child = NULL;
    MIRS_CHECK(ctx, st);
  }
  return MIRS_OK;
}

/* Release on_device's copy and its context. */
static void off_device(mirs_context *child, mirs_graph *copy) {
  mirs__graph_free(copy);
  mirs__core_context_merge(child);
}

/* Cost of one kernel op. */
mirs_status mirs__cost_kernel_op(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                                 int32_t op, mirs__cost_kernel *out) {
  if (!ctx || !d || !g || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_kernel_op: NULL argument")
               : MIRS_INVALID_ARG;
  if (op < 0 || op >= g->nops)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "kernel op %d does not exist (%d ops)", (int)op,
                     (int)g->nops);
  mirs_context *child;
  mirs_graph *copy;
  MIRS_CHECK(ctx, on_device(ctx, d, g, &child, &copy));
  if (copy) {
    mirs_status st = mirs__cost_kernel_op(ctx, d, copy, op, out);
    off_device(child, copy);
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  memset(out, 0, sizeof *out);
  out->op = op;
  out->feasible = true;
  const mirs__kop *k = &g->ops[op];
  if (k->op != MIRS_OP_CUSTOM) {
    if (k->nin < 1 || k->nout < 1)
      return MIRS_FAIL(ctx, MIRS_INTERNAL, "kernel op %d has no input or output", (int)op);
    out->view = mirs__codegen_is_view(g, op);
    if (!out->view) /* (a view moves nothing and launches nothing) */
      cost_predefined(d, g, op, k, out);
    return MIRS_OK;
  }
  if (!k->bg)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "custom kernel op %d has no block graph", (int)op);
  out->custom = true;
  /* A split-K pair run as one launch (codegen_fuse_split_k, plan.h): the
   * first kernel is priced as itself plus the cudaMemsetAsync that zeroes
   * the arrival counters before it (a launch_s, honestly: it is one more
   * operation on the stream), at the occupancy of the launch (the larger
   * body's shared memory and registers); the second only as its tail:
   * its grid's combines without a launch or KERNEL_FIXED_S (the time the
   * launch lasts beyond the first kernel's work: one block's combine
   * while the groups fit the SMs at once, more waves beyond). */
  mirs__splitk_pair pair;
  out->split_k = (int8_t)mirs__plan_splitk_role(ctx, g, op, &pair);
  MIRS_CHECK(ctx, cost_custom(ctx, d, g, op, k, out->split_k == MIRS__SPLITK_TAIL,
                              out->split_k == MIRS__SPLITK_HEAD ? pair.k2 : -1, out));
  if (out->split_k == MIRS__SPLITK_HEAD && out->feasible) {
    out->seconds += d->launch_s;
    out->fixed_seconds += d->launch_s;
  }
  return MIRS_OK;
}

/* Sum the kernels of g. */
mirs_status mirs__cost_graph(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                             mirs__cost_result *out) {
  if (!ctx || !d || !g || !out)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_graph: NULL argument")
               : MIRS_INVALID_ARG;
  mirs_context *child;
  mirs_graph *copy;
  MIRS_CHECK(ctx, on_device(ctx, d, g, &child, &copy));
  if (copy) {
    mirs_status st = mirs__cost_graph(ctx, d, copy, out);
    off_device(child, copy);
    MIRS_CHECK(ctx, st);
    return MIRS_OK;
  }
  memset(out, 0, sizeof *out);
  out->feasible = true;
  for (int32_t i = 0; i < g->nops; i++) {
    mirs__cost_kernel k;
    MIRS_CHECK(ctx, mirs__cost_kernel_op(ctx, d, g, i, &k));
    out->kernels += !k.view && k.split_k != MIRS__SPLITK_TAIL; /* (launches) */
    out->bytes += k.bytes;
    out->flops += k.flops;
    if (k.smem > out->smem_peak)
      out->smem_peak = k.smem;
    if (!k.feasible && out->feasible) {
      out->feasible = false;
      memcpy(out->reason, k.reason, sizeof out->reason);
    }
    out->seconds += k.seconds;
    out->fixed_seconds += k.fixed_seconds;
    out->mem_seconds += k.mem_seconds;
    out->compute_seconds += k.compute_seconds;
  }
  if (!out->feasible)
    out->seconds = INFINITY;
  return MIRS_OK;
}

/* One line per kernel and a total line. */
mirs_status mirs__cost_print(mirs_context *ctx, const mirs__cost_device *d, const mirs_graph *g,
                             mirs__buf *b) {
  if (!ctx || !d || !g || !b)
    return ctx ? MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__cost_print: NULL argument")
               : MIRS_INVALID_ARG;
  mirs__cost_result r;
  MIRS_CHECK(ctx, mirs__cost_graph(ctx, d, g, &r));
  for (int32_t i = 0; i < g->nops; i++) {
    mirs__cost_kernel k;
    char label[160];
    MIRS_CHECK(ctx, mirs__cost_kernel_op(ctx, d, g, i, &k));
    mirs__buf_printf(
        b, "%s: %.3f us (memory %.3f us, compute %.3f us, launch %.3f us), %.0f bytes, %.0f flops",
        kernel_label(g, i, label, sizeof label), k.seconds * 1e6, k.mem_seconds * 1e6,
        k.compute_seconds * 1e6, d->launch_s * 1e6, k.bytes, k.flops);
    if (k.custom)
      mirs__buf_printf(b, ", %lld blocks (utilisation %.2f), smem %lld bytes, %d stage%s%s",
                       (long long)k.blocks, k.utilisation, (long long)k.smem, (int)k.stages,
                       k.stages == 1 ? "" : "s", k.pipelined ? " (cp.async pipeline)" : "");
    if (k.custom && d->smem_bw > 0)
      mirs__buf_printf(b, ", shared memory %.3f us (%.0f bytes, bank conflicts up to %.0fx)",
                       k.smem_seconds * 1e6, k.smem_bytes, k.smem_conflict);
    if (k.split_k == MIRS__SPLITK_HEAD)
      mirs__buf_printf(b, ", one launch with kernel %d (split-K pair; + %.3f us counter memset)",
                       (int)i + 1, d->launch_s * 1e6);
    else if (k.split_k == MIRS__SPLITK_TAIL)
      mirs__buf_printf(b, ", runs in kernel %d's launch (one block's combine)", (int)i - 1);
    if (!k.feasible)
      mirs__buf_printf(b, ", INFEASIBLE: %s", k.reason);
    mirs__buf_puts(b, "\n");
  }
  mirs__buf_printf(
      b, "total on %s: %.3f us, %d kernel%s, %.0f bytes, %.0f flops, smem peak %lld bytes%s%s\n",
      d->name, r.seconds * 1e6, (int)r.kernels, r.kernels == 1 ? "" : "s", r.bytes, r.flops,
      (long long)r.smem_peak, r.feasible ? "" : ", infeasible: ", r.feasible ? "" : r.reason);
  return b->failed ? MIRS_NOMEM : MIRS_OK;
}
