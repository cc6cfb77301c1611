"""Tracing with jax.numpy's nested jits off (`tracing.inline_numpy`), loop carries batched from the start
(`tracing.varying_like`), the traced-operation-lean helpers (`math.bilinear`, `mat_mul`, `sum_last`), and
the helpers that keep XLA's layouts and kernels few (`math.take`, `math.const_matmul`,
`linalg.cholesky_symmetric`)."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hurtle.physics as hp
from hurtle.physics import linalg, math, tracing

MODELS = pathlib.Path(__file__).parent / "models"


def _eqns(jaxpr):
    """Every equation of a jaxpr and of the jaxprs nested in it."""
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in v if isinstance(v, (list, tuple)) else [v]:
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    sub = sub.jaxpr
                if isinstance(sub, jax.extend.core.Jaxpr):
                    yield from _eqns(sub)


def test_step_traces_without_nested_jits_and_keeps_its_loops():
    m = hp.load(MODELS / "limits.xml")
    d = jax.tree.map(lambda x: jnp.broadcast_to(x, (2,) + x.shape), hp.make_data(m))
    jaxpr = jax.make_jaxpr(jax.vmap(hp.step, in_axes=(None, 0)))(m, d)
    names = [e.primitive.name for e in _eqns(jaxpr.jaxpr)]
    # jax.numpy's functions bind their primitives directly: no nested jit anywhere in the step (with jit
    # on, limits.xml's step holds 166; the primitive is `jit`, formerly `pjit`)
    assert not {"jit", "pjit"} & set(names)
    # the level scan and the solver's loops stay loop primitives: disable_jit would have unrolled the
    # scan in Python (one copy of its body per tree level) and run the loops' conditions eagerly
    scans = [e for e in _eqns(jaxpr.jaxpr) if e.primitive.name == "scan"]
    assert any(e.params["length"] == m.tree.level_mask.shape[0] for e in scans)
    assert names.count("while") >= 2


def test_inline_numpy_leaves_jit_on_outside_a_trace():
    seen = []
    f = hp.tracing.inline_numpy(lambda x: seen.append(jax.config.jax_disable_jit) or x)
    f(np.ones(2))
    jax.jit(f)(np.ones(2))
    assert seen == [False, True]
    assert not jax.config.jax_disable_jit


@pytest.mark.parametrize(
    "idx",
    [[0, 0, 0, 1, 2, 3, 5, 5, 7], [3], [0, 1, 2], list(range(12)), [4, 3, 2, 1], [1, 9, 11, 2, 3, 4], [2, 2], []],
)
def test_take_is_indexing(idx):
    x = jnp.asarray(np.random.default_rng(0).standard_normal((12, 2, 3)))
    np.testing.assert_array_equal(math.take(x, np.array(idx, int)), np.asarray(x)[idx])


def test_take_with_many_runs_gathers():
    idx = np.array([5, 3, 1, 7, 0, 9, 2, 8, 4, 6])  # ten runs of one
    assert len(math._index_runs(idx)) > math.TAKE_RUNS
    x = jnp.arange(10.0)
    np.testing.assert_array_equal(math.take(x, idx), np.arange(10.0)[idx])


def test_const_matmul_is_the_product():
    rng = np.random.default_rng(1)
    c = rng.integers(0, 2, (5, 4)).astype(float)
    for x in (rng.standard_normal(4), rng.standard_normal((4, 6))):
        np.testing.assert_allclose(math.const_matmul(c, jnp.asarray(x)), c @ x, rtol=1e-14)


def test_cholesky_symmetric_reads_the_upper_triangle():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 4))
    a = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    low = np.linalg.cholesky(a)
    # the factor is the result's lower triangle (above it: whatever LAPACK left, not masked)
    np.testing.assert_allclose(np.tril(linalg.cholesky_symmetric(jnp.asarray(a))), low, rtol=1e-12)
    # only the upper triangle is read: garbage below the diagonal changes nothing
    junk = np.where(np.tri(4, k=-1, dtype=bool), 1e3, a)
    np.testing.assert_allclose(np.tril(linalg.cholesky_symmetric(jnp.asarray(junk))), low, rtol=1e-12)
    # `cholesky` masks it: the factor exactly
    np.testing.assert_allclose(linalg.cholesky(jnp.asarray(a)), low, rtol=1e-12)


def _batching_passes(loop) -> int:
    """How many times vmap batches the body of `loop(cond, body, init)`, a while loop from constant
    carries whose predicate is batched: a `custom_vmap` probe in the body counts its batching rule's calls."""
    calls = []

    @jax.custom_batching.custom_vmap
    def probe(x):
        return x

    @probe.def_vmap
    def _(axis_size, in_batched, x):
        calls.append(1)
        return x, in_batched[0]

    def f(x):
        init = (jnp.zeros((), jnp.int32), jnp.zeros((), x.dtype))
        return loop(lambda c: c[1] < x, lambda c: (c[0] + 1, probe(c[1] + x)), init)

    out = jax.vmap(f)(jnp.arange(1.0, 4.0))
    np.testing.assert_array_equal(out[0], [1, 1, 1])  # the loop still runs per world
    return len(calls)


def test_while_loop_carries_start_batched_so_vmap_batches_the_body_once():
    # jax's rule: a fixpoint pass that finds the carries batched, a second that confirms it, and the
    # final one; with the carries batched from the start, the first pass is the final one (cached)
    assert _batching_passes(jax.lax.while_loop) == 3
    assert _batching_passes(tracing.while_loop) == 1


def test_varying_like_is_the_identity_and_compiles_away():
    x = jnp.arange(3.0)
    vals = (jnp.zeros((2, 2)), jnp.full((), -1, jnp.int32), jnp.ones((), bool))
    for out, v in zip(tracing.varying_like(x, *vals), vals):
        assert out.dtype == v.dtype and out.shape == v.shape
        np.testing.assert_array_equal(out, v)
    # batched like `like` under vmap, also where `like` is NaN
    out = jax.vmap(lambda y: tracing.varying_like(y, jnp.full(2, 7.0)))(jnp.array([1.0, np.nan]))
    np.testing.assert_array_equal(out, np.full((2, 2), 7.0))
    # an empty `like` leaves the values as they are
    np.testing.assert_array_equal(tracing.varying_like(jnp.zeros((2, 0)), jnp.ones(3)), np.ones(3))
    # XLA folds select(p, v, v): no select is left in the compiled program
    hlo = jax.jit(lambda y: tracing.varying_like(y, jnp.zeros(4)) + y[0]).lower(x).compile().as_text()
    assert " select(" not in hlo


def test_lean_products_match_numpy_with_broadcast_leading_axes():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 1, 3)), rng.standard_normal((5, 4, 3))
    np.testing.assert_allclose(math.cross(jnp.asarray(a), jnp.asarray(b)), np.cross(a, b), rtol=1e-12, atol=1e-14)
    m1, m2 = rng.standard_normal((2, 1, 3, 3)), rng.standard_normal((4, 3, 2))
    np.testing.assert_allclose(math.mat_mul(jnp.asarray(m1), jnp.asarray(m2)), m1 @ m2, rtol=1e-12, atol=1e-14)
    for n in (1, 3, 4, 7):
        x = rng.standard_normal((2, n))
        np.testing.assert_allclose(math.sum_last(jnp.asarray(x)), x.sum(-1), rtol=1e-12)
        np.testing.assert_allclose(math.sum_last(jnp.asarray(x), keepdims=True), x.sum(-1, keepdims=True), rtol=1e-12)
