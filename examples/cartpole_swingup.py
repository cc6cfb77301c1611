"""Swing a cart-pole up by trajectory optimisation through hurtle's physics, then hold it with MPC.

    python examples/cartpole_swingup.py [--method adam|lbfgs] [--iterations 300]

Open-loop shooting over 2 s of controls (100 steps of 20 ms) from the pole hanging down; then receding-horizon
control from where the plan ended. Prints the cost as it falls and the pole's final angle.
"""

from __future__ import annotations

import argparse
import os
import time

import jax.numpy as jnp
import numpy as np

import hurtle.control as control
import hurtle.physics as hp

CARTPOLE = os.path.join(os.path.dirname(control.__file__), "assets", "cartpole.xml")


def running(d, u):
    """Per 20 ms step: the pole's height below upright, the cart off centre, the pole's spin, effort."""
    x, angle = d.qpos
    return 0.02 * ((1 - jnp.cos(angle)) + 0.05 * x**2 + 0.001 * d.qvel[1] ** 2 + 0.01 * jnp.sum(u**2))


def terminal(d):
    """At the horizon: upright, still, centred."""
    x, angle = d.qpos
    return 10 * (1 - jnp.cos(angle)) + 0.5 * jnp.sum(d.qvel**2) + x**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="adam", choices=control.trajopt.METHODS)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    m = hp.load(CARTPOLE)
    d = hp.forward(m, hp.make_data(m).replace(qpos=jnp.asarray([0.0, np.pi])))
    problem = control.Problem(m, running, horizon=100, terminal=terminal, n_frames=2)
    t = time.perf_counter()
    sol = control.optimize(problem, d, method=args.method, iterations=args.iterations, learning_rate=0.1)
    print(f"shooting ({args.method}, {args.iterations} iterations, {time.perf_counter() - t:.1f} s with compilation)")
    for i in np.linspace(0, args.iterations - 1, 6).astype(int):
        print(f"  iteration {i:4d}: cost {float(sol.history[i]):8.3f}")
    angle = float(sol.qpos[-1, 1])
    print(f"  after 2 s: {np.degrees(np.arctan2(np.sin(angle), np.cos(angle))):+.1f} degrees from upright")
    end = d.replace(qpos=sol.qpos[-1], qvel=sol.qvel[-1])
    short = control.Problem(m, running, horizon=25, terminal=terminal, n_frames=2)
    held = control.mpc(short, hp.forward(m, end), steps=100, iterations=5)
    angles = np.degrees(np.arctan2(np.sin(held.qpos[:, 1]), np.cos(held.qpos[:, 1])))
    print(f"MPC for 2 s more: largest angle {np.max(np.abs(angles)):.1f} degrees, final {angles[-1]:+.2f}")


if __name__ == "__main__":
    main()
