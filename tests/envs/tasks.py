"""A small MJCF task for the environment tests: reach a fixed point with a two-link arm."""

import jax
import jax.numpy as jnp

from hurtle.envs import PhysicsEnv

TARGET = (0.1, 0.1)


class Reacher(PhysicsEnv):
    """Move the fingertip to `TARGET`; the episode ends within 2 cm of it."""

    xml_path = "reacher.xml"
    n_frames = 2

    def reset_state(self, key):
        kq, kv = jax.random.split(key)
        qpos = jax.random.uniform(kq, (self.model.nq,), self.dtype, -0.1, 0.1)
        qvel = jax.random.uniform(kv, (self.model.nv,), self.dtype, -0.005, 0.005)
        return qpos, qvel

    def tip_to_target(self, data):
        return data.site_xpos[0, :2] - jnp.asarray(TARGET, self.dtype)

    def observation(self, data):
        return jnp.concatenate([jnp.cos(data.qpos), jnp.sin(data.qpos), data.qvel, self.tip_to_target(data)])

    def reward_terms(self, before, after, action):
        return {"distance": -jnp.linalg.norm(self.tip_to_target(after)), "control": -0.1 * jnp.sum(action**2)}

    def terminated(self, data):
        return jnp.linalg.norm(self.tip_to_target(data)) < 0.02
