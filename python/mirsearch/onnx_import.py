# SPDX-License-Identifier: MIT
"""ONNX models to mirsearch programs (`mirsearch import MODEL.onnx -o P.graph`,
which runs `python3 -m mirsearch.onnx_import`).

The model is read with the `onnx` package (ONNX's own reader) and its
shapes inferred with onnx.shape_inference (_prepare: inputs given static
dims with --input-shape, constant subgraphs such as Shape/Gather/Concat
chains and Trilu masks computed here and made initializers, the
inference run again after each fold).  Each node maps to program ops;
patterns that exporters write out are matched first: RMSNorm
(x * 1/sqrt(mean(x^2) + eps): rms_norm(x, eps=e), or with a library whose
rms_norm has no eps, eps <= 1e-4 dropped), GELU (the erf form) and SiLU
(x * sigmoid(x)); an Add or Where of a constant causal mask is
causal_mask.  Reshape/Unsqueeze/Squeeze/Flatten and Transpose become
reshape and permute (or transpose) with resolved attributes; Split (a
fused QKV projection's) and Slice (constant bounds, steps of 1) become
slice ops.  Graph inputs and initializers become program
inputs through a binding (a transpose for Gemm's transB, leading 1s so
operands have equal rank) written as comments at the top of the .graph.
Scalar Constants feed only those patterns and Pow's exponent 2.  Every
node that has no equivalent is reported with its name and op type, all at
once; then nothing is written.

Exit status of the command: 0 written, 2 unsupported ops or a bad model,
3 an I/O error, 69 the onnx package is missing (the mirsearch program then
tries another Python)."""

import re
import sys

EPS_MAX = 1e-4
_KEYWORDS = {"program", "ugraph", "input", "output"}
ONNX_DTYPES = {1: "f32", 10: "f16", 16: "bf16"}


class ImportError_(Exception):
    """The model cannot be imported: .unsupported lists (node name, op type, why)."""

    def __init__(self, msg, unsupported=()):
        super().__init__(msg)
        self.unsupported = list(unsupported)


def ident(s):
    s = re.sub(r"[^A-Za-z0-9_]", "_", s).strip("_") or "t"
    if s[0].isdigit():
        s = "t_" + s
    if s in _KEYWORDS:
        s += "_"
    return s


def _have_op(name):
    try:
        from .fx import _have_op as h
        return h(name)
    except Exception:  # noqa: BLE001 - the library is optional for the importer
        return name in ("matmul", "add", "sub", "mul", "div", "exp", "square", "sqrt", "silu",
                        "gelu", "relu", "sum", "rms_norm")


class _Downstream(Exception):
    """A node reads a value that an unsupported node computes."""


class Binding:
    """Program input `name` = ONNX value `source` (a graph input or an
    initializer: kind), transposed (last two dims) when transpose, then
    reshaped to shape."""

    def __init__(self, name, source, kind, transpose, shape, dtype):
        self.name, self.source, self.kind = name, source, kind
        self.transpose, self.shape, self.dtype = transpose, tuple(shape), dtype

    def apply(self, value):
        """The program input from the ONNX value (a numpy array or tensor)."""
        if self.transpose:
            value = value.swapaxes(-1, -2) if hasattr(value, "swapaxes") else \
                value.transpose(-2, -1)
        return value.reshape(self.shape)

    def describe(self):
        return "%s = %s %s%s reshaped to %s" % (self.name, self.kind, self.source,
                                                ".T" if self.transpose else "", list(self.shape))


class Imported:
    """An imported program: .text (.graph), .bindings, .outputs (ONNX
    output name -> program name)."""

    def __init__(self, text, bindings, outputs, initializers):
        self.text, self.bindings, self.outputs = text, bindings, outputs
        self.initializers = initializers

    @property
    def program(self):
        from .core import Program
        return Program.parse(self.text, "imported.graph")


