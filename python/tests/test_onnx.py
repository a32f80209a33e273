# SPDX-License-Identifier: MIT
"""ONNX import: models exported by torch.onnx, imported (Python and
`mirsearch import`), evaluated like PyTorch on the same inputs; every
unsupported op named with its node."""

import os
import subprocess
import unittest

import torch
import torch.nn.functional as F

from mirsearch import onnx_import
from mirsearch.kernel import Kernel
from models import GPT2MLP, LlamaDecoderLayer, RMSNorm
from util import CacheTest, max_rel, seeded

PROG = os.environ.get("MIRSEARCH_PROGRAM")


class GatedArgs(torch.nn.Module):
    """RMSNorm and a SwiGLU MLP with every weight an argument (ONNX inputs)."""

    def forward(self, x, g, w1, w2):
        h = g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
        return F.silu(h @ w1) * (h @ w2)


class RMSMLP(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.norm = RMSNorm(d)
        self.mlp = GPT2MLP(d, f)

    def forward(self, x):
        return self.mlp(self.norm(x))


def export(m, args, path, names):
    torch.onnx.export(m, tuple(args), path, input_names=names, output_names=["y"],
                      opset_version=14)


class OnnxTest(CacheTest):
    def test_eval_like_pytorch(self):
        path = os.path.join(self.tmp, "gated.onnx")
        args = [torch.randn(2, 8, 32), torch.randn(32), torch.randn(32, 64), torch.randn(32, 64)]
        export(GatedArgs(), args, path, ["x", "g", "w1", "w2"])
        imp = onnx_import.import_onnx(path)
        p = imp.program
        self.assertEqual(p.name, "gated")
        self.assertIn("rms_norm(x)", imp.text)
        self.assertIn("silu(", imp.text)
        ins = p.input_values(seed=7)
        vals = {b.source: seeded([s for s in args[["x", "g", "w1", "w2"].index(b.source)].shape],
                                 ins[b.name], b.transpose) for b in imp.bindings}
        ref = GatedArgs()(*[vals[n] for n in ("x", "g", "w1", "w2")])
        (shape, got), = p.eval(seed=7).values()
        got = torch.tensor(got, dtype=torch.float64).reshape(shape)
        self.assertLess(max_rel(got, ref), 1e-5)  # the RMSNorm eps is dropped

    def test_initializers_run_like_pytorch(self):
        torch.manual_seed(3)
        m = RMSMLP(32, 64)
        x = torch.randn(2, 8, 32)
        path = os.path.join(self.tmp, "rmsmlp.onnx")
        export(m, [x], path, ["x"])
        imp = onnx_import.import_onnx(path)
        self.assertIn("gelu(", imp.text)
        kinds = {b.kind for b in imp.bindings}
        self.assertEqual(kinds, {"input", "initializer"})
        # The program's own generated code, through the host emulator, on
        # the model's weights and x.
        k = Kernel(imp.program, "host")
        feeds = [b.apply(x if b.kind == "input" else torch.from_numpy(imp.initializers[b.source].copy()))
                 for b in imp.bindings]
        (y,) = k(*feeds)
        self.assertLess(max_rel(y, m(x)), 1e-3)  # tf32 (test_models.TOL)

    @unittest.skipUnless(onnx_import._have_op("layer_norm"),
                         "the library has no layer_norm (issue 29)")
    def test_layer_normalization(self):
        torch.manual_seed(4)
        m = torch.nn.Sequential(torch.nn.LayerNorm(32), torch.nn.Linear(32, 64))
        x = torch.randn(2, 8, 32)
        path = os.path.join(self.tmp, "ln.onnx")
        torch.onnx.export(m, (x,), path, input_names=["x"], output_names=["y"],
                          opset_version=17)
        imp = onnx_import.import_onnx(path)
        self.assertIn("layer_norm(x, eps=", imp.text)
        k = Kernel(imp.program, "host")
        feeds = [b.apply(x if b.kind == "input" else
                         torch.from_numpy(imp.initializers[b.source].copy()))
                 for b in imp.bindings]
        (y,) = k(*feeds)
        self.assertLess(max_rel(y, m(x)), 1e-3)

    def test_unsupported_named(self):
        path = os.path.join(self.tmp, "llama.onnx")
        export(LlamaDecoderLayer(32, 2, 64), [torch.randn(1, 8, 32)], path, ["x"])
        with self.assertRaises(onnx_import.ImportError_) as e:
            onnx_import.import_onnx(path)
        bad = e.exception.unsupported
        types = {t for _n, t, _w in bad}
        self.assertIn("Reshape", types)
        self.assertTrue(all(n for n, _t, _w in bad))  # every one has its node name
        if not onnx_import._have_op("softmax") and not onnx_import._have_op("max"):
            self.assertIn("Softmax", types)

    @unittest.skipUnless(PROG and os.path.exists(PROG), "the mirsearch program is not built")
    def test_cli(self):
        path = os.path.join(self.tmp, "gpt2.onnx")
        export(GPT2MLP(32, 128), [torch.randn(2, 8, 32)], path, ["x"])
        out = os.path.join(self.tmp, "gpt2.graph")
        r = subprocess.run([PROG, "import", path, "-o", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("-> " + out, r.stdout)
        r = subprocess.run([PROG, "eval", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^y f32\[2, 8, 32\] sum=")
        bad = os.path.join(self.tmp, "llama.onnx")
        export(LlamaDecoderLayer(32, 2, 64), [torch.randn(1, 8, 32)], bad, ["x"])
        r = subprocess.run([PROG, "import", bad, "-o", os.path.join(self.tmp, "l.graph")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("(Reshape)", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "l.graph")))
        junk = os.path.join(self.tmp, "junk.onnx")
        with open(junk, "w") as f:
            f.write("not a model")
        r = subprocess.run([PROG, "import", junk], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a readable ONNX model", r.stderr)


if __name__ == "__main__":
    unittest.main()
