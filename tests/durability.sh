#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/durability.sh - nothing is lost at the final write of a search or
# at a periodic checkpoint: the write is stopped at each of its steps in
# turn (MIRS_FAULT_INJECT: "N:kill" raises SIGKILL at step N, "N:enospc"
# fails it with ENOSPC), and afterwards the directory must hold either the
# complete outputs (report.json and what it lists) or a checkpoint that
# resumes to the uninterrupted run's results, with the exit status and
# the message saying which.  Where a small tmpfs can be mounted (root),
# a real full disk is tried too.
#
# Run by `make check` with top_srcdir and top_builddir set.
# Exit: 0 pass, 1 fail, 77 skip (a build without fault injection).

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
prog=$top_builddir/src/mirsearch
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
[ -x "$prog" ] || { echo "durability.sh: $prog not built" >&2; exit 1; }
if ! "$prog" --version | grep -q 'fault_injection=yes'; then
  echo "SKIP: built with --disable-fault-injection"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_durability.XXXXXX") || exit 1
mnt=""
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $1" >&2
  [ -f "$tmp/err" ] && echo "  stderr: $(head -c 600 "$tmp/err")" >&2
  failures=$((failures + 1))
}

ex=$top_srcdir/examples/rmsnorm_linear_small.graph
# A small space (a few thousand states, 30 results) and the best written
# (--top is not kept in a checkpoint: the resumes say it again): about 20
# steps in a final write.
small="--max-block-ops=4 --threads=2"
top="--top=1"
# Periodic checkpoints every 5 ms: several of them in that search.
periodic="$small --checkpoint-interval=0.005"

# same_as REF DIR: DIR's outputs are REF's (the same candidates, best
# graph, number of graphs and completeness).
same_as() {
  [ -f "$2/report.json" ] || return 1
  [ "$(ls "$1/candidates")" = "$(ls "$2/candidates" 2>/dev/null)" ] || return 1
  cmp -s "$1/best.ugraph" "$2/best.ugraph" || return 1
  cmp -s "$1/best.cu" "$2/best.cu" || return 1
  g1=$(grep -o '"graphs_found": *[0-9]*' "$1/report.json")
  g2=$(grep -o '"graphs_found": *[0-9]*' "$2/report.json")
  [ "$g1" = "$g2" ] || return 1
  grep -q '"complete": *true' "$2/report.json"
}

# no_leftovers DIR: no staging directory or temp file stays behind.
no_leftovers() {
  [ ! -e "$1/candidates.tmp" ] && ! ls "$1" | grep -q '\.tmp\.'
}

# settle WHAT REF DIR STATUS: after a run stopped at some step, DIR holds
# REF's complete outputs, or a checkpoint that resumes to them; a run
# that exited 4 must have said the checkpoint is intact.
settle() {
  what=$1 ref=$2 d=$3 st=$4
  if [ "$st" -eq 4 ] && ! grep -q 'is intact: resume with' "$tmp/err" &&
    ! grep -q 'the open work is in' "$tmp/err"; then
    fail "$what: exit 4 without saying the checkpoint is intact and how to resume"
  fi
  if [ -f "$d/report.json" ] && [ ! -f "$d/checkpoint" ]; then
    same_as "$ref" "$d" || fail "$what: report.json present but the outputs differ from an uninterrupted run"
    [ "$st" -eq 0 ] || [ "$st" -eq 137 ] || fail "$what: complete outputs but exit $st"
    return
  fi
  if [ ! -f "$d/checkpoint" ]; then
    return 1 # neither: the caller decides whether that may be
  fi
  [ "$st" -eq 4 ] || [ "$st" -eq 137 ] || [ "$st" -eq 0 ] ||
    fail "$what: a checkpoint is left but exit $st"
  "$prog" --progress-interval=0 -q --resume="$d" $top >/dev/null 2>"$tmp/err2"
  rs=$?
  [ "$rs" -eq 0 ] || { fail "$what: resuming the checkpoint left exited $rs: $(head -c 300 "$tmp/err2")"; return; }
  same_as "$ref" "$d" || fail "$what: the resumed search's outputs differ from an uninterrupted run"
  [ -f "$d/checkpoint" ] && fail "$what: the finished resume left its checkpoint"
  return 0
}

# The uninterrupted runs.
"$prog" -q --out="$tmp/ref" $small $top "$ex" 2>"$tmp/err" || fail "reference run"
"$prog" -q --out="$tmp/pref" $periodic $top "$ex" 2>"$tmp/err" || fail "reference run (periodic)"
# A stopped search: its resume is the final write that is stopped below.
"$prog" -q --out="$tmp/stopped" --max-states=150 $small $top "$ex" 2>"$tmp/err"
st=$?
[ "$st" -eq 4 ] && [ -f "$tmp/stopped/checkpoint" ] || fail "stopped search: exit $st, expected 4 with a checkpoint"

