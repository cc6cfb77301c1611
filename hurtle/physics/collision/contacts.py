"""mj_collision: every pair group's narrow phase, the contacts' frames and mixed parameters, the contact cap.

The groups' contact slots (`hurtle.physics.collision.pairs`) are consecutive and fill the contact arrays; at
run time a pair's slots are marked active or not, and nothing is skipped with a Python branch on state.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.collision.pairs import _shared_sizes, compact, narrow
from hurtle.physics.types import Data, Model

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit


def make_frame(normal: jax.Array, tangent: jax.Array) -> jax.Array:
    """Contact frame with the normal in the first row (mju_makeFrame)."""
    x = math.normalize(normal)
    default = jnp.where(
        (jnp.abs(x[..., 1]) < 0.5)[..., None], jnp.array([0.0, 1, 0], x.dtype), jnp.array([0.0, 0, 1], x.dtype)
    )
    y = jnp.where((math.dot(tangent, tangent) < 0.25)[..., None], default, tangent)
    y = y - x * math.dot(x, y)[..., None]
    # a tangent along the normal leaves nothing: mju_normalize3 then gives (1, 0, 0), and so must we (the
    # friction rows would be zero, and the contact frictionless)
    norm = math.safe_norm(y, keepdims=True)
    y = jnp.where(norm < math.MINVAL, jnp.array([1.0, 0, 0], x.dtype), y / jnp.maximum(norm, math.MINVAL))
    rows = np.eye(3, dtype=x.dtype)[:, :, None]
    return x[..., None, :] * rows[0] + y[..., None, :] * rows[1] + math.cross(x, y)[..., None, :] * rows[2]


# the contact parameters' columns: solref, solreffriction, solimp, friction, margin, margin + gap
_SOLREF, _SRF, _SOLIMP, _FRICTION, _MARGIN, _REACH = (
    np.arange(a, b) for a, b in ((0, 2), (2, 4), (4, 9), (9, 14), (14, 15), (15, 16))
)
# each column's field in the geoms' table below (solmix, solref 2, solimp 5, friction 3, margin, gap)
_GEOM_COL = np.array([1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 10, 11, 11])
# and in the explicit pairs' (solref 2, solreffriction 2, solimp 5, friction 5, margin, gap)
_PAIR_COL = np.arange(16)


def _entry_reader(fields: list, ncol: int):
    """read(i, c) -> (len(i), ncol): entry (i[k], c[j]) of the fields (each (n,) or (n, w)) side by side
    as the columns of one table, for static row indices `i` and a column `c` (a scalar or one per
    output column): a gather with static 2D indices from the flattened table, so an expression over
    its results is elementwise over the whole output (nothing computed per row and broadcast)."""
    table = jnp.concatenate([f if f.ndim == 2 else f[:, None] for f in map(jnp.asarray, fields)], -1)
    width, flat = table.shape[1], table.ravel()

    def read(i, c):
        return flat[(np.asarray(i) * width)[:, None] + np.broadcast_to(c, (len(i), ncol))]

    return read


def _params(m: Model, g1: np.ndarray, g2: np.ndarray, ipair: np.ndarray) -> jax.Array:
    """Mixed contact parameters of the pairs (g1, g2) (mj_contactParam, or the explicit pair's), as the
    columns of one array (pairs, 16): solref, solreffriction, solimp, friction, margin, and margin +
    gap (how near the narrow phase looks).

    One elementwise expression over the whole array: each entry reads its geoms' values by a gather
    with static indices, so no value is computed per pair and broadcast over columns. XLA computes
    the model's values once, outside a rollout's loop, and each array it computes there is a kernel
    of its own: here one (a gather or a division with more than one user was one each)."""
    dt = m.geom_solref.dtype
    ncol = len(_GEOM_COL)
    col = np.arange(ncol)
    geom = _entry_reader(
        [m.geom_solmix, m.geom_solref, m.geom_solimp, m.geom_friction, m.geom_margin, m.geom_gap], ncol
    )
    v1, v2 = geom(g1, _GEOM_COL), geom(g2, _GEOM_COL)
    s1, s2 = geom(g1, 0), geom(g2, 0)  # solmix
    r1, r2 = geom(g1, 1), geom(g2, 1)  # solref[0]
    both = (s1 >= math.MINVAL) & (s2 >= math.MINVAL)
    mix = jnp.where(
        both,
        s1 / jnp.where(both, s1 + s2, 1.0),
        jnp.where((s1 < math.MINVAL) & (s2 < math.MINVAL), 0.5, jnp.where(s1 < math.MINVAL, 0.0, 1.0)),
    )
    mixed = mix * v1 + (1 - mix) * v2
    standard = (r1 > 0) & (r2 > 0)
    out = jnp.where(np.isin(col, _SOLREF), jnp.where(standard, mixed, jnp.minimum(v1, v2)), mixed)
    out = jnp.where(np.isin(col, _FRICTION), jnp.maximum(v1, v2), out)
    p1, p2 = m.geom_priority[g1][:, None], m.geom_priority[g2][:, None]
    by_priority = np.isin(col, np.concatenate([_SOLREF, _SOLIMP, _FRICTION]))
    out = jnp.where(by_priority & (p1 > p2), v1, jnp.where(by_priority & (p1 < p2), v2, out))
    out = jnp.where(np.isin(col, _SRF), 0.0, out)
    # margin and gap: the geoms' summed; margin + gap for the narrow phase
    margin = v1 + v2
    gap = geom(g1, 12) + geom(g2, 12)
    explicit = ipair >= 0
    if np.any(explicit):  # an explicit pair's own parameters
        k = np.where(explicit, ipair, 0)
        pair = _entry_reader(
            [m.pair_solref, m.pair_solreffriction, m.pair_solimp, m.pair_friction, m.pair_margin, m.pair_gap], ncol
        )
        e = explicit[:, None]
        out = jnp.where(e, pair(k, _PAIR_COL), out)
        margin = jnp.where(e, pair(k, 14), margin)
        gap = jnp.where(e, pair(k, 15), gap)
    if m.enabled(_ENBL.mjENBL_OVERRIDE):  # MuJoCo's global margin (the gap stays the pair's)
        margin = jnp.broadcast_to(jnp.asarray(m.opt.o_margin, dt), margin.shape)
    out = jnp.where(np.isin(col, _MARGIN), margin, out)
    out = jnp.where(np.isin(col, _REACH), margin + gap, out)
    return jnp.where(np.isin(col, _FRICTION), jnp.maximum(jnp.asarray(1e-5, dt), out), out)


def slot_geoms(m: Model) -> tuple[np.ndarray, np.ndarray] | None:
    """(geom1, geom2) of every contact slot, fixed when the model is built: collision fills slot
    `g.slot[i, j]` from pair i of group g. None when the caller fills the slots (`contact_dims`) or
    when the contacts are compacted (`nconmax`): the slots' geoms are then data."""
    if not m.collision or m.contact_compaction is not None:
        return None
    g1, g2 = np.full(m.ncon_max, -1), np.full(m.ncon_max, -1)
    for g in m.collision:
        g1[g.slot], g2[g.slot] = g.geom1[:, None], g.geom2[:, None]
    return g1, g2


@tracing.inline_numpy
def collision(m: Model, d: Data) -> Data:
    """Contacts of every candidate pair: geometry, frame and mixed parameters (mj_collision).

    The groups' contact slots are consecutive, in group order, and fill the contact arrays, so the
    arrays are built by concatenation (parameters and geom poses are read once for all pairs), with
    no scatter: each scatter is its own XLA kernel and costs compile time.
    """
    groups = m.collision
    if not groups:
        return d
    with jax.named_scope("collision"):
        g1 = np.concatenate([g.geom1 for g in groups])
        g2 = np.concatenate([g.geom2 for g in groups])
        ipair = np.concatenate([g.ipair for g in groups])
        pos1, mat1, size1 = math.take(d.geom_xpos, g1), math.take(d.geom_xmat, g1), _shared_sizes(m, g1)
        pos2, mat2, size2 = math.take(d.geom_xpos, g2), math.take(d.geom_xmat, g2), math.take(m.geom_size, g2)
        # every slot's parameters, of its pair (pairs in group order, each pair's slots consecutive)
        ps = np.concatenate([np.repeat(np.arange(len(g.geom1)), g.slot.shape[1]) for g in groups])
        ps += np.repeat(np.cumsum([0] + [len(g.geom1) for g in groups])[:-1], [g.slot.size for g in groups])
        per_slot = _params(m, g1[ps], g2[ps], ipair[ps])
        outs, start, first = [], 0, 0
        multiccd = not m.disabled(_DSBL.mjDSBL_MULTICCD)
        for g in groups:
            fn = narrow(g.types, multiccd)[0]
            extra = {"m": m} if getattr(fn, "uses_model", False) else {}
            sl = slice(start, start + len(g.geom1))
            # margin + gap of each pair: its first slot's (a reshape and a slice, which XLA does not
            # hoist out of a rollout's loop as it does a gather)
            npair, ncon = g.slot.shape
            reach = per_slot[first : first + npair * ncon, _REACH[0]].reshape(npair, ncon)[:, 0]
            out = fn(g, pos1[sl], mat1[sl], size1[sl], pos2[sl], mat2[sl], size2[sl], reach, **extra)
            # (pairs, ncon, ...) -> (pairs * ncon, ...): the group's slots, pair by pair
            outs.append([x.reshape((-1,) + x.shape[2:]) for x in out])
            start, first = sl.stop, first + npair * ncon
        dist, pos, normal, tangent, ok = (jnp.concatenate(xs) for xs in zip(*outs))
        solref, srf, solimp, friction, margin = (
            per_slot[:, c[0] : c[-1] + 1] for c in (_SOLREF, _SRF, _SOLIMP, _FRICTION, _MARGIN)
        )
        # a contact inside the gap but outside the margin is excluded, as in MuJoCo
        active = ok & (dist < margin[:, 0])
        fields = dict(
            dist=dist,
            pos=pos,
            frame=make_frame(normal, tangent),
            includemargin=margin[:, 0],
            friction=friction,
            solref=solref,
            solreffriction=srf,
            solimp=solimp,
            geom1=jnp.asarray(g1[ps], jnp.int32),
            geom2=jnp.asarray(g2[ps], jnp.int32),
            active=active,
            gap=ok & (dist >= margin[:, 0]),
        )
        if m.contact_compaction is None:
            return d.replace(contact=d.contact.replace(**fields))
        src, kept, dropped = compact(m.contact_compaction, active)
        fields = {k: v[src] for k, v in fields.items()}
        fields["active"] = fields["active"] & kept
        fields["gap"] = fields["gap"] & kept  # (kept slots hold active contacts: the gap's are not kept)
        return d.replace(contact=d.contact.replace(**fields), ncon_dropped=dropped)


def contact_order(m: Model, d: Data) -> jax.Array:
    """The contact slots in MuJoCo's contact order (mj_collision walks body pairs by their ids, then each pair's
    geoms, each pair's contacts in its narrow phase's order), active ones first. Contacts of one geom pair at the
    same depth may be listed in another order than MuJoCo's (as the collision tests allow)."""
    g1, g2 = jnp.maximum(d.contact.geom1, 0), jnp.maximum(d.contact.geom2, 0)
    bodies = jnp.asarray(m.geom_bodyid)
    b1, b2 = bodies[g1], bodies[g2]
    first = b1 <= b2
    ga, gb = jnp.where(first, g1, g2), jnp.where(first, g2, g1)
    return jnp.lexsort((jnp.arange(m.ncon_max), gb, ga, jnp.maximum(b1, b2), jnp.minimum(b1, b2), ~d.contact.active))
