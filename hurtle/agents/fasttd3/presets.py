"""FastTD3 hyper-parameters per environment, in one place: `hurtle train ENV --algo fasttd3` starts from them. How
each was chosen is noted beside it."""

from __future__ import annotations

from typing import Any


def _cpu(num_timesteps: int, **rest: Any) -> dict[str, Any]:
    """A 2-core CPU: 16 environments, batches of 256 and two updates per step, FastTD3's other settings with
    256-256 networks (its 1024-512-256 critic costs too much per update here)."""
    fields = dict(
        num_envs=16,
        steps_per_iteration=256,
        batch_size=256,
        grad_updates_per_step=2,
        min_replay_size=4096,
        max_replay_size=1_000_000,
        policy_hidden_sizes=(256, 256),
        q_hidden_sizes=(256, 256),
        num_timesteps=num_timesteps,
        eval_every=4,
        num_eval_envs=10,
        checkpoint_every=4,
    )
    return {**fields, **rest}


PRESETS: dict[str, dict[str, Any]] = {
    # the pendulum's returns lie in [-1,650, 0] at discount 0.99: atoms over [-20, 0] after rewards x 0.01
    "pendulum": _cpu(40_000, reward_scaling=0.01, v_min=-20.0, v_max=0.0, steps_per_iteration=125),
}

# Sebulba (`--arch sebulba --algo fasttd3`): the SebulbaConfig defaults are sized for a 2-core CPU
SEBULBA_PRESETS: dict[str, dict[str, Any]] = {
    # Gymnasium's pendulum through its vector environment: returns in [-1,650, 0], as hurtle's pendulum
    "Pendulum-v1": dict(
        env_backend="gymnasium", num_envs=8, unroll_length=16, actor_threads=1, num_timesteps=40_000,
        reward_scaling=0.01, v_min=-20.0, v_max=0.0, min_replay_size=2048, eval_every=50, num_eval_envs=10,
        checkpoint_every=50,
    ),
}  # fmt: skip

__all__ = ["PRESETS", "SEBULBA_PRESETS"]
