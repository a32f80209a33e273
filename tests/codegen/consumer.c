/* SPDX-License-Identifier: MIT */
/* tests/codegen/consumer.c - a C11 caller of generated code, as a compiler
 * embedding mirsearch would be: it includes only the generated header
 * (iface.h, from tests/codegen/iface.graph) and links the object compiled
 * from the generated .cu (here host C++ through the emulation header, so
 * "device memory" is host memory).  It checks the contract the header
 * states (NULL, misaligned and aliased pointers, a short or NULL
 * workspace are refused before anything runs, with their status codes
 * and messages) and that a good call computes Y = (X*X).W and
 * S = sum(Y, dim=1).  Exit 0 when all hold; the first failure is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iface.h"

enum { M = 4, K = 8, N = 16 };

static int failures;

/* Record a failed expectation. */
static void expect(int ok, const char *what) {
  if (!ok) {
    printf("consumer: FAIL: %s\n", what);
    failures++;
  }
}

/* The status of a call on these buffers. */
static int call(const float *x, const float *w, float *y, float *s, void *ws, size_t wsb) {
  return mirs_iface(x, w, y, s, ws, wsb, NULL);
}

int main(void) {
  /* One 16-byte aligned arena: every buffer at a 256-byte offset. */
  float *arena = aligned_alloc(256, 256 * 64);
  if (!arena)
    return 3;
  memset(arena, 0, 256 * 64);
  float *x = arena, *w = arena + 64, *y = arena + 256, *s = arena + 384;
  void *ws = arena + 512;
  size_t wsb = mirs_iface_workspace_bytes();
  expect(wsb > 0 && wsb <= 1024, "the workspace size of an intermediate tensor");
  for (int i = 0; i < M * K; i++)
    x[i] = (float)(i % 7) * 0.25f - 0.5f;
  for (int i = 0; i < K * N; i++)
    w[i] = (float)(i % 5) * 0.5f - 1.0f;

  expect(call(NULL, w, y, s, ws, wsb) == MIRS_GEN_NULL_POINTER, "a NULL input");
  expect(call(x, w, y, NULL, ws, wsb) == MIRS_GEN_NULL_POINTER, "a NULL output");
  expect(call(x, w, y + 1, s, ws, wsb) == MIRS_GEN_MISALIGNED, "an output 4 bytes off");
  expect(call(x, w, y, s, (char *)ws + 8, wsb) == MIRS_GEN_MISALIGNED, "a workspace 8 bytes off");
  expect(call(x, w, x, s, ws, wsb) == MIRS_GEN_ALIASING, "an output on an input");
  expect(call(x, w, y, y + 60, ws, wsb) == MIRS_GEN_ALIASING, "outputs overlapping");
  expect(call(x, w, y, (float *)ws, ws, wsb) == MIRS_GEN_ALIASING, "an output in the workspace");
  expect(call(x, w, y, s, NULL, 0) == MIRS_GEN_WORKSPACE, "no workspace");
  expect(call(x, w, y, s, ws, wsb - 1) == MIRS_GEN_WORKSPACE, "a workspace one byte short");
  expect(y[0] == 0.0f && s[0] == 0.0f, "a refused call wrote an output");
  const char *m1 = mirs_iface_status_string(MIRS_GEN_ALIASING);
  const char *m2 = mirs_iface_status_string(MIRS_GEN_WORKSPACE);
  expect(m1 && m2 && strcmp(m1, m2) != 0 && strstr(m1, "overlap"), "status messages");
  expect(strcmp(mirs_iface_status_string(MIRS_GEN_OK), "success") == 0, "the success message");

  /* Inputs may overlap each other: read twice from one buffer. */
  int st = call(x, w, y, s, ws, wsb);
  expect(st == MIRS_GEN_OK, mirs_iface_status_string(st));
  double worst = 0;
  for (int i = 0; i < M; i++) {
    double row = 0;
    for (int j = 0; j < N; j++) {
      double v = 0;
      for (int k = 0; k < K; k++)
        v += (double)x[i * K + k] * x[i * K + k] * w[k * N + j];
      row += v;
      worst = fmax(worst, fabs(v - y[i * N + j]));
    }
    worst = fmax(worst, fabs(row - s[i]));
  }
  expect(worst < 1e-4, "the outputs differ from the C reference");
  if (failures == 0)
    printf("consumer: the C interface holds (largest error %.3g)\n", worst);
  free(arena);
  return failures ? 1 : 0;
}
