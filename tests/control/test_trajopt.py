"""Trajectory optimisation through the physics: shooting swings the cart-pole (hurtle/control/assets) up from
hanging with open-loop controls; MPC holds it up from a push; bad problems are named."""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest

import hurtle.control as control
import hurtle.physics as hp

CARTPOLE = os.path.join(os.path.dirname(control.__file__), "assets", "cartpole.xml")


def _running(d, u):
    x, angle = d.qpos
    return 0.02 * ((1 - jnp.cos(angle)) + 0.05 * x**2 + 0.001 * d.qvel[1] ** 2 + 0.01 * jnp.sum(u**2))


def _terminal(d):
    x, angle = d.qpos
    return 10 * (1 - jnp.cos(angle)) + 0.5 * jnp.sum(d.qvel**2) + x**2


def _start(angle):
    m = hp.load(CARTPOLE)
    return m, hp.forward(m, hp.make_data(m).replace(qpos=jnp.asarray([0.0, angle])))


def test_shooting_swings_the_cartpole_up():
    """From hanging (angle pi) and zero controls, 300 Adam steps on 100 controls (2 s): the pole ends within 15
    degrees of upright and nearly still, with every control inside the motor's range."""
    m, d = _start(np.pi)
    problem = control.Problem(m, _running, horizon=100, terminal=_terminal, n_frames=2)
    sol = control.optimize(problem, d, iterations=300, learning_rate=0.1)
    assert float(sol.history[0]) > 5 * float(sol.cost)
    assert np.cos(float(sol.qpos[-1, 1])) > np.cos(np.radians(15)) and abs(float(sol.qvel[-1, 1])) < 1.0
    assert sol.qpos.shape == (101, 2) and float(jnp.max(jnp.abs(sol.controls))) <= 1.0
    # hanging still is where zero controls leave it
    assert float(sol.history[0]) == pytest.approx(float(control.rollout(problem, d, jnp.zeros((100, 1)))[0]))


def test_mpc_holds_the_pole_up():
    """From 0.3 rad off upright, receding-horizon control (25 steps ahead, 5 iterations per step) brings it
    within 3 degrees over 2 s; the same controls' first step is what the state reached."""
    m, d = _start(0.3)
    problem = control.Problem(m, _running, horizon=25, terminal=_terminal, n_frames=2)
    sol = control.mpc(problem, d, steps=100, iterations=5, warmup=50, learning_rate=0.1)
    assert sol.qpos.shape == (101, 2) and sol.controls.shape == (100, 1)
    assert abs(np.sin(float(sol.qpos[-1, 1]))) < np.sin(np.radians(3)) and np.cos(float(sol.qpos[-1, 1])) > 0
    first = hp.step(m, hp.step(m, d.replace(ctrl=sol.controls[0])))
    np.testing.assert_allclose(first.qpos, sol.qpos[1], rtol=1e-12)


def test_bad_problems_are_named():
    m, d = _start(0.0)
    with pytest.raises(ValueError, match="horizon and n_frames must be positive"):
        control.Problem(m, _running, horizon=0)
    problem = control.Problem(m, _running, horizon=4)
    with pytest.raises(ValueError, match=r"unknown method 'newton'; known: adam, lbfgs"):
        control.optimize(problem, d, method="newton")
    with pytest.raises(ValueError, match=r"controls of shape \(3, 1\), expected \(4, 1\)"):
        control.optimize(problem, d, jnp.zeros((3, 1)))


def test_lbfgs_lowers_the_cost():
    """L-BFGS (optax, with its line search) on a short horizon: 10 iterations cut the cost of doing nothing
    from 0.5 rad off upright by half or more."""
    m, d = _start(0.5)
    problem = control.Problem(m, _running, horizon=20, terminal=_terminal, n_frames=2)
    idle = float(control.rollout(problem, d, jnp.zeros((20, 1)))[0])
    sol = control.optimize(problem, d, method="lbfgs", iterations=10)
    assert float(sol.cost) < 0.5 * idle and np.all(np.diff(np.asarray(sol.history)) <= 1e-9)
