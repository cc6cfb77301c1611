"""Sebulba (Hessel et al. 2021, "Podracer architectures"): host environments on actor threads, the learner
on its own devices.

Each actor thread owns a batch of host environments (`hurtle.hostenvs`: MuJoCo C or Gymnasium) and one
actor device. It steps its environments on the host (MuJoCo C and Gymnasium's async workers release the
GIL), runs the policy's batched inference on its device, and after `unroll_length` steps hands the
trajectory to the learner through a bounded queue. The learner (the caller's thread) takes one trajectory
per actor thread, concatenates them along the batch axis, updates on its devices, and publishes the new
policy to every actor device with a version number; `policy lag` is the learner's version minus the one a
trajectory was collected with.

Modes (rlpyt's samplers):
- "serial": no thread; the learner's thread collects each trajectory itself (for debugging).
- "parallel": `actor_threads` free-running threads per actor device.
- "alternating": two threads per actor device taking turns at the device, so that one thread's inference
  hides behind the other's stepping.

Synchronous (`asynchronous=False`): every actor waits for the policy of the round it collects, so the lag
is 0 and a run is bitwise reproducible for a fixed seed and thread count (trajectories are ordered by
thread). Asynchronous: actors go on with the newest policy they have; the learner takes the trajectories
in the order they arrive.

Faults: an exception in an actor thread (its environment's included) stops every thread and is raised by
the learner's next `collect` as `ActorError`, with the thread's traceback in the message, within
`POLL_S` of happening; `close()` (also on Ctrl-C or a learner error, by the runner) stops and joins every
thread. A trajectory is numpy; what goes on the device is the caller's choice.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from hurtle.hostenvs.base import HostEnv
from hurtle.podracer.anakin import local_copy

POLL_S = 0.1  # how often blocked threads look at the stop flag
MODES = ("serial", "parallel", "alternating")


class ActorError(RuntimeError):
    """An actor thread failed; the message holds its traceback."""


class _Stopped(Exception):
    """Raised inside an actor's rollout when the run stops."""


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """`unroll_length` steps of one batch of host environments, time-major numpy `[T, B, ...]`."""

    obs: np.ndarray
    raw_action: np.ndarray
    log_prob: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    next_obs: np.ndarray
    """The observation each step reached: the ended episode's last one where it ended (`final_obs`)."""
    episode_return: np.ndarray
    """Summed returns of the episodes that ended in the trajectory, per environment `[B]`."""
    episodes: np.ndarray
    """Episodes that ended, per environment `[B]`."""
    nan_resets: np.ndarray
    """Steps whose observation or reward was not finite (that environment restarted), per environment."""
    privileged_obs: np.ndarray | None = None
    """The privileged observation beside each `obs` (`HostStep.privileged_obs`), None for tasks without one."""
    next_privileged_obs: np.ndarray | None = None
    """The privileged observation each step reached (`final_privileged_obs` where an episode ended)."""

    @staticmethod
    def concatenate(items: Sequence[Trajectory]) -> Trajectory:
        """Trajectories of several actors as one, along the batch axis."""
        fields = {}
        for f in dataclasses.fields(Trajectory):
            values = [getattr(t, f.name) for t in items]
            if values[0] is None:
                fields[f.name] = None
                continue
            axis = 0 if values[0].ndim == 1 else 1
            fields[f.name] = np.concatenate(values, axis=axis)
        return Trajectory(**fields)


@dataclasses.dataclass
class Timings:
    """Seconds spent per stage since the last `collect` (summed over actor threads)."""

    env: float = 0.0
    inference: float = 0.0
    actor_queue_wait: float = 0.0
    actor_policy_wait: float = 0.0

    @property
    def total(self) -> float:
        return self.env + self.inference + self.actor_queue_wait + self.actor_policy_wait

    def add(self, other: Timings) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


class _Store:
    """The newest policy per actor device, with its version; actors wait on it in synchronous mode."""

    def __init__(self):
        self._cond = threading.Condition()
        self._policies: dict[Any, Any] = {}
        self.version = -1

    def put(self, policies: dict[Any, Any], version: int) -> None:
        with self._cond:
            self._policies, self.version = policies, version
            self._cond.notify_all()

    def get(self, device: Any, version: int, stop: threading.Event) -> tuple[Any, int] | None:
        """The policy of at least `version` for `device`; None when stopped first."""
        with self._cond:
            while self.version < version:
                if stop.is_set():
                    return None
                self._cond.wait(POLL_S)
            return self._policies[device], self.version


