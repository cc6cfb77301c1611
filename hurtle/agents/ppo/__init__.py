"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, for the Anakin (on-device) loop."""

from hurtle.agents.ppo import losses, train
from hurtle.agents.ppo.config import Config
from hurtle.agents.ppo.train import TrainState

__all__ = ["Config", "TrainState", "losses", "train"]
