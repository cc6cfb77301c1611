"""Spatial tendons against MuJoCo C (float64): lengths, Jacobians and dynamics of straight, sphere- and
cylinder-wrapped and pulley paths (tests/physics/models/spatial_tendon.xml, also in the forward parity of
test_parity.py), 100-step trajectories, the inside wrap, and dm_control's ball_in_cup with contacts."""

import os

import jax
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODEL = os.path.join(os.path.dirname(__file__), "models", "spatial_tendon.xml")


def test_spatial_tendon_trajectory_stays_with_mujoco():
    mm = mujoco.MjModel.from_xml_path(MODEL)
    model = hp.from_mujoco(mm, source=MODEL)
    md = mujoco.MjData(mm)
    md.qvel[:] = np.random.default_rng(0).normal(0, 2, mm.nv)
    md.ctrl[:] = [0.5, 0.2]
    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 100)
    ref, wrapped = [], set()
    for _ in range(100):
        mujoco.mj_step(mm, md)
        ref.append(md.qpos.copy())
        wrapped |= {t for t in range(mm.ntendon) if md.ten_wrapnum[t] == 4}
    assert P.rel_error(qpos, np.array(ref)) <= 1e-8
    assert {1, 2, 3, 4} <= wrapped  # the sphere and cylinder wraps engaged along the way


def test_inside_wrap_matches_mujoco_to_its_newton_tolerance():
    """A side site inside the sphere: MuJoCo's inside wrap solves for the tangent point by Newton's method until
    |f| < 1e-6; where the iterates differ at the last bit, either engine may stop an iteration apart, so the
    point agrees to about that tolerance (the straight and circle wraps agree to rounding)."""
    text = (
        open(MODEL)
        .read()
        .replace(
            "</tendon>",
            '<spatial name="inside"><site site="u4"/><geom geom="knob" sidesite="knob_in"/><site site="l3"/></spatial>'
            "</tendon>",
        )
    )
    mm = mujoco.MjModel.from_xml_string(text)
    model, out, mjds = P.forward_at_random_states(mm, 6, 0)
    inside = mm.ntendon - 1
    assert sum(d.ten_wrapnum[inside] == 4 for d in mjds) >= 3  # it wraps in most states
    for b, d in enumerate(mjds):
        np.testing.assert_allclose(out.ten_length[b], d.ten_length, atol=1e-10)
        ref = hp.from_mjdata(model, d, mm)
        np.testing.assert_allclose(out.ten_J[b][inside], ref.ten_J[inside], atol=1e-6)
        np.testing.assert_allclose(out.ten_J[b][:inside], ref.ten_J[:inside], atol=1e-12)


def test_ball_in_cup_with_contacts():
    """dm_control's ball_in_cup: a ball on a string (a spatial tendon with a limit) swung into a cup, with
    contacts: tendon, limits and constrained dynamics are MuJoCo's, and 300 steps stay together."""
    root = P.asset_dir("dm_control")
    if root is None:
        pytest.skip("dm_control is not installed")
    mm = mujoco.MjModel.from_xml_path(os.path.join(root, "ball_in_cup.xml"))
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model = hp.from_mujoco(mm)
    forward = jax.jit(hp.forward)
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(0)
    taut = 0
    for _ in range(3):
        for _ in range(100):
            md.ctrl[:] = rng.uniform(-1, 1, mm.nu)
            mujoco.mj_step(mm, md)
        mujoco.mj_forward(mm, md)
        out = forward(model, hp.from_mjdata(model, md, mm))
        ref = hp.from_mjdata(model, md, mm)
        assert P.rel_error(out.ten_length, md.ten_length) <= 1e-10
        assert P.rel_error(out.ten_J, ref.ten_J) <= 1e-10
        assert P.rel_error(out.qacc, md.qacc) <= 1e-6
        taut += int(md.ten_length[0] >= mm.tendon_range[0, 1] - 1e-3)
    md = mujoco.MjData(mm)
    md.qvel[:] = rng.normal(0, 3, mm.nv)
    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 300)
    ref, _ = P.mujoco_qpos_rollout(mm, md, 300)
    assert P.rel_error(qpos, ref) <= 1e-6
