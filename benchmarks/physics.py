"""Physics throughput: hurtle vs MJX vs MuJoCo C (and MuJoCo Warp, Brax) on the same models, batch and controls.

    python benchmarks/physics.py                   # CPU, batch 256, the default models
    python benchmarks/physics.py --batch 8192      # on a GPU machine
    python benchmarks/physics.py --rounds 3        # medians of 3 alternating rounds (a drifting host)
    bash benchmarks/brax_venv.sh && python benchmarks/physics.py --engines hurtle,mjx,brax --integrator euler

For each model: compile + first call (s) and steady-state physics steps/s for hurtle and MJX
(jit(vmap(step)) inside a lax.scan of --nsteps steps), and MuJoCo C's mujoco.batch.Batch on all
threads, run in a subprocess (creating a Batch before compiling with JAX in the same process has
hung). The table, with the machine described, is appended to benchmarks/HISTORY.md; the current figure is curated
into benchmarks/RESULTS.md. Every JAX engine compiles with XLA's default code generation: hurtle's worker runs
without the flag `import hurtle` adds for its users (`HURTLE_XLA_FLAGS=on python benchmarks/physics.py ...` times
hurtle as users get it).

--mode full (the default) keeps contacts and every constraint on with each model's own solver settings
(PGS models get Newton in every engine); `nocontact` and `smooth` turn contacts or all constraints off, in
all three engines alike.

MuJoCo Warp (`--engines ...,warp`; `pip install mujoco-warp`) runs as its own `mjwarp-testspeed` does: float32,
`put_data` with its per-world buffers (`--warp-nconmax`, `--warp-njmax`; its defaults from the model otherwise, both
stated under the table with the share of worlds that overflowed them), the step captured as one CUDA graph and
replayed (on a CPU, launched step by step: Warp runs there, slowly, which is enough to try the benchmark).

Brax (`--engines ...,brax`) runs in a virtualenv of its own (Brax needs jax 0.9.x; `benchmarks/brax_venv.sh`
makes `.brax/`, or name another interpreter with `--brax-python`). Its pipelines (`--brax-backend`: generalized,
the default, positional or spring) load the same MJCF but integrate it with Brax's own physics, not MuJoCo's
equations: the row compares speed on one model file, not answers. Brax integrates with Euler only and refuses
RK4 models; `--integrator euler` gives every engine the model with Euler, so that all of them can run it. Its
constraint solver runs `opt.iterations` iterations every step (MuJoCo's default 100 where a file sets none), where
the others stop on their tolerance; `--iterations 4`, the count Brax's own environment files set, gives every
engine that cap.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np


def _asset(spec: str) -> str:
    """'gym:ant' -> gymnasium's ant.xml, 'dmc:humanoid' -> dm_control's suite humanoid.xml; else a path."""
    if ":" not in spec:
        return spec
    kind, name = spec.split(":")
    if kind == "gym":
        import gymnasium

        return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", f"{name}.xml")
    if kind == "dmc":
        suite = os.environ.get("DM_CONTROL_SUITE")  # a copy of dm_control/suite where dm_control is absent
        if not suite:
            import dm_control

            suite = os.path.join(os.path.dirname(dm_control.__file__), "suite")
        return os.path.join(suite, f"{name}.xml")
    return spec


MODE = {"smooth": "constraint", "nocontact": "contact", "full": None}  # what each --mode disables
MODE_TEXT = {
    "smooth": "Constraint flag disabled in every engine (smooth dynamics only).",
    "full": "Contacts, limits and every other constraint on, with each model's own solver settings, except that PGS "
    "models use Newton in every engine.",
    "nocontact": "Contact flag disabled in every engine: joint limits, equalities and friction loss are solved "
    "with each model's own solver settings, except that PGS models use Newton in every engine.",
}


def _mj_model(spec: str, mode: str = "smooth", opt: dict | None = None):
    """The model as every engine gets it (`_configure`)."""
    import mujoco

    return _configure(mujoco.MjModel.from_xml_path(_asset(spec)), mode, opt)


def _configure(mm, mode: str, opt: dict | None):
    """`mode`'s disable flags, Newton for PGS models, and `opt`'s overrides: `integrator` ('euler', 'rk4',
    'implicit', 'implicitfast') and `iterations` (the solver's cap)."""
    import mujoco

    opt = opt or {}
    if opt.get("integrator"):
        mm.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{opt['integrator'].upper()}")
    if opt.get("iterations"):
        mm.opt.iterations = opt["iterations"]
    if MODE[mode]:
        mm.opt.disableflags |= getattr(mujoco.mjtDisableBit, f"mjDSBL_{MODE[mode].upper()}")
    if mode == "smooth" or mm.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        # without constraints the solver is never called; MJX refuses PGS by name and hurtle solves
        # PGS models with Newton, so every engine is given Newton there
        mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    return mm


def _controls(mm, batch: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo = np.where(mm.actuator_ctrllimited, mm.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(mm.actuator_ctrllimited, mm.actuator_ctrlrange[:, 1], 1.0)
    return rng.uniform(lo, hi, size=(batch, mm.nu))


def rollout_fn(step_fn, nsteps: int, niter=None):
    """The timed program: nsteps batched steps (`vmap(step_fn)` over the worlds, the model shared) in one
    lax.scan; returns the final data and the mean of `niter(data)` over the steps (0 without `niter`)."""
    import jax
    import jax.numpy as jnp

    def rollout(m, d):
        def body(d, _):
            d = jax.vmap(step_fn, in_axes=(None, 0))(m, d)
            return d, jnp.mean(niter(d)) if niter else 0.0

        d, iters = jax.lax.scan(body, d, None, length=nsteps)
        return d, jnp.mean(iters)

    return rollout


def timed_rollout(step_fn, model, data, nsteps: int, repeats: int, niter=None) -> dict:
    """Compile the rollout of nsteps batched steps, call it once, then `repeats` more times, each from where
    the last ended. Returns lower_compile_s, compile_s (compile + first call), the timed calls' seconds
    (`times`), the final data (`data`), and the rollout's mean `niter` over the first call's steps
    (`first_iters`) and the last call's (`last_iters`)."""
    import jax

    t0 = time.perf_counter()
    run = jax.jit(rollout_fn(step_fn, nsteps, niter)).lower(model, data).compile()
    lower_compile_s = time.perf_counter() - t0
    out, iters = run(model, data)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    first_iters = float(iters)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out, iters = run(model, out)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t0)
    return {
        "lower_compile_s": lower_compile_s,
        "compile_s": compile_s,
        "times": times,
        "data": out,
        "first_iters": first_iters,
        "last_iters": float(iters),
    }


def load_lapack() -> None:
    """Load jaxlib's CPU LAPACK kernels (Cholesky, triangular solves) before any clock starts. jaxlib
    loads them from scipy the first time a program is lowered with one (~0.2 s on this host). MJX's
    import loads scipy (`mujoco.mjx` imports `scipy.spatial`) and hurtle's does not, so without this
    hurtle's timed compile held a library's loading that MJX's worker had done before its clock."""
    import jax
    import jax.numpy as jnp

    jax.jit(jnp.linalg.cholesky).lower(jnp.eye(2, dtype=jnp.float32))


def _time_jax(step_fn, model, data, nsteps: int, repeats: int) -> dict:
    """Compile + first call seconds (`compile_s`; compile alone: `lower_compile_s`) and steps per second
    of nsteps batched steps in one lax.scan, every engine's worker with the libraries its program uses
    loaded (`load_lapack`)."""
    import jax

    load_lapack()
    t = timed_rollout(step_fn, model, data, nsteps, repeats)
    batch = jax.tree.leaves(data)[0].shape[0]
    return {
        "compile_s": t["compile_s"],
        "lower_compile_s": t["lower_compile_s"],
        "steps_per_s": batch * nsteps / statistics.median(t["times"]),
    }


def setup_hurtle(
    spec: str,
    batch: int,
    mode: str,
    nconmax: int | None = None,
    njmax: int | None = None,
    opt: dict | None = None,
):
    """hurtle's (step, model, batched data) for the model, with the benchmark's random controls
    (`nconmax`: hurtle's contact cap per condim, as MJCF's `<size nconmax>`; None keeps every slot;
    `njmax`: the solver's working set, None for hurtle's default, 0 for every row)."""
    import jax
    import jax.numpy as jnp

    import hurtle.physics as hp

    mm = _mj_model(spec, mode, opt)
    model = hp.from_mujoco(mm, source=spec, nconmax=nconmax, njmax=njmax)
    d = hp.make_data(model)
    ctrl = jnp.asarray(_controls(mm, batch), d.qpos.dtype)
    data = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), d).replace(ctrl=ctrl)
    return hp.step, model, data


