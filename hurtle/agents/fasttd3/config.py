"""FastTD3's hyper-parameters, declared once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import check_positive, check_unit
from hurtle.agents.offpolicy_config import OffPolicyConfig


@dataclasses.dataclass(frozen=True)
class Config(OffPolicyConfig):
    """FastTD3 (Seo et al. 2025) hyper-parameters, beside `RunConfig`'s and the replay learners' shared ones: TD3
    with a distributional (C51) twin critic, clipped double Q, per-environment exploration noise, and large
    batches drawn from many parallel environments. The defaults are the paper's for an accelerator (1,024
    environments, batches of 32,768, two updates per step); `validate()` checks them before anything is traced."""

    num_envs: int = 1024
    """Environments stepped in parallel (over all devices)."""
    steps_per_iteration: int = 32
    """Training steps per iteration (env steps per iteration: `num_envs * steps_per_iteration`)."""
    batch_size: int = 32768
    """Transitions per gradient update, drawn uniformly from the replay buffer."""
    grad_updates_per_step: int = 2
    """Gradient updates of the critics after each step of the environments."""
    min_replay_size: int = 32768
    """Transitions collected with uniformly random actions before learning starts (counted as env steps)."""
    max_replay_size: int = 1_048_576
    """The replay buffer's capacity in transitions (rounded down to a multiple of num_envs)."""
    tau: float = 0.1
    """The Polyak rate of the target critics (FastTD3's 0.1: with few updates per transition, fast targets)."""
    policy_hidden_sizes: tuple[int, ...] = (512, 256, 128)
    """Widths of the deterministic actor's hidden layers."""
    q_hidden_sizes: tuple[int, ...] = (1024, 512, 256)
    """Widths of each of the twin distributional critics' hidden layers."""
    policy_frequency: int = 2
    """The actor is updated on every `policy_frequency`-th critic update (TD3's delayed policy updates)."""
    weight_decay: float = 0.1
    """AdamW's decoupled weight decay for the actor and the critics."""
    max_grad_norm: float = 0.0
    """The global gradient-norm clip of each update (0: none)."""
    num_atoms: int = 101
    """Atoms of the critics' categorical value distributions (C51)."""
    v_min: float = -250.0
    """The value distribution's lowest atom (in scaled rewards' units: set it with `reward_scaling`)."""
    v_max: float = 250.0
    """The value distribution's highest atom."""
    noise_std_min: float = 0.001
    """Exploration: each environment acts with Gaussian noise of a standard deviation drawn uniformly from
    [noise_std_min, noise_std_max] at each of its episodes' starts (FastTD3's mixed noise)."""
    noise_std_max: float = 0.4
    """The largest exploration noise standard deviation."""
    target_noise: float = 0.001
    """TD3's target policy smoothing: the standard deviation of the noise on the next action of the target."""
    target_noise_clip: float = 0.5
    """The clip of that noise."""
    clipped_double_q: bool = True
    """The target distribution is the one of the twin target critic with the lower mean (clipped double Q);
    off, each critic learns towards the average of the two."""
    asymmetric_critic: bool = True
    """Where the task has a privileged observation (`State.privileged_obs`), the critics read it, through their
    own normaliser; the actor reads the observation. Off, or without one, both read the observation."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_replay()
        return self.validate_fasttd3()

    def validate_fasttd3(self) -> Config:
        """FastTD3's own fields (`validate` checks the shared ones first)."""
        check_positive(self, "policy_frequency", "num_atoms")
        check_positive(self, "weight_decay", "max_grad_norm", "target_noise", "target_noise_clip", strict=False)
        check_positive(self, "noise_std_min", "noise_std_max", strict=False)
        if self.num_atoms < 2 or not self.v_min < self.v_max:
            raise ValueError(
                f"Config.v_min, v_max, num_atoms: the value distribution needs v_min < v_max and two atoms or more, "
                f"got v_min={self.v_min}, v_max={self.v_max}, num_atoms={self.num_atoms}"
            )
        if self.noise_std_min > self.noise_std_max:
            raise ValueError(
                f"Config.noise_std_min = {self.noise_std_min} exceeds noise_std_max = {self.noise_std_max}"
            )
        check_unit(self, "noise_std_max")
        return self
