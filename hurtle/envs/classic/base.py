"""The shared shape of the classic-control tasks: a state vector in `info["state"]`, pure dynamics.

Each task keeps Gymnasium's `env.unwrapped.state` layout, so `reset_to(state)` starts from a state
copied out of Gymnasium and the two step side by side. Arithmetic follows Gymnasium's order of
operations, in the environment's float dtype (float64 under `jax_enable_x64`: the parity path).
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp

from hurtle.envs.base import Env, State, float_dtype


class ClassicControl(Env):
    """A task whose whole simulator state is one small vector, stored as `state.info["state"]`."""

    state_size: int

    def __init__(self):
        self.dtype = float_dtype()

    @abc.abstractmethod
    def sample_state(self, key: jax.Array) -> jax.Array:
        """A random initial state vector, as Gymnasium's reset draws it."""

    @abc.abstractmethod
    def observation(self, s: jax.Array) -> jax.Array:
        """The observation of state vector `s`."""

    @abc.abstractmethod
    def transition(self, s: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """One Gymnasium step from `s`: (next state, reward, terminated)."""

    def reset(self, key: jax.Array) -> State:
        return self.reset_to(self.sample_state(key))

    def reset_to(self, state: Any) -> State:
        """Start from a state vector in Gymnasium's `env.unwrapped.state` layout."""
        s = jnp.asarray(state).astype(self.dtype)
        if s.shape != (self.state_size,):
            raise ValueError(
                f"{type(self).__name__}.reset_to: state has shape {s.shape}, expected ({self.state_size},)"
            )
        return State.first(self.observation(s), self.dtype, info={"state": s})

    def step(self, state: State, action: jax.Array) -> State:
        action = self.action_space.check(action, type(self).__name__)
        s, reward, terminated = self.transition(state.info["state"], action)
        return state.replace(
            obs=self.observation(s),
            reward=jnp.asarray(reward, self.dtype),
            done=jnp.asarray(terminated, bool),
            truncation=jnp.zeros((), bool),
            info={**state.info, "state": s},
        )
