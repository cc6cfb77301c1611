"""gymnax environments as hurtle environments (`from_gymnax(env, params)`).

A gymnax environment is stateless with explicit parameters: `reset_env(key, params) -> (obs, env_state)`
and `step_env(key, env_state, action, params) -> (obs, env_state, reward, done, info)`. This adapter
uses those two (not gymnax's auto-resetting `step`, so the caller sees the terminal transition), keeps
`env_state` in `info["env_state"]` and a key in `info["gymnax_key"]`, split on every step. gymnax folds
its time limit (`params.max_steps_in_episode`) into `done`; for hurtle's separate `truncation`, raise
that limit and wrap the result in `EpisodeWrapper`. Written against the interface, without importing gymnax.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.envs.adapters.brax import raw_key
from hurtle.envs.base import Box, Discrete, Env, Space, State, float_dtype


def hurtle_space(space: Any, dtype: np.dtype) -> Space:
    """A hurtle space from a gymnax one: `Discrete(num_categories)` or `Box(low, high, shape)`."""
    if hasattr(space, "num_categories"):
        return Discrete(int(space.num_categories))
    if hasattr(space, "low") and hasattr(space, "high"):
        return Box(np.asarray(space.low, np.float64), np.asarray(space.high, np.float64), tuple(space.shape), dtype)
    raise NotImplementedError(f"gymnax space {type(space).__name__} is not supported (Discrete and Box are)")


class GymnaxEnv(Env):
    """A gymnax environment with fixed `params` (default: `env.default_params`) as a hurtle `Env`."""

    def __init__(self, env: Any, params: Any = None):
        self.gymnax_env = env
        self.params = env.default_params if params is None else params
        self.dtype = float_dtype()
        self._observation_space = hurtle_space(env.observation_space(self.params), self.dtype)
        self._action_space = hurtle_space(env.action_space(self.params), self.dtype)
        if not isinstance(self._observation_space, Box):
            raise NotImplementedError(f"{type(env).__name__}: only Box observations are supported")

    @property
    def observation_space(self) -> Box:
        return self._observation_space

    @property
    def action_space(self) -> Space:
        return self._action_space

    def reset(self, key: jax.Array) -> State:
        key, key_reset = jax.random.split(key)
        obs, env_state = self.gymnax_env.reset_env(raw_key(key_reset), self.params)
        return self._first(obs, env_state, key)

    def reset_to(self, env_state: Any, key: jax.Array | None = None) -> State:
        """Start from a gymnax `env_state` (its observation from the environment's `get_obs`)."""
        key = jax.random.key(0) if key is None else key
        return self._first(self.gymnax_env.get_obs(env_state), env_state, key)

    def _first(self, obs: jax.Array, env_state: Any, key: jax.Array) -> State:
        info = {"env_state": env_state, "gymnax_key": key}
        return State.first(jnp.asarray(obs).astype(self.dtype), self.dtype, info=info)

    def step(self, state: State, action: jax.Array) -> State:
        action = self.action_space.check(action, repr(self))
        key, key_step = jax.random.split(state.info["gymnax_key"])
        obs, env_state, reward, done, _ = self.gymnax_env.step_env(
            raw_key(key_step), state.info["env_state"], action, self.params
        )
        return state.replace(
            obs=jnp.asarray(obs).astype(self.dtype),
            reward=jnp.asarray(reward).astype(self.dtype),
            done=jnp.asarray(done).astype(bool),
            truncation=jnp.zeros((), bool),
            info={**state.info, "env_state": env_state, "gymnax_key": key},
        )

    def __repr__(self) -> str:
        return f"GymnaxEnv({type(self.gymnax_env).__name__})"
