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

from hurtle.physics import inertia, linalg, math, tracing
from hurtle.physics.constraint import (
    CONE,
    CONTACT_ELLIPTIC,
    EQUALITY,
    FRICTION_DOF,
    FRICTION_TENDON,
    LINEARNEG,
    LINEARPOS,
    QUADRATIC,
    SATISFIED,
)
from hurtle.physics.noslip import noslip
from hurtle.physics.types import Data, Model

_DSBL = mujoco.mjtDisableBit
SOL_CG = 1
LS_FIXED_STEPS = 8  # line-search Newton steps in fixed-iteration mode


class _Cones(NamedTuple):
    """Elliptic contacts of one condim: their rows, friction coefficients and regularised mu."""

    idx: np.ndarray  # (k, dim) rows of each contact
    friction: jax.Array  # (k, dim-1)
    mu: jax.Array  # (k,)


class _Rows(NamedTuple):
    """Per-row constants of the cost: regularisers, friction bounds, kinds and the active mask."""

    D: jax.Array
    R: jax.Array
    floss: jax.Array
    eq: np.ndarray | jax.Array  # static per row, or gathered into a working set
    fric: np.ndarray | jax.Array
    elliptic: np.ndarray
    active: jax.Array
    cones: tuple


def _rows(m: Model, d: Data) -> _Rows:
    lay = m.efc
    typ = lay.type
    fric = (typ == FRICTION_DOF) | (typ == FRICTION_TENDON)
    cones = []
    first = np.nonzero((typ == CONTACT_ELLIPTIC) & (lay.group == np.arange(lay.nefc)))[0]
    for dim in (3, 4, 6):
        f = first[m.contact_dim[lay.id[first]] == dim]
        if f.size:
            slots = lay.id[f]
            friction = d.contact.friction[slots, : dim - 1]
            mu = friction[:, 0] * jnp.sqrt(d.efc_R[f + 1] / d.efc_R[f])
            cones.append(_Cones(f[:, None] + np.arange(dim), friction, mu))
    return _Rows(
        d.efc_D, d.efc_R, d.efc_frictionloss, typ == EQUALITY, fric, typ == CONTACT_ELLIPTIC, d.efc_active, tuple(cones)
    )


def _cone_update(c: _Cones, D: jax.Array, active: jax.Array, jar: jax.Array):
    """Elliptic cones (MuJoCo's top, bottom and middle zones): force, state, cost, Hessian blocks."""
    jc = jar[c.idx]  # (k, dim)
    dc = D[c.idx]
    mu, fr = c.mu, c.friction
    u0 = jc[:, 0] * mu
    u = jc[:, 1:] * fr
    t = math.safe_norm(u)
    top = (u0 >= mu * t) | ((t <= 0) & (u0 >= 0))
    bottom = ~top & ((mu * u0 + t <= 0) | ((t <= 0) & (u0 < 0)))
    middle = ~top & ~bottom
    ts = jnp.where(t > 0, t, 1.0)
    dm = dc[:, 0] / (mu * mu * (1 + mu * mu))
    nmt = u0 - mu * t
    f0 = -dm * nmt * mu
    f_mid = jnp.concatenate([f0[:, None], -f0[:, None] / ts[:, None] * u * fr], -1)
    force = jnp.where(bottom[:, None], -dc * jc, jnp.where(middle[:, None], f_mid, 0.0))
    cost = jnp.where(bottom, 0.5 * jnp.sum(dc * jc * jc, -1), jnp.where(middle, 0.5 * dm * nmt * nmt, 0.0))
    state = jnp.where(bottom, QUADRATIC, jnp.where(middle, CONE, SATISFIED))
    # cone Hessian in the middle zone, scaled by diag(mu, friction) on both sides
    dim = c.idx.shape[1]
    h = jnp.zeros((len(mu), dim, dim), jar.dtype)
    h = h.at[:, 0, 0].set(1.0)
    h = h.at[:, 0, 1:].set(-(mu / ts)[:, None] * u)
    h = h.at[:, 1:, 0].set(-(mu / ts)[:, None] * u)
    inner = (mu * u0 / ts**3)[:, None, None] * u[:, :, None] * u[:, None, :]
    inner = inner + (mu * mu - mu * u0 / ts)[:, None, None] * np.eye(dim - 1, dtype=jar.dtype)
    h = h.at[:, 1:, 1:].set(inner)
    sc = jnp.concatenate([mu[:, None], fr], -1)
    h = dm[:, None, None] * sc[:, :, None] * h * sc[:, None, :]
    hq = math.diag_embed(dc)
    h = jnp.where(bottom[:, None, None], hq, jnp.where(middle[:, None, None], h, 0.0))
    act = active[c.idx[:, 0]]
    return (
        jnp.where(act[:, None], force, 0.0),
        jnp.where(act[:, None], state[:, None], SATISFIED),
        jnp.where(act, cost, 0.0),
        jnp.where(act[:, None, None], h, 0.0),
    )


