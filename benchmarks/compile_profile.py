"""Where the physics benchmark's compile time goes, kernel by kernel (XLA CPU).

    python benchmarks/compile_profile.py                          # hurtle, gym half_cheetah
    python benchmarks/compile_profile.py --models gym:ant --top 40
    python benchmarks/compile_profile.py --engine mjx             # the same program with MJX's step

It compiles exactly the program `benchmarks/physics.py` times (`jit(scan(vmap(step)))`, batch and steps as
given) in a fresh process whose XLA logs each kernel's code-generation time (MLIR emission and LLVM, in
CPU seconds: the kernels compile in parallel on a thread pool), and prints:

- the split of the wall time: tracing, lowering, XLA's HLO passes, code generation, the first call;
- the CPU time by pipeline stage (named scope) and by the shape of the kernel: a concatenation along the
  minor axis (`jnp.stack(..., -1)` of components), an operand whose batch axis is not the leading one (a
  gather or dot under vmap puts its index axis first), an operand without the batch axis (a model array);
- the costliest kernels with the source lines (hurtle's or MJX's) that made them.

Run on an idle machine: per-kernel times move with load as much as wall times do.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from physics import load_lapack, rollout_fn, setup_hurtle, setup_mjx  # noqa: E402

STAGES = (
    "kinematics",
    "com_pos",
    "tendon",
    "crb",
    "factor_m",
    "collision",
    "make_constraint",
    "transmission",
    "com_vel",
    "passive",
    "reference_constraint",
    "rne",
    "actuation",
    "qacc_smooth",
    "solve",
    "euler",
    "rk4",
    "implicit",
)
_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def _seconds(line: str) -> float:
    m = re.search(r"time: ([\d.]+) (us|ms|s)\b", line)
    return float(m.group(1)) * _UNIT[m.group(2)] if m else 0.0


def worker(args) -> None:
    """Compile and run the benchmark program once; print the split and write the optimised HLO."""
    import jax

    if args.engine == "hurtle":
        step, model, data = setup_hurtle(args.models, args.batch, "full")
    else:
        step, model, data = setup_mjx(args.models, args.batch, "full")
    rollout = rollout_fn(step, args.nsteps)
    load_lapack()  # as the benchmark's workers: before the clock

    t0 = time.perf_counter()
    traced = jax.jit(rollout).trace(model, data)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    jax.block_until_ready(compiled(model, data))
    t4 = time.perf_counter()
    with open(args.hlo, "w") as f:
        f.write(compiled.as_text())
    split = {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "first_call": t4 - t3}
    print("SPLIT " + json.dumps(split), flush=True)


def _computations(hlo: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^(%\S+) \(.*?\) -> .*?\{\n(.*?)\n\}", hlo, re.M | re.S)}


def _source_lines(hlo: str):
    """stack_frame_id -> [(file, function, line), ...] innermost first, from the HLO's frame tables."""
    lines = hlo.splitlines()

    def table(name):
        if name not in lines:
            return []
        out = []
        for ln in lines[lines.index(name) + 1 :]:
            if not ln[:1].isdigit():
                break
            out.append(ln)
        return out

    files = {int(ln.split()[0]): ln.split()[1].strip('"') for ln in table("FileNames")}
    funcs = {int(ln.split()[0]): ln.split()[1].strip('"') for ln in table("FunctionNames")}
    locs, frames = {}, {}
    for ln in table("FileLocations"):
        m = re.match(r"(\d+) \{file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", ln)
        if m:
            locs[int(m.group(1))] = (os.path.basename(files[int(m.group(2))]), funcs[int(m.group(3))], int(m.group(4)))
    for ln in table("StackFrames"):
        m = re.match(r"(\d+) \{file_location_id=(\d+) parent_frame_id=(\d+)", ln)
        if m:
            frames[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))

    def stack(fid: int) -> list:
        out, seen = [], set()
        while fid in frames and fid not in seen:
            seen.add(fid)
            loc, fid = frames[fid]
            if loc in locs:
                out.append(locs[loc])
        return out

    return stack


def _kind(body: str, batch: int) -> str:
    """How a kernel is shaped: 'minor-concat' (a concatenation along its minor axis), 'batch-inner'
    (an operand whose batch axis is not the leading one), 'model-operand' (an operand without the batch
    axis, rank >= 2), combined with '+'; '-' for none."""
    kinds = []
    for m in re.finditer(r"= \w+\[([\d,]*)\]\S* concatenate\(.*?dimensions=\{(\d+)\}", body):
        if int(m.group(2)) == len(m.group(1).split(",")) - 1:
            kinds.append("minor-concat")
            break
    dims = [m.group(1).split(",") for m in re.finditer(r"= \w+\[([\d,]*)\]\S* parameter\(", body)]
    if any(str(batch) in d[1:] and d[0] != str(batch) for d in dims):
        kinds.append("batch-inner")
    if any(len(d) >= 2 and str(batch) not in d for d in dims):
        kinds.append("model-operand")
    return "+".join(kinds) or "-"


