"""Read a ``.phy``: the model's collision solids (convex pieces) and the keyvalues text that names them, gives their
mass and surface, and limits the ragdoll's joints (notes §1.14). No ``bpy``.

The solids are Havok/IVP "compact surfaces". A solid is an ``int`` size, then (since the 2004 SDK) a 28-byte
``VPHY`` header, then the compact surface: 7 floats and 4 ints with ``IVPS`` in the last, followed by the convex
pieces ("ledges"), each a 16-byte header and its 16-byte triangles, then the points they share (float4, metres, IVP
axes), then the ledge tree. Files without ``VPHY`` (the 2003 layout) start the compact surface right after the size.
A later compiler (``VPHY`` version 0x101, seen in Portal community builds) widens the surface header, the ledge
header and each triangle to 64 bytes; the fields keep their places at the front.

Pieces are read in file order, as Crowbar does; pieces that have children are the ledge tree's hulls around other
pieces, and are skipped (SourceIO does the same). Every offset is checked to lie inside its solid.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ...access import read_file
from ...budget import current_budget
from ...errors import Warnings
from ..binary import Cursor, renumbered
from ..text import decode_text

HEADER = np.dtype([("size", "<i4"), ("id", "<i4"), ("solid_count", "<i4"), ("checksum", "<i4")])
VPHY_HEADER_SIZE = 28  # 'VPHY', i16 version, i16 model type, int surface size, 3 floats drag areas, int axis map size
VERSION_NARROW, VERSION_WIDE = 0x100, 0x101
LEDGE = np.dtype(
    [("point_offset", "<i4"), ("client_data", "<i4"), ("flags", "<u4"), ("n_triangles", "<i2"), ("spare", "<i2")]
)
TRIANGLE = np.dtype([("packed", "<u4"), ("edges", [("start", "<u2"), ("opposite", "<i2")], (3,))])
TRIANGLE_WIDE = np.dtype(
    [
        ("index", "<i4"),
        ("pierce", "<i4"),
        ("spare", "<i8"),
        ("edges", [("start", "<i4"), ("opposite", "<i4"), ("pad", "<i8")], (3,)),
    ]
)
POINT = np.dtype(("<f4", (4,)))  # x, y, z in metres (IVP axes), and a spare word
INCHES_PER_METRE = 1.0 / 0.0254
TEXT_LIMIT = 1 << 20  # the keyvalues text; real ones are a few kilobytes
MAX_DEPTH = 8


@dataclass
class PhyPiece:
    """One convex piece, in Source units (inches, Source axes) in its solid's space (a bone's, for ragdolls)."""

    points: np.ndarray  # (N, 3) float32
    triangles: np.ndarray  # (T, 3) int32 into points, counter-clockwise seen from outside
    bone: int  # the bone the piece belongs to (the file stores it plus one), -1 when not stored


@dataclass
class PhySolid:
    index: int
    offset: int  # of the solid's size field
    pieces: list[PhyPiece]
    version: int  # VPHY version; 0 for the layout without the VPHY header

    @property
    def bone(self) -> int:
        return next((p.bone for p in self.pieces if p.bone >= 0), -1)


@dataclass
class PhyFile:
    path: str | None
    checksum: int
    solid_count: int  # as the header declares it
    solids: list[PhySolid]
    blocks: list[tuple[str, dict]] = field(default_factory=list)  # the text section: (name, keys lower-cased)
    warnings: Warnings = field(default_factory=Warnings)

    def solid_keys(self, index: int) -> dict:
        """The text section's ``solid`` block for solid ``index`` (its ``index`` key, else its place)."""
        return self._lookup[0].get(index, {})

    def constraint_of(self, index: int) -> dict:
        """The ``ragdollconstraint`` that joins solid ``index`` to its parent, or {}."""
        return self._lookup[1].get(index, {})

    def block(self, name: str) -> dict:
        return next((b for n, b in self.blocks if n == name), {})

    @cached_property
    def _lookup(self) -> tuple[dict[int, dict], dict[int, dict]]:
        """Solid and constraint blocks by solid index, built once: a file may hold thousands of each."""
        solids: dict[int, dict] = {}
        constraints: dict[int, dict] = {}
        place = 0
        for name, block in self.blocks:
            if name == "solid":
                index = _int(block.get("index")) if "index" in block else place
                if index is not None:
                    solids.setdefault(index, block)
                place += 1
            elif name == "ragdollconstraint":
                child = _int(block.get("child"))
                if child is not None:
                    constraints.setdefault(child, block)
        return solids, constraints


