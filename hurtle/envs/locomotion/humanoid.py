"""Humanoid-v5 on hurtle's physics: make a 3-D biped walk forward (+x) without falling.

Observation (348 by default), as `HumanoidBody.observation`: `qpos[2:]` (22: the torso height and
quaternion, 17 joint angles; x and y are excluded unless `exclude_current_positions_from_observation=False`),
`qvel` (23), then each unless switched off: `cinert[1:]` (13 bodies x 10), `cvel[1:]` (13 x 6),
`qfrc_actuator[6:]` (17, the free joint's dofs skipped) and `cfrc_ext[1:]` (13 x 6), read as the last
physics substep left them.

Reward terms (summed), logged as `reward/<term>` with Gymnasium's names:
- `forward`: `forward_reward_weight` (1.25) x the x velocity of the whole body's centre of mass (bodies'
  `xipos` weighted by mass), `(after - before) / dt`;
- `survive`: `healthy_reward` (5) while healthy;
- `ctrl`: `-ctrl_cost_weight` (0.1) x `sum(ctrl^2)`;
- `contact`: `-clip(contact_cost_weight (5e-7) x sum(cfrc_ext^2), contact_cost_range)`, range (-inf, 10).
Healthy: the torso height `qpos[2]` strictly within `healthy_z_range` (1.0, 2.0); terminated when unhealthy
if `terminate_when_unhealthy`. Time limit 1000 steps.

Reset: `qpos0 + U(-reset_noise_scale, reset_noise_scale)`, `qvel ~ U(-reset_noise_scale, reset_noise_scale)`
(scale 0.01). `frame_skip` 5 on a 0.003 s RK4 step: dt = 0.015 s.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.locomotion.common import (
    GymnasiumTask,
    Range,
    contact_cost,
    ctrl_cost,
    forward_velocity,
    healthy_reward,
    in_range,
    mass_center,
    noisy_reset,
    positions,
    unhealthy_termination,
)


class HumanoidBody(GymnasiumTask):
    """What Humanoid-v5 and HumanoidStandup-v5 share: the observation and its switches, the reset noise,
    and `cfrc_ext` computed after the substeps."""

    n_frames = 5
    needs_cfrc_ext = True

    def __init__(
        self,
        xml: str | os.PathLike | None,
        frame_skip: int,
        reset_noise_scale: float,
        exclude_current_positions_from_observation: bool,
        include_cinert_in_observation: bool,
        include_cvel_in_observation: bool,
        include_qfrc_actuator_in_observation: bool,
        include_cfrc_ext_in_observation: bool,
    ):
        super().__init__(xml, n_frames=frame_skip)
        self.reset_noise_scale = float(reset_noise_scale)
        self.exclude_current_positions_from_observation = bool(exclude_current_positions_from_observation)
        self.include_cinert_in_observation = bool(include_cinert_in_observation)
        self.include_cvel_in_observation = bool(include_cvel_in_observation)
        self.include_qfrc_actuator_in_observation = bool(include_qfrc_actuator_in_observation)
        self.include_cfrc_ext_in_observation = bool(include_cfrc_ext_in_observation)

    def observation(self, data: hp.Data) -> jax.Array:
        parts = [positions(data.qpos, self.exclude_current_positions_from_observation, 2), data.qvel]
        extras = (
            (self.include_cinert_in_observation, data.cinert[1:]),
            (self.include_cvel_in_observation, data.cvel[1:]),
            (self.include_qfrc_actuator_in_observation, data.qfrc_actuator[6:]),
            (self.include_cfrc_ext_in_observation, data.cfrc_ext[1:]),
        )
        return jnp.concatenate(parts + [x.ravel() for include, x in extras if include])

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return noisy_reset(self, key, self.reset_noise_scale, qvel_noise="uniform")


class Humanoid(HumanoidBody):
    """Humanoid-v5: Gymnasium's keyword options and defaults; `xml` replaces the model file."""

    gymnasium_id = "Humanoid-v5"

    xml_path = "assets/humanoid.xml"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        forward_reward_weight: float = 1.25,
        ctrl_cost_weight: float = 0.1,
        contact_cost_weight: float = 5e-7,
        contact_cost_range: Range = (-np.inf, 10.0),
        healthy_reward: float = 5.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: Range = (1.0, 2.0),
        reset_noise_scale: float = 1e-2,
        exclude_current_positions_from_observation: bool = True,
        include_cinert_in_observation: bool = True,
        include_cvel_in_observation: bool = True,
        include_qfrc_actuator_in_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
    ):
        super().__init__(
            xml,
            frame_skip,
            reset_noise_scale,
            exclude_current_positions_from_observation,
            include_cinert_in_observation,
            include_cvel_in_observation,
            include_qfrc_actuator_in_observation,
            include_cfrc_ext_in_observation,
        )
        self.forward_reward_weight = float(forward_reward_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.contact_cost_weight = float(contact_cost_weight)
        self.contact_cost_range = tuple(map(float, contact_cost_range))
        self.healthy_reward = float(healthy_reward)
        self.terminate_when_unhealthy = bool(terminate_when_unhealthy)
        self.healthy_z_range = tuple(map(float, healthy_z_range))

    def is_healthy(self, data: hp.Data) -> jax.Array:
        """The torso height strictly within `healthy_z_range`."""
        return in_range(data.qpos[2], self.healthy_z_range)

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        x_before, x_after = mass_center(self.model, before)[0], mass_center(self.model, after)[0]
        cost = contact_cost(after.cfrc_ext, self.contact_cost_weight, cost_range=self.contact_cost_range)
        return {
            "forward": self.forward_reward_weight * forward_velocity(x_before, x_after, self.control_dt()),
            "survive": healthy_reward(self.is_healthy(after), self.healthy_reward, self.dtype),
            "ctrl": -ctrl_cost(action, self.ctrl_cost_weight),
            "contact": -cost,
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        return unhealthy_termination(self.is_healthy(data), self.terminate_when_unhealthy)
