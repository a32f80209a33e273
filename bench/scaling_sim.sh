#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/scaling_sim.sh [--validate] [--name=NAME] [EXAMPLE [GLBTRACE OPTIONS...]]
#
# The scaling model of `mirsearch --mpi` (docs/SCALING.md):
#  1. records the search tree of examples/EXAMPLE.graph (default mha_small)
#     with bench/glbtrace --verify_early=0 (a search over several ranks
#     verifies no new best while it searches) into bench/out/NAME.trace
#     (NAME defaults to EXAMPLE; kept between runs: delete it to record
#     again; GLBTRACE OPTIONS set search options, e.g. a wider space, or
#     --time_limit=S for a partial tree of a longer search), and
#     glbtrace's summary line into bench/out/NAME.info (adopt_us: what
#     rank 0 spends per result another rank sends);
#  2. runs bench/glbsim on it at 1, 2, 3, 64, 256, 1024 and 4096 ranks on two
#     networks, InfiniBand-like (alpha 2 us, beta 10 GB/s) and Ethernet-like
#     (alpha 50 us, beta 1 GB/s), for the protocol as dist.c has it
#     ("dist.c": tree wave, results taken as sent and read back only when
#     reported, 4 random steal tries, keep-one, idle spin) and as it was
#     before those changes ("previous": Safra's token on the ring, results
#     re-found at their paths by rank 0, 2 tries, no keep-one, no spin),
#     and prints one table;
#  3. writes the table to bench/scaling_NAME.dat (gnuplot: bench/scaling.gp).
# --validate also runs `mpiexec -n N src/mirsearch --mpi --threads=1` for N =
# 1, 2, 3 here and prints the measured wall, states and steal counters per
# run next to the simulator's prediction for this machine (alpha measured
# by bench/pingpong.c, the idle nap measured).
# Run from the top of a built tree (./configure && make).
set -eu
validate=0
if [ "${1:-}" = "--validate" ]; then
  validate=1
  shift
fi
name=
case ${1:-} in
  --name=*) name=${1#--name=}; shift ;;
esac
ex=${1:-mha_small}
[ $# -gt 0 ] && shift
name=${name:-$ex}
out=bench/out
mkdir -p "$out"
trace=$out/$name.trace
info=$out/$name.info
for p in bench/glbtrace bench/glbsim; do
  [ -x "$p" ] || { echo "scaling_sim.sh: $p is not built (run make)" >&2; exit 2; }
done

if [ ! -s "$trace" ] || [ ! -s "$info" ]; then
  echo "# recording $trace: bench/glbtrace --verify_early=0 $* examples/$ex.graph $trace"
  bench/glbtrace --verify_early=0 "$@" "examples/$ex.graph" "$trace" | tee "$info"
fi
adopt=$(sed -n 's/.*adopt_us \([0-9.]*\).*/\1/p' "$info" | tail -1)
adopt=${adopt:-100}
text=$(sed -n 's/.*text_bytes \([0-9.]*\).*/\1/p' "$info" | tail -1)
text=${text:-2048}

dat=bench/scaling_$name.dat
echo "# ranks alpha_us beta_GBs TP_s eff eff_run steal_req served empty lifeline tasks idle replay rounds msgs verdict_msgs token network variant" > "$dat"
for net in "IB 2 10" "Ethernet 50 1"; do
  set -- $net
  net_name=$1 alpha=$2 beta=$3
  for variant in dist.c previous; do
    case $variant in
      dist.c) opts="--adopt=$adopt --text=$text" ;;
      *) opts="--token=ring --merge=refind --no-keep-one --spin=0 --tries=2" ;;
    esac
    bench/glbsim --csv --alpha="$alpha" --beta="$beta" $opts "$trace" |
      sed "s/\$/,$net_name,$variant/" | tr ',' ' ' >> "$dat"
    echo >> "$dat" # (a blank line: gnuplot does not join one curve to the next)
  done
