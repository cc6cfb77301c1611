"""hurtle's physics tasks stepped by MuJoCo C: `mujoco.batch.Batch` on host threads, the task's own definition.

A `PhysicsEnv` defines its observation, reward terms, termination and reset distribution as JAX functions of
the physics `Data`, and what a step or reset does beside the physics (`control`: the action's `ctrl`;
`advance`: targets moved when reached, counters; `begin`). `MujocoEnv` steps the task's MJCF model with MuJoCo C
(`mujoco.batch.Batch`: one thread pool, the GIL released, bit-identical at any thread count) and evaluates those
same functions, jitted and batched on the host CPU, over a `Data` whose fields are read from the batch (the
mocap bodies' poses a task sets, its targets, written back). No second copy of a task in
numpy: which fields a task reads is found by tracing its functions once, and only those are copied each
step. A task that reads a field MuJoCo C does not give in hurtle's layout (the contact list, the solver's
rows) is refused by name.

MuJoCo C integrates in float64; the task's functions see the fields in the task's dtype (float32 unless
`jax_enable_x64`), as the JAX environment's do. `mj_step` leaves the derived fields (`xpos`, `cfrc_ext`,
...) one substep behind the state, and so does `hurtle.physics.step`: a transition here equals the JAX
task's from the same state within float tolerance (tests/hostenvs).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import mujoco.batch
import numpy as np

import hurtle.physics as hp
from hurtle.envs import registry
from hurtle.envs.physics_env import PhysicsEnv
from hurtle.hostenvs.base import EpisodeCounter, HostEnv, HostStep, guard_nonfinite


def fields_read(fn, *args) -> list[set[str]]:
    """For each `Data` among `args`, the names of its fields that `fn(*args)` reads (found by tracing)."""
    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    used = {id(v) for eqn in jaxpr.eqns for v in eqn.invars} | {id(v) for v in jaxpr.outvars}
    out, invars = [], iter(jaxpr.invars)
    for arg in args:
        names = set()
        for path, _ in jax.tree_util.tree_flatten_with_path(arg)[0]:
            if id(next(invars)) in used and isinstance(arg, hp.Data):
                names.add(path[0].name)
        out.append(names)
    return out


# computed by mj_rnePostConstraint, which hurtle's step runs after every step, as Gymnasium's MuJoCo tasks do;
# MuJoCo C's step computes them only for the sensors that need them (and not at that point)
_POST_CONSTRAINT = ("cacc", "cfrc_int", "cfrc_ext")
# MuJoCo C resets a simulation whose state or acceleration is not finite (or huge) and counts a warning; the
# host environment ends that episode then, as hurtle's NaN guard does, rather than continue from qpos0
_UNSTABLE = [int(getattr(mujoco.mjtWarning, f"mjWARN_BAD{x}")) for x in ("QPOS", "QVEL", "QACC")]


class MujocoEnv(HostEnv):
    """`num_envs` copies of a physics task on MuJoCo C.

    env: a registered task's name (built with `kwargs`, its registered time limit unless `episode_length`)
      or a `PhysicsEnv` (no time limit unless `episode_length`).
    nthread: the batch's threads (0: every CPU). Several actor threads that each own a `MujocoEnv` should
      share the cores between them.
    randomize_key: domain randomisation: each simulation runs its own variant of the task's model, the task's
      `randomize(model, key)` with a key split from this one, kept for the run (MuJoCo's batch holds the fields it
      changed per simulation; derived constants are not recomputed, as on hurtle's physics). None: the model as is.
    """

    def __init__(
        self,
        env: str | PhysicsEnv,
        num_envs: int,
        episode_length: int | None = None,
        nthread: int = 0,
        randomize_key: jax.Array | None = None,
        **kwargs,
    ):
        if isinstance(env, str):
            wrapped = registry.make(env, **kwargs)
            task = wrapped.unwrapped
            self.name = env
            if episode_length is None:
                episode_length = wrapped.episode_length
        else:
            task, self.name = env, type(env).__name__
        if not isinstance(task, PhysicsEnv):
            raise TypeError(
                f"{self.name}: MuJoCo C steps physics tasks (a PhysicsEnv); this is a {type(task).__name__}"
            )
        if num_envs < 1:
            raise ValueError(f"{self.name}: num_envs must be positive, got {num_envs}")
        self.task, self.num_envs = task, int(num_envs)
        self.observation_space, self.action_space = task.observation_space, task.action_space
        self.privileged_observation_space = task.privileged_observation_space
        self.dtype = task.dtype
        self._counter = EpisodeCounter(self.num_envs, episode_length)
        self.episode_limit = episode_length
        self._cpu = jax.local_devices(backend="cpu")[0]
        with jax.default_device(self._cpu):
            self._build(task, nthread, simple=randomize_key is None)
        if randomize_key is not None:
            self._randomize(randomize_key)
        self._state_fields = {n: self.batch.bind(n) for n in ("qpos", "qvel", "ctrl", *self._written)}
        self._keys = None
        self._before = None
        self._task_state = None
        self._warnings = self._unstable_counts()

    def _randomize(self, key: jax.Array) -> None:
        """Each simulation's model fields set to its variant of `task.randomize` (the fields that vary).

        Derived constants stay as compiled (as on hurtle's physics and in Playground). MuJoCo's shortcut for
        "simple" bodies (a free body whose frame is its inertial frame: its mass-matrix entries copied from the
        compiled `dof_M0`, its coupling terms taken as zero) is off in a randomised batch (`_build`), so that MuJoCo
        computes every body's matrix from the variant's mass, inertia and centre of mass as hurtle does."""
        task = self.task
        if task.randomize is None:
            raise ValueError(f"{self.name}: the task has no domain randomisation (no randomize)")
        with jax.default_device(self._cpu):
            keys = jax.random.split(key, self.num_envs)
            models = jax.device_get(jax.vmap(task.randomize, in_axes=(None, 0))(task.model, keys))
        for field in dataclasses.fields(task.model):
            base, variants = getattr(task.model, field.name), getattr(models, field.name)
            if not hasattr(variants, "shape") or np.array_equal(
                np.broadcast_to(np.asarray(base), variants.shape), variants
            ):
                continue
            if field.name not in mujoco.batch.MODEL_FIELDS:
                raise NotImplementedError(
                    f"{self.name}: randomize changes Model.{field.name}, which MuJoCo's batch cannot vary"
                )
            values = self.batch.expand(field.name)
            values[:] = np.asarray(variants, values.dtype).reshape(values.shape)

    def _unstable_counts(self) -> np.ndarray:
        return self.batch.warning[:, _UNSTABLE, 1].sum(axis=1)

    def _build(self, task: PhysicsEnv, nthread: int, simple: bool = True) -> None:
        template = hp.make_data(task.model)
        action = jnp.zeros(task.action_space.shape, task.dtype)
        key = jax.random.PRNGKey(0)
        # a task state's structure (its info and metrics: target keys, counters), the physics apart
        shapes = jax.eval_shape(lambda: task.begin(task.start(template), key))
        blank = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes.replace(physics=None))
        blank = blank.replace(physics=template)
        # the task's step and reset change no physics field but the mocap bodies' poses (its targets): those
        # are written back to the simulations
        self._written = ["mocap_pos", "mocap_quat"] if task.model.nmocap else []

        def data(fields):
            return template.replace(**fields)

        def written(state):
            return {name: getattr(state.physics, name) for name in self._written}

        def advance(before, info, metrics, after, action):
            new = task.advance(blank.replace(physics=before, info=info, metrics=metrics), after, action)
            return (new.obs, new.privileged_obs), new.reward, new.done, new.info, new.metrics, written(new)

        def begin(started, key):
            state = task.begin(task.start(started), key)
            return (state.obs, state.privileged_obs), state.info, state.metrics, written(state)

        def push(before, info, metrics):
            state, kick = task.push(blank.replace(physics=before, info=info, metrics=metrics))
            return state.info, kick

        # what each reads (its outputs less the physics passed through)
        control_f = fields_read(lambda d: task.control(d, action), template)[0]
        start_f = fields_read(lambda d: begin(d, key), template)[0]
        before_f, after_f = fields_read(
            lambda b, a: advance(b, blank.info, blank.metrics, a, action), template, template
        )
        # a task that pushes (a velocity kick before the physics, `PhysicsEnv.push`): its kick added to qvel here
        pushes = jax.eval_shape(lambda: push(template, blank.info, blank.metrics)[1]) is not None
        push_f = fields_read(lambda d: push(d, blank.info, blank.metrics), template)[0] if pushes else set()
        self._before_names = sorted(before_f | control_f | push_f | set(self._written))
        self._after_names = sorted(after_f | start_f | set(self._before_names) | {"qpos", "qvel"})
        self.mj_model = task.compile_mujoco()
        if not simple:  # see `_randomize`: every body's mass matrix computed, none copied from dof_M0
            self.mj_model.body_simple[:] = 0
            self.mj_model.dof_simplenum[:] = 0
        # fields of mj_rnePostConstraint: run per simulation on a copy of its MjData (a persistent batch
        # keeps each one), ~6 us per environment step against ant's ~250 us of stepping
        self._post = [name for name in self._after_names if name in _POST_CONSTRAINT]
        self.batch = mujoco.batch.Batch(self.mj_model, self.num_envs, nthread, persistent=bool(self._post))
        self._scratch = mujoco.MjData(self.mj_model) if self._post else None
        self._bound = {}
        for name in self._after_names:
            value = getattr(template, name, None)
            if name not in mujoco.batch.DATA_FIELDS or not hasattr(value, "shape"):
                raise NotImplementedError(
                    f"{self.name}: the task reads Data.{name}, which MuJoCo C's batch does not give in hurtle's layout"
                )
            shape = tuple(value.shape)
            array = getattr(self._scratch, name)[None] if name in self._post else self.batch.bind(name)
            if int(np.prod(array.shape[1:], dtype=np.int64)) != int(np.prod(shape, dtype=np.int64)):
                raise NotImplementedError(
                    f"{self.name}: Data.{name} is {shape} in hurtle and {array.shape[1:]} in MuJoCo C (stored sparse)"
                )
            self._bound[name] = (array, shape)

        def initial(keys):
            keys, sub = jax.vmap(jax.random.split, out_axes=1)(keys)
            return keys, sub, jax.vmap(task.initial)(sub)

        self._control = jax.jit(jax.vmap(lambda before, action: task.control(data(before), action)))
        self._advance = _packed(jax.vmap(lambda b, info, m, a, action: advance(data(b), info, m, data(a), action)))
        self._begin = _packed(jax.vmap(lambda fields, key: begin(data(fields), key)))
        self._push = jax.jit(jax.vmap(lambda b, info, m: push(data(b), info, m))) if pushes else None
        self._initial = jax.jit(initial)

    def _read(self, names) -> dict[str, np.ndarray]:
        out = {}
        post = [name for name in names if name in self._post]
        for name in names:
            if name not in post:
                array, shape = self._bound[name]
                out[name] = np.array(array, self.dtype).reshape(self.num_envs, *shape)  # a copy: bound arrays are live
        if post:
            values = {name: np.empty((self.num_envs, *self._bound[name][1]), self.dtype) for name in post}
            for i in range(self.num_envs):
                self.batch.get_data(i, self._scratch)
                mujoco.mj_rnePostConstraint(self.mj_model, self._scratch)
                for name in post:
                    values[name][i] = getattr(self._scratch, name).reshape(self._bound[name][1])
            out.update(values)
        return out

    def _restart(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Start the environments `ids` afresh as the task's `reset` does (its `initial` state, MuJoCo C's
        `forward`, the task's `begin`); every environment's observation and privileged observation (or None)."""
        with jax.default_device(self._cpu):
            self._keys, keys, start = jax.device_get(self._initial(self._keys))
        self.batch.reset(ids, stage=mujoco.mjtStage.mjSTAGE_NONE)
        for name, value in zip(("qpos", "qvel", "ctrl"), start):
            self._state_fields[name][ids] = np.asarray(value)[ids]
        self.batch.forward(ids)
        self._warnings = self._unstable_counts()
        after = self._read(self._after_names)
        with jax.default_device(self._cpu):
            obs, info, metrics, written = self._begin(after, keys)
        self._write(written, after, ids)
        self._counter.reset(ids)
        if self._before is None:
            self._before = {name: after[name] for name in self._before_names}
            self._task_state = jax.tree.map(np.array, (info, metrics))
        for name in self._before_names:
            self._before[name][ids] = after[name][ids]
        for mine, new in zip(jax.tree.leaves(self._task_state), jax.tree.leaves((info, metrics))):
            mine[ids] = new[ids]
        obs, privileged = obs
        return np.asarray(obs), None if privileged is None else np.asarray(privileged)

    def _write(self, written: dict[str, np.ndarray], after: dict[str, np.ndarray], ids) -> None:
        """Write the mocap poses the task set (a target placed or moved) into the simulations `ids` and `after`."""
        for name, value in written.items():
            self._state_fields[name][ids] = value[ids]
            after[name] = after[name].copy()
            after[name][ids] = value[ids]

    def reset(self, seed: int) -> np.ndarray:
        self._keys = np.asarray(jax.random.split(jax.random.PRNGKey(seed), self.num_envs))
        self._before = None
        obs, self.reset_privileged_obs = self._restart(np.arange(self.num_envs))
        return obs

    def close(self) -> None:
        # the bound arrays are views whose base is the batch: drop them too, so its threads and simulations go
        self.batch, self._state_fields, self._bound, self._scratch = None, {}, {}, None

    def step(self, action: np.ndarray) -> HostStep:
        if self._keys is None or self.batch is None:
            raise RuntimeError(f"{self.name}: " + ("closed" if self.batch is None else "call reset(seed) before step"))
        action = self._check_action(action).astype(self.dtype)
        if self._push is not None:
            with jax.default_device(self._cpu):
                info, kick = jax.device_get(self._push(self._before, *self._task_state))
            self._task_state = (jax.tree.map(np.array, info), self._task_state[1])
            self._state_fields["qvel"][:] += kick
            if "qvel" in self._before:
                self._before["qvel"] = self._before["qvel"] + kick
        with jax.default_device(self._cpu):
            self._state_fields["ctrl"][:] = np.asarray(self._control(self._before, action))
        self.batch.step(nstep=self.task.n_frames)
        after = self._read(self._after_names)
        with jax.default_device(self._cpu):
            obs, reward, terminated, info, task_metrics, written = self._advance(
                self._before, *self._task_state, after, action
            )
        self._write(written, after, slice(None))
        self._task_state = jax.tree.map(np.array, (info, task_metrics))
        counts = self._unstable_counts()
        unstable, self._warnings = counts != self._warnings, counts
        obs, privileged = obs
        more = () if privileged is None else (np.asarray(privileged),)
        obs, reward, terminated, bad = guard_nonfinite(
            np.asarray(obs),
            np.asarray(reward),
            np.asarray(terminated, bool),
            after["qpos"],
            after["qvel"],
            *more,
            bad=unstable,
        )
        if privileged is not None:
            privileged = np.where(bad[:, None], 0, privileged).astype(self.dtype)
        truncated, metrics = self._counter.add(reward, terminated)
        task_metrics = {k: np.where(bad, 0, v) if k.startswith("reward/") else v for k, v in task_metrics.items()}
        metrics.update(task_metrics, nan_resets=bad.astype(np.int32))
        self._before = {name: after[name] for name in self._before_names}
        final_obs, final_privileged = obs, privileged
        ended = np.nonzero(terminated | truncated)[0]
        if ended.size:
            fresh, fresh_privileged = self._restart(ended)
            obs = obs.copy()
            obs[ended] = fresh[ended]
            if privileged is not None:
                privileged = privileged.copy()
                privileged[ended] = fresh_privileged[ended]
        return HostStep(obs, reward, terminated, truncated, final_obs, metrics, privileged, final_privileged)


class _packed:
    """`fn` jitted, its outputs fetched to the host as numpy: one transfer per dtype (the leaves concatenated on the
    device, split into views here), not one per leaf; a task's step returns ~40 small arrays, whose transfers one by
    one cost as much as MuJoCo's stepping of a batch of 16 Go1s."""

    def __init__(self, fn):
        self._fn, self._layouts = fn, {}

        def flat(*args):
            leaves = jax.tree.leaves(fn(*args))
            groups: dict = {}
            for leaf in leaves:
                groups.setdefault(np.dtype(leaf.dtype).str, []).append(jnp.ravel(leaf))
            return {k: jnp.concatenate(v) for k, v in groups.items()}

        self._flat = jax.jit(flat)

    def __call__(self, *args):
        key = jax.tree.structure(args), tuple((np.shape(x), np.asarray(x).dtype.str) for x in jax.tree.leaves(args))
        if key not in self._layouts:
            self._layouts[key] = jax.eval_shape(self._fn, *args)
        shapes = self._layouts[key]
        buffers = {k: np.asarray(v) for k, v in jax.device_get(self._flat(*args)).items()}
        offsets = dict.fromkeys(buffers, 0)
        leaves = []
        for leaf in jax.tree.leaves(shapes):
            k, size = np.dtype(leaf.dtype).str, int(np.prod(leaf.shape))
            leaves.append(buffers[k][offsets[k] : offsets[k] + size].reshape(leaf.shape))
            offsets[k] += size
        return jax.tree.unflatten(jax.tree.structure(shapes), leaves)


__all__ = ["MujocoEnv", "fields_read"]
