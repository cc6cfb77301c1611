"""FastTD3 on Anakin: the environments, the replay buffer and every gradient step in one jitted iteration.

The layout is SAC's (`hurtle.agents.sac.train`): `env_step` (act with each environment's own exploration noise,
step, store), `prefill` (uniformly random actions until the buffer holds `min_replay_size`), `update` (one critic
step, the actor's on every `policy_frequency`-th, then the target critics' Polyak step), `training_step` (one
`env_step` then `grad_updates_per_step` updates), scanned `steps_per_iteration` times per jitted iteration.

Exploration (FastTD3's mixed noise): environment i acts with `clip(actor(obs) + sigma_i * N(0, 1), -1, 1)`, its
`sigma_i` drawn from U(noise_std_min, noise_std_max) at each of its episodes' starts, so that a batch explores at
many scales at once. With an asymmetric critic the critics read the privileged observations (stored beside the
observations) through a normaliser of their own. The replay buffer is part of the training state, so a
checkpoint holds it whole and a resumed run continues exactly.
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
from hurtle.agents.fasttd3 import losses
from hurtle.agents.fasttd3.config import Config
from hurtle.agents.sac.losses import polyak
from hurtle.envs.base import Box, Env, State, float_dtype
from hurtle.nn import normalizer
from hurtle.nn.networks import MLP
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """params `{"policy", "q"}` (the twin critics stacked on a leading axis of 2), the target critics, the
    optimisers' states, the observation normalisers (the critics' own with an asymmetric critic, else None), the
    replay buffer, the environments, each environment's exploration noise scale, the PRNG key, `step` (env steps
    so far) and `updates` (critic updates so far: the actor's turn comes every `policy_frequency`)."""

    params: Any
    target_q: Any
    opt_state: Any
    normalizer: normalizer.NormalizerState
    critic_normalizer: normalizer.NormalizerState | None
    buffer: replay.Buffer
    env_state: State
    noise_std: jax.Array
    key: jax.Array
    step: jax.Array
    updates: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class Networks:
    """The deterministic actor (tanh outputs in [-1, 1]), the twin categorical critics, AdamW, the atoms, the
    action bounds and the critics' input (the privileged observation's space, or None for the observation)."""

    policy_module: nn.Module
    q_module: nn.Module
    optimizer: optax.GradientTransformation
    atoms: jax.Array
    obs_size: int
    action_size: int
    low: np.ndarray
    high: np.ndarray
    critic_space: Box | None

    @property
    def asymmetric(self) -> bool:
        return self.critic_space is not None

    @property
    def critic_size(self) -> int:
        return self.obs_size if self.critic_space is None else int(np.prod(self.critic_space.shape))

    def policy_init(self, key: jax.Array) -> Any:
        return self.policy_module.init(key, jnp.zeros((1, self.obs_size), self.policy_module.dtype))

    def policy_apply(self, params: Any, obs: jax.Array) -> jax.Array:
        return jnp.tanh(self.policy_module.apply(params, obs))

    def q_init(self, key: jax.Array) -> Any:
        x = jnp.zeros((1, self.critic_size + self.action_size), self.q_module.dtype)
        return jax.vmap(lambda k: self.q_module.init(k, x))(jax.random.split(key, 2))

    def q_apply(self, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action.astype(obs.dtype)], axis=-1)
        return jax.vmap(lambda p: self.q_module.apply(p, x))(params)

    def to_env(self, action: jax.Array) -> jax.Array:
        """A policy-space action in [-1, 1] as the environment's, within its bounds."""
        low, high = jnp.asarray(self.low, action.dtype), jnp.asarray(self.high, action.dtype)
        return low + 0.5 * (action + 1.0) * (high - low)


def make_networks(config: Config, env: Env) -> Networks:
    """The actor and twin critics for `env` (a Box action space with finite bounds) and the optimiser."""
    return networks_for(config, env.observation_space, env.action_space, env.privileged_observation_space)


