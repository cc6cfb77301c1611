"""Reacher-v5 on hurtle's physics: move a two-link planar arm's fingertip to a random target.

Observation (10): `cos(qpos[:2])`, `sin(qpos[:2])` (the two joint angles), `qpos[2:]` (the target's x, y),
`qvel[:2]` (the joint velocities), and the fingertip's position minus the target's, x and y (bodies'
`xpos`, as Gymnasium's `get_body_com`).

Reward terms (summed): `dist = -reward_dist_weight * |fingertip - target|` (3-D distance, weight 1) and
`ctrl = -reward_control_weight * sum(action^2)` (weight 1), logged as `reward/dist` and `reward/ctrl`
(Gymnasium's `reward_dist`, `reward_ctrl`). It never terminates; the time limit is 50 steps.

Reset: joint angles `qpos0 + U(-0.1, 0.1)`; the target uniform on the disc of radius 0.2 (Gymnasium's
rejection sampling from the square [-0.2, 0.2]^2); joint velocities U(-0.005, 0.005), target at rest.
`frame_skip` 2 on a 0.01 s RK4 step: dt = 0.02 s.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion.common import GymnasiumTask, ctrl_cost
from hurtle.envs.manipulation.sampling import rejection_sample


class Reacher(GymnasiumTask):
    """Reacher-v5: Gymnasium's keyword options and defaults; `xml` replaces the model file."""

    gymnasium_id = "Reacher-v5"

    xml_path = "assets/reacher.xml"
    n_frames = 2

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 2,
        reward_dist_weight: float = 1.0,
        reward_control_weight: float = 1.0,
    ):
        super().__init__(xml, n_frames=frame_skip)
        self.reward_dist_weight = float(reward_dist_weight)
        self.reward_control_weight = float(reward_control_weight)
        self._fingertip = self.model.name2id("body", "fingertip")
        self._target = self.model.name2id("body", "target")

    def fingertip_to_target(self, data: hp.Data) -> jax.Array:
        """The fingertip body's position minus the target body's (3,)."""
        return data.xpos[self._fingertip] - data.xpos[self._target]

    def observation(self, data: hp.Data) -> jax.Array:
        angles = data.qpos[:2]
        return jnp.concatenate(
            [jnp.cos(angles), jnp.sin(angles), data.qpos[2:], data.qvel[:2], self.fingertip_to_target(data)[:2]]
        )

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return {
            "dist": -self.reward_dist_weight * jnp.linalg.norm(self.fingertip_to_target(after)),
            "ctrl": -ctrl_cost(action, self.reward_control_weight),
        }

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        m, dtype = self.model, self.dtype
        k_arm, k_goal, k_vel = jax.random.split(key, 3)
        qpos = jnp.asarray(m.qpos0, dtype) + jax.random.uniform(k_arm, (m.nq,), dtype, -0.1, 0.1)
        goal = rejection_sample(
            k_goal,
            lambda k: jax.random.uniform(k, (2,), dtype, -0.2, 0.2),
            lambda g: jnp.linalg.norm(g) < 0.2,
        )
        qvel = jax.random.uniform(k_vel, (m.nv,), dtype, -0.005, 0.005)
        return qpos.at[-2:].set(goal), qvel.at[-2:].set(0.0)
