"""Sebulba's throughput as a share of raw MuJoCo C stepping, appended to benchmarks/HISTORY.md.

The current figure is curated into benchmarks/RESULTS.md.

For each task, on the same threads and environments (`--threads` actor threads of `--num-envs` each, every
thread's `mujoco.batch` with `--env-threads` threads):

- raw: `mujoco.batch.Batch.step` alone with random controls written in (no observation, reward or reset);
- host env: `hurtle.hostenvs.MujocoEnv.step` with random actions (the task's observation, reward,
  termination and resets included);
- actors: Sebulba's actor threads with a randomly initialised policy (inference on the actor device
  included) and a learner that only takes the trajectories;
- end to end: IMPALA training (`hurtle train ENV --arch sebulba`'s iteration), learner included.

Each figure is env steps per second over `--seconds` of steady state after a warm-up (compilation excluded);
the shares are of raw. `--env-threads 1 --threads 1` leaves the second core to the learner ("the learner on
its own core"); the defaults share both cores between actors and learner.

    python benchmarks/sebulba.py --env halfcheetah hopper
    python benchmarks/sebulba.py --env halfcheetah --threads 1 --env-threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))


def _rate(step, seconds: float, warmup: float = 1.0) -> float:
    """Env steps per second of `step() -> env steps` called repeatedly for `seconds` after `warmup`."""
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += step()
    return n / (time.perf_counter() - t0)


def _threaded(make_step, threads: int, seconds: float) -> float:
    """`_rate` summed over `threads` threads, each with its own `make_step()`."""
    rates = [0.0] * threads
    steps = [make_step() for _ in range(threads)]

    def work(i):
        rates[i] = _rate(steps[i], seconds)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(rates)


def measure(env: str, num_envs: int, threads: int, env_threads: int, seconds: float, unroll: int) -> dict:
    import mujoco
    import mujoco.batch
    import numpy as np

    from hurtle.agents import runner
    from hurtle.hostenvs import MujocoEnv

    task = MujocoEnv(env, 1).task
    low, high = task.action_space.low, task.action_space.high
    rng = np.random.default_rng(0)

    def raw():
        model = MujocoEnv(env, 1).mj_model
        batch = mujoco.batch.Batch(model, num_envs, env_threads)
        batch.reset()
        ctrl = batch.bind("ctrl")

        def step():
            ctrl[:] = rng.uniform(low, high, ctrl.shape)
            batch.step(nstep=task.n_frames)
            return num_envs

        return step

    def host():
        e = MujocoEnv(env, num_envs, nthread=env_threads)
        e.reset(0)

        def step():
            e.step(rng.uniform(low, high, (num_envs, *task.action_space.shape)).astype(np.float32))
            return num_envs

        return step

    out = {"raw": _threaded(raw, threads, seconds), "host env": _threaded(host, threads, seconds)}

    config = dataclasses.replace(
        runner.algorithm("impala").preset(env),
        num_envs=num_envs,
        unroll_length=unroll,
        actor_threads=threads,
        env_threads=env_threads,
        eval_every=0,
        num_timesteps=10**12,
    )
    out["actors"] = _actors_only(config, seconds)
    learner = runner.algorithm("impala").make_learner(config)
    state = learner.init()
    learner.start(state)
    try:

        def train_step():
            nonlocal state
            state, _ = learner.iteration(state)
            return unroll * num_envs * threads

        out["end to end"] = _rate(train_step, seconds, warmup=5.0)
    finally:
        learner.close()
    return out


def _actors_only(config, seconds: float = 20.0) -> float:
    """Sebulba's actors with a random policy; the learner's side only takes the trajectories and publishes
    the same policy again (a new version, so synchronous actors go on)."""
    import jax

    from hurtle.agents.impala import train as impala
    from hurtle.podracer.sebulba import Sebulba

    networks = impala.make_networks(config)
    actor_devices, _ = impala.devices(config)
    sebulba = Sebulba(
        lambda i: impala.make_host_env(config, config.num_envs, config.env_threads),
        impala.make_sampler(config, networks),
        actor_devices,
        unroll_length=config.unroll_length,
        actor_threads=config.actor_threads,
    )
    policy = impala.make_actor(config).like_policy
    version = 0
    sebulba.publish(policy, version)
    sebulba.start()

    def collect():
        nonlocal version
        trajectory, _ = sebulba.collect()
        version += 1
        sebulba.publish(policy, version)
        return int(trajectory.reward.size)

    try:
        return _rate(collect, seconds, warmup=3.0)
    finally:
        sebulba.close()
        jax.clear_caches()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", nargs="+", default=["halfcheetah"])
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--threads", type=int, default=2, help="actor threads")
    p.add_argument("--env-threads", type=int, default=1, help="MuJoCo C threads per actor thread's batch")
    p.add_argument("--unroll", type=int, default=32)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "HISTORY.md"),
        help="append the table here (default: benchmarks/HISTORY.md; the current figure is curated into RESULTS.md)",
    )
    args = p.parse_args(argv)

    from physics import _machine

    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: Sebulba throughput against raw MuJoCo C stepping",
        f"Machine: {_machine()}. {args.threads} actor thread(s) x {args.num_envs} environments, MuJoCo C batches "
        f"of {args.env_threads} thread(s) each, unroll {args.unroll}; env steps/s over {args.seconds:.0f} s of "
        "steady state (compilation excluded). Shares are of raw `mujoco.batch` stepping on the same threads.",
        "",
        "| env | raw steps/s | host env steps/s (share) | actors steps/s (share) | end to end steps/s (share) |",
        "|---|---|---|---|---|",
    ]
    for env in args.env:
        r = measure(env, args.num_envs, args.threads, args.env_threads, args.seconds, args.unroll)
        print(env, r, flush=True)
        raw = r["raw"]
        cells = [f"{r[k]:,.0f} ({r[k] / raw:.0%})" for k in ("host env", "actors", "end to end")]
        lines.append(f"| {env} | {raw:,.0f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