def row_update(rows: _Rows, jar: jax.Array):
    """Force, state, cost, diagonal Hessian weight of every row, and elliptic cone Hessian blocks,
    at jar = J qacc - aref."""
    force, state, cost, hw = _scalar_update(rows, jar)
    blocks = []
    for c in rows.cones:
        f, st, co, h = _cone_update(c, rows.D, rows.active, jar)
        force = force.at[c.idx].set(f)
        state = state.at[c.idx].set(st.astype(jnp.int32))
        cost = cost.at[c.idx[:, 0]].set(co)
        blocks.append((c.idx, h))
    return force, state, cost, hw, tuple(blocks)


def _scalar_update(rows: _Rows, jar: jax.Array):
    """Rows other than elliptic cones: equality, friction loss, limits, pyramidal contacts. Row kinds
    known when the model is built (`eq`, `fric` as numpy masks) leave out the branches no row takes."""
    D, R, fl = rows.D, rows.R, rows.floss
    static = isinstance(rows.eq, np.ndarray) and isinstance(rows.fric, np.ndarray)
    force = -D * jar
    cost = 0.5 * D * jar * jar
    state = QUADRATIC
    quad = None  # rows in the quadratic zone: all unless a branch below takes some
    # one-sided rows (limits, contacts): no force once satisfied
    one_sided = ~rows.eq & ~rows.fric
    if not static or one_sided.any():
        sat = (jar >= 0) if static and one_sided.all() else one_sided & (jar >= 0)
        force = jnp.where(sat, 0.0, force)
        cost = jnp.where(sat, 0.0, cost)
        state = jnp.where(sat, SATISFIED, state)
        quad = ~sat
    # friction loss: quadratic near zero, linear (constant force) beyond +-R*floss
    if not static or rows.fric.any():
        neg = rows.fric & (jar <= -R * fl)
        pos = rows.fric & (jar >= R * fl)
        force = jnp.where(neg, fl, jnp.where(pos, -fl, force))
        cost = jnp.where(neg, -0.5 * R * fl * fl - fl * jar, jnp.where(pos, -0.5 * R * fl * fl + fl * jar, cost))
        state = jnp.where(neg, LINEARNEG, jnp.where(pos, LINEARPOS, state))
        lin = ~(neg | pos)
        quad = lin if quad is None else quad & lin
    act = rows.active & ~rows.elliptic if rows.elliptic.any() else rows.active
    return (
        jnp.where(act, force, 0.0),
        jnp.where(act, state, SATISFIED).astype(jnp.int32),
        jnp.where(act, cost, 0.0),
        jnp.where(act if quad is None else act & quad, D, 0.0),
    )


class _Ctx(NamedTuple):
    M: jax.Array
    J: jax.Array
    aref: jax.Array
    qfrc_smooth: jax.Array
    qacc_smooth: jax.Array
    rows: _Rows


def _products(ctx: _Ctx, qacc: jax.Array) -> tuple[jax.Array, jax.Array]:
    """M qacc and J qacc - aref."""
    return math.matmul(ctx.M, qacc), math.matmul(ctx.J, qacc) - ctx.aref


def _eval(ctx: _Ctx, qacc: jax.Array, Ma: jax.Array | None = None, jar: jax.Array | None = None):
    """Cost, gradient, row forces, states and Hessian weights at qacc (`Ma`, `jar`: its `_products`,
    computed unless given)."""
    if Ma is None or jar is None:
        Ma, jar = _products(ctx, qacc)
    force, state, rcost, hess, grad = _point(ctx, Ma, jar)
    return jnp.sum(_gauss_terms(ctx, qacc, Ma)) + jnp.sum(rcost), grad, force, state, hess


def _point(ctx: _Ctx, Ma: jax.Array, jar: jax.Array):
    """The rows' forces, states, costs and Hessian weights, and the gradient, at the point whose
    `_products` are Ma and jar."""
    force, state, rcost, hw, blocks = row_update(ctx.rows, jar)
    return force, state, rcost, (hw, blocks), Ma - ctx.qfrc_smooth - math.matmul(ctx.J.T, force)


def _gauss_terms(ctx: _Ctx, qacc: jax.Array, Ma: jax.Array) -> jax.Array:
    """The terms of Gauss's cost 0.5 (qacc - qacc_smooth)' M (qacc - qacc_smooth), one per dof."""
    return 0.5 * (Ma - ctx.qfrc_smooth) * (qacc - ctx.qacc_smooth)


class _Line(NamedTuple):
    """The cost along qacc + alpha p: the search direction and the products it needs, computed once."""

    p: jax.Array
    Mp: jax.Array
    Jp: jax.Array
    Ma: jax.Array  # M qacc
    jar: jax.Array  # J qacc - aref


def _line(ctx: _Ctx, qacc: jax.Array, p: jax.Array, Ma: jax.Array | None = None, jar: jax.Array | None = None) -> _Line:
    if Ma is None or jar is None:
        Ma, jar = _products(ctx, qacc)
    return _Line(p, math.matmul(ctx.M, p), math.matmul(ctx.J, p), Ma, jar)


