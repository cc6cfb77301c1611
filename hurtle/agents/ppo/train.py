"""PPO's Anakin training loop: one jitted iteration does rollout, normaliser update, GAE and every update.

The inner steps are module-level pure functions (`rollout`, `update_minibatch`, `update_epoch`);
`make_iteration` binds them to a config, an environment and a mesh and jits the result; `make_learner`
and `make_actor` hand it to the runner (`hurtle.agents.runner`), whose host loop evaluates, checkpoints
and reports progress.

Devices (see `hurtle.podracer.anakin`): environment states and rollout batches are split along their
environment axis over the mesh's "data" axis, parameters, optimiser and normaliser state are replicated;
XLA inserts the all-reduce of the gradients of minibatch-mean losses.

Observations are stored raw; the batch is normalised with the normaliser the policy acted with, so the
first minibatch's probability ratios are exactly one; the normaliser then absorbs the batch for the next
rollout.

Asymmetric actor-critic (`Config.asymmetric_critic`, tasks with a privileged observation): the value network
reads `State.privileged_obs` through a normaliser of its own (`TrainState.critic_normalizer`), bootstrapping a
truncation from `info["final_privileged_obs"]`; the policy, and so a checkpoint's policy item, reads `obs` only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.agents import runner
from hurtle.agents.ppo import losses
from hurtle.agents.ppo.config import Config
from hurtle.envs.base import Box, Env, Space, State
from hurtle.io.checkpoint import Checkpointer
from hurtle.nn import make_policy_network, make_value_network, normalizer
from hurtle.nn.networks import PolicyNetwork, ValueNetwork
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """Everything an iteration carries: params `{"policy", "value"}`, optimiser and normaliser state,
    the batch of environment states, the PRNG key and `step`, the environment steps taken so far."""

    params: Any
    opt_state: Any
    normalizer: normalizer.NormalizerState
    env_state: State
    key: jax.Array
    step: jax.Array
    critic_normalizer: normalizer.NormalizerState | None = None
    """The value network's own normaliser of the privileged observation (asymmetric critic); None without."""


@pytree_dataclass
class Transition:
    """One rollout step for every environment (time-major `[T, B, ...]` after `rollout`)."""

    obs: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    reward: jax.Array
    done: jax.Array
    truncation: jax.Array
    value: jax.Array
    bootstrap_value: jax.Array
    critic_obs: jax.Array | None = None
    """The raw privileged observation the value read (asymmetric critic); None without."""


@dataclasses.dataclass(frozen=True, eq=False)
class Networks:
    """The static halves of the agent: policy and value networks and the optimiser."""

    policy: PolicyNetwork
    value: ValueNetwork
    optimizer: optax.GradientTransformation
    critic_space: Box | None = None
    """The privileged observation's space where the value network reads it (asymmetric critic), else None."""

    @property
    def asymmetric(self) -> bool:
        return self.critic_space is not None


def critic_space(config: Config, privileged: Box | None) -> Box | None:
    """The value network's own input space: the task's privileged observation space where it has one and
    `config.asymmetric_critic` is on, else None (the value reads the policy's observation)."""
    return privileged if getattr(config, "asymmetric_critic", False) else None


def make_networks(config: Config, env: Env) -> Networks:
    """Policy and value MLPs for `env`'s spaces and the optimiser (global-norm clip, then Adam)."""
    return networks_for(config, env.observation_space, env.action_space, env.privileged_observation_space)


def networks_for(config: Config, obs_space: Box, action_space: Space, privileged: Box | None = None) -> Networks:
    """`make_networks` from the spaces themselves (the Sebulba learners' host environments give them)."""
    critic = critic_space(config, privileged)
    return Networks(
        policy=make_policy_network(obs_space.shape, action_space, config.policy_hidden_sizes),
        value=make_value_network((critic or obs_space).shape, config.value_hidden_sizes),
        optimizer=optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate)),
        critic_space=critic,
    )


