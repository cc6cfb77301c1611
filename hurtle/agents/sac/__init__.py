"""Soft actor-critic (Haarnoja et al. 2018) on the device: twin critics with Polyak targets, a tanh-Gaussian
policy, a learned temperature, and a replay buffer that lives beside the environments (Anakin)."""

from hurtle.agents.runner import Algorithm
from hurtle.agents.sac import losses, train
from hurtle.agents.sac.config import Config
from hurtle.agents.sac.presets import PRESETS
from hurtle.agents.sac.train import TrainState

ALGORITHM = Algorithm("sac", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "losses", "train"]