def _line_derivs(ctx: _Ctx, line: _Line, alpha, prev_state: jax.Array, with_cost: bool = False):
    """First and second derivative of the cost along qacc + alpha p, the rows' states there, and whether
    the point lies on the same piece of the cost as the point with states `prev_state` (`_moved`); `with_cost`
    adds the rows' summed cost there."""
    Ma = line.Ma + alpha * line.Mp
    jar = line.jar + alpha * line.Jp
    force, state, rcost, hw, blocks = row_update(ctx.rows, jar)
    Jp = line.Jp
    # both derivatives' row and dof terms and the moved-row count in one reduction (`_sums`)
    terms = [force * Jp, hw * Jp * Jp, _moved(state, prev_state, Jp.dtype), line.p * (Ma - ctx.qfrc_smooth)]
    terms += [line.p * line.Mp] + ([rcost] if with_cost else [])
    sums = _sums(*terms)
    g = sums[3] - sums[0]
    h = sums[4] + sums[1]
    for idx, hb in blocks:
        jpc = Jp[idx]
        h = h + jnp.sum(jpc * jnp.einsum("kij,kj->ki", hb, jpc))
    if with_cost:
        return g, h, state, sums[2] == 0, sums[5]
    return g, h, state, sums[2] == 0


def _moved(state: jax.Array, prev: jax.Array, dtype) -> jax.Array:
    """1 on every row that changed state or is an elliptic cone in its middle zone, else 0: no such row
    (the sum is 0) means the two points lie on the same piece of the cost, one quadratic. Summed beside
    other row sums in one reduction (a test of its own is two kernels: XLA splits a reduction over
    more than 32 rows)."""
    return ((state != prev) | (state == CONE)).astype(dtype)


def _sums(*terms: jax.Array) -> jax.Array:
    """The sums of vectors (of rows, of dofs) in one reduction: zero-padded to one length and stacked.
    A short reduction fused into a kernel is among the costliest code LLVM compiles here (its loops
    unrolled and vectorised: 70-100 KB of IR for 9 entries); a stacked one goes to YNNPACK."""
    n = max(t.shape[-1] for t in terms)
    padded = [jnp.pad(t, (0, n - t.shape[-1])) if t.shape[-1] < n else t for t in terms]
    return jnp.sum(math.stack_select(padded, axis=0), axis=-1)


def _line_search(
    ctx: _Ctx, qacc, p, gtol, max_iter: int, fixed: bool, skip=False, line: _Line | None = None, prev_state=None
):
    """Exact minimiser of the convex piecewise-quadratic cost along p: safeguarded 1D Newton.

    Returns the step and the number of line-search steps after the first derivative at alpha = 0 (no
    step when p is not a descent direction). Stops when the derivative is within `gtol` (MuJoCo's
    test), or when a Newton step landed on the piece it was taken on: every row in the same state as at
    the previous point and no elliptic cone in its (non-quadratic) middle zone. The cost is then one
    quadratic between the two points and the step is its exact minimiser. In float64 the derivative
    there is at rounding level and MuJoCo's test stops at the same point; in float32 the rounding of the
    derivative (relative 1e-7 of terms that can be 1e7) can lie far above `gtol`, and without this test
    the search idles to `max_iter` (under vmap, the whole batch with it).

    The derivative at alpha = 0 is the loop's first pass (one traced row update for the whole search):
    from there the first step is the Newton step, and the search ends at once if p does not descend.
    With `skip` the search does not start (alpha = 0). `line` is `_line(ctx, qacc, p)` when the caller
    has it.
    """
    if line is None:
        line = _line(ctx, qacc, p)
    if prev_state is None:
        prev_state = jnp.zeros(line.jar.shape, jnp.int32)

    def step(carry):
        alpha, lo, hi, was_done, it, prev_state, newton = carry
        g, h, state, same = _line_derivs(ctx, line, alpha, prev_state)
        # the upper bracket `hi` is set once some point had g >= 0; until then it is not above `lo`
        # (it starts at 0, and every point evaluated lies above lo)
        bounded = hi > lo
        lo = jnp.where(g < 0, alpha, lo)
        hi = jnp.where(g >= 0, alpha, hi)
        bounded = bounded | (g >= 0)
        # (MuJoCo floors the curvature only where it is not positive: near the optimum a short
        # direction has a curvature far below MINVAL, and a floor there shrinks the Newton step)
        convex = h > 0
        nxt = alpha - g / jnp.where(convex, h, math.MINVAL)
        inside = (nxt > lo) & ((nxt < hi) | ~bounded)
        bisect = jnp.where(bounded, 0.5 * (lo + hi), 2.0 * jnp.maximum(lo, alpha))
        nxt = jnp.where(inside, nxt, bisect)
        exact = newton & same
        stop = jnp.where(it == 0, g >= 0, (jnp.abs(g) <= gtol) | exact | (nxt == alpha))
        done = was_done | stop  # (was_done: fixed mode's later steps)
        # the step cap ends the loop through `done` as well: the loop's predicate is then `done` alone
        # (a kernel fewer for each of the predicate's copies)
        ended = done if fixed else done | (it + 1 > max_iter)
        return jnp.where(done, alpha, nxt), lo, hi, ended, it + 1, state, inside & convex

    # Every fresh constant in the carry is a kernel of its own inside the solver's loop, so the carry
    # starts from as few as can be: alpha, lo, hi and the step count (a float, exact to 2^24) from one
    # zero; `newton` (no Newton step yet) from `skip`, which is False wherever the search runs; the
    # previous states from the rows' current ones (read only after a Newton step). Batched like the
    # direction under vmap, as the loop's predicate is (one batching pass fewer).
    zero = jnp.zeros((), qacc.dtype)
    done0 = jnp.asarray(skip, bool)
    init = tracing.varying_like(line.Jp, zero, zero, zero, done0, zero, prev_state, done0)
    if fixed:
        carry = tracing.fori_loop(0, LS_FIXED_STEPS + 1, lambda _, c: step(c), init)
    else:
        carry = tracing.while_loop(lambda c: ~c[3], step, init)
    return carry[0], carry[4].astype(jnp.int32) - 1


