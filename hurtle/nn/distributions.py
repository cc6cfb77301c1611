"""Action distributions as pure functions: a tanh-squashed Gaussian (box actions) and a categorical.

A policy's sampled *raw* action is what a learner stores: the pre-tanh Gaussian sample `u` for the
tanh-Gaussian, the integer choice for the categorical. Log-probabilities are computed from the raw
action, which avoids `arctanh` of values rounded to +-1. `TanhNormal` and `Categorical` bundle the
functions with the static facts (bounds, sizes) a network factory chooses them by.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np


def _split_loc_scale(params: jax.Array, min_std: float) -> tuple[jax.Array, jax.Array]:
    """Split `[..., 2 * n]` network outputs into a location and a positive scale (softplus + `min_std`)."""
    loc, raw_scale = jnp.split(params, 2, axis=-1)
    return loc, jax.nn.softplus(raw_scale) + jnp.asarray(min_std, params.dtype)


def normal_log_prob(loc: jax.Array, scale: jax.Array, u: jax.Array) -> jax.Array:
    """Elementwise log-density of `u` under N(loc, scale^2)."""
    z = (u - loc) / scale
    return -0.5 * z * z - jnp.log(scale) - jnp.asarray(0.5 * math.log(2 * math.pi), u.dtype)


def tanh_log_det_jacobian(u: jax.Array) -> jax.Array:
    """Elementwise log |d tanh(u) / du| = log(1 - tanh(u)^2), computed without cancellation for large |u|."""
    # 1 - tanh(u)^2 = 4 / (e^u + e^-u)^2, so log = 2 * (log 2 - u - softplus(-2u))
    return 2.0 * (jnp.asarray(math.log(2.0), u.dtype) - u - jax.nn.softplus(-2.0 * u))


def tanh_normal_sample(key: jax.Array, loc: jax.Array, scale: jax.Array) -> jax.Array:
    """A raw (pre-tanh) sample u ~ N(loc, scale^2); the action in [-1, 1] is `tanh(u)`."""
    return loc + scale * jax.random.normal(key, loc.shape, loc.dtype)


def tanh_normal_log_prob(loc: jax.Array, scale: jax.Array, u: jax.Array) -> jax.Array:
    """Log-density of `a = tanh(u)` (summed over the last axis): log N(u) - sum log(1 - tanh(u)^2)."""
    return jnp.sum(normal_log_prob(loc, scale, u) - tanh_log_det_jacobian(u), axis=-1)


def tanh_normal_entropy(key: jax.Array, loc: jax.Array, scale: jax.Array) -> jax.Array:
    """A one-sample estimate of the tanh-Gaussian's entropy (summed over the last axis).

    H[tanh(u)] = H[u] + E[log(1 - tanh(u)^2)]; the Gaussian part is exact, the expectation is estimated
    at one sample (the squashed entropy has no closed form).
    """
    gaussian = 0.5 + jnp.asarray(0.5 * math.log(2 * math.pi), loc.dtype) + jnp.log(scale)
    u = tanh_normal_sample(key, loc, scale)
    return jnp.sum(gaussian + tanh_log_det_jacobian(u), axis=-1)


def tanh_normal_mode(loc: jax.Array) -> jax.Array:
    """The deterministic action in [-1, 1] for evaluation: tanh of the Gaussian's mean."""
    return jnp.tanh(loc)


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """A choice (int32) from unnormalised `logits` of shape `[..., n]`."""
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """Log-probability of the integer `action` under `logits` `[..., n]`."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: jax.Array) -> jax.Array:
    """The exact entropy of the categorical over the last axis."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


def categorical_mode(logits: jax.Array) -> jax.Array:
    """The most likely choice (int32)."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class TanhNormal:
    """A tanh-Gaussian over a box `[low, high]` (finite numpy bounds of shape `[n]`).

    Network outputs are `[..., 2n]` (location, pre-softplus scale). `log_prob` is the density of the
    squashed action in [-1, 1]^n; the affine map to the box only shifts it by a constant, which cancels in
    ratios of probabilities.
    """

    low: np.ndarray
    high: np.ndarray
    min_std: float = 1e-3

    @property
    def param_size(self) -> int:
        return 2 * int(np.size(self.low))

    def sample(self, params: jax.Array, key: jax.Array) -> jax.Array:
        """A raw (pre-tanh) action."""
        return tanh_normal_sample(key, *_split_loc_scale(params, self.min_std))

    def log_prob(self, params: jax.Array, raw_action: jax.Array) -> jax.Array:
        return tanh_normal_log_prob(*_split_loc_scale(params, self.min_std), raw_action)

    def entropy(self, params: jax.Array, key: jax.Array) -> jax.Array:
        return tanh_normal_entropy(key, *_split_loc_scale(params, self.min_std))

    def _to_box(self, squashed: jax.Array) -> jax.Array:
        low, high = jnp.asarray(self.low, squashed.dtype), jnp.asarray(self.high, squashed.dtype)
        return jnp.clip(low + 0.5 * (squashed + 1.0) * (high - low), low, high)

    def postprocess(self, raw_action: jax.Array) -> jax.Array:
        """The environment's action for a raw one: tanh, then scaled into the box."""
        return self._to_box(jnp.tanh(raw_action))

    def mode(self, params: jax.Array) -> jax.Array:
        """The deterministic environment action (for evaluation)."""
        return self._to_box(tanh_normal_mode(_split_loc_scale(params, self.min_std)[0]))


@dataclasses.dataclass(frozen=True)
class Categorical:
    """A categorical over `n` choices; network outputs are `[..., n]` logits, raw actions are the choices."""

    n: int

    @property
    def param_size(self) -> int:
        return self.n

    def sample(self, params: jax.Array, key: jax.Array) -> jax.Array:
        return categorical_sample(key, params)

    def log_prob(self, params: jax.Array, raw_action: jax.Array) -> jax.Array:
        return categorical_log_prob(params, raw_action)

    def entropy(self, params: jax.Array, key: jax.Array) -> jax.Array:
        """The exact entropy (`key` is unused; it keeps the signature of `TanhNormal.entropy`)."""
        return categorical_entropy(params)

    def postprocess(self, raw_action: jax.Array) -> jax.Array:
        return raw_action

    def mode(self, params: jax.Array) -> jax.Array:
        return categorical_mode(params)


Distribution = TanhNormal | Categorical
