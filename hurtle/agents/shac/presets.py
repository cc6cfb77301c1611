"""SHAC's presets per environment (the defaults, the paper's ant and halfcheetah settings, elsewhere)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # 2-core CPU: eval return 1,000 (the time limit) after about 30k steps, 50 s with compilation (seed 0)
    "inverted_pendulum": dict(num_envs=32, num_timesteps=100_000, eval_every=10, linear_decay=False),
    # the paper's halfcheetah settings (64 environments, horizon 32, lr 2e-3, Adam (0.7, 0.95), lambda 0.95,
    # linear decay) with smaller networks for the CPU
    "halfcheetah": dict(
        num_timesteps=2_000_000,
        eval_every=20,
        num_eval_envs=16,
        policy_hidden_sizes=(256, 128),
        value_hidden_sizes=(256, 128),
    ),  # fmt: skip
    "hopper": dict(
        num_timesteps=2_000_000,
        eval_every=20,
        num_eval_envs=16,
        policy_hidden_sizes=(256, 128),
        value_hidden_sizes=(256, 128),
    ),  # fmt: skip
}
