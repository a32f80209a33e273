/* SPDX-License-Identifier: MIT */
/* src/codegen/run.c - compile and run generated code (`mirsearch run`):
 * the public codegen API (mirsearch/codegen.h), the harness main() that
 * moves the seeded inputs in and the outputs out, and the driver that
 * writes the sources to a private temporary directory, compiles them
 * (host C++ through the emulation header, or nvcc) and runs the program.
 *
 * Invariants: inputs are exactly mirs_graph_eval's (mirs_input_value),
 * rounded once to each input's dtype by the harness; a run never reports
 * values it did not read back in full; the temporary directory is removed
 * on every path; child processes get argv arrays (no shell) and a process
 * group of their own, killed whole when the run is stopped (a signal, the
 * time limit), so none outlives it. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "mirsearch/codegen.h"
#include "mirsearch/gpu.h"

extern char **environ;

/* The bytes of src/codegen/emu.h (od output: no string-length limits). */
const char mirs__codegen_emu_h[] = {
#include "codegen/emu_h.inc"
    0};

/* The emulation header's text. */
const char *mirs_codegen_emulation_header(void) {
  return mirs__codegen_emu_h;
}

/* C type of a stored element. */
static const char *stype(mirs_dtype t) {
  return t == MIRS_F16 ? "__half" : t == MIRS_BF16 ? "__nv_bfloat16" : "float";
}

/* Host helpers of a harness: status check, dtype conversion from and to
 * float64, reading inputs into device buffers and writing outputs back. */
const char mirs__codegen_harness_io[] =
    "#include <stdio.h>\n#include <stdlib.h>\n\n"
    "inline void mirs_h_check(cudaError_t e, const char *what) {\n"
    "    if (e != cudaSuccess) {\n"
    "        fprintf(stderr, \"%s: %s\\n\", what, cudaGetErrorString(e));\n"
    "        exit(3);\n    }\n}\n"
    "inline void mirs_h_to(const double *s, __half *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = __float2half_rn((float)s[i]);\n}\n"
    "inline void mirs_h_to(const double *s, __nv_bfloat16 *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = __float2bfloat16_rn((float)s[i]);\n}\n"
    "inline void mirs_h_to(const double *s, float *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = (float)s[i];\n}\n"
    "inline void mirs_h_from(const __half *s, double *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = __half2float(s[i]);\n}\n"
    "inline void mirs_h_from(const __nv_bfloat16 *s, double *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = __bfloat162float(s[i]);\n}\n"
    "inline void mirs_h_from(const float *s, double *d, size_t n) {\n"
    "    for (size_t i = 0; i < n; i++) d[i] = s[i];\n}\n"
    "template <typename T> T *mirs_h_in(FILE *f, size_t n) {\n"
    "    double *v = (double *)malloc(n * sizeof(double));\n"
    "    T *h = (T *)malloc(n * sizeof(T));\n"
    "    T *d = NULL;\n"
    "    if (!v || !h || fread(v, sizeof(double), n, f) != n) {\n"
    "        fprintf(stderr, \"cannot read the inputs\\n\");\n        exit(3);\n    }\n"
    "    mirs_h_to(v, h, n);\n"
    "    mirs_h_check(cudaMalloc((void **)&d, n * sizeof(T)), \"cudaMalloc\");\n"
    "    mirs_h_check(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice), "
    "\"cudaMemcpy\");\n"
    "    free(v);\n    free(h);\n    return d;\n}\n"
    "template <typename T> void mirs_h_out(FILE *f, const T *d, size_t n) {\n"
    "    double *v = (double *)malloc(n * sizeof(double));\n"
    "    T *h = (T *)malloc(n * sizeof(T));\n"
    "    if (!v || !h) {\n        fprintf(stderr, \"out of memory\\n\");\n        exit(3);\n    }\n"
    "    mirs_h_check(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost), "
    "\"cudaMemcpy\");\n"
    "    mirs_h_from(h, v, n);\n"
    "    if (fwrite(v, sizeof(double), n, f) != n) {\n"
    "        fprintf(stderr, \"cannot write the outputs\\n\");\n        exit(3);\n    }\n"
    "    free(v);\n    free(h);\n}\n\n";

