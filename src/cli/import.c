/* SPDX-License-Identifier: MIT */
/* src/cli/import.c - `mirsearch import`: run the Python ONNX importer and
 * check what it wrote.
 *
 * The importer is `PYTHON -m mirsearch.onnx_import MODEL -o TMP`, with the
 * package found through PYTHONPATH: $MIRSEARCH_PYTHONPATH, else the source
 * tree's python/ and the installed copy (pkgdatadir/python) where they
 * exist.  PYTHON is $MIRSEARCH_PYTHON, else python3 and then
 * /usr/bin/python3: an interpreter without the onnx package answers 69
 * and the next is tried (Debian's python3-onnx serves /usr/bin/python3,
 * while a python3 earlier on PATH may lack it).
 *
 * Invariants: the child gets an argv array (no shell); its output goes to
 * a private temporary directory, removed on every path; the program is
 * parsed by the library before it reaches OUTPUT (written atomically) or
 * out, so a broken importer never leaves a broken .graph; the child's
 * messages are copied to err, never to out. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/import.h"

extern char **environ;

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_RESOURCE = 3, EXIT_NO_ONNX = 69 };

/* Copy the file at path to f (best effort: it holds messages). */
static void copy_file(const char *path, FILE *f) {
  FILE *in = fopen(path, "r");
  if (!in)
    return;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    fwrite(buf, 1, n, f);
  fclose(in);
}

/* Whether path names a directory. */
static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* PYTHONPATH for the child into buf: the package's directories, then the
 * caller's PYTHONPATH. */
static void python_path(char *buf, size_t size) {
  const char *env = getenv("MIRSEARCH_PYTHONPATH");
  const char *old = getenv("PYTHONPATH");
  const char *dirs[2] = {MIRS_PYTHON_SRCDIR, MIRS_PKGDATADIR "/python"};
  size_t len = 0;
  buf[0] = '\0';
  if (env && *env)
    len += (size_t)snprintf(buf, size, "%s", env);
  else
    for (int i = 0; i < 2; i++)
      if (is_dir(dirs[i]) && len < size)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ":" : "", dirs[i]);
  if (old && *old && len < size)
    snprintf(buf + len, size - len, "%s%s", len ? ":" : "", old);
}

/* Run python on the importer with its stderr in errpath; the exit status,
 * 127 when it could not be started. */
static int run_importer(const char *python, const char *model, const char *outpath,
                        const char *errpath, const char *pypath, const char *const *shapes,
                        int nshapes) {
  /* posix_spawn takes char *const argv[]: private copies of the strings. */
  const char *args[6 + 2 * MIRS__CLI_MAX_INPUT_SHAPES] = {
      python, "-m", "mirsearch.onnx_import", model, "-o", outpath};
  int nargs = 6;
  for (int i = 0; i < nshapes && i < MIRS__CLI_MAX_INPUT_SHAPES; i++) {
    args[nargs++] = "--input-shape";
    args[nargs++] = shapes[i];
  }
  enum { NARGS = sizeof args / sizeof args[0] };
  char *argv[NARGS + 1] = {NULL};
  /* The environment with PYTHONPATH replaced. */
  size_t n = 0;
  while (environ[n])
    n++;
  char **envp = calloc(n + 2, sizeof *envp);
  size_t pylen = strlen(pypath) + sizeof "PYTHONPATH=";
  char *pyvar = malloc(pylen);
  int ok = envp && pyvar;
  for (int i = 0; i < nargs; i++)
    ok = ok && (argv[i] = strdup(args[i])) != NULL;
  if (!ok) {
    for (int i = 0; i < nargs; i++)
      free(argv[i]);
    free(envp);
    free(pyvar);
    return 127;
  }
  snprintf(pyvar, pylen, "PYTHONPATH=%s", pypath);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "PYTHONPATH=", 11) != 0)
      envp[k++] = environ[i];
  envp[k++] = pyvar;
  envp[k] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, python, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  for (int i = 0; i < nargs; i++)
    free(argv[i]);
  free(envp);
  free(pyvar);
  if (rc != 0)
    return 127;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 127;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Check the program at path with the parser; write it to output or out. */