def setup_mjx(spec: str, batch: int, mode: str, opt: dict | None = None):
    """MJX's (step, model, batched data) for the model, with the benchmark's random controls."""
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    mm = _mj_model(spec, mode, opt)
    mx = mjx.put_model(mm)
    d = mjx.make_data(mx)
    ctrl = jnp.asarray(_controls(mm, batch), d.qpos.dtype)
    data = jax.vmap(lambda c: d.replace(ctrl=c))(ctrl)
    return mjx.step, mx, data


def bench_hurtle(spec: str, batch: int, nsteps: int, repeats: int, mode: str, **setup):
    """hurtle's timings and solver iterations; `setup`: `setup_hurtle`'s keywords (nconmax, njmax, opt)."""
    import jax

    step, model, data = setup_hurtle(spec, batch, mode, **setup)
    # the timed program is the one MJX's worker times: nothing but the steps
    res = _time_jax(step, model, data, nsteps, repeats)

    def per_step(count) -> float:
        """The mean of `count(data)` over nsteps steps from the start, in an untimed program of its own."""
        return float(jax.jit(rollout_fn(step, nsteps, count))(model, data)[1])

    res["solver_iters"] = per_step(lambda d: d.solver_niter)  # as MuJoCo's count below
    if setup.get("nconmax"):
        # contacts the cap dropped per world and step (0: it changed nothing)
        res["ncon_dropped"] = per_step(lambda d: d.ncon_dropped)
    return res


