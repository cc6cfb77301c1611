"""A hurtle environment as a `dm_env.Environment` (DeepMind's environment API).

`reset()` starts an episode (`StepType.FIRST`); `step` returns MID transitions and a LAST one when the
episode ends: discount 0 on termination (`done`), 1 on truncation. The step after a LAST ignores its
action and starts a new episode, as dm_env specifies. Observations are float32, rewards float64 and
discounts float64 (the specs say so); actions are cast to the task's dtype. Keys come from `seed`.
"""

from __future__ import annotations

from typing import Any

import dm_env
import jax
import numpy as np
from dm_env import specs

from hurtle.envs.adapters._common import StateRenderer, cast_action
from hurtle.envs.adapters._common import observation as _observation
from hurtle.envs.adapters._common import reset as _reset
from hurtle.envs.adapters._common import step as _step
from hurtle.envs.base import Box, Discrete, Env, Space


def dm_spec(space: Space, name: str, float_type: Any = np.float32) -> specs.Array:
    """The dm_env spec of a hurtle space: `DiscreteArray`, `BoundedArray`, or `Array` when unbounded."""
    if isinstance(space, Discrete):
        return specs.DiscreteArray(space.n, dtype=np.int32, name=name)
    if isinstance(space, Box):
        if not (np.isfinite(space.low).any() or np.isfinite(space.high).any()):
            return specs.Array(space.shape, float_type, name=name)
        return specs.BoundedArray(space.shape, float_type, space.low, space.high, name=name)
    raise TypeError(f"no dm_env spec for {space!r}")


class DmEnv(dm_env.Environment):
    """One hurtle environment as a `dm_env.Environment`; `self.state` is the current hurtle `State`."""

    def __init__(self, env: Env, seed: int = 0):
        self.env = env
        self._renderers: dict[tuple, StateRenderer] = {}
        self._key = jax.random.key(seed)
        self._observation_spec = dm_spec(env.observation_space, "observation")
        if env.privileged_observation_space is not None:  # as MuJoCo Playground and EnvPool name them
            privileged = dm_spec(env.privileged_observation_space, "privileged_state")
            self._observation_spec = {"state": dm_spec(env.observation_space, "state"), "privileged_state": privileged}
        self._action_spec = dm_spec(env.action_space, "action")
        self.state = None
        self._episode_over = True

    def observation_spec(self) -> specs.Array | dict[str, specs.Array]:
        return self._observation_spec

    def action_spec(self) -> specs.Array:
        return self._action_spec

    def reward_spec(self) -> specs.Array:
        return specs.Array((), np.float64, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), np.float64, 0.0, 1.0, name="discount")

    def render(self, height: int = 480, width: int = 640, camera: str | None = None) -> np.ndarray:
        """The current state as a `[height, width, 3]` uint8 frame by MuJoCo's renderer (physics tasks; as
        dm_control's `physics.render(height, width, camera_id)`)."""
        key = (height, width, camera)
        if key not in self._renderers:
            self._renderers[key] = StateRenderer(self.env, width, height, camera)
        return self._renderers[key].render(self.state)

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()

    def reset(self) -> dm_env.TimeStep:
        self._key, key = jax.random.split(self._key)
        self.state = _reset(self.env, key)
        self._episode_over = False
        return dm_env.restart(_observation(*jax.device_get((self.state.obs, self.state.privileged_obs))))

    def step(self, action: Any) -> dm_env.TimeStep:
        if self._episode_over:
            return self.reset()
        self.state = _step(self.env, self.state, cast_action(self.env, action))
        s = self.state
        obs, privileged, reward, done, truncation = jax.device_get(
            (s.obs, s.privileged_obs, s.reward, s.done, s.truncation)
        )
        obs, reward = _observation(obs, privileged), np.asarray(reward, np.float64)
        self._episode_over = bool(done) or bool(truncation)
        if done:
            return dm_env.termination(reward, obs)
        if truncation:
            return dm_env.truncation(reward, obs, np.float64(1.0))
        return dm_env.transition(reward, obs, np.float64(1.0))
