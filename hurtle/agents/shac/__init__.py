"""Short-horizon actor-critic (SHAC, Xu et al. 2022): the actor's loss is a short window's return through the
physics, bootstrapped with a learned critic trained on TD(lambda) targets."""

from hurtle.agents.runner import Algorithm
from hurtle.agents.shac import train
from hurtle.agents.shac.config import Config
from hurtle.agents.shac.presets import PRESETS
from hurtle.agents.shac.train import TrainState

ALGORITHM = Algorithm("shac", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "train"]