class _Importer:
    def __init__(self, model, name, shapes=None):
        import onnx
        from onnx import numpy_helper
        self.onnx = onnx
        model = _prepare(model, shapes)
        self.g = model.graph
        self.name = ident(name)
        self.init = {t.name: numpy_helper.to_array(t) for t in self.g.initializer}
        self.consts = {}
        self.info = {}
        for vi in list(self.g.input) + list(self.g.value_info) + list(self.g.output):
            tt = vi.type.tensor_type
            if tt.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
                self.info[vi.name] = (dims, ONNX_DTYPES.get(tt.elem_type))
        for k, v in self.init.items():
            self.info[k] = (list(v.shape), ONNX_DTYPES.get(onnx.helper.np_dtype_to_tensor_dtype(
                v.dtype) if hasattr(onnx.helper, "np_dtype_to_tensor_dtype") else
                onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype]))
        self.producer = {}
        self.uses = {}
        for n in self.g.node:
            for o in n.output:
                self.producer[o] = n
            for i in n.input:
                self.uses[i] = self.uses.get(i, 0) + 1
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
                    elif a.name == "value_float":
                        self.consts[n.output[0]] = a.f
        for o in self.g.output:
            self.uses[o.name] = self.uses.get(o.name, 0) + 1
        self.opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
                         or [13])
        self.output_names = {o.name for o in self.g.output}
        self.graph_inputs = {i.name for i in self.g.input if i.name not in self.init}
        self.lines, self.bindings, self.val = [], [], {}
        self.names = set()
        self.bad = []
        self.failed = set()  # values of unsupported nodes and of nodes after them
        self.downstream = 0
        self.absorbed = set()

    # -- constants
    def const(self, v):
        """The value of v as a numpy array where it is a constant (an
        initializer, a Constant, or folded from them), else None."""
        c = self.consts.get(v, self.init.get(v))
        if c is None:
            return None
        import numpy as np
        return np.asarray(c)

    def causal(self, keep, s):
        """Whether the constant boolean `keep` (True: kept) is the causal
        pattern of causal_mask(s): column j kept where j <= i + (n - m),
        the diagonal bottom-right, m x n the last two dims of s; the same
        for every leading index (size 1 or broadcast)."""
        import numpy as np
        ds = self.shape(s)
        if keep is None or ds is None or len(ds) < 2 or keep.ndim < 2 or keep.ndim > len(ds):
            return False
        m, n = ds[-2], ds[-1]
        if keep.shape[-2:] != (m, n) or keep.dtype != bool:
            return False
        want = np.tril(np.ones((m, n), dtype=bool), n - m)
        return all((f == want).all() for f in keep.reshape(-1, m, n))

    # -- helpers
    def scalar(self, v):
        """The value of a scalar constant input, or None."""
        c = self.consts.get(v, self.init.get(v))
        if c is None:
            return None
        try:
            import numpy as np
            a = np.asarray(c)
            return float(a.reshape(())) if a.size == 1 else None
        except (TypeError, ValueError):
            return None

    def attr(self, n, name, default=None):
        for a in n.attribute:
            if a.name == name:
                return self.onnx.helper.get_attribute_value(a)
        return default

    def fresh(self, base):
        nm = ident(base)
        cand, k = nm, 1
        while cand in self.names:
            cand = "%s_%d" % (nm, k)
            k += 1
        self.names.add(cand)
        return cand

    def shape(self, v):
        return self.info.get(v, (None, None))[0]

    def operand(self, v, rank=None, transpose=False):
        """Program name of ONNX value v as an operand of rank `rank`."""
        if v in self.failed:
            raise _Downstream(v)
        if v in self.val and not transpose and (rank is None or
                                                len(self.shape(v) or []) == rank):
            return self.val[v]
        if v in self.val or (v not in self.graph_inputs and v not in self.init):
            raise ValueError("value %s is an intermediate of rank %s where rank %s is needed"
                             % (v, len(self.shape(v) or []), rank))
        dims, dt = self.info.get(v, (None, None))
        if dims is None or any(d is None for d in dims) or dt is None:
            raise ValueError("input %s has no static shape (dynamic axes: give them with "
                             "--input-shape %s=D0,D1,...) or a dtype other than "
                             "float16/bfloat16/float32" % (v, v))
        dims = list(dims)
        if transpose:
            dims[-2], dims[-1] = dims[-1], dims[-2]
        if rank and len(dims) < rank:
            dims = [1] * (rank - len(dims)) + dims
        for b in self.bindings:
            if b.source == v and b.transpose == transpose and list(b.shape) == dims:
                return b.name
        nm = self.fresh(v + ("_t" if transpose else ""))
        self.bindings.append(Binding(nm, v, "initializer" if v in self.init else "input",
                                     transpose, dims, dt))
        if not transpose and (rank is None or len(self.shape(v)) == len(dims)):
            self.val.setdefault(v, nm)
        return nm

    def emit(self, out, text):
        nm = self.fresh(out)
        self.lines.append("%s = %s" % (nm, text))
        self.val[out] = nm
        return nm

    def prod(self, v, op_type):
        n = self.producer.get(v)
        return n if n is not None and n.op_type == op_type and self.uses.get(v, 0) == 1 else None

    # -- patterns
    def match_rms(self, n):
        """Mul(x, Div(1, Sqrt(Add(ReduceMean(Pow(x, 2)), eps)))) or
        Div(x, Sqrt(...)): x, the inner nodes and the eps attribute text
        (dropped where the library's rms_norm has none and eps <= EPS_MAX),
        or None."""
        if n.op_type == "Mul":
            cands = [(n.input[0], n.input[1]), (n.input[1], n.input[0])]
        elif n.op_type == "Div":
            cands = [(n.input[0], n.input[1])]
        else:
            return None
        for x, r in cands:
            inner = []
            if n.op_type == "Mul":
                d = self.prod(r, "Div") or self.prod(r, "Reciprocal")
                if d is None:
                    continue
                if d.op_type == "Div" and self.scalar(d.input[0]) != 1.0:
                    continue
                inner.append(d)
                sq = self.prod(d.input[-1], "Sqrt")
            else:
                sq = self.prod(r, "Sqrt")
            if sq is None:
                continue
            add = self.prod(sq.input[0], "Add")
            if add is None:
                continue
            mean, eps = add.input
            if self.scalar(mean) is not None:
                mean, eps = eps, mean
            e = self.scalar(eps)
            rm = self.prod(mean, "ReduceMean")
            if e is None or not 0 <= e or not (e <= EPS_MAX or _rms_eps()) or rm is None:
                continue
            axes = self.attr(rm, "axes") or ([int(a) for a in self.init.get(rm.input[1], [])]
                                             if len(rm.input) > 1 else None)
            rank = len(self.shape(x) or [])
            if not axes or len(axes) != 1 or axes[0] not in (-1, rank - 1) or \
                    self.attr(rm, "keepdims", 1) != 1:
                continue
            pw = self.prod(rm.input[0], "Pow")
            mul = self.prod(rm.input[0], "Mul")
            if pw is not None and (pw.input[0] != x or self.scalar(pw.input[1]) != 2.0):
                continue
            if pw is None and (mul is None or mul.input[0] != x or mul.input[1] != x):
                continue
            inner += [sq, add, rm, pw or mul]
            return x, inner, (", eps=" + _lit(e) if e and _rms_eps() else "")
        return None

    def match_gelu(self, n):
        """Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) (either order)."""
        if n.op_type != "Mul":
            return None
        for a, h in ((n.input[0], n.input[1]), (n.input[1], n.input[0])):
            if self.scalar(h) != 0.5:
                continue
            m = self.prod(a, "Mul")
            if m is None:
                continue
            for x, s in ((m.input[0], m.input[1]), (m.input[1], m.input[0])):
                add = self.prod(s, "Add")
                if add is None:
                    continue
                erf_v = add.input[0] if self.scalar(add.input[1]) == 1.0 else add.input[1]
                if self.scalar(add.input[0] if erf_v == add.input[1] else add.input[1]) != 1.0:
                    continue
                erf = self.prod(erf_v, "Erf")
                if erf is None:
                    continue
                div = self.prod(erf.input[0], "Div")
                if div is None or div.input[0] != x or \
                        abs((self.scalar(div.input[1]) or 0) - 2 ** 0.5) > 1e-4:
                    continue
                return x, [m, add, erf, div]
        return None

    def match_silu(self, n):
        if n.op_type != "Mul":
            return None
        for x, s in ((n.input[0], n.input[1]), (n.input[1], n.input[0])):
            sg = self.prod(s, "Sigmoid")
            if sg is not None and sg.input[0] == x:
                return x, [sg]
        return None

    # -- the walk
    def convert(self):
        roots = {}
        for n in reversed(list(self.g.node)):
            if id(n) in self.absorbed:
                continue
            for kind, m in (("rms_norm", self.match_rms), ("gelu", self.match_gelu),
                            ("silu", self.match_silu)):
                r = m(n)
                if r:
                    roots[id(n)] = (kind, r[0], r[2] if len(r) > 2 else "")
                    self.absorbed.update(id(k) for k in r[1])
                    break
        for n in self.g.node:
            if n.op_type == "Constant" or id(n) in self.absorbed:
                continue
            label = n.name or "(unnamed %s)" % n.op_type
            try:
                for i in n.input:
                    if i in self.failed:  # (not "unknown shape": named as after them)
                        raise _Downstream(i)
                if id(n) in roots:
                    kind, x, attrs = roots[id(n)]
                    self.emit(n.output[0], "%s(%s%s)" % (kind, self.operand(x), attrs))
                else:
                    self.node(n)
            except ValueError as e:
                self.bad.append((label, n.op_type, str(e)))
                self.failed.update(n.output)
            except _Downstream:
                self.downstream += 1
                self.failed.update(n.output)
        if self.bad:
            raise ImportError_("unsupported ONNX nodes: " + "; ".join(
                "node %s (%s): %s" % b for b in self.bad) +
                ("; %d supported nodes after them not converted" % self.downstream
                 if self.downstream else ""), self.bad)
        outs = []
        for o in self.g.output:
            if o.name not in self.val:
                raise ImportError_("output %s is not computed by a supported node" % o.name)
            v = self.val[o.name]
            if v in {b.name for b in self.bindings} or v in [w for _o, w in outs]:
                # An input passed through (Identity, a no-op Reshape), or a
                # second output of one value: a program output is a
                # tensor that an op defines, once.
                v = self.emit(o.name + "_copy", "reshape(%s, shape=[%s])" % (
                    v, ", ".join(map(str, self.shape(o.name)))))
            outs.append((o.name, v))
        head = ["# imported from ONNX by mirsearch import; program inputs:"]
        head += ["#   " + b.describe() for b in self.bindings]
        head.append("program %s" % self.name)
        head += ["input %s : %s%s" % (b.name, b.dtype, list(b.shape)) for b in self.bindings]
        text = "\n".join(head + self.lines + ["output %s" % v for _o, v in outs]) + "\n"
        return Imported(text, self.bindings, outs, self.init)

    def node(self, n):
        t = n.op_type
        out = n.output[0]
        rank = len(self.shape(out) or [])
        if t == "Add" and self.add_mask(n):
            pass
        elif t in ("Add", "Sub", "Mul", "Div"):
            consts = [self.scalar(i) if i not in self.graph_inputs else None for i in n.input]
            if any(c is not None for c in consts):
                if not _have_op("mul_scalar"):
                    raise ValueError("%s with a constant operand (programs have no constants)"
                                     % t)
                if all(c is not None for c in consts) or any(
                        c is not None and (c != c or abs(c) == float("inf")) for c in consts):
                    raise ValueError("%s of constants, or with an infinite constant" % t)
            a, b = (_lit(c) if c is not None else self.operand(i, rank)
                    for i, c in zip(n.input, consts))
            self.emit(out, "%s(%s, %s)" % (t.lower(), a, b))
        elif t == "MatMul":
            a, b = (self.operand(i, rank) for i in n.input)
            self.emit(out, "matmul(%s, %s)" % (a, b))
        elif t == "Gemm":
            if self.attr(n, "transA", 0) or self.attr(n, "alpha", 1.0) != 1.0 or \
                    self.attr(n, "beta", 1.0) != 1.0:
                raise ValueError("Gemm with transA, alpha or beta")
            a = self.operand(n.input[0], 2)
            b = self.operand(n.input[1], 2, transpose=bool(self.attr(n, "transB", 0)))
            if len(n.input) > 2 and n.input[2]:
                mm = self.emit(out + "_mm", "matmul(%s, %s)" % (a, b))
                self.emit(out, "add(%s, %s)" % (mm, self.operand(n.input[2], 2)))
            else:
                self.emit(out, "matmul(%s, %s)" % (a, b))
        elif t in ("Exp", "Sqrt", "Relu", "Sigmoid", "Tanh", "Neg", "Abs") and _have_op(t.lower()):
            self.emit(out, "%s(%s)" % (t.lower(), self.operand(n.input[0])))
        elif t == "Pow":
            e = self.scalar(n.input[1])
            if e == 2.0:
                self.emit(out, "square(%s)" % self.operand(n.input[0]))
            elif e is not None and _have_op("pow"):
                self.emit(out, "pow(%s, %s)" % (self.operand(n.input[0]), _lit(e)))
            else:
                raise ValueError("Pow with an exponent other than 2 (or no pow operator)")
        elif t == "Clip" and _have_op("clamp"):
            lo = self.scalar(n.input[1]) if len(n.input) > 1 and n.input[1] else None
            hi = self.scalar(n.input[2]) if len(n.input) > 2 and n.input[2] else None
            if lo is None or hi is None or lo > hi:
                raise ValueError("Clip without both constant bounds")
            self.emit(out, "clamp(%s, %s, %s)" % (self.operand(n.input[0]), _lit(lo), _lit(hi)))
        elif t in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
            op = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max",
                  "ReduceMin": "min"}[t]
            via_sum = op == "mean" and not _have_op("mean") and _have_op("mul_scalar")
            if op != "sum" and not _have_op(op) and not via_sum:
                raise ValueError("%s: the operator %s has not landed in this mirsearch" % (t, op))
            axes = self.attr(n, "axes")
            if axes is None and len(n.input) > 1:
                axes = [int(a) for a in self.init.get(n.input[1], self.consts.get(n.input[1], []))]
            if not axes or len(axes) != 1 or self.attr(n, "keepdims", 1) != 1:
                raise ValueError("%s over other than one axis with keepdims=1" % t)
            x = self.operand(n.input[0])
            if via_sum:  # mean = sum / n
                dims = self.shape(n.input[0])
                s = self.emit(out + "_sum", "sum(%s, dim=%d)" % (x, axes[0]))
                self.emit(out, "div(%s, %s)" % (s, _lit(dims[axes[0]])))
            else:
                self.emit(out, "%s(%s, dim=%d)" % (op, x, axes[0]))
        elif t == "Softmax" and (_have_op("softmax") or _have_op("max")):
            x = self.operand(n.input[0])
            ax = self.attr(n, "axis", -1 if self.opset >= 13 else 1)
            if self.opset < 13 and ax not in (-1, rank - 1):
                # Before opset 13, Softmax normalizes over all dims from axis on.
                raise ValueError("Softmax (opset %d) over other than the last axis" % self.opset)
            if _have_op("softmax"):
                self.emit(out, "softmax(%s, dim=%d)" % (x, ax))
            else:  # the safe softmax: exp(x - max) / sum
                m = self.emit(out + "_max", "max(%s, dim=%d)" % (x, ax))
                d = self.emit(out + "_shift", "sub(%s, %s)" % (x, m))
                e = self.emit(out + "_exp", "exp(%s)" % d)
                s = self.emit(out + "_sum", "sum(%s, dim=%d)" % (e, ax))
                self.emit(out, "div(%s, %s)" % (e, s))
        elif t == "LayerNormalization" and _have_op("layer_norm"):
            ax = self.attr(n, "axis", -1)
            if ax not in (-1, rank - 1):
                raise ValueError("LayerNormalization over other than the last axis")
            x = self.operand(n.input[0])
            cur = self.emit(out + "_ln", "layer_norm(%s, eps=%s)"
                            % (x, _lit(self.attr(n, "epsilon", 1e-5))))
            if len(n.input) > 1 and n.input[1]:
                cur = self.emit(out + "_w", "mul(%s, %s)" % (cur, self.operand(n.input[1], rank)))
            if len(n.input) > 2 and n.input[2]:
                cur = self.emit(out + "_b", "add(%s, %s)" % (cur, self.operand(n.input[2], rank)))
            self.val[out] = cur
        elif t in ("Identity", "Dropout") or (t == "Cast" and self.info.get(
                n.input[0], (None, None))[1] is not None and
                ONNX_DTYPES.get(self.attr(n, "to")) == self.info[n.input[0]][1]):
            if t == "Dropout" and (len(n.input) > 2 and n.input[2] and
                                   self.scalar(n.input[2]) != 0.0):
                raise ValueError("Dropout in training mode")
            self.val[out] = self.operand(n.input[0])
        elif t in ("Reshape", "Unsqueeze", "Squeeze", "Flatten"):
            self.reshape(n, t)
        elif t == "Transpose":
            self.transpose(n)
        elif t in ("SimplifiedLayerNormalization", "RMSNormalization"):
            # x / sqrt(mean(x^2, last axis) + epsilon) * scale: rms_norm
            # with eps (ONNX Runtime's fused form, ONNX's opset 23 op).
            ax = self.attr(n, "axis", -1)
            xs = self.shape(n.input[0])
            if xs is None or ax not in (-1, len(xs) - 1):
                raise ValueError("%s over other than the last axis" % t)
            if len(n.output) > 1 and any(n.output[1:]):
                raise ValueError("%s with its inverse std-dev output" % t)
            eps = self.attr(n, "epsilon", 1e-5)
            x = self.operand(n.input[0])
            if not _rms_eps():
                raise ValueError("%s: this library's rms_norm has no eps" % t)
            r = self.emit(out + "_rms", "rms_norm(%s%s)" % (x, ", eps=" + _lit(eps) if eps
                                                            else ""))
            self.emit(out, "mul(%s, %s)" % (r, self.operand(n.input[1], len(xs))))
        elif t == "Where":
            self.where(n)
        elif t == "Split":
            self.split(n)
        elif t == "Slice":
            self.slice(n)
        else:
            raise ValueError("no mirsearch equivalent")

    # -- layout and masks
    def reshape(self, n, t):
        """Reshape (constant shape: 0 copies the input's dim unless
        allowzero, -1 is inferred), Unsqueeze, Squeeze, Flatten: a reshape
        to the resolved shape (nothing where it is the input's)."""
        import numpy as np
        xs = self.shape(n.input[0])
        if xs is None or any(d is None for d in xs):
            raise ValueError("%s of a value of unknown shape" % t)
        numel = int(np.prod(xs, dtype=np.int64))
        if t == "Reshape":
            sh = self.const(n.input[1])
            if sh is None:
                raise ValueError("Reshape to a shape that is not a constant")
            sh = [int(d) for d in sh.reshape(-1)]
            if not self.attr(n, "allowzero", 0):
                sh = [xs[i] if d == 0 and i < len(xs) else d for i, d in enumerate(sh)]
            if sh.count(-1) > 1 or any(d < -1 for d in sh):
                raise ValueError("Reshape to %s" % sh)
            if -1 in sh:
                rest = int(np.prod([d for d in sh if d != -1], dtype=np.int64))
                if rest == 0 or numel % rest:
                    raise ValueError("Reshape of %s to %s" % (xs, sh))
                sh[sh.index(-1)] = numel // rest
        elif t == "Flatten":
            ax = self.attr(n, "axis", 1)
            ax = ax + len(xs) if ax < 0 else ax
            sh = [int(np.prod(xs[:ax], dtype=np.int64)), int(np.prod(xs[ax:], dtype=np.int64))]
        else:
            axes = self.attr(n, "axes")
            if axes is None and len(n.input) > 1 and n.input[1]:
                a = self.const(n.input[1])
                if a is None:
                    raise ValueError("%s with axes that are not a constant" % t)
                axes = [int(d) for d in a.reshape(-1)]
            if t == "Unsqueeze":
                r = len(xs) + len(axes or [])
                axes = sorted(a + r if a < 0 else a for a in axes or [])
                sh = list(xs)
                for a in axes:
                    sh.insert(a, 1)
            else:
                axes = {a + len(xs) if a < 0 else a for a in axes} if axes else \
                    {i for i, d in enumerate(xs) if d == 1}
                if any(xs[a] != 1 for a in axes):
                    raise ValueError("Squeeze of a dim that is not 1")
                sh = [d for i, d in enumerate(xs) if i not in axes]
        if int(np.prod(sh, dtype=np.int64)) != numel or not sh:
            raise ValueError("%s of %s to %s" % (t, xs, sh))
        x = self.operand(n.input[0])
        if list(sh) == list(xs):
            self.val[n.output[0]] = x
            return
        if not _have_op("reshape"):
            raise ValueError("%s: this library has no reshape operator" % t)
        self.info[n.output[0]] = (list(sh), self.info.get(n.input[0], (None, None))[1])
        self.emit(n.output[0], "reshape(%s, shape=[%s])" % (x, ", ".join(map(str, sh))))

    def _static_shape(self, n, t):
        xs = self.shape(n.input[0])
        if xs is None or any(d is None for d in xs):
            raise ValueError("%s of a value of unknown shape" % t)
        if not _have_op("slice"):
            raise ValueError("%s: this library has no slice operator" % t)
        return list(xs)

    def _ints(self, n, i, what):
        """The constant integer input i of n as a list (None when absent)."""
        if len(n.input) <= i or not n.input[i]:
            return None
        c = self.const(n.input[i])
        if c is None:
            raise ValueError("%s with %s that are not constants" % (n.op_type, what))
        return [int(v) for v in c.reshape(-1)]

    def split(self, n):
        """Split along axis into the sizes of _split_sizes: a slice per
        output that is read (a fused QKV projection's)."""
        xs = self._static_shape(n, "Split")
        ax = self.attr(n, "axis", 0)
        ax = ax + len(xs) if ax < 0 else ax
        if not 0 <= ax < len(xs):
            raise ValueError("Split over axis %d of a rank-%d value" % (ax, len(xs)))
        sizes = self.attr(n, "split")
        sizes = self._ints(n, 1, "split sizes") if sizes is None else [int(s) for s in sizes]
        sizes = _split_sizes(self.opset, xs[ax], len(n.output), sizes,
                             self.attr(n, "num_outputs"))
        x = self.operand(n.input[0])
        start = 0
        for o, size in zip(n.output, sizes):
            sh = list(xs)
            sh[ax] = size
            self.info[o] = (sh, self.info.get(n.input[0], (None, None))[1])
            if size == xs[ax]:
                self.val[o] = x
            elif self.uses.get(o, 0):
                if not size:
                    raise ValueError("Split output %s is empty and read (a program has no empty "
                                     "tensors)" % o)
                self.emit(o, "slice(%s, dim=%d, start=%d, len=%d)" % (x, ax, start, size))
            start += size

    def slice(self, n):
        """Slice with constant starts, ends and axes and steps of 1 (bounds
        clamped as ONNX does): a slice per axis that narrows."""
        xs = self._static_shape(n, "Slice")
        if self.opset < 10:
            starts, ends = self.attr(n, "starts"), self.attr(n, "ends")
            axes, steps = self.attr(n, "axes"), None
        else:
            starts, ends = self._ints(n, 1, "starts"), self._ints(n, 2, "ends")
            axes, steps = self._ints(n, 3, "axes"), self._ints(n, 4, "steps")
        if starts is None or ends is None or len(starts) != len(ends):
            raise ValueError("Slice without constant starts and ends")
        axes = list(range(len(starts))) if axes is None else list(axes)
        if steps is not None and any(s != 1 for s in steps):
            raise ValueError("Slice with steps %s (only steps of 1 map to slice)" % list(steps))
        if len(axes) != len(starts) or (steps is not None and len(steps) != len(starts)):
            raise ValueError("Slice with %d starts and ends, %d axes, %s steps"
                             % (len(starts), len(axes), len(steps or starts)))
        if any(not -len(xs) <= a < len(xs) for a in axes) or \
                len({a % len(xs) for a in axes}) != len(axes):
            raise ValueError("Slice over axes %s of a rank-%d value" % (axes, len(xs)))
        cur, sh = self.operand(n.input[0]), list(xs)
        cuts = []
        for a, s, e in zip(axes, starts, ends):
            a = a + len(xs) if a < 0 else a
            d = xs[a]
            s, e = (min(max(v + d if v < 0 else v, 0), d) for v in (s, e))
            if e <= s:
                raise ValueError("Slice to an empty range of axis %d" % a)
            if (s, e) != (0, d):
                cuts.append((a, s, e - s))
                sh[a] = e - s
        out = n.output[0]
        self.info[out] = (sh, self.info.get(n.input[0], (None, None))[1])
        for i, (a, s, ln) in enumerate(cuts):
            cur = self.emit(out if i == len(cuts) - 1 else "%s_%d" % (out, a),
                            "slice(%s, dim=%d, start=%d, len=%d)" % (cur, a, s, ln))
        self.val[out] = cur

    def transpose(self, n):
        """Transpose(perm): nothing for the identity, transpose for the last
        two dims, else permute."""
        xs = self.shape(n.input[0])
        if xs is None:
            raise ValueError("Transpose of a value of unknown rank")
        r = len(xs)
        perm = [int(p) for p in (self.attr(n, "perm") or list(range(r))[::-1])]
        if sorted(perm) != list(range(r)):
            raise ValueError("Transpose with perm %s" % perm)
        x = self.operand(n.input[0])
        if perm == list(range(r)):
            self.val[n.output[0]] = x
        elif r >= 2 and perm == list(range(r - 2)) + [r - 1, r - 2] and _have_op("transpose"):
            self.emit(n.output[0], "transpose(%s)" % x)
        elif _have_op("permute"):
            self.emit(n.output[0], "permute(%s, dims=[%s])" % (x, ", ".join(map(str, perm))))
        else:
            raise ValueError("Transpose other than of the last two dims (this library has "
                             "no permute)")

    def mask_ok(self, out, fill):
        """Whether masked entries of value `fill` (a number or array) may
        stand for -inf: -inf itself, or a large negative number (the
        dtype's lowest, as Hugging Face writes masks) where the masked
        scores feed only a Softmax over the last axis."""
        import numpy as np
        f = np.asarray(fill)
        if f.size and np.isneginf(f).all():
            return True
        users = [m for m in self.g.node if out in m.input]
        return bool(f.size) and bool((f <= -65504.0).all()) and len(users) == 1 and \
            users[0].op_type == "Softmax" and self.attr(users[0], "axis", -1) in (
                -1, len(self.shape(out) or []) - 1) and out not in self.output_names

    def add_mask(self, n):
        """Add(s, M) with M a constant causal mask: causal_mask(s); True when
        emitted."""
        import numpy as np
        for s_, m in ((n.input[0], n.input[1]), (n.input[1], n.input[0])):
            c = self.const(m)
            if c is None or c.ndim < 2 or self.const(s_) is not None or not _have_op(
                    "causal_mask"):
                continue
            keep = c == 0
            if not self.causal(keep, s_) or not self.mask_ok(n.output[0],
                                                                              c[~keep]):
                continue
            if np.asarray(c).shape[-2:] != tuple(self.shape(n.output[0])[-2:]):
                continue
            self.emit(n.output[0], "causal_mask(%s)" % self.operand(s_))
            return True
        return False

    def where(self, n):
        """Where(C, s, fill) (or Where(not C, fill, s)) with C the constant
        causal pattern and fill -inf: causal_mask(s)."""
        c = self.const(n.input[0])
        if c is None or not _have_op("causal_mask"):
            raise ValueError("Where other than a constant causal mask")
        c = c.astype(bool)
        for s_, fill, cond in ((n.input[1], n.input[2], c), (n.input[2], n.input[1], ~c)):
            f = self.const(fill)
            if f is None or self.const(s_) is not None or not self.mask_ok(n.output[0], f):
                continue
            if self.causal(cond, s_) and \
                    list(self.shape(s_) or []) == list(self.shape(n.output[0]) or [None]):
                self.emit(n.output[0], "causal_mask(%s)" % self.operand(s_))
                return
        raise ValueError("Where other than a constant causal mask")


