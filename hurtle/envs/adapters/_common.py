"""What the adapters share: jitted `reset` and `step` (one compiled program per environment object and
input shape) and the conversion of actions coming from outside."""

from typing import Any

import jax
import numpy as np

from hurtle.envs.base import Discrete, Env

reset = jax.jit(lambda env, key: env.reset(key), static_argnums=0)
step = jax.jit(lambda env, state, action: env.step(state, action), static_argnums=0)


def cast_action(env: Env, action: Any, batch: tuple[int, ...] = ()) -> np.ndarray:
    """`action` as an array of the task's action dtype (integer for a discrete space), shape checked."""
    space = env.action_space
    action = np.asarray(action)
    shape = batch + space.shape
    if action.shape != shape:
        raise ValueError(f"{env!r}: action has shape {action.shape}, expected {shape}")
    if isinstance(space, Discrete):
        if not np.issubdtype(action.dtype, np.integer):
            raise ValueError(f"{env!r}: a discrete action must be an integer, got {action.dtype}")
        return action
    return action.astype(space.dtype)
