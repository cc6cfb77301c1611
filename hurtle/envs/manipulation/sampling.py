"""Rejection sampling inside `jit`: the random goal and object placements of the arm tasks."""

from __future__ import annotations

from collections.abc import Callable

import jax
from jax import lax


def rejection_sample(
    key: jax.Array, draw: Callable[[jax.Array], jax.Array], accept: Callable[[jax.Array], jax.Array]
) -> jax.Array:
    """The first `draw(k)` that `accept`s, for keys `k` split from `key` in turn: the distribution of
    Gymnasium's `while True: x = draw(); if accept(x): break` (a `lax.while_loop`, vmap-safe)."""

    def body(carry):
        key, _ = carry
        key, sub = jax.random.split(key)
        return key, draw(sub)

    key, sub = jax.random.split(key)
    _, x = lax.while_loop(lambda carry: ~accept(carry[1]), body, (key, draw(sub)))
    return x
