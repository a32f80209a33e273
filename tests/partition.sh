#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/partition.sh - `mirsearch partition` and the result cache from
# the command line: a transformer-like block (tests/partition_graphs/block.graph)
# is cut, searched, stitched and written, and the stitched µGraph
# verifies against the whole program (`mirsearch verify`); a second run
# is served from the cache (no state explored); `mirsearch FILE.graph`
# uses the cache too; two processes writing one cache directory at once
# leave it valid; damaged entries are ignored; a stopped partition exits
# 4 and writes nothing; bad input gives a clear message and exit 2; a
# piece at a permute is ranked in the whole stitched graph (the table,
# partition.json and `mirsearch show` agree; over MPI too); a
# Llama-style decoder layer with head splits (reshape, permute) is cut,
# stitched, verified and run.
#
# Run by `make check` with top_srcdir and top_builddir set.
# Exit: 0 pass, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
[ -x "$prog" ] || { echo "partition.sh: $prog not built" >&2; exit 1; }
unset MIRSEARCH_NO_CACHE

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_partition.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $1" >&2
  [ -f "$tmp/err" ] && echo "  stderr: $(head -c 600 "$tmp/err")" >&2
  failures=$((failures + 1))
}
# json FILE KEY: the value of a top-level number or string KEY.
json() {
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1
}
block=$top_srcdir/tests/partition_graphs/block.graph
mlp=$top_srcdir/tests/partition_graphs/mlp.graph
small="--threads=2 --partition-max-ops=2"

# 1. The block: cut, searched, stitched, verified, written.
$prog partition $small --cache="$tmp/cache" -o "$tmp/out" "$block" >"$tmp/out1" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "partition of the block: exit $rc"
for f in best.ugraph best.cu partition.txt partition.json; do
  [ -s "$tmp/out/$f" ] || fail "partition did not write $f"
done
grep -q "whole program: predicted" "$tmp/out1" || fail "no whole-program row in the table"
$prog -q verify "$block" "$tmp/out/best.ugraph" >/dev/null 2>"$tmp/err" ||
  fail "the stitched uGraph does not verify against the program"
grep -q '__global__' "$tmp/out/best.cu" || fail "best.cu holds no kernel"
pieces=$(json "$tmp/out/partition.json" pieces_total)
[ "${pieces:-0}" -ge 4 ] || fail "expected at least 4 pieces, got '$pieces'"
[ "$(json "$tmp/out/partition.json" cached)" = 0 ] || fail "first run took pieces from the cache"
[ "$(json "$tmp/out/partition.json" states_explored)" != 0 ] || fail "first run searched nothing"

# 2. Again: every piece from the cache, no state explored.
$prog partition $small --cache="$tmp/cache" -o "$tmp/out" "$block" >"$tmp/out2" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "second partition: exit $rc"
[ "$(json "$tmp/out/partition.json" states_explored)" = 0 ] || fail "second run searched"
[ "$(json "$tmp/out/partition.json" searched)" = 0 ] || fail "second run has searched pieces"
grep -q ' hit ' "$tmp/out2" || fail "the table does not say which pieces came from the cache"
$prog -q verify "$block" "$tmp/out/best.ugraph" >/dev/null 2>"$tmp/err" ||
  fail "the stitched uGraph from the cache does not verify"

# 3. A search uses the cache too (report.json "cache").
ex=$top_srcdir/examples/rmsnorm_linear_small.graph
for want in stored hit; do
  $prog -q --threads=2 --cache="$tmp/cache" --out="$tmp/s" "$ex" 2>"$tmp/err" ||
    fail "search with the cache ($want)"
  [ "$(json "$tmp/s/report.json" cache)" = $want ] || fail "report.json cache is not $want"
done
[ "$(json "$tmp/s/report.json" states_explored)" = 0 ] || fail "cached search explored states"
$prog -q --threads=2 --no-cache --out="$tmp/s" "$ex" 2>"$tmp/err" || fail "search --no-cache"
[ "$(json "$tmp/s/report.json" cache)" = none ] || fail "--no-cache used the cache"

