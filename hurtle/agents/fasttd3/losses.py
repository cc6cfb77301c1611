"""FastTD3's pure pieces (Seo et al. 2025; TD3: Fujimoto et al. 2018; C51: Bellemare et al. 2017): the
categorical projection of a distributional Bellman target, the twin critics' cross-entropy loss with clipped
double Q, and the deterministic actor's loss. All jittable.

The networks enter as functions: `q_apply(q_params, critic_obs, action) -> [2, B, num_atoms]` (the twin
critics' logits) and `policy_apply(policy_params, obs) -> action` in [-1, 1]. Actions are stored and read in
that policy space (the environment's bounds are applied when stepping). A transition's `terminal` is a
termination (no bootstrap); a truncation stores the observation the step reached and bootstraps from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class Transition:
    """One stored step (raw observations): `obs`, `action` (policy space), `reward` (raw), `next_obs` (the state the
    step reached even where the episode ended), `terminal` (1.0 where it terminated), and with an asymmetric
    critic the privileged observations `critic_obs` and `next_critic_obs` (None without)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminal: jax.Array
    critic_obs: jax.Array | None = None
    next_critic_obs: jax.Array | None = None


def support(v_min: float, v_max: float, num_atoms: int, dtype: Any) -> jax.Array:
    """The categorical distribution's atoms: `num_atoms` values evenly spaced from `v_min` to `v_max`."""
    return jnp.linspace(v_min, v_max, num_atoms, dtype=dtype)


def categorical_projection(probs: jax.Array, reward: jax.Array, discount: jax.Array, atoms: jax.Array) -> jax.Array:
    """C51's projection of the distribution of `reward + discount * Z` (Z: `probs` over `atoms`) back onto `atoms`.

    Each shifted atom `r + gamma z_j`, clipped to [v_min, v_max], splits its mass between its two neighbouring
    atoms in proportion to its closeness to each (all of it to an atom it lands on). probs `[..., n]`, reward and
    discount `[...]`; returns `[..., n]`, each row summing to one where `probs` does."""
    delta = atoms[1] - atoms[0]
    shifted = jnp.clip(reward[..., None] + discount[..., None] * atoms, atoms[0], atoms[-1])
    position = (shifted - atoms[0]) / delta  # fractional index of each shifted atom, [..., n]
    # weight of target atom i from source atom j: max(0, 1 - |position_j - i|), the linear split between neighbours
    weights = jnp.maximum(
        0.0, 1.0 - jnp.abs(position[..., None, :] - jnp.arange(atoms.shape[0], dtype=atoms.dtype)[:, None])
    )
    return jnp.sum(weights * probs[..., None, :], axis=-1)


def expected(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """The mean of the categorical distribution of `logits` `[..., n]` over `atoms`."""
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)


def critic_loss(
    q_params: Any,
    target_q: Any,
    policy_params: Any,
    batch: Transition,
    key: jax.Array,
    *,
    q_apply: Callable,
    policy_apply: Callable,
    atoms: jax.Array,
    discount: float,
    reward_scaling: float,
    target_noise: float,
    target_noise_clip: float,
    clipped_double_q: bool = True,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The twin critics' distributional TD loss on a (normalised) batch.

    The next action is the current actor's at `next_obs` plus clipped Gaussian noise (TD3's target smoothing;
    FastTD3 keeps no target actor); each target critic's distribution there is projected through
    `reward * reward_scaling + discount * (1 - terminal) * Z`; with clipped double Q both critics learn towards
    the projection of the target critic whose mean is lower, else each towards the two's average. Loss: the
    cross-entropy of each critic's distribution at (obs, action) to that target, summed over the two critics
    and averaged over the batch."""
    dtype = batch.reward.dtype
    next_action = policy_apply(policy_params, batch.next_obs)
    noise = jnp.clip(
        target_noise * jax.random.normal(key, next_action.shape, next_action.dtype),
        -target_noise_clip,
        target_noise_clip,
    )
    next_action = jnp.clip(next_action + noise, -1.0, 1.0)
    next_critic = batch.next_obs if batch.next_critic_obs is None else batch.next_critic_obs
    next_logits = q_apply(target_q, next_critic, next_action)  # [2, B, n]
    reward = batch.reward * jnp.asarray(reward_scaling, dtype)
    gamma = discount * (1.0 - batch.terminal)
    projected = categorical_projection(jax.nn.softmax(next_logits, axis=-1), reward, gamma, atoms)  # [2, B, n]
    if clipped_double_q:
        means = expected(next_logits, atoms)  # [2, B]
        target = jnp.where((means[0] <= means[1])[:, None], projected[0], projected[1])
    else:
        target = 0.5 * (projected[0] + projected[1])
    target = jax.lax.stop_gradient(target)
    critic = batch.obs if batch.critic_obs is None else batch.critic_obs
    logits = q_apply(q_params, critic, batch.action)  # [2, B, n]
    cross_entropy = -jnp.sum(target[None] * jax.nn.log_softmax(logits, axis=-1), axis=-1)  # [2, B]
    loss = jnp.mean(jnp.sum(cross_entropy, axis=0))
    q = expected(logits, atoms)
    return loss, {"loss/critic": loss, "q/mean": jnp.mean(q), "q/target_mean": jnp.mean(jnp.sum(target * atoms, -1))}


def actor_loss(
    policy_params: Any,
    q_params: Any,
    obs: jax.Array,
    critic_obs: jax.Array,
    *,
    q_apply: Callable,
    policy_apply: Callable,
    atoms: jax.Array,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The deterministic actor's loss: minus the mean over the batch of the twin critics' average expected value
    of the actor's action (`critic_obs`: the critics' input for the same states)."""  # fmt: skip
    action = policy_apply(policy_params, obs)
    q = expected(q_apply(jax.lax.stop_gradient(q_params), critic_obs, action), atoms)  # [2, B]
    loss = -jnp.mean(q)
    return loss, {"loss/actor": loss, "policy/action_abs": jnp.mean(jnp.abs(action))}


__all__ = ["Transition", "actor_loss", "categorical_projection", "critic_loss", "expected", "support"]
