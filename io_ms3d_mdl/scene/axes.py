"""Axis conversion without ``bpy``: the same rotation ``bpy_extras.io_utils.axis_conversion`` builds.

Blender's convention is forward = +Y, up = +Z. ``from_forward``/``from_up`` name the file's axes that should
become those. The result is always a proper rotation (det +1), so triangle winding never needs flipping.
"""

from __future__ import annotations

import functools

import numpy as np

AXES = ("X", "Y", "Z", "-X", "-Y", "-Z")


def _unit(axis: str) -> np.ndarray:
    v = np.zeros(3)
    v["XYZ".index(axis[-1])] = -1.0 if axis.startswith("-") else 1.0
    return v


def axis_conversion_matrix(from_forward: str = "Y", from_up: str = "Z") -> np.ndarray:
    """3×3 rotation taking file coordinates to Blender coordinates (column vectors: ``M @ v``)."""
    return _conversion(from_forward, from_up).copy()  # a copy: callers may change theirs


@functools.lru_cache(maxsize=64)
def _conversion(from_forward: str, from_up: str) -> np.ndarray:
    """Made once per axis pair (a dozen small numpy calls, a fixed cost of every import)."""
    if from_forward not in AXES or from_up not in AXES:
        raise ValueError(f"axes must be one of {AXES}")
    fwd, up = _unit(from_forward), _unit(from_up)
    if abs(float(fwd @ up)) > 0.5:
        raise ValueError(f"forward {from_forward} and up {from_up} must be different axes")
    right = np.cross(fwd, up)
    source = np.stack([right, fwd, up])  # rows: file axes that become Blender X, Y, Z
    return source.astype(np.float64)


def transform_points(points: np.ndarray, matrix: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Apply ``scale · M`` to (N, 3) points in one matrix product; returns float32."""
    with np.errstate(over="ignore", invalid="ignore"):  # huge values become inf in float32; callers check
        return np.ascontiguousarray((np.asarray(points, dtype=np.float64) @ (matrix.T * scale)), dtype=np.float32)
