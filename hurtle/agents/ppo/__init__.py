"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, for the Anakin (on-device) loop."""

from hurtle.agents.ppo import losses, train
from hurtle.agents.ppo.config import Config
from hurtle.agents.ppo.presets import PRESETS
from hurtle.agents.ppo.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("ppo", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "losses", "train"]
