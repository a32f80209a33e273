/* SPDX-License-Identifier: MIT */
/* src/cli/cli.c - the mirsearch command line: option parsing, the search
 * (with its output directory and report.json), the `check`, `eval` and
 * `verify` commands, --help and --version.
 *
 * The CLI is a client of the public API only (mirsearch.h); everything it
 * knows about options comes from the library's option table, so a new
 * entry in options.def becomes a --NAME=VALUE flag and a --help line
 * without touching this file.
 *
 * Invariants:
 *  - Requested output goes to `out`, everything else (messages, library
 *    log, parse diagnostics) to `err`.  Output is produced only after the
 *    work it reports has succeeded, so a failing run writes nothing to
 *    `out`.
 *  - Every failure is reported once: parse diagnostics already delivered
 *    through the log callback are not repeated as "mirsearch: error:".
 *  - Exit status: 0 done, 2 bad input or usage, 3 resource or internal
 *    error (mirs_status_exit_code for library failures).
 *  - No state outlives a call except getopt's globals, which are reset on
 *    entry (optind = 0 asks glibc and musl for a full reinitialisation). */
#include "config.h"

#include <errno.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mirsearch.h"

#define PROG "mirsearch"

/* Exit statuses (DESIGN.md, "Outputs and exit status"). */
enum { EXIT_OK = 0, EXIT_DIFFERENT = 1, EXIT_USAGE = 2, EXIT_RESOURCE = 3, EXIT_STOPPED = 4 };

/* getopt_long return values for options without a short form; library
 * options are OPT_LIB + their index in the library's table. */
enum {
  OPT_SEED = 256,
  OPT_SET,
  OPT_OUT,
  OPT_THREADS,
  OPT_DEVICE,
  OPT_JSON,
  OPT_RESUME,
  OPT_LIB = 1024
};

/* Options every build has, independent of the library's table. */
static const struct option fixed_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"seed", required_argument, NULL, OPT_SEED},
    {"set", required_argument, NULL, OPT_SET},
    {"out", required_argument, NULL, OPT_OUT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"json", no_argument, NULL, OPT_JSON},
    {"resume", required_argument, NULL, OPT_RESUME},
};
#define NFIXED (sizeof fixed_options / sizeof fixed_options[0])

/* Everything one invocation owns. */
typedef struct cli {
  FILE *out, *err;
  mirs_context *ctx;
  struct option *longopts; /* fixed, then library options, then a zero row */
  char *dashed;            /* storage for the '-' spellings of option names */
  int help, version;
  const char *out_dir; /* --out, or NULL: derived from the program name */
  const char *resume;  /* --resume=DIR */
  int json;            /* --json: the report on stdout */
} cli;

/* Summary of one evaluated output, as printed by `eval`. */
typedef struct summary {
  double sum, l2, min, max, checksum;
} summary;

/* Print "mirsearch: error: <message>" and a newline on err. */
static void cli_error(cli *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Print "mirsearch: error: <message>" and a newline on err. */
static void cli_error(cli *c, const char *fmt, ...) {
  va_list ap;
  fputs(PROG ": error: ", c->err);
  va_start(ap, fmt);
  vfprintf(c->err, fmt, ap);
  va_end(ap);
  fputc('\n', c->err);
}

/* Print the hint that follows every usage error; returns EXIT_USAGE. */
static int cli_hint(cli *c) {
  fputs("Try '" PROG " --help'.\n", c->err);
  return EXIT_USAGE;
}

/* Log callback: each library message (already formatted) on its own line. */
static void cli_log(void *user, mirs_log_level level, const char *message) {
  FILE *err = user;
  (void)level;
  fputs(message, err);
  fputc('\n', err);
}

/* Report a failed library call and return the exit status for it.  A
 * parse whose diagnostics the log callback already printed (parsed != 0
 * and mirs_diag_count > 0) is not reported a second time. */
static int cli_fail(cli *c, mirs_status s, int parsed) {
  if (!(parsed && mirs_diag_count(c->ctx) > 0)) {
    const char *msg = mirs_last_error(c->ctx);
    cli_error(c, "%s", msg[0] ? msg : mirs_status_str(s));
  }
  int code = mirs_status_exit_code(s);
  return code == EXIT_OK ? EXIT_RESOURCE : code;
}

/* Whether two option names are equal when '-' and '_' are identified. */
static int same_option_name(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
    if (x != y)
      return 0;
  }
  return *a == *b;
}

/* Build c->longopts: the fixed options, then for each library option not
 * shadowed by a fixed one its '_' spelling and, when different, its '-'
 * spelling.  Returns 0, or -1 when out of memory. */
