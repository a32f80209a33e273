#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/backend_cuda.py - the torch.compile backend's cuda mode on a model.

Usage: backend_cuda.py [--dry-run] [--size=B,S,D,F] [--dtype=f32|f16|bf16]
                       [--time-limit=S] [--threads=N] [--reps=N] [--warmup=N]

On a GPU: GPT-2's MLP block (python/tests/models.py: LayerNorm, c_fc,
GELU, c_proj, residual) compiled with torch.compile and mirsearch's
backend in cuda mode (each searched piece's generated CUDA built by
torch.utils.cpp_extension.load_inline and called on the current stream).
It checks the compiled model against eager and against the same model in
float64 (max |x - ref| / max |ref|, within the dtype's tolerance), requires
that at least one piece ran its generated kernel, and times eager,
torch.compile (inductor) and the backend the way bench/torch_baseline.py
does (L2 evicted before each run, CUDA events, median of at least 100),
each also captured in a CUDA graph and replayed ("+graph": the GPU's own
time); and profiles 20 back-to-back calls of each (torch.profiler: the
host's time per call, the kernels' device time per call, how many
kernels, the five longest), which says whether a call is bound by its
kernels or by its Python and launch overhead.
It prints one JSON object on stdout and a line a configuration on stderr.
The default size, 4x64x128x512 (batch, sequence, model, MLP) in f16, is
the first device run's (its pieces' searches complete within 8 s; since
the backend's operator budget 0, so do those at 8x128x256x1024: 3 custom
kernels and 2 library matmuls, predicted 50.4 against 82.8 us as
written, where the partition used to keep its pieces as written).

--dry-run needs no GPU: the same path on the CPU, in host mode (the
generated code through the project's GPU emulator), 1x8x32x128 in f32,
checked against eager and float64 and timed by the wall clock (5 runs:
the figures mean nothing; no inductor, whose CPU compile takes a
minute); then each replaced piece's cuda-mode sources: its generated
CUDA compiled by nvcc with the flags load_inline adds, the extension's
C++ wrapper written.  With DEVICE_CHECK_LOAD_INLINE=1 it also builds each
piece's whole extension with load_inline, as cuda mode does (needs
torch's CUDA headers; 74 s on this project's 2 loaded cores).

The library comes from $MIRSEARCH_LIB (docs/PYTHON.md); the package and
models.py from this checkout (python/, python/tests/), so nothing needs
installing.  Exit: 0 pass; 1 a check failed; 2 usage; 3 no torch, no
torch.compile or no CUDA device (nothing run)."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "python", "tests"), HERE]

# f32 allows 1e-3, not 1e-4: a matmul whose operand the kernel computes
# runs on tf32 tensor cores (docs/PYTHON.md, "Tolerance").
TOLERANCE = {"f32": 1e-3, "f16": 1e-2, "bf16": 6e-2}
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def fail(msg, code):
    print("backend_cuda.py: error: " + msg, file=sys.stderr)
    return code


def parse_args(argv):
    """The options as a dict; raises ValueError on a bad one."""
    o = {"dry": False, "size": None, "dtype": None, "time_limit": 8.0, "threads": 0,
         "reps": 100, "warmup": 10}
    for a in argv:
        m = re.fullmatch(r"--([a-z-]+)(?:=(.*))?", a)
        key, val = (m.group(1), m.group(2)) if m else (None, None)
        if a == "--dry-run":
            o["dry"] = True
        elif key == "size" and val and re.fullmatch(r"\d+(,\d+){3}", val):
            o["size"] = [int(v) for v in val.split(",")]
        elif key == "dtype" and val in TOLERANCE:
            o["dtype"] = val
        elif key == "time-limit" and val and re.fullmatch(r"\d+(\.\d+)?", val):
            o["time_limit"] = float(val)
        elif key in ("threads", "reps", "warmup") and val and val.isdigit():
            o[key] = int(val)
        else:
            raise ValueError("bad argument '%s' (see --help)" % a)
    if o["reps"] < 100:
        raise ValueError("--reps must be at least 100")
    return o


