# SPDX-License-Identifier: MIT
# Sourced by the static PTX tests (tests/slice_ptx.sh,
# tests/transpose_ptx.sh) after setting `name`: the source and build
# trees, the program ($bin), the nvcc configure found ($nvcc; NVCC
# overrides), and exit 77 where no nvcc runs.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin=$top_builddir/src/mirsearch
nvcc=$(sed -n 's/^#define MIRS_NVCC "\(.*\)"$/\1/p' "$top_builddir/config.h" 2>/dev/null)
nvcc=${NVCC:-${nvcc:-nvcc}}
if ! "$nvcc" --version >/dev/null 2>&1; then
  echo "$name: no nvcc ($nvcc): skipped"
  exit 77
fi
