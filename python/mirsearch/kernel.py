# SPDX-License-Identifier: MIT
"""Generated kernels as Python callables on torch tensors.

A Kernel wraps the CUDA C that mirs_codegen_cuda wrote for one µGraph:
  - "cuda": compiled with torch.utils.cpp_extension.load_inline (nvcc), the
    entry point called on the current stream with device tensors;
  - "host": compiled as host C++ through the project's GPU emulator
    (-DMIRS_HOST_EMULATION, the same path as `mirsearch run`) into a shared
    library, called through ctypes on CPU tensors.  It exists to test the
    whole path without a GPU: the emulator is slow and single-threaded.
Compiled objects are kept under the cache directory, named by a hash of
the source, so a second use of the same code compiles nothing.

Invariants: tensors handed to the entry point are contiguous, of the
graph's dtype and element count (any shape: the entry reads the buffer in
row-major order), 16-byte aligned (copied when not), and outputs are
fresh tensors (the contract forbids overlap)."""

import ctypes
import hashlib
import math
import os
import subprocess
import tempfile

from . import cache as _cache
from .core import Error

TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}


def _torch_dtype(name):
    import torch
    return getattr(torch, TORCH_DTYPES[name])


def _aligned(t):
    t = t.contiguous()
    if t.data_ptr() % 16:
        t = t.clone()
    return t


class _Signature:
    """Inputs and outputs of a µGraph: names, dtypes and shapes."""

    def __init__(self, graph):
        self.inputs = [(t.name, t.dtype, t.shape) for t in graph.inputs]
        self.outputs = [(t.name, t.dtype, t.shape) for t in graph.outputs]


def _entry_name(graph):
    return "mirs_k%016x" % graph.hash


