/* SPDX-License-Identifier: MIT */
/* src/core/options.c - options by name, from the options.def table.
 *
 * The table is the only place an option is written: it yields the struct
 * fields (core.h), the defaults, parsing with range checks, the help text
 * and the list of non-default values.  Names match with '-' and '_'
 * interchangeable. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

typedef struct optdesc {
  const char *name;
  mirs__opt_type type;
  double def, lo, hi; /* as doubles for the help text; ints below */
  int64_t idef, ilo, ihi; /* STR: bounds of each list item when ilo <= ihi */
  const char *sdef; /* STR default; NULL for other types */
  size_t offset;
  const char *help;
} optdesc;

#define MIRS__OPT_T_INT MIRS__OPT_INT
#define MIRS__OPT_T_BOOL MIRS__OPT_BOOL
#define MIRS__OPT_T_DOUBLE MIRS__OPT_DOUBLE
#define MIRS__OPT_T_STR MIRS__OPT_STR
/* The default as a number (0 for STR) and as text (NULL unless STR). */
#define MIRS__OPT_NUM_INT(def) (def)
#define MIRS__OPT_NUM_BOOL(def) (def)
#define MIRS__OPT_NUM_DOUBLE(def) (def)
#define MIRS__OPT_NUM_STR(def) 0
#define MIRS__OPT_TXT_INT(def) NULL
#define MIRS__OPT_TXT_BOOL(def) NULL
#define MIRS__OPT_TXT_DOUBLE(def) NULL
#define MIRS__OPT_TXT_STR(def) (def)

static const optdesc opt_table[] = {
#define MIRS_OPTION(name, type, def, lo, hi, help)                                             \
  {#name,                                                                                     \
   MIRS__OPT_T_##type,                                                                        \
   (double)(MIRS__OPT_NUM_##type(def)),                                                       \
   (double)(lo),                                                                              \
   (double)(hi),                                                                              \
   (int64_t)(MIRS__OPT_NUM_##type(def)),                                                      \
   (int64_t)(lo),                                                                             \
   (int64_t)(hi),                                                                             \
   MIRS__OPT_TXT_##type(def),                                                                 \
   offsetof(mirs__options, name),                                                             \
   help},
#include "options.def"
#undef MIRS_OPTION
};

#define NOPTS (sizeof opt_table / sizeof opt_table[0])

/* Fill o with the table's defaults. */
void mirs__core_options_defaults(mirs__options *o) {
  for (size_t i = 0; i < NOPTS; i++) {
    char *field = (char *)o + opt_table[i].offset;
    if (opt_table[i].type == MIRS__OPT_DOUBLE)
      memcpy(field, &opt_table[i].def, sizeof(double));
    else if (opt_table[i].type == MIRS__OPT_STR)
      snprintf(field, MIRS__OPT_STR_SIZE, "%s", opt_table[i].sdef);
    else
      memcpy(field, &opt_table[i].idef, sizeof(int64_t));
  }
}

/* Compare option names treating '-' and '_' as equal. */
static bool name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char ca = *a == '-' ? '_' : *a, cb = *b == '-' ? '_' : *b;
    if (ca != cb)
      return false;
  }
  return *a == *b;
}

/* Table entry for name, or NULL. */
static const optdesc *find(const char *name) {
  for (size_t i = 0; i < NOPTS; i++)
    if (name_eq(opt_table[i].name, name))
      return &opt_table[i];
  return NULL;
}

/* Whether name was set through mirs_option_set. */
bool mirs__core_option_given(const mirs_context *ctx, const char *name) {
  const optdesc *d = find(name);
  return d && ctx->opt_given[d - opt_table];
}

/* Parse a boolean spelling. */
static bool parse_bool(const char *v, int64_t *out) {
  static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(v, yes[i])) {
      *out = 1;
      return true;
    }
    if (!strcasecmp(v, no[i])) {
      *out = 0;
      return true;
    }
  }
  return false;
}

