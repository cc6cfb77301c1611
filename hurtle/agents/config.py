"""The fields every algorithm's `Config` shares (what the runner reads), declared once.

Each algorithm's `Config` is a frozen dataclass that inherits `RunConfig` and adds its own fields; the CLI
and `--help` are generated from it (tyro), each field's docstring its help.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from typing import Annotated

import tyro


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """What the runner needs of any algorithm: the task, the budget, evaluation, checkpoints and the seed."""

    env: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ENV")] = "cartpole"
    """The registered environment's name (`hurtle envs` lists them)."""
    num_timesteps: int = 10_000_000
    """Environment steps to train for (over all environments); the run stops at the first iteration past it."""
    episode_length: int | None = None
    """The time limit in environment steps (a truncation, bootstrapped from the final observation); None: the
    task's registered one (reacher's 50, the locomotion suite's 1,000; 1,000 for a Gymnasium id)."""
    nconmax: int | None = None
    """hurtle's contact cap per contact dimension for the task's model (MJCF `<size nconmax>`): faster physics
    where the model has many more contact candidates than contacts (the humanoids); touching contacts past it
    are dropped and counted in `train/ncon_dropped`. None keeps every candidate's slot."""
    env_options: tuple[str, ...] = ()
    """Keyword options of the training environments' task as NAME=VALUE (e.g. grasp's `start_in_hand=0.25`): a
    training curriculum. Evaluation always runs the task as registered, so its returns measure the task itself."""
    eval_every: int = 10
    """Training iterations between evaluations (0: never; the last iteration is always evaluated unless 0)."""
    target_return: float | None = None
    """Stop at the first evaluation whose mean return reaches this (checkpointed as the last); None: train for
    `num_timesteps`. Needs evaluations (`eval_every` > 0)."""
    num_eval_envs: int = 128
    """Environments in one deterministic evaluation (one episode each)."""
    checkpoint_every: int = 0
    """Training iterations between checkpoints (0: only after the last)."""
    seed: int = 0
    """The seed of every random key."""
    domain_randomization: bool = False
    """Train on randomised copies of the task's model, one per training environment, each kept for the run (the
    task's `randomize`: MuJoCo Playground's friction, mass, armature, friction-loss and joint-offset ranges for its
    robot tasks); evaluation runs the task as registered. A task without one is refused by name."""

    def validate_run(self, check_env: bool = True) -> None:
        """Raise ValueError naming the first shared field at fault (`check_env`: `env` must be registered)."""
        from hurtle.envs import names

        for name in ("num_timesteps", "episode_length", "num_eval_envs"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"Config.{name} must be positive, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"Config.{name} must be >= 0 (0 disables it), got {getattr(self, name)}")
        if check_env and self.env not in names():
            raise ValueError(f"Config.env: unknown environment {self.env!r}; registered: {', '.join(names())}")
        if self.nconmax is not None and (isinstance(self.nconmax, bool) or not self.nconmax > 0):
            raise ValueError(f"Config.nconmax must be a positive number of contacts or None, got {self.nconmax}")
        if self.target_return is not None and not (self.eval_every and math.isfinite(self.target_return)):
            raise ValueError(
                f"Config.target_return must be a finite return with evaluations on (eval_every > 0), got "
                f"{self.target_return} with eval_every={self.eval_every}"
            )
        env_options(self)

    def time_limit(self) -> int:
        """`episode_length`, or the registered task's time limit where it is None (1,000 for an environment
        hurtle does not register, such as a Gymnasium id)."""
        if self.episode_length is not None:
            return self.episode_length
        from hurtle.envs import names
        from hurtle.envs.registry import time_limit

        return time_limit(self.env) if self.env in names() else 1000

    def env_kwargs(self) -> dict[str, object]:
        """`env_options` as keyword arguments (numbers and booleans parsed, anything else kept as text)."""
        return env_options(self)


def env_options(config: RunConfig) -> dict[str, object]:
    """`config.env_options` parsed; ValueError naming the option at fault."""
    out: dict[str, object] = {}
    for option in config.env_options:
        name, eq, value = option.partition("=")
        if not eq or not name.isidentifier():
            raise ValueError(f"Config.env_options: {option!r} is not NAME=VALUE")
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name] = value
    return out


def check_positive(config: object, *names: str, strict: bool = True) -> None:
    """Raise ValueError naming the first of `names` that is not > 0 (`strict`) or not >= 0."""
    for name in names:
        value = getattr(config, name)
        if not (value > 0 if strict else value >= 0):
            raise ValueError(f"Config.{name} must be {'positive' if strict else '>= 0'}, got {value}")


def check_unit(config: object, *names: str) -> None:
    """Raise ValueError naming the first of `names` outside [0, 1]."""
    for name in names:
        if not 0 <= getattr(config, name) <= 1:
            raise ValueError(f"Config.{name} must lie in [0, 1], got {getattr(config, name)}")


def check_widths(config: object, *names: str) -> None:
    """Raise ValueError naming the first of `names` (layer widths) holding a width <= 0."""
    for name in names:
        if any(int(w) <= 0 for w in getattr(config, name)):
            raise ValueError(f"Config.{name} must hold positive widths, got {getattr(config, name)}")
