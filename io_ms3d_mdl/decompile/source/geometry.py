"""Reference and physics SMD geometry from the scene the import builds (``scene.source.convert`` with Source units
and axes): the same triangles, positions, normals, UVs and weights the importer shows, so what we write and what
we import can never disagree.

The transforms ``studiomdl`` applied, undone here:
- winding: the .vtx lists triangles clockwise; the scene (like an SMD) has them counter-clockwise;
- V: the engine's v runs down the texture, an SMD's up (the scene's UVs already are flipped);
- static props (``$staticprop``): studiomdl collapses the bones into one and turns the model 90° about Z; the
  vertices (and the illumination position, attachments) are turned back, ``x' = y, y' = -x``.
"""

from __future__ import annotations

import numpy as np

from ...formats.smd import SmdTriangles
from ...scene.types import ObjectData

STATIC_TURN = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # x' = y, y' = -x


def object_triangles(obj: ObjectData, material_of_slot: list[str], turn: np.ndarray | None) -> SmdTriangles:
    """One scene object's triangles as SMD corners; ``material_of_slot``: the material name of each mesh slot."""
    mesh = obj.mesh
    tris = np.asarray(mesh.triangles, dtype=np.int64)
    t = len(tris)
    positions = np.asarray(mesh.positions, dtype=np.float64)[tris]
    by_vertex = True  # every field of a corner is its vertex's (then each vertex's SMD line is formatted once)
    if mesh.vertex_normals is not None:
        normals = np.asarray(mesh.vertex_normals, dtype=np.float64)[tris]
    elif mesh.normals is not None:
        normals = np.asarray(mesh.normals, dtype=np.float64).reshape(t, 3, 3)
        by_vertex = _per_vertex(normals, tris)
    else:  # vertices stored without usable normals (Bloodlines' quantised ones): each face's own
        normals = face_normals(positions)
        by_vertex = False
    if turn is not None:
        positions = positions @ turn.T
        normals = normals @ turn.T
    uvs = np.asarray(mesh.uvs, dtype=np.float64).reshape(t, 3, 2) if mesh.uvs is not None else np.zeros((t, 3, 2))
    by_vertex = by_vertex and _per_vertex(uvs, tris)
    if obj.skin is not None:
        bones = np.asarray(obj.skin.bone_indices)[tris]
        weights = np.asarray(obj.skin.weights)[tris]
    else:
        bones = np.zeros((t, 3, 1), np.int64)
        weights = np.ones((t, 3, 1), np.float32)
    slots = np.asarray(mesh.material_indices, dtype=np.int64) if mesh.material_indices is not None else np.zeros(t)
    names = list(material_of_slot) or ["material"]
    slots = np.clip(slots, 0, len(names) - 1)
    return SmdTriangles(names, slots, positions, normals, uvs, bones, weights, tris if by_vertex else None)


def _per_vertex(values: np.ndarray, tris: np.ndarray) -> bool:
    """Whether per-corner ``values`` (T, 3, D) are the same at every corner of a vertex (exactly, bit for bit)."""
    flat = values.reshape(len(tris) * 3, -1)
    ids = tris.ravel()
    one = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=np.int64)
    one[ids] = np.arange(len(ids))  # a corner of each vertex
    return bool((flat[one[ids]].view(np.uint64) == flat.view(np.uint64)).all())


def merge(parts: list[SmdTriangles]) -> SmdTriangles:
    """Several objects' triangles in one SMD (a physics model's solids), materials merged by name."""
    names: list[str] = []
    index = {}
    slots = []
    width = max(p.bones.shape[2] for p in parts)
    for part in parts:
        local = np.array([index.setdefault(n, len(index)) for n in part.materials], dtype=np.int64)
        slots.append(local[part.material_index])
    names = list(index)

    def padded(a: np.ndarray, fill) -> np.ndarray:
        out = np.full((*a.shape[:2], width), fill, dtype=a.dtype)
        out[..., : a.shape[2]] = a
        return out

    return SmdTriangles(
        names,
        np.concatenate(slots),
        np.concatenate([p.positions for p in parts]),
        np.concatenate([p.normals for p in parts]),
        np.concatenate([p.uvs for p in parts]),
        np.concatenate([padded(np.asarray(p.bones), -1) for p in parts]),
        np.concatenate([padded(np.asarray(p.weights, dtype=np.float32), 0) for p in parts]),
    )


def face_normals(positions: np.ndarray) -> np.ndarray:
    """(T, 3, 3) corners → each corner given its face's unit normal (collision hulls have no normals of their own)."""
    n = np.cross(positions[:, 1] - positions[:, 0], positions[:, 2] - positions[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, length, out=np.zeros_like(n), where=length > 0)
    return np.repeat(n[:, None, :], 3, axis=1)
