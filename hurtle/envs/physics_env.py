"""`PhysicsEnv`: the base of tasks simulated by hurtle's physics engine from an MJCF model file.

A task is a small subclass: its model file (`xml_path`), `n_frames` physics steps per environment step,
and three functions of the physics `Data`: `observation(data)`, `reward_terms(before, after, action)`
(a dict; the reward is their sum and each is logged as `metrics["reward/<term>"]`) and
`terminated(data)`. Optionally `reset_state(key) -> (qpos, qvel)` (or `(qpos, qvel, ctrl)`) for a random
start, `control(data, action)` where the action is not the actuators' `ctrl` itself (changes to servo targets,
offsets from a pose), and `advance(state, after, action)` for what a step does beside the physics (targets that
move when reached, counters): a host engine that steps the physics itself (`hurtle.hostenvs.MujocoEnv`, MuJoCo C)
replays these, with `initial` and `begin` for resets, so every task runs unchanged there.

The action is the actuators' `ctrl` (the physics clamps it to `ctrlrange`) unless `control` says otherwise. The
model is an attribute,
`env.model`; `with_model(m)` returns a copy that simulates `m`, which is how `DomainRandomization`
steps a batch of randomised models.
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jax import lax

import hurtle.physics as hp
from hurtle.envs.base import Box, Env, State
from hurtle.physics.model import compile_mjcf, source_name


def touching(data: hp.Data, geoms: jax.Array, partner: int | None = None) -> jax.Array:
    """For each geom id in `geoms`, whether it has an active contact (with `partner` only, if given): the
    engine's contacts read as touch flags (feet on the floor, fingertips on a ball), bool `[len(geoms)]`."""
    c = data.contact
    mine = geoms[:, None]
    if partner is None:
        pair = (c.geom1[None] == mine) | (c.geom2[None] == mine)
    else:
        pair = ((c.geom1 == partner) & (c.geom2[None] == mine)) | ((c.geom2 == partner) & (c.geom1[None] == mine))
    return jnp.any(pair & c.active[None], axis=1)


