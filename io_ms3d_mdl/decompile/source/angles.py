"""Rotations as the Euler angles SMD frames and QC commands hold: radians (x, y, z) with the matrix
``Rz(z)·Ry(y)·Rx(x)`` (Source's ``AngleMatrix`` of a ``RadianEuler``; Blender's 'XYZ' order), for whole arrays."""

from __future__ import annotations

import numpy as np

from ...scene.rotations import quaternion_to_matrix


def matrix_to_euler(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices → (..., 3) angles; at gimbal lock x is 0 and z takes the whole turn."""
    m = np.asarray(m, dtype=np.float64)
    # Each element as its own contiguous copy: numpy's arctan2/hypot on strided views go through internal
    # buffers whose alignment varies with the process's allocations, and their SIMD and scalar paths differ in
    # the last bit, which made the same model's SMDs differ between two decompiles in one process.
    m = {(i, j): np.array(m[..., i, j]) for i in range(3) for j in range(3)}
    sy = np.clip(-m[2, 0], -1.0, 1.0)
    cy = np.hypot(m[0, 0], m[1, 0])
    locked = cy < 1e-9
    x = np.where(locked, 0.0, np.arctan2(m[2, 1], m[2, 2]))
    y = np.arctan2(sy, cy)
    z = np.where(locked, np.arctan2(-m[0, 1], m[1, 1]), np.arctan2(m[1, 0], m[0, 0]))
    return np.stack([x, y, z], axis=-1)


def quaternion_to_euler(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions (w, x, y, z) → (..., 3) angles."""
    q = np.asarray(q, dtype=np.float64)
    shape = q.shape[:-1]
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    q = np.divide(q, norm, out=np.tile([1.0, 0, 0, 0], (*shape, 1)), where=norm > 0)
    return matrix_to_euler(quaternion_to_matrix(q.reshape(-1, 4))).reshape(*shape, 3)