def networks_for(config: Config, obs_space: Box, space: Any, privileged: Box | None) -> Networks:
    """`make_networks` from the spaces themselves (Sebulba's host environments give them)."""
    if not isinstance(space, Box) or not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
        raise ValueError(
            f"Config.env: FastTD3 needs a bounded continuous (Box) action space; {config.env!r} has {space}"
        )
    dtype = float_dtype()
    critic = privileged if config.asymmetric_critic else None
    clip = [optax.clip_by_global_norm(config.max_grad_norm)] if config.max_grad_norm > 0 else []
    return Networks(
        policy_module=MLP(tuple(config.policy_hidden_sizes), int(space.shape[0]), nn.relu, dtype),
        q_module=MLP(tuple(config.q_hidden_sizes), config.num_atoms, nn.relu, dtype),
        optimizer=optax.chain(*clip, optax.adamw(config.learning_rate, weight_decay=config.weight_decay)),
        atoms=losses.support(config.v_min, config.v_max, config.num_atoms, dtype),
        obs_size=int(np.prod(obs_space.shape)),
        action_size=int(space.shape[0]),
        low=np.asarray(space.low),
        high=np.asarray(space.high),
        critic_space=critic,
    )


def _norm(config: Config, norm: normalizer.NormalizerState | None, obs: jax.Array) -> jax.Array:
    return normalizer.normalize(norm, obs) if config.normalize_observations else obs


def _noise_std(config: Config, key: jax.Array, n: int, dtype: Any) -> jax.Array:
    return jax.random.uniform(key, (n,), dtype, config.noise_std_min, config.noise_std_max)


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
    """Step every environment once (the actor's action with the environment's own noise, or a uniformly random
    one), store the transitions, merge the observations into the normalisers and draw new noise scales where an
    episode ended. Returns the state and the finished episodes' (return sum, length sum, count)."""
    k_act, k_noise = jax.random.split(key)
    current = state.env_state
    obs = current.obs
    n = obs.shape[0]
    if random_actions:
        action = jax.random.uniform(k_act, (n, networks.action_size), obs.dtype, -1.0, 1.0)
    else:
        mean = networks.policy_apply(state.params["policy"], _norm(config, state.normalizer, obs))
        noise = state.noise_std[:, None] * jax.random.normal(k_act, mean.shape, mean.dtype)
        action = jnp.clip(mean + noise, -1.0, 1.0)
    new = env.step(current, networks.to_env(action))
    dtype = new.reward.dtype
    privileged = (current.privileged_obs, new.info.get("final_privileged_obs")) if networks.asymmetric else (None, None)
    tr = losses.Transition(obs, action, new.reward, new.info["final_obs"], new.done.astype(dtype), *privileged)
    buffer = replay.insert(state.buffer, tr)
    if mesh is not None:
        new = podracer.shard_batch(new, mesh)
        buffer = buffer.replace(data=podracer.shard_batch(buffer.data, mesh, axis=1))
    norm, critic_norm = state.normalizer, state.critic_normalizer
    if config.normalize_observations:
        norm = normalizer.update(norm, obs)
        if networks.asymmetric:
            critic_norm = normalizer.update(critic_norm, current.privileged_obs)
    ended = new.done | new.truncation
    noise_std = jnp.where(ended, _noise_std(config, k_noise, n, state.noise_std.dtype), state.noise_std)
    ended = ended.astype(dtype)
    stats = (
        jnp.sum(new.metrics["episode/return"].astype(dtype) * ended),
        jnp.sum(new.metrics["episode/length"].astype(dtype) * ended),
        jnp.sum(ended),
    )
    state = state.replace(
        env_state=new, buffer=buffer, normalizer=norm, critic_normalizer=critic_norm, noise_std=noise_std,
        step=state.step + n,
    )  # fmt: skip
    return state, stats


