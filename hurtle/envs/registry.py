"""The registry of named tasks: `make(name, **kwargs)`, `names()`, `register(...)`.

`make` returns the task inside its time limit (`EpisodeWrapper`) and nothing else, so that a caller
sees every transition, the terminal one included; batching and auto-reset are the caller's choice
(`wrappers.wrap_for_training`). Tasks are imported when first made.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable

from hurtle.envs.base import Env
from hurtle.envs.wrappers import EpisodeWrapper


@dataclasses.dataclass(frozen=True)
class _Entry:
    factory: str | Callable[..., Env]  # a callable, or "module:attribute" imported on first use
    episode_length: int
    extra: str | None = None  # the optional extra its files or packages come from (`hurtle.extras`)

    def build(self, **kwargs) -> Env:
        factory = self.factory
        if isinstance(factory, str):
            module, _, attr = factory.partition(":")
            factory = getattr(importlib.import_module(module), attr)
        return factory(**kwargs)


_REGISTRY: dict[str, _Entry] = {}


def register(
    name: str,
    factory: str | Callable[..., Env],
    *,
    episode_length: int = 1000,
    extra: str | None = None,
    overwrite: bool = False,
) -> None:
    """Register a task under `name`: `factory(**kwargs)` builds it (a callable, or "module:attribute"),
    `episode_length` is its default time limit in task steps, and `extra` the optional extra it needs
    (`pip install 'hurtle[EXTRA]'`), if any."""
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"an environment named {name!r} is already registered (pass overwrite=True to replace it)")
    _REGISTRY[name] = _Entry(factory, int(episode_length), extra)


def unregister(name: str) -> None:
    """Remove `name` from the registry."""
    _entry(name)
    del _REGISTRY[name]


def names() -> tuple[str, ...]:
    """The registered task names, sorted."""
    return tuple(sorted(_REGISTRY))


def time_limit(name: str) -> int:
    """The registered task's default time limit in task steps."""
    return _entry(name).episode_length


def extra(name: str) -> str | None:
    """The optional extra the registered task needs (None: none)."""
    return _entry(name).extra


def _entry(name: str) -> _Entry:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown environment {name!r}; known: {', '.join(names())}") from None


# where hurtle's own model files are (the package's data): the tasks' and the demo's
ASSET_DIRS = tuple(
    os.path.join(os.path.dirname(os.path.dirname(__file__)), *parts)
    for parts in (("envs", "locomotion", "assets"), ("envs", "manipulation", "assets"), ("assets",))
)


def asset_names() -> tuple[str, ...]:
    """The model files hurtle ships (`asset_path` takes any of them), sorted."""
    return tuple(sorted(f for d in ASSET_DIRS for f in os.listdir(d) if f.endswith(".xml")))


def asset_path(name: str) -> str:
    """The path of a model file hurtle ships, by file name: `asset_path("ant.xml")` is the ant its `ant` task
    loads (Gymnasium's Ant-v5 model), for `hurtle.physics.load`; FileNotFoundError listing them otherwise."""
    for directory in ASSET_DIRS:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"{name}: hurtle ships no such model file; it ships {', '.join(asset_names())}")


def make(
    name: str, episode_length: int | None = None, action_repeat: int = 1, nconmax: int | None = None, **kwargs
) -> Env:
    """The task `name` built with `kwargs`, inside an `EpisodeWrapper` with its default time limit (or
    `episode_length` task steps) and `action_repeat`. `make(name).unwrapped` is the bare task. `nconmax`
    caps a physics task's contacts per contact dimension (`PhysicsEnv.with_contact_cap`)."""
    entry = _entry(name)
    limit = entry.episode_length if episode_length is None else episode_length
    task = entry.build(**kwargs)
    if nconmax is not None:
        if not hasattr(task, "with_contact_cap"):
            raise ValueError(f"{name}: nconmax applies to physics tasks; {type(task).__name__} has no contacts")
        task = task.with_contact_cap(nconmax)
    return EpisodeWrapper(task, episode_length=limit, action_repeat=action_repeat)


# Gymnasium's ids and time limits
register("cartpole", "hurtle.envs.classic.cartpole:CartPole", episode_length=500)
register("pendulum", "hurtle.envs.classic.pendulum:Pendulum", episode_length=200)
register("acrobot", "hurtle.envs.classic.acrobot:Acrobot", episode_length=500)
register("mountain_car_continuous", "hurtle.envs.classic.mountain_car:MountainCarContinuous", episode_length=999)

# Gymnasium MuJoCo v5 cart-pole and planar locomotion tasks
register("inverted_pendulum", "hurtle.envs.locomotion.inverted_pendulum:InvertedPendulum", episode_length=1000)
register(
    "inverted_double_pendulum",
    "hurtle.envs.locomotion.inverted_double_pendulum:InvertedDoublePendulum",
    episode_length=1000,
)
register("halfcheetah", "hurtle.envs.locomotion.half_cheetah:HalfCheetah", episode_length=1000)
register("hopper", "hurtle.envs.locomotion.hopper:Hopper", episode_length=1000)
register("walker2d", "hurtle.envs.locomotion.walker2d:Walker2d", episode_length=1000)
register("swimmer", "hurtle.envs.locomotion.swimmer:Swimmer", episode_length=1000)

# Gymnasium MuJoCo v5 arm and 3-D locomotion tasks
register("reacher", "hurtle.envs.manipulation.reacher:Reacher", episode_length=50)
register("pusher", "hurtle.envs.manipulation.pusher:Pusher", episode_length=100)
register("ant", "hurtle.envs.locomotion.ant:Ant", episode_length=1000)
register("humanoid", "hurtle.envs.locomotion.humanoid:Humanoid", episode_length=1000)
register("humanoidstandup", "hurtle.envs.locomotion.humanoidstandup:HumanoidStandup", episode_length=1000)

# hurtle's own tasks: targets reached again and again
register("ur5e_reach", "hurtle.envs.manipulation.ur5e:UR5eReach", episode_length=250)
register("ur5e_push", "hurtle.envs.manipulation.ur5e:UR5ePush", episode_length=250)
register("fetch", "hurtle.envs.locomotion.fetch:Fetch", episode_length=1000)
register("grasp", "hurtle.envs.manipulation.grasp:Grasp", episode_length=1000)

# MuJoCo Playground's robot tasks (the `robots` extra: EnvPool's asset wheels hold the robots and scenes)
register("go1_joystick_flat", "hurtle.envs.robots.go1:flat", episode_length=1000, extra="robots")
register("go1_joystick_rough", "hurtle.envs.robots.go1:rough", episode_length=1000, extra="robots")
register("berkeley_humanoid_joystick_flat", "hurtle.envs.robots.berkeley:flat", episode_length=1000, extra="robots")
register("leap_cube_reorient", "hurtle.envs.robots.leap:LeapCubeReorient", episode_length=1000, extra="robots")
register("panda_pick_cube", "hurtle.envs.robots.panda:PandaPickCube", episode_length=150, extra="robots")
