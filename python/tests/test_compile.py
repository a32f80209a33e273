# SPDX-License-Identifier: MIT
"""torch.compile(model, backend=...) itself, on torch 2.x: the GPT-2-style
MLP block and the Llama-style decoder layer of models.py at their small
size, with mirsearch's backend in host mode (each searched piece runs its
generated kernel through the host emulator).  Outputs equal eager; after
torch._dynamo.reset() a second compile is served from the cache (no
search) and says so.  Debian's torch 1.13 has no torch.compile: the same
backend is tested on fx graphs there (test_torch, test_models)."""

import contextlib
import functools
import io
import unittest

import torch
import torch._dynamo

import mirsearch
from mirsearch import fx as mfx
from mirsearch import backend_impl
from models import (GPT2_BLOCK_SIZES, GPT2_SIZES, LLAMA_SIZES, GPT2Block, GPT2MLP,
                    LlamaDecoderLayer, LlamaSDPA, MaskAttn)
from util import CacheTest, max_rel
# from_torch's tests again under torch 2.x, where F.scaled_dot_product_attention,
# F.rms_norm and nn.RMSNorm exist (skipped on Debian's 1.13).
from test_torch import FromTorchTest  # noqa: F401
from test_slice import FxSliceTest  # noqa: F401 (tensor_split and the rest, torch 2.x)
from test_decoder import from_torch_reference

OPTS = {"time_limit": 2, "threads": 1}
TOL = 1e-3  # f32 with tf32 tensor cores for computed operands (test_models.TOL)


class Recorder:
    """A backend for torch.compile: mirsearch's, in host mode, keeping the
    report of every graph Dynamo hands it (one per graph break)."""

    def __init__(self):
        self.reports = []

    def __call__(self, gm, example_inputs):
        out = mirsearch.backend(gm, example_inputs, mode="host", options=OPTS)
        self.reports.append(out.mirsearch_report)
        return out