def bench_mjx(spec: str, batch: int, nsteps: int, repeats: int, mode: str, opt: dict | None = None):
    step, model, data = setup_mjx(spec, batch, mode, opt)
    return _time_jax(step, model, data, nsteps, repeats)


def bench_brax(
    spec: str,
    batch: int,
    nsteps: int,
    repeats: int,
    mode: str,
    opt: dict | None = None,
    backend: str = "generalized",
):
    """Brax's pipeline `backend` on the model as Brax loads it (`brax.io.mjcf.load_mjmodel`, then `load_model`),
    in Brax's own virtualenv: the same program as the JAX engines' (the system an argument, the state and held
    controls batched)."""
    import importlib

    import brax
    import jax
    import jax.numpy as jnp
    from brax.io import mjcf

    if MODE[mode]:
        raise NotImplementedError(f"Brax's pipelines read no disable flags, so --mode {mode} cannot be matched")
    # Brax's own loading: bodies without joints fused into their parents (its pipelines need a joint per body)
    mm = _configure(mjcf.load_mjmodel(_asset(spec)), mode, opt)
    pipeline = importlib.import_module(f"brax.{backend}.pipeline")
    system = mjcf.load_model(mm)
    state = pipeline.init(system, jnp.asarray(mm.qpos0, jnp.float32), jnp.zeros(mm.nv, jnp.float32))
    act = jnp.asarray(_controls(mm, batch), jnp.float32)
    data = (jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state), act)

    def step(system, d):
        return pipeline.step(system, d[0], d[1]), d[1]

    res = _time_jax(step, system, data, nsteps, repeats)
    return {**res, "versions": f"brax {brax.__version__} ({backend}), jax {jax.__version__}"}