def analyse(log: str, hlo: str, batch: int, top: int, engine: str) -> None:
    split = json.loads(re.search(r"^SPLIT (.*)$", log, re.M).group(1))
    start = log.find("Running HLO passes on [jit_rollout]")
    rlog = log[start:].splitlines()
    hlo_passes = next((_seconds(ln) for ln in rlog if "Running HLO passes on [jit_rollout]" in ln), 0.0)
    mlir, llvm = collections.Counter(), collections.Counter()
    for ln in rlog:
        if "Compiled MLIR module" in ln:
            name = re.search(r"module: (\S+?),? time", ln).group(1).replace("__compute_module_", "")
            mlir[name.removesuffix("_kernel_module")] += _seconds(ln)
        elif "Compiled LLVM module" in ln:
            name = re.search(r"module: (\S+) time", ln).group(1).replace("__compute_module_", "")
            llvm[name.removesuffix("_kernel_module")] += _seconds(ln)
    comps = _computations(hlo)
    stack = _source_lines(hlo)
    fusions = {}
    for m in re.finditer(r"^\s+(?:ROOT )?%(\S+) = (\S+) fusion\(.*?calls=(%[\w.]+)(.*)$", hlo, re.M):
        op = re.search(r'op_name="([^"]*)"', m.group(4))
        frame = re.search(r"stack_frame_id=(\d+)", m.group(4))
        fusions[m.group(1)] = (m.group(2), comps.get(m.group(3), ""), op.group(1) if op else "", frame)
    own = "physics" if engine == "hurtle" else "mjx"
    rows = []
    for name in set(mlir) | set(llvm):
        shape, body, op, frame = fusions.get(name, ("", "", "", None))
        stage = next((s for s in reversed(re.findall(r"vmap\((\w+)\)", op)) if s in STAGES), None)
        stage = stage or next((s for s in STAGES if f"/{s}/" in f"/{op}/"), "other")
        src = [f"{f}:{ln} {fn}" for f, fn, ln in (stack(int(frame.group(1))) if frame else [])]
        src = [s for s in src if not s.startswith(("compile_profile", "api.py", "loops.py", "tracing.py"))][:3]
        kind = _kind(body, batch) if body else "not a fusion"
        rows.append((mlir[name] + llvm[name], mlir[name], llvm[name], name, shape, stage, kind, src))
    total_mlir, total_llvm = sum(mlir.values()), sum(llvm.values())
    print(
        f"wall: trace {split['trace']:.2f} s, lower {split['lower']:.2f} s, XLA compile {split['compile']:.2f} s "
        f"(HLO passes {hlo_passes:.2f} s), first call {split['first_call']:.2f} s"
    )
    print(
        f"code generation: {len(rows)} kernels, MLIR {total_mlir:.2f} s + LLVM {total_llvm:.2f} s of CPU "
        f"({os.cpu_count()} cores)\n"
    )
    for title, key in (("stage", 5), ("kernel shape", 6)):
        agg = collections.defaultdict(lambda: [0, 0.0])
        for r in rows:
            agg[r[key]][0] += 1
            agg[r[key]][1] += r[0]
        print(f"| {title} | kernels | CPU s | share |\n|---|---|---|---|")
        for k, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
            print(f"| {k} | {n} | {t:.2f} | {t / (total_mlir + total_llvm):.0%} |")
        print()
    print(f"| CPU ms | LLVM ms | kernel | shape | stage | kind | source ({own}) |\n|---|---|---|---|---|---|---|")
    for t, _, lt, name, shape, stage, kind, src in sorted(rows, reverse=True)[:top]:
        print(
            f"| {t * 1e3:.0f} | {lt * 1e3:.0f} | {name} | {shape.split('{')[0]} | {stage} | {kind} | {' < '.join(src)} |"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="gym:half_cheetah", help="one model, as in benchmarks/physics.py")
    p.add_argument("--engine", choices=["hurtle", "mjx"], default="hurtle")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--nsteps", type=int, default=100)
    p.add_argument("--top", type=int, default=25, help="kernels listed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--hlo", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        hlo_path = os.path.join(tmp, "optimised.hlo")
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--hlo",
            hlo_path,
            "--models",
            args.models,
            "--engine",
            args.engine,
        ]
        cmd += ["--batch", str(args.batch), "--nsteps", str(args.nsteps)]
        # XLA's default code generation (its MLIR fusion emitters, whose log this reads), whatever the caller's
        # XLA_FLAGS or hurtle's import choose (both turn them off: hurtle/xla_flags.py)
        flags = [
            f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith("--xla_cpu_use_fusion_emitters")
        ]
        env = {
            **os.environ,
            "XLA_FLAGS": " ".join(flags),
            "HURTLE_XLA_FLAGS": "off",
            "JAX_ENABLE_COMPILATION_CACHE": "0",
            "TF_CPP_MIN_LOG_LEVEL": "0",
            "TF_CPP_VMODULE": "fusion_compiler=1,ir_compiler=1,cpu_compiler=1",
        }
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode or "SPLIT " not in out.stdout:
            sys.exit(f"worker failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
        with open(hlo_path) as f:
            hlo = f.read()
    analyse(out.stdout + out.stderr, hlo, args.batch, args.top, args.engine)


if __name__ == "__main__":
    main()
