"""Classic control against Gymnasium: the same transition from the same state under the same action.

Transitions come from Gymnasium trajectories under random actions (re-synced after a termination)
plus random states over the whole state space (so that wrapping, clipping and termination are hit).
hurtle steps each one from `reset_to(state)`, all at once under `vmap`, in float64. Then whole
trajectories, re-synced only after terminations. Gymnasium computes a continuous task's torque in the
action's dtype, so both sides get float64 actions.
"""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.envs.classic import CartPole
from tests.envs.conftest import CLASSIC, JIT_RESET, JIT_STEP, task

GYM_IDS = {
    "cartpole": "CartPole-v1",
    "pendulum": "Pendulum-v1",
    "acrobot": "Acrobot-v1",
    "mountain_car_continuous": "MountainCarContinuous-v0",
}
# hurtle vs Gymnasium state after one step, both float64: only the rounding of cos/sin (and of a
# fused multiply-add) may differ, a few float64 ulps amplified by at most one RK4 step
STATE_RTOL_F64 = STATE_ATOL_F64 = 1e-12
# MountainCarContinuous stores its state in float32 (and forms 3 * position in float32 before the cosine):
# one float32 rounding of the state relative, plus 1e-9 absolute for the cosine's argument
MOUNTAIN_CAR_RTOL, MOUNTAIN_CAR_ATOL = 2.0**-23, 1e-9
# Gymnasium returns float32 observations: hurtle's float64 observation rounded to float32 may land one
# float32 ulp away when the float64 values straddle a rounding boundary (two for MountainCar)
OBS_ULPS = {"mountain_car_continuous": 8}


def random_states(name, rng, n):
    """States spread over each task's reachable range (and just beyond, for wrapping and clipping)."""
    u = lambda *hi: rng.uniform(-np.array(hi), np.array(hi), (n, len(hi)))
    if name == "cartpole":
        return u(2.5, 2.0, 0.22, 3.0)
    if name == "pendulum":
        return u(3 * np.pi, 8.0)
    if name == "acrobot":
        return u(np.pi, np.pi, 4 * np.pi, 9 * np.pi)
    # mountain car: from the left wall to past the goal
    return np.stack([rng.uniform(-1.2, 0.6, n), rng.uniform(-0.07, 0.07, n)], axis=1)


def gym_transitions(name, n_traj=200, n_random=200, seed=0):
    """(state, action, obs, reward, terminated, next state) of Gymnasium steps."""
    g = gymnasium.make(GYM_IDS[name]).unwrapped
    g.reset(seed=seed)
    g.action_space.seed(seed)
    rng = np.random.default_rng(seed)
    starts = [None] * n_traj + list(random_states(name, rng, n_random))
    rows = []
    for start in starts:
        if start is not None:
            g.state = np.array(start, np.float64)
        s = np.array(g.state, np.float64)
        a = g.action_space.sample()
        a = a.astype(np.float64) if isinstance(a, np.ndarray) else a
        obs, reward, terminated, _, _ = g.step(a)
        rows.append((s, np.asarray(a), obs, float(reward), terminated, np.array(g.state, np.float64)))
        if terminated:
            g.reset()
    return [np.stack(col) for col in zip(*rows)]


