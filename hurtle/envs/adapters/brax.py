"""Brax and MuJoCo Playground environments as hurtle environments (`from_brax`).

Brax's `Env` has hurtle's method names (`reset(rng)`, `step(state, action)`, `observation_size`,
`action_size`); this adapter converts the state: Brax's `pipeline_state` (Playground's `data`) becomes
`physics`, the float `done` a boolean, and a Brax time limit (`info["truncation"]`, which Brax also
reports as `done`) becomes hurtle's `truncation` with `done` left for termination. Metrics and info pass
through both ways. Actions are Brax's normalised controls, a Box of [-1, 1]. Pass the environment
without Brax's auto-reset (hurtle's `AutoReset` does that); Brax's `EpisodeWrapper` may stay. The
adapter is written against the interface (it never imports Brax), so it works with any object that
follows it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.envs.base import Box, Env, State, float_dtype


def raw_key(key: jax.Array) -> jax.Array:
    """A uint32 key array (`PRNGKey` style) for libraries that predate typed keys."""
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key


class BraxEnv(Env):
    """A Brax/Playground environment (`brax.envs.Env`, `mujoco_playground.MjxEnv`) as a hurtle `Env`."""

    def __init__(self, env: Any):
        size = env.observation_size
        if not isinstance(size, (int, np.integer)):
            raise NotImplementedError(f"{type(env).__name__}: only flat observations are supported, got {size!r}")
        self.brax_env = env
        self.dtype = float_dtype()
        self._observation_space = Box(-np.inf, np.inf, (int(size),), self.dtype)
        self._action_space = Box(-1.0, 1.0, (int(env.action_size),), self.dtype)
        self._state_type = None

    @property
    def observation_space(self) -> Box:
        return self._observation_space

    @property
    def action_space(self) -> Box:
        return self._action_space

    @property
    def state_type(self) -> type:
        """The class of the wrapped environment's states, learned from a shape-only trace of its reset."""
        if self._state_type is None:
            self._state_type = type(jax.eval_shape(self.brax_env.reset, jax.random.PRNGKey(0)))
        return self._state_type

    def reset(self, key: jax.Array) -> State:
        s = self.brax_env.reset(raw_key(key))
        self._state_type = type(s)
        return self._from_brax(s)

    def step(self, state: State, action: jax.Array) -> State:
        action = self.action_space.check(action, repr(self))
        return self._from_brax(self.brax_env.step(self._to_brax(state), action))

    def _from_brax(self, s: Any) -> State:
        physics = s.pipeline_state if hasattr(s, "pipeline_state") else s.data
        info = dict(s.info)
        truncation = jnp.asarray(info.get("truncation", 0.0)) > 0
        return State(
            obs=jnp.asarray(s.obs).astype(self.dtype),
            reward=jnp.asarray(s.reward).astype(self.dtype),
            done=(jnp.asarray(s.done) > 0) & ~truncation,
            truncation=truncation,
            metrics=dict(s.metrics),
            info=info,
            physics=physics,
        )

    def _to_brax(self, state: State) -> Any:
        cls = self.state_type
        name = "pipeline_state" if "pipeline_state" in {f.name for f in dataclasses.fields(cls)} else "data"
        # never done: hurtle's wrappers reset, and a Brax time limit reads the incoming done
        done = jnp.zeros_like(state.reward)
        fields = dict(obs=state.obs, reward=state.reward, done=done, metrics=dict(state.metrics), info=dict(state.info))
        return cls(**{name: state.physics}, **fields)

    def __repr__(self) -> str:
        return f"BraxEnv({type(self.brax_env).__name__})"
