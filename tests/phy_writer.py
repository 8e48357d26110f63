"""Write synthetic ``.phy`` files (notes §1.14) for reader and import tests: boxes as convex pieces, in the 2004
``VPHY`` layout, the older layout without it, or the widened 0x101 layout. Validates nothing, so tests can also
write broken files."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

METRE = 0.0254  # one Source unit (inch) in metres


@dataclass
class PPiece:
    points: np.ndarray  # (N, 3) Source units, Source axes, in the solid's (bone's) space
    triangles: np.ndarray  # (T, 3) counter-clockwise seen from outside
    bone: int = -1  # stored plus one


@dataclass
class PSolid:
    pieces: list[PPiece]
    extra_ledge_children: bool = False  # add a tree hull (has-children ledge) the reader must skip


@dataclass
class PhySpec:
    solids: list[PSolid]
    checksum: int = 0x1234
    text: str = ""
    layout: str = "vphy"  # "vphy", "legacy" (no VPHY header) or "wide" (VPHY 0x101)
    solid_count: int | None = None  # the header's count (default: len(solids))


BOX_TRIANGLES = np.array(
    [
        *((0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7)),  # bottom, top
        *((0, 1, 5), (0, 5, 4), (1, 2, 6), (1, 6, 5), (2, 3, 7), (2, 7, 6), (3, 0, 4), (3, 4, 7)),  # sides
    ],
    dtype=np.int32,
)


def box(lo: tuple[float, float, float], hi: tuple[float, float, float], bone: int = -1) -> PPiece:
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    points = np.array(
        [
            (x0, y0, z0),
            (x1, y0, z0),
            (x1, y1, z0),
            (x0, y1, z0),
            (x0, y0, z1),
            (x1, y0, z1),
            (x1, y1, z1),
            (x0, y1, z1),
        ],
        dtype=np.float64,
    )
    return PPiece(points, BOX_TRIANGLES.copy(), bone)


def to_ivp(points: np.ndarray) -> np.ndarray:
    """Inverse of vphysics' ConvertPositionToHL: IVP = (x, -z, y) · 0.0254."""
    p = np.asarray(points, dtype=np.float64)
    return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1) * METRE


def _solid_body(solid: PSolid, layout: str) -> bytes:
    wide = layout == "wide"
    surface_size, ledge_size, tri_size = (64, 64, 64) if wide else (48, 16, 16)
    pieces = list(solid.pieces)
    hull = solid.extra_ledge_children and pieces
    ledges_size = sum(ledge_size + tri_size * len(p.triangles) for p in pieces)
    if hull:
        ledges_size += ledge_size + tri_size * len(pieces[0].triangles)
    all_points = np.concatenate([to_ivp(p.points) for p in pieces]) if pieces else np.zeros((0, 3))
    points_at = surface_size + ledges_size  # relative to the compact surface
    tree_at = points_at + 16 * len(all_points)
    out = bytearray()
    floats = struct.pack("<7f", 0, 0, 0, 1, 1, 1, 1)
    if wide:
        # The widened header: byte size in its own word, the tree offset after it, 16 spare bytes after 'IVPS'.
        out += floats + struct.pack("<iiii", 0, tree_at + 28, tree_at, 0) + b"IVPS" + bytes(16)
    else:
        out += floats + struct.pack("<iiii", (tree_at + 28) << 8, tree_at, 0, 0) + b"IVPS"
    entries = [(p, sum(len(q.points) for q in pieces[:i]), False) for i, p in enumerate(pieces)]
    if hull:
        entries.append((pieces[0], 0, True))
    for piece, first_point, is_hull in entries:
        ledge_at = len(out)
        flags = (1 if is_hull else 0) | ((ledge_size + tri_size * len(piece.triangles)) // 16) << 8
        client = 4096 if is_hull else piece.bone + 1
        out += struct.pack("<iiIhh", points_at - ledge_at, client, flags, len(piece.triangles), 0)
        out += bytes(ledge_size - 16)
        for t, (a, b, c) in enumerate(piece.triangles.tolist()):
            ids = (a + first_point, b + first_point, c + first_point)
            if wide:
                out += struct.pack("<iiq", t, 0, 0) + b"".join(struct.pack("<iiq", i, 0, 0) for i in ids)
            else:
                out += struct.pack("<I", t) + b"".join(struct.pack("<Hh", i, 0) for i in ids)
    for x, y, z in all_points.tolist():
        out += struct.pack("<4f", x, y, z, 0.0)
    out += struct.pack("<ii4f4B", 0, 0, 0, 0, 0, 1, 1, 1, 1, 0)  # one ledge-tree node (not read)
    if layout == "legacy":
        return bytes(out)
    version = 0x101 if wide else 0x100
    header = b"VPHY" + struct.pack("<hhi3fi", version, 0, len(out), 1, 1, 1, 0)
    return header + bytes(out)


def write_phy(spec: PhySpec) -> bytes:
    count = len(spec.solids) if spec.solid_count is None else spec.solid_count
    out = bytearray(struct.pack("<iiii", 16, 0, count, spec.checksum))
    for solid in spec.solids:
        body = _solid_body(solid, spec.layout)
        out += struct.pack("<i", len(body)) + body
    out += spec.text.encode() + b"\0"
    return bytes(out)


def solid_text(names: list[str], constraints: list[tuple[int, int, dict]] = (), extra: str = "") -> str:
    """The keyvalues text: a ``solid`` block per name, ``ragdollconstraint`` blocks (parent, child, limits)."""
    lines = []
    for i, name in enumerate(names):
        lines += ["solid {", f'"index" "{i}"', f'"name" "{name}"', '"mass" "5.000000"', '"surfaceprop" "flesh"', "}"]
    for parent, child, limits in constraints:
        lines += ["ragdollconstraint {", f'"parent" "{parent}"', f'"child" "{child}"']
        lines += [f'"{k}" "{v:.6f}"' for k, v in limits.items()] + ["}"]
    return "\n".join(lines) + "\n" + extra


def solid_offsets(data: bytes) -> list[int]:
    count = struct.unpack_from("<i", data, 8)[0]
    pos, out = 16, []
    for _ in range(count):
        out.append(pos)
        pos += 4 + struct.unpack_from("<i", data, pos)[0]
    return out
