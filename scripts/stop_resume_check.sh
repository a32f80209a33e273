#!/bin/sh
# SPDX-License-Identifier: MIT
# Stop a search at random moments and resume it, each time on another
# thread count, until it completes; check that it ends with exactly the
# uninterrupted run's results (report.json's result list, candidates/ and
# best.ugraph byte for byte, and the state count).
#
#   scripts/stop_resume_check.sh [EXAMPLE.graph] [STOPS] [MAX_DELAY_MS]
#
# Defaults: examples/gated_mlp_small.graph, 20 stops, 1500 ms.  Signals
# alternate SIGTERM and SIGUSR1; thread counts cycle 1, 2, 3.  MIRSEARCH
# picks the binary (default src/mirsearch).  Exit 0 when every check holds.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${MIRSEARCH:-$top/src/mirsearch}
ex=${1:-$top/examples/gated_mlp_small.graph}
stops=${2:-20}
maxms=${3:-1500}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_stop_resume.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "stop_resume_check: FAIL: $*" >&2; exit 1; }
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }

"$bin" -q --threads=1 --out "$tmp/ref" "$ex" >/dev/null 2>"$tmp/ref.err" || fail "reference run: $(cat "$tmp/ref.err")"
seed=$(( $(date +%s) % 100000 ))
echo "stop_resume_check: $(basename "$ex"), $stops stops (random seed $seed)"
i=0 done=0 n=1
while [ $done -eq 0 ]; do
  t=$(( n % 3 + 1 )); n=$((n + 1))
  if [ $i -eq 0 ]; then
    set -- "$ex"
  else
    set -- --resume="$tmp/run"
  fi
  "$bin" -q --threads=$t --out "$tmp/run" "$@" >/dev/null 2>"$tmp/err" &
  pid=$!
  if [ $i -lt "$stops" ]; then
    # The moment counts from when this run holds its output directory
    # (DIR/.lock names its pid): before that the process is still starting
    # (the dynamic loader, Z3), and a signal then kills it as it would any
    # program that has not started, without touching the checkpoint.
    k=0
    while [ "$(cat "$tmp/run/.lock" 2>/dev/null)" != "$pid" ] && [ $k -lt 300 ] && kill -0 $pid 2>/dev/null; do
      sleep 0.1; k=$((k + 1))
    done
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    ms=$(( 100 + seed % maxms ))
    sig=TERM; [ $((i % 2)) -eq 1 ] && sig=USR1
    sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
    kill -$sig $pid 2>/dev/null
  fi
  wait $pid
  rc=$?
  case $rc in
    4) [ -f "$tmp/run/checkpoint" ] || fail "stop $i: exit 4 without a checkpoint"
       [ -f "$tmp/run/report.json" ] || fail "stop $i: exit 4 without report.json"
       if grep -q "not resumed" "$tmp/err"; then
         what="while loading its checkpoint (kept unchanged)"
       else
         what="$(field "$tmp/run/report.json" states_explored) states so far"
       fi
       echo "  stop $((i + 1)): SIG$sig after ${ms} ms on $t thread(s): $what"
       i=$((i + 1)) ;;
    0) if [ $i -lt "$stops" ]; then
         echo "  run on $t thread(s) completed before its SIG$sig (${ms} ms)"
         i=$((i + 1))
       fi
       [ -f "$tmp/run/checkpoint" ] && fail "a complete search left a checkpoint"
       done=1 ;;
    *) fail "exit $rc: $(cat "$tmp/err")" ;;
  esac
  if [ $done -eq 0 ] && [ $rc -eq 0 ]; then done=1; fi
done
grep -q '"complete": true' "$tmp/run/report.json" || fail "the last run is not complete"
[ "$(field "$tmp/run/report.json" states_explored)" = "$(field "$tmp/ref/report.json" states_explored)" ] ||
  fail "states differ: $(field "$tmp/run/report.json" states_explored) vs $(field "$tmp/ref/report.json" states_explored)"
sed -n '/"results"/,$p' "$tmp/ref/report.json" >"$tmp/a"
sed -n '/"results"/,$p' "$tmp/run/report.json" >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "result lists differ"
cmp -s "$tmp/ref/best.ugraph" "$tmp/run/best.ugraph" || fail "best.ugraph differs"
diff -r "$tmp/ref/candidates" "$tmp/run/candidates" >/dev/null || fail "candidates/ differ"
echo "stop_resume_check: $i stops, the same $(field "$tmp/ref/report.json" graphs_found) results, states and best.ugraph as the uninterrupted run"
