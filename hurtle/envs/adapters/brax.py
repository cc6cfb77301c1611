"""Brax and MuJoCo Playground environments as hurtle environments (`from_brax`).

Brax's `Env` has hurtle's method names (`reset(rng)`, `step(state, action)`, `observation_size`,
`action_size`); this adapter converts the state: Brax's `pipeline_state` (Playground's `data`) becomes
`physics`, the float `done` a boolean, and a Brax time limit (`info["truncation"]`, which Brax also
reports as `done`) becomes hurtle's `truncation` with `done` left for termination. Metrics and info pass
through both ways. Playground's asymmetric observations (a dict of `"state"` and `"privileged_state"`, its
locomotion and hand tasks) become `obs` and `privileged_obs`. Actions are Brax's normalised controls, a Box
of [-1, 1]. Pass the environment
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


def _flat(size: Any) -> int | None:
    """A flat observation's length from Brax's `observation_size` entry (an int, or Playground's 1-d shape)."""
    if isinstance(size, (int, np.integer)):
        return int(size)
    if isinstance(size, tuple) and len(size) == 1 and isinstance(size[0], (int, np.integer)):
        return int(size[0])
    return None


def raw_key(key: jax.Array) -> jax.Array:
    """A uint32 key array (`PRNGKey` style) for libraries that predate typed keys."""
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key


class BraxEnv(Env):
    """A Brax/Playground environment (`brax.envs.Env`, `mujoco_playground.MjxEnv`) as a hurtle `Env`."""

    def __init__(self, env: Any):
        size = env.observation_size
        self.asymmetric = isinstance(size, dict) and set(size) == {"state", "privileged_state"}
        sizes = (size["state"], size["privileged_state"]) if self.asymmetric else (size,)
        if not all(isinstance(_flat(n), int) for n in sizes):
            raise NotImplementedError(
                f"{type(env).__name__}: only flat observations, or Playground's dict of flat 'state' and "
                f"'privileged_state', are supported, got {size!r}"
            )
        self.brax_env = env
        self.dtype = float_dtype()
        self._observation_space = Box(-np.inf, np.inf, (_flat(sizes[0]),), self.dtype)
        self._privileged_space = Box(-np.inf, np.inf, (_flat(sizes[-1]),), self.dtype) if self.asymmetric else None
        self._action_space = Box(-1.0, 1.0, (int(env.action_size),), self.dtype)
        self._state_type = None

    @property
    def observation_space(self) -> Box:
        return self._observation_space

    @property
    def action_space(self) -> Box:
        return self._action_space

    @property
    def privileged_observation_space(self) -> Box | None:
        return self._privileged_space

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
        obs, privileged = (s.obs["state"], s.obs["privileged_state"]) if self.asymmetric else (s.obs, None)
        return State(
            obs=jnp.asarray(obs).astype(self.dtype),
            privileged_obs=None if privileged is None else jnp.asarray(privileged).astype(self.dtype),
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
        obs = {"state": state.obs, "privileged_state": state.privileged_obs} if self.asymmetric else state.obs
        fields = dict(obs=obs, reward=state.reward, done=done, metrics=dict(state.metrics), info=dict(state.info))
        return cls(**{name: state.physics}, **fields)

    def __repr__(self) -> str:
        return f"BraxEnv({type(self.brax_env).__name__})"
