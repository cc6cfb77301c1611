"""Ant-v5 on hurtle's physics: make a four-legged ant walk forward (+x).

Observation (105 by default): `qpos[2:]` (z, the torso quaternion and 8 joint angles; x and y are
excluded unless `exclude_current_positions_from_observation=False`), `qvel` (14), and, with
`include_cfrc_ext_in_observation`, the external forces `cfrc_ext[1:]` (13 bodies x 6) clipped into
`contact_force_range`.

Reward terms (summed), logged as `reward/<term>` with Gymnasium's names:
- `forward`: `forward_reward_weight` (1) x the main body's x velocity, `(xpos_after - xpos_before) / dt`;
- `survive`: `healthy_reward` (1) while healthy;
- `ctrl`: `-ctrl_cost_weight` (0.5) x `sum(action^2)`;
- `contact`: `-contact_cost_weight` (5e-4) x `sum(clip(cfrc_ext, contact_force_range)^2)`.
Healthy: `qpos` and `qvel` finite and the torso height `qpos[2]` within `healthy_z_range` (0.2, 1.0),
bounds included. Terminated when unhealthy if `terminate_when_unhealthy`. Time limit 1000 steps.

Reset: `qpos0 + U(-reset_noise_scale, reset_noise_scale)` and `qvel ~ N(0, reset_noise_scale^2)`
(scale 0.1). `frame_skip` 5 on a 0.01 s RK4 step: dt = 0.05 s.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion.common import (
    GymnasiumTask,
    Range,
    clipped_contact_forces,
    contact_cost,
    ctrl_cost,
    forward_velocity,
    healthy_reward,
    in_range,
    noisy_reset,
    positions,
    unhealthy_termination,
)


class Ant(GymnasiumTask):
    """Ant-v5: Gymnasium's keyword options and defaults; `xml` replaces the model file."""

    gymnasium_id = "Ant-v5"

    xml_path = "assets/ant.xml"
    n_frames = 5
    needs_cfrc_ext = True

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.5,
        contact_cost_weight: float = 5e-4,
        healthy_reward: float = 1.0,
        main_body: int | str = 1,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: Range = (0.2, 1.0),
        contact_force_range: Range = (-1.0, 1.0),
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
    ):
        super().__init__(xml, n_frames=frame_skip)
        self.forward_reward_weight = float(forward_reward_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.contact_cost_weight = float(contact_cost_weight)
        self.healthy_reward = float(healthy_reward)
        self.main_body = self.model.name2id("body", main_body) if isinstance(main_body, str) else int(main_body)
        self.terminate_when_unhealthy = bool(terminate_when_unhealthy)
        self.healthy_z_range = tuple(map(float, healthy_z_range))
        self.contact_force_range = tuple(map(float, contact_force_range))
        self.reset_noise_scale = float(reset_noise_scale)
        self.exclude_current_positions_from_observation = bool(exclude_current_positions_from_observation)
        self.include_cfrc_ext_in_observation = bool(include_cfrc_ext_in_observation)

    def is_healthy(self, data: hp.Data) -> jax.Array:
        """Finite state and the torso height within `healthy_z_range` (bounds included)."""
        finite = jnp.all(jnp.isfinite(data.qpos)) & jnp.all(jnp.isfinite(data.qvel))
        return finite & in_range(data.qpos[2], self.healthy_z_range, inclusive=True)

    def observation(self, data: hp.Data) -> jax.Array:
        parts = [positions(data.qpos, self.exclude_current_positions_from_observation, 2), data.qvel]
        if self.include_cfrc_ext_in_observation:
            parts.append(clipped_contact_forces(data.cfrc_ext[1:], self.contact_force_range).ravel())
        return jnp.concatenate(parts)

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        x_before, x_after = before.xpos[self.main_body, 0], after.xpos[self.main_body, 0]
        return {
            "forward": self.forward_reward_weight * forward_velocity(x_before, x_after, self.control_dt()),
            "survive": healthy_reward(self.is_healthy(after), self.healthy_reward, self.dtype),
            "ctrl": -ctrl_cost(action, self.ctrl_cost_weight),
            "contact": -contact_cost(after.cfrc_ext, self.contact_cost_weight, self.contact_force_range),
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        return unhealthy_termination(self.is_healthy(data), self.terminate_when_unhealthy)

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return noisy_reset(self, key, self.reset_noise_scale, qvel_noise="normal")
