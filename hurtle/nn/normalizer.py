"""A running observation normaliser: mean and variance merged batch by batch (Chan et al.'s parallel update).

state = normalizer.init(obs_shape, jnp.float32)
state = normalizer.update(state, obs_batch)          # leading axes of obs_batch are batch axes
x = normalizer.normalize(state, obs)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class NormalizerState:
    """count: observations seen (a float, so it never overflows); mean; m2: the sum of squared deviations."""

    count: jax.Array
    mean: jax.Array
    m2: jax.Array


def init(shape: int | tuple[int, ...], dtype: Any = jnp.float32) -> NormalizerState:
    """A normaliser that has seen nothing (it normalises to the identity until its first update)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return NormalizerState(count=jnp.zeros((), dtype), mean=jnp.zeros(shape, dtype), m2=jnp.zeros(shape, dtype))


def update(state: NormalizerState, batch: jax.Array, mask: jax.Array | None = None) -> NormalizerState:
    """Merge a batch `[..., *shape]` (every leading axis a batch axis) into the running statistics; with a
    `mask` (the batch axes' shape), only the observations where it is true."""
    ndim = state.mean.ndim
    axes = tuple(range(batch.ndim - ndim))
    batch = batch.astype(state.mean.dtype)
    if mask is None:
        n = jnp.asarray(batch.size // max(state.mean.size, 1), state.mean.dtype)
        batch_mean = jnp.mean(batch, axis=axes)
        batch_m2 = jnp.sum(jnp.square(batch - batch_mean), axis=axes)
    else:
        w = mask.astype(batch.dtype).reshape(mask.shape + (1,) * ndim)
        n = jnp.sum(w)
        batch_mean = jnp.sum(w * batch, axis=axes) / jnp.maximum(n, 1.0)
        batch_m2 = jnp.sum(w * jnp.square(batch - batch_mean), axis=axes)
    return merge(state, n, batch_mean, batch_m2)


def merge(state: NormalizerState, n: jax.Array, batch_mean: jax.Array, batch_m2: jax.Array) -> NormalizerState:
    """Merge the moments of `n` observations (their mean and sum of squared deviations) into the statistics
    (Chan et al.); `n = 0` changes nothing."""
    dtype = state.mean.dtype
    n, batch_mean, batch_m2 = (jnp.asarray(x).astype(dtype) for x in (n, batch_mean, batch_m2))
    total = state.count + n
    safe = jnp.maximum(total, jnp.ones_like(total))
    delta = batch_mean - state.mean
    mean = state.mean + delta * (n / safe)
    m2 = state.m2 + batch_m2 + jnp.square(delta) * (state.count * n / safe)
    return NormalizerState(count=total, mean=mean, m2=m2)


def variance(state: NormalizerState) -> jax.Array:
    """The population variance of everything seen (zero before the first update)."""
    return state.m2 / jnp.maximum(state.count, jnp.ones_like(state.count))


def normalize(state: NormalizerState, obs: jax.Array, clip: float = 5.0, eps: float = 1e-8) -> jax.Array:
    """`(obs - mean) / std`, clipped to `[-clip, clip]`; the identity before the first update."""
    obs = obs.astype(state.mean.dtype)
    std = jnp.sqrt(variance(state) + jnp.asarray(eps, obs.dtype))
    seen = state.count > 0
    out = jnp.clip((obs - state.mean) / std, -clip, clip)
    return jnp.where(seen, out, obs)


def denormalize(state: NormalizerState, x: jax.Array, eps: float = 1e-8) -> jax.Array:
    """The inverse of `normalize` (without its clipping)."""
    std = jnp.sqrt(variance(state) + jnp.asarray(eps, x.dtype))
    return jnp.where(state.count > 0, x * std + state.mean, x)
