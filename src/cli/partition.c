/* SPDX-License-Identifier: MIT */
/* src/cli/partition.c - `mirsearch partition PROGRAM.graph`: the whole
 * program cut into pieces, each searched (or served from the result
 * cache), stitched and verified by the library (mirs_partition_*), and
 * written to the output directory DIR:
 *   DIR/best.ugraph     the stitched µGraph of the whole program
 *   DIR/best.cu         its CUDA C (mirs_codegen_cuda)
 *   DIR/partition.txt   the table also printed on stdout
 *   DIR/partition.json  the report, written last: its presence means the
 *                       rest is complete and belongs to it
 *
 * Invariants: DIR is checked and locked (outdir.c) before any search
 * work; an earlier run's partition.json is removed before the run, and
 * each file is written atomically (temp file, fsync, rename), so DIR
 * never holds a partition.json that does not describe the files beside
 * it.  A stopped run (SIGINT, SIGTERM, SIGUSR1, a limit between pieces)
 * writes nothing and exits 4: the pieces it finished are in the result
 * cache, so the same command continues from there.  Over MPI rank 0
 * alone opens and writes DIR. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/outdir.h"
#include "cli/partition.h"

#define PROG "mirsearch"

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_RESOURCE = 3, EXIT_STOPPED = 4 };

/* The context a stop signal interrupts (a handler has no other way to
 * reach it); set while the handlers are in place. */
static mirs_context *volatile part_ctx;
static volatile sig_atomic_t part_signal;

static void on_signal(int sig) {
  part_signal = sig;
  if (part_ctx)
    mirs_interrupt(part_ctx); /* (async-signal-safe) */
}

/* Print "mirsearch: error: ..." on err and return status (3 for a
 * library status that maps to 0). */
static int fail(const mirs__cli_partition_args *a, mirs_status st, const char *what) {
  const char *msg = mirs_last_error(a->ctx);
  fprintf(a->err, PROG ": error: %s%s%s\n", what ? what : "", what ? ": " : "",
          msg[0] ? msg : mirs_status_str(st));
  int code = mirs_status_exit_code(st);
  return code == EXIT_OK ? EXIT_RESOURCE : code;
}

/* Write name under the directory atomically. */
static int write_one(const mirs__cli_partition_args *a, const mirs__outdir *od, const char *name,
                     const char *data, size_t len) {
  char path[sizeof od->path + 32];
  snprintf(path, sizeof path, "%s/%s", od->path, name);
  mirs_status st = mirs_write_file_atomic(a->ctx, path, data, len);
  return st == MIRS_OK ? EXIT_OK : fail(a, st, "writing the outputs");
}

/* The outputs of a finished partition, partition.json last. */
static int write_outputs(const mirs__cli_partition_args *a, const mirs__outdir *od,
                         const mirs_partition *p, const char *json, size_t jlen,
                         const char *table, size_t tlen) {
  char *ug = NULL, *cu = NULL;
  mirs_status st = mirs_graph_to_string(mirs_partition_result(p), &ug);
  if (st == MIRS_OK)
    st = mirs_partition_cuda(p, NULL, &cu);
  int rc = st == MIRS_OK ? EXIT_OK : fail(a, st, "the stitched uGraph");
  if (rc == EXIT_OK)
    rc = write_one(a, od, "best.ugraph", ug, strlen(ug));
  if (rc == EXIT_OK)
    rc = write_one(a, od, "best.cu", cu, strlen(cu));
  if (rc == EXIT_OK)
    rc = write_one(a, od, "partition.txt", table, tlen);
  if (rc == EXIT_OK)
    rc = write_one(a, od, "partition.json", json, jlen);
  mirs_free(a->ctx, ug);
  mirs_free(a->ctx, cu);
  return rc;
}

/* Progress on err: one line per piece done (not with -q). */
static void progress(void *user, int piece, int done, int total) {
  const mirs__cli_partition_args *a = user;
  if (!a->quiet)
    fprintf(a->err, PROG ": partition: piece %d done (%d of %d)\n", piece, done, total);
}

