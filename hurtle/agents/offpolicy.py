"""The replay learners' shared Anakin loop (SAC, FastTD3): a random prefill of the buffer and the jitted iteration
of `steps_per_iteration` training steps, each learner bringing its own `env_step` and `training_step`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax


def make_prefill(config: Any, env_step: Callable) -> Callable:
    """The jitted `prefill(state) -> state`: `config.prefill_steps` calls of `env_step(state, key,
    random_actions=True)` (uniformly random actions, stored: the learner's `prepare`, a fresh run's first work)."""

    def prefill(state: Any) -> Any:
        key, k = jax.random.split(state.key)

        def body(s, k):
            return env_step(s, k, random_actions=True)[0], None

        state, _ = lax.scan(body, state, jax.random.split(k, config.prefill_steps))
        return state.replace(key=key)

    return jax.jit(prefill)


def make_iteration(
    config: Any, training_step: Callable, on_trace: Callable[[], None] | None = None, mean: Callable = jnp.mean
) -> Callable:
    """The jitted `iteration(state) -> (state, metrics)`: `config.steps_per_iteration` calls of
    `training_step(state, key) -> (state, ((return sum, length sum, episodes ended), metrics))`, the metrics
    averaged with `mean` (FastTD3's: NaN-skipping, its actor steps on some updates only), the episodes' means and
    the buffer's size added. `on_trace` is called each time the function is traced."""

    def iteration(state: Any) -> tuple[Any, dict[str, jax.Array]]:
        if on_trace is not None:
            on_trace()
        key, k = jax.random.split(state.key)
        state, ((ret, length, ended), metrics) = lax.scan(
            training_step, state, jax.random.split(k, config.steps_per_iteration)
        )
        n = jnp.sum(ended)
        denom = jnp.maximum(n, jnp.ones_like(n))
        metrics = {
            **jax.tree.map(mean, metrics),
            "train/episode_return": jnp.sum(ret) / denom,
            "train/episode_length": jnp.sum(length) / denom,
            "train/episodes": n,  # the two means above are 0 when no episode ended
            "replay/size": state.buffer.size * state.buffer.width,
        }
        return state.replace(key=key), metrics

    return jax.jit(iteration)


__all__ = ["make_iteration", "make_prefill"]
