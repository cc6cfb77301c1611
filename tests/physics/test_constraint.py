"""Constraints and the solver against MuJoCo C (float64, tight tolerance), and their behaviour."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
TOL = 1e-6  # constrained parity tolerance of P.rel_error
SOLVERS = ("NEWTON", "CG")


def _tight(mm, solver):
    mm.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{solver}")
    mm.opt.tolerance = 1e-12
    mm.opt.iterations = 300
    mm.opt.ls_iterations = 100
    return mm


def constrained_parity(mm, nstates=2, seed=0, fields=("qacc", "qfrc_constraint", "qacc_smooth")):
    """Worst relative errors of `fields` and efc_force (active rows, in MuJoCo's order)."""
    model, out, mjds = P.forward_at_random_states(mm, nstates, seed)
    worst = P.compare(model, out, mm, mjds, fields=fields)
    worst["efc_force"] = 0.0
    nrows = 0
    for b, d in enumerate(mjds):
        act = np.asarray(out.efc_active[b])
        assert act.sum() == d.nefc, "active rows differ from MuJoCo's"
        np.testing.assert_array_equal(model.efc.type[act], d.efc_type[: d.nefc])
        np.testing.assert_array_equal(model.efc.id[act], d.efc_id[: d.nefc])
        worst["efc_force"] = max(worst["efc_force"], P.rel_error(np.asarray(out.efc_force[b])[act], d.efc_force))
        nrows += d.nefc
    return worst, nrows


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", ["limits.xml", "equality.xml"])
def test_shipped_constraint_models_match_mujoco(name, solver):
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, name)), solver)
    worst, nrows = constrained_parity(mm, nstates=3)
    P.assert_parity(worst, tol=TOL, label=f"{name}/{solver}")
    assert nrows > 0


@pytest.mark.parametrize("flag", ["LIMIT", "EQUALITY", "FRICTIONLOSS", "WARMSTART"])
def test_constraint_disable_flags(flag):
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "limits.xml")), "NEWTON")
    mm.opt.disableflags |= getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag}")
    worst, _ = constrained_parity(mm, nstates=1)
    P.assert_parity(worst, tol=TOL)


def test_diagexact_and_pgs_and_refsafe():
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "equality.xml")), "PGS")
    mm.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_DIAGEXACT
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_REFSAFE
    worst, _ = constrained_parity(mm, nstates=1)
    P.assert_parity(worst, tol=TOL)


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    P.asset_files("gymnasium", "dm_control"),
    ids=lambda p: f"{os.path.basename(os.path.dirname(p))}/{os.path.basename(p)}",
)
def test_gymnasium_and_dm_control_with_contacts_disabled(path):
    """Every gymnasium and dm_control model, contacts off: the fields the solver does not touch at the
    parity tolerance (P.TOL) and, with the model's constraints, qacc, qfrc_constraint, efc_force and the
    sensors (accelerometers, force and torque sensors follow the solve) at TOL, from one compiled forward per
    model."""
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    solved = ("qacc", "qfrc_constraint", "efc_force", "sensordata")  # acceleration sensors follow the solve
    worst, _ = constrained_parity(_tight(mm, "NEWTON"), nstates=2, fields=P.FORWARD_FIELDS + ("qfrc_constraint",))
    P.assert_parity({f: e for f, e in worst.items() if f not in solved}, label=path)
    P.assert_parity({f: worst[f] for f in solved}, tol=TOL, label=path)


@functools.cache
def _rollout(nsteps):
    def roll(m, d):
        def body(d, _):
            d = hp.step(m, d)
            return d, d.qpos

        return jax.lax.scan(body, d, None, length=nsteps)

    return jax.jit(roll)


