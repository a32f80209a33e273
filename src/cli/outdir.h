/* SPDX-License-Identifier: MIT */
/* src/cli/outdir.h - the search's output directory: checked, created and
 * locked before the search starts, written fast and in a safe order after.
 *
 * Layout of DIR: best.ugraph, best.cu (its CUDA C, docs/CODEGEN.md),
 * candidates/RANK-HASH.ugraph, report.json
 * (written last, atomically: its presence means the rest is complete),
 * and .lock (held with flock(2) for the whole run, so two runs cannot mix
 * their candidates; it holds the owner's pid).
 *
 * Invariants: every check that can fail on a bad --out (not a directory,
 * missing parent, unwritable, path too long, in use) runs in
 * mirs__outdir_open, before any search work; clearing (before the search
 * runs, after a resume has read its checkpoint) removes what an earlier
 * run wrote (report.json first) and any temp file a killed run left, so
 * the new run's results are never mixed with old ones.  Writing
 * puts the candidates in candidates.tmp/ without per-file syncs, makes
 * them durable with one syncfs(2), renames the directory into place,
 * syncs DIR once, then writes report.json atomically; only then does the
 * caller remove the checkpoint (written before the outputs), so a kill or
 * a full disk at any step leaves the outputs or a resumable checkpoint. */
#ifndef MIRS_CLI_OUTDIR_H
#define MIRS_CLI_OUTDIR_H

#include <stddef.h>

#include "mirsearch.h"

typedef struct mirs__outdir {
  char path[3072];
  int dirfd;  /* open on DIR */
  int lockfd; /* DIR/.lock, flock'ed */
} mirs__outdir;

/* Check, create (the parent must exist) and lock dir.  Returns an exit
 * status (0; 2 for a bad path: a file, a missing parent, too long; 3 for
 * an unwritable directory or one another run holds) with a one-line
 * message in why. */
int mirs__outdir_open(mirs__outdir *od, const char *dir, char *why, size_t whysize);
/* Remove what an earlier run wrote (report.json first) and the temp files
 * a killed run left; the checkpoint stays (the caller decides).  Returns
 * an exit status with a message in why; closes od on failure. */
int mirs__outdir_clear(mirs__outdir *od, char *why, size_t whysize);
/* Write the best `top` results of s (0: all), best.ugraph, best.cu and, last,
 * report (len bytes).  Returns an exit status with a message in why. */
int mirs__outdir_write(mirs__outdir *od, mirs_context *ctx, const mirs_search *s, int top,
                       const char *report, size_t len, char *why, size_t whysize);
/* Remove checkpoint file `name` from the directory and sync it: called
 * only after mirs__outdir_write succeeded, so there is never a moment
 * with neither the outputs nor the checkpoint.  -1 (errno) on failure. */
int mirs__outdir_drop_checkpoint(mirs__outdir *od, mirs_context *ctx, const char *name);
/* Release the lock and the descriptors (the .lock file stays). */
void mirs__outdir_close(mirs__outdir *od);

#endif
