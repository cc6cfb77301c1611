"""Forward dynamics against MuJoCo C in float64, field by field, at random valid states."""

from __future__ import annotations

import glob
import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from hurtle.physics.inertia import euler_damped
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
SHIPPED = sorted(glob.glob(os.path.join(MODELS, "*.xml")))


def _forward_parity(path_or_model, nstates=3, seed=0, tweak=None):
    mm = mujoco.MjModel.from_xml_path(path_or_model) if isinstance(path_or_model, str) else path_or_model
    # contacts are compared in test_collision.py (some shipped pairs are not supported yet)
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    if tweak:
        tweak(mm)
    model, out, mjds = P.forward_at_random_states(mm, nstates, seed, source=str(path_or_model))
    return P.compare(model, out, mm, mjds)


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_models_match_mujoco(path):
    worst = _forward_parity(path)
    P.assert_parity(worst, label=os.path.basename(path))
    # the comparison is not vacuous: the dynamics fields carry real numbers
    assert worst.keys() >= {"qM", "qfrc_bias", "qacc_smooth", "cdof_dot"}


def _disable(*flags):
    def tweak(mm):
        for f in flags:
            mm.opt.disableflags |= f

    return tweak


@pytest.mark.parametrize(
    "flags",
    [
        (mujoco.mjtDisableBit.mjDSBL_GRAVITY,),
        (mujoco.mjtDisableBit.mjDSBL_SPRING,),
        (mujoco.mjtDisableBit.mjDSBL_DAMPER,),
        (mujoco.mjtDisableBit.mjDSBL_SPRING, mujoco.mjtDisableBit.mjDSBL_DAMPER),
        (mujoco.mjtDisableBit.mjDSBL_ACTUATION,),
        (mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL,),
    ],
    ids=lambda fl: "+".join(mujoco.mjtDisableBit(f).name[7:].lower() for f in fl),
)
def test_disable_flags_match_mujoco(flags):
    worst = _forward_parity(os.path.join(MODELS, "actuators.xml"), nstates=2, tweak=_disable(*flags))
    P.assert_parity(worst)


def test_energy_matches_mujoco():
    worst = _forward_parity(os.path.join(MODELS, "ball_free.xml"), nstates=2)
    assert worst["energy"] <= P.TOL


def test_from_mjdata_to_mujoco_round_trip():
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "ball_free.xml"))
    model = hp.from_mujoco(mm)
    src = P.random_state(mm, np.random.default_rng(3))
    d = hp.from_mjdata(model, src, mm)
    dst = hp.to_mujoco(model, d, mujoco.MjData(mm))
    for f in ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied"):
        np.testing.assert_array_equal(getattr(dst, f), getattr(src, f))
    # kinematics were recomputed by MuJoCo for rendering
    mujoco.mj_kinematics(mm, src)
    np.testing.assert_allclose(dst.xpos, src.xpos, atol=1e-12)


@pytest.mark.parametrize("name", ["multi_joint.xml", "ball_free.xml", "hinge_chain.xml"])
def test_mass_matrix_factor_matches_mujoco(name):
    """qLD is MuJoCo's L'DL factor (L unit lower, tree-sparse: no fill-in) and solve_m is mj_solveM."""
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, name))
    model, out, mjds = P.forward_at_random_states(mm, nstates=3, seed=1)
    rng = np.random.default_rng(2)
    for b, mjd in enumerate(mjds):
        ld = np.asarray(out.qLD[b])
        low = np.tril(ld, -1)
        # exact zeros wherever neither dof is an ancestor of the other
        assert not np.any(low[~np.asarray(model.tree.dof_anc)]), name
        L = low + np.eye(mm.nv)
        qm = np.asarray(out.qM[b])
        assert P.rel_error(L.T @ np.diag(np.diag(ld)) @ L, qm) <= 1e-12  # float64 rounding
        assert P.rel_error(np.asarray(out.qLDiagInv[b]), mjd.qLDiagInv) <= P.TOL
        rhs = rng.standard_normal((1, mm.nv))
        ref = np.zeros_like(rhs)
        mujoco.mj_solveM(mm, mjd, ref, rhs)
        d = jax.tree.map(lambda x, b=b: x[b], out)
        mine = jax.jit(hp.solve_m)(model, d, jnp.asarray(rhs[0]))
        assert P.rel_error(np.asarray(mine), ref[0]) <= P.TOL


@pytest.mark.parametrize("name", ["multi_joint.xml", "hinge_chain.xml"])
def test_euler_damped_factor_matches_mujoco(name):
    """An Euler step's qH (the L'DL factor of qM + h diag(dof_damping), from factor_m) is MuJoCo's:
    the same D (qHDiagInv) and an exact factor of the damped matrix; a model without the implicit
    damping has no qH."""
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, name))
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model = hp.from_mujoco(mm)
    assert euler_damped(model) and model.nv > 1
    mjd = P.random_state(mm, np.random.default_rng(3))
    d = jax.jit(hp.step)(model, hp.from_mjdata(model, mjd, mm))
    mujoco.mj_step(mm, mjd)
    assert P.rel_error(np.asarray(d.qHDiagInv), mjd.qHDiagInv) <= P.TOL
    ld = np.asarray(d.qH)
    L = np.tril(ld, -1) + np.eye(mm.nv)
    damped = np.asarray(d.qM) + mm.opt.timestep * np.diag(mm.dof_damping)
    assert P.rel_error(L.T @ np.diag(np.diag(ld)) @ L, damped) <= 1e-12  # float64 rounding
    # `euler` on a model stepped by another integrator (no qH) still damps implicitly, as mj_Euler
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    rk4 = hp.from_mujoco(mm)
    assert not euler_damped(rk4) and hp.make_data(rk4).qH.shape == (0, 0)
    mjd = P.random_state(mm, np.random.default_rng(4))
    e = jax.jit(lambda m, d: hp.euler(m, hp.forward(m, d)))(rk4, hp.from_mjdata(rk4, mjd, mm))
    mujoco.mj_forward(mm, mjd)
    mujoco.mj_Euler(mm, mjd)
    assert P.rel_error(np.asarray(e.qvel), mjd.qvel) <= P.TOL
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    undamped = hp.from_mujoco(mm)
    assert not euler_damped(undamped) and hp.make_data(undamped).qH.shape == (0, 0)
