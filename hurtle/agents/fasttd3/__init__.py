"""FastTD3 (Seo et al. 2025) on the device: TD3 with twin distributional (C51) critics, clipped double Q,
per-environment exploration noise, large batches from many parallel environments, and a replay buffer that lives
beside the environments (Anakin)."""

from hurtle.agents.fasttd3 import losses, train
from hurtle.agents.fasttd3.config import Config
from hurtle.agents.fasttd3.presets import PRESETS
from hurtle.agents.fasttd3.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("fasttd3", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "losses", "train"]