def read_phy(path: str | os.PathLike[str]) -> PhyFile:
    return read_phy_bytes(read_file(path), os.fspath(path))


def read_phy_bytes(data: bytes, path: str | None = None) -> PhyFile:
    """Also for physics data kept inside another file (Titanfall's v53 models embed it)."""
    cur = Cursor(data, path)
    if cur.size < HEADER.itemsize:
        raise cur.error(f"not a physics file: the {HEADER.itemsize}-byte header needs {HEADER.itemsize} bytes", 0)
    (header,) = cur.array_at(HEADER, 0, 1, "physics header")
    size, count, checksum = int(header["size"]), int(header["solid_count"]), int(header["checksum"])
    if not HEADER.itemsize <= size <= cur.size:
        raise cur.error(f"header size {size} must lie between {HEADER.itemsize} and the file's {cur.size} bytes", 0)
    # Each solid needs at least its size field and a compact surface header: a count beyond that is not a real file.
    most = (cur.size - size) // (4 + 48)
    if not 0 <= count <= most:
        raise cur.error(f"{count} solids declared, but the file has room for at most {most}", 8)
    budget = current_budget()
    totals = [0, 0]  # points, triangles
    solids, pos, pending = [], size, []
    for index in range(count):
        with cur.section(f"solid {index}"):
            solid, pos = _solid(cur, index, pos, totals, pending)
        budget.check(path, "collision points", totals[0], budget.vertices, offset=solid.offset)
        budget.check(path, "collision triangles", totals[1], budget.triangles, offset=solid.offset)
        solids.append(solid)
    for (solid, *_), piece in zip(pending, _pieces(cur, pending), strict=True):
        solid.pieces.append(piece)
    phy = PhyFile(path, checksum, count, solids)
    text = bytes(cur.data[pos : pos + TEXT_LIMIT + 1])
    text = text.split(b"\0", 1)[0]
    if len(text) > TEXT_LIMIT:
        phy.warnings.add(f"the physics text section is over {TEXT_LIMIT:,} bytes; only its start was read")
        text = text[:TEXT_LIMIT]
    phy.blocks = parse_blocks(decode_text(text))
    return phy


# A convex piece found by the walk, made once every solid is walked (see ``_pieces``): its solid, its triangles'
# corners (indices into the points it reaches), where those points start, how many it reaches, and its bone.
_Pending = tuple["PhySolid", np.ndarray, int, int, int]


def _solid(cur: Cursor, index: int, pos: int, totals: list[int], pending: list[_Pending]) -> tuple[PhySolid, int]:
    cur.pos = pos
    solid_size = cur.i32("solid size")
    body, end = pos + 4, pos + 4 + solid_size
    if solid_size < 48 or end > cur.size:
        raise cur.error(
            f"solid {index} declares {solid_size} bytes; it needs at least 48 and the file ends {cur.size - body} "
            "bytes after its size field",
            pos,
        )
    version, surface = 0, body
    if bytes(cur.data[body : body + 4]) == b"VPHY":
        version = int(np.frombuffer(cur.data, "<u2", 1, body + 4)[0])
        if version not in (VERSION_NARROW, VERSION_WIDE):
            raise cur.error(
                f"unsupported VPHY version {version:#x} ({VERSION_NARROW:#x} and {VERSION_WIDE:#x} are read)", body + 4
            )
        surface = body + VPHY_HEADER_SIZE
    wide = version == VERSION_WIDE
    surface_size, ledge_size = (64, 64) if wide else (48, 16)
    if surface + surface_size > end:
        raise cur.error(f"solid {index} is too small for its {surface_size}-byte compact surface header", surface)
    if bytes(cur.data[surface + 44 : surface + 48]) != b"IVPS":
        found = bytes(cur.data[surface + 44 : surface + 48])
        raise cur.error(f"expected the compact surface tag 'IVPS', found {found!r}", surface + 44)
    triangle = TRIANGLE_WIDE if wide else TRIANGLE
    solid = PhySolid(index, pos, [], version)
    q, points_start = surface + surface_size, end
    while q < points_start:  # the ledges come first, then the points they share
        (ledge,) = cur.array_at(LEDGE, q, 1, f"convex piece header of solid {index}")
        offset, n_tri = int(ledge["point_offset"]), int(ledge["n_triangles"])
        first = q + ledge_size
        if n_tri < 0 or first + n_tri * triangle.itemsize > end:
            raise cur.error(f"a convex piece of solid {index} declares {n_tri} triangles, past the solid's end", q)
        if offset <= 0 or q + offset > end:
            raise cur.error(f"a convex piece's point offset {offset} points outside solid {index}", q)
        points_start = min(points_start, q + offset)
        if int(ledge["flags"]) & 3 == 0 and n_tri > 0:  # a tree hull around other pieces has children
            tris = cur.view_at(triangle, first, n_tri, f"triangles of solid {index}")["edges"]["start"]
            starts = tris.astype(np.int64).ravel()
            reach = int(starts.max()) + 1
            points_at = q + offset
            if starts.min() < 0 or points_at + reach * POINT.itemsize > end:
                raise cur.error(f"a convex piece of solid {index} uses {reach} points, past the solid's end", points_at)
            cur.charge(reach * POINT.itemsize, f"points of solid {index}")  # as reading them piece by piece would
            pending.append((solid, starts, points_at, reach, int(ledge["client_data"]) - 1))
            totals[0] += int(np.count_nonzero(np.bincount(starts)))  # the points it uses
            totals[1] += n_tri
        q = first + n_tri * triangle.itemsize
    return solid, end