def bench_mujoco(spec: str, batch: int, nsteps: int, repeats: int, mode: str, opt: dict | None = None):
    """MuJoCo C on all threads (mujoco.batch.Batch); compile time is the Batch's creation."""
    import mujoco
    from mujoco import batch as mjbatch

    mm = _mj_model(spec, mode, opt)
    t0 = time.perf_counter()
    b = mjbatch.Batch(mm, batch, nthread=0)
    b.bind("ctrl")[...] = _controls(mm, batch)
    b.step(nstep=1)
    setup_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        b.step(nstep=nsteps)
        times.append(time.perf_counter() - t0)
    # MuJoCo's solver iterations per step (all islands), from one simulation with the same controls
    d = mujoco.MjData(mm)
    d.ctrl[:] = _controls(mm, 1)[0]
    iters = []
    for _ in range(nsteps):
        mujoco.mj_step(mm, d)
        iters.append(int(np.sum(d.solver_niter)))
    return {
        "compile_s": setup_s,
        "steps_per_s": batch * nsteps / statistics.median(times),
        "solver_iters": float(np.mean(iters)),
    }


def bench_warp(
    spec: str,
    batch: int,
    nsteps: int,
    repeats: int,
    mode: str,
    opt: dict | None = None,
    nconmax: int | None = None,
    njmax: int | None = None,
):
    """MuJoCo Warp (`mujoco_warp`, float32) on the model, with its own recommended setup: `put_data` with
    `nconmax`/`njmax` per world (None: MuJoCo Warp's own defaults from the model), and on a CUDA device the
    step captured once as a CUDA graph (`wp.ScopedCapture`) and replayed `nsteps` times per timed call, as
    `mjwarp-testspeed` does; on a CPU device the step is launched `nsteps` times (no graphs there).
    compile_s is the first step with an empty kernel cache (Warp's code generation and module builds, cold,
    as the JAX engines' compile + first call), plus the graph's capture; the timed calls end with
    `wp.synchronize`. Returns also the sizes used, the mean solver iterations over nsteps steps from the start
    and the share of worlds that overflowed a buffer (0: nothing dropped)."""
    import tempfile

    import mujoco
    import warp as wp

    wp.config.kernel_cache_dir = tempfile.mkdtemp(prefix="warp-cache-")  # cold: no kernels from an earlier run
    wp.config.quiet = True
    import mujoco_warp as mjw

    mm = _mj_model(spec, mode, opt)
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    wp.init()
    t0 = time.perf_counter()
    m = mjw.put_model(mm)
    d = mjw.put_data(mm, md, nworld=batch, nconmax=nconmax, njmax=njmax)
    wp.copy(d.ctrl, wp.array(_controls(mm, batch).astype(np.float32), dtype=float))
    mjw.step(m, d)  # builds (compiles) every kernel the step launches
    graph = None
    if wp.get_device().is_cuda:
        with wp.ScopedCapture() as capture:
            mjw.step(m, d)
        graph = capture.graph
    wp.synchronize()
    compile_s = time.perf_counter() - t0

    def advance():
        for _ in range(nsteps):
            wp.capture_launch(graph) if graph is not None else mjw.step(m, d)
        wp.synchronize()

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        advance()
        times.append(time.perf_counter() - t0)
    # untimed: solver iterations per step and overflows over nsteps steps from the start
    d = mjw.put_data(mm, md, nworld=batch, nconmax=nconmax, njmax=njmax)
    wp.copy(d.ctrl, wp.array(_controls(mm, batch).astype(np.float32), dtype=float))
    iters, overflow = [], np.zeros(batch, bool)
    for _ in range(nsteps):
        mjw.step(m, d)
        iters.append(float(d.solver_niter.numpy().mean()))
        overflow |= d.overflow.numpy() != 0
    return {
        "compile_s": compile_s,
        "steps_per_s": batch * nsteps / statistics.median(times),
        "solver_iters": float(np.mean(iters)),
        "overflow_worlds": float(overflow.mean()),
        "sizes": f"nconmax {d.naconmax // batch}, njmax {d.njmax}",
        "versions": f"mujoco_warp {getattr(mjw, '__version__', '?')}, warp {wp.__version__} on {wp.get_device()}",
    }


