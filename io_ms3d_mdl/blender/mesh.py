"""Build a Blender mesh from :class:`MeshData` with bulk ``foreach_set`` calls only.

Order matters (notes blender.md §2.2): topology, then per-corner data as attributes so that ``validate()``
keeps them aligned if it drops anything, then smooth shading and custom normals last.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..scene.types import MeshData

_TEMP_NORMALS = "io_ms3d_mdl_normals"


def build_mesh(data: MeshData) -> bpy.types.Mesh:
    me = bpy.data.meshes.new(data.name)
    nv, nt = len(data.positions), len(data.triangles)
    me.vertices.add(nv)
    me.loops.add(nt * 3)
    me.polygons.add(nt)
    me.vertices.foreach_set("co", np.ascontiguousarray(data.positions, dtype=np.float32).ravel())
    me.loops.foreach_set("vertex_index", np.ascontiguousarray(data.triangles, dtype=np.int32).ravel())
    me.polygons.foreach_set("loop_start", np.arange(0, nt * 3, 3, dtype=np.int32))
    if data.material_indices is not None and nt:
        me.polygons.foreach_set("material_index", np.ascontiguousarray(data.material_indices, dtype=np.int32))
    me.update(calc_edges=True)

    if data.uvs is not None:
        uv = me.attributes.new("UVMap", "FLOAT2", "CORNER")
        uv.data.foreach_set("vector", np.ascontiguousarray(data.uvs, dtype=np.float32).ravel())
    if data.normals is not None:
        tmp = me.attributes.new(_TEMP_NORMALS, "FLOAT_VECTOR", "CORNER")
        tmp.data.foreach_set("vector", np.ascontiguousarray(data.normals, dtype=np.float32).ravel())

    # Converters already removed what validate() would delete; this is the safety net for anything else.
    me.validate(clean_customdata=False)
    _set_sharp_edges(me, data.sharp_edges)
    me.shade_smooth()
    if data.normals is not None:
        attr = me.attributes[_TEMP_NORMALS]
        flat = np.empty(len(me.loops) * 3, dtype=np.float32)
        attr.data.foreach_get("vector", flat)
        me.attributes.remove(attr)
        # A sequence of 3-tuples is the fastest input this API takes (a flat array is rejected).
        me.normals_split_custom_set(tuple(zip(*(iter(flat.tolist()),) * 3, strict=False)))
    me.update()
    return me


def _set_sharp_edges(me: bpy.types.Mesh, pairs: np.ndarray | None) -> None:
    if pairs is None or len(pairs) == 0 or len(me.edges) == 0:
        return
    edges = np.empty(len(me.edges) * 2, dtype=np.int32)
    me.edges.foreach_get("vertices", edges)
    edges = np.sort(edges.reshape(-1, 2).astype(np.int64), axis=1)
    span = int(max(edges.max(), pairs.max())) + 1
    wanted = np.sort(pairs.astype(np.int64), axis=1)
    sharp = np.isin(edges[:, 0] * span + edges[:, 1], wanted[:, 0] * span + wanted[:, 1])
    if sharp.any():
        attr = me.attributes.get("sharp_edge") or me.attributes.new("sharp_edge", "BOOLEAN", "EDGE")
        attr.data.foreach_set("value", sharp)
