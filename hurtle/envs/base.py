"""The environment contract: `Env`, its `State`, the action and observation spaces, and `Wrapper`.

An `Env` is a pair of pure functions, `reset(key) -> State` and `step(state, action) -> State`, with the
method names of Brax's `Env` so that Brax and MuJoCo Playground environments fit the same loops. Nothing
here calls `jax.jit`: callers jit (and `vmap`) at the boundary they choose.

Conventions every environment and wrapper follows:

- `State` is immutable; `metrics` and `info` are rebuilt (`{**state.info, "k": v}`), never mutated, and
  keys a wrapper put there are carried through untouched by everything inside it.
- `done` is termination (the task's own end: bootstrap with zero), `truncation` is an external cut (a time
  limit: bootstrap with the value of the final observation). Both are recomputed on every step.
- The metrics and info of a reset state have the same keys, shapes and dtypes as those of a stepped
  state, so states can be carried through `lax.scan` and selected between with `tree_where`.
- Floats use JAX's default float dtype when the environment is built (`float_dtype()`: float32, or float64
  under `jax_enable_x64`); `done` and `truncation` are booleans.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics.dataclass import pytree_dataclass


def float_dtype() -> np.dtype:
    """JAX's default float dtype: float64 when `jax_enable_x64` is on, float32 otherwise."""
    return np.dtype(jnp.zeros(()).dtype)


@dataclasses.dataclass(frozen=True, eq=False)
class Box:
    """A continuous space: arrays of `shape` and `dtype` between `low` and `high` (numpy, may be infinite)."""

    low: np.ndarray
    high: np.ndarray
    shape: tuple[int, ...]
    dtype: np.dtype

    def __init__(self, low: Any, high: Any, shape: tuple[int, ...] | None = None, dtype: Any = None):
        dtype = np.dtype(float_dtype() if dtype is None else dtype)
        if shape is None:
            shape = np.broadcast_shapes(np.shape(low), np.shape(high))
        shape = tuple(int(n) for n in shape)
        low = np.broadcast_to(np.asarray(low, dtype), shape).copy()
        high = np.broadcast_to(np.asarray(high, dtype), shape).copy()
        if np.any(low > high):
            raise ValueError(f"Box: low {low} exceeds high {high}")
        for name, value in (("low", low), ("high", high), ("shape", shape), ("dtype", dtype)):
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Box)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and np.array_equal(self.low, other.low)
            and np.array_equal(self.high, other.high)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype.str, self.low.tobytes(), self.high.tobytes()))

    def __repr__(self) -> str:
        return f"Box(low={self.low}, high={self.high}, shape={self.shape}, dtype={self.dtype})"

    @property
    def size(self) -> int:
        """The number of elements of one value."""
        return int(np.prod(self.shape, dtype=np.int64))

    def sample(self, key: jax.Array) -> jax.Array:
        """A random value: uniform where both bounds are finite, exponential from a single finite bound,
        standard normal where unbounded (as Gymnasium's `Box.sample`)."""
        k_uniform, k_exp, k_normal = jax.random.split(key, 3)
        lo_ok, hi_ok = np.isfinite(self.low), np.isfinite(self.high)
        low, high = np.where(lo_ok, self.low, 0).astype(self.dtype), np.where(hi_ok, self.high, 0).astype(self.dtype)
        uniform = low + jax.random.uniform(k_uniform, self.shape, self.dtype) * (high - low)
        expo = jax.random.exponential(k_exp, self.shape, self.dtype)
        normal = jax.random.normal(k_normal, self.shape, self.dtype)
        one_sided = jnp.where(lo_ok, low + expo, jnp.where(hi_ok, high - expo, normal))
        return jnp.where(lo_ok & hi_ok, uniform, one_sided)

    def contains(self, x: Any) -> bool:
        """Whether the (concrete) value `x` has this shape and lies within the bounds."""
        x = np.asarray(x)
        return x.shape == self.shape and bool(np.all((x >= self.low) & (x <= self.high)))

    def check(self, action: Any, owner: str) -> jax.Array:
        """`action` as an array of this space's dtype; a wrong shape raises (at trace time) naming `owner`."""
        action = jnp.asarray(action)
        if action.shape != self.shape:
            raise ValueError(f"{owner}: action has shape {action.shape}, expected {self.shape}")
        return action.astype(self.dtype)


