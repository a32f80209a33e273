#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/python.sh - run one module of the Python tests (python/tests) with
# a Python that has what it needs; sourced by tests/python_*.sh, which set
# PY_TEST (the module) and PY_NEEDS (import names: "" for the package
# alone, "torch.fx", "onnx torch.onnx").  The interpreter is the first of
# $PYTHON, python3 and /usr/bin/python3 that imports them (Debian's
# python3-torch and python3-onnx live under /usr/bin/python3, while a
# pyenv python3 may come first on PATH).  Skip (exit 77) only when none
# does: scripts/install-deps.sh installs them (torch 2.x in a venv).
# Exit: 0 pass, 1 fail, 77 skipped.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
lib=$top_builddir/.libs/libmirsearch.so
if [ ! -f "$lib" ]; then
  echo "python.sh: $lib not built" >&2
  exit 1
fi

# Last, the torch 2.x venv of scripts/install-deps.sh (torch.compile): its
# torch's CUDA part links the CUDA toolkit's libraries (lib64 on the
# loader's path; nothing runs on a GPU here).
torch2=${MIRSEARCH_TORCH2_PREFIX:-/opt/mirsearch-torch2}/bin/python
cudalib=${CUDA_HOME:-/usr/local/cuda}/lib64
py=
for cand in ${PYTHON:-} python3 /usr/bin/python3 "$torch2"; do
  command -v "$cand" >/dev/null 2>&1 || continue
  if [ "$cand" = "$torch2" ]; then
    LD_LIBRARY_PATH="$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; export LD_LIBRARY_PATH
  fi
  code="import sys; assert sys.version_info >= (3, 8)"
  for m in $PY_NEEDS; do code="$code; import $m"; done
  if "$cand" -c "$code" >/dev/null 2>&1; then
    py=$cand
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no Python 3.8+ with: ${PY_NEEDS:-(nothing)} (scripts/install-deps.sh installs them)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_python.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
echo "python.sh: $PY_TEST with $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
PYTHONPATH="$top_srcdir/python:$top_srcdir/python/tests${PYTHONPATH:+:$PYTHONPATH}" \
  PYTHONDONTWRITEBYTECODE=1 MIRSEARCH_LIB="$lib" MIRSEARCH_CACHE="$tmp/cache" \
  MIRSEARCH_PROGRAM="$top_builddir/src/mirsearch" top_srcdir="$top_srcdir" TMPDIR="$tmp" \
  "$py" -m unittest -v "$PY_TEST"
