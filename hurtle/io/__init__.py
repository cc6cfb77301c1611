"""Run directories: the config, metrics (CSV and TensorBoard), checkpoints and the learning curve of a training run."""

from hurtle.io.cache import enable_compile_cache
from hurtle.io.checkpoint import Checkpointer
from hurtle.io.rundir import MetricsLog, default_run_dir, load_config, prepare_run_dir, read_metrics

__all__ = [
    "Checkpointer",
    "enable_compile_cache",
    "MetricsLog",
    "default_run_dir",
    "load_config",
    "prepare_run_dir",
    "read_metrics",
]
