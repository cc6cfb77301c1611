"""Test configuration: float64 for parity, strict dtype promotion, two fake CPU devices, XLA CPU's faster-compiling
code generation."""

import os
import subprocess
import sys

# Two fake CPU devices; and code generation that compiles faster, since the suite is compile-bound (benchmarks/NOTES.md
# §20, §22, §24): LLVM's expensive passes off, and XLA CPU's elemental IR emitters instead of its MLIR fusion
# emitters (a test file's time 0.6x). Code generation only: the whole suite passes with them, the rounding-sensitive
# multiccd test included. XLA's backend optimisation level 0 would cut more but changes the generated code's
# rounding (that test's polygon choice moved), so it is not used.
DEVICES = "--xla_force_host_platform_device_count=2"
FAST_COMPILE = "--xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false"


def _xla_takes(flags: str) -> bool:
    """XLA aborts the process on a flag it does not know (a jaxlib that dropped one): try them in a child first."""
    probe = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=300).returncode == 0


# set once, by pytest's main process (xdist's workers inherit it)
if "XLA_FLAGS" not in os.environ:
    fast = f"{DEVICES} {FAST_COMPILE}"
    os.environ["XLA_FLAGS"] = fast if _xla_takes(fast) else DEVICES
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HURTLE_COMPILE_CACHE", "off")  # the CLI's compile cache stays out of the user's home

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")

import pytest  # noqa: E402

# test modules whose tests share compiled programs per task through module-level caches
_PER_TASK = {"test_locomotion_a", "test_locomotion_b"}


def pytest_collection_modifyitems(config, items):
    """Work units for `--dist loadgroup` (the suite's default): tests that share compiled programs go to
    one worker as a group, every other test is handed out on its own, so the two workers finish
    together. The physics tests share nothing (their conftest frees the compiled programs after each
    test); the environment tests share the session's environments (tests/envs/conftest.py), per task in
    the locomotion modules; the agent tests share per module. An explicit `xdist_group` mark is kept."""
    root = os.path.dirname(__file__)
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        parts = os.path.relpath(str(item.path), root).split(os.sep)
        module = os.path.splitext(parts[-1])[0]
        params = getattr(getattr(item, "callspec", None), "params", {})
        if parts[0] == "envs":
            group = f"envs/{module}:{params['name']}" if module in _PER_TASK and "name" in params else "envs"
        elif parts[0] == "agents":
            group = f"agents/{module}"
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_report_header(config):
    """The MuJoCo the physics is compared with (a failing physics test names it too: tests/physics/conftest.py)."""
    import mujoco

    return f"parity reference: MuJoCo {mujoco.__version__}"


def require_or_skip(extra: str) -> None:
    """Skip a test whose optional extra is not installed, or fail it where the run requires that extra
    (`HURTLE_REQUIRE_EXTRAS=robots,envpool`, as CI sets: there a missing package is a broken install, not a skip)."""
    from hurtle import extras

    absent = extras.missing(extra)
    if not absent:
        return
    message = f"the '{extra}' extra is not installed ({', '.join(absent)})"
    if extra in os.environ.get("HURTLE_REQUIRE_EXTRAS", "").split(","):
        pytest.fail(message + ", and HURTLE_REQUIRE_EXTRAS requires it")
    pytest.skip(message)
