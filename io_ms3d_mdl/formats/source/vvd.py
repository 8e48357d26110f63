"""Read a ``.vvd``: the vertex pool (positions, normals, UVs, up to three bone weights) and tangents, with the
LOD fixup table replayed so the pool is in mesh order (notes §1.11)."""

from __future__ import annotations

import os

import numpy as np

from ...access import read_file
from ..binary import Cursor, owned_copy, run_layout
from . import structs as S
from .model import VvdFile


def read_vvd(path: str | os.PathLike[str], root_lod: int = 0) -> VvdFile:
    return read_vvd_bytes(read_file(path), os.fspath(path), root_lod)


def read_vvd_bytes(data: bytes, path: str | None = None, root_lod: int = 0) -> VvdFile:
    cur = Cursor(data, path)
    if cur.size < S.VVD_HEADER.itemsize or bytes(cur.data[:4]) != S.VVD_MAGIC:
        raise cur.error(f"not a Source vertex file: expected the identifier 'IDSV', found {bytes(cur.data[:4])!r}", 0)
    (header,) = cur.array_at(S.VVD_HEADER, 0, 1, "vertexFileHeader_t")
    if int(header["version"]) != 4:
        raise cur.error(f"unsupported vertex file version {int(header['version'])} (4 is supported)", 4)
    num_lods = int(header["numlods"])
    if not 1 <= num_lods <= 8:
        raise cur.error(f"vertex file declares {num_lods} LODs (1 to 8 are possible)", 12)
    counts = header["numlodvertexes"].astype(np.int64)
    total = int(counts[0])
    # Views, copied once below: by the fixups' reordering when there are fixups, as they are otherwise.
    pool = cur.view_at(S.VVD_VERTEX, int(header["vertexdatastart"]), total, "vertices")
    tangents = None
    if int(header["tangentdatastart"]):
        tangents = cur.view_at(np.dtype(("<f4", 4)), int(header["tangentdatastart"]), total, "tangents")
    fixups = cur.array_at(S.VVD_FIXUP, int(header["fixuptablestart"]), int(header["numfixups"]), "LOD fixups")
    order = None
    if len(fixups):
        order = _replay_fixups(cur, fixups, total, root_lod)
    # np.take and byte copies: numpy's fancy indexing and copy() of structured records go field by field.
    pool = np.take(pool, order, axis=0) if order is not None else owned_copy(pool)
    if tangents is not None:
        tangents = np.take(tangents, order, axis=0) if order is not None else owned_copy(tangents)
    return VvdFile(path, int(header["checksum"]), num_lods, counts, pool, tangents, order)


def _replay_fixups(cur: Cursor, fixups: np.ndarray, total: int, root_lod: int) -> np.ndarray:
    """``Studio_LoadVertexes``: copy, in table order, every run whose LOD is at least the root LOD."""
    runs = fixups[fixups["lod"] >= root_lod]
    start, length = runs["sourcevertexid"].astype(np.int64), runs["numvertexes"].astype(np.int64)
    if (start < 0).any() or (length < 0).any() or (start + length > total).any():
        raise cur.error(f"a LOD fixup points outside the {total} vertices", 0)
    replayed = int(length.sum())
    if replayed == 0:
        return np.zeros(0, dtype=np.int64)
    if replayed > total:  # real fixups replay each vertex of the root LOD once; more is a replay bomb
        raise cur.error(f"the LOD fixups replay {replayed:,} vertices but the file holds only {total:,}", 0)
    run_of, within = run_layout(length)
    return start[run_of] + within
