"""Hopper-v5 on hurtle's physics: hop forward on one leg without falling.

Model: `assets/hopper.xml` (Gymnasium's `hopper.xml`): torso, thigh, leg and foot with three actuated hinges;
the root slides in x (`rootx`) and z (`rootz`, its position the torso's height) and turns about y (`rooty`).
`ctrl` in [-1, 1]^3 (gear 200). RK4 with a 0.002 s timestep, frame_skip 4: a step is 0.008 s.

Observation (11): `qpos[1:]` (5; all of `qpos`, 6, when `exclude_current_positions_from_observation` is
False) then `qvel` (6) clipped to [-10, 10].
Healthy: strictly inside the ranges: every element of `(qpos, qvel)[2:]` in healthy_state_range
(-100, 100), the height `qpos[1]` in healthy_z_range (0.7, inf), the angle `qpos[2]` in
healthy_angle_range (-0.2, 0.2).
Reward terms: `forward` forward_reward_weight (1) times the x velocity of `rootx` over the step;
`ctrl` -ctrl_cost_weight (1e-3) * sum(action^2); `survive` healthy_reward (1) while healthy.
Termination: unhealthy, when terminate_when_unhealthy (True).
Reset: `qpos0` and zero velocity, each plus U(-reset_noise_scale, reset_noise_scale) (5e-3).
Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class Hopper(common.HealthyRunner):
    """Gymnasium's Hopper-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "Hopper-v5"

    xml_path = "assets/hopper.xml"
    qvel_clip = 10.0

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 4,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-3,
        healthy_reward: float = 1.0,
        terminate_when_unhealthy: bool = True,
        healthy_state_range: common.Range = (-100.0, 100.0),
        healthy_z_range: common.Range = (0.7, float("inf")),
        healthy_angle_range: common.Range = (-0.2, 0.2),
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
        self.healthy_state_range = healthy_state_range
        self.healthy_z_range = healthy_z_range
        self.healthy_angle_range = healthy_angle_range

    def is_healthy(self, data: hp.Data) -> jax.Array:
        state = jnp.concatenate([data.qpos, data.qvel])[2:]
        return (
            common.in_range(state, self.healthy_state_range)
            & common.in_range(data.qpos[1], self.healthy_z_range)
            & common.in_range(data.qpos[2], self.healthy_angle_range)
        )
