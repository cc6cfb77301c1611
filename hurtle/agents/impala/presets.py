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
    thread each), 64-step trajectories (batches of 2,048 transitions); PPO takes 10 epochs of 32 minibatches of
    each (SB3's update intensity: with 4 x 8, hopper needed 6x the env steps; the learner keeps up with the
    actors either way)."""
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
            num_minibatches=32,
            num_epochs=10,
            eval_every=10,
            num_eval_envs=10,
            checkpoint_every=20,
        ),
        **changes,
    )


def _humanoid(**changes: Any) -> dict[str, Any]:
    """The humanoids (348 observations, 17 actions): 256-256 networks, 4 epochs of 8 minibatches, longer runs
    evaluated every 20 trajectories."""
    return _locomotion(
        num_epochs=4,
        num_minibatches=8,
        policy_hidden_sizes=(256, 256),
        value_hidden_sizes=(256, 256),
        num_timesteps=40_000_000,
        eval_every=20,
        **changes,
    )


def _playground_cpu(**changes: Any) -> dict[str, Any]:
    """MuJoCo Playground's joystick tasks on a CPU: the locomotion batches with Playground's learning settings."""
    layers = (512, 256, 128)
    fields = dict(discount=0.97, reward_scaling=1.0, max_grad_norm=1.0, entropy_cost=1e-2, num_epochs=4)
    fields.update(num_minibatches=8, policy_hidden_sizes=layers, value_hidden_sizes=layers, num_timesteps=10_000_000)
    # an hour on a 2-core CPU: ~2,600 env steps/s end to end (Go1 on MuJoCo C, 2 actor threads x 16 environments);
    # evaluated every ~100k steps (each evaluation is 10 episodes of up to 1,000 steps on MuJoCo C)
    return _locomotion(**{**fields, "eval_every": 50, **changes})


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
    # The locomotion suite, 2-core CPU, one device, to the thresholds of benchmarks/training.py's SUITE
    # (benchmarks/RESULTS.md, "the locomotion suite"; time with compilation, evaluations on MuJoCo C). 10 epochs x
    # 32 minibatches (tried on hopper seed 1: 2,410 after 164k steps in 32 s, against 1.0M in 149 s with 4 x 8):
    # seed 0 hopper 2,410 after 287k steps in 53 s, walker2d 3,478 after 328k in 70 s, inverted_double_pendulum
    # 9,100 after 61k in 12 s (41 s with 4 x 8), inverted_pendulum 1,000 after 20k in 5.5 s, halfcheetah 5,819
    # after 1.02M in 157 s (437 s with 4 x 8)
    "hopper": _locomotion(),
    "halfcheetah": _locomotion(),
    "walker2d": _locomotion(),
    # the README's main job (`hurtle train inverted_pendulum` on a CPU): 1,000 after ~20k steps, so a 150k budget
    # ends the whole run within a minute; inverted_double_pendulum's 9,100 after ~61k steps: 1M
    "inverted_pendulum": _locomotion(num_timesteps=150_000),
    "inverted_double_pendulum": _locomotion(num_timesteps=1_000_000),
    # 4 x 8: 1,327 after 266k in 76 s (with 10 x 32: 967 after 1.2M, 400 s)
    "ant": _locomotion(num_epochs=4, num_minibatches=8),
    # 256-256 networks and ant's 4 x 8 (the one change tried, seed 0): 6,232 after 1.35M steps in 323 s (seeds 1
    # and 2: 409 and 463 s), where the 64-64 preset was at 736 after 573k (149 s), as CleanRL's PPO (716 after 1M,
    # 583 after 8M)
    "humanoid": _humanoid(),
    # humanoid's, with rewards x 0.01 (the standup pays its torso's height over the timestep, 30-400 a step), set
    # before the first run: 109,326 after 205k steps in 78 s (seeds 1 and 2: 35 and 99 s)
    "humanoidstandup": _humanoid(reward_scaling=0.01),
    # untuned
    "pusher": _locomotion(),
    # with 4 x 8 these two stall (reacher -8.7 after 1.35M steps, swimmer 54 after 1.2M, discount 0.9999): they
    # train with APG and ARS on hurtle's physics instead (benchmarks/HISTORY.md, 2026-11-28)
    "reacher": _locomotion(),
    "swimmer": _locomotion(discount=0.9999),
    # MuJoCo Playground's robot tasks on MuJoCo C (untuned: issue 73 tunes them): Playground's discount, gradient clip
    # and 512-256-128 networks over the locomotion suite's CPU batches (4 x 8 minibatches, as the humanoids')
    "go1_joystick_flat": _playground_cpu(),
    "go1_joystick_rough": _playground_cpu(),
    "berkeley_humanoid_joystick_flat": _playground_cpu(entropy_cost=5e-3),
    "leap_cube_reorient": _playground_cpu(discount=0.99),
    "panda_pick_cube": _playground_cpu(policy_hidden_sizes=(32, 32, 32, 32), value_hidden_sizes=(256,) * 5),
}

__all__ = ["IMPALA", "PPO"]
