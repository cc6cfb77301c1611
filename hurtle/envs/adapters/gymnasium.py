"""hurtle environments as Gymnasium environments: `GymnasiumEnv` (one) and `GymnasiumVectorEnv` (a batch).

Observations are float32 (Gymnasium's convention); a task with a privileged observation (an asymmetric
critic's input, `State.privileged_obs`) gives a `Dict` of `"state"` and `"privileged_state"`, as MuJoCo
Playground and EnvPool name them, and rewards Python floats (one env) or float64 arrays
(the vector env); continuous actions are cast to the task's float dtype, discrete ones are int64 in the
spaces. This holds with `jax_enable_x64` on or off. `reset` and `step` are jitted once per environment
object. `reset(seed=...)` seeds Gymnasium's `np_random`, from which every reset draws its JAX key, so
seeded runs repeat exactly.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from hurtle.envs.adapters._common import StateRenderer, cast_action
from hurtle.envs.adapters._common import observation as _observation
from hurtle.envs.adapters._common import reset as _reset
from hurtle.envs.adapters._common import step as _step
from hurtle.envs.base import Box, Discrete, Env, Space
from hurtle.envs.wrappers import AutoReset, VmapWrapper


def gymnasium_space(space: Space, float_type: Any = np.float32) -> gymnasium.spaces.Space:
    """The Gymnasium space of a hurtle space: a float32 `Box`, or a `Discrete` with int64 values."""
    if isinstance(space, Discrete):
        return gymnasium.spaces.Discrete(space.n)
    if isinstance(space, Box):
        return gymnasium.spaces.Box(
            space.low.astype(float_type), space.high.astype(float_type), space.shape, float_type
        )
    raise TypeError(f"no Gymnasium space for {space!r}")


def observation_space(env: Env) -> gymnasium.spaces.Space:
    """The task's observation space in Gymnasium: a float32 `Box`, or, where the task has a privileged observation,
    a `Dict` of `"state"` (the policy's) and `"privileged_state"` (the critic's)."""
    policy = gymnasium_space(env.observation_space)
    if env.privileged_observation_space is None:
        return policy
    return gymnasium.spaces.Dict(
        {"state": policy, "privileged_state": gymnasium_space(env.privileged_observation_space)}
    )


def _key(rng: np.random.Generator) -> jax.Array:
    return jax.random.key(int(rng.integers(0, 2**32 - 1)))


def _check_options(options: dict | None) -> None:
    if options:
        raise ValueError(f"reset options are not supported, got {sorted(options)}")


class GymnasiumEnv(gymnasium.Env):
    """One hurtle environment as a `gymnasium.Env`; `terminated` is `done`, `truncated` is `truncation`.

    The environment is used as given (`make` includes the time limit); it does not reset by itself.
    `info` holds the state's metrics as Python numbers; `self.state` is the current hurtle `State`.

    `render_mode="rgb_array"` (physics tasks): `render()` returns the current state as a `[height, width, 3]`
    uint8 frame by MuJoCo's renderer (`hurtle.io.video`), from the model's camera `camera` (a name) or one that
    follows the first body; `metadata["render_fps"]` is one frame per step.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self, env: Env, render_mode: str | None = None, width: int = 640, height: int = 480, camera: str | None = None
    ):
        self.env = env
        self.observation_space = observation_space(env)
        self.action_space = gymnasium_space(env.action_space)
        self.state = None
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"{env!r}: render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self._renderer = StateRenderer(env, width, height, camera) if render_mode else None
        if self._renderer is not None:
            self.metadata = {**self.metadata, "render_fps": self._renderer.fps}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        _check_options(options)
        self.state = _reset(self.env, _key(self.np_random))
        obs, privileged, metrics = jax.device_get((self.state.obs, self.state.privileged_obs, self.state.metrics))
        return _observation(obs, privileged), _numbers(metrics)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        self.state = _step(self.env, self.state, cast_action(self.env, action))
        s = self.state
        obs, privileged, reward, done, truncation, metrics = jax.device_get(
            (s.obs, s.privileged_obs, s.reward, s.done, s.truncation, s.metrics)
        )
        return _observation(obs, privileged), float(reward), bool(done), bool(truncation), _numbers(metrics)

    def render(self) -> np.ndarray | None:
        """The current state's frame (`render_mode="rgb_array"`); None without a render mode."""
        if self._renderer is None:
            return None
        return self._renderer.render(self.state)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
        super().close()


def _numbers(metrics: dict) -> dict:
    return {k: np.asarray(v).item() for k, v in metrics.items()}


class GymnasiumVectorEnv(VectorEnv):
    """`num_envs` copies of a hurtle environment as a `gymnasium.vector.VectorEnv`, stepped in one jitted call.

    It resets an environment in the step that ends its episode (`AutoresetMode.SAME_STEP`): the returned
    observation is then the new episode's first, and `infos["final_obs"]` (float32, all environments,
    valid where `infos["_final_obs"]` is True) the observation the step reached (a dict, as the observations, for
    a task with a privileged observation). Where episodes ended,
    `infos["episode"] = {"r": return, "l": length}` (with `"_episode"`), when the environment has a time
    limit's episode metrics. No other infos.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: Env, num_envs: int):
        self.env = VmapWrapper(AutoReset(env))
        self.num_envs = int(num_envs)
        self.single_observation_space = observation_space(env)
        self.single_action_space = gymnasium_space(env.action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.state = None

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        _check_options(options)
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} environments")
            keys = jax.numpy.stack([jax.random.key(int(s)) for s in seed])
            super().reset(seed=int(seed[0]))
        else:
            super().reset(seed=seed)
            keys = jax.random.split(_key(self.np_random), self.num_envs)
        self.state = _reset(self.env, keys)
        return _observation(*jax.device_get((self.state.obs, self.state.privileged_obs))), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        self.state = _step(self.env, self.state, cast_action(self.env, actions, (self.num_envs,)))
        s = self.state
        obs, privileged, reward, done, truncation, final_obs, final_privileged, metrics = jax.device_get(
            (s.obs, s.privileged_obs, s.reward, s.done, s.truncation, s.info["final_obs"],
             s.info.get("final_privileged_obs"), s.metrics)
        )  # fmt: skip
        done, truncation = np.array(done, bool), np.array(truncation, bool)
        ended = done | truncation
        infos: dict[str, Any] = {}
        if ended.any():
            infos["final_obs"] = _observation(final_obs, final_privileged)
            infos["_final_obs"] = ended
            if "episode/return" in metrics:
                r = np.where(ended, np.asarray(metrics["episode/return"], np.float64), 0.0)
                length = np.where(ended, np.asarray(metrics["episode/length"], np.int64), 0)
                infos["episode"], infos["_episode"] = {"r": r, "l": length}, ended.copy()
        return _observation(obs, privileged), np.array(reward, np.float64), done, truncation, infos
