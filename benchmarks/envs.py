"""Environment throughput: hurtle's tasks vs MJX stepping Gymnasium's model file, same batch, same machine.

    python benchmarks/envs.py                          # every locomotion/manipulation task, batch 256, CPU
    python benchmarks/envs.py --tasks ant hopper --batch 4096

hurtle: the training stack's environment, `wrap_for_training(make(task), batch)` (time limit, NaN guard,
auto-reset, observation and reward), stepped with uniform random actions inside one `lax.scan` of
--nsteps steps. MJX: `mjx.step` applied `frame_skip` times per env step on Gymnasium's own model file
(physics only: no observation, reward or reset), the same batch and scan. PGS models are given Newton in
MJX (it refuses PGS; hurtle solves them with Newton). Each engine and task runs in its own process, with
a timeout. The table is appended to benchmarks/HISTORY.md; the current figure is curated into RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

# hurtle task -> (Gymnasium model file, frame_skip)
TASKS = {
    "inverted_pendulum": ("inverted_pendulum.xml", 2),
    "inverted_double_pendulum": ("inverted_double_pendulum.xml", 5),
    "reacher": ("reacher.xml", 2),
    "swimmer": ("swimmer.xml", 4),
    "halfcheetah": ("half_cheetah.xml", 5),
    "hopper": ("hopper.xml", 4),
    "walker2d": ("walker2d_v5.xml", 4),
    "ant": ("ant.xml", 5),
    "humanoid": ("humanoid.xml", 5),
    "humanoidstandup": ("humanoid.xml", 5),
    "pusher": ("pusher_v5.xml", 5),
}


def _timed_scan(step, state, nsteps: int, repeats: int) -> dict:
    import jax

    run = jax.jit(lambda s: jax.lax.scan(lambda c, _: (step(c), None), s, None, length=nsteps)[0])
    t0 = time.perf_counter()
    state = jax.block_until_ready(run(state))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        state = jax.block_until_ready(run(state))
        times.append(time.perf_counter() - t0)
    return {"compile_s": compile_s, "seconds": statistics.median(times), "state": state}


def bench_hurtle(task: str, batch: int, nsteps: int, repeats: int, nconmax: int | None = None) -> dict:
    import jax

    from hurtle.envs import make
    from hurtle.envs.wrappers import wrap_for_training

    env = wrap_for_training(make(task, nconmax=nconmax), batch)
    space = env.action_space
    state = jax.jit(env.reset)(jax.random.key(0))

    def step(carry):
        state, key = carry
        key, k = jax.random.split(key)
        action = jax.random.uniform(k, (batch, *space.shape), space.dtype, space.low, space.high)
        return env.step(state, action), key

    r = _timed_scan(step, (state, jax.random.key(1)), nsteps, repeats)
    out = {"compile_s": r["compile_s"], "steps_per_s": batch * nsteps / r["seconds"]}
    if nconmax is not None:  # contacts dropped past the cap in the last step, per environment
        out["ncon_dropped"] = float(jax.numpy.mean(r["state"][0].metrics["ncon_dropped"]))
    return out


def bench_mjx(task: str, batch: int, nsteps: int, repeats: int) -> dict:
    import jax
    import mujoco
    from mujoco import mjx
    from physics import _asset

    path, frame_skip = TASKS[task]
    mm = mujoco.MjModel.from_xml_path(_asset(f"gym:{path[:-4]}"))
    if mm.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    mx = mjx.put_model(mm)
    d0 = mjx.make_data(mx)
    data = jax.tree.map(lambda x: jax.numpy.broadcast_to(x, (batch, *x.shape)), d0)
    lo, hi = mm.actuator_ctrlrange[:, 0], mm.actuator_ctrlrange[:, 1]

    def step(carry):
        d, key = carry
        key, k = jax.random.split(key)
        ctrl = jax.random.uniform(k, (batch, mm.nu), d0.qpos.dtype, lo, hi)
        d = d.replace(ctrl=ctrl)
        # a loop, as hurtle's PhysicsEnv steps its frames (unrolled, MJX's compile grows frame_skip-fold)
        d = jax.lax.fori_loop(0, frame_skip, lambda _, d: jax.vmap(mjx.step, in_axes=(None, 0))(mx, d), d)
        return d, key

    r = _timed_scan(step, (data, jax.random.key(1)), nsteps, repeats)
    return {"compile_s": r["compile_s"], "steps_per_s": batch * nsteps / r["seconds"]}


ENGINES = {"hurtle": bench_hurtle, "mjx": bench_mjx}


def _isolated(engine: str, task: str, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--tasks", task, "--batch", str(args.batch)]
    cmd += ["--nsteps", str(args.nsteps), "--repeats", str(args.repeats)]
    if args.nconmax is not None and engine == "hurtle":
        cmd += ["--nconmax", str(args.nconmax)]
    from physics import run_worker

    return run_worker(cmd, args.timeout)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=list(TASKS))
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--nsteps", type=int, default=50, help="env steps per timed call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--engines", nargs="+", default=list(ENGINES))
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "HISTORY.md"),
        help="append the table here (default: benchmarks/HISTORY.md; the current figure is curated into RESULTS.md)",
    )
    p.add_argument("--nconmax", type=int, help="hurtle's contact cap per condim for every task (MJX: none)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        try:
            extra = {"nconmax": args.nconmax} if args.nconmax is not None else {}
            res = ENGINES[args.worker](args.tasks[0], args.batch, args.nsteps, args.repeats, **extra)
        except Exception as e:  # reported in the table
            res = {"error": f"{type(e).__name__}: {e}"[:160]}
        print("RESULT " + json.dumps(res), flush=True)
        return

    from physics import _machine

    results = {}
    for task in args.tasks:
        results[task] = {e: _isolated(e, task, args) for e in args.engines}
        print(task, results[task], flush=True)

    def cell(r, key, fmt):
        return "—" if not r or "error" in r else format(r[key], fmt)

    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: environment steps/s, batch {args.batch}, {args.nsteps} steps per call, "
        "float32" + (f"; hurtle with a contact cap of {args.nconmax} per condim" if args.nconmax else ""),
        f"Machine: {_machine()}. hurtle: the training environment (time limit, NaN guard, auto-reset, observation, "
        "reward). MJX: `mjx.step` x frame_skip on Gymnasium's model file (physics only).",
        "",
        "| task | hurtle env steps/s | hurtle compile s | mjx env steps/s | mjx compile s | hurtle/mjx |",
        "|---|---|---|---|---|---|",
    ]
    notes = []
    for task, r in results.items():
        h, m = r.get("hurtle"), r.get("mjx")
        ok = h and m and "error" not in h and "error" not in m
        ratio = f"{h['steps_per_s'] / m['steps_per_s']:.2f}x" if ok else "—"
        lines.append(
            f"| {task} | {cell(h, 'steps_per_s', ',.0f')} | {cell(h, 'compile_s', '.1f')} | "
            f"{cell(m, 'steps_per_s', ',.0f')} | {cell(m, 'compile_s', '.1f')} | {ratio} |"
        )
        notes += [f"- {task} / {e}: {res['error']}" for e, res in r.items() if res and "error" in res]
        if h and "ncon_dropped" in h:
            notes.append(f"- {task}: {h['ncon_dropped']:.2f} contacts dropped per environment in the last step")
    text = "\n".join(lines + ([""] + notes if notes else [])) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
