/* SPDX-License-Identifier: MIT */
/* src/cli/cli.c - the mirsearch command line: option parsing, the search
 * (its progress and summary; the output directory is outdir.c, the report
 * comes from the library), the `check`, `eval`, `verify` and `show`
 * commands, --help, the manual page (--man) and --version.
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
 *    error (mirs_status_exit_code for library failures), 4 for a search
 *    stopped early (a limit or a signal) with its open work in
 *    DIR/checkpoint (resumable with --resume=DIR), also when only its
 *    final verification was cut short (the resumed run does just that).
 *  - -q means errors only: nothing on stdout but what was asked for
 *    (--json's report, a command's output), no progress, no warnings.
 *  - No state outlives a call except getopt's globals, which are reset on
 *    entry (optind = 0 asks glibc and musl for a full reinitialisation). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/import.h"
#include "cli/outdir.h"
#include "cli/partition.h"
#include "cli/show.h"
#include "mirsearch.h"

#define PROG "mirsearch"

/* Exit statuses (README.md, "Exit status"). */
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
  OPT_TOP,
  OPT_PROGRESS,
  OPT_DOT,
  OPT_COST,
  OPT_MAN,
  OPT_BACKEND,
  OPT_HEADER,
  OPT_RESUME,
  OPT_MPI,
  OPT_OVERWRITE,
  OPT_PROGRAM,
  OPT_CUDA_GRAPH,
  OPT_SOURCE_DIR,
  OPT_CALIBRATE,
  OPT_RANK,
  OPT_CACHE,
  OPT_NO_CACHE,
  OPT_INPUT_SHAPE,
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
    {"top", required_argument, NULL, OPT_TOP},
    {"progress-interval", required_argument, NULL, OPT_PROGRESS},
    {"dot", no_argument, NULL, OPT_DOT},
    {"cost", no_argument, NULL, OPT_COST},
    {"man", no_argument, NULL, OPT_MAN},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"header", required_argument, NULL, OPT_HEADER},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"mpi", no_argument, NULL, OPT_MPI},
    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
    {"program", required_argument, NULL, OPT_PROGRAM},
    {"cuda-graph", no_argument, NULL, OPT_CUDA_GRAPH},
    {"source-dir", required_argument, NULL, OPT_SOURCE_DIR},
    {"calibrate", required_argument, NULL, OPT_CALIBRATE},
    {"rank", required_argument, NULL, OPT_RANK},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"input-shape", required_argument, NULL, OPT_INPUT_SHAPE},
};
#define NFIXED (sizeof fixed_options / sizeof fixed_options[0])

/* Everything one invocation owns. */
typedef struct cli {
  FILE *out, *err;
  mirs_context *ctx;
  struct option *longopts; /* fixed, then library options, then a zero row */
  char *dashed;            /* storage for the '-' spellings of option names */
  int help, version, man;
  const char *out_dir; /* --out, or NULL: derived from the program name */
  const char *resume;  /* --resume=DIR */
  int mpi;             /* --mpi: one search over the MPI ranks */
  int overwrite;       /* --overwrite: a new search may discard DIR's checkpoint */
  int rank;            /* this process's MPI rank (0 without --mpi) */
  int stop_masked;     /* --mpi: SIGINT, SIGTERM, SIGUSR1 blocked until the search's
                          handlers are in place; stop_mask_old: the mask before */
  sigset_t stop_mask_old;
  int json;            /* --json: the report on stdout */
  int quiet;           /* -q: errors only */
  long top;            /* --top: results written (0 all) */
  double progress;     /* --progress-interval in seconds; < 0: the default */
  int dot;             /* show --dot */
  int cost;            /* show --cost */
  const char *output;  /* codegen -o FILE */
  const char *header;  /* codegen --header=FILE */
  const char *backend; /* run --backend: "host", "cuda" or NULL (auto) */
  const char *program;    /* bench --program=FILE: the unfused baseline */
  const char *source_dir; /* bench --source-dir=DIR: write the harness, time nothing */
  const char *calibrate;  /* bench --calibrate=FILE: measure the GPU, write a profile */
  const char *rank_dir;   /* bench --rank=DIR: time a search's top results */
  int no_cache;           /* --no-cache: no result cache (else the user's by default) */
  /* import --input-shape=NAME=D0,D1,... (repeatable; argv's own strings) */
  const char *input_shapes[MIRS__CLI_MAX_INPUT_SHAPES];
  int ninput_shapes;
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

/* An option whose argument is checked here (a directory, a count, a
 * choice): EXIT_OK or the usage status after saying why. */
static int checked_option(cli *c, int ch, char *arg) {
  int rc = EXIT_OK;
  switch (ch) {
  case OPT_OUT:
    if (!arg[0]) {
      cli_error(c, "--out needs a directory name");
      rc = cli_hint(c);
    }
    c->out_dir = arg;
    break;
  case OPT_THREADS: {
    char *end;
    errno = 0;
    long n = strtol(arg, &end, 10);
    /* 0 is the library option's "the CPUs this process may use", as the
     * option table (and so --help) documents it. */
    if (end == arg || *end || errno || n < 0 || n > 4096) {
      cli_error(c,
                "--threads expects a number of threads from 1 to 4096 (0: the CPUs this "
                "process may use), got '%s'",
                arg);
      rc = cli_hint(c);
    } else {
      rc = set_option(c, "threads", arg);
    }
    break;
  }
  case OPT_RESUME:
    if (!arg[0]) {
      cli_error(c, "--resume needs the output directory of a stopped search");
      rc = cli_hint(c);
    }
    c->resume = arg;
    break;
  case OPT_HEADER:
    if (!arg[0]) {
      cli_error(c, "--header needs a file name");
      rc = cli_hint(c);
    }
    c->header = arg;
    break;
  case OPT_BACKEND:
    if (strcmp(arg, "host") && strcmp(arg, "cuda")) {
      cli_error(c, "--backend expects host or cuda, got '%s'", arg);
      rc = cli_hint(c);
    }
    c->backend = arg;
    break;
  case OPT_TOP: {
    char *end;
    errno = 0;
    long n = strtol(arg, &end, 10);
    if (end == arg || *end || errno || n < 0 || n > 100000000) {
      cli_error(c, "--top expects a number of results (0 = all), got '%s'", arg);
      rc = cli_hint(c);
    }
    c->top = n;
    break;
  }
  case OPT_PROGRESS: {
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end || errno || !(v >= 0 && v <= 1e6)) {
      cli_error(c, "--progress-interval expects seconds from 0 (off) to 1e6, got '%s'", arg);
      rc = cli_hint(c);
    }
    c->progress = v;
    break;
  }
  default:
    break;
  }
  return rc;
}

/* Parse the options in argv (permuting operands to the end) and apply
 * them to the context in order.  Returns EXIT_OK or an exit status. */
