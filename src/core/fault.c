/* SPDX-License-Identifier: MIT */
/* src/core/fault.c - fault injection at the steps of durable writes, for
 * the tests that stop a write at each of its steps (kill -9, a full disk)
 * and check that the directory then holds either the complete outputs or
 * a checkpoint that resumes to them.
 *
 * Invariants: the setting is read once, when a context is created, and
 * lives in that context (no globals); every step counted is one call of
 * mirs_io_step, made just before the system call it stands for, so step N
 * fails exactly the Nth such call; a build configured with
 * --disable-fault-injection never reads the environment and never fails. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

enum { FAULT_NONE, FAULT_ENOSPC, FAULT_KILL };

/* Parse MIRS_FAULT_INJECT ("N:enospc" or "N:kill") into ctx. */
void mirs__core_fault_init(mirs_context *ctx) {
  ctx->fault_at = 0;
  ctx->fault_kind = FAULT_NONE;
#ifdef MIRS_FAULT_INJECTION
  const char *e = getenv("MIRS_FAULT_INJECT");
  if (!e || !*e)
    return;
  char *end;
  long n = strtol(e, &end, 10);
  if (n <= 0 || *end != ':')
    return;
  if (!strcmp(end + 1, "enospc"))
    ctx->fault_kind = FAULT_ENOSPC;
  else if (!strcmp(end + 1, "kill"))
    ctx->fault_kind = FAULT_KILL;
  else
    return;
  ctx->fault_at = n;
#endif
}

/* Count one durable-write step; fail it when it is the chosen one. */
int mirs_io_step(mirs_context *ctx, const char *what) {
  if (!ctx || ctx->fault_kind == FAULT_NONE)
    return 0;
  if (ctx->parent) /* (steps are counted where the setting was read) */
    ctx = ctx->parent;
  long n = atomic_fetch_add(&ctx->fault_steps, 1) + 1;
  if (n != ctx->fault_at)
    return 0;
  if (ctx->fault_kind == FAULT_KILL) {
    (void)kill(getpid(), SIGKILL);
    _exit(137); /* (not reached) */
  }
  mirs__core_log(ctx, MIRS_LOG_WARNING, "fault injection: step %ld (%s) fails with ENOSPC", n,
                 what ? what : "?");
  errno = ENOSPC;
  return -1;
}
