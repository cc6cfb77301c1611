"""FastTD3's pure pieces against hand-computed values: the categorical projection (against C51's floor/ceil
loop), the twin critics' loss with clipped double Q and target smoothing off, and the actor's loss."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.agents.fasttd3 import losses


def _c51_loop(probs, reward, discount, atoms):
    """C51's projection as Bellemare et al. write it: each shifted atom's mass split between floor and ceiling."""
    n, delta = len(atoms), atoms[1] - atoms[0]
    out = np.zeros(n)
    for j in range(n):
        tz = np.clip(reward + discount * atoms[j], atoms[0], atoms[-1])
        b = (tz - atoms[0]) / delta
        lo, hi = int(np.floor(b)), int(np.ceil(b))
        if lo == hi:
            out[lo] += probs[j]
        else:
            out[lo] += probs[j] * (hi - b)
            out[hi] += probs[j] * (b - lo)
    return out


def test_projection_is_c51s():
    atoms = np.linspace(-2.0, 3.0, 11)
    # one atom shifted half-way between two: its mass split evenly; shifted past the end: all at the end
    one = np.eye(11)[4]
    np.testing.assert_allclose(
        np.asarray(losses.categorical_projection(one, np.float64(0.25), np.float64(1.0), atoms))[[4, 5]], [0.5, 0.5]
    )
    np.testing.assert_allclose(
        losses.categorical_projection(one, np.float64(9.0), np.float64(1.0), atoms), np.eye(11)[10]
    )
    rng = np.random.default_rng(0)
    for _ in range(20):
        probs = rng.dirichlet(np.ones(11))
        reward, discount = rng.normal(), rng.uniform(0, 1)
        got = losses.categorical_projection(jnp.asarray(probs), jnp.asarray(reward), jnp.asarray(discount), atoms)
        np.testing.assert_allclose(got, _c51_loop(probs, reward, discount, atoms), atol=1e-12)
        np.testing.assert_allclose(float(jnp.sum(got)), 1.0, atol=1e-12)


def _fixed_nets(atoms):
    """A twin critic whose logits depend on the action only through a fixed table, and a constant actor."""
    table = jnp.asarray(np.random.default_rng(1).normal(size=(2, len(atoms))))

    def q_apply(params, obs, action):  # params scale the table: [2, B, n]
        return params[:, None, None] * table[:, None, :] + 0.0 * obs[None, :, :1] + action[None, :, :1]

    def policy_apply(params, obs):
        return jnp.tanh(params * jnp.ones((obs.shape[0], 1)))

    return q_apply, policy_apply, table


@pytest.mark.parametrize("cdq", [True, False])
def test_critic_loss_is_the_cross_entropy_to_the_projected_target(cdq):
    atoms = jnp.linspace(-1.0, 1.0, 5)
    q_apply, policy_apply, table = _fixed_nets(atoms)
    B = 3
    batch = losses.Transition(
        obs=jnp.zeros((B, 2)), action=jnp.asarray([[0.1], [0.2], [-0.3]]), reward=jnp.asarray([0.5, -0.2, 0.0]),
        next_obs=jnp.zeros((B, 2)), terminal=jnp.asarray([0.0, 1.0, 0.0]),
    )  # fmt: skip
    q_params, target_q, policy = jnp.asarray([1.0, -0.5]), jnp.asarray([0.7, 1.3]), jnp.asarray(0.4)
    loss, _ = losses.critic_loss(
        q_params, target_q, policy, batch, jax.random.key(0), q_apply=q_apply, policy_apply=policy_apply,
        atoms=atoms, discount=0.9, reward_scaling=2.0, target_noise=0.0, target_noise_clip=0.5, clipped_double_q=cdq,
    )  # fmt: skip
    # by hand, in numpy
    a, z = np.asarray(atoms), np.tanh(0.4)
    want = 0.0
    for b in range(B):
        r, g = 2.0 * float(batch.reward[b]), 0.9 * (1.0 - float(batch.terminal[b]))
        next_logits = [float(target_q[i]) * np.asarray(table[i]) + z for i in range(2)]
        probs = [np.exp(x - x.max()) / np.exp(x - x.max()).sum() for x in next_logits]
        proj = [_c51_loop(p, r, g, a) for p in probs]
        means = [p @ a for p in probs]
        target = (proj[0] if means[0] <= means[1] else proj[1]) if cdq else 0.5 * (proj[0] + proj[1])
        for i in range(2):
            logits = float(q_params[i]) * np.asarray(table[i]) + float(batch.action[b, 0])
            log_softmax = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
            want -= target @ log_softmax
    np.testing.assert_allclose(float(loss), want / B, rtol=1e-10)


def test_actor_loss_is_minus_the_critics_mean_value():
    atoms = jnp.linspace(-1.0, 1.0, 5)
    q_apply, policy_apply, table = _fixed_nets(atoms)
    obs, q_params = jnp.zeros((4, 2)), jnp.asarray([1.0, -0.5])
    loss, _ = losses.actor_loss(
        jnp.asarray(0.3), q_params, obs, obs, q_apply=q_apply, policy_apply=policy_apply, atoms=atoms
    )
    values = []
    for i in range(2):
        logits = float(q_params[i]) * np.asarray(table[i]) + np.tanh(0.3)
        p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        values.append(p @ np.asarray(atoms))
    np.testing.assert_allclose(float(loss), -np.mean(values), rtol=1e-10)
    # the gradient reaches the actor through the action, not the critics
    g = jax.grad(
        lambda p: losses.actor_loss(p, q_params, obs, obs, q_apply=q_apply, policy_apply=policy_apply, atoms=atoms)[0]
    )(jnp.asarray(0.3))
    assert float(jnp.abs(g)) > 0


def test_bad_configs_name_the_field():
    from hurtle.agents.fasttd3.config import Config

    with pytest.raises(ValueError, match="v_min < v_max"):
        Config(env="pendulum", v_min=1.0, v_max=0.0).validate()
    with pytest.raises(ValueError, match="noise_std_min"):
        Config(env="pendulum", noise_std_min=0.5, noise_std_max=0.1).validate()
    with pytest.raises(ValueError, match="bounded continuous"):
        from hurtle.agents.fasttd3.train import make_networks
        from hurtle.envs import make

        make_networks(Config(env="cartpole"), make("cartpole"))
