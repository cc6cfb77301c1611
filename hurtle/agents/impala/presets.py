"""Tuned hyper-parameters of the Sebulba learners per environment, in one place: `hurtle train ENV --arch
sebulba --algo impala|ppo` starts from them. Keys are hurtle task names (MuJoCo C backend) or Gymnasium ids.
How each was tuned is noted beside it."""

from __future__ import annotations

from typing import Any

_CARTPOLE = dict(
    env_backend="gymnasium",
    num_envs=16,
    unroll_length=32,
    num_timesteps=500_000,
    episode_length=500,
    learning_rate=1e-3,
    eval_every=5,
    num_eval_envs=8,
    checkpoint_every=10,
)


def _locomotion(**changes: Any) -> dict[str, Any]:
    """hurtle's MuJoCo tasks on MuJoCo C on a 2-core CPU: two actor threads of 16 environments (one MuJoCo C
    thread each), 64-step trajectories (batches of 2,048 transitions)."""
    return dict(
        dict(
            num_envs=16,
            actor_threads=2,
            env_threads=1,
            unroll_length=64,
            num_timesteps=5_000_000,
            learning_rate=3e-4,
            discount=0.99,
            reward_scaling=0.1,
            max_grad_norm=0.5,
            entropy_cost=1e-3,
            num_minibatches=8,
            num_epochs=4,
            eval_every=10,
            num_eval_envs=10,
            checkpoint_every=20,
        ),
        **changes,
    )


IMPALA: dict[str, dict[str, Any]] = {
    # 2-core CPU, 2 fake devices (actor and learner apart): eval 475 from ~100-200k env steps. Returns of
    # ~100 make the value loss's gradient swamp a norm clip of 1: rewards scaled by 0.1, clip at 10
    "CartPole-v1": dict(_CARTPOLE, reward_scaling=0.1, max_grad_norm=10.0),
    # untuned: PPO's settings (IMPALA takes one step per batch, so it needs more env steps)
    "hopper": _locomotion(),
    "halfcheetah": _locomotion(),
}

PPO: dict[str, dict[str, Any]] = {
    "CartPole-v1": dict(_CARTPOLE),
    # 2-core CPU, one device, seed 0 (benchmarks/RESULTS.md, 2026-11-28): eval 2,500 after 573k env steps in
    # 115 s, compilation included (~5,400 env steps/s with evaluations)
    "hopper": _locomotion(),
    # the same: 3,000 after 389k env steps in 75 s
    "halfcheetah": _locomotion(),
    # hopper's settings, measured against the suite's thresholds (benchmarks/training.py SUITE, RESULTS.md)
    "walker2d": _locomotion(),
    "ant": _locomotion(),
    "inverted_pendulum": _locomotion(),
    "inverted_double_pendulum": _locomotion(),
    "humanoid": _locomotion(),
    "humanoidstandup": _locomotion(),
    "pusher": _locomotion(),
    "reacher": _locomotion(),
    # Gymnasium's swimmer needs a discount near 1 (its forward reward is small and steady)
    "swimmer": _locomotion(discount=0.9999),
}

__all__ = ["IMPALA", "PPO"]
