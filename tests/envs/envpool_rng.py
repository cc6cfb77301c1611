"""EnvPool's random draws, re-derived: its C++ tasks draw from one `std::mt19937` per environment (seeded once with
`seed + env_id`, never again: resets and steps continue the stream) through libstdc++'s double distributions. A
test that must rebuild a state EnvPool does not observe (the LEAP cube's and goal's absolute orientations: only the
rotation between them is in the observation) replays the same draws here.

- `std::mt19937(s)` is MT19937 with Matsumoto's integer seeding, numpy's legacy seeding: `random_raw` gives the
  same 32-bit words.
- `uniform_real_distribution<double>` takes `generate_canonical<double, 53>`: two words, (w1 + w2 2^32) / 2^64.
- `normal_distribution<double>` is Marsaglia's polar method; of each accepted pair (x, y) it returns y * m and keeps
  x * m for the next call (the kept value belongs to the environment, across resets).
"""

from __future__ import annotations

import math

import numpy as np


class StdRandom:
    """libstdc++'s `std::mt19937` seeded with `seed`, with the two distributions EnvPool's tasks draw from."""

    def __init__(self, seed: int):
        self._bits = np.random.MT19937()
        self._bits._legacy_seeding(int(seed) & 0xFFFFFFFF)
        self._kept: float | None = None

    def canonical(self) -> float:
        lo, hi = (float(w) for w in self._bits.random_raw(2))
        return min((lo + hi * 2.0**32) / 2.0**64, np.nextafter(1.0, 0.0))

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * self.canonical()

    def normal(self) -> float:
        if self._kept is not None:
            value, self._kept = self._kept, None
            return value
        while True:
            x, y = 2.0 * self.canonical() - 1.0, 2.0 * self.canonical() - 1.0
            r2 = x * x + y * y
            if 0.0 < r2 <= 1.0:
                break
        scale = math.sqrt(-2.0 * math.log(r2) / r2)
        self._kept = x * scale
        return y * scale

    def quat(self) -> np.ndarray:
        """EnvPool's `RandomQuat`: Shoemake's uniform rotation from three uniforms, (w, x, y, z)."""
        u, v, w = self.canonical(), self.canonical(), self.canonical()
        a, b = math.sqrt(1.0 - u), math.sqrt(u)
        q = np.array([a * math.sin(2 * math.pi * v), a * math.cos(2 * math.pi * v), b * math.sin(2 * math.pi * w),
                      b * math.cos(2 * math.pi * w)])  # fmt: skip
        return q / np.linalg.norm(q)


def leap_reset(rng: StdRandom, home: np.ndarray, low: np.ndarray, high: np.ndarray) -> dict[str, np.ndarray]:
    """The draws of EnvPool's LeapCubeReorient reset (`hand.h`, `Reset` then `FillReorientObs`) with its observation
    noise off (`noise_level=0`; the joint and cube-position noises are drawn all the same): the goal's orientation,
    the fingers (home plus N(0, 0.1), clipped to the servos' ranges), the cube's orientation and position."""
    goal = rng.quat()
    hand = np.array([min(max(home[i] + 0.1 * rng.normal(), low[i]), high[i]) for i in range(16)])
    cube_quat = rng.quat()
    cube_pos = np.array([0.1 + rng.uniform(-0.01, 0.01), rng.uniform(-0.01, 0.01), 0.05 + rng.uniform(-0.01, 0.01)])
    for _ in range(16 + 3):  # the first observation's joint and cube-position noise
        rng.canonical()
    return {"goal": goal, "hand": hand, "cube_quat": cube_quat, "cube_pos": cube_pos}
