"""Tuned SAC hyper-parameters per environment, in one place: `hurtle train ENV --algo sac` starts from them.

Each entry overrides `Config`'s defaults; every one is validated by the tests. How each was tuned or where
it comes from is noted beside it. "Brax" entries are Brax's published SAC settings (its `train.ipynb`
table): 128 environments, replay 2^20 (learning from 8,192), discount 0.997, learning rate 6e-4, sized for an
accelerator. "CPU" entries are SB3's RL Zoo settings on 8 environments, measured on a 2-core CPU. hurtle's
`steps_per_iteration` only sets how often the runner evaluates and checkpoints.
"""

from __future__ import annotations

from typing import Any

from hurtle.agents.sac.config import Config


def _brax(num_timesteps: int, batch_size: int, grad_updates_per_step: int, reward_scaling: float, **rest: Any):
    """Brax's SAC settings with the given budget, batch, updates per step and reward scaling."""
    return dict(
        num_envs=128,
        steps_per_iteration=256,  # 32,768 env steps per iteration
        num_timesteps=num_timesteps,
        batch_size=batch_size,
        grad_updates_per_step=grad_updates_per_step,
        min_replay_size=8192,
        max_replay_size=2**20,
        learning_rate=6e-4,
        discount=0.997,
        reward_scaling=reward_scaling,
        eval_every=4,
        checkpoint_every=4,
        **rest,
    )


def _cpu(num_timesteps: int, **rest: Any):
    """SB3's RL Zoo MuJoCo settings, batched for a CPU: 8 environments and 8 updates of batch 256 per step
    (one update per env step, as SB3's), replay 10^6 learning from 10,000, lr 3e-4, discount 0.99, no reward
    scaling; evaluated every 10,000 env steps over 10 episodes. Measured on a 2-core CPU: benchmarks/HISTORY.md."""
    return dict(
        num_envs=8,
        steps_per_iteration=1250,  # 10,000 env steps per iteration
        num_timesteps=num_timesteps,
        batch_size=256,
        grad_updates_per_step=8,
        min_replay_size=10_000,
        max_replay_size=1_000_000,
        learning_rate=3e-4,
        discount=0.99,
        reward_scaling=1.0,
        eval_every=1,
        num_eval_envs=10,
        checkpoint_every=5,
        **rest,
    )


PRESETS: dict[str, dict[str, Any]] = {
    # Tuned on a 2-core CPU (float32, seeds 0-2): mean eval return -250 or better from ~6k env steps (a dip
    # or two after), -170 to -113 over the last six evaluations of 20k steps; ~20 s a run
    "pendulum": dict(
        num_envs=8,
        steps_per_iteration=125,  # 1,000 env steps per iteration
        num_timesteps=20_000,
        batch_size=256,
        grad_updates_per_step=4,
        min_replay_size=1_000,
        max_replay_size=100_000,
        learning_rate=1e-3,
        discount=0.99,
        policy_hidden_sizes=(64, 64),
        q_hidden_sizes=(64, 64),
        eval_every=1,
        num_eval_envs=16,
        checkpoint_every=4,
        episode_length=200,
    ),
    # Tuned on a 2-core CPU (float32) like pendulum: the pole balances (1,000) within ~20k env steps
    "inverted_pendulum": dict(
        num_envs=16,
        steps_per_iteration=125,  # 2,000 env steps per iteration
        num_timesteps=40_000,
        batch_size=256,
        grad_updates_per_step=2,
        min_replay_size=2_000,
        max_replay_size=200_000,
        learning_rate=1e-3,
        policy_hidden_sizes=(64, 64),
        q_hidden_sizes=(64, 64),
        eval_every=2,
        num_eval_envs=16,
        checkpoint_every=4,
    ),
    # SB3-like settings on 8 environments (Brax's, below, need an accelerator's 128 environments and 64
    # updates per step): 2,500 after 100k env steps in ~12 minutes on a 2-core CPU (benchmarks/HISTORY.md, 2026-11-27)
    "hopper": _cpu(1_000_000),
    # Brax walker2d: its hopper settings (6.55M steps, batch 512, 64 updates per step, reward scaling 30) with
    # batch 128, 32 updates per step, reward scaling 5
    "walker2d": _brax(7_864_320, 128, 32, 5.0),
    # hopper's CPU settings (SB3's RL Zoo uses the same for HalfCheetah); benchmarks/HISTORY.md (2026-11-28) has the run
    "halfcheetah": _cpu(1_000_000),
    # Brax publishes no SAC settings for ant; hopper's (its closest published task) with Brax's ant budget
    "ant": _brax(6_553_600, 512, 64, 5.0),
    # the CPU settings on Gymnasium's short episodes (50 and 100 steps), evaluated over 64 episodes: a return
    # threshold of -3.75 (reacher) needs more than 10 to tell
    "reacher": {**_cpu(300_000, episode_length=50), "num_eval_envs": 64},
    "pusher": {**_cpu(500_000, episode_length=100), "num_eval_envs": 64},
}


def preset(env: str) -> Config:
    """`Config` for `env` with its tuned values (the defaults where it has none)."""
    return Config(env=env, **PRESETS.get(env, {}))


__all__ = ["PRESETS", "preset"]