/* Emit the harness lines that write g's outputs (device buffers PREFIX0,
 * PREFIX1, ... in output order) as float64 to the file argv[argi]: open
 * (declaring `fo` with decl, "" when it exists), write, close; a failure
 * returns 3 from main.  ind indents each line. */
void mirs__codegen_emit_outputs(const mirs_graph *g, const char *ind, const char *decl, int argi,
                                const char *prefix, mirs__buf *b) {
  mirs__buf_printf(b, "%s%sfo = fopen(argv[%d], \"wb\");\n", ind, decl, argi);
  mirs__buf_printf(b, "%sif (!fo) {\n%s    perror(argv[%d]);\n%s    return 3;\n%s}\n", ind, ind,
                   argi, ind, ind);
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, "%smirs_h_out(fo, %s%d, %" PRId64 ");\n", ind, prefix, (int)i,
                     mirs__shape_numel(&g->t[g->outputs[i]].shape));
  mirs__buf_printf(b, "%sif (fclose(fo) != 0) {\n%s    perror(argv[%d]);\n%s    return 3;\n%s}\n",
                   ind, ind, argi, ind, ind);
}

/* Emit the harness main() for g's entry point. */
mirs_status mirs__codegen_harness(const mirs_graph *g, const char *entry, mirs__buf *b) {
  mirs__buf_puts(b, "/* mirsearch run harness: inputs (float64, input order) from argv[1],\n"
                    " * outputs (float64, output order) to argv[2]. */\n"
                    "#include \"kernel.cu\"\n");
  mirs__buf_puts(b, mirs__codegen_harness_io);
  mirs__buf_puts(b,
                 "int main(int argc, char **argv) {\n"
                 "    if (argc != 3 && argc != 4) {\n"
                 "        fprintf(stderr, \"usage: harness IN OUT [EMU_SEED]\\n\");\n"
                 "        return 2;\n    }\n"
                 "#ifdef MIRS_HOST_EMULATION\n"
                 "    if (argc == 4)\n        mirs_emu_seed(strtoull(argv[3], NULL, 10));\n"
                 "#endif\n"
                 "    FILE *fi = fopen(argv[1], \"rb\");\n"
                 "    if (!fi) {\n        perror(argv[1]);\n        return 3;\n    }\n");
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, "    %s *in%d = mirs_h_in<%s>(fi, %" PRId64 ");\n", stype(g->t[t].dtype),
                       (int)t, stype(g->t[t].dtype), mirs__shape_numel(&g->t[t].shape));
  mirs__buf_puts(b, "    fclose(fi);\n");
  for (int32_t i = 0; i < g->nout; i++) {
    int32_t t = g->outputs[i];
    mirs__buf_printf(b, "    %s *out%d = NULL;\n", stype(g->t[t].dtype), (int)i);
    mirs__buf_printf(b,
                     "    mirs_h_check(cudaMalloc((void **)&out%d, %" PRId64
                     " * sizeof(%s)), \"cudaMalloc\");\n",
                     (int)i, mirs__shape_numel(&g->t[t].shape), stype(g->t[t].dtype));
  }
  mirs__buf_printf(b,
                   "    void *ws = NULL;\n    const size_t wsb = %s_workspace_bytes();\n"
                   "    if (wsb)\n        mirs_h_check(cudaMalloc(&ws, wsb), \"cudaMalloc\");\n",
                   entry);
  /* Through the C interface, as a compiler would call it. */
  mirs__buf_printf(b, "    const int st = %s(", entry);
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      mirs__buf_printf(b, "in%d, ", (int)t);
  for (int32_t i = 0; i < g->nout; i++)
    mirs__buf_printf(b, "out%d, ", (int)i);
  mirs__buf_printf(b,
                   "ws, wsb, NULL);\n"
                   "    if (st != 0) {\n"
                   "        fprintf(stderr, \"%s: %%s (status %%d)\\n\", %s_status_string(st), st);\n"
                   "        exit(3);\n    }\n",
                   entry, entry);
  mirs__buf_puts(b, "    mirs_h_check(cudaDeviceSynchronize(), \"cudaDeviceSynchronize\");\n");
  mirs__codegen_emit_outputs(g, "    ", "FILE *", 2, "out", b);
  mirs__buf_puts(b, "    return 0;\n}\n");
  return b->failed ? MIRS_NOMEM : MIRS_OK;
}

