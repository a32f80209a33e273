#!/bin/sh
# SPDX-License-Identifier: MIT
# mirsearch --mpi under MPICH's mpiexec (docs/DISTRIBUTED.md):
#  1. searches on 2 and 3 ranks end with the one-process results
#     (report.json's result list, candidates/, best.ugraph, the counters
#     that describe the space);
#  2. a SIGUSR1 to mpiexec stops every rank (exit 4, one checkpoint), also
#     while rank 0 loads the checkpoint, and resuming on another rank
#     count (stopped again, then resumed on a third) ends with the
#     uninterrupted results; an error on rank 0 alone ends every rank;
#  3. on a program whose pruning calls Z3, sharing verdicts removes more
#     than half of the questions 3 ranks repeat without it (without the
#     test hook: at most 1.2 times one process's solver calls), in one of
#     up to three tries (the count depends on timing).
# Every run uses --threads=1 (this machine may have 2 cores).  Skips (77)
# only where mpiexec cannot start ranks or mirsearch was built without MPI.
set -u
# A rank that hangs fails the test instead of stalling make check: hydra's
# mpiexec kills the job after this many seconds.
MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-300}; export MPIEXEC_TIMEOUT
# Under --enable-sanitizers, LeakSanitizer reports 1,016 bytes in 9 blocks
# on every rank: exactly what it reports for a program that only calls
# MPI_Init and MPI_Finalize (Debian's MPICH over UCX).  The allocating
# modules are unloaded by then, so no suppression can name them.  Leak
# checks stay on for every other test; ASan's other checks stay on here.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
bin="$top_builddir/src/mirsearch"
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1" | tr -d '"'; }
counter() { sed -n "s/.*\"counters\": {.*\"$2\": \\([0-9]*\\).*/\\1/p" "$1"; }

if ! command -v mpiexec >/dev/null 2>&1; then
  echo "SKIP: no mpiexec on PATH (install mpich)"; exit 77
fi
if ! mpiexec -n 2 true >"$tmp/probe" 2>&1; then
  echo "SKIP: mpiexec -n 2 cannot start processes here: $(head -c 300 "$tmp/probe")"; exit 77
fi
ex="$top_srcdir/examples/gated_mlp_small.graph"
"$bin" --mpi --threads=1 --out "$tmp/probe.out" "$tmp/none.graph" \
  >/dev/null 2>"$tmp/probe.err"
if grep -q "built without MPI" "$tmp/probe.err"; then
  echo "SKIP: mirsearch was built without MPI ($(cat "$tmp/probe.err"))"; exit 77
fi

# The same outputs as the reference directory $1 in $2.
same() {
  [ "$(field "$2/report.json" complete)" = true ] || fail "$3: not complete"
  for k in states_explored candidates_verified graphs_found; do
    [ "$(field "$1/report.json" $k)" = "$(field "$2/report.json" $k)" ] ||
      fail "$3: $k $(field "$2/report.json" $k), one process $(field "$1/report.json" $k)"
  done
  [ "$(counter "$1/report.json" duplicates)" = "$(counter "$2/report.json" duplicates)" ] ||
    fail "$3: duplicates differ"
  sed -n '/"results"/,$p' "$1/report.json" >"$tmp/a"
  sed -n '/"results"/,$p' "$2/report.json" >"$tmp/b"
  cmp -s "$tmp/a" "$tmp/b" || fail "$3: result lists differ"
  cmp -s "$1/best.ugraph" "$2/best.ugraph" || fail "$3: best.ugraph differs"
  diff -r "$1/candidates" "$2/candidates" >/dev/null || fail "$3: candidates/ differ"
  [ ! -e "$2/checkpoint" ] || fail "$3: a complete search left a checkpoint"
}

# ---------------------------------------------------------------- 1. ranks
"$bin" -q --threads=1 --out "$tmp/ref" "$ex" >/dev/null 2>"$tmp/err" ||
  fail "one process: $(cat "$tmp/err")"
