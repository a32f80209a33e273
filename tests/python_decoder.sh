#!/bin/sh
# SPDX-License-Identifier: MIT
# Whole layers as one program: the Llama-style decoder layer and the GPT-2
# MLP block through from_torch (strict), ONNX import and `mirsearch
# partition` (python/tests/test_decoder.py).
PY_TEST=test_decoder PY_NEEDS=torch.fx
. "${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/python.sh"