# ONNX Runtime's fused ops that ONNX's shape inference does not know: their
# output 0 has input 0's shape and dtype.
_SAME_SHAPE = {"SimplifiedLayerNormalization", "RMSNormalization",
               "SkipSimplifiedLayerNormalization"}


def _split_sizes(opset, size, k, sizes, num_outputs):
    """The part sizes of an ONNX Split of `size` elements into k outputs,
    as the spec says: the given sizes (the `split` input, opset 13 on, or
    attribute), each >= 0 and summing to size; else opset 18's
    num_outputs (equal to k): parts of ceil(size / num_outputs), the last
    smaller, what remains (ONNX's shape inference: 9 into 4 gives 3, 3,
    3, 0; 5 into 4 leaves -1, refused); else, before opset 18, k equal
    parts (refused where k does not divide size; opset 18 needs one of
    the two).  An empty part is refused where it is read (Split).
    Raises ValueError saying which rule failed."""
    if num_outputs is not None:
        if opset < 18:
            raise ValueError("Split with num_outputs, an opset-18 attribute, in an opset-%d "
                             "model" % opset)
        if sizes is not None:
            raise ValueError("Split with both split sizes and num_outputs")
        if num_outputs != k:
            raise ValueError("Split with num_outputs=%d and %d outputs" % (num_outputs, k))
        part = -(-size // k)
        last = size - part * (k - 1)
        if last < 0:
            raise ValueError("Split of %d elements into num_outputs=%d: parts of %d (the spec's "
                             "ceil(%d / %d)) leave %d for the last one"
                             % (size, k, part, size, k, last))
        return [part] * (k - 1) + [last]
    if sizes is None:
        if opset >= 18:
            raise ValueError("Split (opset %d) with neither split sizes nor num_outputs" % opset)
        if size % k:
            raise ValueError("Split of %d elements into %d equal parts (before opset 18 they "
                             "must divide: give sizes, or opset 18's num_outputs)" % (size, k))
        return [size // k] * k
    if len(sizes) != k or sum(sizes) != size or min(sizes) < 0:
        raise ValueError("Split of %d elements into %s" % (size, sizes))
    return list(sizes)


def _declare_split_shapes(model):
    """Declare the output shapes of the Splits whose input has a static
    shape and whose outputs ONNX's inference left without one (an onnx
    before 1.13 reads opset 18's num_outputs as an unknown attribute);
    the number declared."""
    from onnx import numpy_helper
    g = model.graph
    opset = max([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] or [13])
    vis = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        vis.setdefault(vi.name, vi)

    def dims(name):
        vi = vis.get(name)
        tt = vi.type.tensor_type if vi is not None else None
        if tt is None or not tt.HasField("shape") or \
                not all(d.HasField("dim_value") for d in tt.shape.dim):
            return None
        return [d.dim_value for d in tt.shape.dim]
    inits = {t.name: t for t in g.initializer}
    added = 0
    for n in g.node:
        xs = dims(n.input[0]) if n.op_type == "Split" and n.input else None
        if xs is None or all(dims(o) is not None for o in n.output if o):
            continue
        ax = _Attrs.attr(n, "axis", 0)
        ax = ax + len(xs) if ax < 0 else ax
        sizes = _Attrs.attr(n, "split")
        if sizes is None and len(n.input) > 1 and n.input[1]:
            if n.input[1] not in inits:
                continue
            sizes = numpy_helper.to_array(inits[n.input[1]]).reshape(-1).tolist()
        try:
            sizes = _split_sizes(opset, xs[ax], len(n.output), sizes,
                                 _Attrs.attr(n, "num_outputs"))
        except (ValueError, IndexError):
            continue  # (the importer says why)
        for o, size in zip(n.output, sizes):
            if not o or dims(o) is not None:
                continue
            vi = vis.get(o)
            if vi is None:
                vi = g.value_info.add()
                vi.name = o
                vis[o] = vi
            vi.type.tensor_type.elem_type = vis[n.input[0]].type.tensor_type.elem_type
            vi.type.tensor_type.ClearField("shape")
            for i, d in enumerate(xs):
                vi.type.tensor_type.shape.dim.add().dim_value = size if i == ax else d
            added += 1
    return added


def _infer_shapes(model):
    """model with its shapes inferred by ONNX; where an op ONNX does not
    know (_SAME_SHAPE) stops the inference, its output's shape is declared
    and the inference run again, so the ops after it have shapes too."""
    import onnx
    for _ in range(16):
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - shapes may still be declared
            return model
        g = model.graph
        known = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)
                 if vi.type.tensor_type.HasField("shape")}
        added = _declare_split_shapes(model)
        for n in g.node:
            if n.op_type in _SAME_SHAPE and n.input[0] in known and n.output[0] not in known:
                vi = onnx.ValueInfoProto()
                vi.CopyFrom(known[n.input[0]])
                vi.name = n.output[0]
                g.value_info.append(vi)
                added += 1
        if not added:
            return model
    return model


