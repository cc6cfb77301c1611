"""Brax's own PPO on Brax's own version of a task, timed to a return: the Brax peer of `training.py --peer brax`.

Runs in Brax's virtualenv (`benchmarks/brax_venv.sh`: brax 0.14.2 on jax 0.9.2), not hurtle's:

    .brax/bin/python benchmarks/brax_train.py --env ant --threshold 1327 --max-seconds 380

It trains `brax.training.agents.ppo` with the settings Brax publishes for the task (`BRAX_PPO`: its training
notebook's table, the same numbers hurtle's Anakin PPO presets translate) on `brax.envs.get_environment(env,
backend)`, evaluating every `--eval-every` env steps (Brax's own evaluation: 128 environments, stochastic policy, on
the clock, as hurtle's Anakin evaluations are), and stops at the first evaluation at or past the threshold or past
`--max-seconds`. Time runs from the call to `train`, compilation included. Prints one JSON line per evaluation and a
last line `RESULT {...}` with the fields `training.run_peer` reports.

Brax's tasks are its own versions of Gymnasium's (the same bodies and reward terms, Brax's physics pipeline; ant
without the contact-force cost), so a return there is close to, not the same as, Gymnasium's; the table says so.
"""

from __future__ import annotations

import argparse
import json
import time


# Brax's published PPO settings (its training notebook): tasks without a published PPO entry (hopper, walker2d,
# swimmer) are refused rather than guessed
def _ppo(
    reward_scaling: float,
    unroll_length: int,
    num_minibatches: int,
    num_updates_per_batch: int,
    discounting: float,
    learning_rate: float,
    entropy_cost: float,
    num_envs: int,
    batch_size: int,
) -> dict:
    """One row of Brax's table, in its column order, as `ppo.train`'s keyword arguments."""
    return dict(
        reward_scaling=reward_scaling,
        unroll_length=unroll_length,
        num_minibatches=num_minibatches,
        num_updates_per_batch=num_updates_per_batch,
        discounting=discounting,
        learning_rate=learning_rate,
        entropy_cost=entropy_cost,
        num_envs=num_envs,
        batch_size=batch_size,
    )


_PENDULUM = _ppo(10, 5, 32, 4, 0.97, 3e-4, 1e-2, 2048, 1024)
BRAX_PPO: dict[str, dict] = {
    "inverted_pendulum": _PENDULUM,
    "inverted_double_pendulum": _PENDULUM,
    "ant": _ppo(10, 5, 32, 4, 0.97, 3e-4, 1e-2, 4096, 2048),
    "humanoid": _ppo(0.1, 10, 32, 8, 0.97, 3e-4, 1e-3, 2048, 1024),
    "humanoidstandup": _ppo(0.1, 15, 32, 8, 0.97, 6e-4, 1e-2, 2048, 1024),
    "halfcheetah": _ppo(1, 20, 32, 8, 0.95, 3e-4, 1e-3, 2048, 512),
    "reacher": _ppo(5, 50, 32, 8, 0.95, 3e-4, 1e-3, 2048, 256),
    "pusher": _ppo(5, 30, 16, 8, 0.95, 3e-4, 1e-2, 2048, 512),
}
EPISODE_LENGTH = {"reacher": 50, "pusher": 100}  # Gymnasium's time limits; 1,000 elsewhere


class _Stop(Exception):
    """Raised from the progress callback to end Brax's training loop early."""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", required=True, choices=sorted(BRAX_PPO))
    p.add_argument("--threshold", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=None)
    p.add_argument("--eval-every", type=int, default=500_000, help="env steps between Brax's evaluations")
    p.add_argument("--backend", default="positional", choices=["generalized", "positional", "spring", "mjx"])
    p.add_argument("--num-timesteps", type=int, default=100_000_000, help="the run's length if nothing stops it")
    args = p.parse_args(argv)

    import brax
    import jax
    from brax import envs
    from brax.training.agents.ppo import train as ppo

    env = envs.get_environment(args.env, backend=args.backend)
    marks: list[tuple[int, float, float]] = []
    start = time.perf_counter()

    def progress(step: int, metrics: dict) -> None:
        now = time.perf_counter() - start
        ret = float(metrics["eval/episode_reward"])
        marks.append((int(step), now, ret))
        print(json.dumps({"step": int(step), "time_s": round(now, 2), "return": ret}), flush=True)
        if ret >= args.threshold or (args.max_seconds is not None and now > args.max_seconds):
            raise _Stop

    try:
        ppo.train(
            environment=env,
            num_timesteps=args.num_timesteps,
            num_evals=max(2, args.num_timesteps // args.eval_every + 1),
            episode_length=EPISODE_LENGTH.get(args.env, 1000),
            normalize_observations=True,
            action_repeat=1,
            seed=args.seed,
            progress_fn=progress,
            **BRAX_PPO[args.env],
        )
    except _Stop:
        pass
    solved = next((m for m in marks if m[2] >= args.threshold), None)
    t_end = marks[-1][1] if marks else time.perf_counter() - start
    steps = marks[-1][0] if marks else 0
    print(
        "RESULT",
        json.dumps(
            {
                "solve_s": solved[1] if solved else None,
                "solve_steps": solved[0] if solved else None,
                "final_return": marks[-1][2] if marks else None,
                "steps_per_s": steps / t_end if t_end else float("nan"),
                "first_iteration_s": marks[1][1] if len(marks) > 1 else float("nan"),
                "total_s": t_end,
                "num_timesteps": steps,
                "versions": f"brax {brax.__version__} ({args.backend}), jax {jax.__version__}",
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