/* After the run: the report on stdout and the outputs (rank 0). */
static int conclude(const mirs__cli_partition_args *a, mirs__outdir *od, mirs_partition *p) {
  char *json = NULL, *table = NULL;
  size_t jlen = 0, tlen = 0;
  mirs_status st = mirs_partition_report_json(p, &json, &jlen);
  if (st == MIRS_OK)
    st = mirs_partition_report_table(p, &table, &tlen);
  int rc = st == MIRS_OK ? EXIT_OK : fail(a, st, NULL);
  if (rc == EXIT_OK && mirs_partition_stopped(p)) {
    mirs_partition_stats s;
    mirs_partition_get_stats(p, &s);
    char dir[512];
    mirs_option_get(a->ctx, "cache_dir", dir, sizeof dir);
    fprintf(a->err,
            PROG ": error: partition stopped%s with %d of %d pieces pending; nothing written "
            "to %s; %s\n",
            part_signal ? " by a signal" : "", s.pending, s.pieces, od->path,
            dir[0] ? "the finished pieces are in the result cache: the same command "
                     "continues from there"
                   : "without a cache (--no-cache) the finished pieces are lost");
    rc = EXIT_STOPPED;
  } else if (rc == EXIT_OK) {
    rc = write_outputs(a, od, p, json, jlen, table, tlen);
  }
  if (rc == EXIT_OK) {
    if (a->json)
      fwrite(json, 1, jlen, a->out);
    else if (!a->quiet)
      fwrite(table, 1, tlen, a->out);
    if (!a->json && !a->quiet)
      fprintf(a->out, "wrote %s/best.ugraph, best.cu, partition.txt, partition.json\n", od->path);
    if (fflush(a->out) != 0) {
      fprintf(a->err, PROG ": error: cannot write output: %s\n", strerror(errno));
      rc = EXIT_RESOURCE;
    }
  }
  mirs_free(a->ctx, json);
  mirs_free(a->ctx, table);
  return rc;
}

/* Open and lock DIR and remove an earlier run's partition.json (so the
 * directory does not look complete while this run works). */
static int open_dir(const mirs__cli_partition_args *a, mirs__outdir *od) {
  char dir[3072], why[1024];
  if (a->dir)
    snprintf(dir, sizeof dir, "%s", a->dir);
  else
    snprintf(dir, sizeof dir, "%s.partition", mirs_graph_name(a->program));
  int rc = mirs__outdir_open(od, dir, why, sizeof why);
  if (rc != EXIT_OK) {
    fprintf(a->err, PROG ": error: %s\n", why);
    return rc;
  }
  if (unlinkat(od->dirfd, "partition.json", 0) != 0 && errno != ENOENT) {
    fprintf(a->err, PROG ": error: %s/partition.json: cannot remove: %s\n", od->path,
            strerror(errno));
    mirs__outdir_close(od);
    return EXIT_RESOURCE;
  }
  return EXIT_OK;
}

/* Create the partition (and distribute it), every rank agreeing. */
static int setup(const mirs__cli_partition_args *a, int rank, mirs__outdir *od, int *od_open,
                 mirs_partition **p) {
  int rc = EXIT_OK;
  mirs_status st = mirs_partition_create(a->ctx, a->program, p);
  if (st != MIRS_OK)
    rc = fail(a, st, "partition");
  if (rc == EXIT_OK && a->mpi && (st = mirs_partition_set_mpi(*p)) != MIRS_OK)
    rc = fail(a, st, "--mpi");
  if (rc == EXIT_OK && rank == 0) {
    rc = open_dir(a, od);
    *od_open = rc == EXIT_OK;
  }
  if (a->mpi) {
    int all = mirs_mpi_agree(rc);
    if (rc == EXIT_OK)
      rc = all;
  }
  return rc;
}

int mirs__cli_partition(const mirs__cli_partition_args *a) {
  int rank = 0, nranks = 1;
  if (a->mpi) {
    mirs_status st = mirs_mpi_init(a->ctx, &rank, &nranks);
    if (st != MIRS_OK)
      return fail(a, st, "--mpi");
  }
  mirs__outdir od;
  int od_open = 0;
  mirs_partition *p = NULL;
  int rc = setup(a, rank, &od, &od_open, &p);
  struct sigaction sa, old_int, old_term, old_usr1;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  part_signal = 0;
  part_ctx = a->ctx;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGUSR1, &sa, &old_usr1);
  mirs__cli_partition_args b = *a;
  b.quiet = a->quiet || rank != 0;
  if (rc == EXIT_OK) {
    mirs_partition_set_callbacks(p, progress, NULL, &b);
    mirs_status st = mirs_partition_run(p);
    if (st != MIRS_OK)
      rc = fail(a, st, "partition");
    else if (rank == 0)
      rc = conclude(&b, &od, p);
    else if (mirs_partition_stopped(p))
      rc = EXIT_STOPPED;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGUSR1, &old_usr1, NULL);
  part_ctx = NULL;
  mirs_interrupt_clear(a->ctx);
  if (od_open)
    mirs__outdir_close(&od);
  mirs_partition_destroy(p);
  if (a->mpi) {
    rc = mirs_mpi_agree(rc);
    mirs_mpi_finalize();
  }
  return rc;
}
