#!/bin/sh
# SPDX-License-Identifier: MIT
# End to end: a Llama-style decoder layer and a GPT-2 MLP block through the
# backend at two sizes, host-emulated kernels (python/tests/test_models.py).
PY_TEST=test_models PY_NEEDS=torch.fx
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
