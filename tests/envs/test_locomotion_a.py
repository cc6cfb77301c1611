"""Gymnasium's MuJoCo v5 tasks on hurtle's physics (worker A's share of the locomotion suite): hurtle's model
files against Gymnasium's, observations/rewards/terminations against Gymnasium's envs step by step, and long
random rollouts without NaN.

Each task's batched step is compiled once (`compiled`) and shared by the parity and the rollout tests; the
model is an argument, so the rollout runs hurtle's own model file through the same program.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import gymnasium
import jax
import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
from hurtle.envs.locomotion.half_cheetah import HalfCheetah
from hurtle.envs.locomotion.hopper import Hopper
from hurtle.envs.locomotion.inverted_double_pendulum import InvertedDoublePendulum
from hurtle.envs.locomotion.inverted_pendulum import InvertedPendulum
from hurtle.envs.locomotion.swimmer import Swimmer
from hurtle.envs.locomotion.walker2d import Walker2d

GYM_ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
OWN_ASSETS = os.path.join(os.path.dirname(envs.__file__), "locomotion", "assets")

# float64 hurtle vs MuJoCo C (Newton, tolerance 1e-12) over a few steps: the engine's own parity is ~1e-10
PARITY_TOL = 1e-5
PARITY_STEPS = 30  # long enough for Hopper and Walker2d to reach the floor, and for several tasks to terminate
ROLLOUT_STEPS = 1000
BATCH = 8


@dataclasses.dataclass(frozen=True)
class Spec:
    cls: type
    gym_id: str
    gym_xml: str  # Gymnasium's model file
    own_xml: str  # hurtle's
    terms: tuple[tuple[str, str], ...]  # (hurtle reward term, Gymnasium info key)
    qvel_noise: str  # the reset's velocity noise: "uniform" or "normal"
    options: tuple[str, ...] = ()  # boolean options that change the observation
    episode_length: int = 1000


RUNNER_TERMS = (("forward", "reward_forward"), ("ctrl", "reward_ctrl"))
WALKER_TERMS = RUNNER_TERMS + (("survive", "reward_survive"),)

EXCL = ("exclude_current_positions_from_observation",)

SPECS = {
    "inverted_pendulum": Spec(
        InvertedPendulum,
        "InvertedPendulum-v5",
        "inverted_pendulum.xml",
        "inverted_pendulum.xml",
        (("survive", "reward_survive"),),
        "uniform",
    ),
    "inverted_double_pendulum": Spec(
        InvertedDoublePendulum,
        "InvertedDoublePendulum-v5",
        "inverted_double_pendulum.xml",
        "inverted_double_pendulum.xml",
        (
            ("survive", "reward_survive"),
            ("distance_penalty", "distance_penalty"),
            ("velocity_penalty", "velocity_penalty"),
        ),
        "normal",
    ),
    "halfcheetah": Spec(
        HalfCheetah, "HalfCheetah-v5", "half_cheetah.xml", "half_cheetah.xml", RUNNER_TERMS, "normal", EXCL
    ),
    "hopper": Spec(Hopper, "Hopper-v5", "hopper.xml", "hopper.xml", WALKER_TERMS, "uniform", EXCL),
    "walker2d": Spec(Walker2d, "Walker2d-v5", "walker2d_v5.xml", "walker2d.xml", WALKER_TERMS, "uniform", EXCL),
    "swimmer": Spec(Swimmer, "Swimmer-v5", "swimmer.xml", "swimmer.xml", RUNNER_TERMS, "uniform", EXCL),
}

# MjModel fields that define the physics (geom_size after fromto, masses and inertias after inertiafromgeom)
MODEL_FIELDS = (
    "nq nv nu na nbody njnt ngeom nsite opt.timestep opt.gravity opt.integrator opt.density opt.viscosity "
    "opt.solver opt.iterations opt.tolerance opt.cone "
    "body_parentid body_pos body_quat body_ipos body_iquat body_mass body_inertia "
    "jnt_type jnt_bodyid jnt_pos jnt_axis jnt_range jnt_limited jnt_stiffness jnt_margin jnt_solref jnt_solimp "
    "qpos0 qpos_spring dof_damping dof_armature dof_frictionloss "
    "geom_type geom_bodyid geom_size geom_pos geom_quat geom_friction geom_contype geom_conaffinity geom_condim "
    "geom_solref geom_solimp geom_margin geom_gap site_bodyid site_pos site_quat "
    "actuator_trntype actuator_trnid actuator_gear actuator_ctrllimited actuator_ctrlrange actuator_forcerange "
    "actuator_gainprm actuator_biasprm"
).split()
NAMED = ("body", "joint", "geom", "site", "actuator")


def mj_field(m: mujoco.MjModel, name: str) -> np.ndarray:
    obj = m
    for part in name.split("."):
        obj = getattr(obj, part)
    return np.asarray(obj)


@functools.cache
def task(name: str) -> envs.PhysicsEnv:
    """The task on Gymnasium's model file (the one parity needs); the rollouts swap in hurtle's model."""
    spec = SPECS[name]
    return spec.cls(xml=os.path.join(GYM_ASSETS, spec.gym_xml))


@functools.cache
def own_model(name: str):
    """hurtle's own model of the task, in the structure of `task(name).model` (only the file name differs)."""
    registered = envs.make(name).unwrapped
    assert isinstance(registered, SPECS[name].cls)
    return registered.model.replace(source=task(name).model.source)


@functools.cache
def compiled(name: str):
    """`(reset_to, step)` of a batch, jitted once per task, with the physics model as an argument."""
    env = task(name)
    reset_to = jax.jit(jax.vmap(lambda m, q, v: env.with_model(m).reset_to(q, v), in_axes=(None, 0, 0)))
    step = jax.jit(jax.vmap(lambda m, s, a: env.with_model(m).step(s, a), in_axes=(None, 0, 0)))
    return reset_to, step


