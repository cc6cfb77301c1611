"""The networks, distributions and normaliser of hurtle.nn (kept here beside the PPO tests that use them)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.envs import Box, Discrete
from hurtle.nn import Categorical, TanhNormal, distributions, make_policy_network, make_value_network, normalizer


def test_tanh_normal_log_prob_matches_change_of_variables():
    rng = np.random.default_rng(1)
    loc, scale = rng.normal(size=(6, 3)), rng.uniform(0.1, 2.0, size=(6, 3))
    u = rng.normal(size=(6, 3)) * 4.0  # includes saturated tanh values
    log_n = -0.5 * ((u - loc) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)
    expected = np.sum(log_n - np.log1p(-(np.tanh(u) ** 2)), axis=-1)
    got = distributions.tanh_normal_log_prob(jnp.asarray(loc), jnp.asarray(scale), jnp.asarray(u))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-9)


def test_tanh_log_det_is_finite_where_tanh_saturates():
    u = jnp.asarray([-40.0, 0.0, 40.0], jnp.float32)
    out = np.asarray(distributions.tanh_log_det_jacobian(u))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [2 * (np.log(2) - 40), 0.0, 2 * (np.log(2) - 40)], rtol=1e-6)


def test_tanh_normal_density_integrates_to_one_in_1d():
    # the density of a = tanh(u) over (-1, 1): integrate p(a) da = p(u) du on a fine grid of u
    u = np.linspace(-12.0, 12.0, 200_001)
    log_p = distributions.tanh_normal_log_prob(
        jnp.full((u.size, 1), 0.3), jnp.full((u.size, 1), 1.5), jnp.asarray(u)[:, None]
    )
    a = np.tanh(u)
    np.testing.assert_allclose(np.trapezoid(np.exp(np.asarray(log_p)), a), 1.0, rtol=1e-6)


def test_tanh_normal_entropy_estimate_is_unbiased():
    loc, scale = jnp.asarray([[0.2, -1.0]]), jnp.asarray([[0.7, 0.3]])
    keys = jax.random.split(jax.random.key(0), 20_000)
    est = jax.vmap(lambda k: distributions.tanh_normal_entropy(k, loc, scale))(keys).mean()
    u = np.asarray(loc + scale * jax.random.normal(jax.random.key(1), (200_000, 2), jnp.float64))
    log_p = distributions.tanh_normal_log_prob(loc, scale, jnp.asarray(u))
    np.testing.assert_allclose(float(est), -float(np.mean(np.asarray(log_p))), atol=0.02)


def test_box_policy_samples_lie_in_bounds_and_mode_is_deterministic():
    space = Box(np.array([-2.0, 0.0, 10.0]), np.array([1.0, 0.5, 30.0]))
    policy = make_policy_network(4, space, hidden_sizes=(16, 16))
    assert isinstance(policy.distribution, TanhNormal) and policy.distribution.param_size == 6
    params = policy.init(jax.random.key(0))
    obs = jax.random.normal(jax.random.key(1), (512, 4), jnp.float64) * 10.0
    dist = policy.apply(params, obs) * 100.0  # wide Gaussians: tanh saturates often
    raw = policy.distribution.sample(dist, jax.random.key(2))
    actions = np.asarray(policy.distribution.postprocess(raw))
    assert actions.shape == (512, 3)
    assert np.all(actions >= space.low) and np.all(actions <= space.high)
    assert np.all(np.isfinite(np.asarray(policy.distribution.log_prob(dist, raw))))
    mode = np.asarray(policy.distribution.mode(dist))
    assert np.all(mode >= space.low) and np.all(mode <= space.high)
    np.testing.assert_array_equal(mode, np.asarray(policy.distribution.mode(dist)))


def test_discrete_policy_is_categorical():
    policy = make_policy_network((3,), Discrete(5), hidden_sizes=(8,))
    assert policy.distribution == Categorical(5)
    params = policy.init(jax.random.key(0))
    logits = policy.apply(params, jnp.ones((7, 3)))
    assert logits.shape == (7, 5)
    actions = policy.distribution.sample(logits, jax.random.key(1))
    assert actions.dtype == jnp.int32 and np.all((np.asarray(actions) >= 0) & (np.asarray(actions) < 5))
    log_p = np.asarray(jax.nn.log_softmax(logits))
    np.testing.assert_allclose(
        np.asarray(policy.distribution.log_prob(logits, actions)), log_p[np.arange(7), np.asarray(actions)]
    )
    np.testing.assert_allclose(
        np.asarray(policy.distribution.entropy(logits, jax.random.key(0))), -(np.exp(log_p) * log_p).sum(-1)
    )
    # a freshly initialised policy is near uniform (small output layer)
    np.testing.assert_allclose(np.exp(log_p), 0.2, atol=0.05)


def test_categorical_sampling_frequencies():
    logits = jnp.log(jnp.asarray([0.1, 0.6, 0.3]))
    draws = jax.vmap(lambda k: distributions.categorical_sample(k, logits))(jax.random.split(jax.random.key(3), 20_000))
    np.testing.assert_allclose(np.bincount(np.asarray(draws), minlength=3) / 20_000, [0.1, 0.6, 0.3], atol=0.015)
    assert int(distributions.categorical_mode(logits)) == 1


def test_unbounded_box_is_refused():
    with pytest.raises(ValueError, match="finite Box bounds"):
        make_policy_network(2, Box(-np.inf, np.inf, (2,)))


def test_value_network_shape():
    value = make_value_network(4, hidden_sizes=(8, 8))
    params = value.init(jax.random.key(0))
    assert value.apply(params, jnp.ones((2, 6, 4))).shape == (2, 6)


def test_normalizer_matches_numpy_over_several_updates():
    rng = np.random.default_rng(2)
    batches = [rng.normal(3.0, 5.0, size=(n, 4, 3)) for n in (1, 7, 50)]
    state = normalizer.init(3, jnp.float64)
    update = jax.jit(normalizer.update)
    for b in batches:
        state = update(state, jnp.asarray(b))
    data = np.concatenate([b.reshape(-1, 3) for b in batches])
    assert float(state.count) == data.shape[0]
    np.testing.assert_allclose(np.asarray(state.mean), data.mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(normalizer.variance(state)), data.var(0), rtol=1e-12)
    x = jnp.asarray(data[:5])
    expected = (data[:5] - data.mean(0)) / np.sqrt(data.var(0) + 1e-8)
    np.testing.assert_allclose(np.asarray(normalizer.normalize(state, x)), expected, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(normalizer.denormalize(state, normalizer.normalize(state, x))), data[:5])


def test_normalizer_clips_and_starts_as_identity():
    state = normalizer.init(2, jnp.float64)
    x = jnp.asarray([1.0, -2.0])
    np.testing.assert_array_equal(np.asarray(normalizer.normalize(state, x)), [1.0, -2.0])
    state = normalizer.update(state, jnp.asarray([[0.0, 0.0], [2.0, 2.0]]))  # mean 1, std 1
    np.testing.assert_allclose(
        np.asarray(normalizer.normalize(state, jnp.asarray([100.0, -100.0]), clip=5.0)), [5.0, -5.0]
    )
