"""Test configuration: float64 for parity, strict dtype promotion, two fake CPU devices."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HURTLE_COMPILE_CACHE", "off")  # the CLI's compile cache stays out of the user's home

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
