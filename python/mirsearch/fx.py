# SPDX-License-Identifier: MIT
"""torch.fx graphs to mirsearch programs.

Each call node of an fx graph is classified: a *rule* (below) says how it
becomes program ops, or it is unsupported (kept as PyTorch code by the
backend; named by from_torch).  Patterns that span several nodes (an
RMSNorm written out as pow/mean/add/rsqrt/mul) are matched first: their
inner nodes are absorbed into the node that ends the pattern, which then
emits one op (rms_norm; causal_mask, also from a constant mask buffer).

trace() records every value's shape and dtype on the example inputs; a
program has static shapes, so the sizes the graph computes from shapes
become numbers, and reshapes, permutes and slices (the layout ops) are
written with the recorded shapes: a getitem of split/chunk/unbind/
tensor_split (a fused QKV projection's parts) is a slice of the split's
input, the split itself absorbed.  The backend's Analysis (layout=False)
keeps those as PyTorch code, where they are views.  A constant is a value no input's
value flows into, except inputs the caller pins (module buffers that
Dynamo hands in as inputs, which the backend checks at call time).

A program's inputs are the values a piece reads from outside, each through
a *binding*: the fx value, then a transpose of its last two dims (a
Linear's weight [out, in] becomes the [in, out] a matmul takes) and a
reshape (leading 1s, so operands have equal rank as the program format
requires).  Constant parameters are bound once at compile time; runtime
values on each call.

Invariants: a program built here parses (it is validated by the library);
every fx value a piece produces keeps its torch shape as a program tensor,
so outputs need no reshape; a piece holds one dtype."""

import builtins
import math
import operator
import os
import re

from .core import Program, default_context

