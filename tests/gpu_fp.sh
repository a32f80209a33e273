#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/gpu_fp.sh - CPU and GPU fingerprints are identical on every
# example: `mirsearch verify --verify=cpu` and `--verify=gpu` on each
# program against itself and against its committed uGraphs (examples/
# and examples/best/) must print the same verdict and the same
# fingerprint digest (all trials of every output), and the GPU run must
# say it fingerprinted on the GPU (no graph is handed to the CPU
# backend).  Exit 77 when no GPU is usable (--verify=gpu exits 3).
#
#   tests/gpu_fp.sh [small|all]   small (default): the *_small examples and
#                                 their uGraphs; all: every example at its
#                                 published shape too (the device check;
#                                 minutes of CPU).
# With MIRS_GPUFP_LIB naming tests/libgpufp-host.so it runs the GPU code
# path on the host emulation (tests/gpu_fp_host.sh), so it is known to
# work before a GPU is at hand.  Run by `make check` with top_srcdir and
# top_builddir set; by hand they default to the script's tree and ".".
# Exit: 0 pass, 1 fail, 77 skip.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
prog_bin=$prog
which=${1:-small}

if [ ! -x "$prog" ]; then
  echo "gpu_fp.sh: $prog not built" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_gpu_fp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

ex=$top_srcdir/examples
"$prog" verify --verify=gpu "$ex/mha_small.graph" "$ex/mha_small.graph" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 3 ] || [ $rc -eq 2 ]; then
  echo "gpu_fp.sh: no usable GPU, skipped: $(cat "$tmp/err")"
  exit 77
fi
if [ $rc -ne 0 ]; then
  echo "FAIL: --verify=gpu on mha_small exited $rc: $(cat "$tmp/err")" >&2
  exit 1
fi
echo "gpu_fp.sh: $(grep '^fingerprint backend' "$tmp/out")"

# The (program, candidate) pairs.
pairs=""
for p in "$ex"/*.graph; do
  base=${p%.graph}
  case $which in
    small) case $base in *_small) ;; *) continue ;; esac ;;
  esac
  pairs="$pairs $p:$p"
  [ -f "$base.ugraph" ] && pairs="$pairs $p:$base.ugraph"
  best=$ex/best/$(basename "$base").ugraph
  [ -f "$best" ] && pairs="$pairs $p:$best"
done

# At published shapes also a full-shape custom kernel for mha.
[ "$which" = all ] && pairs="$pairs $ex/mha.graph:$top_srcdir/bench/mha_full.ugraph"

failures=0
n=0
for pair in $pairs; do
  p=${pair%%:*}
  c=${pair#*:}
  name="$(basename "$p") vs ${c#"$ex"/}"
  t0=$(date +%s.%N)
  "$prog" verify --verify=cpu "$p" "$c" >"$tmp/cpu" 2>"$tmp/cpu.err"
  rc_cpu=$?
  t1=$(date +%s.%N)
  "$prog" verify --verify=gpu "$p" "$c" >"$tmp/gpu" 2>"$tmp/gpu.err"
  rc_gpu=$?
  t2=$(date +%s.%N)
  if [ $rc_cpu -eq 3 ] && grep -q "eval_max" "$tmp/cpu.err"; then
    echo "skip $name: $(cat "$tmp/cpu.err")"
    continue
  fi
  n=$((n + 1))
  dc=$(grep -E '^(fingerprints|fingerprint digest):' "$tmp/cpu")
  dg=$(grep -E '^(fingerprints|fingerprint digest):' "$tmp/gpu")
  if ! grep -q '^fingerprint backend: gpu' "$tmp/gpu"; then
    echo "FAIL $name: --verify=gpu did not fingerprint on the GPU:" \
      "$(grep '^fingerprint backend' "$tmp/gpu") $(cat "$tmp/gpu.err")" >&2
    failures=$((failures + 1))
  elif [ $rc_cpu -ne $rc_gpu ] || [ "$dc" != "$dg" ] || [ -z "$dc" ]; then
    echo "FAIL $name: cpu exit $rc_cpu, gpu exit $rc_gpu" >&2
    echo "  cpu: $dc $(cat "$tmp/cpu.err")" >&2
    echo "  gpu: $dg $(cat "$tmp/gpu.err")" >&2
    failures=$((failures + 1))
  else
    awk -v n="$name" -v d="$(grep '^fingerprint digest' "$tmp/cpu" | cut -d' ' -f3)" \
      -v a="$t0" -v b="$t1" -v c="$t2" \
      'BEGIN { printf "ok   %s: %s (cpu %.2f s, gpu %.2f s)\n", n, d, b - a, c - b }'
  fi
done
echo "gpu_fp.sh: $n pairs compared, $failures differ"

# A search verifying its results at full shape on the GPU (a batch in
# flight) reports the results of one verifying on the CPU.
searches=rmsnorm_linear_small
[ "$which" = all ] && searches="$searches mha_small"
for prog in $searches; do
  for v in cpu gpu; do
    "$prog_bin" --verify=$v --fp-reduce-min-elements=0 --verify-early=0 -q \
      --out="$tmp/$prog.$v" "$ex/$prog.graph" >"$tmp/s.out" 2>"$tmp/s.err" ||
      { echo "FAIL search $prog --verify=$v: $(cat "$tmp/s.err")" >&2; failures=$((failures + 1)); }
  done
  hc=$(grep -o '"hash": "[0-9a-f]*"' "$tmp/$prog.cpu/report.json" 2>/dev/null)
  hg=$(grep -o '"hash": "[0-9a-f]*"' "$tmp/$prog.gpu/report.json" 2>/dev/null)
  if [ -z "$hc" ] || [ "$hc" != "$hg" ]; then
    echo "FAIL search $prog: --verify=gpu reports other results than --verify=cpu" >&2
    failures=$((failures + 1))
  elif ! grep -q '"verify_backend": "gpu' "$tmp/$prog.gpu/report.json"; then
    echo "FAIL search $prog: report.json does not say the GPU verified" >&2
    failures=$((failures + 1))
  else
    echo "ok   search $prog: $(echo "$hc" | wc -l) results equal; full-shape verification" \
      "cpu $(sed -n 's/.*"full_verify_seconds": \([0-9.]*\).*/\1/p' "$tmp/$prog.cpu/report.json") s," \
      "gpu $(sed -n 's/.*"full_verify_seconds": \([0-9.]*\).*/\1/p' "$tmp/$prog.gpu/report.json") s"
  fi
done
[ $n -gt 0 ] && [ $failures -eq 0 ]
