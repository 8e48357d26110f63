"""Write small Vampire: The Masquerade – Bloodlines models (MDL 2531 with a VTX 107) from the public layout facts,
with ``struct`` and no code of the reader: fixtures of the real files' layout for hostile, fuzz and scene tests.

Layout (little-endian): a 424-byte header (name[128] at 12, length at 140, flags at 228, then count/offset pairs
from 240: bones, bone controllers, hit-box sets, animations, sequences, a flag, sequence groups, textures, material
folders, skin refs/families/table, body parts at 320, attachments ...); 160-byte bones (pos at 32, quat x,y,z,w at
44, poseToBone 3x4 at 88); 764-byte sequences (label at 0, event count/offset at 20/24, the animation grid's
16 × 16 int16 at 56, its size at 572) with 76-byte events (cycle, event, type, options[64]); included models'
116-byte records (count/offset at 404/408; the name's offset, relative to the record, first); 224-byte models
(vertex count/offset at 144/148, tangents at 152, vertex list type at 156, position offset and scale at 160/172);
60-byte meshes (material, back offset, vertex count, first vertex); vertices of 44 (skinned), 12 (16-bit) or 8
(8-bit) bytes. The VTX: 36-byte header (version 107), 8-byte body parts, models, 12-byte LODs, 8-byte meshes (u16
group count), 20-byte strip groups (u16 counts), 16-byte strips.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CHECKSUM = 0x2531ABCD


@dataclass
class BBone:
    name: str
    parent: int
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # x, y, z, w


@dataclass
class BSpec:
    bones: list[BBone]
    positions: np.ndarray  # (V, 3) float
    triangles: np.ndarray  # (T, 3) mesh vertex indices, in the file's (clockwise) order
    uvs: np.ndarray | None = None  # (V, 2)
    vertex_type: int = 0  # 0 skinned floats, 1 16-bit, 2 8-bit
    bone_of_vertex: np.ndarray | None = None  # (V,) one bone each, weight 255 (type 0)
    textures: list[str] = field(default_factory=lambda: ["skin"])
    cd_materials: list[str] = field(default_factory=lambda: ["models/test/"])
    attachments: list[tuple[str, int, tuple[float, float, float]]] = field(default_factory=list)
    hitboxes: list[tuple[int, tuple[float, float, float], tuple[float, float, float]]] = field(default_factory=list)
    flags: int = 0
    name: str = "test/bloodlines.mdl"
    animations: list[tuple[str, int]] = field(default_factory=list)  # (name, frames ≤ 255): root slides along x
    # (name, animation, events as (cycle, event, options)): 764-byte sequences, each event table after them
    sequences: list[tuple[str, int, list[tuple[float, int, str]]]] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)  # $includemodel names: 116-byte records, count/offset at 404
    # (V,) the stored normal code of each vertex of the quantised layouts (type 1: a byte offset into the 5,314-entry
    # table, a multiple of 12; type 2: an entry of the 202-entry one); 0 (-Z) when not given
    normal_codes: np.ndarray | None = None


def _quat_matrix(q: tuple[float, float, float, float]) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def bone_worlds(bones: list[BBone]) -> np.ndarray:
    worlds = []
    for b in bones:
        local = np.eye(4)
        local[:3, :3] = _quat_matrix(b.quat)
        local[:3, 3] = b.pos
        worlds.append(worlds[b.parent] @ local if b.parent >= 0 else local)
    return np.array(worlds)


class _Blob:
    def __init__(self, size: int) -> None:
        self.data = bytearray(size)

    def add(self, payload: bytes, align: int = 4) -> int:
        while len(self.data) % align:
            self.data.append(0)
        at = len(self.data)
        self.data += payload
        return at

    def put(self, fmt: str, at: int, *values) -> None:
        struct.pack_into("<" + fmt, self.data, at, *values)


def write_mdl2531(spec: BSpec) -> bytes:
    blob = _Blob(424)
    strings: list[tuple[int, int, str]] = []  # (field position, struct base, text): patched at the end

    def name_at(field_at: int, base: int, text: str) -> None:
        strings.append((field_at, base, text))

    worlds = bone_worlds(spec.bones)
    bone_at = blob.add(b"\0" * (160 * len(spec.bones)))
    for i, b in enumerate(spec.bones):
        at = bone_at + 160 * i
        name_at(at, at, b.name)
        blob.put("i", at + 4, b.parent)
        blob.put("6i", at + 8, *([-1] * 6))
        blob.put("3f", at + 32, *b.pos)
        blob.put("4f", at + 44, *b.quat)
        blob.put("3f", at + 60, *([1 / 256] * 3))
        blob.put("4f", at + 72, *([1 / 32768] * 4))
        blob.put("12f", at + 88, *np.linalg.inv(worlds[i])[:3, :].ravel().tolist())
        blob.put("i", at + 136, 0x100)
    set_at = blob.add(b"\0" * 12)
    name_at(set_at, set_at, "default")
    boxes_at = blob.add(b"".join(struct.pack("<2i6f", bone, 0, *lo, *hi) for bone, lo, hi in spec.hitboxes))
    blob.put("2i", set_at + 4, len(spec.hitboxes), boxes_at - set_at)
    tex_at = blob.add(b"\0" * (20 * len(spec.textures)))
    for i, t in enumerate(spec.textures):
        name_at(tex_at + 20 * i, tex_at + 20 * i, t)
    cd_at = blob.add(b"\0" * (4 * len(spec.cd_materials)))
    for i, c in enumerate(spec.cd_materials):
        name_at(cd_at + 4 * i, 0, c)
    skin_at = blob.add(struct.pack(f"<{len(spec.textures)}h", *range(len(spec.textures))))
    att_at = blob.add(b"\0" * (60 * len(spec.attachments)))
    for i, (name, bone, pos) in enumerate(spec.attachments):
        at = att_at + 60 * i
        name_at(at, at, name)
        blob.put("2i12f", at + 4, 0, bone, 1, 0, 0, pos[0], 0, 1, 0, pos[1], 0, 0, 1, pos[2])

    anim_at = blob.add(b"\0" * (72 * len(spec.animations)))
    for k, (name, frames) in enumerate(spec.animations):
        desc = anim_at + 72 * k
        name_at(desc, desc, name)
        blob.put("fii", desc + 4, 30.0, 0, frames)
        entries = blob.add(b"\0" * (32 * len(spec.bones)))
        blob.put("i", desc + 48, entries - desc)
        for b in range(len(spec.bones)):
            entry = entries + 32 * b
            blob.put("f", entry, 1.0)
            slide = blob.add(struct.pack(f"<2B{frames}h", frames, frames, *range(frames)), 2)
            turn = blob.add(struct.pack("<2Bh", 1, frames, 32767), 2)
            blob.put("i", entry + 4, slide - entry)  # position x: rest + frame / 256
            blob.put("i", entry + 28, turn - entry)  # quaternion w; x, y, z absent: the rest value
    seq_at = blob.add(b"\0" * (764 * len(spec.sequences)))
    for k, (name, animation, events) in enumerate(spec.sequences):
        seq = seq_at + 764 * k
        name_at(seq, seq, name)
        table = blob.add(b"".join(struct.pack("<fii64s", c, e, 0, o.encode("latin-1")) for c, e, o in events))
        blob.put("2i", seq + 20, len(events), table - seq)  # numevents, eventindex
        blob.put("h", seq + 56, animation)  # the 16 × 16 grid's first cell
        blob.put("2i", seq + 572, 1, 1)  # groupsize
    include_at = blob.add(b"\0" * (116 * len(spec.includes)))
    for k, name in enumerate(spec.includes):
        at = include_at + 116 * k
        name_at(at, at, name)  # then 0, 0x7fffffff, 0, a bone map's offset (0 here), 24 × -1
        blob.put("3i", at + 4, 0, 0x7FFFFFFF, 0)
        blob.put("24i", at + 20, *([-1] * 24))
    bp_at = blob.add(b"\0" * 16)
    name_at(bp_at, bp_at, "body")
    model_at = blob.add(b"\0" * 224)
    blob.put("2i", bp_at + 4, 1, 1)
    blob.put("i", bp_at + 12, model_at - bp_at)
    blob.data[model_at : model_at + 9] = b"body.smd\0"
    mesh_at = blob.add(b"\0" * 60)
    count = len(spec.positions)
    blob.put("4i", mesh_at, 0, model_at - mesh_at, count, 0)
    verts, offset, scale = _vertices(spec)
    vert_at = blob.add(verts)
    tan_at = blob.add(b"\0" * (16 * count))
    blob.put("i", model_at + 132, 0)
    blob.put("5i", model_at + 136, 1, mesh_at - model_at, count, vert_at - model_at, tan_at - model_at)
    blob.put("i", model_at + 156, spec.vertex_type)
    blob.put("3f", model_at + 160, *offset)
    blob.put("3f", model_at + 172, *scale)

    for field_at, base, text in strings:
        at = blob.add(text.encode("latin-1") + b"\0", 1)
        blob.put("i", field_at, at - base)

    header = blob.data
    header[0:4] = b"IDST"
    struct.pack_into("<2i", header, 4, 2531, CHECKSUM)
    header[12 : 12 + len(spec.name)] = spec.name.encode()
    struct.pack_into("<i", header, 228, spec.flags)
    pairs = [
        (240, len(spec.bones), bone_at),
        (248, 0, 0),
        (256, 1, set_at),
        (292, len(spec.textures), tex_at),
        (300, len(spec.cd_materials), cd_at),
        (320, 1, bp_at),
        (328, len(spec.attachments), att_at),
        (264, len(spec.animations), anim_at),
        (272, len(spec.sequences), seq_at),
        (404, len(spec.includes), include_at),
    ]
    for at, n, off in pairs:
        struct.pack_into("<2i", header, at, n, off)
    struct.pack_into("<3i", header, 308, len(spec.textures), 1, skin_at)
    struct.pack_into("<i", header, 140, len(header))
    return bytes(header)


def _vertices(spec: BSpec) -> tuple[bytes, tuple, tuple]:
    pos = np.asarray(spec.positions, np.float64)
    uvs = np.zeros((len(pos), 2)) if spec.uvs is None else np.asarray(spec.uvs, np.float64)
    uv16 = np.clip(np.round(uvs * 65535), 0, 65535).astype("<u2")
    if spec.vertex_type == 0:
        bones = np.zeros(len(pos), int) if spec.bone_of_vertex is None else spec.bone_of_vertex
        out = b"".join(
            struct.pack("<4B4h8f", 255, 0, 0, 0, int(b), 0, 0, 0, *p, 0, 0, 1, *uv)
            for b, p, uv in zip(bones, pos.tolist(), uvs.tolist(), strict=True)
        )
        return out, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    lo, hi = pos.min(0), pos.max(0)
    extent = np.where(hi > lo, hi - lo, 1.0)
    codes = np.zeros(len(pos), int) if spec.normal_codes is None else np.asarray(spec.normal_codes, int)
    if spec.vertex_type == 1:
        q = np.round((pos - lo) / extent * 65535).astype("<u2")
        rows = [
            struct.pack("<3HH2H", *a, c, *u) for a, c, u in zip(q.tolist(), codes.tolist(), uv16.tolist(), strict=True)
        ]
        return b"".join(rows), tuple(lo), tuple(extent / 65535)
    q = np.round((pos - lo) / extent * 255).astype("u1")
    rows = [struct.pack("<3BB2H", *a, c, *u) for a, c, u in zip(q.tolist(), codes.tolist(), uv16.tolist(), strict=True)]
    return b"".join(rows), tuple(lo), tuple(extent)


def write_vtx107(spec: BSpec, static: bool | None = None) -> bytes:
    """One body part, model, LOD, mesh and strip group holding every triangle in one strip."""
    static = spec.vertex_type != 0 if static is None else static
    tris = np.asarray(spec.triangles, int)
    used = np.unique(tris)
    local = np.searchsorted(used, tris)
    vert_size = 2 if static else 12
    head = struct.pack("<2i2h4i", 107, 24, 16, 9, 3, CHECKSUM, 1, 0) + struct.pack("<2i", 1, 36)
    bodypart = struct.pack("<2i", 1, 8)
    model = struct.pack("<2i", 1, 8)
    lod = struct.pack("<2if", 1, 12, 0.0)
    mesh = struct.pack("<H2Bi", 1, 0, 0, 8)
    vert_at = 20 + 16
    index_at = vert_at + vert_size * len(used)
    group = struct.pack("<3H2B3i", len(used), tris.size, 1, 0x12 if static else 0x02, 0, vert_at, index_at, 20)
    strip = struct.pack("<4H2BHi", tris.size, 0, len(used), 0, 1, 1, 0, 0)
    if static:
        verts = struct.pack(f"<{len(used)}H", *used.tolist())
    else:
        verts = b"".join(struct.pack("<6H", 1, 0, 0, 0, 0xFFFF, int(v)) for v in used)
    indices = struct.pack(f"<{tris.size}H", *local.ravel().tolist())
    body = head + bodypart + model + lod + mesh + group + strip + verts + indices
    return body


def write_bloodlines(spec: BSpec, folder: Path, stem: str, vtx: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.mdl"
    path.write_bytes(write_mdl2531(spec))
    if vtx:
        (folder / f"{stem}.dx80.vtx").write_bytes(write_vtx107(spec))
    return path


def prop_spec(vertex_type: int = 2) -> BSpec:
    """A one-bone static prop: a box's six faces (quads split in two), clockwise as the compiler writes them."""
    corners = np.array([[x, y, z] for x in (-4, 4) for y in (-2, 2) for z in (0, 3)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, c, b), (a, d, c))])
    uvs = (corners[:, :2] - corners[:, :2].min(0)) / np.ptp(corners[:, :2], axis=0)
    return BSpec([BBone("static_prop", -1, (0.0, 0.0, 0.0))], corners, tris, uvs, vertex_type, flags=0x10)


