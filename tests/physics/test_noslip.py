"""MuJoCo's noslip post-processing against MuJoCo C (float64), and what it is for: friction that does not creep."""

from __future__ import annotations

import glob
import os

import jax
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODEL = os.path.join(os.path.dirname(__file__), "models", "noslip.xml")
TOL = 1e-6  # constrained parity tolerance of P.rel_error
CONES = ("PYRAMIDAL", "ELLIPTIC")


def _model(cone: str, islands: bool = True) -> mujoco.MjModel:
    mm = mujoco.MjModel.from_xml_path(MODEL)
    mm.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone}")
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    if not islands:
        mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ISLAND
    return mm


@pytest.mark.parametrize("islands", [True, False], ids=["islands", "monolithic"])
@pytest.mark.parametrize("cone", CONES)
def test_noslip_matches_mujoco(cone, islands):
    """Random states: qacc and the friction forces noslip leaves; with islands off (one Gauss-Seidel over all
    rows, stopped on their summed improvement) also the sweep count and every force to rounding. With islands,
    MuJoCo stops each island on its own: hurtle does too, but the main solve ran per island there, so the sweeps
    start a rounding apart and the results agree to the parity tolerance."""
    mm = _model(cone, islands)
    model, out, mjds = P.forward_at_random_states(mm, nstates=6, seed=0, source=MODEL)
    tol = TOL if islands else 1e-11
    sliding = 0
    for b, d in enumerate(mjds):
        world = jax.tree.map(lambda x, b=b: x[b], out)
        worst = P.constrained_errors(model, world, d)  # contact rows paired by contact
        assert max(worst.values()) <= tol, worst
        if not islands:
            assert int(world.solver_niter) == d.solver_niter[0]
        if not islands and cone == "PYRAMIDAL":  # (an elliptic force noslip put on its cone's surface is a
            # rounding from either side of it: MuJoCo's dual state there is a coin toss)
            mine, theirs = P._contact_rows(model, world, d)
            np.testing.assert_array_equal(np.asarray(world.efc_state)[mine], d.efc_state[theirs])
        sliding += d.ncon
    assert sliding >= 10  # the states have contacts for noslip to work on
    mm.opt.noslip_iterations = 0  # and noslip changed the answer
    d = mjds[-1]
    mujoco.mj_forward(mm, d)
    assert P.rel_error(out.qacc[-1], d.qacc) > 1e-4


@pytest.mark.parametrize("cone", CONES)
def test_noslip_trajectory_stays_with_mujoco(cone):
    """200 steps of bodies sliding, rolling and spinning on a tilted floor and on each other, and two jointed
    links with friction loss: qpos stays with MuJoCo's (islands off: MuJoCo's island-wise main solve starts each
    island's sweeps a rounding apart, and a sweep more or less moves the friction by up to the noslip tolerance)."""
    mm = _model(cone, islands=False)
    md = mujoco.MjData(mm)
    md.qvel[:6] = [1, 0.5, 0, 0, 0, 2]
    md.qvel[6:12] = [-1, 0, 0, 3, 0, 0]
    md.ctrl[:] = [0.4, -0.3]
    model = hp.from_mujoco(mm, source=MODEL)
    d = hp.from_mjdata(model, md, mm)
    step = jax.jit(lambda d: jax.lax.fori_loop(0, 20, lambda _, d: hp.step(model, d), d))
    worst, contacts = 0.0, 0
    for _ in range(10):
        for _ in range(20):
            mujoco.mj_step(mm, md)
        d = step(d)
        worst = max(worst, np.abs(np.asarray(d.qpos) - md.qpos).max())
        contacts += md.ncon
    assert contacts >= 50
    assert worst < 1e-9, worst


CREEP_XML = """<mujoco><option timestep="0.002" noslip_iterations="{n}" cone="elliptic"/>
  <worldbody><geom type="plane" size="2 2 .1" euler="0 20 0" friction="0.8"/>
  <body pos="0 0 0.1" euler="0 20 0"><freejoint/><geom type="box" size=".1 .1 .05" friction="0.8"/></body>
  </worldbody></mujoco>"""

