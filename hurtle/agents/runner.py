"""The one training loop every algorithm runs on: iterations, evaluation, progress, checkpoints, exact resume.

An algorithm is an `Algorithm`: its `Config` (a frozen dataclass inheriting `RunConfig`), its presets, and
`make_learner(config, mesh) -> Learner`, which gives the runner
- `init()`: a fresh training state placed on the mesh (it must have a `step` field: env steps so far);
- `prepare(state)`: work a fresh run does once before its first iteration (SAC fills its replay buffer);
  a resumed run skips it, its checkpoint already holds the result;
- `iteration(state) -> (state, metrics)`: one jitted call of the algorithm's whole work per iteration;
- `policy(state)`: the acting item a checkpoint stores beside the state (what `hurtle eval` restores);
- `start(state)` and `close()`: what runs beside the iterations (Sebulba's actor threads), started once
  the state is ready (fresh or restored) and closed when the run ends, however it ends.

and `make_actor(config) -> Actor`: the deterministic `act(policy, obs) -> action` and a template of the
policy item, built from the config alone (no training environments), for evaluation, `hurtle eval` and the
viewer. The runner evaluates every algorithm the same way (`evaluate`: one episode per environment of a
batch, no auto-reset, the policy's deterministic action; an algorithm whose environments live on the host
brings its own `make_evaluate` doing the same there) and writes the same run directory.

Architectures: Anakin's algorithms (`ALGORITHMS["anakin"]`) compile environment and learner together;
Sebulba's (`ALGORITHMS["sebulba"]`) step host environments on actor threads (`hurtle.podracer.sebulba`).

`train` stops after the first iteration whose state's `step` reaches `config.num_timesteps`, or whose evaluation
reaches `config.target_return`; an algorithm whose iterations take a varying number of env steps (ES and ARS
count the steps their episodes really took) needs nothing more.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh

from hurtle import podracer
from hurtle.envs import make
from hurtle.envs.base import Env, tree_where
from hurtle.envs.wrappers import VmapWrapper
from hurtle.io.checkpoint import Checkpointer

# architecture -> name -> "module:attribute" of its `Algorithm`; imported on first use
ALGORITHMS: dict[str, dict[str, str]] = {
    "anakin": {
        "ppo": "hurtle.agents.ppo:ALGORITHM",
        "sac": "hurtle.agents.sac:ALGORITHM",
        "fasttd3": "hurtle.agents.fasttd3:ALGORITHM",
        "es": "hurtle.agents.es:ALGORITHM",
        "ars": "hurtle.agents.ars:ALGORITHM",
        "apg": "hurtle.agents.apg:ALGORITHM",
        "shac": "hurtle.agents.shac:ALGORITHM",
    },
    "sebulba": {
        "impala": "hurtle.agents.impala:ALGORITHM",
        "ppo": "hurtle.agents.impala:PPO",
        "fasttd3": "hurtle.agents.fasttd3:SEBULBA",
    },
}
ARCHITECTURES = tuple(ALGORITHMS)


def algorithm_names(arch: str | None = None) -> tuple[str, ...]:
    """The algorithms of `arch` (of every architecture by default), without repeats."""
    archs = ARCHITECTURES if arch is None else (arch,)
    return tuple(dict.fromkeys(name for a in archs for name in ALGORITHMS[a]))


@dataclasses.dataclass(frozen=True, eq=False)
class Learner:
    """One algorithm bound to one config and mesh (see the module docstring)."""

    init: Callable[[], Any]
    iteration: Callable[[Any], tuple[Any, dict[str, jax.Array]]]
    policy: Callable[[Any], Any]
    prepare: Callable[[Any], Any] | None = None
    start: Callable[[Any], None] | None = None
    close: Callable[[], None] | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Actor:
    """The deterministic policy of a config: `act(policy, obs) -> action` (jittable, `obs` batched) and
    `like_policy`, a policy item of the right structure (what a checkpoint's `policy` restores into)."""

    act: Callable[[Any, jax.Array], jax.Array]
    like_policy: Any


@dataclasses.dataclass(frozen=True, eq=False)
class Algorithm:
    """An algorithm as the runner and the CLI see it."""

    name: str
    config: type
    presets: Mapping[str, Mapping[str, Any]]
    make_learner: Callable[[Any, Mesh], Learner]
    make_actor: Callable[[Any], Actor]
    make_evaluate: Callable[..., Callable[[Any, jax.Array], dict[str, Any]]] | None = None
    """`(config, act, num_episodes) -> evaluate(policy, key)` where the runner's (`make_evaluate`, on the
    JAX environment) does not apply."""
    arch: str = "anakin"

    def evaluator(self, config: Any, act: Callable, num_episodes: int | None = None) -> Callable:
        """`evaluate(policy, key)` for this algorithm's runs (its own `make_evaluate`, or the runner's)."""
        return (self.make_evaluate or make_evaluate)(config, act, num_episodes)

    def preset(self, env: str) -> Any:
        """The config for `env` with its preset values (the defaults where it has none)."""
        return self.config(env=env, **self.presets.get(env, {}))


def algorithm(name: str, arch: str | None = None) -> Algorithm:
    """The registered algorithm `name` of `arch` (by default Anakin's, else the architecture that has it);
    ValueError naming the known ones otherwise."""
    if arch is not None and arch not in ALGORITHMS:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    if arch is None:
        arch = next((a for a in ARCHITECTURES if name in ALGORITHMS[a]), "anakin")
    if name not in ALGORITHMS[arch]:
        raise ValueError(f"unknown {arch} algorithm {name!r}; known: {', '.join(ALGORITHMS[arch])}")
    module, _, attr = ALGORITHMS[arch][name].partition(":")
    return getattr(importlib.import_module(module), attr)


def check_devices(config: Any, field: str, count: int, mesh: Mesh) -> None:
    """ValueError naming `field` when `count` (what is split over the devices) does not divide evenly."""
    if count % mesh.size:
        raise ValueError(f"Config.{field} = {count} must be divisible by the {mesh.size} devices it is split over")


def make_env(config: Any, training: bool = False) -> Env:
    """The (unbatched, non-resetting) environment of `config`, time limit and contact cap applied; `training`:
    with the task options of `config.env_options` (a curriculum; evaluation runs the task as registered)."""
    options = config.env_kwargs() if training and hasattr(config, "env_kwargs") else {}
    try:
        return make(config.env, config.time_limit(), nconmax=config.nconmax, **options)
    except TypeError as e:
        if not options:
            raise
        raise ValueError(f"Config.env_options {config.env_options} do not apply to {config.env}: {e}") from None


def training_env(config: Any, num_envs: int) -> Env:
    """The batched, auto-resetting training environment of `config` (`wrap_for_training`), `num_envs` of them,
    each on its own randomised model where `config.domain_randomization` asks (the task's `randomize`, keyed by
    the run's seed)."""
    from hurtle.envs.wrappers import wrap_for_training

    env = make_env(config, training=True)
    randomize = None
    if getattr(config, "domain_randomization", False):
        randomize = getattr(env.unwrapped, "randomize", None)
        if randomize is None:
            raise ValueError(f"Config.domain_randomization: {config.env} has no domain randomisation (no randomize)")
    key = jax.random.fold_in(jax.random.key(config.seed), 0x0D)
    return wrap_for_training(env, num_envs, randomize=randomize, randomize_key=key)


def no_domain_randomization(config: Any, algorithm: str) -> None:
    """ValueError where `config` asks for domain randomisation from `algorithm`, which runs the task as registered."""
    if getattr(config, "domain_randomization", False):
        raise ValueError(
            f"Config.domain_randomization: {algorithm} runs the task as registered (PPO, SAC, APG, SHAC and IMPALA "
            "train on randomised models)"
        )


def control_steps(config: Any, env: Env) -> int:
    """Steps of `env` (after its action repeat) that one episode of `config.time_limit()` takes at most."""
    return -(-config.time_limit() // getattr(env, "action_repeat", 1))


def evaluate(
    act: Callable[[Any, jax.Array], jax.Array],
    policy: Any,
    key: jax.Array,
    *,
    env: Env,
    episode_length: int,
    record: Callable[[Any], Any] | None = None,
) -> dict[str, jax.Array]:
    """Run `act(policy, obs)` for one episode on each environment of the batched, non-resetting `env`; returns
    each episode's return and length (`[num_envs]` arrays under "episode_return" and "episode_length") and the
    task's own measures under "metrics": each reward term `reward/*` summed over the episode, every other
    metric (a task's success measures, e.g. `targets/reached`) as it stood on the episode's last step.

    `record(state)`: what to keep of each state (e.g. the physics' qpos), returned under "frames" with a leading
    axis of `episode_length + 1` (the first state, then each step's); an episode that ended holds its last."""
    state = env.reset(key)
    dtype = state.reward.dtype
    summed = {k for k in state.metrics if k.startswith("reward/")}

    def step(carry, _):
        state, ret, length, alive, kept, measured = carry
        new = env.step(state, act(policy, state.obs))
        ret = ret + jnp.where(alive, new.reward, jnp.zeros_like(new.reward))
        length = length + alive.astype(dtype)
        if record is not None:
            kept = tree_where(alive, record(new), kept)
        measured = {
            k: jnp.where(alive, v + new.metrics[k] if k in summed else new.metrics[k], v) for k, v in measured.items()
        }
        alive = alive & ~(new.done | new.truncation)
        return (new, ret, length, alive, kept, measured), kept

    zeros = jnp.zeros_like(state.reward)
    first = None if record is None else record(state)
    measured = {k: jnp.zeros_like(v) if k in summed else v for k, v in state.metrics.items()}
    carry = (state, zeros, zeros, jnp.ones(state.reward.shape, bool), first, measured)
    (_, ret, length, _, _, measured), frames = lax.scan(step, carry, None, length=episode_length)
    out = {"episode_return": ret, "episode_length": length, "metrics": measured}
    if record is not None:
        out["frames"] = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, frames)
    return out


def make_evaluate(
    config: Any, act: Callable[[Any, jax.Array], jax.Array], num_episodes: int | None = None
) -> Callable[[Any, jax.Array], dict[str, jax.Array]]:
    """The jitted `evaluate(policy, key)` of `act` on `num_episodes` (default `config.num_eval_envs`) fresh
    environments of `config.env`: per-episode returns and lengths."""
    env = make_env(config)
    batched = VmapWrapper(env, num_episodes or config.num_eval_envs)
    length = control_steps(config, env)
    return jax.jit(lambda policy, key: evaluate(act, policy, key, env=batched, episode_length=length))


@dataclasses.dataclass(frozen=True)
class Rollout:
    """Episodes of a policy on a physics task, for the viewer and video (`hurtle.io.html`, `hurtle.io.video`).

    task: the task (a `PhysicsEnv`, its `xml` the model shown; or a Gymnasium environment's `MjModel`). qpos:
    `[episodes, frames, nq]` numpy, frame 0 the reset
    state, each later frame one control step (`dt` seconds) on; an episode that ended early holds its last pose.
    episode_return, episode_length: `[episodes]`. mocap_pos: `[episodes, frames, nmocap, 3]` where the model has
    mocap bodies the task moves (a target that jumps when reached), else None. metrics: the task's measures per
    episode, as `evaluate` returns them (`[episodes]` each; empty for Gymnasium's environments).
    """

    task: Any
    qpos: np.ndarray
    dt: float
    episode_return: np.ndarray
    episode_length: np.ndarray
    mocap_pos: np.ndarray | None = None
    metrics: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


def physics_task(config: Any) -> Any:
    """What a run's policy acts in, for showing it: the `PhysicsEnv` of a hurtle task (Anakin, or Sebulba on
    MuJoCo C), or the MuJoCo model of a Gymnasium MuJoCo environment (Sebulba's gymnasium backend). ValueError
    naming the environment where there is no model to show (classic control, EnvPool, non-MuJoCo Gymnasium)."""
    from hurtle.envs.physics_env import PhysicsEnv

    backend = getattr(config, "env_backend", "mujoco")
    if backend == "gymnasium":
        from hurtle.hostenvs.gymnasium import mujoco_model

        model = mujoco_model(config.env)
        if model is None:
            raise ValueError(f"{config.env} is not a MuJoCo environment: there is no model to show")
        return model
    if backend != "mujoco":
        raise ValueError(f"{config.env} is a {backend} environment: hurtle shows hurtle's and Gymnasium's MuJoCo tasks")
    task = make_env(config).unwrapped
    if not isinstance(task, PhysicsEnv):
        raise ValueError(f"{config.env} has no MJCF model to show ({type(task).__name__} is not a physics task)")
    return task


def rollout(
    config: Any, act: Callable[[Any, jax.Array], jax.Array], policy: Any, key: jax.Array, num_episodes: int = 1
) -> Rollout:
    """`num_episodes` episodes of `act(policy, obs)` on `config`'s task, each to its end or the time limit: on
    hurtle's physics for hurtle's tasks (Sebulba's MuJoCo C runs are replayed on the same task in hurtle), in
    Gymnasium's own environment for a Gymnasium MuJoCo id."""
    if getattr(config, "env_backend", "mujoco") == "gymnasium":
        from hurtle.hostenvs.gymnasium import mujoco_rollout

        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        model, qpos, dt, returns, lengths = mujoco_rollout(config.env, jax.jit(act), policy, num_episodes, seed)
        return Rollout(task=model, qpos=qpos, dt=dt, episode_return=returns, episode_length=lengths)
    task = physics_task(config)
    env = make_env(config)
    batched = VmapWrapper(env, num_episodes)
    length = control_steps(config, env)
    mocap = task.model.nmocap > 0

    def record(s):
        return (s.physics.qpos, s.physics.mocap_pos) if mocap else (s.physics.qpos,)

    run = jax.jit(lambda p, k: evaluate(act, p, k, env=batched, episode_length=length, record=record))
    out = jax.device_get(run(policy, key))
    frames = [np.swapaxes(np.asarray(x, np.float64), 0, 1) for x in out["frames"]]
    return Rollout(
        task=task,
        qpos=frames[0],
        dt=task.dt * getattr(env, "action_repeat", 1),
        episode_return=np.asarray(out["episode_return"], np.float64),
        episode_length=np.asarray(out["episode_length"]).astype(int),
        mocap_pos=frames[1] if mocap else None,
        metrics={k: np.asarray(v) for k, v in out["metrics"].items()},
    )


def eval_columns(algo: Algorithm, config: Any) -> tuple[str, ...]:
    """The names `eval_metrics` logs for `algo`'s runs of `config` (known before the first evaluation, for a
    metrics table's columns): return and length, and the task's measures where hurtle's task is evaluated (the
    runner's evaluation, or Sebulba's on MuJoCo C)."""
    names = ["eval/episode_return", "eval/episode_return_std", "eval/episode_length"]
    if algo.make_evaluate is None or getattr(config, "env_backend", None) == "mujoco":
        state = jax.eval_shape(make_env(config).reset, jax.random.key(0))
        names += [f"eval/{k}" for k in sorted(state.metrics) if not k.startswith("episode/")]
    return tuple(names)


def eval_metrics(episodes: dict[str, Any]) -> dict[str, float]:
    """The logged summary of `evaluate`'s episodes: mean return and length, the return's spread, and the mean
    over episodes of each of the task's measures (`eval/targets/reached`, `eval/reward/reach`, ...)."""
    ret = np.asarray(episodes["episode_return"], np.float64)
    out = {
        "eval/episode_return": float(ret.mean()),
        "eval/episode_return_std": float(ret.std()),
        "eval/episode_length": float(np.mean(episodes["episode_length"])),
    }
    for key, value in episodes.get("metrics", {}).items():
        if key.startswith("episode/"):
            continue  # the wrapper's own count of what is above
        out[f"eval/{key}"] = float(np.mean(np.asarray(value, np.float64)))
    return out


def step_counter() -> jax.Array:
    """A zero env-step counter (int64 under x64, else int32)."""
    return jnp.zeros((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


def train(
    algo: Algorithm | str,
    config: Any,
    progress_fn: Callable[[int, dict[str, float]], None] | None = None,
    mesh: Mesh | None = None,
    checkpointer: Checkpointer | None = None,
    resume: bool = False,
    learner: Learner | None = None,
) -> tuple[Any, list[dict[str, float]]]:
    """Train `algo` per `config` on `mesh` (all devices by default; `learner`: one `algo.make_learner` already
    built for them, e.g. to check the config before a run directory is made); returns the final state and one metrics
    dict per iteration run (evaluation metrics merged in every `eval_every` iterations and after the last).
    `progress_fn(step, metrics)` is called after every iteration; returning True stops the run there (as
    `config.target_return` does: that iteration is the last, checkpointed as such).

    With a `checkpointer`, a checkpoint is written every `config.checkpoint_every` iterations and after the
    last. With `resume`, the run continues from the newest checkpoint (if any) exactly as if it had never
    stopped: same parameters, environment states, replay, random keys and step count; `time/seconds`
    continues from the checkpoint's.
    """
    algo = algorithm(algo) if isinstance(algo, str) else algo
    config.validate()
    mesh = podracer.make_mesh() if mesh is None else mesh
    learner = algo.make_learner(config, mesh) if learner is None else learner
    state = learner.init()
    evaluate_fn = algo.evaluator(config, algo.make_actor(config).act) if config.eval_every else None
    eval_key = jax.random.key(config.seed + 1)
    iteration, elapsed = 0, 0.0
    restored = resume and checkpointer is not None and checkpointer.latest_step() is not None
    if restored:
        state, meta = checkpointer.restore(state)
        iteration, elapsed = int(meta["iteration"]), float(meta["time_s"])
        eval_key = jax.random.wrap_key_data(np.asarray(meta["eval_key"], np.uint32))
    start = time.perf_counter() - elapsed
    if not restored and learner.prepare is not None:
        state = learner.prepare(state)
    history: list[dict[str, float]] = []
    step = int(podracer.host_value(state.step))
    try:
        if learner.start is not None:
            learner.start(state)
        while step < config.num_timesteps or iteration == 0:
            state, metrics = learner.iteration(state)
            iteration += 1
            metrics = {k: float(v) for k, v in podracer.host_value(metrics).items()}
            step = int(podracer.host_value(state.step))
            last = step >= config.num_timesteps
            if evaluate_fn is not None and (iteration % config.eval_every == 0 or last):
                eval_key, k = jax.random.split(eval_key)
                metrics.update(eval_metrics(podracer.host_value(evaluate_fn(learner.policy(state), k))))
            stop = config.target_return is not None and metrics.get("eval/episode_return", -np.inf) >= float(
                config.target_return
            )
            metrics["step"] = float(step)
            metrics["time/seconds"] = time.perf_counter() - start
            history.append(metrics)
            if progress_fn is not None:
                stop = progress_fn(step, metrics) is True or stop
            last = last or stop
            if checkpointer is not None and (
                last or (config.checkpoint_every and iteration % config.checkpoint_every == 0)
            ):
                meta = {
                    "iteration": iteration,
                    "step": step,
                    "time_s": metrics["time/seconds"],
                    "eval_key": np.asarray(jax.random.key_data(eval_key)).tolist(),
                }
                checkpointer.save(step, state, learner.policy(state), meta)
            if stop:
                break
    finally:
        if learner.close is not None:
            learner.close()
    if checkpointer is not None:
        checkpointer.wait()
    return state, history


def load_policy(
    algo: Algorithm | str, config: Any, checkpointer: Checkpointer, step: int | None = None
) -> tuple[Actor, Any, dict[str, Any]]:
    """The actor of `config` with the policy item of checkpoint `step` (the newest by default), without
    building the training environments: `(actor, policy, meta)`."""
    algo = algorithm(algo) if isinstance(algo, str) else algo
    actor = algo.make_actor(config)
    policy, meta = checkpointer.restore_policy(actor.like_policy, step)
    return actor, policy, meta


__all__ = [
    "ALGORITHMS",
    "ARCHITECTURES",
    "Actor",
    "Algorithm",
    "Learner",
    "Rollout",
    "algorithm",
    "algorithm_names",
    "check_devices",
    "control_steps",
    "eval_columns",
    "eval_metrics",
    "evaluate",
    "load_policy",
    "make_env",
    "make_evaluate",
    "physics_task",
    "rollout",
    "step_counter",
    "train",
]
