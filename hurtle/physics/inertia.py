"""The joint-space inertia: `crb` (composite rigid bodies -> qM), `factor_m` and `solve_m`.

`qM` is dense (nv x nv) with MuJoCo's tree sparsity: entry (i, j) is nonzero only when one dof is an
ancestor of the other. The factorisation M = L' D L (L unit lower triangular) eliminates dofs one
depth of the dof tree at a time, deepest first: dofs of one depth never touch each other's rows, and
the tree structure means no fill-in.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math
from hurtle.physics.types import Data, Model


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
        qm = low + low.T - jnp.diag(jnp.diag(low)) + jnp.diag(m.dof_armature)
        if m.ntendon:
            # tendon armature, kept inside the tree sparsity as MuJoCo does
            ja = d.ten_J * m.tendon_armature[:, None]
            qm = qm + jnp.where(t.dof_anc | t.dof_anc.T, math.matmul(ja.T, d.ten_J), 0.0)
        return d.replace(crb=crb_, qM=qm)


def factor_m(m: Model, d: Data) -> Data:
    """L'DL factorisation of `qM` into `qLD` (L below the diagonal, D on it) and `qLDiagInv`."""
    with jax.named_scope("factor_m"):
        ld, dinv = factor(m, d.qM)
        return d.replace(qLD=ld, qLDiagInv=dinv)


def factor(m: Model, mat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Tree-sparse L'DL factorisation of a matrix with `qM`'s sparsity.

    Returns (LD, 1/D): LD holds L strictly below the diagonal and D on it. The depths are eliminated
    in a `lax.scan` (one traced body however deep the tree), each step on whole (nv, nv) arrays with
    the depth's rows selected by a mask.
    """
    anc = m.tree.dof_anc & ~np.eye(m.nv, dtype=bool)  # strict ancestors

    def eliminate(a, here):
        # every dof of this depth: a[anc, anc] -= outer(row, row) / pivot; its row becomes L's
        sel = here[:, None] & anc
        rows = jnp.where(sel, a, 0.0)
        scaled = rows / jnp.where(here, jnp.diagonal(a), 1.0)[:, None]
        a = a - math.matmul_tn(rows, scaled)
        return jnp.where(sel, scaled, a), None

    a, _ = jax.lax.scan(eliminate, mat, m.tree.dof_level_mask[::-1])
    diag = jnp.diag(a)
    ld = jnp.where(anc, a, 0.0) + jnp.diag(diag)
    return ld, 1.0 / diag


def solve(m: Model, ld: jax.Array, dinv: jax.Array, b: jax.Array) -> jax.Array:
    """Solve (L'DL) x = b for `b` of shape (nv,) or (nv, k), one depth of the dof tree per scan step."""
    lo = jnp.tril(ld, -1)
    vec = b.ndim == 1
    x = b[:, None] if vec else b
    masks = m.tree.dof_level_mask

    # L' y = b: deepest dofs first, each pushes its value to its ancestors
    def up(x, here):
        return x - math.matmul(jnp.where(here[:, None], lo, 0.0).T, x), None

    # L x = z: roots first
    def down(x, here):
        return x - math.matmul(jnp.where(here[:, None], lo, 0.0), x), None

    x, _ = jax.lax.scan(up, x, masks[::-1])
    x = x * dinv[:, None]
    x, _ = jax.lax.scan(down, x, masks)
    return x[:, 0] if vec else x


def solve_m(m: Model, d: Data, b: jax.Array) -> jax.Array:
    """x = M^-1 b with the factorisation in `d` (mj_solveM)."""
    return solve(m, d.qLD, d.qLDiagInv, b)