def batched(x: np.ndarray) -> np.ndarray:
    return np.tile(np.asarray(x), (BATCH,) + (1,) * np.ndim(x))


@pytest.mark.parametrize("name", SPECS)
def test_model_file_matches_gymnasium(name):
    spec = SPECS[name]
    ref = mujoco.MjModel.from_xml_path(os.path.join(GYM_ASSETS, spec.gym_xml))
    own = mujoco.MjModel.from_xml_path(os.path.join(OWN_ASSETS, spec.own_xml))
    for field in MODEL_FIELDS:
        a, b = mj_field(ref, field), mj_field(own, field)
        assert a.shape == b.shape, f"{name}: {field} shape {b.shape}, Gymnasium's {a.shape}"
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=f"{name}: {field}")
    assert own_model(name).names == task(name).model.names, f"{name}: element names differ"
    assert set(task(name).model.names) >= set(NAMED)


@pytest.mark.parametrize("name", SPECS)
def test_registered_with_gymnasium_time_limit(name):
    env = envs.make(name)
    assert env.episode_length == SPECS[name].episode_length
    assert env.observation_space == task(name).observation_space
    gym_env = gymnasium.make(SPECS[name].gym_id)
    assert env.observation_space.shape == gym_env.observation_space.shape
    assert env.unwrapped.dt == pytest.approx(gym_env.unwrapped.dt)
    np.testing.assert_array_equal(env.action_space.low, gym_env.action_space.low)
    np.testing.assert_array_equal(env.action_space.high, gym_env.action_space.high)


@pytest.mark.parametrize("name", SPECS)
def test_steps_match_gymnasium(name):
    spec, env = SPECS[name], task(name)
    reset_to, step = compiled(name)
    gym_env = gymnasium.make(spec.gym_id)
    sim = gym_env.unwrapped
    sim.model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    sim.model.opt.tolerance = 1e-12
    obs, _ = gym_env.reset(seed=3)
    state = reset_to(env.model, batched(sim.data.qpos), batched(sim.data.qvel))
    np.testing.assert_allclose(np.asarray(state.obs[0]), obs, atol=PARITY_TOL, rtol=0, err_msg=f"{name}: reset obs")

    rng = np.random.default_rng(5)
    for i in range(PARITY_STEPS):
        action = rng.uniform(gym_env.action_space.low, gym_env.action_space.high)
        obs, reward, terminated, _, info = gym_env.step(action)
        state = step(env.model, state, batched(action))
        where = f"{name}, step {i}"
        np.testing.assert_allclose(np.asarray(state.obs[0]), obs, atol=PARITY_TOL, rtol=0, err_msg=f"{where}: obs")
        np.testing.assert_allclose(float(state.reward[0]), reward, atol=PARITY_TOL, rtol=0, err_msg=f"{where}: reward")
        assert bool(state.done[0]) == terminated, f"{where}: terminated"
        for term, key in spec.terms:
            got = float(state.metrics[f"reward/{term}"][0])
            np.testing.assert_allclose(got, info[key], atol=PARITY_TOL, rtol=0, err_msg=f"{where}: {term}")


@pytest.mark.parametrize("name", SPECS)
def test_random_rollout_stays_finite(name):
    env = task(name)
    reset_to, step = compiled(name)
    model = own_model(name)
    qpos, qvel = jax.jit(jax.vmap(env.reset_state))(jax.random.split(jax.random.key(1), BATCH))
    state = reset_to(model, qpos, qvel)
    assert np.any(np.asarray(qpos) != np.asarray(model.qpos0)), "reset noise"
    rng = np.random.default_rng(2)
    low, high = env.action_space.low, env.action_space.high
    for _ in range(ROLLOUT_STEPS):
        state = step(model, state, rng.uniform(low, high, (BATCH,) + low.shape))
    for label, x in (("qpos", state.physics.qpos), ("qvel", state.physics.qvel), ("obs", state.obs)):
        assert np.all(np.isfinite(np.asarray(x))), f"{name}: {label} not finite after {ROLLOUT_STEPS} steps"
    assert np.all(np.isfinite(np.asarray(state.reward)))


@pytest.mark.parametrize("name", SPECS)
def test_options_change_the_observation_as_in_gymnasium(name):
    spec = SPECS[name]
    for option in spec.options:
        env = spec.cls(xml=os.path.join(GYM_ASSETS, spec.gym_xml), **{option: False})
        gym_env = gymnasium.make(spec.gym_id, **{option: False})
        assert env.observation_space.shape == gym_env.observation_space.shape, f"{name}: {option}=False"


@pytest.mark.parametrize("name", SPECS)
def test_reset_noise(name):
    env, spec = task(name), SPECS[name]
    scale = env.reset_noise_scale
    qpos, qvel = jax.jit(jax.vmap(env.reset_state))(jax.random.split(jax.random.key(0), 2000))
    dq = np.asarray(qpos) - np.asarray(env.model.qpos0)
    assert np.all(np.abs(dq) <= scale) and np.abs(dq).max() > 0.9 * scale
    assert np.std(dq) == pytest.approx(scale / np.sqrt(3), rel=0.05), "qpos: U(-scale, scale)"
    qvel = np.asarray(qvel)
    if spec.qvel_noise == "uniform":
        assert np.all(np.abs(qvel) <= scale) and np.std(qvel) == pytest.approx(scale / np.sqrt(3), rel=0.05)
    else:
        assert np.abs(qvel).max() > 2 * scale and np.std(qvel) == pytest.approx(scale, rel=0.05)
