"""A robot task's randomised models stepped on both engines: hurtle's physics and MuJoCo C (`MujocoEnv`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def randomized_engines_agree(task, key, n: int = 2, steps: int = 5, seed: int = 3) -> None:
    """`MujocoEnv(task, n, randomize_key=key)` holds the models `DomainRandomization(task, task.randomize, key, n)`
    trains on (the task's `randomize` over `key` split per simulation), and from the same reset keys both engines
    give the same observations (the privileged ones where the task has them) for `steps` random actions."""
    from hurtle.envs.wrappers import DomainRandomization
    from hurtle.hostenvs import MujocoEnv

    batch = DomainRandomization(task, task.randomize, key, n)
    models, axes = batch.models, batch.in_axes
    host = MujocoEnv(task, n, nthread=1, randomize_key=key)
    for field in ("body_mass", "dof_armature", "actuator_gainprm"):
        ours = np.broadcast_to(getattr(models, field), (n, *np.shape(getattr(task.model, field))))
        theirs = host.batch.expanded(field)
        np.testing.assert_array_equal(ours if theirs is None else theirs, ours, err_msg=field)
    obs = host.reset(seed=seed)
    subkeys = jax.vmap(jax.random.split)(jax.random.split(jax.random.PRNGKey(seed), n))[:, 1]
    # the models closed over, not passed: their unbatched fields stay concrete (the task reads its timestep)
    states = jax.jit(lambda k: jax.vmap(lambda m, kk: task.with_model(m).reset(kk), in_axes=(axes, 0))(models, k))(
        subkeys
    )
    np.testing.assert_allclose(obs, states.obs, rtol=1e-7, atol=1e-7)
    step = jax.jit(lambda s, a: jax.vmap(lambda m, ss, aa: task.with_model(m).step(ss, aa), in_axes=(axes, 0, 0))(
        models, s, a))  # fmt: skip
    rng = np.random.default_rng(1)
    for t in range(steps):
        action = rng.uniform(-0.3, 0.3, (n, task.action_space.shape[0]))
        out = host.step(action)
        states = step(states, jnp.asarray(action))
        ours, theirs = (states.obs, out.final_obs) if states.privileged_obs is None else (
            states.privileged_obs, out.final_privileged_obs)  # fmt: skip
        np.testing.assert_allclose(theirs, ours, rtol=1e-7, atol=1e-7, err_msg=f"step {t}")
    host.close()


def random_rollout(name: str, n: int, steps: int, dtype: str = "float32") -> dict[str, np.ndarray]:
    """`n` worlds of the registered task `name` under the training stack (`NanGuard`, `AutoReset`, `vmap`), reset
    and stepped `steps` times with uniform random actions in one jitted program (compiled once: the reset inside
    it), in `dtype` (float32: what training runs). Returns whether every observation (the privileged one too) and
    reward stayed finite, and the totals of `nan_resets`, dropped contacts (`ncon_dropped`, 0 without a cap),
    terminations (`done`) and ended episodes (done or truncated)."""
    from hurtle import envs
    from hurtle.envs import wrappers

    with jax.enable_x64(dtype == "float64"):
        env = wrappers.VmapWrapper(wrappers.AutoReset(wrappers.NanGuard(envs.make(name))), n)

        def body(state, key):
            state = env.step(state, jax.random.uniform(key, (n, *env.action_space.shape), state.obs.dtype, -1, 1))
            finite = jnp.isfinite(state.obs).all() & jnp.isfinite(state.reward).all()
            if state.privileged_obs is not None:
                finite &= jnp.isfinite(state.privileged_obs).all()
            zero = jnp.zeros((), jnp.int32)
            counts = {
                "nan_resets": state.metrics["nan_resets"].sum(dtype=jnp.int32),
                "dropped": state.metrics["ncon_dropped"].sum(dtype=jnp.int32)
                if "ncon_dropped" in state.metrics
                else zero,
                "done": state.done.sum(dtype=jnp.int32),
                "ended": (state.done | state.truncation).sum(dtype=jnp.int32),
            }
            return state, (finite, counts)

        @jax.jit
        def run(key):
            k_reset, k_steps = jax.random.split(key)
            state, (finite, counts) = jax.lax.scan(body, env.reset(k_reset), jax.random.split(k_steps, steps))
            return {"finite": finite.all(), **{k: v.sum() for k, v in counts.items()}}

        return jax.device_get(run(jax.random.key(0)))
