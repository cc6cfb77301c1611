"""FastTD3 (Seo et al. 2025) on the device: TD3 with twin distributional (C51) critics, clipped double Q,
per-environment exploration noise, large batches from many parallel environments, and a replay buffer that lives
beside the environments (Anakin), or on the learner device beside host environments on actor threads (Sebulba)."""

from hurtle.agents.fasttd3 import losses, sebulba, train
from hurtle.agents.fasttd3.config import Config
from hurtle.agents.fasttd3.presets import PRESETS, SEBULBA_PRESETS
from hurtle.agents.fasttd3.sebulba import SebulbaConfig
from hurtle.agents.fasttd3.train import TrainState
from hurtle.agents.impala.train import make_evaluate as host_evaluate
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("fasttd3", Config, PRESETS, train.make_learner, train.make_actor)
SEBULBA = Algorithm(
    "fasttd3", SebulbaConfig, SEBULBA_PRESETS, sebulba.make_learner, sebulba.make_actor, host_evaluate, "sebulba"
)

__all__ = ["ALGORITHM", "SEBULBA", "Config", "SebulbaConfig", "TrainState", "losses", "sebulba", "train"]
