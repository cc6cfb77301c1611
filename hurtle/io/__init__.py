"""Run directories: the config, metrics (CSV and TensorBoard) and the learning curve of a training run."""

from hurtle.io.rundir import MetricsLog, default_run_dir, prepare_run_dir

__all__ = ["MetricsLog", "default_run_dir", "prepare_run_dir"]