# The one-process search's wall time (ms), which sets the random stop
# moments of part 2 inside the searches on several ranks.
ref_ms=$(awk '/"wall_seconds"/ { gsub(/[^0-9.]/, "", $2); printf "%d", $2 * 1000; exit }' "$tmp/ref/report.json")
[ "${ref_ms:-0}" -gt 0 ] 2>/dev/null || ref_ms=3000
for n in 2 3; do
  mpiexec -n $n "$bin" -q --mpi --threads=1 --out "$tmp/n$n" "$ex" >/dev/null 2>"$tmp/err" ||
    fail "mpiexec -n $n: exit $?: $(cat "$tmp/err")"
  same "$tmp/ref" "$tmp/n$n" "mpiexec -n $n"
  [ "$(field "$tmp/n$n/report.json" ranks)" = $n ] || fail "-n $n: report.json says $(field "$tmp/n$n/report.json" ranks) ranks"
  ranks=$(sed -n 's/.*"mpi": \[//p' "$tmp/n$n/report.json" | grep -o '"rank": [0-9]*' | wc -l)
  [ "$ranks" -eq $n ] || fail "-n $n: $ranks per-rank entries in report.json"
  # Every rank did a share of the work.
  for st in $(sed -n 's/.*"mpi": \[//p' "$tmp/n$n/report.json" | grep -o '"states_explored": [0-9]*' | sed 's/.*: //'); do
    [ "$st" -gt 0 ] || fail "-n $n: a rank explored no state"
  done
  echo "mpiexec -n $n: the one-process results ($(field "$tmp/ref/report.json" graphs_found) graphs, $(field "$tmp/ref/report.json" states_explored) states)"
done
# Periodic checkpoints are not written under --mpi: asked for, that is said.
mpiexec -n 2 "$bin" --progress-interval=0 --mpi --threads=1 --checkpoint-interval=5 --out "$tmp/ci" "$ex" \
  >/dev/null 2>"$tmp/err" || fail "mpiexec -n 2 --checkpoint-interval: exit $?: $(cat "$tmp/err")"
grep -q -- '--checkpoint-interval is not used with --mpi' "$tmp/err" ||
  fail "--checkpoint-interval under --mpi: no warning: $(head -c 300 "$tmp/err")"

# ---------------------------------------------------------------- 1a. reduced
# Every result fingerprinted on a reduced instance and only the best 3
# verified at full shape: other ranks send such results without their
# graph text, and rank 0 re-finds at its path each one it verifies (the
# rest are dropped); the lists and files still match one process's.
ro="--fp-reduce-min-elements=0 --verify-full-max=3"
"$bin" -q --threads=1 $ro --out "$tmp/rref" "$ex" >/dev/null 2>"$tmp/err" ||
  fail "one process, reduced: $(cat "$tmp/err")"
mpiexec -n 3 "$bin" --log-level=3 --mpi --threads=1 $ro --out "$tmp/rn3" "$ex" >/dev/null 2>"$tmp/err" ||
  fail "mpiexec -n 3, reduced: exit $?: $(tail -5 "$tmp/err")"
same "$tmp/rref" "$tmp/rn3" "mpiexec -n 3, reduced"
[ "$(counter "$tmp/rn3/report.json" full_unverified)" -gt 100 ] ||
  fail "reduced: expected most results unverified, got $(counter "$tmp/rn3/report.json" full_unverified)"
refound=$(grep -c "re-found at its path" "$tmp/err")
[ "$refound" -gt 0 ] || fail "reduced: rank 0 re-found no result sent without its text"
echo "mpiexec -n 3, reduced instance: the one-process results ($(field "$tmp/rref/report.json" graphs_found) graphs, $(counter "$tmp/rn3/report.json" full_unverified) dropped unverified, $refound re-found by rank 0)"

# ---------------------------------------------------------------- 1b. errors
# An error on rank 0 alone (here a bad --out) ends every rank with its
# status, at once (the ranks once hung: rank 0 left out a collective).
: >"$tmp/afile"
timeout 120 mpiexec -n 2 "$bin" -q --mpi --threads=1 --out "$tmp/afile" "$ex" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "--out FILE on 2 ranks: exit $rc (expected 2; 124: hung): $(cat "$tmp/err")"
grep -q "afile: exists and is not a directory" "$tmp/err" || fail "--out FILE on 2 ranks: $(cat "$tmp/err")"
echo "--out FILE on 2 ranks: exit 2 at once"