def _ulps(a32, b32):
    """Distance in float32 units in the last place (same-sign values)."""
    return np.abs(a32.view(np.int32).astype(np.int64) - b32.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("name", CLASSIC)
def test_transitions_match_gymnasium(name):
    env = task(name)
    s0, actions, obs, reward, terminated, s1 = gym_transitions(name)
    out = jax.jit(jax.vmap(lambda s, a: env.step(env.reset_to(s), a)))(s0, actions)
    state = np.asarray(out.info["state"])
    if name == "mountain_car_continuous":
        np.testing.assert_allclose(state, s1, rtol=MOUNTAIN_CAR_RTOL, atol=MOUNTAIN_CAR_ATOL, err_msg="state")
    else:
        np.testing.assert_allclose(state, s1, rtol=STATE_RTOL_F64, atol=STATE_ATOL_F64, err_msg="state")
    ours32 = np.asarray(out.obs).astype(np.float32)
    same_sign = np.sign(ours32) == np.sign(obs)
    assert np.all(same_sign | (np.abs(ours32 - obs) < 1e-30)), "obs signs"
    assert _ulps(ours32, obs)[same_sign].max() <= OBS_ULPS.get(name, 1), "obs"
    np.testing.assert_allclose(np.asarray(out.reward), reward, rtol=0, atol=1e-12, err_msg="reward")
    np.testing.assert_array_equal(np.asarray(out.done), terminated, err_msg="terminated")
    if name in ("cartpole", "acrobot", "mountain_car_continuous"):
        assert terminated.any(), "the transitions include terminations"


# 200 steps from the same start under the same actions, re-synced only after a termination: the float64
# tasks stay within rounding (observed 5e-14); MountainCar's float32 state in Gymnasium drifts (observed 2e-7)
TRAJECTORY_TOL = {"mountain_car_continuous": 1e-6}


@pytest.mark.parametrize("name", CLASSIC)
def test_trajectories_match_gymnasium(name):
    env = task(name)
    g = gymnasium.make(GYM_IDS[name]).unwrapped
    g.reset(seed=1)
    g.action_space.seed(1)
    state = env.reset_to(np.array(g.state, np.float64))
    for _ in range(200):
        a = g.action_space.sample()
        a = a.astype(np.float64) if isinstance(a, np.ndarray) else a
        _, reward, terminated, _, _ = g.step(a)
        state = JIT_STEP(env, state, a)
        assert bool(state.done) == terminated
        np.testing.assert_allclose(float(state.reward), reward, rtol=1e-12)
        ours, theirs = np.asarray(state.info["state"]), np.array(g.state, np.float64)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=TRAJECTORY_TOL.get(name, 1e-10))
        if terminated:
            g.reset()
            state = env.reset_to(np.array(g.state, np.float64))


RESET_BOUNDS = {
    "cartpole": [0.05] * 4,
    "pendulum": [np.pi, 1.0],
    "acrobot": [0.1] * 4,
    "mountain_car_continuous": None,
}


@pytest.mark.parametrize("name", CLASSIC)
def test_reset_distribution(name):
    env = task(name)
    s = np.asarray(jax.vmap(env.reset)(jax.random.split(jax.random.key(1), 512)).info["state"])
    if name == "mountain_car_continuous":
        assert np.all((s[:, 0] >= -0.6) & (s[:, 0] <= -0.4)) and np.all(s[:, 1] == 0)
        return
    high = np.array(RESET_BOUNDS[name])
    assert np.all(np.abs(s) <= high)
    assert np.all(s.max(0) > 0.9 * high) and np.all(s.min(0) < -0.9 * high), "uniform over the whole range"


def test_float32_mode():
    """Without x64 every task runs in float32, as Gymnasium's observations are."""
    classes = [type(task(name)) for name in CLASSIC]  # the cached tasks stay float64
    with jax.enable_x64(False):
        for name, cls in zip(CLASSIC, classes):
            env = cls()
            assert env.observation_space.dtype == np.float32
            state = JIT_RESET(env, jax.random.key(0))
            state = JIT_STEP(env, state, env.action_space.sample(jax.random.key(1)))
            assert state.obs.dtype == jnp.float32 and state.reward.dtype == jnp.float32, name
            assert state.done.dtype == jnp.bool_ and np.all(np.isfinite(state.obs)), name


def test_actions_are_checked():
    with pytest.raises(ValueError, match=r"expected \(1,\)"):
        task("pendulum").step(task("pendulum").reset_to([0.0, 0.0]), jnp.zeros(2))
    with pytest.raises(ValueError, match="integer scalar"):
        task("cartpole").step(task("cartpole").reset_to(np.zeros(4)), jnp.ones(()))
    with pytest.raises(ValueError, match=r"expected \(4,\)"):
        task("acrobot").reset_to(np.zeros(3))
    # any integer dtype is a discrete action: +1 torque accelerates the elbow positively from rest
    for dtype in (jnp.int8, jnp.uint8, jnp.int32, jnp.int64):
        state = task("acrobot").step(task("acrobot").reset_to(np.zeros(4)), jnp.asarray(2, dtype))
        assert np.asarray(state.info["state"])[3] > 0, dtype


def test_cartpole_sutton_barto_reward():
    env = CartPole(sutton_barto_reward=True)
    alive = env.step(env.reset_to(np.zeros(4)), 1)
    falling = env.step(env.reset_to(np.array([0.0, 0.0, 0.2094, 1.0])), 1)
    assert float(alive.reward) == 0.0 and not alive.done
    assert float(falling.reward) == -1.0 and falling.done
