"""Classic control in pure JAX, step for step as Gymnasium's: CartPole-v1, Pendulum-v1, Acrobot-v1,
MountainCarContinuous-v0."""

from hurtle.envs.classic.acrobot import Acrobot
from hurtle.envs.classic.base import ClassicControl
from hurtle.envs.classic.cartpole import CartPole
from hurtle.envs.classic.mountain_car import MountainCarContinuous
from hurtle.envs.classic.pendulum import Pendulum

__all__ = ["Acrobot", "CartPole", "ClassicControl", "MountainCarContinuous", "Pendulum"]
