# SPDX-License-Identifier: MIT
"""End to end: a Llama-style decoder layer and a GPT-2-style MLP block,
each at two sizes, captured with torch.fx, cut into pieces, searched,
stitched with the generated kernels (run through the host emulator) and
compared with eager; compiled again, every piece comes from the cache.
The head reshapes and their (1, 2) transposes stay PyTorch code, where
they are views (the report names them); the whole layer as one program,
partitioned by `mirsearch partition`, is test_decoder.py's."""

import contextlib
import io
import unittest

import torch

import mirsearch
from mirsearch import fx as mfx
from models import GPT2_SIZES, LLAMA_SIZES, GPT2MLP, LlamaDecoderLayer
from util import CacheTest, max_rel

OPTS = {"time_limit": 2, "threads": 1}
# f32, but a matmul of a computed operand runs on tf32 tensor cores (10-bit
# mantissa, docs/CODEGEN.md): errors up to about 2^-11 relative, above the
# library's f32 tolerance of 1e-4.
TOL = 1e-3


class ModelTest(CacheTest):
    def check(self, m, x, expect_ops):
        gm = torch.fx.symbolic_trace(m)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            c = mirsearch.backend(gm, [x], mode="host", options=OPTS)
        rep = c.mirsearch_report
        ops = [o for p in rep["pieces"] if p["replaced"] for o in p["ops"]]
        for op in expect_ops:
            self.assertIn(op, ops, err.getvalue())
        self.assertTrue(any(len(p["ops"]) > 1 and p["replaced"] for p in rep["pieces"]))
        ref = m(x)
        self.assertLess(max_rel(c(x), ref), TOL, err.getvalue())
        with contextlib.redirect_stderr(io.StringIO()) as err2:
            c2 = mirsearch.backend(gm, [x], mode="host", options=OPTS)
        self.assertTrue(all(p["source"] == "cache" for p in c2.mirsearch_report["pieces"]))
        self.assertIn("from the cache (no search)", err2.getvalue())
        self.assertLess(max_rel(c2(x), ref), TOL)
        return rep

    def test_llama_decoder_layer(self):
        for b, s, d, h, f in LLAMA_SIZES:
            with self.subTest(size=(b, s, d, h, f)):
                torch.manual_seed(d)
                rep = self.check(LlamaDecoderLayer(d, h, f), torch.randn(b, s, d),
                                 ["rms_norm", "matmul", "silu", "add"])
                kept = [n[0] for n in rep["unsupported"]]
                if mfx.rules().has_layout:
                    # Only the views stay PyTorch code: the head reshapes and
                    # their (1, 2) transposes.
                    self.assertEqual({w for _n, _c, w in rep["unsupported"]},
                                     {mfx.VIEW_STAYS}, rep["unsupported"])
                    self.assertEqual(len(kept), 8)
                # The softmax is searched once the library has max and the
                # causal mask (a -inf mask as an input stays out of kernels).
                if mfx.rules().has_max and mfx.rules().has_mask:
                    self.assertNotIn("softmax", kept)
                    self.assertIn("max", [o for p in rep["pieces"] for o in p["ops"]])
                else:
                    self.assertIn("softmax", kept)

    def test_gpt2_mlp(self):
        for b, s, d, f in GPT2_SIZES:
            with self.subTest(size=(b, s, d, f)):
                torch.manual_seed(d)
                rep = self.check(GPT2MLP(d, f), torch.randn(b, s, d), ["matmul", "gelu", "add"])
                self.assertEqual(rep["unsupported"], [])


if __name__ == "__main__":
    unittest.main()
