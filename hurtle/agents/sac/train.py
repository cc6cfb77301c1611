"""SAC on Anakin: the environments, the replay buffer and every gradient step in one jitted iteration.

The inner steps are module-level pure functions: `env_step` (act, step every environment, store the
transitions), `prefill` (random actions until the buffer holds `min_replay_size`), `update` (one gradient
step of the critics, the actor and the temperature, then the Polyak update) and `training_step` (one
`env_step` then `grad_updates_per_step` updates). `make_iteration` scans `steps_per_iteration` training
steps and jits the result; `make_learner` and `make_actor` hand it to the runner.

Devices: the environments and the replay buffer are split along their environment axis over the mesh's
"data" axis (each device stores its own environments' transitions), parameters and optimiser states are
replicated; a sampled batch is gathered from wherever its transitions live.

The replay buffer is part of the training state, so every checkpoint holds it whole: a resumed run draws
the same batches as an uninterrupted one. Its size is checked against the devices' free memory before
anything is allocated (`Config.max_replay_size`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.agents import offpolicy, replay, runner
from hurtle.agents.sac import losses
from hurtle.agents.sac.config import Config
from hurtle.envs.base import Box, Env, State, float_dtype
from hurtle.nn import make_policy_network, normalizer
from hurtle.nn.networks import MLP, PolicyNetwork
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """params `{"policy", "q"}` (the twin critics' parameters stacked on a leading axis of 2), the target
    critics, log alpha, the optimisers' states `{"policy", "q", "alpha"}`, the normaliser, the replay
    buffer, the batch of environment states, the PRNG key and `step` (environment steps so far)."""

    params: Any
    target_q: Any
    log_alpha: jax.Array
    opt_state: Any
    normalizer: normalizer.NormalizerState
    buffer: replay.Buffer
    env_state: State
    key: jax.Array
    step: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class Networks:
    """The static halves of the agent: the policy, the twin critics (`q_apply(params, obs, action) -> [2, B]`),
    one Adam per part and the target entropy."""

    policy: PolicyNetwork
    q_module: nn.Module
    optimizer: optax.GradientTransformation
    target_entropy: float
    obs_size: int
    action_size: int

    def q_init(self, key: jax.Array) -> Any:
        x = jnp.zeros((1, self.obs_size + self.action_size), self.q_module.dtype)
        return jax.vmap(lambda k: self.q_module.init(k, x))(jax.random.split(key, 2))

    def q_apply(self, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action.astype(obs.dtype)], axis=-1)
        return jax.vmap(lambda p: self.q_module.apply(p, x)[..., 0])(params)


def make_networks(config: Config, env: Env) -> Networks:
    """The policy and twin critic MLPs for `env` (which must have a Box action space) and the optimiser."""
    space = env.action_space
    if not isinstance(space, Box):
        raise ValueError(f"Config.env: SAC needs a continuous (Box) action space; {config.env!r} has {space}")
    size = int(space.shape[0])
    target = -float(size) if config.target_entropy is None else float(config.target_entropy)
    return Networks(
        policy=make_policy_network(env.observation_size, space, config.policy_hidden_sizes),
        q_module=MLP(tuple(config.q_hidden_sizes), 1, nn.swish, float_dtype()),
        optimizer=optax.adam(config.learning_rate),
        target_entropy=target,
        obs_size=int(np.prod(env.observation_space.shape)),
        action_size=size,
    )


def _norm(config: Config, norm: normalizer.NormalizerState, obs: jax.Array) -> jax.Array:
    return normalizer.normalize(norm, obs) if config.normalize_observations else obs


def env_step(
    state: TrainState,
    key: jax.Array,
    *,
    env: Env,
    networks: Networks,
    config: Config,
    random_actions: bool = False,
    mesh: Mesh | None = None,
) -> tuple[TrainState, tuple[jax.Array, ...]]:
    """Step every environment once (the policy's sampled action, or a uniformly random one), store the
    transitions and merge the observations into the normaliser. Returns the state and the finished episodes'
    (return sum, length sum, count)."""
    obs = state.env_state.obs
    if random_actions:
        low, high = env.action_space.low, env.action_space.high
        shape = obs.shape[:1] + low.shape
        action = jax.random.uniform(key, shape, obs.dtype, jnp.asarray(low, obs.dtype), jnp.asarray(high, obs.dtype))
    else:
        dist = networks.policy.distribution
        dist_params = networks.policy.apply(state.params["policy"], _norm(config, state.normalizer, obs))
        action = dist.postprocess(dist.sample(dist_params, key))
    new = env.step(state.env_state, action)
    dtype = new.reward.dtype
    tr = losses.Transition(obs, action, new.reward, new.info["final_obs"], new.done.astype(dtype))
    buffer = replay.insert(state.buffer, tr)
    if mesh is not None:
        new = podracer.shard_batch(new, mesh)
        buffer = buffer.replace(data=podracer.shard_batch(buffer.data, mesh, axis=1))
    norm = normalizer.update(state.normalizer, obs) if config.normalize_observations else state.normalizer
    ended = (new.done | new.truncation).astype(dtype)
    stats = (
        jnp.sum(new.metrics["episode/return"].astype(dtype) * ended),
        jnp.sum(new.metrics["episode/length"].astype(dtype) * ended),
        jnp.sum(ended),
    )
    state = state.replace(env_state=new, buffer=buffer, normalizer=norm, step=state.step + obs.shape[0])
    return state, stats


def update(
    state: TrainState, key: jax.Array, *, networks: Networks, config: Config
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One gradient step on a batch drawn from the buffer: the temperature, the critics and the actor, each
    from the same starting parameters, then the target critics' Polyak update."""
    k_sample, k_critic, k_actor = jax.random.split(key, 3)
    batch = replay.sample(state.buffer, k_sample, config.batch_size)
    batch = batch.replace(obs=_norm(config, state.normalizer, batch.obs))
    batch = batch.replace(next_obs=_norm(config, state.normalizer, batch.next_obs))
    params, alpha = state.params, jnp.exp(state.log_alpha)
    nets = dict(q_apply=networks.q_apply, policy_apply=networks.policy.apply, distribution=networks.policy.distribution)

    critic_grad, critic_metrics = jax.grad(losses.critic_loss, has_aux=True)(
        params["q"], state.target_q, params["policy"], alpha, batch, k_critic,
        discount=config.discount, reward_scaling=config.reward_scaling, **nets,
    )  # fmt: skip
    actor_grad, actor_metrics = jax.grad(losses.actor_loss, has_aux=True)(
        params["policy"], params["q"], alpha, batch.obs, k_actor, **nets
    )
    log_prob = -actor_metrics["entropy"]
    alpha_grad, alpha_metrics = jax.grad(losses.alpha_loss, has_aux=True)(
        state.log_alpha, log_prob, networks.target_entropy
    )
    grads = {"policy": actor_grad, "q": critic_grad, "alpha": alpha_grad}
    current = {"policy": params["policy"], "q": params["q"], "alpha": state.log_alpha}
    # optax mixes Python scalars with integer step counts, which strict dtype promotion refuses
    with jax.numpy_dtype_promotion("standard"):
        new, opt_state = {}, {}
        for part in ("policy", "q", "alpha"):
            step, opt_state[part] = networks.optimizer.update(grads[part], state.opt_state[part], current[part])
            new[part] = optax.apply_updates(current[part], step)
    target_q = losses.polyak(state.target_q, new["q"], config.tau)
    metrics = {**critic_metrics, **actor_metrics, **alpha_metrics}
    state = state.replace(
        params={"policy": new["policy"], "q": new["q"]},
        target_q=target_q,
        log_alpha=new["alpha"],
        opt_state=opt_state,
    )
    return state, metrics


def training_step(
    state: TrainState, key: jax.Array, *, env: Env, networks: Networks, config: Config, mesh: Mesh | None = None
) -> tuple[TrainState, tuple[tuple[jax.Array, ...], dict[str, jax.Array]]]:
    """One `env_step`, then `grad_updates_per_step` `update`s."""
    k_env, k_update = jax.random.split(key)
    state, stats = env_step(state, k_env, env=env, networks=networks, config=config, mesh=mesh)
    one = lambda s, k: update(s, k, networks=networks, config=config)  # noqa: E731
    state, metrics = lax.scan(one, state, jax.random.split(k_update, config.grad_updates_per_step))
    return state, (stats, jax.tree.map(jnp.mean, metrics))


def make_training_env(config: Config) -> Env:
    """The batched, auto-resetting training environment of `config`."""
    return runner.training_env(config, config.num_envs)


def replay_example(env: Env, config: Config) -> losses.Transition:
    """One step of every environment as the buffer stores it (zeros), for shapes and dtypes."""
    dtype = float_dtype()
    obs = jnp.zeros((config.num_envs,) + tuple(env.observation_space.shape), env.observation_space.dtype)
    action = jnp.zeros((config.num_envs,) + tuple(env.action_space.shape), dtype)
    scalar = jnp.zeros((config.num_envs,), dtype)
    return losses.Transition(obs, action, scalar, obs, scalar)


def replay_bytes(env: Env, config: Config) -> int:
    return replay.nbytes(replay_example(env, config), config.replay_slots)


def init_state(config: Config, env: Env, networks: Networks, mesh: Mesh | None = None) -> TrainState:
    """A fresh `TrainState` from `config.seed` (an empty buffer), placed on `mesh`."""
    key = jax.random.key(config.seed)
    k_policy, k_q, k_env, key = jax.random.split(key, 4)
    q = networks.q_init(k_q)
    params = {"policy": networks.policy.init(k_policy), "q": q}
    log_alpha = jnp.log(jnp.asarray(config.init_temperature, float_dtype()))
    opt_state = {
        "policy": networks.optimizer.init(params["policy"]),
        "q": networks.optimizer.init(q),
        "alpha": networks.optimizer.init(log_alpha),
    }
    obs_space = env.observation_space
    state = TrainState(
        params=params,
        target_q=q,
        log_alpha=log_alpha,
        opt_state=opt_state,
        normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
        buffer=replay.init(replay_example(env, config), config.replay_slots),
        env_state=jax.jit(env.reset)(k_env),
        key=key,
        step=runner.step_counter(),
    )
    if mesh is None:
        return state
    env_state = podracer.device_put_batch(state.env_state, mesh)
    data = podracer.device_put_batch(state.buffer.data, mesh, axis=1)
    rest = podracer.device_put_replicated(state.replace(env_state=None, buffer=state.buffer.replace(data=None)), mesh)
    return rest.replace(env_state=env_state, buffer=rest.buffer.replace(data=data))


def make_prefill(config: Config, env: Env, networks: Networks, mesh: Mesh | None = None) -> Callable:
    """The jitted `prefill(state) -> state`: `config.prefill_steps` steps of every environment with uniformly
    random actions, stored (the learner's `prepare`: a fresh run's first work)."""
    return offpolicy.make_prefill(
        config, functools.partial(env_step, env=env, networks=networks, config=config, mesh=mesh)
    )


def make_iteration(
    config: Config, env: Env, networks: Networks, mesh: Mesh | None = None, on_trace: Callable[[], None] | None = None
) -> Callable[[TrainState], tuple[TrainState, dict[str, jax.Array]]]:
    """The jitted `iteration(state) -> (state, metrics)`: `config.steps_per_iteration` training steps."""
    step = functools.partial(training_step, env=env, networks=networks, config=config, mesh=mesh)
    return offpolicy.make_iteration(config, step, on_trace)


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """SAC for the runner; refuses a config the devices cannot split or whose buffer they cannot hold."""
    runner.check_devices(config, "num_envs", config.num_envs, mesh)
    env = make_training_env(config)
    networks = make_networks(config, env)
    replay.check_fits(replay_bytes(env, config), list(mesh.devices.flat), "max_replay_size")
    return runner.Learner(
        init=lambda: init_state(config, env, networks, mesh),
        iteration=make_iteration(config, env, networks, mesh),
        policy=policy_of,
        prepare=make_prefill(config, env, networks, mesh),
    )


def policy_of(state: TrainState) -> dict[str, Any]:
    """What acting needs: the policy's parameters and the observation normaliser."""
    return {"params": state.params["policy"], "normalizer": state.normalizer}


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy (tanh of the Gaussian's mean) and its checkpoint item."""
    env = runner.make_env(config)
    networks = make_networks(config, env)

    def act(policy: dict[str, Any], obs: jax.Array) -> jax.Array:
        obs = _norm(config, policy["normalizer"], obs)
        return networks.policy.distribution.mode(networks.policy.apply(policy["params"], obs))

    obs_space = env.observation_space
    like = {
        "params": networks.policy.init(jax.random.key(0)),
        "normalizer": normalizer.init(obs_space.shape, obs_space.dtype),
    }
    return runner.Actor(act, like)


def train(config: Config, progress_fn=None, mesh=None, checkpointer=None, resume: bool = False):
    """Train SAC per `config` with the runner (`hurtle.agents.runner.train`, which documents the rest)."""
    from hurtle.agents.sac import ALGORITHM

    return runner.train(ALGORITHM, config, progress_fn, mesh, checkpointer, resume)


__all__ = [
    "Networks",
    "TrainState",
    "env_step",
    "init_state",
    "make_actor",
    "make_iteration",
    "make_learner",
    "make_networks",
    "make_prefill",
    "make_training_env",
    "policy_of",
    "train",
    "training_step",
    "update",
]
