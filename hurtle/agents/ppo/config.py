"""PPO's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import tyro


@dataclasses.dataclass(frozen=True)
class Config:
    """PPO hyper-parameters. `validate()` checks them before anything is traced."""

    env: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ENV")] = "cartpole"
    """The registered environment's name (`hurtle envs` lists them)."""
    num_envs: int = 2048
    """Environments stepped in parallel (over all devices)."""
    unroll_length: int = 32
    """Steps per environment in one rollout; a batch is `num_envs * unroll_length` transitions."""
    num_minibatches: int = 32
    """Minibatches a batch is split into for each epoch; must divide the batch size."""
    num_epochs: int = 4
    """Passes over each batch (updates per batch = `num_epochs * num_minibatches`)."""
    num_timesteps: int = 10_000_000
    """Environment steps to train for (over all environments)."""
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
    episode_length: int = 1000
    """The time limit in environment steps (a truncation, bootstrapped from the final observation)."""
    nconmax: int | None = None
    """hurtle's contact cap per contact dimension for the task's model (MJCF `<size nconmax>`): faster physics
    where the model has many more contact candidates than contacts (the humanoids); touching contacts past it
    are dropped and counted in `train/ncon_dropped`. None keeps every candidate's slot."""
    eval_every: int = 10
    """Training iterations between evaluations (0: never)."""
    num_eval_envs: int = 128
    """Environments in one deterministic evaluation."""
    checkpoint_every: int = 0
    """Training iterations between checkpoints (0: never)."""
    seed: int = 0
    """The seed of every random key."""
    policy_hidden_sizes: tuple[int, ...] = (32, 32, 32, 32)
    """Widths of the policy MLP's hidden layers."""
    value_hidden_sizes: tuple[int, ...] = (256, 256, 256, 256, 256)
    """Widths of the value MLP's hidden layers."""

    @property
    def batch_size(self) -> int:
        """Transitions per rollout: `num_envs * unroll_length`."""
        return self.num_envs * self.unroll_length

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        from hurtle.envs import names

        positive = ("num_envs", "unroll_length", "num_minibatches", "num_epochs", "num_timesteps", "episode_length")
        positive += ("num_eval_envs",)
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"Config.{name} must be positive, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"Config.{name} must be >= 0 (0 disables it), got {getattr(self, name)}")
        for name in ("learning_rate", "clip_epsilon", "max_grad_norm", "reward_scaling"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Config.{name} must be positive, got {getattr(self, name)}")
        for name in ("entropy_cost", "value_cost"):
            if getattr(self, name) < 0:
                raise ValueError(f"Config.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("discount", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"Config.{name} must lie in [0, 1], got {getattr(self, name)}")
        for name in ("policy_hidden_sizes", "value_hidden_sizes"):
            if any(int(w) <= 0 for w in getattr(self, name)):
                raise ValueError(f"Config.{name} must hold positive widths, got {getattr(self, name)}")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"Config: the batch num_envs * unroll_length = {self.num_envs} * {self.unroll_length} = "
                f"{self.batch_size} is not divisible by num_minibatches = {self.num_minibatches}"
            )
        if self.env not in names():
            raise ValueError(f"Config.env: unknown environment {self.env!r}; registered: {', '.join(names())}")
        if self.nconmax is not None and (isinstance(self.nconmax, bool) or not self.nconmax > 0):
            raise ValueError(f"Config.nconmax must be a positive number of contacts or None, got {self.nconmax}")
        return self
