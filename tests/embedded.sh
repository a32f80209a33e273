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
# mirsearch.pc is relocatable (its prefix is ${pcfiledir}/../..), so the
# DESTDIR tree is used as it lies, with no sysroot mapping.
pcdir=$(find "$dest" -name mirsearch.pc -printf '%h\n' | head -n 1)
[ -n "$pcdir" ] || { echo "FAIL: mirsearch.pc was not installed"; exit 1; }
if grep -n "$top_builddir\|/usr/local/cuda" "$pcdir/mirsearch.pc"; then
  echo "FAIL: mirsearch.pc names a build-machine path"; exit 1
fi
grep -q '^License: MIT$' "$pcdir/mirsearch.pc" || { echo "FAIL: mirsearch.pc has no License: MIT"; exit 1; }
export PKG_CONFIG_PATH="$pcdir"
unset PKG_CONFIG_SYSROOT_DIR
flags=$(pkg-config --cflags --libs mirsearch) || { echo "FAIL: pkg-config cannot find mirsearch"; exit 1; }
echo "pkg-config: $flags"
pcvar() { pkg-config --variable="$1" mirsearch; }
libdir=$(pcvar libdir)
incdir=$(pcvar includedir)
case "$libdir" in "$dest"/*) ;; *) echo "FAIL: libdir $libdir is not inside the DESTDIR tree"; exit 1 ;; esac
[ "$(pkg-config --modversion mirsearch)" = "$(cat "$top_srcdir/VERSION")" ] || {
  echo "FAIL: mirsearch.pc version differs from VERSION"; exit 1; }
for f in mirsearch.h mirsearch/core.h mirsearch/graph.h mirsearch/gpu.h mirsearch/version.h; do
  [ -f "$incdir/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ -f "$libdir/libmirsearch.a" ] || { echo "FAIL: static library not installed"; exit 1; }
# No CUDA library is linked into the shared library (the driver is loaded
# at run time when present).
if [ -f "$libdir/libmirsearch.so" ] && readelf -d "$libdir/libmirsearch.so" | grep NEEDED | grep -i cuda; then
  echo "FAIL: libmirsearch.so links a CUDA library"; exit 1
fi
man=$(find "$dest" -name mirsearch.1 | head -n 1)
[ -n "$man" ] || { echo "FAIL: the manual page mirsearch.1 was not installed"; exit 1; }
bin=$(find "$dest" -path '*/bin/mirsearch' | head -n 1)
[ -x "$bin" ] || { echo "FAIL: bin/mirsearch was not installed"; exit 1; }
# Sanitizer builds need the runtime at link time too.
extra=""
if grep -q 'sanitizers=yes' "$top_builddir/config.h" 2>/dev/null; then
  extra="-fsanitize=address,undefined"
fi
for c in consumer walk; do
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror $extra -o "$tmp/$c" \
    "$top_srcdir/tests/consumer/$c.c" $flags -lm || { echo "FAIL: $c does not build"; exit 1; }
done
LD_LIBRARY_PATH="$libdir" "$tmp/consumer" || { echo "FAIL: consumer"; exit 1; }
# The embedder walks the best result of a search and prints the summary
# `mirsearch show` prints for the same file: they must agree exactly.
LD_LIBRARY_PATH="$libdir" "$tmp/walk" "$top_srcdir/examples/rmsnorm_linear_small.graph" \
  "$tmp/best.ugraph" "$tmp/report.json" >"$tmp/walk.txt" || { echo "FAIL: walk"; exit 1; }
LD_LIBRARY_PATH="$libdir" "$bin" show "$tmp/best.ugraph" >"$tmp/show.txt" || {
  echo "FAIL: mirsearch show"; exit 1; }
if ! cmp -s "$tmp/walk.txt" "$tmp/show.txt"; then
  echo "FAIL: the embedder's summary differs from mirsearch show:"
  diff "$tmp/walk.txt" "$tmp/show.txt"
  exit 1
fi
grep -q '^kernel 1: custom grid=' "$tmp/walk.txt" || { echo "FAIL: no custom kernel walked"; cat "$tmp/walk.txt"; exit 1; }
grep -q '"groups": \[' "$tmp/report.json" || { echo "FAIL: the library's report has no groups"; exit 1; }
cat "$tmp/walk.txt"
echo "PASS"