class _Pnt(NamedTuple):
    """A point of MuJoCo's line search: the step, the cost's change from alpha = 0, its two derivatives."""

    alpha: jax.Array
    cost: jax.Array
    g: jax.Array
    h: jax.Array

    def newton(self) -> jax.Array:
        """The 1-D Newton step from this point."""
        return self.alpha - self.g / self.h


def _pick(cond, a, b):
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


# the stages of `_primal_search`: which point the pass evaluates
_P0, _P1, _ONESIDED, _P1NEXT0, _MID, _P1NEXT, _P2NEXT = range(7)


def _primal_search(ctx: _Ctx, line: _Line, gtol, max_iter: int, prev_state, skip):
    """MuJoCo's line search for its primal solvers (engine_solver.c, `PrimalSearch`), point for point: a Newton
    step from alpha = 0; Newton steps on one side while the derivative keeps its sign; then a bracketed search whose
    candidates are the brackets' Newton points and their midpoint; `max_iter` (`opt.ls_iterations`) evaluations at
    most, each returning what MuJoCo returns where it stops short (the last Newton point when no bracket was found,
    the better bracket when the evaluations ran out). MuJoCo Playground's scenes cap the search at 5 to 8
    evaluations, where the step taken is not the line's minimiser: the same rules give the same step.

    One evaluation of the cost (`_line_derivs`) per pass of one `while_loop`, the stage carried. Returns (alpha, the
    evaluations, whether alpha is the first Newton point and it converged). In float32 a Newton point that lands on
    the piece of the cost its step was taken on is taken as converged too (it is that piece's exact minimiser; the
    derivative's rounding there can lie far above `gtol`, and the search would idle to its cap): in float64 MuJoCo's
    own test stops there."""
    dt = line.Jp.dtype
    loose = dt == jnp.float32
    zero = jnp.zeros((), dt)
    gp = jnp.dot(line.p, line.Ma - ctx.qfrc_smooth)
    pmp = jnp.dot(line.p, line.Mp)
    z = _Pnt(zero, zero, zero, zero)

    def body(c):
        (stage, alpha, it, rc0, p1, p2, p1n, p2n, b1, b2, direction, result, exact, done, pstate) = c
        g, h, state, same, rc = _line_derivs(ctx, line, alpha, pstate, with_cost=True)
        h = jnp.where(h > 0, h, math.MINVAL)  # MuJoCo: a non-convex line "SHOULD NOT OCCUR"
        it = it + 1
        rc0 = jnp.where(stage == _P0, rc, rc0)
        pt = _Pnt(alpha, alpha * gp + 0.5 * alpha * alpha * pmp + (rc - rc0), g, h)
        # where a pass ends: (done, result) and otherwise the next (stage, alpha); built from the last rule up
        nxt_stage, nxt_alpha, fin, res, ex = stage, alpha, jnp.zeros((), bool), zero, jnp.zeros((), bool)

        # the bracketed search's head: another midpoint while evaluations remain, else the better bracket
        def c_top(p1, p2, it):
            more = it < max_iter
            best = jnp.where(
                (p1.cost <= p2.cost) & (p1.cost < 0),
                p1.alpha,
                jnp.where((p2.cost <= p1.cost) & (p2.cost < 0), p2.alpha, 0.0),
            )
            return jnp.where(more, _MID, stage), 0.5 * (p1.alpha + p2.alpha), ~more, best

        # the one-sided search's head (p1 the point just evaluated, not converged)
        def b_check(p1):
            onward = (p1.g * direction_now <= -gtol) & (it < max_iter)
            out_of_steps = ~onward & (it >= max_iter)
            s = jnp.where(onward, _ONESIDED, _P1NEXT0)
            return s, p1.newton(), out_of_steps

        # stage P0: alpha = 0 evaluated; p2 = p0; next the Newton point from it
        is0 = stage == _P0
        p2 = _pick(is0, pt, p2)
        # stage P1: the first Newton point: converged, or the one-sided search begins
        is1 = stage == _P1
        conv1 = (jnp.abs(g) < gtol) & ((alpha == 0) | (pt.cost < 0))
        if loose:
            conv1 = conv1 | (same & (pt.cost <= 0))
        direction_now = jnp.where(is1, jnp.where(g < 0, 1.0, -1.0).astype(dt), direction)
        # stage ONESIDED: a Newton point past the last one
        is_b = stage == _ONESIDED
        conv_b = (jnp.abs(g) < gtol) & (pt.cost < 0)
        if loose:
            conv_b = conv_b | (same & (pt.cost <= 0))
        in_b = (is1 & ~conv1) | (is_b & ~conv_b)
        p1 = _pick(is1 | is_b, pt, p1)
        b_stage, b_alpha, b_out = b_check(pt)
        # going on one-sidedly: p2 becomes this point (MuJoCo's `p2 = p1` before the move)
        p2 = _pick(in_b & (b_stage == _ONESIDED), pt, p2)
        p2n = _pick(in_b & (b_stage == _P1NEXT0), pt, p2n)
        # stage P1NEXT0: the first bracket's Newton point evaluated: the bracketed search's head
        is_n0 = stage == _P1NEXT0
        p1n = _pick(is_n0 | (stage == _P1NEXT), pt, p1n)
        p2n = _pick(stage == _P2NEXT, pt, p2n)
        # stage MID: the midpoint and the candidates (the brackets' Newton points before this pass's updates)
        is_mid = stage == _MID
        cands = (p1n, p2n, pt)
        best_i, best_cost = jnp.full((), -1, jnp.int32), zero
        for i, cand in enumerate(cands):
            ok = (jnp.abs(cand.g) < gtol) & ((best_i == -1) | (cand.cost < best_cost))
            best_i, best_cost = jnp.where(ok, i, best_i), jnp.where(ok, cand.cost, best_cost)
        best_alpha = jnp.stack([cand.alpha for cand in cands])[jnp.maximum(best_i, 0)]

        def update(p):
            flag = jnp.zeros((), bool)
            for cand in cands:
                take = ((p.g < 0) & (cand.g < 0) & (p.g < cand.g)) | ((p.g > 0) & (cand.g > 0) & (p.g > cand.g))
                p, flag = _pick(take, cand, p), flag | take
            return p, flag

        u1, f1 = update(p1)
        u2, f2 = update(p2)
        found = is_mid & (best_i >= 0)
        stuck = is_mid & ~found & ~f1 & ~f2
        moving = is_mid & ~found & ~stuck
        p1, p2 = _pick(moving, u1, p1), _pick(moving, u2, p2)
        b1, b2 = jnp.where(is_mid, f1, b1), jnp.where(is_mid, f2, b2)

        # the next evaluation, stage by stage
        c_stage, c_alpha, c_out, c_best = c_top(p1, p2, it)
        after_mid = jnp.where(b1, _P1NEXT, _P2NEXT)
        after_mid_alpha = jnp.where(b1, p1.newton(), p2.newton())
        after_p1n = jnp.where(b2, _P2NEXT, c_stage)
        after_p1n_alpha = jnp.where(b2, p2.newton(), c_alpha)
        nxt_stage = jnp.select(
            [is0, in_b, is_n0 | (stage == _P2NEXT), moving, stage == _P1NEXT],
            [jnp.asarray(_P1), b_stage, c_stage, after_mid, after_p1n],
            stage,
        )
        nxt_alpha = jnp.select(
            [is0, in_b, is_n0 | (stage == _P2NEXT), moving, stage == _P1NEXT],
            [pt.newton(), b_alpha, c_alpha, after_mid_alpha, after_p1n_alpha],
            alpha,
        )
        to_c_end = (is_n0 | (stage == _P2NEXT) | ((stage == _P1NEXT) & ~b2)) & c_out
        fin = (is1 & conv1) | (is_b & conv_b) | (in_b & b_out) | found | stuck | to_c_end
        res = jnp.select(
            [is1 & conv1, is_b & conv_b, in_b & b_out, found, stuck, to_c_end],
            [alpha, alpha, pt.alpha, best_alpha, pt.alpha, c_best],
            zero,
        )
        ex = is1 & conv1
        return (
            nxt_stage.astype(jnp.int32), nxt_alpha, it, rc0, p1, p2, p1n, p2n, b1, b2, direction_now,
            jnp.where(fin, res, result), ex, done | fin, state,
        )  # fmt: skip

    snorm = math.safe_norm(line.p)
    done0 = jnp.asarray(skip, bool) | (snorm < math.MINVAL)
    false = jnp.zeros((), bool)
    init = (jnp.zeros((), jnp.int32), zero, zero, zero, z, z, z, z, false, false, zero, zero, false, done0, prev_state)
    leaves, tree = jax.tree.flatten(init)
    init = jax.tree.unflatten(tree, tracing.varying_like(line.Jp, *leaves, tuple_=True))
    out = tracing.while_loop(lambda c: ~c[13], body, init)
    return out[11], out[2].astype(jnp.int32), out[12]


