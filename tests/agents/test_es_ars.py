"""ES's and ARS's update steps against hand computations on small problems; centred ranks; ARS's top-b."""

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.agents.ars.train import ars_update
from hurtle.agents.es.train import es_gradient
from hurtle.agents.population import centered_ranks


def test_centered_ranks():
    np.testing.assert_allclose(
        np.asarray(centered_ranks(jnp.array([3.0, -1.0, 2.0, 10.0]))), [1 / 6, -0.5, -1 / 6, 0.5]
    )


def test_es_gradient_on_a_quadratic_by_hand():
    """f(theta) = -|theta - c|^2; members theta +- sigma eps_k; the estimate is sum_i rank_i eps_i / (n sigma)."""
    rng = np.random.default_rng(0)
    theta, c, sigma = np.zeros(3), np.array([1.0, -2.0, 0.5]), 0.1
    eps = rng.normal(size=(50, 3))
    members = np.concatenate([theta + sigma * eps, theta - sigma * eps])
    fitness = -np.sum((members - c) ** 2, axis=1)
    grad = np.asarray(es_gradient(jnp.asarray(fitness), jnp.asarray(eps), sigma))
    order = np.argsort(fitness)
    ranks = np.empty(100)
    ranks[order] = np.arange(100) / 99 - 0.5
    signed = np.concatenate([eps, -eps])
    np.testing.assert_allclose(grad, (ranks[:, None] * signed).sum(0) / (100 * sigma), rtol=1e-12)
    # it points up the objective: towards c
    assert grad @ (c - theta) / (np.linalg.norm(grad) * np.linalg.norm(c - theta)) > 0.9


def test_ars_update_selects_the_top_directions_by_hand():
    deltas = jnp.asarray(np.random.default_rng(1).normal(size=(4, 2, 3)))
    r_plus, r_minus = jnp.array([1.0, 5.0, 2.0, 0.0]), jnp.array([3.0, 0.0, 2.0, 4.0])
    weights = jnp.ones((2, 3))
    new, metrics = ars_update(weights, deltas, r_plus, r_minus, top=2, step_size=0.1)
    # max(r+, r-) = 3, 5, 2, 4: directions 1 and 3
    sigma = np.std([5.0, 0.0, 0.0, 4.0])
    expected = 1.0 + 0.1 / (2 * sigma) * (5.0 * np.asarray(deltas[1]) - 4.0 * np.asarray(deltas[3]))
    np.testing.assert_allclose(np.asarray(new), expected, rtol=1e-12)
    np.testing.assert_allclose(float(metrics["ars/reward_std"]), sigma, rtol=1e-12)


def test_ars_climbs_a_quadratic():
    """Repeated ARS steps on r(M) = -|M - C|^2 (no environment) reach C's neighbourhood."""
    target = jnp.array([[1.0, -1.0]])
    w = jnp.zeros((1, 2))
    f = lambda m: -jnp.sum((m - target) ** 2, axis=(-2, -1))  # noqa: E731
    for k in jax.random.split(jax.random.key(0), 300):
        d = jax.random.normal(k, (8, 1, 2))
        w, _ = ars_update(w, d, f(w + 0.05 * d), f(w - 0.05 * d), top=4, step_size=0.02)
    assert float(jnp.max(jnp.abs(w - target))) < 0.1