static int build_longopts(cli *c) {
  size_t n = mirs_option_count(), chars = 0;
  for (size_t i = 0; i < n; i++)
    chars += strlen(mirs_option_name(i)) + 1;
  c->longopts = calloc(NFIXED + 2 * n + 1, sizeof *c->longopts);
  c->dashed = malloc(chars + 1);
  if (!c->longopts || !c->dashed)
    return -1;
  size_t k = 0;
  char *next = c->dashed;
  for (; k < NFIXED; k++)
    c->longopts[k] = fixed_options[k];
  for (size_t i = 0; i < n; i++) {
    const char *name = mirs_option_name(i);
    int shadowed = 0;
    for (size_t j = 0; j < NFIXED; j++)
      shadowed |= same_option_name(name, fixed_options[j].name);
    if (shadowed)
      continue;
    struct option o = {name, required_argument, NULL, OPT_LIB + (int)i};
    c->longopts[k++] = o;
    if (strchr(name, '_')) {
      size_t len = strlen(name);
      for (size_t j = 0; j <= len; j++)
        next[j] = name[j] == '_' ? '-' : name[j];
      o.name = next;
      next += len + 1;
      c->longopts[k++] = o;
    }
  }
  /* calloc left the terminating row zeroed. */
  return 0;
}

/* Set library option name to value; on failure report the library's
 * message as a usage error and return EXIT_USAGE, else EXIT_OK. */
static int set_option(cli *c, const char *name, const char *value) {
  if (mirs_option_set(c->ctx, name, value) == MIRS_OK)
    return EXIT_OK;
  cli_error(c, "%s", mirs_last_error(c->ctx));
  return cli_hint(c);
}

/* Handle `--set NAME=VALUE`. */
static int set_assignment(cli *c, const char *arg) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg) {
    cli_error(c, "--set expects NAME=VALUE, got '%s'", arg);
    return cli_hint(c);
  }
  size_t len = (size_t)(eq - arg);
  char *name = malloc(len + 1);
  if (!name) {
    cli_error(c, "out of memory");
    return EXIT_RESOURCE;
  }
  memcpy(name, arg, len);
  name[len] = '\0';
  int rc = set_option(c, name, eq + 1);
  free(name);
  return rc;
}

/* Raise the log_level option by one (capped at trace). */
static int raise_verbosity(cli *c) {
  int64_t level = MIRS_LOG_INFO;
  if (mirs_option_get_int(c->ctx, "log_level", &level) != MIRS_OK)
    return cli_fail(c, mirs_last_status(c->ctx), 0);
  if (level >= MIRS_LOG_TRACE)
    return EXIT_OK;
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, level + 1);
  return set_option(c, "log_level", buf);
}

/* Whether name (up to its first '=') is spelt exactly like a long option. */
static int is_long_option(const cli *c, const char *name) {
  size_t len = strcspn(name, "=");
  for (const struct option *o = c->longopts; o->name; o++)
    if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
      return 1;
  return 0;
}

/* Report the option getopt rejected (unknown, ambiguous, missing its
 * argument or given one it does not take) as a usage error.  optopt is
 * the short option character, or 0 / a code >= 256 for long options;
 * glibc also sets it to a short alias's character when `--help=x` gives
 * an argument to a flag, which is why argv[optind - 1] is consulted. */
static int bad_option(cli *c, int ch, char **argv) {
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  int is_long = arg[0] == '-' && arg[1] == '-';
  int len = (int)strcspn(arg, "=");
  if (optopt > 0 && optopt < 256 && !(is_long && strchr("hVqv", optopt))) {
    if (ch == ':')
      cli_error(c, "option '-%c' requires an argument", optopt);
    else
      cli_error(c, "unknown option '-%c'", optopt);
  } else if (ch == ':') {
    cli_error(c, "option '%.*s' requires an argument", len, arg);
  } else if (is_long && arg[len] == '=' && is_long_option(c, arg + 2)) {
    cli_error(c, "option '%.*s' does not take an argument", len, arg);
  } else {
    cli_error(c, "unknown or ambiguous option '%.*s'", len, arg);
  }
  return cli_hint(c);
}

/* Parse the options in argv (permuting operands to the end) and apply
 * them to the context in order.  Returns EXIT_OK or an exit status. */
static int parse_options(cli *c, int argc, char **argv) {
  optind = 0; /* full reinitialisation: this function may run many times */
  opterr = 0; /* every message goes to c->err, not to stderr */
  int ch, index, rc = EXIT_OK;
  while (rc == EXIT_OK && (ch = getopt_long(argc, argv, ":hVqv", c->longopts, &index)) != -1) {
    switch (ch) {
    case 'h':
      c->help = 1;
      break;
    case 'V':
      c->version = 1;
      break;
    case 'q':
      rc = set_option(c, "log_level", "0");
      break;
    case 'v':
      rc = raise_verbosity(c);
      break;
    case OPT_SEED:
      rc = set_option(c, "seed", optarg);
      break;
    case OPT_SET:
      rc = set_assignment(c, optarg);
      break;
    case OPT_OUT:
      if (!optarg[0]) {
        cli_error(c, "--out needs a directory name");
        rc = cli_hint(c);
      }
      c->out_dir = optarg;
      break;
    case OPT_THREADS: {
      char *end;
      errno = 0;
      long n = strtol(optarg, &end, 10);
      if (end == optarg || *end || errno || n < 1 || n > 4096) {
        cli_error(c, "--threads expects a number of threads from 1 to 4096, got '%s'", optarg);
        rc = cli_hint(c);
      } else {
        rc = set_option(c, "threads", optarg);
      }
      break;
    }
    case OPT_RESUME:
      if (!optarg[0]) {
        cli_error(c, "--resume needs the output directory of a stopped search");
        rc = cli_hint(c);
      }
      c->resume = optarg;
      break;
    case OPT_DEVICE:
      rc = set_option(c, "cost_device", optarg);
      break;
    case OPT_JSON:
      c->json = 1;
      break;
    case '?':
    case ':':
      rc = bad_option(c, ch, argv);
      break;
    default:
      if (ch >= OPT_LIB && (size_t)(ch - OPT_LIB) < mirs_option_count()) {
        rc = set_option(c, mirs_option_name((size_t)(ch - OPT_LIB)), optarg);
      } else {
        cli_error(c, "internal error: unexpected option code %d", ch);
        rc = EXIT_RESOURCE;
      }
      break;
    }
  }
  return rc;
}

