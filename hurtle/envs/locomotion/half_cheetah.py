"""HalfCheetah-v5 on hurtle's physics: run forward, a planar cheetah with six actuated leg joints.

Model: `assets/half_cheetah.xml` (Gymnasium's `half_cheetah.xml`): a 14 kg torso and two three-segment legs
with springy, damped joints; the root slides in x (`rootx`) and z and turns about y. `ctrl` in [-1, 1]^6
(gears 120, 90, 60, 120, 60, 30). Euler with a 0.01 s timestep, frame_skip 5: a step is 0.05 s.

Observation (17): `qpos[1:]` (8; all of `qpos`, 9, when `exclude_current_positions_from_observation` is
False) then `qvel` (9).
Reward terms: `forward` forward_reward_weight (1) times the x velocity of `rootx` over the step;
`ctrl` -ctrl_cost_weight (0.1) * sum(action^2).
Termination: never. Reset: `qpos0` plus U(-reset_noise_scale, reset_noise_scale), zero velocity plus
N(0, reset_noise_scale^2) (0.1). Episode length: 1000 steps (Gymnasium's time limit).
"""

from __future__ import annotations

import os

from hurtle.envs.locomotion import common


class HalfCheetah(common.Runner):
    """Gymnasium's HalfCheetah-v5 (same keyword options and defaults); `xml` replaces the model file."""

    gymnasium_id = "HalfCheetah-v5"

    xml_path = "assets/half_cheetah.xml"
    qvel_noise = "normal"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
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
