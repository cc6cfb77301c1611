"""Any Gymnasium environment as a host environment: an id or a constructor, vectorised sync or async.

Gymnasium's vector environments run with its "same step" autoreset, so the step that ends an episode
returns the next episode's first observation and the ended one's last observation (`info["final_obs"]`),
which `HostStep.final_obs` carries for bootstrapping a truncated episode. "async" runs each environment in
a subprocess (Gymnasium's `AsyncVectorEnv`, shared memory); "sync" steps them in turn in this thread.
Observations arrive in the float dtype of hurtle's default (float32 unless `jax_enable_x64`), as its own
environments' do; an error inside an environment (a worker's, in async) is raised by `step`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hurtle.envs.base import Box, Discrete, float_dtype
from hurtle.hostenvs.base import EpisodeCounter, HostEnv, HostStep, guard_nonfinite


def _space(space: Any, name: str) -> Box | Discrete:
    import gymnasium as gym

    if isinstance(space, gym.spaces.Box):
        return Box(space.low, space.high, space.shape, float_dtype())
    if isinstance(space, gym.spaces.Discrete) and int(space.start) == 0:
        return Discrete(int(space.n))
    raise NotImplementedError(f"{name}: Gymnasium space {space} (hurtle takes Box, and Discrete from 0)")


class GymnasiumEnv(HostEnv):
    """`num_envs` copies of a Gymnasium environment.

    env: a registered id (made with `kwargs`, e.g. `max_episode_steps`, which replaces the id's time limit)
      or a constructor returning a `gymnasium.Env` (called once per copy).
    vectorization: "sync" (one thread, in turn) or "async" (a subprocess each).
    """

    def __init__(self, env: str | Callable[[], Any], num_envs: int, vectorization: str = "sync", **kwargs):
        import gymnasium as gym

        self.name = env if isinstance(env, str) else getattr(env, "__name__", repr(env))
        if vectorization not in ("sync", "async"):
            raise ValueError(f"{self.name}: vectorization must be 'sync' or 'async', got {vectorization!r}")
        if num_envs < 1:
            raise ValueError(f"{self.name}: num_envs must be positive, got {num_envs}")
        same_step = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}
        if isinstance(env, str):
            try:
                spec = gym.spec(env)
            except gym.error.Error as e:
                raise ValueError(f"{env}: not a Gymnasium environment id ({e})") from None
            self.episode_limit = kwargs.get("max_episode_steps", spec.max_episode_steps)
            self.venv = gym.make_vec(env, num_envs, vectorization_mode=vectorization, vector_kwargs=same_step, **kwargs)
        else:
            kind = gym.vector.SyncVectorEnv if vectorization == "sync" else gym.vector.AsyncVectorEnv
            self.venv = kind([env] * num_envs, **same_step)
        self.num_envs = int(num_envs)
        try:
            self.observation_space = _space(self.venv.single_observation_space, self.name)
            self.action_space = _space(self.venv.single_action_space, self.name)
            if not isinstance(self.observation_space, Box):
                raise NotImplementedError(f"{self.name}: observations must be a Box")
        except BaseException:
            self.close()
            raise
        self._counter = EpisodeCounter(self.num_envs, None)
        self._dtype = self.observation_space.dtype

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.venv.reset(seed=seed)
        self._counter.reset()
        return np.asarray(obs, self._dtype)

    def step(self, action: np.ndarray) -> HostStep:
        action = self._check_action(action)
        obs, reward, terminated, truncated, info = self.venv.step(action)
        obs = np.asarray(obs, self._dtype)
        reward = np.asarray(reward, self._dtype)
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        ended = terminated | truncated
        final_obs = obs.copy()
        for i in np.nonzero(info.get("_final_obs", np.zeros(self.num_envs, bool)))[0]:
            final_obs[i] = info["final_obs"][i]
        final_obs, reward, terminated, bad = guard_nonfinite(final_obs, reward, terminated)
        truncated &= ~terminated
        if bad.any():
            # a non-finite step ends that environment; one that had not ended yet starts again here
            again = bad & ~ended
            if again.any():
                fresh, _ = self.venv.reset(options={"reset_mask": again})
                obs[again] = np.asarray(fresh, self._dtype)[again]
            obs[bad & ended] = np.where(np.isfinite(obs[bad & ended]), obs[bad & ended], 0)
        _, metrics = self._counter.add(reward.astype(np.float64), terminated)
        metrics["episode/return"] = metrics["episode/return"].astype(self._dtype)
        metrics["nan_resets"] = bad.astype(np.int32)
        self._counter.reset(np.nonzero(terminated | truncated)[0])
        return HostStep(obs, reward, terminated, truncated, final_obs, metrics)

    def close(self) -> None:
        if getattr(self, "venv", None) is not None:
            self.venv.close()
            self.venv = None


def mujoco_model(env_id: str):
    """The `MjModel` of a Gymnasium MuJoCo environment (`env.unwrapped.model`), None for any other."""
    import gymnasium as gym
    import mujoco

    env = gym.make(env_id)
    try:
        model = getattr(env.unwrapped, "model", None)
        return model if isinstance(model, mujoco.MjModel) else None
    finally:
        env.close()


def mujoco_rollout(env_id: str, act, policy, episodes: int, seed: int):
    """Episodes of the deterministic `act(policy, obs)` in a Gymnasium MuJoCo environment, recording its qpos:
    `(MjModel, qpos [episodes, frames, nq], dt, returns, lengths)`; frame 0 is the reset state, an episode that
    ended early holds its last pose to the longest one's end."""
    import gymnasium as gym

    from hurtle.envs.base import float_dtype

    env = gym.make(env_id)
    try:
        model = env.unwrapped.model
        runs, returns, lengths = [], [], []
        for e in range(episodes):
            obs, _ = env.reset(seed=seed + e)
            frames, ret, done = [env.unwrapped.data.qpos.copy()], 0.0, False
            while not done:
                action = np.asarray(act(policy, np.asarray(obs, float_dtype())[None]))[0]
                obs, reward, terminated, truncated, _ = env.step(action)
                frames.append(env.unwrapped.data.qpos.copy())
                ret += float(reward)
                done = terminated or truncated
            runs.append(np.array(frames))
            returns.append(ret)
            lengths.append(len(frames) - 1)
        longest = max(len(r) for r in runs)
        qpos = np.stack([np.concatenate([r, np.repeat(r[-1:], longest - len(r), 0)]) for r in runs])
        return model, qpos, float(env.unwrapped.dt), np.array(returns), np.array(lengths)
    finally:
        env.close()


__all__ = ["GymnasiumEnv", "mujoco_model", "mujoco_rollout"]
