"""Environments: the `Env`/`State` contract, wrappers, the task registry, adapters and tasks.

env = hurtle.envs.make("cartpole")              # the task inside its time limit
state = jax.jit(env.reset)(jax.random.key(0))
state = jax.jit(env.step)(state, action)
batch = hurtle.envs.wrappers.wrap_for_training(env, batch_size=1024)   # NaN guard, auto-reset, vmap
"""

from hurtle.envs import wrappers
from hurtle.envs.adapters import from_brax, from_gymnax, to_dm_env, to_gymnasium, to_gymnasium_vector
from hurtle.envs.base import Box, Discrete, Env, State, Wrapper, tree_where
from hurtle.envs.physics_env import PhysicsEnv
from hurtle.envs.registry import asset_names, asset_path, make, names, register, unregister

__all__ = [
    "Box",
    "Discrete",
    "Env",
    "PhysicsEnv",
    "State",
    "Wrapper",
    "asset_names",
    "asset_path",
    "from_brax",
    "from_gymnax",
    "make",
    "names",
    "register",
    "to_dm_env",
    "to_gymnasium",
    "to_gymnasium_vector",
    "tree_where",
    "unregister",
    "wrappers",
]
