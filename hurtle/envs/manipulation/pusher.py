"""Pusher-v5 on hurtle's physics: push a cylinder across a table to a goal with a 7-joint arm.

Observation (23): the arm's `qpos[:7]` and `qvel[:7]`, then the positions (bodies' `xpos`, Gymnasium's
`get_body_com`) of the fingertips' body `tips_arm`, the `object` and the `goal`, 3 each.

Reward terms (summed), logged as `reward/<term>` with Gymnasium's names:
- `near`: `-reward_near_weight` (0.5) x |object - tips_arm|;
- `dist`: `-reward_dist_weight` (1) x |object - goal|;
- `ctrl`: `-reward_control_weight` (0.1) x `sum(action^2)`.
It never terminates; the time limit is 100 steps.

Reset: the arm at `qpos0` with joint velocities U(-0.005, 0.005); the goal at the origin of its slides; the
object's slides (y, x) at y ~ U(-0.3, 0), x ~ U(-0.2, 0.2), redrawn until more than 0.17 from the goal
(Gymnasium's rejection sampling); object and goal at rest. `frame_skip` 5 on a 0.01 s Euler step:
dt = 0.05 s. The model is Gymnasium's `pusher_v5.xml`.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion.common import GymnasiumTask, ctrl_cost
from hurtle.envs.manipulation.sampling import rejection_sample


class Pusher(GymnasiumTask):
    """Pusher-v5: Gymnasium's keyword options and defaults; `xml` replaces the model file."""

    gymnasium_id = "Pusher-v5"

    xml_path = "assets/pusher.xml"
    n_frames = 5

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        reward_near_weight: float = 0.5,
        reward_dist_weight: float = 1.0,
        reward_control_weight: float = 0.1,
    ):
        super().__init__(xml, n_frames=frame_skip)
        self.reward_near_weight = float(reward_near_weight)
        self.reward_dist_weight = float(reward_dist_weight)
        self.reward_control_weight = float(reward_control_weight)
        self._tips, self._object, self._goal = (self.model.name2id("body", b) for b in ("tips_arm", "object", "goal"))

    def observation(self, data: hp.Data) -> jax.Array:
        bodies = data.xpos[jnp.array([self._tips, self._object, self._goal])]
        return jnp.concatenate([data.qpos[:7], data.qvel[:7], bodies.ravel()])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        obj = after.xpos[self._object]
        return {
            "near": -self.reward_near_weight * jnp.linalg.norm(obj - after.xpos[self._tips]),
            "dist": -self.reward_dist_weight * jnp.linalg.norm(obj - after.xpos[self._goal]),
            "ctrl": -ctrl_cost(action, self.reward_control_weight),
        }

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        m, dtype = self.model, self.dtype
        k_obj, k_vel = jax.random.split(key)
        low, high = jnp.array([-0.3, -0.2], dtype), jnp.array([0.0, 0.2], dtype)
        goal = jnp.zeros(2, dtype)
        obj = rejection_sample(
            k_obj,
            lambda k: jax.random.uniform(k, (2,), dtype, low, high),
            lambda p: jnp.linalg.norm(p - goal) > 0.17,
        )
        qpos = jnp.asarray(m.qpos0, dtype).at[-4:-2].set(obj).at[-2:].set(goal)
        qvel = jax.random.uniform(k_vel, (m.nv,), dtype, -0.005, 0.005).at[-4:].set(0.0)
        return qpos, qvel
