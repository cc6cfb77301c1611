"""The UR5e arm's tasks on hurtle's physics (assets/ur5e.xml: the UR5e's DH kinematics, datasheet masses, position
servos with its joint sizes' stiffness and torque limits, link capsules and a table).

`UR5eReach` (`ur5e_reach`): bring the tool tip (site "tool", 7.5 cm beyond the flange) to a target anywhere in
the arm's workspace; within 2 cm the target jumps to a new random place (`hurtle.envs.targets`).

Action (6, in [-1, 1]): each joint servo's target, `home + span * action` (home: shoulder -90, elbow 90, wrists
-90 and -90 degrees, the tool pointing down; span: pi, 1.4, 2.2, 1.6, 1.6, pi rad), at 50 Hz (10 physics steps of
2 ms, implicitfast). Observation (21): joint angles minus home (6), joint velocities x 0.1 (6), the tool tip's
position (3), the target's (3), target minus tool (3), in the base's frame (world, the base at the origin).

Reward terms: `reach`, minus the tool-to-target distance (m); `motion`, minus 1e-3 |qvel|^2; `hit`, 10 on a step
that reaches the target. Reset: home plus U(-0.1, 0.1) rad per joint, at rest; the first target sampled as every
later one: uniform over a cylindrical shell around the base (0.3-0.75 m from its axis, any direction, 0.1-0.6 m
above the table) and within 0.8 m of the shoulder. No termination; the time limit is 500 steps (10 s).
Success measure: targets reached per episode (`targets/reached`) and the time each took (`targets/time`).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box
from hurtle.envs.manipulation.sampling import rejection_sample
from hurtle.envs.targets import TargetTask

HOME = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
SPAN = np.array([np.pi, 1.4, 2.2, 1.6, 1.6, np.pi])
SHOULDER = np.array([0.0, 0.0, 0.1625])


def sample_workspace(key: jax.Array, dtype) -> jax.Array:
    """A point uniform over the shell around the base (0.3-0.75 m from its axis, 0.1-0.6 m up) within 0.8 m of
    the shoulder."""

    def draw(k):
        kr, kp, kz = jax.random.split(k, 3)
        r = jnp.sqrt(jax.random.uniform(kr, (), dtype, 0.3**2, 0.75**2))  # uniform over the annulus' area
        phi = jax.random.uniform(kp, (), dtype, -jnp.pi, jnp.pi)
        z = jax.random.uniform(kz, (), dtype, 0.1, 0.6)
        return jnp.stack([r * jnp.cos(phi), r * jnp.sin(phi), z])

    return rejection_sample(key, draw, lambda p: jnp.linalg.norm(p - jnp.asarray(SHOULDER, dtype)) < 0.8)


class UR5eReach(TargetTask):
    """Reach targets anywhere in the UR5e's workspace with the tool tip (see the module's docstring)."""

    xml_path = "assets/ur5e_reach.xml"
    n_frames = 10
    hit_radius = 0.02
    hit_bonus = 10.0

    def __init__(self, xml: str | os.PathLike | None = None, motion_cost_weight: float = 1e-3):
        super().__init__(xml)
        self.motion_cost_weight = float(motion_cost_weight)
        self._tool = self.model.name2id("site", "tool")
        self._home = jnp.asarray(HOME, self.dtype)
        self._span = jnp.asarray(SPAN, self.dtype)
        self._action_space = Box(-np.ones(6), np.ones(6), (6,), self.dtype)

    def pipeline_step(self, data: hp.Data, ctrl: jax.Array) -> hp.Data:
        return super().pipeline_step(data, self._home + self._span * ctrl)  # the action: servo targets about home

    def effector(self, data: hp.Data) -> jax.Array:
        return data.site_xpos[self._tool]

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        return sample_workspace(key, self.dtype)

    def observation(self, data: hp.Data) -> jax.Array:
        tool = self.effector(data)
        target = self.target(data)
        return jnp.concatenate([data.qpos - self._home, 0.1 * data.qvel, tool, target, target - tool])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return {
            "reach": -jnp.linalg.norm(self.to_target(after)),
            "motion": -self.motion_cost_weight * jnp.sum(after.qvel * after.qvel),
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        return jnp.zeros((), bool)

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        qpos = self._home + jax.random.uniform(key, (6,), self.dtype, -0.1, 0.1)
        return qpos, jnp.zeros(6, self.dtype)
