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
    shift: jax.Array | None = None,
    paired: bool = False,
    mesh: Mesh | None = None,
) -> dict[str, jax.Array]:
    """Play `episodes` episodes for each member of `members` (leaves `[P, ...]`) on the batched, non-resetting
    `env` (a `VmapWrapper` without a batch size: it is reset from `P * episodes` keys), `act(member,
    obs[episodes, ...]) -> actions` choosing the actions, until every episode has ended or `length` steps have
    passed (a `while_loop`: a population whose episodes all end early stops early). `paired`: the members are
    antithetic halves (k and k + P/2 perturbed by +eps_k and -eps_k) and each pair starts its episodes from the
    same states (common random numbers: the pair's return difference then measures the perturbation, not the
    starts).

    Returns per member the mean episode return with `reward_shift` taken off every step an episode was alive
    (`"return"`, `[P]`), the unshifted mean return (`"raw_return"`) and the steps taken (`"steps"`, `[P]`); and
    the moments of every observation acted on (`"obs_count"`, `"obs_mean"`, `"obs_m2"`, for an observation
    normaliser; accumulated relative to `shift`, e.g. the normaliser's mean, so float32 keeps their digits).
    """
    size = jax.tree.leaves(members)[0].shape[0]
    if paired:
        keys = jax.random.split(key, (size // 2) * episodes)
        keys = jnp.concatenate([keys, keys])
    else:
        keys = jax.random.split(key, size * episodes)
    state = env.reset(keys)
    if mesh is not None:
        state = podracer.shard_batch(state, mesh)
    dtype = state.reward.dtype
    obs_dtype = state.obs.dtype
    shift = jnp.zeros(state.obs.shape[1:], obs_dtype) if shift is None else shift.astype(obs_dtype)
    batched_act = jax.vmap(act)

    def cond(carry):
        t, *_, alive, _ = carry
        return (t < length) & jnp.any(alive)

    def body(carry):
        t, state, ret, raw, steps, alive, (n, s1, s2) = carry
        obs = state.obs.reshape((size, episodes) + state.obs.shape[1:])
        action = batched_act(members, obs)
        new = env.step(state, action.reshape((size * episodes,) + action.shape[2:]))
        if mesh is not None:
            new = podracer.shard_batch(new, mesh)
        live = alive.astype(dtype)
        raw = raw + live * new.reward
        ret = ret + live * (new.reward - jnp.asarray(reward_shift, dtype))
        w = alive.astype(obs_dtype).reshape(alive.shape + (1,) * (state.obs.ndim - 1))
        x = (state.obs - shift) * w
        moments = (n + jnp.sum(alive.astype(obs_dtype)), s1 + jnp.sum(x, 0), s2 + jnp.sum(x * x, 0))
        alive = alive & ~(new.done | new.truncation)
        return t + 1, new, ret, raw, steps + live, alive, moments

    zeros = jnp.zeros_like(state.reward)
    stats = (jnp.zeros((), obs_dtype), jnp.zeros_like(shift), jnp.zeros_like(shift))
    carry = (jnp.zeros((), jnp.int32), state, zeros, zeros, zeros, jnp.ones(state.reward.shape, bool), stats)
    _, _, ret, raw, steps, _, (n, s1, s2) = lax.while_loop(cond, body, carry)
    per_member = lambda x: jnp.mean(x.reshape(size, episodes), axis=1)  # noqa: E731
    mean = s1 / jnp.maximum(n, 1.0)
    return {
        "return": per_member(ret),
        "raw_return": per_member(raw),
        "steps": jnp.sum(steps.reshape(size, episodes), axis=1),
        "obs_count": n,
        "obs_mean": shift + mean,
        "obs_m2": jnp.maximum(s2 - n * mean * mean, 0.0),
    }


def update_normalizer(norm: normalizer.NormalizerState, out: dict[str, jax.Array]) -> normalizer.NormalizerState:
    """Merge the observations a `rollout` acted on (its moments) into the running statistics."""
    return normalizer.merge(norm, out["obs_count"], out["obs_mean"], out["obs_m2"])


def summarize(
    norm: normalizer.NormalizerState, out: dict[str, jax.Array], normalize: bool, episodes: int, step_dtype: Any
) -> tuple[normalizer.NormalizerState, jax.Array, dict[str, jax.Array]]:
    """What every generation does with a `rollout`: the normaliser (merged when `normalize`), the env steps
    taken, and the training metrics (mean and best member return, mean episode length)."""
    if normalize:
        norm = update_normalizer(norm, out)
    metrics = {
        "train/episode_return": jnp.mean(out["raw_return"]),
        "train/best_return": jnp.max(out["raw_return"]),
        "train/episode_length": jnp.mean(out["steps"]) / episodes,
    }
    return norm, jnp.sum(out["steps"]).astype(step_dtype), metrics


def centered_ranks(x: jax.Array) -> jax.Array:
    """Ranks of `x` scaled into [-0.5, 0.5] (the smallest -0.5, the largest 0.5; ties by position), the
    fitness shaping of Salimans et al. 2017."""
    n = x.shape[0]
    ranks = jnp.zeros(n, x.dtype).at[jnp.argsort(x)].set(jnp.arange(n, dtype=x.dtype))
    return ranks / jnp.asarray(max(n - 1, 1), x.dtype) - 0.5


__all__ = ["centered_ranks", "rollout", "summarize", "update_normalizer"]