def _context(m: Model, d: Data) -> _Ctx:
    return _Ctx(d.qM, d.efc_J, d.efc_aref, d.qfrc_smooth, d.qacc_smooth, _rows(m, d))


def hessian(ctx: _Ctx, hess) -> jax.Array:
    """Newton's Hessian M + J' H_rows J, from `_eval`'s Hessian weights (diagonal, and elliptic cones'
    blocks)."""
    hw, blocks = hess
    # J' diag(hw) is laid out as its own (nv, nefc) array, so the product is a plain (nv, nefc) x
    # (nefc, nv) one: XLA would otherwise fold the transpose into the dot, whose CPU emitter then
    # contracts J's major axis in a scalar loop (3x slower on half_cheetah)
    H = ctx.M + math.matmul(jax.lax.optimization_barrier(ctx.J.T * hw), ctx.J)
    for idx, hb in blocks:
        jc = ctx.J[idx]  # (k, dim, nv)
        H = H + math.einsum("kiv,kij,kjw->vw", jc, hb, jc)
    return H


class _State(NamedTuple):
    qacc: jax.Array
    Ma: jax.Array  # M qacc
    jar: jax.Array  # J qacc - aref
    force: jax.Array
    cost: jax.Array
    grad: jax.Array
    search: jax.Array
    mgrad: jax.Array
    state: jax.Array
    it: jax.Array
    done: jax.Array


