"""InvertedDoublePendulum-v5 on hurtle's physics: balance two poles in a chain on a cart.

Model: `assets/inverted_double_pendulum.xml` (Gymnasium's `inverted_double_pendulum.xml`): a cart on a rail
(`slider`, |x| <= 1 m) with two hinged 0.6 m poles; the site `tip` tops the second. One motor on the cart,
`ctrl` in [-1, 1] (gear 500). RK4 with a 0.01 s timestep, frame_skip 5: a step is 0.05 s.

Observation (9): cart x, sin and cos of the two hinge angles, the three velocities clipped to [-10, 10],
and the cart's constraint force (`qfrc_constraint[0]`) clipped to [-10, 10].
Reward terms, with `(x, y)` the tip's x and height (`site_xpos`) and `v1, v2` the hinges' velocities:
`survive` healthy_reward (10) unless terminated; `distance_penalty` -(0.01 x^2 + (y - 2)^2);
`velocity_penalty` -(1e-3 v1^2 + 5e-3 v2^2).
Termination: the tip at or below 1 m.
Reset: `qpos0` plus U(-reset_noise_scale, reset_noise_scale), zero velocity plus N(0, reset_noise_scale^2).
Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class InvertedDoublePendulum(common.GymnasiumTask):
    """Gymnasium's InvertedDoublePendulum-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "InvertedDoublePendulum-v5"

    xml_path = "assets/inverted_double_pendulum.xml"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        healthy_reward: float = 10.0,
        reset_noise_scale: float = 0.1,
    ):
        super().__init__(xml, frame_skip)
        self.healthy_reward = float(healthy_reward)
        self.reset_noise_scale = float(reset_noise_scale)
        self._tip = self.model.name2id("site", "tip")

    def observation(self, data: hp.Data) -> jax.Array:
        angles = data.qpos[1:]
        return jnp.concatenate(
            [
                data.qpos[:1],
                jnp.sin(angles),
                jnp.cos(angles),
                jnp.clip(data.qvel, -10.0, 10.0),
                jnp.clip(data.qfrc_constraint[:1], -10.0, 10.0),
            ]
        )

    def terminated(self, data: hp.Data) -> jax.Array:
        return data.site_xpos[self._tip, 2] <= 1.0

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        x, y = after.site_xpos[self._tip, 0], after.site_xpos[self._tip, 2]
        v1, v2 = after.qvel[1], after.qvel[2]
        return {
            "survive": common.healthy_reward(~self.terminated(after), self.healthy_reward, self.dtype),
            "distance_penalty": -(0.01 * x**2 + (y - 2.0) ** 2),
            "velocity_penalty": -(1e-3 * v1**2 + 5e-3 * v2**2),
        }

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return common.noisy_reset(self, key, self.reset_noise_scale, qvel_noise="normal")
