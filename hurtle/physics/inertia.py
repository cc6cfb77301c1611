"""The joint-space inertia: `crb` (composite rigid bodies -> qM), `factor_m` and `solve_m`.

`qM` is dense (nv x nv) with MuJoCo's tree sparsity: entry (i, j) is nonzero only when one dof is an
ancestor of the other. The factorisation M = L' D L (L unit lower triangular, last dof first, no
fill-in) is a Cholesky factorisation of the reversed matrix (`factor`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import linalg, math, tracing
from hurtle.physics.types import INT_EULER, Data, Model


@tracing.inline_numpy
def crb(m: Model, d: Data) -> Data:
    """Composite inertias and the mass matrix `qM`, with dof and tendon armature (mj_makeM)."""
    with jax.named_scope("crb"):
        t = m.tree
        # composite inertia of every body: the sum of cinert over its subtree (world excluded)
        crb_ = math.const_matmul(t.body_subtree, d.cinert).at[0].set(d.cinert[0])
        if m.nv == 0:
            return d.replace(crb=crb_, qM=jnp.zeros((0, 0), d.qpos.dtype))
        buf = math.inert_mul(crb_[m.dof_bodyid], d.cdof)  # (nv, 6)
        g = math.matmul(buf, d.cdof.T)  # g[i, j] = cdof_j . (crb_i cdof_i)
        low = jnp.where(t.dof_anc, g, 0.0)
        # the upper triangle mirrored, the armature on the diagonal: one select (the armature's
        # diagonal matrix alone would be a model-only value, a kernel of its own in a rollout's loop)
        eye = np.eye(m.nv, dtype=bool)
        qm = low + jnp.where(eye, jnp.broadcast_to(m.dof_armature, low.shape), low.T)
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


@tracing.inline_numpy
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


def factor(m: Model, mat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """MuJoCo's L'DL factorisation of a matrix with `qM`'s tree sparsity (mj_factorM).

    Returns (LD, 1/D): LD holds L (unit lower triangular) strictly below the diagonal and D on it,
    with M = L' D L. MuJoCo eliminates the last dof first, which the tree leaves without fill-in;
    that is the Cholesky factorisation of the matrix with its dofs reversed, read backwards: with
    C C' = P M P (P reverses the dofs) and U = P C P, M = U U', so L' = U diag(U)^-1 and
    D = diag(U)^2. One library Cholesky per matrix (LAPACK on the CPU) (any depth of tree, no scan over levels). The entries
    the tree leaves zero stay exactly zero (every product that could fill them has a zero factor);
    they are masked with the tree's ancestry all the same.
    """
    n = mat.shape[-1]
    u = linalg.cholesky_symmetric(mat[::-1, ::-1])[::-1, ::-1]
    du = math.diagonal(u)
    lower = (u / du[None, :]).T  # L[i, j] = U[j, i] / U[i, i]
    anc = m.tree.dof_anc & ~np.eye(n, dtype=bool)  # strict ancestors
    ld = jnp.where(anc, lower, 0.0) + math.diag_embed(du * du)
    return ld, 1.0 / (du * du)


def solve(m: Model, ld: jax.Array, dinv: jax.Array, b: jax.Array) -> jax.Array:
    """Solve (L'DL) x = b for `b` of shape (nv,) or (nv, k): two unit triangular solves (mj_solveM)."""
    vec = b.ndim == 1
    x = b[:, None] if vec else b
    # unit triangular solves with L' (upper), which read only LD's strict lower triangle, L (D on the
    # diagonal is not read); LD' as a row-major array is the column-major operand LAPACK takes, so LD
    # stays row-major (LD itself would be made column-major, and `qLD` with it)
    tri = linalg.triangular_solve
    lt = jnp.swapaxes(ld, -1, -2)
    x = tri(lt, x, left_side=True, lower=False, unit_diagonal=True)  # L' y = b
    x = tri(lt, x * dinv[:, None], left_side=True, lower=False, transpose_a=True, unit_diagonal=True)  # L x = y / D
    return x[:, 0] if vec else x


@tracing.inline_numpy
def solve_m(m: Model, d: Data, b: jax.Array) -> jax.Array:
    """x = M^-1 b with the factorisation in `d` (mj_solveM)."""
    return solve(m, d.qLD, d.qLDiagInv, b)
