"""Augmented random search (Mania et al. 2018, V2-t) on the device: linear policies, 2N perturbed members
played as one `vmap`, the top b directions, running state normalisation."""

from hurtle.agents.ars import train
from hurtle.agents.ars.config import Config
from hurtle.agents.ars.presets import PRESETS
from hurtle.agents.ars.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("ars", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "train"]