/* Write the usage text, the commands and every option to c->out. */
static void print_help(cli *c) {
  FILE *o = c->out;
  fputs("Usage: " PROG " [OPTIONS] check FILE\n"
        "       " PROG " [OPTIONS] eval FILE [--seed N]\n"
        "       " PROG " [OPTIONS] verify PROGRAM CANDIDATE\n"
        "       " PROG " [OPTIONS] FILE.graph   search, verify and rank the equivalent µGraphs\n"
        "\n"
        "Superoptimizer for tensor programs (.graph) and µGraphs.\n"
        "\n"
        "Commands:\n"
        "  check FILE   parse and check a .graph program or µGraph file and print\n"
        "               its canonical form\n"
        "  eval FILE    evaluate in float64 on seeded random inputs; print one line\n"
        "               per output: NAME dtype[dims] sum=S l2=L min=A max=B checksum=C\n"
        "               (checksum = sum of v[i] * (1 + (i mod 97)/97), row-major)\n"
        "  verify PROGRAM CANDIDATE\n"
        "               check that a µGraph computes the program's function: finite-\n"
        "               field fingerprints with a false-accept bound, then float64;\n"
        "               exit 0 when equivalent, 1 when not\n"
        "\n"
        "Options (anywhere on the command line):\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show version and build information and exit\n"
        "  -q, --quiet           only report errors (log_level=0)\n"
        "  -v, --verbose         more messages (raise log_level by one; repeatable)\n"
        "      --seed=N          seed for random inputs (the library option 'seed')\n"
        "      --set NAME=VALUE  set any library option below\n"
        "\n"
        "Search options (with FILE.graph):\n"
        "      --out=DIR         output directory (default: PROGRAM.out, from the\n"
        "                        program's name): best.ugraph, candidates/, report.json\n"
        "      --threads=N       worker threads (default: the CPUs this process may\n"
        "                        use); the results do not depend on it\n"
        "      --device=NAME     device profile that ranks results (H100, H200, A100)\n"
        "      --json            print report.json on stdout\n"
        "      --time-limit=S, --max-states=N, --max-memory=BYTES\n"
        "                        stop early: the report says complete: false, DIR/checkpoint\n"
        "                        keeps the open work, exit status 4 (so do SIGTERM,\n"
        "                        SIGINT and SIGUSR1)\n"
        "      --checkpoint-interval=S  also checkpoint every S seconds (default 600)\n"
        "      --resume=DIR      continue the stopped search in DIR (on any --threads);\n"
        "                        it ends with the results of an uninterrupted run\n"
        "\n"
        "Library options ('-' and '_' are interchangeable in names):\n",
        o);
  char buf[512];
  for (size_t i = 0; i < mirs_option_count(); i++)
    fprintf(o, "  %s\n", mirs_option_help(i, buf, sizeof buf));
  fputs("\n"
        "Exit status: 0 done, 2 bad input or usage, 3 resource or internal error,\n"
        "4 stopped with a checkpoint (resumable).\n",
        o);
}

/* Write the version, build information and the header/library version
 * agreement to c->out. */
static void print_version(cli *c) {
  int match =
      mirs_version() == MIRS_VERSION && strcmp(mirs_version_string(), MIRS_VERSION_STRING) == 0;
  fprintf(c->out, PROG " %s\n", mirs_version_string());
  fprintf(c->out, "license: MIT (see LICENSE; SPDX-License-Identifier: MIT)\n");
  fprintf(c->out, "git: %s\n", mirs_build_git_hash());
  fprintf(c->out, "compiler: %s\n", mirs_build_compiler());
  fprintf(c->out, "features: %s\n", mirs_build_features());
  fprintf(c->out, "header: %s, library: %s (%s)\n", MIRS_VERSION_STRING, mirs_version_string(),
          match ? "match" : "MISMATCH");
}

/* Read the whole file at path into a malloc'd NUL-terminated buffer.
 * A file that cannot be opened (or is a directory) is bad input
 * (EXIT_USAGE); a failing read is an I/O error (EXIT_RESOURCE). */
static int read_input(cli *c, const char *path, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  errno = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    cli_error(c, "cannot open '%s': %s", path, strerror(errno ? errno : ENOENT));
    return EXIT_USAGE;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int rc = EXIT_OK;
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1)
      break;
    char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  if (!buf) {
    cli_error(c, "out of memory reading '%s'", path);
    rc = EXIT_RESOURCE;
  } else if (ferror(f)) {
    int e = errno ? errno : EIO;
    cli_error(c, "cannot read '%s': %s", path, strerror(e));
    rc = e == EISDIR ? EXIT_USAGE : EXIT_RESOURCE;
  }
  fclose(f);
  if (rc != EXIT_OK) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return EXIT_OK;
}

