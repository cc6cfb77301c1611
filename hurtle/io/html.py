"""Self-contained HTML pages of rollouts: `render(model, qpos, dt)` writes what a browser plays offline.

The page inlines hurtle's viewer (three.js, built from npm by `viewer/build.sh` into `viewer/viewer.js` beside
this module, with three.js's licence) and the rollout: the model's geoms once (every type hurtle simulates:
plane, sphere, capsule, ellipsoid, cylinder, box, mesh, height field; MuJoCo's colours; the geom groups MuJoCo's
viewer shows by default, 0-2) and each frame's body poses as base64 float32. Poses come from MuJoCo C's
kinematics of the given `qpos` (the same positions hurtle's kinematics computes), so a page needs no compiled
program. Nothing is fetched when the page is opened: it works from `file://`.
"""

from __future__ import annotations

import base64
import html
import json
import os
from importlib import resources
from typing import Any

import mujoco
import numpy as np

_TYPES = {
    int(mujoco.mjtGeom.mjGEOM_PLANE): "plane",
    int(mujoco.mjtGeom.mjGEOM_HFIELD): "hfield",
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_MESH): "mesh",
}
VISIBLE_GROUPS = (0, 1, 2)  # MuJoCo's viewer shows these geom groups by default


def _b64(array: np.ndarray, dtype: Any) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def mj_model(model: Any) -> mujoco.MjModel:
    """MuJoCo's model for `model`: an `MjModel`, an MJCF path or string, a hurtle `PhysicsEnv` (its `xml`) or a
    hurtle `Model` loaded from a file."""
    if isinstance(model, mujoco.MjModel):
        return model
    xml = getattr(model, "xml", None)  # a PhysicsEnv: its model file or MJCF string
    if isinstance(xml, str | os.PathLike):
        return mj_model(xml)
    if isinstance(model, str | os.PathLike):
        text = str(model)
        if text.lstrip().startswith("<"):
            return mujoco.MjModel.from_xml_string(text)
        return mujoco.MjModel.from_xml_path(os.fspath(model))
    source = getattr(model, "source", None)
    if source and os.path.exists(source):
        return mujoco.MjModel.from_xml_path(source)
    raise ValueError(
        f"render: cannot find the model file of {type(model).__name__} (source {source!r}); pass the MJCF path or string"
    )


def _qpos_batch(states: Any, nq: int) -> np.ndarray:
    """`[worlds, frames, nq]` float64 from qpos `[frames, nq]` or `[worlds, frames, nq]`, or states holding it."""
    qpos = getattr(states, "qpos", None)
    if qpos is None:
        qpos = getattr(getattr(states, "physics", None), "qpos", states)
    qpos = np.asarray(qpos, np.float64)
    if qpos.ndim not in (2, 3) or qpos.shape[-1] != nq:
        raise ValueError(f"render: qpos must be [frames, {nq}] or [worlds, frames, {nq}], got {qpos.shape}")
    if qpos.ndim == 2:
        qpos = qpos[None]
    if qpos.shape[1] == 0:
        raise ValueError("render: no frames")
    return qpos


def _geoms(m: mujoco.MjModel) -> tuple[list[dict], list[dict], list[dict]]:
    geoms, meshes, hfields, mesh_index, hfield_index = [], [], [], {}, {}
    for g in range(m.ngeom):
        kind = _TYPES.get(int(m.geom_type[g]))
        if kind is None or int(m.geom_group[g]) not in VISIBLE_GROUPS:
            continue
        rgba = m.mat_rgba[m.geom_matid[g]] if m.geom_matid[g] >= 0 else m.geom_rgba[g]
        if rgba[3] == 0:
            continue
        entry = {
            "type": kind,
            "name": mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "",
            "body": int(m.geom_bodyid[g]),
            "size": [float(x) for x in m.geom_size[g]],
            "pos": [float(x) for x in m.geom_pos[g]],
            "quat": [float(x) for x in m.geom_quat[g]],
            "rgba": [float(x) for x in rgba],
        }
        data = int(m.geom_dataid[g])
        if kind == "mesh":
            if data not in mesh_index:
                v0, nv = m.mesh_vertadr[data], m.mesh_vertnum[data]
                f0, nf = m.mesh_faceadr[data], m.mesh_facenum[data]
                mesh_index[data] = len(meshes)
                meshes.append(
                    {"vert": _b64(m.mesh_vert[v0 : v0 + nv], "<f4"), "face": _b64(m.mesh_face[f0 : f0 + nf], "<u4")}
                )
            entry["mesh"] = mesh_index[data]
        elif kind == "hfield":
            if data not in hfield_index:
                nrow, ncol = int(m.hfield_nrow[data]), int(m.hfield_ncol[data])
                adr = m.hfield_adr[data]
                hfield_index[data] = len(hfields)
                hfields.append(
                    {
                        "nrow": nrow,
                        "ncol": ncol,
                        "size": [float(x) for x in m.hfield_size[data]],
                        "data": _b64(m.hfield_data[adr : adr + nrow * ncol], "<f4"),
                    }
                )
            entry["hfield"] = hfield_index[data]
        geoms.append(entry)
    return geoms, meshes, hfields


def default_follow(m: mujoco.MjModel, follow: str | int | None, owner: str) -> int:
    """The body index of `follow` (a name or index); by default the first body under the world."""
    if follow is None:
        return 1 if m.nbody > 1 else 0
    if isinstance(follow, str):
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, follow)
        if body < 0:
            names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body {b}" for b in range(m.nbody)]
            raise ValueError(f"{owner}: no body named {follow!r}; bodies: {', '.join(names)}")
        return body
    if not 0 <= follow < m.nbody:
        raise ValueError(f"{owner}: no body {follow} (the model has {m.nbody})")
    return int(follow)


