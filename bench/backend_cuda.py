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
does (L2 evicted before each run, CUDA events, median of at least 100).
It prints one JSON object on stdout and a line a configuration on stderr.
The default size, 4x64x128x512 (batch, sequence, model, MLP) in f16, is
one whose search here finds a fused piece within 8 s (at 8x128x256x1024
the library's partition keeps its three pieces as written).

--dry-run needs no GPU: the same model on the CPU through the backend in
host mode (the generated code through the project's GPU emulator) checked
against eager, and each replaced piece's cuda-mode sources (its generated
CUDA, compiled by nvcc with the flags load_inline adds; the extension's
C++ wrapper, written) checked.  With DEVICE_CHECK_LOAD_INLINE=1 it also
builds each piece's whole extension with load_inline, as cuda mode does
(needs torch's CUDA headers; about a minute on this project's 2 cores).

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
    torch._dynamo.reset()
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


def dry_run(torch, mirsearch, o):
    """Host mode on the CPU against eager, and the cuda-mode sources."""
    from torch_baseline import max_rel_error
    size, dtype = o["size"] or [1, 8, 32, 128], o["dtype"] or "f32"
    model, x, _m64, _x64 = model_and_input(torch, size, dtype, "cpu")
    opts = {"time_limit": min(o["time_limit"], 2.0), "threads": o["threads"] or 1}
    rec = Recorder(mirsearch, "host", opts)
    with torch.no_grad():
        ref = model(x)
        _c, y, secs = compile_with(torch, model, rec, x)
    err = max_rel_error([y], [ref.double()])
    pieces = rec.replaced()
    with tempfile.TemporaryDirectory() as tmp:
        problems, done = cuda_sources_check(mirsearch, pieces, tmp)
    tol = TOLERANCE[dtype]
    if not pieces:
        problems.append("no piece ran a generated kernel (host mode)")
    if not err <= tol:
        problems.append("host mode's output differs from eager: %.2e > %.0e" % (err, tol))
    report = {"dry_run": True, "model": "gpt2_mlp", "size": size, "dtype": dtype,
              "host_error_vs_eager": err, "tolerance": tol, "compile_seconds": secs,
              "pieces": [{"ops": p["ops"], "source": p["source"]} for p in pieces],
              "cuda_sources": done, "problems": problems}
    print(json.dumps(report, indent=1))
    for line in done + problems:
        print(line, file=sys.stderr)
    print("gpt2_mlp %s %s: host mode %d piece(s), error vs eager %.2e; %s" % (
        "x".join(map(str, size)), dtype, len(pieces), err,
        "cuda sources compiled" if not problems else "%d problem(s)" % len(problems)),
        file=sys.stderr)
    return 1 if problems else 0


def device_run(torch, mirsearch, o):
    """cuda mode on the GPU: checked, then timed against eager and inductor."""
    from torch_baseline import max_rel_error, time_fn
    size, dtype = o["size"] or [4, 64, 128, 512], o["dtype"] or "f16"
    dev = torch.device("cuda")
    model, x, m64, x64 = model_and_input(torch, size, dtype, dev)
    opts = {"time_limit": o["time_limit"]}
    if o["threads"]:
        opts["threads"] = o["threads"]
    tol = TOLERANCE[dtype]
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=dev)
    rec = Recorder(mirsearch, "cuda", opts)
    report = {"model": "gpt2_mlp", "size": size, "dtype": dtype, "tolerance": tol,
              "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
              "configurations": []}
    problems = []
    with torch.no_grad():
        ref64 = m64.to(dev)(x64.to(dev))
        eager_y = model(x)
        configs = [("eager", model, eager_y, 0.0)]
        for name, backend in (("mirsearch cuda", rec), ("torch.compile", None)):
            try:
                c, y, secs = compile_with(torch, model, backend, x)
                configs.append((name, c, y, secs))
            except Exception as e:  # noqa: BLE001 - reported, the others still run
                problems.append("%s: %s: %s" % (name, type(e).__name__, str(e)[-800:]))
        for name, fn, y, secs in configs:
            row = {"name": name, "compile_seconds": secs,
                   "error": max_rel_error([y], [ref64]),
                   "error_vs_eager": max_rel_error([y], [eager_y.double()])}
            row["checked"] = row["error"] <= tol or row["error_vs_eager"] <= tol
            row.update(time_fn(torch, fn, [x], o["reps"], o["warmup"], flush))
            report["configurations"].append(row)
    pieces = rec.replaced()
    report["pieces"] = [{"ops": p["ops"], "source": p["source"], "cost": p["cost"],
                         "unfused": p["unfused"]} for p in pieces]
    rows = {r["name"]: r for r in report["configurations"]}
    ours = rows.get("mirsearch cuda")
    if ours is not None and not pieces:
        problems.append("no piece ran its generated kernel: the cuda path did not run")
    if ours is not None and not ours["checked"]:
        problems.append("the backend's output is off: %.2e vs float64, %.2e vs eager (tolerance "
                        "%.0e)" % (ours["error"], ours["error_vs_eager"], tol))
    report["problems"] = problems
    print(json.dumps(report, indent=1))
    for r in report["configurations"]:
        print("%-15s %10.3f us  p10 %.3f  p90 %.3f  error %.2e  compile %.1f s" % (
            r["name"], r["median_us"], r["p10_us"], r["p90_us"], r["error"],
            r["compile_seconds"]), file=sys.stderr)
    for p in problems:
        print(p, file=sys.stderr)
    speed = ""
    if ours is not None and "eager" in rows and "torch.compile" in rows:
        speed = "; %.2fx eager, %.2fx inductor" % (rows["eager"]["median_us"] / ours["median_us"],
                                                  rows["torch.compile"]["median_us"] /
                                                  ours["median_us"])
    print("gpt2_mlp %s %s: cuda mode %d piece(s)%s%s" % (
        "x".join(map(str, size)), dtype, len(pieces), speed,
        "" if not problems else "; %d problem(s)" % len(problems)), file=sys.stderr)
    return 1 if problems else 0


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
    if o["dry"]:
        return dry_run(torch, mirsearch, o)
    if not torch.cuda.is_available():
        return fail("no CUDA device (torch.cuda.is_available() is False): nothing run", 3)
    return device_run(torch, mirsearch, o)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
