"""The Sebulba learners' hyper-parameters (IMPALA with V-trace, and PPO on the same trajectories), declared
once: the CLI and the docs are generated from this dataclass."""

from __future__ import annotations

import dataclasses
from typing import Literal

from hurtle.agents.config import RunConfig, check_positive, check_unit, check_widths
from hurtle.extras import require


@dataclasses.dataclass(frozen=True)
class HostConfig(RunConfig):
    """Sebulba's host side, shared by its learners: host environments on actor threads, the learner on its own
    devices (beside `RunConfig`'s fields). `env` is a registered task (`env_backend="mujoco"`), a Gymnasium id
    (`"gymnasium"`) or an EnvPool id (`"envpool"`). A Gymnasium or EnvPool environment keeps its own time limit
    (`episode_length` applies only to a Gymnasium id without one)."""

    env_backend: Literal["mujoco", "gymnasium", "envpool"] = "mujoco"
    """Where the environments run: hurtle's physics task on MuJoCo C, a Gymnasium environment by id, or an
    EnvPool environment by id (the `envpool` extra)."""
    vectorization: Literal["sync", "async"] = "sync"
    """Gymnasium's vectorisation per actor thread: in turn in the thread, or a subprocess per environment."""
    num_envs: int = 16
    """Environments per actor thread (one batch, stepped together)."""
    unroll_length: int = 32
    """Steps per trajectory; an update takes one trajectory from each actor thread."""
    mode: Literal["serial", "parallel", "alternating"] = "parallel"
    """Actors: one in the learner's thread (debugging), free-running threads, or two per actor device
    taking turns at it (inference hidden behind stepping)."""
    actor_threads: int = 1
    """Actor threads per actor device in "parallel" mode."""
    env_threads: int = 0
    """MuJoCo C threads per actor thread's batch (0: the CPUs shared out between the actor threads)."""
    asynchronous: bool = False
    """Actors go on with the newest policy they hold (policy lag > 0); off, every trajectory is collected
    with the learner's current policy (lag 0, reproducible for a fixed seed and thread count)."""
    queue_size: int = 2
    """Trajectories per actor thread the queue to the learner holds."""
    actor_devices: tuple[int, ...] = ()
    """Indices into `jax.devices()` of the actor devices (default: the first device)."""
    learner_devices: tuple[int, ...] = ()
    """Indices of the learner devices (default: every device but the actors', or the actors' when there is
    only one)."""

    def validate_host(self) -> None:
        """Raise ValueError naming the first host field at fault."""
        self.validate_run(check_env=self.env_backend == "mujoco")
        check_positive(self, "num_envs", "unroll_length", "actor_threads", "queue_size")
        check_positive(self, "env_threads", strict=False)
        if self.env_options:
            raise ValueError("Config.env_options: Sebulba's host environments take no task options (use --arch anakin)")
        if self.env_backend != "mujoco" and self.nconmax is not None:
            raise ValueError(
                f"Config.nconmax applies to hurtle's physics; {self.env_backend} environments have no contact cap"
            )
        if self.env_backend == "envpool":
            require("envpool", "Config.env_backend envpool")


@dataclasses.dataclass(frozen=True)
class Config(HostConfig):
    """IMPALA and PPO on Sebulba (beside the host fields of `HostConfig`)."""

    loss: Literal["vtrace", "ppo"] = "vtrace"
    """IMPALA's V-trace actor-critic (one step per batch), or PPO's clipped surrogate with GAE (epochs of
    minibatches per batch)."""
    learning_rate: float = 5e-4
    """Adam's step size."""
    discount: float = 0.99
    """The discount factor gamma, in [0, 1]."""
    vtrace_lambda: float = 1.0
    """V-trace's lambda (the traces' c_t = lambda min(1, rho_t)), in [0, 1]."""
    clip_rho: float = 1.0
    """V-trace's rho-bar: the importance weights of the value targets are clipped at it."""
    clip_pg_rho: float = 1.0
    """The clip of the policy gradient's importance weights."""
    gae_lambda: float = 0.95
    """PPO: the GAE lambda, in [0, 1]."""
    clip_epsilon: float = 0.2
    """PPO: the clipping range of the probability ratio."""
    num_epochs: int = 4
    """PPO: passes over each batch."""
    num_minibatches: int = 4
    """PPO: minibatches per pass; must divide the batch's transitions."""
    normalize_advantages: bool = True
    """PPO: advantages standardised per minibatch."""
    entropy_cost: float = 1e-2
    """The weight of the entropy bonus."""
    value_cost: float = 0.5
    """The weight of the value loss."""
    max_grad_norm: float = 1.0
    """The global gradient-norm clip."""
    reward_scaling: float = 1.0
    """Rewards are multiplied by this before learning."""
    normalize_observations: bool = True
    """Whether observations go through a running mean/variance normaliser (updated by the learner)."""
    policy_hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the policy MLP's hidden layers."""
    value_hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the value MLP's hidden layers."""
    asymmetric_critic: bool = True
    """Where the task has a privileged observation (MuJoCo Playground's `privileged_state`: hurtle's robot tasks on
    MuJoCo C, EnvPool's `MuJoCoPlayground/...` tasks), the value network reads it, through its own normaliser, as
    Playground's critic does; the policy reads the observation. Off, or without one, both read the observation."""

    def validate(self) -> Config:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_host()
        check_positive(self, "num_epochs", "num_minibatches", "learning_rate", "clip_rho", "clip_pg_rho")
        check_positive(self, "clip_epsilon", "max_grad_norm", "reward_scaling")
        check_positive(self, "entropy_cost", "value_cost", strict=False)
        check_unit(self, "discount", "vtrace_lambda", "gae_lambda")
        check_widths(self, "policy_hidden_sizes", "value_hidden_sizes")
        return self


@dataclasses.dataclass(frozen=True)
class PPOConfig(Config):
    """PPO on Sebulba: `Config` with PPO's clipped surrogate and GAE as the loss."""

    loss: Literal["vtrace", "ppo"] = "ppo"
    """IMPALA's V-trace actor-critic (one step per batch), or PPO's clipped surrogate with GAE (epochs of
    minibatches per batch)."""


__all__ = ["Config", "HostConfig", "PPOConfig"]
