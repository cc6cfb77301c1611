"""Body (adhesion) transmissions against MuJoCo C (float64), with contacts on: moments from the contacts with rows
and from those found inside the gap, the dynamics they drive, and what adhesion is for."""

from __future__ import annotations

import os

import jax
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
ADHESION = os.path.join(MODELS, "adhesion.xml")
TOL = 1e-6  # constrained parity tolerance of P.rel_error


def _tight(mm):
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    return mm


def test_adhesion_matches_mujoco_along_its_trajectory():
    """MuJoCo steps the model under random controls (pads pressed on the floor and the wall, a puck and a ball
    sucked down); at every 50th state hurtle's forward gives MuJoCo's moments, qacc and constraint forces, with
    contacts inside the gap (no rows, still pulling) among them."""
    mm = _tight(mujoco.MjModel.from_xml_path(ADHESION))
    model = hp.from_mujoco(mm, source=ADHESION)
    forward = jax.jit(hp.forward)
    in_gap = pulled = 0
    for md in P.mujoco_random_walk(mm, np.random.default_rng(0), rounds=8, steps=50):
        out = forward(model, hp.from_mjdata(model, md, mm))
        moment = P.actuator_moment(mm, md)
        assert P.rel_error(out.actuator_moment, moment) <= 1e-12
        assert P.rel_error(out.actuator_length, md.actuator_length) == 0.0
        for field, err in P.constrained_errors(model, out, md).items():
            assert err <= TOL, field
        gap = [c for c in md.contact[: md.ncon] if c.exclude == 1]
        assert int(np.sum(out.contact.gap)) == len(gap)
        in_gap += len(gap)
        pulled += int(np.any(moment[:3] != 0))
    assert in_gap >= 8 and pulled >= 6  # the gap's contacts and the pads' moments were exercised


def test_adhesion_pulls_a_ball_down_before_it_touches():
    """A ball hanging 2 cm above the floor, inside the geoms' 3 cm reach but outside the margin: no constraint
    rows, yet its adhesion actuator pulls it down (force = gain * ctrl along the contact normal)."""
    mm = _tight(mujoco.MjModel.from_xml_path(ADHESION))
    model = hp.from_mujoco(mm, source=ADHESION)
    d = hp.make_data(model)
    ball = model.name2id("body", "ball")
    qadr, vadr = mm.jnt_qposadr[mm.body_jntadr[ball]], mm.jnt_dofadr[mm.body_jntadr[ball]]
    d = d.replace(qpos=d.qpos.at[qadr + 2].set(0.13), ctrl=d.ctrl.at[2].set(1.0))  # 3 cm up: margins 2, reach 6
    forward = jax.jit(hp.forward)
    pulled = forward(model, d)
    free = forward(model, d.replace(ctrl=d.ctrl.at[2].set(0.0)))
    mine = np.asarray(pulled.contact.geom2) == model.name2id("geom", "ball")
    assert np.any(np.asarray(pulled.contact.gap)[mine]) and not np.any(np.asarray(pulled.contact.active)[mine])
    mass = mm.body_subtreemass[ball]
    np.testing.assert_allclose(pulled.qacc[vadr + 2] - free.qacc[vadr + 2], -15.0 / mass, rtol=1e-9)


def test_body_transmission_refused_with_capped_or_caller_filled_contacts():
    mm = mujoco.MjModel.from_xml_path(ADHESION)
    with pytest.raises(NotImplementedError, match=r"adhesion.xml: a body \(adhesion\) transmission \(actuator 'pad'\)"):
        hp.from_mujoco(mm, source=ADHESION, nconmax=4)
    with pytest.raises(NotImplementedError, match="caller-filled contact slots"):
        hp.from_mujoco(mm, source=ADHESION, contact_dims=[3] * 8)


def test_slider_crank_matches_mujoco_where_the_rod_reaches_and_where_it_cannot():
    """Slider-crank lengths, moments and the dynamics they drive, from states near the reference pose (the rod
    reaches the slider's axis) and far from it (it cannot: MuJoCo's length is then the projection on the axis);
    a 300-step trajectory under a position servo through the crank stays with MuJoCo's."""
    path = os.path.join(MODELS, "slider_crank.xml")
    mm = _tight(mujoco.MjModel.from_xml_path(path))
    model = hp.from_mujoco(mm, source=path)
    rng = np.random.default_rng(0)
    mjds = []
    for spread in (0.0, 0.01, 0.01, 1.5, 1.5, 1.5):
        d = P.random_state(mm, rng)
        d.qpos[:] = mm.qpos0 + spread * rng.standard_normal(mm.nq)
        mjds.append(d)
    out = P.batched(hp.forward)(model, P.batch_data(model, mm, mjds))
    reach = []
    for b, d in enumerate(mjds):
        mujoco.mj_forward(mm, d)
        assert P.rel_error(out.actuator_length[b], d.actuator_length) <= 1e-12
        assert P.rel_error(out.actuator_moment[b], P.actuator_moment(mm, d)) <= 1e-12
        assert P.rel_error(out.qacc[b], d.qacc) <= 1e-10
        crank, slider = d.site_xpos[mm.site("pin2").id], d.site_xpos[mm.site("slider2").id]
        axis = d.site_xmat[mm.site("slider2").id].reshape(3, 3)[:, 2]
        v = crank - slider
        reach.append((v @ axis) ** 2 + 0.05**2 - v @ v > 0)  # the short rod's
    assert any(reach) and not all(reach)  # both of MuJoCo's branches
    md = mujoco.MjData(mm)
    md.ctrl[:] = [0.0, 0.3, -0.2]
    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 300)
    ref, _ = P.mujoco_qpos_rollout(mm, md, 300)
    assert P.rel_error(qpos, ref) <= 1e-9
    assert np.ptp(ref[:, mm.jnt_qposadr[mm.joint("piston").id]]) > 0.01  # the servo moved the piston
