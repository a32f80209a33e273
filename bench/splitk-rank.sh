#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/splitk-rank.sh [--prepare OUT SEARCHDIR...] | [DIR...]
# The split-K results of searches (split-K on, the default) against the one-kernel
# best, timed on a GPU (bench/RESULTS.md, "Split-K on the device").
#   --prepare OUT SEARCHDIR...  here: for each search output directory
#       (a search of examples/NAME.graph with split-K on, the default), OUT/NAME/candidates
#       gets the model's best 5 split-K results and its best one-kernel
#       result, under their report.json ranks, so that a name sorts in
#       the model's order
#   DIR...   on the device: `mirsearch bench --rank=DIR/NAME` for each
#       NAME (each candidate built with nvcc for sm_90, checked against
#       the float64 interpreter, timed with CUDA events, L2 flushed,
#       median of many runs, all in one process), then one table: the
#       one-kernel best against the fastest split-K result measured
# Environment: MIRSEARCH (default .devbundle/bin/mirsearch with its
# libraries, else src/mirsearch), NVCC.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --prepare ]; then
  [ $# -ge 3 ] || { echo "usage: $0 --prepare OUT SEARCHDIR..." >&2; exit 2; }
  out=$2; shift 2
  python3 - "$out" "$@" <<'PY' || exit 1
import json, os, shutil, sys
out = sys.argv[1]
for d in sys.argv[2:]:
    r = json.load(open(os.path.join(d, "report.json")))
    name = os.path.splitext(os.path.basename(r["program"]))[0]
    split = [x for x in r["results"] if x.get("split_k")][:5]
    one = [x for x in r["results"] if not x.get("split_k")][:1]
    if not split or not one:
        sys.exit("%s: no split-K result or no one-kernel result (a search with --split-k=0?)" % d)
    c = os.path.join(out, name, "candidates")
    shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    os.makedirs(c)
    for x in split + one:
        shutil.copy(os.path.join(d, x["file"]), c)
    with open(os.path.join(out, name, "one_kernel"), "w") as f:
        f.write(one[0]["file"] + "\n")
    print("%s: %d split-K + one-kernel rank %d" % (name, len(split), one[0]["rank"]))
PY
  exit 0
fi
bin=${MIRSEARCH:-}
lib=
if [ -z "$bin" ]; then
  if [ -x "$root/.devbundle/bin/mirsearch" ]; then bin=$root/.devbundle/bin/mirsearch; lib=$root/.devbundle/lib
  else bin=$root/src/mirsearch; fi
fi
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
st=0
tab=$(mktemp)
printf 'example\tone_kernel_us\tpredicted\tsplit_k_us\tpredicted\tsplit_k_file\tspeedup\tchecked\tdevice\n' >"$tab"
for d in "$@"; do
  n=$(basename "$d")
  rm -f "$d/measured.json"
  # (Exit 3 with measured.json: a candidate's harness failed, the others
  # were timed; its row says so.)
  LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 150 "$bin" bench \
    --codegen-nvcc="$nvcc" --codegen-arch=90 --rank="$d" --top=6 ||
    { echo "$n: bench --rank failed"; st=1; [ -s "$d/measured.json" ] || continue; }
  python3 - "$n" "$d" >>"$tab" <<'PY' || st=1
import json, os, sys
n, d = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(d, "measured.json")))
one_file = open(os.path.join(d, "one_kernel")).read().strip()
rows = m["results"]
one = [x for x in rows if x["file"] == one_file][0]
split = [x for x in rows if x["file"] != one_file and x["checked"] and x["measured_seconds"]]
us = lambda v: "%.3f" % (v * 1e6) if v else "-"
if not split:
    print("\t".join([n, us(one["measured_seconds"]), us(one["predicted_seconds"]), "-", "-", "-", "-", "no split-K result checked"]))
    sys.exit(1)
b = min(split, key=lambda x: x["measured_seconds"])
checked = all(x["checked"] for x in rows)
print("\t".join([n, us(one["measured_seconds"]), us(one["predicted_seconds"]), us(b["measured_seconds"]),
                 us(b["predicted_seconds"]), os.path.basename(b["file"]),
                 "%.2f" % (one["measured_seconds"] / b["measured_seconds"]) if one["measured_seconds"] else "-",
                 "all checked" if checked else "NOT ALL CHECKED", m["device"]]))
PY
done
echo "== split-K against the one-kernel best (measured medians, µs)"
column -t -s "$(printf '\t')" "$tab" 2>/dev/null || cat "$tab"
rm -f "$tab"
exit $st
