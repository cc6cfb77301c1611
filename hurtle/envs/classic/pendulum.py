"""Pendulum-v1 with Gymnasium's dynamics and reward: swing a torque-limited pendulum up and hold it.

State `[theta, theta_dot]` (theta = 0 upright); observation `[cos theta, sin theta, theta_dot]`. The torque
is clipped to [-2, 2]; the velocity to [-8, 8] rad/s after each semi-implicit Euler step of 0.05 s. Reward
`-(angle_normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2)` from the state before the step. It never
terminates; Gymnasium's time limit is 200 steps. Reset: theta ~ U(-pi, pi), theta_dot ~ U(-1, 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.envs.base import Box
from hurtle.envs.classic.base import ClassicControl


def angle_normalize(x: jax.Array) -> jax.Array:
    """`x` wrapped into [-pi, pi), as Gymnasium computes it (a floored modulo)."""
    return jnp.remainder(x + np.pi, 2 * np.pi) - np.pi


class Pendulum(ClassicControl):
    """Pendulum-v1 in JAX; `reset_to([theta, theta_dot])`."""

    state_size = 2
    max_speed = 8.0
    max_torque = 2.0
    dt = 0.05
    m = 1.0
    l = 1.0  # noqa: E741 (Gymnasium's name for the length)

    def __init__(self, g: float = 10.0):
        super().__init__()
        self.g = float(g)

    @property
    def observation_space(self) -> Box:
        high = np.array([1.0, 1.0, self.max_speed])
        return Box(-high, high, dtype=self.dtype)

    @property
    def action_space(self) -> Box:
        return Box(-self.max_torque, self.max_torque, (1,), self.dtype)

    def sample_state(self, key: jax.Array) -> jax.Array:
        high = np.array([np.pi, 1.0], self.dtype)
        return jax.random.uniform(key, (2,), self.dtype, -high, high)

    def observation(self, s: jax.Array) -> jax.Array:
        return jnp.stack([jnp.cos(s[0]), jnp.sin(s[0]), s[1]])

    def transition(self, s, action):
        th, thdot = s
        g, m, l, dt = self.g, self.m, self.l, self.dt  # noqa: E741 (Gymnasium's names)
        u = jnp.clip(action, -self.max_torque, self.max_torque)[0]
        costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        newthdot = thdot + (3 * g / (2 * l) * jnp.sin(th) + 3.0 / (m * l**2) * u) * dt
        newthdot = jnp.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * dt
        return jnp.stack([newth, newthdot]), -costs, jnp.zeros((), bool)
