"""Gymnasium's MuJoCo v5 arm and 3-D locomotion tasks (reacher, ant, humanoid, humanoidstandup, pusher)
against Gymnasium itself: hurtle's model files compile to the same MjModel as Gymnasium's, and on
Gymnasium's model file the task reproduces Gymnasium's observations, rewards (term by term) and
terminations step by step.

Each task's step is compiled once, as `jit(vmap(step))` on a batch of `BATCH`, and shared by the parity
and the random-rollout tests (one episode each).
"""

from __future__ import annotations

import functools
import inspect
import os

import gymnasium
import gymnasium.envs.mujoco
import jax
import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
import hurtle.physics as hp
from hurtle.envs.locomotion.ant import Ant
from hurtle.envs.locomotion.humanoid import Humanoid
from hurtle.envs.locomotion.humanoidstandup import HumanoidStandup
from hurtle.envs.manipulation.pusher import Pusher
from hurtle.envs.manipulation.reacher import Reacher

GYM_ASSETS = os.path.join(os.path.dirname(gymnasium.envs.mujoco.__file__), "assets")
BATCH = 2  # small: the 1,000-step rollouts' time grows with it on CPU
# observations, rewards and reward terms against Gymnasium over PARITY_STEPS steps, in float64
PARITY_TOL = 1e-5
PARITY_STEPS = 5
# compiled MjModel fields of hurtle's model file against Gymnasium's (both compiled by MuJoCo)
MODEL_TOL = 1e-12

# tasks whose parity steps must include contact forces (cfrc_ext), and how far to lower the root (qpos[2])
# from Gymnasium's reset for that (the humanoid's feet start 0.1 m above the floor)
CONTACT_TASKS = ("ant", "humanoid", "humanoidstandup")
PARITY_DROP = {"humanoid": 0.11}

# name: (task class, Gymnasium id, Gymnasium's model file, Gymnasium's time limit)
TASKS = {
    "reacher": (Reacher, "Reacher-v5", "reacher.xml", 50),
    "ant": (Ant, "Ant-v5", "ant.xml", 1000),
    "humanoid": (Humanoid, "Humanoid-v5", "humanoid.xml", 1000),
    "humanoidstandup": (HumanoidStandup, "HumanoidStandup-v5", "humanoidstandup.xml", 1000),
    "pusher": (Pusher, "Pusher-v5", "pusher_v5.xml", 100),
}
# the humanoids' step takes about a minute to compile on 2 cores
MARKS = {"humanoid": pytest.mark.slow, "humanoidstandup": pytest.mark.slow}
HURTLE_TASKS = [pytest.param(name, marks=MARKS.get(name, ())) for name in TASKS]

MODEL_FIELDS = (
    "body_parentid body_jntnum body_dofnum body_geomnum body_pos body_quat body_ipos body_iquat body_mass "
    "body_inertia jnt_type jnt_bodyid jnt_qposadr jnt_dofadr jnt_pos jnt_axis jnt_limited jnt_range "
    "jnt_stiffness jnt_margin jnt_solref jnt_solimp qpos0 qpos_spring dof_damping dof_armature "
    "dof_frictionloss geom_type geom_bodyid geom_size geom_pos geom_quat geom_contype geom_conaffinity "
    "geom_condim geom_friction geom_margin geom_gap geom_solref geom_solimp geom_priority actuator_trntype "
    "actuator_trnid actuator_gear actuator_ctrllimited actuator_ctrlrange actuator_forcelimited "
    "actuator_gainprm actuator_biasprm tendon_num wrap_objid wrap_prm tendon_stiffness tendon_damping "
    "tendon_limited tendon_range geom_user"
).split()
MODEL_SIZES = "nq nv nu nbody njnt ngeom nsite ntendon neq nkey nuser_geom".split()
OPTIONS = "timestep gravity integrator iterations solver cone impratio tolerance wind density viscosity".split()
NAMED = {"body": "nbody", "joint": "njnt", "geom": "ngeom", "actuator": "nu", "tendon": "ntendon"}


def gym_xml(name: str) -> str:
    return os.path.join(GYM_ASSETS, TASKS[name][2])


