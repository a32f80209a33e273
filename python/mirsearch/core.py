# SPDX-License-Identifier: MIT
"""Programs, searches and generated code over libmirsearch (ctypes).

Ownership mirrors the C API: a Program (a mirs_graph) and a Search keep a
reference to the Context they were made from, so the context is released
last; a result graph of a search is copied out (parsed from its canonical
text) so it outlives the search.  Every failing call raises Error with the
status name, the context's message and its diagnostics."""

import ctypes
import json

from . import _lib

DTYPES = {"f16": 0, "bf16": 1, "f32": 2}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
MAX_DIMS = 6


class Error(Exception):
    """A libmirsearch call failed: .status is its status name ("PARSE", ...)."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status
        self.message = message


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class Context:
    """A mirs_context with its options.  options: a dict name -> value
    (values are given to mirs_option_set as text)."""

    def __init__(self, options=None, quiet=False):
        self._L = _lib.lib()
        h = ctypes.c_void_p()
        if self._L.mirs_context_create(ctypes.byref(h)) != 0:
            raise MemoryError("mirs_context_create failed")
        self._h = h
        self._log = []
        if quiet:
            # Keep the library's messages (diagnostics are read back from
            # the context) instead of writing them to stderr.
            def sink(_user, _level, message):
                self._log.append(_s(message))
            self._sink = _lib.LOG_FN(sink)
            self._L.mirs_set_log_callback(h, self._sink, None)
        for k, v in (options or {}).items():
            self.set(k, v)

    @property
    def handle(self):
        return self._h

    def close(self):
        """Release the context (its programs and searches must be gone)."""
        if getattr(self, "_h", None):
            # The log callback may be called while the context is destroyed
            # (a leak warning): put back the default first, since the ctypes
            # trampoline can be collected before this object at exit.
            self._L.mirs_set_log_callback(self._h, _lib.LOG_FN(), None)
            self._L.mirs_context_destroy(self._h)
            self._h = None

    def __del__(self):
        if not getattr(self, "_keep", False):
            self.close()

    @property
    def closed(self):
        return not getattr(self, "_h", None)

    def fail(self, status, what=""):
        """Raise Error for status, with the context's message."""
        msg = _s(self._L.mirs_last_error(self._h)) or ""
        n = self._L.mirs_diag_count(self._h)
        diags = [_s(self._L.mirs_diag_message(self._h, i)) for i in range(n)]
        extra = [d for d in diags if d not in msg]
        if extra:
            msg = msg + ("\n" if msg else "") + "\n".join(extra)
        self._L.mirs_clear_error(self._h)
        name = _s(self._L.mirs_status_name(status))
        raise Error(name, (what + ": " if what else "") + msg)

    def check(self, status, what=""):
        if status != 0:
            self.fail(status, what)

    def set(self, name, value):
        """Set option name (mirsearch --help lists them)."""
        if isinstance(value, bool):
            value = "true" if value else "false"
        self.check(self._L.mirs_option_set(self._h, name.encode(), str(value).encode()),
                   "option " + name)

    def get(self, name):
        buf = ctypes.create_string_buffer(4096)
        self.check(self._L.mirs_option_get(self._h, name.encode(), buf, len(buf)),
                   "option " + name)
        return _s(buf.value)

    def take_string(self, ptr):
        """Copy a library-allocated string and release it."""
        try:
            return _s(ctypes.string_at(ptr.value)) if ptr.value else ""
        finally:
            if ptr.value:
                self._L.mirs_free(self._h, ptr)

    def gpu_count(self):
        n = ctypes.c_int(0)
        if self._L.mirs_gpu_device_count(self._h, ctypes.byref(n)) != 0:
            self._L.mirs_clear_error(self._h)
            return 0
        return n.value


_default = None


def default_context():
    """A context shared by calls that are given none (quiet: messages are
    kept, errors raise with them)."""
    global _default
    if _default is None:
        _default = Context(quiet=True)
        _default._keep = True  # lives until the process ends: never destroyed at exit
    return _default


class Tensor:
    """A tensor of a Program: .name, .dtype ("f16"...), .shape (a tuple)."""

    def __init__(self, program, tid):
        self.program, self.id = program, tid

    @property
    def name(self):
        return _s(self.program._L.mirs_tensor_name(self.program._h, self.id))

    @property
    def dtype(self):
        return DTYPE_NAMES[self.program._L.mirs_tensor_dtype(self.program._h, self.id)]

    @property
    def shape(self):
        dims = (ctypes.c_int64 * MAX_DIMS)()
        n = self.program._L.mirs_tensor_shape(self.program._h, self.id, dims)
        return tuple(dims[i] for i in range(n))

    def __repr__(self):
        return "%s %s%s" % (self.name, self.dtype, list(self.shape))