/* Parse a comma-separated integer list with per-item bounds. */
bool mirs__core_parse_int_list(const char *text, int64_t lo, int64_t hi, int64_t *out, int cap,
                               int *n, char *why, size_t whysize) {
  *n = 0;
  const char *p = text;
  for (;;) {
    while (*p == ' ' || *p == '\t')
      p++;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno) {
      snprintf(why, whysize, "expects a comma-separated list of integers, got '%s'", text);
      return false;
    }
    if (v < lo || v > hi) {
      snprintf(why, whysize, "list item %lld is out of range [%" PRId64 ", %" PRId64 "]", v, lo,
               hi);
      return false;
    }
    if (*n >= cap) {
      snprintf(why, whysize, "list has more than %d items", cap);
      return false;
    }
    out[(*n)++] = v;
    p = end;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '\0')
      return true;
    if (*p != ',') {
      snprintf(why, whysize, "expects a comma-separated list of integers, got '%s'", text);
      return false;
    }
    p++;
  }
}

static mirs_status set_value(mirs_context *ctx, const optdesc *d, const char *value);

/* Set an option from text, checking type and range. */
mirs_status mirs_option_set(mirs_context *ctx, const char *name, const char *value) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!name || !value)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_option_set: NULL name or value");
  const optdesc *d = find(name);
  if (!d)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "unknown option '%s'", name);
  mirs_status st = set_value(ctx, d, value);
  if (st == MIRS_OK)
    ctx->opt_given[d - opt_table] = 1;
  if (st == MIRS_OK && (!strcmp(d->name, "cost_device") || !strcmp(d->name, "device_profile")))
    atomic_store(&ctx->launch_bytes, 0); /* (another device: resolved again when asked) */
  return st;
}

/* Set d's field in ctx from text, checking type and range. */
static mirs_status set_value(mirs_context *ctx, const optdesc *d, const char *value) {
  char *field = (char *)&ctx->opt + d->offset;
  if (d->type == MIRS__OPT_STR) {
    if (strlen(value) >= MIRS__OPT_STR_SIZE)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s': value longer than %d characters",
                       d->name, MIRS__OPT_STR_SIZE - 1);
    if (d->ilo <= d->ihi) {
      int64_t items[MIRS__OPT_STR_SIZE];
      int n;
      char why[160];
      if (!mirs__core_parse_int_list(value, d->ilo, d->ihi, items, MIRS__OPT_STR_SIZE, &n, why,
                                     sizeof why))
        return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s' %s", d->name, why);
    }
    snprintf(field, MIRS__OPT_STR_SIZE, "%s", value);
    return MIRS_OK;
  }
  if (d->type == MIRS__OPT_DOUBLE) {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (end == value || *end || errno || !isfinite(v))
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s' expects a number, got '%s'", d->name,
                       value);
    if (v < d->lo || v > d->hi)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s' must be in [%g, %g], got %g", d->name,
                       d->lo, d->hi, v);
    memcpy(field, &v, sizeof v);
    return MIRS_OK;
  }
  int64_t v;
  if (d->type == MIRS__OPT_BOOL) {
    if (!parse_bool(value, &v))
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "option '%s' expects a boolean (true/false, yes/no, on/off, 1/0), got '%s'",
                       d->name, value);
  } else {
    char *end;
    errno = 0;
    /* Decimal (a leading 0 is not octal: --seed=010 is ten), or hex with 0x. */
    const char *q = value;
    while (*q == ' ' || *q == '\t' || *q == '+' || *q == '-')
      q++;
    int base = q[0] == '0' && (q[1] == 'x' || q[1] == 'X') ? 16 : 10;
    long long ll = strtoll(value, &end, base);
    if (end == value || *end || errno)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "option '%s' expects an integer, got '%s'", d->name,
                       value);
    v = ll;
    if (v < d->ilo || v > d->ihi)
      return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                       "option '%s' must be in [%" PRId64 ", %" PRId64 "], got %" PRId64, d->name,
                       d->ilo, d->ihi, v);
  }
  memcpy(field, &v, sizeof v);
  return MIRS_OK;
}

/* Format the current value of d in o. */
static void format_value(const optdesc *d, const mirs__options *o, char *buf, size_t size) {
  const char *field = (const char *)o + d->offset;
  if (d->type == MIRS__OPT_STR) {
    snprintf(buf, size, "%s", field);
  } else if (d->type == MIRS__OPT_DOUBLE) {
    double v;
    memcpy(&v, field, sizeof v);
    snprintf(buf, size, "%g", v);
  } else {
    int64_t v;
    memcpy(&v, field, sizeof v);
    if (d->type == MIRS__OPT_BOOL)
      snprintf(buf, size, "%s", v ? "true" : "false");
    else
      snprintf(buf, size, "%" PRId64, v);
  }
}

