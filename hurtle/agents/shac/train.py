"""SHAC on Anakin: an iteration is one jitted call.

The stochastic policy (a tanh-Gaussian, reparameterised) acts in `num_envs` auto-resetting environments for
`unroll_length` steps. Each environment's window is cut at episode ends: its return so far plus the discounted
target critic's value of the state reached (zero where the episode terminated, the value of the final
observation where it was truncated or the window ended) is one term of the actor's loss, the negated mean of
those terms over environments and steps, differentiated through the physics (a task's `gradient_reward` where
it defines one). The critic then fits TD(lambda) targets computed from the window with the target critic,
`critic_iterations` passes of `num_critic_minibatches`, and the target critic moves towards it. Gradients are
clipped; a non-finite actor gradient skips the actor's update and is counted in `shac/skipped`.
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
from hurtle.agents.apg.train import gradient_reward, guarded_update, make_policy
from hurtle.agents.apg.train import make_actor as apg_actor
from hurtle.agents.shac.config import Config
from hurtle.envs.base import Env, State
from hurtle.nn import make_value_network, normalizer
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class TrainState:
    """Policy, critic and target critic parameters, both optimisers' states, the observation normaliser, the
    environments, the PRNG key, `skipped` (actor updates skipped for a non-finite gradient) and `step`."""

    params: Any  # {"policy", "value", "target"}
    actor_opt: Any
    critic_opt: Any
    normalizer: normalizer.NormalizerState
    env_state: State
    key: jax.Array
    skipped: jax.Array
    step: jax.Array


def td_lambda_targets(rewards, values, terminated, ended, discount: float, lam: float) -> jax.Array:
    """TD(lambda) returns `[T, N]` of a window: `values[t]` is V of the state step t reached (its final
    observation where the episode ended there), zero where it `terminated`; an episode's return does not
    reach past its end (`ended`), and the window's last step bootstraps from its value."""
    boot = jnp.where(terminated, 0.0, values)

    def back(nxt, x):
        r, v, end, last = x
        g = r + discount * jnp.where(end | last, v, (1 - lam) * v + lam * nxt)
        return g, g

    last = jnp.zeros(rewards.shape[0], bool).at[-1].set(True)[:, None] & jnp.ones_like(ended)
    _, out = lax.scan(back, jnp.zeros_like(rewards[0]), (rewards, boot, ended, last), reverse=True)
    return out


def make_networks(config: Config, env: Env):
    policy = make_policy(config, env)
    value = make_value_network(env.observation_size, config.value_hidden_sizes)
    return policy, value


