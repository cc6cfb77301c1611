"""The commands' persistent compilation cache (hurtle.io.cache)."""

import os
import subprocess
import sys

import jax
import pytest

from hurtle.io import cache


def _demo(env):
    cmd = [sys.executable, "-m", "hurtle.cli", "demo", "--batch", "2", "--steps", "5"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.slow
def test_second_run_loads_every_program_from_the_cache(tmp_path):
    where = tmp_path / "cache"
    env = {**os.environ, "HURTLE_COMPILE_CACHE": str(where), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    first = _demo(env)
    entries = sorted(p for p in os.listdir(where) if p.endswith("-cache"))
    assert entries, f"nothing cached in {where}"
    second = _demo(env)
    # the same programs again: all read back, none compiled and written anew
    assert sorted(p for p in os.listdir(where) if p.endswith("-cache")) == entries
    assert first.splitlines()[-1] == second.splitlines()[-1]  # same answer against MuJoCo C


def test_off_and_default(monkeypatch, tmp_path):
    for off in ("off", "0", "", "False"):
        monkeypatch.setenv(cache.ENV, off)
        assert cache.enable_compile_cache() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.default_dir() == os.path.join(str(tmp_path), "hurtle", "jax")


def test_a_directory_given_to_jax_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "ours"))
    previous = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "theirs"))
    try:
        assert cache.enable_compile_cache() == str(tmp_path / "theirs")
    finally:
        jax.config.update("jax_compilation_cache_dir", previous)
    assert not (tmp_path / "ours").exists()


def test_a_directory_that_cannot_be_made_turns_it_off(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    with pytest.warns(UserWarning, match="compilation cache off: cannot create"):
        assert cache.enable_compile_cache() is None
    assert jax.config.jax_compilation_cache_dir is None