def view_radius(m: mujoco.MjModel, body: int) -> float:
    """The radius around `body` at the model's initial pose that its subtree's geoms fill (planes and height
    fields left out; half the model's extent for the world): what a camera following it frames."""
    if body == 0:
        return 0.5 * float(m.stat.extent) or 1.0
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    inside = np.zeros(m.nbody, bool)
    for b in range(m.nbody):  # parents come before children
        inside[b] = b == body or (b > 0 and inside[m.body_parentid[b]])
    keep = inside[m.geom_bodyid] & ~np.isin(m.geom_type, (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_HFIELD))
    if not keep.any():
        return 1.0
    reach = np.linalg.norm(d.geom_xpos[keep] - d.xpos[body], axis=1) + m.geom_rbound[keep]
    return float(max(reach.max(), 0.1))


def poses(m: mujoco.MjModel, qpos: np.ndarray, mocap_pos: np.ndarray | None = None) -> np.ndarray:
    """Body poses `[worlds, frames, nbody, 7]` (xpos, xquat) of `qpos` `[worlds, frames, nq]` by MuJoCo's
    kinematics; mocap bodies at `mocap_pos` `[worlds, frames, nmocap, 3]` (a task's moving target), else at
    the model's rest."""
    d = mujoco.MjData(m)
    out = np.empty((*qpos.shape[:2], m.nbody, 7), np.float32)
    if mocap_pos is not None:
        mocap_pos = np.asarray(mocap_pos, np.float64)
        if mocap_pos.shape != (*qpos.shape[:2], m.nmocap, 3):
            raise ValueError(
                f"render: mocap_pos must be [{qpos.shape[0]}, {qpos.shape[1]}, {m.nmocap}, 3] "
                f"(worlds, frames, mocap bodies), got {mocap_pos.shape}"
            )
    for w in range(qpos.shape[0]):
        for f in range(qpos.shape[1]):
            d.qpos[:] = qpos[w, f]
            if mocap_pos is not None:
                d.mocap_pos[:] = mocap_pos[w, f]
            mujoco.mj_kinematics(m, d)
            out[w, f, :, :3] = d.xpos
            out[w, f, :, 3:] = d.xquat
    return out


def render(
    model: Any,
    states_or_qpos: Any,
    dt: float,
    *,
    title: str = "hurtle",
    follow: str | int | None = None,
    mocap_pos: Any = None,
) -> str:
    """The HTML page (a string) of a rollout: `states_or_qpos` is qpos `[frames, nq]` or `[worlds, frames, nq]`
    (several episodes, side by side or one at a time), or a `Data`/`State` batch holding it; `dt` is the
    time between frames. `follow`: the body the camera follows at first (default: the first body under the
    world; the page's menu changes it). `mocap_pos`: the mocap bodies' positions per frame, shaped like qpos
    with `[nmocap, 3]` in place of `nq` (a target that moves), else they stay at the model's rest."""
    m = mj_model(model)
    if not dt > 0:
        raise ValueError(f"render: dt must be positive, got {dt}")
    qpos = _qpos_batch(states_or_qpos, m.nq)
    geoms, meshes, hfields = _geoms(m)
    bodies = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body {b}" for b in range(m.nbody)]
    follow = default_follow(m, follow, "render")
    extent = float(m.stat.extent) or 1.0
    radius = view_radius(m, follow)
    rollout = {
        "dt": float(dt),
        "nworld": int(qpos.shape[0]),
        "nframe": int(qpos.shape[1]),
        "nbody": int(m.nbody),
        "bodies": bodies,
        "geoms": geoms,
        "meshes": meshes,
        "hfields": hfields,
        "poses": _b64(
            poses(m, qpos, None if mocap_pos is None else np.reshape(mocap_pos, (*qpos.shape[:2], -1, 3))), "<f4"
        ),
        "follow": int(follow) if follow > 0 else -1,  # -1: the page's free camera
        "distance": max(2.0 * radius, 1.0),
        "spacing": max(2.5 * radius, 1.0) if follow else 2.0 * extent,
    }
    script = resources.files("hurtle.io").joinpath("viewer/viewer.js").read_text()
    data = json.dumps(rollout, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.format(title=html.escape(title), data=data, script=script.replace("</script", "<\\/script"))


def write(path: str | os.PathLike, model: Any, states_or_qpos: Any, dt: float, **kwargs) -> str:
    """`render` into the file `path` (written whole, then renamed into place); returns the path."""
    text = render(model, states_or_qpos, dt, **kwargs)
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
html, body {{ margin: 0; height: 100%; background: #1e2430; color: #dde; font: 13px system-ui, sans-serif; }}
#view {{ position: absolute; top: 0; bottom: 40px; left: 0; right: 0; }}
#controls {{ position: absolute; bottom: 0; height: 40px; left: 0; right: 0; display: flex; gap: 10px;
  align-items: center; padding: 0 10px; background: #151a22; }}
#time {{ flex: 1; }}
#label {{ min-width: 190px; font-variant-numeric: tabular-nums; }}
</style></head>
<body><div id="view"></div><div id="controls"></div>
<script id="hurtle-rollout" type="application/json">{data}</script>
<script>{script}</script>
</body></html>
"""

__all__ = ["default_follow", "mj_model", "view_radius", "poses", "render", "write"]
