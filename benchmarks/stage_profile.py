"""Where a batched step's run time goes, stage by stage, on whatever device JAX has (a GPU's first question).

    python benchmarks/stage_profile.py --models gym:humanoid --batch 32768     # on a GPU machine
    python benchmarks/stage_profile.py --models gym:half_cheetah --batch 256   # here, on the CPU

For each model it times growing prefixes of `hurtle.physics.step` (kinematics; + inertia; + collision;
+ constraint rows; ...; the whole step) in the program `benchmarks/physics.py` times: `jit(scan(vmap(...)))`
over --nsteps steps, the model shared. A stage's time is its prefix's time less the one before. A prefix
that does not advance the state would be loop-invariant (XLA would hoist it out of the scan), so after
each prefix every input of the step (qpos, qvel, act, ctrl, ...) is nudged by a number that depends on
every field of `Data`; the first row, the nudge alone, is that overhead. The whole step runs first,
--warmup steps, and every prefix is timed from the state it reached (the initial state has no typical
contacts). Each prefix compiles separately: the compile seconds are reported too (the last row's: the
whole step's). One run per prefix: on a host whose speed drifts, a stage's difference can come out
negative; read it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def stages():
    """(name, fn(m, d) -> d) in the order `step` runs them; the last, the integrator, has no fn: its prefix
    is `hp.step` itself."""
    import importlib

    import hurtle.physics as hp

    fw = importlib.import_module("hurtle.physics.forward")  # the module: the package exports a function so named

    return [
        ("kinematics, com, tendons", lambda m, d: hp.tendon(m, hp.com_pos(m, hp.kinematics(m, d)))),
        ("inertia (crb, factor)", lambda m, d: hp.factor_m(m, hp.crb(m, d))),
        ("collision", hp.collision),
        ("constraint rows, transmission", lambda m, d: hp.transmission(m, hp.make_constraint(m, d))),
        ("velocity (rne, passive)", fw.fwd_velocity),
        ("actuation, qacc_smooth", lambda m, d: fw.fwd_acceleration(m, hp.actuation(m, d))),
        ("solver", fw.fwd_constraint),
        ("integrator", None),
    ]


_STATE = ("qpos", "qvel", "act", "ctrl", "qacc_warmstart", "qfrc_applied", "xfrc_applied", "mocap_pos", "mocap_quat")


def prefix_fn(k: int):
    """The first k stages, then the nudge; k == number of stages: `hp.step` itself (no nudge)."""
    import jax
    import jax.numpy as jnp

    import hurtle.physics as hp

    st = stages()
    if k == len(st):
        return hp.step

    def fn(m, d):
        for _, f in st[:k]:
            d = f(m, d)
        leaves = [x for x in jax.tree.leaves(d) if jnp.issubdtype(x.dtype, jnp.floating)]
        s = sum(jnp.sum(x) for x in leaves)
        eps = 1e-30 * s  # zero in value, not to the compiler: every input of the step depends on the loop
        return d.replace(**{f: getattr(d, f) + eps.astype(getattr(d, f).dtype) for f in _STATE})

    return fn


def _timed(fn, model, data, nsteps: int, repeats: int):
    """(compile s, ms per batched step, final data, solver trips) of `nsteps` batched steps of fn from
    `data`; solver trips: the mean over the last call's steps of the batch's largest `solver_niter` (under
    vmap the solver's loop runs that many times for every world)."""
    import jax.numpy as jnp
    from physics import timed_rollout

    t = timed_rollout(fn, model, data, nsteps, repeats, lambda d: jnp.max(d.solver_niter))
    return t["lower_compile_s"], 1e3 * statistics.median(t["times"]) / nsteps, t["data"], t["last_iters"]


def profile(spec: str, batch: int, nsteps: int, repeats: int, mode: str, warmup: int) -> list[dict]:
    import jax
    import mujoco
    from physics import setup_hurtle

    _, model, data = setup_hurtle(spec, batch, mode)
    st = stages()
    # the whole step first: its program also moves the batch `warmup` steps on, to states with contacts
    # (from the initial state a solve is not a typical one), and every prefix is timed from there
    compile_s, step_ms, data, trips = _timed(prefix_fn(len(st)), model, data, nsteps, max(repeats, warmup // nsteps))
    rows, prev = [], 0.0
    for k, name in enumerate(["(the nudge alone)"] + [n for n, _ in st[:-1]]):
        c, ms, _, _ = _timed(prefix_fn(k), model, data, nsteps, repeats)
        rows.append({"stage": name, "prefix_ms": ms, "stage_ms": ms - prev, "compile_s": c})
        prev = ms
        print(spec, json.dumps(rows[-1]), flush=True)
        jax.clear_caches()
    rk4 = int(model.opt.integrator) == mujoco.mjtIntegrator.mjINT_RK4
    last = st[-1][0] + (" (RK4: three more forward passes)" if rk4 else "")
    rows.append({"stage": last, "prefix_ms": step_ms, "stage_ms": step_ms - prev, "compile_s": compile_s})
    rows[-1]["solver_trips"] = trips
    print(spec, json.dumps(rows[-1]), flush=True)
    return rows


def table(spec: str, batch: int, rows: list[dict]) -> str:
    total = rows[-1]["prefix_ms"]
    lines = [
        f"\n{spec}, batch {batch}: {total:.2f} ms per batched step "
        f"({1e3 * batch / total:,.0f} steps/s); the batch's solver loop ran {rows[-1]['solver_trips']:.1f} times "
        "per step (the largest solver_niter)\n",
        "| stage | ms per batched step | share | prefix compile s |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['stage']} | {r['stage_ms']:.2f} | {100 * r['stage_ms'] / total:.0f}% | {r['compile_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="gym:humanoid")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--nsteps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=100, help="steps taken before the prefixes are timed")
    p.add_argument("--mode", default="full", choices=["full", "nocontact", "smooth"])
    args = p.parse_args(argv)

    import jax

    print("device:", jax.devices()[0].device_kind, "jax", jax.__version__, flush=True)
    for spec in args.models.split(","):
        rows = profile(spec, args.batch, args.nsteps, args.repeats, args.mode, args.warmup)
        print(table(spec, args.batch, rows), flush=True)


if __name__ == "__main__":
    main()
