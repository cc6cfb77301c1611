"""The Sebulba learners: IMPALA (Espeholt et al. 2018, V-trace) and PPO on trajectories that actor threads
collect from host environments (`hurtle.podracer.sebulba`, `hurtle.hostenvs`)."""

from hurtle.agents.impala import losses, train
from hurtle.agents.impala.config import Config, PPOConfig
from hurtle.agents.impala.presets import IMPALA as IMPALA_PRESETS
from hurtle.agents.impala.presets import PPO as PPO_PRESETS
from hurtle.agents.impala.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm(
    "impala", Config, IMPALA_PRESETS, train.make_learner, train.make_actor, train.make_evaluate, "sebulba"
)
PPO = Algorithm("ppo", PPOConfig, PPO_PRESETS, train.make_learner, train.make_actor, train.make_evaluate, "sebulba")

__all__ = ["ALGORITHM", "PPO", "Config", "PPOConfig", "TrainState", "losses", "train"]
