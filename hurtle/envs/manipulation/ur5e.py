"""The UR5e arm's tasks on hurtle's physics (assets/ur5e.xml: the UR5e's DH kinematics, datasheet masses, position
servos with its joint sizes' stiffness and torque limits, link capsules and a table).

`UR5eReach` (`ur5e_reach`): bring the tool tip (site "tool", 7.5 cm beyond the flange) to a target anywhere in
the arm's workspace; within 2 cm the target jumps to a new random place, and so it does, counted as missed, when
2 s pass without (`hurtle.envs.targets`).

Action (6, in [-1, 1]): velocity commands as industrial arms take them, integrated into the servos' targets: each
step moves each joint's servo target by `0.1 * action` rad (2.5 rad/s at full command), kept within 0.25 rad of
the joint's angle (no wind-up against the table), at 25 Hz (20 physics steps of 2 ms, implicitfast). Observation
(30): joint angles minus home (6), joint velocities x 0.1 (6), servo targets minus joint angles (6), the tool tip's
position (3), the target's (3), target minus tool (3) and tanh(target minus tool / 5 cm) (3: the last centimetres
resolved), in the base's frame (world, the base at the origin).

Reward terms: `progress`, 10 x how much closer the tool came to the target over the step (m; potential-based, so
a target's jump costs nothing); `motion`, minus 1e-3 |qvel|^2; `hit`, 10 on a step that reaches the target. Reset:
home (shoulder -90, elbow 90, wrists -90 and -90 degrees, the tool pointing down) plus U(-0.3, 0.3) rad per joint,
at rest, servo targets on the joints; the first target sampled as every later one: uniform over a cylindrical
shell around the base (0.3-0.75 m from its axis, any direction, 0.1-0.6 m above the table) and within 0.8 m of
the shoulder. No termination; the time limit is 250 steps (10 s).

Success measure: the share of targets reached within 2 cm in their 2 s (`targets/success`, from
`targets/reached` and `targets/missed` per episode); `targets/time` is the time each took.

`UR5ePush` (`ur5e_push`, assets/ur5e_push.xml): push a 5 cm cube (0.2 kg, friction 0.6 with the table) with the tool
to a 5 cm disc marked on the table; when the cube's centre is within 5 cm of the disc's, the disc moves to a new
place 10-30 cm from the cube (in 5 s without, it moves too, counted as missed). Same action and rate as the reach
task, from the pose with the tool tip 3.5 cm above the table plus U(-0.05, 0.05) rad per joint. Observation (39):
the arm's 18 as above, the tool tip (3), the cube's position (3) and velocity x 0.1 (3), the target (3), cube minus
tool (3), target minus cube (3) and its tanh at 5 cm (3). Reward terms: `approach`, 10 x how much closer the tool
came to the push point 6 cm behind the cube on the line from the target through it (potential-based); `progress`, 20
x how much closer the cube came to the target (m); `hit`, 10 when the cube reaches it; `motion` as above. Reset: the
cube uniform over the push area (x -0.7..-0.35, y -0.35..0.1 m, in front of the arm, 12 cm or more from the tool
tip's start), any yaw, the target 10-30 cm from it inside the area (from a cube pushed out of the area, 10-30 cm
towards it); the episode ends when the cube leaves the arm's reach (1 m from the base's axis), else after 250 steps
(10 s). Success measure: the share of targets the cube reached within 5 cm in their 5 s (`targets/success`).
"""

from __future__ import annotations

import os
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box
from hurtle.envs.manipulation.commands import fine, integrate
from hurtle.envs.manipulation.sampling import rejection_sample
from hurtle.envs.targets import TargetTask

HOME = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
SHOULDER = np.array([0.0, 0.0, 0.1625])


def sample_workspace(key: jax.Array, dtype) -> jax.Array:
    """A point uniform over the shell around the base (0.3-0.75 m from its axis, 0.1-0.6 m up) within 0.8 m of
    the shoulder."""

    def draw(k):
        kr, kp, kz = jax.random.split(k, 3)
        r = jnp.sqrt(jax.random.uniform(kr, (), dtype, 0.3**2, 0.75**2))  # uniform over the annulus' area
        phi = jax.random.uniform(kp, (), dtype, -jnp.pi, jnp.pi)
        z = jax.random.uniform(kz, (), dtype, 0.1, 0.6)
        return jnp.stack([r * jnp.cos(phi), r * jnp.sin(phi), z])

    return rejection_sample(key, draw, lambda p: jnp.linalg.norm(p - jnp.asarray(SHOULDER, dtype)) < 0.8)


