"""Random contact-rich scenes, written as MJCF, for parity tests: what real models mix and the primitive
tests alone never exercised.

Each scene has a floor (a plane, tilted or not, or a height field of random relief, sometimes both), a
few kinematic trees (a free root or a chain of hinges and slides, some limited, with springs, damping and
armature), free bodies beside them, and geoms of every type the engine collides (sphere, capsule,
ellipsoid, cylinder, box, mesh) at random local poses, with mixed condim, contype/conaffinity bitmasks,
friction, solref/solimp and margins. Gravity is tilted; the cone is pyramidal or elliptic. Bodies start
overlapping the floor and one another, so most geoms are in contact at `qpos0`. A scene on a plane has a free box.
"""

from __future__ import annotations

import numpy as np

GEOM_TYPES = ("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")
# a wedge and an irregular hull (MuJoCo takes the convex hull of the vertices)
_WEDGE = "-.06 -.05 -.04 .06 -.05 -.04 -.06 .05 -.04 .06 .05 -.04 -.06 -.05 .04 .06 -.05 .04 -.06 .05 .05 .06 .05 .05"


def _f(*xs) -> str:
    return " ".join(f"{x:.4f}" for x in xs)


def _blob(rng: np.random.Generator) -> str:
    return _f(*(rng.standard_normal((14, 3)) * [0.05, 0.04, 0.035]).ravel())


def _geom(rng: np.random.Generator, name: str, kind: str, allow: tuple) -> str:
    size = {
        "sphere": lambda: _f(rng.uniform(0.04, 0.1)),
        "capsule": lambda: _f(rng.uniform(0.03, 0.06), rng.uniform(0.04, 0.1)),
        "ellipsoid": lambda: _f(*rng.uniform(0.04, 0.1, 3)),
        "cylinder": lambda: _f(rng.uniform(0.04, 0.08), rng.uniform(0.03, 0.08)),
        "box": lambda: _f(*rng.uniform(0.03, 0.08, 3)),
    }
    shape = (
        f'type="mesh" mesh="{rng.choice(["wedge", "blob"])}"'
        if kind == "mesh"
        else f'type="{kind}" size="{size[kind]()}"'
    )
    bits = rng.choice(allow)
    extra = ""
    if rng.random() < 0.3:
        extra += f' solref="{_f(rng.uniform(0.01, 0.04), rng.uniform(0.8, 1.2))}"'
    if rng.random() < 0.3:
        extra += f' solimp="{_f(rng.uniform(0.8, 0.9), rng.uniform(0.92, 0.99), rng.uniform(0.001, 0.01))}"'
    if rng.random() < 0.2 and kind not in ("box",):
        extra += f' margin="{_f(rng.uniform(0.001, 0.01))}"'
    # a third of the geoms aligned with their body (an upright capsule or cylinder: the exact cases)
    euler = "0 0 0" if rng.random() < 0.35 else _f(*rng.uniform(-90, 90, 3))
    return (
        f'<geom name="{name}" {shape} pos="{_f(*rng.uniform(-0.04, 0.04, 3))}" euler="{euler}"'
        f' density="{rng.uniform(500, 3000):.1f}" condim="{rng.choice([1, 3, 3, 4, 6])}" contype="{bits[0]}"'
        f' conaffinity="{bits[1]}" friction="{_f(rng.uniform(0.3, 1.2), rng.uniform(0.001, 0.01), rng.uniform(1e-5, 1e-3))}"'
        f"{extra}/>"
    )


def _joint(rng: np.random.Generator, name: str) -> str:
    kind = rng.choice(["hinge", "hinge", "slide"])
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    out = f'<joint name="{name}" type="{kind}" axis="{_f(*axis)}" pos="{_f(*rng.uniform(-0.05, 0.05, 3))}"'
    out += f' damping="{rng.uniform(0, 1):.3f}" armature="{rng.uniform(0, 0.1):.3f}"'
    if rng.random() < 0.5:
        out += f' stiffness="{rng.uniform(0, 2):.3f}" springref="{rng.uniform(-0.3, 0.3):.3f}"'
    if rng.random() < 0.6:  # limited, a third of them with qpos0 outside the range (the limit active)
        scale = 0.3 if kind == "slide" else 0.8
        a, b = sorted(rng.uniform(-scale, scale, 2))
        a, b = (0.02 * scale, b + scale) if rng.random() < 0.35 else (min(a, -0.01), max(b, 0.01))
        out += f' limited="true" range="{_f(a, b)}"'
    return out + "/>"


