"""Time to solve and training throughput of hurtle's PPO presets, appended to benchmarks/RESULTS.md.

For each environment: the preset's run (float32, every device of this machine), timed from the call
to the end of each iteration, compilation included. "time to solve" is the `time_s` of the first
evaluation whose mean return reaches the threshold; "steps/s" counts env steps per second of
training after the first iteration (whose time is mostly compilation), evaluation included.

    python benchmarks/training.py                       # cartpole (475) and inverted_pendulum (1000)
    python benchmarks/training.py --env cartpole:475 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

DEFAULT = ("cartpole:475", "inverted_pendulum:1000")


def run(env: str, threshold: float, seed: int) -> dict:
    from hurtle.agents.ppo import train as ppo_train
    from hurtle.agents.ppo.presets import PRESETS, preset

    if env not in PRESETS:
        return {"error": f"no PPO preset for {env}"}
    config = dataclasses.replace(preset(env), seed=seed, checkpoint_every=0)
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    _, history = ppo_train.train(config, lambda step, m: marks.append((step, time.perf_counter() - start)))
    solved = next(
        (m for m in history if m.get("eval/episode_return", float("-inf")) >= threshold),
        None,
    )
    (s1, t1), (s_end, t_end) = marks[0], marks[-1]
    return {
        "solve_s": dict(marks)[int(solved["step"])] if solved else None,
        "solve_steps": int(solved["step"]) if solved else None,
        "final_return": next(m["eval/episode_return"] for m in reversed(history) if "eval/episode_return" in m),
        "steps_per_s": (s_end - s1) / (t_end - t1) if t_end > t1 else float("nan"),
        "first_iteration_s": t1,
        "total_s": t_end,
        "num_timesteps": s_end,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", nargs="+", default=list(DEFAULT), help="ENV:THRESHOLD pairs")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    args = p.parse_args(argv)

    from physics import _machine

    rows = []
    for spec in args.env:
        env, _, threshold = spec.partition(":")
        for seed in args.seeds:
            r = run(env, float(threshold), seed)
            print(env, seed, r, flush=True)
            rows.append((env, float(threshold), seed, r))

    def fmt(v, f):
        return "—" if v is None else format(v, f)

    lines = [
        f"\n### {time.strftime('%Y-%m-%d')}: PPO training, presets, float32",
        f"Machine: {_machine()}. Time to solve: the run's clock (compilation included) at the first evaluation "
        "reaching the threshold; steps/s: env steps per second after the first iteration, evaluations included.",
        "",
        "| env | seed | threshold | time to solve s | env steps to solve | final eval return | training steps/s | "
        "first iteration s | whole run s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env, threshold, seed, r in rows:
        if "error" in r:
            lines.append(f"| {env} | {seed} | {threshold:g} | {r['error']} | | | | | |")
            continue
        lines.append(
            f"| {env} | {seed} | {threshold:g} | {fmt(r['solve_s'], '.1f')} | {fmt(r['solve_steps'], ',')} | "
            f"{r['final_return']:.1f} | {r['steps_per_s']:,.0f} | {r['first_iteration_s']:.1f} | "
            f"{r['total_s']:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "a") as f:
        f.write(text)


if __name__ == "__main__":
    main()
