"""What velocity-command ("joystick") locomotion tasks share: the command sampler, observation noise and the
reward terms MuJoCo Playground's joystick tasks are built from (Go1, G1, the Berkeley humanoid).

`JoystickEnv` is what the tasks share beside: the scene found in the `robots` extra, the home pose and soft joint
limits, the IMU's and feet's sensor readings, the reset's turned and shifted home pose, actions as offsets from
it. Each term is a function of arrays (no task object), returning the unscaled term; a task multiplies each by its
scale, logs the scaled value as `reward/<term>` and combines them as its reference does (Playground's: the sum times
the control period, clipped at zero from below). Names follow Playground's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box
from hurtle.envs.robots.playground import PlaygroundTask
from hurtle.physics import math as hmath


def _as(mask: jax.Array, like: jax.Array) -> jax.Array:
    """A boolean mask as 0/1 in `like`'s float dtype (products of masks and floats, under strict promotion)."""
    return mask.astype(like.dtype)


def uniform_noise(key: jax.Array, x: jax.Array, scale: float) -> jax.Array:
    """`x` plus noise uniform in [-scale, scale] per entry (Playground's `(2 U - 1) level scale`, the level folded
    into `scale`)."""
    return x + (2 * jax.random.uniform(key, x.shape, x.dtype) - 1) * scale


def sample_command(key: jax.Array, amplitude: jax.Array) -> jax.Array:
    """A command (forward, sideways, yaw rate) uniform in [-amplitude, amplitude]."""
    return jax.random.uniform(key, amplitude.shape, amplitude.dtype, -amplitude, amplitude)


def resample_command(key: jax.Array, old: jax.Array, amplitude: jax.Array, keep_nonzero: jax.Array) -> jax.Array:
    """A command drawn anew per component with probability 1/2 (else the old one kept): uniform in
    [-amplitude, amplitude], zeroed with probability 1 - `keep_nonzero` (Go1's joystick)."""
    k_new, k_change, k_nonzero = jax.random.split(key, 3)
    new = sample_command(k_new, amplitude)
    nonzero = jax.random.bernoulli(k_nonzero, keep_nonzero, old.shape)
    change = jax.random.bernoulli(k_change, 0.5, old.shape)
    return jnp.where(change, jnp.where(nonzero, new, 0.0), old)


def steps_until_next_command(key: jax.Array, mean_seconds: float, dt: float) -> jax.Array:
    """Control steps until the command changes: an exponential wait of mean `mean_seconds`, rounded to steps."""
    return jnp.round(jax.random.exponential(key) * mean_seconds / dt).astype(jnp.int32)


def moving(command: jax.Array, threshold: float = 0.01) -> jax.Array:
    """Whether a command asks to move (norm above `threshold`: Go1's 0.01, the humanoids' 0.1)."""
    return jnp.linalg.norm(command) > threshold


def sample_or_zero(key: jax.Array, amplitude: jax.Array, p_zero: float) -> jax.Array:
    """A command uniform in [-amplitude, amplitude], all of it zero with probability `p_zero` (the humanoids')."""
    k_cmd, k_zero = jax.random.split(key)
    return jnp.where(jax.random.bernoulli(k_zero, p_zero), 0.0, sample_command(k_cmd, amplitude))


def gait_height(phase: jax.Array, swing_height: float) -> jax.Array:
    """A foot's target height at gait `phase` in [-pi, pi): on the ground for the first half (a cubic Bezier that
    stays at zero there), up to `swing_height` and back over the second (Playground's `gait.get_rz`)."""
    x = (phase + jnp.pi) / (2 * jnp.pi)

    def bezier(start, end, t):
        return start + (end - start) * (t**3 + 3 * (t**2 * (1 - t)))

    return jnp.where(x <= 0.5, bezier(0.0, swing_height, 2 * x), bezier(swing_height, 0.0, 2 * x - 1))


# --- reward terms ---


def tracking_lin_vel(command: jax.Array, local_linvel: jax.Array, sigma: float) -> jax.Array:
    return jnp.exp(-jnp.sum(jnp.square(command[:2] - local_linvel[:2])) / sigma)