/* MIRS_OK when entry is NULL or a C identifier. */
static mirs_status check_entry(const mirs_graph *g, const char *entry) {
  if (!entry)
    return MIRS_OK;
  bool ok = (entry[0] < '0' || entry[0] > '9') && entry[0];
  for (const char *p = entry; *p; p++)
    ok = ok && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '_');
  return ok ? MIRS_OK
            : MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "entry point '%s' is not a C identifier", entry);
}

/* The text an emitter (mirs__codegen_cuda or _header) appends for g and
 * entry, into *text from the context allocator (NUL-terminated); what
 * names the public caller in a message. */
static mirs_status emit_text(const mirs_graph *g, const char *entry, char **text,
                             mirs_status (*emit)(const mirs_graph *, const char *, mirs__buf *),
                             const char *what) {
  if (!g || !text)
    return g ? MIRS_FAIL(g->ctx, MIRS_INVALID_ARG, "%s: NULL text", what) : MIRS_INVALID_ARG;
  *text = NULL;
  MIRS_CHECK(g->ctx, check_entry(g, entry));
  mirs__buf b;
  mirs__buf_init(&b, g->ctx);
  mirs_status s = emit(g, entry, &b);
  if (s == MIRS_OK && b.failed)
    s = MIRS_FAIL(g->ctx, MIRS_NOMEM, "out of memory");
  if (s != MIRS_OK) {
    mirs__buf_free(&b);
    return s;
  }
  *text = b.data;
  return MIRS_OK;
}

/* Public: the CUDA C of g. */
mirs_status mirs_codegen_cuda(const mirs_graph *g, const char *entry, char **text) {
  return emit_text(g, entry, text, mirs__codegen_cuda, "mirs_codegen_cuda");
}

/* Public: the C header of g's generated code. */
mirs_status mirs_codegen_header(const mirs_graph *g, const char *entry, char **text) {
  return emit_text(g, entry, text, mirs__codegen_header, "mirs_codegen_header");
}

/* Public: the tolerance of a run of g. */
double mirs_codegen_tolerance(const mirs_graph *g) {
  double tol = 0;
  for (int32_t t = 0; g && t < g->nt; t++)
    tol = fmax(tol, mirs__codegen_tolerance(g->t[t].dtype));
  return tol;
}

/* ---------------------------------------------------------------- driver */

/* Write len bytes to dir/name. */
mirs_status mirs__codegen_put_file(mirs_context *ctx, const char *dir, const char *name, const void *data,
                            size_t len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f)
    return MIRS_FAIL(ctx, MIRS_IO, "%s: %s", path, strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len;
  ok = fclose(f) == 0 && ok;
  if (!ok)
    return MIRS_FAIL(ctx, MIRS_IO, "%s: cannot write", path);
  return MIRS_OK;
}

/* Wait for child pid (the leader of its own process group) while
 * watching ctx: a stop request (mirs_interrupt: SIGINT or SIGTERM in the
 * CLI) or the deadline (mirs__core_now() seconds; 0: none) kills the
 * whole group, so neither the compiler's nor the generated program's
 * processes outlive the call, and the caller removes their directory. */
static mirs_status wait_child(mirs_context *ctx, pid_t pid, double deadline, const char *what,
                              int *ws) {
  struct timespec nap = {0, 0};
  for (;;) {
    pid_t r = waitpid(pid, ws, WNOHANG);
    if (r == pid)
      return MIRS_OK;
    if (r < 0 && errno != EINTR) {
      int e = errno;
      (void)kill(-pid, SIGKILL);
      return MIRS_FAIL(ctx, MIRS_IO, "waitpid: %s", strerror(e));
    }
    bool late = deadline > 0 && mirs__core_now() >= deadline;
    if (late || mirs__core_stopping(ctx)) {
      mirs__codegen_spawn_kill(pid);
      if (late)
        return MIRS_FAIL(ctx, MIRS_LIMIT, "%s: stopped at the time limit (--time-limit=%g)", what,
                         ctx->opt.time_limit);
      return mirs__core_stopped(ctx, what);
    }
    /* Poll from 1 ms up to 20 ms: short children stay fast, long ones
     * cost nothing. */
    nap.tv_nsec = nap.tv_nsec < 20000000 ? nap.tv_nsec + 1000000 : 20000000;
    (void)nanosleep(&nap, NULL);
  }
}

