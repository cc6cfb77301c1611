"""XLA CPU's code generation for the programs hurtle compiles, chosen when hurtle is imported.

XLA CPU compiles each kernel of a program into its own object file, and its newer MLIR fusion emitters
give a contact-rich physics step thousands of them; the loader maps every object's code, constants and
data apart, three memory mappings each. A scene of a dozen geoms held ~4,500 mappings per compiled
`forward`, so a process that compiled about fifteen such models (a notebook, a sweep over model
variants, a parity script) passed Linux's default limit of 65,530 mappings, and LLVM stopped it ("Unable
to allocate section memory"). XLA's older elemental emitters emit the same kernels into shared modules:
~1,200 mappings for that scene, compiles ~0.7x as long, and hurtle's steps run as fast
(benchmarks/NOTES.md §24 and §38).

So `import hurtle` adds `--xla_cpu_use_fusion_emitters=false` to `XLA_FLAGS` when all of these hold:
  - the variable does not already choose `xla_cpu_use_fusion_emitters` (a user's choice stands);
  - `HURTLE_XLA_FLAGS` is not `off` (or 0, false, no);
  - JAX has not started its backends yet (XLA reads the variable once, when they start);
  - jaxlib is a version known to have the flag (XLA aborts the process on a flag it does not know).
The flag concerns CPU code generation only; GPU programs are unaffected.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

ENV = "HURTLE_XLA_FLAGS"
FLAG = "--xla_cpu_use_fusion_emitters=false"
KNOWN_JAXLIB = ((0, 10),)  # jaxlib (major, minor) releases checked to take FLAG


def _jaxlib_version() -> tuple[int, int] | None:
    try:
        major, minor = importlib.metadata.version("jaxlib").split(".")[:2]
        return int(major), int(minor)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _backends_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def configure() -> bool:
    """Add FLAG to XLA_FLAGS where the module docstring says; True when it is (now or before) in force."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" in flags:
        return FLAG in flags.split()
    if os.environ.get(ENV, "").strip().lower() in ("off", "0", "false", "no"):
        return False
    if _jaxlib_version() not in KNOWN_JAXLIB or _backends_started():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()
    return True


GRADIENT_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}
"""Per-program XLA CPU options for programs that reverse-differentiate the physics (`gradient_options`)."""


def gradient_options() -> dict[str, str]:
    """`compiler_options` for `jax.jit` of a program that reverse-differentiates the physics: on the CPU with a
    known jaxlib, YNNPACK's library fusions for dots only. By default XLA CPU also hands reductions to YNNPACK,
    and the backward of a contact step is full of small ones (the transposes of the contact Jacobian's
    broadcast products, a reduction over 3 or nv of a few hundred rows): those kernels took 60% of humanoid's
    value-and-VJP (benchmarks/NOTES.md §46). The forward keeps the default, which is faster there
    (halfcheetah's step 1.4 ms against 2.2 at batch 64). Empty elsewhere (a GPU, an unchecked jaxlib)."""
    import jax

    if _jaxlib_version() not in KNOWN_JAXLIB or jax.default_backend() != "cpu":
        return {}
    return dict(GRADIENT_OPTIONS)
