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


@pytest.mark.parametrize("kind", ["cylinder", "sphere"])
def test_side_sites_against_mujoco_wrap_by_wrap(kind):
    """A spatial tendon from site a past a wrapping geom with (or without) a side site to site b, at 300 random
    placements: the path's length as MuJoCo 4's. A path clear of the geom with its side site opposite wraps round
    only when the side site lies between the ends as seen from the geom's centre (MuJoCo 3 wrapped whenever the
    side site was opposite); the Aero hand's tendons in MuJoCo Playground met it (qacc 0.36 apart)."""
    import importlib

    wrap = importlib.import_module("hurtle.physics.tendon").wrap
    rng = np.random.default_rng(7)
    r, n = 0.0025, 300
    a, b = rng.uniform(-0.03, 0.03, (n, 3)), rng.uniform(-0.03, 0.03, (n, 3))
    ang = rng.uniform(0, 2 * np.pi, n)
    side = np.stack([np.cos(ang), np.sin(ang), np.zeros(n)], 1) * rng.uniform(5e-4, 6e-3, (n, 1))
    side[:, 2] = rng.uniform(-0.004, 0.004, n)
    has = np.arange(n) % 5 != 0
    theirs = []
    for i in range(n):
        sites = "".join(f'<site name="{k}" pos="{p[0]} {p[1]} {p[2]}"/>' for k, p in zip("abs", (a[i], b[i], side[i])))
        attr = 'sidesite="s"' if has[i] else ""
        mm = mujoco.MjModel.from_xml_string(
            f'<mujoco><worldbody><body><geom name="g" type="{kind}" size="{r} .05"/>{sites}</body></worldbody>'
            f'<tendon><spatial><site site="a"/><geom geom="g" {attr}/><site site="b"/></spatial></tendon></mujoco>'
        )
        md = mujoco.MjData(mm)
        mujoco.mj_forward(mm, md)
        theirs.append(md.ten_length[0])
    eye = np.broadcast_to(np.eye(3), (n, 3, 3))
    cylinder = np.full(n, kind == "cylinder")  # structure: numpy, as the model's tables hold it
    length, points = jax.jit(lambda a, b, side: wrap(a, b, np.zeros((n, 3)), eye, np.full(n, r), cylinder, side, has))(
        a, b, side
    )
    length, points = np.asarray(length), np.asarray(points)
    ours = np.where(
        length < 0,
        np.linalg.norm(a - b, axis=1),
        np.linalg.norm(a - points[:, 0], axis=1) + length + np.linalg.norm(points[:, 1] - b, axis=1),
    )
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    assert 20 < np.sum(length >= 0) < n - 20  # both wrapped and straight paths were checked
