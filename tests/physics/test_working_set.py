"""The solver's working set (`Model.njmax`): Newton on the active rows gathered into njmax slots gives
the solve on every row, and a world with more active rows than that is solved on all of them."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from hurtle.physics import constraint
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
COLLIDE = os.path.join(MODELS, "collide.xml")
TOL = 1e-9  # float64: the two solves sum the same nonzero terms in different orders
FIELDS = ("qacc", "efc_force", "qfrc_constraint")


def _states(mm, every: int, count: int):
    """`count` MuJoCo states of one rollout, `every` steps apart (the bodies fall, land and settle)."""
    md = mujoco.MjData(mm)
    out = []
    for _ in range(count):
        for _ in range(every):
            mujoco.mj_step(mm, md)
        out.append((md.qpos.copy(), md.qvel.copy(), md.qacc_warmstart.copy()))
    return out


def _batch(model, mm, states):
    ds = [hp.from_mjdata(model, _data(mm, s), mm) for s in states]
    return jax.tree.map(lambda *x: jnp.stack(x), *ds)


def _data(mm, state):
    md = mujoco.MjData(mm)
    md.qpos[:], md.qvel[:], md.qacc_warmstart[:] = state
    return md


def test_sizes_from_the_file_the_caller_and_the_layout():
    with open(COLLIDE) as f:
        xml = f.read()
    full = hp.load(COLLIDE, njmax=0)
    nefc = full.efc.nefc
    assert full.njmax == 0 and nefc == 232
    # chosen from the layout: a quarter of the rows, at least 64, in multiples of 8
    assert hp.load(COLLIDE).njmax == 64
    assert hp.load(xml.replace("<option", '<size njmax="96"/><option', 1)).njmax == 96
    assert hp.load(xml.replace("<option", '<size njmax="96"/><option', 1), njmax=72).njmax == 72
    assert hp.load(COLLIDE, njmax=nefc // 2 + 1).njmax == 0  # as large as half the rows: off
    for bad in (2.5, True, "8"):
        with pytest.raises(ValueError, match="collide.xml: njmax must be a number of constraint rows"):
            hp.load(COLLIDE, njmax=bad)
    small = hp.load(os.path.join(MODELS, "limits.xml"))
    assert small.efc.nefc < constraint.WORKING_FROM and small.njmax == 0
    elliptic = xml.replace('timestep="0.002"', 'timestep="0.002" cone="elliptic"')
    assert hp.load(elliptic).njmax == 0
    assert hp.load(elliptic.replace("<option", '<size njmax="96"/><option', 1)).njmax == 0
    with pytest.raises(NotImplementedError, match="njmax .* elliptic cones"):
        hp.load(elliptic, njmax=96)
    assert hp.load(elliptic, njmax=0).njmax == 0 and hp.load(elliptic, njmax=-1).njmax == 0
    with pytest.raises(ValueError, match="njmax must be a number"):
        hp.load(elliptic, njmax="96")


def test_working_set_solves_the_problem_on_every_row():
    """Batched, with every world's active rows inside the set (njmax 96) and with some worlds over it
    (32: those fall back to every row), and one world at a time over and within the set: qacc, forces,
    states and iteration counts are the solve on every row's."""
    mm = mujoco.MjModel.from_xml_path(COLLIDE)
    d = _batch(hp.from_mujoco(mm), mm, _states(mm, 40, 8))
    pre = jax.jit(jax.vmap(lambda m, d: hp.forward(m, d), in_axes=(None, 0)))
    ref = pre(hp.from_mujoco(mm, njmax=0), d)
    active = np.asarray(ref.efc_active).sum(-1)
    within = np.nonzero((active > 0) & (active <= 32))[0]
    assert active.max() <= 96 and active.max() > 32 and within.size
    for njmax in (96, 32):
        model = hp.from_mujoco(mm, njmax=njmax)
        assert model.njmax == njmax
        got = pre(model, d)
        for f in FIELDS:
            assert P.rel_error(np.asarray(getattr(got, f)), np.asarray(getattr(ref, f))) <= TOL, (njmax, f)
        np.testing.assert_array_equal(got.efc_state, ref.efc_state)
        np.testing.assert_array_equal(got.solver_niter, ref.solver_niter)
    one = jax.jit(hp.forward)
    for w in (int(np.argmax(active)), int(within[0])):  # unbatched, njmax 32: over and within
        dw = jax.tree.map(lambda x, w=w: x[w], d)
        for f in FIELDS:
            np.testing.assert_allclose(getattr(one(model, dw), f), getattr(ref, f)[w], rtol=TOL, atol=TOL)


def test_working_set_trajectory_matches_mujoco():
    """300 steps of collide.xml with the default working set (64 of 232 rows) follow MuJoCo C's; its
    later states have up to 78 active rows, so the batch-free fallback runs inside the scan too."""
    mm = mujoco.MjModel.from_xml_path(COLLIDE)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model = hp.from_mujoco(mm)
    assert model.njmax == 64
    md = mujoco.MjData(mm)
    d = hp.from_mjdata(model, md, mm)

    def body(d, _):
        d = hp.step(model, d)
        return d, d.qpos

    qpos = jax.jit(lambda d: jax.lax.scan(body, d, None, length=300)[1])(d)
    ref = []
    for _ in range(300):
        mujoco.mj_step(mm, md)
        ref.append(md.qpos.copy())
    assert P.rel_error(np.asarray(qpos), np.array(ref)) <= 1e-6


def test_working_set_forward_derivative():
    """Forward-mode derivatives pass through the working set and its fallback: d qacc / d qvel, in a
    batch of a world within the set (njmax 32: 24 active rows) and one over it (78), is the solve on
    every row's."""
    mm = mujoco.MjModel.from_xml_path(COLLIDE)
    states = _states(mm, 40, 8)
    out = []
    for njmax in (0, 32):
        model = hp.from_mujoco(mm, njmax=njmax)
        d = _batch(model, mm, [states[2], states[-1]])

        def jvp(v, t, d, model=model):
            return jax.jvp(lambda v: hp.forward(model, d.replace(qvel=v)).qacc, (v,), (t,))

        out.append(jax.jit(jax.vmap(jvp))(d.qvel, jnp.ones_like(d.qvel), d))
    (ref, dref), (got, dgot) = out
    np.testing.assert_allclose(got, ref, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(dgot, dref, rtol=1e-7, atol=1e-7)