for kind in kill enospc; do
  # The final write of a resumed search (a checkpoint exists throughout).
  n=1
  while [ $n -le 80 ]; do
    d=$tmp/r-$kind-$n
    cp -r "$tmp/stopped" "$d"
    MIRS_FAULT_INJECT=$n:$kind "$prog" --progress-interval=0 --resume="$d" $top >/dev/null 2>"$tmp/err"
    st=$?
    fired=0
    if [ $kind = kill ]; then [ $st -eq 137 ] && fired=1; else grep -q "fault injection: step $n " "$tmp/err" && fired=1; fi
    if [ $fired -eq 0 ]; then
      [ $st -eq 0 ] && same_as "$tmp/ref" "$d" || fail "resume, no fault at step $n: exit $st"
      break
    fi
    [ $kind = enospc ] && [ $st -ne 0 ] && [ $st -ne 4 ] && fail "resume, $kind at step $n: exit $st (expected 0 or 4: a checkpoint is intact)"
    [ $kind = enospc ] && { no_leftovers "$d" || fail "resume, $kind at step $n: temp files left: $(ls "$d")"; }
    # The message names the file whose write failed (a candidate's, or
    # best.ugraph's temp file: outdir.c once named the one for the other).
    what=$(sed -n "s/.*fault injection: step $n (\(.*\)) fails.*/\1/p" "$tmp/err")
    case $what in
      *" "*) ;; # (a step, not a file)
      *.ugraph|*.ugraph.tmp.*|*.cu.tmp.*)
        grep -q "cannot write $what" "$tmp/err" || fail "resume, enospc writing $what: the message names another file: $(grep error "$tmp/err")" ;;
    esac
    settle "resume, $kind at step $n" "$tmp/ref" "$d" $st || fail "resume, $kind at step $n: neither outputs nor a checkpoint left"
    rm -rf "$d"
    n=$((n + 1))
  done
  [ $n -gt 10 ] || fail "resume: only $((n - 1)) steps in a final write ($kind)"
  [ $n -le 80 ] || fail "resume: the fault still fires at step 80 ($kind)"
  echo "final write of a resume: $((n - 1)) steps stopped by $kind"

  # A new search with periodic checkpoints, then its final write.
  n=1
  while [ $n -le 200 ]; do
    d=$tmp/p-$kind-$n
    MIRS_FAULT_INJECT=$n:$kind "$prog" --progress-interval=0 --out="$d" $periodic $top "$ex" >/dev/null 2>"$tmp/err"
    st=$?
    fired=0
    if [ $kind = kill ]; then [ $st -eq 137 ] && fired=1; else grep -q "fault injection: step $n " "$tmp/err" && fired=1; fi
    if [ $fired -eq 0 ]; then
      [ $st -eq 0 ] && same_as "$tmp/pref" "$d" || fail "periodic, no fault at step $n: exit $st"
      break
    fi
    if [ $kind = enospc ]; then
      # One failed step never loses the search: a periodic checkpoint's
      # failure is survived, the final one leaves the previous intact.
      [ $st -eq 0 ] || [ $st -eq 4 ] || fail "periodic, enospc at step $n: exit $st"
      no_leftovers "$d" || fail "periodic, enospc at step $n: temp files left: $(ls "$d")"
      if grep -q 'periodic checkpoint' "$tmp/err"; then
        grep -q 'previous checkpoint, if any, is intact; the search goes on' "$tmp/err" ||
          fail "periodic, enospc at step $n: the message does not say the previous checkpoint is intact"
      fi
    fi
    if ! settle "periodic, $kind at step $n" "$tmp/pref" "$d" $st; then
      # Nothing durable yet: only before the first checkpoint's rename.
      [ $n -le 4 ] || fail "periodic, $kind at step $n: neither outputs nor a checkpoint left"
    fi
    rm -rf "$d"
    n=$((n + 1))
  done
  [ $n -gt 15 ] || fail "periodic: only $((n - 1)) steps ($kind)"
  [ $n -le 200 ] || fail "periodic: the fault still fires at step 200 ($kind)"
  echo "periodic checkpoints and final write: $((n - 1)) steps stopped by $kind"
done

# A real full disk: a small tmpfs, filled up to a few KiB after the
# stopped search's checkpoint; the resume cannot write its outputs, exits
# 4 saying the checkpoint is intact, leaves nothing behind, and once there
# is room it resumes to the uninterrupted results.
if [ "$(id -u)" = 0 ] && mkdir "$tmp/mnt" && mount -t tmpfs -o size=1m tmpfs "$tmp/mnt" 2>/dev/null; then
  mnt=$tmp/mnt
  cp -r "$tmp/stopped" "$mnt/d"
  avail=$(df -B1 --output=avail "$mnt" | tail -n 1)
  dd if=/dev/zero of="$mnt/fill" bs=4096 count=$(((avail - 8192) / 4096)) 2>/dev/null
  "$prog" --progress-interval=0 --resume="$mnt/d" $top >/dev/null 2>"$tmp/err"
  st=$?
  [ $st -eq 4 ] || fail "full tmpfs: exit $st, expected 4"
  grep -q 'is intact: resume with' "$tmp/err" || fail "full tmpfs: the message does not say the checkpoint is intact"
  grep -q 'No space left' "$tmp/err" || fail "full tmpfs: the message does not name the full disk"
  no_leftovers "$mnt/d" || fail "full tmpfs: temp files left: $(ls "$mnt/d")"
  rm -f "$mnt/fill"
  "$prog" -q --resume="$mnt/d" $top 2>"$tmp/err"
  st=$?
  [ $st -eq 0 ] && same_as "$tmp/ref" "$mnt/d" || fail "full tmpfs: the resume once there is room: exit $st"
  echo "full tmpfs: exit 4, checkpoint intact, resumed"
else
  echo "full tmpfs: skipped (needs root and tmpfs)"
fi

if [ $failures -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "PASS"