class _Attrs:
    """attr(node, name, default) for the constant folding outside an importer."""

    @staticmethod
    def attr(n, name, default=None):
        import onnx
        for a in n.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default


def _fix_input_shapes(m, shapes):
    """Give the graph inputs named in shapes ({name: [d0, ...]}) those
    static dims (a model exported with dynamic axes); the shapes of the
    values after them are then inferred again (declared ones dropped)."""
    g = m.graph
    inputs = {i.name: i for i in g.input}
    for name, dims in shapes.items():
        if name not in inputs:
            raise ImportError_("--input-shape %s: the model has no input %s (its inputs: %s)"
                               % (name, name, ", ".join(inputs) or "none"))
        tt = inputs[name].type.tensor_type
        if tt.HasField("shape") and len(tt.shape.dim) != len(dims):
            raise ImportError_("--input-shape %s: rank %d, the model's input has rank %d"
                               % (name, len(dims), len(tt.shape.dim)))
        tt.ClearField("shape")
        for d in dims:
            tt.shape.dim.add().dim_value = int(d)
    del g.value_info[:]
    for o in g.output:
        o.type.tensor_type.ClearField("shape")


def _prepare(model, shapes=None):
    """A copy of model with its shapes inferred and the nodes of
    _fold_table whose inputs are all constants computed at import (the
    shapes exporters build with Shape/Gather/Concat, the causal masks they
    build with Trilu/Where): each becomes an initializer (a tensor that an
    op reads is then a program input like a weight), and the inference runs
    again, so a Reshape to a computed shape has its result's shape."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    if shapes:
        _fix_input_shapes(m, shapes)
    fold = _fold_table()
    # The declared shapes that stay true when constants are folded: those
    # without symbolic dims (an inferred one may hold a symbol that the
    # folding then resolves: each pass infers from these again).
    base = [vi for vi in m.graph.value_info if all(
        d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    for _ in range(64):
        del m.graph.value_info[:]
        m.graph.value_info.extend(base)
        m = _infer_shapes(m)
        g = m.graph
        consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for n in g.node:
            if n.op_type == "Constant" and n.attribute:
                a = n.attribute[0]
                v = onnx.helper.get_attribute_value(a)
                consts[n.output[0]] = numpy_helper.to_array(v) if a.name == "value" else \
                    np.asarray(v, dtype=np.float32 if a.name.startswith("value_float")
                               else np.int64)
        dims = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            tt = vi.type.tensor_type
            if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
                dims[vi.name] = [d.dim_value for d in tt.shape.dim]
        outputs = {o.name for o in g.output}
        done = []
        for n in g.node:
            if n.op_type not in fold or outputs & set(n.output) or len(n.output) != 1:
                continue
            if n.op_type == "Shape":
                if n.input[0] not in dims:
                    continue
                vals = [np.asarray(dims[n.input[0]][_Attrs.attr(n, "start", 0):
                                                    _Attrs.attr(n, "end", None)],
                                   dtype=np.int64)]
            else:
                vals = [consts.get(i) if i else None for i in n.input]
                if any(i and v is None for i, v in zip(n.input, vals)):
                    continue
            try:
                out = np.asarray(fold[n.op_type](_Attrs, n, vals) if fold[n.op_type]
                                 else vals[0])
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            consts[n.output[0]] = out
            done.append((n, out))
        if not done:
            return m
        for n, out in done:
            g.node.remove(n)
            g.initializer.append(numpy_helper.from_array(out, n.output[0]))
    return m


def _rms_eps():
    """Whether the loaded library's rms_norm takes an eps."""
    try:
        from .fx import rules
        return rules().rms_eps
    except Exception:  # noqa: BLE001 - without torch: probe the parser directly
        try:
            from .fx import _parses
            return _parses("program p\ninput x : f32[2, 4]\ny = rms_norm(x, eps=0.001)\n"
                           "output y\n")
        except Exception:  # noqa: BLE001 - no library: assume an old one
            return False


