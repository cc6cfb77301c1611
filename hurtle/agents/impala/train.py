"""The Sebulba learners on the runner: IMPALA (V-trace) and PPO on trajectories from host environments.

`make_learner` gives the runner an `iteration` that takes one trajectory from each actor thread
(`hurtle.podracer.sebulba`), places the batch on the learner devices (split along the environment axis),
runs one jitted update there and publishes the new policy to the actors. The training state (parameters,
optimiser, observation normaliser, key, step, policy version) is what a checkpoint holds; the host
environments' states are not (MuJoCo C's and Gymnasium's cannot all be saved exactly): a resumed run goes
on from the saved parameters with new episodes. Evaluation runs the deterministic policy on host
environments of the same backend. With an asymmetric critic (`Config.asymmetric_critic`, host environments with
a privileged observation) the value network reads the trajectories' privileged observations through its own
normaliser, as Anakin's PPO does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.agents import runner
from hurtle.agents.impala import losses
from hurtle.agents.impala.config import Config
from hurtle.agents.ppo import losses as ppo_losses
from hurtle.agents.ppo.train import Networks, critic_input, init_normalizers, networks_for, update_epoch
from hurtle.envs.base import Box, Discrete
from hurtle.hostenvs import GymnasiumEnv, HostEnv, MujocoEnv
from hurtle.hostenvs.base import run_episodes
from hurtle.nn import normalizer
from hurtle.physics.dataclass import pytree_dataclass
from hurtle.podracer.sebulba import Sebulba


@pytree_dataclass
class TrainState:
    params: Any
    opt_state: Any
    normalizer: normalizer.NormalizerState
    key: jax.Array
    step: jax.Array
    """Env steps so far."""
    version: jax.Array
    """Updates so far: the version of the policy the actors receive."""
    critic_normalizer: normalizer.NormalizerState | None = None
    """The value network's normaliser of the privileged observation (asymmetric critic); None without."""


@pytree_dataclass
class Batch:
    """A trajectory batch on the learner devices, time-major `[T, B, ...]`."""

    obs: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array
    privileged_obs: jax.Array | None = None
    """The value network's raw inputs with an asymmetric critic (None without), as `obs` and `next_obs`."""
    next_privileged_obs: jax.Array | None = None


def make_host_env(config: Config, num_envs: int, nthread: int = 0, actor: int = 0) -> HostEnv:
    """`num_envs` host environments of `config` (its backend, its time limit for hurtle's tasks); with
    `config.domain_randomization`, actor `actor`'s own randomised models (hurtle's tasks on MuJoCo C only)."""
    if config.domain_randomization and config.env_backend != "mujoco":
        raise ValueError(
            f"Config.domain_randomization: {config.env_backend} environments are not randomised by hurtle "
            "(--env-backend mujoco randomises hurtle's tasks on MuJoCo C)"
        )
    if config.env_backend == "gymnasium":
        import gymnasium as gym

        try:
            has_limit = gym.spec(config.env).max_episode_steps is not None
        except gym.error.Error:
            has_limit = True  # GymnasiumEnv names the unknown id
        # the id's own time limit; episode_length where it has none
        limit = {} if has_limit else {"max_episode_steps": config.time_limit()}
        return GymnasiumEnv(config.env, num_envs, config.vectorization, **limit)
    if config.env_backend == "envpool":
        from hurtle.hostenvs.envpool import EnvPoolEnv

        return EnvPoolEnv(config.env, num_envs, nthread)
    randomize = None
    if config.domain_randomization:
        randomize = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), 0x0D), 1 + actor)
    return MujocoEnv(config.env, num_envs, episode_length=config.time_limit(), nthread=nthread, randomize_key=randomize)