/* Start argv with stdout and stderr appended to log, in a process group
 * of its own (its leader's pid into *pid). */
mirs_status mirs__codegen_spawn_start(mirs_context *ctx, char *const *argv, const char *log,
                                      pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  int e = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (e != 0)
    return MIRS_FAIL(ctx, MIRS_IO, "cannot run %s: %s", argv[0], strerror(e));
  return MIRS_OK;
}

/* Wait for a started child (what names it in messages) as wait_child
 * does; its exit status into *status (128+N for signal N). */
mirs_status mirs__codegen_spawn_wait(mirs_context *ctx, pid_t pid, double deadline,
                                     const char *what, int *status) {
  int ws;
  MIRS_CHECK(ctx, wait_child(ctx, pid, deadline, what, &ws));
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  return MIRS_OK;
}

/* Kill a started child's process group and reap it. */
void mirs__codegen_spawn_kill(pid_t pid) {
  int ws;
  (void)kill(-pid, SIGKILL);
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
    ;
}

/* Run argv with stdout and stderr to log, in a process group of its own,
 * until it exits, the deadline passes (mirs__core_now() seconds; 0: none)
 * or ctx is asked to stop (wait_child); the exit status into *status (-1
 * when it could not start, 128+N for a signal). */
mirs_status mirs__codegen_spawn(mirs_context *ctx, char *const *argv, const char *log,
                                double deadline, int *status) {
  pid_t pid;
  *status = -1;
  MIRS_CHECK(ctx, mirs__codegen_spawn_start(ctx, argv, log, &pid));
  return mirs__codegen_spawn_wait(ctx, pid, deadline, argv[0], status);
}

/* The first lines of a log file, for an error message. */
void mirs__codegen_log_head(const char *log, char *buf, size_t size) {
  buf[0] = '\0';
  FILE *f = fopen(log, "r");
  if (!f)
    return;
  size_t n = fread(buf, 1, size - 1, f);
  buf[n] = '\0';
  fclose(f);
  int lines = 0;
  for (char *p = buf; *p; p++)
    if (*p == '\n' && ++lines == 8) {
      *p = '\0';
      break;
    }
}

/* Remove the files named in names[0..n) from dir, then dir. */
void mirs__codegen_remove_dir(const char *dir, const char *const *names, size_t n) {
  char path[4200];
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    (void)unlink(path);
  }
  (void)rmdir(dir);
}

/* Create a private temporary directory ($TMPDIR or /tmp) into dir. */
mirs_status mirs__codegen_tmpdir(mirs_context *ctx, const char *what, char *dir, size_t size) {
  const char *tmp = getenv("TMPDIR");
  int dn = snprintf(dir, size, "%s/mirsearch-%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp", what);
  if (dn < 0 || (size_t)dn >= size || !mkdtemp(dir))
    return MIRS_FAIL(ctx, MIRS_IO, "cannot create a temporary directory: %s", strerror(errno));
  return MIRS_OK;
}

/* The nvcc to run: the option, else configure's, else PATH's. */
const char *mirs__codegen_nvcc(mirs_context *ctx) {
  if (ctx->opt.codegen_nvcc[0])
    return ctx->opt.codegen_nvcc;
#ifdef MIRS_NVCC
  return MIRS_NVCC;
#else
  return "nvcc";
#endif
}

/* Append a copy of text (cut at 1023 bytes; callers keep paths shorter). */
void mirs__codegen_arg(mirs__codegen_args *a, const char *text) {
  if (a->n >= 24)
    return;
  snprintf(a->store[a->n], sizeof a->store[a->n], "%s", text);
  a->argv[a->n] = a->store[a->n];
  a->argv[++a->n] = NULL;
}

/* The library folder of the CUDA toolkit whose nvcc is `nvcc` (a path,
 * or a name looked up on PATH, links resolved): BIN/../lib64, else
 * BIN/../lib, into buf; false when none is found. */
