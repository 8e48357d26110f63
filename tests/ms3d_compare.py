"""Which fields of two read MS3D models differ (for the round-trip tests and their documented differences)."""

from __future__ import annotations

import numpy as np


def _records_differ(a: np.ndarray, b: np.ndarray, prefix: str, atol: float) -> list[str]:
    if len(a) != len(b):
        return [f"{prefix} count"]
    out = []
    for name in a.dtype.names or ():
        x, y = a[name], b[name]
        same = np.allclose(x, y, atol=atol, rtol=0, equal_nan=True) if atol else np.array_equal(x, y)
        if not same:
            out.append(f"{prefix}.{name}")
    return out


def model_differences(a, b, atol: float = 0.0) -> set[str]:
    """Names of the differing fields (``vertices.position``, ``joint.rotation_keys``, ...); ``atol`` compares
    numbers within that tolerance instead of exactly."""
    out = set(_records_differ(a.vertices, b.vertices, "vertices", atol))
    out |= set(_records_differ(a.triangles, b.triangles, "triangles", atol))
    if len(a.groups) != len(b.groups):
        out.add("groups count")
    for g, h in zip(a.groups, b.groups, strict=False):
        for key in ("name", "flags", "material_index", "comment"):
            if getattr(g, key) != getattr(h, key):
                out.add(f"group.{key}")
        if not np.array_equal(g.triangle_indices, h.triangle_indices):
            out.add("group.triangle_indices")
    if len(a.materials) != len(b.materials):
        out.add("materials count")
    for m, n in zip(a.materials, b.materials, strict=False):
        for key, value in vars(m).items():
            other = getattr(n, key)
            if isinstance(value, np.ndarray):
                same = np.allclose(value, other, atol=atol, rtol=0) if atol else np.array_equal(value, other)
            elif isinstance(value, float):
                same = abs(value - other) <= atol
            else:
                same = value == other
            if not same:
                out.add(f"material.{key}")
    if len(a.joints) != len(b.joints):
        out.add("joints count")
    for j, k in zip(a.joints, b.joints, strict=False):
        for key, value in vars(j).items():
            other = getattr(k, key)
            if isinstance(value, np.ndarray) and value.dtype.names:
                if _records_differ(value, other, "", atol):
                    out.add(f"joint.{key}")
            elif isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
                if value is None or other is None or not np.allclose(value, other, atol=atol, rtol=0):
                    out.add(f"joint.{key}")
            elif value != other:
                out.add(f"joint.{key}")
    for key in ("version", "fps", "current_time", "total_frames", "model_comment", "extended_blocks"):
        if getattr(a, key) != getattr(b, key):
            out.add(key)
    ea, eb = a.vertex_extra, b.vertex_extra
    if (ea is None) != (eb is None):
        out.add("vertex_extra")
    elif ea is not None:
        if ea.sub_version != eb.sub_version:
            out.add("vertex_extra.sub_version")
        for key in ("bone_ids", "weights", "extra", "extra2"):
            x, y = getattr(ea, key), getattr(eb, key)
            if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
                out.add(f"vertex_extra.{key}")
    if a.model_extra != b.model_extra:
        out.add("model_extra")
    return out
