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


def _brax(
    num_envs: int,
    unroll_length: int,
    num_epochs: int,
    num_timesteps: int,
    discount: float,
    learning_rate: float,
    entropy_cost: float,
    reward_scaling: float,
    num_minibatches: int = 32,
    **rest: Any,
) -> dict[str, Any]:
    """A preset from Brax's published settings (translated as the module docstring says), evaluation and
    checkpoints every 10 iterations unless `rest` says otherwise."""
    return dict(
        num_envs=num_envs,
        unroll_length=unroll_length,
        num_minibatches=num_minibatches,
        num_epochs=num_epochs,
        num_timesteps=num_timesteps,
        discount=discount,
        learning_rate=learning_rate,
        entropy_cost=entropy_cost,
        reward_scaling=reward_scaling,
        **{"eval_every": 10, "checkpoint_every": 10, **rest},
    )


def _target_task(num_timesteps: int, episode_length: int, discount: float = 0.97, **rest: Any) -> dict[str, Any]:
    """hurtle's own target tasks (ur5e_reach, ur5e_push, fetch, grasp), tuned on a 2-core CPU: 128 environments,
    unrolls of 25, 8 epochs of 16 minibatches (the environments are the cost on a CPU, so each batch is reused),
    lr 5e-4, entropy 1e-3, rewards x 0.1, a 128-128 policy and a 256-256 value network; evaluation on 64
    episodes every 20 iterations (64,000 steps); `rest` adds or replaces fields."""
    fields = dict(
        num_envs=128,
        unroll_length=25,
        num_minibatches=16,
        num_epochs=8,
        num_timesteps=num_timesteps,
        learning_rate=5e-4,
        discount=discount,
        entropy_cost=1e-3,
        reward_scaling=0.1,
        policy_hidden_sizes=(128, 128),
        value_hidden_sizes=(256, 256),
        eval_every=20,
        num_eval_envs=64,
        checkpoint_every=50,
        episode_length=episode_length,
    )
    return {**fields, **rest}


