"""OpenAI evolution strategies (Salimans et al. 2017) on the device: a generation is one `vmap` of the policy
over antithetic parameter perturbations, centred-rank fitness shaping, Adam on the estimated gradient."""

from hurtle.agents.es import train
from hurtle.agents.es.config import Config
from hurtle.agents.es.presets import PRESETS
from hurtle.agents.es.train import TrainState
from hurtle.agents.runner import Algorithm

ALGORITHM = Algorithm("es", Config, PRESETS, train.make_learner, train.make_actor)

__all__ = ["ALGORITHM", "Config", "TrainState", "train"]