DTYPE_OF = {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32"}
# The largest eps an RMSNorm pattern may drop where the library's rms_norm
# takes none (before rms_norm(x, eps=e)); with one, every eps is kept.
EPS_MAX = 1e-4
# Whether add(s, triu(full_like(s, -inf), 1)) becomes causal_mask(s) where
# the library has it; MIRSEARCH_CAUSAL_MASK=0 keeps such masks PyTorch code
# (needs a library whose generated code keeps -inf through max and sub:
# main from f9979fc on; at 97bfec1 it returned NaN).
USE_CAUSAL_MASK = os.environ.get("MIRSEARCH_CAUSAL_MASK", "1") != "0"


class Unsupported(Exception):
    """Nodes that have no program equivalent: .nodes lists (name, what, why)."""

    def __init__(self, nodes):
        self.nodes = nodes
        super().__init__("unsupported by mirsearch: " + "; ".join(
            "node %s (%s): %s" % n for n in nodes))


def _have_op(name):
    import ctypes
    L = default_context()._L
    code = ctypes.c_int(0)
    return L.mirs_op_lookup(name.encode(), ctypes.byref(code)) == 0


def _parses(text):
    """Whether the loaded library parses the program text (a feature probe:
    an attribute a library from before it refuses)."""
    from .core import Error
    try:
        Program.parse(text, "probe.graph")
        return True
    except Error:
        return False


def node_desc(n):
    """What a node calls, readably: torch.matmul, method 'view', module Linear..."""
    if n.op == "call_function":
        t = n.target
        mod = getattr(t, "__module__", None) or ""
        return "%s%s" % (mod + "." if mod and mod != "_operator" else "operator.",
                         getattr(t, "__name__", str(t)))
    if n.op == "call_method":
        return "method '%s'" % n.target
    if n.op == "call_module":
        return "module %s" % n.target
    return n.op


def meta_of(n):
    """(shape, dtype name) of node n's value, or None when not a tensor."""
    tm = n.meta.get("tensor_meta") if hasattr(n, "meta") else None
    if tm is not None and hasattr(tm, "shape"):
        return tuple(int(d) for d in tm.shape), DTYPE_OF.get(str(tm.dtype))
    ev = n.meta.get("example_value") if hasattr(n, "meta") else None
    if ev is not None and hasattr(ev, "shape") and hasattr(ev, "dtype"):
        try:
            return tuple(int(d) for d in ev.shape), DTYPE_OF.get(str(ev.dtype))
        except TypeError:
            return None
    return None


# ---------------------------------------------------------------- rules
#
# A rule is rule(conv, node) -> list of operand specs and an emitter, or
# raises Skip(why).  conv.arg(x) resolves an argument.

class Skip(Exception):
    pass


def _is_node(x):
    return hasattr(x, "op") and hasattr(x, "users")


def _targets(*names):
    import torch
    F = torch.nn.functional
    out = set()
    for nm in names:
        for holder in (torch, F, operator, torch.Tensor):
            f = getattr(holder, nm, None)
            if f is not None:
                out.add(f)
    return out


class Rules:
    """Which fx targets map to which program op, built once per process
    (after torch is imported); ops the library lacks are left out."""

    def __init__(self):
        import torch
        F = torch.nn.functional
        self.binary = {}
        for op, names in (("add", ("add", "__add__")), ("sub", ("sub", "__sub__")),
                          ("mul", ("mul", "__mul__")), ("div", ("div", "truediv", "__truediv__"))):
            for t in _targets(*names):
                self.binary[t] = op
        self.binary_methods = {"add": "add", "sub": "sub", "mul": "mul", "div": "div",
                               "__add__": "add", "__sub__": "sub", "__mul__": "mul",
                               "__truediv__": "div"}
        self.unary = {}
        for op, fns in (("exp", (torch.exp,)), ("sqrt", (torch.sqrt,)),
                        ("square", (torch.square,)), ("silu", (F.silu,)),
                        ("relu", (F.relu, torch.relu)), ("gelu", (F.gelu,)),
                        ("neg", (torch.neg, operator.neg)), ("sigmoid", (torch.sigmoid,)),
                        ("tanh", (torch.tanh,)),
                        ("abs", (torch.abs, operator.abs, builtins.abs))):
            if _have_op(op):
                for f in fns:
                    self.unary[f] = op
        self.unary_methods = {m: op for m, op in (
            ("exp", "exp"), ("sqrt", "sqrt"), ("square", "square"), ("relu", "relu"),
            ("neg", "neg"), ("sigmoid", "sigmoid"), ("tanh", "tanh"), ("abs", "abs"),
            ("__abs__", "abs")) if _have_op(op)}
        self.unary_modules = {torch.nn.SiLU: "silu", torch.nn.ReLU: "relu"}
        if _have_op("sigmoid"):
            self.unary_modules[torch.nn.Sigmoid] = "sigmoid"
        if _have_op("tanh"):
            self.unary_modules[torch.nn.Tanh] = "tanh"
        self.matmul = {torch.matmul, torch.bmm, torch.mm, operator.matmul}
        self.matmul_methods = {"matmul", "bmm", "mm", "__matmul__"}
        self.addmm = {torch.addmm, torch.baddbmm}
        self.linear = {F.linear}
        self.sum = {torch.sum}
        self.pow = {torch.pow, operator.pow}
        self.rsqrt = {torch.rsqrt}
        self.mean = {torch.mean}
        self.has_transpose = _have_op("transpose")
        self.scalars = _have_op("mul_scalar")  # number literals as operands
        self.has_max = _have_op("max")
        self.has_min = _have_op("min")
        # max/min over one dim: amax, amin, and the values of torch.max/min(x, dim)
        # (a (values, indices) pair: its indices have no mirsearch equivalent).
        self.amax, self.amin = _targets("amax"), _targets("amin")
        self.minmax = {torch.max: "max", torch.min: "min"}
        self.has_pow = _have_op("pow")
        self.has_clamp = _have_op("clamp")
        self.has_mask = _have_op("causal_mask") and USE_CAUSAL_MASK
        self.has_mean = _have_op("mean")
        self.has_layer_norm = _have_op("layer_norm")
        self.softmax = {torch.softmax, F.softmax}
        self.transpose = {torch.transpose} | _targets("swapaxes", "swapdims")
        self.clamp = {torch.clamp, torch.clip}
        # Layout: reshape(x, shape=[...]) and permute(x, dims=[...]), where
        # the library has them; rms_norm(x, eps=e) where it takes an eps.
        self.has_layout = _have_op("reshape") and _have_op("permute")
        self.rms_eps = _parses("program p\ninput x : f32[2, 4]\n"
                               "y = rms_norm(x, eps=0.001)\noutput y\n")
        self.reshape = {torch.reshape, torch.flatten, torch.unsqueeze, torch.squeeze}
        self.reshape_methods = {"view", "reshape", "flatten", "unsqueeze", "squeeze",
                                "view_as", "reshape_as", "unflatten"}
        self.permute = {torch.permute} if hasattr(torch, "permute") else set()
        # slice(x, dim=, start=, len=): basic indexing (x[..., a:b]),
        # narrow, and the parts of split/chunk/unbind/tensor_split (a fused
        # QKV projection's), where the library has it.
        self.has_slice = _have_op("slice") and self.has_layout
        self.split = _targets("split", "chunk", "unbind", "split_with_sizes", "tensor_split")
        self.split_methods = {"split", "chunk", "unbind", "split_with_sizes", "tensor_split"}
        self.narrow = _targets("narrow")
        # Identities: a contiguous copy, and a dtype conversion to the dtype
        # the value already has (checked against the recorded dtypes).
        self.identity_methods = {"contiguous", "to", "type_as", "float", "half", "bfloat16",
                                 "double", "clone", "detach"}
        self.identity = {torch.clone, torch.detach} if hasattr(torch, "detach") else {torch.clone}
        self.sdpa = getattr(F, "scaled_dot_product_attention", None)
        # F.rms_norm, and torch.rms_norm (what Dynamo records for nn.RMSNorm)
        self.rms_norm_fns = {f for f in (getattr(F, "rms_norm", None),
                                         getattr(torch, "rms_norm", None)) if f is not None}
        self.rms_norm_module = getattr(torch.nn, "RMSNorm", None)


_rules = None


def rules():
    global _rules
    if _rules is None:
        _rules = Rules()
    return _rules


def _scalar(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# Calls whose result is finite whatever infinities their input holds.
_FINITE = {"softmax", "log_softmax", "exp", "sigmoid", "tanh", "nan_to_num", "isinf",
           "isfinite", "isnan"}


def _finite_output(n):
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    return n.op in ("call_function", "call_method") and name in _FINITE


def torch_fx_map(args, fn):
    """Call fn on every leaf of an fx argument structure."""
    if isinstance(args, (list, tuple)):
        for a in args:
            torch_fx_map(a, fn)
    elif isinstance(args, dict):
        for a in args.values():
            torch_fx_map(a, fn)
    else:
        fn(args)


def _finite(x):
    return _scalar(x) and x == x and abs(x) != float("inf")


def _arg(n, i, kw, default=None):
    if len(n.args) > i:
        return n.args[i]
    return n.kwargs.get(kw, default)


def _module(gm, n):
    return gm.get_submodule(n.target) if n.op == "call_module" else None


class Op:
    """One emitted program op: kind, operand values (fx nodes) with the
    binding each needs if it becomes a program input, attributes."""

    def __init__(self, kind, operands, dim=None, attrs=None, keep_rank=False):
        self.kind = kind  # None: an identity (the operand's value, no op)
        self.operands = operands  # list of (node or ParamRef, transpose: bool)
        self.dim = dim
        self.attrs = attrs  # extra "name=value" text (layer_norm's eps, reshape's shape)
        # A layout op reads its operand at the operand's own rank (no
        # leading 1s added to match the result's rank).
        self.keep_rank = keep_rank


class Lit:
    """A number literal operand (a program constant, where the library has
    them: `mul(S, 0.25)`); finite, printed exactly (repr of the float)."""

    def __init__(self, value):
        self.value = value
        self.text = repr(int(value)) if float(value).is_integer() and abs(value) < 1e15 \
            else repr(float(value))


class Ref:
    """An operand that is the output of op `index` of the same node's list."""

    def __init__(self, index):
        self.index = index


class ParamRef:
    """A module parameter read by a call_module node (nn.Linear's weight):
    a constant that becomes a program input."""

    def __init__(self, module_node, attr, tensor):
        self.module_node, self.attr, self.tensor = module_node, attr, tensor
        self.name = "%s.%s" % (module_node.target, attr)

    def __eq__(self, o):
        return isinstance(o, ParamRef) and o.name == self.name

    def __hash__(self):
        return hash(self.name)


def _classify_call(gm, n, R):
    """The ops node n becomes (a list of Op; the last one's value is n's),
    or raise Skip(why)."""
    import torch
    F = torch.nn.functional
    t = n.target
    mod = _module(gm, n)
    if n.op == "call_module":
        if isinstance(mod, torch.nn.Linear):
            ops = [Op("matmul", [(n.args[0], False), (ParamRef(n, "weight", mod.weight), True)])]
            if mod.bias is not None:
                ops.append(Op("add", [(None, False), (ParamRef(n, "bias", mod.bias), False)]))
            return ops
        for cls, op in R.unary_modules.items():
            if isinstance(mod, cls):
                return [Op(op, [(n.args[0], False)])]
        if isinstance(mod, torch.nn.GELU):
            approx = getattr(mod, "approximate", "none")
            return [Op("gelu", [(n.args[0], False)])] if approx == "none" else \
                _gelu_tanh(R, n.args[0], approx)
        if R.rms_norm_module is not None and isinstance(mod, R.rms_norm_module):
            return _rms_norm_call(R, n.args[0], mod.normalized_shape, mod.eps,
                                  ParamRef(n, "weight", mod.weight) if mod.weight is not None
                                  else None)
        if isinstance(mod, (torch.nn.Flatten, getattr(torch.nn, "Unflatten", torch.nn.Flatten))):
            return _reshape(R, n, n.args[0])
        if isinstance(mod, torch.nn.Identity) or (isinstance(mod, torch.nn.Dropout) and
                                                  not mod.training):
            return [Op(None, [(n.args[0], False)])]
        if isinstance(mod, torch.nn.Softmax) and R.has_max and isinstance(mod.dim, int):
            return _softmax_ops((n.args[0], False), 0, mod.dim)
        if isinstance(mod, torch.nn.LayerNorm):
            return _layer_norm(R, n.args[0], mod.normalized_shape, mod.eps,
                               ParamRef(n, "weight", mod.weight) if mod.weight is not None
                               else None,
                               ParamRef(n, "bias", mod.bias) if mod.bias is not None else None)
        raise Skip("module %s has no mirsearch equivalent" % type(mod).__name__)
    is_fn = n.op == "call_function"
    is_m = n.op == "call_method"
    if (is_fn and t in R.linear):
        w, b = _arg(n, 1, "weight"), _arg(n, 2, "bias")
        ops = [Op("matmul", [(n.args[0], False), (w, True)])]
        if b is not None:
            ops.append(Op("add", [(None, False), (b, False)]))
        return ops
    if (is_fn and t in R.addmm) or (is_m and t in ("addmm", "baddbmm")):
        # input + m1 @ m2 (Hugging Face GPT-2's Conv1D: addmm(bias, x, w))
        if n.kwargs.get("beta", 1) != 1 or n.kwargs.get("alpha", 1) != 1:
            raise Skip("%s with alpha or beta" % getattr(t, "__name__", t))
        return [Op("matmul", [(n.args[1], False), (n.args[2], False)]),
                Op("add", [(None, False), (n.args[0], False)])]
    if (is_fn and t in R.matmul) or (is_m and t in R.matmul_methods):
        return [Op("matmul", [(n.args[0], False), (n.args[1], False)])]
    binop = R.binary.get(t) if is_fn else R.binary_methods.get(t) if is_m else None
    if binop:
        a, b = n.args[0], n.args[1]
        if not (_is_node(a) and _is_node(b)):
            if not R.scalars:
                raise Skip("%s with a scalar operand (programs have no constants)" % binop)
            if not ((_is_node(a) and _finite(b)) or (_is_node(b) and _finite(a))):
                raise Skip("%s with operands other than a tensor and a finite number" % binop)
            if n.kwargs.get("alpha", 1) != 1 or n.kwargs.get("rounding_mode") is not None:
                raise Skip("%s with alpha or rounding_mode" % binop)
            return [Op(binop, [(x if _is_node(x) else Lit(x), False) for x in (a, b)])]
        if n.kwargs.get("alpha", 1) != 1 or n.kwargs.get("rounding_mode") is not None:
            raise Skip("%s with alpha or rounding_mode" % binop)
        return [Op(binop, [(a, False), (b, False)])]
    un = R.unary.get(t) if is_fn else R.unary_methods.get(t) if is_m else None
    if un:
        if un == "gelu" and n.kwargs.get("approximate", "none") != "none":
            return _gelu_tanh(R, n.args[0], n.kwargs["approximate"])
        return [Op(un, [(n.args[0], False)])]
    if (is_fn and t in R.pow) or (is_m and t in ("pow", "__pow__")):
        if n.args[1] == 2 and _is_node(n.args[0]):
            return [Op("square", [(n.args[0], False)])]
        if R.has_pow and _is_node(n.args[0]) and _finite(n.args[1]):
            return [Op("pow", [(n.args[0], False), (Lit(n.args[1]), False)])]
        raise Skip("pow with an exponent other than 2")
    if (is_fn and t in R.rsqrt) or (is_m and t == "rsqrt"):
        if R.has_pow:
            return [Op("pow", [(n.args[0], False), (Lit(-0.5), False)])]
        raise Skip("rsqrt outside an RMSNorm (needs pow)")
    if (is_fn and t in R.clamp) or (is_m and t in ("clamp", "clip")):
        lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
        if R.has_clamp and _finite(lo) and _finite(hi) and lo <= hi:
            return [Op("clamp", [(n.args[0], False), (Lit(lo), False), (Lit(hi), False)])]
        raise Skip("clamp without both finite bounds (or no clamp operator)")
    if (is_fn and t in R.transpose) or (is_m and t in ("transpose", "swapaxes", "swapdims")):
        x = n.args[0]
        rank = len(meta_of(x)[0]) if _is_node(x) and meta_of(x) else 0
        if rank < 2:
            raise Skip("transpose of a value of unknown shape or rank < 2")
        d0, d1 = (d % rank for d in (_arg(n, 1, "dim0"), _arg(n, 2, "dim1")))
        dims = list(range(rank))
        dims[d0], dims[d1] = d1, d0
        return _permute(R, x, dims)
    if (is_m and t == "t") or (is_fn and t is getattr(torch, "t", None)):
        x = n.args[0]
        rank = len(meta_of(x)[0]) if _is_node(x) and meta_of(x) else 0
        return _permute(R, x, list(range(rank))[::-1])
    if is_fn and t is getattr and len(n.args) == 2 and n.args[1] in ("T", "mT"):
        x = n.args[0]
        rank = len(meta_of(x)[0]) if _is_node(x) and meta_of(x) else 0
        if rank < 2:
            raise Skip("%s of a value of unknown shape or rank < 2" % n.args[1])
        dims = list(range(rank))[::-1] if n.args[1] == "T" else \
            list(range(rank - 2)) + [rank - 1, rank - 2]
        return _permute(R, x, dims)
    if (is_fn and t in R.permute) or (is_m and t == "permute"):
        x = n.args[0]
        dims = list(n.args[1:]) if len(n.args) > 1 else n.kwargs.get("dims")
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = list(dims[0])
        rank = len(meta_of(x)[0]) if _is_node(x) and meta_of(x) else 0
        if not all(isinstance(d, int) for d in dims) or len(dims) != rank:
            raise Skip("permute with dims that are not %d numbers" % rank)
        return _permute(R, x, [d % rank for d in dims])
    if (is_fn and t in R.reshape) or (is_m and t in R.reshape_methods):
        return _reshape(R, n, n.args[0])
    if is_fn and t is operator.getitem:
        return _getitem(R, n)
    if (is_fn and t in R.narrow) or (is_m and t == "narrow"):
        dim, start, length = (_arg(n, 1, "dim"), _arg(n, 2, "start"), _arg(n, 3, "length"))
        mx = meta_of(n.args[0]) if _is_node(n.args[0]) else None
        if not (mx and all(isinstance(v, int) for v in (dim, start, length))):
            raise Skip("narrow with bounds that are not numbers (or of unknown shape)")
        d = dim % len(mx[0])
        return _slices(R, n, n.args[0], {d: slice(start, start + length) if start >= 0 else
                                         slice(start, start + length or None)})
    if is_m and t in R.identity_methods or is_fn and t in R.identity:
        x = n.args[0]
        mx, mn = meta_of(x) if _is_node(x) else None, meta_of(n)
        if not mx or not mn or mx != mn:
            raise Skip("%s that changes the dtype (a piece holds one dtype)" % t
                       if mx and mn else "%s of a value of unknown shape" % t)
        flat = []
        torch_fx_map((n.args[1:], n.kwargs), flat.append)
        if any(isinstance(a, (str, torch.device)) for a in flat):
            raise Skip("%s to a device" % t)
        return [Op(None, [(x, False)])]
    if is_fn and R.sdpa is not None and t is R.sdpa:
        return _sdpa(R, n)
    if (is_fn and t in R.softmax) or (is_m and t == "softmax"):
        if n.kwargs.get("dtype") is not None:
            raise Skip("softmax with a dtype (a piece holds one dtype)")
        dim = _arg(n, 1, "dim")
        if R.has_max and isinstance(dim, int):
            return _softmax_ops((n.args[0], False), 0, dim)
        raise Skip("softmax needs the max operator")
    if (is_fn and (t in R.amax or t in R.amin)) or (is_m and t in ("amax", "amin")):
        kind = "max" if t in R.amax or t == "amax" else "min"
        return _extreme(R, n, kind, n.args[0], _arg(n, 1, "dim"), _arg(n, 2, "keepdim", False))
    if is_fn and t is getattr and len(n.args) == 2 and _minmax_of(R, n.args[0]) is not None:
        return _minmax_part(R, n, n.args[0], {"values": 0, "indices": 1}.get(n.args[1], -1))
    if (is_fn and t in R.mean) or (is_m and t == "mean"):
        dim = _arg(n, 1, "dim")
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        x = n.args[0]
        m = meta_of(x) if _is_node(x) else None
        if R.has_mean and isinstance(dim, int) and _arg(n, 2, "keepdim", False):
            return [Op("mean", [(x, False)], dim=dim)]
        if R.scalars and isinstance(dim, int) and _arg(n, 2, "keepdim", False) and m:
            return [Op("sum", [(x, False)], dim=dim),
                    Op("div", [(None, False), (Lit(m[0][dim]), False)])]
        raise Skip("mean other than over one dim with keepdim=True (or no constants)")
    if (is_fn and t in R.sum) or (is_m and t == "sum"):
        dim = _arg(n, 1, "dim")
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        if not isinstance(dim, int):
            raise Skip("sum over all dims or several dims")
        if not _arg(n, 2, "keepdim", False):
            raise Skip("sum without keepdim=True (programs keep the reduced dim)")
        return [Op("sum", [(n.args[0], False)], dim=dim)]
    if is_fn and t is F.layer_norm:
        return _layer_norm(R, n.args[0], _arg(n, 1, "normalized_shape"), _arg(n, 4, "eps", 1e-5),
                           _arg(n, 2, "weight"), _arg(n, 3, "bias"))
    if is_fn and t in R.rms_norm_fns:
        return _rms_norm_call(R, n.args[0], _arg(n, 1, "normalized_shape"), _arg(n, 3, "eps"),
                              _arg(n, 2, "weight"))
    raise Skip("no mirsearch equivalent")


def _gelu_tanh(R, x, approx):
    """gelu(x, approximate='tanh') (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi)
    (x + 0.044715 x^3))), written out with tanh, pow and constants."""
    if approx != "tanh":
        raise Skip("gelu(approximate=%r)" % (approx,))
    if not (R.scalars and R.has_pow and "tanh" in R.unary.values()):
        raise Skip("gelu(approximate='tanh') needs tanh, pow and constants")
    return [Op("pow", [(x, False), (Lit(3), False)]),
            Op("mul", [(None, False), (Lit(0.044715), False)]),
            Op("add", [(x, False), (None, False)]),
            Op("mul", [(None, False), (Lit((2.0 / 3.141592653589793) ** 0.5), False)]),
            Op("tanh", [(None, False)]),
            Op("add", [(None, False), (Lit(1), False)]),
            Op("mul", [(x, False), (None, False)]),
            Op("mul", [(None, False), (Lit(0.5), False)])]


def _rms_eps(R, eps):
    """The attribute text of rms_norm with eps (None: none to write), or
    Skip where the library's rms_norm takes no eps and eps is not small
    enough to drop."""
    if not _finite(eps) or eps < 0:
        raise Skip("rms_norm with eps %r" % (eps,))
    if R.rms_eps:
        return "eps=" + Lit(eps).text if eps else None
    if eps > EPS_MAX:
        raise Skip("rms_norm with eps > %g (this library's rms_norm has no eps)" % EPS_MAX)
    return None


def _rms_norm_call(R, x, shape, eps, weight):
    """F.rms_norm / nn.RMSNorm over the last dim, then the weight; eps None
    is the dtype's machine epsilon, as PyTorch takes it."""
    import torch
    if isinstance(shape, int):
        shape = [shape]
    if shape is None or len(shape) != 1:
        raise Skip("rms_norm over several dims")
    if eps is None:
        m = meta_of(x) if _is_node(x) else None
        dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}.get(
            m[1] if m else None)
        if dt is None:
            raise Skip("rms_norm of a value of unknown dtype")
        eps = torch.finfo(dt).eps
    ops = [Op("rms_norm", [(x, False)], attrs=_rms_eps(R, eps))]
    if weight is not None:
        ops.append(Op("mul", [(None, False), (weight, False)]))
    return ops


def _permute(R, x, dims):
    """x with its dims reordered (result dim i is x's dim dims[i]): nothing
    for the identity, transpose for the last two dims, else permute."""
    rank = len(dims)
    if sorted(dims) != list(range(rank)):
        raise Skip("permute dims %s are not a permutation" % dims)
    if dims == list(range(rank)):
        return [Op(None, [(x, False)])]
    if R.has_transpose and dims == list(range(rank - 2)) + [rank - 1, rank - 2]:
        return [Op("transpose", [(x, False)])]
    if not R.has_layout:
        raise Skip("permute of other than the last two dims (this library has no permute)")
    return [Op("permute", [(x, False)], attrs="dims=[%s]" % ", ".join(map(str, dims)),
               keep_rank=True)]


def _reshape(R, n, x):
    """view/reshape/flatten/unsqueeze/squeeze: a reshape to n's recorded
    shape (the shape arguments, -1 and sizes read at run time included,
    are resolved by the recorded shapes: a program has static shapes)."""
    mn, mx = meta_of(n), (meta_of(x) if _is_node(x) else None)
    if not mn or not mx:
        raise Skip("reshape of a value of unknown shape")
    if mn[0] == mx[0]:
        return [Op(None, [(x, False)])]
    if not R.has_layout:
        raise Skip("reshape (this library has no reshape operator)")
    if not mn[0]:
        raise Skip("reshape to a scalar")
    return [Op("reshape", [(x, False)], attrs="shape=[%s]" % ", ".join(map(str, mn[0])),
               keep_rank=True)]


def _extreme(R, n, kind, x, dim, keepdim):
    """max or min (kind) of x over one dim (amax, amin, the values of
    torch.max/min(x, dim)): the reduction, then a reshape to n's recorded
    shape where the dim is not kept."""
    if isinstance(dim, (list, tuple)) and len(dim) == 1:
        dim = dim[0]
    if not isinstance(dim, int):
        raise Skip("%s over all dims or several dims" % kind)
    if not (R.has_max if kind == "max" else R.has_min):
        raise Skip("the library has no %s operator" % kind)
    ops = [Op(kind, [(x, False)], dim=dim)]
    if keepdim:
        return ops
    mn = meta_of(n)
    if not (R.has_layout and mn and mn[0]):
        raise Skip("%s without keepdim=True (needs reshape)" % kind)
    return ops + [Op("reshape", [(None, False)],
                     attrs="shape=[%s]" % ", ".join(map(str, mn[0])), keep_rank=True)]


def _minmax_of(R, s):
    """(kind, x, dim, keepdim) of a torch.max/min(x, dim[, keepdim]) node s
    (Tensor.max/min too): a (values, indices) pair; None for any other
    node, the elementwise torch.max(x, y) and the all-dims torch.max(x)."""
    if not _is_node(s):
        return None
    if s.op == "call_function" and s.target in R.minmax:
        kind = R.minmax[s.target]
    elif s.op == "call_method" and s.target in ("max", "min"):
        kind = s.target
    else:
        return None
    dim = _arg(s, 1, "dim")
    if not isinstance(dim, int) or isinstance(dim, bool):
        return None
    return kind, s.args[0], dim, _arg(s, 2, "keepdim", False)


def _minmax_part(R, n, s, idx):
    """n, part idx of the torch.max/min(x, dim) pair s: its values (0) are
    the max/min over dim; its indices have no equivalent."""
    kind, x, dim, keepdim = _minmax_of(R, s)
    if idx != 0:
        raise Skip("the indices of torch.%s(x, dim) (argmax/argmin: no mirsearch equivalent)"
                   % kind)
    return _extreme(R, n, kind, x, dim, keepdim)


def _split_parts(R, s):
    """(x, dim, [(start, len) of each part], whether a part keeps the dim)
    of a split/chunk/unbind/tensor_split node s, from the part shapes
    trace() recorded (tensor_split's from its arguments, checked against
    them); None when s is no such node."""
    is_split = (s.op == "call_function" and s.target in R.split) or \
        (s.op == "call_method" and s.target in R.split_methods)
    if not is_split:
        return None
    name = s.target if isinstance(s.target, str) else s.target.__name__
    x = s.args[0]
    mx = meta_of(x) if _is_node(x) else None
    tm = s.meta.get("tensor_meta", s.meta.get("example_value"))
    if not mx or not isinstance(tm, (tuple, list)) or not all(hasattr(p, "shape") for p in tm):
        raise Skip("%s of a value of unknown shape" % name)
    dim = _arg(s, 1 if name == "unbind" else 2, "dim", 0)
    if not isinstance(dim, int):
        raise Skip("%s over a dim that is not a number" % name)
    dim %= len(mx[0])
    keep = name != "unbind"
    if name == "tensor_split":
        parts = _tensor_split_parts(s, mx[0][dim])
        if [length for _s, length in parts] != [int(p.shape[dim]) for p in tm]:
            raise Skip("tensor_split whose parts are not the recorded ones")
        return x, dim, parts, keep
    parts, start = [], 0
    for p in tm:
        length = int(p.shape[dim]) if keep else 1
        parts.append((start, length))
        start += length
    return x, dim, parts, keep


def _tensor_split_parts(s, size):
    """[(start, len)] of tensor_split node s over a dim of `size`, by
    PyTorch's rules: n sections give the first size % n parts one more
    element than the rest (size // n; empty parts past the size); indices
    i0 < i1 ... give x[:i0], x[i0:i1], ..., x[ik:], each a Python slice
    (negative indices count from the end, bounds clamp, and a part whose
    bounds decrease is empty: it does not shift the next one)."""
    arg = _arg(s, 1, "indices_or_sections")
    for kw in ("sections", "indices", "tensor_indices_or_sections"):
        arg = s.kwargs.get(kw, arg)
    if _is_node(arg) or hasattr(arg, "dtype"):
        raise Skip("tensor_split by a tensor of indices or sections (only numbers map to "
                   "slice: pass an int or a list of ints)")
    if isinstance(arg, int) and not isinstance(arg, bool):
        if arg < 1:
            raise Skip("tensor_split into %d sections" % arg)
        q, r = divmod(size, arg)
        lens = [q + 1] * r + [q] * (arg - r)
        return [(sum(lens[:i]), n) for i, n in enumerate(lens)]
    if not isinstance(arg, (list, tuple)) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in arg):
        raise Skip("tensor_split by %r (only an int or a list of ints maps to slice)" % (arg,))
    bounds = [None] + list(arg) + [None]
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        start, stop, _step = slice(a, b).indices(size)
        parts.append((start, max(0, stop - start)))
    return parts


