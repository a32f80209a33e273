#!/bin/sh
# SPDX-License-Identifier: MIT
# from_torch and the torch.compile backend on small fx graphs (python/tests/test_torch.py).
PY_TEST=test_torch PY_NEEDS=torch.fx
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
