"""A training run's directory: `config.json`, `metrics.csv`, TensorBoard events and `learning_curve.png`."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any


def default_run_dir(env: str, algo: str = "ppo", root: str = "runs") -> str:
    """`runs/<env>-<algo>-<YYYYmmdd-HHMMSS>`."""
    return os.path.join(root, f"{env}-{algo}-{time.strftime('%Y%m%d-%H%M%S')}")


def prepare_run_dir(path: str | None, resume: bool = False, config: Any = None) -> str:
    """Create the run directory (default: `default_run_dir(config.env)`) and write `config.json`.

    An existing empty directory is fine; a non-empty one is refused unless `resume` is true."""
    if path is None:
        if config is None:
            raise ValueError("prepare_run_dir needs a path or a config (whose env names the default directory)")
        path = default_run_dir(config.env)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise FileExistsError(f"run directory {path!r} exists and is not a directory")
        if os.listdir(path) and not resume:
            raise FileExistsError(
                f"run directory {path!r} is not empty; pass --resume to reuse it, or choose another --run-dir"
            )
        metrics = os.path.join(path, "metrics.csv")
        if resume and os.path.exists(metrics) and os.path.getsize(metrics) > 0:
            # without checkpoints a resumed run would start over and duplicate the logged steps
            raise NotImplementedError(
                f"run directory {path!r} has logged metrics, and resuming needs checkpoints, which hurtle does "
                "not write yet; choose another --run-dir"
            )
    os.makedirs(path, exist_ok=True)
    if config is not None:
        data = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
    return path


class MetricsLog:
    """Appends one row per call to `metrics.csv` (columns `step`, `time_s`, then sorted metric names, fixed by the
    first row plus `columns`; missing values are left empty, later new names go to TensorBoard only), writes
    TensorBoard scalars, and on `close()` plots `learning_curve.png` (eval/episode_return against step)."""

    CURVE_KEY = "eval/episode_return"

    def __init__(self, run_dir: str, columns: Iterable[str] = (), tensorboard: bool = True):
        self.run_dir = run_dir
        self._extra = set(columns)
        self._fields: list[str] | None = None
        self._start = time.perf_counter()
        self._curve: list[tuple[int, float]] = []
        path = os.path.join(run_dir, "metrics.csv")
        self._append = os.path.exists(path) and os.path.getsize(path) > 0
        if self._append:
            with open(path, newline="") as f:
                header = next(csv.reader(f), None)
            if header:
                self._fields = header
        self._file = open(path, "a", newline="")
        self._writer = csv.writer(self._file)
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(logdir=run_dir)

    def log(self, step: int, metrics: Mapping[str, float], time_s: float | None = None) -> None:
        metrics = {k: float(v) for k, v in metrics.items() if k not in ("step", "time_s")}
        if time_s is None:
            time_s = metrics.pop("time/seconds", time.perf_counter() - self._start)
        else:
            metrics.pop("time/seconds", None)
        if self._fields is None:
            self._fields = ["step", "time_s", *sorted(set(metrics) | self._extra)]
            self._writer.writerow(self._fields)
        row = {"step": int(step), "time_s": f"{time_s:.3f}", **metrics}
        self._writer.writerow(["" if row.get(k) is None else row[k] for k in self._fields])
        self._file.flush()
        if self._tb is not None:
            for k, v in metrics.items():
                self._tb.add_scalar(k, v, int(step))
            self._tb.flush()
        if self.CURVE_KEY in metrics:
            self._curve.append((int(step), metrics[self.CURVE_KEY]))

    def plot(self) -> str | None:
        """Write `learning_curve.png`; None when no evaluation was logged."""
        if not self._curve:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        steps, returns = zip(*self._curve)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(steps, returns, marker="o")
        ax.set_xlabel("environment steps")
        ax.set_ylabel("evaluation episode return")
        ax.set_title(os.path.basename(os.path.normpath(self.run_dir)))
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(self.run_dir, "learning_curve.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    def close(self) -> None:
        self.plot()
        self._file.close()
        if self._tb is not None:
            self._tb.close()

    def __enter__(self) -> MetricsLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
