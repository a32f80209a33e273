# SPDX-License-Identifier: MIT
"""Cutting an fx graph into pieces mirsearch searches, and searching them.

split() groups the supported nodes of an Analysis (fx.py) into pieces:
connected through their data edges, of one dtype, at most max_ops
program ops each (so each search is small enough to finish), and convex:
no path leaves a piece and comes back into it through other nodes, so
each piece can run as one call at one place in the graph.  The greedy
merge visits edges in graph order; a merge that would break a bound or
convexity is skipped.

search_piece() runs the search of one piece program, or takes its best
from the result cache: the library's (option cache_dir, where the library
has it: mirsearch/partition.h) or else this package's (cache.py), keyed by
the program's canonical hash and the options.  Where the library has the
partition call (mirs_partition_create), partition_program() hands it a
whole program instead (see docs/PYTHON.md)."""

import ctypes
import json
import os
import time

from . import _lib
from . import cache as _cache
from .core import Context, Error, Program, Search


def split(an, max_ops=4, within=None):
    """Pieces of an Analysis: a list of lists of fx nodes (roots and their
    absorbed nodes), in graph order.  max_ops None: no bound (the maximal
    convex regions); within: only these nodes."""
    nodes = list(an.gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    group = {}
    members = {}
    weight = {}
    for n in nodes:
        if n in an.ops and (within is None or n in within):
            group[n] = n
            members[n] = set(an.members(n))
            weight[n] = len(an.ops[n])
    for n, r in an.absorbed.items():
        if r in group:
            group[n] = r

    def find(n):
        while group[n] is not n and group[n] in group and group[group[n]] is not group[n]:
            group[n] = group[group[n]]
        g = group[n]
        while group.get(g) is not g:
            g = group[g]
        return g

    def reaches(src, dst, inside):
        """A path from group src to group dst through a node outside `inside`."""
        stack = [u for m in members[src] for u in m.users if u not in inside]
        seen = set()
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u in members[dst]:
                return True
            stack.extend(u.users)
        return False

    for v in nodes:
        if v not in members:
            continue
        for m in sorted(members[v], key=index.get):
            for a in m.all_input_nodes:
                if a not in group:
                    continue
                ga, gv = find(a), find(v)
                if ga is gv or an.meta[ga][1] != an.meta[gv][1]:
                    continue
                if max_ops is not None and weight[ga] + weight[gv] > max_ops:
                    continue
                inside = members[ga] | members[gv]
                if reaches(ga, gv, inside) or reaches(gv, ga, inside):
                    continue
                keep, drop = (ga, gv) if index[ga] < index[gv] else (gv, ga)
                members[keep] |= members.pop(drop)
                weight[keep] += weight.pop(drop)
                group[drop] = keep
    pieces = [sorted(ms, key=index.get) for g, ms in members.items()]
    pieces.sort(key=lambda p: index[p[0]])
    return pieces


def halves(an, nodes):
    """A piece of more than one unit cut into a prefix and a suffix of its
    units in graph order (both stay convex: a path between two nodes of a
    convex piece stays in it, and runs forward in graph order); None for a
    piece of one unit."""
    roots = [n for n in nodes if n in an.ops]
    if len(roots) < 2:
        return None
    cut = len(roots) // 2
    order = {n: i for i, n in enumerate(nodes)}
    out = []
    for part in (roots[:cut], roots[cut:]):
        ms = set()
        for r in part:
            ms.update(an.members(r))
        out.append(sorted(ms, key=order.get))
    return out


def search_piece(program, options, cache_dir=None, use_cache=True):
    """The best µGraph of program (a Program) under options: a dict with
    best (a Program or None), cost, unfused (predicted seconds of the
    program as written), kernels, source ("cache" or "search"), seconds
    and complete."""
    key = _cache.key(program, options)
    rc = _cache.ResultCache(cache_dir)
    if use_cache:
        hit = rc.get(key)
        if hit is not None and hit.get("program") == program.text:
            best = Program.parse(hit["best"], "cache") if hit.get("best") else None
            return dict(hit, best=best, source="cache", seconds=0.0)
    t0 = time.time()
    ctx = Context(options=options, quiet=True)
    s = Search(Program.parse(program.text, program.name + ".graph", ctx), ctx).run(top=1)
    best = s.best
    entry = {
        "program": program.text,
        "best": best.text if best is not None else None,
        "cost": s.best_cost if best is not None else None,
        "unfused": (s.report.get("unfused") or {}).get("predicted_seconds"),
        "kernels": best.num_ops if best is not None else None,
        "complete": bool(s.complete),
        "states": s.report.get("states_explored"),
    }
    if use_cache:
        rc.put(key, entry)
    out = dict(entry, best=Program.parse(best.text, "best") if best is not None else None,
               source="search", seconds=time.time() - t0)
    s.close()
    return out


# ---------------------------------------------------------------- the library's partition call

def library_has_partition():
    """Whether the loaded libmirsearch has mirs_partition_create."""
    return _lib.has("mirs_partition_create")


def _declare_partition():
    vp = ctypes.c_void_p
    for name, res, args in (
            ("mirs_partition_create", ctypes.c_int, [vp, vp, ctypes.POINTER(vp)]),
            ("mirs_partition_run", ctypes.c_int, [vp]),
            ("mirs_partition_stopped", ctypes.c_int, [vp]),
            ("mirs_partition_result", vp, [vp]),
            ("mirs_partition_report_json", ctypes.c_int,
             [vp, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_size_t)]),
            ("mirs_partition_report_table", ctypes.c_int,
             [vp, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_size_t)]),
            ("mirs_partition_destroy", None, [vp])):
        if name not in _lib._PROTOS:
            _lib.declare(name, res, args)


