"""Networks (flax linen): an MLP, a policy whose head is chosen from the action space, and a value function.

policy = make_policy_network(env.observation_size, env.action_space, hidden_sizes=(64, 64))
params = policy.init(key)
dist_params = policy.apply(params, obs)                 # [..., policy.distribution.param_size]
raw = policy.distribution.sample(dist_params, key)      # store this; env action: distribution.postprocess(raw)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from hurtle.envs.base import Box, Discrete, Space, float_dtype
from hurtle.nn.distributions import Categorical, Distribution, TanhNormal


class MLP(nn.Module):
    """Dense layers of `hidden_sizes` with `activation`, then a linear layer of `out_size`."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: Callable[[jax.Array], jax.Array] = nn.swish
    dtype: Any = jnp.float32
    final_scale: float = 1.0  # the output layer's init scale (small for a policy: near-uniform at start)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.astype(self.dtype)
        for size in self.hidden_sizes:
            x = self.activation(nn.Dense(size, dtype=self.dtype, param_dtype=self.dtype)(x))
        init = nn.initializers.variance_scaling(self.final_scale, "fan_in", "uniform")
        return nn.Dense(self.out_size, dtype=self.dtype, param_dtype=self.dtype, kernel_init=init)(x)


@dataclasses.dataclass(frozen=True, eq=False)
class Network:
    """A module with its input size: `init(key) -> params`, `apply(params, x) -> outputs`."""

    module: nn.Module
    input_size: int

    def init(self, key: jax.Array) -> Any:
        return self.module.init(key, jnp.zeros((1, self.input_size), self.module.dtype))

    def apply(self, params: Any, x: jax.Array) -> jax.Array:
        return self.module.apply(params, x)


@dataclasses.dataclass(frozen=True, eq=False)
class PolicyNetwork(Network):
    """A network whose outputs parameterise `distribution`."""

    distribution: Distribution = None


def make_distribution(space: Space) -> Distribution:
    """The action distribution for a space: tanh-Gaussian for a (bounded) Box, categorical for Discrete."""
    if isinstance(space, Discrete):
        return Categorical(space.n)
    if isinstance(space, Box):
        if len(space.shape) != 1:
            raise ValueError(f"make_distribution: a Box action space must be a vector, got shape {space.shape}")
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"make_distribution: a tanh-Gaussian needs finite Box bounds, got {space}")
        return TanhNormal(space.low, space.high)
    raise TypeError(f"make_distribution: unsupported action space {space!r}")


def _input_size(observation_size: int | tuple[int, ...]) -> int:
    if isinstance(observation_size, int):
        return observation_size
    if len(observation_size) != 1:
        raise ValueError(f"MLP networks take flat observations, got shape {observation_size}")
    return int(observation_size[0])


def make_policy_network(
    observation_size: int | tuple[int, ...],
    action_space: Space,
    hidden_sizes: Sequence[int] = (32, 32, 32, 32),
    activation: Callable[[jax.Array], jax.Array] = nn.swish,
    dtype: Any = None,
) -> PolicyNetwork:
    """A policy MLP whose head (tanh-Gaussian or categorical) follows from `action_space`."""
    distribution = make_distribution(action_space)
    dtype = float_dtype() if dtype is None else dtype
    module = MLP(tuple(hidden_sizes), distribution.param_size, activation, dtype, final_scale=0.01)
    return PolicyNetwork(module, _input_size(observation_size), distribution)


@dataclasses.dataclass(frozen=True, eq=False)
class ValueNetwork(Network):
    """A network with one output, returned without its last axis: `apply(params, x[..., d]) -> [...]`."""

    def apply(self, params: Any, x: jax.Array) -> jax.Array:
        return self.module.apply(params, x)[..., 0]


def make_value_network(
    observation_size: int | tuple[int, ...],
    hidden_sizes: Sequence[int] = (256, 256, 256, 256, 256),
    activation: Callable[[jax.Array], jax.Array] = nn.swish,
    dtype: Any = None,
) -> ValueNetwork:
    """A state-value MLP."""
    dtype = float_dtype() if dtype is None else dtype
    return ValueNetwork(MLP(tuple(hidden_sizes), 1, activation, dtype), _input_size(observation_size))
