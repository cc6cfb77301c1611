"""MuJoCo's noslip post-processing (mj_solNoSlip): Gauss-Seidel sweeps over the friction forces.

After the main solve, the friction forces are re-solved with the normal forces held: block Gauss-Seidel on

    min 0.5 f' A f + f' b,   A = J M^-1 J' (no regulariser R),  b = J qacc_smooth - aref

over the friction-loss rows (each clamped to its loss), then every contact's friction: a pyramidal contact's
pairs of opposing edges (each pair's sum held, so the normal force stays), an elliptic contact's tangential
forces inside its friction ellipsoid (a small QCQP by Newton on the multiplier). Without R the friction is
hard: contacts stop slipping where the soft constraint lets them creep. Sweeps stop when a sweep improves
the cost by less than `noslip_tolerance` (scaled as the main solver's), or after `noslip_iterations`.

Branch-free: the rows of each block are fixed when the model is built (contacts' blocks are taken in MuJoCo's
contact order, computed from the contacts each step), each sweep is a `fori_loop` over blocks reading one block
of rows of A, and the sweeps run in a `while_loop` (adaptive) or a `fori_loop` that holds a converged state
(fixed mode). Inactive rows have zero force and keep it. MuJoCo runs the sweeps per constraint island and stops
each island on its own improvement; hurtle sweeps all rows and stops on their sum: the same blocks in the same
order, so the two differ only in sweeps taken on islands already converged.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import inertia, linalg, math, tracing
from hurtle.physics.collision import contact_order, slot_geoms
from hurtle.physics.constraint import (
    CONE,
    CONTACT_ELLIPTIC,
    CONTACT_FRICTIONLESS,
    CONTACT_PYRAMIDAL,
    EQ_CONNECT,
    EQ_WELD,
    EQUALITY,
    FRICTION_DOF,
    FRICTION_TENDON,
    LIMIT_JOINT,
    LINEARNEG,
    LINEARPOS,
    OBJ_SITE,
    QUADRATIC,
    SATISFIED,
)
from hurtle.physics.types import Data, Model

_DSBL = mujoco.mjtDisableBit
QCQP_ITERATIONS = 20  # MuJoCo's Newton steps on the ellipsoid's multiplier (mju_QCQP)


class _Blocks(NamedTuple):
    """Static block tables of the contact sweep: rows (nblock, width; padding points at the sink row nefc),
    the contact slot and friction direction (pyramids) of each block, and each elliptic block's normal row."""

    rows: np.ndarray
    slot: np.ndarray
    sub: np.ndarray
    normal: np.ndarray


def _contact_blocks(m: Model) -> _Blocks | None:
    lay = m.efc
    first = np.nonzero(np.isin(lay.type, (CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC)) & (lay.group == np.arange(lay.nefc)))[0]
    rows, slot, sub, normal = [], [], [], []
    for i in first:
        s, dim = int(lay.id[i]), int(m.contact_dim[lay.id[i]])
        if lay.type[i] == CONTACT_PYRAMIDAL:  # pairs of opposing edges
            for k in range(dim - 1):
                rows.append([i + 2 * k, i + 2 * k + 1])
                slot.append(s), sub.append(k), normal.append(lay.nefc)
        else:  # the tangential rows after the normal one
            rows.append(list(range(i + 1, i + dim)))
            slot.append(s), sub.append(0), normal.append(i)
    if not rows:
        return None
    width = max(len(r) for r in rows)
    table = np.full((len(rows), width), lay.nefc)
    for b, r in enumerate(rows):
        table[b, : len(r)] = r
    return _Blocks(
        table.astype(np.int32), np.array(slot, np.int32), np.array(sub, np.int32), np.array(normal, np.int32)
    )


