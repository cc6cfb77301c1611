"""Tendons: `ten_length`, the dense Jacobian `ten_J` (ntendon x nv) and `ten_velocity` (mj_tendon).

Fixed tendons are linear combinations of joint positions. Spatial tendons are paths through sites, wrapping
around spheres and cylinders (with optional side sites), split by pulleys that divide the length of what
follows. A spatial tendon's path is parsed once into segments (site to site, or site, wrap geom, site); each
segment's length and Jacobian are computed for all segments at once, and whether a segment wraps is decided
branch-free (MuJoCo's mju_wrap: a circle wrap, or the inside wrap's Newton iterations, run to their fixed cap
with the early exits as masks).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.types import Data, Model

WRAP_JOINT, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE, WRAP_CYLINDER = 1, 2, 3, 4, 5
MINVAL = 1e-15


def spatial_segments(m) -> dict[str, np.ndarray]:
    """The static segments of every spatial tendon of an `MjModel` (MuJoCo's walk through the wrap sequence in
    mj_tendon): arrays `tendon`, `site0`, `site1`, `geom` (-1: straight), `wrap` (sphere/cylinder type), `side`
    (-1: none), `divisor` (the pulley divisor in force). Built with the model (`Model.tendon_segments`): side
    sites and pulley divisors are structure."""
    cols = {k: [] for k in ("tendon", "site0", "site1", "geom", "wrap", "side", "divisor")}
    for t in range(len(m.tendon_adr)):
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        if m.wrap_type[adr] == WRAP_JOINT:
            continue
        divisor, j = 1.0, 0
        while j < num - 1:
            t0, t1 = int(m.wrap_type[adr + j]), int(m.wrap_type[adr + j + 1])
            if t0 == WRAP_PULLEY or t1 == WRAP_PULLEY:
                if t0 == WRAP_PULLEY:
                    divisor = float(m.wrap_prm[adr + j])
                j += 1
                continue
            site0, geom, wrap, side = int(m.wrap_objid[adr + j]), -1, 0, -1
            if t1 in (WRAP_SPHERE, WRAP_CYLINDER):
                geom, wrap = int(m.wrap_objid[adr + j + 1]), t1
                side = int(round(float(m.wrap_prm[adr + j + 1])))
                site1 = int(m.wrap_objid[adr + j + 2])
                j += 2
            else:
                site1 = int(m.wrap_objid[adr + j + 1])
                j += 1
            for k, v in zip(cols, (t, site0, site1, geom, wrap, side, divisor)):
                cols[k].append(v)
    return {k: np.array(v, float if k == "divisor" else int) for k, v in cols.items()}


# -- mju_wrap, branch-free and batched over segments --


def _is_intersect(p1, p2, p3, p4):
    """2D segments p1-p2 and p3-p4 cross (is_intersect)."""
    det = (p4[..., 1] - p3[..., 1]) * (p2[..., 0] - p1[..., 0]) - (p4[..., 0] - p3[..., 0]) * (p2[..., 1] - p1[..., 1])
    ok = jnp.abs(det) >= MINVAL
    sdet = jnp.where(ok, det, 1.0)
    a = (
        (p4[..., 0] - p3[..., 0]) * (p1[..., 1] - p3[..., 1]) - (p4[..., 1] - p3[..., 1]) * (p1[..., 0] - p3[..., 0])
    ) / sdet
    b = (
        (p2[..., 0] - p1[..., 0]) * (p1[..., 1] - p3[..., 1]) - (p2[..., 1] - p1[..., 1]) * (p1[..., 0] - p3[..., 0])
    ) / sdet
    return ok & (a >= 0) & (a <= 1) & (b >= 0) & (b <= 1)


def _normalize2(v):
    n = jnp.sqrt(jnp.sum(v * v, -1, keepdims=True))
    return jnp.where(n < MINVAL, jnp.array([1.0, 0.0], v.dtype), v / jnp.maximum(n, MINVAL))


def _wrap_circle(end, side, has_side, radius):
    """(length or -1, the two 2D tangent points (…, 2, 2)) of the circle wrap (wrap_circle)."""
    e0, e1 = end[..., 0, :], end[..., 1, :]
    sq0, sq1, sqrad = jnp.sum(e0 * e0, -1), jnp.sum(e1 * e1, -1), radius * radius
    dif = e1 - e0
    dd = jnp.sum(dif * dif, -1)
    a = jnp.clip(-jnp.sum(dif * e0, -1) / jnp.where(dd < MINVAL, 1.0, dd), 0.0, 1.0)
    near = a[..., None] * dif + e0
    # clear of the circle: no wrap, unless a side site lies behind the segment's path, between its ends as seen from
    # the centre (MuJoCo 4: a side site beyond both ends, though opposite the path, no longer pulls it round)
    between = (e0[..., 0] * side[..., 1] - e0[..., 1] * side[..., 0]) * (
        e1[..., 0] * side[..., 1] - e1[..., 1] * side[..., 0]
    ) < 0
    clear = (jnp.sum(near * near, -1) > sqrad) & (~has_side | (jnp.sum(side * near, -1) >= 0) | ~between)
    fail = (sq0 < sqrad) | (sq1 < sqrad) | (radius < MINVAL) | (dd < MINVAL) | clear
    s0 = jnp.sqrt(jnp.maximum(sq0 - sqrad, 0.0))
    s1 = jnp.sqrt(jnp.maximum(sq1 - sqrad, 0.0))
    q0, q1 = jnp.where(sq0 > 0, sq0, 1.0), jnp.where(sq1 > 0, sq1, 1.0)
    sols, goods = [], []
    for sgn in (1.0, -1.0):
        a0 = jnp.stack(
            [e0[..., 0] * sqrad + sgn * radius * e0[..., 1] * s0, e0[..., 1] * sqrad - sgn * radius * e0[..., 0] * s0],
            -1,
        )
        a1 = jnp.stack(
            [e1[..., 0] * sqrad - sgn * radius * e1[..., 1] * s1, e1[..., 1] * sqrad + sgn * radius * e1[..., 0] * s1],
            -1,
        )
        a0, a1 = a0 / q0[..., None], a1 / q1[..., None]
        with_side = jnp.sum(_normalize2(a0 + a1) * side, -1)
        without = -jnp.sum((a0 - a1) ** 2, -1)
        good = jnp.where(has_side, with_side, without)
        good = jnp.where(_is_intersect(e0, a0, e1, a1), -10000.0, good)
        sols.append((a0, a1))
        goods.append(good)
    first = goods[0] > goods[1]
    p0 = jnp.where(first[..., None], sols[0][0], sols[1][0])
    p1 = jnp.where(first[..., None], sols[0][1], sols[1][1])
    fail = fail | _is_intersect(e0, p0, e1, p1)
    # the arc's length (length_circle): the angle between the points, the long way round as MuJoCo decides
    n0, n1 = _normalize2(p0), _normalize2(p1)
    angle = jnp.arccos(jnp.clip(jnp.sum(n0 * n1, -1), -1.0, 1.0))
    cross = p0[..., 1] * p1[..., 0] - p0[..., 0] * p1[..., 1]
    ind = ~first  # the chosen solution's index (0 or 1)
    angle = jnp.where(((cross > 0) & ind) | ((cross < 0) & ~ind), 2 * jnp.pi - angle, angle)
    return jnp.where(fail, -1.0, radius * angle), jnp.stack([p0, p1], -2)


def _wrap_inside(end, radius):
    """(0 or -1, the 2D point (…, 2, 2), both the same) of the inside wrap (wrap_inside): Newton's method on
    asin(A z) + asin(B z) - 2 asin(z) + G = 0 for 20 iterations at most; its early exits as masks."""
    e0, e1 = end[..., 0, :], end[..., 1, :]
    len0, len1 = jnp.sqrt(jnp.sum(e0 * e0, -1)), jnp.sqrt(jnp.sum(e1 * e1, -1))
    dif = e1 - e0
    dd = jnp.sum(dif * dif, -1)
    a = -jnp.sum(dif * e0, -1) / jnp.where(dd > MINVAL, dd, 1.0)
    crossing = (dd > MINVAL) & (a > 0) & (a < 1) & (jnp.sqrt(jnp.sum((e0 + a[..., None] * dif) ** 2, -1)) <= radius)
    none = (len0 <= radius) | (len1 <= radius) | (radius < MINVAL) | (len0 < MINVAL) | (len1 < MINVAL) | crossing
    default = _normalize2(0.5 * (e0 + e1)) * radius[..., None]
    safe0, safe1 = jnp.maximum(len0, MINVAL), jnp.maximum(len1, MINVAL)
    A, B = radius / safe0, radius / safe1  # noqa: N806
    cos_g = (len0 * len0 + len1 * len1 - dd) / (2 * safe0 * safe1)
    none = none | (cos_g < -1 + MINVAL)
    settled = cos_g > 1 - MINVAL  # wrap at the default point
    g = jnp.arccos(jnp.clip(cos_g, -1.0, 1.0))

    def f_of(z):
        return (
            jnp.arcsin(jnp.clip(A * z, -1, 1))
            + jnp.arcsin(jnp.clip(B * z, -1, 1))
            - 2 * jnp.arcsin(jnp.clip(z, -1, 1))
            + g
        )

    z = jnp.full_like(radius, 1 - 1e-7)
    f = f_of(z)
    settled = settled | (f > 0)
    running = ~settled
    for _ in range(20):
        step = running & (jnp.abs(f) > 1e-6)
        df = (
            A / jnp.maximum(MINVAL, jnp.sqrt(jnp.maximum(1 - z * z * A * A, 0.0)))
            + B / jnp.maximum(MINVAL, jnp.sqrt(jnp.maximum(1 - z * z * B * B, 0.0)))
            - 2 / jnp.maximum(MINVAL, jnp.sqrt(jnp.maximum(1 - z * z, 0.0)))
        )
        bad = step & (df > -MINVAL)
        z1 = z - f / jnp.where(df > -MINVAL, -1.0, df)
        bad = bad | (step & ~bad & (z1 > z))
        z = jnp.where(step & ~bad, z1, z)
        f = jnp.where(step & ~bad, f_of(z), f)
        bad = bad | (step & (f > 1e-6))
        settled = settled | bad
        running = running & ~bad
    settled = settled | (running & (jnp.abs(f) > 1e-6))  # not converged in 20 iterations
    first = e0[..., 0] * e1[..., 1] - e0[..., 1] * e1[..., 0] > 0
    vec = _normalize2(jnp.where(first[..., None], e0, e1))
    zc = jnp.clip(z, -1, 1)
    ang = jnp.arcsin(zc) - jnp.arcsin(jnp.clip(jnp.where(first, A, B) * z, -1, 1))
    c, s = jnp.cos(ang), jnp.sin(ang)
    pnt = radius[..., None] * jnp.stack([c * vec[..., 0] - s * vec[..., 1], s * vec[..., 0] + c * vec[..., 1]], -1)
    pnt = jnp.where(settled[..., None], default, pnt)
    return jnp.where(none, -1.0, 0.0), jnp.stack([pnt, pnt], -2)


def wrap(x0, x1, xpos, xmat, radius, cylinder: np.ndarray, side, has_side: np.ndarray):
    """mju_wrap for segments (…): the wrap length (-1: no wrap) and the two 3D tangent points (…, 2, 3)."""
    p0, p1 = math.matvec_t(xmat, x0 - xpos), math.matvec_t(xmat, x1 - xpos)
    close = (math.safe_norm(p0) < MINVAL) | (math.safe_norm(p1) < MINVAL)
    # the 2D frame: a sphere's plane through both points (or any plane if they are parallel), a cylinder's xy
    a0 = math.normalize(p0)
    normal = math.cross(p0, p1)
    nrm = math.safe_norm(normal)
    ax = jnp.abs(a0)
    big = jnp.where((ax[..., 1] > ax[..., 0]) & (ax[..., 1] > ax[..., 2]), 1, 0)  # MuJoCo's pick of the largest
    big = jnp.where((ax[..., 2] > ax[..., 0]) & (ax[..., 2] > ax[..., 1]), 2, big)
    alt = jnp.where(jnp.arange(3) == big[..., None], 0.0, 1.0).astype(p0.dtype)
    normal = jnp.where(
        (nrm < MINVAL)[..., None], math.normalize(math.cross(a0, alt)), normal / jnp.maximum(nrm, MINVAL)[..., None]
    )
    a1 = math.normalize(math.cross(normal, a0))
    cyl = jnp.asarray(cylinder)[..., None]
    a0 = jnp.where(cyl, jnp.array([1.0, 0.0, 0.0], p0.dtype), a0)
    a1 = jnp.where(cyl, jnp.array([0.0, 1.0, 0.0], p0.dtype), a1)
    end = jnp.stack(
        [jnp.stack([math.dot(p0, a0), math.dot(p0, a1)], -1), jnp.stack([math.dot(p1, a0), math.dot(p1, a1)], -1)], -2
    )
    s = math.matvec_t(xmat, side - xpos)
    sd = _normalize2(jnp.stack([math.dot(s, a0), math.dot(s, a1)], -1)) * radius[..., None]
    inside = jnp.asarray(has_side) & (math.safe_norm(s) < radius)
    len_c, pnt_c = _wrap_circle(end, sd, jnp.asarray(has_side), radius)
    len_i, pnt_i = _wrap_inside(end, radius)
    wlen = jnp.where(inside, len_i, len_c)
    pnt = jnp.where(inside[..., None, None], pnt_i, pnt_c)
    res = pnt[..., 0:1] * a0[..., None, :] + pnt[..., 1:2] * a1[..., None, :]  # (…, 2, 3)
    # a cylinder: heights along z in proportion to the path's length
    l0 = jnp.sqrt(jnp.sum((p0[..., :2] - res[..., 0, :2]) ** 2, -1))
    l1 = jnp.sqrt(jnp.sum((p1[..., :2] - res[..., 1, :2]) ** 2, -1))
    total = jnp.where(l0 + wlen + l1 > 0, l0 + wlen + l1, 1.0)
    z0 = p0[..., 2] + (p1[..., 2] - p0[..., 2]) * l0 / total
    z1 = p0[..., 2] + (p1[..., 2] - p0[..., 2]) * (l0 + wlen) / total
    res_cyl = jnp.stack([res[..., 0, :].at[..., 2].set(z0), res[..., 1, :].at[..., 2].set(z1)], -2)
    res = jnp.where(cyl[..., None], res_cyl, res)
    wlen = jnp.where(jnp.asarray(cylinder) & (wlen >= 0), jnp.sqrt(wlen * wlen + (z1 - z0) ** 2), wlen)
    points = math.matvec(xmat[..., None, :, :], res) + xpos[..., None, :]
    return jnp.where(close, -1.0, wlen), points


def _unit(v):
    """mju_normalize3: (1, 0, 0) for a vector too short to normalise."""
    n = math.safe_norm(v, keepdims=True)
    return jnp.where(n < MINVAL, jnp.array([1.0, 0.0, 0.0], v.dtype), v / jnp.maximum(n, MINVAL))


def _spatial(m: Model, d: Data, seg: dict) -> tuple[jax.Array, jax.Array]:
    """Lengths (ntendon,) and Jacobians (ntendon, nv) of the spatial tendons' segments, summed per tendon."""
    from hurtle.physics.constraint import jac_point

    dt = d.qpos.dtype
    x0, x1 = d.site_xpos[seg["site0"]], d.site_xpos[seg["site1"]]
    b0, b1 = m.site_bodyid[seg["site0"]], m.site_bodyid[seg["site1"]]
    div = jnp.asarray(seg["divisor"], dt)
    length = math.safe_norm(x1 - x0)
    # straight: one piece between the sites, where they are on different bodies
    jac = jnp.zeros((len(div), m.nv), dt)
    moving = b0 != b1
    if moving.any():
        jp0, _ = jac_point(m, d, b0, x0)
        jp1, _ = jac_point(m, d, b1, x1)
        jac = jnp.where(moving[:, None], math.einsum("kc,kcv->kv", _unit(x1 - x0), jp1 - jp0), 0.0)
    wrapped = seg["geom"] >= 0
    if wrapped.any():
        w = np.nonzero(wrapped)[0]
        g, side = seg["geom"][w], seg["side"][w]
        has_side = side >= 0
        wlen, pts = wrap(
            x0[w],
            x1[w],
            d.geom_xpos[g],
            d.geom_xmat[g],
            m.geom_size[g, 0],
            seg["wrap"][w] == WRAP_CYLINDER,
            d.site_xpos[np.where(has_side, side, 0)],
            has_side,
        )
        t0, t1 = pts[:, 0], pts[:, 1]
        gb = m.geom_bodyid[g]
        on = wlen >= 0
        around = math.safe_norm(t0 - x0[w]) + wlen + math.safe_norm(x1[w] - t1)
        length = length.at[w].set(jnp.where(on, around, length[w]))
        pieces = jnp.zeros((len(w), m.nv), dt)
        for a, ba, b, bb in ((x0[w], b0[w], t0, gb), (t1, gb, x1[w], b1[w])):
            k = ba != bb
            if k.any():
                ja, _ = jac_point(m, d, ba, a)
                jb, _ = jac_point(m, d, bb, b)
                piece = math.einsum("kc,kcv->kv", _unit(b - a), jb - ja)
                pieces = pieces + jnp.where(k[:, None], piece, 0.0)
        jac = jac.at[w].set(jnp.where(on[:, None], pieces, jac[w]))
    owner = (np.arange(m.ntendon)[:, None] == seg["tendon"][None]).astype(np.float64)  # (ntendon, nseg)
    return math.const_matmul(owner, length / div), math.const_matmul(owner, jac / div[:, None])