static bool cuda_libdir(const char *nvcc, char *buf, size_t size) {
  char found[PATH_MAX], real[PATH_MAX];
  if (strchr(nvcc, '/')) {
    snprintf(found, sizeof found, "%s", nvcc);
  } else {
    const char *path = getenv("PATH");
    bool ok = false;
    while (path && *path && !ok) {
      size_t n = strcspn(path, ":");
      snprintf(found, sizeof found, "%.*s/%s", (int)n, path, nvcc);
      ok = access(found, X_OK) == 0;
      path += n + (path[n] == ':');
    }
    if (!ok)
      return false;
  }
  if (!realpath(found, real))
    return false;
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(real, '/');
    if (!slash)
      return false;
    *slash = '\0';
  }
  static const char *const subs[] = {"lib64", "lib"};
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    struct stat st;
    int n = snprintf(buf, size, "%s/%s", real, subs[i]);
    if (n > 0 && (size_t)n < size && stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
      return true;
  }
  return false;
}

/* The nvcc command compiling dir/src into dir/out (with -llib when lib
 * is not NULL): -std=c++17 -O2 -I dir and one -gencode per architecture
 * of the codegen_arch option (sm_90a only under codegen_wgmma). */
mirs_status mirs__codegen_nvcc_args(mirs_context *ctx, const char *dir, const char *src,
                                    const char *out, const char *lib, mirs__codegen_args *cmd) {
  int64_t arch[4];
  int na = 0;
  char why[128];
  if (!mirs__core_parse_int_list(ctx->opt.codegen_arch, 50, 120, arch, 4, &na, why, sizeof why) ||
      na < 1)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "codegen_arch: %s", why);
  char path[1024];
  cmd->n = 0;
  mirs__codegen_arg(cmd, mirs__codegen_nvcc(ctx));
  mirs__codegen_arg(cmd, "-std=c++17");
  mirs__codegen_arg(cmd, "-O2");
  snprintf(path, sizeof path, "-I%s", dir);
  mirs__codegen_arg(cmd, path);
  /* The Hopper path's wgmma exists on sm_90a only (hopper.c). */
  for (int i = 0; i < na && !ctx->opt.codegen_wgmma; i++) {
    snprintf(path, sizeof path, "-gencode=arch=compute_%d,code=sm_%d", (int)arch[i], (int)arch[i]);
    mirs__codegen_arg(cmd, path);
  }
  if (ctx->opt.codegen_wgmma)
    mirs__codegen_arg(cmd, "-gencode=arch=compute_90a,code=sm_90a");
  snprintf(path, sizeof path, "%s/%s", dir, src);
  mirs__codegen_arg(cmd, path);
  mirs__codegen_arg(cmd, "-o");
  snprintf(path, sizeof path, "%s/%s", dir, out);
  mirs__codegen_arg(cmd, path);
  if (lib) {
    snprintf(path, sizeof path, "-l%s", lib);
    mirs__codegen_arg(cmd, path);
    /* The toolkit's libraries need not be on the loader's path (a
     * machine's toolkit often is not): the program records where. */
    char libdir[900];
    if (cuda_libdir(cmd->argv[0], libdir, sizeof libdir)) {
      mirs__codegen_arg(cmd, "-Xlinker");
      snprintf(path, sizeof path, "-rpath,%s", libdir);
      mirs__codegen_arg(cmd, path);
    }
  }
  return MIRS_OK;
}

/* Compile dir/src with nvcc into dir/out (mirs__codegen_nvcc_args).  A
 * failure is MIRS_INTERNAL: what, then nvcc's first lines. */
mirs_status mirs__codegen_nvcc_build(mirs_context *ctx, const char *dir, const char *src,
                                     const char *out, const char *lib, double deadline,
                                     const char *what) {
  mirs__codegen_args a;
  MIRS_CHECK(ctx, mirs__codegen_nvcc_args(ctx, dir, src, out, lib, &a));
  char log[1024], msg[1100];
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(msg, sizeof msg, "%s with %s", what, a.argv[0]);
  return mirs__codegen_spawn_checked(ctx, a.argv, log, deadline, MIRS_INTERNAL, msg);
}

/* Run argv (output to log); a non-zero exit becomes status `fail` with
 * `what` and the log's first lines in the message. */
mirs_status mirs__codegen_spawn_checked(mirs_context *ctx, char *const *argv, const char *log,
                                        double deadline, mirs_status fail, const char *what) {
  int status;
  MIRS_CHECK(ctx, mirs__codegen_spawn(ctx, argv, log, deadline, &status));
  if (status != 0) {
    char head[1024];
    mirs__codegen_log_head(log, head, sizeof head);
    return MIRS_FAIL(ctx, fail, "%s (exit %d):\n%s", what, status, head);
  }
  return MIRS_OK;
}

