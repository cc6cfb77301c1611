"""OpenAI-ES's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive, check_widths


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """OpenAI-ES hyper-parameters (beside `RunConfig`'s). An iteration is one generation: every member of
    the population plays `episodes_per_member` episodes, then the centre takes one Adam step."""

    population_size: int = 256
    """Members per generation: antithetic pairs (theta + sigma eps, theta - sigma eps), so an even number,
    split over the devices."""
    noise_std: float = 0.02
    """sigma, the standard deviation of the parameter perturbations."""
    learning_rate: float = 0.01
    """Adam's step size on the estimated gradient."""
    weight_decay: float = 0.0
    """L2 coefficient: `weight_decay * theta` is taken off the estimated gradient (Salimans et al.'s l2coeff)."""
    episodes_per_member: int = 1
    """Episodes each member plays (its fitness is their mean return), each from its own random start."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser (updated with every generation's)."""
    policy_hidden_sizes: tuple[int, ...] = (32, 32)
    """Widths of the policy MLP's hidden layers (it acts with its distribution's mode)."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_run()
        check_positive(self, "population_size", "noise_std", "learning_rate", "episodes_per_member")
        check_positive(self, "weight_decay", strict=False)
        check_widths(self, "policy_hidden_sizes")
        if self.population_size % 2:
            raise ValueError(f"Config.population_size must be even (antithetic pairs), got {self.population_size}")
        return self
