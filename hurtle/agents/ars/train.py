"""Augmented random search (Mania et al. 2018, V2-t) on Anakin: an iteration is one jitted call.

The policy is linear, `a = M (obs - mu) / sigma` (V2: the running mean and standard deviation of every
state visited, unclipped), from M = 0. An iteration draws N directions delta_k, plays M + nu delta_k and
M - nu delta_k (one `vmap` over the 2N members, each in its own environments), keeps the b directions with
the largest max(r+, r-) and steps `M += alpha / (b sigma_R) sum_k (r+_k - r-_k) delta_k`, sigma_R the
standard deviation of the 2b selected rewards. A Box action is clipped into its bounds; a Discrete one is
the argmax of M's rows (one per choice).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.agents import population, runner
from hurtle.agents.ars.config import Config
from hurtle.envs.base import Box, Discrete, Env, float_dtype
from hurtle.envs.wrappers import VmapWrapper
from hurtle.nn import normalizer
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """The linear policy's weights `[actions, obs]`, the observation normaliser, the PRNG key and `step`."""

    weights: jax.Array
    normalizer: normalizer.NormalizerState
    key: jax.Array
    step: jax.Array


def ars_update(
    weights: jax.Array, deltas: jax.Array, r_plus: jax.Array, r_minus: jax.Array, top: int, step_size: float
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """One ARS V2-t step: the `top` directions by max(r+, r-), `weights + step_size / (top * sigma_R) *
    sum (r+ - r-) delta` over them (sigma_R: the selected 2 * top rewards' standard deviation; 1 where it is 0,
    when every selected reward is the same and the step is 0 anyway)."""
    _, idx = jax.lax.top_k(jnp.maximum(r_plus, r_minus), top)
    rp, rm = r_plus[idx], r_minus[idx]
    sigma = jnp.std(jnp.concatenate([rp, rm]))
    sigma = jnp.where(sigma > 0, sigma, jnp.ones_like(sigma))
    step = jnp.tensordot(rp - rm, deltas[idx], axes=1) * (step_size / (top * sigma))
    return weights + step.astype(weights.dtype), {"ars/reward_std": sigma, "ars/step_norm": jnp.linalg.norm(step)}


def _shape(env: Env) -> tuple[int, int]:
    space = env.action_space
    out = space.n if isinstance(space, Discrete) else int(np.prod(space.shape))
    return out, int(np.prod(env.observation_space.shape))


def make_act(config: Config, env: Env):
    """`act(weights, normaliser, obs) -> actions` of the linear policy for `env`'s action space."""
    space = env.action_space

    def act(weights: jax.Array, norm: normalizer.NormalizerState, obs: jax.Array) -> jax.Array:
        if config.normalize_observations:
            obs = normalizer.normalize(norm, obs, clip=np.inf)
        out = obs.reshape(obs.shape[:-1] + (-1,)).astype(weights.dtype) @ weights.T
        if isinstance(space, Discrete):
            return jnp.argmax(out, axis=-1).astype(jnp.int32)
        if isinstance(space, Box):
            return jnp.clip(out, jnp.asarray(space.low, out.dtype), jnp.asarray(space.high, out.dtype))
        raise TypeError(f"ARS: unsupported action space {space!r}")

    return act


def make_iteration(config: Config, env: Env, mesh: Mesh | None = None):
    """The jitted `iteration(state) -> (state, metrics)`."""
    n = config.num_directions
    batched = VmapWrapper(env)  # reset from the population's keys (population.rollout)
    length = runner.control_steps(config, env)
    act = make_act(config, env)

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        key, k_dir, k_env = jax.random.split(state.key, 3)
        w = state.weights
        deltas = jax.random.normal(k_dir, (n,) + w.shape, w.dtype)
        nu = jnp.asarray(config.noise_std, w.dtype)
        members = jnp.concatenate([w + nu * deltas, w - nu * deltas])
        if mesh is not None:
            members = podracer.shard_batch(members, mesh)
        out = population.rollout(
            lambda m, obs: act(m, state.normalizer, obs), members, k_env, env=batched,
            episodes=config.episodes_per_member, length=length, reward_shift=config.reward_shift,
            shift=state.normalizer.mean, paired=True, mesh=mesh,
        )  # fmt: skip
        weights, metrics = ars_update(
            w, deltas, out["return"][:n], out["return"][n:], config.top_directions, config.step_size
        )
        norm, steps, summary = population.summarize(
            state.normalizer, out, config.normalize_observations, config.episodes_per_member, state.step.dtype
        )
        metrics = {**metrics, **summary}
        return TrainState(weights=weights, normalizer=norm, key=key, step=state.step + steps), metrics

    return jax.jit(iteration)


def init_state(config: Config, env: Env, mesh: Mesh | None = None) -> TrainState:
    obs_space = env.observation_space
    state = TrainState(
        weights=jnp.zeros(_shape(env), float_dtype()),
        normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
        key=jax.random.key(config.seed),
        step=runner.step_counter(),
    )
    return state if mesh is None else podracer.device_put_replicated(state, mesh)


def policy_of(state: TrainState) -> dict[str, Any]:
    return {"weights": state.weights, "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """ARS for the runner; refuses directions the devices cannot split evenly."""
    runner.check_devices(config, "num_directions", 2 * config.num_directions, mesh)
    runner.no_domain_randomization(config, "ARS")
    env = runner.make_env(config, training=True)
    return runner.Learner(
        init=lambda: init_state(config, env, mesh), iteration=make_iteration(config, env, mesh), policy=policy_of
    )


def make_actor(config: Config) -> runner.Actor:
    """The linear policy and its checkpoint item."""
    env = runner.make_env(config)
    act = make_act(config, env)
    obs_space = env.observation_space
    like = {
        "weights": jnp.zeros(_shape(env), float_dtype()),
        "normalizer": normalizer.init(obs_space.shape, obs_space.dtype),
    }
    return runner.Actor(lambda p, obs: act(p["weights"], p["normalizer"], obs), like)


__all__ = ["TrainState", "ars_update", "init_state", "make_act", "make_actor", "make_iteration", "make_learner"]