@pytest.mark.parametrize("integrator", ["EULER", "RK4", "IMPLICITFAST", "IMPLICIT"])
def test_constrained_trajectory_matches_mujoco(integrator):
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "limits.xml")), "NEWTON")
    mm.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator}")
    model = hp.from_mujoco(mm)
    # start inside the limits, moving: gravity and the motors drive joints into their limits
    mjd = mujoco.MjData(mm)
    rng = np.random.default_rng(5)
    mjd.qvel[:] = rng.standard_normal(mm.nv)
    mjd.ctrl[:] = rng.uniform(-1, 1, mm.nu)
    d0 = hp.from_mjdata(model, mjd, mm)
    dN, qpos = _rollout(100)(model, d0)
    ref = []
    nefc = 0
    for _ in range(100):
        mujoco.mj_step(mm, mjd)
        ref.append(mjd.qpos.copy())
        nefc += mjd.nefc
    assert nefc > 100  # constraints were active along the way
    assert not any(w.number for w in mjd.warning)  # MuJoCo stayed stable
    assert P.rel_error(qpos, np.array(ref)) <= TOL
    assert P.rel_error(dN.qacc_warmstart, mjd.qacc_warmstart) <= TOL


def _settle(xml, nsteps=500):
    model = hp.load(xml)
    d = hp.make_data(model)
    d, _ = _rollout(nsteps)(model, d)
    return model, d


def test_pendulum_held_at_its_limit():
    xml = """<mujoco><option><flag contact="disable"/></option><worldbody><body pos="0 0 1">
      <joint type="hinge" axis="0 1 0" limited="true" range="-30 30" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03"/></body></worldbody></mujoco>"""
    model, d = _settle(xml)
    # gravity pulls the horizontal arm down (positive rotation about y): it rests on the upper limit
    # (30 degrees), sinking into it only as far as the soft constraint allows
    assert float(d.qpos[0]) == pytest.approx(np.deg2rad(30), abs=0.02)
    assert abs(float(d.qvel[0])) < 1e-3
    assert float(jnp.max(jnp.abs(d.efc_force))) > 0


def test_contact_kept_when_a_dof_moves_its_body_though_its_jacobian_is_zero():
    """MuJoCo skips a contact only when no dof moves either body (mj_jacDifPair's dof count): a sphere
    on a vertical hinge through its contact point has an all-zero frictionless row, and it is kept."""
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 0.1" condim="1"/>
      <body pos="0 0 0.09"><joint type="hinge" axis="0 0 1"/><geom type="sphere" size="0.1" condim="1"/>
      </body></worldbody></mujoco>"""
    mm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    assert md.ncon == 1 and md.nefc == 1 and not np.any(md.efc_J)
    model = hp.from_mujoco(mm)
    d = jax.jit(hp.forward)(model, hp.make_data(model))
    act = np.asarray(d.efc_active)
    assert act.sum() == md.nefc and not np.any(np.asarray(d.efc_J)[act])


def test_weld_holds_a_body_under_gravity():
    xml = """<mujoco><option><flag contact="disable"/></option><worldbody>
      <body name="box" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body></worldbody>
      <equality><weld body1="box"/></equality></mujoco>"""
    model, d = _settle(xml)
    np.testing.assert_allclose(d.qpos[:3], [0, 0, 1], atol=2e-3)
    assert abs(float(d.qpos[3]) - 1.0) < 1e-4


def test_joint_equality_couples_two_hinges():
    xml = """<mujoco><option gravity="0 0 0"><flag contact="disable"/></option><worldbody>
      <body><joint name="a" type="hinge" axis="0 0 1"/><geom size="0.1" pos="0.2 0 0"/></body>
      <body pos="1 0 0"><joint name="b" type="hinge" axis="0 0 1"/><geom size="0.1" pos="0.2 0 0"/></body>
      </worldbody><equality><joint joint1="a" joint2="b" polycoef="0 2 0 0 0"/></equality>
      <actuator><motor joint="b"/></actuator></mujoco>"""
    model = hp.load(xml)
    d = hp.make_data(model).replace(ctrl=jnp.array([1.0]))
    d, _ = _rollout(300)(model, d)
    assert abs(float(d.qpos[1])) > 0.05  # the driven hinge turned
    assert float(d.qpos[0]) == pytest.approx(2.0 * float(d.qpos[1]), rel=1e-2)


def test_fixed_iteration_mode_gradients_are_finite():
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "limits.xml"))
    model = hp.from_mujoco(mm)
    model = model.replace(opt=model.opt.replace(solver_mode="fixed", iterations=4))
    mjd = P.random_state(mm, np.random.default_rng(2))
    d0 = hp.from_mjdata(model, mjd, mm)

    def loss(ctrl):
        d = d0.replace(ctrl=ctrl)

        def body(d, _):
            return hp.step(model, d), None

        d, _ = jax.lax.scan(body, d, None, length=20)
        return jnp.sum(d.qpos**2)

    g = jax.jit(jax.grad(loss))(jnp.full(model.nu, 0.5))
    assert np.all(np.isfinite(g)) and np.any(g != 0)
    # the fixed mode reaches the adaptive answer
    fixed = jax.jit(hp.forward)(model.replace(opt=model.opt.replace(iterations=50)), d0)
    adaptive = jax.jit(hp.forward)(hp.from_mujoco(mm), d0)
    np.testing.assert_allclose(fixed.qacc, adaptive.qacc, rtol=1e-6, atol=1e-6)


def _settled_contacts(mm, seed=0, nsteps=200):
    """MuJoCo's state and contacts after bodies fell onto the floor."""
    md = mujoco.MjData(mm)
    md.qvel[:] = np.random.default_rng(seed).standard_normal(mm.nv) * 0.5
    for _ in range(nsteps):
        mujoco.mj_step(mm, md)
    mujoco.mj_forward(mm, md)
    return md