def _slices(R, n, x, bounds):
    """x narrowed by bounds ({dim: Python slice of step 1}) then reshaped to
    n's recorded shape: a slice op per narrowed dim, a reshape where dims
    go or come (an integer index, unbind, None); the identity where
    nothing changes."""
    mn, mx = meta_of(n), (meta_of(x) if _is_node(x) else None)
    if not mn or not mx:
        raise Skip("indexing of a value of unknown shape")
    ops, shape = [], list(mx[0])
    for d in sorted(bounds):
        start, stop, step = bounds[d].indices(shape[d])
        if step != 1:
            raise Skip("slice with step %d (only step 1 maps to slice)" % step)
        if stop <= start:
            raise Skip("an empty slice")
        if (start, stop) == (0, shape[d]):
            continue
        if not R.has_slice:
            raise Skip("slice (this library has no slice operator)")
        ops.append(Op("slice", [(x if not ops else None, False)],
                      attrs="dim=%d, start=%d, len=%d" % (d, start, stop - start), keep_rank=True))
        shape[d] = stop - start
    if tuple(shape) != tuple(mn[0]):
        if not R.has_layout or not mn[0]:
            raise Skip("indexing that drops or adds dims (needs reshape)")
        ops.append(Op("reshape", [(x if not ops else None, False)],
                      attrs="shape=[%s]" % ", ".join(map(str, mn[0])), keep_rank=True))
    return ops or [Op(None, [(x, False)])]


