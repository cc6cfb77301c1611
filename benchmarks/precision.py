"""What float32 costs in accuracy: hurtle in float32 and float64 against MuJoCo C (float64), same states.

    python benchmarks/precision.py                       # the physics benchmark's models
    python benchmarks/precision.py --models gym:ant --states 16

For each model, MuJoCo C runs random controls from `qpos0` and keeps `--states` snapshots along the way
(contacts made and broken, limits hit). From every snapshot, with the same controls, MuJoCo C and hurtle
(float64, then float32, each in its own process) take one step and then `--horizon` steps. Reported per
model, as the median and the largest over the snapshots:

- one step: the largest qvel difference to MuJoCo C, relative to max(1, |qvel|) (qpos after one step
  differs by timestep times this);
- `--horizon` steps: the largest qpos difference to MuJoCo C. Contact-rich rollouts are chaotic, so this
  grows with the horizon for any two engines; the float64 column is the floor to read float32 against.

Models are loaded as `benchmarks/physics.py --mode full` loads them (PGS models solved with Newton by both
engines). The table is appended to benchmarks/HISTORY.md; the current figure is curated into RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from physics import _controls, _mj_model  # noqa: E402


def snapshots(spec: str, nstates: int, horizon: int, every: int, seed: int = 0) -> dict:
    """MuJoCo C states along a random-control rollout, the controls that follow each, and MuJoCo's answers."""
    import mujoco

    mm = _mj_model(spec, "full")
    d = mujoco.MjData(mm)
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("qpos", "qvel", "act", "warm", "ctrl", "qvel1", "qpos_h")}
    for _ in range(nstates):
        for _ in range(every):
            d.ctrl[:] = _controls(mm, 1, int(rng.integers(1 << 31)))[0]
            mujoco.mj_step(mm, d)
        ctrl = _controls(mm, horizon, int(rng.integers(1 << 31)))
        out["qpos"].append(d.qpos.copy())
        out["qvel"].append(d.qvel.copy())
        out["act"].append(d.act.copy())
        out["warm"].append(d.qacc_warmstart.copy())
        out["ctrl"].append(ctrl)
        probe = mujoco.MjData(mm)
        probe.qpos[:], probe.qvel[:], probe.act[:], probe.qacc_warmstart[:] = d.qpos, d.qvel, d.act, d.qacc_warmstart
        for t in range(horizon):
            probe.ctrl[:] = ctrl[t]
            mujoco.mj_step(mm, probe)
            if t == 0:
                out["qvel1"].append(probe.qvel.copy())
        out["qpos_h"].append(probe.qpos.copy())
    return {k: np.array(v) for k, v in out.items()}


def worker(spec: str, path: str) -> None:
    """hurtle at this process's precision from the snapshots in `path`; writes qvel1 and qpos_h beside them."""
    import jax
    import jax.numpy as jnp

    import hurtle.physics as hp

    snap = dict(np.load(path))
    mm = _mj_model(spec, "full")
    model = hp.from_mujoco(mm, source=spec)
    d0 = hp.make_data(model)
    dt = d0.qpos.dtype
    n = len(snap["qpos"])
    data = jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), d0).replace(
        qpos=jnp.asarray(snap["qpos"], dt),
        qvel=jnp.asarray(snap["qvel"], dt),
        act=jnp.asarray(snap["act"], dt),
        qacc_warmstart=jnp.asarray(snap["warm"], dt),
    )
    ctrl = jnp.asarray(np.swapaxes(snap["ctrl"], 0, 1), dt)  # (horizon, n, nu)
    step = jax.vmap(hp.step, in_axes=(None, 0))

    @jax.jit
    def rollout(d, ctrl):
        def body(d, c):
            d = step(model, d.replace(ctrl=c))
            return d, d.qvel

        d, qvel = jax.lax.scan(body, d, ctrl)
        return d.qpos, qvel[0]

    qpos_h, qvel1 = rollout(data, ctrl)
    np.savez(path + f".{jnp.dtype(dt).name}.npz", qvel1=np.asarray(qvel1, np.float64), qpos_h=np.asarray(qpos_h))


def _errors(ref: dict, got: dict) -> dict:
    scale = np.maximum(1.0, np.abs(ref["qvel1"]).max(-1))
    one = np.abs(got["qvel1"] - ref["qvel1"]).max(-1) / scale
    hor = np.abs(got["qpos_h"] - ref["qpos_h"]).max(-1)
    return {
        "step_med": float(np.median(one)),
        "step_max": float(one.max()),
        "h_med": float(np.median(hor)),
        "h_max": float(hor.max()),
    }


def measure(spec: str, nstates: int, horizon: int, every: int, timeout: float) -> dict:
    snap = snapshots(spec, nstates, horizon, every)
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snap.npz")
        np.savez(path, **snap)
        for name, x64 in (("float64", "1"), ("float32", "0")):
            env = {**os.environ, "JAX_ENABLE_X64": x64}
            subprocess.run([sys.executable, __file__, "--worker", spec, path], env=env, check=True, timeout=timeout)
            res[name] = _errors(snap, dict(np.load(f"{path}.{name}.npz")))
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="gym:ant,gym:half_cheetah,gym:walker2d,gym:humanoid,dmc:humanoid")
    p.add_argument("--states", type=int, default=32)
    p.add_argument("--horizon", type=int, default=100, help="steps of the longer comparison")
    p.add_argument("--every", type=int, default=25, help="MuJoCo steps between snapshots")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "HISTORY.md"),
        help="append the table here (default: benchmarks/HISTORY.md; the current figure is curated into RESULTS.md)",
    )
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    lines = [
        f"\n### Precision: hurtle float32 and float64 vs MuJoCo C ({platform.processor() or platform.machine()}, "
        f"{args.states} states per model, `benchmarks/precision.py`)\n",
        "One step: largest qvel difference to MuJoCo C relative to max(1, |qvel|), median / max over the states. "
        f"{args.horizon} steps: largest qpos difference to MuJoCo C (chaotic; float64 is the floor).\n",
        "| model | one step float64 | one step float32 | "
        f"{args.horizon} steps float64 | {args.horizon} steps float32 |",
        "|---|---|---|---|---|",
    ]
    for spec in args.models.split(","):
        r = measure(spec, args.states, args.horizon, args.every, args.timeout)
        a, b = r["float64"], r["float32"]
        row = (
            f"| {spec} | {a['step_med']:.1e} / {a['step_max']:.1e} | {b['step_med']:.1e} / {b['step_max']:.1e} | "
            f"{a['h_med']:.1e} / {a['h_max']:.1e} | {b['h_med']:.1e} / {b['h_max']:.1e} |"
        )
        print(row, json.dumps(r), flush=True)
        lines.append(row)
    with open(args.out, "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
