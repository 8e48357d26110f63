"""Read a ``.vtx`` (OptimizedModel version 7, packed; Bloodlines' 107): the triangle lists per body part, model,
LOD, mesh.

Later v49 games grew the strip-group and strip headers from 25/27 to 33/35 bytes, and some v49 files do not
(notes §1.12), so the size is found from the layout: the file is walked with each candidate and the one whose
every offset, count and index checks out is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...access import read_file
from ...errors import FormatError
from ..binary import Cursor
from . import structs as S
from . import structs2531 as B
from .model import VtxFile, VtxLod, VtxMesh, VtxStripGroup


def read_vtx(path: str | os.PathLike[str], lod: int | None = None) -> VtxFile:
    return read_vtx_bytes(read_file(path), os.fspath(path), lod)


def read_vtx_bytes(data: bytes, path: str | None = None, lod: int | None = None) -> VtxFile:
    """``lod``: read only that level of detail of each model (its last when it has fewer), the others left None;
    None reads them all. An import builds one level, and the others (often five more) cost most of the reading."""
    cur = Cursor(data, path)
    if cur.size < S.VTX_HEADER.itemsize:
        raise cur.error(f"not a Source mesh file: {cur.size} bytes is too short for a header", 0)
    (header,) = cur.array_at(S.VTX_HEADER, 0, 1, "FileHeader_t")
    if int(header["version"]) == B.VTX_VERSION:  # Bloodlines: 16-bit counts, 20-byte strip groups, 16-byte strips
        layout = _Layout(B.VTX_MESH, B.VTX_STRIPGROUP, B.VTX_STRIP, _vertex_dtype_107)
        parts = _walk(cur, header, layout, lod)
        return VtxFile(path, int(header["checksum"]), int(header["numlods"]), B.VTX_STRIPGROUP.itemsize, parts)
    if int(header["version"]) != S.VTX_VERSION:
        raise cur.error(f"unsupported mesh file (.vtx) version {int(header['version'])} (7 and 107 are supported)", 0)
    errors = []
    for size in _sizes_by_layout(cur, header):
        try:
            parts = _walk(
                cur, header, _Layout(S.VTX_MESH, S.VTX_STRIPGROUP[size], S.VTX_STRIP[size], _vertex_dtype_7), lod
            )
        except FormatError as exc:
            errors.append(exc)
            continue
        return VtxFile(path, int(header["checksum"]), int(header["numlods"]), size, parts)
    raise errors[0]


def _sizes_by_layout(cur: Cursor, header: np.ndarray) -> list[int]:
    """Candidate header sizes, the one the layout shows first. studiomdl writes a block's strip-group headers,
    then its strip headers, then vertices: the first group's strip offset is a multiple of the group-header size
    and the gap to its vertices a multiple of the strip-header size (Crowbar's observation)."""
    try:
        bp_base = int(header["bodypartoffset"])
        (bp,) = cur.array_at(S.VTX_BODYPART, bp_base, 1, "body part")
        m_off = bp_base + int(bp["modeloffset"])
        (model,) = cur.array_at(S.VTX_MODEL, m_off, 1, "model")
        l_off = m_off + int(model["lodoffset"])
        (lod,) = cur.array_at(S.VTX_LOD, l_off, 1, "LOD")
        me_off = l_off + int(lod["meshoffset"])
        (mesh,) = cur.array_at(S.VTX_MESH, me_off, 1, "mesh")
        (group,) = cur.array_at(S.VTX_STRIPGROUP[25], me_off + int(mesh["stripgroupheaderoffset"]), 1, "strip group")
    except FormatError:
        return [25, 33]
    strips, verts = int(group["stripoffset"]), int(group["vertoffset"])

    def fits(size: int) -> bool:
        return strips > 0 and strips % size == 0 and (verts - strips) % S.VTX_STRIP[size].itemsize == 0

    return sorted((25, 33), key=lambda size: not fits(size))


@dataclass(frozen=True)
class _Layout:
    """The record layouts of one VTX version; fields this reader uses keep their names in every one."""

    mesh: np.dtype
    strip_group: np.dtype
    strip: np.dtype
    vertex: Callable[[int], np.dtype]  # by the strip group's flags


def _vertex_dtype_7(flags: int) -> np.dtype:
    return S.VTX_VERTEX


def _vertex_dtype_107(flags: int) -> np.dtype:
    return B.VTX_STATIC_VERTEX if flags & B.VTX_STATIC_PROP_VERTICES else B.VTX_VERTEX


def _walk(cur: Cursor, header: np.ndarray, layout: _Layout, only: int | None) -> list[list[list[VtxLod | None]]]:
    sg_dtype, strip_dtype = layout.strip_group, layout.strip
    parts = []
    bp_base = int(header["bodypartoffset"])
    for bp_off, bp in cur.records_at(S.VTX_BODYPART, bp_base, _count(cur, header["numbodyparts"]), "body parts"):
        models = []
        m_base = bp_off + int(bp["modeloffset"])
        for m_off, model in cur.records_at(S.VTX_MODEL, m_base, _count(cur, bp["nummodels"]), "models"):
            lods: list[VtxLod | None] = []
            l_base = m_off + int(model["lodoffset"])
            num_lods = _count(cur, model["numlods"])
            wanted = None if only is None else min(max(only, 0), num_lods - 1)
            for k, (l_off, lod) in enumerate(cur.records_at(S.VTX_LOD, l_base, num_lods, "LODs")):
                if wanted is not None and k != wanted:
                    lods.append(None)
                    continue
                meshes = []
                me_base = l_off + int(lod["meshoffset"])
                for me_off, mesh in cur.records_at(layout.mesh, me_base, _count(cur, lod["nummeshes"]), "meshes"):
                    sg_base = me_off + int(mesh["stripgroupheaderoffset"])
                    groups = cur.records_at(sg_dtype, sg_base, _count(cur, mesh["numstripgroups"]), "strip groups")
                    meshes.append(
                        VtxMesh(
                            [_strip_group(cur, g_off, sg, strip_dtype, layout.vertex) for g_off, sg in groups],
                            int(mesh["flags"]),
                        )
                    )
                lods.append(VtxLod(meshes, float(lod["switchpoint"])))
            models.append(lods)
        parts.append(models)
    return parts


def _count(cur: Cursor, value: np.integer) -> int:
    count = int(value)
    if not 0 <= count <= cur.size:
        raise cur.error(f"implausible count {count}")
    return count


def _strip_group(
    cur: Cursor, offset: int, group: np.ndarray, strip_dtype: np.dtype, vertex: Callable[[int], np.dtype]
) -> VtxStripGroup:
    num_verts, num_indices = _count(cur, group["numverts"]), _count(cur, group["numindices"])
    vertices = cur.view_at(
        vertex(int(group["flags"])), offset + int(group["vertoffset"]), num_verts, "strip group vertices"
    )
    indices = cur.view_at(np.dtype("<u2"), offset + int(group["indexoffset"]), num_indices, "strip group indices")
    strips = cur.view_at(strip_dtype, offset + int(group["stripoffset"]), _count(cur, group["numstrips"]), "strips")
    triangles = []
    for strip in strips:
        first, count = int(strip["indexoffset"]), int(strip["numindices"])
        flags, bones = int(strip["flags"]), int(strip["numbones"])
        if first < 0 or count < 0 or first + count > num_indices or not 0 <= bones <= 255 or flags & ~0x07:
            raise cur.error("strip header does not fit its strip group", offset)
        if not flags & S.STRIP_IS_TRILIST or count % 3:
            raise cur.error(f"strip with flags {flags} and {count} indices is not a triangle list", offset)
        triangles.append(indices[first : first + count].reshape(-1, 3))
    if not triangles:
        tris = np.zeros((0, 3), dtype=np.uint16)
    elif len(triangles) == 1:  # most groups hold one strip: nothing to concatenate
        tris = triangles[0]
    else:
        tris = np.concatenate(triangles)
    if len(tris) and int(tris.max()) >= num_verts:
        raise cur.error(f"strip index {int(tris.max())} is beyond the group's {num_verts} vertices", offset)
    return VtxStripGroup(vertices["origmeshvertid"].copy(), tris.astype(np.int64), int(group["flags"]))
