# SPDX-License-Identifier: MIT
"""The torch.compile backend: torch.compile(model, backend=mirsearch.backend).

A backend is a function of an fx GraphModule and example inputs that
returns a callable (torch 2.x's Dynamo calls it; on torch 1.13, which has
torch.fx but no torch.compile, call it on a GraphModule from
torch.fx.symbolic_trace).  It
  1. records shapes and dtypes (ShapeProp on the example inputs),
  2. classifies the nodes (fx.Analysis) and cuts the supported ones into
     pieces (partition.split),
  3. searches each piece or takes its best from the cache,
  4. replaces each piece whose best is predicted faster than the piece as
     written by its generated kernel (kernel.Kernel) in a new GraphModule;
     unsupported nodes stay PyTorch code.  A module buffer whose value a
     piece assumed (a causal mask under torch.compile, which Dynamo hands
     in as an input without guarding its value) is checked at each call
     (guard=: by value on the CPU, by version counter on a GPU, see
     _BufferGuard); where it changed the call runs the graph's PyTorch
     code.
Modes (argument mode, else $MIRSEARCH_BACKEND_MODE, else "auto"):
  "cuda"  kernels compiled with load_inline, inputs on the GPU;
  "host"  kernels compiled as host C++ through the GPU emulator (a test
          mode: slow, but the whole path runs without a GPU);
  "eager" pieces searched (and cached) but run as their PyTorch code;
  "auto"  "cuda" when the example inputs are CUDA tensors, else "eager".
What happened to each piece is printed (verbose) and kept in the returned
module's .mirsearch_report and in last_report."""

import functools
import operator
import os
import sys

from . import fx as _fx
from . import partition as _part

last_report = None

# A piece's search has a time limit, so it is bounded by operator budget 0
# too (each operator class as often as in the piece: no recomputation;
# docs/SEARCH.md, "Operator budget"): without it the space of a LayerNorm
# with its affine [4, 64, 128] takes 88 s to reach its one-kernel best, and a
# piece stopped at the limit is kept as written; with it, 0.7 s, complete.
# options= entries replace these, {"op_budget": -1} the whole space.
DEFAULT_OPTIONS = {"time_limit": 10, "op_budget": 0}


def _make_piece_module(pp, kern):
    import torch

    class Piece(torch.nn.Module):
        """One searched piece: binds its inputs (transposes, reshapes,
        constant parameters prepared once) and runs the generated kernel."""

        def __init__(self):
            super().__init__()
            self.bindings = pp.bindings
            self.kernel = kern
            self.consts = {}
            self.out_shapes = [pp.an.meta[n][0] for n, _v in pp.outputs]
            for i, b in enumerate(pp.bindings):
                if isinstance(b.source, _fx.ParamRef):
                    self.consts[i] = b.apply(b.source.tensor.detach()).contiguous()

        def forward(self, *vals):
            # A binding without a transpose is a reshape, which the kernel
            # call does where it must (Kernel.__call__ reads a contiguous
            # tensor of the element count as it is).
            it = iter(vals)
            ins = [self.consts[i] if i in self.consts else
                   (b.apply(next(it)) if b.transpose else next(it))
                   for i, b in enumerate(self.bindings)]
            outs = self.kernel(*ins)
            return tuple(o.reshape(s) for o, s in zip(outs, self.out_shapes))

    return Piece()


def _stitch(gm, an, replaced):
    """A new GraphModule: gm's nodes, each replaced piece as one call
    (call_module of its Piece) followed by getitem per output, in a
    topological order of pieces and the other nodes."""
    import torch
    import torch.fx
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    owner = {}
    for k, (pp, _mod) in enumerate(replaced):
        for n in pp.nodes:
            owner[n] = k
    items = [("node", n) for n in nodes if n not in owner] + \
        [("piece", k) for k in range(len(replaced))]

    def deps(item):
        kind, x = item
        if kind == "node":
            ins = x.all_input_nodes
        else:
            pp = replaced[x][0]
            ins = [b.source for b in pp.bindings if not isinstance(b.source, _fx.ParamRef)]
        return [("piece", owner[a]) if a in owner else ("node", a) for a in ins]

    def prio(item):
        kind, x = item
        return index[x] if kind == "node" else max(index[n] for n in replaced[x][0].nodes)

    indeg = {it: 0 for it in items}
    users = {it: [] for it in items}
    for it in items:
        for d in set(deps(it)):
            if d != it:
                indeg[it] += 1
                users[d].append(it)
    import heapq
    pos = {it: i for i, it in enumerate(items)}
    ready = [(prio(it), pos[it], it) for it in items if indeg[it] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _p, _i, it = heapq.heappop(ready)
        order.append(it)
        for u in users[it]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, (prio(u), pos[u], u))
    if len(order) != len(items):
        raise RuntimeError("mirsearch: the pieces are not convex (a cycle)")
    g = torch.fx.Graph()
    env = {}
    for kind, x in order:
        if kind == "node":
            env[x] = g.node_copy(x, lambda a: env[a])
            continue
        pp, mod = replaced[x]
        name = "mirsearch_piece_%d" % x
        gm.add_submodule(name, mod)
        args = tuple(env[b.source] for b in pp.bindings
                     if not isinstance(b.source, _fx.ParamRef))
        call = g.call_module(name, args)
        for j, (n, _v) in enumerate(pp.outputs):
            env[n] = g.call_function(__import__("operator").getitem, (call, j))
        for n in pp.nodes:
            if n not in env:
                env[n] = None  # absorbed or internal: never read outside
    new = torch.fx.GraphModule(gm, g)
    return new