@tracing.inline_numpy
def solve(m: Model, d: Data) -> Data:
    """Constrained acceleration `qacc`, `efc_force`, `efc_state`, `qfrc_constraint`, `solver_niter`.

    With a working set (`Model.njmax` rows; adaptive mode) Newton runs on the active rows only,
    gathered into `njmax` slots. Inactive rows (contact slots whose geoms do not touch, limits away
    from their margin) contribute nothing to the cost, so the problem and its solution are the same,
    and every product of a trip (J'DJ above all) shrinks with the rows. A world with more active rows
    than `njmax` is solved on all of them instead: a `while_loop` whose predicate is that overflow, so
    unbatched it is a branch, and under vmap the full solve runs once for the batch when any world
    overflows and never otherwise.

    Derivatives (`opt.solver_grad`): "implicit" (the default) differentiates the solution, not the
    iterations that found it (`_implicit`): exact at the optimum whatever the mode, tolerance or
    iteration count, forward and reverse mode alike. "unrolled" differentiates the iterations
    themselves: reverse mode then needs `solver_mode="fixed"` (lax loops without early exit).
    """
    if m.opt.solver_grad not in ("implicit", "unrolled"):
        raise ValueError(f"opt.solver_grad must be 'implicit' or 'unrolled', got {m.opt.solver_grad!r}")
    if m.efc.nefc == 0:
        return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth))
    with jax.named_scope("solve"):
        ctx = _context(m, d)
        if m.opt.solver_grad == "unrolled":
            out = _solve_problem(m, d, ctx)
        else:
            out = _implicit(m, d, ctx)
        qacc, force, state, qfrc, niter = out
        d = d.replace(qacc=qacc, efc_force=force, efc_state=state, qfrc_constraint=qfrc, solver_niter=niter)
    if m.opt.noslip_iterations > 0:
        d = noslip(m, d)
    return d


def _solve_problem(m: Model, d: Data, ctx: _Ctx):
    """(qacc, efc_force, efc_state, qfrc_constraint, niter) of the problem `ctx` on every row: on a working
    set of the active rows where the model has one (adaptive mode), else on all."""
    if m.njmax <= 0 or m.opt.solver_mode == "fixed":
        return _solve_rows(m, d, ctx, d.efc_state)
    out, overflow = _working_set(m, d, ctx, m.njmax)

    def every_row(c):
        # the barrier ties the inputs to the loop's carry: XLA would otherwise hoist the
        # solve (loop-invariant) out of the loop and run it whether the loop runs or not
        dd, _ = jax.lax.optimization_barrier((d, c))
        return (jnp.zeros((), bool), *_solve_rows(m, dd, _context(m, dd), dd.efc_state))

    return tracing.while_loop(lambda c: c[0], every_row, (overflow, *out))[1:]


