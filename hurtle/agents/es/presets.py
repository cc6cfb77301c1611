"""Tuned ES hyper-parameters per environment, in one place: `hurtle train ENV --algo es` starts from them.

Each entry overrides `Config`'s defaults; every one is validated by the tests. How each was tuned or where
it comes from is noted beside it.
"""

from __future__ import annotations

from typing import Any

from hurtle.agents.es.config import Config

PRESETS: dict[str, dict[str, Any]] = {
    # Tuned on a 2-core CPU: eval return 500 (the time limit) within a few generations
    "cartpole": dict(
        population_size=64,
        noise_std=0.05,
        learning_rate=0.03,
        num_timesteps=400_000,
        episode_length=500,
        eval_every=2,
        num_eval_envs=16,
        checkpoint_every=5,
        policy_hidden_sizes=(16,),
    ),
    "pendulum": dict(
        population_size=128,
        noise_std=0.05,
        learning_rate=0.02,
        episodes_per_member=2,
        num_timesteps=10_000_000,
        episode_length=200,
        eval_every=5,
        num_eval_envs=16,
        checkpoint_every=10,
    ),
    "inverted_pendulum": dict(
        population_size=64,
        noise_std=0.05,
        learning_rate=0.03,
        num_timesteps=2_000_000,
        eval_every=2,
        num_eval_envs=16,
        checkpoint_every=5,
        policy_hidden_sizes=(16,),
    ),
    # Salimans et al.'s MuJoCo settings scaled to one machine: sigma 0.02, Adam 0.01, L2 0.005
    "swimmer": dict(
        population_size=256, weight_decay=0.005, num_timesteps=50_000_000, eval_every=5, checkpoint_every=10
    ),
    "hopper": dict(
        population_size=256, weight_decay=0.005, num_timesteps=100_000_000, eval_every=5, checkpoint_every=10
    ),
    "halfcheetah": dict(
        population_size=256, weight_decay=0.005, num_timesteps=100_000_000, eval_every=5, checkpoint_every=10
    ),
}


def preset(env: str) -> Config:
    return Config(env=env, **PRESETS.get(env, {}))


__all__ = ["PRESETS", "preset"]