def _pinned(gm, example_inputs):
    """{position: name} of gm's placeholders that hold module state:
    torch.compile (torch 2.x) hands a module's parameters and buffers to
    the backend as graph inputs, each marked as a static address
    (_dynamo_static_input_type) with its source (L['self']._buffers
    ['bias']) in the placeholder's grapharg.  Dynamo guards none of their
    values ("unguarded"; "guarded" guards the address alone), so a value
    read from them at compile time holds only under _BufferGuard's
    call-time check.  Real tensors only (no fake ones, no inference
    tensors, which have no version counter)."""
    import torch
    out = {}
    places = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (n, t) in enumerate(zip(places, example_inputs)):
        if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.is_inference():
            continue
        src = getattr(n.meta.get("grapharg"), "source", None)
        name = getattr(src, "name", None)
        name = name() if callable(name) else name
        if getattr(t, "_dynamo_static_input_type", None) or "._buffers[" in str(name):
            out[i] = name or n.name
    return out


GUARDS = ("auto", "value", "version")


def _regions(gm, pos):
    """The indices through which gm reads its placeholder at position pos,
    where every reader is a getitem with constant basic indices (a mask
    buffer sliced to the sequence: bias[:, :, :8, :8]), so a guard need
    compare only those elements; None where anything else reads it (the
    whole tensor is compared)."""
    import torch.fx
    places = [n for n in gm.graph.nodes if n.op == "placeholder"]
    out = []
    for u in places[pos].users:
        if not (u.op == "call_function" and u.target is operator.getitem and
                len(u.args) == 2 and u.args[0] is places[pos]):
            return None
        idx = u.args[1]
        flat = []
        torch.fx.node.map_arg(idx, flat.append)
        items = idx if isinstance(idx, tuple) else (idx,)
        if flat or not all(i is None or i is Ellipsis or (isinstance(i, int) and
                                                           not isinstance(i, bool)) or
                           (isinstance(i, slice) and all(v is None or isinstance(v, int)
                                                         for v in (i.start, i.stop, i.step)))
                           for i in items):
            return None
        if idx not in out:
            out.append(idx)
    return out or None


class _BufferGuard:
    """The call-time check for one pinned input whose value a replaced
    piece assumed (a causal mask buffer absorbed into causal_mask).

    By value (guard "value", and "auto" for a CPU tensor): the elements
    the graph reads (its regions, else the whole tensor) are compared with
    a compile-time copy at every call, so any write shows, also one that
    bumps no version counter (through .numpy(), a DLPack or buffer-protocol
    view, a raw pointer).  Its cost grows with the elements read: the T x
    T of a mask sliced to the sequence, less than the replaced kernel
    itself reads.

    By version (guard "version", and "auto" for a CUDA tensor, where a
    compare would synchronize the stream at every call): the tensor
    handed in must have the compile-time one's storage address and
    version counter (bumped by every in-place write through PyTorch),
    two attribute reads; where either differs its value is compared once
    with the compile-time copy: equal re-arms the check on the new
    tensor, different fails until the next change.  The compile-time
    tensor is held, so its address cannot be reused by another."""

    def __init__(self, pos, name, t, regions=None, guard="auto"):
        self.pos, self.name = pos, name
        self.by_value = guard == "value" or (guard == "auto" and t.device.type == "cpu")
        t = t.detach()
        if self.by_value:
            self.refs = [(None, t.clone())] if regions is None else \
                [(idx, t[idx].clone()) for idx in regions]
            self.how = "by value: %s compared" % (
                "the whole tensor" if regions is None else
                " and ".join("[%s]" % _index_text(idx) for idx in regions))
            return
        self.value = t.clone()
        self.bad = None
        self._arm(t)
        self.how = "by address and version counter"

    def _arm(self, t):
        self.ref, self.ptr, self.version = t, t.data_ptr(), t._version

    def holds(self, t):
        if self.by_value:
            return self._same(t)
        import torch
        key = (t.data_ptr(), t._version)
        if key == (self.ptr, self.version):
            return True
        if key == self.bad:
            return False
        if t.shape == self.value.shape and t.dtype == self.value.dtype and \
                t.device == self.value.device and torch.equal(t.detach(), self.value):
            self._arm(t)
            self.bad = None
            return True
        self.bad = key
        return False

    def _same(self, t):
        import torch
        if t.requires_grad:
            t = t.detach()
        try:
            for idx, ref in self.refs:
                v = t if idx is None else t[idx]
                if v.dtype != ref.dtype or v.device != ref.device or not torch.equal(v, ref):
                    return False
        except (IndexError, RuntimeError):  # (a smaller tensor handed in)
            return False
        return True


