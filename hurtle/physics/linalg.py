"""Batched dense factorisations and solves (Cholesky, triangular, general) that cannot hang on the CPU.

jaxlib 0.10's CPU LAPACK kernels (potrf, trsm, getrf, ...) split a batched call whose cost (the batch times
a per-matrix count: n^3/3 for potrf, n^2 k for trsm, n^3 for getrf) reaches 200,000 into tasks on XLA's
intra-op thread pool, and wait for them on the pool thread that runs the call. When as many such calls run
at once as the pool has threads (two on a two-core machine: a reset's factorisation beside a step's in
one auto-reset program, or one stage's beside another's), every thread waits for tasks that no thread is
free to run, and the program hangs with 0% CPU (seen here on gym humanoid at batch 256; jaxlib 0.11 drops
that parallel path). So each operation here is a primitive whose CPU lowering splits the batch into
chunks under that cost: every LAPACK call then runs on its own thread to the end, and XLA still runs the
chunks side by side as independent operations. Below the threshold (one chunk) the program is the plain
jax operation's; on other platforms it always is.

The primitives take matrices with any number of identical leading batch axes (vmap adds them); they have
JVP rules, and the solves, linear in their right-hand side, transpose rules: forward and reverse mode work.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

LIMIT = 200_000
"""jaxlib's threshold: a batched LAPACK call whose batch x per-matrix cost reaches it goes to the thread pool."""


def _chunked(fn, cost: int, *args):
    """fn over args (identical leading batch axes), in chunks whose size x cost stays below LIMIT."""
    lead = args[0].shape[:-2]
    nb = math.prod(lead)
    per = max(1, (LIMIT - 1) // max(1, cost))
    if nb <= per:
        return fn(*args)
    flat = [x.reshape((nb,) + x.shape[-2:]) for x in args]
    outs = [fn(*(x[i : i + per] for x in flat)) for i in range(0, nb, per)]
    out = jnp.concatenate(outs)
    return out.reshape(lead + out.shape[-2:])


@functools.cache
def _compiled(p: Primitive, params: tuple):
    """The primitive with these parameters as a jitted function (for calls outside jit), made once."""
    return jax.jit(functools.partial(p.bind, **dict(params)))


def _primitive(name: str, plain, cost):
    """A primitive computing `plain(*args, **params)`, chunked on the CPU by `cost(*args, **params)`."""
    p = Primitive(name)

    def impl(*args, **params):
        # run compiled even under `disable_jit` (tracing.inline_numpy sets it while an eager `vmap` of the
        # physics is traced; jitted `p.bind` would otherwise come back here, and recurse)
        with jax.disable_jit(False):
            return _compiled(p, tuple(sorted(params.items())))(*args)

    p.def_impl(impl)
    p.def_abstract_eval(lambda *args, **params: args[-1])  # the result is shaped as the last operand

    def cpu(*args, **params):
        return _chunked(functools.partial(plain, **params), cost(*args, **params), *args)

    mlir.register_lowering(p, mlir.lower_fun(functools.partial(plain), multiple_results=False))
    mlir.register_lowering(p, mlir.lower_fun(cpu, multiple_results=False), platform="cpu")

    def batch(args, dims, **params):
        size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
        args = [
            jnp.broadcast_to(x, (size,) + x.shape) if d is None else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims)
        ]
        return p.bind(*args, **params), 0

    batching.primitive_batchers[p] = batch
    return p


def _swap(x: jax.Array) -> jax.Array:
    return jnp.swapaxes(x, -1, -2)


# -- Cholesky -------------------------------------------------------------------------------------------

try:  # jax's primitive itself: `jax.lax.linalg.cholesky` masks the upper triangle to zero after it
    from jax._src.lax.linalg import cholesky_p as _lax_cholesky_p

    def _potrf(a):
        return _lax_cholesky_p.bind(a)

except ImportError:  # pragma: no cover (a jax without it: the masked factor)

    def _potrf(a):
        return jax.lax.linalg.cholesky(a, symmetrize_input=False)