CREEP = """
import jax, hurtle.physics as hp
def drift(xml):
    model = hp.load(xml)
    run = jax.jit(lambda d: jax.lax.fori_loop(0, 1000, lambda _, d: hp.step(model, d), d))
    d = run(hp.make_data(model))  # settled after 2 s
    return abs(float(run(d).qpos[0]) - float(d.qpos[0]))  # then 2 s more
"""


def test_noslip_stops_creep():
    """What noslip is for: a box resting on a 20-degree slope with friction 0.8 (above tan 20 = 0.36) creeps
    down it under the soft contact; with noslip it stays put, in MuJoCo, in hurtle and in hurtle's float32.
    (Elliptic cones: with pyramidal ones MuJoCo's noslip holds each pair of pyramid edges' sum, and the box
    still creeps at a quarter of the speed, in both engines.)"""
    import subprocess
    import sys

    drift = {}
    for n in (0, 10):
        mm = mujoco.MjModel.from_xml_string(CREEP_XML.format(n=n))
        md = mujoco.MjData(mm)
        mujoco.mj_step(mm, md, 1000)
        x0 = md.qpos[0]
        mujoco.mj_step(mm, md, 1000)
        drift[n, "mujoco"] = abs(md.qpos[0] - x0)
        ns = {}
        exec(CREEP, ns)
        drift[n, "float64"] = ns["drift"](CREEP_XML.format(n=n))
    code = CREEP + f"print(drift({CREEP_XML.format(n=0)!r}), drift({CREEP_XML.format(n=10)!r}))"
    env = {**os.environ, "JAX_ENABLE_X64": "0", "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    drift[0, "float32"], drift[10, "float32"] = map(float, run.stdout.split())
    for k in ("mujoco", "float64", "float32"):
        assert drift[0, k] > 1e-4, drift  # soft friction creeps
        assert drift[10, k] < 1e-3 * drift[0, k], drift  # hard friction holds
    assert abs(drift[10, "float64"] - drift[10, "mujoco"]) <= 1e-3 * drift[10, "mujoco"]


def test_fixed_mode_noslip_matches_adaptive():
    """The fixed-iteration mode (noslip's sweeps in a fori_loop that holds a finished state) gives the adaptive
    mode's answer."""
    mm = _model("PYRAMIDAL")
    rng = np.random.default_rng(2)
    mjds = [P.random_state(mm, rng) for _ in range(3)]
    adaptive = hp.from_mujoco(mm)
    fixed = adaptive.replace(opt=adaptive.opt.replace(solver_mode="fixed"))
    a = P.batched(hp.forward)(adaptive, P.batch_data(adaptive, mm, mjds))
    f = P.batched(hp.forward)(fixed, P.batch_data(fixed, mm, mjds))
    assert P.rel_error(f.qacc, a.qacc) <= TOL


def _adroit_files():
    try:
        import gymnasium_robotics
    except ImportError:
        return []
    root = os.path.join(os.path.dirname(gymnasium_robotics.__file__), "envs", "assets", "adroit_hand")
    files = sorted(glob.glob(os.path.join(root, "adroit_*.xml")))
    return [f for f in files if "<mujocoinclude" not in open(f).read()]  # the hands, not their include files


@pytest.mark.slow
@pytest.mark.parametrize("path", _adroit_files() or [None], ids=lambda p: os.path.basename(p) if p else "none")
def test_adroit_hands_match_mujoco(path):
    """Gymnasium-Robotics' Adroit hands (noslip_iterations 20, their own settings otherwise) along MuJoCo's own
    trajectory under random controls (when gymnasium-robotics is installed)."""
    if path is None:
        pytest.skip("gymnasium-robotics is not installed")
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model = hp.from_mujoco(mm, source=path)
    forward = jax.jit(hp.forward)
    for md in P.mujoco_random_walk(mm, np.random.default_rng(0), rounds=3, steps=100):
        out = forward(model, hp.from_mjdata(model, md, mm))
        assert P.rel_error(out.qacc, md.qacc) <= TOL
