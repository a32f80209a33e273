#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/gpu_fp.sh - CPU and GPU fingerprints are identical on every
# example: `mirsearch verify --verify=cpu` and `--verify=gpu` on each
# program against itself and against its committed uGraph must print the
# same verdict and the same fingerprint digest (all trials of every
# output).  Exit 77 when no GPU is usable (--verify=gpu exits 3).
#
#   tests/gpu_fp.sh [small|all]   small (default): the *_small examples and
#                                 the uGraphs whose program is small; all:
#                                 every example at its published shape too
#                                 (the device check; minutes of CPU).
# With MIRS_GPUFP_LIB naming tests/libgpufp-host.so it runs the GPU code
# path on the host emulation (tests/gpu_fp_host.sh), so it is known to
# work before a GPU is at hand.  Run by `make check` with top_srcdir and
# top_builddir set; by hand they default to the script's tree and ".".
# Exit: 0 pass, 1 fail, 77 skip.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
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
done

# At published shapes also a full-shape custom kernel for mha.
[ "$which" = all ] && pairs="$pairs $ex/mha.graph:$top_srcdir/bench/mha_full.ugraph"

failures=0
n=0
for pair in $pairs; do
  p=${pair%%:*}
  c=${pair#*:}
  name="$(basename "$p") vs $(basename "$c")"
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
  if [ $rc_cpu -ne $rc_gpu ] || [ "$dc" != "$dg" ] || [ -z "$dc" ]; then
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
[ $n -gt 0 ] && [ $failures -eq 0 ]