def _implicit(m: Model, d: Data, ctx: _Ctx):
    """`_solve_problem` with derivatives by implicit differentiation at the optimum.

    The solution qacc* zeroes the cost's gradient G(qacc, p) = M qacc - qfrc_smooth - J' f(J qacc - aref),
    p the problem's arrays (M, J, aref, qfrc_smooth and the rows' D, R, friction loss and cone
    coefficients). Differentiating G(qacc*(p), p) = 0: dqacc = -H^-1 dG/dp dp, H = dG/dqacc = M + J' H_rows J,
    the Newton Hessian at the solution (the rows in their quadratic zone weighted by D, elliptic cones in
    their middle zone by their cone blocks). The rows' forces and J' f follow from qacc* and p by the chain
    rule. One Cholesky factorisation of H (one Newton iteration's cost) serves every tangent; the rule is
    linear in the tangents, so reverse mode is its transpose (one solve per cotangent).

    Defined where G is smooth: at a row exactly on a kink of its cost (a contact at zero distance and
    zero relative velocity) the derivative is one side's. The warm start, preconditioner and working
    set change how the optimum is found, not where it is: they carry no derivative.
    """
    rows = ctx.rows
    cones = tuple((c.friction, c.mu) for c in rows.cones)
    params = (ctx.M, ctx.J, ctx.aref, ctx.qfrc_smooth, ctx.qacc_smooth, rows.D, rows.R, rows.floss, cones)

    def problem(params, active) -> _Ctx:
        M, J, aref, qfrc_smooth, qacc_smooth, D, R, floss, cones_p = params
        cs = tuple(c._replace(friction=f, mu=mu) for c, (f, mu) in zip(rows.cones, cones_p))
        r = rows._replace(D=D, R=R, floss=floss, active=active, cones=cs)
        return _Ctx(M, J, aref, qfrc_smooth, qacc_smooth, r)

    @jax.custom_jvp
    def solved(params, active, d):
        return _solve_problem(m, d, problem(params, active))

    @solved.defjvp
    def solved_jvp(primals, tangents):
        params, active, d = primals
        dparams = tangents[0]
        out = solved(params, active, d)
        qacc = jax.lax.stop_gradient(out[0])
        c = problem(params, active)
        _, jar = _products(c, qacc)
        hw, blocks = row_update(c.rows, jar)[3:]
        chol = linalg.cholesky_symmetric(hessian(c, (hw, blocks)))

        def gradient(p):
            cp = problem(p, active)
            Ma, jar = _products(cp, qacc)
            return _point(cp, Ma, jar)[4]

        def forces(q, p):
            cp = problem(p, active)
            force = row_update(cp.rows, _products(cp, q)[1])[0]
            return force, math.matmul(cp.J.T, force)

        dqacc = -linalg.cho_solve(chol, jax.jvp(gradient, (params,), (dparams,))[1])
        dforce, dqfrc = jax.jvp(forces, (qacc, params), (dqacc, dparams))[1]
        ints = tuple(np.zeros(np.shape(x), jax.dtypes.float0) for x in (out[2], out[4]))
        return out, (dqacc, dforce, ints[0], dqfrc, ints[1])

    return solved(params, rows.active, d)


def _working_set(m: Model, d: Data, ctx: _Ctx, k: int):
    """`_solve_rows` on the first `k` active rows, its forces and states put back on every row, and
    whether the world has more active rows than `k`."""
    act = d.efc_active
    idx, valid, rank = math.first_active(act, k)
    r = ctx.rows
    rows = _Rows(
        r.D[idx],
        r.R[idx],
        r.floss[idx],
        jnp.asarray(r.eq)[idx],
        jnp.asarray(r.fric)[idx],
        np.zeros(k, bool),
        valid,
        (),
    )
    sub = _Ctx(ctx.M, ctx.J[idx], ctx.aref[idx], ctx.qfrc_smooth, ctx.qacc_smooth, rows)
    qacc, force, state, qfrc, niter = _solve_rows(m, d, sub, d.efc_state[idx])
    kept = act & (rank <= k)  # an active row r sits in slot rank[r] - 1
    slot = jnp.clip(rank - 1, 0, k - 1)
    force = jnp.where(kept, force[slot], 0.0)
    state = jnp.where(kept, state[slot], SATISFIED)
    return (qacc, force, state, qfrc, niter), rank[-1] > k