def _qcqp(a: jax.Array, b: jax.Array, d: jax.Array, r: jax.Array, valid: jax.Array, pivots: jax.Array):
    """min 0.5 x'ax + x'b subject to sum (x_i / d_i)^2 <= r^2 (mju_QCQP2/3/mju_QCQP): Newton on the multiplier
    la of (a + la I) x = -b. Padding entries (`valid` false) carry a = I, b = 0, d = 1 and stay 0. `pivots`: the
    degeneracy test is on each Cholesky pivot (MuJoCo's 5-D solver) instead of the determinant (2-D, 3-D).
    Returns (x, whether the constraint is active)."""
    a = a * d[:, None] * d[None, :]
    b = b * d
    eye = jnp.diag(valid.astype(a.dtype))

    def body(_, c):
        la, v, done, failed = c
        chol = linalg.cholesky_symmetric(a + la * eye)
        diag = jnp.diagonal(chol) ** 2
        bad = jnp.where(pivots, jnp.any(~(diag >= 1e-10)), ~(jnp.prod(diag) >= 1e-10))
        x = -linalg.cho_solve(chol, b)
        val = jnp.sum(x * x) - r * r
        deriv = -2.0 * jnp.sum(x * linalg.cho_solve(chol, x))
        delta = -val / jnp.where(deriv == 0, -1.0, deriv)
        stop = bad | (val < 1e-10) | (delta < 1e-10)
        new_v = jnp.where(bad, 0.0, x)
        new_la = jnp.where(stop, la, la + delta)
        keep = done
        return (
            jnp.where(keep, la, new_la),
            jnp.where(keep, v, new_v),
            keep | stop,
            jnp.where(keep, failed, bad),
        )

    zero = jnp.zeros((), a.dtype)
    la, v, _, failed = tracing.fori_loop(
        0, QCQP_ITERATIONS, body, (zero, jnp.zeros_like(b), jnp.zeros((), bool), jnp.zeros((), bool))
    )
    return v * d, (la != 0) & ~failed


def _cost_change(a, new, old, res):
    """MuJoCo's costChange: the block's change of cost, and the old forces back where the cost rose."""
    delta = new - old
    change = 0.5 * delta @ a @ delta + delta @ res
    worse = change > 1e-10
    return jnp.where(worse, old, new), jnp.where(worse, 0.0, change)


def _row_islands(m: Model, d: Data) -> tuple[jax.Array, int]:
    """The constraint island of every row (mj_island: kinematic trees joined by the active rows that act on
    more than one), as the smallest tree id of the island, and the number of labels; one island for all rows
    when islands are disabled. A row's trees are those MuJoCo takes: its dof's (friction loss, joint limits),
    its bodies' (connect and weld equalities, contacts), else those its Jacobian row touches."""
    lay = m.efc
    ntree = int(m.dof_treeid.max()) + 1 if m.nv else 0
    if m.disabled(_DSBL.mjDSBL_ISLAND) or ntree <= 1:
        return jnp.zeros(lay.nefc + 1, jnp.int32), 1
    typ, ident = lay.type, lay.id
    t1, t2 = np.full(lay.nefc, -1, np.int32), np.full(lay.nefc, -1, np.int32)
    fd = typ == FRICTION_DOF
    t1[fd] = m.dof_treeid[ident[fd]]
    lj = typ == LIMIT_JOINT
    t1[lj] = m.dof_treeid[m.jnt_dofadr[ident[lj]]]
    eq = np.nonzero(typ == EQUALITY)[0]
    eq = eq[np.isin(m.eq_type[ident[eq]], (EQ_CONNECT, EQ_WELD))]
    for r in eq:
        e = ident[r]
        b1, b2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        if m.eq_objtype[e] == OBJ_SITE:
            b1, b2 = int(m.site_bodyid[b1]), int(m.site_bodyid[b2])
        t1[r], t2[r] = m.body_treeid[b1], m.body_treeid[b2]
    con = np.isin(typ, (CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC))
    special = fd | lj | con
    special[eq] = True
    trees = jnp.arange(ntree, dtype=jnp.int32)
    dof_tree = jnp.asarray(m.dof_treeid)[:, None] == trees  # (nv, ntree)
    touch = jnp.where(
        special[:, None], False, math.matmul((d.efc_J != 0).astype(d.efc_J.dtype), dof_tree.astype(d.efc_J.dtype)) > 0
    )
    a, b = jnp.asarray(t1), jnp.asarray(t2)
    if con.any():
        geoms = slot_geoms(m)
        body_tree = jnp.asarray(m.body_treeid)[jnp.asarray(m.geom_bodyid)]
        if geoms is None:  # the slots' geoms are data
            g1, g2 = jnp.maximum(d.contact.geom1, 0), jnp.maximum(d.contact.geom2, 0)
        else:
            g1, g2 = jnp.asarray(geoms[0]), jnp.asarray(geoms[1])
        slot = np.where(con, ident, 0)
        a = jnp.where(con, body_tree[g1[slot]], a)
        b = jnp.where(con, body_tree[g2[slot]], b)
    incidence = touch | (a[:, None] == trees) | (b[:, None] == trees)
    incidence = incidence & d.efc_active[:, None]
    f = incidence.astype(d.efc_J.dtype)
    reach = (math.matmul(f.T, f) > 0) | jnp.eye(ntree, dtype=bool)
    for _ in range(int(np.ceil(np.log2(ntree)))):  # transitive closure by squaring
        r = reach.astype(d.efc_J.dtype)
        reach = math.matmul(r, r) > 0
    label = jnp.argmax(reach, axis=1)  # the smallest tree id of each tree's island
    row = label[jnp.argmax(incidence, axis=1)]
    return jnp.pad(row, (0, 1)).astype(jnp.int32), ntree