def spaces(config: Config) -> tuple[Box, Box | Discrete, Box | None]:
    """The observation, action and privileged observation (None without) spaces of `config.env`, without
    starting its workers."""
    if config.env_backend != "mujoco":
        with make_host_env(config, 1) as env:
            return env.observation_space, env.action_space, env.privileged_observation_space
    from hurtle.envs.physics_env import PhysicsEnv

    task = runner.make_env(config).unwrapped
    if not isinstance(task, PhysicsEnv):
        raise ValueError(
            f"Config.env: {config.env} is not a physics task; the mujoco backend steps hurtle's MJCF tasks on MuJoCo C "
            f"(train it with --arch anakin, or give a Gymnasium id with --env-backend gymnasium)"
        )
    return task.observation_space, task.action_space, task.privileged_observation_space


def make_networks(config: Config) -> Networks:
    return networks_for(config, *spaces(config))


def _normalize(config: Config, policy: dict[str, Any], obs: jax.Array) -> jax.Array:
    return normalizer.normalize(policy["normalizer"], obs) if config.normalize_observations else obs


def make_sampler(config: Config, networks: Networks) -> Callable:
    """The actors' `act(policy, obs, key) -> (raw_action, env_action, log_prob)`."""
    dist = networks.policy.distribution

    def act(policy, obs, key):
        obs = _normalize(config, policy, jnp.asarray(obs, networks.value.module.dtype))
        params = networks.policy.apply(policy["params"]["policy"], obs)
        raw = dist.sample(params, key)
        return raw, dist.postprocess(raw), dist.log_prob(params, raw)

    return act


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy (the distribution's mode) and its checkpoint item."""
    networks = make_networks(config)

    def act(policy, obs):
        obs = _normalize(config, policy, obs)
        return networks.policy.distribution.mode(networks.policy.apply(policy["params"]["policy"], obs))

    k_policy, k_value = jax.random.split(jax.random.key(0))
    params = {"policy": networks.policy.init(k_policy), "value": networks.value.init(k_value)}
    obs_space = spaces(config)[0]
    return runner.Actor(act, {"params": params, "normalizer": normalizer.init(obs_space.shape, obs_space.dtype)})


def make_evaluate(config: Config, act: Callable, num_episodes: int | None = None) -> Callable:
    """`evaluate(policy, key)`: one episode on each of `num_episodes` host environments of the run's backend
    with the deterministic `act` (to the environment's time limit, or `config.episode_length` steps where it
    has none); per-episode returns, lengths and the task's measures (`run_episodes`)."""
    n = num_episodes or config.num_eval_envs
    cpu = jax.local_devices(backend="cpu")[0]
    jitted = jax.jit(act)

    def evaluate(policy, key):
        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        policy = podracer.local_copy(policy, cpu)
        with make_host_env(config, n) as env:
            return run_episodes(env, lambda obs: jitted(policy, jax.device_put(obs, cpu)), seed, config.time_limit())

    return evaluate


def devices(config: Config) -> tuple[list[jax.Device], list[jax.Device]]:
    """The actor devices of this process and the learner devices of every process (see `Config`'s
    `actor_devices` and `learner_devices`: indices into each process's own devices, the same in each)."""
    local = jax.local_devices()

    def pick(field: str, indices: tuple[int, ...], devices: list[jax.Device]) -> list[jax.Device]:
        for i in indices:
            if not 0 <= i < len(devices):
                raise ValueError(f"Config.{field}: no device {i}; this process has {len(devices)}")
        return [devices[i] for i in indices]

    actors = pick("actor_devices", config.actor_devices, local) or local[:1]
    learners = []
    for process in range(jax.process_count()):
        own = [d for d in jax.devices() if d.process_index == process]
        chosen = pick("learner_devices", config.learner_devices, own)
        if not chosen:  # every device but the actors', or the actors' when there is only one
            actor_ids = {local.index(d) for d in actors}
            chosen = [d for i, d in enumerate(own) if i not in actor_ids] or [own[i] for i in sorted(actor_ids)]
        learners += chosen
    return actors, learners


def num_actor_threads(config: Config, actor_devices: list) -> int:
    return {"serial": 1, "alternating": 2 * len(actor_devices), "parallel": config.actor_threads * len(actor_devices)}[
        config.mode
    ]


def make_actors(config: Any, sampler: Callable, actor_devices: list) -> Sebulba:
    """The actor threads of a Sebulba learner of `config` (any `HostConfig`): its host environments, MuJoCo C's
    threads shared out between the actor threads unless `env_threads` says."""
    nthread = config.env_threads or max(1, (os.cpu_count() or 1) // num_actor_threads(config, actor_devices))
    return Sebulba(
        lambda index: make_host_env(config, config.num_envs, nthread, actor=index),
        sampler,
        actor_devices,
        unroll_length=config.unroll_length,
        mode=config.mode,
        actor_threads=config.actor_threads,
        asynchronous=config.asynchronous,
        queue_size=config.queue_size,
        seed=config.seed,
    )


def trajectory_metrics(trajectory: Any) -> dict[str, float]:
    """What a collected trajectory logs: the mean return of the episodes that ended in it, their count, NaN resets."""
    episodes = float(trajectory.episodes.sum())
    return {
        "train/episode_return": float(trajectory.episode_return.sum()) / max(episodes, 1.0),
        "train/episodes": episodes,
        "train/nan_resets": float(trajectory.nan_resets.sum()),
    }


def make_update(config: Config, networks: Networks, mesh: Mesh) -> Callable:
    """The jitted `update(state, batch) -> (state, metrics)` on the learner mesh."""
    dist = networks.policy.distribution

    def optimizer_step(params, opt_state, grads):
        with jax.numpy_dtype_promotion("standard"):  # optax mixes Python scalars with integer counts
            updates, opt_state = networks.optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

    def update(state: TrainState, batch: Batch) -> tuple[TrainState, dict[str, jax.Array]]:
        batch = podracer.shard_batch(batch, mesh, axis=1)
        key, k_loss = jax.random.split(state.key)
        norm, critic_norm, on = state.normalizer, state.critic_normalizer, config.normalize_observations
        if on:
            norm = normalizer.update(norm, batch.obs)
            if networks.asymmetric:
                critic_norm = normalizer.update(critic_norm, batch.privileged_obs)
        policy = {"normalizer": norm}
        obs, next_obs = _normalize(config, policy, batch.obs), _normalize(config, policy, batch.next_obs)
        critic_obs = critic_input(networks, obs, batch.privileged_obs, critic_norm, on)
        next_critic_obs = critic_input(networks, next_obs, batch.next_privileged_obs, critic_norm, on)
        reward = batch.reward * jnp.asarray(config.reward_scaling, batch.reward.dtype)
        discounts = config.discount * (1.0 - batch.terminated.astype(reward.dtype))
        ended = batch.terminated | batch.truncated
        if config.loss == "vtrace":

            def loss_fn(params):
                dist_params = networks.policy.apply(params["policy"], obs)
                log_prob = dist.log_prob(dist_params, batch.raw_action)
                values = networks.value.apply(params["value"], critic_obs)
                next_values = networks.value.apply(params["value"], next_critic_obs)
                targets, advantages = losses.vtrace(
                    lax.stop_gradient(values),
                    lax.stop_gradient(next_values),
                    reward,
                    discounts,
                    lax.stop_gradient(log_prob) - batch.log_prob,
                    ended,
                    config.vtrace_lambda,
                    config.clip_rho,
                    config.clip_pg_rho,
                )
                entropy = dist.entropy(dist_params, k_loss)
                return losses.actor_critic_loss(
                    log_prob, values, targets, advantages, entropy, config.value_cost, config.entropy_cost
                )

            grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params)
            params, opt_state = optimizer_step(state.params, state.opt_state, grads)
            metrics = {**metrics, "grad_norm": optax.tree.norm(grads)}
        else:
            values = networks.value.apply(state.params["value"], critic_obs)
            next_values = networks.value.apply(state.params["value"], next_critic_obs)
            advantages, targets = ppo_losses.gae(
                reward, values, next_values, batch.terminated, batch.truncated, config.discount, config.gae_lambda
            )
            value_obs = critic_obs if networks.asymmetric else None
            flat = ppo_losses.Batch(obs, batch.raw_action, batch.log_prob, advantages, targets, value_obs)
            flat = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:]), flat)

            def epoch(carry, k):
                return update_epoch(carry, k, flat, networks=networks, config=config, mesh=mesh)

            (params, opt_state), metrics = lax.scan(
                epoch, (state.params, state.opt_state), jax.random.split(k_loss, config.num_epochs)
            )
            metrics = jax.tree.map(jnp.mean, metrics)
        params, opt_state = podracer.replicate((params, opt_state), mesh)
        steps = batch.reward.size
        new = TrainState(params, opt_state, norm, key, state.step + steps, state.version + 1, critic_norm)
        return new, metrics

    return jax.jit(update, donate_argnums=0)