# 4. Two writers on one cache directory at once leave it valid.
$prog partition $small -q --cache="$tmp/cc" -o "$tmp/w1" "$mlp" 2>"$tmp/err.1" &
p1=$!
$prog partition $small -q --cache="$tmp/cc" -o "$tmp/w2" "$mlp" 2>"$tmp/err.2" &
p2=$!
wait $p1 || fail "concurrent writer 1"
wait $p2 || fail "concurrent writer 2"
ls "$tmp/cc" | grep -q '\.tmp\.' && fail "a temp file is left in the cache"
$prog partition $small --cache="$tmp/cc" -o "$tmp/w3" "$mlp" >/dev/null 2>"$tmp/err" ||
  fail "partition after concurrent writers"
[ "$(json "$tmp/w3/partition.json" states_explored)" = 0 ] ||
  fail "after concurrent writers the cache did not serve every piece"
grep -q 'ignored' "$tmp/err" && fail "concurrent writers left a damaged entry"

# 5. Damaged entries are ignored with a warning, and searched again.
for f in "$tmp/cc"/*.mcache; do printf 'mirsearch-cache 1\ngarbage\n' >"$f"; done
$prog partition $small --cache="$tmp/cc" -o "$tmp/w3" "$mlp" >/dev/null 2>"$tmp/err" ||
  fail "partition over damaged entries"
grep -q 'ignored, searching' "$tmp/err" || fail "no warning for a damaged entry"
[ "$(json "$tmp/w3/partition.json" states_explored)" != 0 ] || fail "a damaged entry was used"
$prog -q verify "$mlp" "$tmp/w3/best.ugraph" >/dev/null 2>&1 || fail "mlp result does not verify"

# 6. Stopped (SIGINT during a search): exit 4, nothing written.
mkdir -p "$tmp/stop"
echo '{}' >"$tmp/stop/partition.json"
$prog partition --threads=2 --cache="$tmp/c6" -o "$tmp/stop" "$block" >/dev/null 2>"$tmp/err" &
pid=$!
sleep 2
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
[ $rc -eq 4 ] || fail "stopped partition: exit $rc, expected 4"
[ -e "$tmp/stop/partition.json" ] && fail "a stopped partition left partition.json"
[ -e "$tmp/stop/best.ugraph" ] && fail "a stopped partition wrote best.ugraph"
grep -q 'partition stopped' "$tmp/err" || fail "no message for the stopped partition"

# 7. Bad input: a clear message and exit 2.
bad() { # bad WHAT EXPECTED-TEXT ARGS...
  what=$1 text=$2
  shift 2
  "$prog" "$@" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, expected 2"
  grep -q -- "$text" "$tmp/err" || fail "$what: message lacks '$text'"
}
printf 'program p\ninput X : f16[4]\nY = exp(Z)\noutput Y\n' >"$tmp/bad.graph"
touch "$tmp/file"
bad "missing file" "cannot open" partition "$tmp/none.graph"
bad "malformed program" "bad.graph:3:" partition "$tmp/bad.graph"
bad "no file" "missing FILE" partition
bad "output is a file" "not a directory" partition -o "$tmp/file" "$mlp"
bad "empty --cache" "--cache needs" partition --cache= "$mlp"
bad "bad max ops" "partition_max_ops" partition --partition-max-ops=0 "$mlp"
bad "a uGraph" "custom kernel" partition -o "$tmp/u" "$top_srcdir/examples/rmsnorm_linear_small.ugraph"

# 8. Xt = permute(X) read by exp and by a later sum, each a piece: the
# exp as written makes the permute a copy kernel, one of its results
# (walking Xt's columns) keeps it a view for both readers; ranked in the
# whole stitched graph that result is taken (2 kernels, not 3), and the
# table's whole-program line and partition.json say what `mirsearch
# show` of best.ugraph says.
pv3=$tmp/pv3.graph
printf '%s\n' 'program pv3' 'input X : f16[4096, 128]' 'Xt = permute(X, dims=[1, 0])' \
  'Y = exp(Xt)' 'Z = sum(Xt, dim=1)' 'output Y' 'output Z' >"$pv3"
"$prog" partition --threads=1 --partition-max-ops=1 --no-cache -o "$tmp/pv3" "$pv3" \
  >"$tmp/pv3.out" 2>"$tmp/err" || fail "partition of pv3: exit $?"
shown=$("$prog" show "$tmp/pv3/best.ugraph" 2>/dev/null |
  sed -n 's/.*: \([0-9]*\) kernels* .*predicted \([0-9.]*\) us on.*/\1 \2/p')
