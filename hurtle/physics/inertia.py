"""The joint-space inertia: `crb` (composite rigid bodies -> qM), `factor_m` and `solve_m`.

`qM` is dense (nv x nv) with MuJoCo's tree sparsity: entry (i, j) is nonzero only when one dof is an
ancestor of the other. The factorisation M = L' D L (L unit lower triangular) eliminates dofs one
depth of the dof tree at a time, deepest first: dofs of one depth never touch each other's rows, and
the tree structure means no fill-in.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math
from hurtle.physics.types import INT_EULER, Data, Model


def crb(m: Model, d: Data) -> Data:
    """Composite inertias and the mass matrix `qM`, with dof and tendon armature (mj_makeM)."""
    with jax.named_scope("crb"):
        t = m.tree
        # composite inertia of every body: the sum of cinert over its subtree (world excluded)
        sub = t.body_subtree.astype(d.qpos.dtype)
        crb_ = math.matmul(sub, d.cinert).at[0].set(d.cinert[0])
        if m.nv == 0:
            return d.replace(crb=crb_, qM=jnp.zeros((0, 0), d.qpos.dtype))
        buf = math.inert_mul(crb_[m.dof_bodyid], d.cdof)  # (nv, 6)
        g = math.matmul(buf, d.cdof.T)  # g[i, j] = cdof_j . (crb_i cdof_i)
        low = jnp.where(t.dof_anc, g, 0.0)
        qm = math.symmetric_from_lower(low) + math.diag_embed(m.dof_armature)
        if m.ntendon:
            # tendon armature, kept inside the tree sparsity as MuJoCo does
            ja = d.ten_J * m.tendon_armature[:, None]
            qm = qm + jnp.where(t.dof_anc | t.dof_anc.T, math.matmul(ja.T, d.ten_J), 0.0)
        return d.replace(crb=crb_, qM=qm)


def implicit_damping(m: Model) -> bool:
    """Whether an Euler step of the model integrates joint damping implicitly, with M + h diag(damping)."""
    dsbl = mujoco.mjtDisableBit
    return bool(
        m.nv and m.has_dof_damping and not m.disabled(dsbl.mjDSBL_EULERDAMP) and not m.disabled(dsbl.mjDSBL_DAMPER)
    )


def euler_damped(m: Model) -> bool:
    """Whether the model steps with Euler and implicit damping: `factor_m` then fills `qH`."""
    return m.opt.integrator == INT_EULER and implicit_damping(m)


def damped_inertia(m: Model, d: Data) -> jax.Array:
    """qM + h diag(dof_damping): the matrix of Euler's implicit damping (MuJoCo's qH before factoring)."""
    return d.qM + math.diag_embed(m.opt.timestep * m.dof_damping)


def factor_m(m: Model, d: Data) -> Data:
    """L'DL factorisation of `qM` into `qLD` (L below the diagonal, D on it) and `qLDiagInv`; for a
    damped Euler model also that of qM + h diag(dof_damping) into `qH`, `qHDiagInv`. Both depend
    only on the positions, so they are factorised together: one traced pass over a stacked pair."""
    with jax.named_scope("factor_m"):
        if not euler_damped(m):
            ld, dinv = factor(m, d.qM)
            return d.replace(qLD=ld, qLDiagInv=dinv)
        ld, dinv = jax.vmap(lambda a: factor(m, a))(jnp.stack([d.qM, damped_inertia(m, d)]))
        return d.replace(qLD=ld[0], qLDiagInv=dinv[0], qH=ld[1], qHDiagInv=dinv[1])


_CHAIN_MAX = 6


def _chain(m: Model) -> int:
    """Length of the chain of single dofs the dof tree starts with: dof i alone at depth i, as a
    floating base's six or a planar root's three (at most `_CHAIN_MAX`, 0 when shorter than 2). Their
    elimination and solve steps touch only the leading (p, p) block, so they are unrolled on that
    block instead of each taking a pass over the whole matrix."""
    masks = m.tree.dof_level_mask
    p = 0
    while p < min(len(masks), _CHAIN_MAX) and masks[p].sum() == 1 and masks[p, p]:
        p += 1
    return p if p >= 2 else 0


def factor(m: Model, mat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Tree-sparse L'DL factorisation of a matrix with `qM`'s sparsity.

    Returns (LD, 1/D): LD holds L strictly below the diagonal and D on it. The depths are eliminated
    deepest first in a `lax.scan` (one traced body however deep the tree), each step on whole
    (nv, nv) arrays with the depth's rows selected by a mask; the leading chain (`_chain`) last, on
    its own small block.
    """
    anc = m.tree.dof_anc & ~np.eye(m.nv, dtype=bool)  # strict ancestors
    p = _chain(m)

    def eliminate(a, here):
        # every dof of this depth: a[anc, anc] -= outer(row, row) / pivot; its row becomes L's
        sel = here[:, None] & anc
        rows = jnp.where(sel, a, 0.0)
        scaled = rows / jnp.where(here, math.diagonal(a), 1.0)[:, None]
        a = a - math.matmul_tn(rows, scaled)
        return jnp.where(sel, scaled, a), None

    a = mat
    if len(m.tree.dof_level_mask) > p:
        a, _ = jax.lax.scan(eliminate, a, m.tree.dof_level_mask[p:][::-1])
    if p:
        # chain dof i's ancestors are dofs 0 .. i-1
        blk = a[:p, :p]
        below = np.tri(p, k=-1, dtype=bool)
        for i in range(p - 1, 0, -1):
            row = jnp.where(below[i], blk[i], 0.0)
            scaled = row / blk[i, i]
            blk = blk - row[:, None] * scaled[None, :]
            blk = jnp.where((np.arange(p) == i)[:, None] & below[i], scaled[None, :], blk)
        a = jax.lax.dynamic_update_slice(a, blk, (0, 0))
    diag = math.diagonal(a)
    ld = jnp.where(anc | np.eye(len(anc), dtype=bool), a, 0.0)
    return ld, 1.0 / diag


