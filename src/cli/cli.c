/* src/cli/cli.c - the mirsearch command line: option parsing, the `check`
 * and `eval` commands, --help and --version.
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
enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_RESOURCE = 3 };

/* getopt_long return values for options without a short form; library
 * options are OPT_LIB + their index in the library's table. */
enum { OPT_SEED = 256, OPT_SET, OPT_LIB = 1024 };

/* Options every build has, independent of the library's table. */
static const struct option fixed_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"seed", required_argument, NULL, OPT_SEED},
    {"set", required_argument, NULL, OPT_SET},
};
#define NFIXED (sizeof fixed_options / sizeof fixed_options[0])

/* Everything one invocation owns. */
typedef struct cli {
  FILE *out, *err;
  mirs_context *ctx;
  struct option *longopts; /* fixed, then library options, then a zero row */
  char *dashed;            /* storage for the '-' spellings of option names */
  int help, version;
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
        "       " PROG " [OPTIONS] FILE    (search: not available in this build yet)\n"
        "\n"
        "Superoptimizer for tensor programs (.graph) and µGraphs.\n"
        "\n"
        "Commands:\n"
        "  check FILE   parse and check a .graph program or µGraph file and print\n"
        "               its canonical form\n"
        "  eval FILE    evaluate in float64 on seeded random inputs; print one line\n"
        "               per output: NAME dtype[dims] sum=S l2=L min=A max=B checksum=C\n"
        "               (checksum = sum of v[i] * (1 + (i mod 97)/97), row-major)\n"
        "\n"
        "Options (anywhere on the command line):\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show version and build information and exit\n"
        "  -q, --quiet           only report errors (log_level=0)\n"
        "  -v, --verbose         more messages (raise log_level by one; repeatable)\n"
        "      --seed=N          seed for random inputs (the library option 'seed')\n"
        "      --set NAME=VALUE  set any library option below\n"
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

/* Whether an operand that is not a command names a file (so the default
 * search is meant) rather than a misspelt command. */
static int looks_like_file(const char *arg) {
  return strchr(arg, '/') || strchr(arg, '.') || access(arg, F_OK) == 0;
}

/* Dispatch on the operands left after option parsing. */
static int run_command(cli *c, int nargs, char **args) {
  static const char *const commands[] = {"check", "eval"};
  if (nargs == 0) {
    cli_error(c, "missing command or FILE");
    return cli_hint(c);
  }
  int cmd = -1;
  for (int i = 0; i < 2; i++)
    if (strcmp(args[0], commands[i]) == 0)
      cmd = i;
  if (cmd < 0) {
    if (!looks_like_file(args[0])) {
      cli_error(c, "unknown command '%s' (commands: check, eval)", args[0]);
      return cli_hint(c);
    }
    if (nargs > 1) {
      cli_error(c, "unexpected argument '%s'", args[1]);
      return cli_hint(c);
    }
    cli_error(c, "search is not available in this build yet; use 'check' or 'eval'");
    return EXIT_USAGE;
  }
  if (nargs < 2) {
    cli_error(c, "missing FILE for '%s'", commands[cmd]);
    return cli_hint(c);
  }
  if (nargs > 2) {
    cli_error(c, "unexpected argument '%s'", args[2]);
    return cli_hint(c);
  }
  return cmd == 0 ? cmd_check(c, args[1]) : cmd_eval(c, args[1]);
}

/* The mirsearch program (see cli.h). */
int mirs__cli_main(int argc, char **argv, FILE *out, FILE *err) {
  cli c = {out, err, NULL, NULL, NULL, 0, 0};
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
