#!/bin/sh
# SPDX-License-Identifier: MIT
# The Python package over the C library, without torch (python/tests/test_api.py).
PY_TEST=test_api PY_NEEDS=
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
