"""ARS's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """Augmented random search (V2-t) hyper-parameters (beside `RunConfig`'s). An iteration plays the
    `2 * num_directions` perturbed linear policies and steps along the best `top_directions`."""

    num_directions: int = 8
    """N: random directions per iteration (2N members: M + nu delta and M - nu delta), split over the devices."""
    top_directions: int = 4
    """b: the directions used in the update, those with the largest max(r+, r-)."""
    step_size: float = 0.02
    """alpha: the step along the selected directions, divided by b times their rewards' standard deviation."""
    noise_std: float = 0.03
    """nu: the perturbations' scale."""
    episodes_per_member: int = 1
    """Episodes each member plays (its reward is their mean return), each from its own random start."""
    reward_shift: float = 0.0
    """Taken off every step's reward while learning (ARS removes an alive bonus this way); evaluation reports
    the environment's own rewards."""
    normalize_observations: bool = True
    """Whether observations are standardised by the running mean and variance of every state visited (V2)."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_run()
        check_positive(self, "num_directions", "top_directions", "step_size", "noise_std", "episodes_per_member")
        if self.top_directions > self.num_directions:
            raise ValueError(
                f"Config.top_directions = {self.top_directions} exceeds num_directions = {self.num_directions}"
            )
        return self
