"""Time to solve and training throughput of hurtle's presets (any algorithm), appended to benchmarks/HISTORY.md.

For each ENV:THRESHOLD[:ALGO[:ARCH]] (ALGO: ppo by default, sac, es, ars, impala; ARCH: anakin by default, or
sebulba; THRESHOLD a return, or MEASURE=VALUE for one of the task's evaluation measures, e.g.
`ur5e_reach:targets/success=0.9`): the preset's run (float32, every device of this machine), timed from the call to the end of each
iteration, compilation included. "time to solve" is
the `time_s` of the first evaluation whose mean return reaches the threshold; "steps/s" counts env steps per
second of training after the first iteration (whose time is mostly compilation), evaluation included.
`--max-seconds` stops a run at the first iteration past that wall-clock budget. Sim-to-sim: the final policy's
mean return over `--sim-episodes` (64) episodes on hurtle's physics (the task in JAX, whichever architecture
trained it: a Sebulba run's own evaluations are on MuJoCo C) and on MuJoCo C (`hurtle.agents.sim2sim`: the task's
Gymnasium twin, e.g. HalfCheetah-v5, else hurtle's task on MuJoCo C), with their ratio. The table goes to
benchmarks/HISTORY.md (`--out`); the current figure is curated into benchmarks/RESULTS.md.

    python benchmarks/training.py                       # cartpole (475) and inverted_pendulum (1000), PPO
    python benchmarks/training.py --env cartpole:475 --seeds 0 1 2
    python benchmarks/training.py --env swimmer:325:ars --max-seconds 1800
    python benchmarks/training.py --env hopper:2500:sac --peer sbx sb3-ppo --max-seconds 3600   # peers on Hopper-v5
    python benchmarks/training.py --env hopper:2500:sac --split     # SAC's time per iteration, part by part
    python benchmarks/training.py --env hopper:1000:ppo hopper:1000:ppo:sebulba   # Anakin against Sebulba
    python benchmarks/training.py --env ur5e_reach:targets/success=0.9 fetch:targets/reached=1

`--peer sbx sb3-sac sb3-ppo` also trains those peers (`run_peer`: SBX's SAC, Stable-Baselines3's SAC and PPO) on
Gymnasium's MuJoCo C twin of each task, once per task and seed, with a deterministic 10-episode evaluation every
`--peer-eval-every` env steps (left off the peer's clock: their time is the training's alone), on the same
machine in the same run. `--peer brax` trains Brax's PPO with Brax's published settings on Brax's own version of the
task (`brax_train.py`, in Brax's virtualenv from `benchmarks/brax_venv.sh`; its evaluations on its clock, as hurtle's
Anakin ones are).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

DEFAULT = ("cartpole:475", "inverted_pendulum:1000")

# The locomotion suite's thresholds, fixed before any tuning against them, with where each comes from: Gymnasium's
# registered `reward_threshold` where it has one that a published learner reaches; otherwise the mean return of
# Stable-Baselines3's PPO after 1M steps in the RL Baselines3 Zoo benchmark (its `benchmark.md`: one run, the
# deterministic policy, v3 tasks); SB3's SAC (2M steps) for humanoid, where the Zoo has no PPO; CleanRL's PPO for the
# two tasks the Zoo lacks (its docs: the mean final return over seeds). `--env ENV` without a threshold takes it from here.
SUITE: dict[str, tuple[float, str]] = {
    "inverted_pendulum": (1000.0, "the time limit (Gymnasium's reward_threshold: 950)"),
    "inverted_double_pendulum": (9100.0, "Gymnasium's reward_threshold"),
    "reacher": (-3.75, "Gymnasium's reward_threshold"),
    "swimmer": (281.0, "RL Zoo, SB3 PPO, 1M steps (281.6)"),
    "hopper": (2410.0, "RL Zoo, SB3 PPO, 1M steps (2,410)"),
    "halfcheetah": (5819.0, "RL Zoo, SB3 PPO, 1M steps (5,819)"),
    "walker2d": (3478.0, "RL Zoo, SB3 PPO, 1M steps (3,479)"),
    "ant": (1327.0, "RL Zoo, SB3 PPO, 1M steps (1,327)"),
    "humanoid": (6232.0, "RL Zoo, SB3 SAC, 2M steps (6,232)"),
    # fixed in session 48, before any humanoidstandup run: the Zoo has no HumanoidStandup row
    "humanoidstandup": (109326.0, "CleanRL's docs, ppo_continuous_action, 8M steps, HumanoidStandup-v4 (109,326)"),
    # Gymnasium's Pusher threshold (0) is above any return the task pays; the RL Zoo has no pusher row
    "pusher": (-40.38, "CleanRL's docs, ppo_continuous_action, 1M steps, Pusher-v4 (-40.38)"),
}


# the RL Zoo's PPO settings for Swimmer change only the discount (its return is a slow drift: 0.99 learns nothing)
ZOO_PPO_GAMMA: dict[str, float] = {"swimmer": 0.9999}


def gym_id(env: str) -> str:
    """The Gymnasium environment a hurtle task reproduces (its `gymnasium_id`; Pendulum-v1 for pendulum)."""
    from hurtle.envs import make

    found = getattr(make(env).unwrapped, "gymnasium_id", None) or {"pendulum": "Pendulum-v1"}.get(env)
    if found is None:
        raise ValueError(f"{env} has no Gymnasium twin for a peer to train on")
    return found


def run(
    env: str,
    threshold: float,
    seed: int,
    algo: str = "ppo",
    max_seconds: float | None = None,
    changes: dict | None = None,
    arch: str | None = None,
    stop: bool = False,
    measure: str = "episode_return",
    sim_episodes: int = 64,
) -> dict:
    import jax

    from hurtle import podracer
    from hurtle.agents import runner, sim2sim

    algorithm = runner.algorithm(algo, arch)
    if env not in algorithm.presets:
        return {"error": f"no {algo} preset for {env}"}
    config = dataclasses.replace(algorithm.preset(env), seed=seed, checkpoint_every=0, **(changes or {}))
    marks: list[tuple[int, float]] = []
    history: list[dict] = []
    start = time.perf_counter()
    key = f"eval/{measure}"

    def progress(step, metrics):
        now = time.perf_counter() - start
        marks.append((step, now))
        history.append(metrics)
        if key in metrics:  # the curve as it goes, for a run cut short
            print(f"  {env} {algo} seed {seed}: {step:,} steps, {now:.1f} s, {measure} {metrics[key]:.4g}", flush=True)
        # True stops the run after this iteration (the budget spent, or the threshold reached with --stop)
        return (max_seconds is not None and now > max_seconds) or (
            stop and metrics.get(key, -float("inf")) >= threshold
        )

    learner = algorithm.make_learner(config, podracer.make_mesh())
    state, _ = runner.train(algorithm, config, progress, learner=learner)
    act, policy, sim_key = algorithm.make_actor(config).act, learner.policy(state), jax.random.key(seed + 7)
    try:  # sim-to-sim: the final policy on MuJoCo C (the task's Gymnasium twin, else hurtle's task there)
        there = sim2sim.make_evaluate(config, act, sim_episodes)
        mujoco_return = float(there(policy, sim_key)["episode_return"].mean())
        # and on hurtle's physics, on as many episodes (a Sebulba run's own evaluations are on MuJoCo C)
        ours = runner.make_evaluate(config, act, sim_episodes)(policy, sim_key)
        hurtle_return = float(jax.device_get(ours["episode_return"]).mean())
    except (ValueError, TypeError):  # not a physics task, or trained on a host backend already
        mujoco_return = hurtle_return = None
    solved = next((m for m in history if m.get(key, float("-inf")) >= threshold), None)
    (s1, t1), (s_end, t_end) = marks[0], marks[-1]
    return {
        "solve_s": dict(marks)[int(solved["step"])] if solved else None,
        "solve_steps": int(solved["step"]) if solved else None,
        "final_return": next((m["eval/episode_return"] for m in reversed(history) if "eval/episode_return" in m), None),
        "final_measure": next((m[key] for m in reversed(history) if key in m), None),
        "mujoco_return": mujoco_return,
        "hurtle_return": hurtle_return,
        "steps_per_s": (s_end - s1) / (t_end - t1) if t_end > t1 else float("nan"),
        "first_iteration_s": t1,
        "total_s": t_end,
        "num_timesteps": s_end,
        "eval_episodes": config.num_eval_envs,
    }


PEERS = ("sbx", "sb3-sac", "sb3-ppo", "brax")


def run_brax(env: str, threshold: float, seed: int, max_seconds: float | None, python: str | None = None) -> dict:
    """Brax's PPO with its published settings on Brax's own version of `env` (`brax_train.py`, in Brax's
    virtualenv: `benchmarks/brax_venv.sh`), timed like `run`; `{"error": ...}` where it cannot run."""
    import json
    import subprocess

    from physics import BRAX_PYTHON

    python = python or BRAX_PYTHON
    if not os.path.exists(python):
        return {"error": f"no Brax interpreter at {python}: run benchmarks/brax_venv.sh"}
    cmd = [python, os.path.join(os.path.dirname(__file__), "brax_train.py"), "--env", env]
    cmd += ["--threshold", str(threshold), "--seed", str(seed)]
    cmd += ["--max-seconds", str(max_seconds)] if max_seconds is not None else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout, end="", flush=True)
    result = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    if proc.returncode or result is None:
        last = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return {"error": f"brax_train.py failed: {last[0]}"}
    return json.loads(result.removeprefix("RESULT "))


def peers_missing(peers: list[str]) -> str | None:
    """What a peer needs and does not have here, in one line (None: all ready), before any run starts."""
    from physics import BRAX_PYTHON

    from hurtle.extras import MissingExtra, require

    for peer in peers:
        if peer == "brax":
            if not os.path.exists(BRAX_PYTHON):
                return f"--peer brax needs Brax's virtualenv ({BRAX_PYTHON}): bash benchmarks/brax_venv.sh"
            continue
        try:
            require("peers", f"--peer {peer}")
        except MissingExtra as e:
            return str(e)
    return None


def run_peer(
    peer: str, env: str, threshold: float, seed: int, max_seconds: float | None, eval_every: int, episodes: int = 10
) -> dict:
    """A peer on Gymnasium's twin of `env` (MuJoCo C), timed like `run`: `sbx` (SBX's JAX SAC) and `sb3-sac`
    (Stable-Baselines3's SAC) with the RL Zoo's MuJoCo settings (10,000 random steps first, then one update of
    batch 256 per step), `sb3-ppo` (Stable-Baselines3's PPO with its defaults and the RL Zoo's observation and
    reward normalisation, `VecNormalize`; 1 environment, 2,048-step rollouts; the Zoo's discount where it changes it:
    swimmer's 0.9999, `ZOO_PPO_GAMMA`); a deterministic evaluation of `episodes` episodes (`main` passes the
    hurtle run's own count, so both sides cross the threshold on equally noisy means) every `eval_every` env steps
    (observations normalised with the run's statistics), its time kept off the peer's clock (hurtle's runs count
    their own, batched on the device)."""
    if episodes < 1:
        raise ValueError(f"run_peer: a peer's evaluation needs at least one episode, got episodes={episodes}")
    if peer == "brax":
        return run_brax(env, threshold, seed, max_seconds)
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    twin = gym_id(env)
    eval_env = gym.make(twin)
    marks: list[tuple[int, float, float]] = []
    start = time.perf_counter()

    def evaluate(model) -> float:
        norm = model.get_vec_normalize_env()
        returns = []
        for episode in range(episodes):
            obs, _ = eval_env.reset(seed=10_000 + episode)
            done, total = False, 0.0
            while not done:
                action, _ = model.predict(norm.normalize_obs(obs) if norm else obs, deterministic=True)
                obs, reward, term, trunc, _ = eval_env.step(action)
                total += float(reward)
                done = term or trunc
            returns.append(total)
        return float(np.mean(returns))

    evaluating = [0.0]  # seconds spent in the evaluations so far: kept off the peer's clock

    class Clock(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every:
                return True
            now = time.perf_counter() - start - evaluating[0]
            ret = evaluate(self.model)
            evaluating[0] = time.perf_counter() - start - now
            marks.append((self.num_timesteps, now, ret))
            print(f"{peer} {env} {self.num_timesteps} {now:.0f}s {ret:.1f}", flush=True)
            return ret < threshold and (max_seconds is None or now < max_seconds)

    if peer == "sb3-ppo":
        from stable_baselines3 import PPO

        gamma = ZOO_PPO_GAMMA.get(env, 0.99)
        venv = VecNormalize(make_vec_env(twin, n_envs=1, seed=seed), gamma=gamma)
        model = PPO("MlpPolicy", venv, gamma=gamma, seed=seed, verbose=0)
    elif peer == "sb3-sac":
        from stable_baselines3 import SAC

        model = SAC("MlpPolicy", gym.make(twin), learning_starts=10_000, seed=seed, verbose=0)
    else:
        from sbx import SAC

        model = SAC("MlpPolicy", gym.make(twin), learning_starts=10_000, seed=seed, verbose=0)
    model.learn(total_timesteps=100_000_000, callback=Clock())
    solved = next((m for m in marks if m[2] >= threshold), None)
    t_end = marks[-1][1] if marks else time.perf_counter() - start - evaluating[0]
    return {
        "solve_s": solved[1] if solved else None,
        "solve_steps": solved[0] if solved else None,
        "final_return": marks[-1][2] if marks else None,
        "steps_per_s": marks[-1][0] / t_end if marks else float("nan"),
        "first_iteration_s": float("nan"),
        "total_s": t_end,
        "num_timesteps": marks[-1][0] if marks else 0,
    }


def sac_split(env: str, repeats: int = 5, changes: dict | None = None) -> dict:
    """Seconds per SAC iteration of `env`'s preset spent stepping the environments (acting and storing
    included), drawing batches from the replay buffer, and in the gradient updates (each on a drawn batch),
    each part compiled alone as a scan of one iteration's worth and timed (median of `repeats` calls)."""
    import statistics

    import jax
    from jax import lax

    from hurtle.agents import replay
    from hurtle.agents.sac import train as sac
    from hurtle.agents.sac.presets import preset

    config = dataclasses.replace(preset(env), **(changes or {}))
    training_env = sac.make_training_env(config)
    networks = sac.make_networks(config, training_env)
    state = sac.make_prefill(config, training_env, networks)(sac.init_state(config, training_env, networks))
    steps, updates = config.steps_per_iteration, config.steps_per_iteration * config.grad_updates_per_step

    def env_part(s):
        body = lambda s, k: sac.env_step(s, k, env=training_env, networks=networks, config=config)  # noqa: E731
        return lax.scan(body, s, jax.random.split(s.key, steps))[0]

    def replay_part(s):
        body = lambda c, k: (c + jax.tree.leaves(replay.sample(s.buffer, k, config.batch_size))[0].sum(), None)  # noqa: E731
        return lax.scan(body, 0.0, jax.random.split(s.key, updates))[0]

    def update_part(s):
        body = lambda s, k: sac.update(s, k, networks=networks, config=config)  # noqa: E731
        return lax.scan(body, s, jax.random.split(s.key, updates))[0]

    out = {}
    for name, fn in (("environment", env_part), ("replay", replay_part), ("gradient", update_part)):
        compiled = jax.jit(fn).lower(state).compile()
        jax.block_until_ready(compiled(state))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(state))
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    iteration = jax.jit(sac.make_iteration(config, training_env, networks))
    jax.block_until_ready(iteration(state))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(iteration(state))
        times.append(time.perf_counter() - t0)
    out["iteration"] = statistics.median(times)
    out["env_steps"] = config.env_steps_per_iteration
    out["updates"] = updates
    return out


def split_table(args, machine: str, changes: dict) -> None:
    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: SAC, time per iteration by part (presets, float32)",
        f"Machine: {machine}. Each part compiled alone as a scan of one iteration's worth and timed (median of 5): "
        "environment = acting + stepping every environment + storing; replay = drawing the batches; gradient = "
        "the updates (drawing included). The whole iteration is timed as the runner calls it."
        + (f" Presets changed: {', '.join(args.set)}." if args.set else ""),
        "",
        "| env | env steps / iteration | updates / iteration | environment s | replay s | gradient s | whole iteration s |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in args.env:
        env = spec.split(":")[0]
        r = sac_split(env, changes=changes)
        print(env, r, flush=True)
        lines.append(
            f"| {env} | {r['env_steps']:,} | {r['updates']:,} | {r['environment']:.2f} | {r['replay']:.3f} | "
            f"{r['gradient']:.2f} | {r['iteration']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--env", nargs="+", default=list(DEFAULT), help="ENV[:THRESHOLD[:ALGO[:ARCH]]] (SUITE's threshold where empty)"
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--max-seconds", type=float, default=None, help="stop each run after this wall-clock budget")
    p.add_argument("--peer", choices=PEERS, nargs="*", default=[], help="also train these peers on the Gymnasium twin")
    p.add_argument("--peer-eval-every", type=int, default=10_000)
    p.add_argument(
        "--peer-eval-episodes", type=int, default=None, help="episodes per peer evaluation (default: the hurtle run's)"
    )
    p.add_argument("--stop", action="store_true", help="stop each run at its first evaluation past the threshold")
    p.add_argument(
        "--sim-episodes", type=int, default=64, help="episodes of the final policy on each engine (sim-to-sim)"
    )
    p.add_argument("--set", nargs="*", default=[], help="FIELD=VALUE changes to every run's preset (Python literals)")
    p.add_argument("--split", action="store_true", help="SAC: time per iteration, part by part (no training)")
    p.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "HISTORY.md"),
        help="append the table here (default: benchmarks/HISTORY.md; the current figure is curated into RESULTS.md)",
    )
    args = p.parse_args(argv)
    problem = peers_missing(args.peer)
    if problem:
        p.error(problem)

    import ast

    from physics import _machine

    changes = {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in args.set)}
    if args.split:
        return split_table(args, _machine(), changes)
    rows, peers_done = [], set()
    for spec in args.env:
        parts = spec.split(":") + [""] * 3
        if not parts[1] and parts[0] not in SUITE:
            p.error(f"--env {spec}: {parts[0]} has no threshold in SUITE ({', '.join(SUITE)}); give ENV:THRESHOLD")
        env, threshold, algo, arch = (
            parts[0],
            parts[1] or str(SUITE[parts[0]][0]),
            parts[2] or "ppo",
            parts[3] or "anakin",
        )
        measure, _, value = threshold.rpartition("=")
        measure, threshold = measure or "episode_return", float(value)
        for seed in args.seeds:
            r = run(env, threshold, seed, algo, args.max_seconds, changes, arch, args.stop, measure, args.sim_episodes)
            r["measure"] = measure
            print(env, algo, arch, seed, r, flush=True)
            rows.append((env, f"hurtle {algo}" + (f" ({arch})" if arch != "anakin" else ""), threshold, seed, r))
            for peer in args.peer:
                if (peer, env, seed) in peers_done:
                    continue
                peers_done.add((peer, env, seed))
                episodes = r.get("eval_episodes", 10) if args.peer_eval_episodes is None else args.peer_eval_episodes
                r = run_peer(peer, env, float(threshold), seed, args.max_seconds, args.peer_eval_every, episodes)
                print(env, peer, seed, r, flush=True)
                if peer == "brax":
                    rows.append((f"Brax's {env} ({r.get('versions', 'Brax')})", "Brax ppo", float(threshold), seed, r))
                    continue
                name = {"sbx": "SBX sac", "sb3-sac": "SB3 sac", "sb3-ppo": "SB3 ppo"}[peer]
                rows.append((f"{gym_id(env)} (MuJoCo C)", name, float(threshold), seed, r))

    def fmt(v, f):
        return "—" if v is None or v != v else format(v, f)

    def sim(r):
        there, here = r.get("mujoco_return"), r.get("hurtle_return")
        if there is None or here is None:
            return "— | —"
        return f"{here:.1f} | {there:.1f}" + (f" ({there / here:.2f})" if here > 0 else f" ({there - here:+.2f})")

    budget = f" Each run stopped after {args.max_seconds:,.0f} s at most." if args.max_seconds else ""
    budget += " Runs stopped at the threshold." if args.stop else ""
    budget += f" hurtle's presets changed: {', '.join(args.set)}." if args.set else ""
    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: training, presets, float32",
        f"Machine: {_machine()}. Time to solve: the run's clock (compilation included) at the first evaluation "
        "reaching the threshold; steps/s: env steps per second after the first iteration, evaluations included "
        f"(peers: env steps over their whole clock; a peer's clock leaves out its evaluations).{budget}",
        "",
        "| env | learner | seed | threshold | time to solve s | env steps to solve | last eval return | last eval "
        "measure | training steps/s | first iteration s | whole run s | env steps | hurtle's physics return | MuJoCo C "
        "return (/ hurtle's, or - where negative) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for env, learner, threshold, seed, r in rows:
        if "error" in r:
            lines.append(f"| {env} | {learner} | {seed} | {threshold:g} | {r['error']} | | | | | | | | | |")
            continue
        measure = r.get("measure", "episode_return")
        named = f"{threshold:g}" if measure == "episode_return" else f"{measure} ≥ {threshold:g}"
        lines.append(
            f"| {env} | {learner} | {seed} | {named} | {fmt(r['solve_s'], '.1f')} | "
            f"{fmt(r['solve_steps'], ',')} | {fmt(r['final_return'], '.1f')} | {fmt(r.get('final_measure'), '.3g')} | "
            f"{fmt(r['steps_per_s'], ',.0f')} | "
            f"{fmt(r['first_iteration_s'], '.1f')} | {r['total_s']:.1f} | {r['num_timesteps']:,} | {sim(r)} |"
        )
    # where each threshold that is the suite's own comes from
    sources = {env: SUITE[env][1] for env, _, threshold, _, _ in rows if SUITE.get(env, (None,))[0] == threshold}
    if sources:
        lines.append("- Thresholds: " + "; ".join(f"{env} {text}" for env, text in sources.items()) + ".")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
