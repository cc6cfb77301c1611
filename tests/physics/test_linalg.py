"""hurtle.physics.linalg: the batched factorisations and solves, chunked under jaxlib's LAPACK threshold.

Values against numpy's (jax's own operations are only lowered, to show their calls over the threshold:
run, they can hang), derivatives against finite differences, batching with unbatched operands, and the
property that prevents the CPU hang: no LAPACK call in a lowered program (the ops alone, or a batched
humanoid step under each integrator) reaches the cost at which jaxlib 0.10 hands it to the thread pool.
"""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from jax.test_util import check_grads

import hurtle.physics as hp
from hurtle.physics import linalg

HUMANOID = Path(hp.__file__).parents[1] / "envs" / "locomotion" / "assets" / "humanoid.xml"
_CALL = re.compile(r"custom_call @lapack_(\w+?)_ffi\(.*:\s*\((.*?)\)\s*->")
_SHAPE = re.compile(r"tensor<([0-9x]+)x[a-z]+[0-9]*>")


def lapack_costs(text: str) -> list[tuple[str, int]]:
    """(kernel, batch x per-matrix cost as jaxlib 0.10 counts it) for every LAPACK call in lowered text."""
    out = []
    for line in text.splitlines():
        hit = _CALL.search(line)
        if not hit:
            continue
        kernel = hit.group(1)[1:]  # spotrf -> potrf
        shapes = [tuple(int(v) for v in s.split("x")) for s in _SHAPE.findall(hit.group(2))]
        a = shapes[0]
        batch = int(np.prod(a[:-2]))
        if kernel == "potrf":
            cost = a[-1] ** 3 // 3
        elif kernel == "trsm":
            b = shapes[1]
            cost = b[-2] * b[-1] * a[-1]
        elif kernel == "getrf":
            cost = a[-2] * a[-1] * min(a[-2:])
        else:
            raise AssertionError(f"unexpected LAPACK kernel {kernel} in a physics program")
        out.append((kernel, batch * cost))
    return out


