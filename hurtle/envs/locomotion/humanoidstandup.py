"""HumanoidStandup-v5 on hurtle's physics: make a 3-D biped lying on its back stand up.

The model is Humanoid's lying along +x on the floor (`assets/humanoidstandup.xml`); the observation is
Humanoid-v5's (348 by default, see `hurtle.envs.locomotion.humanoid`), with the same switches.

Reward terms (summed), logged as `reward/<term>` (the first three with Gymnasium's names):
- `linup`: `uph_cost_weight` (1) x the torso height `qpos[2]` divided by the physics timestep
  (`opt.timestep`, 0.003 s, not the control period). Gymnasium 1.4 documents the weight but does not
  apply it; here it is applied, which agrees with Gymnasium at its default of 1;
- `quadctrl`: `-ctrl_cost_weight` (0.1) x `sum(ctrl^2)`;
- `impact`: `-clip(impact_cost_weight (0.5e-6) x sum(cfrc_ext^2), impact_cost_range)`, range (-inf, 10);
- `alive`: the constant 1 Gymnasium adds to every reward.
It never terminates; the time limit is 1000 steps.

Reset: `qpos0 + U(-reset_noise_scale, reset_noise_scale)`, `qvel ~ U(-reset_noise_scale, reset_noise_scale)`
(scale 0.01). `frame_skip` 5 on a 0.003 s RK4 step: dt = 0.015 s.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.locomotion.common import Range, contact_cost, ctrl_cost
from hurtle.envs.locomotion.humanoid import HumanoidBody


class HumanoidStandup(HumanoidBody):
    """HumanoidStandup-v5: Gymnasium's keyword options and defaults; `xml` replaces the model file."""

    gymnasium_id = "HumanoidStandup-v5"

    xml_path = "assets/humanoidstandup.xml"

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        frame_skip: int = 5,
        uph_cost_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
        impact_cost_weight: float = 0.5e-6,
        impact_cost_range: Range = (-np.inf, 10.0),
        reset_noise_scale: float = 1e-2,
        exclude_current_positions_from_observation: bool = True,
        include_cinert_in_observation: bool = True,
        include_cvel_in_observation: bool = True,
        include_qfrc_actuator_in_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
    ):
        super().__init__(
            xml,
            frame_skip,
            reset_noise_scale,
            exclude_current_positions_from_observation,
            include_cinert_in_observation,
            include_cvel_in_observation,
            include_qfrc_actuator_in_observation,
            include_cfrc_ext_in_observation,
        )
        self.uph_cost_weight = float(uph_cost_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        self.impact_cost_weight = float(impact_cost_weight)
        self.impact_cost_range = tuple(map(float, impact_cost_range))

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        impact = contact_cost(after.cfrc_ext, self.impact_cost_weight, cost_range=self.impact_cost_range)
        return {
            "linup": self.uph_cost_weight * after.qpos[2] / self.model.opt.timestep,
            "quadctrl": -ctrl_cost(action, self.ctrl_cost_weight),
            "impact": -impact,
            "alive": jnp.ones((), self.dtype),
        }