/* Read and parse the program or µGraph at path into *g (NULL on failure);
 * returns the exit status. */
static int load_graph(cli *c, const char *path, mirs_graph **g) {
  char *text;
  size_t len;
  *g = NULL;
  int rc = read_input(c, path, &text, &len);
  if (rc != EXIT_OK)
    return rc;
  mirs_status s = mirs_graph_parse_string(c->ctx, text, len, path, g);
  free(text);
  if (s != MIRS_OK) {
    mirs_graph_destroy(*g);
    *g = NULL;
    return cli_fail(c, s, 1);
  }
  s = mirs_graph_validate(*g);
  if (s != MIRS_OK) {
    mirs_graph_destroy(*g);
    *g = NULL;
    return cli_fail(c, s, 0);
  }
  return EXIT_OK;
}

/* Flush c->out and turn a write failure into an error and exit status. */
static int finish_output(cli *c) {
  errno = 0;
  if (fflush(c->out) != 0 || ferror(c->out)) {
    cli_error(c, "cannot write output: %s", strerror(errno ? errno : EIO));
    return EXIT_RESOURCE;
  }
  return EXIT_OK;
}

/* `check FILE`: parse, validate, print the canonical form. */
static int cmd_check(cli *c, const char *path) {
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  char *text = NULL;
  mirs_status s = mirs_graph_to_string(g, &text);
  mirs_graph_destroy(g);
  if (s != MIRS_OK)
    return cli_fail(c, s, 0);
  fputs(text, c->out);
  free(text);
  return finish_output(c);
}

/* Add x + 0.0 so that a negative zero prints as "0.000000000e+00": two
 * equivalent graphs may differ in the sign of a zero. */
static double unsigned_zero(double x) {
  return x + 0.0;
}

/* Summarise n values: sum, L2 norm, min, max and the position-weighted
 * checksum (weights 1 + (i mod 97)/97, so a permutation changes it). */
static summary summarise(const double *v, int64_t n) {
  summary s = {0.0, 0.0, n > 0 ? v[0] : 0.0, n > 0 ? v[0] : 0.0, 0.0};
  double squares = 0.0;
  for (int64_t i = 0; i < n; i++) {
    s.sum += v[i];
    squares += v[i] * v[i];
    s.min = v[i] < s.min ? v[i] : s.min;
    s.max = v[i] > s.max ? v[i] : s.max;
    s.checksum += v[i] * (1.0 + (double)(i % 97) / 97.0);
  }
  s.l2 = sqrt(squares);
  return s;
}

/* Print one output's summary line. */
static void print_summary(cli *c, const char *name, mirs_dtype dtype, int rank, const int64_t *dims,
                          const summary *s) {
  fprintf(c->out, "%s %s[", name, mirs_dtype_name(dtype));
  for (int d = 0; d < rank; d++)
    fprintf(c->out, "%s%" PRId64, d ? ", " : "", dims[d]);
  fprintf(c->out, "] sum=%.9e l2=%.9e min=%.9e max=%.9e checksum=%.9e\n", unsigned_zero(s->sum),
          unsigned_zero(s->l2), unsigned_zero(s->min), unsigned_zero(s->max),
          unsigned_zero(s->checksum));
}

/* Check that every evaluated output names a tensor of g with a shape;
 * returns EXIT_OK or reports an internal error. */
static int check_outputs(cli *c, const mirs_graph *g, const mirs_eval_result *r) {
  for (int i = 0; i < mirs_eval_num_outputs(r); i++) {
    const char *name = mirs_eval_output_name(r, i);
    int64_t dims[MIRS_MAX_DIMS], count = 0;
    if (!name || mirs_graph_find(g, name) < 0 || mirs_eval_output_shape(r, i, dims) <= 0 ||
        !mirs_eval_output_values(r, i, &count)) {
      cli_error(c, "internal error: output %d of the evaluation has no tensor", i);
      return EXIT_RESOURCE;
    }
  }
  return EXIT_OK;
}

/* `eval FILE`: evaluate in float64 under the seed option and print one
 * summary line per output. */
static int cmd_eval(cli *c, const char *path) {
  int64_t seed = 0;
  if (mirs_option_get_int(c->ctx, "seed", &seed) != MIRS_OK)
    return cli_fail(c, mirs_last_status(c->ctx), 0);
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  mirs_eval_result *r = NULL;
  mirs_status s = mirs_graph_eval(g, (uint64_t)seed, &r);
  if (s != MIRS_OK) {
    mirs_graph_destroy(g);
    return cli_fail(c, s, 0);
  }
  rc = check_outputs(c, g, r);
  for (int i = 0; rc == EXIT_OK && i < mirs_eval_num_outputs(r); i++) {
    const char *name = mirs_eval_output_name(r, i);
    int64_t dims[MIRS_MAX_DIMS], count = 0;
    int rank = mirs_eval_output_shape(r, i, dims);
    const double *values = mirs_eval_output_values(r, i, &count);
    summary sm = summarise(values, count);
    print_summary(c, name, mirs_tensor_dtype(g, mirs_graph_find(g, name)), rank, dims, &sm);
  }
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  return rc == EXIT_OK ? finish_output(c) : rc;
}

