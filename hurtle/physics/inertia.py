"""The joint-space inertia: `crb` (composite rigid bodies -> qM), `factor_m` and `solve_m`.

`qM` is dense (nv x nv) with MuJoCo's tree sparsity: entry (i, j) is nonzero only when one dof is an
ancestor of the other. The factorisation M = L' D L (L unit lower triangular) eliminates the last dof
first, so the tree structure means no fill-in; it is computed as a Cholesky factorisation of the
reversed matrix (one LAPACK or cuSOLVER call per matrix).
"""

from __future__ import annotations

import functools

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
    """L'DL factorisation of a matrix with `qM`'s sparsity (mj_factorM's), L unit lower triangular.

    Returns (LD, 1/D): LD holds L strictly below the diagonal and D on it. MuJoCo eliminates the last
    dof first, so that the tree sparsity has no fill-in; that is the Cholesky factorisation of the
    matrix with its dofs in reverse order (M = P C C' P, P the reversal): L' = P (C / diag C) P and
    D = P diag(C)^2 P. Zeros of the tree stay exact zeros (every product that would fill them holds a
    zero factor). One LAPACK call per matrix: faster to compile and to run than eliminating the tree
    depth by depth, for the dof counts of robots.
    """
    c = jnp.linalg.cholesky(mat[::-1, ::-1])
    dc = jnp.diagonal(c)
    low = (c / dc)[::-1, ::-1].T
    diag = (dc * dc)[::-1]
    strict = m.tree.dof_anc & ~np.eye(m.nv, dtype=bool)
    return jnp.where(strict, low, 0.0) + jnp.diag(diag), 1.0 / diag


def solve(m: Model, ld: jax.Array, dinv: jax.Array, b: jax.Array) -> jax.Array:
    """Solve (L'DL) x = b for `b` of shape (nv,) or (nv, k): two unit triangular solves."""
    vec = b.ndim == 1
    x = b[:, None] if vec else b
    tri = functools.partial(jax.lax.linalg.triangular_solve, left_side=True, lower=True, unit_diagonal=True)
    x = tri(ld, x, transpose_a=True)  # L' y = b
    x = tri(ld, x * dinv[:, None])  # L x = y / D
    return x[:, 0] if vec else x


def solve_m(m: Model, d: Data, b: jax.Array) -> jax.Array:
    """x = M^-1 b with the factorisation in `d` (mj_solveM)."""
    return solve(m, d.qLD, d.qLDiagInv, b)
