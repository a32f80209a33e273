#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/slurm.sh - scripts/mirsearch.sbatch under a real Slurm.
#
# Starts a private single-node Slurm (slurmctld and slurmd on 127.0.0.1,
# AuthType=auth/none, its own slurm.conf, ports, state and spool under a
# temporary directory; stopped and removed on every exit path), submits
# the batch script on a search, sends the batch shell SIGUSR1 (what
# `--signal=B:USR1@T` does before the time limit) while the search runs,
# and checks that the search stopped with status 4 and a checkpoint, that
# the job requeued itself, that the requeued job resumed from the
# checkpoint and completed, and that its results (report.json's result
# list, candidates/, best.ugraph) are byte-identical to an uninterrupted
# run of the same search.  The same through a job of 2 tasks (sbatch
# --ntasks=2: mirsearch --mpi on 2 ranks started by srun --mpi=pmi2, when
# mirsearch has MPI; report.json must say "ranks": 2), and 2 tasks that
# srun --mpi=none starts unconnected are refused.  Then the other
# endings: a bad program (exit 2), a stop by --max-states (exit 4) and
# scancel (SIGTERM) are not requeued, another program submitted with the
# stopped one's --out is refused (exit 2, its checkpoint kept), and a complete search whose job is
# requeued is not run again.  MIRSEARCH_TEST_MPI=0 leaves out the MPI case.
#
# Run by `make check` (top_srcdir and top_builddir set); by hand from a
# build directory they default to the script's tree and ".".
# MIRSEARCH_TEST_BIN picks another mirsearch program; MIRSEARCH_TEST_GRAPH
# another program to search (it must run long enough to be interrupted:
# the default takes about 10-25 s).  MIRSEARCH_TEST_KEEP=1 keeps the
# temporary directory (logs, outputs).
# The daemons run as the user who runs the test (root is not needed: a
# slurmd that is not root launches that user's jobs).
# Exit: 0 pass, 1 fail, 77 skip (Slurm is not installed).

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
bin=${MIRSEARCH_TEST_BIN:-$top_builddir/src/mirsearch}
# As under make check, also when run by hand: no result cache, so every
# search runs (one served from ~/.cache/mirsearch would come back
# complete where a test stops, kills or resumes it).
MIRSEARCH_NO_CACHE=1; export MIRSEARCH_NO_CACHE
graph=${MIRSEARCH_TEST_GRAPH:-$top_srcdir/examples/gated_mlp_small.graph}
sbatch_script=$top_srcdir/scripts/mirsearch.sbatch
me=slurm.sh

say() { echo "$me: $*"; }
skip() { say "SKIP: $*"; exit 77; }

# The daemons are in /usr/sbin, which a user's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
export PATH
for p in slurmctld slurmd sbatch scontrol scancel srun sinfo; do
  command -v $p >/dev/null 2>&1 ||
    skip "'$p' is not installed (Debian: apt-get install slurm-wlm; scripts/install-deps.sh does it)"
