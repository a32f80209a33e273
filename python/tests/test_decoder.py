# SPDX-License-Identifier: MIT
"""Whole layers as one program (issue 30, items 4-6): the Llama-style
decoder layer and the GPT-2 MLP block of models.py, at both sizes,

  - through from_torch with strict=True (nothing left out: the head
    reshapes and transposes are reshape/permute, the mask causal_mask),
    the program's float64 eval equal to PyTorch's on the same values;
  - exported to ONNX and imported (in Python and by `mirsearch import`),
    the program's eval equal to PyTorch's on the same values (the
    exported weights found among the model's parameters);
  - `mirsearch partition` of the small layer's program, from both paths,
    with bounded searches (every piece the search handles is searched,
    one thread, 2 s each): it completes and its stitched µGraph verifies
    against the whole program (the test reads the report and fails
    otherwise).

The backend (fx GraphModule in, eager's outputs out, a second compile
from the cache) runs on these models in test_models.py."""

import json
import os
import re
import subprocess
import unittest

import numpy as np
import torch

import mirsearch
from mirsearch import fx as mfx
from models import GPT2_SIZES, LLAMA_SIZES, GPT2MLP, LlamaDecoderLayer
from util import CacheTest, max_rel, seeded

PROG = os.environ.get("MIRSEARCH_PROGRAM")
OPSET = 17  # torch 1.13's highest: LayerNormalization is one node
# Bounded searches for make check (tests/partition.sh bounds its own the
# same way): one thread, each piece's search stopped after 2 s with its
# best verified result so far.
PARTITION_OPTS = ["--threads=1", "--time-limit=2"]
# float64 evaluations of one computation in two orders.
EXACT = 1e-9

LAYOUT = mfx.rules().has_layout and mfx.rules().rms_eps
NEEDS = "the library has no reshape/permute or no rms_norm eps"


def models():
    """(label, module, example input) at both sizes, seeded."""
    out = []
    for b, s, d, h, f in LLAMA_SIZES:
        torch.manual_seed(d)
        out.append(("llama%d" % d, LlamaDecoderLayer(d, h, f), torch.randn(b, s, d)))
    for b, s, d, f in GPT2_SIZES:
        torch.manual_seed(d + 1)
        out.append(("gpt2_%d" % d, GPT2MLP(d, f), torch.randn(b, s, d)))
    return out


def _set_attr(module, path, value):
    *owner, leaf = path.split(".")
    m = module
    for a in owner:
        m = getattr(m, a)
    getattr(m, leaf).data = value


def from_torch_reference(pp, module, x, seed):
    """PyTorch's output in float64 on the values pp.program.eval(seed)
    uses: each binding's seeded program input, inverted (transpose,
    reshape) into the parameter or argument it is bound to."""
    ins = pp.program.input_values(seed)
    module = module.double()
    arg = None
    for b in pp.bindings:
        src = b.source
        if isinstance(src, mfx.ParamRef):
            v = seeded(src.tensor.shape, ins[b.name], b.transpose)
            _set_attr(module, src.name, v)
        elif src.op == "get_attr":
            v = seeded(pp.an.meta[src][0], ins[b.name], b.transpose)
            _set_attr(module, src.target, v)
        else:
            arg = seeded(x.shape, ins[b.name], b.transpose)
    with torch.no_grad():
        return module(arg)


def onnx_reference(imp, module, x, seed):
    """The same for an imported ONNX export: each initializer is one of
    the module's parameters as exported (a Linear's weight transposed),
    found by its values."""
    ins = imp.program.input_values(seed)
    params = dict(module.named_parameters())
    where = {}
    for b in imp.bindings:
        if b.kind != "initializer":
            continue
        arr = imp.initializers[b.source]
        for name, p in params.items():
            pv = p.detach().numpy()
            if pv.shape == arr.shape and np.array_equal(pv, arr):
                where[b.source] = (name, False)
            elif pv.ndim == 2 and pv.T.shape == arr.shape and np.array_equal(pv.T, arr):
                where[b.source] = (name, True)
        if b.source not in where:
            raise AssertionError("initializer %s is no parameter of the model" % b.source)
    module = module.double()
    arg = None
    for b in imp.bindings:
        if b.kind == "input":
            arg = seeded(x.shape, ins[b.name], b.transpose)
            continue
        v = seeded(imp.initializers[b.source].shape, ins[b.name], b.transpose)
        name, tr = where[b.source]
        _set_attr(module, name, v.t() if tr else v)
    with torch.no_grad():
        return module(arg)


def evaluated(program, seed):
    (_name, (shape, vals)), = program.eval(seed).items()
    return torch.tensor(vals, dtype=torch.float64).reshape(shape)


def export(module, x, path):
    torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=OPSET)