def _apply(optimizer, grads, opt_state, params):
    # optax mixes Python scalars with integer step counts, which strict dtype promotion refuses
    with jax.numpy_dtype_promotion("standard"):
        step, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, step), opt_state


def update(
    state: TrainState, key: jax.Array, *, networks: Networks, config: Config
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One critic step on a batch drawn from the buffer; on every `policy_frequency`-th, an actor step on the same
    batch with the updated critics; then the target critics' Polyak step."""
    k_sample, k_critic = jax.random.split(key)
    batch = replay.sample(state.buffer, k_sample, config.batch_size)
    obs, next_obs = _norm(config, state.normalizer, batch.obs), _norm(config, state.normalizer, batch.next_obs)
    critic_obs, next_critic_obs = None, None
    if networks.asymmetric:
        critic_obs = _norm(config, state.critic_normalizer, batch.critic_obs)
        next_critic_obs = _norm(config, state.critic_normalizer, batch.next_critic_obs)
    batch = batch.replace(obs=obs, next_obs=next_obs, critic_obs=critic_obs, next_critic_obs=next_critic_obs)
    params, opt_state = state.params, dict(state.opt_state)
    nets = dict(q_apply=networks.q_apply, policy_apply=networks.policy_apply, atoms=networks.atoms)
    grads, metrics = jax.grad(losses.critic_loss, has_aux=True)(
        params["q"], state.target_q, params["policy"], batch, k_critic, discount=config.discount,
        reward_scaling=config.reward_scaling, target_noise=config.target_noise,
        target_noise_clip=config.target_noise_clip, clipped_double_q=config.clipped_double_q, **nets,
    )  # fmt: skip
    q, opt_state["q"] = _apply(networks.optimizer, grads, opt_state["q"], params["q"])
    critic_in = obs if critic_obs is None else critic_obs

    def actor_step(args):
        policy, policy_opt = args
        grads, actor_metrics = jax.grad(losses.actor_loss, has_aux=True)(policy, q, obs, critic_in, **nets)
        policy, policy_opt = _apply(networks.optimizer, grads, policy_opt, policy)
        return (policy, policy_opt), actor_metrics

    def no_step(args):
        like = jax.eval_shape(lambda a: actor_step(a)[1], args)
        return args, jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), like)

    turn = (state.updates % config.policy_frequency) == 0
    (policy, opt_state["policy"]), actor_metrics = lax.cond(
        turn, actor_step, no_step, (params["policy"], opt_state["policy"])
    )
    state = state.replace(
        params={"policy": policy, "q": q},
        target_q=polyak(state.target_q, q, config.tau),
        opt_state=opt_state,
        updates=state.updates + 1,
    )
    return state, {**metrics, **actor_metrics}


def training_step(
    state: TrainState, key: jax.Array, *, env: Env, networks: Networks, config: Config, mesh: Mesh | None = None
) -> tuple[TrainState, tuple[tuple[jax.Array, ...], dict[str, jax.Array]]]:
    """One `env_step`, then `grad_updates_per_step` `update`s."""
    k_env, k_update = jax.random.split(key)
    state, stats = env_step(state, k_env, env=env, networks=networks, config=config, mesh=mesh)
    one = lambda s, k: update(s, k, networks=networks, config=config)  # noqa: E731
    state, metrics = lax.scan(one, state, jax.random.split(k_update, config.grad_updates_per_step))
    return state, (stats, jax.tree.map(jnp.nanmean, metrics))


def make_training_env(config: Config) -> Env:
    """The batched, auto-resetting training environment of `config`."""
    return runner.training_env(config, config.num_envs)


