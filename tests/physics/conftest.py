"""Physics tests compile one program per model; free them between tests to bound memory."""

import jax
import pytest


@pytest.fixture(autouse=True)
def _free_compiled_programs():
    yield
    jax.clear_caches()