def make_optimizers(config: Config) -> tuple[optax.GradientTransformation, optax.GradientTransformation]:
    iterations = max(1, -(-config.num_timesteps // (config.num_envs * config.unroll_length)))

    def adam(lr):
        if config.linear_decay:
            lr = optax.linear_schedule(lr, 0.0, iterations)
        return optax.chain(
            optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, b1=config.adam_b1, b2=config.adam_b2)
        )

    return adam(config.actor_learning_rate), adam(config.critic_learning_rate)


def make_iteration(config: Config, env: Env, policy, value, optimizers, mesh: Mesh | None = None):
    """The jitted `iteration(state) -> (state, metrics)`."""
    actor_opt, critic_opt = optimizers
    gamma = config.discount

    def norm_obs(norm, obs):
        return normalizer.normalize(norm, obs) if config.normalize_observations else obs

    def actor_loss(policy_params, target, norm, env_state, key):
        def body(carry, k):
            s, ret, disc = carry
            obs = s.obs
            raw = policy.distribution.sample(policy.apply(policy_params, norm_obs(norm, obs)), k)
            s = env.step(s, policy.distribution.postprocess(raw))
            r = config.reward_scaling * gradient_reward(s)
            ended = s.done | s.truncation
            v = value.apply(target, norm_obs(norm, s.info["final_obs"]))
            v_boot = jnp.where(s.done, 0.0, v)
            ret = ret + disc * r
            window = ret + disc * gamma * v_boot  # the window's return, closed here where an episode ended
            disc = disc * gamma
            out = (obs, lax.stop_gradient(r), s.done, ended, lax.stop_gradient(v), window, s.reward)
            return (s, jnp.where(ended, 0.0, ret), jnp.where(ended, 1.0, disc)), out

        n = env_state.reward.shape[0]
        dtype = env_state.reward.dtype
        init = (env_state, jnp.zeros(n, dtype), jnp.ones(n, dtype))
        keys = jax.random.split(key, config.unroll_length)
        final, (obs, rewards, terminated, ended, values, window, true_rewards) = lax.scan(body, init, keys)
        closed = ended.at[-1].set(True)
        loss = -jnp.sum(jnp.where(closed, window, 0.0)) / (config.unroll_length * n)
        return loss, (final[0], obs, rewards, terminated, ended, values, true_rewards)

    def critic_loss(params, obs, targets):
        return jnp.mean(jnp.square(value.apply(params, obs) - targets))

    def iteration(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        key, k_act, k_perm = jax.random.split(state.key, 3)
        p = state.params
        (a_loss, aux), grads = jax.value_and_grad(actor_loss, has_aux=True)(
            p["policy"], p["target"], state.normalizer, state.env_state, k_act
        )
        final, obs, rewards, terminated, ended, values, true_rewards = jax.tree.map(lax.stop_gradient, aux)
        if mesh is not None:
            final = podracer.shard_batch(final, mesh)
        new_policy, actor_state, finite = guarded_update(actor_opt, grads, state.actor_opt, p["policy"])
        targets = td_lambda_targets(rewards, values, terminated, ended, gamma, config.td_lambda)
        flat_obs = norm_obs(state.normalizer, obs).reshape((-1, obs.shape[-1]))
        flat_targets = targets.reshape(-1)
        size = flat_targets.shape[0] // config.num_critic_minibatches

        def epoch(carry, k):
            def minibatch(carry, idx):
                params, opt_state = carry
                c_loss, g = jax.value_and_grad(critic_loss)(params, flat_obs[idx], flat_targets[idx])
                with jax.numpy_dtype_promotion("standard"):
                    updates, opt_state = critic_opt.update(g, opt_state, params)
                    params = optax.apply_updates(params, updates)
                return (params, opt_state), c_loss

            perm = jax.random.permutation(k, flat_targets.shape[0]).reshape((config.num_critic_minibatches, size))
            return lax.scan(minibatch, carry, perm)

        (critic, critic_state), c_losses = lax.scan(
            epoch, (p["value"], state.critic_opt), jax.random.split(k_perm, config.critic_iterations)
        )
        alpha = config.target_critic_alpha
        target = jax.tree.map(lambda t, c: alpha * t + (1 - alpha) * c, p["target"], critic)
        norm = state.normalizer
        if config.normalize_observations:
            norm = normalizer.update(norm, obs.reshape((-1, obs.shape[-1])))
        skipped = state.skipped + (~finite).astype(state.skipped.dtype)
        new = TrainState(
            params={"policy": new_policy, "value": critic, "target": target},
            actor_opt=actor_state,
            critic_opt=critic_state,
            normalizer=norm,
            env_state=final,
            key=key,
            skipped=skipped,
            step=state.step + config.num_envs * config.unroll_length,
        )
        metrics = {
            "shac/actor_loss": a_loss,
            "shac/critic_loss": c_losses[-1].mean(),
            "shac/grad_norm": optax.tree.norm(grads),
            "shac/skipped": skipped.astype(a_loss.dtype),
            "train/reward": jnp.mean(true_rewards),
        }
        return new, metrics

    return jax.jit(iteration, compiler_options=xla_flags.gradient_options())


def init_state(config: Config, env: Env, policy, value, optimizers, mesh: Mesh | None = None) -> TrainState:
    key, k_policy, k_value, k_env = jax.random.split(jax.random.key(config.seed), 4)
    critic = value.init(k_value)
    params = {"policy": policy.init(k_policy), "value": critic, "target": critic}
    obs_space = env.observation_space
    state = TrainState(
        params=params,
        actor_opt=optimizers[0].init(params["policy"]),
        critic_opt=optimizers[1].init(critic),
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
    return {"params": state.params["policy"], "normalizer": state.normalizer}


def make_learner(config: Config, mesh: Mesh) -> runner.Learner:
    """SHAC for the runner; refuses discrete actions and environments the devices cannot split evenly."""
    env = runner.training_env(config, config.num_envs)
    policy, value = make_networks(config, env)
    runner.check_devices(config, "num_envs", config.num_envs, mesh)
    optimizers = make_optimizers(config)
    return runner.Learner(
        init=lambda: init_state(config, env, policy, value, optimizers, mesh),
        iteration=make_iteration(config, env, policy, value, optimizers, mesh),
        policy=policy_of,
    )


def make_actor(config: Config) -> runner.Actor:
    """The deterministic policy (the tanh-Gaussian's mode) and its checkpoint item: APG's, the same network."""
    return apg_actor(config)


__all__ = ["TrainState", "init_state", "make_actor", "make_iteration", "make_learner", "policy_of", "td_lambda_targets"]