class PhysicsEnv(Env):
    """A task on an MJCF model. Subclasses set `xml_path` and implement `observation` and `reward_terms`.

    xml: another model file (or an MJCF string) for the same task, replacing the class's `xml_path`.
    n_frames: physics steps per environment step (the control period is `n_frames * opt.timestep`).
    """

    xml_path: ClassVar[str | None] = None  # relative paths are relative to the subclass's module
    n_frames: int = 1
    # domain randomisation, where a task has one: `randomize(model, key) -> model`, one variant of its model per key
    # (`Config.domain_randomization`; `DomainRandomization` on Anakin, `MujocoEnv(randomize_key=)` on MuJoCo C)
    randomize: ClassVar[Any] = None

    def __init__(self, xml: str | os.PathLike | None = None, n_frames: int | None = None):
        if xml is None:
            if self.xml_path is None:
                raise ValueError(f"{type(self).__name__}: no model file: set the class's xml_path or pass xml=")
            xml = os.path.join(os.path.dirname(inspect.getfile(type(self))), self.xml_path)
        self.xml = xml
        self.model = self._load()
        if n_frames is not None:
            self.n_frames = int(n_frames)
        if self.n_frames < 1:
            raise ValueError(f"{type(self).__name__}: n_frames must be positive, got {self.n_frames}")
        self.dtype = np.dtype(self.model.body_mass.dtype)
        self._action_space = self._ctrl_space()
        self._observation_space = None

    def _load(self, nconmax: int | None = None) -> hp.Model:
        return hp.from_mujoco(self.compile_mujoco(), source=source_name(self.xml), nconmax=nconmax)

    def compile_mujoco(self) -> mujoco.MjModel:
        """MuJoCo's model of the task: its file compiled, then `edit_model`'s changes. hurtle's physics converts
        it and a host engine (`hurtle.hostenvs.MujocoEnv`) steps it, so both simulate the same model."""
        mm = compile_mjcf(self.xml)
        self.edit_model(mm)
        return mm

    # -- what a task defines --

    def edit_model(self, mj_model: mujoco.MjModel) -> None:
        """Changes a task makes to its compiled model before either engine simulates it (a reference task's
        gains, damping or solver options set in code rather than in its file): none unless overridden."""

    def observation(self, data: hp.Data) -> jax.Array:
        """The observation of a physics state."""
        raise NotImplementedError(f"{type(self).__name__} must define observation(data)")

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        """The reward's terms (scalars) for the step from `before` to `after` under `action`."""
        raise NotImplementedError(f"{type(self).__name__} must define reward_terms(before, after, action)")

    def gradient_reward(self, before: hp.Data, after: hp.Data, action: jax.Array) -> jax.Array | None:
        """A smooth stand-in for the reward, for learners that follow its derivative through the physics (APG,
        SHAC), where the reward itself has none (an alive bonus is a step function of the state). None (the
        default): they follow the reward. Where defined, each state's `info["gradient_reward"]` holds it."""
        return None

    def terminated(self, data: hp.Data) -> jax.Array:
        """Whether the episode ends in this state (never, unless overridden)."""
        return jnp.zeros((), bool)

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, ...]:
        """The initial `(qpos, qvel)`, or `(qpos, qvel, ctrl)` where a start sets the actuators' controls too
        (`start_ctrl(qpos)` otherwise): the model's `qpos0` at rest unless overridden."""
        return jnp.asarray(self.model.qpos0, self.dtype), jnp.zeros(self.model.nv, self.dtype)

    def start_ctrl(self, qpos: jax.Array) -> jax.Array:
        """The actuators' `ctrl` at a start with positions `qpos` when none is given: zero unless overridden
        (a task whose servos hold the start pose returns it)."""
        return jnp.zeros(self.model.nu, self.dtype)

    def initial(self, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """`reset_state(key)` as `(qpos, qvel, ctrl)`, the controls from `start_ctrl` where it gives none."""
        start = tuple(self.reset_state(key))
        if len(start) not in (2, 3):
            raise ValueError(
                f"{type(self).__name__}.reset_state returned {len(start)} values; it returns (qpos, qvel) or "
                "(qpos, qvel, ctrl)"
            )
        qpos, qvel, *ctrl = start
        return qpos, qvel, (ctrl[0] if ctrl else self.start_ctrl(jnp.asarray(qpos).astype(self.dtype)))

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        """The actuators' `ctrl` for `action` in the state `data`: the action itself unless overridden (actions
        that change servo targets, `data.ctrl`, or offset a pose)."""
        return action

    def sensor(self, data: hp.Data, name: str) -> jax.Array:
        """The values of the model's sensor `name` in `data` (MuJoCo's layout; `hurtle.physics.read_sensor`),
        for observations: `self.sensor(data, "touch_tip")`."""
        return hp.read_sensor(self.model, data, name)

    # -- the Env contract --

    @property
    def dt(self) -> float:
        """The control period in seconds, `n_frames * opt.timestep`."""
        return float(self.model.opt.timestep) * self.n_frames

    @property
    def action_space(self) -> Box:
        return self._action_space

    @property
    def observation_space(self) -> Box:
        if self._observation_space is None:
            shape = jax.eval_shape(self.observation, hp.make_data(self.model))
            self._observation_space = Box(-np.inf, np.inf, shape.shape, shape.dtype)
        return self._observation_space

    def reset(self, key: jax.Array) -> State:
        return self.begin(self.reset_to(*self.initial(key)), key)

    def begin(self, state: State, key: jax.Array) -> State:
        """What a reset does beside starting the physics (place a target, zero a counter), given the started
        `state` and the reset's `key`: nothing unless overridden. It changes no physics field but the mocap
        bodies' poses, so a host engine replays it on its own start."""
        return state

    def reset_to(self, qpos: jax.Array, qvel: jax.Array | None = None, ctrl: jax.Array | None = None) -> State:
        """Start from the given positions, velocities (zero if omitted) and controls (`start_ctrl(qpos)` if
        omitted); derived quantities are computed by `forward` and the observation from them."""
        m = self.model
        qpos = jnp.asarray(qpos).astype(self.dtype)
        qvel = jnp.zeros(m.nv, self.dtype) if qvel is None else jnp.asarray(qvel).astype(self.dtype)
        ctrl = self.start_ctrl(qpos) if ctrl is None else jnp.asarray(ctrl).astype(self.dtype)
        if qpos.shape != (m.nq,) or qvel.shape != (m.nv,) or ctrl.shape != (m.nu,):
            raise ValueError(
                f"{type(self).__name__}.reset_to: qpos {qpos.shape}, qvel {qvel.shape} and ctrl {ctrl.shape}, "
                f"expected ({m.nq},), ({m.nv},) and ({m.nu},)"
            )
        return self.start(hp.forward(m, hp.make_data(m).replace(qpos=qpos, qvel=qvel, ctrl=ctrl)))

    def start(self, data: hp.Data) -> State:
        """The first state of an episode in the physics state `data` (derived quantities computed): its
        observation, zero reward and zero reward terms."""
        # the terms' names and dtypes, evaluated on a zero action; the values are discarded
        terms = self.reward_terms(data, data, jnp.zeros(self.action_space.shape, self.dtype))
        metrics = {f"reward/{k}": jnp.zeros_like(v) for k, v in terms.items()}
        if self.contact_capped:
            metrics["ncon_dropped"] = jnp.zeros((), data.ncon_dropped.dtype)
        info = {"gradient_reward": jnp.zeros((), self.dtype)} if self._smooth else {}
        return State.first(self.observation(data), self.dtype, metrics=metrics, info=info, physics=data)

    @property
    def _smooth(self) -> bool:
        return type(self).gradient_reward is not PhysicsEnv.gradient_reward

    def step(self, state: State, action: jax.Array) -> State:
        action = self.action_space.check(action, type(self).__name__)
        state, kick = self.push(state)
        physics = state.physics if kick is None else state.physics.replace(qvel=state.physics.qvel + kick)
        return self.advance(state, self.pipeline_step(physics, self.control(physics, action)), action)

    def push(self, state: State) -> tuple[State, jax.Array | None]:
        """A push before this step's physics, as a change of velocity: `(state, dqvel)`, `dqvel` added to `qvel`
        (MuJoCo Playground's pushes kick the base's velocity), or `(state, None)`: no push (the default). The
        returned state carries the push's own bookkeeping (its timer, in `info`); a host engine adds `dqvel` to
        its simulations' velocities the same way."""
        return state, None

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        """The step from `state` under `action` whose physics ended in `after`: the reward's terms, the
        observation, termination and metrics. Tasks that do more per step (move a reached target, count) extend
        it; it changes no physics field but the mocap bodies' poses (a host engine writes those back)."""
        before = state.physics
        terms = self.reward_terms(before, after, action)
        reward = sum(terms.values(), jnp.zeros((), self.dtype))
        if self._smooth:
            state = state.replace(info={**state.info, "gradient_reward": self.gradient_reward(before, after, action)})
        return state.replace(
            physics=after,
            obs=self.observation(after),
            reward=reward,
            done=jnp.asarray(self.terminated(after), bool),
            truncation=jnp.zeros((), bool),
            metrics={
                **state.metrics,
                **{f"reward/{k}": v for k, v in terms.items()},
                **({"ncon_dropped": after.ncon_dropped} if self.contact_capped else {}),
            },
        )

    def pipeline_step(self, data: hp.Data, ctrl: jax.Array) -> hp.Data:
        """`n_frames` physics steps with `ctrl` held. Under a contact cap the result's `ncon_dropped` counts
        the contacts dropped over all of them."""
        data = data.replace(ctrl=ctrl)
        if self.n_frames == 1:
            return hp.step(self.model, data)
        if not self.contact_capped:
            return lax.fori_loop(0, self.n_frames, lambda _, d: hp.step(self.model, d), data)

        def frame(_, carry):
            d, dropped = carry
            d = hp.step(self.model, d)
            return d, dropped + d.ncon_dropped

        data, dropped = lax.fori_loop(0, self.n_frames, frame, (data, jnp.zeros_like(data.ncon_dropped)))
        return data.replace(ncon_dropped=dropped)

    @property
    def contact_capped(self) -> bool:
        """Whether the model caps its contacts (`nconmax`): then the step's `metrics["ncon_dropped"]`
        counts the touching contacts past the cap that were dropped."""
        return self.model.nconmax > 0

    def with_contact_cap(self, nconmax: int) -> PhysicsEnv:
        """This task on its model file rebuilt with hurtle's contact cap (`hurtle.physics.load(...,
        nconmax=)`): the first `nconmax` touching contacts per contact dimension are kept and the rest dropped,
        counted in `metrics["ncon_dropped"]`. Faster where the model has many more contact candidates than
        contacts (the humanoids: 2-2.5x physics steps/s with 16, benchmarks/NOTES.md §26)."""
        return self.with_model(self._load(nconmax=nconmax))

    def with_model(self, model: hp.Model) -> PhysicsEnv:
        self.observation_space  # noqa: B018 (derive it from the concrete model before `model` may be traced)
        new = copy.copy(self)
        new.model = model
        return new

    def _ctrl_space(self) -> Box:
        m = self.model
        limited = np.asarray(m.actuator_ctrllimited, bool)
        ctrlrange = np.asarray(m.actuator_ctrlrange, np.float64).reshape(m.nu, 2)
        low = np.where(limited, ctrlrange[:, 0], -np.inf)
        high = np.where(limited, ctrlrange[:, 1], np.inf)
        return Box(low, high, (m.nu,), self.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model.source!r}, n_frames={self.n_frames})"
