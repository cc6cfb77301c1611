"""Swimmer-v5 on hurtle's physics: swim forward, three segments in a viscous fluid.

Model: `assets/swimmer.xml` (Gymnasium's `swimmer.xml`): three 1 m capsules joined by two actuated hinges
(+-100 degrees), moving in the plane through a fluid of density 4000 and viscosity 0.1; the root slides in
x and y and turns about z. `ctrl` in [-1, 1]^2 (gear 150). RK4 with a 0.01 s timestep, frame_skip 4: a
step is 0.04 s.

Observation (8): `qpos[2:]` (3; all of `qpos`, 5, when `exclude_current_positions_from_observation` is
False) then `qvel` (5).
Reward terms: `forward` forward_reward_weight (1) times the root's x velocity over the step;
`ctrl` -ctrl_cost_weight (1e-4) * sum(action^2).
Termination: never. Reset: `qpos0` and zero velocity, each plus U(-reset_noise_scale, reset_noise_scale).
Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class Swimmer(common.GymnasiumTask):
    """Gymnasium's Swimmer-v5 (same keyword options and defaults); `xml` replaces the model file."""

    xml_path = "assets/swimmer.xml"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 4,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-4,
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
    ):
        super().__init__(xml, frame_skip)
        self.forward_reward_weight = float(forward_reward_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.reset_noise_scale = float(reset_noise_scale)
        self.exclude_current_positions_from_observation = bool(exclude_current_positions_from_observation)

    def observation(self, data: hp.Data) -> jax.Array:
        qpos = common.positions(data.qpos, self.exclude_current_positions_from_observation, n_excluded=2)
        return jnp.concatenate([qpos, data.qvel])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return common.forward_and_ctrl(
            before.qpos[0], after.qpos[0], self.control_dt(), action, self.forward_reward_weight, self.ctrl_cost_weight
        )

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return common.noisy_reset(self, key, self.reset_noise_scale, qvel_noise="uniform")
