"""Neural-network pieces shared by the agents: MLPs, action distributions, the observation normaliser."""

from hurtle.nn import distributions, normalizer
from hurtle.nn.distributions import Categorical, TanhNormal
from hurtle.nn.networks import (
    MLP,
    Network,
    PolicyNetwork,
    ValueNetwork,
    make_distribution,
    make_policy_network,
    make_value_network,
)

__all__ = [
    "MLP",
    "Categorical",
    "Network",
    "PolicyNetwork",
    "TanhNormal",
    "ValueNetwork",
    "distributions",
    "make_distribution",
    "make_policy_network",
    "make_value_network",
    "normalizer",
]