def _getitem(R, n):
    """x[idx] with basic indexing (slices of step 1, integers, ..., None),
    or part i of a split/chunk/unbind/tensor_split: slice (and reshape) ops."""
    x, idx = n.args[0], n.args[1]
    if not _is_node(x):
        raise Skip("indexing of a value that is not a node")
    if _minmax_of(R, x) is not None:
        return _minmax_part(R, n, x, idx if isinstance(idx, int) else -1)
    sp = _split_parts(R, x)
    if sp is not None:
        src, dim, parts, _keep = sp
        if not isinstance(idx, int) or not -len(parts) <= idx < len(parts):
            raise Skip("part %r of a split" % (idx,))
        start, length = parts[idx]
        return _slices(R, n, src, {dim: slice(start, start + length)})
    mx = meta_of(x)
    if not mx:
        raise Skip("indexing of a value that is not a tensor of known shape")
    items = list(idx) if isinstance(idx, tuple) else [idx]
    if any(not (isinstance(i, (int, slice)) or i is None or i is Ellipsis) or
           isinstance(i, bool) for i in items):
        raise Skip("indexing with other than slices, integers, ... and None")
    for i in items:
        if isinstance(i, slice) and not all(v is None or isinstance(v, int)
                                            for v in (i.start, i.stop, i.step)):
            raise Skip("a slice with bounds that are not numbers")
    rank = len(mx[0])
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if items.count(Ellipsis) > 1 or used > rank:
        raise Skip("indexing with %d indices of a rank-%d value" % (used, rank))
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items = items[:k] + [slice(None)] * (rank - used) + items[k + 1:]
    bounds, d = {}, 0
    for i in items:
        if i is None:
            continue
        if isinstance(i, int):
            j = i + mx[0][d] if i < 0 else i
            if not 0 <= j < mx[0][d]:
                raise Skip("index %d out of range" % i)
            bounds[d] = slice(j, j + 1)
        elif i != slice(None):
            bounds[d] = i
        d += 1
    return _slices(R, n, x, bounds)


