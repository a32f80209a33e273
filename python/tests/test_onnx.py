# SPDX-License-Identifier: MIT
"""ONNX import: models exported by torch.onnx, imported (Python and
`mirsearch import`), evaluated like PyTorch on the same inputs; every
unsupported op named with its node."""

import copy
import os
import re
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


class RowRange(torch.nn.Module):
    """A row's largest magnitude minus its min (Abs, ReduceMax, ReduceMin),
    added to every element."""

    def forward(self, x, w):
        s = x @ w
        a = torch.abs(s)
        return s + (torch.amax(a, dim=-1, keepdim=True) - torch.amin(s, dim=-1, keepdim=True))


class Unsupported(torch.nn.Module):
    """Two ops without an equivalent (named), one supported op after them."""

    def forward(self, x):
        return torch.sin(x) * torch.cumsum(x, dim=-1)


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
        self.assertIn("rms_norm(x, eps=1e-06)" if onnx_import._rms_eps() else "rms_norm(x)",
                      imp.text)
        self.assertIn("silu(", imp.text)
        ins = p.input_values(seed=7)
        vals = {b.source: seeded([s for s in args[["x", "g", "w1", "w2"].index(b.source)].shape],
                                 ins[b.name], b.transpose) for b in imp.bindings}
        ref = GatedArgs()(*[vals[n] for n in ("x", "g", "w1", "w2")])
        (shape, got), = p.eval(seed=7).values()
        got = torch.tensor(got, dtype=torch.float64).reshape(shape)
        # Equal in float64 where the library's rms_norm keeps the eps;
        # else its dropped eps (1e-6) is all that differs.
        self.assertLess(max_rel(got, ref), 1e-9 if onnx_import._rms_eps() else 1e-5)

    @unittest.skipUnless(onnx_import._have_op("min") and onnx_import._have_op("max"),
                         "the library has no min or max operator (issue 29)")
    def test_reduce_min_max(self):
        path = os.path.join(self.tmp, "range.onnx")
        args = [torch.randn(4, 16), torch.randn(16, 8)]
        export(RowRange(), args, path, ["x", "w"])
        imp = onnx_import.import_onnx(path)
        self.assertIn("min(", imp.text)
        self.assertIn("max(", imp.text)
        self.assertIn("abs(", imp.text)
        ins = imp.program.input_values(seed=3)
        vals = {b.source: seeded([s for s in args[["x", "w"].index(b.source)].shape],
                                 ins[b.name], b.transpose) for b in imp.bindings}
        ref = RowRange()(vals["x"], vals["w"])
        (shape, got), = imp.program.eval(seed=3).values()
        got = torch.tensor(got, dtype=torch.float64).reshape(shape)
        self.assertLess(max_rel(got, ref), 1e-12)

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
        path = os.path.join(self.tmp, "unsupported.onnx")
        export(Unsupported(), [torch.randn(2, 8, 32)], path, ["x"])
        with self.assertRaises(onnx_import.ImportError_) as e:
            onnx_import.import_onnx(path)
        bad = e.exception.unsupported
        types = {t for _n, t, _w in bad}
        self.assertEqual({"Sin", "CumSum"}, types & {"Sin", "CumSum"})
        self.assertTrue(all(n for n, _t, _w in bad))  # every one has its node name
        self.assertIn("supported nodes after them not converted", str(e.exception))
        # The decoder layer imports where the library has the layout ops
        # (test_decoder.py); before, its head reshapes are named.
        path = os.path.join(self.tmp, "llama.onnx")
        export(LlamaDecoderLayer(32, 2, 64), [torch.randn(1, 8, 32)], path, ["x"])
        if onnx_import._have_op("reshape"):
            onnx_import.import_onnx(path)
        else:
            with self.assertRaises(onnx_import.ImportError_) as e:
                onnx_import.import_onnx(path)
            self.assertIn("Reshape", {t for _n, t, _w in e.exception.unsupported})

    def test_dynamic_axes(self):
        """A decoder layer exported with dynamic batch and sequence axes:
        its shapes, masks and reshapes are computed in the graph; named
        (the input has no static shape) until --input-shape fixes them,
        then it imports whole and evaluates like the static export."""
        if not (onnx_import._have_op("reshape") and onnx_import._have_op("causal_mask")):
            self.skipTest("the library has no reshape or causal_mask")
        torch.manual_seed(6)
        m = LlamaDecoderLayer(32, 2, 64)
        x = torch.randn(1, 8, 32)
        dyn = os.path.join(self.tmp, "dyn.onnx")
        torch.onnx.export(m, (x,), dyn, input_names=["x"], output_names=["y"], opset_version=14,
                          dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
        with self.assertRaises(onnx_import.ImportError_) as e:
            onnx_import.import_onnx(dyn)
        self.assertIn("--input-shape x=", str(e.exception))
        imp = onnx_import.import_onnx(dyn, shapes={"x": [1, 8, 32]})
        self.assertIn("causal_mask(", imp.text)
        self.assertEqual(imp.program.num_ops, 32)  # as the static export's
        from test_decoder import evaluated, onnx_reference
        ref = onnx_reference(imp, copy.deepcopy(m), x, seed=2)
        self.assertLess(max_rel(evaluated(imp.program, 2), ref), 1e-9)
        self.assertEqual(onnx_import.main([dyn, "--input-shape", "x=1,8,32", "-o",
                                           os.path.join(self.tmp, "dyn.graph")]), 0)
        with self.assertRaises(SystemExit):
            onnx_import.main([dyn, "--input-shape", "x=1,0"])
        if PROG and os.path.exists(PROG):
            out = os.path.join(self.tmp, "dyn_cli.graph")
            r = subprocess.run([PROG, "import", dyn, "--input-shape=x=1,8,32", "-o", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([PROG, "import", dyn, "--input-shape=q=1,8,32"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertRegex(r.stderr, r"^%s: error: .*the model has no input q" % re.escape(dyn))

    def test_masks_and_layout_nodes(self):
        """Hand-built graphs as other exporters write them: a causal mask
        as Where over a Trilu of ones, shapes computed with
        Shape/Gather/Concat, Unsqueeze/Squeeze/Flatten, a fused
        SimplifiedLayerNormalization; the program evaluates like numpy."""
        if not (onnx_import._have_op("reshape") and onnx_import._have_op("causal_mask")):
            self.skipTest("the library has no reshape or causal_mask")
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper
        rng = np.random.default_rng(5)
        w = rng.standard_normal((16, 16)).astype(np.float32)
        g = (1 + 0.1 * rng.standard_normal(16)).astype(np.float32)
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(g, "g"),
                 numpy_helper.from_array(np.ones((8, 8), dtype=np.float32), "ones"),
                 numpy_helper.from_array(np.array(float("-inf"), dtype=np.float32), "ninf"),
                 numpy_helper.from_array(np.array([0], dtype=np.int64), "i0"),
                 numpy_helper.from_array(np.array([2, -1], dtype=np.int64), "tail"),
                 numpy_helper.from_array(np.array([1], dtype=np.int64), "ax1")]
        N = helper.make_node
        nodes = [
            N("SimplifiedLayerNormalization", ["x", "g"], ["n"], name="norm", epsilon=1e-5,
              axis=-1, domain="com.microsoft"),
            N("MatMul", ["n", "w"], ["h"], name="proj"),                      # [8, 16]
            N("Shape", ["h"], ["hs"], name="shape"),
            N("Gather", ["hs", "i0"], ["rows"], name="gather"),               # [8]
            N("Concat", ["rows", "tail"], ["shp"], name="concat", axis=0),    # [8, 2, -1]
            N("Reshape", ["h", "shp"], ["h3"], name="heads"),                 # [8, 2, 8]
            N("Transpose", ["h3"], ["ht"], name="perm", perm=[1, 0, 2]),      # [2, 8, 8]
            N("Transpose", ["ht"], ["htt"], name="last2", perm=[0, 2, 1]),
            N("MatMul", ["ht", "htt"], ["s"], name="scores"),                 # [2, 8, 8]
            N("Trilu", ["ones"], ["tri"], name="tril", upper=0),
            N("Cast", ["tri"], ["keep"], name="cast", to=TensorProto.BOOL),
            N("Where", ["keep", "s", "ninf"], ["sm"], name="mask"),
            N("Softmax", ["sm"], ["p"], name="softmax", axis=-1),
            N("MatMul", ["p", "ht"], ["o"], name="pv"),                       # [2, 8, 8]
            N("Unsqueeze", ["o", "ax1"], ["o4"], name="unsq"),                # [2, 1, 8, 8]
            N("Squeeze", ["o4", "ax1"], ["o3"], name="sq"),
            N("Flatten", ["o3"], ["y"], name="flat", axis=1),                 # [2, 64]
        ]
        graph = helper.make_graph(
            nodes, "handmade", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14),
                                                        helper.make_opsetid("com.microsoft", 1)])
        imp = onnx_import.import_onnx(model, name="handmade")
        for op in ("rms_norm(x, eps=1e-05)", "reshape(h, shape=[8, 2, 8])",
                   "permute(h3, dims=[1, 0, 2])", "transpose(ht)", "causal_mask(s)",
                   "reshape(o3, shape=[2, 64])"):
            self.assertIn(op, imp.text)
        # numpy on the seeded program inputs
        ins = imp.program.input_values(seed=3)
        val = {b.source: np.array(ins[b.name][1]).reshape(ins[b.name][0]) for b in imp.bindings}
        x, w_, g_ = val["x"], val["w"], val["g"].reshape(-1)
        n = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g_
        ht = (n @ w_).reshape(8, 2, 8).transpose(1, 0, 2)
        s = ht @ ht.transpose(0, 2, 1)
        s = np.where(np.tril(np.ones((8, 8), dtype=bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        want = (p @ ht).reshape(2, 64)
        (shape, got), = imp.program.eval(seed=3).values()
        self.assertEqual(list(shape), [2, 64])
        self.assertLess(np.abs(np.array(got).reshape(shape) - want).max(), 1e-9)

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
        bad = os.path.join(self.tmp, "unsupported.onnx")
        export(Unsupported(), [torch.randn(2, 8, 32)], bad, ["x"])
        r = subprocess.run([PROG, "import", bad, "-o", os.path.join(self.tmp, "u.graph")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertRegex(r.stderr, r"(?m)^%s: error: node \S+ \(Sin\): " % re.escape(bad))
        self.assertRegex(r.stderr, r"(?m)^%s: error: node \S+ \(CumSum\): " % re.escape(bad))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "u.graph")))
        junk = os.path.join(self.tmp, "junk.onnx")
        with open(junk, "w") as f:
            f.write("not a model")
        r = subprocess.run([PROG, "import", junk], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith(junk + ": error: not a readable ONNX model"),
                        r.stderr)


def _split18(num_outputs, outputs=3, size=11, opset=18):
    """x [4, size] split on its last axis into `outputs` outputs with the
    num_outputs attribute (None: without it), o0 + o1 reshaped to 1-D and
    the rest as outputs: a model built by hand (the installed onnx may
    stop before opset 18), not checked (onnx < 1.13's checker refuses
    num_outputs as an unknown attribute of Split-13)."""
    import numpy as np
    from onnx import helper
    from test_slice import _onnx_model
    outs = ["o%d" % i for i in range(outputs)]
    kw = {} if num_outputs is None else {"num_outputs": num_outputs}
    part = -(-size // (num_outputs or outputs))
    last = size - part * (outputs - 1)
    return _onnx_model(
        [helper.make_node("Split", ["x"], outs, axis=-1, name="qkv", **kw),
         helper.make_node("Add", ["o0", "o1"], ["s"]),
         helper.make_node("Reshape", ["s", "flat"], ["y"])],
        [("x", [4, size])], [("y", [4 * part])] + [(o, [4, part]) for o in outs[2:-1]] +
        [(outs[-1], [4, last])], {"flat": np.array([-1])}, opset, check=False), part, last


class Split18Test(CacheTest):
    """Opset 18's Split with num_outputs: parts of ceil(size / n), the
    last smaller (ONNX's spec and shape inference); the attribute counts
    (without it an uneven split is refused, and it must equal the number
    of outputs)."""

    def test_num_outputs(self):
        import numpy as np
        import onnx
        for size, n in ((11, 3), (10, 4), (12, 3)):
            with self.subTest(size=size, n=n):
                m, part, last = _split18(n, n, size)
                imp = onnx_import.import_onnx(m)
                self.assertIn("slice(x, dim=1, start=%d, len=%d)" % (part * (n - 1), last),
                              imp.text)
                ins, vals = imp.program.input_values(5), imp.program.eval(5)
                x = np.asarray(ins["x"][1]).reshape(ins["x"][0])
                want = [(x[:, :part] + x[:, part:2 * part]).reshape(-1)]
                want += [x[:, part * i:part * (i + 1)] for i in range(2, n - 1)]
                want.append(x[:, part * (n - 1):])
                self.assertEqual(len(imp.outputs), len(want))
                for (_o, v), w in zip(imp.outputs, want):
                    shape, got = vals[v]
                    self.assertEqual(list(shape), list(w.shape))
                    self.assertTrue(np.array_equal(np.asarray(got).reshape(shape), w), v)
        if onnx.defs.onnx_opset_version() < 18:
            # What this onnx makes of it: Split-13 reads no num_outputs.
            with self.assertRaises(Exception):
                onnx.checker.check_model(_split18(3)[0])

    def test_refused(self):
        """A num_outputs other than the outputs' count, a last part that
        would be negative (5 into 4: parts of 2), no sizes and no
        num_outputs at opset 18, an uneven split without sizes before it,
        and num_outputs before opset 18: the node named, nothing written."""
        for args, why in (((2, 3), "Split with num_outputs=2 and 3 outputs"),
                          ((4, 4, 5), "leave -1 for the last one"),
                          ((None, 3, 12), "Split (opset 18) with neither split sizes nor "
                                          "num_outputs"),
                          ((None, 3, 11, 13), "Split of 11 elements into 3 equal parts"),
                          ((3, 3, 11, 13), "num_outputs, an opset-18 attribute")):
            with self.subTest(args=args):
                with self.assertRaises(onnx_import.ImportError_) as cm:
                    onnx_import.import_onnx(_split18(*args)[0])
                self.assertIn("node qkv (Split): Split ", str(cm.exception))
                self.assertIn(why, str(cm.exception))

    @unittest.skipUnless(PROG and os.path.exists(PROG), "the mirsearch program is not built")
    def test_cli(self):
        path, out = os.path.join(self.tmp, "s18.onnx"), os.path.join(self.tmp, "s18.graph")
        with open(path, "wb") as f:
            f.write(_split18(3)[0].SerializeToString())
        r = subprocess.run([PROG, "import", path, "-o", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertIn("slice(x, dim=1, start=8, len=3)", f.read())
        r = subprocess.run([PROG, "eval", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^y f32\[16\] sum=")
        self.assertRegex(r.stdout, r"(?m)^o2 f32\[4, 3\] sum=")


if __name__ == "__main__":
    unittest.main()
