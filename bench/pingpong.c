/* SPDX-License-Identifier: MIT */
/* bench/pingpong.c - one-way MPI latency and bandwidth between two ranks
 * (half the round trip of N-byte messages), the alpha and beta that
 * bench/glbsim takes for the machine it validates against.
 *   mpicc -O2 -o pingpong bench/pingpong.c && mpiexec -n 2 ./pingpong */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static char buf[1 << 20];
  int sizes[] = {8, 1 << 20};
  for (int s = 0; s < 2; s++) {
    int n = sizes[s], reps = s ? 200 : 20000;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
      if (rank == 0) {
        MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    double one = (MPI_Wtime() - t0) / reps / 2;
    if (rank == 0) {
      if (s == 0)
        printf("alpha_us %.3f\n", one * 1e6);
      else
        printf("beta_GBs %.3f\n", n / one * 1e-9);
    }
  }
  MPI_Finalize();
  return 0;
}