def _sdpa(R, n):
    """F.scaled_dot_product_attention without a mask tensor or dropout:
    softmax(q @ k^T * scale [+ causal mask]) @ v, the softmax shifted by
    its max as PyTorch computes it."""
    q, k, v = n.args[:3]
    mask, drop = _arg(n, 3, "attn_mask"), _arg(n, 4, "dropout_p", 0.0)
    causal, scale = _arg(n, 5, "is_causal", False), _arg(n, 6, "scale")
    if mask is not None or drop != 0 or n.kwargs.get("enable_gqa", False):
        raise Skip("scaled_dot_product_attention with attn_mask, dropout or enable_gqa")
    mq, mk = meta_of(q) if _is_node(q) else None, meta_of(k) if _is_node(k) else None
    if not mq or not mk or len(mq[0]) != len(mk[0]) or not _is_node(v):
        raise Skip("scaled_dot_product_attention of values of unknown or unequal ranks")
    if not (R.has_max and R.has_transpose and R.scalars):
        raise Skip("scaled_dot_product_attention needs max, transpose and constants")
    if causal and (not R.has_mask or mq[0][-2] != mk[0][-2]):
        # PyTorch's is_causal aligns the diagonal top-left, causal_mask
        # bottom-right: the same only for as many queries as keys.
        raise Skip("is_causal with other than as many queries as keys (or no causal_mask)")
    scale = 1.0 / float(mq[0][-1]) ** 0.5 if scale is None else scale
    ops = [Op("transpose", [(k, False)]), Op("matmul", [(q, False), (None, False)]),
           Op("mul", [(None, False), (Lit(scale), False)])]
    if causal:
        ops.append(Op("causal_mask", [(None, False)]))
    return ops + _softmax_ops((Ref(len(ops) - 1), False), len(ops), -1) + \
        [Op("matmul", [(None, False), (v, False)])]


def _softmax_ops(x, base, dim):
    """exp(x - max(x)) / sum(exp(x - max(x))) over dim, the safe softmax, as
    ops placed at index base of a node's list; x: the operand spec of the
    input (a node, or a Ref to an earlier op of the list)."""
    return [Op("max", [x], dim=dim), Op("sub", [x, (Ref(base), False)]),
            Op("exp", [(None, False)]), Op("sum", [(None, False)], dim=dim),
            Op("div", [(Ref(base + 2), False), (None, False)])]


def _layer_norm(R, x, shape, eps, weight, bias):
    """layer_norm over the last dim, then the weight and the bias."""
    if not R.has_layer_norm:
        raise Skip("layer_norm needs the layer_norm operator")
    if len(shape) != 1 or not _finite(eps):
        raise Skip("layer_norm over several dims")
    ops = [Op("layer_norm", [(x, False)], attrs="eps=" + Lit(eps).text)]
    if weight is not None:
        ops.append(Op("mul", [(None, False), (weight, False)]))
    if bias is not None:
        ops.append(Op("add", [(None, False), (bias, False)]))
    return ops


def _match_rms(n, R):
    """If n ends an RMSNorm written out (x * rsqrt(mean(x^2, -1, keepdim) + eps)
    or x / sqrt(...)), return (x, inner nodes, eps attribute text or None)
    else None."""
    def fn_or_method(m, fns, meth):
        return m is not None and _is_node(m) and (
            (m.op == "call_function" and m.target in fns) or
            (m.op == "call_method" and m.target == meth))
    import torch
    if len(n.args) != 2 or not all(_is_node(a) for a in n.args):
        return None
    is_mul = n.target in (operator.mul, torch.mul) or (n.op == "call_method" and n.target == "mul")
    is_div = n.target in (operator.truediv, torch.div) or (n.op == "call_method" and
                                                           n.target == "div")
    if not (is_mul or is_div):
        return None
    for x, r in ((n.args[0], n.args[1]), (n.args[1], n.args[0])):
        if is_div and r is not n.args[1]:
            continue
        if not fn_or_method(r, R.rsqrt if is_mul else {torch.sqrt}, "rsqrt" if is_mul else "sqrt"):
            continue
        add = r.args[0]
        if not fn_or_method(add, {operator.add, torch.add}, "add") or len(add.args) != 2:
            continue
        mean, eps = add.args
        if _is_node(eps):
            mean, eps = eps, mean
        try:
            eps_attr = _rms_eps(R, eps)
        except Skip:
            continue
        if not fn_or_method(mean, R.mean, "mean"):
            continue
        dim = _arg(mean, 1, "dim")
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        sq = mean.args[0]
        if dim != -1 and not (meta_of(x) and dim == len(meta_of(x)[0]) - 1):
            continue
        if not _arg(mean, 2, "keepdim", False):
            continue
        ok_sq = (fn_or_method(sq, R.pow, "pow") and sq.args[0] is x and sq.args[1] == 2) or \
            (fn_or_method(sq, {torch.square}, "square") and sq.args[0] is x) or \
            (fn_or_method(sq, {operator.mul, torch.mul}, "mul") and sq.args[0] is x and
             sq.args[1] is x)
        if not ok_sq:
            continue
        inner = [r, add, mean, sq]
        if any(len(m.users) != 1 for m in inner):
            continue
        return x, inner, eps_attr
    return None


def _match_causal(n):
    """add(s, triu(full_like(s, -inf), 1)) (either order): s, inner nodes."""
    import torch
    if not (n.op == "call_function" and n.target in (operator.add, torch.add)) or \
            len(n.args) != 2 or not all(_is_node(a) for a in n.args):
        return None
    for s_, m in ((n.args[0], n.args[1]), (n.args[1], n.args[0])):
        if not (m.op in ("call_method", "call_function") and
                getattr(m.target, "__name__", m.target) == "triu"):
            continue
        diag = _arg(m, 1, "diagonal", 0)
        f = m.args[0]
        if diag != 1 or not _is_node(f) or len(f.users) != 1 or len(m.users) != 1:
            continue
        if getattr(f.target, "__name__", "") != "full_like" or f.args[0] is not s_ or \
                _arg(f, 1, "fill_value") != float("-inf"):
            continue
        ms = meta_of(s_)
        if not ms or len(ms[0]) < 2 or ms[0][-1] != ms[0][-2]:
            continue  # square: the library's mask aligns the diagonal bottom-right
        return s_, [m, f], None
    return None


VIEW_STAYS = "a reshape, permute, slice or identity stays PyTorch code (a view there, a " \
    "copy in a kernel)"


def _const_ancestors(n, root):
    """The constant nodes (trace()'s mirs_const, get_attr, and calls on
    them) that compute node n and feed nothing but root and each other:
    absorbed into root with it.  None if n is not a constant."""
    if not _is_node(n) or "mirs_const" not in n.meta:
        return None
    inner, stack = [], [n]
    while stack:
        m = stack.pop()
        if m in inner or m.op == "placeholder":
            continue
        inner.append(m)
        stack.extend(m.all_input_nodes)
    keep = set(inner)
    changed = True
    while changed:  # drop the ones something outside reads
        changed = False
        for m in list(keep):
            if any(u is not root and u not in keep for u in m.users):
                keep.discard(m)
                changed = True
    return [m for m in inner if m in keep] if n in keep else None


