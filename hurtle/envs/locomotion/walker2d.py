"""Walker2d-v5 on hurtle's physics: walk forward on two legs without falling.

Model: `assets/walker2d.xml` (Gymnasium's `walker2d_v5.xml`): a torso and two legs of thigh, leg and foot
(both feet with friction 1.9) with six actuated hinges; the root slides in x (`rootx`) and z (`rootz`, its
position the torso's height) and turns about y (`rooty`). `ctrl` in [-1, 1]^6 (gear 100). RK4 with a
0.002 s timestep, frame_skip 4: a step is 0.008 s.

Observation (17): `qpos[1:]` (8; all of `qpos`, 9, when `exclude_current_positions_from_observation` is
False) then `qvel` (9) clipped to [-10, 10].
Healthy: the height `qpos[1]` strictly inside healthy_z_range (0.8, 2) and the angle `qpos[2]` inside
healthy_angle_range (-1, 1).
Reward terms: `forward` forward_reward_weight (1) times the x velocity of `rootx` over the step;
`ctrl` -ctrl_cost_weight (1e-3) * sum(action^2); `survive` healthy_reward (1) while healthy.
Termination: unhealthy, when terminate_when_unhealthy (True).
Reset: `qpos0` and zero velocity, each plus U(-reset_noise_scale, reset_noise_scale) (5e-3).
Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class Walker2d(common.HealthyRunner):
    """Gymnasium's Walker2d-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "Walker2d-v5"

    xml_path = "assets/walker2d.xml"
    qvel_clip = 10.0

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 4,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-3,
        healthy_reward: float = 1.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: common.Range = (0.8, 2.0),
        healthy_angle_range: common.Range = (-1.0, 1.0),
        reset_noise_scale: float = 5e-3,
        exclude_current_positions_from_observation: bool = True,
    ):
        super().__init__(
            xml,
            frame_skip,
            forward_reward_weight=forward_reward_weight,
            ctrl_cost_weight=ctrl_cost_weight,
            healthy_reward=healthy_reward,
            terminate_when_unhealthy=terminate_when_unhealthy,
            reset_noise_scale=reset_noise_scale,
            exclude_current_positions_from_observation=exclude_current_positions_from_observation,
        )
        self.healthy_z_range = healthy_z_range
        self.healthy_angle_range = healthy_angle_range

    def is_healthy(self, data: hp.Data) -> jax.Array:
        z, angle = data.qpos[1], data.qpos[2]
        return common.in_range(z, self.healthy_z_range) & common.in_range(angle, self.healthy_angle_range)