ENGINES = {"hurtle": bench_hurtle, "mjx": bench_mjx, "mujoco": bench_mujoco, "brax": bench_brax, "warp": bench_warp}
BRAX_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".brax", "bin", "python")


def _run_isolated(engine: str, spec: str, args) -> dict:
    """Run one engine on one model in a fresh process; returns its result or error. Brax's worker runs in
    Brax's virtualenv, given the model file's path (that environment has neither gymnasium nor dm_control)."""
    python = sys.executable
    if engine == "brax":
        python, spec = args.brax_python, _asset(spec)
        if not os.path.exists(python):
            return {"error": f"no Brax interpreter at {python}: run benchmarks/brax_venv.sh or pass --brax-python"}
    cmd = [
        python,
        os.path.abspath(__file__),
        "--worker",
        engine,
        "--models",
        spec,
        "--batch",
        str(args.batch),
        "--nsteps",
        str(args.nsteps),
        "--repeats",
        str(args.repeats),
        "--dtype",
        args.dtype,
        "--mode",
        args.mode,
    ]
    if args.nconmax and engine == "hurtle":
        cmd += ["--nconmax", str(args.nconmax)]
    if args.njmax is not None and engine == "hurtle":
        cmd += ["--njmax", str(args.njmax)]
    if engine == "warp":  # MuJoCo Warp's own buffer sizes (None: its defaults from the model)
        cmd += ["--nconmax", str(args.warp_nconmax)] if args.warp_nconmax else []
        cmd += ["--njmax", str(args.warp_njmax)] if args.warp_njmax else []
    if args.integrator:
        cmd += ["--integrator", args.integrator]
    if args.iterations:
        cmd += ["--iterations", str(args.iterations)]
    if engine == "brax":
        cmd += ["--brax-backend", args.brax_backend]
    return run_worker(cmd, args.timeout, x64=args.dtype == "float64")


def run_worker(cmd: list[str], timeout: float, x64: bool = False) -> dict:
    """Run a benchmark worker process; its result is the JSON on its last `RESULT ` line, else the error."""
    # compile times are cold ones: no persistent compilation cache, whatever the environment sets; and every
    # engine compiles with the same XLA code generation: XLA_FLAGS as given, without the flag `import hurtle`
    # adds for its users (hurtle/xla_flags.py; the gate compares XLA's defaults), unless the caller sets
    # HURTLE_XLA_FLAGS itself (`HURTLE_XLA_FLAGS=on` times hurtle as its users get it)
    env = {**os.environ, "JAX_ENABLE_X64": "1" if x64 else "0", "JAX_ENABLE_COMPILATION_CACHE": "0"}
    env.setdefault("HURTLE_XLA_FLAGS", "off")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in out.stdout.splitlines()[::-1]:
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print("worker failed: " + " ".join(cmd[3:]), *(out.stderr or "").splitlines()[-25:], sep="\n", file=sys.stderr)
    lines = (out.stderr or out.stdout).strip().splitlines()
    # the exception's own line, not the last of a message that runs over several (or of jax's traceback note)
    raised = [ln for ln in lines if re.match(r"[\w.]*(Error|Exception)\b", ln)]
    tail = raised[-1:] or lines[-1:] or ["no output"]
    return {"error": tail[0][:160]}


