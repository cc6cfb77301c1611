"""HalfCheetah-v5 on hurtle's physics: run forward, a planar cheetah with six actuated leg joints.

Model: `assets/half_cheetah.xml` (Gymnasium's `half_cheetah.xml`): a 14 kg torso and two three-segment legs
with springy, damped joints; the root slides in x (`rootx`) and z and turns about y. `ctrl` in [-1, 1]^6
(gears 120, 90, 60, 120, 60, 30). Euler with a 0.01 s timestep, frame_skip 5: a step is 0.05 s.

Observation (17): `qpos[1:]` (8; all of `qpos`, 9, when `exclude_current_positions_from_observation` is
False) then `qvel` (9).
Reward terms: `forward` forward_reward_weight (1) times the x velocity of `rootx` over the step;
`ctrl` -ctrl_cost_weight (0.1) * sum(action^2).
Termination: never. Reset: `qpos0` plus U(-reset_noise_scale, reset_noise_scale), zero velocity plus
N(0, reset_noise_scale^2). Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class HalfCheetah(common.GymnasiumTask):
    """Gymnasium's HalfCheetah-v5 (same keyword options and defaults); `xml` replaces the model file."""

    xml_path = "assets/half_cheetah.xml"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
    ):
        super().__init__(xml, frame_skip)
        self.forward_reward_weight = float(forward_reward_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.reset_noise_scale = float(reset_noise_scale)
        self.exclude_current_positions_from_observation = bool(exclude_current_positions_from_observation)

    def observation(self, data: hp.Data) -> jax.Array:
        qpos = common.positions(data.qpos, self.exclude_current_positions_from_observation)
        return jnp.concatenate([qpos, data.qvel])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return common.forward_and_ctrl(
            before.qpos[0], after.qpos[0], self.control_dt(), action, self.forward_reward_weight, self.ctrl_cost_weight
        )

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return common.noisy_reset(self, key, self.reset_noise_scale, qvel_noise="normal")