def _contact_paths():
    paths = [os.path.join(MODELS, "contacts.xml")]
    root = P.asset_dir("gymnasium")
    if root:
        paths += [os.path.join(root, f) for f in ("ant.xml", "humanoid.xml", "walker2d.xml")]
    return paths


@pytest.mark.parametrize("cone", ["PYRAMIDAL", "ELLIPTIC"])
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("path", _contact_paths(), ids=os.path.basename)
def test_contact_rows_match_mujoco(path, solver, cone):
    """Contact rows alone: contacts copied from MuJoCo's collision into caller-filled slots."""
    mm = _tight(mujoco.MjModel.from_xml_path(path), solver)
    mm.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone}")
    md = _settled_contacts(mm)
    dims = [c.dim for c in md.contact[: md.ncon]]
    assert md.ncon > 0
    model = hp.from_mujoco(mm, contact_dims=dims)
    d = P.contacts_from_mujoco(model, hp.from_mjdata(model, md, mm), md)
    out = jax.jit(hp.forward)(model, d)
    act = np.asarray(out.efc_active)
    assert act.sum() == md.nefc
    np.testing.assert_array_equal(model.efc.type[act], md.efc_type[: md.nefc])
    np.testing.assert_array_equal(model.efc.id[act], md.efc_id[: md.nefc])
    worst = {
        "qacc": P.rel_error(out.qacc, md.qacc),
        "qfrc_constraint": P.rel_error(out.qfrc_constraint, md.qfrc_constraint),
        "efc_force": P.rel_error(np.asarray(out.efc_force)[act], md.efc_force),
        "efc_R": P.rel_error(np.asarray(out.efc_R)[act], md.efc_R),
        "efc_aref": P.rel_error(np.asarray(out.efc_aref)[act], md.efc_aref),
    }
    P.assert_parity(worst, tol=TOL, label=os.path.basename(path))
    if path.endswith("contacts.xml"):
        assert set(dims) == {1, 3, 4, 6}


def test_collision_pairs_not_supported_yet_are_refused_by_name():
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "contacts.xml"))
    hp.from_mujoco(mm)  # MuJoCo's defaults: every pair collides (the puck and the box by GJK/EPA and multiccd)
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_NATIVECCD  # MuJoCo's older libccd collider instead
    with pytest.raises(NotImplementedError, match="nativeccd .* a cylinder and a box"):
        hp.from_mujoco(mm)


