"""Corrupt files can hold NaN or infinity in any float; Blender accepts them and then draws nothing sensible
(bounding boxes, normals and F-curves all break). Readers repair the fields they know (MilkShape does, with
precise warnings); this pass over the finished scene is the guard that no NaN ever reaches a builder."""

from __future__ import annotations

import numpy as np

from .types import SceneData

IDENTITY_QUATERNION = np.array([1.0, 0.0, 0.0, 0.0])


def _zero_non_finite(array: np.ndarray | None) -> int:
    if array is None or array.dtype.kind != "f":
        return 0
    bad = ~np.isfinite(array)
    count = int(bad.sum())
    if count:
        array[bad] = 0.0
    return count


def _quaternions(array: np.ndarray) -> int:
    """Replaced whole: a quaternion with one zeroed element is no longer the rotation the file meant either."""
    bad = ~np.isfinite(array).all(axis=1)
    count = int(bad.sum())
    if count:
        array[bad] = IDENTITY_QUATERNION
    return count


def replace_non_finite(scene: SceneData) -> None:
    count = 0
    for obj in scene.objects:
        mesh = obj.mesh
        for array in (mesh.positions, mesh.uvs, mesh.normals, *(p for _, p in mesh.shape_keys)):
            count += _zero_non_finite(array)
        if obj.skin is not None:
            count += _zero_non_finite(obj.skin.weights)
    for empty in scene.empties:
        if not np.isfinite(empty.matrix).all():
            empty.matrix = np.eye(4)
            count += 1
    if scene.skeleton is not None:
        for bone in scene.skeleton.bones:
            if not np.isfinite(bone.matrix).all():
                bone.matrix = np.eye(4)
                count += 1
            if not np.isfinite(bone.length):
                bone.length = 1.0
                count += 1
    for action in scene.actions:
        for ch in action.channels:
            count += _zero_non_finite(ch.rotation_frames) + _zero_non_finite(ch.location_frames)
            count += _quaternions(ch.rotations) + _zero_non_finite(ch.locations)
    if count:
        scene.warnings.add(
            f"{count} values in the file were not finite numbers (NaN or infinity); replaced by 0 "
            "(rotations and matrices by the identity)"
        )
