# SPDX-License-Identifier: MIT
"""from_torch (torch.fx to programs) and the backend on small fx graphs:
conversion, bindings, unsupported nodes, the piece split's convexity,
outputs equal to eager in the host (emulated kernel) and eager modes, and
a second compile served from the cache."""

import contextlib
import io
import math
import os
import shutil
import subprocess
import unittest

import torch
import torch.nn.functional as F

import mirsearch
from mirsearch import fx as mfx
from mirsearch import partition
from models import MaskAttn
from util import CacheTest, example, max_rel, seeded

OPTS = {"time_limit": 2, "threads": 1}
# f32 results: matmuls of computed operands run on tf32 (see test_models.TOL).


def gated(x, w1, w2):
    return F.silu(x @ w1) * (x @ w2)


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)
        self.out = torch.nn.Linear(32, 16, bias=False)

    def forward(self, x):
        return x + self.out(torch.relu(self.fc(x)))


def seeded_eval_check(test, pp, fn, module=None, seed=5):
    """pp's float64 eval on the seeded inputs against fn on the same values."""
    ins = pp.program.input_values(seed)
    args = {}
    for b in pp.bindings:
        src = b.source
        shape = src.tensor.shape if isinstance(src, mfx.ParamRef) else pp.an.meta[src][0]
        v = seeded(shape, ins[b.name], b.transpose)
        if isinstance(src, mfx.ParamRef):
            getattr(getattr(module, src.module_node.target), src.attr).data = v
        else:
            args[src.name] = v
    if module is not None:
        module.double()
    order = [n.name for n in pp.an.gm.graph.nodes if n.op == "placeholder"]
    ref = fn(*[args[n] for n in order])
    out = pp.program.eval(seed)
    (name, (shape, vals)), = out.items()
    got = torch.tensor(vals, dtype=torch.float64).reshape(shape)
    test.assertLess(max_rel(got, ref), 1e-12)


