"""Sim-to-sim: a run's policy replayed on MuJoCo C beside hurtle's physics (`hurtle eval RUN --engine mujoco`).

A task that reproduces a Gymnasium environment (its `gymnasium_id`: the locomotion suite, reacher, pusher) is
replayed in that environment itself: Gymnasium's own code on MuJoCo C, its observations, rewards, resets and
termination, at the run's time limit. Any other physics task is replayed in hurtle's MuJoCo C host environment
(`hurtle.hostenvs.MujocoEnv`: the task's own observation, reward and resets, MuJoCo C's physics). The policy is the
run's deterministic one with its observation normalisation (part of the policy item). Its returns on hurtle's
physics come from the run's own evaluation on the same number of fresh episodes, so that the two differ by the
physics (MuJoCo C steps in float64, a run in float32 unless x64; a run's contact cap `nconmax` applies to hurtle
alone) and by the episodes' random starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from hurtle import podracer
from hurtle.envs.base import float_dtype
from hurtle.hostenvs import GymnasiumEnv, HostEnv, MujocoEnv
from hurtle.hostenvs.base import run_episodes


def twin_id(config: Any) -> str | None:
    """The Gymnasium environment `config.env` reproduces (e.g. "Ant-v5"), None where it reproduces none;
    ValueError for a run that already trained on a host backend other than hurtle's tasks on MuJoCo C."""
    from hurtle.agents import runner
    from hurtle.envs.physics_env import PhysicsEnv

    backend = getattr(config, "env_backend", "mujoco")
    if backend != "mujoco":
        raise ValueError(
            f"{config.env} was trained on its {backend} environment, which `hurtle eval` already runs; --engine "
            f"mujoco replays hurtle's own tasks on MuJoCo C"
        )
    task = runner.make_env(config).unwrapped
    if not isinstance(task, PhysicsEnv):
        raise ValueError(
            f"{config.env} is not a physics task ({type(task).__name__}): there is no MuJoCo C version to replay it in"
        )
    return getattr(task, "gymnasium_id", None)


def engine_name(config: Any) -> str:
    """Where `make_host_env` replays `config`'s policy, in words."""
    gym_id = twin_id(config)
    return f"MuJoCo C (Gymnasium's {gym_id})" if gym_id else f"MuJoCo C (hurtle's {config.env} task)"


def _host_env_builder(config: Any) -> Callable[[int], HostEnv]:
    """`build(num_envs)` of `config`'s MuJoCo C environments (the twin looked up once; ValueError as `twin_id`)."""
    gym_id = twin_id(config)
    if gym_id is not None:
        return lambda n: GymnasiumEnv(gym_id, n, max_episode_steps=config.time_limit())
    return lambda n: MujocoEnv(config.env, n, episode_length=config.time_limit())


def make_host_env(config: Any, num_envs: int) -> HostEnv:
    """`num_envs` MuJoCo C environments of `config`'s task: its Gymnasium twin at the run's time limit, else
    hurtle's task on MuJoCo C (`MujocoEnv`)."""
    return _host_env_builder(config)(num_envs)


def make_evaluate(
    config: Any, act: Callable[[Any, jax.Array], jax.Array], num_episodes: int | None = None
) -> Callable[[Any, jax.Array], dict[str, np.ndarray]]:
    """`evaluate(policy, key)`: one episode of the deterministic `act(policy, obs)` on each of `num_episodes`
    (default `config.num_eval_envs`) MuJoCo C environments of `config` (`make_host_env`), the policy on the host
    CPU; per-episode `episode_return`, `episode_length` and the task's measures (`run_episodes`). A config with no
    MuJoCo C version is refused here."""
    n = num_episodes or config.num_eval_envs
    build = _host_env_builder(config)
    cpu = jax.local_devices(backend="cpu")[0]
    jitted = jax.jit(act)

    def evaluate(policy, key):
        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        policy = podracer.local_copy(policy, cpu)
        dtype = float_dtype()

        def action(obs):
            return jitted(policy, jax.device_put(np.asarray(obs, dtype), cpu))

        with build(n) as env:
            return run_episodes(env, action, seed, config.time_limit())

    return evaluate


__all__ = ["engine_name", "make_evaluate", "make_host_env", "twin_id"]
