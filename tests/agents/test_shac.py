"""SHAC: TD(lambda) targets against a hand-written reference, and it solves inverted_pendulum through the
physics' derivatives."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from hurtle.agents import runner
from hurtle.agents.shac.train import td_lambda_targets


def _reference(rewards, values, terminated, ended, gamma, lam):
    """G_t = r_t + gamma V(s_t+1) where the episode or the window ends at t (V = 0 if it terminated), else
    r_t + gamma ((1 - lam) V(s_t+1) + lam G_t+1): the lambda-return of each step, episode by episode."""
    T, N = rewards.shape
    out = np.zeros((T, N))
    for n in range(N):
        for t in reversed(range(T)):
            v = 0.0 if terminated[t, n] else values[t, n]
            if ended[t, n] or t == T - 1:
                out[t, n] = rewards[t, n] + gamma * v
            else:
                out[t, n] = rewards[t, n] + gamma * ((1 - lam) * v + lam * out[t + 1, n])
    return out


def test_td_lambda_targets():
    rng = np.random.default_rng(0)
    T, N = 6, 3
    rewards, values = rng.standard_normal((T, N)), rng.standard_normal((T, N))
    terminated = np.zeros((T, N), bool)
    ended = np.zeros((T, N), bool)
    terminated[2, 0] = ended[2, 0] = True  # env 0 falls at step 2
    ended[3, 1] = True  # env 1 hits its time limit at step 3 (bootstrapped)
    got = td_lambda_targets(*map(jnp.asarray, (rewards, values, terminated, ended)), 0.9, 0.8)
    np.testing.assert_allclose(got, _reference(rewards, values, terminated, ended, 0.9, 0.8), rtol=1e-12)
    # lambda = 0 is one-step TD; lambda = 1 within an episode is the discounted return to the window's end
    np.testing.assert_allclose(
        td_lambda_targets(*map(jnp.asarray, (rewards, values, terminated, ended)), 0.9, 0.0),
        rewards + 0.9 * np.where(terminated, 0.0, values),
        rtol=1e-12,
    )


def test_shac_solves_inverted_pendulum():
    """The preset reaches the time limit (1,000 on every evaluation episode) within 40k steps; the run stops
    there (`target_return`)."""
    algo = runner.algorithm("shac")
    config = dataclasses.replace(
        algo.preset("inverted_pendulum"), num_timesteps=40_000, num_eval_envs=16, target_return=1000.0
    )
    state, history = runner.train(algo, config)
    assert int(state.skipped) == 0
    assert history[-1]["eval/episode_return"] == 1000.0
    assert all(m.get("eval/episode_return", 0.0) < 1000.0 for m in history[:-1])  # stopped at the first
