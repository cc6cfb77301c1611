"""A training run's directory: `config.json`, `metrics.csv`, TensorBoard events and `learning_curve.png`."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any


def _csv_line(row: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow(row)
    return buf.getvalue()


def default_run_dir(env: str, algo: str = "ppo", root: str = "runs") -> str:
    """`runs/<env>-<algo>-<YYYYmmdd-HHMMSS>`, one folder: an id's slashes (`MuJoCoPlayground/Go1...`,
    `dm_control/cheetah-run`) become dashes."""
    name = env.replace("/", "-").replace(os.sep, "-")
    return os.path.join(root, f"{name}-{algo}-{time.strftime('%Y%m%d-%H%M%S')}")


def prepare_run_dir(
    path: str | None, resume: bool = False, config: Any = None, algo: str = "ppo", arch: str = "anakin"
) -> str:
    """Create the run directory (default: `default_run_dir(config.env, algo)`) and write `config.json` (the
    config's fields, "algo", the algorithm's name, and "arch", its architecture).

    An existing empty directory is fine; a non-empty one is refused unless `resume` is true."""
    if path is None:
        if config is None:
            raise ValueError("prepare_run_dir needs a path or a config (whose env names the default directory)")
        path = default_run_dir(config.env, algo)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise FileExistsError(f"run directory {path!r} exists and is not a directory")
        if os.listdir(path) and not resume:
            raise FileExistsError(
                f"run directory {path!r} is not empty; pass --resume to reuse it, or choose another --run-dir"
            )
    os.makedirs(path, exist_ok=True)
    if config is not None:
        data = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config)
        data = {"algo": algo, "arch": arch, **data}
        _write_atomically(os.path.join(path, "config.json"), json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def _write_atomically(path: str, text: str) -> None:
    """Replace `path`'s contents with `text` in one rename: readers see the old file or the new, never half."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_config(run_dir: str) -> dict[str, Any]:
    """The `config.json` of a run directory (the config's fields and "algo"), lists turned back into tuples."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{run_dir!r} is not a run directory: it has no config.json")
    with open(path) as f:
        data = json.load(f)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


def run_title(run_dir: str) -> str:
    """A run's name for plots: its task, algorithm and architecture (from config.json) and its directory."""
    name = os.path.basename(os.path.normpath(run_dir))
    try:
        config = load_config(run_dir)
    except (FileNotFoundError, ValueError):
        return name
    algo, arch = config.get("algo", "ppo"), config.get("arch", "anakin")
    return f"{config.get('env', '?')}: {algo} ({arch}), run {name}"


def read_metrics(run_dir: str) -> tuple[list[str], list[list[str]]]:
    """The header and the complete rows of `metrics.csv` (a last line cut short by a kill is dropped)."""
    path = os.path.join(run_dir, "metrics.csv")
    if not os.path.exists(path):
        return [], []
    with open(path, newline="") as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    rows = [r for r in csv.reader(line for line in lines if line.endswith("\n"))]
    if not rows:
        return [], []
    header, body = rows[0], rows[1:]
    return header, [r for r in body if len(r) == len(header)]


class MetricsLog:
    """Appends one row per call to `metrics.csv` (columns `step`, `time_s`, then sorted metric names, fixed by the
    first row plus `columns`; missing values are left empty, later new names go to TensorBoard only), writes
    TensorBoard scalars, and on `close()` plots `learning_curve.png` (eval/episode_return against step).

    `resume_step`: continue a run whose state was restored at that env step: rows logged after it (work
    lost with the process) are removed from `metrics.csv`, and TensorBoard is told to discard its events
    after it, so the resumed run's rows follow on without gaps or duplicates."""

    CURVE_KEY = "eval/episode_return"

    def __init__(
        self,
        run_dir: str,
        columns: Iterable[str] = (),
        tensorboard: bool = True,
        resume_step: int | None = None,
        title: str | None = None,
    ):
        self.run_dir = run_dir
        self.title = title
        self._extra = set(columns)
        self._fields: list[str] | None = None
        self._start = time.perf_counter()
        self._curve: list[tuple[int, float]] = []
        path = os.path.join(run_dir, "metrics.csv")
        header, rows = read_metrics(run_dir)
        if resume_step is not None:
            rows = [r for r in rows if int(r[0]) <= resume_step]
            _write_atomically(path, "".join(_csv_line(r) for r in ([header] if header else []) + rows))
        if header:
            self._fields = header
            if self.CURVE_KEY in header:
                j = header.index(self.CURVE_KEY)
                self._curve = [(int(r[0]), float(r[j])) for r in rows if r[j] != ""]
        self._file = open(path, "a", newline="")
        self._writer = csv.writer(self._file)
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            purge = None if resume_step is None else resume_step + 1
            self._tb = SummaryWriter(logdir=run_dir, purge_step=purge)

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
        ax.set_title(self.title or run_title(self.run_dir), fontsize=10)
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
