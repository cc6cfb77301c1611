"""Franka's Panda picking up a cube and carrying it to a target in the air, MuJoCo Playground's `PandaPickCube`, on
Playground's own scene file with Menagerie's Panda (the `robots` extra).

Semantics are Playground's (mujoco_playground/_src/manipulation/franka_emika_panda/pick.py, as EnvPool 1.2.5
reimplements it in C++), reimplemented here:
- 50 Hz control (4 physics steps of 5 ms, implicit-fast, 5 solver iterations: the scene file's); the action moves
  the eight servos' targets (seven arm joints, the gripper) by 0.04 per unit from where they were, clipped to their
  control ranges;
- reset: the arm at its home pose with its servos there, the cube at (0.7, 0, 0.03) moved by U(-0.2, 0.2) in x and
  y, the target (the mocap body `mocap_target`) at the cube's home moved by U(-0.2, 0.2) in x and y and raised by
  U(0.2, 0.4), upright;
- the observation (66): joint positions and velocities (the cube's free joint included), the gripper's position and
  the last two rows of its frame, the cube's, the cube from the gripper, the target from the cube, the first two
  rows' difference of the target's frame and the cube's, and the servos' targets less the joints;
- four reward terms with Playground's scales: the gripper near the cube (4), the cube near the target once the
  gripper has reached it (8; "reached" within 12 mm, kept for the episode), no finger pad or the hand on the floor
  (0.25, read from MuJoCo 4's contact sensors), the arm near its home pose (0.3); their sum, not times the control
  period, clipped to +-1e4; the episode ends when the cube leaves the 1 m box around the origin or falls through the
  floor; 150 steps at most (3 s).
- success (`metrics["success"]`): the cube within 2 cm of the target, the measure the pick is judged by (Playground
  logs none).

Where the two references differ, hurtle follows EnvPool's, the one that is a well-defined task: the reset
observation is of the forwarded state (Playground's is built from un-forwarded data, its positions zero) and
"reached" starts each episode unset (Playground's training wrapper carries it over an automatic reset). Playground
logs each term unscaled; hurtle's `reward/<term>` is scaled, as for every other task.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import State
from hurtle.envs.robots.playground import PlaygroundTask
from hurtle.physics import math as hmath

SCENE = "manipulation/franka_emika_panda/xmls/mjx_single_cube.xml"
SCALES = {"gripper_box": 4.0, "box_target": 8.0, "no_floor_collision": 0.25, "robot_target_qpos": 0.3}
ARM = tuple(f"joint{i}" for i in range(1, 8))
FLOOR_SENSORS = ("left_finger_pad_floor_found", "right_finger_pad_floor_found", "hand_capsule_floor_found")


class PandaPickCube(PlaygroundTask):
    """The Panda lifting a cube to a target.

    scales: reward scales replacing Playground's (a dict of some of SCALES' names).
    success_radius: the distance from the target within which the cube counts as placed (2 cm).
    """

    n_frames = 4
    SCALES = SCALES
    ACTION_SCALE = 0.04
    REACHED, BOUND = 0.012, 1.0
    BOX_RANGE, TARGET_RANGE = 0.2, ((-0.2, -0.2, 0.2), (0.2, 0.2, 0.4))

    def __init__(self, scales: dict | None = None, success_radius: float = 0.02):
        self.success_radius = float(success_radius)
        super().__init__(SCENE, scales)
        m = self.mj
        key = m.keyframe("home")
        self.home_qpos = np.asarray(key.qpos, np.float64)
        self.home_ctrl = np.asarray(key.ctrl, np.float64)
        self.arm = np.array([m.joint(j).qposadr[0] for j in ARM])
        self.robot = np.array([*self.arm, m.joint("finger_joint1").qposadr[0]])  # the servos' joints, in order
        self.box_body = m.body("box").id
        self.box_qpos = m.joint(m.body("box").jntadr[0]).qposadr[0]
        self.target = m.body("mocap_target").mocapid[0]
        self.gripper = m.site("gripper").id

    # -- reset --

    def reset_state(self, key: jax.Array):
        qpos = jnp.asarray(self.home_qpos, self.dtype)
        xy = jax.random.uniform(jax.random.fold_in(key, 0), (2,), self.dtype, -self.BOX_RANGE, self.BOX_RANGE)
        qpos = qpos.at[self.box_qpos : self.box_qpos + 2].add(xy)
        return qpos, jnp.zeros(self.model.nv, self.dtype), jnp.asarray(self.home_ctrl, self.dtype)

    def begin(self, state: State, key: jax.Array) -> State:
        """The target placed (the mocap body's pose: both engines keep it there) and "reached" unset."""
        low, high = (jnp.asarray(b, self.dtype) for b in self.TARGET_RANGE)
        home = jnp.asarray(self.home_qpos[self.box_qpos : self.box_qpos + 3], self.dtype)
        target = home + jax.random.uniform(jax.random.fold_in(key, 1), (3,), self.dtype, low, high)
        d = state.physics
        d = d.replace(
            mocap_pos=d.mocap_pos.at[self.target].set(target),
            mocap_quat=d.mocap_quat.at[self.target].set(jnp.array([1.0, 0.0, 0.0, 0.0], self.dtype)),
        )
        zero = jnp.zeros((), self.dtype)
        return state.replace(
            physics=d,
            obs=self.observation(d),
            info={**state.info, "reached_box": zero},
            metrics={**state.metrics, "success": zero, "out_of_bounds": zero},
        )

    # -- what the task reads --

    def _frames(self, d: hp.Data):
        box, gripper = d.xpos[self.box_body], d.site_xpos[self.gripper]
        box_mat = d.xmat[self.box_body].reshape(9)
        target = d.mocap_pos[self.target]
        target_mat = hmath.quat_to_mat(d.mocap_quat[self.target]).reshape(9)
        return box, gripper, box_mat, target, target_mat

    def observation(self, data: hp.Data) -> jax.Array:
        box, gripper, box_mat, target, target_mat = self._frames(data)
        return jnp.concatenate(
            [
                data.qpos,
                data.qvel,
                gripper,
                data.site_xmat[self.gripper].reshape(9)[3:],
                box_mat[3:],
                box - gripper,
                target - box,
                target_mat[:6] - box_mat[:6],
                data.ctrl - data.qpos[self.robot],
            ]
        ).astype(self.dtype)

    def terminated(self, data: hp.Data) -> jax.Array:
        box = data.xpos[self.box_body]
        return (jnp.abs(box) > self.BOUND).any() | (box[2] < 0.0)

    # -- a step --

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        box, gripper, box_mat, target, target_mat = self._frames(after)
        dt = after.qpos.dtype
        to_target = jnp.linalg.norm(target - box)
        turn = jnp.linalg.norm(target_mat[:6] - box_mat[:6])
        to_gripper = jnp.linalg.norm(box - gripper)
        reached = jnp.maximum(state.info["reached_box"], (to_gripper < self.REACHED).astype(dt))
        floor = jnp.concatenate([self.sensor(after, s) for s in FLOOR_SENSORS])
        arm = after.qpos[self.arm] - jnp.asarray(self.home_qpos[self.arm], dt)
        terms = {
            "gripper_box": 1.0 - jnp.tanh(5.0 * to_gripper),
            "box_target": (1.0 - jnp.tanh(5.0 * (0.9 * to_target + 0.1 * turn))) * reached,
            "no_floor_collision": 1.0 - (floor > 0).any().astype(dt),
            "robot_target_qpos": 1.0 - jnp.tanh(jnp.linalg.norm(arm)),
        }
        scaled = {k: (v * self.scales[k]).astype(dt) for k, v in terms.items()}
        out = self.terminated(after)
        nan = jnp.isnan(after.qpos).any() | jnp.isnan(after.qvel).any()
        return state.replace(
            physics=after,
            obs=self.observation(after),
            reward=jnp.clip(sum(scaled.values()), -1e4, 1e4).astype(self.dtype),
            done=out | nan,
            truncation=jnp.zeros((), bool),
            info={**state.info, "reached_box": reached},
            metrics={
                **state.metrics,
                **{f"reward/{k}": v for k, v in scaled.items()},
                "success": (to_target < self.success_radius).astype(dt),
                "out_of_bounds": out.astype(dt),
            },
        )
