"""MuJoCo's primal constraint solver: minimise, over qacc,

    0.5 (qacc - qacc_smooth)' M (qacc - qacc_smooth) + s(J qacc - aref)

where s is the convex soft-constraint cost of every active row. Newton (Cholesky of the Hessian)
or CG (preconditioned by M, Hager-Zhang directions), both with an exact line search on the
piecewise-quadratic cost along the search direction.

Two modes: `adaptive` (while loops, stops at `opt.tolerance`) and `fixed` (`opt.iterations` Newton
or CG steps and a fixed number of line-search steps, all in `lax.scan`, so reverse-mode
differentiation passes through).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import inertia, math
from hurtle.physics.constraint import (
    EQUALITY,
    FRICTION_DOF,
    FRICTION_TENDON,
    LINEARNEG,
    LINEARPOS,
    QUADRATIC,
    SATISFIED,
)
from hurtle.physics.types import Data, Model

_DSBL = mujoco.mjtDisableBit
SOL_CG = 1
LS_FIXED_STEPS = 8  # line-search Newton steps in fixed-iteration mode


class _Rows(NamedTuple):
    """Per-row constants of the cost: regularisers, friction bounds, kinds and the active mask."""

    D: jax.Array
    R: jax.Array
    floss: jax.Array
    eq: np.ndarray
    fric: np.ndarray
    active: jax.Array


def _rows(m: Model, d: Data) -> _Rows:
    typ = m.efc.type
    fric = (typ == FRICTION_DOF) | (typ == FRICTION_TENDON)
    return _Rows(d.efc_D, d.efc_R, d.efc_frictionloss, typ == EQUALITY, fric, d.efc_active)


def row_update(rows: _Rows, jar: jax.Array):
    """Force, state, cost and Hessian weight of every row at jar = J qacc - aref."""
    D, R, fl = rows.D, rows.R, rows.floss
    quad_cost = 0.5 * D * jar * jar
    force = -D * jar
    # friction loss: quadratic near zero, linear (constant force) beyond +-R*floss
    neg = rows.fric & (jar <= -R * fl)
    pos = rows.fric & (jar >= R * fl)
    # one-sided rows (limits, contacts): no force once satisfied
    sat = ~rows.eq & ~rows.fric & (jar >= 0)
    force = jnp.where(neg, fl, jnp.where(pos, -fl, jnp.where(sat, 0.0, force)))
    cost = jnp.where(
        neg,
        -0.5 * R * fl * fl - fl * jar,
        jnp.where(pos, -0.5 * R * fl * fl + fl * jar, jnp.where(sat, 0.0, quad_cost)),
    )
    state = jnp.where(neg, LINEARNEG, jnp.where(pos, LINEARPOS, jnp.where(sat, SATISFIED, QUADRATIC)))
    quad = ~(neg | pos | sat)
    act = rows.active
    return (
        jnp.where(act, force, 0.0),
        jnp.where(act, state, SATISFIED).astype(jnp.int32),
        jnp.where(act, cost, 0.0),
        jnp.where(act & quad, D, 0.0),
    )


class _Ctx(NamedTuple):
    M: jax.Array
    J: jax.Array
    aref: jax.Array
    qfrc_smooth: jax.Array
    qacc_smooth: jax.Array
    rows: _Rows


def _eval(ctx: _Ctx, qacc: jax.Array):
    """Cost, gradient, row forces, states and Hessian weights at qacc."""
    Ma = math.matmul(ctx.M, qacc)
    jar = math.matmul(ctx.J, qacc) - ctx.aref
    force, state, rcost, hw = row_update(ctx.rows, jar)
    gauss = 0.5 * jnp.dot(Ma - ctx.qfrc_smooth, qacc - ctx.qacc_smooth)
    grad = Ma - ctx.qfrc_smooth - math.matmul(ctx.J.T, force)
    return gauss + jnp.sum(rcost), grad, force, state, hw


def _line_derivs(ctx: _Ctx, qacc, p, Mp, Jp, alpha):
    """First and second derivative of the cost along qacc + alpha p."""
    Ma = math.matmul(ctx.M, qacc) + alpha * Mp
    jar = math.matmul(ctx.J, qacc) - ctx.aref + alpha * Jp
    force, _, _, hw = row_update(ctx.rows, jar)
    g = jnp.dot(p, Ma - ctx.qfrc_smooth) - jnp.dot(force, Jp)
    h = jnp.dot(p, Mp) + jnp.dot(hw, Jp * Jp)
    return g, h


def _line_search(ctx: _Ctx, qacc, p, gtol, max_iter: int, fixed: bool):
    """Exact minimiser of the convex piecewise-quadratic cost along p: safeguarded 1D Newton."""
    Mp = math.matmul(ctx.M, p)
    Jp = math.matmul(ctx.J, p)
    g0, h0 = _line_derivs(ctx, qacc, p, Mp, Jp, 0.0)
    alpha0 = jnp.where(g0 < 0, -g0 / jnp.maximum(h0, math.MINVAL), 0.0)

    def step(carry):
        alpha, lo, hi, _, it = carry
        g, h = _line_derivs(ctx, qacc, p, Mp, Jp, alpha)
        lo = jnp.where(g < 0, alpha, lo)
        hi = jnp.where(g >= 0, alpha, hi)
        nxt = alpha - g / jnp.maximum(h, math.MINVAL)
        inside = (nxt > lo) & (nxt < hi)
        bisect = jnp.where(jnp.isfinite(hi), 0.5 * (lo + hi), 2.0 * jnp.maximum(lo, alpha))
        nxt = jnp.where(inside, nxt, bisect)
        done = jnp.abs(g) <= gtol
        return jnp.where(done, alpha, nxt), lo, hi, done, it + 1

    init = (alpha0, jnp.zeros_like(alpha0), jnp.full_like(alpha0, jnp.inf), g0 >= 0, 0)
    if fixed:
        carry = jax.lax.fori_loop(0, LS_FIXED_STEPS, lambda _, c: step(c), init)
    else:
        carry = jax.lax.while_loop(lambda c: ~c[3] & (c[4] < max_iter), step, init)
    return jnp.where(g0 < 0, carry[0], 0.0)


class _State(NamedTuple):
    qacc: jax.Array
    cost: jax.Array
    grad: jax.Array
    search: jax.Array
    mgrad: jax.Array
    it: jax.Array
    done: jax.Array


def solve(m: Model, d: Data) -> Data:
    """Constrained acceleration `qacc`, `efc_force`, `efc_state`, `qfrc_constraint`, `solver_niter`."""
    if m.efc.nefc == 0:
        return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth))
    with jax.named_scope("solve"):
        ctx = _Ctx(d.qM, d.efc_J, d.efc_aref, d.qfrc_smooth, d.qacc_smooth, _rows(m, d))
        newton = m.opt.solver != SOL_CG  # PGS is solved with Newton: same optimum
        fixed = m.opt.solver_mode == "fixed"
        scale = 1.0 / (m.stat_meaninertia * max(1, m.nv))
        tol = m.opt.tolerance
        gtol_ls = tol * m.opt.ls_tolerance / scale

        # warm start: the better of qacc_warmstart and qacc_smooth
        qacc = d.qacc_smooth
        if not m.disabled(_DSBL.mjDSBL_WARMSTART):
            cw = _eval(ctx, d.qacc_warmstart)[0]
            cs = _eval(ctx, d.qacc_smooth)[0]
            qacc = jnp.where(cw < cs, d.qacc_warmstart, d.qacc_smooth)
        cost, grad, _, _, hw = _eval(ctx, qacc)

        def precondition(grad, hw):
            if newton:
                H = ctx.M + math.matmul(ctx.J.T * hw, ctx.J)
                cho = jax.scipy.linalg.cho_factor(H, lower=True)
                return jax.scipy.linalg.cho_solve(cho, grad)
            return inertia.solve_m(m, d, grad)

        mgrad = precondition(grad, hw)
        gap = 0.5 * scale * jnp.dot(grad, mgrad)
        gnorm = scale * math.safe_norm(grad)
        done0 = (gap < tol) & (gnorm < tol) if newton else (gap < tol)
        init = _State(qacc, cost, grad, -mgrad, mgrad, jnp.zeros((), jnp.int32), done0)

        def iterate(s: _State) -> _State:
            alpha = _line_search(ctx, s.qacc, s.search, gtol_ls * math.safe_norm(s.search), m.opt.ls_iterations, fixed)
            qacc = s.qacc + alpha * s.search
            cost, grad, _, _, hw = _eval(ctx, qacc)
            mgrad = precondition(grad, hw)
            improvement = scale * (s.cost - cost)
            gradient = scale * math.safe_norm(grad)
            stop = (alpha == 0) | ((improvement > 0) & (improvement < tol)) | (gradient < tol)
            if newton:
                stop = stop | (0.5 * scale * jnp.dot(grad, mgrad) < tol)
                search = -mgrad
            else:
                search = _hager_zhang(s.search, s.grad, s.mgrad, grad, mgrad)
            new = _State(qacc, cost, grad, search, mgrad, s.it + 1, stop)
            # in fixed mode a converged problem keeps its solution
            return jax.tree.map(lambda a, b: jnp.where(s.done, a, b), s, new)

        if fixed:
            final = jax.lax.fori_loop(0, m.opt.iterations, lambda _, s: iterate(s), init)
        else:
            final = jax.lax.while_loop(lambda s: ~s.done & (s.it < m.opt.iterations), iterate, init)
        _, _, force, state, _ = _eval(ctx, final.qacc)
        return d.replace(
            qacc=final.qacc,
            efc_force=force,
            efc_state=state,
            qfrc_constraint=math.matmul(ctx.J.T, force),
            solver_niter=final.it,
        )


def _hager_zhang(search, grad_old, mgrad_old, grad, mgrad, eta=0.01):
    """Hager-Zhang conjugate direction with M-preconditioning, as MuJoCo's CG."""
    y = grad - grad_old
    my = mgrad - mgrad_old
    dy = jnp.dot(search, y)
    ok = dy >= math.MINVAL
    dys = jnp.where(ok, dy, 1.0)
    beta_hz = (jnp.dot(y, mgrad) - 2.0 * (jnp.dot(y, my) / dys) * jnp.dot(search, grad)) / dys
    eta_k = -1.0 / jnp.maximum(math.MINVAL, math.safe_norm(search) * jnp.minimum(eta, math.safe_norm(grad)))
    beta = jnp.where(ok, jnp.maximum(eta_k, beta_hz), 0.0)
    return -mgrad + beta * search
