"""`fetch`: a quadruped runs to targets placed anywhere around it (assets/quadruped.xml, hurtle's own 12-joint,
13 kg quadruped); each target reached gives way to a new one (`hurtle.envs.targets`).

Action (12, in [-1, 1]): each joint servo's target, `stand + 0.5 * action` rad about the standing pose (hip 0.9,
knee -1.8, abduction 0), clamped to the joint's range by the servo, at 50 Hz (5 physics steps of 4 ms).

Observation (53), egocentric (in the torso's frame): the target's direction (2: x, y of the unit vector) and
distance / 10 (1); gravity's direction (3); the torso's height (1); its linear velocity (3) and angular velocity
x 0.25 (3); joint angles minus the standing pose (12) and joint velocities x 0.1 (12); the last action (12); which
feet touch the floor (4: from the engine's contacts, 1 where a foot's sphere has an active contact).

Reward terms: `velocity`, the torso's horizontal velocity towards the target (m/s, capped at 2); `upright`, 0.5 x
the torso's up axis along the world's z (1 upright, 0 on its side); `hit`, 10 when the torso comes within 0.5 m
(horizontally) of the target; `ctrl`, minus 0.01 |action|^2. Terminated when it falls: the torso under 0.15 m or
tilted more than 70 degrees from upright. Reset: the standing pose plus U(-0.1, 0.1) rad per joint at rest, any
heading, at the origin; targets 2-15 m from the torso in any direction (the first and each new one). Time limit
1,000 steps (20 s).

Success measure: targets reached per episode (`targets/reached`); with targets 8.5 m away on average a quadruped
running at 1 m/s reaches about two in its 20 s.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box
from hurtle.envs.physics_env import touching
from hurtle.envs.targets import TargetTask

STAND = np.array([0.0, 0.9, -1.8] * 4)
FEET = ("fr_foot", "fl_foot", "rr_foot", "rl_foot")


def sample_around(key: jax.Array, centre: jax.Array, near: float, far: float, dtype) -> jax.Array:
    """A point on the floor (z = 0) uniform over the annulus `near`-`far` m around `centre` (x, y)."""
    k_r, k_phi = jax.random.split(key)
    r = jnp.sqrt(jax.random.uniform(k_r, (), dtype, near**2, far**2))
    phi = jax.random.uniform(k_phi, (), dtype, -jnp.pi, jnp.pi)
    return jnp.stack([centre[0] + r * jnp.cos(phi), centre[1] + r * jnp.sin(phi), jnp.zeros((), dtype)])


class Fetch(TargetTask):
    """Run to targets anywhere around (see the module's docstring)."""

    xml_path = "assets/quadruped.xml"
    n_frames = 5
    hit_radius = 0.5
    hit_bonus = 10.0
    action_scale = 0.5
    max_speed = 2.0
    near, far = 2.0, 15.0

    def __init__(
        self, xml: str | os.PathLike | None = None, upright_weight: float = 0.5, ctrl_cost_weight: float = 0.01
    ):
        super().__init__(xml)
        self.upright_weight = float(upright_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        m = self.model
        self._torso = m.name2id("body", "torso")
        self._feet = jnp.asarray([m.name2id("geom", f) for f in FEET], jnp.int32)
        self._stand = jnp.asarray(STAND, self.dtype)
        self._action_space = Box(-np.ones(12), np.ones(12), (12,), self.dtype)

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        return self._stand + self.action_scale * action

    # -- the target: the torso's place on the floor --

    def effector(self, data: hp.Data) -> jax.Array:
        return data.xpos[self._torso].at[2].set(0.0)

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        return sample_around(key, data.xpos[self._torso], self.near, self.far, self.dtype)

    # -- what the task reads --

    def frame(self, data: hp.Data) -> jax.Array:
        return data.xmat[self._torso].reshape(3, 3)

    def foot_contacts(self, data: hp.Data) -> jax.Array:
        """1 for each foot (FEET) with an active contact, else 0."""
        return touching(data, self._feet).astype(self.dtype)

    def observation(self, data: hp.Data) -> jax.Array:
        rot = self.frame(data)
        to = rot.T @ self.to_target(data)
        dist = jnp.linalg.norm(to[:2])
        heading = to[:2] / jnp.maximum(dist, 1e-6)
        gravity = -rot[2]  # the world's -z in the torso's frame: rot.T @ (0, 0, -1)
        linvel = rot.T @ data.qvel[:3]  # the free joint's linear velocity is the world's, its angular the body's
        return jnp.concatenate(
            [
                heading,
                (dist / 10.0)[None],
                gravity,
                data.qpos[2:3],
                linvel,
                0.25 * data.qvel[3:6],
                data.qpos[7:] - self._stand,
                0.1 * data.qvel[6:],
                (data.ctrl - self._stand) / self.action_scale,
                self.foot_contacts(data),
            ]
        )

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        to = self.target(before) - self.effector(before)
        direction = to / jnp.maximum(jnp.linalg.norm(to), 1e-6)
        velocity = (self.effector(after) - self.effector(before)) / self.dt
        return {
            "velocity": jnp.minimum(jnp.dot(velocity, direction), self.max_speed),
            "upright": self.upright_weight * self.frame(after)[2, 2],
            "ctrl": -self.ctrl_cost_weight * jnp.sum(action * action),
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        fallen = (data.qpos[2] < 0.15) | (self.frame(data)[2, 2] < np.cos(np.deg2rad(70)))
        return fallen | ~jnp.all(jnp.isfinite(data.qpos))

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        k_yaw, k_joints = jax.random.split(key)
        yaw = jax.random.uniform(k_yaw, (), self.dtype, -jnp.pi, jnp.pi)
        zero = jnp.zeros((), self.dtype)
        root = jnp.stack([zero, zero, jnp.full((), 0.27, self.dtype), jnp.cos(yaw / 2), zero, zero, jnp.sin(yaw / 2)])
        joints = self._stand + jax.random.uniform(k_joints, (12,), self.dtype, -0.1, 0.1)
        return jnp.concatenate([root, joints]), jnp.zeros(self.model.nv, self.dtype)

    def start_ctrl(self, qpos: jax.Array) -> jax.Array:
        return qpos[7:]  # the servos hold the pose
