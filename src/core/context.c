/* SPDX-License-Identifier: MIT */
/* src/core/context.c - version and build information.
 *
 * The context's lifetime functions live in alloc.c (creation is the one
 * allocation made without a context); this file answers "what library is
 * this": run-time version (to compare with the header's), git hash,
 * compiler and configured features. */
#include "config.h"

#include "core/core.h"
#include "mirsearch/version.h"

/* Run-time version number. */
int mirs_version(void) {
  return MIRS_VERSION;
}

/* Run-time version string. */
const char *mirs_version_string(void) {
  return MIRS_VERSION_STRING;
}

/* Configured features. */
const char *mirs_build_features(void) {
  return MIRS_FEATURES;
}

/* Git commit of the build. */
const char *mirs_build_git_hash(void) {
  return MIRS_GIT_HASH;
}

/* Compiler of the build. */
const char *mirs_build_compiler(void) {
  return MIRS_CC_VERSION;
}