class Partition:
    """The library's partition of a whole program (mirsearch/partition.h):
    cut into pieces, each searched or taken from the library's result cache
    (option cache_dir), stitched into one µGraph verified against the
    program.  After run(): .result (the stitched Program, or None when
    stopped), .report (partition.json as a dict), .table (for people)."""

    def __init__(self, program, options=None, ctx=None):
        if not library_has_partition():
            raise Error("UNSUPPORTED", "this libmirsearch has no partition call")
        _declare_partition()
        self.ctx = ctx or Context(options=options, quiet=True)
        self._L = self.ctx._L
        self.program = Program.parse(program.text, program.name + ".graph", self.ctx)
        h = ctypes.c_void_p()
        self.ctx.check(self._L.mirs_partition_create(self.ctx.handle, self.program.handle,
                                                     ctypes.byref(h)), "partition")
        self._h = h
        self.result, self.report, self.table, self.stopped = None, None, "", False

    def _text(self, fn):
        p = ctypes.c_void_p()
        n = ctypes.c_size_t()
        self.ctx.check(fn(self._h, ctypes.byref(p), ctypes.byref(n)), "partition report")
        return self.ctx.take_string(p)

    def run(self):
        self.ctx.check(self._L.mirs_partition_run(self._h), "partition")
        self.stopped = bool(self._L.mirs_partition_stopped(self._h))
        g = self._L.mirs_partition_result(self._h)
        if g and not self.stopped:
            p = ctypes.c_void_p()
            self.ctx.check(self._L.mirs_graph_to_string(ctypes.c_void_p(g), ctypes.byref(p)),
                           "partition result")
            self.result = Program.parse(self.ctx.take_string(p), "stitched", self.ctx)
        self.report = json.loads(self._text(self._L.mirs_partition_report_json))
        self.table = self._text(self._L.mirs_partition_report_table)
        return self

    def close(self):
        if getattr(self, "_h", None):
            if not self.ctx.closed:
                self._L.mirs_partition_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()


def _kinds(report):
    """Counts of the piece kinds in a partition report."""
    out = {k: int(report.get(k, 0) or 0) for k in ("searched", "cached", "kept", "library")}
    out["pieces"] = int(report.get("pieces_total", len(report.get("pieces", []))) or 0)
    return out


def partition_piece(program, options, cache_dir=None, use_cache=True):
    """search_piece's result for a whole region, through the library's
    partition call: best is the stitched µGraph.  The stitched µGraph is
    also kept in this package's cache under the region's key, so a second
    compile needs no search even where the library stored nothing (it
    stores complete searches only, and a time limit may stop one)."""
    opts = dict(options)
    key = _cache.key(program, dict(opts, partition="library"))
    rc = _cache.ResultCache(cache_dir)
    if use_cache:
        hit = rc.get(key)
        if hit is not None and hit.get("program") == program.text and hit.get("best"):
            return dict(hit, best=Program.parse(hit["best"], "cache"), source="cache",
                        seconds=0.0)
    if use_cache:
        opts.setdefault("cache_dir", os.path.join(cache_dir or _cache.default_dir(), "library"))
    t0 = time.time()
    try:
        part = Partition(program, opts).run()
    except Error as e:
        return {"best": None, "why": str(e), "source": "search", "seconds": time.time() - t0,
                "cost": None, "unfused": None, "complete": False}
    rep = part.report
    if part.result is None:
        part.close()
        return {"best": None, "why": "the partition stopped", "source": "search",
                "seconds": time.time() - t0, "cost": None, "unfused": None, "complete": False}
    entry = {
        "program": program.text,
        "best": part.result.text,
        "cost": rep.get("predicted_seconds_after"),
        "unfused": rep.get("predicted_seconds_before"),
        "kernels": part.result.num_ops,
        "complete": all(bool(pc.get("complete", True)) for pc in rep.get("pieces", [])),
        "partition": _kinds(rep),
        "table": part.table,
    }
    best = Program.parse(part.result.text, "stitched")
    part.close()
    if use_cache:
        rc.put(key, entry)
    return dict(entry, best=best, source="search", seconds=time.time() - t0)
