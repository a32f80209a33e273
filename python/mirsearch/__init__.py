# SPDX-License-Identifier: MIT
"""mirsearch: the tensor-program superoptimizer from Python.

  import mirsearch
  p = mirsearch.Program.parse(open("examples/gated_mlp_small.graph").read())
  s = mirsearch.search(p, {"time_limit": 10})
  print(s.best.text, s.best_cost)
  print(s.best.cuda())

from_torch(fn, example_inputs) turns a PyTorch function or module into a
program (torch.fx); backend is a torch.compile backend (docs/PYTHON.md).
The torch- and onnx-dependent parts import those packages only when used."""

from .core import (Context, Error, Program, Search, Tensor, default_context, search,  # noqa: F401
                   version)
from ._lib import LibraryNotFound, library_path  # noqa: F401

__all__ = ["Context", "Error", "Program", "Search", "Tensor", "search", "version",
           "library_path", "LibraryNotFound", "from_torch", "backend", "make_backend", "import_onnx"]


def from_torch(fn, example_inputs, **kw):
    """A Program from a PyTorch function or nn.Module traced with torch.fx
    (see mirsearch.fx.from_torch)."""
    from .fx import from_torch as _f
    return _f(fn, example_inputs, **kw)


def backend(gm, example_inputs, **kw):
    """torch.compile backend: torch.compile(model, backend=mirsearch.backend)
    (see mirsearch.backend_impl)."""
    from .backend_impl import backend as _b
    return _b(gm, example_inputs, **kw)


def make_backend(**kw):
    """backend with keyword arguments fixed (mode, options, max_ops, ...)."""
    from .backend_impl import make_backend as _m
    return _m(**kw)


def import_onnx(path_or_model, **kw):
    """A Program from an ONNX model (see mirsearch.onnx_import)."""
    from .onnx_import import import_onnx as _i
    return _i(path_or_model, **kw)
