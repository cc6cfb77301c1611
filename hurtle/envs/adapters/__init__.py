"""Adapters: hurtle environments out to Gymnasium and dm_env, Brax/Playground and gymnax environments in.

Each third-party package is imported only when its adapter is used; a missing one raises an
ImportError naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

from hurtle.envs.base import Env


def _require(module: str, extra: str, user: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{user} needs the `{module}` package: pip install 'hurtle[{extra}]'") from e


def to_gymnasium(env: Env, **kwargs: Any) -> Any:
    """`env` as a `gymnasium.Env` (float32 observations; `render_mode="rgb_array"`, `width`, `height`, `camera`
    for frames; see `adapters.gymnasium.GymnasiumEnv`)."""
    _require("gymnasium", "gymnasium", "to_gymnasium")
    from hurtle.envs.adapters.gymnasium import GymnasiumEnv

    return GymnasiumEnv(env, **kwargs)


def to_gymnasium_vector(env: Env, num_envs: int) -> Any:
    """`num_envs` copies of `env` as a `gymnasium.vector.VectorEnv` that resets in the ending step."""
    _require("gymnasium", "gymnasium", "to_gymnasium_vector")
    from hurtle.envs.adapters.gymnasium import GymnasiumVectorEnv

    return GymnasiumVectorEnv(env, num_envs)


def to_dm_env(env: Env, seed: int = 0) -> Any:
    """`env` as a `dm_env.Environment` (see `adapters.dm_env.DmEnv`)."""
    _require("dm_env", "dm-env", "to_dm_env")
    from hurtle.envs.adapters.dm_env import DmEnv

    return DmEnv(env, seed)


def from_brax(env: Any) -> Env:
    """A Brax or MuJoCo Playground environment as a hurtle `Env` (needs `brax`: the `brax` extra)."""
    _require("brax", "brax", "from_brax")
    from hurtle.envs.adapters.brax import BraxEnv

    return BraxEnv(env)


def from_gymnax(env: Any, params: Any = None) -> Env:
    """A gymnax environment with `params` as a hurtle `Env` (needs `gymnax`: the `gymnax` extra)."""
    _require("gymnax", "gymnax", "from_gymnax")
    from hurtle.envs.adapters.gymnax import GymnaxEnv

    return GymnaxEnv(env, params)


__all__ = ["from_brax", "from_gymnax", "to_dm_env", "to_gymnasium", "to_gymnasium_vector"]