def init_normalizers(networks: Networks, obs_space: Box) -> dict[str, normalizer.NormalizerState | None]:
    """Fresh `normalizer` and `critic_normalizer` (None without an asymmetric critic) as TrainState fields."""
    critic = networks.critic_space
    return {
        "normalizer": normalizer.init(obs_space.shape, obs_space.dtype),
        "critic_normalizer": None if critic is None else normalizer.init(critic.shape, critic.dtype),
    }


def critic_input(
    networks: Networks, obs: jax.Array, privileged: jax.Array | None, norm: normalizer.NormalizerState | None, on: bool
) -> jax.Array:
    """What the value network reads: `obs` (already normalised) for a symmetric critic, else the privileged
    observation through the critic's normaliser `norm` (`on`: observations are normalised)."""
    if not networks.asymmetric:
        return obs
    return normalizer.normalize(norm, privileged) if on else privileged


def rollout(
    params: Any,
    norm: normalizer.NormalizerState,
    env_state: State,
    key: jax.Array,
    *,
    env: Env,
    networks: Networks,
    unroll_length: int,
    reward_scaling: float,
    normalize_observations: bool = True,
    critic_norm: normalizer.NormalizerState | None = None,
) -> tuple[State, Transition]:
    """Step the (batched, auto-resetting) `env` `unroll_length` times with the sampled policy.

    Returns the last state and time-major transitions: raw obs, raw (pre-tanh) action and its log-prob,
    scaled reward, done, truncation, V(obs) and V(info["final_obs"]) (the bootstrap of a truncation); with an
    asymmetric critic, V reads the privileged observations (normalised by `critic_norm`) and the raw ones are kept.
    """
    dist = networks.policy.distribution

    def norm_obs(obs):
        return normalizer.normalize(norm, obs) if normalize_observations else obs

    def step(state, k):
        obs = norm_obs(state.obs)
        dist_params = networks.policy.apply(params["policy"], obs)
        raw = dist.sample(dist_params, k)
        log_prob = dist.log_prob(dist_params, raw)
        new = env.step(state, dist.postprocess(raw))
        final = norm_obs(new.info["final_obs"])
        privileged = (state.privileged_obs, new.info.get("final_privileged_obs"))
        critic = [
            critic_input(networks, o, p, critic_norm, normalize_observations) for o, p in zip((obs, final), privileged)
        ]
        values = networks.value.apply(params["value"], jnp.stack(critic))
        reward = new.reward * jnp.asarray(reward_scaling, new.reward.dtype)
        kept = state.privileged_obs if networks.asymmetric else None
        tr = Transition(state.obs, raw, log_prob, reward, new.done, new.truncation, values[0], values[1], kept)
        ended = (new.done | new.truncation).astype(new.reward.dtype)
        ret = new.metrics["episode/return"].astype(ended.dtype)
        stats = (jnp.sum(ret * ended), jnp.sum(new.metrics["episode/length"].astype(ended.dtype) * ended))
        if "ncon_dropped" in new.metrics:  # a contact cap: contacts dropped past it (Config.nconmax)
            stats = stats + (jnp.sum(new.metrics["ncon_dropped"]),)
        return new, (tr, stats, jnp.sum(ended))

    env_state, (transitions, stats, ended) = lax.scan(step, env_state, jax.random.split(key, unroll_length))
    return env_state, (transitions, stats, ended)


def update_minibatch(
    carry: tuple[Any, Any],
    batch_and_key: tuple[losses.Batch, jax.Array],
    *,
    networks: Networks,
    config: Config,
    mesh: Mesh | None = None,
) -> tuple[tuple[Any, Any], dict[str, jax.Array]]:
    """One gradient step on one minibatch: `((params, opt_state), (batch, key)) -> (carry, metrics)`."""
    params, opt_state = carry
    batch, key = batch_and_key
    if mesh is not None:
        batch = podracer.shard_batch(batch, mesh)
    loss_fn = lambda p: losses.ppo_loss(  # noqa: E731
        p,
        batch,
        key,
        policy_apply=networks.policy.apply,
        value_apply=networks.value.apply,
        distribution=networks.policy.distribution,
        clip_epsilon=config.clip_epsilon,
        value_cost=config.value_cost,
        entropy_cost=config.entropy_cost,
        normalize_advantages=config.normalize_advantages,
    )
    grads, metrics = jax.grad(loss_fn, has_aux=True)(params)
    # optax mixes Python scalars with integer step counts, which strict dtype promotion refuses
    with jax.numpy_dtype_promotion("standard"):
        updates, opt_state = networks.optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
    if mesh is not None:
        params, opt_state = podracer.replicate((params, opt_state), mesh)
    metrics = {**metrics, "grad_norm": optax.tree.norm(grads)}
    return (params, opt_state), metrics


