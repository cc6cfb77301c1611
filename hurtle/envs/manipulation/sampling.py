"""Rejection sampling inside `jit`: the random goal and object placements of the arm tasks."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax


def rejection_sample(
    key: jax.Array,
    draw: Callable[[jax.Array], jax.Array],
    accept: Callable[[jax.Array], jax.Array],
    max_draws: int | None = None,
) -> jax.Array:
    """The first `draw(k)` that `accept`s, for keys `k` split from `key` in turn: the distribution of
    Gymnasium's `while True: x = draw(); if accept(x): break` (a `lax.while_loop`, vmap-safe).

    `max_draws`: where acceptance may be impossible (it depends on a state that can leave the region), stop
    after that many draws and return the last, which the caller's `draw` must make acceptable enough. Under
    `vmap` a loop runs until every element is done, so one element that can never be accepted stalls them all."""

    def body(carry):
        key, _, n = carry
        key, sub = jax.random.split(key)
        return key, draw(sub), n + 1

    def going(carry):
        more = ~accept(carry[1])
        return more if max_draws is None else more & (carry[2] < max_draws)

    key, sub = jax.random.split(key)
    _, x, _ = lax.while_loop(going, body, (key, draw(sub), jnp.ones((), jnp.int32)))
    return x