def _dual_state(m: Model, d: Data, force: jax.Array) -> jax.Array:
    """efc_state from the forces (MuJoCo's dualState, which noslip leaves behind)."""
    lay = m.efc
    typ = lay.type
    fric = np.isin(typ, (FRICTION_DOF, FRICTION_TENDON))
    fl = d.efc_frictionloss
    state = jnp.where(force <= 0, SATISFIED, QUADRATIC)
    state = jnp.where(fric, jnp.where(force <= -fl, LINEARPOS, jnp.where(force >= fl, LINEARNEG, QUADRATIC)), state)
    state = jnp.where(typ == EQUALITY, QUADRATIC, state)
    first = np.nonzero((typ == CONTACT_ELLIPTIC) & (lay.group == np.arange(lay.nefc)))[0]
    if first.size:
        con = d.contact
        slots = lay.id[first]
        mu = con.friction[slots, 0] * jnp.sqrt(d.efc_R[first + 1] / d.efc_R[first])  # the regularised mu
        rows = np.arange(lay.nefc)
        off = (typ == CONTACT_ELLIPTIC) & (lay.group != rows)
        fr = jnp.where(off, force / con.friction[lay.id, np.clip(rows - lay.group - 1, 0, 4)], 0.0)
        t = jnp.sqrt(jax.ops.segment_sum(fr * fr, lay.group, num_segments=lay.nefc)[first])
        n = force[first] / mu
        cone = jnp.where(mu * n >= t, SATISFIED, jnp.where(n + mu * t <= 0, QUADRATIC, CONE))
        index = np.searchsorted(first, lay.group)
        state = jnp.where(typ == CONTACT_ELLIPTIC, cone[np.clip(index, 0, len(first) - 1)], state)
    return jnp.where(d.efc_active, state, SATISFIED).astype(jnp.int32)


