"""CartPole-v1 (Barto, Sutton and Anderson's cart-pole) with Gymnasium's dynamics, reward and termination.

State `[x, x_dot, theta, theta_dot]`, the observation itself. Actions: 0 pushes the cart left, 1 right,
with a force of 10 N; explicit Euler with tau = 0.02 s. The episode terminates when |x| > 2.4 or
|theta| > 12 degrees. Reward 1 on every step, the terminating one included (Gymnasium's default); with
`sutton_barto_reward=True`, 0 per step and -1 on termination. Gymnasium's time limit is 500 steps.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.envs.base import Box, Discrete
from hurtle.envs.classic.base import ClassicControl


class CartPole(ClassicControl):
    """CartPole-v1 in JAX; `reset_to([x, x_dot, theta, theta_dot])`."""

    state_size = 4
    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = masspole + masscart
    length = 0.5  # half the pole's length
    polemass_length = masspole * length
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, sutton_barto_reward: bool = False):
        super().__init__()
        self.sutton_barto_reward = bool(sutton_barto_reward)

    @property
    def observation_space(self) -> Box:
        high = np.array([self.x_threshold * 2, np.inf, self.theta_threshold_radians * 2, np.inf])
        return Box(-high, high, dtype=self.dtype)

    @property
    def action_space(self) -> Discrete:
        return Discrete(2)

    def sample_state(self, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, (4,), self.dtype, -0.05, 0.05)

    def observation(self, s: jax.Array) -> jax.Array:
        return s

    def transition(self, s, action):
        x, x_dot, theta, theta_dot = s
        force = jnp.where(action == 1, self.force_mag, -self.force_mag).astype(self.dtype)
        costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
        temp = (force + self.polemass_length * jnp.square(theta_dot) * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * jnp.square(costheta) / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        # Gymnasium's default "euler" integrator: positions advance with the old velocities
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        terminated = (
            (x < -self.x_threshold)
            | (x > self.x_threshold)
            | (theta < -self.theta_threshold_radians)
            | (theta > self.theta_threshold_radians)
        )
        if self.sutton_barto_reward:
            reward = jnp.where(terminated, -1.0, 0.0)
        else:
            reward = jnp.ones(())
        return jnp.stack([x, x_dot, theta, theta_dot]), reward, terminated
