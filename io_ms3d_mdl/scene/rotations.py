"""Vectorised rotation maths (numpy, no ``bpy``): Euler XYZ, matrices, quaternions (w, x, y, z) and slerp."""

from __future__ import annotations

import numpy as np


def euler_xyz_to_matrix(angles: np.ndarray) -> np.ndarray:
    """(…, 3) radians → (…, 3, 3) with R = Rz·Ry·Rx (X applied first), the convention every MS3D reader uses."""
    a = np.asarray(angles, dtype=np.float64)
    cx, cy, cz = np.cos(a[..., 0]), np.cos(a[..., 1]), np.cos(a[..., 2])
    sx, sy, sz = np.sin(a[..., 0]), np.sin(a[..., 1]), np.sin(a[..., 2])
    m = np.empty((*a.shape[:-1], 3, 3))
    m[..., 0, 0] = cy * cz
    m[..., 0, 1] = sx * sy * cz - cx * sz
    m[..., 0, 2] = cx * sy * cz + sx * sz
    m[..., 1, 0] = cy * sz
    m[..., 1, 1] = sx * sy * sz + cx * cz
    m[..., 1, 2] = cx * sy * sz - sx * cz
    m[..., 2, 0] = -sy
    m[..., 2, 1] = sx * cy
    m[..., 2, 2] = cx * cy
    return m


def matrix_to_quaternion(m: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotation matrices → (…, 4) unit quaternions (w, x, y, z), numerically stable in every case."""
    m = np.asarray(m, dtype=np.float64)
    t = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    q = np.empty((*m.shape[:-2], 4))
    s0 = np.sqrt(np.maximum(1.0 + t, 1e-300)) * 2
    s1 = np.sqrt(np.maximum(1.0 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2], 1e-300)) * 2
    s2 = np.sqrt(np.maximum(1.0 + m[..., 1, 1] - m[..., 0, 0] - m[..., 2, 2], 1e-300)) * 2
    s3 = np.sqrt(np.maximum(1.0 + m[..., 2, 2] - m[..., 0, 0] - m[..., 1, 1], 1e-300)) * 2
    c0 = t > 0
    c1 = ~c0 & (m[..., 0, 0] > m[..., 1, 1]) & (m[..., 0, 0] > m[..., 2, 2])
    c2 = ~c0 & ~c1 & (m[..., 1, 1] > m[..., 2, 2])
    c3 = ~c0 & ~c1 & ~c2
    d21, d12 = m[..., 2, 1], m[..., 1, 2]
    d02, d20 = m[..., 0, 2], m[..., 2, 0]
    d10, d01 = m[..., 1, 0], m[..., 0, 1]
    q[c0] = np.stack([0.25 * s0, (d21 - d12) / s0, (d02 - d20) / s0, (d10 - d01) / s0], axis=-1)[c0]
    q[c1] = np.stack([(d21 - d12) / s1, 0.25 * s1, (d01 + d10) / s1, (d02 + d20) / s1], axis=-1)[c1]
    q[c2] = np.stack([(d02 - d20) / s2, (d01 + d10) / s2, 0.25 * s2, (d12 + d21) / s2], axis=-1)[c2]
    q[c3] = np.stack([(d10 - d01) / s3, (d02 + d20) / s3, (d12 + d21) / s3, 0.25 * s3], axis=-1)[c3]
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return q


def quaternion_to_matrix(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    m = np.empty((*q.shape[:-1], 3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - w * z)
    m[..., 0, 2] = 2 * (x * z + w * y)
    m[..., 1, 0] = 2 * (x * y + w * z)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - w * x)
    m[..., 2, 0] = 2 * (x * z - w * y)
    m[..., 2, 1] = 2 * (y * z + w * x)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


def conjugate(q: np.ndarray) -> np.ndarray:
    """(…, 4) inverse rotations of unit quaternions."""
    return np.asarray(q, dtype=np.float64) * np.array([1.0, -1.0, -1.0, -1.0])


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(…, 4) Hamilton products ``a ⊗ b`` (the rotation ``b`` then ``a``, as ``R(a)·R(b)``)."""
    return np.einsum("...ij,...j->...i", left_matrix(a), np.asarray(b, dtype=np.float64))


def left_matrix(p: np.ndarray) -> np.ndarray:
    """(…, 4, 4) L with ``L·q = p ⊗ q``."""
    return np.asarray(p, dtype=np.float64)[..., _PRODUCT_INDEX] * _LEFT_SIGNS


def right_matrix(r: np.ndarray) -> np.ndarray:
    """(…, 4, 4) R with ``R·q = q ⊗ r``."""
    return np.asarray(r, dtype=np.float64)[..., _PRODUCT_INDEX] * _RIGHT_SIGNS


# Both product matrices hold each component once per row and column: which one, and with which sign.
_PRODUCT_INDEX = np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]])
_LEFT_SIGNS = np.array([[1, -1, -1, -1], [1, 1, -1, 1], [1, 1, 1, -1], [1, -1, 1, 1]], dtype=np.float64)
_RIGHT_SIGNS = np.array([[1, -1, -1, -1], [1, 1, 1, -1], [1, -1, 1, 1], [1, 1, -1, 1]], dtype=np.float64)


