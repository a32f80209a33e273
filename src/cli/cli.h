/* SPDX-License-Identifier: MIT */
/* src/cli/cli.h - the mirsearch command-line program as a library function.
 *
 * main.c only forwards to mirs__cli_main, so tests run the whole program
 * in-process with their own streams.  The CLI is a client of the public
 * API (mirsearch.h) and nothing else.
 *
 * Invariants: mirs__cli_main never calls exit(); it writes requested
 * output only to `out` and every message or diagnostic only to `err`;
 * it resets getopt's state on entry, so it may be called any number of
 * times in one process (not from several threads at once: getopt's state
 * is global). */
#ifndef MIRS_CLI_CLI_H
#define MIRS_CLI_CLI_H

#include <stdio.h>

/* Run `mirsearch argv[1..argc)` and return the process exit status
 * (0 done, 2 bad input or usage, 3 resource or internal error).  argv may
 * be permuted by getopt; the strings themselves are not modified. */
int mirs__cli_main(int argc, char **argv, FILE *out, FILE *err);

#endif
