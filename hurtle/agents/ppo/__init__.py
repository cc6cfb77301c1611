"""Proximal Policy Optimisation (Schulman et al. 2017) with GAE, for the Anakin (on-device) loop."""

from hurtle.agents.ppo import losses
from hurtle.agents.ppo.config import Config

__all__ = ["Config", "losses"]
