"""Every environment resets and steps under jit and vmap, 1,000 random steps with auto-reset, no NaN."""

import jax
import numpy as np
import pytest

from tests.envs.conftest import ALL, JIT_RESET, JIT_STEP, batch, random_actions

STEPS = 1000


@pytest.mark.parametrize("name", ALL)
def test_random_rollout_is_finite(name):
    env = batch(name)
    rng = np.random.default_rng(0)
    state = JIT_RESET(env, jax.random.key(0))
    ended = 0
    for _ in range(STEPS):
        state = JIT_STEP(env, state, random_actions(env, rng, (4,)))
        obs, reward, final, nan = jax.device_get(
            (state.obs, state.reward, state.info["final_obs"], state.metrics["nan_resets"])
        )
        assert np.all(np.isfinite(obs)) and np.all(np.isfinite(reward)) and np.all(np.isfinite(final))
        assert not nan.any(), "the NaN guard fired: the simulation itself went non-finite"
        ended += int(np.sum(np.asarray(state.done) | np.asarray(state.truncation)))
    assert obs.shape == (4,) + env.observation_space.shape and obs.dtype == env.observation_space.dtype
    assert ended > 0, "episodes ended (time limits at most 999 steps)"


@pytest.mark.parametrize("name", ALL)
def test_reset_and_step_states_agree_in_type(name):
    """A stepped state has the reset state's structure, shapes, dtypes and weak types, so `lax.scan` can
    carry it (checked on abstract values: nothing is compiled)."""
    env = batch(name)
    first = jax.eval_shape(env.reset, jax.random.key(0))
    actions = jax.ShapeDtypeStruct((4,) + env.action_space.shape, env.action_space.dtype)
    after = jax.eval_shape(env.step, first, actions)
    kinds = lambda tree: [(x.shape, x.dtype, x.weak_type) for x in jax.tree.leaves(tree)]
    assert jax.tree.structure(first) == jax.tree.structure(after)
    assert kinds(first) == kinds(after)
