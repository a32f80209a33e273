#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Functions in src/ longer than a limit (default 120 lines).

Usage: scripts/long-functions.py [LIMIT] [FILES...]
The sources are clang-formatted: a function body opens with a line ending
in '{' that starts at column 0 (not a struct, enum, union or initializer)
and closes with a '}' at column 0.  Prints 'FILE:LINE: NAME: N lines' for
each function over LIMIT, longest first; exits 1 when there is one.
"""
import glob
import re
import sys

HEAD = re.compile(r"^[A-Za-z_][^;=]*\b([A-Za-z_][A-Za-z0-9_]*)\s*\([^;]*\)\s*\{\s*$")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i
        m = HEAD.match(line)
        if not m and re.match(r"^[A-Za-z_].*\($", line) or (not m and re.match(r"^[A-Za-z_][^;{}]*\([^;{}]*,$", line)):
            # signature over several lines
            j = i
            sig = line
            while j + 1 < len(lines) and not sig.rstrip().endswith("{") and not sig.rstrip().endswith(";"):
                j += 1
                sig += " " + lines[j].strip()
            m = HEAD.match(sig)
            if m:
                i = j
        if m and not re.match(r"^(typedef|struct|enum|union|static const|const)\b.*[=]", line):
            j = i + 1
            while j < len(lines) and lines[j] != "}":
                j += 1
            yield start + 1, m.group(1), j - start + 1
            i = j
        i += 1


def main():
    args = sys.argv[1:]
    limit = int(args.pop(0)) if args and args[0].isdigit() else 120
    files = args or sorted(glob.glob("src/*/*.c") + glob.glob("src/*/*.h"))
    long = []
    for f in files:
        for line, name, n in functions(f):
            if n > limit:
                long.append((n, f, line, name))
    for n, f, line, name in sorted(long, reverse=True):
        print(f"{f}:{line}: {name}: {n} lines")
    print(f"{len(long)} function(s) over {limit} lines")
    sys.exit(1 if long else 0)


if __name__ == "__main__":
    main()