def _compile_host(src, entry, cache_dir, emu_header, cxx):
    key = hashlib.sha256(src.encode()).hexdigest()[:24]
    d = os.path.join(cache_dir, "host")
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, "%s-%s.so" % (entry, key))
    if os.path.exists(so):
        return so, False
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        with open(os.path.join(tmp, "k.cu"), "w") as f:
            f.write(src)
        with open(os.path.join(tmp, "mirsearch_emu.h"), "w") as f:
            f.write(emu_header)
        out = os.path.join(tmp, "k.so")
        cmd = [cxx, "-std=c++14", "-O1", "-DMIRS_HOST_EMULATION", "-fPIC", "-shared",
               "-I" + tmp, "-x", "c++", os.path.join(tmp, "k.cu"), "-x", "none", "-o", out, "-lm"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise Error("INTERNAL", "the generated code does not compile with %s:\n%s"
                        % (cxx, "\n".join(r.stderr.splitlines()[:20])))
        os.replace(out, so)  # atomic: a concurrent compile of the same code is harmless
    return so, True


class Kernel:
    """The generated code of one µGraph, callable on torch tensors given in
    the graph's input order; returns the outputs in its output order.
    mode: "host" or "cuda"."""

    def __init__(self, graph, mode, cache_dir=None):
        self.sig = _Signature(graph)
        self.mode = mode
        self.entry = _entry_name(graph)
        self.graph_text = graph.text
        src = graph.cuda(self.entry)
        cache_dir = cache_dir or _cache.default_dir()
        self.compiled = False
        # Per input: torch dtype, shape, element count (__call__'s checks).
        self._in_specs = [(_torch_dtype(dt), tuple(shape), math.prod(shape))
                          for _n, dt, shape in self.sig.inputs]
        if mode == "host":
            emu = graph._L.mirs_codegen_emulation_header().decode()
            cxx = graph.ctx.get("codegen_cxx") or "c++"
            path, self.compiled = _compile_host(src, self.entry, cache_dir, emu, cxx)
            self._so = ctypes.CDLL(path)
            fn = getattr(self._so, self.entry)
            n = len(self.sig.inputs) + len(self.sig.outputs)
            fn.argtypes = [ctypes.c_void_p] * (n + 1) + [ctypes.c_size_t, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            self._fn = fn
            ws = getattr(self._so, self.entry + "_workspace_bytes")
            ws.restype = ctypes.c_size_t
            self._ws = ws()
            st = getattr(self._so, self.entry + "_status_string")
            st.restype = ctypes.c_char_p
            st.argtypes = [ctypes.c_int]
            self._status = st
        elif mode == "cuda":
            self._mod = _load_cuda(src, self.entry, self.sig, cache_dir)
        else:
            raise ValueError("Kernel mode must be 'host' or 'cuda', not %r" % (mode,))

    def __call__(self, *args):
        import torch
        if len(args) != len(self.sig.inputs):
            raise TypeError("kernel %s takes %d tensors, got %d"
                            % (self.entry, len(self.sig.inputs), len(args)))
        ins = []
        for a, (dt, shape, numel) in zip(args, self._in_specs):
            # The entry point reads a dense buffer: a tensor already of the
            # dtype, contiguous, aligned and of the element count is that
            # buffer in row-major order whatever its shape (the reshape
            # would be a view of it), so it is passed as it is, four
            # attribute reads instead of three dispatched ops.
            if not (a.dtype is dt and a.is_contiguous() and a.numel() == numel and
                    a.data_ptr() % 16 == 0):
                if tuple(a.shape) != shape:
                    a = a.reshape(shape)
                a = _aligned(a.to(dt))
            ins.append(a)
        if self.mode == "cuda":
            return tuple(self._mod.run(ins))
        outs = [torch.empty(shape, dtype=_torch_dtype(dt)) for _n, dt, shape in self.sig.outputs]
        ws = torch.empty(max(self._ws, 16), dtype=torch.uint8) if self._ws else None
        ptrs = [t.data_ptr() for t in ins + outs]
        rc = self._fn(*ptrs, ws.data_ptr() if ws is not None else None, self._ws, None)
        if rc != 0:
            raise Error("INTERNAL", "%s: %s" % (self.entry, self._status(rc).decode()))
        return tuple(outs)


def cuda_wrapper(entry, sig):
    """The C++ source of the extension's run(inputs): it allocates the
    outputs and a workspace and calls entry on the current stream."""
    nin, nout = len(sig.inputs), len(sig.outputs)
    decl = "extern \"C\" int %s(%s, void *, size_t, void *);\n" % (
        entry, ", ".join(["const void *"] * nin + ["void *"] * nout))
    decl += "extern \"C\" size_t %s_workspace_bytes(void);\n" % entry
    decl += "extern \"C\" const char *%s_status_string(int);\n" % entry
    shapes = []
    for _n, dt, shape in sig.outputs:
        st = {"f16": "at::kHalf", "bf16": "at::kBFloat16", "f32": "at::kFloat"}[dt]
        shapes.append("  outs.push_back(at::empty({%s}, ins[0].options().dtype(%s)));"
                      % (", ".join(str(d) for d in shape), st))
    args = ["ins[%d].data_ptr()" % i for i in range(nin)]
    args += ["outs[%d].data_ptr()" % i for i in range(nout)]
    cpp = ("#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
           "#include <c10/cuda/CUDAGuard.h>\n" + decl +
           "std::vector<at::Tensor> run(std::vector<at::Tensor> ins) {\n"
           "  const at::cuda::OptionalCUDAGuard guard(ins[0].device());\n"
           "  std::vector<at::Tensor> outs;\n" + "\n".join(shapes) + "\n"
           "  size_t wsb = %s_workspace_bytes();\n"
           "  at::Tensor ws = at::empty({(int64_t)(wsb ? wsb : 16)},"
           " ins[0].options().dtype(at::kByte));\n"
           "  int rc = %s(%s, wsb ? ws.data_ptr() : nullptr, wsb,"
           " (void *)at::cuda::getCurrentCUDAStream().stream());\n"
           "  TORCH_CHECK(rc == 0, \"%s: \", %s_status_string(rc));\n"
           "  return outs;\n}\n") % (entry, entry, ", ".join(args), entry, entry)
    return cpp


def _load_cuda(src, entry, sig, cache_dir):
    """Compile src with nvcc through load_inline (the module's run)."""
    from torch.utils.cpp_extension import load_inline
    cpp = cuda_wrapper(entry, sig)
    key = hashlib.sha256((src + cpp).encode()).hexdigest()[:16]
    build = os.path.join(cache_dir, "cuda", "%s_%s" % (entry, key))
    os.makedirs(build, exist_ok=True)
    return load_inline(name="%s_%s" % (entry, key), cpp_sources=[cpp], cuda_sources=[src],
                       functions=["run"], build_directory=build, verbose=False)
