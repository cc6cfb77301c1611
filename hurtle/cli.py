"""The `hurtle` command. For now: `hurtle demo` (batched physics against MuJoCo C) and `hurtle bench`."""

from __future__ import annotations

import argparse
import os
import sys
import time


def demo(batch: int, steps: int, model_path: str | None) -> None:
    """Step `batch` copies of a model with random controls; check world 0 against MuJoCo C."""
    import jax
    import jax.numpy as jnp
    import mujoco
    import numpy as np

    import hurtle.physics as hp

    path = model_path or os.path.join(os.path.dirname(__file__), "assets", "arm.xml")
    model = hp.load(path)
    key = jax.random.PRNGKey(0)
    lo = jnp.where(model.actuator_ctrllimited, model.actuator_ctrlrange[:, 0], -1.0)
    hi = jnp.where(model.actuator_ctrllimited, model.actuator_ctrlrange[:, 1], 1.0)
    ctrl = jax.random.uniform(key, (batch, model.nu), minval=lo, maxval=hi, dtype=model.body_mass.dtype)
    d0 = hp.make_data(model)
    data = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), d0).replace(ctrl=ctrl)

    @jax.jit
    def rollout(m, d):
        def body(d, _):
            return jax.vmap(hp.step, in_axes=(None, 0))(m, d), None

        return jax.lax.scan(body, d, None, length=steps)[0]

    print(f"hurtle demo: {os.path.basename(path)}, {batch} worlds x {steps} steps on {jax.devices()[0]}")
    t0 = time.perf_counter()
    out = jax.block_until_ready(rollout(model, data))
    print(f"  compile + first run: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(model, data))
    dt = time.perf_counter() - t0
    print(f"  {batch * steps / dt:,.0f} physics steps/s ({dt:.2f} s)")

    mm = mujoco.MjModel.from_xml_path(path)
    md = mujoco.MjData(mm)
    md.ctrl[:] = np.asarray(ctrl[0])
    for _ in range(steps):
        mujoco.mj_step(mm, md)
    err = np.max(np.abs(np.asarray(out.qpos[0]) - md.qpos))
    print(f"  world 0 vs MuJoCo C after {steps} steps: max |qpos difference| = {err:.2e} ({out.qpos.dtype})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hurtle", description="hurtle: RL for robots on the accelerator")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="batched physics demo, checked against MuJoCo C")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--model", default=None, help="MJCF file (default: hurtle's arm)")
    sub.add_parser("bench", help="physics benchmark against MJX and MuJoCo C (benchmarks/physics.py)", add_help=False)
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        demo(args.batch, args.steps, args.model)
    elif args.command == "bench":
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "physics.py")
        if not os.path.exists(script):
            sys.exit("hurtle bench needs a source checkout (benchmarks/physics.py)")
        os.execv(sys.executable, [sys.executable, script, *rest])


if __name__ == "__main__":
    main()
