#!/bin/sh
# SPDX-License-Identifier: MIT
# torch.compile(model, backend=...) on torch 2.x (python/tests/test_compile.py):
# the torch of scripts/install-deps.sh's venv (/opt/mirsearch-torch2), as
# Debian's torch 1.13 has no torch.compile.
PY_TEST=test_compile PY_NEEDS=torch._dynamo
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