def test_moved_rows_count_is_zero_exactly_on_the_same_piece():
    """The solver's same-piece test (a count of moved rows summed beside other row sums) says "same" exactly
    when every row kept its state and no elliptic cone is in its middle zone."""
    from hurtle.physics import solver as S

    rng = np.random.default_rng(0)
    states = np.array([S.SATISFIED, S.QUADRATIC, S.LINEARNEG, S.LINEARPOS, S.CONE], np.int32)
    same = 0
    for _ in range(200):
        cone = rng.choice([0.0, 0.1])  # half the draws with no cone in its middle zone
        prev = rng.choice(states, 40, p=[0.3, 0.3, 0.2 - cone / 2, 0.2 - cone / 2, cone])
        state = prev.copy()
        for i in rng.choice(40, rng.integers(0, 3), replace=False):  # 0 to 2 rows change
            state[i] = rng.choice(states)
        expected = bool(np.all((state == prev) & (state != S.CONE)))
        count = float(jnp.sum(S._moved(jnp.asarray(state), jnp.asarray(prev), jnp.float32)))
        assert (count == 0) == expected, (state, prev)
        same += expected
    assert 20 < same < 180  # both answers drawn


def _gymnasium_model(name):
    root = P.asset_dir("gymnasium")
    if root is None:
        pytest.skip("gymnasium is not installed")
    return os.path.join(root, name)


@pytest.mark.parametrize("name", ["walker2d_v5.xml", "hopper.xml"])
def test_newton_stops_after_the_same_iterations_as_mujoco(name):
    """float64, the file's own solver settings: the iteration count, state by state, is MuJoCo's."""
    mm = mujoco.MjModel.from_xml_path(_gymnasium_model(name))
    model, out, mjds = P.forward_at_random_states(mm, nstates=12, seed=3)
    ours = np.asarray(out.solver_niter)
    theirs = np.array([d.solver_niter[0] for d in mjds])
    np.testing.assert_array_equal(ours, theirs)
    assert theirs.max() >= 2  # the states need real iterations, not a warm start that already solves
    P.assert_parity(P.compare(model, out, mm, mjds, fields=("qacc",)), tol=TOL, label=name)


@pytest.mark.parametrize("ls_iterations", [1, 2, 3])
def test_a_line_search_cut_short_takes_mujocos_step(ls_iterations):
    """MuJoCo Playground's scenes cap the line search at 5-8 evaluations and the solver at 1-5 iterations
    (Go1: 5 and 1), where the step a search returns is not the line's minimiser: which point MuJoCo returns
    then (the last Newton point without a bracket, the better bracket when the evaluations run out) decides
    qacc. Ant on its floor with joint friction loss (friction rows beside the contacts), 2 Newton iterations, 1
    to 3 evaluations: qacc is MuJoCo's at every state (with an exact line search instead, 11% off at 1 and 2
    here, and Go1's 30 m/s^2 at Playground's 5)."""
    mm = mujoco.MjModel.from_xml_path(_gymnasium_model("ant.xml"))
    mm.opt.iterations, mm.opt.ls_iterations = 2, ls_iterations
    mm.dof_frictionloss[6:] = 0.3
    model, out, mjds = P.forward_at_random_states(mm, nstates=16, seed=5)
    assert sum(d.ncon for d in mjds) > 0 and max(d.solver_niter[0] for d in mjds) == 2
    P.assert_parity(
        P.compare(model, out, mm, mjds, fields=("qacc", "qfrc_constraint")), tol=TOL, label=f"ls {ls_iterations}"
    )


