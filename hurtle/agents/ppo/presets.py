"""Tuned PPO hyper-parameters per environment, in one place: `hurtle train ENV` starts from `preset(ENV)`.

Each entry overrides `Config`'s defaults; every one is validated by the tests. An environment without
an entry trains with the defaults. How each was tuned or where it comes from is noted beside it.

Entries marked "Brax" translate Brax's published PPO settings for its versions of these tasks
(brax/training/agents/ppo, the `train.ipynb` table): Brax collects `batch_size * num_minibatches`
sequences of `unroll_length` steps per update from `num_envs` environments, i.e. each environment runs
`batch_size * num_minibatches / num_envs` unrolls back to back; hurtle's iteration is one unroll of
`num_envs x unroll_length`, so `unroll_length` here is Brax's unroll times that count (the same
transitions per update, GAE over the whole segment), `num_epochs` is Brax's `num_updates_per_batch`,
and discount, learning rate, entropy cost and reward scaling are Brax's.
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
    # Tuned on a 2-core CPU (float32): eval return 1,000 (the time limit) after about 60k steps, about 40 s with
    # compilation (most of it); Brax's settings (below, for the double pendulum) reach it after ~1M steps.
    "inverted_pendulum": dict(
        num_envs=128,
        unroll_length=32,
        num_minibatches=8,
        num_epochs=4,
        num_timesteps=50 * 128 * 32,  # 204,800: 50 iterations
        learning_rate=1e-3,
        discount=0.99,
        reward_scaling=0.1,
        eval_every=5,
        num_eval_envs=16,
        checkpoint_every=10,
        policy_hidden_sizes=(64, 64),
        value_hidden_sizes=(64, 64),
    ),
    # Brax: 2M steps, reward scaling 10, unroll 5, 32 minibatches, 4 updates, discount 0.97, lr 3e-4, entropy
    # 1e-2, 2048 envs, batch 1024 (16 unrolls per update). See `inverted_pendulum` for the CPU-tuned one.
    "inverted_double_pendulum": dict(
        num_envs=2048,
        unroll_length=80,
        num_minibatches=32,
        num_epochs=4,
        num_timesteps=20_000_000,
        discount=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-2,
        reward_scaling=10.0,
        eval_every=5,
        checkpoint_every=5,
    ),
    # Brax ant: 50M steps, reward scaling 10, unroll 5, 32 minibatches, 4 updates, discount 0.97, lr 3e-4,
    # entropy 1e-2, 4096 envs, batch 2048 (16 unrolls)
    "ant": dict(
        num_envs=4096,
        unroll_length=80,
        num_minibatches=32,
        num_epochs=4,
        num_timesteps=50_000_000,
        discount=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-2,
        reward_scaling=10.0,
        eval_every=10,
        checkpoint_every=10,
    ),
    # Brax humanoid: 50M steps, reward scaling 0.1, unroll 10, 32 minibatches, 8 updates, discount 0.97,
    # lr 3e-4, entropy 1e-3, 2048 envs, batch 1024 (16 unrolls)
    "humanoid": dict(
        num_envs=2048,
        unroll_length=160,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=0.1,
        eval_every=10,
        checkpoint_every=10,
    ),
    # Brax humanoidstandup: 100M steps, reward scaling 0.1, unroll 15, 32 minibatches, 8 updates, discount
    # 0.97, lr 6e-4, entropy 1e-2, 2048 envs, batch 1024 (16 unrolls)
    "humanoidstandup": dict(
        num_envs=2048,
        unroll_length=240,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=100_000_000,
        discount=0.97,
        learning_rate=6e-4,
        entropy_cost=1e-2,
        reward_scaling=0.1,
        eval_every=10,
        checkpoint_every=10,
    ),
    # Brax halfcheetah: 50M steps, reward scaling 1, unroll 20, 32 minibatches, 8 updates, discount 0.95,
    # lr 3e-4, entropy 1e-3, 2048 envs, batch 512 (8 unrolls)
    "halfcheetah": dict(
        num_envs=2048,
        unroll_length=160,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.95,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=1.0,
        eval_every=10,
        checkpoint_every=10,
    ),
    # Brax publishes SAC, not PPO, for hopper and walker2d (and nothing for swimmer); these take its
    # halfcheetah PPO settings, the closest published ones, with Brax's ant discount for the healthy-reward tasks
    "hopper": dict(
        num_envs=2048,
        unroll_length=160,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=1.0,
        eval_every=10,
        checkpoint_every=10,
    ),
    "walker2d": dict(
        num_envs=2048,
        unroll_length=160,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.97,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=1.0,
        eval_every=10,
        checkpoint_every=10,
    ),
    "swimmer": dict(
        num_envs=2048,
        unroll_length=160,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.9999,  # Gymnasium's swimmer is known to need a discount near 1
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=1.0,
        eval_every=10,
        checkpoint_every=10,
    ),
    # Brax reacher: 50M steps, reward scaling 5, unroll 50, 32 minibatches, 8 updates, discount 0.95, lr 3e-4,
    # entropy 1e-3, 2048 envs, batch 256 (4 unrolls); Gymnasium's reacher episodes are 50 steps
    "reacher": dict(
        num_envs=2048,
        unroll_length=200,
        num_minibatches=32,
        num_epochs=8,
        num_timesteps=50_000_000,
        discount=0.95,
        learning_rate=3e-4,
        entropy_cost=1e-3,
        reward_scaling=5.0,
        episode_length=50,
        eval_every=10,
        checkpoint_every=10,
    ),
}


def preset(env: str) -> Config:
    """`Config` for `env` with its tuned values (the defaults where it has none)."""
    return Config(env=env, **PRESETS.get(env, {}))


def preset_fields(env: str) -> dict[str, Any]:
    """The fields `env`'s preset sets, with their values."""
    return dict(PRESETS.get(env, {}))


__all__ = ["PRESETS", "preset", "preset_fields"]