def _spd(rng, *shape):
    a = rng.normal(size=shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_values_match_numpy_and_every_lapack_call_stays_under_the_threshold():
    rng = np.random.default_rng(0)
    n, batch = 10, 1300  # potrf: 1300 x 333 > 200,000, so the batch is split
    a = _spd(rng, batch, n, n)
    b = rng.normal(size=(batch, n, 3))
    g = a + rng.normal(size=a.shape)

    def ours(a, b, g):
        L = linalg.cholesky(a)
        kw = dict(left_side=True, lower=True)
        return (
            L,
            linalg.triangular_solve(L, b, **kw),
            linalg.triangular_solve(L, b, transpose_a=True, unit_diagonal=True, **kw),
            linalg.triangular_solve(L, jnp.swapaxes(b, -1, -2), lower=True, transpose_a=True),
            linalg.solve(g, b),
            linalg.solve(g, b[..., 0]),
        )

    def theirs(a, b, g):
        L = jax.lax.linalg.cholesky(a, symmetrize_input=False)
        tri = jax.lax.linalg.triangular_solve
        kw = dict(left_side=True, lower=True)
        return (
            L,
            tri(L, b, **kw),
            tri(L, b, transpose_a=True, unit_diagonal=True, **kw),
            tri(L, jnp.swapaxes(b, -1, -2), lower=True, transpose_a=True),
            jnp.linalg.solve(g, b),
            jnp.linalg.solve(g, b[..., :1])[..., 0],
        )

    # the references come from numpy: `theirs` is only lowered, never run, since its calls over the threshold
    # are the ones that can hang (two of them side by side on a two-thread pool: at XLA's level 0, which these
    # tests compile at, within a few calls)
    L = np.linalg.cholesky(a)
    unit = np.tril(L, -1) + np.eye(n)
    lb = np.linalg.solve(L, b)
    want = (
        L,
        lb,
        np.linalg.solve(np.swapaxes(unit, -1, -2), b),
        np.swapaxes(lb, -1, -2),  # x L' = b' <=> L x' = b
        np.linalg.solve(g, b),
        np.linalg.solve(g, b[..., :1])[..., 0],
    )
    for x, y in zip(jax.jit(ours)(a, b, g), want):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    costs = lapack_costs(jax.jit(ours).lower(a, b, g).as_text())
    assert {k for k, _ in costs} == {"potrf", "trsm", "getrf"}
    assert max(c for _, c in costs) < linalg.LIMIT
    # the same program with jax's operations makes calls over the threshold: the test can fail
    assert max(c for _, c in lapack_costs(jax.jit(theirs).lower(a, b, g).as_text())) >= linalg.LIMIT


def test_derivatives_match_finite_differences():
    rng = np.random.default_rng(1)
    n = 5
    a = _spd(rng, n, n)
    tri = np.linalg.cholesky(a) + 0.1 * np.triu(rng.normal(size=(n, n)), 1)  # the solves must not read it
    b = rng.normal(size=(n, 2))
    check_grads(lambda a: linalg.cholesky((a + a.T) / 2), (a,), order=2, modes=("fwd", "rev"))
    for kw in (
        dict(left_side=True, lower=True),
        dict(left_side=True, lower=True, transpose_a=True, unit_diagonal=True),
        dict(left_side=False, lower=True, transpose_a=True),
        dict(left_side=True, lower=False),
    ):
        rhs = b if kw["left_side"] else b.T
        mat = tri if kw["lower"] else tri.T
        check_grads(lambda m, r, kw=kw: linalg.triangular_solve(m, r, **kw), (mat, rhs), order=2, modes=("fwd", "rev"))
    g = a + rng.normal(size=(n, n))
    check_grads(linalg.solve, (g, b), order=2, modes=("fwd", "rev"))
    check_grads(linalg.solve, (g, b[:, 0]), order=2, modes=("fwd", "rev"))


def test_batching_with_unbatched_and_nested_axes():
    rng = np.random.default_rng(2)
    n = 4
    a = _spd(rng, 3, n, n)
    b = rng.normal(size=(3, n, 2))
    L = np.linalg.cholesky(a)
    one_matrix = jax.vmap(lambda r: linalg.triangular_solve(L[0], r, left_side=True, lower=True))(b)
    np.testing.assert_allclose(one_matrix, np.linalg.solve(L[0], b), rtol=1e-12)
    one_rhs = jax.vmap(lambda m: linalg.solve(m, b[0]), in_axes=2, out_axes=0)(np.moveaxis(a, 0, 2))
    np.testing.assert_allclose(one_rhs, np.linalg.solve(a, b[0]), rtol=1e-12)
    nested = jax.vmap(jax.vmap(linalg.cholesky))(np.stack([a, a]))
    np.testing.assert_allclose(nested[1], L, rtol=1e-12)
    grad = jax.grad(lambda a: jnp.sum(jax.vmap(linalg.cholesky)((a + jnp.swapaxes(a, -1, -2)) / 2)))(a)
    fd = (jnp.sum(np.linalg.cholesky(a + 1e-6 * np.eye(n)[None])) - jnp.sum(L)) / 1e-6
    np.testing.assert_allclose(jnp.sum(grad * np.eye(n)[None]), fd, rtol=1e-4)
    # an eager vmap (no jit) of code traced with jit disabled, as `hurtle.physics.forward` is: the
    # primitives still run compiled instead of recursing into themselves
    with jax.disable_jit():
        eager = jax.vmap(linalg.cholesky)(a)
    np.testing.assert_allclose(eager, L, rtol=1e-12)


@pytest.mark.parametrize("integrator", ["RK4", "IMPLICIT", "IMPLICITFAST"])
def test_a_batched_humanoid_step_makes_no_lapack_call_over_the_threshold(integrator):
    mm = mujoco.MjModel.from_xml_path(str(HUMANOID))
    mm.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator}")
    mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    m = hp.from_mujoco(mm)
    batch = 256  # nv 23: one world's potrf costs 4,055, so the batch's would be 1.04 M
    d = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), hp.make_data(m))
    costs = lapack_costs(jax.jit(jax.vmap(hp.step, in_axes=(None, 0))).lower(m, d).as_text())
    kernels = {k for k, _ in costs}
    assert "potrf" in kernels and "trsm" in kernels and ("getrf" in kernels) == (integrator == "IMPLICIT")
    assert max(c for _, c in costs) < linalg.LIMIT
