"""SHAC's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive, check_unit, check_widths


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """Short-horizon actor-critic (Xu et al. 2022; beside `RunConfig`'s fields). An iteration unrolls
    `unroll_length` steps of `num_envs` environments with the stochastic policy, takes one actor step on the
    window's return (bootstrapped with the target critic) differentiated through the physics, then fits the
    critic to TD(lambda) targets. The defaults are the paper's settings for ant and halfcheetah."""

    num_envs: int = 64
    """Environments stepped together (split over the devices); an iteration takes num_envs x unroll_length
    env steps."""
    unroll_length: int = 32
    """The short horizon h the actor's loss differentiates through."""
    actor_learning_rate: float = 2e-3
    """Adam's step size for the policy."""
    critic_learning_rate: float = 2e-3
    """Adam's step size for the critic."""
    linear_decay: bool = True
    """Both learning rates fall linearly to zero over `num_timesteps` (the paper's schedule)."""
    adam_b1: float = 0.7
    """Adam's beta1 (both optimisers)."""
    adam_b2: float = 0.95
    """Adam's beta2 (both optimisers)."""
    discount: float = 0.99
    """gamma."""
    td_lambda: float = 0.95
    """lambda of the critic's TD(lambda) targets."""
    critic_iterations: int = 16
    """Passes over the window's transitions fitting the critic, per iteration."""
    num_critic_minibatches: int = 4
    """Minibatches per critic pass (num_envs x unroll_length must divide evenly)."""
    target_critic_alpha: float = 0.2
    """The target critic keeps this share of itself each iteration and takes the rest from the critic."""
    max_grad_norm: float = 1.0
    """Both gradients are clipped to this global norm."""
    reward_scaling: float = 1.0
    """Rewards are multiplied by this before the losses."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser (updated with every window's,
    outside the gradient)."""
    policy_hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the policy MLP's hidden layers (a tanh-Gaussian; evaluation acts with its mode)."""
    value_hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the critic MLP's hidden layers."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_run()
        check_positive(self, "num_envs", "unroll_length", "actor_learning_rate", "critic_learning_rate")
        check_positive(self, "critic_iterations", "num_critic_minibatches", "max_grad_norm", "reward_scaling")
        check_unit(self, "adam_b1", "adam_b2", "discount", "td_lambda", "target_critic_alpha")
        check_widths(self, "policy_hidden_sizes", "value_hidden_sizes")
        n = self.num_envs * self.unroll_length
        if n % self.num_critic_minibatches:
            raise ValueError(
                f"Config: num_envs * unroll_length = {n} is not divisible by num_critic_minibatches = "
                f"{self.num_critic_minibatches}"
            )
        return self
