"""Swimmer-v5 on hurtle's physics: swim forward, three segments in a viscous fluid.

Model: `assets/swimmer.xml` (Gymnasium's `swimmer.xml`): three 1 m capsules joined by two actuated hinges
(+-100 degrees), moving in the plane through a fluid of density 4000 and viscosity 0.1; the root slides in
x and y and turns about z. `ctrl` in [-1, 1]^2 (gear 150). RK4 with a 0.01 s timestep, frame_skip 4: a
step is 0.04 s.

Observation (8): `qpos[2:]` (3; all of `qpos`, 5, when `exclude_current_positions_from_observation` is
False) then `qvel` (5).
Reward terms: `forward` forward_reward_weight (1) times the root's x velocity over the step;
`ctrl` -ctrl_cost_weight (1e-4) * sum(action^2).
Termination: never. Reset: `qpos0` and zero velocity, each plus U(-reset_noise_scale, reset_noise_scale)
(0.1). Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

from hurtle.envs.locomotion import common


class Swimmer(common.Runner):
    """Gymnasium's Swimmer-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "Swimmer-v5"

    xml_path = "assets/swimmer.xml"
    n_excluded = 2  # the root's x and y

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 4,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-4,
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
    ):
        super().__init__(
            xml,
            frame_skip,
            forward_reward_weight=forward_reward_weight,
            ctrl_cost_weight=ctrl_cost_weight,
            reset_noise_scale=reset_noise_scale,
            exclude_current_positions_from_observation=exclude_current_positions_from_observation,
        )