def _solve_rows(m: Model, d: Data, ctx: _Ctx, efc_state: jax.Array):
    """Newton or CG on the rows of `ctx` from `d.qacc_warmstart`: (qacc, row forces, row states,
    qfrc_constraint, iterations)."""
    newton = m.opt.solver != SOL_CG  # PGS is solved with Newton: same optimum
    fixed = m.opt.solver_mode == "fixed"
    scale = 1.0 / (m.stat_meaninertia * max(1, m.nv))
    tol = m.opt.tolerance
    gtol_ls = tol * m.opt.ls_tolerance / scale

    # warm start: the better of qacc_warmstart and qacc_smooth (both costs in one vectorised pass)
    # M qacc and J qacc - aref are carried and moved with qacc (+ alpha M p, + alpha J p, as
    # MuJoCo's solver updates them), so an iteration multiplies by J and M once, for its direction
    qacc = d.qacc_smooth
    if m.disabled(_DSBL.mjDSBL_WARMSTART):
        Ma, jar = _products(ctx, qacc)
        start_cost = tracing.varying_like(qacc, jnp.zeros((), qacc.dtype))  # (not read: below)
    else:
        # (each product on its own: stacked, the two candidates made batched products with transposed
        # operands, slower than the four plain ones)
        qw, qs = d.qacc_warmstart, d.qacc_smooth
        Mw, jw = _products(ctx, qw)
        js = math.matmul(ctx.J, qs) - ctx.aref
        # both costs in one reduction (Gauss's term is 0 at qacc_smooth)
        sums = _sums(row_update(ctx.rows, jw)[2], _gauss_terms(ctx, qw, Mw), row_update(ctx.rows, js)[2])
        cw = sums[0] + sums[1]
        warm = cw < sums[2]
        start_cost = cw  # (any cost: the loop's first pass does not read it)
        qacc, jar = jnp.where(warm, qw, qs), jnp.where(warm, jw, js)
        Ma = jnp.where(warm, Mw, math.matmul(ctx.M, qs))

    def precondition(grad, hess):
        if newton:
            return linalg.cho_solve(linalg.cholesky_symmetric(hessian(ctx, hess)), grad)
        return inertia.solve_m(m, d, grad)

    # The loop's first pass (it = -1) evaluates the starting point: its line search is skipped
    # (alpha = 0), and it sets the first direction (-M^-1 grad or -H^-1 grad) and MuJoCo's initial
    # convergence test. One traced copy of the cost, Hessian and factorisation serves the start and
    # every iteration.
    # The first pass reads no field of its state but qacc, Ma, jar and the search direction, which
    # it multiplies by alpha = 0: the others, and the direction, start as arrays the step already
    # holds (a fresh constant array is a kernel of its own in the compiled loop); only the counter
    # and `done` are new (batched like qacc: vmap then traces the loop's body twice, not three times)
    start, done0 = tracing.varying_like(qacc, jnp.full((), -1, jnp.int32), jnp.zeros((), bool))
    init = _State(qacc, Ma, jar, jar, start_cost, Ma, qacc, Ma, efc_state, start, done0)

    def iterate(s: _State) -> _State:
        first = s.it < 0
        gtol = gtol_ls * math.safe_norm(s.search)
        line = _line(ctx, s.qacc, s.search, s.Ma, s.jar)
        if fixed:
            alpha, _ = _line_search(
                ctx, s.qacc, s.search, gtol, m.opt.ls_iterations, fixed, skip=first, line=line, prev_state=s.state
            )
            exact = jnp.ones((), bool)
        else:  # MuJoCo's own search, its stopping rules included
            alpha, _, exact = _primal_search(ctx, line, gtol, m.opt.ls_iterations, s.state, first)
        qacc = s.qacc + alpha * s.search
        Ma, jar = s.Ma + alpha * line.Mp, s.jar + alpha * line.Jp
        force, state, rcost, hess, grad = _point(ctx, Ma, jar)
        mgrad = precondition(grad, hess)
        # in one reduction (`_sums`): the rows' cost and the count of rows that moved to another piece
        # of it (`_moved`), Gauss's cost, |grad|^2, grad . M^-1 grad and the count of changed dofs
        dt = qacc.dtype
        moved = (qacc != s.qacc).astype(dt)
        sums = _sums(rcost, _moved(state, s.state, dt), _gauss_terms(ctx, qacc, Ma), grad * grad, grad * mgrad, moved)
        cost = sums[0] + sums[2]
        improvement = scale * (s.cost - cost)
        gradient = scale * jnp.sqrt(sums[3])
        gap = 0.5 * scale * sums[4]
        stop = (alpha == 0) | ((improvement > 0) & (improvement < tol)) | (gradient < tol)
        stop = stop | (sums[5] == 0)  # a fixed point: more steps change nothing
        same = sums[1] == 0
        if newton:
            # Exact convergence: no row changed state over the Newton step and no elliptic cone
            # is in its (non-quadratic) middle zone, so the step minimised the very quadratic the
            # cost is on this piece: the point is optimal in exact arithmetic, and more steps
            # only chase rounding. In float64 MuJoCo's tests stop here too (the gradient is at
            # rounding level); in float32 MuJoCo's tolerance (1e-8) can lie below the rounding
            # of the gradient and the cost, and without this test a solve idles to the iteration
            # cap (and under vmap the whole batch with it).
            # (the step must be the search's first Newton point: a step MuJoCo's search cut short of it is not
            # the piece's minimiser)
            stop = stop | (same & exact)
            stop = stop | (gap < tol)
            search = -mgrad
            stop0 = (gap < tol) & (gradient < tol)
        else:
            search = jnp.where(first, -mgrad, _hager_zhang(s.search, s.grad, s.mgrad, grad, mgrad))
            stop0 = gap < tol
        stop = jnp.where(first, stop0, stop)
        # outside fixed mode the iteration cap ends the loop through `done`, its predicate alone
        done = stop if fixed else stop | (s.it + 1 >= m.opt.iterations)
        new = _State(qacc, Ma, jar, force, cost, grad, search, mgrad, state, s.it + 1, done)
        if not fixed:
            # the while loop never runs a done state (under vmap, its batching keeps a done
            # world's state): no select here
            return new
        # in fixed mode a converged problem keeps its solution
        return jax.tree.map(lambda a, b: jnp.where(s.done, a, b), s, new)

    if fixed:
        final = tracing.fori_loop(0, m.opt.iterations + 1, lambda _, s: iterate(s), init)
    else:
        final = tracing.while_loop(lambda s: ~s.done, iterate, init)
    # the last iterate's rows: forces and states at the returned qacc
    return final.qacc, final.force, final.state, math.matmul(ctx.J.T, final.force), final.it


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
