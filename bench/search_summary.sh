#!/bin/bash
# SPDX-License-Identifier: MIT
# What a search over the small examples gives, for comparing two builds
# side by side (issue 28 item 7: behaviour unchanged by a restructuring).
#
# Usage: bench/search_summary.sh BINDIR OUTDIR [EXAMPLES_DIR]
#   BINDIR holds a mirsearch binary and its libmirsearch.so* (copies of a
#   build's src/.libs/mirsearch and .libs/libmirsearch.so*, so an old build
#   survives the next `make`).
# For each examples/*_small.graph: --threads=1, 2, 3; and --mpi on 2 ranks
# (mpiexec -n 2) for rmsnorm_linear_small and gated_mlp_small. Prints one
# line per run: states_explored, graphs_found, candidates_verified,
# prune_calls, the number of results, a hash of the result list (hash and
# cost of each, in order) and of best.ugraph. Diff two builds' outputs.
set -u
BIN=$1
OUT=$2
EX=${3:-$(dirname "$0")/../examples}
rm -rf "$OUT"
mkdir -p "$OUT"
run() { LD_LIBRARY_PATH=$BIN nice "$@" >/dev/null 2>&1; }
for g in "$EX"/*_small.graph; do
  n=$(basename "$g" .graph)
  for t in 1 2 3; do
    run "$BIN/mirsearch" -q "$g" --threads=$t --out="$OUT/$n.t$t" || echo "FAIL $n --threads=$t"
  done
done
for n in rmsnorm_linear_small gated_mlp_small; do
  run mpiexec -n 2 "$BIN/mirsearch" -q "$EX/$n.graph" --mpi --threads=1 --out="$OUT/$n.mpi" ||
    echo "FAIL $n --mpi"
done
python3 - "$OUT" <<'PY'
import glob, hashlib, json, os, sys
root = sys.argv[1]
for d in sorted(glob.glob(root + "/*.t[0-9]") + glob.glob(root + "/*.mpi")):
    r = json.load(open(d + "/report.json"))
    lst = " ".join(x["hash"] + ":%r" % x["cost"] for x in r["results"])
    best = open(d + "/best.ugraph", "rb").read() if os.path.exists(d + "/best.ugraph") else b""
    print(os.path.basename(d),
          "states=%s graphs=%s cand=%s prune=%s results=%d list=%s best=%s complete=%s" % (
              r["states_explored"], r["graphs_found"], r["candidates_verified"],
              r["prune_calls"], len(r["results"]), hashlib.sha1(lst.encode()).hexdigest()[:12],
              hashlib.sha1(best).hexdigest()[:12], r["complete"]))
PY
