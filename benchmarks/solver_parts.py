"""What one trip of the constraint solver's loop costs, part by part, on whatever device JAX has.

    python benchmarks/solver_parts.py --models dmc:humanoid --batch 32768    # on a GPU machine
    python benchmarks/solver_parts.py --models gym:half_cheetah --batch 256  # here, on the CPU

`stage_profile.py` says how much of a step the solver takes and how many times its loop ran (under vmap,
the batch's largest `solver_niter`). This splits one trip of that loop: the Newton Hessian M + J'DJ, its
Cholesky factorisation and solve, one evaluation of the cost (row forces, gradient), one step of the line
search (row states and the cost's derivatives along the direction), and the bare cost of a `while_loop`
trip on the batch; and one candidate not in the solver: the Cholesky factorisation and solve written as
elementwise operations (`cholesky_solve_ops`), against the library's batched factorisation. Each part is `jit(vmap(part))` on the solver's real inputs (the `Data` after --warmup
batched steps), timed as the median of --repeats calls. The whole solve is timed the same way, with the
batch's largest `solver_niter` and the line search's trips from the warm start (the first iteration's
search, the batch's largest).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _time(fn, *args, repeats: int) -> float:
    """Median milliseconds of a call of the compiled fn (compiled and run once first)."""
    import jax

    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


def cholesky_solve_ops(H, g):
    """H^-1 g by a Cholesky factorisation written as n rank-1 updates and two substitutions, every step an
    elementwise operation on whole arrays with masks (a candidate for GPUs, where a batch of small matrices
    through the library's batched factorisation may be latency-bound; measured against it above)."""
    import jax.numpy as jnp
    import numpy as np

    n = H.shape[-1]
    idx = np.arange(n)
    A, cols = H, []
    for k in range(n):
        col = jnp.where(idx >= k, A[:, k], 0.0) / jnp.sqrt(A[k, k])
        cols.append(col)
        A = A - col[:, None] * col[None, :]
    L = jnp.stack(cols, -1)  # lower triangular
    y = g
    for k in range(n):  # L y = g
        yk = y[k] / L[k, k]
        y = jnp.where(idx == k, yk, jnp.where(idx > k, y - L[:, k] * yk, y))
    x = y
    for k in reversed(range(n)):  # L' x = y
        xk = x[k] / L[k, k]
        x = jnp.where(idx == k, xk, jnp.where(idx < k, x - L[k, :] * xk, x))
    return x


def parts(spec: str, batch: int, warmup: int, repeats: int) -> dict:
    import jax
    import jax.numpy as jnp
    from physics import setup_hurtle, timed_rollout
    from stage_profile import stages

    from hurtle.physics import linalg
    from hurtle.physics import solver as sv

    step, m, d = setup_hurtle(spec, batch, "full")
    d = timed_rollout(step, m, d, warmup, 0)["data"]  # states with typical contacts
    vm = lambda f: jax.jit(jax.vmap(f, in_axes=(None, 0)))  # noqa: E731

    def pre(m, d):
        """The next step's pipeline up to the solver: its problem (after a step, `Data` holds the problem
        just solved, and its warm start is that solution)."""
        for _, f in stages()[:-2]:
            d = f(m, d)
        return d

    d = vm(pre)(m, d)

    def prep(m, d):
        ctx = sv._context(m, d)
        _, grad, _, _, hess = sv._eval(ctx, d.qacc)
        return ctx, grad, hess

    def hess_only(m, d):
        ctx, _, hess = prep(m, d)
        return sv.hessian(ctx, hess)

    def hess_chol(m, d):
        ctx, grad, hess = prep(m, d)
        return linalg.cho_solve(linalg.cholesky(sv.hessian(ctx, hess)), grad)

    def hess_chol_ops(m, d):
        ctx, grad, hess = prep(m, d)
        return cholesky_solve_ops(sv.hessian(ctx, hess), grad)

    def eval_only(m, d):
        return sv._eval(sv._context(m, d), d.qacc)[1]

    def line_step(m, d):
        ctx = sv._context(m, d)
        line = sv._line(ctx, d.qacc, d.qacc - d.qacc_smooth)
        return sv._line_derivs(ctx, line, jnp.asarray(0.5, d.qacc.dtype))[:2]

    def first_search(m, d):
        """The line search of the solve's first iteration (from qacc_warmstart), and its trips."""
        ctx = sv._context(m, d)
        _, grad, _, _, hess = sv._eval(ctx, d.qacc_warmstart)
        p = -linalg.cho_solve(linalg.cholesky(sv.hessian(ctx, hess)), grad)
        gtol = m.opt.tolerance * m.opt.ls_tolerance * m.stat_meaninertia * max(1, m.nv) * jnp.linalg.norm(p)
        return sv._line_search(ctx, d.qacc_warmstart, p, gtol, m.opt.ls_iterations, False)[1]

    def loop10(m, d):
        """Ten trips of a while loop whose body is one small update of qacc."""
        return jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.0001), (0, d.qacc))[1]

    def solve(m, d):
        out = sv.solve(m, d)
        return out.qacc, out.solver_niter

    rows = {}
    for name, f in [
        ("hessian M + J'DJ", hess_only),
        ("hessian + cholesky factor and solve", hess_chol),
        ("hessian + cholesky in elementwise ops (a candidate)", hess_chol_ops),
        ("cost, gradient (one evaluation)", eval_only),
        ("one line-search step (row states, derivatives)", line_step),
        ("while loop: one trip of a trivial body", loop10),
        ("whole solve", solve),
    ]:
        fn = vm(f)
        ms = _time(fn, m, d, repeats=repeats)
        rows[name] = ms / 10 if f is loop10 else ms
    rows["solver_niter (batch max)"] = float(jnp.max(vm(solve)(m, d)[1]))
    ls = vm(first_search)(m, d)
    rows["first line search trips (batch max / mean)"] = f"{int(jnp.max(ls))} / {float(jnp.mean(ls)):.2f}"
    rows["nefc, nv"] = f"{m.efc.nefc}, {m.nv}"
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="dmc:humanoid")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args(argv)

    import jax

    print("device:", jax.devices()[0].device_kind, "jax", jax.__version__, flush=True)
    for spec in args.models.split(","):
        rows = parts(spec, args.batch, args.warmup, args.repeats)
        print(f"\n{spec}, batch {args.batch} (ms per batched call)\n")
        print("| part | value |\n|---|---|")
        for k, v in rows.items():
            print(f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |")
        print(spec, json.dumps(rows), flush=True)


if __name__ == "__main__":
    main()