table=$(sed -n 's/^whole program: predicted .* -> \([0-9.]*\) us .*, \([0-9]*\) kernels*$/\2 \1/p' \
  "$tmp/pv3.out")
js=$(awk -v k="$(json "$tmp/pv3/partition.json" kernels)" \
  -v s="$(json "$tmp/pv3/partition.json" predicted_seconds_after)" 'BEGIN { printf "%s %.3f", k, s * 1e6 }')
[ -n "$shown" ] && [ "$shown" = "$table" ] && [ "$shown" = "$js" ] ||
  fail "pv3: show says '$shown', the table '$table', partition.json '$js'"
[ "${shown%% *}" = 2 ] || fail "pv3: the permute is not a view read by both (show: '$shown')"

# 9. Over MPI (where mpiexec starts ranks and mirsearch has MPI): the
# pieces spread over 2 ranks through the shared cache give the stitched
# graph one process gave; without a cache --mpi is refused.
if command -v mpiexec >/dev/null 2>&1 && mpiexec -n 2 true >/dev/null 2>&1 &&
  ! "$prog" -V 2>/dev/null | grep -q 'mpi=no'; then
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
  MPIEXEC_TIMEOUT=300; export MPIEXEC_TIMEOUT
  mpiexec -n 2 "$prog" partition --mpi --threads=1 --partition-max-ops=2 --cache="$tmp/mc" \
    -o "$tmp/mo" "$block" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] || fail "partition --mpi on 2 ranks: exit $rc"
  [ "$(json "$tmp/mo/partition.json" ranks)" = 2 ] || fail "partition.json does not say 2 ranks"
  cmp -s "$tmp/out/best.ugraph" "$tmp/mo/best.ugraph" ||
    fail "partition --mpi stitched another graph than one process"
  mpiexec -n 2 "$prog" partition --mpi --no-cache -o "$tmp/mo" "$block" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "partition --mpi --no-cache: exit $rc, expected 2"
  grep -q 'result cache' "$tmp/err" || fail "partition --mpi --no-cache: no reason given"
  # A piece reading a view, run by rank 0 before rank 1's piece ahead of
  # it had a best: rank 0 ranks its results in place again (from the
  # cache), so the graph is one process's.
  printf '%s\n' 'program pv2' 'input X : f16[4096, 64]' 'input W : f16[64, 4096]' \
    'A = add(W, W)' 'Xt = permute(X, dims=[1, 0])' 'Y = exp(Xt)' 'Z = add(Y, A)' 'output Z' \
    >"$tmp/pv2.graph"
  "$prog" partition --threads=1 --partition-max-ops=1 --no-cache -o "$tmp/pv1" "$tmp/pv2.graph" \
    >/dev/null 2>&1 || fail "partition of pv2: exit $?"
  mpiexec -n 2 "$prog" partition --mpi --threads=1 --partition-max-ops=1 --cache="$tmp/mc2" \
    -o "$tmp/pvm" "$tmp/pv2.graph" >/dev/null 2>&1 || fail "partition --mpi of pv2: exit $?"
  cmp -s "$tmp/pv1/best.ugraph" "$tmp/pvm/best.ugraph" ||
    fail "partition --mpi ranked the view-reading piece otherwise than one process"
  # A later reader decides whether the permute is a view (section 8's
  # program): rank 0 ranks in the whole stitched graph as one process.
  mpiexec -n 2 "$prog" partition --mpi --threads=1 --partition-max-ops=1 --cache="$tmp/mc3" \
    -o "$tmp/pv3m" "$pv3" >/dev/null 2>&1 || fail "partition --mpi of pv3: exit $?"
  cmp -s "$tmp/pv3/best.ugraph" "$tmp/pv3m/best.ugraph" ||
    fail "partition --mpi ranked pv3's pieces otherwise than one process"
