"""A model past MilkShape's limits written as several files, each a whole MilkShape model within every limit. No
``bpy``.

The export builds its model wide first (:class:`WideModel`: indices the file keeps in 16 and 8 bits held as
int64), then either narrows it to one file or, when the user asked for a split, cuts it into parts:

- groups go into parts in their order, whole, a new part starting where the next group would pass a limit
  (vertices, triangles, 255 groups, 128 materials);
- a group too big for a part of its own is cut along triangle boundaries into pieces that fill a part each (the
  last piece shares its part with the groups after it); a cut group keeps its name in every part;
- a part holds the vertices its triangles use (a vertex two parts use is written in both), the materials its
  groups use, and the whole skeleton with every key: joints cannot be split (bone ids index them).

Parts are written as ``NAME.ms3d``, ``NAME_2.ms3d``, ``NAME_3.ms3d``… (:func:`part_path`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from ...formats.ms3d.model import Ms3dGroup, Ms3dModel, Ms3dVertexExtra
from .limits import MAX_GROUPS, MAX_MATERIALS, MAX_TRIANGLES, MAX_VERTICES


@dataclass
class WideModel:
    """Every vertex, triangle, group and material of the export, before MilkShape's limits: ``model``'s triangle
    records leave ``indices`` and ``group_index`` unset, its groups' ``triangle_indices`` are int64 rows into its
    triangles, and ``indices`` holds each triangle's three rows into its vertices."""

    model: Ms3dModel
    indices: np.ndarray  # (T, 3) int64


Piece = tuple[int, np.ndarray]  # (group index in the wide model, int64 rows into its triangles)


def within_limits(wide: WideModel) -> bool:
    model = wide.model
    return (
        len(model.vertices) <= MAX_VERTICES
        and len(model.triangles) <= MAX_TRIANGLES
        and len(model.groups) <= MAX_GROUPS
        and len(model.materials) <= MAX_MATERIALS
    )


def narrow(wide: WideModel) -> Ms3dModel:
    """The whole model in the file's own fields (the caller has checked the limits): vertices, triangles and
    groups in the order the export built them."""
    model = wide.model
    triangles = model.triangles
    triangles["indices"] = wide.indices
    groups = []
    for gi, group in enumerate(model.groups):
        rows = group.triangle_indices.astype(np.uint16)
        triangles["group_index"][rows] = gi
        groups.append(dataclasses.replace(group, triangle_indices=rows))
    model.vertices["ref_count"] = _ref_counts(wide.indices, len(model.vertices))
    return dataclasses.replace(model, groups=groups)


def split_model(wide: WideModel) -> list[Ms3dModel]:
    """One model when the whole fits, else one model per part of :func:`plan_parts`."""
    if within_limits(wide):
        return [narrow(wide)]
    return [_part(wide, pieces) for pieces in plan_parts(wide)]


def plan_parts(wide: WideModel) -> list[list[Piece]]:
    """The groups (or pieces of a group) each part holds, in the model's order. A group's vertex count is the
    number of vertices its triangles use; two groups sharing vertices count them twice (a part may come out
    smaller than it could be, never past a limit)."""
    model = wide.model
    parts: list[list[Piece]] = []
    current: list[Piece] = []
    vertices = triangles = 0
    materials: set[int] = set()
    for gi, group in enumerate(model.groups):
        material = group.material_index if group.material_index >= 0 else None
        for rows, used in _pieces(np.asarray(group.triangle_indices, dtype=np.int64), wide.indices):
            new_material = material is not None and material not in materials
            full = (
                vertices + used > MAX_VERTICES
                or triangles + len(rows) > MAX_TRIANGLES
                or len(current) >= MAX_GROUPS
                or len(materials) + new_material > MAX_MATERIALS
            )
            if current and full:
                parts.append(current)
                current, vertices, triangles, materials = [], 0, 0, set()
            current.append((gi, rows))
            vertices += used
            triangles += len(rows)
            if material is not None:
                materials.add(material)
    if current:
        parts.append(current)
    return parts


def _pieces(rows: np.ndarray, indices: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """A group's triangles as pieces that each fit an empty part, with the vertex count of each: the group whole
    when it fits. Each piece takes the longest run of the triangles left whose distinct vertices stay within the
    limit (a run of at most MAX_TRIANGLES, its first use of each vertex counted along it)."""
    out = []
    start = 0
    while start < len(rows):
        window = rows[start : start + MAX_TRIANGLES]
        corners = indices[window].ravel()
        _, first = np.unique(corners, return_index=True)
        new = np.zeros(len(corners), dtype=np.int64)
        new[first] = 1
        used = np.cumsum(new.reshape(-1, 3).sum(axis=1))  # distinct vertices of the first k + 1 triangles
        take = int(np.searchsorted(used, MAX_VERTICES, side="right"))  # ≥ 1: a triangle has 3 vertices at most
        out.append((window[:take], int(used[take - 1])))
        start += take
    return out


def _part(wide: WideModel, pieces: list[Piece]) -> Ms3dModel:
    """One part as a complete model: its triangles in the wide model's order, the vertices they use (renumbered,
    in the wide model's order), the materials its groups use, and every joint."""
    model = wide.model
    rows = np.sort(np.concatenate([r for _, r in pieces]))
    used, local = np.unique(wide.indices[rows], return_inverse=True)
    local = local.reshape(-1, 3)
    triangles = model.triangles[rows]  # (a copy: fancy indexing)
    triangles["indices"] = local
    vertices = model.vertices[used]
    vertices["ref_count"] = _ref_counts(local, len(used))
    material_rows = sorted({model.groups[g].material_index for g, _ in pieces} - {-1})
    material_of = {m: i for i, m in enumerate(material_rows)}
    groups = []
    for gi, (g, piece) in enumerate(pieces):
        group = model.groups[g]
        at = np.searchsorted(rows, piece).astype(np.uint16)
        triangles["group_index"][at] = gi
        material = material_of.get(group.material_index, -1)
        groups.append(Ms3dGroup(group.name, group.flags, at, material, group.comment))
    return dataclasses.replace(
        model,
        vertices=vertices,
        triangles=triangles,
        groups=groups,
        materials=[model.materials[m] for m in material_rows],
        vertex_extra=_extra_rows(model.vertex_extra, used),
    )


def _extra_rows(extra: Ms3dVertexExtra | None, used: np.ndarray) -> Ms3dVertexExtra | None:
    if extra is None:
        return None
    return Ms3dVertexExtra(
        extra.sub_version,
        extra.bone_ids[used],
        extra.weights[used],
        extra.extra[used] if extra.extra is not None else None,
        extra.extra2[used] if extra.extra2 is not None else None,
    )


def _ref_counts(indices: np.ndarray, vertex_count: int) -> np.ndarray:
    """How many triangle corners use each vertex, capped at the field's 255."""
    counts = np.bincount(np.asarray(indices, dtype=np.int64).ravel(), minlength=vertex_count)
    return np.minimum(counts, 255).astype(np.uint8)


def part_path(path: str | os.PathLike[str], number: int) -> str:
    """Where part ``number`` (1-based) goes: the chosen file itself for the first, ``NAME_2.ms3d`` and on after it."""
    path = os.fspath(path)
    if number == 1:
        return path
    stem, suffix = os.path.splitext(path)
    return f"{stem}_{number}{suffix}"
