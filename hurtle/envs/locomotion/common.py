"""What Gymnasium's MuJoCo v5 tasks share, written once: the stepping, reward terms, health checks, reset
noise and observation pieces.

Physics is read as Gymnasium reads it. Gymnasium runs `frame_skip` `mj_step` calls and then
`mj_rnePostConstraint`, so after a step `qpos`/`qvel` are the integrated state while the derived fields
(`xpos`, `xipos`, `site_xpos`, `cinert`, `cvel`, `qfrc_actuator`, `qfrc_constraint`, ...) are those the last
substep computed before integrating; `cfrc_ext` (with `cacc`, `cfrc_int`) is computed from them when a task
sets `needs_cfrc_ext`. A reset runs `forward` (as Gymnasium's `set_state` runs `mj_forward`), which leaves
`cfrc_ext` zero, as it is in Gymnasium after a reset.

The `before` state a task's `reward_terms` receives is the previous step's (or the reset's) physics, so
positions measured "before the step" are its `qpos` or its derived fields, as Gymnasium measures them.

Costs are returned positive, as Gymnasium defines them; a task's reward term is their negation.
"""

from __future__ import annotations

import os
from typing import ClassVar

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.physics_env import PhysicsEnv

Range = tuple[float, float]


class GymnasiumTask(PhysicsEnv):
    """A `PhysicsEnv` stepped as Gymnasium's `MujocoEnv` steps: `n_frames` physics steps with the action as
    `ctrl`, then `rne_post_constraint` when `needs_cfrc_ext` (the observation or reward reads `cfrc_ext`)."""

    needs_cfrc_ext: ClassVar[bool] = False
    gymnasium_id: ClassVar[str | None] = None
    """The Gymnasium environment this task reproduces (e.g. "Ant-v5"): `hurtle eval --engine mujoco` replays
    policies there."""

    def pipeline_step(self, data: hp.Data, ctrl: jax.Array) -> hp.Data:
        data = super().pipeline_step(data, ctrl)
        return hp.rne_post_constraint(self.model, data) if self.needs_cfrc_ext else data

    def control_dt(self) -> jax.Array:
        """The control period `n_frames * opt.timestep` read from the model as an array: unlike `dt`, valid
        when the model is traced (`with_model` under `jit`, domain randomisation of the timestep)."""
        return self.model.opt.timestep * self.n_frames


