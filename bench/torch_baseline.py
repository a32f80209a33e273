#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/torch_baseline.py - the PyTorch baselines of a .graph program.

Usage: torch_baseline.py [--json | --jsonl] [--reps=N] [--warmup=N]
                         [--no-compile] [--dry-run] PROGRAM.graph...

Parses each .graph program (the format of README.md and docs/FORMATS.md),
builds the same program in PyTorch and times it the way `mirsearch bench`
times generated code (docs/GPU.md): the same shapes and dtypes, inputs
uniform in [-1, 1) (seeded; not mirsearch's Philox values: any real data
will do for timing), warm-up runs, then each run between two CUDA events
after a write of a buffer twice the L2 size that evicts L2, the median,
p10 and p90 of --reps runs (at least 100).  Four configurations: eager
and torch.compile (default mode) called from Python, and each captured
in a CUDA graph and replayed (eager+graph, torch.compile+graph: the GPU's
time without Python's launch overhead).  Each is first checked against the same
program in float64 on the inputs upcast (max |x - ref| / max |ref|, the
tolerance of the storage dtype).  These are baselines, the program as
written: one beyond tolerance (f16 intermediates overflow in attention's
row sums at published shapes) is timed anyway and flagged, as
`mirsearch bench` does with its unfused baseline.

--json prints one JSON array at the end; --jsonl one JSON object per
program as soon as it is timed (a run cut short keeps what it printed).
--dry-run parses and prints the PyTorch program it would build (one
statement a line), and needs neither torch nor a GPU.  Without torch or
without a CUDA device the script says so and exits 3; a malformed program
is reported as FILE:LINE:COL: error: message, exit 2.
"""

import json
import re
import sys

DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
TOLERANCE = {"float16": 1e-2, "bfloat16": 6e-2, "float32": 1e-4}
UNARY = {"exp", "square", "sqrt", "silu", "gelu", "relu", "causal_mask",
         "neg", "sigmoid", "tanh", "transpose", "abs"}
# Layout operators: reshape(x, shape=[...]) and permute(x, dims=[...]);
# slice(x, dim=D, start=S, len=L) is parsed on its own.
LAYOUT = {"reshape": "shape", "permute": "dims"}
BINARY = {"add", "sub", "mul", "div", "matmul"}
# Operators with number operands (docs/FORMATS.md "Constants"): how many numbers follow x.
CONSTS = {"pow": 1, "clamp": 2}
NAME = r"[A-Za-z_][A-Za-z0-9_]*"
NUMBER = r"-?\d+(\.\d+)?([eE][+-]?\d+)?"


class GraphError(Exception):
    """A malformed program: FILE:LINE:COL and the message."""


class Program:
    """A parsed .graph program: inputs, statements in order, outputs."""

    def __init__(self, name):
        self.name = name
        self.inputs = []  # (name, dtype, shape)
        self.ops = []  # (name, op, args, dim)
        self.outputs = []
        self.shapes = {}
        self.dtypes = {}


def broadcast(a, b, where):
    """The broadcast of two shapes (ranks aligned on the right)."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise GraphError(f"{where}: shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


def op_shape(op, shapes, dim, where):
    """The shape of op's result from its operands' shapes."""
    if op == "matmul":
        a, b = shapes
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            raise GraphError(f"{where}: matmul of {a} and {b}")
        return broadcast(a[:-2], b[:-2], where) + [a[-2], b[-1]]
    if op in BINARY:
        if len(shapes) == 1:  # a number operand
            return list(shapes[0])
        return broadcast(shapes[0], shapes[1], where)
    if op == "transpose":
        s = list(shapes[0])
        if len(s) < 2:
            raise GraphError(f"{where}: transpose of a rank-{len(s)} tensor")
        return s[:-2] + [s[-1], s[-2]]
    if op == "reshape":  # dim holds the shape as written (one -1 inferred)
        n = 1
        for d in shapes[0]:
            n *= d
        known = 1
        for d in dim:
            known *= d if d != -1 else 1
        out = [n // known if d == -1 else d for d in dim]
        total = 1
        for d in out:
            total *= d
        if dim.count(-1) > 1 or any(d < 1 and d != -1 for d in dim) or total != n:
            raise GraphError(f"{where}: reshape of {list(shapes[0])} to {dim}")
        return out
    if op == "permute":  # dim holds the dims (result dim i is x's dim dims[i])
        s = list(shapes[0])
        dims = [d + len(s) if d < 0 else d for d in dim]
        if sorted(dims) != list(range(len(s))):
            raise GraphError(f"{where}: permute of a rank-{len(s)} tensor by {dim}")
        return [s[d] for d in dims]
    if op == "slice":  # dim holds (dim, start, len)
        s = list(shapes[0])
        d, start, n = dim
        d = d + len(s) if d < 0 else d
        if not 0 <= d < len(s) or n < 1 or start + n > s[d]:
            raise GraphError(f"{where}: slice of {s} by dim={dim[0]}, start={start}, len={n}")
        s[d] = n
        return s
    if op in ("sum", "max", "min", "mean"):
        s = list(shapes[0])
        d = dim + len(s) if dim < 0 else dim
        if not 0 <= d < len(s):
            raise GraphError(f"{where}: {op} over dim {dim} of a rank-{len(s)} tensor")
        s[d] = 1
        return s
    return list(shapes[0])


def parse(path, text):
    """Parse a .graph file; raises GraphError with FILE:LINE:COL."""
    prog = Program(re.sub(r"\.graph$", "", path.split("/")[-1]))
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        col = len(line) - len(line.lstrip()) + 1
        stmt = line.strip()
        where = f"{path}:{lineno}:{col}"
        if not stmt:
            continue
        m = re.fullmatch(rf"program\s+({NAME})", stmt)
        if m:
            prog.name = m.group(1)
            continue
        m = re.fullmatch(rf"input\s+({NAME})\s*:\s*(\w+)\s*\[([^\]]*)\]", stmt)
        if m:
            name, dt, dims = m.groups()
            if dt not in DTYPES:
                raise GraphError(f"{where}: unknown dtype '{dt}' (f16, bf16 or f32)")
            try:
                shape = [int(d) for d in dims.split(",")]
            except ValueError:
                raise GraphError(f"{where}: bad dims '{dims}'") from None
            if any(d < 1 for d in shape):
                raise GraphError(f"{where}: dims must be positive")
            define(prog, name, where)
            prog.inputs.append((name, DTYPES[dt], shape))
            prog.shapes[name], prog.dtypes[name] = shape, DTYPES[dt]
            continue
        m = re.fullmatch(rf"output\s+({NAME}(\s*,\s*{NAME})*)", stmt)
        if m:
            for name in re.split(r"\s*,\s*", m.group(1)):
                if name not in prog.shapes:
                    raise GraphError(f"{where}: output '{name}' is not defined")
                prog.outputs.append(name)
            continue
        m = re.fullmatch(rf"({NAME})\s*=\s*({NAME})\s*\((.*)\)", stmt)
        if not m:
            raise GraphError(f"{where}: expected 'program', 'input', 'output' or NAME = OP(...)")
        name, op, arglist = m.groups()
        args = [a.strip() for a in arglist.split(",")] if arglist.strip() else []
        dim = None
        if op in ("layer_norm", "rms_norm"):  # (x) or (x, eps=E); dim carries eps
            if len(args) == 2 and re.fullmatch(rf"eps\s*=\s*{NUMBER}", args[1]):
                dim = float(args[1].split("=")[1])
            elif len(args) == 1:
                dim = 1e-5 if op == "layer_norm" else 0.0  # PyTorch's default; mirsearch's
            else:
                raise GraphError(f"{where}: {op} takes (x) or (x, eps=E)")
            args = args[:1]
        elif op in LAYOUT:  # (x, shape=[...]) / (x, dims=[...]); dim carries the list
            lm = re.fullmatch(rf"({NAME})\s*,\s*{LAYOUT[op]}\s*=\s*\[([-\d,\s]*)\]",
                              arglist.strip())
            if not lm:
                raise GraphError(f"{where}: {op} takes (x, {LAYOUT[op]}=[d0, d1, ...])")
            try:
                dim = [int(d) for d in lm.group(2).split(",")]
            except ValueError:
                raise GraphError(f"{where}: bad {LAYOUT[op]} '{lm.group(2)}'") from None
            args = [lm.group(1)]
        elif op == "slice":  # (x, dim=D, start=S, len=L); dim carries (D, S, L)
            sm = re.fullmatch(rf"({NAME})\s*,\s*dim\s*=\s*(-?\d+)\s*,\s*start\s*=\s*(\d+)\s*,"
                              rf"\s*len\s*=\s*(\d+)", arglist.strip())
            if not sm:
                raise GraphError(f"{where}: slice takes (x, dim=D, start=S, len=L)")
            dim = tuple(int(v) for v in sm.groups()[1:])
            args = [sm.group(1)]
        elif op in ("sum", "max", "min", "mean"):
            if len(args) != 2 or not re.fullmatch(r"dim\s*=\s*-?\d+", args[1]):
                raise GraphError(f"{where}: {op} takes (x, dim=D)")
            dim = int(args[1].split("=")[1])
            args = args[:1]
        elif op in UNARY:
            if len(args) != 1:
                raise GraphError(f"{where}: {op} takes one operand")
        elif op in BINARY:
            if len(args) != 2:
                raise GraphError(f"{where}: {op} takes two operands")
            if op != "matmul" and all(re.fullmatch(NUMBER, a) for a in args):
                raise GraphError(f"{where}: {op} of two numbers")
        elif op in CONSTS:
            if len(args) != 1 + CONSTS[op] or not all(re.fullmatch(NUMBER, a) for a in args[1:]):
                raise GraphError(f"{where}: {op} takes a tensor and {CONSTS[op]} number(s)")
        else:
            raise GraphError(f"{where}: unknown operator '{op}'")
        tensors = [a for a in args if not re.fullmatch(NUMBER, a)]
        if op == "matmul" and len(tensors) != 2:
            raise GraphError(f"{where}: matmul takes two tensors")
        for a in tensors:
            if a not in prog.shapes:
                raise GraphError(f"{where}: '{a}' is not defined")
        define(prog, name, where)
        prog.shapes[name] = op_shape(op, [prog.shapes[a] for a in tensors],
                                     0 if op in ("layer_norm", "rms_norm") else dim or 0, where)
        prog.dtypes[name] = prog.dtypes[tensors[0]]
        prog.ops.append((name, op, args, dim))
    if not prog.outputs:
        raise GraphError(f"{path}: error: no output")
    return prog


def define(prog, name, where):
    """Refuse a second definition of name."""
    if name in prog.shapes:
        raise GraphError(f"{where}: '{name}' is defined twice")


def statement(name, op, args, dim):
    """One PyTorch statement of the program, as text (what --dry-run prints)."""
    if op == "sum":
        return f"{name} = torch.sum({args[0]}, dim={dim}, keepdim=True)"
    if op == "max":
        return f"{name} = torch.amax({args[0]}, dim={dim}, keepdim=True)"
    if op == "min":
        return f"{name} = torch.amin({args[0]}, dim={dim}, keepdim=True)"
    if op == "mean":
        return f"{name} = torch.mean({args[0]}, dim={dim}, keepdim=True)"
    if op == "layer_norm":  # no weight or bias, over the last dim; dim holds eps
        x = args[0]
        return f"{name} = torch.nn.functional.layer_norm({x}, ({x}.shape[-1],), eps={dim!r})"
    if op == "square":
        return f"{name} = torch.mul({args[0]}, {args[0]})"
    if op == "transpose":
        return f"{name} = torch.transpose({args[0]}, -2, -1)"
    if op in ("add", "sub", "mul", "div") and any(re.fullmatch(NUMBER, a) for a in args):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
        return f"{name} = ({args[0]}) {sym} ({args[1]})"
    if op in ("silu", "gelu", "relu"):
        return f"{name} = torch.nn.functional.{op}({args[0]})"
    if op == "rms_norm":  # dim holds eps
        x = args[0]
        eps = f" + {dim!r}" if dim else ""
        return f"{name} = {x} / torch.sqrt(torch.mean({x} * {x}, dim=-1, keepdim=True){eps})"
    if op == "reshape":  # a view where PyTorch can make one, as in mirsearch's code
        return f"{name} = torch.reshape({args[0]}, {tuple(dim)!r})"
    if op == "permute":
        return f"{name} = {args[0]}.permute{tuple(dim)!r}"
    if op == "slice":  # a view in PyTorch (narrow), as the model's split is
        return f"{name} = {args[0]}.narrow{tuple(dim)!r}"
    if op == "causal_mask":  # -inf where j > i + (n - m): bottom-right aligned, as mirsearch
        x = args[0]
        keep = (f"torch.ones({x}.shape[-2], {x}.shape[-1], dtype=torch.bool, device={x}.device)"
                f".tril({x}.shape[-1] - {x}.shape[-2])")
        return f"{name} = {x}.masked_fill(~{keep}, float('-inf'))"
    return f"{name} = torch.{op}({', '.join(args)})"


def source(prog):
    """The program as PyTorch statements."""
    lines = [f"program {prog.name}"]
    lines += [f"input {n} {dt} {shape}" for n, dt, shape in prog.inputs]
    lines += [statement(*o) for o in prog.ops]
    lines.append("output " + ", ".join(prog.outputs))
    return "\n".join(lines)


def build(prog):
    """A Python function computing the program with torch."""
    body = ["def run(" + ", ".join(n for n, _, _ in prog.inputs) + "):"]
    body += ["    " + statement(*o) for o in prog.ops]
    body.append("    return (" + ", ".join(prog.outputs) + ",)")
    scope = {"torch": __import__("torch")}
    exec("\n".join(body), scope)  # noqa: S102 - our own generated text
    return scope["run"]


def stats(ms):
    """median, p10, p90, min of run times in ms, as microseconds."""
    s = sorted(ms)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    pick = lambda q: s[int(q * (n - 1) + 0.5)]  # noqa: E731
    return {"median_us": 1e3 * med, "p10_us": 1e3 * pick(0.1), "p90_us": 1e3 * pick(0.9),
            "min_us": 1e3 * s[0], "reps": n}


def time_fn(torch, fn, inputs, reps, warmup, flush):
    """Warm-up, then reps runs between events, L2 evicted before each."""
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for r, (start, stop) in enumerate(events):
        flush.fill_(r & 0xFF)
        start.record()
        fn(*inputs)
        stop.record()
    torch.cuda.synchronize()
    return stats([start.elapsed_time(stop) for start, stop in events])


def max_rel_error(got, ref):
    """max |x - ref| / max |ref| over each output; the largest."""
    worst = 0.0
    for g, r in zip(got, ref):
        scale = r.abs().max().item() or 1.0
        err = (g.double() - r).abs().max().item() / scale
        if err != err:  # NaN
            return float("inf")
        worst = max(worst, err)
    return worst


def graphed(torch, fn, inputs):
    """fn captured once in a CUDA graph (after warm-up runs on a side
    stream, as capture requires): a function replaying it, whose outputs
    are the captured output tensors, rewritten by each replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = fn(*inputs)

    def replay(*_):
        graph.replay()
        return outs
    return replay


def bench(torch, prog, reps, warmup, compile_too):
    """Check and time one program; a dict for the report.

    Four configurations: eager and torch.compile called from Python, as a
    user would (each operator's or the compiled code's launch and guard
    overhead lands between the events when the GPU waits for it), and
    each captured in a CUDA graph and replayed, which leaves the GPU's own
    time (compare `mirsearch bench`'s cuda_graph configuration).  Each
    program's torch.compile starts from a reset of dynamo's caches: the
    programs' functions share one generated code shape, and without the
    reset dynamo hit its recompile limit after 8 programs and ran the rest
    eagerly (first device run, 2026-11-27).  A configuration that fails
    (capture refused, a compile error) is reported with "failed" and the
    others still run."""
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    inputs = [(torch.rand(shape, generator=gen, device=dev, dtype=torch.float32) * 2 - 1)
              .to(getattr(torch, dt)) for _, dt, shape in prog.inputs]
    fn = build(prog)
    ref = fn(*[x.double() for x in inputs])
    tol = max(TOLERANCE[prog.dtypes[n]] for n in prog.outputs)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=dev)
    compiled = None
    if compile_too:
        torch._dynamo.reset()
        compiled = torch.compile(fn)
    configs = [("eager", lambda: fn), ("eager+graph", lambda: graphed(torch, fn, inputs))]
    if compiled is not None:
        configs += [("torch.compile", lambda: compiled),
                    ("torch.compile+graph", lambda: graphed(torch, compiled, inputs))]
    out = {"program": prog.name, "device": torch.cuda.get_device_name(dev),
           "torch": torch.__version__, "tolerance": tol, "configurations": []}
    for name, make in configs:
        try:
            f = make()
            err = max_rel_error(f(*inputs), ref)
            row = {"name": name, "error": err, "checked": err <= tol}
            row.update(time_fn(torch, f, inputs, reps, warmup, flush))
        except Exception as e:  # noqa: BLE001 - reported, the other configurations go on
            torch.cuda.synchronize()
            row = {"name": name, "failed": f"{type(e).__name__}: {e}"[:300], "checked": False}
        out["configurations"].append(row)
    return out


def main(argv):
    opts = {"json": False, "jsonl": False, "reps": 100, "warmup": 10, "compile": True, "dry": False}
    files = []
    for a in argv:
        if a == "--json":
            opts["json"] = True
        elif a == "--jsonl":
            opts["jsonl"] = True
        elif a == "--dry-run":
            opts["dry"] = True
        elif a == "--no-compile":
            opts["compile"] = False
        elif re.fullmatch(r"--(reps|warmup)=\d+", a):
            key, val = a[2:].split("=")
            opts[key] = int(val)
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-"):
            print(f"torch_baseline.py: error: unknown option '{a}'", file=sys.stderr)
            return 2
        else:
            files.append(a)
    if not files:
        print("torch_baseline.py: error: no PROGRAM.graph (see --help)", file=sys.stderr)
        return 2
    if opts["reps"] < 100:
        print("torch_baseline.py: error: --reps must be at least 100", file=sys.stderr)
        return 2
    progs = []
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                progs.append(parse(f, fh.read()))
        except OSError as e:
            print(f"torch_baseline.py: error: {f}: {e.strerror}", file=sys.stderr)
            return 2
        except GraphError as e:
            msg = str(e)
            print(msg if ": error: " in msg else msg.replace(": ", ": error: ", 1), file=sys.stderr)
            return 2
    if opts["dry"]:
        print("\n\n".join(source(p) for p in progs))
        return 0
    try:
        import torch
    except ImportError:
        print("torch_baseline.py: error: PyTorch is not installed (python3 -c 'import torch' "
              "fails): nothing timed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_baseline.py: error: no CUDA device (torch.cuda.is_available() is False): "
              "nothing timed", file=sys.stderr)
        return 3
    results = []
    for p in progs:
        results.append(bench(torch, p, opts["reps"], opts["warmup"], opts["compile"]))
        if opts["jsonl"]:
            print(json.dumps(results[-1]), flush=True)
    if opts["jsonl"]:
        pass
    elif opts["json"]:
        print(json.dumps(results, indent=2))
    else:
        print(f"{'program':<26} {'configuration':<14} {'runs':>5} {'median us':>10} "
              f"{'p10 us':>10} {'p90 us':>10} {'error':>10}")
        for r in results:
            for c in r["configurations"]:
                if "failed" in c:
                    print(f"{r['program']:<26} {c['name']:<14} failed: {c['failed']}")
                    continue
                flag = "" if c["checked"] else f" (beyond {r['tolerance']})"
                print(f"{r['program']:<26} {c['name']:<14} {c['reps']:>5} "
                      f"{c['median_us']:>10.3f} {c['p10_us']:>10.3f} {c['p90_us']:>10.3f} "
                      f"{c['error']:>10.3e}{flag}")
        if results:
            print(f"device: {results[0]['device']}, torch {results[0]['torch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