def replay_example(env: Env, networks: Networks, config: Config) -> losses.Transition:
    """One step of every environment as the buffer stores it (zeros), for shapes and dtypes."""
    dtype = float_dtype()
    n = config.num_envs
    obs = jnp.zeros((n,) + tuple(env.observation_space.shape), env.observation_space.dtype)
    scalar = jnp.zeros((n,), dtype)
    privileged = None
    if networks.asymmetric:
        privileged = jnp.zeros((n,) + tuple(networks.critic_space.shape), networks.critic_space.dtype)
    return losses.Transition(
        obs, jnp.zeros((n, networks.action_size), dtype), scalar, obs, scalar, privileged, privileged
    )


def init_state(config: Config, env: Env, networks: Networks, mesh: Mesh | None = None) -> TrainState:
    """A fresh `TrainState` from `config.seed` (an empty buffer), placed on `mesh`."""
    key = jax.random.key(config.seed)
    k_policy, k_q, k_env, k_noise, key = jax.random.split(key, 5)
    q = networks.q_init(k_q)
    params = {"policy": networks.policy_init(k_policy), "q": q}
    obs_space, critic = env.observation_space, networks.critic_space
    state = TrainState(
        params=params,
        target_q=q,
        opt_state={"policy": networks.optimizer.init(params["policy"]), "q": networks.optimizer.init(q)},
        normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
        critic_normalizer=None if critic is None else normalizer.init(critic.shape, critic.dtype),
        buffer=replay.init(replay_example(env, networks, config), config.replay_slots),
        env_state=jax.jit(env.reset)(k_env),
        noise_std=_noise_std(config, k_noise, config.num_envs, float_dtype()),
        key=key,
        step=runner.step_counter(),
        updates=jnp.zeros((), jnp.int32),
    )
    if mesh is None:
        return state
    env_state = podracer.device_put_batch(state.env_state, mesh)
    noise_std = podracer.device_put_batch(state.noise_std, mesh)
    data = podracer.device_put_batch(state.buffer.data, mesh, axis=1)
    rest = state.replace(env_state=None, noise_std=None, buffer=state.buffer.replace(data=None))
    rest = podracer.device_put_replicated(rest, mesh)
    return rest.replace(env_state=env_state, noise_std=noise_std, buffer=rest.buffer.replace(data=data))


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
    return offpolicy.make_iteration(config, step, on_trace, mean=jnp.nanmean)


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """FastTD3 for the runner; refuses a config the devices cannot split or whose buffer they cannot hold."""
    config.validate()
    runner.check_devices(config, "num_envs", config.num_envs, mesh)
    env = make_training_env(config)
    networks = make_networks(config, env)
    replay.check_fits(replay.nbytes(replay_example(env, networks, config), config.replay_slots),
                      list(mesh.devices.flat), "max_replay_size")  # fmt: skip
    return runner.Learner(
        init=lambda: init_state(config, env, networks, mesh),
        iteration=make_iteration(config, env, networks, mesh),
        policy=policy_of,
        prepare=make_prefill(config, env, networks, mesh),
    )


def policy_of(state: TrainState) -> dict[str, Any]:
    """What acting needs: the actor's parameters and the observation normaliser."""
    return {"params": state.params["policy"], "normalizer": state.normalizer}


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy (the actor's action, no noise, in the environment's bounds) and its item."""
    env = runner.make_env(config)
    networks = make_networks(config, env)

    def act(policy: dict[str, Any], obs: jax.Array) -> jax.Array:
        return networks.to_env(networks.policy_apply(policy["params"], _norm(config, policy["normalizer"], obs)))

    obs_space = env.observation_space
    like = {
        "params": networks.policy_init(jax.random.key(0)),
        "normalizer": normalizer.init(obs_space.shape, obs_space.dtype),
    }
    return runner.Actor(act, like)


def train(config: Config, progress_fn=None, mesh=None, checkpointer=None, resume: bool = False):
    """Train FastTD3 per `config` with the runner (`hurtle.agents.runner.train`, which documents the rest)."""
    from hurtle.agents.fasttd3 import ALGORITHM

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
    "networks_for",
    "policy_of",
    "train",
    "training_step",
    "update",
]