def _playground(num_timesteps: int, entropy_cost: float = 1e-2, **rest: Any) -> dict[str, Any]:
    """MuJoCo Playground's PPO for its joystick tasks (mujoco_playground/config/locomotion_params.py): 8,192
    environments, unrolls of 20, 32 minibatches of 256 sequences (one unroll per environment per update: Brax's
    `batch_size * num_minibatches == num_envs`), 4 epochs, gamma 0.97, lr 3e-4, gradient norm clipped at 1, a
    512-256-128 policy and value network. Sized for an accelerator (Playground's 7-17 minutes on one RTX 4090); the
    critic's privileged input comes with the asymmetric critic (issue 73)."""
    layers = (512, 256, 128)
    fields = _brax(8192, 20, 4, num_timesteps, 0.97, 3e-4, entropy_cost, 1.0, max_grad_norm=1.0, eval_every=20)
    return {**fields, "policy_hidden_sizes": layers, "value_hidden_sizes": layers, "checkpoint_every": 20, **rest}


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
    # 1e-2, 2048 envs, batch 1024 (16 unrolls). See `inverted_pendulum` for the CPU-tuned one.
    "inverted_double_pendulum": _brax(
        2048, 5 * 16, 4, 20_000_000, 0.97, 3e-4, 1e-2, 10.0, eval_every=5, checkpoint_every=5
    ),
    # Brax ant: 50M steps, reward scaling 10, unroll 5, 4 updates, discount 0.97, lr 3e-4, entropy 1e-2,
    # 4096 envs, batch 2048 (16 unrolls)
    "ant": _brax(4096, 5 * 16, 4, 50_000_000, 0.97, 3e-4, 1e-2, 10.0),
    # Brax humanoid: 50M steps, reward scaling 0.1, unroll 10, 8 updates, discount 0.97, lr 3e-4, entropy 1e-3,
    # 2048 envs, batch 1024 (16 unrolls)
    "humanoid": _brax(2048, 10 * 16, 8, 50_000_000, 0.97, 3e-4, 1e-3, 0.1),
    # Brax humanoidstandup: 100M steps, reward scaling 0.1, unroll 15, 8 updates, discount 0.97, lr 6e-4,
    # entropy 1e-2, 2048 envs, batch 1024 (16 unrolls)
    "humanoidstandup": _brax(2048, 15 * 16, 8, 100_000_000, 0.97, 6e-4, 1e-2, 0.1),
    # Brax halfcheetah: 50M steps, reward scaling 1, unroll 20, 8 updates, discount 0.95, lr 3e-4, entropy 1e-3,
    # 2048 envs, batch 512 (8 unrolls)
    "halfcheetah": _brax(2048, 20 * 8, 8, 50_000_000, 0.95, 3e-4, 1e-3, 1.0),
    # Brax publishes SAC, not PPO, for hopper and walker2d (and nothing for swimmer); these take its
    # halfcheetah PPO settings, the closest published ones, with Brax's ant discount for the healthy-reward tasks
    "hopper": _brax(2048, 20 * 8, 8, 50_000_000, 0.97, 3e-4, 1e-3, 1.0),
    "walker2d": _brax(2048, 20 * 8, 8, 50_000_000, 0.97, 3e-4, 1e-3, 1.0),
    # Gymnasium's swimmer is known to need a discount near 1
    "swimmer": _brax(2048, 20 * 8, 8, 50_000_000, 0.9999, 3e-4, 1e-3, 1.0),
    # Brax reacher: 50M steps, reward scaling 5, unroll 50, 8 updates, discount 0.95, lr 3e-4, entropy 1e-3,
    # 2048 envs, batch 256 (4 unrolls); Gymnasium's reacher episodes are 50 steps
    "reacher": _brax(2048, 50 * 4, 8, 50_000_000, 0.95, 3e-4, 1e-3, 5.0, episode_length=50),
    # Brax pusher: 50M steps, reward scaling 5, unroll 30, 16 minibatches, 8 updates, discount 0.95, lr 3e-4,
    # entropy 1e-2, 2048 envs, batch 512 (4 unrolls); Gymnasium's pusher episodes are 100 steps
    "pusher": _brax(2048, 30 * 4, 8, 50_000_000, 0.95, 3e-4, 1e-2, 5.0, num_minibatches=16, episode_length=100),
    # hurtle's target tasks (benchmarks/RESULTS.md, "hurtle's target tasks", 2-core CPU shared with a second run):
    # ur5e_reach 92.7% of its targets within 2 cm after 576k steps (9.7 min), 95% at the end; ur5e_push 90% after
    # 448k (24.5 min); fetch 3 targets per episode after 384k (5.5 min); grasp below
    # MuJoCo Playground's robot tasks, with Playground's settings
    "go1_joystick_flat": _playground(200_000_000),
    "go1_joystick_rough": _playground(200_000_000),
    "berkeley_humanoid_joystick_flat": _playground(150_000_000, entropy_cost=5e-3),
    # Playground's manipulation settings (mujoco_playground/config/manipulation_params.py): the hand's discount 0.99
    # and unrolls of 40 over 200M steps; the arm's 20M steps over 2,048 environments, a 4 x 32 policy, 5 x 256 value
    "leap_cube_reorient": _playground(200_000_000, discount=0.99, unroll_length=40),
    "panda_pick_cube": _playground(
        20_000_000,
        num_envs=2048,
        policy_hidden_sizes=(32, 32, 32, 32),
        value_hidden_sizes=(256,) * 5,
        num_minibatches=32,
        unroll_length=10,
    ),
    "ur5e_reach": _target_task(1_536_000, 250),
    "ur5e_push": _target_task(3_008_000, 250),
    # 50 Hz control: a longer horizon
    "fetch": _target_task(6_016_000, 1000, discount=0.99),
    # the training episodes start 20% with the open hand around the ball, 20% with it straight over the ball and
    # 20% with the ball held (evaluation: the registered resets); in 30 minutes (1.73M steps) the ball held 3.1 s
    # per 20-s episode from the registered resets, no carry yet (benchmarks/HISTORY.md, "grasp, session 47")
    # 1,000-step episodes: 64 evaluation episodes every 20 iterations stepped as many environments as training
    # did, so 32 every 40 (a fifth of the steps)
    "grasp": _target_task(
        3_008_000,
        1000,
        discount=0.99,
        env_options=("start_in_hand=0.2", "start_over=0.2", "start_held=0.2"),
        eval_every=40,
        num_eval_envs=32,
    ),
}


def preset(env: str) -> Config:
    """`Config` for `env` with its tuned values (the defaults where it has none)."""
    return Config(env=env, **PRESETS.get(env, {}))


def preset_fields(env: str) -> dict[str, Any]:
    """The fields `env`'s preset sets, with their values."""
    return dict(PRESETS.get(env, {}))


__all__ = ["PRESETS", "preset", "preset_fields"]
