#!/bin/sh
# SPDX-License-Identifier: MIT
# slice in the front-ends: split/chunk/unbind/narrow/indexing (fx), Split
# and Slice (ONNX), and a GPT-2 block with its fused c_attn end to end
# (python/tests/test_slice.py).
PY_TEST=test_slice PY_NEEDS=torch.fx
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
