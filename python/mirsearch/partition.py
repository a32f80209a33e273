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

import time

from . import cache as _cache
from .core import Context, Program, Search


def split(an, max_ops=4):
    """Pieces of an Analysis: a list of lists of fx nodes (roots and their
    absorbed nodes), in graph order."""
    nodes = list(an.gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    group = {}
    members = {}
    weight = {}
    for n in nodes:
        if n in an.ops:
            group[n] = n
            members[n] = set(an.members(n))
            weight[n] = len(an.ops[n])
    for n, r in an.absorbed.items():
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
        if v not in an.ops:
            continue
        for m in sorted(members[v], key=index.get):
            for a in m.all_input_nodes:
                if a not in group:
                    continue
                ga, gv = find(a), find(v)
                if ga is gv or an.meta[ga][1] != an.meta[gv][1]:
                    continue
                if weight[ga] + weight[gv] > max_ops:
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