def solve(m: Model, ld: jax.Array, dinv: jax.Array, b: jax.Array) -> jax.Array:
    """Solve (L'DL) x = b for `b` of shape (nv,) or (nv, k), one depth of the dof tree per scan step
    (the leading chain unrolled on its rows)."""
    lo = jnp.where(np.tri(len(ld), k=-1, dtype=bool), ld, 0.0)
    vec = b.ndim == 1
    x = b[:, None] if vec else b
    masks = m.tree.dof_level_mask
    p = _chain(m)
    rest = masks[p:]

    # L' y = b: deepest dofs first, each pushes its value to its ancestors
    def up(x, here):
        return x - math.matmul(jnp.where(here[:, None], lo, 0.0).T, x), None

    # L x = z: roots first
    def down(x, here):
        return x - math.matmul(jnp.where(here[:, None], lo, 0.0), x), None

    if len(rest):
        x, _ = jax.lax.scan(up, x, rest[::-1])
    if p:
        head = x[:p]
        for i in range(p - 1, 0, -1):
            head = head - lo[i, :p][:, None] * head[i][None, :]  # lo[i, j] = 0 for j >= i
        x = jax.lax.dynamic_update_slice(x, head, (0, 0))
    x = x * dinv[:, None]
    if p:
        rows = [x[i] for i in range(p)]
        for i in range(1, p):
            for j in range(i):
                rows[i] = rows[i] - lo[i, j] * rows[j]
        x = jax.lax.dynamic_update_slice(x, jnp.stack(rows), (0, 0))
    if len(rest):
        x, _ = jax.lax.scan(down, x, rest)
    return x[:, 0] if vec else x


def solve_m(m: Model, d: Data, b: jax.Array) -> jax.Array:
    """x = M^-1 b with the factorisation in `d` (mj_solveM)."""
    return solve(m, d.qLD, d.qLDiagInv, b)
