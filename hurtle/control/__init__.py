"""Control through the physics' derivatives: trajectory optimisation by shooting, and model-predictive control
on top of it (`hurtle.control.trajopt`)."""

from hurtle.control.trajopt import Problem, Solution, mpc, optimize, rollout

__all__ = ["Problem", "Solution", "mpc", "optimize", "rollout"]
