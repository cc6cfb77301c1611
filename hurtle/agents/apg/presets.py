"""APG's presets per environment (the defaults where an environment has none)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # 2-core CPU: eval return 1,000 (the time limit) from 72k steps on, about 30 s of training (seed 0)
    "inverted_pendulum": dict(num_envs=32, unroll_length=32, learning_rate=1e-3, num_timesteps=150_000, eval_every=10),
    # 2-core CPU: -4.3 at 400k steps (217 s, seed 0; -3.79 over 64 fresh episodes, -4.16 in Gymnasium's Reacher-v5)
    "reacher": dict(num_timesteps=400_000, eval_every=10),
}
