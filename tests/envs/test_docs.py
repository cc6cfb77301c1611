"""The custom-environment guide (docs/environments.md) runs as written, and its task is under 50 lines."""

import os
import re

import jax
import numpy as np

import hurtle.envs as he

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "environments.md")


def test_environment_guide_runs():
    blocks = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)
    assert len(blocks) == 2
    assert len(blocks[0].strip().splitlines()) < 50
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, DOC, "exec"), namespace)
        env, state = namespace["env"], namespace["state"]
        assert "swingup" in he.names()
        assert state.obs.shape == (env.observation_size,) and np.all(np.isfinite(state.obs))
        assert set(state.metrics) >= {"reward/upright", "reward/control"}
        # hanging start: upright term near -1; one step with the motor on moves the pole
        assert float(state.metrics["reward/upright"]) < -0.9
        assert float(jax.numpy.abs(state.physics.qvel[0])) > 0
    finally:
        if "swingup" in he.names():
            he.unregister("swingup")
