/* SPDX-License-Identifier: MIT */
/* src/core/philox.c - Philox4x32-10 (Salmon et al., SC'11), the counter-
 * based generator behind cuRAND's curandStatePhilox4_32_10_t.
 *
 * Invariant: mirs_philox_at(seed, sub, off) equals the first curand()
 * after curand_init(seed, sub, off, &state): key = (lo32(seed),
 * hi32(seed)), counter = (lo32(off/4), hi32(off/4), lo32(sub), hi32(sub)),
 * word off % 4 of the block.  That equality is what makes CPU and GPU
 * fingerprints bit-identical.  Checked against Random123's known-answer
 * vectors in tests/check_core.c. */
#include "config.h"

#include "core/core.h"

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

/* Ten rounds of Philox4x32 on ctr under key. */
void mirs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The value curand() returns after curand_init(seed, subsequence, offset). */
uint32_t mirs_philox_at(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  uint64_t block = offset / 4;
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)subsequence,
                     (uint32_t)(subsequence >> 32)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  mirs_philox4x32_10(ctr, key, out);
  return out[offset % 4];
}