def partition(test, graph, out):
    """`mirsearch partition` of graph (bounded): its report (partition.json)
    once the run completed and says the stitched µGraph verified."""
    r = subprocess.run([PROG, "partition", graph] + PARTITION_OPTS +
                       ["--cache=" + os.path.join(test.tmp, "libcache"), "-o", out],
                       capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr[-3000:])
    test.assertIn("stitched uGraph verified against the program: ", r.stdout)
    with open(os.path.join(out, "partition.json")) as f:
        rep = json.load(f)
    # Equal by the fingerprints, or, where a piece's best has no sound
    # fingerprint as a whole (an accumulator of causal_mask's -inf: the
    # report's note says so), by float64 alone.
    v = rep["verified"]
    test.assertTrue(v["equal"], v)
    test.assertTrue(v["fingerprint_equal"] or (v["float64_checked"] and v["note"]), v)
    if v["float64_checked"]:
        test.assertLess(v["float64_max_rel_error"], 1e-9, v)
    test.assertFalse(rep["stopped"])
    # Every piece the search handles was searched (kept: searched, nothing
    # predicted faster within the bound), not skipped; library pieces
    # (the layout ops) are not searched.
    test.assertGreater(rep["states_explored"], 0)
    for p in rep["pieces"]:
        if p["kind"] != "library" and not p["from_cache"]:
            test.assertGreater(p["states_explored"], 0, p)
    return rep


@unittest.skipUnless(LAYOUT, NEEDS)
class FromTorchLayerTest(CacheTest):
    def test_strict_and_eval(self):
        for label, m, x in models():
            with self.subTest(model=label):
                pp = mirsearch.from_torch(m, [x], name=label)  # strict: every node maps
                self.assertEqual(pp.unsupported, [])
                self.assertEqual([b.source.name for b in pp.bindings
                                  if not isinstance(b.source, mfx.ParamRef) and
                                  b.source.op == "placeholder"], ["x"])
                self.assertEqual(len(pp.program.outputs), 1)
                if label.startswith("llama"):
                    for op in ("reshape(", "permute(", "causal_mask(", "rms_norm(",
                               "eps=1e-06", "max("):
                        self.assertIn(op, pp.text)
                else:
                    self.assertIn("layer_norm(", pp.text)
                ref = from_torch_reference(pp, m, x, seed=11)
                self.assertLess(max_rel(evaluated(pp.program, 11), ref), EXACT)

    @unittest.skipUnless(PROG and os.path.exists(PROG), "the mirsearch program is not built")
    def test_partition(self):
        """The small decoder layer and MLP block, whole, partitioned."""
        for label, m, x in models():
            if label not in ("llama%d" % LLAMA_SIZES[0][2], "gpt2_%d" % GPT2_SIZES[0][2]):
                continue
            with self.subTest(model=label):
                pp = mirsearch.from_torch(m, [x], name=label)
                path = os.path.join(self.tmp, label + ".graph")
                pp.program.write(path)
                rep = partition(self, path, os.path.join(self.tmp, label + ".part"))
                self.assertEqual(rep["ops"], pp.program.num_ops)


@unittest.skipUnless(LAYOUT, NEEDS)
class OnnxLayerTest(CacheTest):
    def setUp(self):
        super().setUp()
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("no onnx package")

    def test_import_and_eval(self):
        from mirsearch import onnx_import
        for label, m, x in models():
            with self.subTest(model=label):
                path = os.path.join(self.tmp, label + ".onnx")
                export(m, x, path)
                imp = onnx_import.import_onnx(path)
                if label.startswith("llama"):
                    for op in ("reshape(", "permute(", "causal_mask(", "eps=1e-06"):
                        self.assertIn(op, imp.text)
                ref = onnx_reference(imp, m, x, seed=13)
                self.assertLess(max_rel(evaluated(imp.program, 13), ref), EXACT)

    @unittest.skipUnless(PROG and os.path.exists(PROG), "the mirsearch program is not built")
    def test_cli_import_eval_partition(self):
        """`mirsearch import`, then `mirsearch eval` gives the Python
        importer's program's values; `mirsearch partition` of it verifies."""
        from mirsearch import onnx_import
        label, m, x = models()[0]
        path = os.path.join(self.tmp, label + ".onnx")
        export(m, x, path)
        graph = os.path.join(self.tmp, label + ".graph")
        r = subprocess.run([PROG, "import", path, "-o", graph], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([PROG, "eval", graph, "--seed=13"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = re.search(r"^y f32\[([0-9, ]+)\] sum=(\S+)", r.stdout, re.M)
        self.assertIsNotNone(got, r.stdout)
        imp = onnx_import.import_onnx(path)
        want = evaluated(imp.program, 13)
        self.assertEqual([int(d) for d in got.group(1).split(",")], list(want.shape))
        self.assertAlmostEqual(float(got.group(2)), float(want.sum()),
                               delta=1e-6 * float(want.abs().sum()))
        rep = partition(self, graph, os.path.join(self.tmp, label + ".part"))
        self.assertEqual(rep["ops"], imp.program.num_ops)


if __name__ == "__main__":
    unittest.main()
