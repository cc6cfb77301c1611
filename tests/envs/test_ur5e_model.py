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
    ref, contacts = [], 0
    for _ in range(200):
        mujoco.mj_step(mm, md)
        ref.append(md.qpos.copy())
        contacts += md.ncon
    assert contacts > 0
    assert P.rel_error(qpos, np.array(ref)) <= 1e-8
