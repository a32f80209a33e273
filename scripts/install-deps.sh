#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages mirsearch needs to build and test
# (g++: `mirsearch run --backend=host` compiles generated CUDA as host C++;
# clang and libclang-rt-dev: the libFuzzer build of tests/fuzz in CI).
# Uses sudo when not run as root.
set -e
pkgs="autoconf automake libtool pkg-config make gcc g++ libz3-dev mpich libmpich-dev check clang libclang-rt-dev"
if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $pkgs >/dev/null