@tracing.inline_numpy
def noslip(m: Model, d: Data) -> Data:
    """Re-solve the friction forces of `d` (after the main solve) with hard friction; updates efc_force,
    efc_state, qfrc_constraint, qacc and solver_niter (the sweeps taken are added)."""
    lay = m.efc
    fric_rows = np.nonzero(np.isin(lay.type, (FRICTION_DOF, FRICTION_TENDON)))[0]
    blocks = _contact_blocks(m)
    if lay.nefc == 0 or (fric_rows.size == 0 and blocks is None):
        return d
    with jax.named_scope("noslip"):
        dt = d.qacc.dtype
        J = d.efc_J
        minv_jt = inertia.solve_m(m, d, J.T)  # (nv, nefc)
        # A and b with one sink row and column (index nefc) for the blocks' padding: zero, never written back
        A = jnp.pad(math.matmul(J, minv_jt), ((0, 1), (0, 1)))
        b = jnp.pad(math.matmul(J, d.qacc_smooth) - d.efc_aref, (0, 1))
        active = jnp.pad(d.efc_active, (0, 1))
        floss = jnp.pad(d.efc_frictionloss, (0, 1))
        scale = 1.0 / (m.stat_meaninertia * max(1, m.nv))
        f0 = jnp.pad(d.efc_force, (0, 1))

        if blocks is not None:
            rank = jnp.zeros(m.ncon_max, jnp.int32).at[contact_order(m, d)].set(jnp.arange(m.ncon_max, dtype=jnp.int32))
            order = jnp.argsort(
                rank[blocks.slot] * 8 + jnp.asarray(blocks.sub, jnp.int32)
            )  # MuJoCo's contact order, then direction
            brows = jnp.asarray(blocks.rows)[order]
            bnormal = jnp.asarray(blocks.normal)[order]
            width = blocks.rows.shape[1]
            elliptic = m.opt.cone == 1
            if elliptic:
                bslot = jnp.asarray(blocks.slot)[order]
                mu_all = d.contact.friction
                nvalid = jnp.asarray((blocks.rows < lay.nefc).sum(1))[order]

        island, nisl = _row_islands(m, d)

        def friction_row(u, c):
            f, imp, done = c
            i = jnp.asarray(fric_rows)[u]
            arow = A[i]
            res = b[i] + arow @ f
            ainv = 1.0 / jnp.maximum(math.MINVAL, arow[i])
            old = f[i]
            new = jnp.clip(old - res * ainv, -floss[i], floss[i])
            new = jnp.where(active[i] & ~done[island[i]], new, old)
            delta = new - old
            return f.at[i].set(new), imp.at[island[i]].add(-(0.5 * delta * delta / ainv + delta * res)), done

        def pyramid(u, c):
            f, imp, done = c
            j = brows[u]
            rows = A[j]  # (2, nefc + 1)
            res = b[j] + rows @ f
            ac = rows[:, j]
            ac = ac.at[np.arange(2), np.arange(2)].set(jnp.maximum(1e-10, jnp.diagonal(ac)))
            old = f[j]
            bc = res - ac @ old
            mid = 0.5 * (old[0] + old[1])
            k1 = ac[0, 0] + ac[1, 1] - ac[0, 1] - ac[1, 0]
            k0 = mid * (ac[0, 0] - ac[1, 1]) + bc[0] - bc[1]
            y = -k0 / jnp.where(k1 < math.MINVAL, 1.0, k1)
            lo, hi = y < -mid, y > mid
            f0 = jnp.where(lo, 0.0, jnp.where(hi, 2 * mid, mid + y))
            f1 = jnp.where(lo, 2 * mid, jnp.where(hi, 0.0, mid - y))
            new = jnp.where(k1 < math.MINVAL, mid, jnp.stack([f0, f1]))
            new, change = _cost_change(ac, new, old, res)
            skip = done[island[j[0]]]
            return f.at[j].set(jnp.where(skip, old, new)), imp.at[island[j[0]]].add(jnp.where(skip, 0.0, -change)), done

        def ellipse(u, c):
            f, imp, done = c
            j = brows[u]
            valid = jnp.arange(width) < nvalid[u]
            rows = A[j]
            res = jnp.where(valid, b[j] + rows @ f, 0.0)
            ac = rows[:, j]
            eye = jnp.eye(width, dtype=dt)
            ac = jnp.where(valid[:, None] & valid[None, :], ac, eye)
            ac = jnp.where(eye > 0, jnp.maximum(1e-10, ac), ac)
            old = jnp.where(valid, f[j], 0.0)
            bc = res - ac @ old
            mu = jnp.where(valid, mu_all[bslot[u], :width], 1.0)
            fn = f[bnormal[u]]
            v, on = _qcqp(ac, bc, mu, fn, valid, nvalid[u] > 3)
            # on the constraint: onto the ellipsoid's surface, in case the QCQP stopped short
            s = jnp.sum(v * v / (mu * mu))
            v = jnp.where(on, v * jnp.sqrt(fn * fn / jnp.maximum(math.MINVAL, s)), v)
            new = jnp.where(fn < math.MINVAL, 0.0, v)
            new, change = _cost_change(ac, new, old, res)
            skip = done[island[bnormal[u]]]
            f = f.at[j].set(jnp.where(valid & ~skip, new, f[j]))
            return f, imp.at[island[bnormal[u]]].add(jnp.where(skip, 0.0, -change)), done

        R = jnp.pad(d.efc_R, (0, 1))
        cost_r = jax.ops.segment_sum(jnp.where(active, 0.5 * f0 * f0 * R, 0.0), island, num_segments=nisl)

        def sweep(f, first, done):
            # the first sweep counts the regulariser's cost the main solve charged (MuJoCo's correction)
            c = (f, jnp.where(first, cost_r, 0.0), done)
            if fric_rows.size:
                c = tracing.fori_loop(0, fric_rows.size, friction_row, c)
            if blocks is not None:
                c = tracing.fori_loop(0, blocks.rows.shape[0], ellipse if elliptic else pyramid, c)
            f, imp, _ = c
            return f, scale * imp

        tol = m.opt.noslip_tolerance
        n = m.opt.noslip_iterations
        # each island sweeps until its own improvement falls below the tolerance, or `n` sweeps
        it0, done0 = tracing.varying_like(f0, jnp.zeros((), jnp.int32), jnp.zeros(nisl, bool))

        def step(c):
            f, it, done = c
            f, imp = sweep(f, it == 0, done)
            return f, it + 1, done | (imp < tol) | (it + 1 >= n)

        if m.opt.solver_mode == "fixed":

            def fixed(_, c):
                new = step(c)
                finished = jnp.all(c[2])
                return jax.tree.map(lambda a, b_: jnp.where(finished, a, b_), c, new)

            f, it, _ = tracing.fori_loop(0, n, fixed, (f0, it0, done0))
        else:
            f, it, _ = tracing.while_loop(lambda c: ~jnp.all(c[2]), step, (f0, it0, done0))
        force = f[:-1]
        qfrc = math.matmul(J.T, force)
        return d.replace(
            efc_force=force,
            efc_state=_dual_state(m, d, force),
            qfrc_constraint=qfrc,
            qacc=d.qacc_smooth + math.matmul(minv_jt, force),
            solver_niter=d.solver_niter + it,
        )