def tracking_ang_vel(command: jax.Array, gyro: jax.Array, sigma: float) -> jax.Array:
    return jnp.exp(-jnp.square(command[2] - gyro[2]) / sigma)


def lin_vel_z(global_linvel: jax.Array) -> jax.Array:
    return jnp.square(global_linvel[2])


def ang_vel_xy(global_angvel: jax.Array) -> jax.Array:
    return jnp.sum(jnp.square(global_angvel[:2]))


def orientation(upvector: jax.Array) -> jax.Array:
    """How far the body's up axis leans: the squared horizontal part of its world-frame z axis."""
    return jnp.sum(jnp.square(upvector[:2]))


def torques(force: jax.Array, with_norm: bool = True) -> jax.Array:
    """The actuator forces' L1 norm, plus their L2 norm `with_norm` (Go1's; the humanoids' without)."""
    l1 = jnp.sum(jnp.abs(force))
    return jnp.linalg.norm(force) + l1 if with_norm else l1


def energy(qvel: jax.Array, force: jax.Array) -> jax.Array:
    return jnp.sum(jnp.abs(qvel) * jnp.abs(force))


def action_rate(action: jax.Array, last_action: jax.Array) -> jax.Array:
    return jnp.sum(jnp.square(action - last_action))


def pose_deviation(q: jax.Array, default: jax.Array, weight: jax.Array) -> jax.Array:
    """The weighted squared distance from the default pose (the humanoids' `pose` cost)."""
    return jnp.sum(jnp.square(q - default) * weight)


def pose(q: jax.Array, default: jax.Array, weight: jax.Array) -> jax.Array:
    """Closeness to the default pose, exp(-pose_deviation) (Go1's `pose` reward)."""
    return jnp.exp(-pose_deviation(q, default, weight))


def joint_deviation(q: jax.Array, default: jax.Array, index: jax.Array) -> jax.Array:
    """The joints `index`' absolute distance from the default pose, summed."""
    return jnp.sum(jnp.abs(q[index] - default[index]))


def stand_still(command: jax.Array, q: jax.Array, default: jax.Array, threshold: float = 0.01) -> jax.Array:
    """Distance from the default pose, while the command is to stand (norm under `threshold`)."""
    return jnp.sum(jnp.abs(q - default)) * _as(jnp.linalg.norm(command) < threshold, q)


def joint_pos_limits(q: jax.Array, soft_lower: jax.Array, soft_upper: jax.Array) -> jax.Array:
    """How far the joints are past their soft limits, summed."""
    return jnp.sum(jnp.maximum(soft_lower - q, 0.0) + jnp.maximum(q - soft_upper, 0.0))


def feet_slip(feet_vel: jax.Array, contact: jax.Array, command: jax.Array) -> jax.Array:
    """Squared horizontal speed of the feet on the ground, while moving."""
    return jnp.sum(jnp.sum(jnp.square(feet_vel[:, :2]), -1) * _as(contact, feet_vel)) * _as(moving(command), feet_vel)


def feet_clearance(feet_vel: jax.Array, feet_z: jax.Array, max_height: float) -> jax.Array:
    """Each foot's height from `max_height`, weighted by the square root of its horizontal speed."""
    return jnp.sum(jnp.abs(feet_z - max_height) * jnp.sqrt(jnp.linalg.norm(feet_vel[:, :2], axis=-1)))


def body_slip(global_linvel: jax.Array, contact: jax.Array) -> jax.Array:
    """The body's horizontal speed times the number of feet on the ground (the humanoids' `feet_slip`)."""
    return jnp.sum(jnp.linalg.norm(global_linvel[:2]) * _as(contact, global_linvel))


def feet_height(swing_peak: jax.Array, first_contact: jax.Array, max_height: float) -> jax.Array:
    """At each landing, the swing's peak height relative to `max_height`, squared (Go1 gates it by `moving`)."""
    return jnp.sum(jnp.square(swing_peak / max_height - 1.0) * _as(first_contact, swing_peak))


