"""`import hurtle` picks XLA CPU's elemental emitters only where the user has not chosen and XLA can take it."""

import pytest

from hurtle import xla_flags


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv(xla_flags.ENV, raising=False)
    monkeypatch.setattr(xla_flags, "_backends_started", lambda: False)
    monkeypatch.setattr(xla_flags, "_jaxlib_version", lambda: xla_flags.KNOWN_JAXLIB[0])
    return monkeypatch


def test_added_to_the_users_flags(env):
    import os

    env.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert xla_flags.configure()
    assert os.environ["XLA_FLAGS"].split() == ["--xla_force_host_platform_device_count=2", xla_flags.FLAG]
    assert xla_flags.configure() and os.environ["XLA_FLAGS"].count(xla_flags.FLAG) == 1  # once


@pytest.mark.parametrize("case", ["user-chose", "opted-out", "backend-started", "unknown-jaxlib", "no-jaxlib"])
def test_left_alone(env, case):
    import os

    flags = "--xla_cpu_use_fusion_emitters=true" if case == "user-chose" else "--xla_cpu_enable_fast_math=false"
    env.setenv("XLA_FLAGS", flags)
    if case == "opted-out":
        env.setenv(xla_flags.ENV, "off")
    if case == "backend-started":
        env.setattr(xla_flags, "_backends_started", lambda: True)
    if case == "unknown-jaxlib":
        env.setattr(xla_flags, "_jaxlib_version", lambda: (9, 0))
    if case == "no-jaxlib":
        env.setattr(xla_flags, "_jaxlib_version", lambda: None)
    assert not xla_flags.configure()
    assert os.environ["XLA_FLAGS"] == flags


def test_the_installed_jaxlib_is_known_and_its_backend_state_is_read():
    assert xla_flags._jaxlib_version() in xla_flags.KNOWN_JAXLIB
    import jax

    jax.numpy.zeros(1).block_until_ready()
    assert xla_flags._backends_started()


def test_gradient_options_compile_and_change_the_program(monkeypatch):
    """The per-program options for a physics backward: valid for the installed jaxlib (XLA rejects an unknown
    enum value at compile time), they leave YNNPACK its dots and take its reductions (a reduction the
    default hands to YNNPACK becomes XLA's own kernel); nothing for an unchecked jaxlib."""
    import jax
    import jax.numpy as jnp

    options = xla_flags.gradient_options()
    assert options == xla_flags.GRADIENT_OPTIONS

    def f(x):  # a contact Jacobian's backward in small: rows times dofs, summed over the dofs
        return jnp.sum(x * x, axis=-1)

    x = jnp.ones((64, 161, 23), jnp.float32)  # (YNNPACK takes float32 kernels)
    default = jax.jit(f).lower(x).compile().as_text()
    ours = jax.jit(f, compiler_options=options).lower(x).compile()
    assert "__ynn_fusion" in default and "__ynn_fusion" not in ours.as_text()
    assert float(ours(x)[0, 0]) == 23.0
    monkeypatch.setattr(xla_flags, "_jaxlib_version", lambda: (9, 0))
    assert xla_flags.gradient_options() == {}
