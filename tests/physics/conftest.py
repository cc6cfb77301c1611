"""Physics tests compile one program per model: free them between tests to bound memory, and compile them
at XLA's backend optimisation level 0.

The physics tests are compile-bound and run their programs for a few steps: level 0 compiles them a
quarter to a half faster (benchmarks/NOTES.md §31: test_collision_mesh's mesh pairs 83 -> 46 s; a fresh-clone
CI run 1,767 -> 1,526 s). It is not the suite-wide XLA flag because it makes stepping slower (the
environments' 1,000-step rollouts 1.6-2.4x), which the environment and training tests' long runs would pay.
It changes the generated code's rounding (fused multiply-adds, most likely), within every parity tolerance;
a test whose result turns on a rounding-level tie (MuJoCo's quadrilateral search in multiccd)
is marked `default_codegen` and compiles as users' programs do."""

import functools
import subprocess
import sys

import jax
import pytest

LEVEL0 = {"xla_backend_optimization_level": 0}


@functools.cache
def _takes_level0() -> bool:
    """XLA refuses an option its build lacks: try it in a child process (a jaxlib that dropped it runs the
    tests with XLA's defaults)."""
    probe = f"import jax; jax.jit(lambda x: x + 1, compiler_options={LEVEL0!r})(1.0)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=300).returncode == 0


_jit = jax.jit


@functools.wraps(_jit)
def level0_jit(fun=None, /, **kwargs):
    """`jax.jit` compiling at level 0 unless the caller chose its compiler options."""
    kwargs.setdefault("compiler_options", LEVEL0)
    return _jit(fun, **kwargs) if fun is not None else functools.partial(level0_jit, **kwargs)


@pytest.fixture(autouse=True)
def _level0_compiles(request, monkeypatch):
    """`jax.jit` is `level0_jit` during each physics test (programs a module builds at import take
    `jax.jit` when first used: see test_collision's `_collider`)."""
    if request.node.get_closest_marker("default_codegen") is None and _takes_level0():
        monkeypatch.setattr(jax, "jit", level0_jit)
    yield


@pytest.fixture(autouse=True)
def _free_compiled_programs():
    yield
    jax.clear_caches()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing physics test names the MuJoCo it was compared with: the reference moves with each release."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        import mujoco

        report.sections.append(("parity reference", f"MuJoCo {mujoco.__version__} ({mujoco.__file__})"))
