#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Which source file uses which: the file-level call graph of src/, read
from the object files of a build (nm), and the cycles in it.

Usage: scripts/file-cycles.py [BUILD_DIR] [--edges]
A file A "uses" B when A's object has an undefined symbol that B's object
defines.  Prints each strongly connected component of more than one file
(a call cycle), the number of files in cycles and the largest cycle; with
--edges, every edge.  Exit 0 always (a report, not a check).
"""
import collections
import os
import subprocess
import sys


def objects(build):
    out = {}
    for root, _, files in os.walk(os.path.join(build, "src")):
        for f in files:
            if not f.endswith(".o") or "/.libs" in root:
                continue
            name = f[:-2]
            for pfx in ("libmirs_la-", "libmirscli_la-", "libmirs_gpufp_la-"):
                if name.startswith(pfx):
                    name = name[len(pfx):]
            mod = os.path.relpath(root, os.path.join(build, "src"))
            out[f"{mod}/{name}.c"] = os.path.join(root, f)
    return out


def symbols(path):
    text = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVW":
            defined.add(parts[2])
    return defined, undefined


def sccs(nodes, edges):
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = args[0] if args else "."
    objs = objects(build)
    if not objs:
        sys.exit(f"{build}: no object files under src/ (build first)")
    owner, uses = {}, {}
    for f, path in objs.items():
        d, u = symbols(path)
        uses[f] = u
        for s in d:
            owner.setdefault(s, f)
    edges = collections.defaultdict(set)
    for f, u in uses.items():
        for s in u:
            g = owner.get(s)
            if g and g != f:
                edges[f].add(g)
    if "--edges" in sys.argv:
        for f in sorted(edges):
            print(f"{f} -> {' '.join(sorted(edges[f]))}")
    cycles = [c for c in sccs(objs.keys(), edges) if len(c) > 1]
    for c in sorted(cycles, key=len, reverse=True):
        print(f"cycle of {len(c)}: {' '.join(c)}")
    print(f"files in cycles: {sum(len(c) for c in cycles)}; largest cycle: "
          f"{max((len(c) for c in cycles), default=0)} files")


if __name__ == "__main__":
    main()