def scene(seed: int, geoms_per_body: int = 1, small: bool = False) -> str:
    """The MJCF of random scene `seed` (deterministic); `small`: a plane floor, primitives only, one tree
    of two or three bodies and one free body (a cheaper program)."""
    rng = np.random.default_rng(seed)
    types = GEOM_TYPES[:-1] if small else GEOM_TYPES
    # contype/conaffinity pairs: most collide with everything, some only with the floor or with some others
    allow = ((1, 1), (1, 1), (3, 3), (2, 3), (2, 1), (1, 2))
    g = rng.uniform(-1.5, 1.5, 2)
    cone = rng.choice(["pyramidal", "elliptic"])
    floor = rng.choice(["plane", "tilted"] if small else ["plane", "tilted", "hfield", "both"])
    if floor in ("hfield", "both"):
        # no polytopes on a height field: without a margin MuJoCo collides a box or mesh with a prism by EPA's
        # discrete mode, whose first repeated vertex turns on rounding-level ties (hurtle.physics.collision.hfield; such
        # contacts moved with XLA's optimisation level), so a scene's answer would depend on the compiler
        types = tuple(t for t in types if t not in ("box", "mesh"))
    relief = _f(*rng.uniform(0, 1, 7 * 8))
    assets = (
        f'<asset><mesh name="wedge" vertex="{_WEDGE}"/><mesh name="blob" vertex="{_blob(rng)}"/>'
        f'<hfield name="terrain" nrow="7" ncol="8" size="0.6 0.5 0.08 0.05" elevation="{relief}"/></asset>'
    )
    world = []
    floor_dim = rng.choice([1, 3])  # a condim-1 floor leaves condim-1 geoms frictionless contacts
    if floor in ("plane", "tilted", "both"):
        tilt = _f(*rng.uniform(-12, 12, 2), 0) if floor == "tilted" else "0 0 0"
        z = -0.06 if floor == "both" else 0.0
        world.append(
            f'<geom name="floor" type="plane" size="3 3 .1" pos="0 0 {z}" euler="{tilt}" contype="3" conaffinity="3"'
            f' condim="{floor_dim}"/>'
        )
    if floor in ("hfield", "both"):
        world.append(
            f'<geom name="terrain" type="hfield" hfield="terrain" pos="{_f(*rng.uniform(-0.05, 0.05, 2), -0.05)}"'
            f' euler="0 0 {rng.uniform(0, 30):.2f}" contype="3" conaffinity="3" condim="{floor_dim}"/>'
        )
    n = [0]

    def body(depth: int, root: bool) -> str:
        i = n[0]
        n[0] += 1
        pos = _f(*rng.uniform(-0.2, 0.2, 2), rng.uniform(0.04, 0.1)) if root else _f(*rng.uniform(-0.12, 0.12, 3))
        euler = "0 0 0" if rng.random() < 0.3 else _f(*rng.uniform(-40, 40, 3))
        out = f'<body name="b{i}" pos="{pos}" euler="{euler}">'
        if root and rng.random() < 0.6:
            out += f'<freejoint name="j{i}"/>'
        else:
            out += "".join(_joint(rng, f"j{i}_{k}") for k in range(rng.choice([1, 1, 2])))
        out += "".join(
            _geom(rng, f"g{i}_{k}", rng.choice(types), allow) for k in range(rng.integers(1, geoms_per_body + 1))
        )
        if depth > 0:
            out += "".join(body(depth - 1, False) for _ in range(rng.choice([1, 1, 2])))
        return out + "</body>"

    trees = [body(1, True)] if small else [body(int(rng.integers(1, 3)), True) for _ in range(2)]
    free = [
        f'<body name="free{k}" pos="{_f(*rng.uniform(-0.3, 0.3, 2), rng.uniform(0.02, 0.12))}"'
        f' euler="{_f(*rng.uniform(-90, 90, 3))}"><freejoint/>'
        f"{_geom(rng, f'fg{k}', 'box' if k == 0 and 'box' in types else rng.choice(types), allow)}</body>"
        for k in range(1 if small else int(rng.integers(1, 3)))
    ]
    if not small and rng.random() < 0.6:
        # two capsules within 1e-4 rad of parallel, deep in each other (dm_control's CMU humanoid starts so)
        euler, pos = rng.uniform(-60, 60, 3), rng.uniform(-0.25, 0.25, 3) + [0, 0, 0.15]
        for k in range(2):
            tilt = euler + [0, 0, 0.002 * k * rng.choice([0, 1])]  # exactly parallel, or 3.5e-5 rad apart
            free.append(
                f'<body name="pair{k}" pos="{_f(*(pos + k * rng.uniform(-0.04, 0.04, 3)))}" euler="{_f(*tilt)}">'
                f'<freejoint/><geom name="pc{k}" type="capsule" size="{_f(0.05 - 0.01 * k, 0.12 - 0.04 * k)}"/></body>'
            )
    return (
        f'<mujoco model="scene{seed}"><option timestep="0.002" gravity="{_f(*g, -9.81)}" cone="{cone}"'
        f' impratio="{rng.choice([1.0, 1.0, 3.0])}"/>{assets}<worldbody>{"".join(world + trees + free)}'
        "</worldbody></mujoco>"
    )