_cholesky_p = _primitive("hurtle_cholesky", _potrf, lambda a: a.shape[-1] ** 3 // 3 + 1)


def cholesky(a: jax.Array) -> jax.Array:
    """Lower-triangular L with a = L L' (`jax.lax.linalg.cholesky(a, symmetrize_input=False)`): only the
    lower triangle of `a` is read, and its tangent is taken as given (symmetric). NaN where `a` is not
    positive definite."""
    return jnp.tril(_cholesky_p.bind(a))


def _cholesky_jvp(g, L, a):
    # L' = L phi(L^-1 g L^-T), phi: the lower triangle with its diagonal halved (Murray 2016); the
    # part above the diagonal is not the factor's (see cholesky_symmetric): its tangent is taken as 0
    L = jnp.tril(L)
    y = triangular_solve(L, g, left_side=False, lower=True, transpose_a=True)  # g L^-T
    x = triangular_solve(L, y, left_side=True, lower=True)
    n = a.shape[-1]
    phi = jnp.tril(x) * jnp.where(jnp.eye(n, dtype=bool), 0.5, 1.0).astype(x.dtype)
    return L @ phi


ad.defjvp2(_cholesky_p, _cholesky_jvp)


def cholesky_symmetric(a: jax.Array) -> jax.Array:
    """The Cholesky factor of a symmetric `a`, read in its upper triangle: the factorisation of a' (the
    same matrix). As a row-major array a' is the column-major operand LAPACK takes, so XLA hands `a`
    over as it is, where `cholesky(a)` makes it (and whatever `a` is summed from) column-major, with
    layout copies.

    The factor is the lower triangle of the result (the diagonal included); above it the result holds
    whatever the factorisation left there. The callers read the lower triangle alone (the triangular
    solves; `inertia.factor` through its ancestry mask): masking the rest, as `cholesky` does, takes
    an iota mask and a select that XLA compiles as kernels of their own."""
    return _cholesky_p.bind(_swap(a))


def cho_solve(c: jax.Array, b: jax.Array) -> jax.Array:
    """x with (c c') x = b, for the lower Cholesky factor `c` and `b` of shape (n,) or (n, k): two
    triangular solves (`jax.scipy.linalg.cho_solve` with lower=True)."""
    vec = b.ndim == c.ndim - 1
    y = triangular_solve(c, b[..., None] if vec else b, left_side=True, lower=True)
    x = triangular_solve(c, y, left_side=True, lower=True, transpose_a=True)
    return x[..., 0] if vec else x


# -- triangular solve -----------------------------------------------------------------------------------


def _trsm_plain(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    return jax.lax.linalg.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal
    )


def _trsm_cost(a, b, **_):
    return b.shape[-2] * b.shape[-1] * a.shape[-1]


_trsm_p = _primitive("hurtle_triangular_solve", _trsm_plain, _trsm_cost)


def triangular_solve(
    a: jax.Array,
    b: jax.Array,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    unit_diagonal: bool = False,
) -> jax.Array:
    """`jax.lax.linalg.triangular_solve` for real matrices, with its defaults: op(a) x = b (left side) or
    x op(a) = b, op(a) = a or a', `a` read in its lower or upper triangle (a unit diagonal if `unit_diagonal`)."""
    return _trsm_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)


def _triangle(a, lower, unit_diagonal):
    """The part of `a` a triangular solve reads."""
    n = a.shape[-1]
    keep = jnp.tri(n, k=-1 if unit_diagonal else 0, dtype=bool)
    return jnp.where(keep if lower else keep.T, a, 0.0)


def _trsm_jvp_a(g, a, b, **params):
    x = _trsm_p.bind(a, b, **params)
    ga = _triangle(g, params["lower"], params["unit_diagonal"])
    ga = _swap(ga) if params["transpose_a"] else ga
    # op(a) x = b: op(a) x' = -op(g) x; x op(a) = b: x' op(a) = -x op(g)
    return -_trsm_p.bind(a, ga @ x if params["left_side"] else x @ ga, **params)


def _trsm_jvp_b(g, a, b, **params):
    return _trsm_p.bind(a, g, **params)


def _trsm_transpose(ct, a, b, **params):
    assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
    if type(ct) is ad.Zero:
        return None, ad.Zero(b.aval)
    # x = op(a)^-1 b is linear in b; its transpose is op(a)^-T (and on the right side likewise)
    return None, _trsm_p.bind(a, ct, **{**params, "transpose_a": not params["transpose_a"]})


ad.defjvp(_trsm_p, _trsm_jvp_a, _trsm_jvp_b)
ad.primitive_transposes[_trsm_p] = _trsm_transpose


# -- general solve (LU with partial pivoting) -----------------------------------------------------------


def _solve_plain(a, b, *, transpose_a):
    return jnp.linalg.solve(_swap(a) if transpose_a else a, b)


def _solve_cost(a, b, *, transpose_a):
    n = a.shape[-1]
    return n * n * max(n, b.shape[-1])


_solve_p = _primitive("hurtle_solve", _solve_plain, _solve_cost)


def solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """x with a x = b (`jnp.linalg.solve`), for `b` of shape (n,) or (n, k)."""
    vec = b.ndim == a.ndim - 1
    x = _solve_p.bind(a, b[..., None] if vec else b, transpose_a=False)
    return x[..., 0] if vec else x


def _solve_jvp_a(g, a, b, *, transpose_a):
    x = _solve_p.bind(a, b, transpose_a=transpose_a)
    return -_solve_p.bind(a, (_swap(g) if transpose_a else g) @ x, transpose_a=transpose_a)


def _solve_jvp_b(g, a, b, *, transpose_a):
    return _solve_p.bind(a, g, transpose_a=transpose_a)


def _solve_transpose(ct, a, b, *, transpose_a):
    assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
    if type(ct) is ad.Zero:
        return None, ad.Zero(b.aval)
    return None, _solve_p.bind(a, ct, transpose_a=not transpose_a)


ad.defjvp(_solve_p, _solve_jvp_a, _solve_jvp_b)
ad.primitive_transposes[_solve_p] = _solve_transpose