class CompileTest(CacheTest):
    def compile_twice(self, m, x):
        with torch.no_grad():
            ref = m(x)
            torch._dynamo.reset()
            rec = Recorder()
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                got = torch.compile(m, backend=rec)(x)
            self.assertTrue(rec.reports, "torch.compile never called the backend")
            self.assertLess(max_rel(got, ref), TOL, err.getvalue())
            searched = [p for r in rec.reports for p in r["pieces"] if p["replaced"]]
            self.assertTrue(any(p["source"] != "cache" for p in searched), err.getvalue())

            torch._dynamo.reset()
            rec2 = Recorder()
            err2 = io.StringIO()
            with contextlib.redirect_stderr(err2):
                got2 = torch.compile(m, backend=rec2)(x)
            self.assertLess(max_rel(got2, ref), TOL, err2.getvalue())
            pieces = [p for r in rec2.reports for p in r["pieces"]]
            self.assertTrue(pieces)
            self.assertTrue(all(p["source"] == "cache" for p in pieces if p["replaced"]),
                            err2.getvalue())
            self.assertIn("from the cache (no search)", err2.getvalue())
        return rec.reports, err.getvalue()

    def test_gpt2_mlp(self):
        b, s, d, f = GPT2_SIZES[0]
        torch.manual_seed(d)
        reports, _ = self.compile_twice(GPT2MLP(d, f), torch.randn(b, s, d))
        ops = [o for r in reports for p in r["pieces"] if p["replaced"] for o in p["ops"]]
        for op in ("matmul", "gelu", "add"):
            self.assertIn(op, ops)
        self.assertEqual([u for r in reports for u in r["unsupported"]], [])

    def test_gpt2_block(self):
        """nanoGPT's block with its fused c_attn: under Dynamo the split
        and its parts stay PyTorch views; the projections, norms and MLP
        around them are searched."""
        b, s, d, h, f = GPT2_BLOCK_SIZES[0]
        torch.manual_seed(d + 2)
        reports, _ = self.compile_twice(GPT2Block(d, h, f, s), torch.randn(b, s, d))
        ops = [o for r in reports for p in r["pieces"] if p["replaced"] for o in p["ops"]]
        for op in ("matmul", "layer_norm", "gelu"):
            self.assertIn(op, ops)

    @unittest.skipUnless(mfx.rules().has_mask, "the library has no causal_mask")
    def test_gpt2_mask_buffer(self):
        """nanoGPT's masked_fill from its registered tril buffer, which
        Dynamo hands in as a graph input: read as a constant, the masked
        softmax becomes causal_mask and the searched ops, with the buffer
        checked at each call.  Written in place (no mask) the call runs
        the PyTorch code and says so; written back, the kernels again;
        the same for a write through numpy, which no version counter
        sees."""
        b, s, d, h, f = GPT2_BLOCK_SIZES[0]
        torch.manual_seed(d + 3)
        m, x = GPT2Block(d, h, f, s), torch.randn(b, s, d)
        mods = []

        def be(gm, example_inputs):
            out = mirsearch.make_backend(mode="host", options=OPTS)(gm, example_inputs)
            mods.append(out)
            return out
        torch._dynamo.reset()
        err = io.StringIO()
        with torch.no_grad(), contextlib.redirect_stderr(err):
            cm = torch.compile(m, backend=be)
            got = cm(x)
            self.assertLess(max_rel(got, m(x)), TOL, err.getvalue())
            self.assertEqual(len(mods), 1, err.getvalue())
            report = mods[0].mirsearch_report
            ops = [o for p in report["pieces"] if p["replaced"] for o in p["ops"]]
            for op in ("causal_mask", "max", "exp"):
                self.assertIn(op, ops, err.getvalue())
            for what in ("masked_fill", "softmax"):
                self.assertEqual([u for u in report["unsupported"] if what in u[1]], [],
                                 err.getvalue())
            self.assertEqual(report["guarded"], ["L['self']._buffers['bias']"])
            self.assertEqual(mods[0].fallbacks, 0)

            causal = m.bias.clone()
            m.bias.fill_(1.0)  # in place: every key attended
            self.assertLess(max_rel(cm(x), m(x)), TOL, err.getvalue())
            self.assertEqual(mods[0].fallbacks, 1)
            self.assertIn("changed since compile time", err.getvalue())
            self.assertGreater(max_rel(got, m(x)), TOL)  # the mask mattered

            m.bias.copy_(causal)
            self.assertLess(max_rel(cm(x), got), TOL)
            self.assertEqual(mods[0].fallbacks, 1)
            self.assertEqual(len(mods), 1, "Dynamo recompiled")

            # A write that bumps no version counter (through numpy's view
            # of the buffer): the guard compares the values read.
            self.assertEqual(report["guard"], {"L['self']._buffers['bias']":
                                               "by value: [:, :, :8, :8] compared"})
            version = m.bias._version
            m.bias.numpy()[..., 0, 1:] = 1.0  # row 0 attends every key
            self.assertEqual(m.bias._version, version)
            self.assertLess(max_rel(cm(x), m(x)), TOL, err.getvalue())
            self.assertGreater(max_rel(got, m(x)), TOL)
            self.assertEqual(mods[0].fallbacks, 2)
            m.bias.numpy()[...] = causal.numpy()
            self.assertLess(max_rel(cm(x), got), TOL)
            self.assertEqual(mods[0].fallbacks, 2)
            self.assertEqual(len(mods), 1, "Dynamo recompiled")

    def test_buffer_guard(self):
        """_BufferGuard alone: by value it sees a write through numpy or
        .data (no version bump) in the elements read and ignores one
        outside them; by version (the guard="version" choice, and "auto"
        on a GPU) it sees in-place writes through PyTorch but not those
        two: the limit docs/PYTHON.md states."""
        idx = (slice(None), slice(None), slice(None, 4), slice(None, 4))
        for guard, regions in (("auto", [idx]), ("value", None)):
            with self.subTest(guard=guard, regions=regions):
                t = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
                g = backend_impl._BufferGuard(0, "bias", t, regions, guard)
                self.assertTrue(g.by_value)
                self.assertTrue(g.holds(t))
                t.numpy()[0, 0, 6, 7] = 1.0  # outside [:4, :4]
                self.assertEqual(g.holds(t), regions is not None)
                t.numpy()[0, 0, 6, 7] = 0.0
                t.numpy()[0, 0, 0, 3] = 1.0
                self.assertFalse(g.holds(t))
                t.numpy()[0, 0, 0, 3] = 0.0
                self.assertTrue(g.holds(t))
                t.data[0, 0, 1, 2] = 1.0  # .data has a version counter of its own
                self.assertFalse(g.holds(t))
                t.data[0, 0, 1, 2] = 0.0
                self.assertTrue(g.holds(t))
                self.assertTrue(g.holds(t.clone()))  # an equal tensor
                self.assertFalse(g.holds(t[..., :2, :2]))  # a smaller one
        t = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
        g = backend_impl._BufferGuard(0, "bias", t, [idx], "version")
        self.assertFalse(g.by_value)
        t.numpy()[0, 0, 0, 3] = 1.0
        t.data[0, 0, 1, 2] = 1.0
        self.assertTrue(g.holds(t))  # blind to both
        t[0, 0, 0, 2] = 1.0  # in place through PyTorch: the version moves
        self.assertFalse(g.holds(t))
        # "auto" off the CPU (a GPU tensor; here the meta device) is by version.
        self.assertFalse(backend_impl._BufferGuard(0, "bias", torch.ones(2, 2, device="meta"),
                                                   None, "auto").by_value)
        with self.assertRaises(ValueError):
            mirsearch.backend(torch.fx.symbolic_trace(GPT2MLP(8, 16)), [torch.randn(1, 2, 8)],
                              mode="eager", guard="never")

    @unittest.skipUnless(mfx.rules().has_mask, "the library has no causal_mask")
    def test_mask_buffer_spellings(self):
        """The graphs Dynamo hands over for nanoGPT's, Hugging Face's and
        an additive mask buffer: with the buffers pinned (as the backend
        pins them) the mask is causal_mask; not pinned, or a buffer that
        is not the causal pattern, it is not (no search: analysis only)."""
        def kinds(m, pin, x):
            found = []

            def be(gm, example_inputs):
                pinned = backend_impl._pinned(gm, example_inputs) if pin else {}
                if pin:
                    self.assertTrue(any("._buffers[" in v for v in pinned.values()), pinned)
                an = mfx.Analysis(mfx.trace(gm, example_inputs, pinned=pinned), layout=False)
                found.extend(op.kind for ops in an.ops.values() for op in ops)
                # The buffers the absorbed nodes' values come from: what
                # the backend checks at each call.
                found.extend(pinned[i] for n in an.absorbed
                             for i in n.meta.get("mirs_pinned", ()))
                return gm
            torch._dynamo.reset()
            with torch.no_grad():
                torch.compile(m, backend=be)(x)
            return found
        x = torch.randn(2, 8, 32)
        for style in ("nanogpt", "hf", "additive"):
            with self.subTest(style=style):
                found = kinds(MaskAttn(style), True, x)
                self.assertIn("causal_mask", found)
                buf = "add_mask" if style == "additive" else "bias"
                self.assertEqual({f for f in found if "[" in f},
                                 {"L['self']._buffers['%s']" % buf})
                self.assertNotIn("causal_mask", kinds(MaskAttn(style), False, x))
        m = MaskAttn("nanogpt")
        m.bias[..., 0, 1] = 1
        self.assertNotIn("causal_mask", kinds(m, True, x))

    def test_llama_decoder_layer(self):
        b, s, d, h, f = LLAMA_SIZES[0]
        torch.manual_seed(d)
        reports, log = self.compile_twice(LlamaDecoderLayer(d, h, f), torch.randn(b, s, d))
        ops = [o for r in reports for p in r["pieces"] if p["replaced"] for o in p["ops"]]
        for op in ("rms_norm", "matmul", "silu", "exp", "max", "causal_mask"):
            self.assertIn(op, ops, log)


    @unittest.skipUnless(mfx.rules().has_layout and mfx.rules().rms_eps,
                         "the library has no reshape/permute or no rms_norm eps")
    def test_llama_sdpa(self):
        """The layer with nn.RMSNorm and scaled_dot_product_attention:
        from_torch (strict) evaluates like PyTorch; torch.compile gives
        eager's outputs and its second compile comes from the cache."""
        b, s, d, h, f = LLAMA_SIZES[0]
        torch.manual_seed(d)
        m, x = LlamaSDPA(d, h, f), torch.randn(b, s, d)
        pp = mirsearch.from_torch(m, [x])
        for op in ("rms_norm(x, eps=1e-06)", "causal_mask(", "permute(", "reshape("):
            self.assertIn(op, pp.text)
        reports, log = self.compile_twice(m, x)
        ops = [o for r in reports for p in r["pieces"] if p["replaced"] for o in p["ops"]]
        for op in ("rms_norm", "causal_mask", "max", "exp"):
            self.assertIn(op, ops, log)
        ref = from_torch_reference(pp, LlamaSDPA(d, h, f), x, seed=3)
        (_n, (shape, vals)), = pp.program.eval(3).items()
        got = torch.tensor(vals, dtype=torch.float64).reshape(shape)
        self.assertLess(max_rel(got, ref), 1e-9)


if __name__ == "__main__":
    unittest.main()