def _pieces(cur: Cursor, pending: list[_Pending]) -> list[PhyPiece]:
    """Every piece's points (those its triangles use, in file order) and triangles renumbered to them, for all
    pieces at once: a ragdoll has a piece or two per bone, and a dozen numpy calls each cost more than the
    pieces' few dozen points (bounds were checked, and the reads charged to the budget, by the walk)."""
    if not pending:
        return []
    raw = np.concatenate([np.frombuffer(cur.data, POINT, n, at) for _, _, at, n, _ in pending])
    first_point = np.cumsum([0, *(n for *_, n, _ in pending)])
    corners = [len(starts) for _, starts, *_ in pending]
    everything = np.concatenate([starts for _, starts, *_ in pending]) + np.repeat(first_point[:-1], corners)
    used, renumber = renumbered(everything, int(first_point[-1]))  # each piece its own run: none is shared
    # vphysics ConvertPositionToHL: HL = (x, z, -y) / 0.0254 (a rotation, so the winding is kept).
    points = np.ascontiguousarray((raw[used][:, [0, 2, 1]].astype(np.float64) * _TO_INCHES), dtype=np.float32)
    point_start = np.searchsorted(used, first_point).tolist()  # each piece's run of ``used``
    corner_start = np.cumsum([0, *corners]).tolist()
    return [
        PhyPiece(
            points[point_start[k] : point_start[k + 1]],
            (renumber[corner_start[k] : corner_start[k + 1]] - np.int32(point_start[k])).reshape(-1, 3),
            bone if bone >= 0 else -1,
        )
        for k, (*_, bone) in enumerate(pending)
    ]


_TO_INCHES = np.array([1.0, 1.0, -1.0]) * INCHES_PER_METRE  # after the (x, z, y) reorder above


_TOKEN = re.compile(r'("[^"]*")|([{}])|//[^\n]*|([^\s{}"]+)')  # quoted tokens keep their quotes: "" is a value


def parse_blocks(text: str) -> list[tuple[str, dict]]:
    """The text section's top-level blocks in order (``solid``, ``ragdollconstraint``, ``collisionrules``,
    ``editparams``…), each a dict with lower-cased keys. Tolerant: stray braces and unpaired keys are skipped;
    a key repeated inside a block keeps its values as a list (``collisionpair``); nesting is bounded."""
    blocks: list[tuple[str, dict]] = []
    stack: list[dict] = []
    pending: str | None = None
    skipped = 0  # braces opened past MAX_DEPTH: their contents stay in the deepest block kept
    for quoted, brace, bare in _TOKEN.findall(text):  # a comment matches with all three empty
        if brace == "{":
            if len(stack) < MAX_DEPTH:
                block: dict = {}
                if stack:
                    _put(stack[-1], pending or "", block)
                else:
                    blocks.append(((pending or "").lower(), block))
                stack.append(block)
            else:
                skipped += 1
            pending = None
        elif brace == "}":
            if skipped:
                skipped -= 1
            elif stack:
                stack.pop()
            pending = None
        elif quoted or bare:
            token = quoted[1:-1] if quoted else bare
            if pending is None or not stack:  # outside blocks the last word before "{" names the block
                pending = token
            else:
                _put(stack[-1], pending, token)
                pending = None
    return blocks


def _put(block: dict, key: str, value) -> None:
    key = key.lower()
    if key in block:
        old = block[key]
        if isinstance(old, list):
            old.append(value)  # in place: copying the list on every repeat made a block of repeats quadratic
        else:
            block[key] = [old, value]
    else:
        block[key] = value


def _int(value) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None
