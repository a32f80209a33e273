#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/gpu_fp_host.sh - tests/gpu_fp.sh (CPU and GPU fingerprint digests
# equal on every small example, through `mirsearch verify`) with the GPU
# module replaced by its host build, tests/libgpufp-host.so (gpufp.cu as
# C++): the GPU code path end to end without a GPU.  77 where the host
# module or CUDA support was not built.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
lib=$top_builddir/tests/libgpufp-host.so
if [ ! -f "$lib" ]; then
  echo "gpu_fp_host.sh: $lib not built (no CUDA toolkit): skipped"
  exit 77
fi
MIRS_GPUFP_LIB=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
export MIRS_GPUFP_LIB top_srcdir top_builddir
exec ${SHELL:-/bin/sh} "$top_srcdir/tests/gpu_fp.sh" small