static int parse_options(cli *c, int argc, char **argv) {
  optind = 0; /* full reinitialisation: this function may run many times */
  opterr = 0; /* every message goes to c->err, not to stderr */
  int ch, index, rc = EXIT_OK;
  while (rc == EXIT_OK && (ch = getopt_long(argc, argv, ":hVqvo:", c->longopts, &index)) != -1) {
    switch (ch) {
    case 'h':
      c->help = 1;
      break;
    case 'V':
      c->version = 1;
      break;
    case 'q':
      c->quiet = 1;
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
    case OPT_THREADS:
    case OPT_RESUME:
    case OPT_HEADER:
    case OPT_BACKEND:
    case OPT_TOP:
    case OPT_PROGRESS:
      rc = checked_option(c, ch, optarg);
      break;
    case OPT_MPI:
      c->mpi = 1;
      break;
    case OPT_OVERWRITE:
      c->overwrite = 1;
      break;
    case OPT_DEVICE:
      rc = set_option(c, "cost_device", optarg);
      break;
    case OPT_JSON:
      c->json = 1;
      break;
    case 'o':
      c->output = optarg;
      break;
    case OPT_DOT:
      c->dot = 1;
      break;
    case OPT_COST:
      c->cost = 1;
      break;
    case OPT_PROGRAM:
      c->program = optarg;
      break;
    case OPT_CUDA_GRAPH:
      rc = set_option(c, "bench_cuda_graph", "1");
      break;
    case OPT_SOURCE_DIR:
      c->source_dir = optarg;
      break;
    case OPT_CALIBRATE:
      c->calibrate = optarg;
      break;
    case OPT_INPUT_SHAPE:
      if (c->ninput_shapes == MIRS__CLI_MAX_INPUT_SHAPES) {
        cli_error(c, "more than %d --input-shape options", MIRS__CLI_MAX_INPUT_SHAPES);
        rc = cli_hint(c);
      } else {
        c->input_shapes[c->ninput_shapes++] = optarg;
      }
      break;
    case OPT_RANK:
      c->rank_dir = optarg;
      break;
    case OPT_CACHE:
      if (!optarg[0]) {
        cli_error(c, "--cache needs a directory (--no-cache turns the cache off)");
        rc = cli_hint(c);
      } else {
        c->no_cache = 0;
        rc = set_option(c, "cache_dir", optarg);
      }
      break;
    case OPT_NO_CACHE:
      c->no_cache = 1;
      rc = set_option(c, "cache_dir", "");
      break;
    case OPT_MAN:
      c->man = 1;
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

/* The help text, one table for --help and the manual page (--man).  A
 * row is a section heading (flag NULL), or a flag or command with its
 * description; library options follow from the library's own table
 * (src/core/options.def), so both outputs list every option. */
typedef struct help_row {
  const char *flag; /* "-q, --quiet", "check FILE"; NULL: heading */
  const char *text;
} help_row;

static const char *const usage_lines[] = {
    PROG " [OPTIONS] FILE.graph",
    PROG " [OPTIONS] --resume=DIR [FILE.graph]",
    PROG " [OPTIONS] partition FILE.graph [-o DIR] [--mpi]",
    PROG " [OPTIONS] check FILE",
    PROG " [OPTIONS] eval FILE [--seed=N]",
    PROG " [OPTIONS] verify PROGRAM CANDIDATE",
    PROG " [OPTIONS] show [--dot | --cost] FILE",
    PROG " [OPTIONS] codegen FILE [-o FILE.cu] [--header=FILE.h]",
    PROG " [OPTIONS] run FILE [--seed=N] [--backend=host|cuda]",
    PROG " [OPTIONS] bench FILE [--program=FILE] [--cuda-graph]",
    PROG " [OPTIONS] bench --calibrate=FILE.profile | --rank=DIR [--top=K]",
    PROG " [OPTIONS] import MODEL.onnx [-o FILE.graph] [--input-shape=...]",
};

static const char summary_text[] =
    "Superoptimizer for tensor programs: searches the multi-level uGraphs (kernel, block, "
    "thread level) that compute the same function as a .graph program, verifies them with "
    "finite-field fingerprints, ranks them with a cost model and writes them to an output "
    "directory.";

static const help_row help_rows[] = {
    {NULL, "Commands"},
    {"FILE.graph", "search, verify and rank the uGraphs equivalent to the program; write "
                   "DIR/best.ugraph, DIR/best.cu, DIR/candidates/ and, last, DIR/report.json"},
    {"partition FILE.graph", "cut the whole program into pieces the search handles "
                             "(--partition-max-ops=N operators, --partition-max-inputs, "
                             "--partition-max-outputs; operators the search does not handle "
                             "stay library calls), search each (or serve it from the result "
                             "cache), stitch the bests into one uGraph, verify it against the "
                             "program and write DIR/best.ugraph, DIR/best.cu, "
                             "DIR/partition.txt (the table printed) and, last, "
                             "DIR/partition.json (-o DIR or --out=DIR; default NAME.partition); "
                             "stopped: exit 4, nothing written, the finished pieces cached; "
                             "--mpi: pieces spread over the ranks, which share the cache "
                             "(docs/PARTITION.md)"},
    {"check FILE", "parse and check a .graph program or uGraph file and print its canonical "
                   "form"},
    {"eval FILE", "evaluate in float64 on seeded random inputs; print one line per output: "
                  "NAME dtype[dims] sum=S l2=L min=A max=B checksum=C (checksum = sum of "
                  "v[i] * (1 + (i mod 97)/97), row-major)"},
    {"verify PROGRAM CANDIDATE", "check that a uGraph computes the program's function: "
                                 "finite-field fingerprints with a false-accept bound, then "
                                 "float64; exit 0 when equivalent, 1 when not"},
    {"show FILE", "print a readable summary of each kernel of a uGraph (grid, block, forloop, "
                  "shared memory, block ops, predicted time); with --dot a Graphviz diagram"},
    {"codegen FILE", "CUDA C of a uGraph (or program) on stdout, or written atomically to -o "
                     "FILE together with its C header (FILE with .cu replaced by .h, or "
                     "--header=FILE.h): prototypes without CUDA types, the status codes and "
                     "the pointer contract (docs/CODEGEN.md)"},
    {"run FILE", "compile the generated code, run it on eval's seeded inputs and print eval's "
                 "lines and the largest relative error against the float64 interpreter; exit 1 "
                 "above the dtype's tolerance.  --backend=host (the default without a GPU) "
                 "compiles it as host C++ through an emulation header (threads in the order "
                 "--emu-seed=N draws), --backend=cuda with nvcc for the GPU (exit 3: no CUDA "
                 "device)"},
    {"bench FILE", "time the generated code on the GPU against --program=PROGRAM as written "
                   "(cuBLAS matmuls, simple kernels): every output is first checked against the "
                   "float64 interpreter (exit 1 when one is off: nothing is timed), then each is "
                   "run bench_reps times with L2 flushed before each run; prints median, p10, p90, "
                   "speedup and the share of the HBM roofline and tensor-core peak (--json: as "
                   "JSON; --cuda-graph: also as CUDA graph replays; --source-dir=DIR: only write "
                   "the harness sources).  Exit 2 when built without CUDA, 3 without a GPU "
                   "(docs/GPU.md)"},
    {"bench --calibrate=FILE", "measure the GPU (copy bandwidth, memory latency, launch "
                               "interval, tensor-core rates per type, f32 rate) and write a "
                               "device profile to FILE for --device-profile=FILE"},
    {"bench --rank=DIR", "time the cost model's top --top=K results (default 16) of the search "
                         "output DIR on the GPU; write DIR/measured.json (predicted and measured "
                         "seconds, their rank correlation) and the measured best as "
                         "DIR/best_measured.ugraph"},
    {"import MODEL.onnx", "convert an ONNX model to a .graph program (on stdout, or -o "
                          "FILE.graph) with the Python importer (the onnx package; "
                          "docs/PYTHON.md): each unsupported operator is named with its node "
                          "(exit 2); exit 3 without a Python that has onnx; "
                          "--input-shape=NAME=D0,D1,... (repeatable) gives an input exported "
                          "with dynamic axes its dims"},
    {NULL, "Options (anywhere on the command line)"},
    {"-h, --help", "show this help and exit"},
    {"-V, --version", "show version, license and build information and exit"},
    {"--man", "print the manual page (roff) and exit"},
    {"-q, --quiet", "errors only: no summary, progress or warnings (log_level=0)"},
    {"-v, --verbose", "more messages (raise log_level by one; repeatable)"},
    {"--seed=N", "seed for random inputs (the library option 'seed')"},
    {"--set NAME=VALUE", "set any library option below"},
    {"--dot", "show: print a Graphviz (dot) diagram instead of the summary"},
    {"--cost", "show: under each kernel the terms of its predicted time (fixed, memory, "
               "compute; registers, stages, blocks per SM, bank conflicts)"},
    {NULL, "Search options (with FILE.graph)"},
    {"--out=DIR", "output directory (default: PROGRAM.out, from the program's name); checked, "
                  "created and locked before the search; a previous run's results in it are "
                  "removed first"},
    {"--top=K", "write only the K best results (default 0: all)"},
    {"--json", "print report.json on stdout (and nothing else)"},
    {"--progress-interval=S", "print a timestamped progress line every S seconds (default: "
                              "30 when stderr is not a terminal, else a live line; 0: none)"},
    {"--threads=N", "worker threads (default: the CPUs this process may use: its affinity "
                    "mask, SLURM_CPUS_PER_TASK, OMP_NUM_THREADS); the results do not depend "
                    "on it"},
    {"--device=NAME", "device profile that ranks results (H100, H200, A100)"},
    {"--time-limit=S, --max-states=N, --max-memory=BYTES",
     "stop early: the results so far are written, the report says \"complete\": false, "
     "DIR/checkpoint keeps the open work and the exit status is 4 (so do SIGTERM, SIGINT "
     "and SIGUSR1)"},
    {"--checkpoint-interval=S", "also write DIR/checkpoint every S seconds while searching "
                                "(default 600; 0: only when stopped)"},
    {"--overwrite", "start a new search in DIR although it holds a stopped search's "
                    "checkpoint, which is discarded (without it such a search is refused, "
                    "exit 2, so re-running the original command does not lose the stopped "
                    "one's work)"},
    {"--resume=DIR", "continue the stopped search whose checkpoint is in DIR (on any "
                     "--threads; its search options are kept, and one given with another "
                     "value is refused): it ends with the results of an uninterrupted run; "
                     "with FILE.graph, the checkpoint must be that program's (else exit 2)"},
    {"--cache=DIR", "result cache (search and partition): a complete search is stored "
                    "under DIR and a later search of the same program with the same search "
                    "options and device profile is served from it, verified again (default: "
                    "$XDG_CACHE_HOME/mirsearch or ~/.cache/mirsearch; the environment "
                    "variable MIRSEARCH_NO_CACHE=1 turns the default off, as the test suite "
                    "does; report.json says \"cache\": \"hit\")"},
    {"--no-cache", "no result cache"},
    {"--mpi", "one search over the ranks of an MPI job (mpiexec -n M, srun --mpi=pmi2): every rank "
              "runs its threads, idle ranks steal work, rank 0 writes DIR (the same results "
              "as one process; --resume works on any M; see docs/DISTRIBUTED.md)"},
    {NULL, "Library options ('-' and '_' are interchangeable in names)"},
};

static const char exit_text[] =
    "0 done (the whole space searched); 1 verify: not equivalent, run and bench: the generated "
    "code's outputs off by more than the tolerance; 2 bad input or usage "
    "(including a bad --out, found before any search work); 3 resource or internal error; "
    "4 stopped early by a limit or a signal with its open work (or its unfinished final "
    "verification) in DIR/checkpoint (results so far written; resume with --resume=DIR).";

/* Write text word-wrapped to fit `width` columns, the first line starting
 * at column `col` (already written), continuation lines indented by
 * `indent`; ends with a newline. */
static void put_wrapped(FILE *o, const char *text, int col, int indent, int width) {
  const char *p = text;
  while (*p) {
    while (*p == ' ')
      p++;
    int room = width - col, n = (int)strlen(p);
    if (n <= room) {
      fputs(p, o);
      break;
    }
    int cut = room;
    while (cut > 0 && p[cut] != ' ')
      cut--;
    if (cut == 0) /* a word longer than the line: break after a comma */
      for (cut = room - 1; cut > 0 && p[cut - 1] != ','; cut--)
        ;
    if (cut == 0) /* or, with none, after the word */
      for (cut = room; p[cut] && p[cut] != ' '; cut++)
        ;
    fprintf(o, "%.*s\n%*s", cut, p, indent, "");
    p += cut;
    col = indent;
  }
  fputc('\n', o);
}

/* One help entry: the flag at column 2, its text at column 26 (on the
 * next line when the flag is wider), wrapped to 79 columns. */
static void put_entry(FILE *o, const char *flag, const char *text) {
  enum { TEXT_COL = 26, WIDTH = 79 };
  int n = fprintf(o, "  %s", flag);
  if (n > TEXT_COL - 2) {
    fputc('\n', o);
    n = 0;
  }
  fprintf(o, "%*s", TEXT_COL - n, "");
  put_wrapped(o, text, TEXT_COL, TEXT_COL, WIDTH);
}

/* Split the library's "--name=TYPE  help" into flag and text. */
static const char *split_option_help(size_t i, char *buf, size_t size) {
  mirs_option_help(i, buf, size);
  char *gap = strchr(buf, ' '); /* the flag has no blank; padding follows it */
  if (!gap)
    return "";
  *gap++ = '\0';
  while (*gap == ' ')
    gap++;
  return gap;
}

/* Write the usage text, the commands and every option to c->out, within
 * 80 columns. */
static void print_help(cli *c) {
  FILE *o = c->out;
  for (size_t i = 0; i < sizeof usage_lines / sizeof *usage_lines; i++)
    fprintf(o, "%s%s\n", i ? "       " : "Usage: ", usage_lines[i]);
  fputc('\n', o);
  put_wrapped(o, summary_text, 0, 0, 79);
  for (size_t i = 0; i < sizeof help_rows / sizeof *help_rows; i++) {
    if (!help_rows[i].flag)
      fprintf(o, "\n%s:\n", help_rows[i].text);
    else
      put_entry(o, help_rows[i].flag, help_rows[i].text);
  }
  char buf[1024];
  for (size_t i = 0; i < mirs_option_count(); i++) {
    const char *text = split_option_help(i, buf, sizeof buf);
    put_entry(o, buf, text);
  }
  fputs("\nExit status: ", o);
  put_wrapped(o, exit_text, 13, 0, 79);
  fputs("\nThe manual page (man mirsearch) and README.md have the details.\n", o);
}

/* Text for roff: '-' and '\' escaped, a leading '.' or '\'' guarded. */
static void put_roff(FILE *o, const char *text) {
  if (text[0] == '.' || text[0] == '\'')
    fputs("\\&", o);
  for (const char *p = text; *p; p++) {
    if (*p == '-')
      fputs("\\-", o);
    else if (*p == '\\')
      fputs("\\e", o);
    else
      fputc(*p, o);
  }
}

/* The manual page in roff (man(7)), from the same tables as --help. */
static void print_man(cli *c) {
  FILE *o = c->out;
  /* .nh: no hyphenation, so option names stay whole to be searched for. */
  fprintf(o,
          ".\\\" Generated by `mirsearch --man` from the option tables; do not edit.\n"
          ".TH MIRSEARCH 1 \"\" \"mirsearch %s\" \"User Commands\"\n"
          ".nh\n"
          ".SH NAME\nmirsearch \\- superoptimizer for tensor programs\n.SH SYNOPSIS\n",
          mirs_version_string());
  for (size_t i = 0; i < sizeof usage_lines / sizeof *usage_lines; i++) {
    fputs(i ? ".br\n" : "", o);
    put_roff(o, usage_lines[i]);
    fputc('\n', o);
  }
  fputs(".SH DESCRIPTION\n", o);
  put_roff(o, summary_text);
  fputc('\n', o);
  for (size_t i = 0; i < sizeof help_rows / sizeof *help_rows; i++) {
    if (!help_rows[i].flag) {
      fputs(".SH \"", o);
      for (const char *p = help_rows[i].text; *p && *p != ' ' && *p != '('; p++)
        fputc(*p >= 'a' && *p <= 'z' ? *p - 32 : *p, o);
      fputs(help_rows[i].text[0] == 'L' ? " OPTIONS\"\n" : "\"\n", o);
      if (strchr(help_rows[i].text, '(')) {
        put_roff(o, strchr(help_rows[i].text, '(') + 1);
        fputs("\n", o);
      }
      continue;
    }
    fputs(".TP\n.B ", o);
    put_roff(o, help_rows[i].flag);
    fputc('\n', o);
    put_roff(o, help_rows[i].text);
    fputc('\n', o);
  }
  char buf[1024];
  for (size_t i = 0; i < mirs_option_count(); i++) {
    const char *text = split_option_help(i, buf, sizeof buf);
    fputs(".TP\n.B ", o);
    put_roff(o, buf);
    fputc('\n', o);
    put_roff(o, text);
    fputc('\n', o);
  }
  fputs(".SH \"EXIT STATUS\"\n", o);
  put_roff(o, exit_text);
  fputs("\n.SH FILES\n"
        ".TP\n.B DIR/report.json\n"
        "Written last and atomically: statistics, the unfused program's predicted time, "
        "results grouped by equal cost with each kernel's grid, forloop and shared memory.\n"
        ".TP\n.B DIR/best.ugraph, DIR/candidates/RANK\\-HASH.ugraph\n"
        "The best result and every result written (see \\-\\-top), in the uGraph format.\n"
        ".TP\n.B DIR/best.cu\n"
        "CUDA C of the best result (docs/CODEGEN.md).\n"
        ".TP\n.B DIR/checkpoint\n"
        "The open work of a stopped search (exit status 4), for \\-\\-resume=DIR; removed once "
        "a complete search's outputs are durable.\n"
        ".SH LICENSE\nMIT (SPDX\\-License\\-Identifier: MIT).\n"
        ".SH \"SEE ALSO\"\nREADME.md, docs/FORMATS.md, docs/SEARCH.md, docs/CODEGEN.md\n",
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
/* Largest input file read (graph files are kilobytes; as the library's). */
#define MAX_INPUT_BYTES (64 << 20)

static int read_input(cli *c, const char *path, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  errno = 0;
  /* Opened without blocking (a FIFO without a writer then reads as
   * empty instead of hanging in open), then read blocking (a pipe with a
   * writer is read to its end). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
  if (fl >= 0)
    (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    int e = errno ? errno : ENOENT;
    if (fd >= 0)
      close(fd);
    cli_error(c, "cannot open '%s': %s", path, strerror(e));
    return EXIT_USAGE;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  int rc = EXIT_OK;
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1)
      break;
    if (cap >= MAX_INPUT_BYTES) { /* (/dev/zero, or a file that is no graph) */
      cli_error(c, "'%s' is more than %d MiB; not a graph file", path, MAX_INPUT_BYTES >> 20);
      free(buf);
      fclose(f);
      return EXIT_USAGE;
    }
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
  mirs_free(c->ctx, text);
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

/* Print eval's summary line for every output of r (outputs of g). */
static int print_outputs(cli *c, const mirs_graph *g, const mirs_eval_result *r) {
  int rc = check_outputs(c, g, r);
  for (int i = 0; rc == EXIT_OK && i < mirs_eval_num_outputs(r); i++) {
    const char *name = mirs_eval_output_name(r, i);
    int64_t dims[MIRS_MAX_DIMS], count = 0;
    int rank = mirs_eval_output_shape(r, i, dims);
    const double *values = mirs_eval_output_values(r, i, &count);
    summary sm = summarise(values, count);
    print_summary(c, name, mirs_tensor_dtype(g, mirs_graph_find(g, name)), rank, dims, &sm);
  }
  return rc;
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
  rc = print_outputs(c, g, r);
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
    fprintf(c->out, "fingerprint backend: %s\n", v.backend);
    fprintf(c->out, "fingerprint digest: %016llx\n", (unsigned long long)v.output_digest);
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

/* Set by SIGINT, SIGTERM or SIGUSR1 during a search (to the signal
 * number). */
static volatile sig_atomic_t stop_requested;

/* The context of the running search and the search itself, for the
 * signal handler (set while the handlers are in place; a handler has no
 * other way to reach them). */
static mirs_context *volatile stop_ctx;
static mirs_search *_Atomic stop_search;

/* Signal handler: ask the running search to stop; its workers leave at
 * their next node boundary, and the library notices the request inside
 * long steps too (setup, a fingerprint, a solver query).  A signal that
 * arrives before the search exists (while a checkpoint loads) stops it as
 * soon as it starts.  (mirs_interrupt and mirs_search_stop are
 * async-signal-safe.) */
static void on_stop_signal(int sig) {
  stop_requested = sig;
  if (stop_ctx)
    mirs_interrupt(stop_ctx);
  mirs_search *s = atomic_load(&stop_search);
  if (s)
    mirs_search_stop(s);
}

/* The stop handlers (SIGINT, SIGTERM, SIGUSR1) a search installs, and
 * the ones they replace. */
typedef struct stop_handlers {
  struct sigaction old_int, old_term, old_usr1;
} stop_handlers;

/* Install the stop handlers for a search in ctx. */
static void stop_handlers_install(stop_handlers *h, mirs_context *ctx) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  stop_requested = 0;
  stop_ctx = ctx;
  atomic_store(&stop_search, NULL);
  sigaction(SIGINT, &sa, &h->old_int);
  sigaction(SIGTERM, &sa, &h->old_term);
  sigaction(SIGUSR1, &sa, &h->old_usr1);
}

/* Put the old handlers back and withdraw the stop request. */
static void stop_handlers_restore(stop_handlers *h, mirs_context *ctx) {
  sigaction(SIGINT, &h->old_int, NULL);
  sigaction(SIGTERM, &h->old_term, NULL);
  sigaction(SIGUSR1, &h->old_usr1, NULL);
  stop_ctx = NULL;
  atomic_store(&stop_search, NULL);
  mirs_interrupt_clear(ctx);
}

/* State the search callbacks share with cmd_search. */
typedef struct search_ui {
  cli *c;
  int live;        /* redraw one progress line (stderr is a terminal) */
  double interval; /* seconds between timestamped progress lines; 0: none */
  int found;
  double best;     /* best cost so far, seconds */
  double start;    /* when the search began */
  double best_at;  /* seconds from start to the best result so far */
  bool split_k;    /* the option split_k is on: the best may be the rewrite's */
  double last_draw;
  double last_line;       /* when the last progress line was printed */
  uint64_t last_states;   /* states at that time */
  /* found, best and best_at: on_result runs on worker threads (one call
   * at a time), progress on the searching thread. */
  pthread_mutex_t lock;
} search_ui;

/* Monotonic seconds. */
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timestamped progress line for a batch log: UTC time, states and
 * states/s over the last interval, candidates, results, the best cost and
 * when it was found, elapsed seconds. */
static void progress_line(search_ui *ui, const mirs_search_stats *st, const char *what) {
  double t = now_seconds(), dt = t - ui->last_line;
  double rate = dt > 0 ? (double)(st->states_explored - ui->last_states) / dt : 0;
  char stamp[32] = "?";
  time_t wall = time(NULL);
  struct tm tm;
  if (gmtime_r(&wall, &tm))
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char best[160] = "best -";
  pthread_mutex_lock(&ui->lock);
  int found = ui->found;
  /* A best this process's workers did not find: an earlier run's
   * (resumed), a split-K variant the rewrite made, another rank's, or the
   * result cache's. */
  const char *elsewhere =
      ui->c->resume ? (ui->split_k ? "found before the resume, or made by the split-K rewrite"
                                   : "found before the resume")
      : ui->split_k ? "made by the split-K rewrite, or found by another rank or the result cache"
                    : "found by another rank or the result cache";
  if (found && ui->best_at < 0)
    snprintf(best, sizeof best, "best %.3f us (%s)", ui->best * 1e6, elsewhere);
  else if (found)
    snprintf(best, sizeof best, "best %.3f us (found at %.1f s)", ui->best * 1e6, ui->best_at);
  pthread_mutex_unlock(&ui->lock);
  fprintf(ui->c->err,
          "%s " PROG ": %s: %" PRIu64 " states (%.0f/s), %" PRIu64
          " candidates, %d results, %s, elapsed %.1f s\n",
          stamp, what, st->states_explored, rate, st->candidates_verified, found, best,
          st->wall_seconds);
  fflush(ui->c->err);
  ui->last_line = t;
  ui->last_states = st->states_explored;
}

/* The final line's counts: every result of the search, those a resumed
 * checkpoint brought too (the callbacks saw only this run's). */
static void final_counts(search_ui *ui, const mirs_search *s, const mirs_search_stats *st) {
  pthread_mutex_lock(&ui->lock);
  if (mirs_search_num_results(s) > 0) {
    double b = mirs_search_result_cost(s, 0);
    if (!ui->found || b < ui->best) {
      ui->best = b;
      ui->best_at = -1; /* (not found in this run) */
    }
  }
  ui->found = (int)st->graphs_found;
  pthread_mutex_unlock(&ui->lock);
}

/* Progress callback: a rewritten line on a terminal, a few times a
 * second, and/or a timestamped line every ui->interval seconds. */
static void search_progress(void *user, const mirs_search_stats *st) {
  search_ui *ui = user;
  double t = now_seconds();
  if (ui->interval > 0 && t - ui->last_line >= ui->interval)
    progress_line(ui, st, "progress");
  if (!ui->live || t - ui->last_draw < 0.25)
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

/* Why an incomplete search stopped, for its message: the signal, or the
 * library's reason with the option that set the limit. */
static const char *stop_reason(const mirs_search *s, int sig) {
  if (sig == SIGTERM)
    return "SIGTERM";
  if (sig == SIGINT)
    return "SIGINT";
  if (sig == SIGUSR1)
    return "SIGUSR1";
  switch (mirs_search_stop_why(s)) {
  case MIRS_STOP_TIME:
    return "the time limit (--time-limit)";
  case MIRS_STOP_MEMORY:
    return "the memory limit (--max-memory)";
  case MIRS_STOP_STATES:
    return "the state limit (--max-states)";
  case MIRS_STOP_NONE:
    return "a limit";
  default:
    return mirs_search_stop_reason(s);
  }
}

/* The summary on stdout after a search (not with -q or --json). */
static void print_search_summary(cli *c, const mirs_graph *p, const mirs_search *s,
                                 const mirs_search_stats *st, const char *dir) {
  int n = mirs_search_num_results(s);
  fprintf(c->out, "%s: %d graph%s found in %.2fs (%" PRIu64 " states, %s)\n", mirs_graph_name(p),
          n, n == 1 ? "" : "s", st->wall_seconds, st->states_explored,
          st->complete ? "complete" : "stopped early: incomplete");
  if (n > 0) {
    mirs_cost base = MIRS_COST_INIT;
    int b = mirs_search_best(s); /* the model's first, or the measured fastest */
    double best = mirs_search_result_cost(s, b);
    int k = mirs_search_result_kernels(s, b);
    fprintf(c->out, "best: %016" PRIx64 ", %d kernel%s, predicted %.2f us",
            mirs_search_result_hash(s, b), k, k == 1 ? "" : "s", best * 1e6);
    if (mirs_graph_cost(c->ctx, p, NULL, &base) == MIRS_OK && base.feasible && best > 0)
      fprintf(c->out, " (unfused program %.2f us, %.2fx)", base.seconds * 1e6,
              base.seconds / best);
    if (mirs_search_measured(s) > 0 && isfinite(mirs_search_result_measured_us(s, b)))
      fprintf(c->out, ", measured %.2f us (rank %d of the model's top %d timed)",
              mirs_search_result_measured_us(s, b), b + 1, mirs_search_measured(s));
    fprintf(c->out, " -> %s/best.ugraph\n", dir);
    best = mirs_search_result_cost(s, 0);
    int ties = 1;
    while (ties < n && mirs_search_result_cost(s, ties) == best)
      ties++;
    if (ties > 1)
      fprintf(c->out, "ties: %d graphs share the best cost (report.json \"groups\")\n", ties);
  }
  if (mirs_search_cache_status(s) == 1) {
    char cache[512];
    mirs_option_get(c->ctx, "cache_dir", cache, sizeof cache);
    fprintf(c->out, "cache: served from the result cache in %s (verified again; --no-cache "
                    "searches)\n", cache);
  }
  fprintf(c->out, "report: %s/report.json\n", dir);
}

/* The checkpoint file of output directory dir into buf. */
static int checkpoint_path(cli *c, char *buf, size_t size, const char *dir) {
  int n = snprintf(buf, size, "%s/checkpoint", dir);
  if (n < 0 || (size_t)n >= size) {
    cli_error(c, "output directory path too long (%d bytes)", n);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

static int search_ranks(cli *c, const char *path);
static void cache_default(cli *c);

/* Unblock the stop signals cmd_search blocked for MPI_Init (a signal
 * that came meanwhile is delivered now, to the handler in place). */
static void unmask_stops(cli *c) {
  if (c->stop_masked) {
    pthread_sigmask(SIG_SETMASK, &c->stop_mask_old, NULL);
    c->stop_masked = 0;
  }
}

/* `FILE.graph` (path) or --resume=DIR (path NULL, or the program the
 * checkpoint must be for): check and lock the
 * output directory, search (from the checkpoint when resuming), write
 * the outputs (report.json last), print a summary (or the JSON report
 * with --json).  A search stopped with open work also writes
 * DIR/checkpoint (atomically) and exits 4; a complete one removes it. */
static int cmd_search(cli *c, const char *path) {
  if (c->mpi) {
    /* MPI_Init installs MPICH's own SIGUSR1 handler, which swallows the
     * signal, and before it the default action kills the process: the
     * stop signals wait, blocked, until search_ranks has put this
     * search's handlers in place, so a stop that comes while the ranks
     * start is neither lost nor fatal. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGUSR1);
    c->stop_masked = pthread_sigmask(SIG_BLOCK, &stops, &c->stop_mask_old) == 0;
    int nranks = 1;
    mirs_status ms = mirs_mpi_init(c->ctx, &c->rank, &nranks);
    if (ms != MIRS_OK) {
      cli_error(c, "--mpi: %s", mirs_last_error(c->ctx));
      unmask_stops(c);
      return EXIT_USAGE;
    }
    /* Tasks that MPI did not connect (srun without --mpi=pmi2, an MPI
     * other than the one mirsearch was built with) are each a rank 0 of
     * one: they would all search the whole space into one directory. */
    const char *st = getenv("SLURM_STEP_NUM_TASKS");
    long tasks = st ? strtol(st, NULL, 10) : 0;
    if (nranks == 1 && tasks > 1) {
      cli_error(c,
                "--mpi: MPI sees 1 rank but this Slurm step has %ld tasks: they are not "
                "connected (MPICH needs srun --mpi=pmi2, or mpiexec inside the allocation)",
                tasks);
      unmask_stops(c);
      mirs_mpi_finalize();
      return EXIT_USAGE;
    }
    if (c->rank != 0) /* rank 0 reports; the others print only errors */
      c->quiet = 1;
  }
  if (!c->mpi && !c->resume)
    cache_default(c);
  int rc = search_ranks(c, path);
  unmask_stops(c); /* (search_ranks has already, at its start) */
  if (c->mpi)
    mirs_mpi_finalize();
  return rc;
}

/* What the final write of a search left durable. */
typedef struct final_write {
  int written;   /* this run's checkpoint is in DIR/checkpoint */
  int previous;  /* it is not, but an earlier one (periodic, resumed) is */
  char why[1024]; /* why this run's could not be written */
} final_write;

/* Write the search's checkpoint before its outputs.  A failure (a full
 * disk, memory) is not fatal: the outputs are still attempted and the
 * exit status says what is left (final_write_failed). */
static mirs_status final_checkpoint(cli *c, mirs_search *s, const char *ckpt, final_write *fw) {
  mirs_status st = mirs_search_checkpoint(s, ckpt);
  if (st == MIRS_OK) {
    fw->written = 1;
    return MIRS_OK;
  }
  snprintf(fw->why, sizeof fw->why, "%s", mirs_last_error(c->ctx));
  mirs_clear_error(c->ctx);
  fw->previous = access(ckpt, F_OK) == 0;
  return MIRS_OK;
}

/* The exit status and message of a search whose outputs (why, non-NULL)
 * or whose final checkpoint (why NULL: the outputs are written) could not
 * be written: 4 when a checkpoint in DIR resumes the search, else 3. */
static int final_write_failed(cli *c, const final_write *fw, const char *why, const char *dir,
                              const char *ckpt) {
  const char *mpi = c->mpi ? "mpiexec -n M " : "", *mpi2 = c->mpi ? " --mpi" : "";
  if (fw->written || fw->previous) {
    cli_error(c,
              "%s%s%s%s; %s %s is intact: resume with: %s" PROG "%s --resume=%s [--threads=N]",
              why ? "cannot write the outputs: " : "", why ? why : "",
              fw->why[0] ? (why ? "; cannot write the checkpoint: " : "cannot write the "
                                                                     "checkpoint: ")
                         : "",
              fw->why, fw->written ? "the search's checkpoint" : "the previous checkpoint", ckpt,
              mpi, mpi2, dir);
    return EXIT_STOPPED;
  }
  if (why)
    cli_error(c, "cannot write the outputs: %s%s%s; no checkpoint is left: the search's results "
                 "are lost", why, fw->why[0] ? "; cannot write the checkpoint: " : "", fw->why);
  else
    cli_error(c, "cannot write the checkpoint: %s; the results so far are in %s but the open "
                 "work is lost (no checkpoint)", fw->why, dir);
  return EXIT_RESOURCE;
}

/* A new search (no --resume) in a directory: its checkpoint, the open
 * work of a stopped search, is discarded only with --overwrite (exit 2
 * otherwise, saying how to resume it or discard it). */
static int new_search_checkpoint(cli *c, const char *ckpt, const char *dir) {
  struct stat st;
  if (lstat(ckpt, &st) != 0)
    return errno == ENOENT ? EXIT_OK : (cli_error(c, "%s: %s", ckpt, strerror(errno)), EXIT_RESOURCE);
  if (!c->overwrite) {
    cli_error(c,
              "%s holds the checkpoint of a stopped search: resume it with: %s" PROG
              "%s --resume=%s [--threads=N], or discard it and start over with --overwrite",
              dir, c->mpi ? "mpiexec -n M " : "", c->mpi ? " --mpi" : "", dir);
    return EXIT_USAGE;
  }
  if (unlink(ckpt) != 0 && errno != ENOENT) {
    cli_error(c, "%s: cannot remove: %s", ckpt, strerror(errno));
    return EXIT_RESOURCE;
  }
  return EXIT_OK;
}

/* One search of the CLI, from the paths to the outputs (search_ranks's
 * steps share it; search_ranks alone releases it). */
typedef struct search_job {
  stop_handlers h;
  bool handlers_set; /* installed, not yet restored */
  mirs_graph *p;
  mirs_search *s;
  char dir[3072], from[3200], ckpt[3200];
  mirs__outdir od;
  int od_open; /* rank 0 holds the locked directory */
  char why[4096];
  int root;
  search_ui ui;
  bool ui_lock;  /* ui.lock initialised */
  bool ran;      /* every rank ran: the exit status is agreed at the end */
  char *report;
  size_t report_len;
} search_job;

/* The output directory, the checkpoint to resume from (--resume) and the
 * program: j->dir, j->from, j->ckpt, j->p.  Every rank agrees. */
static int search_paths(cli *c, const char *path, search_job *j) {
  int rc = EXIT_OK;
  if (c->resume) {
    int dn = snprintf(j->dir, sizeof j->dir, "%s", c->out_dir ? c->out_dir : c->resume);
    if (dn < 0 || (size_t)dn >= sizeof j->dir) {
      cli_error(c, "output directory path too long (%d bytes)", dn);
      rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK)
      rc = checkpoint_path(c, j->from, sizeof j->from, c->resume);
    if (rc == EXIT_OK && access(j->from, F_OK) != 0) {
      cli_error(c, "%s: no checkpoint to resume (%s)", j->from, strerror(errno));
      rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK) {
      /* The program and its search options come from the checkpoint. */
      mirs_status ls = mirs_checkpoint_load_program(c->ctx, j->from, &j->p);
      if (ls != MIRS_OK)
        rc = cli_fail(c, ls, 0);
    }
    if (rc == EXIT_OK && path) {
      /* FILE given: the checkpoint must be this program's (mirs_search_resume
       * compares them, and the options given were compared above). */
      mirs_graph_destroy(j->p);
      j->p = NULL;
      rc = load_graph(c, path, &j->p);
    }
  } else {
    rc = load_graph(c, path, &j->p);
    if (rc == EXIT_OK) {
      int dn = c->out_dir ? snprintf(j->dir, sizeof j->dir, "%s", c->out_dir)
                          : snprintf(j->dir, sizeof j->dir, "%s.out", mirs_graph_name(j->p));
      if (dn < 0 || (size_t)dn >= sizeof j->dir) {
        cli_error(c, "output directory path too long (%d bytes)", dn);
        rc = EXIT_USAGE;
      }
    }
  }
  if (rc == EXIT_OK)
    rc = checkpoint_path(c, j->ckpt, sizeof j->ckpt, j->dir);
  if (c->mpi && mirs_mpi_agree(rc) != EXIT_OK && rc == EXIT_OK)
    rc = EXIT_USAGE; /* another rank failed and said why */
  return rc;
}

/* Rank 0: open the output directory, then read the checkpoint (--resume)
 * or check the directory's, and set the search's checkpoint. */
static int search_open_dir(cli *c, search_job *j) {
  int rc = mirs__outdir_open(&j->od, j->dir, j->why, sizeof j->why);
  if (rc != EXIT_OK) {
    cli_error(c, "%s", j->why);
    return rc;
  }
  j->od_open = 1;
  /* A resume reads its checkpoint with the directory locked; a new
   * search refuses a directory with a stopped search's checkpoint
   * unless told to discard it (--overwrite). */
  mirs_status st = MIRS_OK;
  if (c->resume)
    st = mirs_search_resume(j->s, j->from);
  else
    rc = new_search_checkpoint(c, j->ckpt, j->dir);
  if (rc != EXIT_OK) {
    /* (refused: said why) */
  } else if (st == MIRS_OK && (st = mirs_search_set_checkpoint(j->s, j->ckpt)) != MIRS_OK) {
    rc = cli_fail(c, st, 0);
  } else if (st == MIRS_STOPPED && c->resume) {
    /* Stopped (a signal, a limit) before the checkpoint was read: it
     * stays as it was, resumable again, and so does the directory. */
    cli_error(c, "stopped while loading %s (%s); it is unchanged: resume with: %s" PROG
                 "%s --resume=%s [--threads=N]",
              j->from, mirs_last_error(c->ctx), c->mpi ? "mpiexec -n M " : "",
              c->mpi ? " --mpi" : "", j->dir);
    rc = EXIT_STOPPED;
  } else if (st != MIRS_OK) {
    rc = cli_fail(c, st, 0);
  }
  return rc;
}

/* Create the search and prepare its outputs.  Options are checked by
 * creating the search, the output directory before any search work: a
 * bad --out never costs a search, and a bad option never clears an
 * earlier run's results.  Every rank runs, or none. */
static int search_setup(cli *c, search_job *j) {
  int rc = EXIT_OK;
  mirs_status st = mirs_search_create(c->ctx, j->p, &j->s);
  if (st != MIRS_OK)
    rc = cli_fail(c, st, 0);
  else if (j->root) /* (rank 0 alone reads the checkpoint and writes the directory) */
    rc = search_open_dir(c, j);
  if (c->mpi) {
    /* mirs_search_set_mpi is collective (every rank at the same point):
     * the ranks first agree that each got this far (rank 0 may have
     * failed on the directory or the checkpoint, or been stopped while
     * loading it), then distribute the search together, or none does. */
    int all = mirs_mpi_agree(rc);
    if (rc == EXIT_OK && all != EXIT_OK)
      rc = all;
    if (rc == EXIT_OK && (st = mirs_search_set_mpi(j->s)) != MIRS_OK)
      rc = cli_fail(c, st, 0);
  }
  if (rc == EXIT_OK && j->root) {
    /* A bad option never clears an earlier run's results: the directory
     * is cleared only now. */
    if ((rc = mirs__outdir_clear(&j->od, j->why, sizeof j->why)) != EXIT_OK) {
      j->od_open = 0; /* (closed on failure) */
      cli_error(c, "%s", j->why);
    }
  }
  if (c->mpi) {
    int all = mirs_mpi_agree(rc);
    if (rc == EXIT_OK && all != EXIT_OK)
      rc = all;
  }
  return rc;
}

/* Run the search with progress and result callbacks. */
static mirs_status search_run(cli *c, search_job *j) {
  mirs_status st = MIRS_OK;
  int tty = isatty(fileno(c->err));
  search_ui *ui = &j->ui;
  *ui = (search_ui){.c = c, .start = now_seconds()};
  ui->live = !c->quiet && tty && c->progress < 0;
  ui->interval = c->quiet ? 0 : c->progress >= 0 ? c->progress : tty ? 0 : 30;
  ui->last_line = ui->start;
  int64_t split_k = 0;
  ui->split_k = mirs_option_get_int(c->ctx, "split_k", &split_k) == MIRS_OK && split_k > 0;
  if (pthread_mutex_init(&ui->lock, NULL) != 0)
    st = MIRS_INTERNAL;
  else
    j->ui_lock = true;
  if (st == MIRS_OK)
    st = mirs_search_set_callbacks(j->s, search_progress, search_result, NULL, ui);
  ui->start = now_seconds(); /* time_to_best counts from the run, like wall_seconds */
  atomic_store(&stop_search, j->s);
  if (stop_requested) /* (a signal while loading) */
    mirs_search_stop(j->s);
  if (st == MIRS_OK)
    st = mirs_search_run(j->s);
  return st;
}

/* A complete search's measured ranking (mirs_search_measure): its top
 * measure_top results timed where a GPU is, said on stderr.  Without a
 * GPU it is silent (report.json says why the times are predicted); a
 * result whose harness fails is a warning, and the others are timed;
 * any other failure is a warning, and the model's order stays: the
 * search's results are not lost to a measurement. */
static mirs_status search_measure(cli *c, mirs_search *s) {
  double t0 = now_seconds();
  mirs_status st = mirs_search_measure(s, 0);
  if (st != MIRS_OK) {
    fprintf(c->err,
            PROG ": warning: the measured ranking failed (%s); best.ugraph is the cost model's "
                 "best\n",
            mirs_last_error(c->ctx));
    mirs_clear_error(c->ctx);
    return MIRS_OK;
  }
  int b = mirs_search_best(s), n = mirs_search_measured(s), failed = 0, first = -1;
  for (int i = 0; i < n; i++)
    if (mirs_search_result_measure_error(s, i)) {
      failed++;
      first = first < 0 ? i : first;
    }
  /* A result whose harness failed was not timed (the others were): a
   * defect of the generated code, said whatever --quiet says; so are
   * those the time limit left untimed. */
  if (failed > 0)
    fprintf(c->err,
            PROG ": warning: %d of the top %d results were not timed (report.json gives "
                 "each one's reason); rank %d: %s\n",
            failed, n, first + 1, mirs_search_result_measure_error(s, first));
  if (!c->quiet && n > 0 && b >= 0 && isfinite(mirs_search_result_measured_us(s, b))) {
    char first_us[64] = "not timed";
    if (isfinite(mirs_search_result_measured_us(s, 0)))
      snprintf(first_us, sizeof first_us, "%.3f us", mirs_search_result_measured_us(s, 0));
    fprintf(c->err,
            PROG ": timed the model's top %d on the GPU in %.1f s: the fastest is rank %d "
                 "(%.3f us; the model's first %s)\n",
            n, now_seconds() - t0, b + 1, mirs_search_result_measured_us(s, b), first_us);
  }
  return MIRS_OK;
}

/* Rank 0 after the run: the final checkpoint, report.json and the
 * outputs, written in a safe order; the directory closed and the stop
 * handlers restored.  *stopped: the search stopped with work left. */
static int search_write(cli *c, search_job *j, mirs_status st, mirs_search_stats *stats,
                        int *stopped) {
  int rc;
  search_ui *ui = &j->ui;
  if (ui->live)
    fputs("\r\033[K", c->err);
  if (st == MIRS_OK)
    st = mirs_search_get_stats(j->s, stats);
  /* The checkpoint first, also for a complete search: until report.json
   * is durable it is the only durable copy of the results, so it is
   * removed only after the outputs are written (a kill or a full disk at
   * any step of the write leaves a resumable directory). */
  *stopped = st == MIRS_OK && mirs_search_stopped(j->s);
  final_write fw = {0};
  /* (Served from the result cache: the cache entry is the durable copy,
   * and its results have no search paths to checkpoint.) */
  if (st == MIRS_OK && mirs_search_cache_status(j->s) != 1)
    st = final_checkpoint(c, j->s, j->ckpt, &fw);
  if (st == MIRS_OK && !*stopped)
    st = search_measure(c, j->s);
  double t0 = now_seconds(); /* the write, report included, is timed */
  if (st == MIRS_OK)
    st = mirs_search_report_json(j->s, (int)c->top, &j->report, &j->report_len);
  if (st != MIRS_OK) {
    rc = cli_fail(c, st, 0);
  } else {
    rc = mirs__outdir_write(&j->od, c->ctx, j->s, (int)c->top, j->report, j->report_len, j->why,
                            sizeof j->why);
    if (rc != EXIT_OK) {
      rc = final_write_failed(c, &fw, j->why, j->dir, j->ckpt);
    } else {
      if (!*stopped && mirs__outdir_drop_checkpoint(&j->od, c->ctx, "checkpoint") != 0 &&
          !c->quiet)
        fprintf(c->err,
                PROG ": warning: %s: cannot remove the finished search's checkpoint (%s); the "
                "outputs are complete (report.json)\n",
                j->ckpt, strerror(errno));
      if (ui->interval > 0) {
        final_counts(ui, j->s, stats);
        progress_line(ui, stats, stats->complete ? "done" : "stopped");
        int n = mirs_search_num_results(j->s);
        if (c->top > 0 && c->top < n)
          n = (int)c->top;
        fprintf(c->err, PROG ": wrote %d candidate%s and report.json to %s in %.3f s\n", n,
                n == 1 ? "" : "s", j->dir, now_seconds() - t0);
      }
      if (*stopped && !fw.written)
        rc = final_write_failed(c, &fw, NULL, j->dir, j->ckpt);
    }
  }
  mirs__outdir_close(&j->od);
  j->od_open = 0;
  stop_handlers_restore(&j->h, c->ctx);
  j->handlers_set = false;
  return rc;
}

/* Rank 0 after the write: the report or summary on stdout, and why an
 * incomplete search stopped (signal sig, or the library's reason). */
static int search_conclude(cli *c, search_job *j, const mirs_search_stats *stats, int stopped,
                           int sig) {
  int rc = EXIT_OK;
  if (c->json)
    fwrite(j->report, 1, j->report_len, c->out);
  else if (!c->quiet)
    print_search_summary(c, j->p, j->s, stats, j->dir);
  rc = finish_output(c);
  if (rc == EXIT_OK && !stats->complete) {
    int n = mirs_search_num_results(j->s);
    if (stopped) {
      cli_error(c,
                "search stopped early by %s after %.1f s: the %d result%s found so far are in "
                "%s (report.json says \"complete\": false); the open work is in %s: resume "
                "with: %s" PROG "%s --resume=%s [--threads=N]",
                stop_reason(j->s, sig), stats->wall_seconds, n, n == 1 ? "" : "s", j->dir,
                j->ckpt, c->mpi ? "mpiexec -n M " : "", c->mpi ? " --mpi" : "", j->dir);
      rc = EXIT_STOPPED;
    } else {
      cli_error(c,
                "search stopped early by %s after %.1f s: the %d result%s found so far are in "
                "%s (report.json says \"complete\": false)",
                stop_reason(j->s, sig), stats->wall_seconds, n, n == 1 ? "" : "s", j->dir);
      rc = EXIT_RESOURCE;
    }
  }
  return rc;
}

/* The body of cmd_search (on every rank with --mpi): paths, setup, run;
 * rank 0 writes the outputs and concludes.  The stop handlers are in
 * place from the start (a
 * resume loads for a while, the setup can be long at full shapes) and
 * stay through the output write: a second SIGTERM must not kill the
 * write that keeps the results.  One cleanup path. */
static int search_ranks(cli *c, const char *path) {
  search_job job;
  memset(&job, 0, sizeof job);
  search_job *j = &job;
  stop_handlers_install(&j->h, c->ctx);
  j->handlers_set = true;
  unmask_stops(c);
  j->root = c->rank == 0;
  int rc = search_paths(c, path, j);
  if (rc == EXIT_OK)
    rc = search_setup(c, j);
  if (rc == EXIT_OK) {
    mirs_status st = search_run(c, j);
    int sig = stop_requested;
    j->ran = true;
    if (!j->root) {
      /* This rank's results and open work are rank 0's now: its exit
       * status is rank 0's (agreed below). */
      if (st != MIRS_OK)
        rc = cli_fail(c, st, 0);
    } else {
      mirs_search_stats stats;
      int stopped = 0;
      rc = search_write(c, j, st, &stats, &stopped);
      if (rc == EXIT_OK)
        rc = search_conclude(c, j, &stats, stopped, sig);
    }
  }
  if (j->od_open)
    mirs__outdir_close(&j->od);
  if (j->handlers_set)
    stop_handlers_restore(&j->h, c->ctx);
  if (j->ui_lock)
    pthread_mutex_destroy(&j->ui.lock);
  if (j->ran && !j->root)
    rc = mirs_mpi_agree(rc);
  mirs_free(c->ctx, j->report);
  mirs_search_destroy(j->s);
  mirs_graph_destroy(j->p);
  if (j->ran && j->root && c->mpi)
    rc = mirs_mpi_agree(rc);
  return rc;
}

/* The result cache a search or partition uses: the one --cache or
 * --cache-dir named, none with --no-cache (or MIRSEARCH_NO_CACHE set, as
 * the test suite does, unless a cache was named), else the user's
 * ($XDG_CACHE_HOME/mirsearch, ~/.cache/mirsearch).  A default too long
 * for the option is skipped with a warning. */
static void cache_default(cli *c) {
  char dir[4096];
  const char *off = getenv("MIRSEARCH_NO_CACHE");
  if (c->no_cache || (off && off[0] && strcmp(off, "0") != 0) ||
      mirs_option_get(c->ctx, "cache_dir", dir, sizeof dir) != MIRS_OK || dir[0] ||
      mirs_cache_default_dir(dir, sizeof dir) != MIRS_OK)
    return;
  if (mirs_option_set(c->ctx, "cache_dir", dir) != MIRS_OK) {
    if (!c->quiet)
      fprintf(c->err, PROG ": warning: no result cache: %s\n", mirs_last_error(c->ctx));
    mirs_clear_error(c->ctx);
  }
}

/* `partition FILE.graph`: src/cli/partition.c. */
static int cmd_partition(cli *c, const char *path) {
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  cache_default(c);
  mirs__cli_partition_args a = {.ctx = c->ctx, .out = c->out, .err = c->err, .program = g,
                                .dir = c->out_dir ? c->out_dir : c->output, .quiet = c->quiet,
                                .json = c->json, .mpi = c->mpi};
  rc = mirs__cli_partition(&a);
  mirs_graph_destroy(g);
  return rc;
}

/* `show FILE`: the readable summary of each kernel, or --dot. */
static int cmd_show(cli *c, const char *path) {
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  if (c->dot && c->cost) {
    mirs_graph_destroy(g);
    cli_error(c, "show: --cost adds to the summary, not to --dot's diagram");
    return EXIT_USAGE;
  }
  mirs_status s = c->dot ? mirs__cli_show_dot(c->out, g)
                         : mirs__cli_show_summary(c->out, c->ctx, g, c->cost);
  mirs_graph_destroy(g);
  return s == MIRS_OK ? finish_output(c) : cli_fail(c, s, 0);
}

/* The header path for `codegen -o OUT`: OUT with a trailing .cu replaced
 * by .h (else .h appended), into buf; 0 if it does not fit. */
static int header_path(const char *out, char *buf, size_t size) {
  size_t n = strlen(out);
  if (n > 3 && strcmp(out + n - 3, ".cu") == 0)
    n -= 3;
  return snprintf(buf, size, "%.*s.h", (int)n, out) < (int)size;
}

/* `codegen FILE [-o OUT] [--header=H]`: the CUDA C of a µGraph and its C
 * header (beside OUT, or H). */
static int cmd_codegen(cli *c, const char *path) {
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  char hpath[4096];
  const char *hdr = c->header;
  if (!hdr && c->output) {
    if (!header_path(c->output, hpath, sizeof hpath)) {
      mirs_graph_destroy(g);
      cli_error(c, "%s: name too long", c->output);
      return EXIT_USAGE;
    }
    hdr = hpath;
  }
  char *text = NULL, *htext = NULL;
  mirs_status s = mirs_codegen_cuda(g, NULL, &text);
  if (s == MIRS_OK && hdr)
    s = mirs_codegen_header(g, NULL, &htext);
  mirs_graph_destroy(g);
  if (s == MIRS_OK && hdr)
    s = mirs_write_file_atomic(c->ctx, hdr, htext, strlen(htext));
  if (s == MIRS_OK && c->output) {
    s = mirs_write_file_atomic(c->ctx, c->output, text, strlen(text));
    if (s != MIRS_OK && hdr)
      (void)unlink(hdr); /* no header left without the code it declares */
  } else if (s == MIRS_OK)
    fputs(text, c->out);
  mirs_free(c->ctx, text);
  mirs_free(c->ctx, htext);
  if (s != MIRS_OK)
    return cli_fail(c, s, 0);
  return c->output ? EXIT_OK : finish_output(c);
}

/* `run FILE`: compile and run the generated code; eval's lines and the
 * largest relative error against the float64 interpreter (exit 1 above
 * the dtype's tolerance). */
static int cmd_run(cli *c, const char *path) {
  int64_t seed = 0;
  if (mirs_option_get_int(c->ctx, "seed", &seed) != MIRS_OK)
    return cli_fail(c, mirs_last_status(c->ctx), 0);
  mirs_backend backend = MIRS_BACKEND_HOST;
  if (c->backend) {
    backend = strcmp(c->backend, "cuda") == 0 ? MIRS_BACKEND_CUDA : MIRS_BACKEND_HOST;
  } else {
    int n = 0;
    if (mirs_gpu_device_count(c->ctx, &n) == MIRS_OK && n > 0)
      backend = MIRS_BACKEND_CUDA;
    mirs_clear_error(c->ctx);
  }
  mirs_graph *g;
  int rc = load_graph(c, path, &g);
  if (rc != EXIT_OK)
    return rc;
  mirs_eval_result *r = NULL;
  double err = 0;
  /* SIGINT and SIGTERM stop the run: the library kills the compiler's or
   * the generated program's process group and removes its directory. */
  stop_handlers h;
  stop_handlers_install(&h, c->ctx);
  mirs_status s = mirs_codegen_run(g, (uint64_t)seed, backend, &r, &err);
  stop_handlers_restore(&h, c->ctx);
  if (s != MIRS_OK) {
    mirs_graph_destroy(g);
    return cli_fail(c, s, 0);
  }
  rc = print_outputs(c, g, r);
  double tol = mirs_codegen_tolerance(g);
  if (rc == EXIT_OK)
    fprintf(c->out, "max relative error vs float64 interpreter: %.3e (tolerance %g, backend %s)\n",
            err, tol, backend == MIRS_BACKEND_CUDA ? "cuda" : "host");
  mirs_eval_result_destroy(r);
  mirs_graph_destroy(g);
  if (rc == EXIT_OK)
    rc = finish_output(c);
  if (rc == EXIT_OK && !(err <= tol)) {
    cli_error(c, "%s: the generated code's outputs differ from the interpreter's beyond tolerance",
              path);
    rc = EXIT_DIFFERENT;
  }
  return rc;
}

/* bench --source-dir=DIR: create DIR when it is missing (one level, as
 * --out), so the sources land where asked; a DIR that cannot be made is
 * bad usage, reported before any work. */
static int source_dir_ready(cli *c) {
  if (!c->source_dir)
    return EXIT_OK;
  struct stat st;
  if (mkdir(c->source_dir, 0777) != 0 && errno != EEXIST) {
    cli_error(c, "--source-dir=%s: cannot create the directory: %s", c->source_dir,
              strerror(errno));
    return EXIT_USAGE;
  }
  if (stat(c->source_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    cli_error(c, "--source-dir=%s: not a directory", c->source_dir);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

/* `bench FILE`: time the generated code on the GPU (src/cli/bench.c). */
static int cmd_bench(cli *c, const char *path) {
  mirs_graph *g = NULL, *p = NULL;
  int rc = load_graph(c, path, &g);
  if (rc == EXIT_OK && c->program)
    rc = load_graph(c, c->program, &p);
  if (rc == EXIT_OK)
    rc = source_dir_ready(c);
  if (rc == EXIT_OK)
    rc = mirs__cli_bench(c->ctx, c->out, c->err, g, p, path, c->program, c->source_dir, c->json);
  mirs_graph_destroy(p);
  mirs_graph_destroy(g);
  return rc == EXIT_OK ? finish_output(c) : rc;
}

/* Whether an operand that is not a command names a file (so the default
 * search is meant) rather than a misspelt command. */
static int looks_like_file(const char *arg) {
  return strchr(arg, '/') || strchr(arg, '.') || access(arg, F_OK) == 0;
}

/* An option of other commands (bench's --program, run's --backend, ...)
 * would be ignored silently, so it is refused, naming the commands it
 * belongs to.  cmd indexes run_command's commands[] (-1: a search), and
 * `what` names it. */
static int misplaced_option(cli *c, int cmd, const char *what) {
  /* owners: bit cmd + 1 of each command the option belongs to */
  enum { SHOW = 1u << 4, CODEGEN = 1u << 5, RUN = 1u << 6, BENCH = 1u << 7, PART = 1u << 8 };
  enum { IMPORT = 1u << 9 };
  const struct {
    int given;
    const char *name, *of;
    unsigned owners;
  } own[] = {
      {c->output != NULL, "-o", "codegen, partition and import (a search: --out=DIR)",
       CODEGEN | PART | IMPORT},
      {c->header != NULL, "--header", "codegen", CODEGEN},
      {c->backend != NULL, "--backend", "run", RUN},
      {c->dot, "--dot", "show", SHOW},
      {c->cost, "--cost", "show", SHOW},
      {c->program != NULL, "--program", "bench", BENCH},
      {c->source_dir != NULL, "--source-dir", "bench", BENCH},
      {c->calibrate != NULL, "--calibrate", "bench", BENCH},
      {c->rank_dir != NULL, "--rank", "bench", BENCH},
      {c->ninput_shapes > 0, "--input-shape", "import", IMPORT},
  };
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (own[i].given && !(own[i].owners & (1u << (cmd + 1)))) {
      cli_error(c, "%s is an option of %s, not of %s", own[i].name, own[i].of, what);
      return cli_hint(c);
    }
  return EXIT_OK;
}

/* Dispatch on the operands left after option parsing. */
static int run_command(cli *c, int nargs, char **args) {
  static const char *const commands[] = {"check", "eval",    "verify", "show",
                                         "codegen", "run", "bench", "partition",
                                         "import"};
  static const int files[] = {1, 1, 2, 1, 1, 1, 1, 1, 1};
  enum { NCOMMANDS = sizeof files / sizeof files[0] };
  if (c->resume) {
    /* An optional FILE: the program the checkpoint must have been
     * written for (a batch script's resume never takes another's). */
    int is_cmd = 0;
    for (int i = 0; nargs > 0 && i < NCOMMANDS; i++)
      is_cmd |= strcmp(args[0], commands[i]) == 0;
    if (nargs > 1 || is_cmd) {
      cli_error(c, "--resume=DIR continues a search: at most its FILE.graph, no command ('%s')",
                args[nargs > 1 ? 1 : 0]);
      return cli_hint(c);
    }
    if (misplaced_option(c, -1, "a resumed search") != EXIT_OK)
      return EXIT_USAGE;
    return cmd_search(c, nargs == 1 ? args[0] : NULL);
  }
  if (nargs == 0) {
    cli_error(c, "missing command or FILE");
    return cli_hint(c);
  }
  int cmd = -1;
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(args[0], commands[i]) == 0)
      cmd = i;
  if (cmd < 0) {
    if (!looks_like_file(args[0])) {
      cli_error(c,
                "unknown command '%s' (commands: check, eval, verify, show, codegen, run, bench, "
                "partition, import)",
                args[0]);
      return cli_hint(c);
    }
    if (nargs > 1) {
      cli_error(c, "unexpected argument '%s'", args[1]);
      return cli_hint(c);
    }
    if (misplaced_option(c, -1, "a search") != EXIT_OK)
      return EXIT_USAGE;
    return cmd_search(c, args[0]);
  }
  char what[32];
  snprintf(what, sizeof what, "'%s'", commands[cmd]);
  if (misplaced_option(c, cmd, what) != EXIT_OK)
    return EXIT_USAGE;
  if (cmd == 6 && c->calibrate && nargs == 1) /* bench --calibrate: no FILE */
    return source_dir_ready(c) != EXIT_OK
               ? EXIT_USAGE
               : mirs__cli_calibrate(c->ctx, c->out, c->err, c->calibrate, c->source_dir);
  if (cmd == 6 && c->rank_dir && nargs == 1) /* bench --rank=DIR: no FILE */
    return mirs__cli_rank(c->ctx, c->out, c->err, c->rank_dir, c->top);
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
  if (cmd == 7)
    return cmd_partition(c, args[1]);
  if (c->mpi) {
    cli_error(c, "--mpi runs a search or a partition: not '%s'", commands[cmd]);
    return cli_hint(c);
  }
  if (cmd == 2)
    return cmd_verify(c, args[1], args[2]);
  if (cmd == 3)
    return cmd_show(c, args[1]);
  if (cmd == 4)
    return cmd_codegen(c, args[1]);
  if (cmd == 5)
    return cmd_run(c, args[1]);
  if (cmd == 6)
    return cmd_bench(c, args[1]);
  if (cmd == 8) /* import MODEL.onnx [-o FILE.graph] (src/cli/import.c) */
    return mirs__cli_import(c->ctx, c->out, c->err, args[1], c->output, c->input_shapes,
                            c->ninput_shapes);
  return cmd == 0 ? cmd_check(c, args[1]) : cmd_eval(c, args[1]);
}

/* The mirsearch program (see cli.h). */
int mirs__cli_main(int argc, char **argv, FILE *out, FILE *err) {
  cli c = {.out = out, .err = err, .progress = -1};
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
    if (rc == EXIT_OK && (c.help || c.version || c.man)) {
      if (c.help)
        print_help(&c);
      else if (c.man)
        print_man(&c);
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