/* Write g's seeded inputs (the interpreter's, float64, input order) to dir/name. */
mirs_status mirs__codegen_write_inputs(const mirs_graph *g, uint64_t seed, const char *dir,
                                       const char *name) {
  mirs_context *ctx = g->ctx;
  int64_t nin = 0;
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0)
      nin += mirs__shape_numel(&g->t[t].shape);
  double *v = mirs__core_calloc(ctx, (size_t)nin + 1, sizeof *v);
  if (!v)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory");
  int64_t at = 0;
  for (int32_t t = 0; t < g->nt; t++)
    if (g->t[t].producer < 0) {
      int64_t n = mirs__shape_numel(&g->t[t].shape);
      mirs__graph_input_fill(seed, g->t[t].name, v + at, n, ctx->opt.input_scale);
      at += n;
    }
  mirs_status s = mirs__codegen_put_file(ctx, dir, name, v, (size_t)nin * sizeof *v);
  mirs__core_free(ctx, v);
  return s;
}

/* Read g's outputs (float64, output order) from path into an eval result. */
mirs_status mirs__codegen_read_outputs(const mirs_graph *g, const char *path,
                                       mirs_eval_result **out) {
  mirs_context *ctx = g->ctx;
  int64_t nout = 0;
  for (int32_t i = 0; i < g->nout; i++)
    nout += mirs__shape_numel(&g->t[g->outputs[i]].shape);
  char *data = NULL;
  size_t len = 0;
  mirs_status s = mirs__core_read_file(ctx, path, &data, &len);
  if (s == MIRS_OK && len != (size_t)nout * sizeof(double))
    s = MIRS_FAIL(ctx, MIRS_INTERNAL, "the generated program wrote %zu bytes of outputs, not %zu",
                  len, (size_t)nout * sizeof(double));
  const double **outp = NULL;
  if (s == MIRS_OK) {
    outp = mirs__core_calloc(ctx, (size_t)g->nout + 1, sizeof *outp);
    if (!outp)
      s = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory");
  }
  if (s == MIRS_OK) {
    int64_t at = 0;
    for (int32_t i = 0; i < g->nout; i++) {
      outp[i] = (const double *)(const void *)data + at;
      at += mirs__shape_numel(&g->t[g->outputs[i]].shape);
    }
    s = mirs__eval_result_make(g, outp, out);
  }
  mirs__core_free(ctx, outp);
  mirs__core_free(ctx, data);
  return s;
}

