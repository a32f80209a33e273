#!/bin/sh
# SPDX-License-Identifier: MIT
# Output-write benchmark: searches one example with a redirected stderr (a
# batch job's log), reads how long mirsearch took to write its candidates
# and report.json, then rewrites the same candidate files the way
# mirsearch did before (one atomic write per file: temp file, fsync,
# rename, fsync of the directory) and times that, side by side on the same
# disk.  Prints one table row.
#
#   bench/write_bench.sh [MIRSEARCH] [EXAMPLE.graph] [EXTRA OPTIONS...]
#
# Defaults: src/mirsearch, examples/mha_small.graph (about 9,000 results;
# the search takes a few minutes on one core).  Output in bench/out/write/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bin=${1:-$top/src/mirsearch}
[ $# -gt 0 ] && shift
ex=${1:-$top/examples/mha_small.graph}
[ $# -gt 0 ] && shift
out=$here/out/write
rm -rf "$out"
mkdir -p "$out"
"$bin" --progress-interval=60 --out "$out/run" "$@" "$ex" >"$out/stdout" 2>"$out/log"
rc=$?
line=$(grep ' mirsearch: wrote \| wrote [0-9]* candidates' "$out/log" | tail -n 1)
n=$(echo "$line" | sed -n 's/.*wrote \([0-9]*\) candidates.*/\1/p')
secs=$(echo "$line" | sed -n 's/.* in \([0-9.]*\) s$/\1/p')
[ -n "$n" ] || { echo "no write line in the log (exit $rc):"; cat "$out/log"; exit 1; }
# The old way, on the same files: one atomic write (fsync + rename +
# directory fsync) per candidate.
old=$(python3 - "$out/run/candidates" "$out/old" <<'PY'
import os, sys, time
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
names = sorted(os.listdir(src))
data = [(n, open(os.path.join(src, n), "rb").read()) for n in names]
t0 = time.monotonic()
dfd = os.open(dst, os.O_RDONLY | os.O_DIRECTORY)
for n, d in data:
    tmp = os.path.join(dst, n + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, d)
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, os.path.join(dst, n))
    os.fsync(dfd)
os.close(dfd)
print("%.3f" % (time.monotonic() - t0))
PY
)
printf '%-20s %8s %12s %14s %8s\n' example results "write s" "old way s" ratio
awk -v e="$(basename "$ex" .graph)" -v n="$n" -v s="$secs" -v o="$old" \
  'BEGIN { printf "%-20s %8d %12.3f %14.3f %7.1fx\n", e, n, s, o, (s > 0 ? o / s : 0) }'
grep ' mirsearch: done: \| mirsearch: stopped: ' "$out/log" | tail -n 1
