"""Tuned PPO hyper-parameters per environment, in one place: `hurtle train ENV` starts from `preset(ENV)`.

Each entry overrides `Config`'s defaults; every one is validated by the tests. An environment without
an entry trains with the defaults. How each was tuned or where it comes from is noted beside it.
"""

from __future__ import annotations

from typing import Any

from hurtle.agents.ppo.config import Config

PRESETS: dict[str, dict[str, Any]] = {
    # Tuned on a 2-core CPU: eval return 500 (the time limit) after about 60k steps, ~15 s with compilation;
    # the run goes on to 143k steps so the curve shows it holds; checkpoints every 10 iterations (20k steps).
    "cartpole": dict(
        num_envs=64,
        unroll_length=32,
        num_minibatches=8,
        num_epochs=4,
        num_timesteps=70 * 64 * 32,  # 143,360: 70 iterations
        learning_rate=1e-3,
        eval_every=5,
        num_eval_envs=32,
        checkpoint_every=10,
        episode_length=500,
        policy_hidden_sizes=(64, 64),
        value_hidden_sizes=(64, 64),
    ),
}


def preset(env: str) -> Config:
    """`Config` for `env` with its tuned values (the defaults where it has none)."""
    return Config(env=env, **PRESETS.get(env, {}))


def preset_fields(env: str) -> dict[str, Any]:
    """The fields `env`'s preset sets, with their values."""
    return dict(PRESETS.get(env, {}))


__all__ = ["PRESETS", "preset", "preset_fields"]
