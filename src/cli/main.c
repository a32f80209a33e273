/* SPDX-License-Identifier: MIT */
/* src/cli/main.c - the mirsearch executable: all behaviour lives in
 * mirs__cli_main (src/cli/cli.c) so that tests can run it in-process. */
#include "config.h"

#include <stdio.h>

#include "cli/cli.h"

/* Forward the command line to the CLI library function. */
int main(int argc, char **argv) {
  return mirs__cli_main(argc, argv, stdout, stderr);
}
