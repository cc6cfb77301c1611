"""The LEAP hand turning a cube to goal orientations, MuJoCo Playground's `LeapCubeReorient`, on Playground's own scene
file with the LEAP hand it includes (the `robots` extra).

Semantics are Playground's (mujoco_playground/_src/manipulation/leap_hand/reorient.py, as EnvPool 1.2.5 reimplements
it in C++), reimplemented here:
- 20 Hz control (5 physics steps of 10 ms, Euler without implicit damping, 5 solver iterations: the model file's;
  GJK/EPA at 10 iterations, set in code as Playground does; one constraint solve for the whole scene, as MJX
  and MuJoCo Warp do, MuJoCo C's islands turned off); the action moves the sixteen position servos' targets
  by 0.5 rad per unit from where they were, clipped to their control ranges;
- reset: the goal (the mocap body `goal`) turned uniformly at random; the fingers at the home pose plus N(0, 0.1)
  rad each (clipped, the servos aimed there); the cube at (0.1, 0, 0.05) moved by U(-0.01, 0.01) per axis, turned
  uniformly at random, still;
- `state` (57): noisy joint angles (U(-0.05, 0.05)), those less the servos' targets, the palm less the noisy cube
  position (U(-0.02, 0.02)), the last two rows of the rotation from the goal to the noisy cube (its quaternion
  plus N(0, 0.1) per component, renormalised), the previous action; `privileged_state` (128): `state`, the joints
  and their velocities, the fingertips from the palm (thumb, index, middle, ring), the noiseless cube offset and
  rotation rows, the cube's velocities, a perturbation's direction and force (zero: perturbations are off, as
  Playground's default);
- seven reward terms with Playground's scales (orientation within 0.2 rad, position within 2 cm, both with linear
  margins; termination; the pose's squared distance from home; the action's first and second differences; joint
  velocities, scale 0; energy), summed times the control period, plus 100 at each success (the cube within 0.1 rad
  of the goal); at a success the goal starts turning at 3 + U(-2, 2) rad/s about each of its axes, slowing by 0.8
  per step (it moves 2 control periods' worth per step), so a new goal is a smooth turn away from the reached one;
- the episode ends when the cube falls below z = -0.05; 1,000 steps at most (50 s).
- `metrics["goals_reached"]`: the goals reached so far in the episode, the task's measure (an evaluation logs each
  episode's last value: its goals reached); `reward/success` is 100 at each.

Where the two references differ, hurtle follows EnvPool's: the reset observation is of the forwarded state
(Playground's is built from zeroed sensors). Playground's domain randomisation of this task is not here yet: written,
its randomised models stepped apart on the two engines (benchmarks/NOTES.md §55), so it was left out.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box, State
from hurtle.envs.robots.playground import PlaygroundTask
from hurtle.physics import math as hmath

SCENE = "manipulation/leap_hand/xmls/scene_mjx_cube.xml"
JOINTS = tuple(f"{f}_{j}" for f in ("if", "mf", "rf") for j in ("mcp", "rot", "pip", "dip")) + tuple(
    f"th_{j}" for j in ("cmc", "axl", "mcp", "ipl")
)
TIPS = ("th", "if", "mf", "rf")
SCALES = {
    "orientation": 5.0,
    "position": 0.5,
    "termination": -100.0,
    "hand_pose": -0.5,
    "action_rate": -0.001,
    "joint_vel": 0.0,
    "energy": -0.001,
    "success": 100.0,  # added to the reward as is, not times the control period
}
NOISE = {"joint_pos": 0.05, "cube_pos": 0.02, "cube_ori": 0.1}


def uniform_quat(key: jax.Array, dtype) -> jax.Array:
    """A rotation uniformly at random (Shoemake's: three uniforms u, v, w)."""
    u, v, w = jax.random.uniform(key, (3,), dtype)
    a, b = jnp.sqrt(1.0 - u), jnp.sqrt(u)
    q = jnp.stack([a * jnp.sin(2 * jnp.pi * v), a * jnp.cos(2 * jnp.pi * v), b * jnp.sin(2 * jnp.pi * w),
                   b * jnp.cos(2 * jnp.pi * w)])  # fmt: skip
    return hmath.quat_normalize(q)


def tolerance_linear(x: jax.Array, upper: float, margin: float) -> jax.Array:
    """1 for x in [0, upper], falling linearly to 0.1 at `margin` past it and to 0 beyond (dm_control's
    `tolerance` with a linear sigmoid, value 0.1 at the margin; x is a distance, never below 0)."""
    d = jnp.maximum(x - upper, 0.0) / margin * 0.9
    return jnp.where(d < 1.0, 1.0 - d, 0.0)


def rotation_from_goal(cube: jax.Array, goal: jax.Array) -> jax.Array:
    """The unit quaternion cube * goal^-1."""
    return hmath.quat_normalize(hmath.quat_mul(cube, hmath.quat_conj(goal)))


def orientation_error(cube: jax.Array, goal: jax.Array) -> jax.Array:
    """The angle in radians between the cube's orientation and the goal's."""
    return 2.0 * jnp.arcsin(jnp.minimum(jnp.linalg.norm(rotation_from_goal(cube, goal)[1:]), 1.0))


class LeapCubeReorient(PlaygroundTask):
    """The LEAP hand turning a cube to a goal orientation, and to the next.

    noise: the observation noise's level (1: Playground's; 0: none, as for comparing engines).
    scales: reward scales replacing Playground's (a dict of some of SCALES' names).
    """

    n_frames = 5
    SCALES = SCALES
    ACTION_SCALE, SUCCESS, FALL = 0.5, 0.1, -0.05
    CUBE_START, CUBE_RANGE = (0.1, 0.0, 0.05), 0.01

    def __init__(self, noise: float = 1.0, scales: dict | None = None):
        self.noise = float(noise)
        super().__init__(SCENE, scales)
        m = self.mj
        key = m.keyframe("home")
        self.hand_qpos = np.array([m.joint(j).qposadr[0] for j in JOINTS])
        self.hand_dof = np.array([m.joint(j).dofadr[0] for j in JOINTS])
        self.cube_qpos = m.joint("cube_freejoint").qposadr[0]
        self.cube_body = m.body("cube").id
        self.goal = m.body("goal").mocapid[0]
        self.home_qpos = np.asarray(key.qpos, np.float64)
        self.default_pose = self.home_qpos[self.hand_qpos]
        self.home_mpos = np.asarray(key.mpos, np.float64).reshape(-1, 3)
        self._privileged_space = Box(-np.inf, np.inf, (128,), self.dtype)

    @property
    def privileged_observation_space(self) -> Box:
        return self._privileged_space

    # Playground's cap on the scene's contacts (the file's `max_contact_points`, which MJX sizes its contact arrays
    # by): the hand's 61 geoms make 2,788 candidate contacts, of which a handful touch; hurtle keeps the first 30
    # touching ones (`PhysicsEnv.with_contact_cap`; any dropped are counted in metrics["ncon_dropped"])
    MAX_CONTACTS = 30

    def _load(self, nconmax: int | None = None) -> hp.Model:
        return super()._load(nconmax=self.MAX_CONTACTS if nconmax is None else nconmax)

    def edit_model(self, m: mujoco.MjModel) -> None:
        m.opt.ccd_iterations = 10  # Playground's leap_hand/base.py
        # one constraint solve for the whole scene, as Playground's engines (MJX, MuJoCo Warp) and hurtle's do:
        # MuJoCo C's per-island solve stops elsewhere under the scene's 5-iteration cap (docs/architecture.md)
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND

    def randomize(self, model: hp.Model, key: jax.Array) -> hp.Model:
        """One randomised variant of the task's model, as Playground's LEAP randomisation makes it
        (`leap_hand/reorient.py`, `domain_randomize`): the fingertips' sliding friction U(0.5, 1) (one draw for the
        four), the cube's inertia times U(0.8, 1.2) and its centre of mass moved by U(-5, 5) mm per axis, the
        fingers' reference positions offset by U(-0.05, 0.05) rad, their friction loss times U(0.5, 2), armature
        times U(1, 1.05) and damping times U(0.8, 1.2), the hand's link masses times U(0.9, 1.1), the servos' gains
        times U(0.8, 1.2) (bias with them). Derived constants are not recomputed (nor are they in Playground; on MuJoCo C,
        `MujocoEnv` writes the cube's variant mass-matrix constant `dof_M0`, which MuJoCo reads for a free body)."""
        k = jax.random.split(key, 10)
        dt = model.body_mass.dtype
        dof, nu = jnp.asarray(self.hand_dof), self.model.nu

        def u(k, shape, lo, hi):
            return jax.random.uniform(k, shape, dt, lo, hi)

        tips = np.array([self.mj.geom(f"{t}_tip").id for t in TIPS])
        links = np.array([b for b in range(1, self.mj.nbody) if b not in (self.cube_body, self.mj.body("goal").id)])
        gain = u(k[0], (nu,), 0.8, 1.2)
        kp = model.actuator_gainprm[:, 0] * gain
        return model.replace(
            geom_friction=model.geom_friction.at[tips, 0].set(u(k[1], (), 0.5, 1.0)),
            body_inertia=model.body_inertia.at[self.cube_body].multiply(u(k[2], (), 0.8, 1.2)),
            body_ipos=model.body_ipos.at[self.cube_body].add(u(k[3], (3,), -0.005, 0.005)),
            qpos0=model.qpos0.at[jnp.asarray(self.hand_qpos)].add(u(k[4], (16,), -0.05, 0.05)),
            dof_frictionloss=model.dof_frictionloss.at[dof].multiply(u(k[5], (16,), 0.5, 2.0)),
            dof_armature=model.dof_armature.at[dof].multiply(u(k[6], (16,), 1.0, 1.05)),
            dof_damping=model.dof_damping.at[dof].multiply(u(k[7], (16,), 0.8, 1.2)),
            body_mass=model.body_mass.at[links].multiply(u(k[8], (len(links),), 0.9, 1.1)),
            actuator_gainprm=model.actuator_gainprm.at[:, 0].set(kp),
            actuator_biasprm=model.actuator_biasprm.at[:, 1].set(-kp),
        )

    # -- reset --

    def reset_state(self, key: jax.Array):
        k_hand, k_quat, k_pos = jax.random.split(jax.random.fold_in(key, 0), 3)
        dt = self.dtype
        low, high = (jnp.asarray(b, dt) for b in (self.ctrl_low, self.ctrl_high))
        hand = jnp.clip(jnp.asarray(self.default_pose, dt) + 0.1 * jax.random.normal(k_hand, (16,), dt), low, high)
        r = self.CUBE_RANGE
        cube = jnp.asarray(self.CUBE_START, dt) + jax.random.uniform(k_pos, (3,), dt, -r, r)
        qpos = jnp.asarray(self.home_qpos, dt).at[self.hand_qpos].set(hand)
        qpos = qpos.at[self.cube_qpos : self.cube_qpos + 3].set(cube)
        qpos = qpos.at[self.cube_qpos + 3 : self.cube_qpos + 7].set(uniform_quat(k_quat, dt))
        return qpos, jnp.zeros(self.model.nv, dt), hand

    def begin(self, state: State, key: jax.Array) -> State:
        """The goal turned at random (the mocap body, which both engines keep) and the task's counters zeroed."""
        dt = self.dtype
        d = state.physics
        d = d.replace(
            mocap_pos=jnp.asarray(self.home_mpos, dt),
            mocap_quat=d.mocap_quat.at[self.goal].set(uniform_quat(jax.random.fold_in(key, 1), dt)),
        )
        zero = jnp.zeros(16, dt)
        info = {
            **state.info,
            "last_act": zero,
            "last_last_act": zero,
            "goal_dquat": jnp.zeros(3, dt),
            "success_count": jnp.zeros((), jnp.int32),
            "steps_since_last_success": jnp.zeros((), jnp.int32),
            "rng": jax.random.fold_in(key, 2),
        }
        obs, privileged, rng = self._observe(d, info)
        metrics = {**state.metrics, "goals_reached": jnp.zeros((), dt), "orientation_error": jnp.zeros((), dt)}
        return state.replace(physics=d, obs=obs, privileged_obs=privileged, info={**info, "rng": rng}, metrics=metrics)

    # -- what the task reads --

    def read(self, d: hp.Data) -> dict[str, jax.Array]:
        """The cube's and the palm's sensors, the goal (the mocap body's orientation, which its sensor reads)."""
        s = self.sensor
        return {
            "cube_pos": s(d, "cube_position"),
            "cube_quat": s(d, "cube_orientation"),
            "cube_linvel": s(d, "cube_linvel"),
            "cube_angvel": s(d, "cube_angvel"),
            "palm": s(d, "palm_position"),
            "tips": jnp.concatenate([s(d, f"{t}_tip_position") for t in TIPS]),
            "goal": hmath.quat_normalize(d.mocap_quat[self.goal]),
        }

    def _observe(self, d: hp.Data, info: dict, r: dict | None = None):
        """(`state`, `privileged_state`, the noise key after) in the physics state `d` with the task's `info`."""
        r = self.read(d) if r is None else r
        rng, k_joint, k_pos, k_ori = jax.random.split(info["rng"], 4)
        dt, level = d.qpos.dtype, self.noise
        q = d.qpos[self.hand_qpos]
        noisy_q = q + (2 * jax.random.uniform(k_joint, (16,), dt) - 1) * level * NOISE["joint_pos"]
        noisy_pos = r["cube_pos"] + (2 * jax.random.uniform(k_pos, (3,), dt) - 1) * level * NOISE["cube_pos"]
        noisy_quat = r["cube_quat"]
        if level != 0.0:
            noisy_quat = hmath.quat_normalize(
                noisy_quat + jax.random.normal(k_ori, (4,), dt) * level * NOISE["cube_ori"]
            )

        def rows(cube):
            return hmath.quat_to_mat(rotation_from_goal(cube, r["goal"])).reshape(9)[3:]

        state = jnp.concatenate(
            [noisy_q, noisy_q - d.ctrl, r["palm"] - noisy_pos, rows(noisy_quat), info["last_act"]]
        ).astype(self.dtype)
        privileged = jnp.concatenate(
            [
                state,
                q,
                d.qvel[self.hand_dof],
                r["tips"],
                r["palm"] - r["cube_pos"],
                rows(r["cube_quat"]),
                r["cube_linvel"],
                r["cube_angvel"],
                jnp.zeros(6, dt),  # a perturbation's direction: perturbations are off
                d.xfrc_applied[self.cube_body],
            ]
        ).astype(self.dtype)
        return state, privileged, rng

    def observation(self, data: hp.Data) -> jax.Array:
        """The noiseless `state` with a zero previous action (the space's shape; the task's observation is built
        with its `info` by `begin` and `advance`)."""
        info = {"last_act": jnp.zeros(16, data.qpos.dtype), "rng": jax.random.key(0)}
        return self._observe(data, info)[0]

    def terms(self, r: dict, q, qvel, force, action, info) -> tuple[dict, jax.Array, jax.Array]:
        """(the unscaled reward terms, the orientation error, whether the episode ends) from the readings `r`, the
        hand's joints `q`, their velocities `qvel`, the actuator forces `force`, this step's `action` and the
        task's `info` before the step."""
        dt = q.dtype
        err = orientation_error(r["cube_quat"], r["goal"])
        nan = jnp.isnan(q).any() | jnp.isnan(qvel).any()
        done = (r["cube_pos"][2] < self.FALL) | nan
        last, last_last = info["last_act"], info["last_last_act"]
        terms = {
            "orientation": tolerance_linear(err, 0.2, jnp.pi),
            "position": tolerance_linear(jnp.linalg.norm(r["palm"] - r["cube_pos"]), 0.02, 0.05),
            "termination": done.astype(dt),
            "hand_pose": jnp.sum(jnp.square(q - jnp.asarray(self.default_pose, dt))),
            "action_rate": jnp.sum(jnp.square(action - last)) + jnp.sum(jnp.square(action - 2 * last + last_last)),
            "joint_vel": jnp.sum(jnp.square(qvel / 4.0)),
            "energy": jnp.sum(jnp.abs(qvel) * jnp.abs(force)),
            "success": (err < self.SUCCESS).astype(dt),
        }
        return terms, err, done

    def combine(self, scaled: dict) -> jax.Array:
        """The reward from the scaled terms: all but the success bonus times the control period, plus the bonus."""
        return sum(v for k, v in scaled.items() if k != "success") * self.dt + scaled["success"]

    # -- a step --

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        info, dt = state.info, after.qpos.dtype
        r = self.read(after)
        qvel = after.qvel[self.hand_dof]
        terms, err, done = self.terms(r, after.qpos[self.hand_qpos], qvel, after.actuator_force, action, info)
        obs, privileged, rng = self._observe(after, info, r)
        scaled = {k: (v * self.scales[k]).astype(dt) for k, v in terms.items()}
        success = terms["success"] > 0
        count = info["success_count"] + success.astype(jnp.int32)
        # the goal: set turning at a success, slowing otherwise; applied from the next step
        rng, k_turn = jax.random.split(rng)
        spin = 3.0 + jax.random.uniform(k_turn, (3,), dt, -2.0, 2.0)
        dquat = jnp.where(success, spin, 0.8 * info["goal_dquat"])
        goal = hmath.quat_integrate(after.mocap_quat[self.goal], dquat, jnp.asarray(2 * self.dt, dt))
        after = after.replace(mocap_quat=after.mocap_quat.at[self.goal].set(goal))
        return state.replace(
            physics=after,
            obs=obs,
            privileged_obs=privileged,
            reward=self.combine(scaled).astype(self.dtype),
            done=done,
            truncation=jnp.zeros((), bool),
            info={
                **info,
                "last_act": action,
                "last_last_act": info["last_act"],
                "goal_dquat": dquat,
                "success_count": count,
                "steps_since_last_success": jnp.where(success, 0, info["steps_since_last_success"] + 1),
                "rng": rng,
            },
            metrics={
                **state.metrics,
                **{f"reward/{k}": v for k, v in scaled.items()},
                "goals_reached": count.astype(dt),
                "orientation_error": err,
            },
        )