class Recorder:
    """mirsearch's backend for torch.compile, keeping the report of every
    graph Dynamo hands it (one per graph break)."""

    def __init__(self, mirsearch, mode, options):
        self.backend = mirsearch.make_backend(mode=mode, options=options)
        self.reports = []

    def __call__(self, gm, example_inputs):
        out = self.backend(gm, example_inputs)
        self.reports.append(out.mirsearch_report)
        return out

    def replaced(self):
        return [p for r in self.reports for p in r["pieces"] if p["replaced"]]


def model_and_input(torch, size, dtype, device):
    from models import GPT2MLP
    b, s, d, f = size
    torch.manual_seed(d)
    m = GPT2MLP(d, f).eval()
    x = torch.randn(b, s, d)
    dt = getattr(torch, DTYPES[dtype])
    m64 = copy.deepcopy(m).double()  # .to() converts a module in place
    return m.to(device=device, dtype=dt), x.to(device=device, dtype=dt), m64, x.double()


def compile_with(torch, model, backend, x):
    """torch.compile(model, backend) and its first call (the compile): the
    module, the output and the seconds."""
    t0 = time.time()
    c = torch.compile(model, backend=backend) if backend else torch.compile(model)
    y = c(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    return c, y, time.time() - t0


def cuda_sources_check(mirsearch, pieces, tmp):
    """Each replaced piece's cuda-mode sources: the generated CUDA compiled
    (-c) by nvcc with load_inline's flags, the wrapper written; with
    DEVICE_CHECK_LOAD_INLINE=1 the whole extension built.  A list of
    problems (empty: all good), and what was checked."""
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS
    from mirsearch.kernel import Kernel, _Signature, _entry_name, cuda_wrapper
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    problems, done = [], []
    for k, p in enumerate(pieces):
        g = mirsearch.Program.parse(p["best"])
        entry = _entry_name(g)
        wrapper = cuda_wrapper(entry, _Signature(g))
        if "int rc = %s(" % entry not in wrapper:
            problems.append("piece %d: the wrapper does not call %s" % (p["index"], entry))
        if not os.path.exists(nvcc):
            done.append("piece %d: wrapper written (no nvcc: CUDA not compiled)" % p["index"])
            continue
        cu = os.path.join(tmp, "piece%d.cu" % k)
        with open(cu, "w") as fh:
            fh.write(g.cuda(entry))
        r = subprocess.run([nvcc, "-c", "-std=c++17"] + COMMON_NVCC_FLAGS +
                           ["-gencode=arch=compute_90,code=sm_90", cu, "-o", cu + ".o"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("piece %d: nvcc with load_inline's flags: %s"
                            % (p["index"], r.stderr.strip()[-600:]))
            continue
        what = "piece %d: CUDA compiled with load_inline's flags" % p["index"]
        if os.environ.get("DEVICE_CHECK_LOAD_INLINE") == "1":
            os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
            t0 = time.time()
            try:
                Kernel(g, "cuda", cache_dir=os.path.join(tmp, "cache"))
                what += ", extension built by load_inline in %.0f s" % (time.time() - t0)
            except Exception as e:  # noqa: BLE001 - any build error is the finding
                problems.append("piece %d: load_inline: %s" % (p["index"], str(e)[-600:]))
        done.append(what)
    return problems, done


def wall_time_fn(torch, fn, inputs, reps, warmup, flush):
    """time_fn's statistics from the wall clock, for the CPU (--dry-run)."""
    from torch_baseline import stats
    for _ in range(warmup):
        fn(*inputs)
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*inputs)
        ms.append(1e3 * (time.perf_counter() - t0))
    return stats(ms)


def profile_fn(torch, fn, inputs, calls=20):
    """Where one call's time goes: `calls` calls back to back (no L2
    flush, one synchronize at the end), twice.  host_us: the wall time per
    call of the first loop, unprofiled (the host's pace when the GPU keeps
    up); on a GPU the second runs under torch.profiler: gpu_us, the device
    time per call of its kernels, memsets and copies, kernels (kernel
    launches per call), copies (memsets and memcpys per call) and the five
    longest, in us per call.  Where host_us is far above gpu_us the call
    is bound by its Python and launch overhead, not by the kernels."""
    from torch.profiler import ProfilerActivity, profile
    gpu = inputs[0].is_cuda
    sync = torch.cuda.synchronize if gpu else (lambda: None)

    def loop():
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
        sync()
        return time.perf_counter() - t0

    for _ in range(3):
        fn(*inputs)
    sync()
    out = {"calls": calls, "host_us": 1e6 * loop() / calls}
    if not gpu:
        return out
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        loop()
    dev_type = torch.autograd.DeviceType.CUDA
    per = {}
    for e in prof.events():
        if getattr(e, "device_type", None) != dev_type:
            continue
        t = getattr(e, "device_time", None)
        if t is None:
            t = getattr(e, "cuda_time", 0.0)
        n, us = per.get(e.name, (0, 0.0))
        per[e.name] = (n + 1, us + t)
    copy = lambda name: name.startswith(("Memset", "Memcpy"))  # noqa: E731
    out["gpu_us"] = sum(us for _n, us in per.values()) / calls
    out["kernels"] = sum(n for k, (n, _us) in per.items() if not copy(k)) / calls
    out["copies"] = sum(n for k, (n, _us) in per.items() if copy(k)) / calls
    top = sorted(per.items(), key=lambda kv: -kv[1][1])[:5]
    out["top"] = [{"name": k[:120], "us": us / calls, "per_call": n / calls}
                  for k, (n, us) in top]
    return out


def run(torch, mirsearch, o, dev):
    """The model compiled by the backend (cuda mode on a GPU, host mode on
    the CPU), checked against eager and float64 and timed with eager and,
    on a GPU, inductor; the report and its problems (empty: passed)."""
    from torch_baseline import max_rel_error, time_fn
    gpu = dev.type == "cuda"
    mode, timer = ("cuda", time_fn) if gpu else ("host", wall_time_fn)
    size = o["size"] or ([4, 64, 128, 512] if gpu else [1, 8, 32, 128])
    dtype = o["dtype"] or ("f16" if gpu else "f32")
    model, x, m64, x64 = model_and_input(torch, size, dtype, dev)
    opts = {"time_limit": o["time_limit"] if gpu else min(o["time_limit"], 2.0)}
    opts["threads"] = o["threads"] or (os.cpu_count() if gpu else 1)
    tol = TOLERANCE[dtype]
    report = {"model": "gpt2_mlp", "size": size, "dtype": dtype, "tolerance": tol,
              "mode": mode, "torch": torch.__version__, "configurations": []}
    problems = []
    flush = None
    if gpu:
        report["device"] = torch.cuda.get_device_name(dev)
        l2 = torch.cuda.get_device_properties(dev).L2_cache_size
        flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=dev)
        # load_inline compiles against Python.h: say so when it is missing
        # (a Python without its development headers), before its compile fails.
        inc = sysconfig.get_paths().get("include") or ""
        if not os.path.exists(os.path.join(inc, "Python.h")):
            problems.append("no Python.h in %r: load_inline cannot build" % inc)
    rec = Recorder(mirsearch, mode, opts)
    pieces = []
    # Inductor only on the GPU: on the CPU it compiles C++ for a minute.
    compilers = [("mirsearch " + mode, rec)] + ([("torch.compile", None)] if gpu else [])
    reps, warmup = (o["reps"], o["warmup"]) if gpu else (5, 1)
    # One reset, before both: a reset between them would make the first
    # compile again (in its warm-up runs, and report its pieces twice).
    torch._dynamo.reset()
    with torch.no_grad():
        ref64 = m64.to(dev)(x64.to(dev))
        eager_y = model(x)
        configs = [("eager", model, eager_y, 0.0)]
        for name, backend in compilers:
            try:
                c, y, secs = compile_with(torch, model, backend, x)
                configs.append((name, c, y, secs))
                if backend is rec:
                    pieces = rec.replaced()
            except Exception as e:  # noqa: BLE001 - reported, the others still run
                problems.append("%s: %s: %s" % (name, type(e).__name__, str(e)[-800:]))
        if gpu:
            # Each also captured in a CUDA graph and replayed: the GPU's own
            # time, without the Python and launch overhead of a call.
            from torch_baseline import graphed
            for name, fn, _y, secs in list(configs):
                try:
                    g = graphed(torch, fn, [x])
                    configs.append((name + "+graph", g, g(x), secs))
                except Exception as e:  # noqa: BLE001 - a refused capture is a finding
                    torch.cuda.synchronize()
                    report["configurations"].append(
                        {"name": name + "+graph", "checked": False,
                         "failed": ("%s: %s" % (type(e).__name__, e))[:300]})
        for name, fn, y, secs in configs:
            row = {"name": name, "compile_seconds": secs,
                   "error": max_rel_error([y], [ref64]),
                   "error_vs_eager": max_rel_error([y], [eager_y.double()])}
            row["checked"] = row["error"] <= tol or row["error_vs_eager"] <= tol
            row.update(timer(torch, fn, [x], reps, warmup, flush))
            if not name.endswith("+graph"):
                try:
                    row["profile"] = profile_fn(torch, fn, [x])
                except Exception as e:  # noqa: BLE001 - the timing stands without it
                    row["profile"] = {"failed": ("%s: %s" % (type(e).__name__, e))[:300]}
            report["configurations"].append(row)
    report["pieces"] = [{"ops": p["ops"], "source": p["source"], "cost": p["cost"],
                         "unfused": p["unfused"]} for p in pieces]
    ours = next((r for r in report["configurations"]
                 if r["name"].startswith("mirsearch") and "+graph" not in r["name"]), None)
    if ours is not None and not pieces:
        problems.append("no piece ran its generated kernel: the %s path did not run" % mode)
    if ours is not None and not ours["checked"]:
        problems.append("the backend's output is off: %.2e vs float64, %.2e vs eager (tolerance "
                        "%.0e)" % (ours["error"], ours["error_vs_eager"], tol))
    if not gpu:
        with tempfile.TemporaryDirectory() as tmp:
            more, report["cuda_sources"] = cuda_sources_check(mirsearch, pieces, tmp)
        problems += more
    report["problems"] = problems
    return report, ours


def summary_line(report, ours):
    """The last line: what ran, how fast against eager and inductor."""
    rows = {r["name"]: r for r in report["configurations"]}
    speed = ""
    if ours is not None and "eager" in rows:
        speed = "; %.3gx eager" % (rows["eager"]["median_us"] / ours["median_us"])
        if "torch.compile" in rows:
            speed += ", %.3gx inductor" % (rows["torch.compile"]["median_us"] / ours["median_us"])
        g, eg = rows.get(ours["name"] + "+graph", {}), rows.get("eager+graph", {})
        if "median_us" in g and "median_us" in eg:
            speed += "; in CUDA graphs %.3gx eager (%.1f vs %.1f us)" % (
                eg["median_us"] / g["median_us"], g["median_us"], eg["median_us"])
    if report.get("cuda_sources") is not None and not report["problems"]:
        built = all("compiled" in d for d in report["cuda_sources"])
        speed += "; cuda sources %s" % ("compiled" if built else "written (no nvcc)")
    return "gpt2_mlp %s %s: %s mode %d piece(s)%s%s" % (
        "x".join(map(str, report["size"])), report["dtype"], report["mode"],
        len(report["pieces"]), speed,
        "" if not report["problems"] else "; %d problem(s)" % len(report["problems"]))


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    try:
        o = parse_args(argv)
    except ValueError as e:
        return fail(str(e), 2)
    try:
        import torch
        import torch._dynamo  # noqa: F401 - torch.compile's
    except ImportError as e:
        return fail("no torch with torch.compile (%s): nothing run" % e, 3)
    import mirsearch
    if not o["dry"] and not torch.cuda.is_available():
        return fail("no CUDA device (torch.cuda.is_available() is False): nothing run", 3)
    report, ours = run(torch, mirsearch, o, torch.device("cpu" if o["dry"] else "cuda"))
    report["dry_run"] = o["dry"]
    print(json.dumps(report, indent=1))
    for r in report["configurations"]:
        if "failed" in r:
            print("%-21s failed: %s" % (r["name"], r["failed"]), file=sys.stderr)
            continue
        pr = r.get("profile") or {}
        where = ""
        if "host_us" in pr:
            where = "  host %.1f us/call" % pr["host_us"]
            if "gpu_us" in pr:
                where += ", gpu %.1f us/call in %.1f kernels" % (pr["gpu_us"], pr["kernels"])
        print("%-21s %10.3f us  p10 %.3f  p90 %.3f  error %.2e  compile %.1f s%s" % (
            r["name"], r["median_us"], r["p10_us"], r["p90_us"], r["error"],
            r["compile_seconds"], where), file=sys.stderr)
    for line in report.get("cuda_sources", []) + report["problems"]:
        print(line, file=sys.stderr)
    print(summary_line(report, ours), file=sys.stderr)
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