PUSH_HOME = np.array([0.0, -1.175, 2.25, -2.6458, -np.pi / 2, 0.0])  # the tool tip 3.5 cm above the table
PUSH_AREA = np.array([[-0.7, -0.35], [-0.35, 0.1]])  # x and y ranges (m) of the cube's and the targets' places
PUSH_TOOL = np.array([-0.45, -0.1333])  # where the tool tip starts (x, y) at PUSH_HOME; the cube starts 12 cm away


class UR5eTask(TargetTask):
    """What the UR5e's tasks share: velocity commands integrated into the servo targets, the arm's observation
    and motion cost, a start near `home` at rest (see the module's docstring)."""

    n_frames = 20
    home: ClassVar[np.ndarray] = HOME
    joint_step = 0.1  # rad per control step at full command
    lead = 0.25  # rad: the most a servo's target may lead its joint
    reset_spread = 0.3  # rad: the start pose's spread about home

    def __init__(self, xml: str | os.PathLike | None = None, motion_cost_weight: float = 1e-3):
        super().__init__(xml)
        self.motion_cost_weight = float(motion_cost_weight)
        self._tool = self.model.name2id("site", "tool")
        self._home = jnp.asarray(self.home, self.dtype)
        self._action_space = Box(-np.ones(6), np.ones(6), (6,), self.dtype)

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        return integrate(data.ctrl, data.qpos[:6], action, self.joint_step, self.lead)

    def start_ctrl(self, qpos: jax.Array) -> jax.Array:
        return qpos[:6]  # the servos hold the start pose

    def tool(self, data: hp.Data) -> jax.Array:
        return data.site_xpos[self._tool]

    def arm_observation(self, data: hp.Data) -> jax.Array:
        """Joint angles minus home, joint velocities x 0.1, servo targets minus joint angles (18)."""
        q = data.qpos[:6]
        return jnp.concatenate([q - self._home, 0.1 * data.qvel[:6], data.ctrl - q])

    def motion_cost(self, data: hp.Data) -> jax.Array:
        return -self.motion_cost_weight * jnp.sum(data.qvel[:6] * data.qvel[:6])

    def arm_start(self, key: jax.Array) -> jax.Array:
        return self._home + jax.random.uniform(key, (6,), self.dtype, -self.reset_spread, self.reset_spread)


class UR5eReach(UR5eTask):
    """Reach targets anywhere in the UR5e's workspace with the tool tip (see the module's docstring)."""

    xml_path = "assets/ur5e_reach.xml"
    hit_radius = 0.02
    hit_bonus = 10.0
    target_timeout = 2.0

    def __init__(
        self, xml: str | os.PathLike | None = None, progress_weight: float = 10.0, motion_cost_weight: float = 1e-3
    ):
        super().__init__(xml, motion_cost_weight)
        self.progress_weight = float(progress_weight)

    def effector(self, data: hp.Data) -> jax.Array:
        return self.tool(data)

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        return sample_workspace(key, self.dtype)

    def observation(self, data: hp.Data) -> jax.Array:
        tool, target = self.tool(data), self.target(data)
        return jnp.concatenate([self.arm_observation(data), tool, target, target - tool, fine(target - tool)])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return {"progress": self.progress_weight * self.progress(before, after), "motion": self.motion_cost(after)}

    def terminated(self, data: hp.Data) -> jax.Array:
        return jnp.zeros((), bool)

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self.arm_start(key), jnp.zeros(6, self.dtype)


def sample_push_area(key: jax.Array, dtype) -> jax.Array:
    """A point (x, y) uniform over the push area."""
    lo, hi = jnp.asarray(PUSH_AREA[:, 0], dtype), jnp.asarray(PUSH_AREA[:, 1], dtype)
    return jax.random.uniform(key, (2,), dtype, lo, hi)


