"""SHAC's presets per environment (the defaults, the paper's ant and halfcheetah settings, elsewhere)."""

from __future__ import annotations

from typing import Any

# the paper's halfcheetah settings (64 environments, lr 2e-3, Adam (0.7, 0.95), lambda 0.95, linear decay) with
# smaller networks for the CPU and horizon 8, not 32: through MuJoCo's contacts and the policy's feedback the
# actor's gradient norm grows with the horizon (at the first iterations: ~5 at h=2-4, ~10 at 8, 200-400 at 16,
# 1e4-1e7 at 32), and at 32 the clipped direction is noise (eval -463 after 2M steps)
_LOCOMOTION: dict[str, Any] = dict(
    unroll_length=8,
    num_timesteps=2_000_000,
    eval_every=20,
    num_eval_envs=16,
    policy_hidden_sizes=(256, 128),
    value_hidden_sizes=(256, 128),
)

PRESETS: dict[str, dict[str, Any]] = {
    # 2-core CPU: eval return 1,000 (the time limit) after about 30k steps, 50 s with compilation (seed 0)
    "inverted_pendulum": dict(num_envs=32, num_timesteps=100_000, eval_every=10, linear_decay=False),
    # 2-core CPU, seed 0: 650-750 from 0.3M to 1M steps (best 942), far below PPO's 3,000
    "halfcheetah": dict(_LOCOMOTION),
    # 2-core CPU, seed 0: stands (1,018) at 72k steps, then collapses to 3-4 by 300k
    "hopper": dict(_LOCOMOTION),
}
