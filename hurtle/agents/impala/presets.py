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
    # The locomotion suite, 2-core CPU, one device, seed 0, to the thresholds of benchmarks/training.py's SUITE
    # (benchmarks/RESULTS.md, "the locomotion suite"; time with compilation, MuJoCo C evaluations):
    # hopper 2,410 after 573k env steps in 105 s (~5,800 env steps/s with evaluations)
    "hopper": _locomotion(),
    # halfcheetah 5,819 after 2.46M in 437 s
    "halfcheetah": _locomotion(),
    # hopper's settings: walker2d 3,478 after 1.0M in 202 s; ant 1,327 after 266k in 121 s; the pendulums
    # 1,000 after 41k in 9-13 s and 9,100 after 225k in 41 s
    "walker2d": _locomotion(),
    "ant": _locomotion(),
    "inverted_pendulum": _locomotion(),
    "inverted_double_pendulum": _locomotion(),
    # untuned (hopper's settings)
    "humanoid": _locomotion(),
    "humanoidstandup": _locomotion(),
    "pusher": _locomotion(),
    # hopper's settings stall on these two (reacher -8.7 after 1.35M steps, swimmer 54 after 1.2M, discount
    # 0.9999): they train with APG or SAC and ARS on hurtle's physics instead (RESULTS.md)
    "reacher": _locomotion(),
    "swimmer": _locomotion(discount=0.9999),
}

__all__ = ["IMPALA", "PPO"]
