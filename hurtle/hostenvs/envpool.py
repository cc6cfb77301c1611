"""EnvPool environments as a host environment (the `envpool` extra: `pip install 'hurtle[envpool]'`).

EnvPool steps a batch of environments in its own C++ thread pool (Atari, MuJoCo's Gym tasks, classic
control, ...). Its Gymnasium interface resets an ended environment on the next call; here the ended ones are
reset at once (`reset(env_id)`), so that a step follows `HostEnv`'s same-step autoreset: the new episode's
first observation in `obs`, the ended one's last in `final_obs`.

Tasks with MuJoCo Playground's asymmetric observations (a dict of `"state"` and `"privileged_state"`: EnvPool's
`MuJoCoPlayground/...` tasks) give `state` as the observation and `privileged_state` as `HostStep.privileged_obs`;
their reward terms (EnvPool's `info["reward_<term>"]`, scaled, not times the control period) are logged as
`reward/<term>`.
"""

from __future__ import annotations

import numpy as np

from hurtle.envs.base import float_dtype
from hurtle.hostenvs.base import EpisodeCounter, HostEnv, HostStep, guard_nonfinite
from hurtle.hostenvs.gymnasium import _space


class EnvPoolEnv(HostEnv):
    """`num_envs` copies of the EnvPool task `env` (an EnvPool id such as "HalfCheetah-v5").

    num_threads: EnvPool's worker threads (0: its default, one per CPU).
    """

    def __init__(self, env: str, num_envs: int, num_threads: int = 0, **kwargs):
        try:
            import envpool
        except ImportError:
            raise ImportError(f"{env}: the envpool backend needs EnvPool: pip install 'hurtle[envpool]'") from None
        if env not in envpool.list_all_envs():
            raise ValueError(f"{env}: not an EnvPool environment id (envpool.list_all_envs() lists them)")
        if num_envs < 1:
            raise ValueError(f"{env}: num_envs must be positive, got {num_envs}")
        self.name, self.num_envs = env, int(num_envs)
        self._options = dict(kwargs, env_type="gymnasium", num_envs=self.num_envs, num_threads=num_threads)
        self.pool = envpool.make(env, **self._options)
        try:
            space = self.pool.observation_space
            self.asymmetric = hasattr(space, "spaces") and set(space.spaces) == {"state", "privileged_state"}
            if self.asymmetric:
                self.privileged_observation_space = _space(space["privileged_state"], env)
                space = space["state"]
            self.observation_space = _space(space, env)
            self.action_space = _space(self.pool.action_space, env)
        except BaseException:
            self.close()
            raise
        self.episode_limit = self.pool.config.get("max_episode_steps")
        self._dtype = float_dtype()
        self._counter = EpisodeCounter(self.num_envs, None)
        self._seeded = False

    def reset(self, seed: int) -> np.ndarray:
        # EnvPool takes its seed when made; a different seed here starts a pool seeded with it
        if self._seeded or seed != self.pool.config["seed"]:
            import envpool

            self.pool.close()
            self.pool = envpool.make(self.name, **{**self._options, "seed": int(seed)})
        self._seeded = True
        obs, _ = self.pool.reset()
        self._counter.reset()
        obs, self.reset_privileged_obs = self._split(obs)
        return obs

    def _split(self, obs) -> tuple[np.ndarray, np.ndarray | None]:
        """(the observation, the privileged one or None), copied in the run's float dtype."""
        if self.asymmetric:
            return np.array(obs["state"], self._dtype), np.array(obs["privileged_state"], self._dtype)
        return np.array(obs, self._dtype), None

    def step(self, action: np.ndarray) -> HostStep:
        action = self._check_action(action)
        obs, reward, terminated, truncated, info = self.pool.step(action)
        (obs, privileged), reward = self._split(obs), np.asarray(reward, self._dtype)
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        more = () if privileged is None else (privileged,)
        final_obs, reward, terminated, bad = guard_nonfinite(obs.copy(), reward, terminated, *more)
        final_privileged = None if privileged is None else np.where(bad[:, None], 0, privileged)
        truncated &= ~terminated
        ended = np.nonzero(terminated | truncated)[0]
        if ended.size:
            fresh, _ = self.pool.reset(ended.astype(np.int32))
            fresh, fresh_privileged = self._split(fresh)
            obs[ended] = fresh
            if privileged is not None:
                privileged[ended] = fresh_privileged
        _, metrics = self._counter.add(reward.astype(np.float64), terminated)
        for key, value in info.items():
            if key.startswith("reward_"):
                metrics[f"reward/{key[len('reward_') :]}"] = np.asarray(value, self._dtype)
        metrics["episode/return"] = metrics["episode/return"].astype(self._dtype)
        metrics["nan_resets"] = bad.astype(np.int32)
        self._counter.reset(ended)
        return HostStep(obs, reward, terminated, truncated, final_obs, metrics, privileged, final_privileged)

    def close(self) -> None:
        if getattr(self, "pool", None) is not None:
            self.pool.close()
            self.pool = None


__all__ = ["EnvPoolEnv"]
