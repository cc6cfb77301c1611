"""Franka's Panda picking a cube (`panda_pick_cube`): MuJoCo Playground's PandaPickCube, stepped batched without
NaN, replayed on MuJoCo C, equal to EnvPool's C++ twin, and its sticky "reached" and success measure checked from a
grasping pose."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle import envs
from tests.conftest import require_or_skip
from tests.envs import engines
from tests.envs import envpool_twin as twin

TWIN = "MuJoCoPlayground/PandaPickCube-v1"


@pytest.fixture(scope="module")
def task():
    require_or_skip("robots")
    from hurtle.envs.robots.panda import PandaPickCube

    return PandaPickCube()


def test_64_worlds_step_1000_random_actions_without_nan():
    """jit and vmap over 64 worlds, random actions for 1,000 steps (over six episodes of 150, the time limit
    restarting them), float32 as training runs: finite throughout; Playground's 66 observation values and eight
    actions."""
    require_or_skip("robots")
    env = envs.make("panda_pick_cube")
    assert env.observation_space.shape == (66,) and env.action_space.shape == (8,)
    assert env.privileged_observation_space is None
    out = engines.random_rollout("panda_pick_cube", 64, 1000)
    assert out["finite"] and out["nan_resets"] == 0 and out["ended"] >= 6 * 64


def test_reached_is_kept_and_success_is_within_two_centimetres(task):
    """At Playground's "pickup" keyframe's arm pose (the open fingers around the cube) with the cube moved to the
    gripper's point, the gripper within 12 mm of the cube sets "reached", which stays set after the arm lifts away;
    box_target then follows its formula (hand-computed here from the state); success is the cube within 2 cm of the
    target."""
    import mujoco

    key = task.mj.keyframe("pickup")
    d = mujoco.MjData(task.mj)
    d.qpos[:] = key.qpos
    mujoco.mj_kinematics(task.mj, d)
    qpos = key.qpos.copy()
    qpos[task.box_qpos : task.box_qpos + 3] = d.site_xpos[task.gripper]  # 15 mm up: it falls 2 mm in a step
    start = jax.jit(lambda q, c, k: task.begin(task.reset_to(q, ctrl=c), k))(qpos, key.ctrl, jax.random.key(0))
    step = jax.jit(task.step)
    state = step(start, jnp.zeros(8))
    assert float(state.info["reached_box"]) == 1.0
    d = state.physics
    box, target = np.asarray(d.xpos[task.box_body]), np.asarray(d.mocap_pos[task.target])
    turn = np.linalg.norm(np.eye(3).ravel()[:6] - np.asarray(d.xmat[task.box_body]).ravel()[:6])
    want = 8.0 * (1 - np.tanh(5 * (0.9 * np.linalg.norm(target - box) + 0.1 * turn)))
    np.testing.assert_allclose(float(state.metrics["reward/box_target"]), want, rtol=1e-12)
    for _ in range(5):  # lift the arm (joint 2 back): the gripper leaves the cube; "reached" stays
        state = step(state, jnp.zeros(8).at[1].set(-1.0))
    gripper = np.asarray(state.physics.site_xpos[task.gripper])
    assert np.linalg.norm(gripper - np.asarray(state.physics.xpos[task.box_body])) > 0.012
    assert float(state.info["reached_box"]) == 1.0 and float(state.metrics["reward/box_target"]) > 0
    assert float(state.metrics["success"]) == 0.0  # the target is 20-40 cm above the table
    d = state.physics
    placed = d.replace(mocap_pos=d.mocap_pos.at[task.target].set(d.xpos[task.box_body] + jnp.array([0.0, 0.0, 0.019])))
    assert float(step(state.replace(physics=placed), jnp.zeros(8)).metrics["success"]) == 1.0
    assert float(jax.jit(task.reset)(jax.random.key(1)).info["reached_box"]) == 0.0  # unset at each episode's start


def test_mujoco_c_replays_the_task(task):
    """On MuJoCo C (`MujocoEnv`, float64), the JAX task's observations, reward terms and terminations from the same
    keys, the targets (mocap bodies) placed by the task on both."""
    from hurtle.hostenvs import MujocoEnv

    n, seed = 3, 2
    host = MujocoEnv(task, n, nthread=1)
    obs = host.reset(seed=seed)
    subkeys = jax.vmap(jax.random.split)(jax.random.split(jax.random.PRNGKey(seed), n))[:, 1]
    states = jax.jit(jax.vmap(task.reset))(subkeys)
    close = dict(rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(obs, states.obs, **close)
    step = jax.jit(jax.vmap(task.step))
    rng = np.random.default_rng(0)
    for t in range(20):
        action = rng.uniform(-1, 1, (n, 8))
        out = host.step(action)
        states = step(states, jnp.asarray(action))
        np.testing.assert_allclose(out.final_obs, states.obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.reward, states.reward, **close)
        for key in task.SCALES:
            np.testing.assert_allclose(out.metrics[f"reward/{key}"], states.metrics[f"reward/{key}"], **close)
        assert not out.ended.any()
    host.close()


def test_equals_envpools_twin(task):
    """EnvPool 1.2.5's C++ PandaPickCube (envpool_twin.VERSION): from EnvPool's reset states (the cube's pose and
    the joints read from the observation, the target from the cube's offset to it), the same random actions give
    the same observation, reward terms (EnvPool's unscaled), reward (EnvPool's a float32) and termination within
    1e-5 over a whole episode (150 steps, its time limit)."""
    envpool = twin.envpool_or_skip()
    n = 4
    pool = envpool.make(TWIN, env_type="gymnasium", num_envs=n, seed=0)
    obs, info = pool.reset()

    @jax.jit
    def at_target(s, target):
        d = s.physics.replace(mocap_pos=s.physics.mocap_pos.at[task.target].set(target))
        return s.replace(physics=d, obs=task.observation(d))

    starts = twin.starts(task, obs[:, :16], obs[:, 16:31], np.tile(task.home_ctrl, (n, 1)))
    # the target from the cube: the cube's position plus its offset to the target
    state = twin.stack([at_target(s, o[49:52] + o[9:12]) for s, o in zip(starts, obs)])
    np.testing.assert_allclose(state.obs, obs, atol=1e-9)
    assert twin.compare(task, pool, state, info, 150, 1.0, raw_terms=True) == 150 * n
