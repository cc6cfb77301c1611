"""The Berkeley humanoid following a velocity command, MuJoCo Playground's `BerkeleyHumanoidJoystickFlatTerrain`, on
Playground's own scene file (the `robots` extra).

The humanoid of issue 72, chosen over Unitree's G1: 12 actuated joints against G1's 29 (the robot-training issue
trains it on a 2-core CPU, where the cost per step is the budget), Playground trains it in 150M steps against G1's
200M, and EnvPool's C++ twin follows Playground's formulas throughout (G1's twin departs from Playground's hip term
whenever the sideways command exceeds 0.1; docs/design/playground_tasks.md).

Semantics are Playground's (mujoco_playground/_src/locomotion/berkeley_humanoid/joystick.py, as EnvPool 1.2.5
reimplements it), reimplemented here:
- 50 Hz control (10 physics steps of 2 ms, Euler without implicit damping, 3 solver iterations: the model file's);
  the action offsets the home pose's joint targets by 0.5 rad per unit;
- reset: the home pose moved by up to 0.5 m in x and y, turned by a yaw in [-3.14, 3.14], its joints scaled by
  U(0.5, 1.5) (and the servos aimed there), the base's velocities U(-0.5, 0.5); a gait frequency U(1.25, 1.5) Hz
  and the feet's phases 0 and pi;
- the command (forward, sideways, yaw rate) U(-1, 1) each, all zero with probability 0.1, drawn at reset and
  again every 501 steps (and the count restarted at a fall);
- pushes (on by default, `push=False` turns them off): every U(5, 10) s a kick of U(0.1, 2) m/s to the base's
  horizontal velocity in a random direction;
- `state` (52): noisy local velocity, gyro, gravity in the IMU frame, the command, noisy joint angles from home,
  noisy joint velocities, the previous action and the gait's phase (cos, sin); `privileged_state` (114): `state`,
  the noiseless sensors, joints, the base's height, actuator forces, the feet's contacts, velocities and air times;
- twenty-one reward terms with Playground's scales (seven of them zero), summed times the control period and
  clipped at zero from below; the episode ends when the torso is upside down; 1,000 steps at most (20 s).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box, State
from hurtle.envs.robots import joystick as J
from hurtle.envs.robots.joystick import JoystickEnv

SCENE = "locomotion/berkeley_humanoid/xmls/scene_mjx_feetonly_flat_terrain.xml"
SCALES = {
    "tracking_lin_vel": 1.0,
    "tracking_ang_vel": 0.5,
    "lin_vel_z": 0.0,
    "ang_vel_xy": -0.15,
    "orientation": -1.0,
    "base_height": 0.0,
    "torques": -2.5e-5,
    "action_rate": -0.01,
    "energy": 0.0,
    "feet_clearance": 0.0,
    "feet_air_time": 2.0,
    "feet_slip": -0.25,
    "feet_height": 0.0,
    "feet_phase": 1.0,
    "stand_still": 0.0,
    "alive": 0.0,
    "termination": -1.0,
    "joint_deviation_knee": -0.1,
    "joint_deviation_hip": -0.25,
    "dof_pos_limits": -1.0,
    "pose": -1.0,
}
# observation noise: the joints' per kind (hip roll/abduction/flexion, knee, foot flexion, foot abduction)
NOISE = {"linvel": 0.1, "gyro": 0.2, "gravity": 0.05, "joint_vel": 1.5}
JOINT_NOISE = np.array([0.03, 0.03, 0.03, 0.05, 0.08, 0.03] * 2)


class BerkeleyHumanoidJoystick(JoystickEnv):
    """The Berkeley humanoid tracking a joystick command on flat ground.

    noise: the observation noise's level (1: Playground's; 0: none, as for comparing engines).
    push: Playground's pushes (on, as its default).
    scales: reward scales replacing Playground's (a dict of some of SCALES' names).
    """

    n_frames = 10
    FEET = ("l_foot", "r_foot")
    FEET_GEOMS = ("l_foot1", "r_foot1")
    SCALES = SCALES
    ACTION_SCALE, SOFT_LIMIT = 0.5, 0.95
    COMMAND_AMPLITUDE, COMMAND_ZERO = (1.0, 1.0, 1.0), 0.1
    COMMAND_STEPS = 500  # the command is redrawn when the step count passes this
    TRACKING_SIGMA, MAX_FOOT_HEIGHT, BASE_HEIGHT = 0.5, 0.1, 0.5
    AIR_TIME = (0.2, 0.3)  # feet_air_time's threshold and cap
    GAIT_FREQUENCY = (1.25, 1.5)
    PUSH_INTERVAL, PUSH_SPEED = (5.0, 10.0), (0.1, 2.0)
    POSE_WEIGHT = np.array([1.0, 1.0, 0.01, 0.01, 1.0, 1.0] * 2)

    TORSO = "torso"

    def __init__(self, noise: float = 1.0, push: bool = True, scales: dict | None = None):
        self.push_enabled = bool(push)
        super().__init__(SCENE, noise, scales)
        m = self.mj
        self.hips = np.array([m.joint(f"{side}_{j}").qposadr[0] - 7 for side in ("LL", "LR") for j in ("HR", "HAA")])
        self.knees = np.array([m.joint(f"{side}_KFE").qposadr[0] - 7 for side in ("LL", "LR")])
        centre, half = (self.lower + self.upper) / 2, (self.upper - self.lower) / 2
        self.soft_lower, self.soft_upper = centre - half * self.SOFT_LIMIT, centre + half * self.SOFT_LIMIT
        self._privileged_space = Box(-np.inf, np.inf, (114,), self.dtype)

    # -- reset --

    def reset_state(self, key: jax.Array):
        k_pose, k_joints = jax.random.split(jax.random.fold_in(key, 0))
        qpos, qvel = self.turned_home(k_pose)
        qpos = qpos.at[7:].multiply(jax.random.uniform(k_joints, (self.model.nu,), self.dtype, 0.5, 1.5))
        return qpos, qvel, qpos[7:]

    def begin(self, state: State, key: jax.Array) -> State:
        k_freq, k_cmd, k_push, k_noise = jax.random.split(jax.random.fold_in(key, 1), 4)
        dt, nu = self.dtype, self.model.nu
        frequency = jax.random.uniform(k_freq, (), dt, *self.GAIT_FREQUENCY)
        interval = jax.random.uniform(k_push, (), dt, *self.PUSH_INTERVAL)
        info = {
            **state.info,
            "command": J.sample_or_zero(k_cmd, jnp.asarray(self.COMMAND_AMPLITUDE, dt), self.COMMAND_ZERO),
            "step": jnp.zeros((), jnp.int32),
            "last_act": jnp.zeros(nu, dt),
            "feet_air_time": jnp.zeros(2, dt),
            "last_contact": jnp.zeros(2, bool),
            "swing_peak": jnp.zeros(2, dt),
            "phase_dt": 2 * jnp.pi * self.dt * frequency,
            "phase": jnp.array([0.0, jnp.pi], dt),
            "push_step": jnp.zeros((), jnp.int32),
            "push_interval_steps": jnp.round(interval / self.dt).astype(jnp.int32),
            "rng": k_noise,
        }
        tracked, measures = self.tracking_start()
        info.update(tracked)
        r = self.read(state.physics)
        obs, privileged, rng = self._observe(state.physics, info, r)
        metrics = {**state.metrics, "swing_peak": jnp.zeros((), dt), **measures}
        return state.replace(obs=obs, privileged_obs=privileged, info={**info, "rng": rng}, metrics=metrics)

    # -- a step --

    def push(self, state: State) -> tuple[State, jax.Array | None]:
        if not self.push_enabled:
            return state, None
        info = state.info
        rng, k_angle, k_speed = jax.random.split(info["rng"], 3)
        angle = jax.random.uniform(k_angle, (), self.dtype, 0.0, 2 * jnp.pi)
        speed = jax.random.uniform(k_speed, (), self.dtype, *self.PUSH_SPEED)
        due = jnp.mod(info["push_step"] + 1, info["push_interval_steps"]) == 0
        kick = (
            jnp.zeros(self.model.nv, self.dtype)
            .at[:2]
            .set(jnp.stack([jnp.cos(angle), jnp.sin(angle)]) * speed * due.astype(self.dtype))
        )
        return state.replace(info={**info, "rng": rng}), kick

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        info, dt = state.info, self.dt
        r = self.read(after)
        contact = r["contact"]
        first_contact = (info["feet_air_time"] > 0) & (contact | info["last_contact"])
        air_time = info["feet_air_time"] + dt
        swing_peak = jnp.maximum(info["swing_peak"], r["feet_z"])
        obs, privileged, rng = self._observe(after, {**info, "feet_air_time": air_time}, r)
        done = (r["upvector"][2] < 0) | jnp.isnan(after.qpos).any() | jnp.isnan(after.qvel).any()
        q, force = after.qpos[7:], after.actuator_force
        cmd, default = info["command"], jnp.asarray(self.default_pose, q.dtype)
        terms = {
            "tracking_lin_vel": J.tracking_lin_vel(cmd, r["local_linvel"], self.TRACKING_SIGMA),
            "tracking_ang_vel": J.tracking_ang_vel(cmd, r["gyro"], self.TRACKING_SIGMA),
            "lin_vel_z": J.lin_vel_z(r["global_linvel"]),
            "ang_vel_xy": J.ang_vel_xy(r["global_angvel"]),
            "orientation": J.orientation(r["upvector"]),
            "base_height": jnp.square(after.qpos[2] - self.BASE_HEIGHT),
            "torques": J.torques(force, with_norm=False),
            "action_rate": J.action_rate(action, info["last_act"]),
            "energy": J.energy(after.qvel[6:], force),
            "feet_slip": J.body_slip(r["global_linvel"], contact),
            "feet_clearance": J.feet_clearance(r["feet_vel"], r["feet_z"], self.MAX_FOOT_HEIGHT),
            "feet_height": J.feet_height(swing_peak, first_contact, self.MAX_FOOT_HEIGHT),
            "feet_air_time": J.feet_air_time(air_time, first_contact, cmd, *self.AIR_TIME, gate=0.1),
            "feet_phase": J.feet_phase(r["feet_z"], info["phase"], self.MAX_FOOT_HEIGHT),
            "alive": jnp.ones((), q.dtype),
            "termination": done.astype(q.dtype),
            "stand_still": J.stand_still(cmd, q, default, threshold=0.1),
            "joint_deviation_hip": J.joint_deviation(q, default, self.hips) * (jnp.abs(cmd[1]) > 0.1).astype(q.dtype),
            "joint_deviation_knee": J.joint_deviation(q, default, self.knees),
            "dof_pos_limits": J.joint_pos_limits(q, self.soft_lower, self.soft_upper),
            "pose": J.pose_deviation(q, default, jnp.asarray(self.POSE_WEIGHT, q.dtype)),
        }
        scaled = {k: (v * self.scales[k]).astype(q.dtype) for k, v in terms.items()}
        reward = jnp.clip(sum(scaled.values()) * dt, 0.0, 10000.0)
        step = info["step"] + 1
        rng, k_cmd = jax.random.split(rng)
        due = step > self.COMMAND_STEPS
        amplitude = jnp.asarray(self.COMMAND_AMPLITUDE, q.dtype)
        phase = jnp.fmod(info["phase"] + info["phase_dt"] + jnp.pi, 2 * jnp.pi) - jnp.pi
        on_ground = (~contact).astype(q.dtype)
        tracked, measures = self.tracking(info, cmd, r, done)
        info = {
            **info,
            **tracked,
            "command": jnp.where(due, J.sample_or_zero(k_cmd, amplitude, self.COMMAND_ZERO), cmd),
            "step": jnp.where(done | due, 0, step),
            "push_step": info["push_step"] + 1,
            "phase": phase,
            "last_act": action,
            "feet_air_time": air_time * on_ground,
            "last_contact": contact,
            "swing_peak": swing_peak * on_ground,
            "rng": rng,
        }
        metrics = {
            **state.metrics,
            **{f"reward/{k}": v for k, v in scaled.items()},
            "swing_peak": jnp.mean(info["swing_peak"]),
            **measures,
        }
        return state.replace(
            physics=after,
            obs=obs,
            privileged_obs=privileged,
            reward=reward.astype(q.dtype),
            done=done,
            truncation=jnp.zeros((), bool),
            info=info,
            metrics=metrics,
        )

    # -- observations --

    def _state(self, r: dict, d: hp.Data, info: dict, key: jax.Array | None) -> jax.Array:
        noise = self.noise * (key is not None)
        keys = jax.random.split(key if key is not None else jax.random.key(0), 5)
        joints = J.uniform_noise(keys[2], d.qpos[7:], noise * jnp.asarray(JOINT_NOISE, d.qpos.dtype))
        parts = [
            J.uniform_noise(keys[4], r["local_linvel"], noise * NOISE["linvel"]),
            J.uniform_noise(keys[0], r["gyro"], noise * NOISE["gyro"]),
            J.uniform_noise(keys[1], r["gravity"], noise * NOISE["gravity"]),
            info["command"],
            joints - jnp.asarray(self.default_pose, d.qpos.dtype),
            J.uniform_noise(keys[3], d.qvel[6:], noise * NOISE["joint_vel"]),
            info["last_act"],
            jnp.cos(info["phase"]),
            jnp.sin(info["phase"]),
        ]
        return jnp.concatenate(parts).astype(self.dtype)

    def _observe(self, d: hp.Data, info: dict, r: dict):
        """(`state`, `privileged_state`, the noise key after) in the physics state `d` with the task's `info`."""
        rng, key = jax.random.split(info["rng"])
        state = self._state(r, d, info, key)
        privileged = jnp.concatenate(
            [
                state,
                r["gyro"],
                r["accelerometer"],
                r["gravity"],
                r["local_linvel"],
                r["global_angvel"],
                d.qpos[7:] - jnp.asarray(self.default_pose, d.qpos.dtype),
                d.qvel[6:],
                d.qpos[2:3],
                d.actuator_force,
                r["contact"].astype(d.qpos.dtype),
                r["feet_vel"].ravel(),
                info["feet_air_time"],
            ]
        ).astype(self.dtype)
        return state, privileged, rng

    def observation(self, data: hp.Data) -> jax.Array:
        """The noiseless `state` with a zero previous action and command and the gait's starting phase (the
        space's shape; the task's observation is built with its `info` by `begin` and `advance`)."""
        dt = data.qpos.dtype
        info = {
            "command": jnp.zeros(3, dt),
            "last_act": jnp.zeros(self.model.nu, dt),
            "phase": jnp.array([0, jnp.pi], dt),
        }
        return self._state(self.read(data), data, info, None)


def flat(**kwargs) -> BerkeleyHumanoidJoystick:
    """`berkeley_humanoid_joystick_flat`: Playground's BerkeleyHumanoidJoystickFlatTerrain."""
    return BerkeleyHumanoidJoystick(**kwargs)
