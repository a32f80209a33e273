# SPDX-License-Identifier: MIT
"""Shared helpers of the Python tests: where the examples are, a private
cache directory per test, seeded inputs as torch tensors."""

import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("top_srcdir") or os.path.join(HERE, "..", "..")
EXAMPLES = os.path.join(SRCDIR, "examples")
# Small searches: one thread (make check runs tests side by side), a few seconds.
FAST = {"time_limit": 3, "threads": 1}


def example(name):
    return os.path.join(EXAMPLES, name)


class CacheTest(unittest.TestCase):
    """A test with its own result cache directory ($MIRSEARCH_CACHE)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="mirs_py_")
        self.tmp = self._tmp.name
        self._old = os.environ.get("MIRSEARCH_CACHE")
        os.environ["MIRSEARCH_CACHE"] = os.path.join(self.tmp, "cache")

    def tearDown(self):
        if self._old is None:
            os.environ.pop("MIRSEARCH_CACHE", None)
        else:
            os.environ["MIRSEARCH_CACHE"] = self._old
        self._tmp.cleanup()


def seeded(binding_shape_source, values, transpose):
    """The torch value whose binding (transpose, reshape) gives the seeded
    program input `values` (shape, flat list): the binding's inverse."""
    import torch
    shape, flat = values
    t = torch.tensor(flat, dtype=torch.float64).reshape(shape)
    src = list(binding_shape_source)
    if transpose:
        s = src[:-2] + [src[-1], src[-2]]
        return t.reshape(s).transpose(-2, -1).contiguous()
    return t.reshape(src)


def max_rel(a, b):
    """max |a - b| / max |b|."""
    return float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30))