def _causal_kept(shape):
    """The boolean pattern causal_mask keeps on the last two dims of shape
    (m x n): column j of row i where j <= i + (n - m)."""
    import torch
    m, n = shape[-2], shape[-1]
    return torch.ones(m, n, dtype=torch.bool).tril(n - m)


def _mask_fill_ok(n, fill, rank):
    """Whether fill (a number, a constant node or tensor) may stand for the
    -inf that causal_mask writes where n masks: -inf itself, or a large
    negative number (the dtype's lowest, as Hugging Face fills masks)
    where n's value feeds nothing but a softmax over its last dim (whose
    result is then the same)."""
    import torch
    if _is_node(fill):
        if "mirs_const" not in fill.meta:
            return False
        fill = fill.meta["mirs_const"]
    f = torch.as_tensor(fill, dtype=torch.float64)
    if f.numel() and bool(torch.isneginf(f).all()):
        return True
    if not f.numel() or not bool((f <= -65504.0).all()) or len(n.users) != 1:
        return False
    u = next(iter(n.users))
    name = u.target if isinstance(u.target, str) else getattr(u.target, "__name__", "")
    dim = _arg(u, 1, "dim")
    return name == "softmax" and isinstance(dim, int) and dim in (-1, rank - 1)


def _match_const_mask(n):
    """A causal mask applied from a constant (a registered tril buffer, a
    slice of one, a comparison of it: nanoGPT's and Hugging Face's GPT-2
    spellings), as s.masked_fill(C, -inf), torch.where(C, s, -inf) or
    s + M: s, the constant's nodes, None; or None.  C (True: masked, or
    for where True: kept) and M (0 kept, -inf masked) must equal the
    causal pattern on s's last two dims, the same for every leading index."""
    import torch
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    if n.op not in ("call_function", "call_method") or name not in ("masked_fill", "where",
                                                                     "add", "__add__"):
        return None
    args = list(n.args) + [n.kwargs[k] for k in ("mask", "value", "other") if k in n.kwargs]
    cands = []
    if name == "masked_fill" and len(args) >= 3:
        cands = [(args[0], args[1], "masked", args[2])]
    elif name == "where" and len(args) == 3:
        cands = [(args[1], args[0], "kept", args[2]), (args[2], args[0], "masked", args[1])]
    elif name in ("add", "__add__") and len(args) == 2:
        cands = [(args[0], args[1], "additive", None), (args[1], args[0], "additive", None)]
    for s_, c, kind, fill in cands:
        ms = meta_of(s_) if _is_node(s_) else None
        if not ms or len(ms[0]) < 2 or not _is_node(c) or "mirs_const" not in c.meta:
            continue
        if kind != "additive" and not _mask_fill_ok(n, fill, len(ms[0])):
            continue
        cv = c.meta["mirs_const"]
        try:
            cv = cv.expand(ms[0])
        except RuntimeError:
            continue
        kept = _causal_kept(ms[0]).expand(ms[0])
        if kind == "additive":
            ok = cv.is_floating_point() and bool((cv[kept] == 0).all()) and \
                _mask_fill_ok(n, cv[~kept], len(ms[0]))
        else:
            ok = cv.dtype == torch.bool and torch.equal(cv, kept if kind == "kept" else ~kept)
        if not ok:
            continue
        inner = _const_ancestors(c, n)
        if inner is None:
            continue
        if _is_node(fill):
            more = _const_ancestors(fill, n)
            if more is None:
                continue
            inner += [m for m in more if m not in inner]
        return s_, inner, None
    return None


class Analysis:
    """The classification of every node of an fx GraphModule:
    .ops[node] = list of Op (supported), .absorbed[node] = root node,
    .why[node] = reason (unsupported call nodes), .meta[node] = (shape, dtype).
    layout=False (the backend's): reshapes, permutes and identities stay
    PyTorch code, where they are views (no copy, no kernel launch) while
    in a program they are copies; the transpose of the last two dims,
    which the search fuses into its matmuls, stays in."""

    def __init__(self, gm, layout=True):
        self.gm = gm
        self.layout = layout
        R = rules()
        self.ops, self.absorbed, self.why, self.meta = {}, {}, {}, {}
        nodes = list(gm.graph.nodes)
        for n in nodes:
            m = meta_of(n)
            if m:
                self.meta[n] = m
        for n in reversed(nodes):
            if n.op not in ("call_function", "call_method", "call_module") or n in self.absorbed:
                continue
            rm = _match_rms(n, R)
            cm = (_match_causal(n) or _match_const_mask(n)) if R.has_mask and not rm else None
            if rm or cm:
                x, inner, attrs = rm or cm
                self.ops[n] = [Op("rms_norm" if rm else "causal_mask", [(x, False)], attrs=attrs)]
                for m in inner:
                    self.absorbed[m] = n
        for n in nodes:
            if n.op not in ("call_function", "call_method", "call_module"):
                continue
            if n in self.ops or n in self.absorbed:
                continue
            try:
                if _split_parts(R, n) is not None or _minmax_of(R, n) is not None:
                    continue  # (its parts' getitems read x: below)
                ops = _classify_call(gm, n, R)
            except Skip as e:
                self.why[n] = str(e)
                continue
            except (IndexError, AttributeError, TypeError) as e:
                self.why[n] = "cannot read its arguments (%s)" % e
                continue
            if not layout and any(op.kind in ("reshape", "permute", "slice", None)
                                  for op in ops):
                self.why[n] = VIEW_STAYS
                continue
            self.ops[n] = ops
        # Values that may hold infinities (a -inf mask built by full_like or
        # masked_fill and carried through unsupported nodes) stay out of
        # pieces: searches verify on finite inputs and the generated code
        # does not keep IEEE infinity rules (-inf - -inf, 0 * inf), so a
        # kernel could turn them into NaN.  The causal mask pattern above
        # (an operator of its own) is the supported way to mask.
        inf = set()
        for n in nodes:  # graph order: one pass propagates
            if n in self.absorbed:
                continue
            if n in self.ops:
                if any(_is_node(v) and v in inf for op in self.ops[n] for v, _t in op.operands):
                    self.why[n] = "an operand may hold infinities (a mask), which the " \
                        "generated kernels do not handle"
                    del self.ops[n]
                    for k in [k for k, r in self.absorbed.items() if r is n]:
                        del self.absorbed[k]
                    if not _finite_output(n):
                        inf.add(n)
                continue
            flat = []
            torch_fx_map(n.args, flat.append)
            torch_fx_map(n.kwargs, flat.append)
            if _finite_output(n):
                continue
            if any((_scalar(a) and abs(a) == float("inf")) or (_is_node(a) and a in inf)
                   for a in flat):
                inf.add(n)
        # A node is supported only where its value and every tensor operand
        # is a float tensor of one dtype with a known shape.
        for n in list(self.ops):
            m = self.meta.get(n)
            why = None
            if not m or not m[1]:
                why = "its value is not a float16/bfloat16/float32 tensor of known shape"
            else:
                for op in self.ops[n]:
                    for v, _t in op.operands:
                        if isinstance(v, (Lit, Ref)):
                            continue
                        vm = self._vmeta(v) if v is not None else m
                        if not vm or vm[1] != m[1]:
                            why = "operands of different dtypes or of unknown shape"
            if why:
                self.why[n] = why
                del self.ops[n]
                for k in [k for k, r in self.absorbed.items() if r is n]:
                    del self.absorbed[k]
        # A split/chunk/unbind/tensor_split computes nothing itself: each
        # getitem of it is a slice of its input.  Absorbed into its first
        # read part where every read part maps, else it stays PyTorch code
        # with them.  A part nothing reads (`a, _, c = x.tensor_split([4,
        # 2])`: the empty middle one, which no slice op can be) computes
        # nothing either: absorbed too, whatever it is.
        for n in nodes:
            if n in self.why or n.op not in ("call_function", "call_method") or \
                    _split_parts(R, n) is None:
                continue
            parts = list(n.users)
            live = [p for p in parts if p.users]
            if live and all(p in self.ops for p in live):
                self.absorbed[n] = live[0]
                for p in parts:
                    if not p.users:
                        self.why.pop(p, None)
                        self.ops.pop(p, None)
                        self.absorbed[p] = live[0]
            else:
                self.why[n] = VIEW_STAYS if not layout else \
                    "a split whose parts are not all read by indexing that maps"
        # torch.max/min(x, dim) computes nothing itself either: its values
        # are a max/min of x.  Absorbed where every use is its values and
        # maps; else it stays PyTorch code (its indices are used).
        for n in nodes:
            if n in self.why or n.op not in ("call_function", "call_method") or \
                    _minmax_of(R, n) is None:
                continue
            parts = list(n.users)
            if parts and all(p in self.ops for p in parts):
                self.absorbed[n] = parts[0]
            else:
                self.why[n] = "torch.%s(x, dim) whose indices are used, or whose values " \
                    "do not map" % _minmax_of(R, n)[0]

    def _vmeta(self, v):
        if isinstance(v, ParamRef):
            t = v.tensor
            return tuple(t.shape), DTYPE_OF.get(str(t.dtype))
        return self.meta.get(v)

    def supported(self, n):
        return n in self.ops or n in self.absorbed

    def unsupported(self):
        """[(node name, what it calls, why)] in graph order."""
        return [(n.name, node_desc(n), self.why[n]) for n in self.gm.graph.nodes if n in self.why]

    def members(self, n):
        """n and the nodes absorbed into it."""
        return [n] + [k for k, r in self.absorbed.items() if r is n]