def _np_dtype(to):
    import numpy as np
    return {1: np.float32, 10: np.float16, 11: np.float64, 6: np.int32, 7: np.int64,
            9: np.bool_}[to]


def _fold_unsqueeze(imp, n, v):
    import numpy as np
    axes = imp.attr(n, "axes")
    if axes is None:
        axes = [int(a) for a in v[1].reshape(-1)]
    x = v[0]
    r = x.ndim + len(axes)
    for a in sorted(a + r if a < 0 else a for a in axes):
        x = np.expand_dims(x, a)
    return x


def _fold_div(a, b):
    import numpy as np
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        return (np.trunc(a / b)).astype(np.result_type(a, b))
    return a / b


def _fold_range():
    import numpy as np
    return lambda imp, n, v: np.arange(v[0].reshape(()), v[1].reshape(()), v[2].reshape(()))


def _fold_table():
    """ONNX ops computed at import from constant inputs: f(importer, node,
    input values) -> value."""
    import numpy as np

    def trilu(imp, n, v):
        k = int(v[1].reshape(())) if len(v) > 1 and v[1] is not None else 0
        return np.triu(v[0], k) if imp.attr(n, "upper", 1) else np.tril(v[0], k)

    def cofs(imp, n, v):
        val = imp.attr(n, "value")
        from onnx import numpy_helper
        fill = numpy_helper.to_array(val).reshape(-1)[0] if val is not None else \
            np.float32(0)
        return np.full([int(d) for d in v[0]], fill, dtype=np.asarray(fill).dtype)

    return {
        "Shape": None,  # from the inferred shapes (_prepare)
        "Trilu": trilu,
        "Where": lambda imp, n, v: np.where(v[0].astype(bool), v[1], v[2]),
        "Cast": lambda imp, n, v: v[0].astype(_np_dtype(imp.attr(n, "to"))),
        "ConstantOfShape": cofs,
        "Expand": lambda imp, n, v: v[0] * np.ones([int(d) for d in v[1]], dtype=v[0].dtype),
        "Equal": lambda imp, n, v: np.equal(v[0], v[1]),
        "Not": lambda imp, n, v: np.logical_not(v[0]),
        "Gather": lambda imp, n, v: np.take(v[0], v[1], axis=imp.attr(n, "axis", 0)),
        "Unsqueeze": _fold_unsqueeze,
        "Concat": lambda imp, n, v: np.concatenate(v, axis=imp.attr(n, "axis", 0)),
        "Range": _fold_range(),
        "Add": lambda imp, n, v: v[0] + v[1],
        "Sub": lambda imp, n, v: v[0] - v[1],
        "Mul": lambda imp, n, v: v[0] * v[1],
        "Div": lambda imp, n, v: _fold_div(v[0], v[1]),
    }