/* Read an option as text. */
mirs_status mirs_option_get(const mirs_context *ctx, const char *name, char *buf, size_t size) {
  if (!ctx || !name || !buf || !size)
    return MIRS_INVALID_ARG;
  const optdesc *d = find(name);
  if (!d)
    return MIRS_FAIL((mirs_context *)(uintptr_t)ctx, MIRS_INVALID_ARG, "unknown option '%s'", name);
  format_value(d, &ctx->opt, buf, size);
  return MIRS_OK;
}

/* Read an integer or boolean option. */
mirs_status mirs_option_get_int(const mirs_context *ctx, const char *name, int64_t *value) {
  if (!ctx || !name || !value)
    return MIRS_INVALID_ARG;
  const optdesc *d = find(name);
  if (!d || d->type == MIRS__OPT_DOUBLE || d->type == MIRS__OPT_STR)
    return MIRS_FAIL((mirs_context *)(uintptr_t)ctx, MIRS_INVALID_ARG,
                     "no integer option '%s'", name);
  memcpy(value, (const char *)&ctx->opt + d->offset, sizeof *value);
  return MIRS_OK;
}

/* Number of options. */
size_t mirs_option_count(void) {
  return NOPTS;
}

/* Name of option index. */
const char *mirs_option_name(size_t index) {
  return index < NOPTS ? opt_table[index].name : NULL;
}

/* Help line of option index. */
const char *mirs_option_help(size_t index, char *buf, size_t size) {
  if (!buf || !size)
    return NULL;
  if (index >= NOPTS) {
    buf[0] = '\0';
    return buf;
  }
  const optdesc *d = &opt_table[index];
  char flag[64];
  snprintf(flag, sizeof flag, "--%s=%s", d->name,
           d->type == MIRS__OPT_INT    ? "N"
           : d->type == MIRS__OPT_BOOL ? "BOOL"
           : d->type == MIRS__OPT_STR  ? (d->ilo <= d->ihi ? "LIST" : "TEXT")
                                       : "X");
  for (char *p = flag; *p; p++)
    if (*p == '_')
      *p = '-';
  if (d->type == MIRS__OPT_STR && d->ilo <= d->ihi)
    snprintf(buf, size, "%-28s %s (default \"%s\", items in [%" PRId64 ", %" PRId64 "])", flag,
             d->help, d->sdef, d->ilo, d->ihi);
  else if (d->type == MIRS__OPT_STR)
    snprintf(buf, size, "%-28s %s (default \"%s\")", flag, d->help, d->sdef);
  else if (d->type == MIRS__OPT_DOUBLE)
    snprintf(buf, size, "%-28s %s (default %g, range [%g, %g])", flag, d->help, d->def, d->lo,
             d->hi);
  else if (d->type == MIRS__OPT_BOOL)
    snprintf(buf, size, "%-28s %s (default %s)", flag, d->help, d->idef ? "true" : "false");
  else
    snprintf(buf, size, "%-28s %s (default %" PRId64 ", range [%" PRId64 ", %" PRId64 "])", flag,
             d->help, d->idef, d->ilo, d->ihi);
  return buf;
}

/* Space-separated name=value for options that differ from the default. */
void mirs_options_nondefault(const mirs_context *ctx, char *buf, size_t size) {
  if (!buf || !size)
    return;
  buf[0] = '\0';
  if (!ctx)
    return;
  mirs__options def;
  mirs__core_options_defaults(&def);
  size_t len = 0;
  for (size_t i = 0; i < NOPTS; i++) {
    const optdesc *d = &opt_table[i];
    const char *dv = (const char *)&def + d->offset, *cv = (const char *)&ctx->opt + d->offset;
    if (d->type == MIRS__OPT_STR ? !strcmp(dv, cv) : !memcmp(dv, cv, 8))
      continue;
    char v[MIRS__OPT_STR_SIZE];
    format_value(d, &ctx->opt, v, sizeof v);
    int n = snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "", d->name, v);
    if (n < 0 || (size_t)n >= size - len)
      return;
    len += (size_t)n;
  }
}