done
bench/glbsim --ranks=1 --adopt="$adopt" --text="$text" "$trace" | head -2
echo "# protocol constants as in src/search/dist.c (RANDOM_TRIES 4, STEAL_BATCH 8, VERDICT_BATCH 4096,"
echo "# VERDICT_EVERY 5 ms, IDLE_SPIN 0.1 s, IDLE_NAP 200 us -> nap 250 us) and pool.c (POLL_STEPS 16);"
echo "# one worker per rank; rank 0 takes a remote result in $adopt us (glbtrace's adopt_us), $text bytes of text"
printf '%-9s %-10s %6s %7s %6s %10s %7s %8s %9s %9s %8s %6s %7s\n' network variant ranks alpha_us beta \
  TP_s eff steals served lifeline tasks idle% rounds
awk '!/^#/ && NF {printf "%-9s %-10s %6d %7.1f %6.1f %10.4f %6.1f%% %8d %9d %9d %8d %5.1f%% %7d\n",
  $18, $19, $1, $2, $3, $4, 100*$5, $7, $8, $10, $11, 100*$12, $14}' "$dat"
echo "# table: $dat"

[ $validate = 1 ] || exit 0

echo
echo "# validation on this machine ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
pp=$out/pingpong
alpha=2
if command -v mpicc >/dev/null 2>&1 && mpicc -O2 -o "$pp" bench/pingpong.c 2>/dev/null; then
  alpha=$(mpiexec -n 2 "$pp" | awk '/alpha_us/ {print $2}')
fi
cat > "$out/nap.c" <<'EOF'
#include <stdio.h>
#include <time.h>
int main(void) {
  struct timespec a, b;
  double s = 0;
  for (int i = 0; i < 1000; i++) {
    clock_gettime(CLOCK_MONOTONIC, &a);
    nanosleep(&(struct timespec){0, 200000}, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    s += (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
  }
  printf("%.0f\n", s / 1000);
  return 0;
}
EOF
${CC:-cc} -O2 -o "$out/nap" "$out/nap.c"
nap=$("$out/nap")
echo "# measured: alpha $alpha us (shared memory), idle nap $nap us"
echo "# measured: mpiexec wall, report.json wall_seconds, rank 0's states and all ranks' steal requests,"
echo "# CPU seconds of all ranks; predicted by bench/glbsim for this alpha and nap, as dist.c is"
printf '%5s %9s %9s %10s %10s %10s %9s %9s %7s\n' ranks wall_s report_s TP_sim states_r0 sim_r0 steals sim cpu_s
for n in 1 2 3; do
  d=$out/val_${ex}_$n
  rm -rf "$d" "$d.cpu"
  s=$(date +%s.%N)
  mpiexec -n $n /usr/bin/time -f "cpu %U %S" -a -o "$d.cpu" src/mirsearch -q --mpi --threads=1 \
    --out "$d" "examples/$ex.graph" > "$d.log" 2>&1
  e=$(date +%s.%N)
  wall=$(echo "$e - $s" | bc)
  python3 - "$d/report.json" "$wall" "$n" "$trace" "$alpha" "$nap" "$d.cpu" "$adopt" "$text" <<'EOF'
import json, re, subprocess, sys
rep, wall, n, trace, alpha, nap, cpuf, adopt, text = sys.argv[1:]
r = json.load(open(rep))
rows = r.get("mpi") or [{"states_explored": r["states_explored"], "steal_requests": 0}]
cpu = sum(float(l.split()[1]) + float(l.split()[2]) for l in open(cpuf) if l.startswith("cpu "))
def sim(extra):
    out = subprocess.run(["bench/glbsim", "--csv", "--per-rank", "--ranks=" + n, "--alpha=" + alpha,
                          "--nap=" + nap, "--adopt=" + adopt, "--text=" + text] + extra + [trace], capture_output=True, text=True,
                         check=True).stdout
    st0 = int(re.search(r"# rank 0: states (\d+)", out).group(1))
    f = [l for l in out.splitlines() if not l.startswith("#")][0].split(",")
    return float(f[3]), st0, int(f[6])
a = sim([])
steals = sum(x.get("steal_requests", 0) for x in rows)
print("%5s %9.2f %9.2f %10.2f %10d %9d %9d %7d %7.2f" % (n, float(wall), r["wall_seconds"],
      a[0], rows[0]["states_explored"], a[1], steals, a[2], cpu))
EOF
done
