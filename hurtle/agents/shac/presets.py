"""SHAC's presets per environment (the defaults, the paper's ant and halfcheetah settings, elsewhere)."""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # 2-core CPU: eval return 1,000 (the time limit) after about 30k steps, 50 s with compilation (seed 0)
    "inverted_pendulum": dict(num_envs=32, num_timesteps=100_000, eval_every=10, linear_decay=False),
}
