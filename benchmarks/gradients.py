"""The cost of differentiating through the physics: one step's backward against its forward, and the memory of
a 32-step backward, implicit (`opt.solver_grad="implicit"`, the default) against unrolled fixed iterations.

    python benchmarks/gradients.py [--envs ant halfcheetah humanoid] [--batch 64] [--horizon 32]

For each task's model (float32, the task's own physics settings), from a batch of contact states reached by
random actions:
- forward: `jit(vmap(step))`, the median of --repeats calls (compilation excluded);
- value+VJP: `jit(vmap(vjp(step)))` on (qpos, qvel, ctrl) with a cotangent on (qpos, qvel), the forward
  included, compiled with `hurtle.xla_flags.gradient_options()` (as APG, SHAC and trajectory optimisation
  compile theirs) and, for comparison, with XLA's default options; the backward alone is value+VJP minus
  the forward. Goal (issue #50): the VJP at most 3x the forward;
- memory: XLA's compiled temporary bytes (`memory_analysis().temp_size_in_bytes`) of `grad` of a --horizon
  step rollout's loss, for the implicit derivative (adaptive solver) and for the unrolled one in fixed mode
  with 4 and 16 iterations: the unrolled backward stores every iteration of every step.
Prints a markdown table (append it to benchmarks/HISTORY.md by hand with the machine named; the current figure is
curated into RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["halfcheetah", "ant", "humanoid"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--horizon", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    import jax

    def timed(f, *a):
        jax.block_until_ready(f(*a))
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            jax.block_until_ready(f(*a))
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    print(f"batch {args.batch}, float32, horizon {args.horizon} for memory; times are medians of {args.repeats}")
    head = (
        "task",
        "forward ms",
        "value+VJP ms",
        "backward / forward",
        "value+VJP ms, XLA defaults",
        "backward / forward, defaults",
        "temp MB: implicit",
        "unrolled 4 it",
        "unrolled 16 it",
    )
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.envs:
        row = measure(name, args, timed)
        print("| " + " | ".join(row) + " |", flush=True)


def measure(name: str, args: argparse.Namespace, timed) -> list[str]:
    """One table row: forward ms, value+VJP ms, backward/forward, and the three memories (MB)."""
    import jax
    import jax.numpy as jnp

    import hurtle.envs as envs
    import hurtle.physics as hp
    from hurtle import xla_flags

    env = envs.make(name)
    key = jax.random.key(0)
    state = jax.vmap(env.reset)(jax.random.split(key, args.batch))
    size = env.action_space.shape[0]

    def settle(s, k):
        return jax.vmap(env.step)(s, jax.random.uniform(k, (args.batch, size), minval=-0.3, maxval=0.3)), None

    state, _ = jax.jit(lambda s: jax.lax.scan(settle, s, jax.random.split(key, 50)))(state)
    d = state.physics
    m = env.unwrapped.model

    def f(q, v, u, d):
        out = hp.step(m, d.replace(qpos=q, qvel=v, ctrl=u))
        return out.qpos, out.qvel

    t_fwd = timed(jax.jit(jax.vmap(f)), d.qpos, d.qvel, d.ctrl, d)

    def value_vjp(q, v, u, d):
        out, pull = jax.vjp(lambda q, v, u: f(q, v, u, d), q, v, u)
        return out, pull((jnp.ones_like(out[0]), jnp.ones_like(out[1])))

    options = xla_flags.gradient_options()
    t_vjp = timed(jax.jit(jax.vmap(value_vjp), compiler_options=options), d.qpos, d.qvel, d.ctrl, d)
    t_default = timed(jax.jit(jax.vmap(value_vjp)), d.qpos, d.qvel, d.ctrl, d)

    def memory(model):
        def loss(u, d):
            def body(d, u):
                d = hp.step(model, d.replace(ctrl=u))
                return d, jnp.sum(d.qpos)

            return jnp.sum(jax.lax.scan(body, d, u)[1])

        us = jnp.zeros((args.batch, args.horizon, m.nu), d.qpos.dtype)
        g = jax.jit(jax.vmap(jax.grad(loss)), compiler_options=options)
        return g.lower(us, d).compile().memory_analysis().temp_size_in_bytes / 2**20

    fixed = m.opt.replace(solver_mode="fixed", solver_grad="unrolled")
    mems = [memory(m)] + [memory(m.replace(opt=fixed.replace(iterations=it))) for it in (4, 16)]
    ratio, ratio_default = (t_vjp - t_fwd) / t_fwd, (t_default - t_fwd) / t_fwd
    times = [
        f"{1e3 * t_fwd:.2f}",
        f"{1e3 * t_vjp:.2f}",
        f"{ratio:.2f}",
        f"{1e3 * t_default:.2f}",
        f"{ratio_default:.2f}",
    ]
    return [name, *times] + [f"{x:.0f}" for x in mems]


if __name__ == "__main__":
    main()