@tracing.inline_numpy
def tendon(m: Model, d: Data) -> Data:
    """Lengths and Jacobians of fixed and spatial tendons (mj_tendon)."""
    with jax.named_scope("tendon"):
        if m.ntendon == 0:
            return d
        dt = d.qpos.dtype
        fixed = np.nonzero(m.wrap_type[m.tendon_adr] == WRAP_JOINT)[0]
        length = jnp.zeros(m.ntendon, dt)
        ten_j = jnp.zeros((m.ntendon, m.nv), dt)
        if fixed.size:
            # wrap entry w belongs to tendon ten_of[w] and names joint wrap_objid[w]
            ten_of = np.repeat(fixed, m.tendon_num[fixed])
            wraps = np.concatenate([np.arange(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]) for t in fixed])
            jnt = m.wrap_objid[wraps]
            coef = m.wrap_prm[wraps]
            length = length.at[ten_of].add(coef * d.qpos[m.jnt_qposadr[jnt]])
            ten_j = ten_j.at[ten_of, m.jnt_dofadr[jnt]].add(coef)
        if fixed.size < m.ntendon:
            spatial_len, spatial_j = _spatial(m, d, m.tendon_segments)
            length, ten_j = length + spatial_len, ten_j + spatial_j
        return d.replace(ten_length=length, ten_J=ten_j)


def tendon_velocity(m: Model, d: Data) -> Data:
    if m.ntendon == 0:
        return d
    return d.replace(ten_velocity=math.matmul(d.ten_J, d.qvel))
