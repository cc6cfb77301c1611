"""Gymnasium's MuJoCo v5 tasks on hurtle's physics, with the same observations, rewards, terminations,
reset noise, frame skips, keyword options and time limits, each on its own model file under `assets/`.

Registered names (`hurtle.envs.make(name)`), Gymnasium's ids and modules:

- "inverted_pendulum" (InvertedPendulum-v5): `inverted_pendulum`
- "inverted_double_pendulum" (InvertedDoublePendulum-v5): `inverted_double_pendulum`
- "halfcheetah" (HalfCheetah-v5): `half_cheetah`
- "hopper" (Hopper-v5): `hopper`
- "walker2d" (Walker2d-v5): `walker2d`
- "swimmer" (Swimmer-v5): `swimmer`
- "reacher" (Reacher-v5), "pusher" (Pusher-v5), "ant" (Ant-v5), "humanoid" (Humanoid-v5) and
  "humanoidstandup" (HumanoidStandup-v5): their own modules

Every task takes Gymnasium's keyword options (same names and defaults) and `xml=` for another model file,
e.g. Gymnasium's own. What they share (stepping, reward terms, health checks, reset noise) is in `common`.
"""
