# SPDX-License-Identifier: MIT
"""slice in the front-ends: a fused QKV projection's split and basic
indexing become slice(x, dim=, start=, len=).

  - fx: split, chunk, unbind, tensor_split (sections and indices, odd
    sizes) and their getitems, narrow, x[..., a:b], integer indices and
    None; each output's float64 eval equal to PyTorch's on the same
    values; steps other than 1 and tensor_split by a tensor refused,
    naming the node; the backend's analysis keeps them PyTorch code
    (views);
  - ONNX: Split (sizes as an input, as an attribute, equal parts) and
    Slice (constant bounds, negative, INT_MAX and INT64_MIN ones clamped,
    axes omitted or negative), each output equal to numpy's; steps other
    than 1, bounds that are not constants and a repeated axis refused,
    naming the node (opset 18's Split: test_onnx.py);
  - a GPT-2 block with its fused c_attn (models.GPT2Block) at two sizes:
    from_torch(strict=True) and ONNX import each eval like PyTorch
    within 1e-9, and `mirsearch partition` of the small one (both
    paths) reports a verified stitched µGraph."""

import os
import unittest

import numpy as np
import torch

import mirsearch
from mirsearch import fx as mfx
from models import GPT2_BLOCK_SIZES, GPT2Block
from test_decoder import (EXACT, evaluated, export, from_torch_reference, onnx_reference,
                          partition)
from util import CacheTest, max_rel

PROG = os.environ.get("MIRSEARCH_PROGRAM")
HAVE = mfx.rules().has_slice
NEEDS = "the library has no slice operator"


class Parts(torch.nn.Module):
    """Every spelling of a slice the fx front-end maps."""

    def __init__(self):
        super().__init__()
        self.c = torch.nn.Linear(16, 48)

    def forward(self, x):
        q, k, v = self.c(x).split(16, dim=-1)
        a, b = x.chunk(2, -1)
        u0, u1 = x.unbind(0)
        s1, s2 = torch.split(x, [5, 11], dim=2)
        return (q + k * v, a - b, u0 * u1, x[..., 4:12], x[1, :, None, 2:-2],
                x.narrow(-1, 3, 5), s1 * 2, s2 + 1)


class TensorSplit(torch.nn.Module):
    """tensor_split by sections and by indices, on odd sizes (x is [3, 7,
    10]): PyTorch's rules, not chunk's."""

    def forward(self, x):
        a, b, c = x.tensor_split(3, dim=1)               # 7 -> 3, 2, 2 (chunk: 3, 3, 1)
        d, e, f, g = torch.tensor_split(x, 4, -1)        # 10 -> 3, 3, 2, 2
        h, i = x.tensor_split(2)                         # dim 0: 3 -> 2, 1
        j, k, m = torch.tensor_split(x, [1, -2], dim=2)  # 1, 7, 2
        p, _empty, q, r = x.tensor_split((5, 2, 6), 1)   # 5, 0, 4 from 2 (not 5), 1
        u, v = torch.tensor_split(x, sections=2, dim=2)  # 5, 5
        return (a * 2, b + c, d + e, f * g, h, i, j, k, m, p, q, r, u - v)


class TensorSplitByTensor(torch.nn.Module):
    def forward(self, x):
        a, b = torch.tensor_split(x, torch.tensor([3]), dim=-1)
        return a + 1, b


class Strided(torch.nn.Module):
    def forward(self, x):
        return x[..., ::2] * 2


def _outputs(pp, seed):
    """The program's outputs at seed, as float64 tensors in output order."""
    vals = pp.program.eval(seed)
    return [torch.tensor(vals[name][1], dtype=torch.float64).reshape(vals[name][0])
            for _n, name in pp.outputs]


