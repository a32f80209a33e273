/* SPDX-License-Identifier: MIT */
/* tests/curand_host.c - mirs_philox_at against cuRAND's host generator
 * (curandCreateGeneratorHost with CURAND_RNG_PSEUDO_PHILOX4_32_10), which
 * runs on the CPU with no device, for several seeds, subsequences and
 * offsets.  libcurand is loaded at run time (the project links no CUDA
 * library); skipped with 77 where it is absent.
 *
 * The two orderings (docs/SOUNDNESS.md, "GPU fingerprints"):
 *  - the device API: curand_init(seed, sub, off) puts the counter at
 *    block off / 4 of subsequence sub, i.e. the Philox block at counter
 *    (lo(off/4), hi(off/4), lo(sub), hi(sub)) under key (lo seed, hi seed),
 *    word off % 4 first: exactly mirs_philox_at(seed, sub, off).  The GPU
 *    backend uses it (tests/check_gpufp.c runs cuRAND's own header).
 *  - the host generator, default (legacy) ordering: its output stream at
 *    position j (offset + index) is word j % 4 of group g = j / 4, and
 *    groups are dealt to 65536 subsequences in turn: group g is the block
 *    at counter g / 65536 of subsequence g % 65536.  So
 *    out[j] = mirs_philox_at(seed, g % 65536, 4 (g / 65536) + j % 4),
 *    which this test checks; it reaches subsequences below 2^16 only, the
 *    device API (and so the fingerprints) any 64-bit one. */
#include "config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirsearch.h"

/* The few cuRAND entry points used, by plain C types (curand.h: a
 * generator is a pointer, rng type 161 is CURAND_RNG_PSEUDO_PHILOX4_32_10,
 * status 0 is success). */
typedef int (*create_fn)(void **gen, int type);
typedef int (*seed_fn)(void *gen, unsigned long long seed);
typedef int (*offset_fn)(void *gen, unsigned long long off);
typedef int (*generate_fn)(void *gen, unsigned int *out, size_t n);
typedef int (*destroy_fn)(void *gen);
enum { RNG_PHILOX = 161, HOST_SUBSEQUENCES = 65536 };

/* dlsym into a function pointer (POSIX; memcpy keeps -Wpedantic quiet). */
static void sym(void *lib, const char *name, void *fn, size_t size) {
  void *p = dlsym(lib, name);
  memcpy(fn, &p, size);
}

int main(void) {
  const char *paths[] = {getenv("MIRS_CURAND_LIB"), MIRS_CUDA_LIBDIR "/libcurand.so",
                         "libcurand.so", "libcurand.so.10"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof paths / sizeof *paths && !lib; i++)
    if (paths[i] && *paths[i])
      lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("curand_host: libcurand not found: skipped\n");
    return 77;
  }
  create_fn create;
  seed_fn set_seed;
  offset_fn set_offset;
  generate_fn generate;
  destroy_fn destroy;
  sym(lib, "curandCreateGeneratorHost", &create, sizeof create);
  sym(lib, "curandSetPseudoRandomGeneratorSeed", &set_seed, sizeof set_seed);
  sym(lib, "curandSetGeneratorOffset", &set_offset, sizeof set_offset);
  sym(lib, "curandGenerate", &generate, sizeof generate);
  sym(lib, "curandDestroyGenerator", &destroy, sizeof destroy);
  if (!create || !set_seed || !set_offset || !generate || !destroy) {
    fprintf(stderr, "curand_host: libcurand lacks a host-API entry point\n");
    return 1;
  }
  const uint64_t seeds[] = {0, 1, UINT64_C(0x0123456789ABCDEF), UINT64_C(0xFFFFFFFFFFFFFFFF),
                            UINT64_C(0x9E3779B97F4A7C15) ^ 42};
  /* (subsequence < 65536, block) pairs, and a word offset within the block. */
  const uint64_t subs[] = {0, 1, 7, 4095, 65535};
  const uint64_t blocks[] = {0, 1, 3, 1000, UINT64_C(1) << 33};
  int failures = 0, checked = 0;
  for (size_t a = 0; a < sizeof seeds / sizeof *seeds; a++)
    for (size_t b = 0; b < sizeof subs / sizeof *subs; b++)
      for (size_t c = 0; c < sizeof blocks / sizeof *blocks; c++)
        for (unsigned w = 0; w < 4; w += 3) {
          void *g = NULL;
          uint64_t group = blocks[c] * HOST_SUBSEQUENCES + subs[b];
          uint64_t pos = group * 4 + w;
          unsigned int out[8];
          if (create(&g, RNG_PHILOX) != 0 || set_seed(g, seeds[a]) != 0 ||
              set_offset(g, pos) != 0 || generate(g, out, 8) != 0) {
            fprintf(stderr, "curand_host: the host generator failed\n");
            return 1;
          }
          destroy(g);
          for (unsigned k = 0; k < 8; k++) {
            uint64_t j = pos + k, gk = j / 4;
            uint32_t want = mirs_philox_at(seeds[a], gk % HOST_SUBSEQUENCES,
                                           4 * (gk / HOST_SUBSEQUENCES) + j % 4);
            checked++;
            if (out[k] != want && failures++ < 10)
              fprintf(stderr,
                      "seed %016" PRIx64 " sub %" PRIu64 " block %" PRIu64
                      " word %u: curand %08x, mirs_philox_at %08x\n",
                      seeds[a], gk % HOST_SUBSEQUENCES, gk / HOST_SUBSEQUENCES, (unsigned)(j % 4),
                      out[k], want);
          }
        }
  printf("curand_host: %d values compared, %d differ\n", checked, failures);
  return failures ? 1 : 0;
}