class Runner(GymnasiumTask):
    """A task rewarded for moving forward along x at a control cost: Gymnasium's HalfCheetah, Swimmer,
    Hopper and Walker2d.

    Observation: `qpos` less its first `n_excluded` entries (unless `exclude_current_positions` is False),
    then `qvel`, clipped to [-qvel_clip, qvel_clip] when `qvel_clip` is set. Reward terms: `forward`,
    `forward_reward_weight` times the x velocity of `qpos[0]` over the step, and `ctrl`, minus
    `ctrl_cost_weight * sum(action^2)`. Reset: `noisy_reset` with `qvel_noise`.
    """

    n_excluded: ClassVar[int] = 1
    qvel_clip: ClassVar[float | None] = None
    qvel_noise: ClassVar[str] = "uniform"

    def __init__(
        self,
        xml: str | os.PathLike | None,
        frame_skip: int,
        *,
        forward_reward_weight: float,
        ctrl_cost_weight: float,
        reset_noise_scale: float,
        exclude_current_positions_from_observation: bool,
    ):
        super().__init__(xml, frame_skip)
        self.forward_reward_weight = float(forward_reward_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.reset_noise_scale = float(reset_noise_scale)
        self.exclude_current_positions_from_observation = bool(exclude_current_positions_from_observation)

    def observation(self, data: hp.Data) -> jax.Array:
        qpos = positions(data.qpos, self.exclude_current_positions_from_observation, self.n_excluded)
        qvel = data.qvel if self.qvel_clip is None else jnp.clip(data.qvel, -self.qvel_clip, self.qvel_clip)
        return jnp.concatenate([qpos, qvel])

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        return forward_and_ctrl(
            before.qpos[0], after.qpos[0], self.control_dt(), action, self.forward_reward_weight, self.ctrl_cost_weight
        )

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return noisy_reset(self, key, self.reset_noise_scale, self.qvel_noise)


class HealthyRunner(Runner):
    """A `Runner` that must stay healthy (Hopper, Walker2d): a `survive` term of `healthy_reward` while
    `is_healthy(data)`, and termination when unhealthy if `terminate_when_unhealthy`."""

    def __init__(
        self,
        xml: str | os.PathLike | None,
        frame_skip: int,
        *,
        healthy_reward: float,
        terminate_when_unhealthy: bool,
        **runner_options,
    ):
        super().__init__(xml, frame_skip, **runner_options)
        self.healthy_reward = float(healthy_reward)
        self.terminate_when_unhealthy = bool(terminate_when_unhealthy)

    def is_healthy(self, data: hp.Data) -> jax.Array:
        """Whether the state is healthy (a boolean scalar)."""
        raise NotImplementedError(f"{type(self).__name__} must define is_healthy(data)")

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        survive = healthy_reward(self.is_healthy(after), self.healthy_reward, self.dtype)
        return {**super().reward_terms(before, after, action), "survive": survive}

    def terminated(self, data: hp.Data) -> jax.Array:
        return unhealthy_termination(self.is_healthy(data), self.terminate_when_unhealthy)


# -- reward terms --


def ctrl_cost(action: jax.Array, weight: float) -> jax.Array:
    """`weight * sum(action^2)`: the control cost (positive)."""
    return weight * jnp.sum(jnp.square(action))


def clipped_contact_forces(cfrc_ext: jax.Array, force_range: Range) -> jax.Array:
    """The external forces `cfrc_ext` (nbody, 6) clipped elementwise into `force_range` (Ant's contact forces)."""
    return jnp.clip(cfrc_ext, force_range[0], force_range[1])


def contact_cost(
    cfrc_ext: jax.Array,
    weight: float,
    force_range: Range = (-jnp.inf, jnp.inf),
    cost_range: Range = (-jnp.inf, jnp.inf),
) -> jax.Array:
    """`weight * sum(clip(cfrc_ext, force_range)^2)`, clipped into `cost_range` (positive).

    Ant clips each force (`force_range`); Humanoid clips the total (`cost_range`)."""
    forces = clipped_contact_forces(cfrc_ext, force_range)
    return jnp.clip(weight * jnp.sum(jnp.square(forces)), cost_range[0], cost_range[1])


def forward_velocity(before: jax.Array, after: jax.Array, dt: float) -> jax.Array:
    """The velocity `(after - before) / dt` of a position (a scalar or an x-y pair) over one env step."""
    return (after - before) / dt


def mass_center(model: hp.Model, data: hp.Data) -> jax.Array:
    """The whole model's centre of mass (3,): bodies' `xipos` weighted by `body_mass` (Gymnasium's
    `mass_center`, which Humanoid's forward reward differentiates)."""
    mass = model.body_mass
    return jnp.sum(mass[:, None] * data.xipos, axis=0) / jnp.sum(mass)


# -- health --


def in_range(x: jax.Array, bounds: Range, inclusive: bool = False) -> jax.Array:
    """Whether every element of `x` lies within `bounds`: strictly (Hopper, Walker2d, Humanoid) or with the
    bounds included (Ant). A NaN is out of range either way."""
    low, high = bounds
    inside = (low <= x) & (x <= high) if inclusive else (low < x) & (x < high)
    return jnp.all(inside)


def healthy_reward(healthy: jax.Array, reward: float, dtype: jax.typing.DTypeLike) -> jax.Array:
    """`reward` while healthy, 0 otherwise (v5: whether or not unhealthy states terminate)."""
    return jnp.where(healthy, jnp.asarray(reward, dtype), jnp.zeros((), dtype))


def unhealthy_termination(healthy: jax.Array, terminate_when_unhealthy: bool) -> jax.Array:
    """Terminated: unhealthy, when the task terminates on that."""
    return jnp.logical_not(healthy) & terminate_when_unhealthy


# -- reset noise --


def uniform_noise(key: jax.Array, size: int, scale: float, dtype: jax.typing.DTypeLike) -> jax.Array:
    """`size` samples of U(-scale, scale)."""
    return jax.random.uniform(key, (size,), dtype, -scale, scale)


def normal_noise(key: jax.Array, size: int, scale: float, dtype: jax.typing.DTypeLike) -> jax.Array:
    """`size` samples of N(0, scale^2)."""
    return scale * jax.random.normal(key, (size,), dtype)


def noisy_reset(
    env: PhysicsEnv, key: jax.Array, scale: float, qvel_noise: str = "uniform"
) -> tuple[jax.Array, jax.Array]:
    """The model's `qpos0` plus U(-scale, scale) noise, and a zero `qvel` plus uniform ("uniform") or
    normal ("normal", standard deviation `scale`) noise: Gymnasium's `reset_model`."""
    if qvel_noise not in ("uniform", "normal"):
        raise ValueError(f"{type(env).__name__}: qvel_noise is 'uniform' or 'normal', got {qvel_noise!r}")
    m, dtype = env.model, env.dtype
    k_pos, k_vel = jax.random.split(key)
    qpos = jnp.asarray(m.qpos0, dtype) + uniform_noise(k_pos, m.nq, scale, dtype)
    noise = uniform_noise if qvel_noise == "uniform" else normal_noise
    return qpos, noise(k_vel, m.nv, scale, dtype)


# -- observation pieces --


def positions(qpos: jax.Array, exclude_current_positions: bool, n_excluded: int = 1) -> jax.Array:
    """`qpos` without its first `n_excluded` entries (the root's x, or x and y) when
    `exclude_current_positions` (Gymnasium's `exclude_current_positions_from_observation`)."""
    return qpos[n_excluded:] if exclude_current_positions else qpos


def forward_and_ctrl(
    x_before: jax.Array,
    x_after: jax.Array,
    dt: float,
    action: jax.Array,
    forward_reward_weight: float,
    ctrl_cost_weight: float,
) -> dict[str, jax.Array]:
    """The reward terms of the runners: `forward`, `forward_reward_weight` times the x velocity over the
    step, and `ctrl`, minus `ctrl_cost(action, ctrl_cost_weight)` (Gymnasium's `reward_forward` and
    `reward_ctrl`)."""
    velocity = forward_velocity(x_before, x_after, dt)
    return {"forward": forward_reward_weight * velocity, "ctrl": -ctrl_cost(action, ctrl_cost_weight)}