@unittest.skipUnless(HAVE, NEEDS)
class FxSliceTest(CacheTest):
    def test_parts_eval_like_pytorch(self):
        torch.manual_seed(5)
        self.check_slices(Parts(), torch.randn(2, 8, 16), 9, (
            "slice(c, dim=2, start=16, len=16)", "slice(x, dim=2, start=4, len=8)",
            "slice(x, dim=0, start=1, len=1)", "slice(x, dim=2, start=3, len=5)",
            "slice(x, dim=2, start=5, len=11)"))

    def check_slices(self, m, x, seed, wants):
        """from_torch(m) (strict: every node maps) holds each of wants and
        no split, and its outputs' float64 evals at seed are PyTorch's."""
        pp = mirsearch.from_torch(m, [x], name="parts")
        self.assertEqual(pp.unsupported, [])
        for want in wants:
            self.assertIn(want, pp.text)
        self.assertNotIn("split", pp.text)
        ref = from_torch_reference(pp, m, x, seed=seed)
        got = _outputs(pp, seed)
        self.assertEqual(len(got), len(ref))
        for g, r in zip(got, ref):
            self.assertEqual(tuple(g.shape), tuple(r.shape))
            self.assertLess(max_rel(g, r), EXACT)

    def test_tensor_split_eval_like_pytorch(self):
        """Every part's slice bounds and float64 eval are PyTorch's; the
        empty part nothing reads is absorbed with the split."""
        torch.manual_seed(6)
        self.check_slices(TensorSplit(), torch.randn(3, 7, 10), 4, (
            "dim=1, start=0, len=3)", "dim=1, start=3, len=2)", "dim=1, start=5, len=2)",
            "dim=2, start=6, len=2)", "dim=2, start=8, len=2)", "dim=0, start=0, len=2)",
            "dim=0, start=2, len=1)", "dim=2, start=1, len=7)", "dim=2, start=0, len=1)",
            "dim=1, start=2, len=4)", "dim=1, start=6, len=1)", "dim=2, start=5, len=5)"))

    def test_tensor_split_by_tensor_refused(self):
        with self.assertRaises(mfx.Unsupported) as cm:
            mirsearch.from_torch(TensorSplitByTensor(), [torch.randn(4, 8)])
        name, what, why = cm.exception.nodes[0]
        self.assertEqual((name, what), ("tensor_split", "torch.tensor_split"))
        self.assertIn("tensor of indices", why)

    def test_step_refused(self):
        with self.assertRaises(mfx.Unsupported) as cm:
            mirsearch.from_torch(Strided(), [torch.randn(4, 8)])
        (name, what, why), = cm.exception.nodes
        self.assertEqual(what, "operator.getitem")
        self.assertIn("step 2", why)

    def test_backend_keeps_views(self):
        """The backend's analysis (layout=False) leaves slices and the
        split to PyTorch, where they are views."""
        gm = mfx.trace(Parts(), [torch.randn(2, 8, 16)])
        an = mfx.Analysis(gm, layout=False)
        kept = {n.name: why for n, why in an.why.items()}
        for name in ("split", "getitem", "getitem_3", "narrow"):
            self.assertEqual(kept.get(name), mfx.VIEW_STAYS, name)