/* `verify PROGRAM CANDIDATE`: fingerprints (with the false-accept bound)
 * and float64; exit 0 when equivalent, 1 when not (like cmp and diff). */
static int cmd_verify(cli *c, const char *program_path, const char *candidate_path) {
  mirs_graph *p = NULL, *g = NULL;
  int rc = load_graph(c, program_path, &p);
  if (rc == EXIT_OK)
    rc = load_graph(c, candidate_path, &g);
  mirs_verify_result v;
  if (rc == EXIT_OK) {
    mirs_status s = mirs_verify(c->ctx, p, g, &v);
    if (s != MIRS_OK)
      rc = cli_fail(c, s, 0);
  }
  if (rc == EXIT_OK) {
    fprintf(c->out, "equivalent: %s\n", v.equal ? "yes" : "no");
    fprintf(c->out, "fingerprints: %s (%d trials, degree %llu, false-accept bound 2^%.1f)\n",
            v.fingerprint_equal ? "equal" : "differ", v.trials, (unsigned long long)v.degree,
            v.log2_bound);
    char tol[64] = "?";
    mirs_option_get(c->ctx, "float_tolerance", tol, sizeof tol);
    if (v.float_checked)
      fprintf(c->out, "float64: max relative error %.3g (tolerance %s)\n", v.float_max_rel_error,
              tol);
    if (v.reason[0])
      fprintf(c->out, "reason: %s\n", v.reason);
    rc = finish_output(c);
    if (rc == EXIT_OK && !v.equal)
      rc = EXIT_DIFFERENT;
  }
  mirs_graph_destroy(p);
  mirs_graph_destroy(g);
  return rc;
}

/* ---------------------------------------------------------------- search */

/* The running search, for the signal handler (the one mutable global of
 * the program: a handler has no other way to reach it). */
static mirs_search *_Atomic running_search;
/* A stop signal that arrived before the search existed (while a
 * checkpoint was being loaded): the search stops as soon as it starts. */
static volatile sig_atomic_t early_stop;

/* Signal handler (SIGINT, SIGTERM, SIGUSR1): ask the running search to
 * stop at its next node boundary; mirs_search_stop is async-signal-safe. */
static void on_stop_signal(int sig) {
  (void)sig;
  mirs_search *s = atomic_load(&running_search);
  if (s)
    mirs_search_stop(s);
  else
    early_stop = 1;
}

/* State the search callbacks share with cmd_search. */
typedef struct search_ui {
  cli *c;
  int tty; /* draw the progress line */
  int found;
  double best; /* best cost so far, seconds */
  double start; /* when the search began */
  double best_at; /* seconds from start to the best result so far */
  double last_draw;
  /* found, best and best_at: on_result runs on worker threads, progress
   * on the searching thread. */
  pthread_mutex_t lock;
} search_ui;

/* Monotonic seconds. */
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Progress callback: one rewritten line on a terminal, a few times a second. */
static void search_progress(void *user, const mirs_search_stats *st) {
  search_ui *ui = user;
  double t = now_seconds();
  if (!ui->tty || t - ui->last_draw < 0.25)
    return;
  ui->last_draw = t;
  double rate = st->wall_seconds > 0 ? (double)st->states_explored / st->wall_seconds : 0;
  char best[32] = "-";
  pthread_mutex_lock(&ui->lock);
  int found = ui->found;
  if (found)
    snprintf(best, sizeof best, "%.2f us", ui->best * 1e6);
  pthread_mutex_unlock(&ui->lock);
  fprintf(ui->c->err, "\r\033[K%" PRIu64 " states (%.0f/s)  found %d  best %s  %.1fs",
          st->states_explored, rate, found, best, st->wall_seconds);
  fflush(ui->c->err);
}

/* Result callback: count results and keep the best cost for the progress line. */
static void search_result(void *user, const mirs_graph *graph, double cost) {
  search_ui *ui = user;
  (void)graph;
  pthread_mutex_lock(&ui->lock);
  if (!ui->found || cost < ui->best) {
    ui->best = cost;
    ui->best_at = now_seconds() - ui->start;
  }
  ui->found++;
  pthread_mutex_unlock(&ui->lock);
}

/* buf = dir + "/" + name; false (with an error) when it does not fit. */
static int join_path(cli *c, char *buf, size_t size, const char *dir, const char *name) {
  int n = snprintf(buf, size, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= size) {
    cli_error(c, "%s/%s: path too long", dir, name);
    return 0;
  }
  return 1;
}

/* Create dir if missing (its parent must exist). */
static int ensure_dir(cli *c, const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return EXIT_OK;
    cli_error(c, "%s: exists and is not a directory", dir);
    return EXIT_USAGE;
  }
  if (mkdir(dir, 0777) != 0) {
    cli_error(c, "%s: cannot create directory: %s", dir, strerror(errno));
    return EXIT_RESOURCE;
  }
  return EXIT_OK;
}