def _lit(v):
    """A number literal as the .graph format writes it: exact, except that
    a float32 constant (the exporters' eps, 1e-6 as float32) is written as
    the shortest decimal that is the same float32 (1e-06), not as its
    float64 expansion (9.999999974752427e-07)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e15:
        return repr(int(v))
    try:
        import numpy as np
        f = np.float32(v)
        if float(f) == v and np.isfinite(f):
            return np.format_float_positional(f, unique=True, trim="-") \
                if 1e-4 <= abs(v) < 1e15 else np.format_float_scientific(f, unique=True,
                                                                          trim="-")
    except ImportError:
        pass
    return repr(v)


def import_onnx(model, name=None, shapes=None):
    """An Imported program from an ONNX model (a path or a ModelProto).
    shapes: {input name: [d0, ...]}, static dims for inputs exported with
    dynamic axes (a program has static shapes)."""
    import onnx
    if isinstance(model, str):
        name = name or re.sub(r"\.onnx$", "", model.rsplit("/", 1)[-1])
        model = onnx.load(model)
    return _Importer(model, name or model.graph.name or "model", shapes).convert()


def _shape_arg(text):
    """NAME=D0,D1,... (an --input-shape) as (name, [dims])."""
    import argparse
    name, _, dims = text.partition("=")
    try:
        out = [int(d) for d in dims.split(",")]
        if not name or any(d < 1 for d in out):
            raise ValueError(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not NAME=D0,D1,... with dims >= 1" % text)
    return name, out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="mirsearch import",
                                 description="Import an ONNX model as a mirsearch program.")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", help="the .graph to write (default: stdout)")
    ap.add_argument("--name", help="program name (default: the file's)")
    ap.add_argument("--input-shape", type=_shape_arg, action="append", default=[],
                    metavar="NAME=D0,D1,...",
                    help="static dims for an input exported with dynamic axes (repeatable)")
    a = ap.parse_args(argv)
    # Messages follow the compiler convention the rest of mirsearch uses
    # for its input files ("FILE: error: ..."; the model is binary, so no
    # line and column), one line per problem, so editors and scripts can
    # pick them up; trouble that is not the model's is "mirsearch: error:".
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("mirsearch: error: the Python package onnx is not installed for %s "
              "(apt-get install python3-onnx, or pip install onnx)" % sys.executable,
              file=sys.stderr)
        return 69
    try:
        imp = import_onnx(a.model, a.name, dict(a.input_shape) or None)
    except ImportError_ as e:
        for b in e.unsupported:
            print("%s: error: node %s (%s): %s" % ((a.model,) + tuple(b)), file=sys.stderr)
        tail = str(e).rsplit("; ", 1)[-1]
        if e.unsupported and tail.endswith("not converted"):
            print("%s: note: %s" % (a.model, tail), file=sys.stderr)
        if not e.unsupported:
            print("%s: error: %s" % (a.model, e), file=sys.stderr)
        return 2
    except OSError as e:
        print("mirsearch: error: %s" % e, file=sys.stderr)
        return 3
    except Exception as e:  # noqa: BLE001 - a malformed model: say so, exit 2
        print("%s: error: not a readable ONNX model: %s" % (a.model, e), file=sys.stderr)
        return 2
    if a.output:
        try:
            from .cache import write_atomic
            write_atomic(a.output, imp.text)
        except OSError as e:
            print("mirsearch: error: cannot write %s: %s" % (a.output, e), file=sys.stderr)
            return 3
    else:
        sys.stdout.write(imp.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