else
  echo "partition.sh: the --mpi part skipped (no working mpiexec, or built without MPI)"
fi

# 10. A Llama-style decoder layer (examples/llama_decoder_small.graph): its
# head split and merge (reshape, permute) stay library pieces, the rest is
# searched (each search at most 3 s: the best so far), the stitched µGraph
# verifies against the whole program (partition fails otherwise, and
# `verify` checks again where fingerprints apply), its 8 reshapes and
# permutes are views in best.cu (no copy kernel: the searched kernels read
# the heads at their strides and the attention kernel stores its result
# in the merged layout), the table prices them as the whole-program line
# does (nothing) and its rows add up to that line, best.cu launches the
# kernels partition.json counts, and
# the generated code run on the host matches eval.
dec=$top_srcdir/examples/llama_decoder_small.graph
MIRSEARCH_NO_CACHE=1 $prog partition --threads=2 --partition-max-ops=2 --time-limit=3 \
  -o "$tmp/dec" "$dec" >"$tmp/dec.out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "partition of the decoder layer: exit $rc"
grep -q "stitched uGraph verified against the program" "$tmp/dec.out" ||
  fail "the decoder's stitched uGraph was not verified"
[ "$(json "$tmp/dec/partition.json" library)" = 8 ] ||
  fail "the decoder's 8 reshapes and permutes are not 8 library pieces"
[ "$(json "$tmp/dec/partition.json" cached)" = 0 ] || fail "MIRSEARCH_NO_CACHE=1 used a cache"
# (The cut passes no causal_mask -inf from piece to piece, so the whole
# has fingerprints; a time-limited piece's best could still use the -inf
# where the field cannot: then the partition checks the whole in float64,
# says why, and verify would refuse it.)
if grep -q "verified against the program: fingerprints equal" "$tmp/dec.out"; then
  $prog -q verify "$dec" "$tmp/dec/best.ugraph" >/dev/null 2>"$tmp/err" ||
    fail "the decoder's stitched uGraph does not verify against the program"
fi
# (A kernel-level transpose a piece keeps, Kt = transpose(Kh), is a view too.)
[ "$(grep -c '= \(reshape\|permute\)(.*: a view, no kernel' "$tmp/dec/best.cu")" = 8 ] ||
  fail "the decoder's 4 reshapes and 4 permutes are not views in best.cu"
grep -q '^/\* kernel [0-9]*: \(reshape\|permute\|transpose\) ->' "$tmp/dec/best.cu" &&
  fail "best.cu of the decoder has a layout copy kernel"
[ "$(grep -Ec '^    (err = MIRS_PDL\(pdl, )?MIRS_LAUNCH\(' "$tmp/dec/best.cu")" = "$(json "$tmp/dec/partition.json" kernels)" ] ||
  fail "best.cu of the decoder launches another number of kernels than partition.json says"
[ "$(grep -c ' library .* 0\.000 *0\.000 ' "$tmp/dec.out")" = 8 ] ||
  fail "the table prices the decoder's views as kernels"
whole=$(json "$tmp/dec/partition.json" predicted_seconds_after)
rows=$(grep -v '^  "predicted_seconds_after"' "$tmp/dec/partition.json" |
  grep -o '"predicted_seconds_after": [^,]*' | awk '{ s += $2 } END { printf "%.9g", s }')
awk -v a="$whole" -v b="$rows" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-6 * a) }' ||
  fail "the decoder's piece rows add up to $rows s, not the whole-program line's $whole s"
if command -v c++ >/dev/null 2>&1; then
  $prog run --backend=host "$tmp/dec/best.ugraph" >"$tmp/dec.run" 2>"$tmp/err" ||
    fail "host run of the decoder's stitched uGraph"
fi

[ $failures -eq 0 ] || { echo "partition.sh: $failures failure(s)" >&2; exit 1; }
echo "partition.sh: PASS"
