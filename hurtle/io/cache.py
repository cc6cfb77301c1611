"""JAX's persistent compilation cache for hurtle's commands.

XLA compiles a training iteration or an evaluation rollout in seconds to a minute on a CPU; the cache
keeps the compiled program on disk, keyed by the program, the JAX and XLA versions, the compiler flags
and the device, so a later run of the same program on the same machine (a resumed run, another seed,
`hurtle eval` after `hurtle train`) loads it instead. `hurtle train`, `eval` and `demo` turn it on:

    HURTLE_COMPILE_CACHE unset    ~/.cache/hurtle/jax (or $XDG_CACHE_HOME/hurtle/jax)
    HURTLE_COMPILE_CACHE=DIR      DIR
    HURTLE_COMPILE_CACHE=off      no cache (also 0, false, no or empty)

A cache directory already given to JAX (`JAX_COMPILATION_CACHE_DIR`, `jax.config`) is used as it is.
"""

from __future__ import annotations

import os
import warnings

ENV = "HURTLE_COMPILE_CACHE"
_OFF = ("", "0", "off", "false", "no")


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hurtle", "jax")


def enable_compile_cache(path: str | None = None) -> str | None:
    """Turn on JAX's persistent compilation cache in `path` (default: as `HURTLE_COMPILE_CACHE` says, see
    the module docstring). Call it before the first compilation. Returns the directory in use, or None
    when the cache is off; a directory that cannot be created turns it off with a warning (a cache is
    never a reason to fail)."""
    import jax

    current = jax.config.jax_compilation_cache_dir
    if current:
        return current
    if path is None:
        setting = os.environ.get(ENV)
        if setting is not None and setting.strip().lower() in _OFF:
            return None
        path = setting or default_dir()
    path = os.path.abspath(os.path.expanduser(path))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        warnings.warn(f"hurtle: compilation cache off: cannot create {path} ({e.strerror}); set {ENV}", stacklevel=2)
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    return path