def _index_text(idx):
    """bias[:, :, :8, :8]'s index as Python writes it: ':, :, :8, :8'."""
    def one(i):
        if isinstance(i, slice):
            return "%s:%s%s" % ("" if i.start is None else i.start,
                                "" if i.stop is None else i.stop,
                                "" if i.step is None else ":%d" % i.step)
        return "..." if i is Ellipsis else repr(i)
    return ", ".join(one(i) for i in (idx if isinstance(idx, tuple) else (idx,)))


def _guards(an, replaced):
    """The positions of the pinned placeholders whose values a replaced
    piece's absorbed (constant) nodes come from, through any path
    (trace()'s meta["mirs_pinned"])."""
    used = set()
    for pp, _mod in replaced:
        for n in pp.nodes:
            if n in an.absorbed:
                used |= n.meta.get("mirs_pinned", set())
    return used


def _guarded(fused, plain, guards):
    """fused (the stitched module) where every guard holds, else plain
    (the graph as Dynamo handed it: PyTorch code) for that call, said
    once."""
    import torch

    class Guarded(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fused, self.plain = fused, plain
            self.guards = guards
            self.fallbacks = 0

        def forward(self, *args):
            bad = [g for g in self.guards if not g.holds(args[g.pos])]
            if not bad:
                return self.fused(*args)
            if not self.fallbacks:
                _say(True, "%s changed since compile time (written in place or replaced): "
                     "the graph runs its PyTorch code while it differs"
                     % ", ".join(g.name for g in bad))
            self.fallbacks += 1
            return self.plain(*args)

    return Guarded()


def _mode(mode, example_inputs):
    mode = mode or os.environ.get("MIRSEARCH_BACKEND_MODE") or "auto"
    if mode not in ("auto", "cuda", "host", "eager"):
        raise ValueError("mirsearch backend mode must be auto, cuda, host or eager, not %r"
                         % (mode,))
    if mode == "auto":
        on_gpu = any(getattr(getattr(t, "device", None), "type", "") == "cuda"
                     for t in example_inputs)
        mode = "cuda" if on_gpu else "eager"
    return mode


def _say(verbose, msg):
    if verbose:
        print("mirsearch: " + msg, file=sys.stderr)


def _ops_of(pp):
    return [line.split("=")[1].split("(")[0].strip() for line in pp.text.splitlines()
            if "=" in line and not line.startswith(("input", "program", "#"))]


def _how(r):
    if r["source"] == "cache":
        return "from the cache (no search)"
    if r.get("partition"):
        pr = r["partition"]
        return "partitioned by the library into %d piece(s) (%d searched, %d from its cache, " \
            "%d kept) in %.1f s, verified" % (pr["pieces"], pr["searched"], pr["cached"],
                                             pr["kept"], r["seconds"])
    return "searched in %.1f s%s" % (r["seconds"], "" if r["complete"] else
                                    " (stopped by the time limit)")


def backend(gm, example_inputs, mode=None, options=None, max_ops=4, cache_dir=None,
            use_cache=True, verbose=True, library_partition="auto", guard="auto"):
    """Compile gm (an fx GraphModule) for example_inputs; see the module
    docstring.  options: mirsearch search options per piece (default
    DEFAULT_OPTIONS); max_ops: program ops per piece.  library_partition:
    "auto" hands each connected region of supported nodes to the
    library's partition call where the library has it (mirsearch/
    partition.h), True requires it, False always cuts pieces here.
    guard: how a module buffer read as a constant is checked at each
    call (_BufferGuard): "value" compares the elements read, "version"
    the address and version counter, "auto" by value on the CPU and by
    version on a GPU."""
    global last_report
    from .kernel import Kernel
    if guard not in GUARDS:
        raise ValueError("mirsearch backend guard must be auto, value or version, not %r"
                         % (guard,))
    mode = _mode(mode, example_inputs)
    opts = dict(DEFAULT_OPTIONS)
    opts.update(options or {})
    use_lib = _part.library_has_partition() if library_partition == "auto" else \
        bool(library_partition)
    if use_lib and not _part.library_has_partition():
        raise RuntimeError("this libmirsearch has no partition call (mirs_partition_create)")
    plain = gm
    pinned = _pinned(gm, example_inputs)
    gm = _fx.trace(gm, example_inputs, pinned=pinned)
    an = _fx.Analysis(gm, layout=False)
    report = {"mode": mode, "pieces": [], "unsupported": an.unsupported(),
              "library_partition": use_lib}
    for name, what, why in report["unsupported"]:
        _say(verbose, "node %s (%s) stays PyTorch code: %s" % (name, what, why))
    # Work items: ("region", nodes) for the library's partition call,
    # ("piece", nodes) for a search here.
    if use_lib:
        todo = [("region", r) for r in _part.split(an, max_ops=None)]
    else:
        todo = [("piece", p) for p in _part.split(an, max_ops=max_ops)]
    replaced = []
    k = 0
    while todo:
        kind, nodes = todo.pop(0)
        pp = _fx.PieceProgram(an, nodes, "%s_piece%d" % (type(gm).__name__, k))
        ops = _ops_of(pp)
        if kind == "region":
            r = _part.partition_piece(pp.program, opts, cache_dir=cache_dir, use_cache=use_cache)
            if r["best"] is None:
                _say(verbose, "region %d (%s): the library's partition gave nothing (%s): "
                     "searching its pieces here" % (k, ", ".join(ops), r.get("why", "")))
                todo[:0] = [("piece", p) for p in _part.split(an, max_ops=max_ops,
                                                              within=nodes)]
                continue
        else:
            r = _part.search_piece(pp.program, opts, cache_dir=cache_dir, use_cache=use_cache)
        how = _how(r)
        halves = _part.halves(an, nodes) if r["best"] is None else None
        if halves:
            # Too large to find anything within the limit: search its two
            # halves (each convex: a prefix and a suffix in graph order).
            _say(verbose, "piece %d (%s): %s, no result: split in two"
                 % (k, ", ".join(ops), how))
            todo[:0] = [("piece", h) for h in halves]
            continue
        entry = {"index": k, "ops": ops, "source": r["source"], "cost": r["cost"],
                 "unfused": r["unfused"], "complete": r["complete"],
                 "seconds": r["seconds"], "program": pp.text, "replaced": False,
                 "best": r["best"].text if r["best"] is not None else None,
                 "partition": r.get("partition")}
        if r["best"] is None:
            _say(verbose, "piece %d (%s): %s, no result: stays PyTorch code"
                 % (k, ", ".join(ops), how))
        else:
            sp = (r["unfused"] / r["cost"]) if r["unfused"] and r["cost"] else 1.0
            entry["speedup"] = sp
            worth = r["cost"] <= (r["unfused"] or float("inf"))
            if mode in ("host", "cuda") and worth:
                kern = Kernel(r["best"], mode, cache_dir=cache_dir)
                replaced.append((pp, _make_piece_module(pp, kern)))
                entry["replaced"] = True
                entry["compiled"] = kern.compiled
            _say(verbose, "%s %d (%s): %s, %d kernel(s), predicted %.2f us vs %.2f us as "
                 "written (%.2fx)%s" % ("region" if kind == "region" else "piece", k,
                                        ", ".join(ops), how, r["best"].num_ops,
                                        r["cost"] * 1e6, (r["unfused"] or 0) * 1e6, sp,
                                        "; runs the %s kernel" % mode if entry["replaced"]
                                        else "; runs its PyTorch code"))
        report["pieces"].append(entry)
        k += 1
    out = _stitch(gm, an, replaced) if replaced else gm
    used = _guards(an, replaced)
    report["guarded"] = [pinned[i] for i in sorted(used)]
    if used:
        args = list(example_inputs)
        guards = [_BufferGuard(i, pinned[i], args[i], _regions(gm, i), guard)
                  for i in sorted(used)]
        out = _guarded(out, plain, guards)
        report["guard"] = {g.name: g.how for g in guards}
        _say(verbose, "%s read as constant(s): checked at each call (%s)" % (
            ", ".join(report["guarded"]), "; ".join(g.how for g in guards)))
    out.mirsearch_report = report
    last_report = report
    return out


def make_backend(**kw):
    """backend with its keyword arguments fixed, for torch.compile:
    torch.compile(m, backend=mirsearch.make_backend(mode="host"))."""
    return functools.partial(backend, **kw)