def canonical_sign(q: np.ndarray) -> np.ndarray:
    """(…) ±1: the sign :func:`matrix_to_quaternion` gives each rotation (the component of its branch positive: w
    unless the turn is near 180°). Its branch tests, made on the diagonal :func:`quaternion_to_matrix` would give,
    without building either matrix."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]
    xx, yy, zz = q[..., 1] * q[..., 1], q[..., 2] * q[..., 2], q[..., 3] * q[..., 3]
    m00, m11, m22 = 1 - 2 * (yy + zz), 1 - 2 * (xx + zz), 1 - 2 * (xx + yy)
    branch = np.where(m00 + m11 + m22 > 0, 0, np.where((m00 > m11) & (m00 > m22), 1, np.where(m11 > m22, 2, 3)))
    return np.where(np.take_along_axis(q, branch[..., None], axis=-1)[..., 0] < 0, -1.0, 1.0)


def make_continuous(q: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """Flip signs along a key sequence (…, K, 4) so neighbours have a positive dot product: interpolating
    component-wise then never takes the long way round. With ``starts``, the keys are several clips end to end,
    each made continuous on its own (its first key keeps its sign)."""
    q = np.array(q, dtype=np.float64)
    if q.shape[-2] < 2:
        return q
    dots = np.einsum("...i,...i->...", q[..., 1:, :], q[..., :-1, :])
    flips = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=-1)
    if starts is not None and len(starts) > 1:
        # The flips so far, times (±1, its own inverse) those up to the clip's first key: each clip afresh.
        flips = np.concatenate([np.ones((*flips.shape[:-1], 1)), flips], axis=-1)
        clip = np.searchsorted(starts, np.arange(q.shape[-2]), side="right") - 1
        q *= (flips * flips[..., np.asarray(starts)[clip]])[..., None]
        return q
    q[..., 1:, :] *= flips[..., None]
    return q


def slerp(q0: np.ndarray, q1: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical interpolation of (…, 4) quaternions by (…) fractions, along the shorter arc."""
    q0 = np.asarray(q0, dtype=np.float64)
    q1 = np.asarray(q1, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.einsum("...i,...i->...", q0, q1)[..., None]
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    near = sin < 1e-6
    safe = np.where(near, 1.0, sin)
    a = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    b = np.where(near, t, np.sin(t * theta) / safe)
    out = a * q0 + b * q1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def compose(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """(…, 3, 3) and (…, 3) → (…, 4, 4) affine matrices."""
    rotation = np.asarray(rotation, dtype=np.float64)
    m = np.zeros((*rotation.shape[:-2], 4, 4))
    m[..., :3, :3] = rotation
    m[..., :3, 3] = translation
    m[..., 3, 3] = 1.0
    return m


AFFINE_BLOCK = 4096  # matrices inverted at a time: the temporaries stay small (a fresh MB of them costs page faults)


def affine_inverse(m: np.ndarray) -> np.ndarray:
    """(…, 4, 4) inverses of affine matrices (last row 0, 0, 0, 1) through the 3×3 part's adjugate: a few
    whole-array products a block of matrices, where ``np.linalg.inv`` makes a LAPACK call a matrix (143 against
    15 ms for an action of 59 bones × 2,000 frames). A singular matrix gives inf or NaN, not an error (a writer
    counts those and writes 0)."""
    m = np.asarray(m, dtype=np.float64)
    flat = m.reshape(-1, 4, 4)
    out = np.empty(flat.shape)
    for start in range(0, len(flat), AFFINE_BLOCK):
        _affine_inverse(flat[start : start + AFFINE_BLOCK], out[start : start + AFFINE_BLOCK])
    return out.reshape(m.shape)


def _affine_inverse(m: np.ndarray, out: np.ndarray) -> None:
    (a, b, c, x), (d, e, f, y), (g, h, i, z) = ([m[:, r, k] for k in range(4)] for r in range(3))
    with np.errstate(all="ignore"):
        rows = [
            [e * i - f * h, c * h - b * i, b * f - c * e],
            [f * g - d * i, a * i - c * g, c * d - a * f],
            [d * h - e * g, b * g - a * h, a * e - b * d],
        ]
        scale = 1.0 / (a * rows[0][0] + b * rows[1][0] + c * rows[2][0])
        for r, row in enumerate(rows):
            for k in range(3):
                np.multiply(row[k], scale, out=out[:, r, k])
            out[:, r, 3] = -(out[:, r, 0] * x + out[:, r, 1] * y + out[:, r, 2] * z)
    out[:, 3] = (0.0, 0.0, 0.0, 1.0)


def matrix_to_euler_xyz(m: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotations → (…, 3) radians with R = Rz·Ry·Rx, the inverse of :func:`euler_xyz_to_matrix`
    (y in [-π/2, π/2]; at gimbal lock, z = 0)."""
    m = np.asarray(m, dtype=np.float64)
    sy = np.clip(-m[..., 2, 0], -1.0, 1.0)
    y = np.arcsin(sy)
    locked = np.hypot(m[..., 0, 0], m[..., 1, 0]) < 1e-9
    x = np.where(locked, np.arctan2(sy * m[..., 0, 1], m[..., 1, 1]), np.arctan2(m[..., 2, 1], m[..., 2, 2]))
    z = np.where(locked, 0.0, np.arctan2(m[..., 1, 0], m[..., 0, 0]))
    return np.stack([x, y, z], axis=-1)


def quaternion_to_euler_xyz(q: np.ndarray) -> np.ndarray:
    """(…, 4) unit quaternions (w, x, y, z) → (…, 3) radians with R = Rz·Ry·Rx, through only the five matrix
    entries :func:`matrix_to_euler_xyz` reads (no 3×3 matrices for a long key list)."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    m00 = 1.0 - 2.0 * (y * y + z * z)
    m10 = 2.0 * (x * y + w * z)
    m20 = 2.0 * (x * z - w * y)
    m21 = 2.0 * (y * z + w * x)
    m22 = 1.0 - 2.0 * (x * x + y * y)
    sy = np.clip(-m20, -1.0, 1.0)
    locked = np.hypot(m00, m10) < 1e-9
    out = np.empty((*q.shape[:-1], 3))
    out[..., 1] = np.arcsin(sy)
    out[..., 0] = np.arctan2(m21, m22)
    out[..., 2] = np.arctan2(m10, m00)
    if locked.any():  # gimbal lock: z = 0 and x from the entries that still carry it
        m01 = 2.0 * (x * y - w * z)
        m11 = 1.0 - 2.0 * (x * x + z * z)
        out[locked, 0] = np.arctan2(sy[locked] * m01[locked], m11[locked])
        out[locked, 2] = 0.0
    return out


def rows_times_float32(rows: np.ndarray, m: np.ndarray) -> np.ndarray:
    """:func:`rows_times` cast to float32, for float32 rows: a matrix that only reorders and flips the axes (every
    entry 0 or ±1: the axis conversions of normals) is done in float32, where each value is exactly what the
    float64 product rounds back to (a sign change, then einsum's zero start), without a float64 copy of the rows
    (194,400 corners: 4.7 MB). Any other matrix, or rows with an infinity or NaN, go through :func:`rows_times`."""
    m = np.asarray(m, dtype=np.float64)
    rows = np.asarray(rows)
    signed = m.shape == (3, 3) and ((m != 0).sum(axis=0) == 1).all() and np.isin(m, (-1.0, 0.0, 1.0)).all()
    if rows.dtype != np.float32 or not signed or not np.isfinite(rows).all():
        with np.errstate(over="ignore"):  # (past float32: infinite, as a float32 array would take it)
            return rows_times(rows, m).astype(np.float32)
    out = np.empty(rows.shape, dtype=np.float32)
    for k, j in enumerate(np.argmax(m != 0, axis=0).tolist()):
        np.multiply(rows[..., j], np.float32(m[j, k]), out=out[..., k])
        out[..., k] += np.float32(0.0)
    return out


def rows_times(rows: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``rows @ m`` for many (..., 3) rows and one small matrix, through einsum's own loop instead of BLAS. numpy
    gives ``@`` with a long left operand to OpenBLAS, whose worker threads sleep between calls: waking them took
    57–92 ms on a busy 2-core machine (3 ms warm) and their spinning is charged to our CPU time; einsum does the
    whole product in about 5 ms of one core for 194,400 corners.

    A matrix that only reorders, flips and scales the axes (one non-zero a column: every axis conversion, times a
    scale) takes each output column from one input column, a column at a time (0.8-0.95 ms instead of 2.6-3.3 ms
    for 194,400 corners); the values are einsum's to the bit: the one product, plus einsum's zero start (so -0.0
    comes out +0.0). Rows with an infinity or NaN go through einsum (its 0 · inf is NaN)."""
    rows = np.asarray(rows, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if m.shape == (3, 3) and ((m != 0).sum(axis=0) == 1).all() and np.isfinite(rows).all():
        out = np.empty(rows.shape)
        for k, j in enumerate(np.argmax(m != 0, axis=0).tolist()):
            np.multiply(rows[..., j], m[j, k], out=out[..., k])
            out[..., k] += 0.0
        return out
    return np.einsum("...j,jk->...k", rows, m)
