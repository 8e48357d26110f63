"""Read Titanfall's vertex-colour file (``.vvc``, magic ``IDCV``; embedded in v53 models): an RGBA8 colour and a
second UV pair per vertex of the ``.vvd`` pool, laid out like the ``.vvd``'s header (SourceIO ``models/vvc``).

Its vertices are in the ``.vvd``'s disk order, so the ``.vvd``'s LOD fixup replay orders them too
(``sidecars.read_mesh_companions``); they become a colour attribute and a second UV map.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...access import read_file
from ..binary import Cursor
from . import structs as S


@dataclass
class VvcFile:
    path: str | None
    checksum: int
    num_lods: int
    lod_vertex_counts: np.ndarray  # (8,)
    colors: np.ndarray  # (N, 4) uint8 RGBA, in the .vvd's disk order
    uv2: np.ndarray | None  # (N, 2) float32, or None when the file has no second UV set


def read_vvc(path: str | os.PathLike[str]) -> VvcFile:
    return read_vvc_bytes(read_file(path), os.fspath(path))


def read_vvc_bytes(data: bytes, path: str | None = None) -> VvcFile:
    cur = Cursor(data, path)
    if cur.size < S.VVC_HEADER.itemsize or bytes(cur.data[:4]) != S.VVC_MAGIC:
        raise cur.error(f"not a vertex colour file: expected the identifier 'IDCV', found {bytes(cur.data[:4])!r}", 0)
    (header,) = cur.array_at(S.VVC_HEADER, 0, 1, "vertex colour header")
    num_lods = int(header["numlods"])
    if not 1 <= num_lods <= 8:
        raise cur.error(f"vertex colour file declares {num_lods} LODs (1 to 8 are possible)", 12)
    counts = header["numlodvertexes"].astype(np.int64)
    total = int(counts[0])
    colors = cur.array_at(np.dtype(("u1", 4)), int(header["colordatastart"]), total, "vertex colours")
    uv2 = None
    if int(header["uv2datastart"]):
        uv2 = cur.array_at(np.dtype(("<f4", 2)), int(header["uv2datastart"]), total, "second UV set")
    return VvcFile(path, int(header["checksum"]), num_lods, counts, colors, uv2)