# ---------------------------------------------------------------- 2. stop, resume
# Stop (SIGUSR1 to mpiexec) and resume on another rank count, then run to
# the end: on 3 ranks at a random moment of the search; on 2 ranks as
# soon as rank 0 holds the directory (while it loads the checkpoint: a
# stop there once hung the ranks, rank 0 leaving out a collective the
# others were in); on 2 ranks again at a random moment of the search;
# then on 1 rank to the end.  Rank 0 holds the directory when DIR/.lock
# names its pid (the file stays after a run; probing its flock would make
# rank 0's own lock fail), which it does only after every rank has its
# stop handlers in place.
held() {
  l=$(cat "$1" 2>/dev/null)
  [ -n "$l" ] && [ "$l" != "$2" ]
}
# Each rank's exit status is recorded by rank.sh: Hydra's mpiexec (MPICH
# 4.0) reports 0 for a rank that exits after it forwarded a signal to it
# (its proxy's "forced cleanup"), so its own status says little here.
cat >"$tmp/rank.sh" <<EOF
#!/bin/sh
trap : INT TERM USR1
"\$@"
rc=\$?
echo \$rc >"$tmp/rc.\${PMI_RANK:-0}"
exit \$rc
EOF
chmod +x "$tmp/rank.sh"
seed=$(( $(date +%s) % 1000 ))
stops=0 i=0
for run in 3:random 2:load 2:random 1:end; do
  n=${run%%:*} when=${run#*:}
  if [ $i -eq 0 ]; then
    set -- "$ex"
  else
    set -- --resume="$tmp/run"
  fi
  before=$(cat "$tmp/run/.lock" 2>/dev/null)
  rm -f "$tmp"/rc.*
  mpiexec -n $n "$tmp/rank.sh" "$bin" -q --mpi --threads=1 --out "$tmp/run" "$@" >/dev/null 2>"$tmp/err" &
  pid=$!
  if [ $when != end ]; then
    k=0
    while ! held "$tmp/run/.lock" "$before" && [ $k -lt 600 ] && kill -0 $pid 2>/dev/null; do
      sleep 0.05; k=$((k + 1))
    done
    ms=0
    if [ $when = random ]; then
      # After the checkpoint is loaded: rank 0 clears the directory
      # (report.json first) just before the search starts.
      while [ -e "$tmp/run/report.json" ] && [ $k -lt 1200 ] && kill -0 $pid 2>/dev/null; do
        sleep 0.05; k=$((k + 1))
      done
      # A moment in the first third of the one-process time: the search
      # on 2 or 3 ranks lasts more than half of it (2 cores here).
      ms=$(( 100 + (seed * 7919 + (i + 1) * 104729) % (ref_ms / 3 + 1) ))
    fi
    sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
    kill -USR1 $pid 2>/dev/null
  fi
  wait $pid
  mrc=$?
  # Every rank's own status, which must be the same on all ranks.
  rc=$(cat "$tmp"/rc.* 2>/dev/null | sort -u | tr '\n' ' ')
  rc=${rc% }
  [ "$(ls "$tmp"/rc.* 2>/dev/null | wc -l)" -eq $n ] || fail "run on $n ranks: not every rank ended (mpiexec: exit $mrc): $(cat "$tmp/err")"
  [ "$mrc" = "$rc" ] || [ "$mrc" = 0 ] ||
    fail "run on $n ranks: mpiexec exit $mrc, the ranks' $rc: $(cat "$tmp/err")"
  case $rc in
    4) [ -f "$tmp/run/checkpoint" ] || fail "stop on $n ranks: exit 4 without a checkpoint"
       grep -q '"complete": false' "$tmp/run/report.json" || fail "stop on $n ranks: report says complete"
       echo "stopped on $n ranks ($when, $ms ms) (exit 4): $(field "$tmp/run/report.json" states_explored) states so far"
       stops=$((stops + 1)) ;;
    0) echo "the run on $n ranks completed"; break ;;
    *) fail "run on $n ranks: exit $rc (mpiexec: $mrc): $(cat "$tmp/err")" ;;
  esac
  i=$((i + 1))
