"""Tasks whose goal is a target that jumps to a new random place each time it is reached (the reaching, fetching
and grasping tasks): the target, its sampling and the hit bookkeeping, written once.

The target is a mocap body of the task's model (`target_body`, default "target"): its position is
`data.mocap_pos`, so the physics, the viewer and the observation all see it, and moving it is a write to the
physics state. A subclass defines where the target may appear (`sample_target`) and what must reach it
(`effector`); `hit_radius` and `hit_bonus` say when it counts and what it pays.

Each step, after the physics: if the effector is within `hit_radius` of the target, the step earns `hit_bonus`
(the reward term `hit`), the episode's count `targets/reached` goes up by one, and the target is resampled with
the task's own key (carried in `info["target_key"]`). With a `target_timeout` (seconds), a target not reached in
that time is resampled too and counted in `targets/missed`, and `targets/success` is reached over reached plus
missed (0 before any target is settled), the task's success rate (a task without a timeout logs neither). The
counts are the episode's so far, so their values on an episode's last step are the episode's (as
`episode/return`); `targets/time` is the time in seconds since the current target appeared.

`progress(before, after)` is the shared shaping term: how much closer to the target the effector came over the
step (m), measured against the target as it stood when the step began, so a target's jump is neither a loss nor
a gain (potential-based shaping on the distance).
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

import hurtle.physics as hp
from hurtle.envs.base import State
from hurtle.envs.physics_env import PhysicsEnv


class TargetTask(PhysicsEnv):
    """A `PhysicsEnv` with a target to reach, again and again (see the module's docstring)."""

    target_body: ClassVar[str] = "target"
    hit_radius: ClassVar[float] = 0.02
    hit_bonus: ClassVar[float] = 10.0
    target_timeout: ClassVar[float | None] = None

    def __init__(self, xml=None, n_frames: int | None = None):
        super().__init__(xml, n_frames)
        body = self.model.name2id("body", self.target_body)
        mocap = int(self.model.body_mocapid[body])
        if mocap < 0:
            raise ValueError(
                f"{type(self).__name__}: body {self.target_body!r} of {self.model.source} must be a mocap body"
            )
        self._target_mocap = mocap

    # -- what a subclass defines --

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        """A new target position (3,), given the state it appears in."""
        raise NotImplementedError(f"{type(self).__name__} must define sample_target(key, data)")

    def effector(self, data: hp.Data) -> jax.Array:
        """The position (3,) that must reach the target."""
        raise NotImplementedError(f"{type(self).__name__} must define effector(data)")

    # -- the target --

    def target(self, data: hp.Data) -> jax.Array:
        return data.mocap_pos[self._target_mocap]

    def to_target(self, data: hp.Data) -> jax.Array:
        """The target's position minus the effector's (3,)."""
        return self.target(data) - self.effector(data)

    def progress(self, before: hp.Data, after: hp.Data) -> jax.Array:
        """How much closer the effector came to the target over a step (m; the target as it stood before)."""
        target = self.target(before)
        return jnp.linalg.norm(target - self.effector(before)) - jnp.linalg.norm(target - self.effector(after))

    def _place(self, data: hp.Data, pos: jax.Array) -> hp.Data:
        return data.replace(mocap_pos=data.mocap_pos.at[self._target_mocap].set(pos.astype(data.mocap_pos.dtype)))

    def initial(self, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        return super().initial(jax.random.split(key, 3)[0])

    def begin(self, state: State, key: jax.Array) -> State:
        _, k_target, k_next = jax.random.split(key, 3)
        data = self._place(state.physics, self.sample_target(k_target, state.physics))
        zero = jnp.zeros((), self.dtype)
        counts = {"targets/reached": zero, "targets/time": zero}
        if self.target_timeout:
            counts.update({"targets/missed": zero, "targets/success": zero})
        return state.replace(
            obs=self.observation(data),
            physics=data,
            info={**state.info, "target_key": k_next, "targets": counts},
            metrics={**state.metrics, "reward/hit": zero, **counts},
        )

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        new = super().advance(state, after, action)
        data = new.physics
        before = state.info["targets"]
        hit = jnp.linalg.norm(self.to_target(data)) < self.hit_radius
        elapsed = before["targets/time"] + self.dt
        late = ~hit & (elapsed >= self.target_timeout - 0.5 * self.dt) if self.target_timeout else jnp.zeros((), bool)
        key, sub = jax.random.split(state.info["target_key"])
        # (a select of the target alone: a branch over the whole `data` would read every physics field)
        data = self._place(data, jnp.where(hit | late, self.sample_target(sub, data), self.target(data)))
        bonus = jnp.where(hit, self.hit_bonus, 0.0).astype(self.dtype)
        reached = before["targets/reached"] + hit.astype(self.dtype)
        missed = before.get("targets/missed", 0.0) + late.astype(self.dtype)
        counts = {"targets/reached": reached, "targets/time": jnp.where(hit | late, 0.0, elapsed).astype(self.dtype)}
        if self.target_timeout:
            counts.update({"targets/missed": missed, "targets/success": reached / jnp.maximum(reached + missed, 1.0)})
        return new.replace(
            obs=self.observation(data),
            physics=data,
            reward=new.reward + bonus,
            info={**new.info, "target_key": key, "targets": counts},
            metrics={**new.metrics, "reward/hit": bonus, **counts},
        )