static int keep_program(mirs_context *ctx, FILE *out, FILE *err, const char *model,
                        const char *path, const char *output) {
  mirs_graph *g = NULL;
  if (mirs_graph_parse_file(ctx, path, &g) != MIRS_OK) {
    fprintf(err, "mirsearch: error: %s: the importer wrote a program the parser refuses: %s\n",
            model, mirs_last_error(ctx));
    return EXIT_RESOURCE;
  }
  /* The importer's text, comments (the input bindings) included. */
  FILE *in = fopen(path, "r");
  char *text = NULL;
  size_t len = 0;
  FILE *mem = in ? open_memstream(&text, &len) : NULL;
  if (mem) {
    copy_file(path, mem);
    fclose(mem);
  }
  if (in)
    fclose(in);
  int rc = EXIT_OK;
  if (!text) {
    fprintf(err, "mirsearch: error: cannot read %s: %s\n", path, strerror(errno));
    rc = EXIT_RESOURCE;
  } else if (output) {
    if (mirs_write_file_atomic(ctx, output, text, len) != MIRS_OK) {
      fprintf(err, "mirsearch: error: %s\n", mirs_last_error(ctx));
      rc = EXIT_RESOURCE;
    } else {
      fprintf(out, "%s: program %s, %d operators -> %s\n", model, mirs_graph_name(g),
              mirs_graph_num_ops(g), output);
    }
  } else {
    fwrite(text, 1, len, out);
  }
  free(text);
  mirs_graph_destroy(g);
  return rc;
}

int mirs__cli_import(mirs_context *ctx, FILE *out, FILE *err, const char *model,
                     const char *output, const char *const *shapes, int nshapes) {
  if (access(model, R_OK) != 0) {
    fprintf(err, "mirsearch: error: %s: %s\n", model, strerror(errno));
    return EXIT_USAGE;
  }
  const char *tmpdir = getenv("TMPDIR");
  char dir[4096], outpath[4200], errpath[4200], pypath[8192];
  snprintf(dir, sizeof dir, "%s/mirs_import.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(err, "mirsearch: error: cannot create a temporary directory: %s\n",
            strerror(errno));
    return EXIT_RESOURCE;
  }
  snprintf(outpath, sizeof outpath, "%s/program.graph", dir);
  snprintf(errpath, sizeof errpath, "%s/stderr", dir);
  python_path(pypath, sizeof pypath);
  const char *env = getenv("MIRSEARCH_PYTHON");
  const char *pythons[] = {env && *env ? env : "python3", env && *env ? NULL : "/usr/bin/python3",
                           NULL};
  int rc = 127;
  for (int i = 0; pythons[i] && (rc == 127 || rc == EXIT_NO_ONNX); i++)
    rc = run_importer(pythons[i], model, outpath, errpath, pypath, shapes, nshapes);
  if (rc == 0) {
    rc = keep_program(ctx, out, err, model, outpath, output);
  } else if (rc == 127 || rc == EXIT_NO_ONNX) {
    if (rc == EXIT_NO_ONNX)
      copy_file(errpath, err);
    fprintf(err,
            "mirsearch: error: import needs Python 3 with the onnx package (Debian: apt-get "
            "install python3-onnx; or pip install onnx; $MIRSEARCH_PYTHON names the "
            "interpreter)\n");
    rc = EXIT_RESOURCE;
  } else {
    copy_file(errpath, err);
    rc = rc == EXIT_USAGE ? EXIT_USAGE : EXIT_RESOURCE;
  }
  unlink(outpath);
  unlink(errpath);
  rmdir(dir);
  return rc;
}
