"""Trajectories with each integrator against MuJoCo C, gradients, and trace counts."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
TRAJ_TOL = 1e-6  # body positions over 100 steps, by P.rel_error
NSTEPS = 100


def _rollout(m, d):
    def body(d, _):
        d = hp.step(m, d)
        return d, (d.xpos, d.qpos)

    return jax.lax.scan(body, d, None, length=NSTEPS)


@pytest.mark.parametrize("integrator", ["EULER", "RK4", "IMPLICITFAST", "IMPLICIT"])
@pytest.mark.parametrize("name", ["actuators.xml", "fluid.xml"])
def test_trajectory_matches_mujoco(name, integrator):
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, name))
    mm.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator}")
    model = hp.from_mujoco(mm)
    mjd = P.random_state(mm, np.random.default_rng(7))
    mjd.qvel[:] *= 0.5
    d0 = hp.from_mjdata(model, mjd, mm)
    dN, (xpos, qpos) = jax.jit(_rollout)(model, d0)  # one program per test: the caches are cleared between tests
    ref_xpos, ref_qpos = [], []
    for _ in range(NSTEPS):
        mujoco.mj_step(mm, mjd)
        ref_xpos.append(mjd.xpos.copy())
        ref_qpos.append(mjd.qpos.copy())
    assert P.rel_error(xpos, np.array(ref_xpos)) <= TRAJ_TOL
    assert P.rel_error(qpos, np.array(ref_qpos)) <= TRAJ_TOL
    assert P.rel_error(dN.qvel, mjd.qvel) <= TRAJ_TOL
    assert P.rel_error(dN.act, mjd.act) <= TRAJ_TOL
    assert float(dN.time) == pytest.approx(mjd.time)
    # the bodies actually moved, so the comparison means something
    assert np.max(np.abs(np.array(ref_qpos[-1]) - np.asarray(d0.qpos))) > 1e-2


def test_grad_through_50_step_rollout_is_finite():
    model = hp.load(os.path.join(MODELS, "actuators.xml"))
    d0 = hp.make_data(model)

    def loss(ctrl, mass):
        m = model.replace(body_mass=mass)
        d = d0.replace(ctrl=ctrl, qvel=d0.qvel + 0.1)

        def body(d, _):
            return hp.step(m, d), None

        d, _ = jax.lax.scan(body, d, None, length=50)
        return jnp.sum(d.qpos**2) + jnp.sum(d.qvel**2)

    g_ctrl, g_mass = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.full(model.nu, 0.3), model.body_mass)
    assert np.all(np.isfinite(g_ctrl)) and np.all(np.isfinite(g_mass))
    assert np.any(np.abs(g_ctrl) > 0) and np.any(np.abs(g_mass) > 0)


def test_one_compile_per_model_and_batch_shape():
    traces = []

    def counted_step(m, d):
        traces.append(1)
        return hp.step(m, d)

    step = jax.jit(counted_step)
    path = os.path.join(MODELS, "hinge_chain.xml")
    m1, m2 = hp.load(path), hp.load(path)  # equal structure, separately built
    d = hp.make_data(m1)
    for _ in range(3):
        d = step(m1, d)
    step(m2, d)
    step(m1.replace(body_mass=m1.body_mass * 2.0), d)  # new parameter values: no retrace
    assert len(traces) == 1
    batched = jax.jit(jax.vmap(counted_step, in_axes=(None, 0)))
    db = jax.tree.map(lambda x: jnp.stack([x] * 4), d)
    batched(m1, db)
    batched(m1, db)
    assert len(traces) == 2  # one more trace for the new batch shape


def test_vmap_over_a_batch_of_models():
    model = hp.load(os.path.join(MODELS, "hinge_chain.xml"))
    d = hp.make_data(model).replace(qvel=jnp.full(model.nv, 0.5))
    masses = jnp.stack([model.body_mass * s for s in (0.5, 1.0, 2.0)])
    axes = jax.tree.map(lambda _: None, model).replace(body_mass=0)
    batched = jax.jit(jax.vmap(hp.forward, in_axes=(axes, None)))(model.replace(body_mass=masses), d)
    for k, s in enumerate((0.5, 1.0, 2.0)):
        one = jax.jit(hp.forward)(model.replace(body_mass=model.body_mass * s), d)
        np.testing.assert_allclose(batched.qacc[k], one.qacc, rtol=1e-12, atol=1e-12)
    assert not np.allclose(batched.qacc[0], batched.qacc[2])


_JOINTS_INTERLEAVED = """
<mujoco>
  <worldbody>
    <body><joint type="hinge" axis="0 1 0"/><geom size=".1"/>
      <body pos="0 0 -.3"><joint type="slide" axis="1 0 0"/><joint type="ball"/><geom size=".1"/></body>
    </body>
    <body pos="1 0 0"><freejoint/><geom size=".1"/>
      <body pos="0 0 -.3"><joint type="hinge" axis="1 0 0"/><geom size=".1"/></body>
    </body>
    <body pos="2 0 0"><freejoint/><geom size=".1"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("source", ["interleaved", "ball_free.xml", "hinge_chain.xml"])
def test_integrate_pos_matches_mujoco(source):
    """Every joint type, in and out of row order (a gather then assembles the pieces), against
    mj_integratePos."""
    if source == "interleaved":
        mm = mujoco.MjModel.from_xml_string(_JOINTS_INTERLEAVED)
    else:
        mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, source))
    model = hp.from_mujoco(mm)
    mjd = P.random_state(mm, np.random.default_rng(3))
    qpos, qvel, dt = mjd.qpos.copy(), mjd.qvel.copy(), 0.37
    ours = np.asarray(jax.jit(hp.integrate_pos)(model, qpos, qvel, dt))
    ref = qpos.copy()
    mujoco.mj_integratePos(mm, ref, qvel, dt)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
