"""Gymnasium's MuJoCo v5 arm tasks on hurtle's physics, with the same observations, rewards, reset
distributions, frame skips, keyword options and time limits, each on its own model file under `assets/`.

- "reacher" (Reacher-v5): `reacher.Reacher`, 50 steps
- "pusher" (Pusher-v5): `pusher.Pusher`, 100 steps
"""