def sample_push_target(key: jax.Array, cube_xy: jax.Array, dtype) -> jax.Array:
    """A target (x, y) 10-30 cm from the cube, towards a random point of the push area (the point itself where it
    is that far); among up to 16 such draws the first inside the area, so a cube pushed out of it still gets a
    target (the last draw) and the sampler always ends."""

    def draw(k):
        p = sample_push_area(k, dtype)
        offset = p - cube_xy
        dist = jnp.linalg.norm(offset)
        return cube_xy + offset * (jnp.clip(dist, 0.1, 0.3) / jnp.maximum(dist, 1e-6))

    lo, hi = jnp.asarray(PUSH_AREA[:, 0], dtype), jnp.asarray(PUSH_AREA[:, 1], dtype)
    return rejection_sample(key, draw, lambda p: jnp.all((p >= lo) & (p <= hi)), max_draws=16)


class UR5ePush(UR5eTask):
    """Push a cube to targets on the table with the UR5e's tool (see the module's docstring)."""

    xml_path = "assets/ur5e_push.xml"
    home = PUSH_HOME
    reset_spread = 0.05
    hit_radius = 0.05
    hit_bonus = 10.0
    target_timeout = 5.0
    cube_half = 0.025
    push_offset = 0.06  # m behind the cube's centre, away from the target

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        approach_weight: float = 10.0,
        progress_weight: float = 20.0,
        motion_cost_weight: float = 1e-3,
    ):
        super().__init__(xml, motion_cost_weight)
        self.approach_weight = float(approach_weight)
        self.progress_weight = float(progress_weight)
        self._cube = self.model.name2id("body", "cube")
        self._cube_q = int(self.model.jnt_qposadr[self.model.body_jntadr[self._cube]])
        self._cube_v = int(self.model.jnt_dofadr[self.model.body_jntadr[self._cube]])

    def cube(self, data: hp.Data) -> jax.Array:
        return data.xpos[self._cube]

    def effector(self, data: hp.Data) -> jax.Array:
        return self.cube(data)

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        xy = sample_push_target(key, self.cube(data)[:2], self.dtype)
        return jnp.concatenate([xy, jnp.full((1,), self.cube_half, self.dtype)])  # on the table, level with the cube

    def push_point(self, data: hp.Data, target: jax.Array) -> jax.Array:
        """Where the tool should be to push the cube towards `target`: behind the cube on the line through it."""
        cube = self.cube(data)
        away = (cube - target).at[2].set(0.0)
        away = away / jnp.maximum(jnp.linalg.norm(away), 1e-6)
        return cube + self.push_offset * away

    def observation(self, data: hp.Data) -> jax.Array:
        tool, cube, target = self.tool(data), self.cube(data), self.target(data)
        vel = 0.1 * data.qvel[self._cube_v : self._cube_v + 3]
        return jnp.concatenate(
            [self.arm_observation(data), tool, cube, vel, target, cube - tool, target - cube, fine(target - cube)]
        )

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        target = self.target(before)
        gap = lambda d: jnp.linalg.norm(self.push_point(d, target) - self.tool(d))  # noqa: E731
        return {
            "approach": self.approach_weight * (gap(before) - gap(after)),
            "progress": self.progress_weight * self.progress(before, after),
            "motion": self.motion_cost(after),
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        return jnp.linalg.norm(self.cube(data)[:2]) > 1.0  # out of the arm's reach

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        k_arm, k_cube, k_yaw = jax.random.split(key, 3)
        yaw = jax.random.uniform(k_yaw, (), self.dtype, -jnp.pi, jnp.pi)
        cube = jnp.concatenate(
            [
                rejection_sample(
                    k_cube,
                    lambda k: sample_push_area(k, self.dtype),
                    lambda p: jnp.linalg.norm(p - jnp.asarray(PUSH_TOOL, self.dtype)) > 0.12,
                ),
                jnp.full((1,), self.cube_half, self.dtype),
                jnp.stack([jnp.cos(yaw / 2), jnp.zeros_like(yaw), jnp.zeros_like(yaw), jnp.sin(yaw / 2)]),
            ]
        )
        return jnp.concatenate([self.arm_start(k_arm), cube]), jnp.zeros(self.model.nv, self.dtype)
