"""PPO's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive, check_unit, check_widths


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """PPO hyper-parameters (beside `RunConfig`'s). `validate()` checks them before anything is traced."""

    num_envs: int = 2048
    """Environments stepped in parallel (over all devices)."""
    unroll_length: int = 32
    """Steps per environment in one rollout; a batch is `num_envs * unroll_length` transitions."""
    num_minibatches: int = 32
    """Minibatches a batch is split into for each epoch; must divide the batch size."""
    num_epochs: int = 4
    """Passes over each batch (updates per batch = `num_epochs * num_minibatches`)."""
    learning_rate: float = 3e-4
    """Adam's step size."""
    discount: float = 0.99
    """The discount factor gamma, in [0, 1]."""
    gae_lambda: float = 0.95
    """The GAE bias/variance trade-off lambda, in [0, 1]."""
    clip_epsilon: float = 0.2
    """The PPO clipping range of the probability ratio: [1 - eps, 1 + eps]."""
    entropy_cost: float = 1e-2
    """The weight of the entropy bonus."""
    value_cost: float = 0.5
    """The weight of the value loss."""
    max_grad_norm: float = 1.0
    """The global gradient-norm clip."""
    reward_scaling: float = 1.0
    """Rewards are multiplied by this before learning."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser."""
    normalize_advantages: bool = True
    """Whether advantages are standardised per minibatch."""
    policy_hidden_sizes: tuple[int, ...] = (32, 32, 32, 32)
    """Widths of the policy MLP's hidden layers."""
    value_hidden_sizes: tuple[int, ...] = (256, 256, 256, 256, 256)
    """Widths of the value MLP's hidden layers."""
    asymmetric_critic: bool = True
    """Where the task has a privileged observation (`State.privileged_obs`: MuJoCo Playground's
    `privileged_state`), the value network reads it, through its own normaliser, as Playground's critic does;
    the policy reads the observation. Off, or for a task without one, the value network reads the observation."""

    @property
    def batch_size(self) -> int:
        """Transitions per rollout: `num_envs * unroll_length`."""
        return self.num_envs * self.unroll_length

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_run()
        check_positive(self, "num_envs", "unroll_length", "num_minibatches", "num_epochs")
        check_positive(self, "learning_rate", "clip_epsilon", "max_grad_norm", "reward_scaling")
        check_positive(self, "entropy_cost", "value_cost", strict=False)
        check_unit(self, "discount", "gae_lambda")
        check_widths(self, "policy_hidden_sizes", "value_hidden_sizes")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"Config: the batch num_envs * unroll_length = {self.num_envs} * {self.unroll_length} = "
                f"{self.batch_size} is not divisible by num_minibatches = {self.num_minibatches}"
            )
        return self
