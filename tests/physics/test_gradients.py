"""Derivatives through the constraint solver (`opt.solver_grad`): the implicit derivative at the optimum against
central finite differences of a 20-step rollout (float64) on a model with every kind of constraint row, against
the unrolled fixed-iteration derivative, and finite in float32 on the locomotion tasks' contact states."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
import hurtle.physics as hp
from hurtle.physics.constraint import CONE, EQUALITY, LINEARNEG, LINEARPOS, QUADRATIC

MODELS = os.path.join(os.path.dirname(__file__), "models")
GRADIENTS = os.path.join(MODELS, "gradients.xml")
FD_TOL = 1e-4  # relative (to the largest entry) error of the derivative against central differences
STEPS = 20


def _start(cone: str, solver: str = "NEWTON"):
    """The model (tight tolerance) and a state with every kind of row active: the shoulder at its limit,
    friction loss sliding, the wrist's equality, the ball resting and the capsule sliding on the floor."""
    mm = mujoco.MjModel.from_xml_path(GRADIENTS)
    mm.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{solver}")
    mm.opt.cone = getattr(mujoco.mjtCone, f"mjCONE_{cone}")
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 100, 50
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(0)
    md.qvel[:] = rng.standard_normal(mm.nv) * 0.5
    md.ctrl[:] = [1.0, -0.5]
    for _ in range(60):
        mujoco.mj_step(mm, md)
    md.qvel[6], md.qvel[0] = 1.5, -1.0  # the capsule slides, the ball rolls
    mujoco.mj_forward(mm, md)
    model = hp.from_mujoco(mm)
    return model, hp.from_mjdata(model, md, mm), md


def _loss(model, d0, weights):
    """A scalar of the state 20 steps on, as a function of the initial velocities and the controls."""

    def loss(x):
        d = d0.replace(qvel=x[: model.nv], ctrl=x[model.nv :])
        d, _ = jax.lax.scan(lambda d, _: (hp.step(model, d), None), d, None, length=STEPS)
        return jnp.sum(weights * d.qpos) + 0.1 * jnp.sum(d.qvel**2)

    return loss


def _central_differences(f, x, eps=1e-6):
    f = jax.jit(f)
    return np.array([(f(x.at[i].add(eps)) - f(x.at[i].add(-eps))) / (2 * eps) for i in range(x.shape[0])])


@pytest.mark.parametrize("solver, cone", [("NEWTON", "PYRAMIDAL"), ("NEWTON", "ELLIPTIC"), ("CG", "ELLIPTIC")])
def test_rollout_gradient_matches_finite_differences(solver, cone):
    """d loss / d (qvel, ctrl) through 20 steps with limits, friction loss, an equality and contacts (condim 3
    and 4; elliptic cones in their middle zone) equals central differences within 1e-4. The reference is the
    exact solution's (Newton at tolerance 1e-12): CG stops on its improvement test about 1e-7 short of the
    optimum, enough to move its own differences by 1e-4, where the implicit derivative is the optimum's."""
    exact, d0, md = _start(cone)
    states = set(md.efc_state.tolist())
    kinds = set(np.asarray(exact.efc.type)[np.asarray(hp.forward(exact, d0).efc_active)].tolist())
    assert EQUALITY in kinds and md.ncon >= 3
    assert {QUADRATIC} <= states and (states & {LINEARNEG, LINEARPOS})  # friction loss past its linear threshold
    if cone == "ELLIPTIC":
        assert CONE in states  # the sliding capsule's cone rows in the middle zone
    model = exact if solver == "NEWTON" else _start(cone, solver)[0]
    weights = jnp.asarray(np.random.default_rng(1).standard_normal(model.nq))
    x0 = jnp.concatenate([d0.qvel, d0.ctrl])
    grad = np.asarray(jax.jit(jax.grad(_loss(model, d0, weights)))(x0))
    fd = _central_differences(_loss(exact, d0, weights), x0)
    assert np.max(np.abs(grad - fd)) <= FD_TOL * np.max(np.abs(fd))
    assert np.all(grad[model.nv :] != 0)  # the controls reach the loss