_KEYWORDS = {"program", "ugraph", "input", "output"}


def ident(s):
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    if not s or s[0].isdigit():
        s = "t_" + s
    if s in _KEYWORDS:
        s += "_"
    return s


class Binding:
    """How a program input is made from a torch value: source (an fx node or
    a ParamRef), transpose of the last two dims, then a reshape."""

    def __init__(self, name, source, transpose, shape):
        self.name, self.source, self.transpose, self.shape = name, source, transpose, shape

    def apply(self, value):
        if self.transpose:
            value = value.transpose(-2, -1)
        if tuple(value.shape) != tuple(self.shape):
            value = value.reshape(self.shape)
        return value

    def describe(self):
        src = self.source.name if isinstance(self.source, ParamRef) else \
            getattr(self.source, "name", str(self.source))
        s = src + (".T" if self.transpose else "")
        return "%s = %s reshaped to %s" % (self.name, s, list(self.shape))


class PieceProgram:
    """A program made of the supported nodes `nodes` of an analysis, with
    .text, .program (parsed), .bindings (program inputs, in order) and
    .outputs ((fx node, program name), in order)."""

    def __init__(self, an, nodes, name, outputs=None):
        self.an = an
        self.nodes = [n for n in an.gm.graph.nodes if n in set(nodes)]
        node_set = set(self.nodes)
        self.name = ident(name)
        self.bindings, self.outputs = [], []
        self._in = {}
        self._padded = {}
        self._names = set()
        lines = []
        val = {}
        dtype = None
        for n in self.nodes:
            if n in an.absorbed:
                continue
            shape, dtype = an.meta[n]
            cur = None
            ops = an.ops[n]
            outs = []
            for i, op in enumerate(ops):
                args = []
                rank = len(shape) if i == len(ops) - 1 else None
                for v, tr in op.operands:
                    if v is None:
                        args.append(cur)
                        continue
                    if isinstance(v, Lit):
                        args.append(v.text)
                        continue
                    if isinstance(v, Ref):
                        args.append(outs[v.index])
                        continue
                    if _is_node(v) and v in node_set and v in val:
                        args.append(self._ranked(v, val[v], op, rank or len(shape), lines))
                    else:
                        args.append(self._input(v, tr, op, 0 if op.keep_rank else
                                                rank or len(shape), dtype, lines))
                if op.kind is None:  # an identity: the operand's value
                    cur = args[0]
                    outs.append(cur)
                    continue
                out = self._fresh(n.name if i == len(ops) - 1 else "%s_%d" % (n.name, i))
                if op.dim is not None:
                    lines.append("%s = %s(%s, dim=%d)" % (out, op.kind, args[0], op.dim))
                elif op.attrs:
                    lines.append("%s = %s(%s, %s)" % (out, op.kind, ", ".join(args), op.attrs))
                else:
                    lines.append("%s = %s(%s)" % (out, op.kind, ", ".join(args)))
                cur = out
                outs.append(out)
            val[n] = cur
        if outputs is None:
            outputs = [n for n in self.nodes if n not in an.absorbed and
                       any(u not in node_set for u in n.users)]
        inputs = {b.name for b in self.bindings}
        for n in outputs:
            v = val[n]
            if v in inputs or v in [w for _m, w in self.outputs]:
                # An identity of an input, or a second output of one value:
                # a program output is a tensor an op defines, once.
                v = self._copy(v, an.meta[n][0], n.name, lines)
            self.outputs.append((n, v))
        header = ["program %s" % self.name]
        for b in self.bindings:
            header.append("input %s : %s%s" % (b.name, self._dtype_of(b, dtype),
                                              list(b.shape)))
        self.text = "\n".join(header + lines + ["output %s" % v for _n, v in self.outputs]) + "\n"
        self.program = Program.parse(self.text, self.name + ".graph")

    def _ranked(self, v, name, op, rank, lines):
        """name (the program value of node v) as an operand of an
        elementwise op of rank `rank`: PyTorch broadcasts a lower-rank
        operand, the program format needs equal ranks, so it is reshaped
        with leading 1s where the library has reshape."""
        vshape = self.an.meta[v][0]
        if op.kind not in ("add", "sub", "mul", "div") or len(vshape) >= rank or \
                not (rules().has_layout and self.an.layout):
            return name
        key = (name, rank)
        if key not in self._padded:
            out = self._fresh("%s_r%d" % (name, rank))
            shape = [1] * (rank - len(vshape)) + list(vshape)
            lines.append("%s = reshape(%s, shape=[%s])" % (out, name, ", ".join(map(str, shape))))
            self._padded[key] = out
        return self._padded[key]

    def _copy(self, v, shape, base, lines):
        """A new tensor equal to v (of shape shape), defined by an op."""
        out = self._fresh(base + "_copy")
        if rules().has_layout:
            lines.append("%s = reshape(%s, shape=[%s])" % (out, v, ", ".join(map(str, shape))))
        elif rules().scalars:
            lines.append("%s = mul(%s, 1)" % (out, v))
        else:
            raise Unsupported([(base, "value", "an output equal to an input (no op to copy it)")])
        return out

    def _dtype_of(self, b, dtype):
        return dtype

    def _fresh(self, base):
        nm = ident(base)
        k = 1
        cand = nm
        while cand in self._names:
            cand = "%s_%d" % (nm, k)
            k += 1
        self._names.add(cand)
        return cand

    def _input(self, v, transpose, op, rank, dtype, lines):
        """The program value of operand v (transposed in its last two dims
        where transpose): a program input bound to v, and where the
        library has transpose and v has two dims or more, a transpose op
        in the program of the input bound as it is.  A Linear's weight
        is then read in its own layout by the kernels (the search takes
        the transpose into its tile loads, or prices a copy of it), not
        copied into a transposed tensor at every call, which under
        torch.compile (the weight a graph input) nothing would price."""
        vm = self.an._vmeta(v)
        if vm is None:
            raise Unsupported([(getattr(v, "name", str(v)), "value", "not a tensor")])
        shape = list(vm[0])
        if transpose and len(shape) >= 2 and rules().has_transpose:
            key = (v, "transpose", rank)
            if key not in self._in:
                native = self._input(v, False, op, rank, dtype, lines)
                nm = self._fresh(native + "_t")
                lines.append("%s = transpose(%s)" % (nm, native))
                self._in[key] = nm
            return self._in[key]
        if transpose:
            if len(shape) < 2:
                shape = [1] + shape
            shape[-2], shape[-1] = shape[-1], shape[-2]
        want = max(rank, len(shape))
        shape = [1] * (want - len(shape)) + shape
        key = (v, transpose, tuple(shape))
        if key in self._in:
            return self._in[key]
        base = v.name if isinstance(v, ParamRef) else v.name
        nm = self._fresh(base + ("_t" if transpose else ""))
        self.bindings.append(Binding(nm, v, transpose, tuple(shape)))
        self._in[key] = nm
        return nm


_SIZE_METHODS = {"size", "dim", "numel"}
_SIZE_ATTRS = {"shape", "ndim"}
_INT_OPS = {operator.getitem, operator.add, operator.sub, operator.mul, operator.floordiv,
            operator.truediv, operator.mod, operator.neg, operator.pow, len, math.sqrt}


# The largest constant tensor (no input's value flows into it) that trace()
# keeps for the mask patterns.
CONST_MAX_NUMEL = 1 << 22


