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
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(0)
    lo, hi = mm.actuator_ctrlrange.T
    in_gap = pulled = 0
    for _ in range(8):
        for _ in range(50):
            md.ctrl[:] = rng.uniform(lo, hi)
            mujoco.mj_step(mm, md)
        mujoco.mj_forward(mm, md)
        out = forward(model, hp.from_mjdata(model, md, mm))
        moment = np.zeros((mm.nu, mm.nv))
        mujoco.mju_sparse2dense(moment, md.actuator_moment, md.moment_rownnz, md.moment_rowadr, md.moment_colind)
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
