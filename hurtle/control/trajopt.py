"""Trajectory optimisation by shooting through hurtle's physics, and receding-horizon control (MPC) on top.

A `Problem` is a model, a horizon of control steps (each `n_frames` physics steps with the control held), a
running cost `running(data, ctrl)` of the state each control step reaches and the control that led there, and
an optional `terminal(data)` cost of the last state. `optimize` minimises the total cost over an open-loop
control sequence by gradients through the rollout (the solver's implicit derivative; `hurtle.physics`), with
Adam or L-BFGS (optax), the whole optimisation one compiled loop. Bounded actuators (`ctrllimited`) are
respected by optimising unbounded z with ctrl = mid + half tanh(z). `mpc` re-plans from each state reached:
a few iterations warm-started from the previous plan shifted by one step, then the first control applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

import hurtle.physics as hp
from hurtle import xla_flags

METHODS = ("adam", "lbfgs")


@dataclasses.dataclass(frozen=True, eq=False)
class Problem:
    """What to optimise (see the module's docstring)."""

    model: hp.Model
    running: Callable[[hp.Data, jax.Array], jax.Array]
    horizon: int
    terminal: Callable[[hp.Data], jax.Array] | None = None
    n_frames: int = 1

    def __post_init__(self):
        if self.horizon < 1 or self.n_frames < 1:
            raise ValueError(f"Problem: horizon and n_frames must be positive, got {self.horizon}, {self.n_frames}")
        if self.model.nu == 0:
            raise ValueError("Problem: the model has no actuators to optimise")

    def bounds(self) -> tuple[jax.Array, jax.Array] | None:
        """(mid, half) of the control range where every actuator is ctrllimited, else None."""
        m = self.model
        limited = np.asarray(m.actuator_ctrllimited, bool)
        if not limited.any():
            return None
        if not limited.all():
            raise NotImplementedError("trajopt: a model with some actuators ctrllimited and others not")
        lo, hi = jnp.asarray(m.actuator_ctrlrange).T
        return (lo + hi) / 2, (hi - lo) / 2

    def controls(self, z: jax.Array) -> jax.Array:
        """The control sequence of the optimised variables z `[horizon, nu]`."""
        b = self.bounds()
        return z if b is None else b[0] + b[1] * jnp.tanh(z)

    def variables(self, controls: jax.Array) -> jax.Array:
        """z of a control sequence (its inverse, controls clipped just inside their range)."""
        b = self.bounds()
        if b is None:
            return controls
        return jnp.arctanh(jnp.clip((controls - b[0]) / b[1], -0.999, 0.999))


@dataclasses.dataclass(frozen=True)
class Solution:
    """controls `[horizon, nu]`, their total cost, the cost after each iteration `[iterations]`, and the states
    reached (`qpos` `[horizon + 1, nq]`, `qvel`, the first the start)."""

    controls: jax.Array
    cost: jax.Array
    history: jax.Array
    qpos: jax.Array
    qvel: jax.Array


def rollout(problem: Problem, data: hp.Data, controls: jax.Array) -> tuple[jax.Array, hp.Data]:
    """The total cost of `controls` from `data`, and the states after each control step (stacked `Data`)."""
    m = problem.model

    def step(d, u):
        d = d.replace(ctrl=u)
        d = lax.fori_loop(0, problem.n_frames, lambda _, x: hp.step(m, x), d)
        return d, (d, problem.running(d, u))

    final, (states, costs) = lax.scan(step, data, controls)
    total = jnp.sum(costs)
    if problem.terminal is not None:
        total = total + problem.terminal(final)
    return total, states


def _optimizer(method: str, learning_rate: float) -> optax.GradientTransformation:
    if method == "adam":
        return optax.adam(learning_rate)
    if method == "lbfgs":
        return optax.lbfgs()
    raise ValueError(f"trajopt: unknown method {method!r}; known: {', '.join(METHODS)}")


def _iterate(problem: Problem, method: str, learning_rate: float, iterations: int):
    """`run(data, z) -> (z, costs per iteration)`: `iterations` optimiser steps on z."""
    opt = _optimizer(method, learning_rate)

    def run(data, z):
        def cost(z):
            return rollout(problem, data, problem.controls(z))[0]

        value_and_grad = optax.value_and_grad_from_state(cost) if method == "lbfgs" else jax.value_and_grad(cost)

        def one(carry, _):
            z, state = carry
            with jax.numpy_dtype_promotion("standard"):  # optax's step counts and line search mix dtypes
                if method == "lbfgs":
                    value, grad = value_and_grad(z, state=state)
                    updates, state = opt.update(grad, state, z, value=value, grad=grad, value_fn=cost)
                else:
                    value, grad = value_and_grad(z)
                    updates, state = opt.update(grad, state, z)
                return (optax.apply_updates(z, updates), state), value

        with jax.numpy_dtype_promotion("standard"):
            state = opt.init(z)
        (z, _), history = lax.scan(one, (z, state), None, length=iterations)
        return z, history

    return run


def optimize(
    problem: Problem,
    data: hp.Data,
    controls: jax.Array | None = None,
    *,
    method: str = "adam",
    iterations: int = 200,
    learning_rate: float = 0.05,
) -> Solution:
    """Minimise the problem's cost from `data` over the control sequence (from `controls`, default zeros)."""
    if controls is None:
        b = problem.bounds()
        mid = jnp.zeros(problem.model.nu, data.qpos.dtype) if b is None else b[0]
        controls = jnp.broadcast_to(mid, (problem.horizon, problem.model.nu))
    controls = jnp.asarray(controls, data.qpos.dtype)
    if controls.shape != (problem.horizon, problem.model.nu):
        raise ValueError(
            f"optimize: controls of shape {controls.shape}, expected {(problem.horizon, problem.model.nu)}"
        )
    run = jax.jit(_iterate(problem, method, learning_rate, iterations), compiler_options=xla_flags.gradient_options())
    z, history = run(data, problem.variables(controls))
    best = problem.controls(z)
    cost, states = jax.jit(lambda d, u: rollout(problem, d, u))(data, best)
    return Solution(
        controls=best,
        cost=cost,
        history=history,
        qpos=jnp.concatenate([data.qpos[None], states.qpos]),
        qvel=jnp.concatenate([data.qvel[None], states.qvel]),
    )


def mpc(
    problem: Problem,
    data: hp.Data,
    steps: int,
    *,
    method: str = "adam",
    iterations: int = 20,
    warmup: int = 200,
    learning_rate: float = 0.05,
) -> Solution:
    """Receding-horizon control for `steps` control steps from `data`: a plan of `problem.horizon` steps
    (`warmup` iterations at the start), then at each step `iterations` more from the previous plan shifted by
    one (its last control repeated), and the plan's first control applied to the model. Returns the controls
    applied, the running cost they incurred (`cost`; `history`: each step's), and the states reached."""
    initial = optimize(problem, data, method=method, iterations=warmup, learning_rate=learning_rate)
    run = _iterate(problem, method, learning_rate, iterations)
    m = problem.model

    def step(carry, _):
        d, z = carry
        z, _ = run(d, z)
        u = problem.controls(z)[0]
        d = lax.fori_loop(0, problem.n_frames, lambda _, x: hp.step(m, x), d.replace(ctrl=u))
        z = jnp.concatenate([z[1:], z[-1:]])
        return (d, z), (u, problem.running(d, u), d.qpos, d.qvel)

    run_all = jax.jit(
        lambda d, z: lax.scan(step, (d, z), None, length=steps)[1], compiler_options=xla_flags.gradient_options()
    )
    controls, costs, qpos, qvel = run_all(data, problem.variables(initial.controls))
    return Solution(
        controls=controls,
        cost=jnp.sum(costs),
        history=costs,
        qpos=jnp.concatenate([data.qpos[None], qpos]),
        qvel=jnp.concatenate([data.qvel[None], qvel]),
    )
