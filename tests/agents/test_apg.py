"""APG: it solves inverted_pendulum through the physics' derivatives, and a non-finite gradient skips the update
and is counted."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle import podracer
from hurtle.agents import runner, sim2sim
from hurtle.agents.apg import train as apg
from hurtle.envs.locomotion.inverted_pendulum import InvertedPendulum
from hurtle.envs.wrappers import EpisodeWrapper, wrap_for_training


def test_apg_solves_inverted_pendulum():
    """The preset reaches the time limit (return 1,000 on every evaluation episode) within 100k steps (the run
    stops at its first such evaluation: `target_return`)."""
    algo = runner.algorithm("apg")
    config = dataclasses.replace(
        algo.preset("inverted_pendulum"), num_timesteps=100_000, num_eval_envs=16, target_return=1000.0
    )
    learner = algo.make_learner(config, podracer.make_mesh())
    state, history = runner.train(algo, config, learner=learner)
    assert int(state.skipped) == 0
    assert history[-1]["eval/episode_return"] == 1000.0
    # sim-to-sim: the same policy in Gymnasium's InvertedPendulum-v5 (MuJoCo C) balances to the limit there too
    there = sim2sim.make_evaluate(config, algo.make_actor(config).act, 8)(learner.policy(state), jax.random.key(5))
    np.testing.assert_array_equal(there["episode_return"], 1000.0)
    np.testing.assert_array_equal(there["episode_length"], 1000)


class _Exploding(InvertedPendulum):
    """inverted_pendulum whose gradient reward (and its derivative) turns infinite half a second into an episode:
    the first unroll (0.32 s) is finite, later ones are not."""

    xml_path = InvertedPendulum().xml

    def gradient_reward(self, before, after, action):
        smooth = super().gradient_reward(before, after, action)
        return smooth * jnp.where(after.time > 0.5, jnp.inf, 1.0)


def test_non_finite_gradient_skips_the_update():
    config = apg.Config(env="inverted_pendulum", num_envs=4, unroll_length=8, truncation_length=4).validate()
    env = wrap_for_training(EpisodeWrapper(_Exploding(), episode_length=1000), config.num_envs)
    policy = apg.make_policy(config, env)
    optimizer = apg.make_optimizer(config)
    state = apg.init_state(config, env, policy, optimizer)
    iteration = apg.make_iteration(config, env, policy, optimizer)
    skipped = []
    for _ in range(4):
        new, metrics = iteration(state)
        bad = not np.isfinite(float(metrics["apg/grad_norm"]))
        same = jax.tree.map(lambda a, b: bool(jnp.all(a == b)), new.params, state.params)
        assert all(jax.tree.leaves(same)) == bad  # a skipped update leaves the parameters as they were
        skipped.append(bad)
        state = new
    assert skipped[0] is False and any(skipped) and int(state.skipped) == sum(skipped) == float(metrics["apg/skipped"])
    assert int(state.step) == 4 * 4 * 8


def test_discrete_actions_are_refused():
    with pytest.raises(ValueError, match=r"APG differentiates through continuous actions; 'cartpole' has"):
        runner.algorithm("apg").make_learner(apg.Config(env="cartpole"), None)
