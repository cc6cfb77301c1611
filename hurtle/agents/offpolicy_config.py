"""The replay learners' shared hyper-parameters (SAC and FastTD3), declared once."""

from __future__ import annotations

import dataclasses

from hurtle.agents.config import RunConfig, check_positive, check_unit, check_widths


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(RunConfig):
    """The replay learners' shared hyper-parameters (SAC's, FastTD3's; beside `RunConfig`'s). An iteration is
    `steps_per_iteration` training steps; a training step is one step of every environment (inserted into the
    replay buffer) followed by `grad_updates_per_step` gradient updates."""

    num_envs: int = 128
    """Environments stepped in parallel (over all devices)."""
    steps_per_iteration: int = 64
    """Training steps per iteration (env steps per iteration: `num_envs * steps_per_iteration`)."""
    batch_size: int = 256
    """Transitions per gradient update, drawn uniformly from the replay buffer."""
    grad_updates_per_step: int = 1
    """Gradient updates after each step of the environments."""
    min_replay_size: int = 8192
    """Transitions collected with uniformly random actions before learning starts (counted as env steps)."""
    max_replay_size: int = 1_048_576
    """The replay buffer's capacity in transitions (rounded down to a multiple of num_envs); the oldest are
    overwritten once it is full. Checked against the devices' free memory when the run starts."""
    learning_rate: float = 3e-4
    """The optimiser's step size for the actor and the critics (and SAC's temperature)."""
    discount: float = 0.99
    """The discount factor gamma, in [0, 1]."""
    tau: float = 0.005
    """The Polyak rate of the target critics: target <- tau * online + (1 - tau) * target."""
    reward_scaling: float = 1.0
    """Rewards are multiplied by this before learning."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser (updated with every env step)."""
    policy_hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the policy MLP's hidden layers."""
    q_hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of each of the twin Q MLPs' hidden layers."""

    @property
    def env_steps_per_iteration(self) -> int:
        return self.num_envs * self.steps_per_iteration

    @property
    def replay_slots(self) -> int:
        """Slots of the ring buffer: each holds one step of every environment."""
        return self.max_replay_size // self.num_envs

    @property
    def prefill_steps(self) -> int:
        """Steps of every environment with random actions before learning: `min_replay_size / num_envs`, up."""
        return -(-self.min_replay_size // self.num_envs)

    def validate_replay(self, check_env: bool = True) -> None:
        """Raise ValueError naming the first shared field at fault (`check_env`: `env` must be registered)."""
        self.validate_run(check_env)
        check_positive(self, "num_envs", "steps_per_iteration", "batch_size", "grad_updates_per_step")
        check_positive(self, "max_replay_size", "learning_rate", "reward_scaling")
        check_positive(self, "min_replay_size", strict=False)
        check_unit(self, "discount", "tau")
        check_widths(self, "policy_hidden_sizes", "q_hidden_sizes")
        if self.max_replay_size < self.batch_size:
            raise ValueError(
                f"Config.max_replay_size = {self.max_replay_size} is smaller than one batch (batch_size = "
                f"{self.batch_size})"
            )
        if self.min_replay_size < self.batch_size:
            raise ValueError(
                f"Config.min_replay_size = {self.min_replay_size} is smaller than one batch (batch_size = "
                f"{self.batch_size}): the first updates would draw the same few transitions over and over"
            )
        if self.min_replay_size > self.max_replay_size:
            raise ValueError(
                f"Config.min_replay_size = {self.min_replay_size} exceeds max_replay_size = {self.max_replay_size}"
            )
        if self.replay_slots < self.prefill_steps or self.replay_slots < 1:
            raise ValueError(
                f"Config.max_replay_size = {self.max_replay_size} holds {self.replay_slots} steps of the "
                f"{self.num_envs} environments, fewer than min_replay_size needs ({self.prefill_steps})"
            )
