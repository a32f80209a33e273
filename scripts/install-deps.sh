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
pypkgs="python3 python3-numpy python3-torch python3-onnx python3-venv python3-pip"
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
    if [ -z "$bin" ] &&
       $SUDO "$pip" -m pip install -q --no-deps --disable-pip-version-check \
         --target "$tools" "nvidia-cuda-cuobjdump==$major.*" "nvidia-cuda-nvdisasm==$major.*"; then
      bin=$(find "$tools" -path '*/bin/cuobjdump' | head -n 1)
    fi
    if [ -n "$bin" ] && [ -x "$(dirname "$bin")/nvdisasm" ]; then
      dir=$(dirname "$bin")
      $SUDO ln -sf "$dir/cuobjdump" /usr/local/bin/cuobjdump
      $SUDO ln -sf "$dir/nvdisasm" /usr/local/bin/nvdisasm
      echo "install-deps: cuobjdump and nvdisasm from PyPI in $dir, linked into /usr/local/bin"
    else
      echo "install-deps: warning: cuobjdump/nvdisasm could not be installed into $tools;" \
           "the SASS checks of tests/ptx_static.sh will be skipped" >&2
    fi
  fi
fi

# torch 2.x for the torch.compile tests (tests/python_compile.sh): Debian's
# torch is 1.13, which has no torch.compile.  PyPI's torch wheel (CPU and
# CUDA in one) is installed without its dependency list, which would pull
# gigabytes of CUDA libraries the CUDA toolkit already has; only the four
# libraries its CUDA part links that the toolkit lacks are added (cuFile,
# cuSPARSELt, NVSHMEM, NCCL).  About 0.9 GB to download, 2.2 GB on disk,
# a minute here.  Imports with LD_LIBRARY_PATH holding the toolkit's
# lib64; tests/python.sh sets it.  MIRSEARCH_NO_TORCH2=1 skips this.
TORCH2=${MIRSEARCH_TORCH2_PREFIX:-/opt/mirsearch-torch2}
torch2_pkgs="torch==2.15.0 nvidia-cufile==1.20.0.107 nvidia-cusparselt-cu13==0.8.1
  nvidia-nvshmem-cu13==3.7.2 nvidia-nccl-cu13==2.30.7"
torch2_deps="filelock typing-extensions sympy networkx jinja2 fsspec numpy setuptools>=77.0.3"
if [ -n "${MIRSEARCH_NO_TORCH2:-}" ]; then
  echo "install-deps: torch 2.x skipped (MIRSEARCH_NO_TORCH2)"
elif [ -f "$TORCH2/.complete" ] && [ -x "$TORCH2/bin/python" ]; then
  : # installed by an earlier run
else
  $SUDO rm -rf "$TORCH2"
  # shellcheck disable=SC2086
  if $SUDO /usr/bin/python3 -m venv "$TORCH2" &&
     $SUDO "$TORCH2/bin/pip" install -q --disable-pip-version-check $torch2_deps &&
     $SUDO "$TORCH2/bin/pip" install -q --disable-pip-version-check --no-deps $torch2_pkgs; then
    $SUDO touch "$TORCH2/.complete"
  else
    echo "install-deps: warning: torch 2.x could not be installed into $TORCH2;" \
         "the torch.compile tests will be skipped" >&2
    $SUDO rm -rf "$TORCH2"
  fi
fi
