"""Shared environments for the env tests: built once per session, so the jitted programs keyed on an
environment object (the adapters', `JIT_RESET`/`JIT_STEP`) compile once for all tests."""

import functools

import jax
import numpy as np

import hurtle.envs as envs
from tests.envs.tasks import Reacher

CLASSIC = ("cartpole", "pendulum", "acrobot", "mountain_car_continuous")
ALL = CLASSIC + ("reacher",)

JIT_RESET = jax.jit(lambda env, key: env.reset(key), static_argnums=0)
JIT_STEP = jax.jit(lambda env, state, action: env.step(state, action), static_argnums=0)


@functools.cache
def task(name: str) -> envs.Env:
    """The bare task `name` (a registered classic task, or the test reacher)."""
    return Reacher() if name == "reacher" else envs.make(name).unwrapped


@functools.cache
def timed(name: str, episode_length: int | None = None) -> envs.Env:
    """The task inside its time limit, as `make` returns it (the reacher: 200 steps)."""
    if name == "reacher":
        return envs.wrappers.EpisodeWrapper(task(name), episode_length or 200)
    return envs.make(name, episode_length=episode_length)


@functools.cache
def batch(name: str, size: int = 4) -> envs.Env:
    """`size` copies of `timed(name)` in the training stack (NaN guard, auto-reset, vmap)."""
    return envs.wrappers.wrap_for_training(timed(name), batch_size=size)


def random_actions(env: envs.Env, rng, shape=()):
    """Random actions of `env.action_space` from a numpy generator (host side, no compilation)."""
    space = env.action_space
    if isinstance(space, envs.Discrete):
        return rng.integers(0, space.n, shape).astype(np.int32)
    return rng.uniform(space.low, space.high, shape + space.shape).astype(space.dtype)
