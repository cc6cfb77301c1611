"""OpenAI-ES (Salimans et al. 2017) on Anakin: a generation is one jitted call.

The centre's parameters theta are flattened into one vector; a generation draws `population_size / 2`
Gaussian directions eps, plays the antithetic members theta +- sigma eps (one `vmap` of the policy over
them, each in its own environments, `hurtle.agents.population`), shapes their fitness into centred ranks
and steps Adam along the estimate `g = sum_i rank_i eps_i / (n sigma)` (ascent), less `weight_decay * theta`.
Members are split over the devices; the centre, the optimiser and the normaliser are replicated.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.agents import population, runner
from hurtle.agents.es.config import Config
from hurtle.envs.wrappers import VmapWrapper
from hurtle.nn import make_policy_network, normalizer
from hurtle.nn.networks import PolicyNetwork
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """The centre's parameters, Adam's state, the observation normaliser, the PRNG key and `step` (env steps
    the members' episodes really took)."""

    params: Any
    opt_state: Any
    normalizer: normalizer.NormalizerState
    key: jax.Array
    step: jax.Array


def es_gradient(fitness: jax.Array, eps: jax.Array, sigma: float) -> jax.Array:
    """The ES estimate of the gradient of the expected fitness from antithetic members: `fitness` `[n]` holds
    the members theta + sigma eps_k (first half) then theta - sigma eps_k (second half), `eps` `[n/2, d]`.
    Fitness is shaped into centred ranks; returns `sum_i rank_i eps_i / (n sigma)`."""
    n = fitness.shape[0]
    ranks = population.centered_ranks(fitness)
    half = n // 2
    return (ranks[:half] - ranks[half:]) @ eps / (n * sigma)


def make_policy(config: Config, env) -> PolicyNetwork:
    return make_policy_network(env.observation_size, env.action_space, config.policy_hidden_sizes)


def _act(config: Config, policy: PolicyNetwork, params: Any, norm: normalizer.NormalizerState, obs: jax.Array):
    if config.normalize_observations:
        obs = normalizer.normalize(norm, obs)
    return policy.distribution.mode(policy.apply(params, obs))


def make_generation(config: Config, env, policy: PolicyNetwork, optimizer, mesh: Mesh | None = None):
    """The jitted `generation(state) -> (state, metrics)`."""
    batched = VmapWrapper(env)  # reset from the population's keys (population.rollout)
    length = runner.control_steps(config, env)

    def generation(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        key, k_eps, k_env = jax.random.split(state.key, 3)
        theta, unravel = ravel_pytree(state.params)
        eps = jax.random.normal(k_eps, (config.population_size // 2, theta.size), theta.dtype)
        sigma = jnp.asarray(config.noise_std, theta.dtype)
        flat = jnp.concatenate([theta + sigma * eps, theta - sigma * eps])
        if mesh is not None:
            flat = podracer.shard_batch(flat, mesh)
        members = jax.vmap(unravel)(flat)
        act = lambda p, obs: _act(config, policy, p, state.normalizer, obs)  # noqa: E731
        out = population.rollout(
            act, members, k_env, env=batched, episodes=config.episodes_per_member, length=length,
            shift=state.normalizer.mean, paired=True, mesh=mesh,
        )  # fmt: skip
        grad = es_gradient(out["return"], eps, config.noise_std)
        # Adam minimises: its gradient is the negated ascent direction plus the L2 term
        loss_grad = unravel(-grad + config.weight_decay * theta)
        with jax.numpy_dtype_promotion("standard"):
            updates, opt_state = optimizer.update(loss_grad, state.opt_state, state.params)
            params = optax.apply_updates(state.params, updates)
        norm, steps, metrics = population.summarize(
            state.normalizer, out, config.normalize_observations, config.episodes_per_member, state.step.dtype
        )
        metrics["es/grad_norm"] = jnp.linalg.norm(grad)
        new = TrainState(params=params, opt_state=opt_state, normalizer=norm, key=key, step=state.step + steps)
        return new, metrics

    return jax.jit(generation)


def init_state(config: Config, env, policy: PolicyNetwork, optimizer, mesh: Mesh | None = None) -> TrainState:
    key, k_policy = jax.random.split(jax.random.key(config.seed))
    params = policy.init(k_policy)
    obs_space = env.observation_space
    state = TrainState(
        params=params,
        opt_state=optimizer.init(params),
        normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
        key=key,
        step=runner.step_counter(),
    )
    return state if mesh is None else podracer.device_put_replicated(state, mesh)


def policy_of(state: TrainState) -> dict[str, Any]:
    return {"params": state.params, "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """ES for the runner; refuses a population the devices cannot split evenly."""
    runner.check_devices(config, "population_size", config.population_size, mesh)
    runner.no_domain_randomization(config, "ES")
    env = runner.make_env(config, training=True)
    policy = make_policy(config, env)
    optimizer = optax.adam(config.learning_rate)
    return runner.Learner(
        init=lambda: init_state(config, env, policy, optimizer, mesh),
        iteration=make_generation(config, env, policy, optimizer, mesh),
        policy=policy_of,
    )


def make_actor(config: Config) -> runner.Actor:
    """The centre's deterministic policy and its checkpoint item."""
    env = runner.make_env(config)
    policy = make_policy(config, env)
    obs_space = env.observation_space
    like = {"params": policy.init(jax.random.key(0)), "normalizer": normalizer.init(obs_space.shape, obs_space.dtype)}
    return runner.Actor(lambda p, obs: _act(config, policy, p["params"], p["normalizer"], obs), like)


__all__ = ["TrainState", "es_gradient", "init_state", "make_actor", "make_generation", "make_learner", "policy_of"]
