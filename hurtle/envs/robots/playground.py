"""What MuJoCo Playground's tasks share in hurtle: the scene found in the `robots` extra and compiled once for both
engines, reward scales replaced by name (an unknown name refused), actions in [-1, 1] that move the servos' targets
from where they were (Playground's manipulation tasks; the joystick tasks offset a home pose instead), the terms'
names for a start state."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box
from hurtle.envs.physics_env import PhysicsEnv
from hurtle.envs.robots.assets import playground_path


class PlaygroundTask(PhysicsEnv):
    """A task on a Playground scene. A subclass sets `SCALES` (its reward terms' default scales) and `ACTION_SCALE`.

    scene: the scene's path under Playground's `_src`. scales: reward scales replacing some of `SCALES`."""

    SCALES: dict[str, float] = {}
    ACTION_SCALE = 1.0

    def __init__(self, scene: str, scales: dict | None = None):
        unknown = set(scales or {}) - set(self.SCALES)
        if unknown:
            name = type(self).__name__
            raise ValueError(f"{name}: no reward terms {sorted(unknown)}; they are {', '.join(self.SCALES)}")
        self.scales = {**self.SCALES, **(scales or {})}
        super().__init__(playground_path(scene))
        m = self.mj = self.compile_mujoco()
        self.ctrl_low, self.ctrl_high = np.asarray(m.actuator_ctrlrange, np.float64).T
        self._action_space = Box(-1.0, 1.0, (m.nu,), self.dtype)

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        """The servos' targets moved by `ACTION_SCALE` per unit of action from the current ones, clipped to their
        control ranges."""
        low, high = (jnp.asarray(b, action.dtype) for b in (self.ctrl_low, self.ctrl_high))
        return jnp.clip(data.ctrl + self.ACTION_SCALE * action, low, high)

    def reward_terms(self, before, after, action):  # the terms' names and dtypes, for `start`
        zero = jnp.zeros((), after.qpos.dtype)
        return {k: zero for k in self.SCALES}
