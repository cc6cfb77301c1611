"""InvertedPendulum-v5 on hurtle's physics: keep a pole upright on a cart by pushing the cart.

Model: `assets/inverted_pendulum.xml` (Gymnasium's `inverted_pendulum.xml`): a cart sliding on a rail
(`slider`, |x| <= 1 m) carrying a pole on a hinge (`hinge`); one motor on the cart, `ctrl` in [-3, 3]
(gear 100). RK4 with a 0.02 s timestep, frame_skip 2: a step is 0.04 s.

Observation (4): `[cart x, pole angle, cart velocity, pole angular velocity]` (`qpos`, `qvel`).
Reward: `survive`, 1 on every step that does not terminate, else 0. For gradient learners (`gradient_reward`):
the survive reward times 1 - (angle / 0.2)^2 - 0.1 x^2, highest upright over the rail's centre, whose derivative
steers the pole (and keeps the cart off the rail's ends) where the survive reward's is zero.
Termination: the pole's angle leaves [-0.2, 0.2] rad, or the observation is not finite.
Reset: `qpos0` and zero velocity, each plus U(-reset_noise_scale, reset_noise_scale) noise.
Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.locomotion import common


class InvertedPendulum(common.GymnasiumTask):
    """Gymnasium's InvertedPendulum-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "InvertedPendulum-v5"

    xml_path = "assets/inverted_pendulum.xml"

    def __init__(self, xml: str | os.PathLike | None = None, frame_skip: int = 2, reset_noise_scale: float = 0.01):
        super().__init__(xml, frame_skip)
        self.reset_noise_scale = float(reset_noise_scale)

    def observation(self, data: hp.Data) -> jax.Array:
        return jnp.concatenate([data.qpos, data.qvel])

    def terminated(self, data: hp.Data) -> jax.Array:
        obs = self.observation(data)
        return ~jnp.all(jnp.isfinite(obs)) | (jnp.abs(obs[1]) > 0.2)

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return {"survive": common.healthy_reward(~self.terminated(after), 1.0, self.dtype)}

    def gradient_reward(self, before: hp.Data, after: hp.Data, action: jax.Array) -> jax.Array:
        alive = self.reward_terms(before, after, action)["survive"]
        return alive * (1.0 - jnp.square(after.qpos[1] / 0.2) - 0.1 * jnp.square(after.qpos[0]))

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return common.noisy_reset(self, key, self.reset_noise_scale, qvel_noise="uniform")