/* Compile the sources in dir into dir/prog for backend. */
static mirs_status compile(mirs_context *ctx, const char *dir, mirs_backend backend,
                           double deadline) {
  if (backend != MIRS_BACKEND_HOST)
    return mirs__codegen_nvcc_build(ctx, dir, "harness.cu", "prog", NULL, deadline,
                                    "the generated code does not compile");
  char src[1024], prog[1024], log[1024], inc[1024];
  snprintf(src, sizeof src, "%s/harness.cu", dir);
  snprintf(prog, sizeof prog, "%s/prog", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(inc, sizeof inc, "-I%s", dir);
  mirs__codegen_args a;
  a.n = 0;
  static const char *const flags[] = {"-std=c++14", "-O1", "-DMIRS_HOST_EMULATION"};
  mirs__codegen_arg(&a, ctx->opt.codegen_cxx);
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    mirs__codegen_arg(&a, flags[i]);
  mirs__codegen_arg(&a, inc);
  mirs__codegen_arg(&a, "-x");
  mirs__codegen_arg(&a, "c++");
  mirs__codegen_arg(&a, src);
  mirs__codegen_arg(&a, "-x");
  mirs__codegen_arg(&a, "none");
  mirs__codegen_arg(&a, "-o");
  mirs__codegen_arg(&a, prog);
  mirs__codegen_arg(&a, "-lm");
  char what[1100];
  snprintf(what, sizeof what, "the generated code does not compile with %s", a.argv[0]);
  return mirs__codegen_spawn_checked(ctx, a.argv, log, deadline, MIRS_INTERNAL, what);
}

/* Fail with MIRS_NO_DEVICE unless a CUDA device is usable. */
mirs_status mirs__codegen_need_device(mirs_context *ctx) {
  int count = 0;
  if (mirs_gpu_device_count(ctx, &count) != MIRS_OK || count < 1) {
    char why[256];
    snprintf(why, sizeof why, "%s", mirs_last_error(ctx));
    return MIRS_FAIL(ctx, MIRS_NO_DEVICE, "no CUDA device: %s", why);
  }
  return MIRS_OK;
}

/* Compile and run g's generated code; see mirsearch/codegen.h. */
mirs_status mirs_codegen_run(const mirs_graph *g, uint64_t seed, mirs_backend backend,
                             mirs_eval_result **out, double *max_rel_error) {
  if (!g)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = g->ctx;
  if (!out || !max_rel_error)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_codegen_run: NULL argument");
  *out = NULL;
  *max_rel_error = NAN;
  if (backend != MIRS_BACKEND_HOST && backend != MIRS_BACKEND_CUDA)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "unknown backend %d", (int)backend);
  MIRS_CHECK(ctx, mirs__graph_validate(g));
  if (backend == MIRS_BACKEND_CUDA)
    MIRS_CHECK(ctx, mirs__codegen_need_device(ctx));
  /* The time limit covers the whole run: reference, compile, program. */
  double deadline = ctx->opt.time_limit > 0 ? mirs__core_now() + ctx->opt.time_limit : 0;
  /* The reference first: it also bounds the sizes involved. */
  mirs_eval_result *ref = NULL;
  MIRS_CHECK(ctx, mirs_graph_eval(g, seed, &ref));

  char entry[300];
  mirs__codegen_entry_name(g, entry, sizeof entry);
  char dir[900];
  mirs_status s = mirs__codegen_tmpdir(ctx, "run", dir, sizeof dir);
  if (s != MIRS_OK) {
    mirs_eval_result_destroy(ref);
    return s;
  }
  mirs__buf code, harness;
  mirs__buf_init(&code, ctx);
  mirs__buf_init(&harness, ctx);
  s = mirs__codegen_cuda(g, entry, &code);
  if (s == MIRS_OK)
    s = mirs__codegen_harness(g, entry, &harness);
  if (s == MIRS_OK && (code.failed || harness.failed))
    s = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory");
  if (s == MIRS_OK)
    s = mirs__codegen_put_file(ctx, dir, "kernel.cu", code.data, code.len);
  if (s == MIRS_OK)
    s = mirs__codegen_put_file(ctx, dir, "harness.cu", harness.data, harness.len);
  if (s == MIRS_OK)
    s = mirs__codegen_put_file(ctx, dir, "mirsearch_emu.h", mirs__codegen_emu_h,
                               strlen(mirs__codegen_emu_h));
  if (s == MIRS_OK)
    s = mirs__codegen_write_inputs(g, seed, dir, "in.bin");
  if (s == MIRS_OK)
    s = compile(ctx, dir, backend, deadline);
  char path[1024];
  if (s == MIRS_OK) {
    char prog[1024], inb[1024], log[1024];
    snprintf(prog, sizeof prog, "%s/prog", dir);
    snprintf(inb, sizeof inb, "%s/in.bin", dir);
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    mirs__codegen_args a;
    a.n = 0;
    mirs__codegen_arg(&a, prog);
    mirs__codegen_arg(&a, inb);
    mirs__codegen_arg(&a, path);
    if (backend == MIRS_BACKEND_HOST) {
      char seedarg[32];
      snprintf(seedarg, sizeof seedarg, "%" PRId64, ctx->opt.emu_seed);
      mirs__codegen_arg(&a, seedarg);
    }
    s = mirs__codegen_spawn_checked(ctx, a.argv, log, deadline,
                                    backend == MIRS_BACKEND_CUDA ? MIRS_CUDA : MIRS_INTERNAL,
                                    "the generated program failed");
  }
  if (s == MIRS_OK)
    s = mirs__codegen_read_outputs(g, path, out);
  if (s == MIRS_OK)
    *max_rel_error = mirs__eval_max_rel_error(ref, *out);
  static const char *const names[] = {"kernel.cu", "mirsearch_emu.h", "harness.cu", "in.bin",
                                      "out.bin",   "prog",            "log"};
  mirs__codegen_remove_dir(dir, names, sizeof names / sizeof names[0]);
  mirs__buf_free(&code);
  mirs__buf_free(&harness);
  mirs_eval_result_destroy(ref);
  MIRS_CHECK(ctx, s);
  return MIRS_OK;
}