def update_epoch(
    carry: tuple[Any, Any],
    key: jax.Array,
    batch: losses.Batch,
    *,
    networks: Networks,
    config: Config,
    mesh: Mesh | None = None,
) -> tuple[tuple[Any, Any], dict[str, jax.Array]]:
    """One pass over a flat batch (leading axis: transitions): shuffle with `key`, split into
    `config.num_minibatches` minibatches and scan `update_minibatch` over them."""
    k_perm, k_loss = jax.random.split(key)
    size = jax.tree.leaves(batch)[0].shape[0]
    perm = jax.random.permutation(k_perm, size)
    n = config.num_minibatches

    def split(x):
        return jnp.take(x, perm, axis=0).reshape((n, size // n) + x.shape[1:])

    minibatches = jax.tree.map(split, batch)
    if mesh is not None:
        minibatches = podracer.shard_batch(minibatches, mesh, axis=1)
    step = lambda c, b: update_minibatch(c, b, networks=networks, config=config, mesh=mesh)  # noqa: E731
    carry, metrics = lax.scan(step, carry, (minibatches, jax.random.split(k_loss, n)))
    return carry, jax.tree.map(jnp.mean, metrics)


def make_training_env(config: Config, num_envs: int | None = None) -> Env:
    """The batched, auto-resetting training environment of `config`."""
    return runner.training_env(config, num_envs or config.num_envs)


def init_state(config: Config, env: Env, networks: Networks, mesh: Mesh | None = None) -> TrainState:
    """A fresh `TrainState` from `config.seed`, placed on `mesh` (env states split, the rest replicated)."""
    key = jax.random.key(config.seed)
    k_policy, k_value, k_env, key = jax.random.split(key, 4)
    params = {"policy": networks.policy.init(k_policy), "value": networks.value.init(k_value)}
    state = TrainState(
        params=params,
        opt_state=networks.optimizer.init(params),
        env_state=jax.jit(env.reset)(k_env),
        key=key,
        step=runner.step_counter(),
        **init_normalizers(networks, env.observation_space),
    )
    if mesh is None:
        return state
    env_state = podracer.device_put_batch(state.env_state, mesh)
    rest = podracer.device_put_replicated(state.replace(env_state=None), mesh)
    return rest.replace(env_state=env_state)


def make_iteration(
    config: Config,
    env: Env,
    networks: Networks,
    mesh: Mesh | None = None,
    on_trace: Callable[[], None] | None = None,
) -> Callable[[TrainState], tuple[TrainState, dict[str, jax.Array]]]:
    """The jitted `iteration(state) -> (state, metrics)`: a rollout of `config.unroll_length` steps of the
    batched `env`, the normaliser update, GAE and `num_epochs` x `num_minibatches` updates.

    `on_trace` is called each time the function is traced (tests count compilations with it).
    """

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        if on_trace is not None:
            on_trace()
        key, k_rollout, k_update = jax.random.split(state.key, 3)
        env_state, (tr, (ret_sum, len_sum, *dropped), ended) = rollout(
            state.params,
            state.normalizer,
            state.env_state,
            k_rollout,
            env=env,
            networks=networks,
            unroll_length=config.unroll_length,
            reward_scaling=config.reward_scaling,
            normalize_observations=config.normalize_observations,
            critic_norm=state.critic_normalizer,
        )
        if mesh is not None:
            tr = podracer.shard_batch(tr, mesh, axis=1)
            env_state = podracer.shard_batch(env_state, mesh)
        advantages, targets = losses.gae(
            tr.reward, tr.value, tr.bootstrap_value, tr.done, tr.truncation, config.discount, config.gae_lambda
        )
        on = config.normalize_observations
        obs = normalizer.normalize(state.normalizer, tr.obs) if on else tr.obs
        value_obs = (
            critic_input(networks, obs, tr.critic_obs, state.critic_normalizer, on) if networks.asymmetric else None
        )
        batch = losses.Batch(obs, tr.raw_action, tr.log_prob, advantages, targets, value_obs)
        # [T, B, ...] -> [B * T, ...], environment-major so a device's transitions stay together
        batch = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:]), batch)
        if mesh is not None:
            batch = podracer.shard_batch(batch, mesh)
        norm = normalizer.update(state.normalizer, tr.obs) if on else state.normalizer
        critic_norm = state.critic_normalizer
        if on and networks.asymmetric:
            critic_norm = normalizer.update(critic_norm, tr.critic_obs)

        epoch = lambda c, k: update_epoch(c, k, batch, networks=networks, config=config, mesh=mesh)  # noqa: E731
        (params, opt_state), metrics = lax.scan(
            epoch, (state.params, state.opt_state), jax.random.split(k_update, config.num_epochs)
        )
        metrics = jax.tree.map(jnp.mean, metrics)
        n_ended = jnp.sum(ended)
        denom = jnp.maximum(n_ended, jnp.ones_like(n_ended))
        metrics = {
            **metrics,
            "train/episode_return": jnp.sum(ret_sum) / denom,
            "train/episode_length": jnp.sum(len_sum) / denom,
            "train/episodes": n_ended,  # the two means above are 0 when no episode ended
        }
        if dropped:
            metrics["train/ncon_dropped"] = jnp.sum(dropped[0])  # over the rollout's steps and environments
        new = TrainState(
            params=params,
            opt_state=opt_state,
            normalizer=norm,
            env_state=env_state,
            key=key,
            step=state.step + config.batch_size,
            critic_normalizer=critic_norm,
        )
        return new, metrics

    return jax.jit(iteration)


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy (the distribution's mode on normalised observations) and its checkpoint item."""
    env = runner.make_env(config)
    networks = make_networks(config, env)

    def act(policy: dict[str, Any], obs: jax.Array) -> jax.Array:
        if config.normalize_observations:
            obs = normalizer.normalize(policy["normalizer"], obs)
        return networks.policy.distribution.mode(networks.policy.apply(policy["params"]["policy"], obs))

    k_policy, k_value = jax.random.split(jax.random.key(0))
    params = {"policy": networks.policy.init(k_policy), "value": networks.value.init(k_value)}
    obs_space = env.observation_space
    return runner.Actor(act, {"params": params, "normalizer": normalizer.init(obs_space.shape, obs_space.dtype)})


def policy_of(state: TrainState) -> dict[str, Any]:
    """What acting needs: the parameters and the observation normaliser (a checkpoint's `policy` item)."""
    return {"params": state.params, "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """PPO for the runner: fresh state, the jitted iteration, the policy item."""
    runner.check_devices(config, "num_envs", config.num_envs, mesh)
    env = make_training_env(config)
    networks = make_networks(config, env)
    return runner.Learner(
        init=lambda: init_state(config, env, networks, mesh),
        iteration=make_iteration(config, env, networks, mesh),
        policy=policy_of,
    )


def train(
    config: Config,
    progress_fn: Callable[[int, dict[str, float]], None] | None = None,
    mesh: Mesh | None = None,
    checkpointer: Checkpointer | None = None,
    resume: bool = False,
) -> tuple[TrainState, list[dict[str, float]]]:
    """Train PPO per `config` with the runner (`hurtle.agents.runner.train`, which documents the rest)."""
    from hurtle.agents.ppo import ALGORITHM

    return runner.train(ALGORITHM, config, progress_fn, mesh, checkpointer, resume)


__all__ = [
    "Networks",
    "TrainState",
    "Transition",
    "critic_input",
    "critic_space",
    "init_normalizers",
    "init_state",
    "make_actor",
    "make_learner",
    "make_iteration",
    "make_networks",
    "make_training_env",
    "networks_for",
    "policy_of",
    "rollout",
    "train",
    "update_epoch",
    "update_minibatch",
]