/* Remove what an earlier run left in the output directory (its report
 * first, so an interrupted rewrite never looks complete). */
static int clear_old_outputs(cli *c, const char *dir, const char *cand_dir) {
  char path[4096];
  if (!join_path(c, path, sizeof path, dir, "report.json"))
    return EXIT_USAGE;
  if (unlink(path) != 0 && errno != ENOENT) {
    cli_error(c, "%s: cannot remove: %s", path, strerror(errno));
    return EXIT_RESOURCE;
  }
  if (join_path(c, path, sizeof path, dir, "best.ugraph"))
    (void)unlink(path);
  DIR *d = opendir(cand_dir);
  if (!d)
    return EXIT_OK;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 7 && strcmp(e->d_name + n - 7, ".ugraph") == 0 &&
        join_path(c, path, sizeof path, cand_dir, e->d_name))
      (void)unlink(path);
  }
  closedir(d);
  return EXIT_OK;
}

/* Append the JSON report of search s to f. */
static void write_report(cli *c, FILE *f, const mirs_graph *program, const mirs_search *s,
                         const mirs_search_stats *st, double time_to_best) {
  char device[128] = "?", opts[2048];
  mirs_option_get(c->ctx, "cost_device", device, sizeof device);
  mirs_options_nondefault(c->ctx, opts, sizeof opts);
  int n = mirs_search_num_results(s);
  fprintf(f, "{\n");
  fprintf(f, "  \"program\": \"%s\",\n", mirs_graph_name(program));
  fprintf(f, "  \"mirsearch_version\": \"%s\",\n", mirs_version_string());
  fprintf(f, "  \"device\": \"%s\",\n", device);
  fprintf(f, "  \"options\": \"%s\",\n", opts);
  fprintf(f, "  \"states_explored\": %" PRIu64 ",\n", st->states_explored);
  fprintf(f, "  \"candidates_verified\": %" PRIu64 ",\n", st->candidates_verified);
  fprintf(f, "  \"graphs_found\": %" PRIu64 ",\n", st->graphs_found);
  fprintf(f, "  \"prune_calls\": %" PRIu64 ",\n", st->prune_calls);
  fprintf(f, "  \"prune_cache_hits\": %" PRIu64 ",\n", st->prune_cache_hits);
  fprintf(f, "  \"solver_calls\": %" PRIu64 ",\n", st->solver_calls);
  fprintf(f, "  \"wall_seconds\": %.6f,\n", st->wall_seconds);
  fprintf(f, "  \"solver_seconds\": %.6f,\n", st->solver_seconds);
  fprintf(f, "  \"time_to_best_seconds\": %.6f,\n", time_to_best);
  fprintf(f, "  \"fingerprint_trials\": %d,\n", st->fingerprint_trials);
  fprintf(f, "  \"log2_false_accept_bound\": %g,\n", st->log2_false_accept_bound);
  fprintf(f, "  \"threads\": %d,\n", mirs_search_threads(s));
  fprintf(f, "  \"ranks\": 1,\n");
  fprintf(f, "  \"complete\": %s,\n", st->complete ? "true" : "false");
  if (mirs_search_stopped(s))
    fprintf(f, "  \"checkpoint\": \"checkpoint\",\n");
  fprintf(f, "  \"counters\": {");
  for (size_t i = 0; i < mirs_stat_count(); i++)
    fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", mirs_stat_name(i),
            mirs_stat_value(c->ctx, i));
  fprintf(f, "},\n");
  if (n > 0)
    fprintf(f,
            "  \"best\": {\"hash\": \"%016" PRIx64 "\", \"cost\": %.9g, \"kernels\": %d, "
            "\"predicted_seconds\": %.9g, \"file\": \"best.ugraph\"},\n",
            mirs_search_result_hash(s, 0), mirs_search_result_cost(s, 0),
            mirs_search_result_kernels(s, 0), mirs_search_result_cost(s, 0));
  else
    fprintf(f, "  \"best\": null,\n");
  fprintf(f, "  \"results\": [");
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s\n    {\"rank\": %d, \"hash\": \"%016" PRIx64 "\", \"cost\": %.9g, "
            "\"kernels\": %d, \"file\": \"candidates/%04d-%016" PRIx64 ".ugraph\"}",
            i ? "," : "", i + 1, mirs_search_result_hash(s, i), mirs_search_result_cost(s, i),
            mirs_search_result_kernels(s, i), i + 1, mirs_search_result_hash(s, i));
  fprintf(f, "%s]\n}\n", n ? "\n  " : "");
}