class Program:
    """A program or µGraph (mirs_graph).  Build one with input()/op()/
    sum()/output(), or parse one with Program.parse(text) / load(path)."""

    def __init__(self, name=None, ctx=None, _handle=None):
        self.ctx = ctx or default_context()
        self._L = self.ctx._L
        if _handle is not None:
            self._h = _handle
            return
        h = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_graph_create(self.ctx.handle,
                                                 name.encode() if name else None,
                                                 ctypes.byref(h)), "create")
        self._h = h

    @classmethod
    def parse(cls, text, filename="<string>", ctx=None):
        ctx = ctx or default_context()
        data = text.encode()
        h = ctypes.c_void_p()
        ctx.check(ctx._L.mirs_graph_parse_string(ctx.handle, data, len(data), filename.encode(),
                                                 ctypes.byref(h)), "parse " + filename)
        return cls(ctx=ctx, _handle=h)

    @classmethod
    def load(cls, path, ctx=None):
        ctx = ctx or default_context()
        h = ctypes.c_void_p()
        ctx.check(ctx._L.mirs_graph_parse_file(ctx.handle, str(path).encode(), ctypes.byref(h)),
                  "load " + str(path))
        return cls(ctx=ctx, _handle=h)

    def close(self):
        if getattr(self, "_h", None):
            if not self.ctx.closed:
                self._L.mirs_graph_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()

    # -- building
    def input(self, name, dtype, shape):
        dims = (ctypes.c_int64 * len(shape))(*shape)
        t = ctypes.c_int32()
        if dtype not in DTYPES:
            raise ValueError("unknown dtype %r (f16, bf16, f32)" % (dtype,))
        self.ctx.check(self._L.mirs_graph_add_input(self._h, name.encode(), DTYPES[dtype],
                                                    len(shape), dims, ctypes.byref(t)),
                       "input " + name)
        return Tensor(self, t.value)

    def op(self, opname, *args, name=None):
        code = ctypes.c_int(0)
        if self._L.mirs_op_lookup(opname.encode(), ctypes.byref(code)) != 0:
            raise Error("NOT_FOUND", "unknown operator '%s'" % opname)
        ins = (ctypes.c_int32 * len(args))(*[a.id for a in args])
        t = ctypes.c_int32()
        self.ctx.check(self._L.mirs_graph_add_op(self._h, name.encode() if name else None,
                                                 code.value, len(args), ins, ctypes.byref(t)),
                       opname)
        return Tensor(self, t.value)

    def sum(self, x, dim, name=None):
        t = ctypes.c_int32()
        self.ctx.check(self._L.mirs_graph_add_sum(self._h, name.encode() if name else None,
                                                  x.id, dim, ctypes.byref(t)), "sum")
        return Tensor(self, t.value)

    def output(self, t):
        self.ctx.check(self._L.mirs_graph_mark_output(self._h, t.id), "output")

    # -- queries
    @property
    def name(self):
        return _s(self._L.mirs_graph_name(self._h))

    @property
    def handle(self):
        return self._h

    def tensor(self, name):
        t = self._L.mirs_graph_find(self._h, name.encode())
        if t < 0:
            raise KeyError(name)
        return Tensor(self, t)

    @property
    def inputs(self):
        return [Tensor(self, t) for t in range(self._L.mirs_graph_num_tensors(self._h))
                if self._L.mirs_tensor_producer(self._h, t) < 0]

    @property
    def outputs(self):
        return [Tensor(self, self._L.mirs_graph_output(self._h, i))
                for i in range(self._L.mirs_graph_num_outputs(self._h))]

    @property
    def num_ops(self):
        return self._L.mirs_graph_num_ops(self._h)

    @property
    def num_custom(self):
        return self._L.mirs_graph_num_custom(self._h)

    @property
    def text(self):
        """Canonical text (.graph or µGraph): parsed again it prints the same."""
        p = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_graph_to_string(self._h, ctypes.byref(p)), "print")
        return self.ctx.take_string(p)

    def __str__(self):
        return self.text

    @property
    def hash(self):
        """Canonical 64-bit hash (independent of op order and intermediate names)."""
        return self._L.mirs_graph_hash(self._h)

    def validate(self):
        self.ctx.check(self._L.mirs_graph_validate(self._h), "validate")

    def write(self, path):
        self.ctx.check(self._L.mirs_graph_write_file(self._h, str(path).encode()), "write")

    # -- evaluation and code
    def eval(self, seed=0):
        """float64 interpreter on the seeded inputs (input_values gives them):
        a dict output name -> (shape, list of floats)."""
        r = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_graph_eval(self._h, seed, ctypes.byref(r)), "eval")
        try:
            return _eval_outputs(self._L, r)
        finally:
            self._L.mirs_eval_result_destroy(r)

    def input_values(self, seed=0):
        """The seeded inputs eval uses: a dict input name -> (shape, list of floats)."""
        out = {}
        for t in self.inputs:
            n = 1
            for d in t.shape:
                n *= d
            nm = t.name.encode()
            out[t.name] = (t.shape, [self._L.mirs_input_value(seed, nm, i) for i in range(n)])
        return out

    def cuda(self, entry=None):
        """CUDA C of this graph (mirs_codegen_cuda)."""
        p = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_codegen_cuda(self._h, entry.encode() if entry else None,
                                                 ctypes.byref(p)), "codegen")
        return self.ctx.take_string(p)

    def header(self, entry=None):
        """The C header of the same entry point."""
        p = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_codegen_header(self._h, entry.encode() if entry else None,
                                                   ctypes.byref(p)), "codegen header")
        return self.ctx.take_string(p)

    def run_host(self, seed=0):
        """Compile the generated code as host C++ (emulated GPU) and run it on
        the seeded inputs: (outputs as eval gives them, max relative error
        against the float64 interpreter)."""
        r = ctypes.c_void_p()
        err = ctypes.c_double()
        self.ctx.check(self._L.mirs_codegen_run(self._h, seed, 0, ctypes.byref(r),
                                                ctypes.byref(err)), "run")
        try:
            return _eval_outputs(self._L, r), err.value
        finally:
            self._L.mirs_eval_result_destroy(r)

    @property
    def tolerance(self):
        return self._L.mirs_codegen_tolerance(self._h)


