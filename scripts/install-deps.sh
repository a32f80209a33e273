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
