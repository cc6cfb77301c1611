"""Unitree Go1 following a velocity command, MuJoCo Playground's `Go1JoystickFlatTerrain` and
`Go1JoystickRoughTerrain`, on Playground's own scene files (the `robots` extra).

Semantics are Playground's (mujoco_playground/_src/locomotion/go1/joystick.py, as of its v0.2.0, which EnvPool 1.2.5
reimplements in C++), reimplemented here:
- 50 Hz control (5 physics steps of 4 ms); the action offsets the home pose's joint targets by 0.5 rad per unit; the
  position servos' gain is 35 N m/rad and the joints' damping 0.5 (set in code on the compiled model, as Playground
  does; `edit_model`), GJK/EPA at 20 iterations;
- the command (forward, sideways, yaw rate) is drawn at reset within (1.5, 0.8, 1.2), and after an exponential wait
  of mean 5 s each component is redrawn with probability 1/2 (zeroed with probability 0.1, 0.75, 0.5);
- `state` (48): noisy local velocity, gyro, gravity in the IMU frame, joint angles from home, joint velocities, the
  previous action and the command; `privileged_state` (123): `state`, the noiseless sensors, actuator forces, the
  previous contacts, the feet's velocities and air times, the push force (zero: pushes are off, as Playground's
  default) and the push flag;
- sixteen reward terms with Playground's scales, summed times the control period and clipped at zero from below;
  the episode ends when the body is upside down (its up axis below the horizon); 1,000 steps at most (20 s).

The physics state carries nothing of the task: the command, its timer, the previous action, the feet's air times and
swing peaks, the previous contacts and the noise key live in `state.info` (both engines carry them: `begin` and
`advance`). Playground's quirks are kept: the observation's previous action and command are those before this step
updates them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box, State
from hurtle.envs.robots import joystick as J

SCENES = {
    "flat": "locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml",
    "rough": "locomotion/go1/xmls/scene_mjx_feetonly_rough_terrain.xml",
}
FEET = ("FR", "FL", "RR", "RL")  # sites, geoms and sensors, in Playground's order
SCALES = {
    "tracking_lin_vel": 1.0,
    "tracking_ang_vel": 0.5,
    "lin_vel_z": -0.5,
    "ang_vel_xy": -0.05,
    "orientation": -5.0,
    "dof_pos_limits": -1.0,
    "pose": 0.5,
    "termination": -1.0,
    "stand_still": -1.0,
    "torques": -0.0002,
    "action_rate": -0.01,
    "energy": -0.001,
    "feet_clearance": -2.0,
    "feet_height": -0.2,
    "feet_slip": -0.1,
    "feet_air_time": 0.1,
}
NOISE = {"linvel": 0.1, "gyro": 0.2, "gravity": 0.05, "joint_pos": 0.03, "joint_vel": 1.5}


class Go1Joystick(J.JoystickEnv):
    """Go1 tracking a joystick command on flat ground or rough terrain (`terrain`).

    noise: the observation noise's level (1: Playground's; 0: none, as for comparing engines).
    scales: reward scales replacing Playground's (a dict of some of SCALES' names).
    """

    n_frames = 5
    FEET, SCALES = FEET, SCALES
    KP, KD, ACTION_SCALE, SOFT_LIMIT = 35.0, 0.5, 0.5, 0.95
    COMMAND_AMPLITUDE = (1.5, 0.8, 1.2)
    COMMAND_KEEP_NONZERO = (0.9, 0.25, 0.5)
    COMMAND_MEAN_SECONDS = 5.0
    TRACKING_SIGMA, MAX_FOOT_HEIGHT = 0.25, 0.1
    POSE_WEIGHT = (1.0, 1.0, 0.1) * 4

    def __init__(self, terrain: str = "flat", noise: float = 1.0, scales: dict | None = None):
        if terrain not in SCENES:
            raise ValueError(f"Go1Joystick: terrain must be one of {', '.join(SCENES)}, got {terrain!r}")
        self.terrain = terrain
        super().__init__(SCENES[terrain], noise, scales)
        self.soft_lower, self.soft_upper = self.lower * self.SOFT_LIMIT, self.upper * self.SOFT_LIMIT
        self.trunk = self.mj.body("trunk").id
        self._privileged_space = Box(-np.inf, np.inf, (123,), self.dtype)

    def edit_model(self, m: mujoco.MjModel) -> None:
        m.opt.timestep = 0.004
        m.opt.ccd_iterations = 20
        m.dof_damping[6:] = self.KD
        m.actuator_gainprm[:, 0] = self.KP
        m.actuator_biasprm[:, 1] = -self.KP

    # -- reset --

    TORSO_COM = 0.05  # Playground's Go1 also moves the trunk's centre of mass

    def reset_state(self, key: jax.Array):
        qpos, qvel = self.turned_home(jax.random.fold_in(key, 0))
        return qpos, qvel, qpos[7:]

    def begin(self, state: State, key: jax.Array) -> State:
        k_timer, k_cmd, k_noise = jax.random.split(jax.random.fold_in(key, 1), 3)
        nu, dt = self.model.nu, self.dtype
        info = {
            **state.info,
            "command": J.sample_command(k_cmd, jnp.asarray(self.COMMAND_AMPLITUDE, dt)),
            "steps_until_next_cmd": J.steps_until_next_command(k_timer, self.COMMAND_MEAN_SECONDS, self.dt),
            "last_act": jnp.zeros(nu, dt),
            "feet_air_time": jnp.zeros(4, dt),
            "last_contact": jnp.zeros(4, bool),
            "swing_peak": jnp.zeros(4, dt),
            "rng": k_noise,
        }
        tracked, measures = self.tracking_start()
        info.update(tracked)
        obs, privileged, rng = self._observe(state.physics, info)
        metrics = {**state.metrics, "swing_peak": jnp.zeros((), dt), **measures}
        return state.replace(obs=obs, privileged_obs=privileged, info={**info, "rng": rng}, metrics=metrics)

    def observation(self, data: hp.Data) -> jax.Array:
        """The noiseless `state` with a zero previous action and command (the space's shape; the task's observation
        is built with its `info` by `begin` and `advance`)."""
        info = {"command": jnp.zeros(3, data.qpos.dtype), "last_act": jnp.zeros(self.model.nu, data.qpos.dtype)}
        return self._state(self.read(data), data, info, None)

    # -- a step --

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        info, dt = state.info, self.dt
        r = self.read(after)
        contact = r["contact"]
        first_contact = (info["feet_air_time"] > 0) & (contact | info["last_contact"])
        air_time = info["feet_air_time"] + dt
        swing_peak = jnp.maximum(info["swing_peak"], r["feet_z"])
        obs, privileged, rng = self._observe(after, {**info, "feet_air_time": air_time}, r)
        done = r["upvector"][2] < 0
        q, qd, force = after.qpos[7:], after.qvel[6:], after.actuator_force
        cmd, default = info["command"], jnp.asarray(self.default_pose, q.dtype)
        terms = {
            "tracking_lin_vel": J.tracking_lin_vel(cmd, r["local_linvel"], self.TRACKING_SIGMA),
            "tracking_ang_vel": J.tracking_ang_vel(cmd, r["gyro"], self.TRACKING_SIGMA),
            "lin_vel_z": J.lin_vel_z(r["global_linvel"]),
            "ang_vel_xy": J.ang_vel_xy(r["global_angvel"]),
            "orientation": J.orientation(r["upvector"]),
            "dof_pos_limits": J.joint_pos_limits(q, self.soft_lower, self.soft_upper),
            "pose": J.pose(q, default, jnp.asarray(self.POSE_WEIGHT, q.dtype)),
            "termination": done.astype(q.dtype),
            "stand_still": J.stand_still(cmd, q, default),
            "torques": J.torques(force),
            "action_rate": J.action_rate(action, info["last_act"]),
            "energy": J.energy(qd, force),
            "feet_clearance": J.feet_clearance(r["feet_vel"], r["feet_z"], self.MAX_FOOT_HEIGHT),
            "feet_height": J.feet_height(swing_peak, first_contact, self.MAX_FOOT_HEIGHT)
            * J.moving(cmd).astype(q.dtype),
            "feet_slip": J.feet_slip(r["feet_vel"], contact, cmd),
            "feet_air_time": J.feet_air_time(air_time, first_contact, cmd),
        }
        scaled = {k: (v * self.scales[k]).astype(q.dtype) for k, v in terms.items()}
        reward = jnp.clip(sum(scaled.values()) * dt, 0.0, 10000.0)
        # the command: redrawn when its timer runs out; the timer redrawn then and at a fall
        rng, k_cmd, k_timer = jax.random.split(rng, 3)
        timer = info["steps_until_next_cmd"] - 1
        due = timer <= 0
        amplitude, keep = (jnp.asarray(x, q.dtype) for x in (self.COMMAND_AMPLITUDE, self.COMMAND_KEEP_NONZERO))
        command = jnp.where(due, J.resample_command(k_cmd, cmd, amplitude, keep), cmd)
        redraw = J.steps_until_next_command(k_timer, self.COMMAND_MEAN_SECONDS, dt)
        timer = jnp.where(done | due, redraw, timer)
        on_ground = (~contact).astype(q.dtype)
        swing_peak = swing_peak * on_ground
        tracked, measures = self.tracking(info, cmd, r, done)
        info = {
            **info,
            **tracked,
            "command": command,
            "steps_until_next_cmd": timer,
            "last_act": action,
            "feet_air_time": air_time * on_ground,
            "last_contact": contact,
            "swing_peak": swing_peak,
            "rng": rng,
        }
        metrics = {
            **state.metrics,
            **{f"reward/{k}": v for k, v in scaled.items()},
            "swing_peak": jnp.mean(swing_peak),
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
        parts = (
            ("linvel", r["local_linvel"]),
            ("gyro", r["gyro"]),
            ("gravity", r["gravity"]),
            ("joint_pos", d.qpos[7:]),
            ("joint_vel", d.qvel[6:]),
        )
        keys = jax.random.split(key, len(parts)) if key is not None else [None] * len(parts)
        noisy = [
            x if k is None else J.uniform_noise(k, x, self.noise * NOISE[name]) for (name, x), k in zip(parts, keys)
        ]
        noisy[3] = noisy[3] - jnp.asarray(self.default_pose, d.qpos.dtype)
        return jnp.concatenate([*noisy, info["last_act"], info["command"]]).astype(self.dtype)

    def _observe(self, d: hp.Data, info: dict, r: dict | None = None):
        """(`state`, `privileged_state`, the noise key after) in the physics state `d` with the task's `info`."""
        r = self.read(d) if r is None else r
        rng, key = jax.random.split(info["rng"])
        state = self._state(r, d, info, key)
        default = jnp.asarray(self.default_pose, d.qpos.dtype)
        privileged = jnp.concatenate(
            [
                state,
                r["gyro"],
                r["accelerometer"],
                r["gravity"],
                r["local_linvel"],
                r["global_angvel"],
                d.qpos[7:] - default,
                d.qvel[6:],
                d.actuator_force,
                info["last_contact"].astype(d.qpos.dtype),
                r["feet_vel"].ravel(),
                info["feet_air_time"],
                d.xfrc_applied[self.trunk, :3],
                jnp.zeros(1, d.qpos.dtype),  # a push under way: pushes are off
            ]
        ).astype(self.dtype)
        return state, privileged, rng


def flat(**kwargs) -> Go1Joystick:
    """`go1_joystick_flat`: Playground's Go1JoystickFlatTerrain."""
    return Go1Joystick("flat", **kwargs)


def rough(**kwargs) -> Go1Joystick:
    """`go1_joystick_rough`: Playground's Go1JoystickRoughTerrain (a height field)."""
    return Go1Joystick("rough", **kwargs)