def _eval_outputs(L, r):
    out = {}
    for i in range(L.mirs_eval_num_outputs(r)):
        dims = (ctypes.c_int64 * MAX_DIMS)()
        nd = L.mirs_eval_output_shape(r, i, dims)
        n = ctypes.c_int64()
        vals = L.mirs_eval_output_values(r, i, ctypes.byref(n))
        out[_s(L.mirs_eval_output_name(r, i))] = (tuple(dims[k] for k in range(nd)),
                                                   vals[:n.value])
    return out


class Search:
    """A search of program under the context's options (one run).  After
    run(): .results (Programs, best first), .costs (predicted seconds),
    .best, .report (the report.json dict), .complete."""

    def __init__(self, program, ctx=None):
        self.ctx = ctx or program.ctx
        self._L = self.ctx._L
        self.program = program
        h = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_search_create(self.ctx.handle, program.handle,
                                                  ctypes.byref(h)), "search")
        self._h = h
        self.results, self.costs, self.report = [], [], None

    def run(self, top=16):
        self.ctx.check(self._L.mirs_search_run(self._h), "search")
        n = self._L.mirs_search_num_results(self._h)
        self.results, self.costs = [], []
        for i in range(n):
            g = ctypes.c_void_p(self._L.mirs_search_result(self._h, i))
            p = ctypes.c_void_p()
            self.ctx.check(self._L.mirs_graph_to_string(g, ctypes.byref(p)), "result")
            if i < top or top <= 0:
                self.results.append(Program.parse(self.ctx.take_string(p), "result", self.ctx))
            else:
                self.ctx.take_string(p)
                continue
            self.costs.append(self._L.mirs_search_result_cost(self._h, i))
        p = ctypes.c_void_p()
        ln = ctypes.c_size_t()
        self.ctx.check(self._L.mirs_search_report_json(self._h, top, ctypes.byref(p),
                                                       ctypes.byref(ln)), "report")
        self.report = json.loads(self.ctx.take_string(p))
        self.complete = not self._L.mirs_search_stopped(self._h)
        self.stop_reason = _s(self._L.mirs_search_stop_reason(self._h))
        return self

    @property
    def best(self):
        return self.results[0] if self.results else None

    @property
    def best_cost(self):
        return self.costs[0] if self.costs else float("inf")

    def close(self):
        if getattr(self, "_h", None):
            if not self.ctx.closed:
                self._L.mirs_search_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()


def search(program, options=None, top=16, ctx=None):
    """Search program (a Program or .graph text) with options (a dict of
    mirsearch options, e.g. {"time_limit": 10, "threads": 2}) in a fresh
    context: the finished Search."""
    c = ctx or Context(options=options, quiet=True)
    if ctx is not None:
        for k, v in (options or {}).items():
            c.set(k, v)
    if isinstance(program, str):
        program = Program.parse(program, ctx=c)
    elif program.ctx is not c:
        program = Program.parse(program.text, ctx=c)
    return Search(program, c).run(top=top)


def version():
    return _s(_lib.lib().mirs_version_string())