def test_float32_newton_stops_at_working_precision():
    """float32: MuJoCo's tolerance (1e-8) lies below the rounding of walker2d's gradient; the solve and
    its line searches must still stop once converged rather than idle to their caps with the batch."""
    code = f"""
import json, jax, jax.numpy as jnp, numpy as np, hurtle.physics as hp
m = hp.load({_gymnasium_model("walker2d_v5.xml")!r})
lo, hi = np.asarray(m.actuator_ctrlrange, np.float32).T
def run(key):
    d = jax.tree.map(lambda x: jnp.broadcast_to(x, (64,) + x.shape), hp.make_data(m))
    def body(d, k):
        u = jax.random.uniform(k, (64, m.nu), jnp.float32, lo, hi)
        d = jax.vmap(hp.step, (None, 0))(m, d.replace(ctrl=u))
        return d, (d.solver_niter, d.contact.active.sum(-1))
    d, (niter, ncon) = jax.lax.scan(body, d, jax.random.split(key, 40))
    return niter, ncon, d
niter, ncon, d = jax.jit(run)(jax.random.key(0))
assert np.asarray(m.body_mass).dtype == np.float32

from hurtle.physics import solver as S
def line_search(d):
    # the first Newton step's line search, from qacc_smooth, as the solver takes it
    d = hp.forward(m, d)
    ctx = S._context(m, d)
    _, grad, _, state, (hw, _) = S._eval(ctx, d.qacc_smooth)
    p = -jnp.linalg.solve(ctx.M + (ctx.J.T * hw) @ ctx.J, grad)
    gtol = m.opt.tolerance * m.opt.ls_tolerance * m.stat_meaninertia * m.nv * jnp.linalg.norm(p)
    line = S._line(ctx, d.qacc_smooth, p)
    alpha, iters, _ = S._primal_search(ctx, line, gtol, 50, state, False)
    g0 = S._line_derivs(ctx, line, 0.0, state)[0]
    g = S._line_derivs(ctx, line, alpha, state)[0]
    return iters, jnp.abs(g) / jnp.abs(g0)
ls_iters, slope = jax.jit(jax.vmap(line_search))(d)
print(json.dumps(dict(max=int(niter.max()), mean=float(niter.mean()), ncon=int(ncon.max()),
                      ls_max=int(ls_iters.max()), slope=float(slope.max()))))
"""
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.splitlines()[-1])
    assert res["ncon"] > 0, res  # the feet touch the floor: contacts were solved
    assert res["max"] <= 10, res  # measured 2-5 per step; before the working-precision stop, up to 100
    # the line search, likewise, stops once a Newton step lands on the piece it was taken on (measured
    # 1-3 steps; before, 50 of 50 in most worlds: the derivative's rounding lies above MuJoCo's tolerance)
    assert res["ls_max"] <= 6, res
    assert res["slope"] < 1e-3, res  # and the point it returns is the line's minimum


def test_warm_start_a_hair_from_the_optimum_still_converges():
    """Newton from a warm start 1e-9 from the solution (a simulation near rest): the direction's curvature
    along the line lies far below MINVAL, and the line search must still take the full Newton step, as
    MuJoCo does, not one shrunk by a curvature floor (robosuite's door_lock stopped 40% of the way)."""
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "limits.xml")), "NEWTON")
    rng = np.random.default_rng(4)
    model = hp.from_mujoco(mm)
    worst, moved = 0.0, 0.0
    for _ in range(3):
        d = mujoco.MjData(mm)  # near the reference pose, at rest: qacc of order g
        d.qpos[:] = mm.qpos0 + 0.05 * rng.standard_normal(mm.nq)
        mujoco.mj_normalizeQuat(mm, d.qpos)
        mujoco.mj_forward(mm, d)
        d.qacc_warmstart[:] = d.qacc + 1e-9 * rng.standard_normal(mm.nv)
        out = P.batched(hp.forward)(model, P.batch_data(model, mm, [d]))
        mujoco.mj_forward(mm, d)  # MuJoCo from the same warm start
        scale = np.max(np.abs(d.qacc))
        worst = max(worst, np.max(np.abs(np.asarray(out.qacc[0]) - d.qacc)) / scale)
        moved = max(moved, np.max(np.abs(d.qacc_warmstart - d.qacc)) / scale)
    assert moved > 1e-12  # the solver had a step to take (a floored curvature shrinks it to a fraction)
    assert worst < 1e-14, worst
