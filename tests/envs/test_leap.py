"""The LEAP hand turning a cube (`leap_cube_reorient`): MuJoCo Playground's LeapCubeReorient, stepped batched without
NaN, replayed on MuJoCo C, its goals turning away once reached, and equal to EnvPool's C++ twin: the reset state
exactly (EnvPool's draws replayed, `envpool_rng`), every step's reward terms, reward, success and servo targets
along EnvPool's own trajectory.

EnvPool 1.2.5 bundles MuJoCo 3.6.0, whose contacts between the fingertips' boxes and the cube differ from MuJoCo
4.0.1's (measured here: 0.05 in qpos after one step from a reset where a fingertip starts inside the cube), so the
twins' trajectories part within steps; the task's functions are compared on EnvPool's trajectory instead, and the
physics by the MuJoCo C replay."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from hurtle import envs
from tests.conftest import require_or_skip
from tests.envs import engines, envpool_rng
from tests.envs import envpool_twin as twin

TWIN = "MuJoCoPlayground/LeapCubeReorient-v1"


@pytest.fixture(scope="module")
def task():
    require_or_skip("robots")
    from hurtle.envs.robots.leap import LeapCubeReorient

    return LeapCubeReorient(noise=0.0)


def test_64_worlds_step_1000_random_actions_without_nan():
    """jit and vmap, noise on, random actions with resets, float32 as training runs: finite throughout, no contact
    past Playground's cap of 30 dropped; Playground's 57 and 128 observation values and sixteen actions. 16 worlds x
    200 steps: on this CPU the hand's 2,788 candidate contacts (its 61 geoms) cost ~0.3 s a step of 64 worlds, so
    64 x 1,000 would take five minutes and more (benchmarks/NOTES.md §55)."""
    require_or_skip("robots")
    env = envs.make("leap_cube_reorient")
    assert env.observation_space.shape == (57,) and env.privileged_observation_space.shape == (128,)
    assert env.action_space.shape == (16,)
    out = engines.random_rollout("leap_cube_reorient", 16, 200)
    assert out["finite"] and out["nan_resets"] == 0 and out["dropped"] == 0


def test_a_reached_goal_turns_away(task):
    """With the cube turned to the goal, the step is a success (+100, counted), and the goal starts turning at
    3 + U(-2, 2) rad/s per axis for two control periods (MuJoCo's mju_quatIntegrate, applied here to the mocap
    body); the next step, not a success, slows the turn by 0.8."""
    state = jax.jit(task.reset)(jax.random.key(4))
    step = jax.jit(task.step)
    reached = task.sensor(step(state, jnp.zeros(16)).physics, "cube_orientation")  # where the step turns the cube
    d = state.physics
    aligned = d.replace(mocap_quat=d.mocap_quat.at[task.goal].set(reached))
    after = step(state.replace(physics=aligned), jnp.zeros(16))
    assert float(after.metrics["goals_reached"]) == 1.0 and int(after.info["success_count"]) == 1
    assert float(after.metrics["reward/success"]) == 100.0 and float(after.reward) > 99.0
    spin = np.asarray(after.info["goal_dquat"])
    assert ((spin >= 1.0) & (spin <= 5.0)).all()
    goal = np.asarray(after.physics.mocap_quat[task.goal], np.float64)
    want = np.array(reached, np.float64)
    mujoco.mju_quatIntegrate(want, spin, 2 * task.dt)
    np.testing.assert_allclose(goal, want, atol=1e-12)
    later = step(after, jnp.zeros(16))
    assert float(later.metrics["reward/success"]) == 0.0 and float(later.metrics["goals_reached"]) == 1.0
    np.testing.assert_allclose(later.info["goal_dquat"], 0.8 * spin, rtol=1e-12)
    assert int(later.info["steps_since_last_success"]) == 1


def test_mujoco_c_replays_the_task(task):
    """On MuJoCo C (`MujocoEnv`, float64), the JAX task's observations, privileged observations, reward terms and
    terminations from the same keys, the goals (mocap bodies) placed and turned by the task on both."""
    from hurtle.hostenvs import MujocoEnv

    n, seed = 3, 2
    host = MujocoEnv(task, n, nthread=1)
    obs = host.reset(seed=seed)
    subkeys = jax.vmap(jax.random.split)(jax.random.split(jax.random.PRNGKey(seed), n))[:, 1]
    states = jax.jit(jax.vmap(task.reset))(subkeys)
    close = dict(rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(obs, states.obs, **close)
    np.testing.assert_allclose(host.reset_privileged_obs, states.privileged_obs, **close)
    step = jax.jit(jax.vmap(task.step))
    rng = np.random.default_rng(0)
    for t in range(10):
        action = rng.uniform(-0.3, 0.3, (n, 16))
        out = host.step(action)
        states = step(states, jnp.asarray(action))
        np.testing.assert_allclose(out.final_obs, states.obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.final_privileged_obs, states.privileged_obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.reward, states.reward, **close)
        for key in task.SCALES:
            np.testing.assert_allclose(out.metrics[f"reward/{key}"], states.metrics[f"reward/{key}"], **close)
        assert not out.ended.any()
    host.close()


def test_domain_randomization_on_both_engines(task):
    """Playground's LEAP randomisation: fingertip friction in [0.5, 1], servo gains within 20% (bias following),
    the cube's centre of mass within 5 mm and its inertia within 20%; `MujocoEnv` given the same key holds the same
    variants, and both engines step them alike (MuJoCo reads a free body's mass matrix from `dof_M0`: without the
    variant's own, written by `MujocoEnv`, the cube's randomised inertia moved MuJoCo's qacc by 3 from hurtle's)."""
    n, key = 2, jax.random.key(6)
    models = jax.vmap(task.randomize, in_axes=(None, 0))(task.model, jax.random.split(key, n))
    tip = task.mj.geom("th_tip").id
    assert ((models.geom_friction[:, tip, 0] >= 0.5) & (models.geom_friction[:, tip, 0] <= 1.0)).all()
    gain = np.asarray(models.actuator_gainprm[:, :, 0] / task.model.actuator_gainprm[:, 0])
    assert ((gain >= 0.8) & (gain <= 1.2)).all() and gain.std() > 0.02
    np.testing.assert_array_equal(models.actuator_biasprm[:, :, 1], -models.actuator_gainprm[:, :, 0])
    cube = np.asarray(models.body_ipos[:, task.cube_body] - task.model.body_ipos[task.cube_body])
    assert (np.abs(cube) <= 0.005).all()
    inertia = np.asarray(models.body_inertia[:, task.cube_body] / task.model.body_inertia[task.cube_body])
    assert ((inertia >= 0.8) & (inertia <= 1.2)).all() and np.abs(inertia - 1).max() > 0.02
    engines.randomized_engines_agree(task, key, n)


def _envpool_reset_states(task, seed: int, n: int):
    """hurtle's states at EnvPool's resets of environments 0..n-1 (its draws replayed)."""
    low, high = task.ctrl_low, task.ctrl_high
    draws = [envpool_rng.leap_reset(envpool_rng.StdRandom(seed + i), task.default_pose, low, high) for i in range(n)]
    qpos = np.tile(task.home_qpos, (n, 1))
    for q, r in zip(qpos, draws):
        q[task.hand_qpos] = r["hand"]
        q[task.cube_qpos : task.cube_qpos + 3] = r["cube_pos"]
        q[task.cube_qpos + 3 : task.cube_qpos + 7] = r["cube_quat"]

    @jax.jit
    def with_goal(s, goal):
        d = s.physics.replace(mocap_quat=s.physics.mocap_quat.at[task.goal].set(goal))
        obs, privileged, _ = task._observe(d, s.info)
        return s.replace(physics=d, obs=obs, privileged_obs=privileged)

    starts = twin.starts(task, qpos, ctrl=[r["hand"] for r in draws])
    return [with_goal(s, r["goal"]) for s, r in zip(starts, draws)]


@pytest.mark.parametrize("seed", [0, 7])
def test_reset_equals_envpools(task, seed):
    """EnvPool 1.2.5's reset (envpool_twin.VERSION), its draws replayed: the same observation and privileged
    observation within 1e-9 (the fingers, the cube's pose and the goal, each of four environments)."""
    envpool = twin.envpool_or_skip()
    n = 4
    pool = envpool.make(TWIN, env_type="gymnasium", num_envs=n, seed=seed, noise_level=0.0)
    obs, _ = pool.reset()
    state = twin.stack(_envpool_reset_states(task, seed, n))
    np.testing.assert_allclose(state.obs, obs["state"], atol=1e-9)
    np.testing.assert_allclose(state.privileged_obs, obs["privileged_state"], atol=1e-9)


def test_rewards_equal_envpools_along_its_trajectory(task):
    """Along EnvPool's own trajectory (100 random-action steps, four environments, noise off), hurtle's reward
    terms from what EnvPool observes (the fingers, their velocities, the cube's offset from the palm and its
    rotation from the goal) equal EnvPool's, and so do the success, the reward (with EnvPool's energy term: the
    actuator forces are not observed) and termination; hurtle's servo targets (`control`, from the reset's) equal
    EnvPool's (its observed joints less their errors)."""
    envpool = twin.envpool_or_skip()
    n, dt = 4, task.dt
    pool = envpool.make(TWIN, env_type="gymnasium", num_envs=n, seed=0, noise_level=0.0)
    obs, _ = pool.reset()
    start = twin.stack(_envpool_reset_states(task, 0, n))
    palm = np.asarray(task.sensor(jax.tree.map(lambda x: x[0], start.physics), "palm_position"))
    terms = jax.jit(jax.vmap(task.terms))
    control = jax.jit(jax.vmap(task.control))
    physics, info = start.physics, start.info
    rng = np.random.default_rng(0)
    alive, compared = np.ones(n, bool), 0
    for t in range(100):
        action = rng.uniform(-1.0, 1.0, (n, 16))
        physics = physics.replace(ctrl=control(physics, jnp.asarray(action)))
        obs, reward, terminated, _, got = pool.step(action)
        p = obs["privileged_state"]
        rows = np.zeros((n, 3, 3))
        rows[:, 1:] = p[:, 104:110].reshape(n, 2, 3)
        rows[:, 0] = np.cross(rows[:, 1], rows[:, 2])
        quat = np.zeros((n, 4))
        for i in range(n):
            mujoco.mju_mat2Quat(quat[i], rows[i].ravel())
        r = {
            "cube_pos": jnp.asarray(palm - p[:, 101:104]),
            "palm": jnp.asarray(np.broadcast_to(palm, (n, 3))),
            "cube_quat": jnp.asarray(quat),
            "goal": jnp.asarray(np.broadcast_to([1.0, 0.0, 0.0, 0.0], (n, 4))),
        }
        q, qvel = jnp.asarray(p[:, 57:73]), jnp.asarray(p[:, 73:89])
        raw, _, done = terms(r, q, qvel, jnp.zeros((n, 16)), jnp.asarray(action), info)
        where, a = f"step {t}", alive
        np.testing.assert_allclose(np.asarray(physics.ctrl)[a], (p[:, :16] - p[:, 16:32])[a], atol=1e-12, err_msg=where)
        scaled = {k: np.asarray(v) * task.scales[k] for k, v in raw.items()}
        for key in task.SCALES:
            if key in ("energy", "success"):
                continue
            np.testing.assert_allclose(scaled[key][a], got[f"reward_{key}"][a], atol=1e-9, err_msg=f"{key}, {where}")
        np.testing.assert_array_equal(np.asarray(raw["success"])[a], got["reward_success"][a], err_msg=where)
        scaled["energy"] = got["reward_energy"]
        total = sum(v for k, v in scaled.items() if k != "success") * dt + scaled["success"]
        np.testing.assert_allclose(total[a], reward[a], atol=1e-5, err_msg=where)  # EnvPool's reward is a float32
        np.testing.assert_array_equal(np.asarray(done)[a], terminated[a], err_msg=where)
        compared += int(a.sum())
        alive = alive & ~terminated
        info = {**info, "last_last_act": info["last_act"], "last_act": jnp.asarray(action)}
    assert compared >= 250