done
[ -x "$bin" ] || { say "FAIL: $bin not built"; exit 1; }
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
case $graph in /*) ;; *) graph=$(pwd)/$graph ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mirs_slurm.XXXXXX") || exit 1
conf=$tmp/slurm.conf
ctld_pid=
slurmd_pid=
rc=1

# The processes of this private Slurm (daemons, slurmstepd, job steps) are
# the ones whose environment names this test's slurm.conf.
own_pids() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}
    p=${p%/environ}
    [ "$p" = $$ ] && continue
    { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qx "SLURM_CONF=$conf" && echo "$p"
  done
}

# Stop slurmd and slurmctld: SIGTERM, then SIGKILL after 15 s.
stop_daemons() {
  for p in $slurmd_pid $ctld_pid; do kill "$p" 2>/dev/null; done
  i=0
  while [ $i -lt 75 ] && { kill -0 "$slurmd_pid" || kill -0 "$ctld_pid"; } 2>/dev/null; do
    sleep 0.2
    i=$((i + 1))
  done
  for p in $slurmd_pid $ctld_pid; do kill -9 "$p" 2>/dev/null; done
  for p in $slurmd_pid $ctld_pid; do wait "$p" 2>/dev/null; done
  ctld_pid= slurmd_pid=
}

cleanup() {
  trap - EXIT INT TERM HUP
  if [ -n "$ctld_pid" ]; then
    SLURM_CONF=$conf scancel --quiet --user="$(id -un)" >/dev/null 2>&1
    i=0
    while [ $i -lt 20 ] && [ -n "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ]; do
      sleep 0.5
      i=$((i + 1))
    done
  fi
  stop_daemons
  left=$(own_pids)
  if [ -n "$left" ]; then
    kill $left 2>/dev/null
    sleep 1
    left=$(own_pids)
    [ -n "$left" ] && kill -9 $left 2>/dev/null
  fi
  if [ "${MIRSEARCH_TEST_KEEP:-0}" = 1 ]; then
    say "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}
trap 'cleanup; exit $rc' EXIT
trap 'say "interrupted: stopping Slurm and cleaning up"; rc=1; exit 1' INT TERM HUP

dump_logs() {
  for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/slurmctld.out "$tmp"/slurmd.out "$tmp"/job.log; do
    [ -s "$f" ] || continue
    echo "---- $f (last 60 lines)"
    tail -n 60 "$f"
  done
}
fail() {
  say "FAIL: $*"
  dump_logs
  rc=1
  exit 1
}

# wait_for SECONDS WHAT COMMAND...: poll COMMAND every 0.2 s (every
# second after the first 10 s) until it succeeds; fail naming WHAT after
# SECONDS.
wait_for() {
  limit=$1 what=$2
  shift 2
  start=$(date +%s)
  end=$(($(date +%s) + limit))
  until "$@"; do
    now=$(date +%s)
    [ "$now" -lt $end ] || fail "timed out after ${limit}s waiting for $what"
    if [ $((now - start)) -lt 10 ]; then sleep 0.2; else sleep 1; fi
  done
}

# Two TCP ports nothing listens on (from /proc/net/tcp*, state 0A).
free_port() {
  used=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
    awk '$4 == "0A" { split($2, a, ":"); print a[2] }' | while read -r h; do printf '%d\n' "0x$h"; done)
  n=$1
  while :; do
    n=$((20000 + (n * 7919 + 104729) % 40000))
    echo "$used" | grep -qx "$n" || { echo $n; return; }
  done
}

host=$(uname -n | cut -d. -f1)
cpus=$(nproc)
# The MPI case runs 2 tasks: a 1-CPU machine's node claims 2 CPUs
# (config_overrides: slurmd does not drain a node that has fewer).
overrides=
[ "$cpus" -ge 2 ] || { cpus=2; overrides=SlurmdParameters=config_overrides; }
user=$(id -un)
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/work" || fail "cannot create $tmp"
SLURM_CONF=$conf
export SLURM_CONF

# node_idle: 0 when the node is up and idle, 1 while not yet, 2 when a
# daemon has exited.
node_idle() {
  kill -0 $ctld_pid 2>/dev/null || return 2
  kill -0 $slurmd_pid 2>/dev/null || return 2
  [ "$(sinfo -h -n mirsnode -o %t 2>/dev/null)" = idle ]
}

# Start the daemons; pick other ports and try again (3 tries) when one of
# them could not bind its port (taken between the choice and the bind).
t_start=$(date +%s)
seed=$(( ($$ + $(date +%s)) % 40000 ))
try=1
while :; do
  ctld_port=$(free_port $seed)
  slurmd_port=$(free_port $ctld_port)
  seed=$slurmd_port
  rm -rf "$tmp/state" "$tmp/spool" && mkdir -p "$tmp/state" "$tmp/spool"
  cat >"$conf" <<EOF
# mirsearch tests/slurm.sh: a private single-node Slurm
ClusterName=mirstest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/none
CredType=cred/none
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
KillWait=30
# A requeued job may start again cred_expire seconds after it stopped
# (default 120); the scheduler runs every sched_interval seconds (default 60).
AuthInfo=cred_expire=5
SchedulerParameters=sched_interval=1
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
$overrides
NodeName=mirsnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=mirs Nodes=mirsnode Default=YES MaxTime=INFINITE State=UP
EOF
  slurmctld -D -c -i -f "$conf" >"$tmp/slurmctld.out" 2>&1 &
  ctld_pid=$!
  slurmd -D -N mirsnode -f "$conf" >"$tmp/slurmd.out" 2>&1 &
  slurmd_pid=$!
  end=$(($(date +%s) + 60))
  st=1
  while [ "$(date +%s)" -lt $end ]; do
    node_idle
    st=$?
    [ $st -eq 1 ] || break
    sleep 0.2
  done
  [ $st -eq 0 ] && break
  if [ $st -eq 2 ] && [ $try -lt 3 ] &&
     grep -qi 'address already in use' "$tmp/slurmctld.out" "$tmp/slurmd.out" 2>/dev/null; then
    say "port $ctld_port or $slurmd_port was taken: trying other ports"
    stop_daemons
    try=$((try + 1))
    continue
  fi
  [ $st -eq 2 ] && fail "a Slurm daemon exited during startup (slurmctld on port $ctld_port, slurmd on $slurmd_port)"
  fail "timed out after 60 s waiting for the node to come up idle (slurmctld on port $ctld_port, slurmd on $slurmd_port)"
done
say "Slurm up in $(($(date +%s) - t_start)) s (slurmctld :$ctld_port, slurmd :$slurmd_port, $cpus CPUs)"

# The uninterrupted reference.
t0=$(date +%s)
"$bin" -q --out "$tmp/ref" "$graph" >"$tmp/ref.out" 2>&1 || fail "reference search: exit $?: $(cat "$tmp/ref.out")"
say "uninterrupted search: $(($(date +%s) - t0)) s"

# The batch job.  No --time: the script's own --signal=B:USR1@180 never
# fires; the test sends the same signal to the batch shell itself.
t0=$(date +%s)
job=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable -o "$tmp/job.log" \
  "$sbatch_script" "$graph" --out="$tmp/run") || fail "sbatch failed"
job=${job%%;*}
say "submitted job $job"
# warn DIR LOG: send job $job's batch shell the warning (SIGUSR1) once its
# search has started (DIR exists) and run a moment; fail if it finished
# before the warning (LOG says so).
warn() {
  wait_for 120 "job $job's search to start" test -d "$1"
  sleep 1
  grep -q 'search complete' "$2" 2>/dev/null &&
    fail "job $job's search completed before the warning: choose a longer MIRSEARCH_TEST_GRAPH"
  scancel --batch --signal=USR1 "$job" || fail "scancel --batch --signal=USR1 $job failed"
}
warn "$tmp/run" "$tmp/job.log"
say "sent SIGUSR1 to job $job's batch shell after $(($(date +%s) - t0)) s"

job_state() { scontrol -o show job "$job" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"; }
job_done() {
  case $(job_state JobState) in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) return 0 ;;
  esac
  return 1
}
wait_for 900 "job $job to finish" job_done
state=$(job_state JobState)
restarts=$(job_state Restarts)
exitcode=$(job_state ExitCode)
say "job $job: $state, exit code $exitcode, restarts $restarts, $(($(date +%s) - t0)) s from submission; the batch script's log:"
grep 'mirsearch.sbatch:' "$tmp/job.log" | sed 's/^/  /'

# mirsearch's own lines name the checkpoint it wrote when it stopped.
if ! grep -v 'mirsearch.sbatch:' "$tmp/job.log" | grep -q "$tmp/run/checkpoint"; then
  [ "$restarts" = 0 ] && grep -q 'search complete' "$tmp/job.log" &&
    fail "the search completed before SIGUSR1 reached it: choose a longer MIRSEARCH_TEST_GRAPH"
  fail "the first run did not stop with a checkpoint"
fi
grep -q "search stopped with a checkpoint in $tmp/run: requeueing job $job" "$tmp/job.log" ||
  fail "the batch script did not see exit status 4 and requeue"
[ "$restarts" = 1 ] || fail "job restarts: '$restarts', expected 1 (one requeue)"
grep -q "job $job (restart 1): resuming from $tmp/run/checkpoint" "$tmp/job.log" ||
  fail "the requeued job did not resume from the checkpoint"
grep -q "srun .* --resume=$tmp/run" "$tmp/job.log" || fail "the requeued job did not run mirsearch --resume"
[ "$state" = COMPLETED ] && [ "$exitcode" = 0:0 ] || fail "job $job ended $state with exit code $exitcode"
grep -q 'search complete' "$tmp/job.log" || fail "the job log does not say the search completed"

# The same results as the uninterrupted search.
grep -q '"complete": true' "$tmp/run/report.json" || fail "report.json does not say complete"
[ ! -e "$tmp/run/checkpoint" ] || fail "the complete search left its checkpoint"
sed -n '/"results"/,$p' "$tmp/ref/report.json" >"$tmp/ref.results"
sed -n '/"results"/,$p' "$tmp/run/report.json" >"$tmp/run.results"
[ -s "$tmp/ref.results" ] || fail "no result list in the reference report.json"
cmp -s "$tmp/ref.results" "$tmp/run.results" || fail "report.json result lists differ"
cmp -s "$tmp/ref/best.ugraph" "$tmp/run/best.ugraph" || fail "best.ugraph differs"
diff -r "$tmp/ref/candidates" "$tmp/run/candidates" >/dev/null || fail "candidates/ differ"

# The same through a job of 2 tasks: the script runs mirsearch --mpi on 2
# ranks (srun --mpi=pmi2); SIGUSR1 stops both, the job requeues, resumes
# on 2 ranks and ends with the one-process results.
main=$job
if [ "${MIRSEARCH_TEST_MPI:-1}" = 1 ] && "$bin" --version 2>/dev/null | grep -q 'mpi=yes'; then
  # Tasks that srun starts without PMI are not connected: refused.
  srun --mpi=none --ntasks=2 "$bin" -q --mpi --threads=1 --out "$tmp/unconnected" "$graph" \
    >"$tmp/unconnected.log" 2>&1 && fail "srun --mpi=none: 2 unconnected --mpi tasks were not refused"
  grep -q "MPI sees 1 rank but this Slurm step has 2 tasks" "$tmp/unconnected.log" ||
    fail "srun --mpi=none: $(cat "$tmp/unconnected.log")"
  [ ! -e "$tmp/unconnected" ] || fail "srun --mpi=none: the unconnected tasks wrote $tmp/unconnected"
  t0=$(date +%s)
  job=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable --ntasks=2 -o "$tmp/mpi.log" \
    "$sbatch_script" "$graph" --out="$tmp/mpi" --threads=1) || fail "sbatch --ntasks=2 failed"
  job=${job%%;*}
  warn "$tmp/mpi" "$tmp/mpi.log"
  wait_for 900 "job $job (2 tasks) to finish" job_done
  say "job $job (2 tasks): $(job_state JobState), exit code $(job_state ExitCode), restarts $(job_state Restarts), $(($(date +%s) - t0)) s from submission; the batch script's log:"
  grep 'mirsearch.sbatch:' "$tmp/mpi.log" | sed 's/^/  /'
  grep -q "srun --mpi=pmi2 --ntasks=2 .*$bin --mpi $graph" "$tmp/mpi.log" ||
    fail "job $job: the script did not run srun --mpi=pmi2 --ntasks=2 mirsearch --mpi"
  grep -q "search stopped with a checkpoint in $tmp/mpi: requeueing job $job" "$tmp/mpi.log" ||
    fail "job $job: the script did not see exit status 4 and requeue"
  [ "$(job_state Restarts)" = 1 ] || fail "job $job restarts: '$(job_state Restarts)', expected 1"
  grep -q "srun --mpi=pmi2 --ntasks=2 .*$bin --mpi --resume=$tmp/mpi" "$tmp/mpi.log" ||
    fail "job $job: the requeued job did not run mirsearch --mpi --resume on 2 ranks"
  [ "$(job_state JobState)" = COMPLETED ] && [ "$(job_state ExitCode)" = 0:0 ] ||
    fail "job $job ended $(job_state JobState) with exit code $(job_state ExitCode)"
  grep -q '"complete": true' "$tmp/mpi/report.json" || fail "job $job: report.json does not say complete"
  grep -q '"ranks": 2,' "$tmp/mpi/report.json" || fail "job $job: report.json does not say \"ranks\": 2"
  [ ! -e "$tmp/mpi/checkpoint" ] || fail "job $job: the complete search left its checkpoint"
  sed -n '/"results"/,$p' "$tmp/mpi/report.json" >"$tmp/mpi.results"
  cmp -s "$tmp/ref.results" "$tmp/mpi.results" || fail "job $job: report.json result lists differ"
  cmp -s "$tmp/ref/best.ugraph" "$tmp/mpi/best.ugraph" || fail "job $job: best.ugraph differs"
  diff -r "$tmp/ref/candidates" "$tmp/mpi/candidates" >/dev/null || fail "job $job: candidates/ differ"
  say "2 tasks: srun --mpi=pmi2 ran 2 ranks, stopped by SIGUSR1 (exit 4), requeued, resumed on 2 ranks, the one-process results (\"ranks\": 2); unconnected tasks refused"
else
  say "no MPI case (mirsearch built without MPI, or MIRSEARCH_TEST_MPI=0)"
fi
job=$main

# Other endings keep their status and are not requeued: a bad program
# (status 2), a stop by --max-states (status 4), and scancel (SIGTERM: the
# search checkpoints, no requeue).
# A complete search whose job is requeued again is not searched again.
t0=$(date +%s)
main=$job
scontrol requeue "$main" || fail "scontrol requeue $main (complete) failed"
printf 'input X : f16[4]\nY = nosuchop(X)\noutput Y\n' >"$tmp/bad.graph"
bad=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable -o "$tmp/bad.log" \
  "$sbatch_script" "$tmp/bad.graph" --out="$tmp/bad") || fail "sbatch failed"
bad=${bad%%;*}
limited=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable -o "$tmp/limited.log" \
  "$sbatch_script" "$graph" --out="$tmp/limited" --max-states=2000) || fail "sbatch failed"
limited=${limited%%;*}
cancel=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable -o "$tmp/cancel.log" \
  "$sbatch_script" "$graph" --out="$tmp/cancel") || fail "sbatch failed"
cancel=${cancel%%;*}
cancel_started() { [ -d "$tmp/cancel" ]; }
wait_for 120 "job $cancel's search to start" cancel_started
sleep 1
scancel "$cancel" || fail "scancel $cancel failed"
job=$bad
wait_for 120 "job $bad to finish" job_done
[ "$(job_state JobState)" = FAILED ] && [ "$(job_state ExitCode)" = 2:0 ] && [ "$(job_state Restarts)" = 0 ] ||
  fail "job $bad (bad program): $(job_state JobState), exit code $(job_state ExitCode), restarts $(job_state Restarts); expected FAILED, 2:0, 0"
grep -q 'bad.graph:2:5: error' "$tmp/bad.log" || fail "job $bad's log lacks the error: $(cat "$tmp/bad.log")"
job=$limited
wait_for 120 "job $limited to finish" job_done
[ "$(job_state JobState)" = FAILED ] && [ "$(job_state ExitCode)" = 4:0 ] && [ "$(job_state Restarts)" = 0 ] ||
  fail "job $limited (--max-states): $(job_state JobState), exit code $(job_state ExitCode), restarts $(job_state Restarts); expected FAILED, 4:0, 0"
grep -q "by mirsearch's own limit, or a signal sent to the step): not requeueing" "$tmp/limited.log" ||
  fail "job $limited: the script did not report the stop by --max-states: $(grep mirsearch.sbatch: "$tmp/limited.log")"
[ -f "$tmp/limited/checkpoint" ] || fail "job $limited: no checkpoint after --max-states"
# Another program submitted with the same --out: the script resumes with
# the program named, and mirsearch refuses the foreign checkpoint (exit 2)
# instead of reporting the other program's search as this one's.
cp "$tmp/limited/checkpoint" "$tmp/limited.ckpt"
foreign=$(cd "$tmp/work" && MIRSEARCH=$bin sbatch --parsable -o "$tmp/foreign.log" \
  "$sbatch_script" "$top_srcdir/examples/rmsnorm_linear_small.graph" --out="$tmp/limited" --max-states=2000) ||
  fail "sbatch failed"
job=${foreign%%;*}
wait_for 120 "job $job (another program's checkpoint) to finish" job_done
[ "$(job_state JobState)" = FAILED ] && [ "$(job_state ExitCode)" = 2:0 ] ||
  fail "job $job (another program's checkpoint): $(job_state JobState), exit code $(job_state ExitCode); expected FAILED, 2:0"
grep -q 'written for another program' "$tmp/foreign.log" ||
  fail "job $job: the log does not say the checkpoint is another program's: $(cat "$tmp/foreign.log")"
cmp -s "$tmp/limited/checkpoint" "$tmp/limited.ckpt" || fail "job $job changed the other program's checkpoint"
job=$cancel
wait_for 120 "job $cancel to finish" job_done
[ "$(job_state JobState)" = CANCELLED ] && [ "$(job_state Restarts)" = 0 ] ||
  fail "job $cancel (scancel): $(job_state JobState), restarts $(job_state Restarts); expected CANCELLED, 0"
grep -q "search stopped with a checkpoint in $tmp/cancel (SIGTERM): not requeueing" "$tmp/cancel.log" ||
  fail "job $cancel: the script did not report the SIGTERM stop: $(grep mirsearch.sbatch: "$tmp/cancel.log")"
[ -f "$tmp/cancel/checkpoint" ] || fail "job $cancel: no checkpoint after scancel"
job=$main
requeued_again() { [ "$(job_state Restarts)" = 2 ] && job_done; }
wait_for 120 "job $main to run again after its second requeue" requeued_again
[ "$(job_state JobState)" = COMPLETED ] && [ "$(job_state ExitCode)" = 0:0 ] ||
  fail "job $main requeued when complete: $(job_state JobState), exit code $(job_state ExitCode)"
grep -q "job $main (restart 2): the search in $tmp/run is already complete" "$tmp/job.log" ||
  fail "job $main requeued when complete did not see its complete search"
cmp -s "$tmp/ref/best.ugraph" "$tmp/run/best.ugraph" || fail "best.ugraph changed"
say "a bad program ends its job FAILED with status 2; --max-states with status 4 and no requeue; scancel leaves a checkpoint and no requeue; a complete search requeued is not redone ($(($(date +%s) - t0)) s)"

field() { sed -n "s/^  \"$2\": \\([^,]*\\),\$/\\1/p" "$1"; }
n=$(field "$tmp/ref/report.json" graphs_found)
say "PASS: stopped by SIGUSR1 (exit 4), requeued, resumed, and ended with the uninterrupted run's $n results and best.ugraph"
rc=0
