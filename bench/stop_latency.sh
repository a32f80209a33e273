#!/bin/sh
# SPDX-License-Identifier: MIT
# How long a search takes to exit after SIGUSR1 (what Slurm's
# --signal=B:USR1@T sends before the time limit): the T of
# scripts/mirsearch.sbatch must cover it (docs/CLUSTER.md).
#
#   bench/stop_latency.sh [DELAY_S [THREADS [EXAMPLE...]]]
#
# Starts each example's search, sends SIGUSR1 after DELAY_S seconds
# (default 20), and prints the time from the signal to the exit, the exit
# status (4: stopped with a checkpoint; 0: it completed first), the
# results written and the checkpoint's size.  MIRSEARCH picks the binary
# (default src/mirsearch).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MIRSEARCH:-$top/src/mirsearch}
delay=${1:-20}
threads=${2:-2}
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -gt 0 ] || set -- gqa mha lora lora_small gated_mlp_small
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_stoplat.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

printf '%-18s %6s %12s %8s %12s\n' example status "exit after" results "checkpoint"
for ex in "$@"; do
  rm -rf "$tmp/out"
  "$bin" -q --threads="$threads" --out="$tmp/out" "$top/examples/$ex.graph" >/dev/null 2>"$tmp/err" &
  pid=$!
  sleep "$delay"
  t0=$(now)
  kill -USR1 $pid 2>/dev/null
  wait $pid
  rc=$?
  t1=$(now)
  n=$(ls "$tmp/out/candidates" 2>/dev/null | wc -l)
  size=$(stat -c %s "$tmp/out/checkpoint" 2>/dev/null || echo -)
  printf '%-18s %6s %10.2f s %8s %10s B\n' "$ex" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$n" "$size"
done
