#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages mirsearch needs to build and test
# (g++: `mirsearch run --backend=host` compiles generated CUDA as host C++;
# clang and libclang-rt-dev: the libFuzzer build of tests/fuzz in CI;
# slurm-wlm: tests/slurm.sh starts a private single-node Slurm to run
# scripts/mirsearch.sbatch; it pulls in munge, which the test does not use).
# The Python package's tests (docs/PYTHON.md) use Debian's python3-torch
# (1.13: torch.fx, no torch.compile; CPU only) and python3-onnx, without
# their recommends: 175 packages, 146 MB to download, about 40 s here,
# where PyPI's torch wheels pull gigabytes of CUDA libraries.
# Uses sudo when not run as root.
set -e
pkgs="autoconf automake libtool pkg-config make gcc g++ libz3-dev mpich libmpich-dev check clang libclang-rt-dev slurm-wlm"
if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# An earlier install that was interrupted leaves dpkg half-configured, and
# apt-get then refuses everything: finish it first.
if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
  echo "install-deps: finishing an interrupted package install (dpkg --configure -a)"
  $SUDO dpkg --configure -a
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $pkgs >/dev/null
pypkgs="python3 python3-numpy python3-torch python3-onnx"
$SUDO apt-get install -y -qq --no-install-recommends $pypkgs >/dev/null

# cuobjdump (with nvdisasm, which it runs) disassembles the SASS that
# tests/ptx_static.sh checks. Some CUDA toolkits (a minimal nvcc install)
# lack both; NVIDIA's PyPI wheels ship them. Installed with --no-deps into
# a fixed prefix (not into any Python's site-packages) and linked into
# /usr/local/bin, so a second run finds cuobjdump on the PATH and does
# nothing. Without a working `python3 -m pip` this part is skipped: the
# SASS checks then skip themselves and the PTX checks still run.
tools=/opt/mirsearch-cuda-tools
if command -v cuobjdump >/dev/null 2>&1; then
  :
else
  # The toolkit's major version picks the wheels' (13 when nvcc is absent).
  major=$( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null |
    sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
  [ -n "$major" ] || major=13
  pip=
  # sudo may reset PATH (secure_path): the caller's python3 by full path too.
  for py in "$(command -v python3 2>/dev/null)" /usr/bin/python3 python3; do
    [ -n "$py" ] || continue
    if $SUDO "$py" -m pip --version >/dev/null 2>&1; then pip=$py; break; fi
  done
  if [ -z "$pip" ]; then
    echo "install-deps: no python3 -m pip: cuobjdump not installed (the SASS checks of tests/ptx_static.sh will be skipped)"
  else
    bin=$(find "$tools" -path '*/bin/cuobjdump' 2>/dev/null | head -n 1)
    if [ -z "$bin" ]; then
      $SUDO "$pip" -m pip install -q --no-deps --disable-pip-version-check \
        --target "$tools" "nvidia-cuda-cuobjdump==$major.*" "nvidia-cuda-nvdisasm==$major.*"
      bin=$(find "$tools" -path '*/bin/cuobjdump' | head -n 1)
    fi
    [ -n "$bin" ] || { echo "install-deps: no cuobjdump under $tools after pip install" >&2; exit 1; }
    dir=$(dirname "$bin")
    $SUDO ln -sf "$dir/cuobjdump" /usr/local/bin/cuobjdump
    $SUDO ln -sf "$dir/nvdisasm" /usr/local/bin/nvdisasm
    echo "install-deps: cuobjdump and nvdisasm from PyPI in $dir, linked into /usr/local/bin"
  fi
fi
