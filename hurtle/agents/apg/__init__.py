"""Analytic policy gradients (APG, as Brax's): the policy's loss is the discounted reward of a short unroll of
the batched environment, differentiated through the physics (`hurtle.physics`' implicit solver derivative)."""

from hurtle.agents.apg import train
from hurtle.agents.apg.config import Config
from hurtle.agents.apg.presets import PRESETS
from hurtle.agents.apg.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("apg", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "train"]
