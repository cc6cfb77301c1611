"""The UR5e arm model written for the manipulation tasks (hurtle/envs/manipulation/assets/ur5e.xml): its
kinematics are the UR5e's Denavit-Hartenberg chain, its masses and limits the datasheet's, and hurtle's physics
matches MuJoCo C on it with contacts."""

from __future__ import annotations

import os

import mujoco
import numpy as np

import hurtle.envs as envs
import hurtle.physics as hp
from tests.physics import parity as P

UR5E = os.path.join(os.path.dirname(envs.__file__), "manipulation", "assets", "ur5e.xml")
DH_D = (0.1625, 0, 0, 0.1333, 0.0997, 0.0996)
DH_A = (0, -0.425, -0.3922, 0, 0, 0)
DH_ALPHA = (np.pi / 2, 0, 0, np.pi / 2, -np.pi / 2, 0)


def _dh(q):
    out = np.eye(4)
    for i in range(6):
        ct, st, ca, sa = np.cos(q[i]), np.sin(q[i]), np.cos(DH_ALPHA[i]), np.sin(DH_ALPHA[i])
        out = out @ np.array(
            [
                [ct, -st * ca, st * sa, DH_A[i] * ct],
                [st, ct * ca, -ct * sa, DH_A[i] * st],
                [0, sa, ca, DH_D[i]],
                [0, 0, 0, 1],
            ]
        )
    return out


def test_kinematics_are_the_ur5e_dh_chain():
    mm = mujoco.MjModel.from_xml_path(UR5E)
    md = mujoco.MjData(mm)
    flange = mm.site("flange").id
    for q in np.random.default_rng(0).uniform(-np.pi, np.pi, (20, 6)):
        md.qpos[:] = q
        mujoco.mj_kinematics(mm, md)
        ref = _dh(q)
        np.testing.assert_allclose(md.site_xpos[flange], ref[:3, 3], atol=1e-12)
        np.testing.assert_allclose(md.site_xmat[flange].reshape(3, 3), ref[:3, :3], atol=1e-12)


def test_datasheet_masses_limits_and_servos():
    mm = mujoco.MjModel.from_xml_path(UR5E)
    np.testing.assert_allclose(mm.body_mass[1:], [3.761, 8.058, 2.846, 1.37, 1.3, 0.365])
    np.testing.assert_allclose(mm.jnt_range, np.tile([-2 * np.pi, 2 * np.pi], (6, 1)), atol=1e-4)
    np.testing.assert_allclose(mm.actuator_gainprm[:, 0], [2000, 2000, 2000, 500, 500, 500])
    np.testing.assert_allclose(mm.actuator_forcerange[:, 1], [150, 150, 150, 28, 28, 28])


def test_hurtle_matches_mujoco_on_the_arm_with_contacts():
    """Random states (the links pressed into the table in some) and 200 steps of the servos driving the arm down
    onto the table: qacc and the trajectory are MuJoCo's."""
    mm = mujoco.MjModel.from_xml_path(UR5E)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model, out, mjds = P.forward_at_random_states(mm, nstates=4, seed=1, source=UR5E)
    P.assert_parity(P.compare(model, out, mm, mjds, fields=("qacc_smooth", "actuator_force")), label="ur5e")
    md = mujoco.MjData(mm)
    md.qpos[:] = [0, -1.2, 1.6, -1.9, -1.57, 0]
    md.ctrl[:] = [0.4, -0.3, 2.2, -1.0, -1.57, 0.5]  # shoulder and elbow fold the tool into the table
    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 200)
    ref, contacts = P.mujoco_qpos_rollout(mm, md, 200)
    assert contacts > 0
    assert P.rel_error(qpos, ref) <= 1e-8


def test_reach_task_counts_hits_and_moves_the_target():
    """ur5e_reach: observation and reward terms; a target put at the tool tip of the arm at rest is reached on
    the next step (bonus 10, the count goes up) and jumps to a new place inside the workspace; random actions
    keep everything finite."""
    import jax
    import jax.numpy as jnp

    from hurtle.envs.manipulation.ur5e import SHOULDER, sample_workspace

    env = envs.make("ur5e_reach")
    task = env.unwrapped
    step = jax.jit(env.step)
    s = jax.jit(env.reset)(jax.random.key(0))
    assert s.obs.shape == (21,) and env.action_space.shape == (6,)
    assert {"reward/reach", "reward/motion", "reward/hit", "targets/reached", "targets/time"} <= set(s.metrics)
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = step(s, jnp.asarray(rng.uniform(-1, 1, 6), s.obs.dtype))
    assert np.all(np.isfinite(np.asarray(s.obs)))
    for _ in range(100):  # back home, at rest
        s = step(s, jnp.zeros(6, s.obs.dtype))
    tool = task.effector(s.physics)
    s = s.replace(physics=task._place(s.physics, tool))
    hit = step(s, jnp.zeros(6, s.obs.dtype))
    assert float(hit.metrics["reward/hit"]) == 10.0 and float(hit.metrics["targets/reached"]) == 1.0
    assert float(hit.metrics["targets/time"]) == 0.0
    new = np.asarray(task.target(hit.physics))
    assert np.linalg.norm(new - np.asarray(tool)) > 0.02
    targets = np.asarray(jax.vmap(lambda k: sample_workspace(k, np.float32))(jax.random.split(jax.random.key(1), 512)))
    radius = np.linalg.norm(targets[:, :2], axis=1)
    assert np.all((radius >= 0.3 - 1e-6) & (radius <= 0.75 + 1e-6))
    assert np.all((targets[:, 2] >= 0.1) & (targets[:, 2] <= 0.6))
    assert np.all(np.linalg.norm(targets - SHOULDER, axis=1) < 0.8)
    assert np.ptp(np.arctan2(targets[:, 1], targets[:, 0])) > 6.0  # every direction
