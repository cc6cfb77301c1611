"""A model in motion without a policy: `model_motion(path, seconds)` for `hurtle view --model` and `hurtle video
--model`, and for looking at a model file before writing a task on it."""

from __future__ import annotations

import os
from typing import Literal

import mujoco
import numpy as np

from hurtle.physics.model import compile_mjcf


def random_controls(m: mujoco.MjModel, steps: int, seed: int = 0, hold: float = 0.5, smooth: float = 0.1) -> np.ndarray:
    """Controls `[steps, nu]` that wander smoothly within the actuators' ranges ([-1, 1] where unlimited): a new
    uniform target every `hold` seconds, approached with time constant `smooth` seconds, from zero."""
    limited = m.actuator_ctrllimited.astype(bool)
    lo = np.where(limited, m.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(limited, m.actuator_ctrlrange[:, 1], 1.0)
    every = max(1, round(hold / m.opt.timestep))
    targets = np.random.default_rng(seed).uniform(lo, hi, (steps // every + 1, m.nu))
    alpha = 1.0 - np.exp(-m.opt.timestep / smooth)
    ctrl = np.empty((steps, m.nu))
    c = np.clip(np.zeros(m.nu), lo, hi)
    for t in range(steps):
        c = c + alpha * (targets[t // every] - c)
        ctrl[t] = c
    return ctrl


def model_motion(
    path: str | os.PathLike,
    seconds: float = 5.0,
    controls: Literal["random", "zero"] = "random",
    seed: int = 0,
    engine: Literal["hurtle", "mujoco"] = "hurtle",
    fps: float = 60.0,
) -> tuple[np.ndarray, float]:
    """The model's `qpos` `[1, frames, nq]` over `seconds` from its initial state, under `random_controls` or
    none, stepped by hurtle's physics (one compiled scan) or MuJoCo C's; frames a whole number of physics steps
    apart, about `1 / fps` s. `path`: an MJCF or URDF file, or an MJCF string. Returns `(qpos, seconds between
    frames)`."""
    if not seconds > 0:
        raise ValueError(f"model_motion: seconds must be positive, got {seconds}")
    path = os.fspath(path)
    m = compile_mjcf(path)
    substeps = max(1, round((1 / fps) / m.opt.timestep))
    nframe = max(1, round(seconds / (substeps * m.opt.timestep)))
    steps = nframe * substeps
    ctrl = random_controls(m, steps, seed) if controls == "random" else np.zeros((steps, m.nu))
    ctrl = ctrl.reshape(nframe, substeps, m.nu)
    frame_dt = substeps * float(m.opt.timestep)
    if engine == "mujoco":
        d = mujoco.MjData(m)
        qpos = np.empty((nframe + 1, m.nq))
        qpos[0] = d.qpos
        for f in range(nframe):
            for k in range(substeps):
                d.ctrl[:] = ctrl[f, k]
                mujoco.mj_step(m, d)
            qpos[f + 1] = d.qpos
        return qpos[None], frame_dt
    if engine != "hurtle":
        raise ValueError(f"model_motion: engine must be 'hurtle' or 'mujoco', got {engine!r}")
    import jax
    import jax.numpy as jnp

    import hurtle.physics as hp

    model = hp.load(path)
    d0 = hp.make_data(model)

    @jax.jit
    def motion(d, ctrl):
        def frame(d, c):
            d = jax.lax.fori_loop(0, substeps, lambda k, d: hp.step(model, d.replace(ctrl=c[k])), d)
            return d, d.qpos

        return jax.lax.scan(frame, d, ctrl)[1]

    frames = motion(d0, jnp.asarray(ctrl, d0.qpos.dtype))
    qpos = np.concatenate([np.asarray(d0.qpos, np.float64)[None], np.asarray(frames, np.float64)])
    return qpos[None], frame_dt


def task_motion(
    name: str, seconds: float = 5.0, controls: Literal["random", "zero"] = "random", seed: int = 0
) -> tuple[object, np.ndarray, float, np.ndarray | None]:
    """A registered physics task from a reset under uniformly random actions (or zero ones) for `seconds`, on
    hurtle's physics, one frame per control step, the episode restarted where it ends: `(task, qpos [1, frames,
    nq], seconds between frames, mocap_pos [1, frames, nmocap, 3] or None)`. ValueError naming a task that is not
    a physics task."""
    import jax
    import jax.numpy as jnp

    from hurtle.envs import make, wrappers
    from hurtle.envs.physics_env import PhysicsEnv

    if not seconds > 0:
        raise ValueError(f"task_motion: seconds must be positive, got {seconds}")
    env = make(name)
    task = env.unwrapped
    if not isinstance(task, PhysicsEnv):
        raise ValueError(f"{name} has no MJCF model to show ({type(task).__name__} is not a physics task)")
    env = wrappers.AutoReset(env)
    steps = max(1, round(seconds / task.dt))
    space = task.action_space
    low, high = (np.nan_to_num(np.asarray(b, np.float64), posinf=1.0, neginf=-1.0) for b in (space.low, space.high))
    mocap = task.model.nmocap > 0

    @jax.jit
    def motion(key):
        k_reset, k_act = jax.random.split(key)

        def frame(state, k):
            u = jax.random.uniform(k, space.shape, task.dtype)
            action = jnp.asarray(low + (high - low) * u) if controls == "random" else jnp.zeros(space.shape, task.dtype)
            state = env.step(state, action.astype(task.dtype))
            return state, (state.physics.qpos, state.physics.mocap_pos)

        start = env.reset(k_reset)
        _, (qpos, mpos) = jax.lax.scan(frame, start, jax.random.split(k_act, steps))
        return jnp.concatenate([start.physics.qpos[None], qpos]), jnp.concatenate([start.physics.mocap_pos[None], mpos])

    qpos, mpos = jax.device_get(motion(jax.random.key(seed)))
    qpos = np.asarray(qpos, np.float64)[None]
    return task, qpos, task.dt, (np.asarray(mpos, np.float64)[None] if mocap else None)


__all__ = ["model_motion", "random_controls", "task_motion"]