@functools.cache
def task(name: str) -> envs.PhysicsEnv:
    """The hurtle task on Gymnasium's own model file."""
    return TASKS[name][0](xml=gym_xml(name))


@functools.cache
def batch_step(name: str):
    """The task's step, vmapped over a batch and jitted (compiled once per task for every test)."""
    return jax.jit(jax.vmap(task(name).step))


@functools.cache
def batch_reset_to(name: str):
    return jax.jit(jax.vmap(task(name).reset_to))


@functools.cache
def reset_states(name: str, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """`n` initial (qpos, qvel) drawn by the task's `reset_state`."""
    qpos, qvel = jax.jit(jax.vmap(task(name).reset_state))(jax.random.split(jax.random.key(4), n))
    return np.asarray(qpos), np.asarray(qvel)


def gym_env(name: str) -> gymnasium.Env:
    """Gymnasium's task, its solver set to Newton at tolerance 1e-12 (hurtle solves with Newton)."""
    env = gymnasium.make(TASKS[name][1])
    env.unwrapped.model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    env.unwrapped.model.opt.tolerance = 1e-12
    return env


def world0(tree):
    return jax.tree.map(lambda x: np.asarray(x[0]), tree)


def tile(x) -> np.ndarray:
    return np.tile(np.asarray(x), (BATCH,) + (1,) * np.ndim(x))


@pytest.mark.parametrize("name", TASKS)
def test_model_file_compiles_as_gymnasiums(name):
    cls = TASKS[name][0]
    path = os.path.join(os.path.dirname(inspect.getfile(cls)), cls.xml_path)
    ours, theirs = mujoco.MjModel.from_xml_path(path), mujoco.MjModel.from_xml_path(gym_xml(name))
    for field in MODEL_SIZES:
        assert getattr(ours, field) == getattr(theirs, field), field
    for field in MODEL_FIELDS:
        np.testing.assert_allclose(getattr(ours, field), getattr(theirs, field), rtol=0, atol=MODEL_TOL, err_msg=field)
    for field in OPTIONS:
        np.testing.assert_array_equal(getattr(ours.opt, field), getattr(theirs.opt, field), err_msg=f"opt.{field}")
    for kind, size in NAMED.items():
        obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
        names = [[mujoco.mj_id2name(m, obj, i) for i in range(getattr(m, size))] for m in (ours, theirs)]
        assert names[0] == names[1], f"{kind} names"


@pytest.mark.parametrize("name", HURTLE_TASKS)
def test_registered_with_gymnasiums_time_limit(name):
    # hurtle loads its own file and builds the task on it
    assert TASKS[name][0]().observation_space == task(name).observation_space
    env = envs.make(name)
    assert isinstance(env.unwrapped, TASKS[name][0]) and env.episode_length == TASKS[name][3]
    assert gymnasium.spec(TASKS[name][1]).max_episode_steps == TASKS[name][3]


@pytest.mark.parametrize("name", HURTLE_TASKS)
def test_steps_match_gymnasium(name):
    genv = gym_env(name)
    rng = np.random.default_rng(0)
    obs, _ = genv.reset(seed=3)
    data = genv.unwrapped.data
    if name in PARITY_DROP:
        genv.unwrapped.set_state(data.qpos - PARITY_DROP[name] * np.eye(len(data.qpos))[2], data.qvel.copy())
        obs = genv.unwrapped._get_obs()
    state = batch_reset_to(name)(tile(data.qpos), tile(data.qvel))
    np.testing.assert_allclose(world0(state.obs), obs, rtol=0, atol=PARITY_TOL, err_msg="observation at reset")
    space, touched = genv.action_space, False
    for t in range(PARITY_STEPS):
        action = rng.uniform(space.low, space.high)
        obs, reward, terminated, _, info = genv.step(action)
        state = batch_step(name)(state, tile(action))
        here = world0(state)
        np.testing.assert_allclose(here.obs, obs, rtol=0, atol=PARITY_TOL, err_msg=f"observation, step {t}")
        np.testing.assert_allclose(here.reward, reward, rtol=0, atol=PARITY_TOL, err_msg=f"reward, step {t}")
        assert bool(here.done) == terminated, f"terminated, step {t}"
        touched |= bool(np.any(data.cfrc_ext != 0.0))
        reported = {k.removeprefix("reward_") for k in info if k.startswith("reward_")}
        terms = {k.removeprefix("reward/") for k in here.metrics if k.startswith("reward/")}
        assert reported <= terms, f"Gymnasium reports reward terms {reported - terms} the task lacks"
        for term in reported:
            got = here.metrics[f"reward/{term}"]
            np.testing.assert_allclose(
                got, info[f"reward_{term}"], rtol=0, atol=PARITY_TOL, err_msg=f"{term}, step {t}"
            )

    assert touched or name not in CONTACT_TASKS, "no contact force during the parity steps"


@pytest.mark.parametrize("name", HURTLE_TASKS)
def test_random_rollout_stays_finite(name):
    env, step = task(name), batch_step(name)
    steps = TASKS[name][3]  # one episode: Gymnasium's time limit (1,000 steps; pusher 100, reacher 50)
    rng = np.random.default_rng(1)
    qpos, qvel = reset_states(name)
    state = batch_reset_to(name)(qpos[:BATCH], qvel[:BATCH])
    space = env.action_space
    for _ in range(steps):
        state = step(state, rng.uniform(space.low, space.high, (BATCH,) + space.shape))
    finite = [np.all(np.isfinite(x)) for x in jax.tree.leaves((state.obs, state.reward, state.physics.qpos))]
    assert all(finite), "NaN or inf after the rollout"
    assert float(state.physics.time[0]) == pytest.approx(steps * env.dt)


def check_reacher_reset(qpos, qvel, qpos0):
    assert np.all(np.abs(qpos[:, :2] - qpos0[:2]) <= 0.1) and np.all(np.abs(qvel[:, :2]) <= 0.005)
    goal = np.linalg.norm(qpos[:, 2:], axis=1)
    assert np.all(goal < 0.2) and goal.max() > 0.18, "target uniform on the disc of radius 0.2"
    assert np.all(qvel[:, 2:] == 0.0), "target at rest"


def check_ant_reset(qpos, qvel, qpos0):
    noise = qpos - qpos0
    assert np.all(np.abs(noise) <= 0.1) and np.abs(noise).max() > 0.09, "qpos noise U(-0.1, 0.1)"
    assert abs(qvel.mean()) < 0.01 and 0.09 < qvel.std() < 0.11, "qvel noise N(0, 0.1^2)"


def check_humanoid_reset(qpos, qvel, qpos0):
    for noise in (qpos - qpos0, qvel):
        assert np.all(np.abs(noise) <= 0.01) and np.abs(noise).max() > 0.009, "noise U(-0.01, 0.01)"


def check_pusher_reset(qpos, qvel, qpos0):
    assert np.all(qpos[:, :7] == qpos0[:7]) and np.all(np.abs(qvel[:, :7]) <= 0.005), "arm at qpos0, slow"
    obj = qpos[:, 7:9]  # the object's slides, y then x
    assert np.all((obj >= [-0.3, -0.2]) & (obj <= [0.0, 0.2])), "object in its box"
    assert np.all(np.linalg.norm(obj, axis=1) > 0.17), "object more than 0.17 from the goal"
    assert np.all(qpos[:, 9:] == 0.0) and np.all(qvel[:, 7:] == 0.0), "goal at the origin, both at rest"


RESET_CHECKS = {
    "reacher": check_reacher_reset,
    "ant": check_ant_reset,
    "humanoid": check_humanoid_reset,
    "humanoidstandup": check_humanoid_reset,
    "pusher": check_pusher_reset,
}


@pytest.mark.parametrize("name", HURTLE_TASKS)
def test_reset_state_distribution(name):
    qpos, qvel = reset_states(name)
    assert len({tuple(q) for q in qpos}) == len(qpos), "every key gives another start"
    RESET_CHECKS[name](qpos, qvel, np.asarray(task(name).model.qpos0))


# torso heights around each healthy range's bounds (Ant's bounds are healthy, Humanoid's are not)
HEIGHTS = {"ant": (0.15, 0.2, 0.5, 1.0, 1.05), "humanoid": (0.95, 1.0, 1.5, 2.0, 2.05)}


@pytest.mark.parametrize("name", HEIGHTS)
def test_termination_matches_gymnasiums_health(name):
    genv, cls = gym_env(name), TASKS[name][0]
    genv.reset(seed=0)
    data = genv.unwrapped.data
    env, immortal = cls(xml=gym_xml(name)), cls(xml=gym_xml(name), terminate_when_unhealthy=False)
    qvels = [data.qvel.copy()] + ([np.full_like(data.qvel, np.nan)] if name == "ant" else [])
    for z in HEIGHTS[name]:
        for qvel in qvels:
            data.qpos[2], data.qvel[:] = z, qvel
            ours = hp.make_data(env.model).replace(qpos=np.array(data.qpos), qvel=np.array(data.qvel))
            assert bool(env.terminated(ours)) == (not genv.unwrapped.is_healthy), f"z={z}, qvel {qvel[0]}"
            assert not bool(immortal.terminated(ours))


def _pusher_touching(genv, rng, tries: int = 4000):
    """A pusher state (qpos, qvel) whose wrist capsules press on the object (two or more capsule-cylinder
    contacts), found by MuJoCo over random arm poses."""
    m, d = genv.unwrapped.model, genv.unwrapped.data
    obj = m.body("object").id
    wrist = [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body("r_wrist_roll_link").id]
    for _ in range(tries):
        d.qpos[:] = 0
        d.qpos[:7] = rng.uniform(m.jnt_range[:7, 0], m.jnt_range[:7, 1])
        mujoco.mj_kinematics(m, d)
        g = rng.choice(wrist)
        if abs(d.geom_xpos[g, 2] - m.body_pos[obj, 2]) > 0.05:
            continue
        # the object's centre beside the capsule, just inside touching distance
        offset = rng.standard_normal(2)
        reach = m.geom_size[g, 0] + m.geom_size[m.body_geomadr[obj], 0] - 0.004
        d.qpos[7:9] = (d.geom_xpos[g, 1::-1] - m.body_pos[obj, 1::-1]) + reach * offset[::-1] / np.linalg.norm(offset)
        mujoco.mj_forward(m, d)
        pairs = [(c.geom1, c.geom2) for c in d.contact[: d.ncon]]
        on_object = [p for p in pairs if m.body_geomadr[obj] in p and set(p) & set(wrist)]
        if len(on_object) >= 2 and all(c.dist > -0.01 for c in d.contact[: d.ncon]):
            return d.qpos.copy(), 0.1 * rng.standard_normal(m.nv)
    raise AssertionError("no touching pose found")


@pytest.mark.xdist_group("envs/test_locomotion_b:pusher")  # pusher's compiled step, with its other tests
def test_pusher_pushing_matches_gymnasium():
    """Pusher's arm pressing on the object (capsule-cylinder contacts, under MuJoCo's default multiccd):
    the same observations and rewards as Gymnasium for the parity steps."""
    genv = gym_env("pusher")
    genv.reset(seed=0)
    rng = np.random.default_rng(0)
    space = genv.action_space
    for _ in range(2):
        qpos, qvel = _pusher_touching(genv, rng)
        genv.unwrapped.set_state(qpos, qvel)
        state = batch_reset_to("pusher")(tile(qpos), tile(qvel))
        np.testing.assert_allclose(world0(state.obs), genv.unwrapped._get_obs(), rtol=0, atol=PARITY_TOL)
        for t in range(PARITY_STEPS):
            action = rng.uniform(space.low, space.high)
            obs, reward, *_ = genv.step(action)
            state = batch_step("pusher")(state, tile(action))
            here = world0(state)
            np.testing.assert_allclose(here.obs, obs, rtol=0, atol=PARITY_TOL, err_msg=f"observation, step {t}")
            np.testing.assert_allclose(here.reward, reward, rtol=0, atol=PARITY_TOL, err_msg=f"reward, step {t}")