def character_spec2531() -> BSpec:
    """Three bones in a chain (the middle one turned 90 degrees about Z), a strip of quads skinned to them."""
    half = math.sqrt(0.5)
    bones = [
        BBone("root", -1, (0.0, 0.0, 0.0)),
        BBone("spine", 0, (0.0, 0.0, 10.0), (0.0, 0.0, half, half)),
        BBone("head", 1, (8.0, 0.0, 0.0)),
    ]
    positions = np.array([[x, y, z] for z in (0.0, 10.0, 20.0) for x in (-2.0, 2.0) for y in (0.0,)], float)
    tris = np.array([(0, 2, 1), (1, 2, 3), (2, 4, 3), (3, 4, 5)])
    owners = np.array([0, 0, 1, 1, 2, 2])
    return BSpec(
        bones,
        positions,
        tris,
        np.linspace(0, 1, 12).reshape(6, 2),
        0,
        owners,
        attachments=[("eyes", 2, (1.0, 0.0, 2.0))],
        animations=[("slide", 12)],
        hitboxes=[(1, (-1.0, -1.0, 0.0), (1.0, 1.0, 10.0))],
    )


def tth_pair(vtf: bytes, head: int, mips: int = 1) -> tuple[bytes, bytes]:
    """A ``.tth``/``.ttz`` pair holding ``vtf``: its first ``head`` bytes in the header, the rest zlib-compressed."""
    tth = b"TTH\0" + bytes([1, 0, mips, 0]) + struct.pack("<I", head) + bytes(4) + bytes(8 * mips) + bytes(4)
    return tth + vtf[:head], zlib.compress(vtf[head:])
