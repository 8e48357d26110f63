"""A GoldSrc body-part option as Blender now holds it (``decompile.source.edits.SourceEdits``), as the reference SMD
of an export: the decompiler's own triangles wherever Blender gives the file's values back.

GoldSrc stores texels, one bone per vertex, and positions rounded in bone space; Blender shows texels as
``s / width`` (``1 - t / height``). So every corner's UV is taken back to its texel and written as the decompiler
writes a texel (``geometry.texel_to_uv``), a vertex is given its heaviest bone, and a position or normal within
float32 rounding of the file's is the file's: an unedited model writes the decompiler's bytes.
"""

from __future__ import annotations

import numpy as np

from ...formats.smd import SmdTriangles
from ...scene.types import ObjectData
from ..source.edits import NORMAL_TOLERANCE, POSITION_TOLERANCE
from ..source.geometry import object_triangles
from .geometry import FALLBACK_SIZE, texel_to_uv

TEXEL_SLACK = 1e-3  # of a texel: float32 UVs of s / width may fall a hair below s


def edited_triangles(
    obj: ObjectData, names: list[str], sizes: dict[str, tuple[int, int]], original: SmdTriangles | None
) -> SmdTriangles:
    tris = object_triangles(obj, names, None)
    t = len(tris.positions)
    size = np.array([sizes.get(n, (FALLBACK_SIZE, FALLBACK_SIZE)) for n in tris.materials] or [(1, 1)], np.float64)
    wh = size[np.clip(tris.material_index, 0, len(size) - 1)][:, None, :]  # (T, 1, 2)
    s = np.floor(tris.uvs[..., 0] * wh[..., 0] + TEXEL_SLACK)
    tt = np.floor((1.0 - tris.uvs[..., 1]) * wh[..., 1] + TEXEL_SLACK)
    uvs = np.stack([texel_to_uv(s, wh[..., 0]), texel_to_uv(wh[..., 1] - 1 - tt, wh[..., 1])], axis=-1)
    heaviest = np.argmax(np.asarray(tris.weights), axis=2)[..., None]
    bones = np.take_along_axis(np.asarray(tris.bones), heaviest, axis=2)
    bones = np.where(bones >= 0, bones, 0)
    positions, normals = tris.positions, tris.normals
    if original is not None and len(original.positions) == t and _names(original) == _names(tris):
        op = np.asarray(original.positions)
        same = np.abs(positions - op) <= POSITION_TOLERANCE * np.maximum(1.0, np.abs(op))
        positions = np.where(same, op, positions)
        close = (np.abs(normals - original.normals) <= NORMAL_TOLERANCE).all(axis=2, keepdims=True)
        normals = np.where(close, original.normals, normals)
    return SmdTriangles(tris.materials, tris.material_index, positions, normals, uvs, bones, np.ones((t, 3, 1)))


def _names(tris: SmdTriangles) -> list[str]:
    return np.asarray(tris.materials, dtype=object)[np.asarray(tris.material_index)].tolist()
