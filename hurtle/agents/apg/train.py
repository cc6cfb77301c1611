"""Analytic policy gradients on Anakin: an iteration is one jitted call.

The deterministic policy (its distribution's mode) acts in `num_envs` auto-resetting environments for
`unroll_length` steps; the loss, minus the mean over environments of sum_t gamma^t r_t, is differentiated
through the environments' steps (the physics' derivatives; a task's `gradient_reward` where it defines one,
else its reward). With `truncation_length` k the state's gradient is cut every k steps (truncated
backpropagation through time). The gradient is clipped to `max_grad_norm`; a non-finite gradient skips the
update (the parameters and Adam's state stay as they were) and is counted in `apg/skipped`. The environments
carry on from where the unroll ended, so an iteration's start is a state the policy reached, not a reset.
Environments are split over the devices, the rest replicated.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer, xla_flags
from hurtle.agents import runner
from hurtle.agents.apg.config import Config
from hurtle.envs.base import Box, Env, State
from hurtle.nn import make_policy_network, normalizer
from hurtle.nn.networks import PolicyNetwork
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """The policy's parameters, Adam's state, the observation normaliser, the environments, the PRNG key,
    `skipped` (updates skipped for a non-finite gradient) and `step` (env steps so far)."""

    params: Any
    opt_state: Any
    normalizer: normalizer.NormalizerState
    env_state: State
    key: jax.Array
    skipped: jax.Array
    step: jax.Array


def gradient_reward(state: State) -> jax.Array:
    """The reward the gradient follows: the task's smooth `gradient_reward` where it defines one (a task whose
    reward is a step function, such as an alive bonus, has a zero derivative), else the reward."""
    return state.info.get("gradient_reward", state.reward)


def make_policy(config: Config, env: Env) -> PolicyNetwork:
    if not isinstance(env.action_space, Box):
        raise ValueError(
            f"Config.env: APG differentiates through continuous actions; {config.env!r} has {env.action_space}"
        )
    return make_policy_network(env.observation_size, env.action_space, config.policy_hidden_sizes)


def _act(config: Config, policy: PolicyNetwork, params: Any, norm: normalizer.NormalizerState, obs: jax.Array):
    if config.normalize_observations:
        obs = normalizer.normalize(norm, obs)
    return policy.distribution.mode(policy.apply(params, obs))


def guarded_update(optimizer: optax.GradientTransformation, grads: Any, opt_state: Any, params: Any):
    """One optimiser step, or none where the gradient has a non-finite entry: (params, opt_state, finite)."""
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))
    with jax.numpy_dtype_promotion("standard"):
        updates, new_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
    keep = lambda new, old: jnp.where(finite, new, old)  # noqa: E731
    return jax.tree.map(keep, new_params, params), jax.tree.map(keep, new_state, opt_state), finite


def make_optimizer(config: Config) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))


def unroll_loss(config: Config, env: Env, policy: PolicyNetwork):
    """`loss(params, norm, env_state) -> (loss, (final env state, observations, rewards))` of one unroll."""
    k = config.truncation_length

    def loss(params, norm, env_state):
        def body(s, t):
            obs = s.obs
            s = env.step(s, _act(config, policy, params, norm, obs))
            if k:
                cut = (t + 1) % k == 0
                s = jax.tree.map(lambda x: jnp.where(cut, lax.stop_gradient(x), x), s)
            return s, (obs, gradient_reward(s), s.reward)

        final, (obs, g_rewards, rewards) = lax.scan(body, env_state, jnp.arange(config.unroll_length))
        dtype = g_rewards.dtype
        discounts = jnp.asarray(config.discount, dtype) ** jnp.arange(config.unroll_length, dtype=dtype)
        value = -jnp.mean(jnp.sum(discounts[:, None] * g_rewards, axis=0))
        return value, (final, obs, rewards)

    return loss


def make_iteration(config: Config, env: Env, policy: PolicyNetwork, optimizer, mesh: Mesh | None = None):
    """The jitted `iteration(state) -> (state, metrics)`."""
    loss = unroll_loss(config, env, policy)

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        (value, (final, obs, rewards)), grads = jax.value_and_grad(loss, has_aux=True)(
            state.params, state.normalizer, state.env_state
        )
        if mesh is not None:
            final = podracer.shard_batch(final, mesh)
        params, opt_state, finite = guarded_update(optimizer, grads, state.opt_state, state.params)
        norm = state.normalizer
        if config.normalize_observations:
            norm = normalizer.update(norm, lax.stop_gradient(obs))
        skipped = state.skipped + (~finite).astype(state.skipped.dtype)
        new = TrainState(
            params=params,
            opt_state=opt_state,
            normalizer=norm,
            env_state=lax.stop_gradient(final),
            key=state.key,
            skipped=skipped,
            step=state.step + config.num_envs * config.unroll_length,
        )
        metrics = {
            "apg/loss": value,
            "apg/grad_norm": optax.tree.norm(grads),
            "apg/skipped": skipped.astype(value.dtype),
            "train/reward": jnp.mean(rewards),
        }
        return new, metrics

    return jax.jit(iteration, compiler_options=xla_flags.gradient_options())


def init_state(config: Config, env: Env, policy: PolicyNetwork, optimizer, mesh: Mesh | None = None) -> TrainState:
    key, k_policy, k_env = jax.random.split(jax.random.key(config.seed), 3)
    params = policy.init(k_policy)
    obs_space = env.observation_space
    state = TrainState(
        params=params,
        opt_state=optimizer.init(params),
        normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
        env_state=jax.jit(env.reset)(k_env),
        key=key,
        skipped=jnp.zeros((), jnp.int32),
        step=runner.step_counter(),
    )
    if mesh is None:
        return state
    env_state = podracer.device_put_batch(state.env_state, mesh)
    return podracer.device_put_replicated(state.replace(env_state=None), mesh).replace(env_state=env_state)


def policy_of(state: TrainState) -> dict[str, Any]:
    return {"params": state.params, "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """APG for the runner; refuses discrete actions and environments the devices cannot split evenly."""
    env = runner.training_env(config, config.num_envs)
    policy = make_policy(config, env)
    runner.check_devices(config, "num_envs", config.num_envs, mesh)
    optimizer = make_optimizer(config)
    return runner.Learner(
        init=lambda: init_state(config, env, policy, optimizer, mesh),
        iteration=make_iteration(config, env, policy, optimizer, mesh),
        policy=policy_of,
    )


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy and its checkpoint item."""
    env = runner.make_env(config)
    policy = make_policy(config, env)
    obs_space = env.observation_space
    like = {"params": policy.init(jax.random.key(0)), "normalizer": normalizer.init(obs_space.shape, obs_space.dtype)}
    return runner.Actor(lambda p, obs: _act(config, policy, p["params"], p["normalizer"], obs), like)


__all__ = [
    "TrainState",
    "gradient_reward",
    "guarded_update",
    "init_state",
    "make_actor",
    "make_iteration",
    "make_learner",
    "policy_of",
]
