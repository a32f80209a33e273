/* SPDX-License-Identifier: MIT */
/* tests/check_outputs.c - what a search leaves behind and says, run
 * in-process: the output directory (checked, created and locked before
 * any search work; a second run never mixes its candidates with an old
 * one's; leftover temp files removed; --top), -q and --json, the exit
 * status of a search stopped early, batch progress lines, `show` and
 * --dot, and the manual page. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"

static const char tiny[] = "program tiny\ninput X : f32[4, 8]\ninput W : f32[8, 4]\n"
                           "Y = matmul(X, W)\nO = exp(Y)\noutput O\n";

/* A scratch directory with the tiny program in it. */
typedef struct scratch {
  char dir[512], prog[600], out[600];
} scratch;

static void scratch_make(scratch *s) {
  tu_tmp(s->dir, sizeof s->dir, "mirs-outputs-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(s->dir));
  snprintf(s->prog, sizeof s->prog, "%s/tiny.graph", s->dir);
  snprintf(s->out, sizeof s->out, "%s/out", s->dir);
  FILE *f = fopen(s->prog, "w");
  ck_assert_ptr_nonnull(f);
  fputs(tiny, f);
  ck_assert_int_eq(fclose(f), 0);
}

static void scratch_free(scratch *s) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", s->dir, s->dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Names in directory path (sorted is not needed: counted and matched). */
static int count_entries(const char *path, const char *suffix) {
  DIR *d = opendir(path);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    if (e->d_name[0] != '.' && len >= sl && strcmp(e->d_name + len - sl, suffix) == 0)
      n++;
  }
  closedir(d);
  return n;
}

static int exists(const char *dir, const char *name) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  struct stat st;
  return stat(p, &st) == 0;
}

static void touch(const char *dir, const char *name) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs("old\n", f);
  fclose(f);
}

static char *read_file(const char *dir, const char *name) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  char *s = slurp(f);
  fclose(f);
  return s;
}

