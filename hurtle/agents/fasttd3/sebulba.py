"""FastTD3 on Sebulba: host environments on actor threads, the replay buffer and every update on the learner.

Each actor thread steps its host environments (`hurtle.hostenvs`: hurtle's tasks on MuJoCo C, EnvPool,
Gymnasium) with the actor's action plus Gaussian noise, environment i of a batch at its own fixed scale
(`noise_std_min` to `noise_std_max` spread evenly over the batch: FastTD3's mixed noise, each scale kept by one
environment rather than redrawn per episode), and uniformly random actions until the buffer holds
`min_replay_size`. An iteration takes one trajectory from each actor thread (`unroll_length` steps), writes its
steps into the replay buffer on the learner device, merges them into the normalisers and, once the buffer is
ready, runs `unroll_length * grad_updates_per_step` of Anakin's updates (`hurtle.agents.fasttd3.train.update`) in
one jitted call; then the actors receive the new actor. A checkpoint holds the learner's whole state, replay
buffer included; a resumed run goes on from it with new episodes (host environments' states are not saved).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from hurtle import podracer
from hurtle.agents import replay, runner
from hurtle.agents.fasttd3 import losses
from hurtle.agents.fasttd3.config import Config
from hurtle.agents.fasttd3.train import TrainState, networks_for, policy_of, update
from hurtle.agents.impala import train as host
from hurtle.agents.impala.config import HostConfig
from hurtle.nn import normalizer
from hurtle.podracer.sebulba import Sebulba


@dataclasses.dataclass(frozen=True)
class SebulbaConfig(Config, HostConfig):
    """FastTD3 on Sebulba: FastTD3's fields (an iteration is one trajectory of every actor thread, not
    `steps_per_iteration`) with Sebulba's host fields; sized for a 2-core CPU by default."""

    num_envs: int = 16
    """Environments per actor thread (one batch, stepped together)."""
    unroll_length: int = 16
    """Steps per trajectory; an iteration takes one from each actor thread and then updates."""
    batch_size: int = 256
    """Transitions per gradient update, drawn uniformly from the replay buffer."""
    min_replay_size: int = 4096
    """Transitions collected with uniformly random actions before learning starts (counted as env steps)."""
    policy_hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of the deterministic actor's hidden layers."""
    q_hidden_sizes: tuple[int, ...] = (256, 256)
    """Widths of each of the twin distributional critics' hidden layers."""

    def validate(self) -> SebulbaConfig:
        """Raise ValueError naming the first field at fault; return self when all is well."""
        self.validate_host()
        self.validate_replay(check_env=self.env_backend == "mujoco")
        return self.validate_fasttd3()


def _width(config: SebulbaConfig) -> tuple[int, list, list]:
    """(transitions per trajectory step over every actor thread and process, actor devices, learner devices)."""
    actors, learners = host.devices(config)
    return config.num_envs * host.num_actor_threads(config, actors) * jax.process_count(), actors, learners


def make_networks(config: SebulbaConfig):
    return networks_for(config, *host.spaces(config))


def make_sampler(config: SebulbaConfig, networks) -> Any:
    """The actors' `act(policy, obs, key) -> (action, env_action, log_prob)`: the actor's action plus each
    environment's own noise, or a uniformly random action while `policy["random"]`; log_prob is unused (0)."""

    def act(policy, obs, key):
        obs = jnp.asarray(obs, networks.policy_module.dtype)
        k_noise, k_random = jax.random.split(key)
        n = obs.shape[0]
        normed = normalizer.normalize(policy["normalizer"], obs) if config.normalize_observations else obs
        mean = networks.policy_apply(policy["params"], normed)
        std = jnp.linspace(config.noise_std_min, config.noise_std_max, n, dtype=mean.dtype)
        noisy = jnp.clip(mean + std[:, None] * jax.random.normal(k_noise, mean.shape, mean.dtype), -1.0, 1.0)
        action = jnp.where(policy["random"], jax.random.uniform(k_random, mean.shape, mean.dtype, -1.0, 1.0), noisy)
        return action, networks.to_env(action), jnp.zeros(n, mean.dtype)

    return act


def make_actor(config: SebulbaConfig) -> runner.Actor:
    """The deterministic policy (the actor's action in the environment's bounds) and its checkpoint item."""
    networks = make_networks(config)
    obs_space = host.spaces(config)[0]

    def act(policy, obs):
        normed = normalizer.normalize(policy["normalizer"], obs) if config.normalize_observations else obs
        return networks.to_env(networks.policy_apply(policy["params"], normed))

    like = {
        "params": networks.policy_init(jax.random.key(0)),
        "normalizer": normalizer.init(obs_space.shape, obs_space.dtype),
    }
    return runner.Actor(act, like)


