# SPDX-License-Identifier: MIT
"""The package over the C library without torch: programs (build, parse,
text round trip, hash), errors, options, search, results, code."""

import os
import unittest

import mirsearch
from mirsearch import cache
from util import FAST, CacheTest, example


class ProgramTest(unittest.TestCase):
    def test_library_found(self):
        self.assertTrue(os.path.exists(mirsearch.library_path()))
        self.assertRegex(mirsearch.version(), r"^\d+\.\d+\.\d+")

    def test_round_trip(self):
        p = mirsearch.Program.load(example("gated_mlp_small.graph"))
        self.assertEqual(p.name, "gated_mlp_small")
        self.assertEqual([t.name for t in p.inputs], ["X", "W1", "W2"])
        self.assertEqual(p.outputs[0].shape, (8, 64))
        self.assertEqual(p.outputs[0].dtype, "f16")
        q = mirsearch.Program.parse(p.text)
        self.assertEqual(q.text, p.text)
        self.assertEqual(q.hash, p.hash)

    def test_build_equals_parse(self):
        b = mirsearch.Program("rl")
        x = b.input("X", "f16", [2, 128])
        w = b.input("W", "f16", [128, 256])
        d = b.op("rms_norm", x)
        b.output(b.op("matmul", d, w, name="O"))
        p = mirsearch.Program.load(example("rmsnorm_linear_small.graph"))
        self.assertEqual(b.hash, p.hash)
        self.assertIn("O = matmul(", b.text)
        s = b.sum(x, -1)
        self.assertEqual(s.shape, (2, 1))

    def test_errors(self):
        with self.assertRaises(mirsearch.Error) as e:
            mirsearch.Program.parse("program x\ninput X : f16[2, 2]\nY = foo(X)\noutput Y\n",
                                    "bad.graph")
        self.assertEqual(e.exception.status, "PARSE")
        self.assertIn("bad.graph:3:", str(e.exception))
        self.assertIn("foo", str(e.exception))
        b = mirsearch.Program("s")
        x = b.input("X", "f16", [2, 3])
        y = b.input("Y", "f16", [4, 5])
        with self.assertRaises(mirsearch.Error) as e:
            b.op("matmul", x, y)
        self.assertEqual(e.exception.status, "SHAPE")
        with self.assertRaises(mirsearch.Error):
            b.op("nosuchop", x)
        with self.assertRaises(ValueError):
            b.input("Z", "f64", [2])
        with self.assertRaises(mirsearch.Error) as e:
            mirsearch.Context(options={"no_such_option": 1})
        self.assertEqual(e.exception.status, "INVALID_ARG")
        with self.assertRaises(mirsearch.Error):
            mirsearch.Program.load(os.path.join("no", "such", "file.graph"))

    def test_options(self):
        c = mirsearch.Context(options={"time_limit": 2.5, "threads": 1})
        self.assertEqual(float(c.get("time_limit")), 2.5)
        self.assertEqual(c.get("threads"), "1")

    def test_eval(self):
        p = mirsearch.Program.load(example("rmsnorm_linear_small.graph"))
        out = p.eval(seed=3)
        shape, vals = out["O"]
        self.assertEqual(shape, (2, 256))
        # Recompute O = rms_norm(X) . W from the seeded inputs by hand.
        ins = p.input_values(seed=3)
        (_xs, x), (_ws, w) = ins["X"], ins["W"]
        row = x[:128]
        rms = (sum(v * v for v in row) / 128) ** 0.5
        o00 = sum(row[k] / rms * w[k * 256] for k in range(128))
        self.assertAlmostEqual(vals[0], o00, places=9)


class SearchTest(CacheTest):
    def test_search_and_code(self):
        p = mirsearch.Program.load(example("gated_mlp_small.graph"))
        s = mirsearch.search(p, FAST)
        self.assertTrue(s.results)
        best = s.best
        self.assertLessEqual(s.best_cost, s.report["unfused"]["predicted_seconds"])
        self.assertEqual(s.report["program"], "gated_mlp_small")
        self.assertEqual(best.num_ops, 1)  # one fused kernel
        self.assertIn("custom(", best.text)
        again = mirsearch.Program.parse(best.text)
        self.assertEqual(again.hash, best.hash)
        # The best computes the program's function (float64 interpreter).
        a, b = p.eval(1)["O"][1], best.eval(1)["O"][1]
        self.assertLess(max(abs(x - y) for x, y in zip(a, b)), 1e-9 * max(map(abs, a)))
        cu = best.cuda("my_entry")
        self.assertIn("int my_entry(", cu)
        self.assertIn("my_entry_workspace_bytes", best.header("my_entry"))
        # In a context of its own: the search's holds its time limit, which
        # also bounds the compiler mirs_codegen_run starts.
        mine = mirsearch.Program.parse(best.text, ctx=mirsearch.Context(quiet=True))
        _out, err = mine.run_host(seed=2)
        self.assertLessEqual(err, mine.tolerance)

    def test_cache_key(self):
        p = mirsearch.Program.load(example("gated_mlp_small.graph"))
        q = mirsearch.Program.parse(p.text.replace("O1", "T1"))  # other intermediate name
        self.assertEqual(cache.key(p, FAST), cache.key(q, FAST))
        self.assertNotEqual(cache.key(p, FAST), cache.key(p, {"time_limit": 4}))
        rc = cache.ResultCache(os.path.join(self.tmp, "c"))
        self.assertIsNone(rc.get("k"))
        rc.put("k", {"a": 1})
        self.assertEqual(rc.get("k"), {"a": 1})
        self.assertEqual([f for f in os.listdir(rc.dir) if f.startswith(".tmp")], [])


if __name__ == "__main__":
    unittest.main()
