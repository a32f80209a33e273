#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages mirsearch needs to build and test.
# Uses sudo when not run as root.
set -e
pkgs="autoconf automake libtool pkg-config make gcc libz3-dev mpich libmpich-dev check"
if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $pkgs >/dev/null
