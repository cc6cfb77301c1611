"""The host-environment contract: a batch of environments stepped on the host CPU, numpy in and out.

A `HostEnv` is what Sebulba's actor threads step: `reset(seed) -> obs` and `step(action) -> HostStep` over
`num_envs` environments at once, arrays with a leading batch axis. Episodes reset themselves on the step
that ends them (Gymnasium's "same step" autoreset, Brax's `AutoReset`): that step returns the new
episode's first observation in `obs` and the ended episode's last one in `final_obs`, so that a learner
bootstraps a truncated episode from the right state. `terminated` is the task's own end (bootstrap with
zero), `truncated` a time limit (bootstrap with the value of `final_obs`), as in `hurtle.envs.base`.

Metrics follow `EpisodeWrapper` and `NanGuard`: `episode/return` and `episode/length` are the running sums,
and the whole episode's on the step that ends it; `nan_resets` is 1 on a step whose observation or reward
was not finite (that environment then ends, with a zero observation and reward, and starts again).
"""

from __future__ import annotations

import abc
import dataclasses

import numpy as np

from hurtle.envs.base import Box, Discrete


@dataclasses.dataclass(frozen=True)
class HostStep:
    """One step of a batch of host environments (numpy arrays, leading axis the environment)."""

    obs: np.ndarray
    """The next observation: a new episode's first where one ended on this step."""
    reward: np.ndarray
    terminated: np.ndarray
    """The task's own end (bool)."""
    truncated: np.ndarray
    """A time limit's cut (bool); never together with `terminated`."""
    final_obs: np.ndarray
    """The step's own resulting observation, before any reset (equal to `obs` where no episode ended)."""
    metrics: dict[str, np.ndarray]
    """Per-environment values: `episode/return`, `episode/length`, `nan_resets` and the task's own."""
    privileged_obs: np.ndarray | None = None
    """The critic's privileged observation beside `obs` (`State.privileged_obs`), None for tasks without one."""
    final_privileged_obs: np.ndarray | None = None
    """The privileged observation the step reached, before any reset (as `final_obs`)."""

    @property
    def ended(self) -> np.ndarray:
        return self.terminated | self.truncated


class HostEnv(abc.ABC):
    """`num_envs` environments stepped together on the host; close it (or use `with`) to free its workers."""

    num_envs: int
    observation_space: Box
    action_space: Box | Discrete
    name: str
    episode_limit: int | None = None
    """The time limit in steps of an episode (truncated there), None where the environment has none known."""
    privileged_observation_space: Box | None = None
    """The space of `HostStep.privileged_obs`, None for tasks without one."""
    reset_privileged_obs: np.ndarray | None = None
    """The privileged observations `reset` started from (set by `reset` where the task has them)."""

    @abc.abstractmethod
    def reset(self, seed: int) -> np.ndarray:
        """Start every environment afresh from `seed` (reproducible); the first observations."""

    @abc.abstractmethod
    def step(self, action: np.ndarray) -> HostStep:
        """Step every environment with its row of `action`; ended episodes restart in the same call."""

    @abc.abstractmethod
    def close(self) -> None:
        """Free threads and processes (idempotent)."""

    def __enter__(self) -> HostEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_action(self, action: np.ndarray) -> np.ndarray:
        action = np.asarray(action)
        expected = (self.num_envs, *self.action_space.shape)
        if action.shape != expected:
            raise ValueError(f"{self.name}: action has shape {action.shape}, expected {expected}")
        return action


class EpisodeCounter:
    """The running return and length of each environment's episode, as `EpisodeWrapper` reports them."""

    def __init__(self, num_envs: int, episode_length: int | None):
        if episode_length is not None and episode_length < 1:
            raise ValueError(f"episode_length must be positive, got {episode_length}")
        self.episode_length = episode_length
        self.returns = np.zeros(num_envs, np.float64)
        self.lengths = np.zeros(num_envs, np.int32)

    def reset(self, ids: np.ndarray | None = None) -> None:
        self.returns[ids if ids is not None else slice(None)] = 0
        self.lengths[ids if ids is not None else slice(None)] = 0

    def add(self, reward: np.ndarray, terminated: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Count one step; returns the time limit's truncation and the episode metrics of this step."""
        self.returns += reward
        self.lengths += 1
        truncated = np.zeros_like(terminated)
        if self.episode_length is not None:
            truncated = (self.lengths >= self.episode_length) & ~terminated
        metrics = {"episode/return": self.returns.astype(reward.dtype), "episode/length": self.lengths.copy()}
        return truncated, metrics


def run_episodes(env: HostEnv, act, seed: int, max_steps: int) -> dict[str, np.ndarray]:
    """One episode in each of `env`'s environments from `seed`, the actions `act(obs)` of the batch's
    observations, each to its end or the time limit (`env.episode_limit`, else `max_steps` steps): per-episode
    `episode_return` (float64 sums) and `episode_length`, and the task's measures under "metrics" as the runner's
    evaluation gives them on the device: each reward term `reward/*` summed over the episode, every other metric
    (a task's success measures: `success`, `tracking/lin_vel_error`, ...) as it stood on the episode's last step."""
    n = env.num_envs
    obs = env.reset(seed)
    ret, length, alive = np.zeros(n), np.zeros(n), np.ones(n, bool)
    measured: dict[str, np.ndarray] = {}
    for _ in range(env.episode_limit or max_steps):
        step = env.step(np.asarray(act(obs)))
        ret += np.where(alive, step.reward, 0)
        length += alive
        for key, value in step.metrics.items():
            if key.startswith("episode/") or key == "nan_resets":
                continue  # the counter's own, reported above
            value = np.asarray(value, np.float64)
            if key.startswith("reward/"):
                measured[key] = measured.get(key, np.zeros(n)) + np.where(alive, value, 0)
            else:
                measured[key] = np.where(alive, value, measured.get(key, value))
        alive &= ~step.ended
        obs = step.obs
        if not alive.any():
            break
    return {"episode_return": ret, "episode_length": length, "metrics": measured}


def guard_nonfinite(obs, reward, terminated, *more: np.ndarray, bad: np.ndarray | None = None):
    """`NanGuard` on the host: rows whose observation, reward (or any of `more`) is not finite, and rows
    marked in `bad`, end (terminated) with a zero observation and reward. Returns (obs, reward, terminated,
    bad)."""
    n = reward.shape[0]
    bad = (
        (np.zeros(n, bool) if bad is None else bad)
        | ~np.isfinite(reward)
        | ~np.isfinite(obs.reshape(n, -1)).all(axis=1)
    )
    for x in more:
        bad |= ~np.isfinite(x.reshape(n, -1)).all(axis=1)
    if bad.any():
        obs, reward = obs.copy(), reward.copy()
        obs[bad] = 0
        reward[bad] = 0
        terminated = terminated | bad
    return obs, reward, terminated, bad


__all__ = ["EpisodeCounter", "HostEnv", "HostStep", "guard_nonfinite", "run_episodes"]
