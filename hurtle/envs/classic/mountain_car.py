"""MountainCarContinuous-v0 with Gymnasium's dynamics, reward and termination.

State `[position, velocity]`, the observation itself. The force `a` in [-1, 1] (clipped) adds
`0.0015 a - 0.0025 cos(3 position)` to the velocity, clipped to [-0.07, 0.07]; the position, clipped to
[-1.2, 0.6], advances by the new velocity, and the car stops at the left wall. It terminates on reaching
position 0.45 with velocity >= `goal_velocity` (0 by default): reward 100 then, minus `0.1 a^2` on every
step (the unclipped action). Gymnasium's time limit is 999 steps. Reset: position ~ U(-0.6, -0.4), at rest.

Gymnasium stores this state in float32 between steps; hurtle keeps the environment's float dtype, so
under float64 transitions agree with Gymnasium's to float32 rounding, not bit for bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hurtle.envs.base import Box
from hurtle.envs.classic.base import ClassicControl


class MountainCarContinuous(ClassicControl):
    """MountainCarContinuous-v0 in JAX; `reset_to([position, velocity])`."""

    state_size = 2
    min_action = -1.0
    max_action = 1.0
    min_position = -1.2
    max_position = 0.6
    max_speed = 0.07
    goal_position = 0.45
    power = 0.0015

    def __init__(self, goal_velocity: float = 0.0):
        super().__init__()
        self.goal_velocity = float(goal_velocity)

    @property
    def observation_space(self) -> Box:
        return Box([self.min_position, -self.max_speed], [self.max_position, self.max_speed], dtype=self.dtype)

    @property
    def action_space(self) -> Box:
        return Box(self.min_action, self.max_action, (1,), self.dtype)

    def sample_state(self, key: jax.Array) -> jax.Array:
        position = jax.random.uniform(key, (), self.dtype, -0.6, -0.4)
        return jnp.stack([position, jnp.zeros((), self.dtype)])

    def observation(self, s: jax.Array) -> jax.Array:
        return s

    def transition(self, s, action):
        position, velocity = s
        force = jnp.minimum(jnp.maximum(action[0], self.min_action), self.max_action)
        velocity = velocity + (force * self.power - 0.0025 * jnp.cos(3 * position))
        velocity = jnp.clip(velocity, -self.max_speed, self.max_speed)
        position = jnp.clip(position + velocity, self.min_position, self.max_position)
        velocity = jnp.where((position == self.min_position) & (velocity < 0), 0.0, velocity)
        terminated = (position >= self.goal_position) & (velocity >= self.goal_velocity)
        reward = jnp.where(terminated, 100.0, 0.0) - action[0] ** 2 * 0.1
        return jnp.stack([position, velocity]), reward, terminated
