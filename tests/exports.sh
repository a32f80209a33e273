#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails when the shared library exports a symbol without the mirs_ prefix,
# or exports an internal mirs__ symbol (hwloc-style symbol hygiene).
lib="$top_builddir/.libs/libmirsearch.so"
if [ ! -f "$lib" ]; then
  echo "SKIP: $lib not built (static-only build?)"
  exit 77
fi
syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ {print $3}')
if [ -z "$syms" ]; then
  echo "FAIL: no exported symbols found in $lib"
  exit 1
fi
bad=$(printf '%s\n' "$syms" | grep -v '^mirs_' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$')
internal=$(printf '%s\n' "$syms" | grep '^mirs__')
n=$(printf '%s\n' "$syms" | grep -c '^mirs_')
echo "exported mirs_ symbols: $n"
if [ -n "$bad" ] || [ -n "$internal" ]; then
  echo "FAIL: symbols outside the public mirs_ namespace are exported:"
  printf '%s\n' $bad $internal
  exit 1
fi
# Every function declared in the public headers is exported.
missing=0
for f in $(cat "$top_srcdir"/include/mirsearch/*.h | grep -v '^#' | grep -o 'MIRS_API [^(]*(' | sed 's/(//' | awk '{print $NF}' | tr -d '*'); do
  if ! printf '%s\n' "$syms" | grep -qx "$f"; then
    echo "FAIL: public function $f is declared but not exported"
    missing=1
  fi
done
[ $missing -eq 0 ] || exit 1
echo "PASS"