class FromTorchTest(unittest.TestCase):
    def test_function(self):
        x, w1, w2 = torch.randn(8, 16), torch.randn(16, 32), torch.randn(16, 32)
        pp = mirsearch.from_torch(gated, [x, w1, w2])
        self.assertEqual(pp.program.name, "gated")
        self.assertEqual([b.name for b in pp.bindings], ["x", "w1", "w2"])
        self.assertIn("silu(", pp.text)
        self.assertEqual(pp.program.num_ops, 4)
        seeded_eval_check(self, pp, gated)

    def test_module_bindings(self):
        m = Small()
        pp = mirsearch.from_torch(m, [torch.randn(2, 4, 16)])
        names = {b.name: b for b in pp.bindings}
        # The weight bound as it is (no copy at each call), transposed in
        # the program; padded to x's rank.
        self.assertFalse(names["fc_weight"].transpose)
        self.assertEqual(names["fc_weight"].shape, (1, 32, 16))
        self.assertIn("fc_weight_t = transpose(fc_weight)", pp.text)
        self.assertEqual(names["fc_bias"].shape, (1, 1, 32))
        seeded_eval_check(self, pp, m, module=m)

    def test_rms_norm_pattern(self):
        def rms(x, g):
            return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
        pp = mirsearch.from_torch(rms, [torch.randn(4, 32), torch.randn(32)])
        self.assertIn("rms_norm(x, eps=1e-06)" if mfx.rules().rms_eps else "rms_norm(x)",
                      pp.text)
        self.assertEqual(pp.program.num_ops, 2)

        def big_eps(x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 0.1)
        if mfx.rules().rms_eps:
            # The library's rms_norm takes the eps: kept, whatever its size.
            pp = mirsearch.from_torch(big_eps, [torch.randn(4, 32)])
            self.assertIn("rms_norm(x, eps=0.1)", pp.text)
            seeded_eval_check(self, pp, big_eps)
        elif mfx.rules().scalars and mfx.rules().has_pow:
            # Not an rms_norm (its eps matters): written out with constants.
            pp = mirsearch.from_torch(big_eps, [torch.randn(4, 32)])
            self.assertNotIn("rms_norm", pp.text)
            self.assertIn("add(mean, 0.1)", pp.text)
            seeded_eval_check(self, pp, big_eps)
        else:
            with self.assertRaises(mfx.Unsupported) as e:
                mirsearch.from_torch(big_eps, [torch.randn(4, 32)])
            self.assertIn("node add (operator.add)", str(e.exception))

    def test_unsupported_named(self):
        def f(x, w):
            return torch.softmax(x @ w, dim=-1).cumsum(-1)
        with self.assertRaises(mfx.Unsupported) as e:
            mirsearch.from_torch(f, [torch.randn(4, 8), torch.randn(8, 8)])
        names = [n[0] for n in e.exception.nodes]
        self.assertIn("cumsum", names)
        if not mfx.rules().has_max:
            self.assertIn("softmax", names)
        else:
            self.assertNotIn("softmax", names)
        pp = mirsearch.from_torch(f, [torch.randn(4, 8), torch.randn(8, 8)], strict=False)
        self.assertIn("matmul(x, w)", pp.text)
        self.assertTrue(pp.unsupported)

    @unittest.skipUnless(mfx.rules().scalars and mfx.rules().has_transpose,
                         "the library has no constants or transpose (issue 29)")
    def test_constants_and_elementwise(self):
        def f(x, w):
            s = (x @ w.transpose(-2, -1)) / math.sqrt(16)
            return (torch.sigmoid(s) * 0.5 + torch.tanh(-s) - s.mean(-1, keepdim=True) +
                    torch.rsqrt(s.pow(2) + 1.0) + s.clamp(-1, 1) + (1 - s) / (2 + s * s))
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(8, 16)])
        for op in ("transpose(w)", "div(matmul, 4)", "mul(sigmoid, 0.5)", "neg(", "sub(1, "):
            self.assertIn(op, pp.text)
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(mfx.rules().has_max, "the library has no max operator (issue 29)")
    def test_softmax(self):
        def f(x, w):
            return torch.softmax(x @ w, dim=-1)
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        self.assertIn("max(", pp.text)
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(mfx.rules().has_min and mfx.rules().has_max,
                         "the library has no min or max operator (issue 29)")
    def test_amin_amax(self):
        def f(x, w):
            s = x @ w
            return (torch.amin(s, dim=-1, keepdim=True) + s.amax(-1, keepdim=True) +
                    torch.min(s, dim=-1, keepdim=True).values + torch.max(s, -1, True)[0] +
                    s.amin(dim=(1,), keepdim=True))
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        self.assertEqual(pp.unsupported, [])
        self.assertEqual(pp.text.count(" = min("), 3)
        self.assertEqual(pp.text.count(" = max("), 2)
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(mfx.rules().has_max and "abs" in mfx.rules().unary.values(),
                         "the library has no max or abs operator (issue 29)")
    def test_quant_scale(self):
        def f(x, w):
            s = x @ w
            return torch.amax(torch.abs(s), dim=-1, keepdim=True) / 127.0 + s.abs()
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        self.assertEqual(pp.unsupported, [])
        self.assertEqual(pp.text.count(" = abs(matmul)"), 2)
        self.assertRegex(pp.text, r"= max\(\w+, dim=-1\)")
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless("abs" in mfx.rules().unary.values(),
                         "the library has no abs operator (issue 29)")
    def test_builtin_abs(self):
        """Python's abs(x) traces (as operator.abs, on torch 1.13 too) and
        converts; a graph built by hand that calls builtins.abs or
        operator.abs converts too."""
        import builtins
        import operator

        def f(x, w):
            return abs(x @ w) * 2.0
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        self.assertEqual(pp.unsupported, [])
        self.assertEqual(pp.text.count(" = abs(matmul)"), 1)
        seeded_eval_check(self, pp, f)
        for target in (builtins.abs, operator.abs):
            g = torch.fx.Graph()
            x, w = g.placeholder("x"), g.placeholder("w")
            s = g.call_function(torch.matmul, (x, w))
            g.output(g.call_function(target, (s,)))
            gm = torch.fx.GraphModule(torch.nn.Module(), g)
            pp = mirsearch.from_torch(gm, [torch.randn(4, 16), torch.randn(16, 8)])
            self.assertEqual(pp.unsupported, [], target)
            self.assertEqual(pp.text.count(" = abs(matmul)"), 1, pp.text)
            seeded_eval_check(self, pp, lambda x, w: torch.abs(x @ w))

    @unittest.skipUnless(mfx.rules().has_min and mfx.rules().has_layout,
                         "the library has no min or reshape operator")
    def test_amin_dropped_dim(self):
        def f(x, w):
            return torch.amin(x @ w, dim=0) * 2.0
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        self.assertIn("min(matmul, dim=0)", pp.text)
        self.assertRegex(pp.text, r"= reshape\(\w+, shape=\[8\]\)")
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(mfx.rules().has_min, "the library has no min operator (issue 29)")
    def test_min_indices_stay(self):
        def f(x, w):
            v, i = torch.min(x @ w, dim=-1, keepdim=True)
            return v * 2.0, i
        with self.assertRaises(mfx.Unsupported) as e:
            mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)])
        why = dict((n[0], n[2]) for n in e.exception.nodes)
        self.assertIn("indices are used", why["min_1"])
        self.assertIn("argmax/argmin", why["getitem_1"])
        pp = mirsearch.from_torch(f, [torch.randn(4, 16), torch.randn(16, 8)], strict=False)
        self.assertIn("min(matmul, dim=-1)", pp.text)

    @unittest.skipUnless(mfx.rules().has_layer_norm, "the library has no layer_norm (issue 29)")
    def test_layer_norm(self):
        class LNMLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln = torch.nn.LayerNorm(16, eps=1e-5)
                self.ln.weight.data = 1 + 0.1 * torch.randn(16)
                self.ln.bias.data = 0.1 * torch.randn(16)
                self.fc = torch.nn.Linear(16, 32)

            def forward(self, x):
                return F.relu(self.fc(self.ln(x))) + x.mean(-1, keepdim=True)
        m = LNMLP()
        pp = mirsearch.from_torch(m, [torch.randn(2, 4, 16)])
        self.assertIn("layer_norm(x, eps=1e-05)", pp.text)
        self.assertIn("mean(x, dim=-1)", pp.text)
        seeded_eval_check(self, pp, m, module=m)

    @unittest.skipUnless(mfx.rules().has_layout, "the library has no reshape and permute")
    def test_layout(self):
        """view/reshape/flatten/unsqueeze/squeeze become reshape (to the
        recorded shape: sizes read at run time are folded to numbers),
        transposes of other dims and permute become permute, the last two
        dims' transpose and .mT transpose, contiguous nothing; the program
        computes what PyTorch does."""
        def f(x, w, c):
            b, s, d = x.size(0), x.size(1), x.shape[-1]
            h = (x @ w).view(b, s, 2, d // 2).transpose(1, 2).contiguous()   # [b, 2, s, d/2]
            g = h.permute(0, 2, 3, 1).reshape(b, s, d)                       # [b, s, d]
            u = g.unsqueeze(1).flatten(2).squeeze(1)                         # [b, s*d]
            # c.T.T is c; the sums are [1, 1], broadcast as PyTorch does
            return u.view(b, s, d).mT @ x + c.T.T.sum(-1, keepdim=True).mT.sum(-1, keepdim=True)
        x, w, c = torch.randn(2, 4, 8), torch.randn(8, 8), torch.randn(8, 8)
        pp = mirsearch.from_torch(f, [x, w, c])
        self.assertEqual(pp.unsupported, [])
        for op in ("reshape(matmul, shape=[2, 4, 2, 4])", "permute(view, dims=[0, 2, 1, 3])",
                   "permute(transpose, dims=[0, 2, 3, 1])", "reshape(squeeze, shape=[2, 4, 8])",
                   "transpose(view_1)", "reshape(sum_2, shape=[1, 1, 1])"):
            self.assertIn(op, pp.text)
        self.assertNotIn("size", pp.text)
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(mfx.rules().has_layout and mfx.rules().has_mask,
                         "the library has no reshape/permute or causal_mask")
    def test_constant_masks(self):
        """Causal masks from a registered buffer, as nanoGPT
        (masked_fill(bias[:, :, :T, :T] == 0, -inf)) and Hugging Face's
        GPT-2 (torch.where(bias, s, finfo.min) before a softmax) write
        them, and an additive constant mask: causal_mask, the buffer's
        nodes absorbed (strict succeeds); the program computes PyTorch's."""
        for style in ("nanogpt", "hf", "additive"):
            with self.subTest(style=style):
                m = MaskAttn(style)
                pp = mirsearch.from_torch(m, [torch.randn(2, 8, 32)])
                self.assertIn("causal_mask(", pp.text)
                self.assertNotIn("bias", pp.text)
                seeded_eval_check(self, pp, m, module=m)
        # A constant that is not the causal pattern stays unsupported.
        m = MaskAttn("nanogpt")
        m.bias[..., 0, 1] = 1
        with self.assertRaises(mfx.Unsupported):
            mirsearch.from_torch(m, [torch.randn(2, 8, 32)])

    @unittest.skipUnless(mfx.rules().scalars and mfx.rules().has_pow,
                         "the library has no constants or pow")
    def test_gelu_tanh(self):
        """GPT-2's GELU (approximate='tanh'), as a call and as nn.GELU:
        written out with tanh, pow and constants."""
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = torch.nn.GELU(approximate="tanh")

            def forward(self, x):
                return self.act(x) + F.gelu(x * 2, approximate="tanh")
        m = M()
        pp = mirsearch.from_torch(m, [torch.randn(4, 16)])
        self.assertIn("tanh(", pp.text)
        self.assertNotIn("= gelu(", pp.text)
        seeded_eval_check(self, pp, m, module=m)

    def test_addmm(self):
        """Hugging Face GPT-2's Conv1D: addmm(bias, x.view(-1, nx), weight);
        baddbmm likewise."""
        from test_decoder import from_torch_reference

        class Conv1D(torch.nn.Module):
            def __init__(self, batched):
                super().__init__()
                self.batched = batched
                self.weight = torch.nn.Parameter(torch.randn(16, 32))
                self.bias = torch.nn.Parameter(torch.randn(32))

            def forward(self, x):
                if self.batched:
                    return torch.baddbmm(self.bias, x, self.weight.unsqueeze(0))
                return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        for batched in (False, True) if mfx.rules().has_layout else (False,):
            m = Conv1D(batched)
            x = torch.randn(1, 8, 16) if batched else torch.randn(8, 16)
            pp = mirsearch.from_torch(m, [x])
            self.assertEqual(pp.text.count("matmul("), 1)
            ref = from_torch_reference(pp, m, x, seed=4)
            (shape, got), = pp.program.eval(4).values()
            got = torch.tensor(got, dtype=torch.float64).reshape(shape)
            self.assertLess(max_rel(got, ref), 1e-12)

    def test_sizes_folded(self):
        """Sizes computed from shapes are numbers in a program: no node for
        them, and nothing unsupported."""
        def f(x):
            n = x.size(-1)
            return x * (1.0 / n) if mfx.rules().scalars else x * x
        pp = mirsearch.from_torch(f, [torch.randn(4, 8)])
        self.assertEqual(pp.unsupported, [])
        self.assertNotIn("size", pp.text)
        # The caller's GraphModule is not changed.
        gm = torch.fx.symbolic_trace(f)
        mirsearch.from_torch(gm, [torch.randn(4, 8)])
        self.assertIn("size", str(gm.graph))

    @unittest.skipUnless(hasattr(F, "scaled_dot_product_attention"),
                         "torch %s has no scaled_dot_product_attention" % torch.__version__)
    def test_sdpa(self):
        def f(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        q, k, v = (torch.randn(1, 2, 8, 16) for _ in range(3))
        pp = mirsearch.from_torch(f, [q, k, v])
        for op in ("transpose(k)", "mul(", "causal_mask(", "max(", "exp("):
            self.assertIn(op, pp.text)
        seeded_eval_check(self, pp, f)

    @unittest.skipUnless(hasattr(F, "rms_norm") and hasattr(torch.nn, "RMSNorm"),
                         "torch %s has no F.rms_norm or nn.RMSNorm" % torch.__version__)
    def test_rms_norm_calls(self):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.RMSNorm(16, eps=1e-5)
                self.g = torch.nn.Parameter(1 + 0.1 * torch.randn(16))

            def forward(self, x):
                return F.rms_norm(self.norm(x), [16], self.g)  # eps None: the dtype's
        pp = mirsearch.from_torch(M(), [torch.randn(4, 16)])
        eps32 = torch.finfo(torch.float32).eps
        self.assertIn("rms_norm(x, eps=1e-05)", pp.text)
        self.assertIn("eps=%r" % eps32, pp.text)
        # float64 on the seeded inputs, the eps of the float32 model spelled out
        ins = pp.program.input_values(5)
        v = {b.describe().split(" = ")[1].split(" ")[0]:
             torch.tensor(ins[b.name][1], dtype=torch.float64).reshape(ins[b.name][0])
             for b in pp.bindings}

        def rms(t, eps):
            return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + eps)
        ref = rms(rms(v["x"], 1e-5) * v["norm.weight"], eps32) * v["g"]
        (shape, got), = pp.program.eval(5).values()
        got = torch.tensor(got, dtype=torch.float64).reshape(shape)
        self.assertLess(max_rel(got, ref), 1e-12)

    @unittest.skipUnless(mfx.rules().has_max, "the library has no max operator (issue 29)")
    def test_softmax_module_and_identities(self):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = torch.nn.Sequential(
                    torch.nn.Linear(16, 8, bias=False), torch.nn.Identity(),
                    torch.nn.Dropout(0.1), torch.nn.Softmax(dim=-1))

            def forward(self, x):
                return self.seq(x.to(torch.float32).float())
        pp = mirsearch.from_torch(M().eval(), [torch.randn(4, 16)])
        self.assertEqual(pp.unsupported, [])
        self.assertEqual(pp.program.num_ops, 7)  # transpose, matmul, the softmax's five
        with self.assertRaises(mfx.Unsupported) as e:
            mirsearch.from_torch(lambda x: x.double() * 2, [torch.randn(4)])
        self.assertIn("changes the dtype", str(e.exception))

    def test_dtypes(self):
        x = torch.randn(4, 8).half()
        pp = mirsearch.from_torch(lambda a, b: a * b, [x, x])
        self.assertIn("f16[4, 8]", pp.text)
        with self.assertRaises(mfx.Unsupported):
            mirsearch.from_torch(lambda a, b: a * b, [torch.ones(4, dtype=torch.int32)] * 2)


class Branchy(torch.nn.Module):
    """a feeds c directly and through cumsum (unsupported): a and c in one
    piece would need cumsum inside it (not convex)."""

    def forward(self, x, w):
        a = x @ w
        b = torch.cumsum(a, dim=-1)
        return a + b


class BackendTest(CacheTest):
    def compile(self, m, args, **kw):
        gm = torch.fx.symbolic_trace(m)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            c = mirsearch.backend(gm, args, options=OPTS, **kw)
        return c, err.getvalue()

    def test_host_and_cache(self):
        torch.manual_seed(1)
        m = Small()
        x = torch.randn(2, 4, 16)
        c, log = self.compile(m, [x], mode="host")
        rep = c.mirsearch_report
        self.assertEqual(rep["mode"], "host")
        self.assertTrue(all(p["source"] == "search" for p in rep["pieces"]))
        self.assertTrue(any(p["replaced"] for p in rep["pieces"]))
        self.assertIn("mirsearch_piece_0", str(c.graph))
        self.assertRegex(log, "searched in|partitioned by the library")
        ref = m(x)
        self.assertLess(max_rel(c(x), ref), 1e-3)
        x2 = torch.randn(2, 4, 16)  # another input of the same shape
        self.assertLess(max_rel(c(x2), m(x2)), 1e-3)
        # A second compile: every piece from the cache, no search, and it says so.
        c2, log2 = self.compile(m, [x], mode="host")
        self.assertTrue(all(p["source"] == "cache" for p in c2.mirsearch_report["pieces"]))
        self.assertIn("from the cache (no search)", log2)
        self.assertNotRegex(log2, "searched in|partitioned by the library")
        self.assertLess(max_rel(c2(x), ref), 1e-3)

    def test_host_inputs_and_weights(self):
        """The kernel call takes a dense tensor as it is and prepares any
        other (Kernel.__call__): a permuted view and an input 4 bytes
        off 16-byte alignment give eager's result; and
        the weights are bound as they are (transposed in the program,
        not copied at compile time), so one written in place is read."""
        torch.manual_seed(2)
        m = Small()
        x = torch.randn(2, 4, 16)
        c, _log = self.compile(m, [x], mode="host")
        self.assertTrue(any(p["replaced"] for p in c.mirsearch_report["pieces"]))
        self.assertLess(max_rel(c(x), m(x)), 1e-3)
        xp = torch.randn(16, 4, 2).permute(2, 1, 0)  # [2, 4, 16], not contiguous
        self.assertFalse(xp.is_contiguous())
        self.assertLess(max_rel(c(xp), m(xp)), 1e-3)
        buf = torch.randn(2 * 4 * 16 + 1)
        xm = buf[1:].view(2, 4, 16)  # contiguous, its data 4 bytes past alignment
        self.assertNotEqual(xm.data_ptr() % 16, 0)
        self.assertLess(max_rel(c(xm), m(xm)), 1e-3)
        with torch.no_grad():
            m.fc.weight.mul_(-0.5)
            m.out.weight.add_(0.25)
        ref = m(x)
        self.assertLess(max_rel(c(x), ref), 1e-3)

    def test_eager_mode_and_convexity(self):
        m = Branchy()
        x, w = torch.randn(4, 8), torch.randn(8, 8)
        gm = mfx.trace(torch.fx.symbolic_trace(m), [x, w])
        an = mfx.Analysis(gm)
        pieces = partition.split(an)
        self.assertEqual(len(pieces), 2)  # matmul and add apart
        c, log = self.compile(m, [x, w], mode="eager")
        self.assertFalse(any(p["replaced"] for p in c.mirsearch_report["pieces"]))
        self.assertIn("node cumsum (torch.cumsum) stays PyTorch code", log)
        self.assertTrue(torch.equal(c(x, w), m(x, w)))
        c, _log = self.compile(m, [x, w], mode="host")
        self.assertLess(max_rel(c(x, w), m(x, w)), 1e-3)

    @unittest.skipUnless(partition.library_has_partition(),
                         "the library has no partition call (mirsearch/partition.h)")
    def test_library_partition(self):
        torch.manual_seed(2)
        m = Small()
        x = torch.randn(2, 4, 16)
        c, log = self.compile(m, [x], mode="host", library_partition=True)
        rep = c.mirsearch_report
        self.assertTrue(rep["library_partition"])
        self.assertIn("partitioned by the library", log)
        self.assertTrue(all(p["partition"] for p in rep["pieces"]))
        self.assertLess(max_rel(c(x), m(x)), 1e-3)
        c2, log2 = self.compile(m, [x], mode="host", library_partition=True)
        self.assertTrue(all(p["source"] == "cache" for p in c2.mirsearch_report["pieces"]))
        self.assertIn("from the cache (no search)", log2)
        self.assertLess(max_rel(c2(x), m(x)), 1e-3)

    @unittest.skipUnless(shutil.which(os.environ.get("NVCC") or "nvcc"), "no nvcc")
    def test_cuda_sources_compile(self):
        """The cuda mode's sources: the generated code compiles with nvcc
        under the flags load_inline adds (no half operators or
        conversions), and the wrapper calls its entry point."""
        from torch.utils.cpp_extension import COMMON_NVCC_FLAGS
        from mirsearch.kernel import _Signature, cuda_wrapper
        p = mirsearch.Program.load(example("best/gated_mlp_small.ugraph"))
        cu = os.path.join(self.tmp, "k.cu")
        with open(cu, "w") as f:
            f.write(p.cuda("mirs_k"))
        r = subprocess.run([os.environ.get("NVCC") or "nvcc", "-c", "-std=c++17"] +
                           COMMON_NVCC_FLAGS +
                           ["-gencode=arch=compute_90,code=sm_90", cu, "-o", cu + ".o"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        w = cuda_wrapper("mirs_k", _Signature(p))
        self.assertIn("int rc = mirs_k(ins[0].data_ptr(), ins[1].data_ptr(), "
                      "ins[2].data_ptr(), outs[0].data_ptr(),", w)
        self.assertIn("at::empty({8, 64}, ins[0].options().dtype(at::kHalf))", w)

    def test_infinite_mask_stays_out(self):
        """A -inf mask built in PyTorch never reaches a kernel (the kernels
        and their verification assume finite values): the add that applies
        it and the softmax over it stay PyTorch code; the result has no NaN."""
        def f(x, w, v):
            s = x @ w
            s = s + torch.full_like(s, float("-inf")).triu(1)
            return torch.softmax(s, dim=-1) @ v
        x, w, v = torch.randn(8, 16), torch.randn(16, 8), torch.randn(8, 16)
        c, log = self.compile(f, [x, w, v], mode="host")
        why = {n: r for n, _w, r in c.mirsearch_report["unsupported"]}
        if not mfx.rules().has_mask:
            self.assertIn("infinities", why["add"])
            self.assertIn("softmax", why)
        y = c(x, w, v)
        self.assertFalse(torch.isnan(y).any())
        self.assertLess(max_rel(y, f(x, w, v)), 1e-3)

    def test_bad_mode(self):
        with self.assertRaises(ValueError):
            self.compile(Small(), [torch.randn(2, 16)], mode="gpu")

    @unittest.skipUnless(hasattr(torch, "compile"), "torch %s has no torch.compile"
                         % torch.__version__)
    def test_torch_compile(self):
        m = Small()
        x = torch.randn(2, 4, 16)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            c = torch.compile(m, backend=mirsearch.make_backend(mode="host", options=OPTS))
            y = c(x)
        self.assertLess(max_rel(y, m(x)), 1e-3)
        self.assertIn("mirsearch: piece", err.getvalue())


if __name__ == "__main__":
    unittest.main()
