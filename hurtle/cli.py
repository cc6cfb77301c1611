"""The `hurtle` command: `hurtle train` (PPO into a run directory), `hurtle demo` (batched physics against MuJoCo C)
and `hurtle bench`."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import sys
import textwrap
import time


def demo(batch: int, steps: int, model_path: str | None) -> None:
    """Step `batch` copies of a model with random controls; check world 0 against MuJoCo C."""
    import jax
    import jax.numpy as jnp
    import mujoco
    import numpy as np

    import hurtle.physics as hp

    path = model_path or os.path.join(os.path.dirname(__file__), "assets", "arm.xml")
    model = hp.load(path)
    key = jax.random.PRNGKey(0)
    lo = jnp.where(model.actuator_ctrllimited, model.actuator_ctrlrange[:, 0], -1.0)
    hi = jnp.where(model.actuator_ctrllimited, model.actuator_ctrlrange[:, 1], 1.0)
    ctrl = jax.random.uniform(key, (batch, model.nu), minval=lo, maxval=hi, dtype=model.body_mass.dtype)
    d0 = hp.make_data(model)
    data = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), d0).replace(ctrl=ctrl)

    @jax.jit
    def rollout(m, d):
        def body(d, _):
            return jax.vmap(hp.step, in_axes=(None, 0))(m, d), None

        return jax.lax.scan(body, d, None, length=steps)[0]

    print(f"hurtle demo: {os.path.basename(path)}, {batch} worlds x {steps} steps on {jax.devices()[0]}")
    t0 = time.perf_counter()
    out = jax.block_until_ready(rollout(model, data))
    print(f"  compile + first run: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    jax.block_until_ready(rollout(model, data))
    dt = time.perf_counter() - t0
    print(f"  {batch * steps / dt:,.0f} physics steps/s ({dt:.2f} s)")

    mm = mujoco.MjModel.from_xml_path(path)
    md = mujoco.MjData(mm)
    md.ctrl[:] = np.asarray(ctrl[0])
    for _ in range(steps):
        mujoco.mj_step(mm, md)
    err = np.max(np.abs(np.asarray(out.qpos[0]) - md.qpos))
    print(f"  world 0 vs MuJoCo C after {steps} steps: max |qpos difference| = {err:.2e} ({out.qpos.dtype})")


def _field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings (a string literal right after a field) of a dataclass, by field name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body
    docs = {}
    for a, b in zip(body, body[1:]):
        if (
            isinstance(a, ast.AnnAssign)
            and isinstance(a.target, ast.Name)
            and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str)
        ):
            docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One `--field-name` option per dataclass field (default None: keep the dataclass's default)."""
    docs = _field_docs(cls)
    group = parser.add_argument_group(f"{cls.__name__} fields")
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        typ = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        help_ = f"{docs.get(f.name, '')} (default: {f.default})".replace("%", "%%")
        if typ == "bool":
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_)
        elif typ.startswith("tuple"):
            group.add_argument(flag, dest=f.name, type=int, nargs="+", default=None, metavar="N", help=help_)
        else:
            conv = {"int": int, "float": float, "str": str}.get(typ, str)
            group.add_argument(flag, dest=f.name, type=conv, default=None, metavar=typ.upper(), help=help_)


def train(args: argparse.Namespace) -> None:
    """Build and validate a PPO Config from `args`, prepare the run directory and train, logging every iteration."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hurtle.agents.ppo.config import Config
    from hurtle.io import MetricsLog, prepare_run_dir

    overrides = {}
    for f in dataclasses.fields(Config):
        value = getattr(args, f.name, None)
        if f.name != "env" and value is not None:
            overrides[f.name] = tuple(value) if isinstance(value, list) else value
    try:
        config = Config(env=args.env, **overrides).validate()
        run_dir = prepare_run_dir(args.run_dir, resume=args.resume, config=config)
    except (ValueError, FileExistsError, NotImplementedError) as e:
        sys.exit(f"hurtle train: {e}")
    from hurtle.agents.ppo.train import train as ppo_train

    print(f"hurtle train: {config.env}, {config.total_steps:,} steps, run directory {run_dir}")
    columns = ("eval/episode_return", "eval/episode_length") if config.eval_every else ()
    latest = {"return": float("nan")}
    with (
        MetricsLog(run_dir, columns=columns) as log,
        Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps  eval return {task.fields[ret]:.1f}"),
            TimeElapsedColumn(),
        ) as progress,
    ):
        task = progress.add_task("train", total=config.total_steps, ret=float("nan"))

        def progress_fn(step: int, metrics: dict[str, float]) -> None:
            log.log(step, metrics)
            if "eval/episode_return" in metrics:
                latest["return"] = metrics["eval/episode_return"]
            progress.update(task, completed=min(step, config.total_steps), ret=latest["return"])

        ppo_train(config, progress_fn)
    print(f"hurtle train: done; final eval return {latest['return']:.2f}; see {run_dir}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="hurtle", description="hurtle: RL for robots on the accelerator")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser(
        "train",
        help="train PPO on an environment into a run directory",
        description="Train PPO on ENV. The run directory gets config.json, metrics.csv, TensorBoard events and "
        "learning_curve.png.",
    )
    t.add_argument("env", metavar="ENV", help="a registered environment's name")
    t.add_argument("--run-dir", default=None, help="the run directory (default: runs/<env>-ppo-<YYYYmmdd-HHMMSS>)")
    t.add_argument(
        "--resume",
        action="store_true",
        help="reuse a non-empty run directory that has no logged metrics yet (resuming from checkpoints comes later)",
    )
    from hurtle.agents.ppo.config import Config

    add_config_arguments(t, Config, skip=("env",))
    p = sub.add_parser("demo", help="batched physics demo, checked against MuJoCo C")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--model", default=None, help="MJCF file (default: hurtle's arm)")
    sub.add_parser("bench", help="physics benchmark against MJX and MuJoCo C (benchmarks/physics.py)", add_help=False)
    args, rest = parser.parse_known_args(argv)
    if args.command == "train":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        train(args)
    elif args.command == "demo":
        demo(args.batch, args.steps, args.model)
    elif args.command == "bench":
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "physics.py")
        if not os.path.exists(script):
            sys.exit("hurtle bench needs a source checkout (benchmarks/physics.py)")
        os.execv(sys.executable, [sys.executable, script, *rest])


if __name__ == "__main__":
    main()
