#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the library into a scratch prefix and builds a toy consumer with
# `pkg-config --cflags --libs mirsearch`, exactly as an embedding compiler
# would, then runs it against the installed shared library.
set -e
tmp="$top_builddir/tests/embedded-tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
dest="$tmp/dest"
${MAKE:-make} -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1 || {
  echo "FAIL: make install failed"; cat "$tmp/install.log"; exit 1; }
# The .pc file names the configured prefix; the sysroot maps it into DESTDIR.
pcdir=$(find "$dest" -name mirsearch.pc -printf '%h\n' | head -n 1)
[ -n "$pcdir" ] || { echo "FAIL: mirsearch.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs mirsearch) || { echo "FAIL: pkg-config cannot find mirsearch"; exit 1; }
echo "pkg-config: $flags"
# Variables are read without the sysroot (pkgconf would prefix it, pkg-config not).
pcvar() { PKG_CONFIG_SYSROOT_DIR= pkg-config --variable="$1" mirsearch; }
libdir="$dest$(pcvar libdir)"
[ "$(pkg-config --modversion mirsearch)" = "$(cat "$top_srcdir/VERSION")" ] || {
  echo "FAIL: mirsearch.pc version differs from VERSION"; exit 1; }
for f in mirsearch.h mirsearch/core.h mirsearch/graph.h mirsearch/gpu.h mirsearch/version.h; do
  [ -f "$dest$(pcvar includedir)/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ -f "$libdir/libmirsearch.a" ] || { echo "FAIL: static library not installed"; exit 1; }
# Sanitizer builds need the runtime at link time too.
extra=""
if grep -q 'sanitizers=yes' "$top_builddir/config.h" 2>/dev/null; then
  extra="-fsanitize=address,undefined"
fi
${CC:-cc} -std=c11 -Wall -Wextra -Werror $extra -o "$tmp/consumer" \
  "$top_srcdir/tests/consumer/consumer.c" $flags -lm
LD_LIBRARY_PATH="$libdir" "$tmp/consumer"
echo "PASS"
