"""Quaternion and spatial helpers against MuJoCo's own mju_* functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math
from hurtle.physics.forward import dexp_inv

RNG = np.random.default_rng(0)


def _quats(n):
    q = RNG.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_quaternion_ops_match_mujoco():
    qa, qb, v = _quats(8), _quats(8), RNG.standard_normal((8, 3))
    mul, rot, mat, sub, integ, vel = (np.zeros(4), np.zeros(3), np.zeros(9), np.zeros(3), None, np.zeros(3))
    for a, b, x in zip(qa, qb, v):
        mujoco.mju_mulQuat(mul, a, b)
        np.testing.assert_allclose(math.quat_mul(jnp.array(a), jnp.array(b)), mul, atol=1e-14)
        mujoco.mju_rotVecQuat(rot, x, a)
        np.testing.assert_allclose(math.quat_rot(jnp.array(a), jnp.array(x)), rot, atol=1e-14)
        mujoco.mju_quat2Mat(mat, a)
        np.testing.assert_allclose(math.quat_to_mat(jnp.array(a)).ravel(), mat, atol=1e-14)
        mujoco.mju_subQuat(sub, a, b)
        np.testing.assert_allclose(math.sub_quat(jnp.array(a), jnp.array(b)), sub, atol=1e-12)
        mujoco.mju_quat2Vel(vel, a, 1.0)
        np.testing.assert_allclose(math.quat_to_rotvec(jnp.array(a)), vel, atol=1e-12)
        integ = a.copy()
        mujoco.mju_quatIntegrate(integ, x, 0.01)
        np.testing.assert_allclose(math.quat_integrate(jnp.array(a), jnp.array(x), 0.01), integ, atol=1e-14)


def test_quat_integrate_smooth_at_zero_velocity():
    q = jnp.array(_quats(1)[0])
    g = jax.jacfwd(lambda w: math.quat_integrate(q, w, 0.01))(jnp.zeros(3))
    assert np.all(np.isfinite(g)) and np.any(g != 0)


def test_spatial_products():
    v, u = RNG.standard_normal(6), RNG.standard_normal(6)
    wx, vx = (np.asarray(math.skew(jnp.array(x))) for x in (v[:3], v[3:]))
    z = np.zeros((3, 3))
    motion = np.block([[wx, z], [vx, wx]]) @ u
    force = np.block([[wx, vx], [z, wx]]) @ u
    np.testing.assert_allclose(math.cross_motion(jnp.array(v), jnp.array(u)), motion, atol=1e-14)
    np.testing.assert_allclose(math.cross_force(jnp.array(v), jnp.array(u)), force, atol=1e-14)


def test_products_without_stacks_match_their_definitions():
    # the broadcast forms (math.bilinear, skew, mat_mul, axis_angle_to_mat) against numpy and MuJoCo,
    # batched with broadcasting leading axes
    a, b = RNG.standard_normal((4, 1, 3)), RNG.standard_normal((1, 5, 3))
    np.testing.assert_allclose(math.cross(jnp.array(a), jnp.array(b)), np.cross(a, b), atol=1e-14)
    np.testing.assert_allclose(math.skew(jnp.array(a[:, 0])) @ b[0, 0], np.cross(a[:, 0], b[0, 0]), atol=1e-14)
    ma, mb = RNG.standard_normal((2, 6, 3, 3))
    np.testing.assert_allclose(math.mat_mul(jnp.array(ma), jnp.array(mb)), ma @ mb, atol=1e-14)
    i10, w = RNG.standard_normal(10), RNG.standard_normal(3)
    rot = i10[[[0, 3, 4], [3, 1, 5], [4, 5, 2]]]
    np.testing.assert_allclose(math.inert_rot_mul(jnp.array(i10), jnp.array(w)), rot @ w, atol=1e-14)
    axis = RNG.standard_normal(3)
    axis /= np.linalg.norm(axis)
    for angle in (0.0, 0.4, -2.9, 7.0):
        quat, mat = np.zeros(4), np.zeros(9)
        mujoco.mju_axisAngle2Quat(quat, axis, angle)
        mujoco.mju_quat2Mat(mat, quat)
        np.testing.assert_allclose(math.axis_angle_to_mat(jnp.array(axis), jnp.array(angle)).ravel(), mat, atol=1e-14)


def test_inertia_of_a_point_mass():
    # a point mass m at r: momentum of (w, v) about the origin is (r x p, p) with p = m (v + w x r)
    m, r = 2.5, RNG.standard_normal(3)
    rot = m * (np.dot(r, r) * np.eye(3) - np.outer(r, r))
    i10 = jnp.array([rot[0, 0], rot[1, 1], rot[2, 2], rot[0, 1], rot[0, 2], rot[1, 2], *(m * r), m])
    w, v = RNG.standard_normal(3), RNG.standard_normal(3)
    p = m * (v + np.cross(w, r))
    expect = np.concatenate([np.cross(r, p), p])
    np.testing.assert_allclose(math.inert_mul(i10, jnp.array(np.concatenate([w, v]))), expect, atol=1e-12)
    np.testing.assert_allclose(math.inert_to_mat(i10) @ np.concatenate([w, v]), expect, atol=1e-12)


def test_transform_motion_matches_mujoco():
    vec, newpos, oldpos = RNG.standard_normal(6), RNG.standard_normal(3), RNG.standard_normal(3)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, _quats(1)[0])
    res = np.zeros(6)
    mujoco.mju_transformSpatial(res, vec, 0, newpos, oldpos, rot)
    ours = math.transform_motion(jnp.array(vec), jnp.array(newpos), jnp.array(oldpos), jnp.array(rot.reshape(3, 3)))
    np.testing.assert_allclose(ours, res, atol=1e-14)


def test_dexp_inv_is_the_rate_of_the_rotation_vector():
    # d/dt log(q0^-1 q(t)) for q' = q * omega/2, by finite differences of the exact flow
    theta = jnp.array([0.3, -0.2, 0.5])
    omega = jnp.array([1.0, 0.4, -0.7])
    q = math.rotvec_to_quat(theta)
    h = 1e-6
    fwd = math.quat_to_rotvec(math.quat_integrate(q, omega, h))
    bwd = math.quat_to_rotvec(math.quat_integrate(q, omega, -h))
    np.testing.assert_allclose(dexp_inv(theta, omega), (fwd - bwd) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(dexp_inv(jnp.zeros(3), omega), omega)


def test_diagonal_helpers_match_numpy_under_vmap():
    a = RNG.standard_normal((5, 4, 4))
    v = RNG.standard_normal((5, 3))
    np.testing.assert_array_equal(jax.vmap(math.diagonal)(jnp.array(a)), np.diagonal(a, axis1=1, axis2=2))
    np.testing.assert_array_equal(math.diagonal(jnp.array(a)), np.diagonal(a, axis1=1, axis2=2))
    np.testing.assert_array_equal(jax.vmap(math.diag_embed)(jnp.array(v)), np.stack([np.diag(x) for x in v]))


def test_assemble_places_pieces_and_fills_the_rest():
    fill = jnp.full((2,), -1.0)
    pieces = [
        (np.array([4, 1]), jnp.array([[4.0, 4.5], [1.0, 1.5]])),
        (np.array([[2], [0]]), jnp.array([[[2.0, 2.5]], [[0.0, 0.5]]])),
    ]
    out = math.assemble(6, pieces, fill)
    want = np.array([[0, 0.5], [1, 1.5], [2, 2.5], [-1, -1], [4, 4.5], [-1, -1]])
    np.testing.assert_array_equal(out, want)
    # pieces already in row order: a plain concatenation
    in_order = [(np.arange(2), jnp.ones((2, 2))), (np.arange(2, 3), jnp.zeros((1, 2)))]
    np.testing.assert_array_equal(math.assemble(3, in_order, fill), [[1, 1], [1, 1], [0, 0]])
    np.testing.assert_array_equal(math.assemble(2, [], fill), [[-1, -1], [-1, -1]])


def test_symmetric_from_lower():
    low = np.tril(RNG.standard_normal((4, 4)))
    want = low + np.tril(low, -1).T
    np.testing.assert_array_equal(math.symmetric_from_lower(jnp.array(low)), want)
    np.testing.assert_array_equal(
        math.symmetric_from_lower(jnp.array(low)), math.symmetric_from_lower(jnp.array(low)).T
    )


def test_take_slices_runs_and_gathers_the_rest():
    x = jnp.asarray(RNG.standard_normal((3, 6, 2)))
    assert math.take(x, np.arange(3)) is x  # the identity: no operation at all
    for idx in (np.arange(6), np.arange(2, 5), np.array([4, 1, 2]), np.array([3])):
        got = jax.vmap(lambda a, idx=idx: math.take(a, idx))(x)
        np.testing.assert_array_equal(got, np.asarray(x)[:, idx])
    # a run of consecutive indices is a slice: no gather in the program
    hlo = jax.jit(jax.vmap(lambda a: math.take(a, np.arange(2, 5)))).lower(x).as_text()
    assert "gather" not in hlo


def test_stack_select_equals_stack_without_a_concatenation():
    xs = [jnp.asarray(RNG.standard_normal((5, 3))) for _ in range(4)]
    for axis in (-1, 0, 1, 2):
        np.testing.assert_array_equal(math.stack_select(xs, axis), jnp.stack(xs, axis))
    # under vmap (the batch axis first, the components last), with booleans too
    batched = jax.vmap(lambda *a: math.stack_select(list(a)))(*xs)
    np.testing.assert_array_equal(batched, jnp.stack(xs, -1))
    flags = [x > 0 for x in xs]
    np.testing.assert_array_equal(math.stack_select(flags, 1), jnp.stack(flags, 1))
    # XLA compiles selects, not a concatenation along the minor axis
    hlo = jax.jit(jax.vmap(lambda *a: math.stack_select([a[0] * a[1], a[2] - a[3]]))).lower(*xs).compile().as_text()
    assert "concatenate" not in hlo
