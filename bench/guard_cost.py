#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/guard_cost.py - the per-call cost of the torch.compile backend's
mask-buffer guard (python/mirsearch/backend_impl.py, _BufferGuard), on
the CPU: guard "version" (address and version counter) against "value"
(the elements the graph reads compared with a compile-time copy), for a
causal tril buffer [1, 1, S, S] read as [:, :, :T, :T]; then the whole
guarded call with a trivial body; then an eager GPT-2 block
(python/tests/models.py) at T = 8, 128 and 1024 for scale.  Best of 7
repeats; torch's default thread count.

Usage: PYTHONPATH=python:python/tests MIRSEARCH_LIB=.libs/libmirsearch.so \
         python3 bench/guard_cost.py [--no-model]
(torch 2.x, e.g. /opt/mirsearch-torch2/bin/python; the GPT-2 block at
T = 1024, d = 768 takes a few seconds a call on a small CPU: --no-model
skips the blocks.)"""

import sys
import timeit

import torch

from mirsearch import backend_impl as bi


def per_call(f, n):
    return min(timeit.repeat(f, number=n, repeat=7)) / n


def main(argv):
    print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
    for s, t in ((8, 8), (1024, 8), (1024, 128), (1024, 1024)):
        buf = torch.tril(torch.ones(s, s)).view(1, 1, s, s)
        idx = (slice(None), slice(None), slice(None, t), slice(None, t))
        gv = bi._BufferGuard(0, "bias", buf, [idx], "version")
        ga = bi._BufferGuard(0, "bias", buf, [idx], "value")
        assert gv.holds(buf) and ga.holds(buf)
        n = 20000 if t <= 128 else 200
        v, a = per_call(lambda: gv.holds(buf), n), per_call(lambda: ga.holds(buf), n)
        print("buffer [1, 1, %d, %d] read [:, :, :%d, :%d]: version %.2f us, value %.2f us "
              "(%.1fx)" % (s, s, t, t, v * 1e6, a * 1e6, a / v))

    class Body(torch.nn.Module):
        def forward(self, *a):
            return a[0]
    buf = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)
    idx = (slice(None), slice(None), slice(None, 8), slice(None, 8))
    x = torch.randn(1, 8, 32)
    for guard in ("version", "value"):
        m = bi._guarded(Body(), Body(), [bi._BufferGuard(1, "bias", buf, [idx], guard)])
        print("guarded call, trivial body, guard=%s: %.2f us"
              % (guard, per_call(lambda: m(x, buf), 20000) * 1e6))
    if "--no-model" in argv:
        return 0
    from models import GPT2Block
    with torch.no_grad():
        for b, s, d, h, f in ((1, 8, 32, 2, 128), (1, 128, 768, 12, 3072),
                              (1, 1024, 768, 12, 3072)):
            torch.manual_seed(0)
            m, x = GPT2Block(d, h, f, s), torch.randn(b, s, d)
            m(x)
            n = 200 if s <= 8 else (5 if s <= 128 else 2)
            print("eager GPT2Block d=%d T=%d: %.1f us a call" % (d, s, per_call(lambda: m(x), n)
                                                                * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
