"""Wrappers: time limits, auto-reset, action repeat, clipping, the NaN guard, batching and domain randomisation.

The order for training (`wrap_for_training` builds it):

    Vmap | DomainRandomization ( AutoReset ( NanGuard ( EpisodeWrapper ( task ) ) ) )

Every wrapper but the batching ones acts on one environment; the batching ones `vmap` everything inside
them. All of them pass `reset_to` through. Resets inside a step are computed for every environment and
selected with `tree_where`: there is no Python branch on a traced value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from hurtle.envs.base import Box, Env, State, Wrapper, reset_to_with_key, tree_where


class EpisodeWrapper(Wrapper):
    """A time limit: `truncation` is set on the step that reaches `episode_length` without terminating.

    `episode_length` counts steps of the wrapped task (with `action_repeat` > 1 each call here takes that
    many). Metrics, on every step: `episode/length`, the task steps taken in this episode so far, and
    `episode/return`, the sum of rewards so far, this step's included; on a step that ends the episode
    (done or truncation) they are the whole episode's length and return (zero after a reset). The running
    counts live in `info["episode_steps"]` and `info["episode_return"]`.
    """

    def __init__(self, env: Env, episode_length: int = 1000, action_repeat: int = 1):
        if episode_length < 1:
            raise ValueError(f"EpisodeWrapper: episode_length must be positive, got {episode_length}")
        super().__init__(ActionRepeat(env, action_repeat) if action_repeat > 1 else env)
        self.episode_length = int(episode_length)
        self.action_repeat = int(action_repeat)

    def start(self, state: State, key: jax.Array) -> State:
        steps, ret = jnp.zeros((), jnp.int32), jnp.zeros_like(state.reward)
        return state.replace(
            truncation=jnp.zeros((), bool),
            info={**state.info, "episode_steps": steps, "episode_return": ret},
            metrics={**state.metrics, "episode/return": ret, "episode/length": steps},
        )

    def step(self, state: State, action: jax.Array) -> State:
        new = self.env.step(state, action)
        steps = state.info["episode_steps"] + self.action_repeat
        ret = state.info["episode_return"] + new.reward
        truncation = (new.truncation | (steps >= self.episode_length)) & ~new.done
        return new.replace(
            truncation=truncation,
            info={**new.info, "episode_steps": steps, "episode_return": ret},
            metrics={**new.metrics, "episode/return": ret, "episode/length": steps},
        )


class ActionRepeat(Wrapper):
    """Apply each action `repeat` times, summing the rewards; it stops early when the episode ends.

    Metrics are the last task step's. Steps after an end within the repeat are computed and discarded.
    """

    def __init__(self, env: Env, repeat: int):
        if repeat < 1:
            raise ValueError(f"ActionRepeat: repeat must be positive, got {repeat}")
        super().__init__(env)
        self.repeat = int(repeat)

    def step(self, state: State, action: jax.Array) -> State:
        def body(carry, _):
            s, total, ended = carry
            new = self.env.step(s, action)
            total = total + jnp.where(ended, jnp.zeros_like(new.reward), new.reward)
            s = tree_where(ended, s, new)
            return (s, total, ended | new.done | new.truncation), None

        # one traced step in a scan (the input state is carried, so reset and step states must agree in type)
        carry = (state, jnp.zeros_like(state.reward), jnp.zeros((), bool))
        (last, total, _), _ = lax.scan(body, carry, None, length=self.repeat)
        return last.replace(reward=total)


class AutoReset(Wrapper):
    """Reset an environment on the step that ends its episode (done or truncation), in the same step.

    The returned state is the fresh reset's (obs, physics, info) with the ending step's `reward`, `done`,
    `truncation` and `metrics`, so a learner sees the transition's outcome and a logger the finished
    episode's statistics. `info["final_obs"]` is the observation the step actually reached (on every
    step; it differs from `obs` only where the episode ended): bootstrap truncated episodes from it. A
    task with a privileged observation has it reset alike, and the one the step reached in
    `info["final_privileged_obs"]` (an asymmetric critic's bootstrap).
    Resets draw from a key carried in `info["reset_key"]`, split on every step.
    """

    uses_key = True

    @staticmethod
    def _finals(state: State) -> dict:
        out = {"final_obs": state.obs}
        if state.privileged_obs is not None:
            out["final_privileged_obs"] = state.privileged_obs
        return out

    def start(self, state: State, key: jax.Array) -> State:
        return state.replace(info={**state.info, **self._finals(state), "reset_key": key})

    def step(self, state: State, action: jax.Array) -> State:
        new = self.env.step(state, action)
        key, key_reset = jax.random.split(state.info["reset_key"])
        fresh = self.env.reset(key_reset)
        ended = new.done | new.truncation
        # the inner environment carried this wrapper's keys through; the fresh reset has none of them
        carried = {k: v for k, v in new.info.items() if k != "reset_key"}
        finals = self._finals(new)
        info = tree_where(ended, {**fresh.info, **finals}, {**carried, **finals})
        return new.replace(
            obs=tree_where(ended, fresh.obs, new.obs),
            privileged_obs=tree_where(ended, fresh.privileged_obs, new.privileged_obs),
            physics=tree_where(ended, fresh.physics, new.physics),
            info={**info, "reset_key": key},
        )


def _finite(tree: Any) -> jax.Array:
    """Whether every floating-point element of `tree` is finite."""
    leaves = [
        jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.ones((), bool)


def _physics_state(physics: Any) -> Any:
    """The integrated state of a physics `Data` (everything else is derived from it); any other tree whole."""
    names = ("qpos", "qvel", "act", "qacc_warmstart")
    if all(hasattr(physics, n) for n in names):
        return [getattr(physics, n) for n in names]
    return physics


class NanGuard(Wrapper):
    """Terminate a simulation whose state turns non-finite, so that no NaN reaches a learner.

    When any element of the observation (privileged too), the reward or the physics state (`qpos`, `qvel`,
    `act`, `qacc_warmstart` of a `Data`; every float of another tree) is not finite, the step returns `done`,
    zero observations (in `final_obs` too, under `AutoReset`), reward 0, and zeros for the task's float
    metrics; `metrics["nan_resets"]` is 1 on such a step, 0 otherwise (its sum counts them). The reset
    itself is `AutoReset`'s: put this wrapper inside it.
    """

    def start(self, state: State, key: jax.Array) -> State:
        return state.replace(metrics={**state.metrics, "nan_resets": jnp.zeros((), jnp.int32)})

    def step(self, state: State, action: jax.Array) -> State:
        new = self.env.step(state, action)
        bad = ~(_finite((new.obs, new.privileged_obs)) & _finite(new.reward) & _finite(_physics_state(new.physics)))

        def clean(x):
            return jnp.where(bad, jnp.zeros_like(x), x) if jnp.issubdtype(x.dtype, jnp.inexact) else x

        return new.replace(
            obs=jax.tree.map(clean, new.obs),
            privileged_obs=jax.tree.map(clean, new.privileged_obs),
            reward=clean(new.reward),
            done=new.done | bad,
            truncation=new.truncation & ~bad,
            metrics={**jax.tree.map(clean, new.metrics), "nan_resets": bad.astype(jnp.int32)},
        )


class ClipAction(Wrapper):
    """Clip continuous actions into the action space's bounds before the task sees them."""

    def __init__(self, env: Env):
        if not isinstance(env.action_space, Box):
            raise TypeError(f"ClipAction: {env!r} has a {type(env.action_space).__name__} action space, not a Box")
        super().__init__(env)

    def step(self, state: State, action: jax.Array) -> State:
        space = self.action_space
        action = space.check(action, repr(self))
        return self.env.step(state, jnp.clip(action, space.low, space.high))


class ClipObservation(Wrapper):
    """Clip observations into [low, high] (scalars or arrays of the observation's shape)."""

    def __init__(self, env: Env, low: Any, high: Any):
        super().__init__(env)
        inner = env.observation_space
        self._space = Box(np.maximum(inner.low, low), np.minimum(inner.high, high), inner.shape, inner.dtype)

    @property
    def observation_space(self) -> Box:
        return self._space

    def _clip(self, state: State) -> State:
        return state.replace(obs=jnp.clip(state.obs, self._space.low, self._space.high))

    def start(self, state: State, key: jax.Array) -> State:
        return self._clip(state)

    def step(self, state: State, action: jax.Array) -> State:
        return self._clip(self.env.step(state, action))


def _batch_size(tree: Any) -> int:
    leaves = jax.tree.leaves(tree)
    if not leaves or not jnp.shape(leaves[0]):
        raise ValueError("reset_to of a batched environment needs arguments with a leading batch axis")
    return int(jnp.shape(leaves[0])[0])


class VmapWrapper(Wrapper):
    """A batch of environments: `reset` takes one key (split into `batch_size`) or a batch of keys; `step`
    and `reset_to` take batched states, actions and arguments."""

    def __init__(self, env: Env, batch_size: int | None = None):
        super().__init__(env)
        self.batch_size = batch_size

    def reset(self, key: jax.Array) -> State:
        keys = key if self.batch_size is None else jax.random.split(key, self.batch_size)
        return jax.vmap(self.env.reset)(keys)

    def reset_to(self, *args: Any, key: jax.Array | None = None, **kwargs: Any) -> State:
        keys = jax.random.split(jax.random.key(0) if key is None else key, _batch_size(args))
        return jax.vmap(lambda k, a, kw: reset_to_with_key(self.env, k, *a, **kw))(keys, args, kwargs)

    def step(self, state: State, action: jax.Array) -> State:
        return jax.vmap(self.env.step)(state, action)


class DomainRandomization(Wrapper):
    """A batch of environments, each simulating its own randomised copy of the task's physics model.

    `randomize(model, key) -> model` returns one variant (e.g. scaled `body_mass`, `geom_friction`);
    it is vmapped over `batch_size` keys once, here. Fields it left unchanged in every variant stay
    unbatched (`in_axes` None), so only randomised fields cost memory per environment. Each copy keeps its
    model for the run; `reset` and `step` vmap over (model, key/state, action) through `with_model`.
    """

    def __init__(self, env: Env, randomize: Callable[[Any, jax.Array], Any], key: jax.Array, batch_size: int):
        super().__init__(env)
        base = env.unwrapped.model
        models = jax.vmap(randomize, in_axes=(None, 0))(base, jax.random.split(key, batch_size))
        if jax.tree.structure(models) != jax.tree.structure(base):
            raise ValueError("DomainRandomization: randomize must return a Model of the same structure")

        def batched(b, m):
            return None if np.array_equal(np.asarray(m), np.broadcast_to(np.asarray(b), m.shape)) else 0

        self.in_axes = jax.tree.map(batched, base, models)
        self.models = jax.tree.map(lambda b, m, ax: m if ax == 0 else b, base, models, self.in_axes)
        self.batch_size = int(batch_size)

    def reset(self, key: jax.Array) -> State:
        keys = jax.random.split(key, self.batch_size)
        return jax.vmap(lambda m, k: self.env.with_model(m).reset(k), in_axes=(self.in_axes, 0))(self.models, keys)

    def reset_to(self, *args: Any, key: jax.Array | None = None, **kwargs: Any) -> State:
        keys = jax.random.split(jax.random.key(0) if key is None else key, self.batch_size)
        one = lambda m, k, a, kw: reset_to_with_key(self.env.with_model(m), k, *a, **kw)
        return jax.vmap(one, in_axes=(self.in_axes, 0, 0, 0))(self.models, keys, args, kwargs)

    def step(self, state: State, action: jax.Array) -> State:
        fn = lambda m, s, a: self.env.with_model(m).step(s, a)
        return jax.vmap(fn, in_axes=(self.in_axes, 0, 0))(self.models, state, action)


def wrap_for_training(
    env: Env,
    batch_size: int,
    *,
    nan_guard: bool = True,
    randomize: Callable[[Any, jax.Array], Any] | None = None,
    randomize_key: jax.Array | None = None,
) -> Env:
    """The training stack around `env` (a task with its time limit, as `make` returns it): NaN guard,
    auto-reset, and a batch of `batch_size` (with domain randomisation when `randomize` is given)."""
    env = AutoReset(NanGuard(env) if nan_guard else env)
    if randomize is None:
        return VmapWrapper(env, batch_size)
    return DomainRandomization(
        env, randomize, jax.random.key(0) if randomize_key is None else randomize_key, batch_size
    )