/* -q: nothing on stdout or stderr; --json: exactly the report. */
START_TEST(test_quiet_and_json) {
  scratch s;
  scratch_make(&s);
  run r;
  run_cli(&r, "-q", "--out", s.out, s.prog, NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  ck_assert_str_eq(r.out, "");
  ck_assert_str_eq(r.err, "");
  ck_assert(exists(s.out, "report.json"));
  run_free(&r);
  run_cli(&r, "--json", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  char *rep = read_file(s.out, "report.json");
  ck_assert_str_eq(r.out, rep);
  ck_assert_ptr_nonnull(strstr(rep, "\"groups\": ["));
  ck_assert_ptr_nonnull(strstr(rep, "\"unfused\": {\"kernels\": 2"));
  free(rep);
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* --top=K writes K candidates and lists K results; a second run into the
 * same directory removes the first run's candidates, a planted stale one
 * and leftover temp files, and never mixes them with its own. */
START_TEST(test_top_and_second_run) {
  scratch s;
  scratch_make(&s);
  run r;
  run_cli(&r, "-q", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  run_free(&r);
  char cand[700];
  snprintf(cand, sizeof cand, "%s/candidates", s.out);
  int all = count_entries(cand, ".ugraph");
  ck_assert_int_gt(all, 2);
  touch(cand, "9999-0123456789abcdef.ugraph");
  touch(s.out, "report.json.tmp.4242");
  touch(s.out, "best.ugraph.tmp.17");
  ck_assert_int_eq(mkdir(strcat(strcpy((char[700]){0}, s.out), "/candidates.tmp"), 0755), 0);
  touch(s.out, "notes.txt"); /* not ours: kept */
  run_cli(&r, "-q", "--top=2", "--out", s.out, s.prog, NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  ck_assert_int_eq(count_entries(cand, ".ugraph"), 2);
  ck_assert(!exists(cand, "9999-0123456789abcdef.ugraph"));
  ck_assert(!exists(s.out, "report.json.tmp.4242"));
  ck_assert(!exists(s.out, "best.ugraph.tmp.17"));
  ck_assert(!exists(s.out, "candidates.tmp"));
  ck_assert(exists(s.out, "notes.txt"));
  ck_assert(exists(s.out, "best.ugraph"));
  char *rep = read_file(s.out, "report.json");
  ck_assert_ptr_nonnull(strstr(rep, "\"results_listed\": 2,"));
  char want[64];
  snprintf(want, sizeof want, "\"results_total\": %d,", all);
  ck_assert_ptr_nonnull(strstr(rep, want));
  /* every listed file exists, and only those */
  int listed = 0;
  for (const char *q = rep; (q = strstr(q, "\"file\": \"candidates/")) != NULL; q++) {
    char name[64];
    ck_assert_int_eq(sscanf(q, "\"file\": \"candidates/%63[^\"]", name), 1);
    ck_assert_msg(exists(cand, name), "listed %s is missing", name);
    listed++;
  }
  ck_assert_int_eq(listed, 2);
  free(rep);
  run_cli(&r, "--top=-1", s.prog, NULL);
  ck_assert_int_eq(r.rc, 2);
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* A bad --out is refused before any search work: no progress line ever
 * printed (the interval is tiny), exit 2 or 3, a clear message. */
START_TEST(test_bad_out_before_search) {
  scratch s;
  scratch_make(&s);
  char missing[700], longp[5000];
  snprintf(missing, sizeof missing, "%s/no/such/dir", s.dir);
  memset(longp, 'a', sizeof longp - 1);
  longp[0] = '/';
  longp[sizeof longp - 1] = '\0';
  static const struct {
    int which, rc;
    const char *msg;
  } cases[] = {{0, 2, "exists and is not a directory"},
               {1, 2, "its parent directory does not exist"},
               {2, 2, "path too long"},
               {3, 3, "not writable"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *out = cases[i].which == 0   ? s.prog
                      : cases[i].which == 1 ? missing
                      : cases[i].which == 2 ? longp
                                            : "/proc/self";
    run r;
    run_cli(&r, "--progress-interval=0.000001", "--out", out, s.prog, NULL);
    ck_assert_msg(r.rc == cases[i].rc, "case %zu: rc %d: %s", i, r.rc, r.err);
    ck_assert_msg(strstr(r.err, cases[i].msg), "case %zu: %s", i, r.err);
    ck_assert_msg(!strstr(r.err, "states"), "case %zu searched: %s", i, r.err);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
  }
  if (geteuid() != 0) { /* root writes anywhere */
    char ro[700];
    snprintf(ro, sizeof ro, "%s/ro", s.dir);
    ck_assert_int_eq(mkdir(ro, 0555), 0);
    run r;
    run_cli(&r, "--out", ro, s.prog, NULL);
    ck_assert_int_eq(r.rc, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "not writable"));
    run_free(&r);
  }
  scratch_free(&s);
}
END_TEST

/* Two runs cannot share a directory: the second is refused while the
 * first holds the lock, and its results are untouched. */
START_TEST(test_lock) {
  scratch s;
  scratch_make(&s);
  run r;
  run_cli(&r, "-q", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  run_free(&r);
  char lock[700];
  snprintf(lock, sizeof lock, "%s/.lock", s.out);
  int fd = open(lock, O_RDWR);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0); /* another "run" */
  ck_assert_int_eq(pwrite(fd, "12345\n", 6, 0), 6);
  run_cli(&r, "-q", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 3);
  ck_assert_msg(strstr(r.err, "in use by another mirsearch run (pid 12345)"), "%s", r.err);
  ck_assert(exists(s.out, "report.json")); /* the other run's results stay */
  run_free(&r);
  close(fd);
  run_cli(&r, "-q", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* A resume checks what it is given against the checkpoint: the program
 * (FILE.graph, as the batch script passes it: another program's
 * checkpoint is refused, not resumed and reported as this one's) and
 * every search option given, also one given equal to its default. */
START_TEST(test_resume_checks_program_and_options) {
  scratch s;
  scratch_make(&s);
  run r;
  const char *prog = tu_src("examples/rmsnorm_linear_small.graph");
  run_cli(&r, "-q", "--max-states=60", "--max-kernel-ops=4", "--out", s.out, prog, NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  char ckpt[800];
  snprintf(ckpt, sizeof ckpt, "%s/checkpoint", s.out);
  struct stat before, after;
  ck_assert_int_eq(stat(ckpt, &before), 0);
  /* 5 is max_kernel_ops's default: given, it must still match. */
  run_cli(&r, "-q", "--resume", s.out, "--max-kernel-ops=5", NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "'max_kernel_ops' is '5' here but '4' in the checkpoint"));
  run_free(&r);
  run_cli(&r, "-q", "--resume", s.out, s.prog, NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "written for another program"));
  run_free(&r);
  run_cli(&r, "-q", "--resume", s.out, "check", NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  ck_assert_int_eq(stat(ckpt, &after), 0); /* (the refusals left it alone) */
  ck_assert(before.st_ino == after.st_ino && before.st_size == after.st_size &&
            before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);
  run_cli(&r, "-q", "--resume", s.out, prog, "--max-kernel-ops=4", NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_null(read_file(s.out, "checkpoint"));
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* A checkpoint that is a FIFO is refused at once (it used to block in
 * open(2) forever), as is a FIFO given to `check`; a checkpoint over the
 * graph files' 64 MiB cap is read as a checkpoint (a damaged one here),
 * not called "not a graph file". */
START_TEST(test_checkpoint_fifo_and_large) {
  scratch s;
  scratch_make(&s);
  run r;
  char path[800];
  snprintf(path, sizeof path, "%s/checkpoint", s.out);
  ck_assert_int_eq(mkdir(s.out, 0777), 0);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  run_cli(&r, "-q", "--resume", s.out, NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "not a regular file (a FIFO)"));
  run_free(&r);
  run_cli(&r, "check", path, NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  ck_assert_int_eq(unlink(path), 0);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fwrite("MIRSCKPT\1\0\0\0\0\0\0\0\0\0\0\0", 1, 16, f);
  fclose(f);
  ck_assert_int_eq(truncate(path, (off_t)65 << 20), 0); /* (sparse) */
  run_cli(&r, "-q", "--resume", s.out, NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_null(strstr(r.err, "not a graph file"));
  ck_assert_ptr_nonnull(strstr(r.err, "damaged checkpoint"));
  run_free(&r);
  unlink(path);
  scratch_free(&s);
}
END_TEST

/* After a resume, the final progress line counts every result, those
 * the checkpoint brought too, and their best (it used to count only the
 * resumed run's own). */
START_TEST(test_resume_final_line) {
  scratch s;
  scratch_make(&s);
  run r;
  const char *prog = tu_src("examples/rmsnorm_linear_small.graph");
  run_cli(&r, "-q", "--max-states=60000", "--out", s.out, prog, NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  run_cli(&r, "--progress-interval=100", "--resume", s.out, NULL);
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  const char *done = strstr(r.err, " mirsearch: done: ");
  ck_assert_ptr_nonnull(done);
  const char *res = strstr(done, " candidates, ");
  ck_assert_ptr_nonnull(res);
  int n = -1;
  ck_assert_int_eq(sscanf(res, " candidates, %d results", &n), 1);
  char *rep = read_file(s.out, "report.json");
  ck_assert_ptr_nonnull(rep);
  const char *gf = strstr(rep, "\"graphs_found\": ");
  ck_assert_ptr_nonnull(gf);
  ck_assert_int_eq(n, atoi(gf + strlen("\"graphs_found\": ")));
  free(rep);
  ck_assert_msg(strstr(done, "found before the resume") != NULL, "%s", done);
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* A report counter's value. */
static long long counter(const char *dir, const char *name) {
  char *rep = read_file(dir, "report.json");
  ck_assert_ptr_nonnull(rep);
  char key[80];
  snprintf(key, sizeof key, "\"%s\": ", name);
  const char *p = strstr(rep, key);
  ck_assert_msg(p != NULL, "no %s in report.json", name);
  long long v = atoll(p + strlen(key));
  free(rep);
  return v;
}

/* The checks of results made before a checkpoint (at full shape, in
 * float64) are kept in it: a resume does not make them again (each
 * resume of a preempted job used to re-verify every best, 3 s on mha). */
START_TEST(test_resume_keeps_verdicts) {
  scratch s;
  scratch_make(&s);
  run r;
  const char *prog = tu_src("examples/rmsnorm_linear_small.graph");
  /* (reduced instances at this small shape, so results need full-shape checks) */
  run_cli(&r, "-q", "--fp-reduce-min-elements=0", "--max-states=60000", "--out", s.out, prog,
          NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  long long full = counter(s.out, "full_verified"), fl = counter(s.out, "float_checks");
  ck_assert_int_gt(full, 0);
  /* Resumed and stopped at once: nothing new found, nothing checked again. */
  run_cli(&r, "-q", "--resume", s.out, "--max-states=1", NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  run_free(&r);
  ck_assert_int_eq(counter(s.out, "full_verified"), full);
  ck_assert_int_eq(counter(s.out, "float_checks"), fl);
  scratch_free(&s);
}
END_TEST

/* Without a terminal, progress comes as timestamped lines; a stopped
 * search exits 4 with its results and its checkpoint written, and says
 * why and how to resume. */
START_TEST(test_progress_lines_and_stop) {
  scratch s;
  scratch_make(&s);
  run r;
  /* (MHA's space takes minutes: the limit stops it on any machine.) */
  run_cli(&r, "--progress-interval=0.5", "--time-limit=2.2", "--out", s.out,
          tu_src("examples/mha_small.graph"), NULL);
  ck_assert_msg(r.rc == 4, "rc %d: %s", r.rc, r.err);
  int lines = 0;
  for (const char *q = r.err; (q = strstr(q, " mirsearch: progress: ")) != NULL; q++) {
    int y, mo, d, h, mi, sec;
    ck_assert_int_eq(sscanf(q - 20, "%4d-%2d-%2dT%2d:%2d:%2dZ", &y, &mo, &d, &h, &mi, &sec), 6);
    lines++;
  }
  ck_assert_msg(lines >= 2, "%d progress lines: %s", lines, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, " states ("));
  ck_assert_ptr_nonnull(strstr(r.err, "/s), "));
  ck_assert_ptr_nonnull(strstr(r.err, " candidates, "));
  ck_assert_ptr_nonnull(strstr(r.err, " results, best "));
  ck_assert_ptr_nonnull(strstr(r.err, "(found at "));
  ck_assert_ptr_nonnull(strstr(r.err, ", elapsed "));
  ck_assert_ptr_nonnull(strstr(r.err, " mirsearch: stopped: "));
  ck_assert_ptr_nonnull(strstr(r.err, "search stopped early by the time limit"));
  ck_assert_ptr_nonnull(strstr(r.err, "resume with: mirsearch --resume="));
  char *ck = read_file(s.out, "checkpoint");
  ck_assert_ptr_nonnull(ck);
  free(ck);
  ck_assert_ptr_nonnull(strstr(r.out, "stopped early: incomplete"));
  char *rep = read_file(s.out, "report.json");
  ck_assert_ptr_nonnull(strstr(rep, "\"complete\": false"));
  /* The best of a time-limited search is checked in float64 within the
   * limit, or the report and stderr say it is not. */
  if (strstr(rep, "\"float64_checked\": false"))
    ck_assert_ptr_nonnull(strstr(r.err, "the best result was not checked in float64"));
  else
    ck_assert_ptr_nonnull(strstr(rep, "\"float64_checked\": true"));
  free(rep);
  run_free(&r);
  /* A new search over the stopped one (the command re-run from the
   * shell's history) is refused, keeping the checkpoint, and says how to
   * resume or discard it. */
  run_cli(&r, "--out", s.out, s.prog, NULL);
  ck_assert_msg(r.rc == 2, "rc %d: %s", r.rc, r.err);
  ck_assert_ptr_nonnull(strstr(r.err, "holds the checkpoint of a stopped search: resume it with: "
                                      "mirsearch --resume="));
  ck_assert_ptr_nonnull(strstr(r.err, "--overwrite"));
  ck = read_file(s.out, "checkpoint");
  ck_assert_ptr_nonnull(ck);
  free(ck);
  rep = read_file(s.out, "report.json");
  ck_assert_ptr_nonnull(rep);
  free(rep);
  run_free(&r);
  /* the default off a terminal: a final line at least; 0 turns them off
   * (--overwrite discards the stopped search's checkpoint) */
  run_cli(&r, "--overwrite", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_ptr_null(read_file(s.out, "checkpoint"));
  ck_assert_ptr_nonnull(strstr(r.err, " mirsearch: done: "));
  run_free(&r);
  run_cli(&r, "--progress-interval=0", "--out", s.out, s.prog, NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_ptr_null(strstr(r.err, " mirsearch: "));
  run_free(&r);
  scratch_free(&s);
}
END_TEST

/* `show`: the summary of the example µGraph, exactly; --dot a diagram. */
START_TEST(test_show) {
  run r;
  run_cli(&r, "show", tu_src("examples/rmsnorm_linear_small.ugraph"), NULL);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  const char *want =
      "ugraph rmsnorm_linear_small: 1 kernel (1 custom), predicted ";
  ck_assert_msg(starts_with(r.out, want), "%s", r.out);
  static const char *const lines[] = {
      "inputs: X f16[2, 128], W f16[128, 256]\n",
      "kernel 1: custom grid=[4, 1, 1] block=[128, 1, 1] forloop=8, smem ",
      "    x = input(X) [2, 16] imap=[-1, -1, -1] fmap=1\n",
      "    w = input(W) [16, 64] imap=[1, -1, -1] fmap=0\n",
      "    y = matmul(x, w) [2, 64]\n",
      "    a = accum(y) [2, 64]\n",
      "    r = accum_rms(x) [2, 1]\n",
      "    o = div(a, r) [2, 64] fused\n",
      "    O = output(o) omap=[1, -1, -1]\n",
      "outputs: O f16[2, 256]\n"};
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    ck_assert_msg(strstr(r.out, lines[i]), "missing %s in %s", lines[i], r.out);
  ck_assert_int_eq(count_lines(r.out), 11);
  run_free(&r);
  run_cli(&r, "show", "--dot", tu_src("examples/rmsnorm_linear_small.ugraph"), NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert(starts_with(r.out, "digraph \"rmsnorm_linear_small\" {\n"));
  ck_assert_ptr_nonnull(strstr(r.out, "subgraph cluster_k0 {"));
  ck_assert_ptr_nonnull(strstr(r.out, "forloop=8"));
  ck_assert_ptr_nonnull(strstr(r.out, "t0 -> k0b0;"));
  run_free(&r);
  if (system("command -v dot >/dev/null 2>&1") == 0) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "%s/src/mirsearch show --dot %s | dot -Tsvg >/dev/null",
             getenv("top_builddir") ? getenv("top_builddir") : ".",
             tu_src("examples/gqa_small.ugraph"));
    ck_assert_int_eq(system(cmd), 0);
  }
  run_cli(&r, "show", tu_src("examples/lora_small.graph"), NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert(starts_with(r.out, "program lora_small: 4 kernels (0 custom), predicted "));
  ck_assert_ptr_nonnull(strstr(r.out, "kernel 1: matmul("));
  run_free(&r);
  run_cli(&r, "show", NULL);
  ck_assert_int_eq(r.rc, 2);
  run_free(&r);
}
END_TEST

/* The manual page comes from the same tables as --help: every option. */
START_TEST(test_man_page) {
  run r;
  run_cli(&r, "--man", NULL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert(starts_with(r.out, ".\\\" Generated by `mirsearch --man`"));
  ck_assert_ptr_nonnull(strstr(r.out, "\n.TH MIRSEARCH 1 "));
  ck_assert_ptr_nonnull(strstr(r.out, "\n.SH \"EXIT STATUS\"\n"));
  for (size_t i = 0; i < mirs_option_count(); i++) {
    char want[160] = ".B \\-\\-", *q = want + strlen(want);
    for (const char *p = mirs_option_name(i); *p && q < want + sizeof want - 3; p++) {
      if (*p == '_') {
        *q++ = '\\';
        *q++ = '-';
      } else {
        *q++ = *p;
      }
    }
    *q = '\0';
    ck_assert_msg(strstr(r.out, want), "man page lacks %s", want);
  }
  ck_assert_ptr_nonnull(strstr(r.out, ".B \\-\\-top=K\n"));
  ck_assert_ptr_nonnull(strstr(r.out, ".B \\-\\-progress\\-interval=S\n"));
  run_free(&r);
  run_cli(&r, "--version", NULL);
  ck_assert_ptr_nonnull(strstr(r.out, "license: MIT"));
  run_free(&r);
}
END_TEST

static Suite *outputs_suite(void) {
  Suite *s = suite_create("outputs");
  TCase *t = tcase_create("outputs");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, test_quiet_and_json);
  tcase_add_test(t, test_top_and_second_run);
  tcase_add_test(t, test_bad_out_before_search);
  tcase_add_test(t, test_lock);
  tcase_add_test(t, test_progress_lines_and_stop);
  tcase_add_test(t, test_resume_checks_program_and_options);
  tcase_add_test(t, test_checkpoint_fifo_and_large);
  tcase_add_test(t, test_resume_final_line);
  tcase_add_test(t, test_resume_keeps_verdicts);
  tcase_add_test(t, test_show);
  tcase_add_test(t, test_man_page);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  return tu_run(outputs_suite());
}
