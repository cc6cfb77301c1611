"""Population rollouts for the evolution strategies (ES, ARS): every member of a population plays its own
episodes at once, as one `vmap` of the policy over the members' parameters.

A member's episodes run without auto-reset: each environment plays one episode from its own random start
and stops counting when it ends (a done mask); the scan runs to the time limit. Members are the leading
axis of the parameters and of the environments (member-major), so splitting that axis over the devices
keeps each member's episodes on one device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.envs.base import Env
from hurtle.nn import normalizer


def rollout(
    act: Callable[[Any, jax.Array], jax.Array],
    members: Any,
    key: jax.Array,
    *,
    env: Env,
    episodes: int,
    length: int,
    reward_shift: float = 0.0,
    mesh: Mesh | None = None,
) -> dict[str, jax.Array]:
    """Play `episodes` episodes for each member of `members` (leaves `[P, ...]`) on the batched, non-resetting
    `env` of `P * episodes` environments, `act(member, obs[episodes, ...]) -> actions` choosing the actions.

    Returns per member the mean episode return with `reward_shift` taken off every step an episode was alive
    (`"return"`, `[P]`), the unshifted mean return (`"raw_return"`), the steps taken (`"steps"`, `[P]`), and
    every observation acted on with its alive mask (`"obs"` `[T, P * episodes, ...]`, `"alive"` `[T, P * episodes]`),
    for an observation normaliser.
    """
    size = jax.tree.leaves(members)[0].shape[0]
    state = env.reset(key)
    if mesh is not None:
        state = podracer.shard_batch(state, mesh)
    dtype = state.reward.dtype
    batched_act = jax.vmap(act)

    def step(carry, _):
        state, ret, raw, steps, alive = carry
        obs = state.obs.reshape((size, episodes) + state.obs.shape[1:])
        action = batched_act(members, obs)
        new = env.step(state, action.reshape((size * episodes,) + action.shape[2:]))
        if mesh is not None:
            new = podracer.shard_batch(new, mesh)
        live = alive.astype(dtype)
        raw = raw + live * new.reward
        ret = ret + live * (new.reward - jnp.asarray(reward_shift, dtype))
        out = (state.obs, alive)
        alive = alive & ~(new.done | new.truncation)
        return (new, ret, raw, steps + live, alive), out

    zeros = jnp.zeros_like(state.reward)
    carry = (state, zeros, zeros, zeros, jnp.ones(state.reward.shape, bool))
    (_, ret, raw, steps, _), (obs, alive) = lax.scan(step, carry, None, length=length)
    per_member = lambda x: jnp.mean(x.reshape(size, episodes), axis=1)  # noqa: E731
    return {
        "return": per_member(ret),
        "raw_return": per_member(raw),
        "steps": jnp.sum(steps.reshape(size, episodes), axis=1),
        "obs": obs,
        "alive": alive,
    }


def update_normalizer(norm: normalizer.NormalizerState, obs: jax.Array, alive: jax.Array) -> normalizer.NormalizerState:
    """Merge the observations acted on (where `alive`) into the running statistics."""
    return normalizer.update(norm, obs, mask=alive)


def centered_ranks(x: jax.Array) -> jax.Array:
    """Ranks of `x` scaled into [-0.5, 0.5] (the smallest -0.5, the largest 0.5; ties by position), the
    fitness shaping of Salimans et al. 2017."""
    n = x.shape[0]
    ranks = jnp.zeros(n, x.dtype).at[jnp.argsort(x)].set(jnp.arange(n, dtype=x.dtype))
    return ranks / jnp.asarray(max(n - 1, 1), x.dtype) - 0.5


__all__ = ["centered_ranks", "rollout", "update_normalizer"]