/* Write every result, best.ugraph and, last, report.json into dir. */
static int write_outputs(cli *c, const char *dir, const mirs_graph *program, const mirs_search *s,
                         const mirs_search_stats *st, double time_to_best, char **report,
                         size_t *report_len) {
  char cand_dir[4096], path[4200], name[64];
  if (!join_path(c, cand_dir, sizeof cand_dir, dir, "candidates"))
    return EXIT_USAGE;
  int rc = ensure_dir(c, dir);
  if (rc == EXIT_OK)
    rc = clear_old_outputs(c, dir, cand_dir);
  if (rc == EXIT_OK)
    rc = ensure_dir(c, cand_dir);
  int n = mirs_search_num_results(s);
  for (int i = 0; rc == EXIT_OK && i < n; i++) {
    snprintf(name, sizeof name, "%04d-%016" PRIx64 ".ugraph", i + 1,
             mirs_search_result_hash(s, i));
    if (!join_path(c, path, sizeof path, cand_dir, name))
      return EXIT_USAGE;
    mirs_status ws = mirs_graph_write_file(mirs_search_result(s, i), path);
    if (ws == MIRS_OK && i == 0) {
      if (!join_path(c, path, sizeof path, dir, "best.ugraph"))
        return EXIT_USAGE;
      ws = mirs_graph_write_file(mirs_search_result(s, 0), path);
    }
    if (ws != MIRS_OK)
      rc = cli_fail(c, ws, 0);
  }
  if (rc != EXIT_OK)
    return rc;
  FILE *f = open_memstream(report, report_len);
  if (!f) {
    cli_error(c, "out of memory");
    return EXIT_RESOURCE;
  }
  write_report(c, f, program, s, st, time_to_best);
  if (fclose(f) != 0) {
    cli_error(c, "out of memory");
    return EXIT_RESOURCE;
  }
  if (!join_path(c, path, sizeof path, dir, "report.json"))
    return EXIT_USAGE;
  mirs_status ws = mirs_write_file_atomic(c->ctx, path, *report, *report_len);
  return ws == MIRS_OK ? EXIT_OK : cli_fail(c, ws, 0);
}

/* `FILE.graph` (path) or --resume=DIR (path NULL): search, write the
 * output directory, print a summary (or the JSON report with --json).  A
 * stopped search also writes DIR/checkpoint and exits 4. */
static int cmd_search(cli *c, const char *path) {
  mirs_graph *p = NULL;
  char dir[3072], ckpt[3200];
  int rc = EXIT_OK;
  /* Stop signals are caught from the start: a resume loads for a while.
   * (An early return leaves the handler, which then only sets early_stop.) */
  struct sigaction sa, old_int, old_term, old_usr1;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  early_stop = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGUSR1, &sa, &old_usr1);
  if (c->resume) {
    int dn = snprintf(dir, sizeof dir, "%s", c->out_dir ? c->out_dir : c->resume);
    if (dn < 0 || (size_t)dn >= sizeof dir || !join_path(c, ckpt, sizeof ckpt, c->resume,
                                                          "checkpoint"))
      return EXIT_USAGE;
    if (access(ckpt, F_OK) != 0) {
      cli_error(c, "%s: no checkpoint to resume (%s)", ckpt, strerror(errno));
      return EXIT_USAGE;
    }
    mirs_status ls = mirs_checkpoint_load_program(c->ctx, ckpt, &p);
    if (ls != MIRS_OK)
      return cli_fail(c, ls, 0);
  } else {
    rc = load_graph(c, path, &p);
    if (rc != EXIT_OK)
      return rc;
    int dn = c->out_dir ? snprintf(dir, sizeof dir, "%s", c->out_dir)
                        : snprintf(dir, sizeof dir, "%s.out", mirs_graph_name(p));
    if (dn < 0 || (size_t)dn >= sizeof dir) {
      cli_error(c, "output directory name too long");
      mirs_graph_destroy(p);
      return EXIT_USAGE;
    }
  }
  char own_ckpt[3200];
  if (!join_path(c, own_ckpt, sizeof own_ckpt, dir, "checkpoint")) {
    mirs_graph_destroy(p);
    return EXIT_USAGE;
  }
  /* The directory exists before the run: periodic checkpoints go there. */
  rc = ensure_dir(c, dir);
  if (rc != EXIT_OK) {
    mirs_graph_destroy(p);
    return rc;
  }
  if (!c->resume)
    (void)unlink(own_ckpt); /* an older search's */
  int64_t level = 0;
  mirs_option_get_int(c->ctx, "log_level", &level);
  search_ui ui = {c, level > 0 && isatty(fileno(c->err)), 0, 0, now_seconds(), 0, 0, {{0}}};
  if (pthread_mutex_init(&ui.lock, NULL) != 0) {
    cli_error(c, "cannot create a mutex");
    mirs_graph_destroy(p);
    return EXIT_RESOURCE;
  }
  mirs_search *s = NULL;
  mirs_status st = mirs_search_create(c->ctx, p, &s);
  if (st == MIRS_OK)
    st = mirs_search_set_callbacks(s, search_progress, search_result, NULL, &ui);
  if (st == MIRS_OK)
    st = mirs_search_set_checkpoint(s, own_ckpt);
  if (st == MIRS_OK && c->resume)
    st = mirs_search_resume(s, ckpt);
  atomic_store(&running_search, s);
  if (s && early_stop)
    mirs_search_stop(s);
  if (st == MIRS_OK)
    st = mirs_search_run(s);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGUSR1, &old_usr1, NULL);
  atomic_store(&running_search, NULL);
  if (ui.tty)
    fputs("\r\033[K", c->err);
  mirs_search_stats stats;
  if (st == MIRS_OK)
    st = mirs_search_get_stats(s, &stats);
  int stopped = st == MIRS_OK && mirs_search_stopped(s);
  if (st == MIRS_OK && stopped)
    st = mirs_search_checkpoint(s, own_ckpt);
  else if (st == MIRS_OK)
    (void)unlink(own_ckpt); /* complete: nothing to resume */
  char *report = NULL;
  size_t report_len = 0;
  if (st != MIRS_OK)
    rc = cli_fail(c, st, 0);
  else
    rc = write_outputs(c, dir, p, s, &stats, ui.best_at, &report, &report_len);
  if (rc == EXIT_OK) {
    if (c->json) {
      fwrite(report, 1, report_len, c->out);
    } else {
      int n = mirs_search_num_results(s);
      fprintf(c->out, "%s: %d graph%s found in %.2fs (%" PRIu64 " states, %s)\n",
              mirs_graph_name(p), n, n == 1 ? "" : "s", stats.wall_seconds, stats.states_explored,
              stats.complete ? "complete" : "stopped early: incomplete");
      if (n > 0)
        fprintf(c->out, "best: %016" PRIx64 ", %d kernel%s, predicted %.2f us -> %s/best.ugraph\n",
                mirs_search_result_hash(s, 0), mirs_search_result_kernels(s, 0),
                mirs_search_result_kernels(s, 0) == 1 ? "" : "s",
                mirs_search_result_cost(s, 0) * 1e6, dir);
      fprintf(c->out, "report: %s/report.json\n", dir);
    }
    rc = finish_output(c);
  }
  if (rc == EXIT_OK && stopped) {
    fprintf(c->err,
            PROG ": stopped; checkpoint written to %s\n" PROG
                 ": resume with: " PROG " --resume=%s [--threads=N]\n",
            own_ckpt, dir);
    rc = EXIT_STOPPED;
  }
  free(report);
  mirs_search_destroy(s);
  mirs_graph_destroy(p);
  pthread_mutex_destroy(&ui.lock);
  return rc;
}