def _onnx_model(nodes, inputs, outputs, inits, opset, int_inputs=(), check=True):
    """A model of nodes; inputs and outputs: (name, shape) of float
    tensors, int_inputs of int64 ones; checked by ONNX's checker unless
    check is false (an opset newer than the installed onnx knows)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs] +
        [helper.make_tensor_value_info(n, TensorProto.INT64, s) for n, s in int_inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(np.asarray(v, dtype=np.int64), n) for n, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(m)
    return m


@unittest.skipUnless(HAVE, NEEDS)
class OnnxSliceTest(CacheTest):
    def setUp(self):
        super().setUp()
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("no onnx package")

    def _check(self, model, want):
        """Import model; each output equals want(x) on the seeded x."""
        from mirsearch import onnx_import
        imp = onnx_import.import_onnx(model)
        (b,), ins = imp.bindings, imp.program.input_values(3)
        x = np.asarray(ins[b.name][1], dtype=np.float64).reshape(ins[b.name][0])
        vals = imp.program.eval(3)
        refs = want(x)
        self.assertEqual(len(imp.outputs), len(refs))
        for (_o, v), r in zip(imp.outputs, refs):
            shape, got = vals[v]
            self.assertEqual(list(shape), list(r.shape))
            self.assertTrue(np.array_equal(np.asarray(got).reshape(shape), r), v)
        return imp

    def test_split(self):
        from onnx import helper
        x = [("x", [4, 12])]
        # opset 13: sizes as an input; opset 11: as an attribute; equal parts.
        m13 = _onnx_model([helper.make_node("Split", ["x", "s"], ["a", "b", "c"], axis=1)],
                          x, [("a", [4, 4]), ("b", [4, 2]), ("c", [4, 6])], {"s": [4, 2, 6]}, 13)
        imp = self._check(m13, lambda v: [v[:, :4], v[:, 4:6], v[:, 6:]])
        self.assertIn("slice(x, dim=1, start=4, len=2)", imp.text)
        m11 = _onnx_model([helper.make_node("Split", ["x"], ["a", "b"], axis=-1, split=[9, 3])],
                          x, [("a", [4, 9]), ("b", [4, 3])], {}, 11)
        self._check(m11, lambda v: [v[:, :9], v[:, 9:]])
        meq = _onnx_model([helper.make_node("Split", ["x"], ["a", "b"], axis=0)],
                          x, [("a", [2, 12]), ("b", [2, 12])], {}, 13)
        self._check(meq, lambda v: [v[:2], v[2:]])

    def test_slice(self):
        from onnx import helper
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])],
                        [("x", [4, 6, 12])], [("y", [4, 6, 3])],
                        {"st": [-3, 1], "en": [2 ** 62, 5], "ax": [2, 0]}, 13)
        imp = self._check(m, lambda v: [v[1:5, :, -3:]])
        self.assertIn("slice(", imp.text)

    def test_slice_bounds(self):
        """ONNX's clamping: negative bounds count from the end, INT64_MAX
        and INT32_MAX (what exporters write for "to the end") and
        INT64_MIN clamp to the dim; axes omitted are 0, 1, ... in order."""
        from onnx import helper
        big, small = 2 ** 63 - 1, -2 ** 63
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en"], ["y"])],
                        [("x", [4, 6, 12])], [("y", [4, 3, 10])],
                        {"st": [small, -4, 2], "en": [big, -1, 2 ** 31 - 1]}, 13)
        imp = self._check(m, lambda v: [v[:, 2:5, 2:]])
        self.assertNotIn("dim=0", imp.text)
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en"], ["y"])],
                        [("x", [4, 12])], [("y", [3, 12])], {"st": [-3], "en": [big]}, 13)
        self._check(m, lambda v: [v[1:]])
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])],
                        [("x", [4, 12])], [("y", [4, 10])],
                        {"st": [1], "en": [-1], "ax": [-1]}, 13)
        self._check(m, lambda v: [v[:, 1:-1]])

    def test_refused(self):
        """Steps other than 1 and bounds that are inputs: the node named."""
        from onnx import helper
        from mirsearch import onnx_import
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"],
                                          name="strided")],
                        [("x", [4, 12])], [("y", [4, 6])],
                        {"st": [0], "en": [12], "ax": [1], "sp": [2]}, 13)
        with self.assertRaises(onnx_import.ImportError_) as cm:
            onnx_import.import_onnx(m)
        self.assertIn("node strided (Slice): Slice with steps [2]", str(cm.exception))
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en"], ["y"], name="dyn")],
                        [("x", [4, 12])], [("y", [3, 12])], {"en": [3]}, 13,
                        int_inputs=[("st", [1])])
        with self.assertRaises(onnx_import.ImportError_) as cm:
            onnx_import.import_onnx(m)
        self.assertIn("node dyn (Slice): Slice with starts that are not constants",
                      str(cm.exception))
        m = _onnx_model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="rep")],
                        [("x", [4, 12])], [("y", [4, 2])],
                        {"st": [0, 2], "en": [6, 4], "ax": [1, -1]}, 13)
        with self.assertRaises(onnx_import.ImportError_) as cm:
            onnx_import.import_onnx(m)
        self.assertIn("node rep (Slice): Slice over axes [1, -1] of a rank-2 value",
                      str(cm.exception))


def blocks():
    """(label, module, example input) of the GPT-2 block at both sizes."""
    out = []
    for b, s, d, h, f in GPT2_BLOCK_SIZES:
        torch.manual_seed(d + 2)
        out.append(("gpt2_block%d" % d, GPT2Block(d, h, f, s), torch.randn(b, s, d)))
    return out


@unittest.skipUnless(HAVE, NEEDS)
class GPT2BlockTest(CacheTest):
    """The fused c_attn, end to end."""

    def test_from_torch(self):
        for label, m, x in blocks():
            with self.subTest(model=label):
                pp = mirsearch.from_torch(m, [x], name=label)  # strict
                self.assertEqual(pp.unsupported, [])
                for op in ("slice(", "causal_mask(", "layer_norm(", "reshape(", "permute("):
                    self.assertIn(op, pp.text)
                ref = from_torch_reference(pp, m, x, seed=11)
                self.assertLess(max_rel(evaluated(pp.program, 11), ref), EXACT)

    def test_onnx(self):
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("no onnx package")
        from mirsearch import onnx_import
        for label, m, x in blocks():
            with self.subTest(model=label):
                path = os.path.join(self.tmp, label + ".onnx")
                export(m, x, path)
                imp = onnx_import.import_onnx(path)
                self.assertIn("slice(", imp.text)
                ref = onnx_reference(imp, m, x, seed=13)
                self.assertLess(max_rel(evaluated(imp.program, 13), ref), EXACT)

    @unittest.skipUnless(PROG and os.path.exists(PROG), "the mirsearch program is not built")
    def test_partition(self):
        """The small block, whole, partitioned from both paths: the slices
        are library pieces, the stitched µGraph verifies."""
        label, m, x = blocks()[0]
        pp = mirsearch.from_torch(m, [x], name=label)
        graphs = [(label, pp.program)]
        try:  # (where onnx and torch's exporter are installed)
            import onnx  # noqa: F401
            from mirsearch import onnx_import
            path = os.path.join(self.tmp, label + ".onnx")
            export(m, x, path)
            graphs.append((label + "_onnx", onnx_import.import_onnx(path).program))
        except ImportError:
            pass
        for name, prog in graphs:
            with self.subTest(path=name):
                g = os.path.join(self.tmp, name + ".graph")
                prog.write(g)
                rep = partition(self, g, os.path.join(self.tmp, name + ".part"))
                self.assertEqual(rep["ops"], prog.num_ops)
                slices = [p for p in rep["pieces"] if any(o["op"] == "slice" for o in p["ops"])]
                self.assertEqual(len(slices), 3)
                self.assertTrue(all(p["kind"] == "library" for p in slices), slices)


if __name__ == "__main__":
    unittest.main()