class Sebulba:
    """Actor threads over host environments (see the module docstring).

    make_env(index) -> HostEnv: actor thread `index`'s environments (each thread owns its own).
    act(policy, obs, key) -> (raw_action, env_action, log_prob): the sampling policy, jitted here and run on
      the thread's actor device.
    """

    def __init__(
        self,
        make_env: Callable[[int], HostEnv],
        act: Callable[[Any, jax.Array, jax.Array], tuple[jax.Array, jax.Array, jax.Array]],
        actor_devices: Sequence[jax.Device],
        *,
        unroll_length: int,
        mode: str = "parallel",
        actor_threads: int = 1,
        asynchronous: bool = False,
        queue_size: int = 2,
        seed: int = 0,
    ):
        if mode not in MODES:
            raise ValueError(f"Sebulba: mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not actor_devices:
            raise ValueError("Sebulba: no actor devices")
        per_device = {"serial": 1, "alternating": 2, "parallel": actor_threads}[mode]
        devices = [actor_devices[0]] if mode == "serial" else list(actor_devices)
        self.devices = [d for d in devices for _ in range(per_device)]  # thread index -> its device
        self.mode, self.asynchronous, self.seed = mode, asynchronous, seed
        self.unroll_length = int(unroll_length)
        self._make_env = make_env

        def act_and_split(policy, obs, key):  # one dispatch per step: the next key comes out with the action
            key, sub = jax.random.split(key)
            return key, act(policy, obs, sub)

        self._act = jax.jit(act_and_split)
        self._locks = {d: threading.Lock() for d in devices} if mode == "alternating" else {}
        self._store = _Store()
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, queue_size) * len(self.devices))
        self._stop = threading.Event()
        self._errors: list[tuple[int, str]] = []
        self._raised = 0  # errors already raised by collect
        self._threads: list[threading.Thread] = []
        self._serial: dict[str, Any] | None = None
        self._round = 0

    @property
    def num_threads(self) -> int:
        return len(self.devices)

    # -- the learner's side --

    def publish(self, policy: Any, version: int) -> None:
        """Make `policy` (any pytree) the actors' policy from `version` on: copied to every actor device."""
        self._store.put({d: local_copy(policy, d) for d in set(self.devices)}, version)

    def start(self) -> None:
        """Start the actor threads (after the first `publish`)."""
        if self._store.version < 0:
            raise RuntimeError("Sebulba.start: publish a policy first")
        self._round = self._store.version
        if self.mode == "serial":
            self._serial = self._new_actor(0)
            return
        for index in range(self.num_threads):
            thread = threading.Thread(target=self._run, args=(index,), name=f"sebulba-actor-{index}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def collect(self) -> tuple[Trajectory, dict[str, float]]:
        """One trajectory from each actor thread, concatenated (thread order when synchronous), and the
        stage timings and policy lag since the last call. Raises `ActorError` if an actor failed."""
        start = time.perf_counter()
        if self.mode == "serial":
            timings = Timings()
            policy = self._store.get(self.devices[0], 0, self._stop)[0]
            items = [(0, self._store.version, self._rollout(self._serial, policy, timings), timings)]
        else:
            items = []
            while len(items) < self.num_threads:
                self._raise_if_failed()
                try:
                    items.append(self._queue.get(timeout=POLL_S))
                except queue.Empty:
                    continue
            if not self.asynchronous:
                items.sort(key=lambda item: item[0])
        wait = time.perf_counter() - start
        timings = Timings()
        for item in items:
            timings.add(item[3])
        lags = [self._store.version - item[1] for item in items]
        stats = {
            "sebulba/env_s": timings.env,
            "sebulba/inference_s": timings.inference,
            "sebulba/actor_queue_wait_s": timings.actor_queue_wait,
            "sebulba/actor_policy_wait_s": timings.actor_policy_wait,
            "sebulba/learner_queue_wait_s": wait,
            # the part of the actors' time spent stepping environments: the share of raw stepping speed the
            # actors reach, were the stepping itself as fast as the bare environments
            "sebulba/stepping_share": timings.env / max(timings.total, 1e-9),
            "sebulba/policy_lag": float(np.mean(lags)),
            "sebulba/policy_lag_max": float(np.max(lags)),
        }
        return Trajectory.concatenate([item[2] for item in items]), stats

    def close(self, timeout: float = 10.0) -> None:
        """Stop and join every actor thread and close their environments (idempotent). It never raises (it
        runs while another error may be on its way out): a thread still running after `timeout` (a daemon,
        which dies with the process) and an actor error the learner never collected are reported as warnings."""
        self._stop.set()
        deadline = time.perf_counter() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.perf_counter()))
        alive = [t.name for t in self._threads if t.is_alive()]
        self._threads = []
        if self._serial is not None:
            self._serial["env"].close()
            self._serial = None
        if alive:
            warnings.warn(
                f"Sebulba.close: actor threads still running after {timeout} s: {', '.join(alive)}", stacklevel=2
            )
        for index, text in self._errors[self._raised :]:
            warnings.warn(f"actor thread {index} failed after the learner's last collect:\n{text}", stacklevel=2)
        self._raised = len(self._errors)

    def _raise_if_failed(self) -> None:
        if self._errors:
            index, text = self._errors[0]
            self._raised = len(self._errors)
            raise ActorError(f"actor thread {index} failed:\n{text}")

    # -- an actor --

    def _new_actor(self, index: int) -> dict[str, Any]:
        # a global index over every process's threads: no two actors anywhere share seeds or keys. Gymnasium
        # and EnvPool seed environment j of a batch with seed + j, so batches' seeds are num_envs apart
        unique = jax.process_index() * self.num_threads + index
        env = self._make_env(index)
        try:
            obs = env.reset(seed=(self.seed * 1_000_003 + unique) * env.num_envs)
        except BaseException:
            env.close()
            raise
        key = jax.random.fold_in(jax.random.key(self.seed), unique)
        privileged = env.reset_privileged_obs
        key = jax.device_put(key, self.devices[index])
        return {"env": env, "obs": obs, "privileged": privileged, "key": key, "index": index}

    def _rollout(self, actor: dict[str, Any], policy: Any, timings: Timings) -> Trajectory:
        env, device, lock = actor["env"], self.devices[actor["index"]], self._locks.get(self.devices[actor["index"]])
        n, T = env.num_envs, self.unroll_length
        obs, privileged = actor["obs"], actor["privileged"]
        rec: dict[str, list] = {
            k: [] for k in ("obs", "raw", "logp", "reward", "term", "trunc", "next", "priv", "npriv")
        }
        ret, episodes, nans = np.zeros(n), np.zeros(n), np.zeros(n)
        for _ in range(T):
            if self._stop.is_set() and self.mode != "serial":
                raise _Stopped
            t0 = time.perf_counter()
            if lock is not None:
                lock.acquire()
            try:
                actor["key"], out = self._act(policy, jax.device_put(obs, device), actor["key"])
                raw, action, logp = jax.device_get(out)
            finally:
                if lock is not None:
                    lock.release()
            t1 = time.perf_counter()
            step = env.step(np.asarray(action))
            timings.inference += t1 - t0
            timings.env += time.perf_counter() - t1
            values = (obs, raw, logp, step.reward, step.terminated, step.truncated, step.final_obs)
            for k, v in zip(rec, (*values, privileged, step.final_privileged_obs)):
                rec[k].append(None if v is None else np.asarray(v))
            ended = step.ended
            ret += np.where(ended, step.metrics["episode/return"], 0)
            episodes += ended
            nans += step.metrics["nan_resets"]
            obs, privileged = step.obs, step.privileged_obs
        actor["obs"], actor["privileged"] = obs, privileged
        s = {k: None if v[0] is None else np.stack(v) for k, v in rec.items()}
        return Trajectory(
            s["obs"],
            s["raw"],
            s["logp"],
            s["reward"],
            s["term"],
            s["trunc"],
            s["next"],
            ret,
            episodes,
            nans,
            s["priv"],
            s["npriv"],
        )

    def _run(self, index: int) -> None:
        try:
            actor = self._new_actor(index)
            try:
                version = self._round
                while not self._stop.is_set():
                    timings = Timings()
                    t0 = time.perf_counter()
                    got = self._store.get(self.devices[index], version, self._stop)
                    if got is None:
                        return
                    policy, acting = got
                    timings.actor_policy_wait = time.perf_counter() - t0
                    trajectory = self._rollout(actor, policy, timings)
                    t0 = time.perf_counter()
                    item = [index, acting, trajectory, timings]  # the queue wait is filled in as it is put
                    while not self._stop.is_set():
                        timings.actor_queue_wait = time.perf_counter() - t0
                        try:
                            self._queue.put(item, timeout=POLL_S)
                            break
                        except queue.Full:
                            continue
                    version = acting + 1 if not self.asynchronous else 0
            finally:
                actor["env"].close()
        except _Stopped:
            return
        except BaseException:  # noqa: BLE001 (any failure stops the run; the learner raises it)
            self._errors.append((index, traceback.format_exc()))
            self._stop.set()


__all__ = ["MODES", "ActorError", "Sebulba", "Timings", "Trajectory"]
