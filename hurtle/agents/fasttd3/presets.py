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


def _playground(**changes: Any) -> dict[str, Any]:
    """MuJoCo Playground's robot tasks on MuJoCo C, a 2-core CPU: two actor threads of 16 environments (one MuJoCo
    C thread each), 16-step trajectories (512 transitions, then 32 updates of 256: each transition drawn 16 times
    on average); FastTD3's Playground settings otherwise (discount 0.97, atoms over [-10, 10]: these tasks' rewards
    are the terms times the control timestep); an hour's budget, evaluated every ~100k steps."""
    fields = dict(
        num_envs=16, actor_threads=2, env_threads=1, unroll_length=16, discount=0.97, v_min=-10.0, v_max=10.0,
        num_timesteps=10_000_000, eval_every=200, num_eval_envs=10, checkpoint_every=200,
    )  # fmt: skip
    return {**fields, **changes}


SEBULBA_PRESETS.update(
    {
        "go1_joystick_flat": _playground(),
        "go1_joystick_rough": _playground(),
        "berkeley_humanoid_joystick_flat": _playground(),
        # untuned beyond the return's range: the hand's goal bonus, the arm's undiscounted terms (0 to ~10 a step)
        "leap_cube_reorient": _playground(discount=0.99),
        "panda_pick_cube": _playground(reward_scaling=0.1, v_min=-10.0, v_max=50.0),
    }
)

__all__ = ["PRESETS", "SEBULBA_PRESETS"]