def policy_of(state: TrainState) -> dict[str, Any]:
    return {"params": state.params, "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh | None = None) -> runner.Learner:
    """Sebulba for the runner. `mesh` is ignored: the learner's mesh is `config.learner_devices`'."""
    config.validate()
    actor_devices, learner_devices = devices(config)
    threads = num_actor_threads(config, actor_devices)
    learner_mesh = podracer.make_mesh(learner_devices)
    runner.check_devices(
        config,
        "num_envs (times the actor threads and processes)",
        config.num_envs * threads * jax.process_count(),
        learner_mesh,
    )
    transitions = config.unroll_length * config.num_envs * threads * jax.process_count()
    if config.loss == "ppo" and transitions % config.num_minibatches:
        raise ValueError(
            f"Config.num_minibatches = {config.num_minibatches} must divide the batch's {transitions} transitions "
            f"(unroll_length x num_envs x actor threads x processes)"
        )
    networks = make_networks(config)
    update = make_update(config, networks, learner_mesh)
    sampler = make_sampler(config, networks)
    holder: dict[str, Sebulba] = {}

    def init() -> TrainState:
        key = jax.random.key(config.seed)
        k_policy, k_value, key = jax.random.split(key, 3)
        params = {"policy": networks.policy.init(k_policy), "value": networks.value.init(k_value)}
        state = TrainState(
            params=params,
            opt_state=networks.optimizer.init(params),
            key=key,
            step=runner.step_counter(),
            version=jnp.zeros((), jnp.int32),
            **init_normalizers(networks, spaces(config)[0]),
        )
        return podracer.device_put_replicated(state, learner_mesh)

    def start(state: TrainState) -> None:
        sebulba = make_actors(config, sampler, actor_devices)
        holder["sebulba"] = sebulba
        sebulba.publish(policy_of(state), int(podracer.host_value(state.version)))
        sebulba.start()

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, Any]]:
        sebulba = holder["sebulba"]
        trajectory, stats = sebulba.collect()
        t0 = time.perf_counter()
        batch = Batch(*(getattr(trajectory, f) for f in Batch.__dataclass_fields__))
        if not networks.asymmetric:  # the learner never reads them: keep them off the device
            batch = batch.replace(privileged_obs=None, next_privileged_obs=None)
        state, metrics = update(state, podracer.device_put_process_batch(batch, learner_mesh, axis=1))
        metrics = podracer.host_value(metrics)  # waits for the update
        sebulba.publish(policy_of(state), int(podracer.host_value(state.version)))
        metrics = {**metrics, **stats, "sebulba/update_s": time.perf_counter() - t0, **trajectory_metrics(trajectory)}
        return state, metrics

    def close() -> None:
        sebulba = holder.pop("sebulba", None)
        if sebulba is not None:
            sebulba.close()

    return runner.Learner(init=init, iteration=iteration, policy=policy_of, start=start, close=close)


__all__ = [
    "Batch",
    "TrainState",
    "devices",
    "make_actor",
    "make_actors",
    "make_evaluate",
    "make_host_env",
    "make_learner",
    "make_sampler",
    "make_update",
    "policy_of",
    "spaces",
    "trajectory_metrics",
]
