"""APG's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive, check_unit, check_widths


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """Analytic policy gradients (beside `RunConfig`'s fields). An iteration unrolls `unroll_length` steps of
    `num_envs` environments with the deterministic policy, differentiates their discounted reward through the
    physics and takes one Adam step."""

    num_envs: int = 64
    """Environments stepped together (split over the devices); an iteration takes num_envs x unroll_length
    env steps."""
    unroll_length: int = 32
    """The horizon N: steps the loss differentiates through; the environments carry on from where it ended."""
    truncation_length: int = 0
    """Backpropagate through at most this many steps: the state's gradient is cut every `truncation_length`
    steps within the horizon (0: never, the whole horizon)."""
    learning_rate: float = 1e-3
    """Adam's step size."""
    max_grad_norm: float = 1.0
    """The gradient is clipped to this global norm before Adam."""
    discount: float = 0.99
    """gamma of the loss, -mean over environments of sum_t gamma^t r_t."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser (updated with every unroll's,
    outside the gradient)."""
    policy_hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the policy MLP's hidden layers (it acts with its distribution's mode)."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_run()
        check_positive(self, "num_envs", "unroll_length", "learning_rate", "max_grad_norm")
        check_positive(self, "truncation_length", strict=False)
        check_unit(self, "discount")
        check_widths(self, "policy_hidden_sizes")
        return self