def feet_air_time(
    air_time: jax.Array,
    first_contact: jax.Array,
    command: jax.Array,
    threshold: float = 0.1,
    cap: float | None = None,
    gate: float = 0.01,
):
    """At each landing, the time the foot was in the air beyond `threshold` (at most `cap`), while the command's
    norm is above `gate` (Go1: 0.1 s, no cap, 0.01; the humanoids: 0.2 s, 0.3 s, 0.1)."""
    extra = (air_time - threshold) * _as(first_contact, air_time)
    if cap is not None:
        extra = jnp.minimum(extra, cap)
    return jnp.sum(extra) * _as(moving(command, gate), air_time)


def feet_phase(feet_z: jax.Array, phase: jax.Array, swing_height: float) -> jax.Array:
    """How closely the feet follow the gait's height profile: exp(-sum of squared errors / 0.01)."""
    return jnp.exp(-jnp.sum(jnp.square(feet_z - gait_height(phase, swing_height))) / 0.01)


class JoystickEnv(PlaygroundTask):
    """A legged robot on a Playground scene following a velocity command: what Go1's and the humanoids' tasks share.

    A subclass sets `SCALES` (its reward terms' default scales), `FEET` (the feet's sites, whose `<site>_global_linvel`
    sensors it reads), `FEET_GEOMS` (the geoms of the `<geom>_floor_found` contact sensors; the sites' names unless
    set), `ACTION_SCALE` and `n_frames`, and defines `begin`, `advance` and the observations."""

    FEET: tuple[str, ...] = ()
    FEET_GEOMS: tuple[str, ...] | None = None
    ACTION_SCALE = 0.5

    def __init__(self, scene: str, noise: float = 1.0, scales: dict | None = None):
        self.noise = float(noise)
        super().__init__(scene, scales)
        m = self.mj
        self.home_qpos = np.asarray(m.keyframe("home").qpos, np.float64)
        self.default_pose = self.home_qpos[7:]
        self.lower, self.upper = m.jnt_range[1:].T
        self.imu = m.site("imu").id
        self.feet_sites = np.array([m.site(f).id for f in self.FEET])
        self._privileged_space = None

    @property
    def privileged_observation_space(self) -> Box | None:
        return self._privileged_space

    def edit_model(self, m: mujoco.MjModel) -> None:
        """None: the humanoids' files hold Playground's model (Go1's task edits gains and damping)."""

    def read(self, d: hp.Data) -> dict[str, jax.Array]:
        """The IMU's and the feet's sensor readings Playground's tasks use, the gravity direction in the IMU's frame
        and the feet's heights."""
        s = self.sensor
        geoms = self.FEET_GEOMS or self.FEET
        return {
            "gyro": s(d, "gyro"),
            "local_linvel": s(d, "local_linvel"),
            "accelerometer": s(d, "accelerometer"),
            "upvector": s(d, "upvector"),
            "global_linvel": s(d, "global_linvel"),
            "global_angvel": s(d, "global_angvel"),
            "gravity": d.site_xmat[self.imu].T @ jnp.array([0.0, 0.0, -1.0], d.qpos.dtype),
            "feet_vel": jnp.stack([s(d, f"{f}_global_linvel") for f in self.FEET]),
            "contact": jnp.concatenate([s(d, f"{g}_floor_found") for g in geoms]) > 0,
            "feet_z": d.site_xpos[self.feet_sites, 2],
        }

    def turned_home(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(qpos, qvel): the home pose moved by U(-0.5, 0.5) in x and y and turned by a yaw U(-3.14, 3.14) about the
        vertical, the base's six velocities U(-0.5, 0.5), the joints still."""
        k_xy, k_yaw, k_vel = jax.random.split(key, 3)
        qpos = jnp.asarray(self.home_qpos, self.dtype)
        qpos = qpos.at[:2].add(jax.random.uniform(k_xy, (2,), self.dtype, -0.5, 0.5))
        yaw = jax.random.uniform(k_yaw, (), self.dtype, -3.14, 3.14)
        turn = hmath.axis_angle_to_quat(jnp.array([0.0, 0.0, 1.0], self.dtype), yaw)
        qpos = qpos.at[3:7].set(hmath.quat_mul(qpos[3:7], turn))
        qvel = jnp.zeros(self.model.nv, self.dtype).at[:6].set(jax.random.uniform(k_vel, (6,), self.dtype, -0.5, 0.5))
        return qpos, qvel

    TORSO = "trunk"  # the body whose mass (and centre of mass, TORSO_COM) the randomisation moves
    TORSO_COM = 0.0

    def randomize(self, model: hp.Model, key: jax.Array) -> hp.Model:
        """One randomised variant of the task's model, as MuJoCo Playground's domain randomisation for its joystick
        tasks makes it (`<robot>/randomize.py`): the floor's sliding friction U(0.4, 1), the joints' friction loss
        times U(0.9, 1.1) and armature times U(1, 1.05), every body's mass times U(0.9, 1.1) and the torso's plus
        U(-1, 1) kg (its centre of mass moved by U(-TORSO_COM, TORSO_COM) per axis), the joints' reference
        positions (`qpos0`) offset by U(-0.05, 0.05) rad. Derived constants are not recomputed (nor are they in
        Playground). `DomainRandomization` vmaps it over the training environments."""
        k = jax.random.split(key, 7)
        dt = model.body_mass.dtype
        nv, nq, nbody = model.nv, model.nq, model.body_mass.shape[0]
        floor, torso = self.mj.geom("floor").id, self.mj.body(self.TORSO).id

        def u(k, shape, lo, hi):
            return jax.random.uniform(k, shape, dt, lo, hi)

        mass = model.body_mass * u(k[0], (nbody,), 0.9, 1.1)
        return model.replace(
            geom_friction=model.geom_friction.at[floor, 0].set(u(k[1], (), 0.4, 1.0)),
            dof_frictionloss=model.dof_frictionloss.at[6:].multiply(u(k[2], (nv - 6,), 0.9, 1.1)),
            dof_armature=model.dof_armature.at[6:].multiply(u(k[3], (nv - 6,), 1.0, 1.05)),
            body_mass=mass.at[torso].add(u(k[4], (), -1.0, 1.0)),
            body_ipos=model.body_ipos.at[torso].add(u(k[5], (3,), -self.TORSO_COM, self.TORSO_COM)),
            qpos0=model.qpos0.at[7:].add(u(k[6], (nq - 7,), -0.05, 0.05)),
        )

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        return jnp.asarray(self.default_pose, action.dtype) + self.ACTION_SCALE * action

    def start_ctrl(self, qpos: jax.Array) -> jax.Array:
        """The servos aimed at the start pose's joints (Playground's `ctrl = qpos[7:]`)."""
        return qpos[7:]

    # -- the task's success measures, logged with each evaluation (an episode's value is its last step's) --

    def tracking_start(self) -> tuple[dict, dict]:
        """(`info`, `metrics`) entries of `tracking` at an episode's start."""
        zero = jnp.zeros((), self.dtype)
        info = {"tracking_steps": jnp.zeros((), jnp.int32), "tracking_error": jnp.zeros(2, self.dtype)}
        return info, {"tracking/lin_vel_error": zero, "tracking/ang_vel_error": zero, "fell": zero}

    def tracking(self, info: dict, command: jax.Array, r: dict, fell: jax.Array) -> tuple[dict, dict]:
        """(`info`, `metrics`) entries after a step under `command` with readings `r`: the episode's mean planar
        velocity error (m/s, in the body's frame) and yaw-rate error (rad/s) so far, and whether it fell."""
        steps = info["tracking_steps"] + 1
        error = info["tracking_error"] + jnp.stack(
            [jnp.linalg.norm(command[:2] - r["local_linvel"][:2]), jnp.abs(command[2] - r["gyro"][2])]
        )
        mean = error / steps.astype(error.dtype)
        metrics = {"tracking/lin_vel_error": mean[0], "tracking/ang_vel_error": mean[1], "fell": _as(fell, error)}
        return {"tracking_steps": steps, "tracking_error": error}, metrics