def make_learner(config: SebulbaConfig, mesh=None) -> runner.Learner:
    """FastTD3 on Sebulba for the runner. `mesh` is ignored: the learner's mesh is `config.learner_devices`'."""
    config.validate()
    width, actor_devices, learner_devices = _width(config)
    learner_mesh = podracer.make_mesh(learner_devices)
    networks = make_networks(config)
    slots = config.max_replay_size // width
    if slots * width < config.min_replay_size:
        raise ValueError(
            f"Config.max_replay_size = {config.max_replay_size} holds {slots} steps of the {width} environments, "
            f"fewer than min_replay_size = {config.min_replay_size} needs"
        )
    obs_space = host.spaces(config)[0]
    dtype = networks.policy_module.dtype
    privileged = None
    if networks.asymmetric:
        privileged = jnp.zeros((width, *networks.critic_space.shape), networks.critic_space.dtype)
    obs = jnp.zeros((width, *obs_space.shape), obs_space.dtype)
    scalar = jnp.zeros((width,), dtype)
    example = losses.Transition(
        obs, jnp.zeros((width, networks.action_size), dtype), scalar, obs, scalar, privileged, privileged
    )
    replay.check_fits(replay.nbytes(example, slots), learner_devices, "max_replay_size")
    steps_per_iteration = config.unroll_length * width
    holder: dict[str, Sebulba] = {}

    def init() -> TrainState:
        key = jax.random.key(config.seed)
        k_policy, k_q, key = jax.random.split(key, 3)
        q = networks.q_init(k_q)
        params = {"policy": networks.policy_init(k_policy), "q": q}
        critic = networks.critic_space
        state = TrainState(
            params=params,
            target_q=q,
            opt_state={"policy": networks.optimizer.init(params["policy"]), "q": networks.optimizer.init(q)},
            normalizer=normalizer.init(obs_space.shape, obs_space.dtype),
            critic_normalizer=None if critic is None else normalizer.init(critic.shape, critic.dtype),
            buffer=replay.init(example, slots),
            env_state=None,
            noise_std=None,
            key=key,
            step=runner.step_counter(),
            updates=jnp.zeros((), jnp.int32),
        )
        return podracer.device_put_replicated(state, learner_mesh)

    def learn(state: TrainState, batch: losses.Transition) -> tuple[TrainState, dict[str, jax.Array]]:
        def insert(buffer, step):
            return replay.insert(buffer, step), None

        buffer, _ = lax.scan(insert, state.buffer, batch)
        norm, critic_norm = state.normalizer, state.critic_normalizer
        if config.normalize_observations:
            norm = normalizer.update(norm, batch.obs)
            if networks.asymmetric:
                critic_norm = normalizer.update(critic_norm, batch.critic_obs)
        state = state.replace(buffer=buffer, normalizer=norm, critic_normalizer=critic_norm)
        state = state.replace(step=state.step + steps_per_iteration)
        one = lambda s, k: update(s, k, networks=networks, config=config)  # noqa: E731
        n = config.unroll_length * config.grad_updates_per_step

        def updates(s):
            key, k = jax.random.split(s.key)
            s, metrics = lax.scan(one, s.replace(key=key), jax.random.split(k, n))
            return s, jax.tree.map(jnp.nanmean, metrics)

        def wait(s):
            like = jax.eval_shape(lambda x: updates(x)[1], s)
            return s, jax.tree.map(lambda m: jnp.full(m.shape, jnp.nan, m.dtype), like)

        ready = buffer.size * buffer.width >= config.min_replay_size
        state, metrics = lax.cond(ready, updates, wait, state)
        return state, {**metrics, "replay/size": buffer.size * buffer.width}

    learn = jax.jit(learn, donate_argnums=0)

    def actor_policy(state: TrainState) -> dict[str, Any]:
        ready = int(podracer.host_value(state.buffer.size)) * width >= config.min_replay_size
        return {**policy_of(state), "random": jnp.asarray(not ready)}

    def version(state: TrainState) -> int:
        return int(podracer.host_value(state.step)) // steps_per_iteration

    def start(state: TrainState) -> None:
        sebulba = host.make_actors(config, make_sampler(config, networks), actor_devices)
        holder["sebulba"] = sebulba
        sebulba.publish(actor_policy(state), version(state))
        sebulba.start()

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, Any]]:
        sebulba = holder["sebulba"]
        tr, stats = sebulba.collect()
        asym = networks.asymmetric
        batch = losses.Transition(
            tr.obs, tr.raw_action, tr.reward, tr.next_obs, tr.terminated.astype(tr.reward.dtype),
            tr.privileged_obs if asym else None, tr.next_privileged_obs if asym else None,
        )  # fmt: skip
        state, metrics = learn(state, jax.device_put(batch, podracer.replicated(learner_mesh)))
        metrics = podracer.host_value(metrics)
        sebulba.publish(actor_policy(state), version(state))
        # the losses are NaN until learning starts (logged anyway: the first row fixes metrics.csv's columns)
        return state, {**metrics, **stats, **host.trajectory_metrics(tr)}

    def close() -> None:
        sebulba = holder.pop("sebulba", None)
        if sebulba is not None:
            sebulba.close()

    return runner.Learner(init=init, iteration=iteration, policy=policy_of, start=start, close=close)


__all__ = ["SebulbaConfig", "make_actor", "make_learner", "make_sampler"]