def test_implicit_equals_unrolled_fixed_iterations():
    """At convergence (fixed mode, 30 Newton iterations) the derivative through the unrolled iterations is the
    implicit one within 1e-6; the implicit derivative does not depend on the mode or the iteration count."""
    model, d0, _ = _start("ELLIPTIC")
    weights = jnp.asarray(np.random.default_rng(2).standard_normal(model.nq))
    x0 = jnp.concatenate([d0.qvel, d0.ctrl])
    fixed = model.opt.replace(solver_mode="fixed", iterations=30)
    grads = {}
    for how in ("implicit", "unrolled"):
        m = model.replace(opt=fixed.replace(solver_grad=how))
        grads[how] = np.asarray(jax.jit(jax.grad(_loss(m, d0, weights)))(x0))
    adaptive = np.asarray(jax.jit(jax.grad(_loss(model, d0, weights)))(x0))
    scale = np.max(np.abs(grads["implicit"]))
    assert np.max(np.abs(grads["implicit"] - grads["unrolled"])) <= 1e-6 * scale
    assert np.max(np.abs(grads["implicit"] - adaptive)) <= 1e-6 * scale


def test_forward_mode_is_the_implicit_derivative():
    """jvp (forward mode) and vjp (reverse) of one step agree: the implicit rule serves both."""
    model, d0, _ = _start("ELLIPTIC")
    t = jnp.asarray(np.random.default_rng(3).standard_normal(model.nv))
    c = jnp.asarray(np.random.default_rng(4).standard_normal(model.nv))

    def qacc(v):
        return hp.forward(model, d0.replace(qvel=v)).qacc

    jvp = jax.jit(lambda v: jax.jvp(qacc, (v,), (t,))[1])(d0.qvel)
    vjp = jax.jit(lambda v: jax.vjp(qacc, v)[1](c)[0])(d0.qvel)
    np.testing.assert_allclose(jnp.dot(c, jvp), jnp.dot(vjp, t), rtol=1e-10)


def test_solver_grad_is_checked():
    model = hp.load(GRADIENTS)
    bad = model.replace(opt=model.opt.replace(solver_grad="exact"))
    with pytest.raises(ValueError, match=r"opt.solver_grad must be 'implicit' or 'unrolled', got 'exact'"):
        jax.eval_shape(hp.forward, bad, hp.make_data(bad))  # raised while tracing, before any step runs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["halfcheetah", "ant", "humanoid"])
def test_float32_gradients_finite_on_locomotion_contacts(name):
    """float32, the adaptive solver: the gradient of 10 steps' reward with respect to the actions is finite and
    nonzero from 8 states of each task after 30 random steps, most with feet (or body) on the floor: the contact
    states where Brax's analytic gradients report inf and NaN."""
    with jax.enable_x64(False):
        env = envs.make(name)
        key = jax.random.key(0)
        keys = jax.random.split(key, 8)
        state = jax.vmap(env.reset)(keys)
        act_size = env.action_space.shape[0]

        def settle(s, k):
            a = jax.random.uniform(k, (8, act_size), jnp.float32, -0.05, 0.05)
            return jax.vmap(env.step)(s, a), None

        state, _ = jax.jit(lambda s: jax.lax.scan(settle, s, jax.random.split(key, 30)))(state)
        assert int(jnp.sum(jnp.any(state.physics.contact.active, -1))) >= 6

        def returns(actions, s):
            def body(s, a):
                s = env.step(s, a)
                return s, s.reward

            return jnp.sum(jax.lax.scan(body, s, actions)[1])

        actions = jnp.full((8, 10, act_size), 0.1, jnp.float32)
        grad = jax.jit(jax.vmap(jax.grad(returns)))(actions, state)
        assert grad.dtype == jnp.float32
        assert bool(jnp.all(jnp.isfinite(grad))) and bool(jnp.all(jnp.any(grad != 0, axis=(1, 2))))