def _mask_like(t):
    """Whether constant tensor t may be (part of) a mask, so trace() keeps
    its value: boolean, or floating with -inf or a large negative number
    in it (not the weights, which need not be kept)."""
    import torch
    if t.numel() > CONST_MAX_NUMEL or t.is_sparse:
        return False
    if t.dtype == torch.bool:
        return True
    return t.is_floating_point() and t.numel() > 0 and bool((t <= -65504.0).any())


def _is_shape_of(n):
    """Whether node n reads a tensor's shape (x.size(), x.shape, x.dim()),
    not its values."""
    return (n.op == "call_method" and n.target in _SIZE_METHODS) or \
        (n.op == "call_function" and n.target is getattr and len(n.args) == 2 and
         n.args[1] in _SIZE_ATTRS)


def _is_size_value(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, (tuple, list)) and all(isinstance(d, int) and not isinstance(d, bool)
                                                for d in v)


def _fold_sizes(gm, values):
    """Replace the nodes that compute sizes from shapes (x.size(), x.shape,
    x.dim(), their items, integer arithmetic on them) by the numbers they
    gave on the example inputs (values: node -> value): a program has
    static shapes, and so do the graphs compiled for them.  Data-dependent
    numbers (.item()) are not sizes and stay."""
    import torch.fx
    folded = 0
    for n in list(gm.graph.nodes):
        if n not in values:
            continue
        v = values[n]
        shape_of_tensor = _is_shape_of(n)
        flat = []
        torch.fx.node.map_arg((n.args, n.kwargs), flat.append)
        # Arithmetic whose operands are all numbers by now (sizes folded
        # before it, in graph order): 1.0 / x.size(-1) too.
        arith = n.op == "call_function" and n.target in _INT_OPS and not flat
        if not ((shape_of_tensor and _is_size_value(v)) or
                (arith and (_is_size_value(v) or _finite(v)))):
            continue
        v = values[n]
        v = tuple(v) if isinstance(v, (tuple, list)) else v
        for u in list(n.users):
            u.args = torch.fx.node.map_arg(u.args, lambda m: v if m is n else m)
            u.kwargs = torch.fx.node.map_arg(u.kwargs, lambda m: v if m is n else m)
        gm.graph.erase_node(n)
        folded += 1
    if folded:
        gm.recompile()


def _real_consts(gm, example_inputs, fixed, dynamic, values):
    """Under Dynamo ShapeProp runs on fake tensors (its tracing context's
    fake mode), which hold no values: evaluate the constant nodes (no
    input's value flows into them) on the real example values of the
    pinned placeholders (fixed; copies, so an in-place op in the graph
    writes none of them; parameters over CONST_MAX_NUMEL, which no mask
    is, are not copied and what reads them is not evaluated) and keep the
    mask-like ones, as trace() does."""
    import torch
    import torch.fx
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
    except ImportError:
        import contextlib
        unset_fake_temporarily = contextlib.nullcontext
    places = [n for n in gm.graph.nodes if n.op == "placeholder"]
    interp = torch.fx.Interpreter(gm)
    env = interp.env
    with unset_fake_temporarily():
        for n, t in zip(places, example_inputs):
            if n in fixed and t.numel() <= CONST_MAX_NUMEL:
                env[n] = t.detach().clone()
        for n in gm.graph.nodes:
            if n.op == "placeholder" or n.op == "output" or n in dynamic:
                continue
            if n in values:
                env[n] = values[n]
                continue
            if any(a not in env for a in n.all_input_nodes):
                continue
            try:
                r = interp.run_node(n)
            except Exception:  # noqa: BLE001 (a value we do without)
                continue
            env[n] = r
            if isinstance(r, torch.Tensor) and _mask_like(r):
                n.meta["mirs_const"] = r.detach()


def trace(fn, example_inputs, pinned=()):
    """fx-trace fn (a function or nn.Module; a GraphModule is copied, not
    changed) and record each node's shape and dtype by running it on
    example_inputs; the sizes it computes from shapes become numbers.
    pinned: positions of placeholders whose values count as constants
    (module buffers that Dynamo hands in as inputs): the caller must check
    at call time that they are unchanged (backend_impl's guard); each
    constant node's meta["mirs_pinned"] holds the positions its value
    comes from."""
    import copy

    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp
    if isinstance(fn, torch.fx.GraphModule):
        gm = torch.fx.GraphModule(fn, copy.deepcopy(fn.graph), class_name=type(fn).__name__)
    else:
        # Buffers as graph nodes (not values fixed at trace time), so a
        # mask buffer sliced to the sequence length traces.
        class Proxy(torch.fx.Proxy):
            def __iter__(self):
                # `q, k, v = qkv.split(d, -1)`: torch.fx unpacks a proxy by
                # reading its caller's UNPACK_SEQUENCE, but finds it by an
                # instruction index that Python 3.11's inline caches moved
                # (torch < 2.1): look it up by its byte offset instead.
                import dis
                import inspect
                frame = inspect.currentframe().f_back
                for inst in dis.get_instructions(frame.f_code):
                    if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                return self.tracer.iter(self)

            def __abs__(self):
                # Python's abs(x): recorded as operator.abs, as torch.fx
                # 2.x does (1.13's Proxy has no __abs__: a TypeError).
                return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

        class Tracer(torch.fx.Tracer):
            proxy_buffer_attributes = True

            def proxy(self, node):
                return Proxy(node, self)
        tracer = Tracer()
        graph = tracer.trace(fn)
        gm = torch.fx.GraphModule(tracer.root, graph, type(fn).__name__ if isinstance(
            fn, torch.nn.Module) else getattr(fn, "__name__", "fn"))
    values = {}
    dynamic = set()  # nodes whose value depends on the inputs' values (not only shapes)
    places = [n for n in gm.graph.nodes if n.op == "placeholder"]
    fixed = {places[i] for i in pinned if i < len(places)}

    class Prop(ShapeProp):
        def run_node(self, n):
            r = super().run_node(n)
            if (n.op == "placeholder" and n not in fixed) or (not _is_shape_of(n) and any(
                    a in dynamic for a in n.all_input_nodes)):
                dynamic.add(n)
            if n in fixed:
                n.meta["mirs_pinned"] = {places.index(n)}
            elif n not in dynamic and not _is_shape_of(n):
                # The pinned inputs a constant's value comes from (through
                # any path): what a pattern that reads it must have checked.
                deps = set().union(*(a.meta.get("mirs_pinned", ()) for a in n.all_input_nodes))
                if deps:
                    n.meta["mirs_pinned"] = deps
            if _is_size_value(r) or _finite(r):
                values[n] = r
            elif isinstance(r, torch.Tensor) and n not in dynamic and \
                    getattr(self, "fake_mode", None) is None and _mask_like(r):
                # A constant mask (a buffer, a slice of one, a comparison):
                # kept for the patterns that read its values
                # (_match_const_mask).
                n.meta["mirs_const"] = r.detach()
            return r

    prop = Prop(gm)
    prop.propagate(*example_inputs)
    if getattr(prop, "fake_mode", None) is not None and fixed:
        _real_consts(gm, example_inputs, fixed, dynamic, values)
    _fold_sizes(gm, values)
    return gm


def from_torch(fn, example_inputs, name=None, strict=True):
    """The program computed by fn (a function or nn.Module) at the shapes
    and dtypes of example_inputs.  Module parameters become program inputs
    (named after them; a Linear weight transposed, see .bindings).  Every
    node without a program equivalent is named in Unsupported (raised when
    strict; else the result covers the supported nodes and lists the rest
    in .unsupported).  Returns a PieceProgram: .text is the .graph text,
    .program the parsed Program."""
    if name is None:
        name = getattr(fn, "__name__", None) or type(fn).__name__.lower()
    gm = trace(fn, example_inputs)
    an = Analysis(gm)
    bad = an.unsupported()
    if bad and strict:
        raise Unsupported(bad)
    nodes = [n for n in gm.graph.nodes if an.supported(n)]
    if not nodes:
        raise Unsupported(bad or [("-", "-", "the function computes nothing")])
    outs = []
    for n in gm.graph.nodes:
        if n.op == "output":
            import torch.fx
            flat = []
            torch.fx.node.map_arg(n.args, flat.append)
            outs = [a for a in flat if an.supported(a) and a not in an.absorbed]
    node_set = set(nodes)
    extra = [n for n in nodes if n not in an.absorbed and n not in outs and
             any(u not in node_set for u in n.users)]
    pp = PieceProgram(an, nodes, name, outputs=outs + extra)
    pp.unsupported = bad
    return pp