@dataclasses.dataclass(frozen=True)
class Discrete:
    """A discrete space `{0, ..., n - 1}`; a value is an integer scalar of any integer dtype."""

    n: int
    dtype: np.dtype = np.dtype(np.int32)

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def size(self) -> int:
        """The number of choices (the width of a policy's logits)."""
        return self.n

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniformly random choice."""
        return jax.random.randint(key, (), 0, self.n, self.dtype)

    def contains(self, x: Any) -> bool:
        """Whether the (concrete) value `x` is an integer scalar in `[0, n)`."""
        x = np.asarray(x)
        return x.shape == () and np.issubdtype(x.dtype, np.integer) and 0 <= int(x) < self.n

    def check(self, action: Any, owner: str) -> jax.Array:
        """`action` as an integer array; a non-scalar or non-integer action raises naming `owner`."""
        action = jnp.asarray(action)
        if action.shape != () or not jnp.issubdtype(action.dtype, jnp.integer):
            raise ValueError(
                f"{owner}: a discrete action is an integer scalar in [0, {self.n}), got shape {action.shape} "
                f"and dtype {action.dtype}"
            )
        return action


Space = Box | Discrete


@pytree_dataclass
class State:
    """One environment state (a pytree; batched states carry a leading batch axis on every leaf).

    obs: the observation. reward: of the transition that led here (zero after a reset).
    done: termination (bool). truncation: cut by a time limit or similar (bool), never set with `done`.
    metrics: scalars to log (reward terms as `reward/<term>`, episode statistics, ...).
    info: everything else a wrapper or task carries between steps (counters, keys, the final observation).
    physics: the physics `Data` of an MJCF task, None for an environment without one.
    privileged_obs: an asymmetric actor-critic's critic input, for tasks that have one (MuJoCo Playground's
      `privileged_state`, beside `obs`, its `state`): what the simulator knows and a robot's sensors do not
      (noiseless readings, contact forces, the feet's air times); None for every other task. Its space is the
      environment's `privileged_observation_space`. Policies read `obs` only.
    """

    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    truncation: jax.Array
    metrics: dict[str, jax.Array] = dataclasses.field(default_factory=dict)
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    physics: Any = None
    privileged_obs: jax.Array | None = None

    @classmethod
    def first(
        cls,
        obs: jax.Array,
        dtype: Any,
        metrics: dict | None = None,
        info: dict | None = None,
        physics: Any = None,
        privileged_obs: jax.Array | None = None,
    ) -> State:
        """A state just after a reset: zero reward, neither done nor truncated."""
        return cls(
            obs=obs,
            reward=jnp.zeros((), dtype),
            done=jnp.zeros((), bool),
            truncation=jnp.zeros((), bool),
            metrics=dict(metrics or {}),
            info=dict(info or {}),
            physics=physics,
            privileged_obs=privileged_obs,
        )


def tree_where(cond: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Select leafwise between two pytrees of the same structure; `cond` broadcasts from the left.

    `cond` has the batch shape (a scalar for one environment); every leaf of both trees has that shape
    as its leading axes. Both branches are computed: this is how resets happen without Python branches.
    """
    if jax.tree.structure(on_true) != jax.tree.structure(on_false):
        raise ValueError(
            "tree_where: the two states differ in structure (a reset and a step must produce the same metrics "
            f"and info keys):\n{jax.tree.structure(on_true)}\n{jax.tree.structure(on_false)}"
        )

    def select(a, b):
        c = jnp.reshape(cond, jnp.shape(cond) + (1,) * (jnp.ndim(a) - jnp.ndim(cond)))
        return jnp.where(c, a, b)

    return jax.tree.map(select, on_true, on_false)


class Env(abc.ABC):
    """An environment: pure `reset(key)` and `step(state, action)` functions plus static spaces."""

    @abc.abstractmethod
    def reset(self, key: jax.Array) -> State:
        """A random initial state from a PRNG key."""

    @abc.abstractmethod
    def step(self, state: State, action: jax.Array) -> State:
        """The state after applying `action` (shape `action_space.shape`) in `state`."""

    def reset_to(self, *args: Any, **kwargs: Any) -> State:
        """An initial state from a given simulator state (see each task for the arguments)."""
        raise NotImplementedError(f"{type(self).__name__} does not support reset_to")

    @property
    @abc.abstractmethod
    def observation_space(self) -> Box:
        """The observations' shape, dtype and bounds."""

    @property
    @abc.abstractmethod
    def action_space(self) -> Space:
        """A `Box` of continuous actions or a `Discrete` set."""

    @property
    def privileged_observation_space(self) -> Box | None:
        """The space of `State.privileged_obs` (the critic's asymmetric input), None for a task without one."""
        return None

    @property
    def observation_size(self) -> int | tuple[int, ...]:
        """The length of a flat observation (its shape when it is not a vector)."""
        shape = self.observation_space.shape
        return shape[0] if len(shape) == 1 else shape

    @property
    def action_size(self) -> int:
        """The width of a policy's output: the number of action elements, or of choices when discrete."""
        return self.action_space.size

    @property
    def unwrapped(self) -> Env:
        """The task under all wrappers."""
        return self

    def with_model(self, model: Any) -> Env:
        """A copy of this environment that simulates `model` (a physics `Model`, possibly traced)."""
        raise TypeError(f"{type(self).__name__} has no physics model to replace")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Wrapper(Env):
    """An environment around another; everything not overridden is delegated to the inner one.

    Subclasses that add fields to a reset state override `start(state, key)`, used by both `reset` and
    `reset_to`, so that `reset_to` passes through every wrapper. A wrapper that needs randomness at reset
    gets `key`; for `reset_to`, the caller may pass `key=`, and a fixed key is used otherwise.
    """

    uses_key = False  # whether `start` needs its own key (the inner reset then gets a split-off one)

    def __init__(self, env: Env):
        self.env = env

    def start(self, state: State, key: jax.Array) -> State:
        """Add this wrapper's fields to a fresh state of the inner environment."""
        return state

    def _split(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        return tuple(jax.random.split(key)) if self.uses_key else (key, key)

    def reset(self, key: jax.Array) -> State:
        key, inner = self._split(key)
        return self.start(self.env.reset(inner), key)

    def reset_to(self, *args: Any, key: jax.Array | None = None, **kwargs: Any) -> State:
        key, inner = self._split(jax.random.key(0) if key is None else key)
        return self.start(reset_to_with_key(self.env, inner, *args, **kwargs), key)

    def step(self, state: State, action: jax.Array) -> State:
        return self.env.step(state, action)

    @property
    def observation_space(self) -> Box:
        return self.env.observation_space

    @property
    def action_space(self) -> Space:
        return self.env.action_space

    @property
    def privileged_observation_space(self) -> Box | None:
        return self.env.privileged_observation_space

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    def with_model(self, model: Any) -> Env:
        new = copy.copy(self)
        new.env = self.env.with_model(model)
        return new

    def __getattr__(self, name: str) -> Any:
        # attributes of the task (its model, constants) are reachable through any wrapper
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"


def reset_to_with_key(env: Env, key: jax.Array, *args: Any, **kwargs: Any) -> State:
    """`env.reset_to(*args, **kwargs)`, handing `key` to the wrappers that draw randomness at reset."""
    if isinstance(env, Wrapper):
        return env.reset_to(*args, key=key, **kwargs)
    return env.reset_to(*args, **kwargs)
