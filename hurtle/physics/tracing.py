"""Tracing the physics without jax.numpy's nested `jit`s.

Most of jax.numpy (its array operators, ufuncs, `where`, reductions, indexing) is wrapped in `jax.jit`.
Called on a tracer, each such call traces its body into a jaxpr of its own, batches that jaxpr again under
`vmap`, and only then inlines it into the caller's program (or keeps it as a nested call, as `where` is
kept). half_cheetah's step makes ~1,300 such calls. Under `jax.disable_jit()` they run their Python bodies
directly and bind the same primitives: the same program, traced without the detour.

`disable_jit` also changes jax's loops: `lax.scan` (and `fori_loop`, which is a scan) runs its body once
per iteration in Python, and `lax.while_loop` first tries to run in Python. So the physics' loops go
through `scan`, `fori_loop` and `while_loop` here, which build the loop primitive with jit enabled and
trace its body as the caller is traced.

`inline_numpy` marks the public entry points (`step`, `forward` and the stages): under any transformation
(an argument is a tracer) they trace with jit disabled; called on concrete arrays they run as written.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _disabled() -> bool:
    return bool(jax.config.jax_disable_jit)


def inline_numpy(fn):
    """`fn`, traced with `jax.disable_jit()` when any argument is a tracer (see the module's docstring)."""

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if _disabled() or not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs))):
            return fn(*args, **kwargs)
        with jax.disable_jit():
            return fn(*args, **kwargs)

    return traced


def _as_caller(fn, disabled: bool):
    """`fn`, run with jit disabled if the caller had it disabled."""
    if not disabled:
        return fn

    @functools.wraps(fn)
    def body(*args):
        with jax.disable_jit():
            return fn(*args)

    return body


def scan(f, init, xs=None, length=None, **kwargs):
    """`jax.lax.scan`, a loop primitive whatever the caller's `disable_jit`."""
    off = _disabled()
    with jax.disable_jit(False):
        return jax.lax.scan(_as_caller(f, off), init, xs, length=length, **kwargs)


def while_loop(cond_fun, body_fun, init_val):
    """`jax.lax.while_loop`, a loop primitive whatever the caller's `disable_jit`.

    Its carry starts batched (`varying_like`) where the predicate on the initial carry is: under vmap a
    batched predicate batches every carry, and vmap then traces the body twice, not three times."""
    off = _disabled()
    leaves, tree = jax.tree.flatten(init_val)
    with jax.disable_jit(off):
        pred = cond_fun(init_val)
    if leaves and isinstance(pred, jax.core.Tracer):
        init_val = jax.tree.unflatten(tree, varying_like(pred, *leaves, tuple_=True))
    with jax.disable_jit(False):
        return jax.lax.while_loop(_as_caller(cond_fun, off), _as_caller(body_fun, off), init_val)


def fori_loop(lower, upper, body_fun, init_val):
    """`jax.lax.fori_loop`, a loop primitive whatever the caller's `disable_jit`."""
    off = _disabled()
    with jax.disable_jit(False):
        return jax.lax.fori_loop(lower, upper, _as_caller(body_fun, off), init_val)


def varying_like(like: jax.Array, *values, tuple_: bool = False):
    """`values` unchanged, but batched under `vmap` wherever `like` is.

    A loop whose carry starts unbatched (a constant) and is batched after the body makes vmap trace the
    body once more (its batching rule iterates to a fixpoint of which carries are batched), then once
    for good. Loop carries started with this trace the body twice instead of three times. Each value is
    `select(p, v, v)` on a predicate computed from `like`, which XLA folds back to `v`: the compiled
    program is the same."""
    like = jnp.asarray(like)
    if like.size == 0:  # no entry to read: the values as they are
        out = tuple(map(jnp.asarray, values))
        return out if tuple_ or len(out) != 1 else out[0]
    nd = like.ndim
    s = lax.squeeze(lax.slice(like, (0,) * nd, (1,) * nd), tuple(range(nd))) if nd else like
    p = lax.ne(s, s)
    out = tuple(lax.select(p, v, v) for v in map(jnp.asarray, values))
    return out if tuple_ or len(out) != 1 else out[0]
