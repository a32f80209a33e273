#!/bin/sh
# SPDX-License-Identifier: MIT
# ONNX import, in Python and as `mirsearch import` (python/tests/test_onnx.py).
PY_TEST=test_onnx PY_NEEDS="onnx torch.onnx"
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