/* Whether an operand that is not a command names a file (so the default
 * search is meant) rather than a misspelt command. */
static int looks_like_file(const char *arg) {
  return strchr(arg, '/') || strchr(arg, '.') || access(arg, F_OK) == 0;
}

/* Dispatch on the operands left after option parsing. */
static int run_command(cli *c, int nargs, char **args) {
  static const char *const commands[] = {"check", "eval", "verify"};
  static const int files[] = {1, 1, 2};
  if (c->resume) {
    if (nargs > 0) {
      cli_error(c, "--resume=DIR continues a search: no FILE or command ('%s')", args[0]);
      return cli_hint(c);
    }
    return cmd_search(c, NULL);
  }
  if (nargs == 0) {
    cli_error(c, "missing command or FILE");
    return cli_hint(c);
  }
  int cmd = -1;
  for (int i = 0; i < 3; i++)
    if (strcmp(args[0], commands[i]) == 0)
      cmd = i;
  if (cmd < 0) {
    if (!looks_like_file(args[0])) {
      cli_error(c, "unknown command '%s' (commands: check, eval, verify)", args[0]);
      return cli_hint(c);
    }
    if (nargs > 1) {
      cli_error(c, "unexpected argument '%s'", args[1]);
      return cli_hint(c);
    }
    return cmd_search(c, args[0]);
  }
  if (nargs < 1 + files[cmd]) {
    if (cmd == 2)
      cli_error(c, "'verify' needs PROGRAM and CANDIDATE files");
    else
      cli_error(c, "missing FILE for '%s'", commands[cmd]);
    return cli_hint(c);
  }
  if (nargs > 1 + files[cmd]) {
    cli_error(c, "unexpected argument '%s'", args[1 + files[cmd]]);
    return cli_hint(c);
  }
  if (cmd == 2)
    return cmd_verify(c, args[1], args[2]);
  return cmd == 0 ? cmd_check(c, args[1]) : cmd_eval(c, args[1]);
}

/* The mirsearch program (see cli.h). */
int mirs__cli_main(int argc, char **argv, FILE *out, FILE *err) {
  cli c = {out, err, NULL, NULL, NULL, 0, 0, NULL, NULL, 0};
  int rc;
  if (mirs_context_create(&c.ctx) != MIRS_OK) {
    cli_error(&c, "cannot create a context: out of memory");
    return EXIT_RESOURCE;
  }
  mirs_set_log_callback(c.ctx, cli_log, err);
  if (build_longopts(&c) != 0) {
    cli_error(&c, "out of memory");
    rc = EXIT_RESOURCE;
  } else if (argc < 1 || !argv) {
    cli_error(&c, "empty argument vector");
    rc = EXIT_USAGE;
  } else {
    rc = parse_options(&c, argc, argv);
    if (rc == EXIT_OK && (c.help || c.version)) {
      if (c.help)
        print_help(&c);
      else
        print_version(&c);
      rc = finish_output(&c);
    } else if (rc == EXIT_OK) {
      rc = run_command(&c, argc - optind, argv + optind);
    }
  }
  free(c.longopts);
  free(c.dashed);
  mirs_context_destroy(c.ctx);
  return rc;
}
