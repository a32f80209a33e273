# SPDX-License-Identifier: MIT
# bench/scaling.gp - efficiency of `mirsearch --mpi` predicted by bench/glbsim
# (bench/scaling_sim.sh writes the tables bench/scaling_EXAMPLE.dat):
#   gnuplot bench/scaling.gp   (run from the top of the tree) -> bench/scaling.svg
set terminal svg size 2000,520 dynamic font "sans,10"
set output "bench/scaling.svg"
set termoption noenhanced
set multiplot layout 1,4
set logscale x 2
set xrange [1:4096]
set yrange [0:1.05]
set xtics ("1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1024" 1024, "4096" 4096)
set xlabel "ranks (one worker each)"
set ylabel "efficiency T1 / (P TP)"
set grid
set key bottom left font ",8"
set arrow from 1,0.8 to 4096,0.8 nohead dt 2 lc rgb "gray"
do for [ex in "mha_small mha mha_wide mha_cluster"] {
  f = sprintf("bench/scaling_%s.dat", ex)
  set title sprintf("%s (recorded tree)", ex)
  plot f using 1:(strcol(18) eq "IB" && strcol(19) eq "dist.c" ? $5 : 1/0) with linespoints lw 2 pt 7 title "InfiniBand (2 us, 10 GB/s), dist.c", \
       f using 1:(strcol(18) eq "Ethernet" && strcol(19) eq "dist.c" ? $5 : 1/0) with linespoints lw 2 pt 5 title "Ethernet (50 us, 1 GB/s), dist.c", \
       f using 1:(strcol(18) eq "IB" && strcol(19) eq "previous" ? $5 : 1/0) with linespoints lw 1 dt 2 pt 6 title "InfiniBand, previous protocol (ring token, re-find, 2 tries, no spin)", \
       f using 1:(strcol(18) eq "Ethernet" && strcol(19) eq "previous" ? $5 : 1/0) with linespoints lw 1 dt 2 pt 4 title "Ethernet, previous protocol"
}
unset multiplot