def combine_rounds(runs: list[dict]) -> dict:
    """One engine's results over several rounds: the median of each number (the first round's value of
    any other entry), or the first error."""
    errors = [r for r in runs if "error" in r]
    if errors:
        return errors[0]
    return {k: statistics.median(r[k] for r in runs) if isinstance(v, (int, float)) else v for k, v in runs[0].items()}


def round_ratio(a: list[dict], b: list[dict], key: str) -> str:
    """The median over rounds of a[i][key] / b[i][key]: each ratio from runs minutes apart, so that the
    host's drift (this machine's speed moves 1.5-2x within minutes) cancels; '—' if a round failed."""
    pairs = [(x, y) for x, y in zip(a, b) if x and y and "error" not in x and "error" not in y]
    if not pairs or len(pairs) < len(a) or any(key not in x or key not in y for x, y in pairs):
        return "—"
    return f"{statistics.median(x[key] / y[key] for x, y in pairs):.2f}x"


def _machine() -> str:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    dev = jax.devices()[0]
    import mujoco

    return (
        f"{dev.platform.upper()} {getattr(dev, 'device_kind', '')}; host {cpu}, {os.cpu_count()} cores; "
        f"jax {jax.__version__}, mujoco {mujoco.__version__}"
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="gym:ant,gym:half_cheetah,gym:walker2d,gym:humanoid,dmc:humanoid")
    p.add_argument("--engines", default="hurtle,mjx,mujoco")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--nsteps", type=int, default=100, help="steps per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="JAX engines' precision")
    p.add_argument("--timeout", type=int, default=900, help="seconds per engine and model")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every engine this many times per model, alternating, and report medians (ratios per round)",
    )
    p.add_argument(
        "--mode",
        choices=sorted(MODE),
        default="full",
        help="full: everything on; nocontact: contacts off; smooth: the constraint flag disabled",
    )
    p.add_argument(
        "--nconmax",
        type=int,
        default=0,
        help="hurtle only: keep this many contacts per condim (MJCF's <size nconmax>); MJX and MuJoCo keep all",
    )
    p.add_argument(
        "--njmax",
        type=int,
        default=None,
        help="hurtle only: the solver's working set in rows (0: every row; default: the model's)",
    )
    p.add_argument(
        "--integrator",
        choices=["euler", "rk4", "implicit", "implicitfast"],
        help="every engine's integrator (default: each model file's own; Brax runs Euler only)",
    )
    p.add_argument(
        "--iterations",
        type=int,
        help="every engine's solver iteration cap (default: each file's; Brax runs exactly this many)",
    )
    p.add_argument("--warp-nconmax", type=int, default=None, help="MuJoCo Warp: contacts per world (default: its own)")
    p.add_argument("--warp-njmax", type=int, default=None, help="MuJoCo Warp: constraint rows per world (its default)")
    p.add_argument("--brax-python", default=BRAX_PYTHON, help="the interpreter of Brax's virtualenv")
    p.add_argument("--brax-backend", choices=["generalized", "positional", "spring"], default="generalized")
    p.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "HISTORY.md"),
        help="append the table here (default: benchmarks/HISTORY.md; the current figure is curated into RESULTS.md)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.iterations is not None and args.iterations < 1:
        p.error(f"--iterations must be at least 1, not {args.iterations}")

    if args.worker:
        extra = {"nconmax": args.nconmax} if args.nconmax else {}
        if args.njmax is not None:
            extra["njmax"] = args.njmax
        opt = {"integrator": args.integrator, "iterations": args.iterations}
        if any(opt.values()):
            extra["opt"] = opt
        if args.worker == "brax":
            extra["backend"] = args.brax_backend
        res = ENGINES[args.worker](args.models, args.batch, args.nsteps, args.repeats, args.mode, **extra)
        print("RESULT " + json.dumps(res))
        return

    specs = args.models.split(",")
    engines = args.engines.split(",")
    rows = []
    for spec in specs:
        runs = {e: [] for e in engines}
        for _ in range(args.rounds):
            for e in engines:
                runs[e].append(_run_isolated(e, spec, args))
            print(spec, json.dumps({e: runs[e][-1] for e in engines}), flush=True)
        rows.append((spec, runs))

    def cell(r, key, fmt):
        return fmt.format(r[key]) if "error" not in r else "—"

    cap = (
        f" hurtle with `nconmax={args.nconmax}` (contacts kept per condim; MJX and MuJoCo C keep every contact)."
        if args.nconmax
        else ""
    )
    rounds = (
        f" Medians of {args.rounds} rounds (the engines' workers alternating), ratios per round."
        if args.rounds > 1
        else ""
    )
    integrator = f" Every engine integrates with {args.integrator} (`--integrator`)." if args.integrator else ""
    if args.iterations:
        integrator += f" Every engine's solver iterations capped at {args.iterations} (`--iterations`)."
    brax, warp = "brax" in engines, "warp" in engines
    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: batch {args.batch}, {args.nsteps} steps per call, {args.dtype}",
        f"Machine: {_machine()}. {MODE_TEXT[args.mode]}{integrator}{cap}{rounds}\n",
        "| model | "
        + " | ".join(f"{e} steps/s | {e} {'setup' if e == 'mujoco' else 'compile'} s" for e in engines)
        + " | hurtle/mjx speed | hurtle/mjx compile + first call | hurtle/mjx compile alone | hurtle/mujoco speed"
        + (" | hurtle/brax speed | hurtle/brax compile + first call" if brax else "")
        + (" | hurtle/warp speed | hurtle/warp compile + first call" if warp else "")
        + " | solver iters hurtle / mujoco"
        + (" / warp" if warp else "")
        + " |",
        "|---|" + "---|---|" * len(engines) + "---|---|---|---|" + "---|---|" * (brax + warp) + "---|",
    ]
    notes = []
    for spec, runs in rows:
        res = {e: combine_rounds(runs[e]) for e in engines}
        cells = []
        for e in engines:
            r = res[e]
            cells += [cell(r, "steps_per_s", "{:,.0f}"), cell(r, "compile_s", "{:.1f}")]
            if "error" in r:
                notes.append(f"- {spec} / {e}: {r['error']}")
        hr, xr, cr = (runs.get(e, [{}] * args.rounds) for e in ("hurtle", "mjx", "mujoco"))
        cells += [round_ratio(hr, xr, key) for key in ("steps_per_s", "compile_s", "lower_compile_s")]
        cells.append(round_ratio(hr, cr, "steps_per_s"))
        for peer in ("brax", "warp") if brax or warp else ():
            if peer in engines:
                cells += [round_ratio(hr, runs[peer], key) for key in ("steps_per_s", "compile_s")]
        if "versions" in res.get("brax", {}):
            notes.append(f"- {spec} / brax: {res['brax']['versions']}, its own virtualenv")
        if "versions" in res.get("warp", {}):
            w = res["warp"]
            notes.append(
                f"- {spec} / warp: {w['versions']}, {w['sizes']} per world, CUDA graph where on a GPU; "
                f"worlds that overflowed a buffer in {args.nsteps} steps: {w['overflow_worlds']:.1%}"
            )
        its = [
            f"{r['solver_iters']:.2f}" if r and "solver_iters" in r else "—"
            for r in (res.get("hurtle"), res.get("mujoco")) + ((res.get("warp"),) if warp else ())
        ]
        cells.append(" / ".join(its))
        lines.append(f"| {spec} | " + " | ".join(cells) + " |")
        if args.nconmax and "ncon_dropped" in res.get("hurtle", {}):
            notes.append(
                f"- {spec} / hurtle: the cap dropped {res['hurtle']['ncon_dropped']:.4f} contacts per world and step "
                f"over {args.nsteps} steps from the start (0: every touching contact kept)"
            )
    text = "\n".join(lines + ([""] + notes if notes else [])) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
