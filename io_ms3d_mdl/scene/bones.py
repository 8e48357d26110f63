"""Bone frames for Blender from any skeleton's world matrices (shared by the MilkShape and Source converters).

A Blender bone points along its +Y axis. A joint's own frame ``R_j`` is kept for the deformation; each bone gets
``Q_j = R_j·X_j``, where ``X_j`` only chooses where +Y points, so pose channels written as ``X⁻¹·local·X`` deform
exactly as the source format does, whichever way the bones are drawn.
"""

from __future__ import annotations

import numpy as np


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
    # Childless bones (and those whose children sit on their head) continue their parent's direction at half its
    # length, or keep their own axis choice under a root.
    lone = np.flatnonzero(~usable)
    above = parent[lone]
    follows = above >= 0
    follows[follows] = usable[above[follows]]
    directions[lone[follows]] = directions[above[follows]]
    lengths[lone[follows]] = np.maximum(lengths[above[follows]] * 0.5, 1e-4)
    directions[lone[~follows]] = axis_frames[lone[~follows], :, 1]
    y = directions
    z = _across(axis_frames[:, :, 2], y)
    flat = np.linalg.norm(z, axis=1) < 1e-6  # the joint's Z lies along the bone: roll by its X instead
    z[flat] = _across(axis_frames[flat, :, 0], y[flat])
    z /= np.linalg.norm(z, axis=1)[:, None]
    frames = np.stack([np.cross(y, z), y, z], axis=2)
    return frames, lengths


def _across(v: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row of ``v`` without its component along the unit row of ``y``."""
    return v - np.einsum("ij,ij->i", v, y)[:, None] * y