done
[ $rc -eq 0 ] || fail "the last run (on 1 rank) did not complete (exit $rc)"
same "$tmp/ref" "$tmp/run" "stopped $stops times and resumed"
echo "stop/resume across rank counts: $stops stops, the uninterrupted results"

# ---------------------------------------------------------------- 3. verdicts
space="--grid-x=1,2 --grid-y=1 --grid-z=1 --forloop-ranges=1,2 --max-block-ops=8
       --kernel-ops=matmul,exp,add,mul,div --max-kernel-ops=3 --op-budget=0"
bs="$top_srcdir/bench/boxed_square.graph"
# shellcheck disable=SC2086
"$bin" -q --threads=1 --out "$tmp/z1" $space "$bs" >/dev/null 2>"$tmp/err" ||
  fail "boxed_square, one process: $(cat "$tmp/err")"
one=$(field "$tmp/z1/report.json" solver_calls)
[ "$one" -gt 0 ] || fail "boxed_square made no solver call in one process"
# Verdicts reach the other ranks in batches, so two ranks may ask the same
# question before one's answer arrives: how many do depends on timing (a
# loaded machine gave 110 to 149 against 103 in one process).  The
# baseline is the same run without sharing (MIRS_TEST_NO_VERDICT_SHARING,
# a test hook of builds with fault injection): each rank then asks again
# what the others answered (249 and 295 here).  Sharing must remove more
# than half of those repeated questions: sum <= (one + unshared) / 2.
# Builds without the hook compare with one process: within 1.2x.  Up to
# three tries, and one that passes is enough.
unshared=
if "$bin" --version | grep -q 'fault_injection=yes'; then
  rm -rf "$tmp/zn"
  # shellcheck disable=SC2086
  MIRS_TEST_NO_VERDICT_SHARING=1 mpiexec -n 3 "$bin" -q --mpi --threads=1 --out "$tmp/zn" \
    $space "$bs" >/dev/null 2>"$tmp/err" || fail "boxed_square, 3 ranks unshared: $(cat "$tmp/err")"
  same "$tmp/z1" "$tmp/zn" "boxed_square on 3 ranks without sharing"
  unshared=$(field "$tmp/zn/report.json" solver_calls)
  echo "boxed_square without sharing: $unshared solver calls on 3 ranks vs $one in one process"
  [ "$unshared" -gt "$one" ] || echo "note: no question was repeated without sharing"
fi
shared_ok() {
  if [ -n "$unshared" ]; then
    [ $((2 * $1)) -le $((one + unshared)) ]
  else
    [ $(($1 * 10)) -le $((one * 12)) ]
  fi
}
counts=
for try in 1 2 3; do
  rm -rf "$tmp/z3"
  # shellcheck disable=SC2086
  mpiexec -n 3 "$bin" -q --mpi --threads=1 --out "$tmp/z3" $space "$bs" >/dev/null 2>"$tmp/err" ||
    fail "boxed_square, 3 ranks: $(cat "$tmp/err")"
  same "$tmp/z1" "$tmp/z3" "boxed_square on 3 ranks"
  three=$(field "$tmp/z3/report.json" solver_calls)
  per=$(sed -n 's/.*"mpi": \[//p' "$tmp/z3/report.json" | grep -o '"solver_calls": [0-9]*' | sed 's/.*: //' | tr '\n' ' ')
  sum=0
  for v in $per; do sum=$((sum + v)); done
  [ "$sum" -eq "$three" ] || fail "per-rank solver calls ($per) do not add up to $three"
  echo "boxed_square, try $try: $three solver calls on 3 ranks (per rank: $per) vs $one in one process"
  counts="$counts $three"
  shared_ok "$three" && break
done
shared_ok "$three" ||
  fail "3 ranks with sharing: solver calls$counts in every try (one process $one, unshared ${unshared:-not run})"
echo "PASS"
