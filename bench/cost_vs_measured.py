#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/cost_vs_measured.py - the cost model against device measurements.

For every µGraph listed in a measured.tsv (bench/device/DATE-DEVICE/), print
the time the cost model predicts (`mirsearch show FILE --device=DEV`, its
first line: "... predicted T us on DEV"), the measured median, their ratio, and summary figures:
median and max |log2(predicted / measured)|, and Spearman's rank correlation
overall and within each group (rank_gqa/, each splitk/NAME/: candidates of
one program, where the model's order is what picks the best).

Rows named by --exclude (default: the µGraphs measured while the generator
had a known defect, see measured.tsv's header) are printed but left out of
every summary figure.

With --check, exit 1 when a figure is outside the bound given:
  --max-median-log2 X   median |log2 ratio| over the kept rows must be <= X
  --min-spearman G=R    Spearman within group G must be >= R (repeatable)
(the drift test, tests/cost_measured.sh, runs it that way).  Exit 2 on
bad input (a missing file, a line mirsearch could not cost).

Invariants: reads only; one `mirsearch show` per µGraph; the figures are a
pure function of measured.tsv, the µGraph files and the model.
"""
import argparse
import math
import os
import re
import subprocess
import sys

DEFAULT_EXCLUDE = [
    # V normalised per element (quadratic) by the generator of cdbb0bb.
    "best/qknorm_attention.ugraph",
    "splitk/qknorm_attention/0037-ad7dc049568c4b55.ugraph",
]


def die(msg):
    sys.stderr.write("cost_vs_measured: %s\n" % msg)
    sys.exit(2)


def read_measured(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line or line.startswith("#") or line.startswith("ugraph\t"):
                    continue
                parts = line.split("\t")
                if len(parts) != 2:
                    die("%s:%d: expected 'ugraph<TAB>measured_us'" % (path, n))
                try:
                    us = float(parts[1])
                except ValueError:
                    die("%s:%d: not a number: %r" % (path, n, parts[1]))
                rows.append((parts[0], us))
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    if not rows:
        die("%s: no measurements" % path)
    return rows


def group_of(name):
    """rank_gqa, splitk/NAME, or best (one result per program: no group)."""
    parts = name.split("/")
    if parts[0] == "splitk" and len(parts) >= 3:
        return "splitk/" + parts[1]
    return parts[0]


def predict(mirsearch, path, device, extra):
    cmd = [mirsearch, "show", path, "--device=" + device] + extra
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, check=False)
    except OSError as e:
        die("%s: %s" % (mirsearch, e.strerror))
    if out.returncode != 0:
        die("%s failed (%d): %s" % (" ".join(cmd), out.returncode, out.stderr.strip()))
    m = re.search(r"^ugraph \S+: (\d+) kernels? .*, predicted ([0-9.]+|inf) us on ", out.stdout,
                  re.M)
    if not m:
        die("%s: no 'predicted ... us on' line" % " ".join(cmd))
    return float(m.group(2)), int(m.group(1))


def ranks(xs):
    """Ranks 1..n, ties averaged."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return float("nan")
    return cov / math.sqrt(va * vb)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.path.join(here, "device", "2026-11-27-h200"),
                    help="folder with measured.tsv and the µGraphs it names")
    ap.add_argument("--mirsearch", default=os.path.join(here, "..", "src", "mirsearch"))
    ap.add_argument("--device", default="H200")
    ap.add_argument("--exclude", action="append", default=None,
                    help="a µGraph left out of the figures (repeatable; default: "
                    + ", ".join(DEFAULT_EXCLUDE) + ")")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--max-median-log2", type=float, default=None)
    ap.add_argument("--min-spearman", action="append", default=[],
                    help="GROUP=R: Spearman within GROUP at least R (with --check)")
    ap.add_argument("-q", "--quiet", action="store_true", help="summary only")
    ap.add_argument("mirsearch_args", nargs="*", help="extra options for mirsearch show")
    args = ap.parse_args()
    exclude = set(DEFAULT_EXCLUDE if args.exclude is None else args.exclude)

    rows = read_measured(os.path.join(args.dir, "measured.tsv"))
    table = []
    for name, meas in rows:
        path = os.path.join(args.dir, name)
        if not os.path.isfile(path):
            die("%s: no such file" % path)
        pred, nk = predict(args.mirsearch, path, args.device, args.mirsearch_args)
        table.append((name, group_of(name), nk, pred, meas, name in exclude))

    if not args.quiet:
        print("%-54s %2s %10s %10s %7s %6s" % ("ugraph", "k", "pred_us", "meas_us", "ratio",
                                                "log2"))
        for name, grp, nk, pred, meas, ex in table:
            r = pred / meas
            print("%-54s %2d %10.3f %10.3f %7.3f %+6.2f%s" % (name, nk, pred, meas, r,
                                                             math.log2(r),
                                                             "  (excluded)" if ex else ""))
        print()

    kept = [t for t in table if not t[5]]
    figs = {}

    def summary(label, sel):
        if not sel:
            return
        l2 = [abs(math.log2(t[3] / t[4])) for t in sel]
        rho = spearman([t[3] for t in sel], [t[4] for t in sel])
        figs[label] = (median(l2), max(l2), rho, len(sel))
        print("%-26s n=%2d  median |log2| %.3f  max |log2| %.3f  Spearman %+.2f" %
              (label, len(sel), median(l2), max(l2), rho))

    summary("all", kept)
    summary("fit (best+rank_gqa)", [t for t in kept if t[1] in ("best", "rank_gqa")])
    summary("held out (splitk)", [t for t in kept if t[1].startswith("splitk/")])
    summary("held out, no qknorm", [t for t in kept if t[1].startswith("splitk/")
                                     and t[1] != "splitk/qknorm_attention"])
    for grp in sorted({t[1] for t in kept if t[1] != "best"}):
        summary("within " + grp, [t for t in kept if t[1] == grp])

    if args.check:
        bad = []
        if args.max_median_log2 is not None and figs["all"][0] > args.max_median_log2:
            bad.append("median |log2 ratio| %.3f > %.3f" % (figs["all"][0], args.max_median_log2))
        for spec in args.min_spearman:
            if "=" not in spec:
                die("--min-spearman wants GROUP=R, not %r" % spec)
            grp, r = spec.rsplit("=", 1)
            key = "within " + grp if grp not in figs else grp
            if key not in figs:
                die("no group %r" % grp)
            if not figs[key][2] >= float(r):
                bad.append("Spearman within %s %+.2f < %s" % (grp, figs[key][2], r))
        if bad:
            for b in bad:
                print("DRIFT: " + b)
            return 1
        print("within bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
