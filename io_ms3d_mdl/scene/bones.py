"""Bone frames for Blender from any skeleton's world matrices (shared by the MilkShape and Source converters).

A Blender bone points along its +Y axis. A joint's own frame ``R_j`` is kept for the deformation; each bone gets
``Q_j = R_j·X_j``, where ``X_j`` only chooses where +Y points, so pose channels written as ``X⁻¹·local·X`` deform
exactly as the source format does, whichever way the bones are drawn.
"""

from __future__ import annotations

import numpy as np


def unique_names(names: list[str], fallback: str = "joint") -> list[str]:
    """Blender needs unique bone names; repeats get Blender's own ``.001`` style suffix."""
    taken: set[str] = set()
    out = []
    for i, name in enumerate(names):
        base = name or f"{fallback}{i}"
        candidate, n = base, 0
        while candidate in taken:
            n += 1
            candidate = f"{base}.{n:03d}"
        taken.add(candidate)
        out.append(candidate)
    return out


def bone_frames(
    rotation: np.ndarray,
    heads: np.ndarray,
    parent: np.ndarray,
    axis_to_bone: np.ndarray,
    tails: str,
    default_length: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, lengths, X)`` for joints with world rotations ``rotation`` (J, 3, 3) and ``heads`` (J, 3).

    ``tails == "CHILD"`` points bones at their children; anything else uses ``axis_to_bone`` (bone axes as columns
    in joint space) for every bone.
    """
    frames = rotation @ axis_to_bone
    lengths = np.full(len(parent), default_length)
    if tails == "CHILD":
        frames, lengths = _point_at_children(parent, heads, frames, default_length)
    x = np.einsum("nji,njk->nik", rotation, frames)  # X_j = R_jᵀ·Q_j
    return frames, lengths, x


def _point_at_children(
    parent: np.ndarray, heads: np.ndarray, axis_frames: np.ndarray, default_length: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bone +Y toward the average of the children's heads (leaves continue their parent's direction), rolled
    so bone +Z stays as close as possible to the joint-axis choice."""
    count = len(parent)
    directions = np.zeros((count, 3))
    lengths = np.full(count, default_length)
    child_sum = np.zeros((count, 3))
    child_count = np.zeros(count)
    roots = parent < 0
    np.add.at(child_sum, parent[~roots], heads[~roots])
    np.add.at(child_count, parent[~roots], 1)
    has_children = child_count > 0
    offset = child_sum[has_children] / child_count[has_children, None] - heads[has_children]
    distance = np.linalg.norm(offset, axis=1)
    usable = np.zeros(count, dtype=bool)
    usable[np.nonzero(has_children)[0][distance > 1e-6]] = True
    directions[usable] = offset[distance > 1e-6] / distance[distance > 1e-6, None]
    lengths[usable] = distance[distance > 1e-6]
    frames = axis_frames.copy()
    for j in range(count):
        if not usable[j]:
            p = parent[j]
            directions[j] = directions[p] if p >= 0 and usable[p] else axis_frames[j][:, 1]
            if p >= 0 and usable[p]:
                lengths[j] = max(lengths[p] * 0.5, 1e-4)
        y = directions[j]
        z = axis_frames[j][:, 2] - (axis_frames[j][:, 2] @ y) * y
        if np.linalg.norm(z) < 1e-6:
            z = axis_frames[j][:, 0] - (axis_frames[j][:, 0] @ y) * y
        z /= np.linalg.norm(z)
        frames[j] = np.stack([np.cross(y, z), y, z], axis=1)
    return frames, lengths
