"""A small MilkShape 3D writer for tests: produces any corner case on demand (counts, flags, versions,
sub-versions, truncation). It writes exactly what it is given; it does not validate.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

Vec3 = tuple[float, float, float]
Vec4 = tuple[float, float, float, float]


def _name(value: str | bytes, size: int) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return raw[:size].ljust(size, b"\0")


@dataclass
class Vertex:
    position: Vec3
    bone_id: int = -1
    flags: int = 0
    ref_count: int = 0


@dataclass
class Triangle:
    indices: tuple[int, int, int]
    normals: tuple[Vec3, Vec3, Vec3] = ((0.0, 0.0, 1.0),) * 3
    s: Vec3 = (0.0, 0.0, 0.0)
    t: Vec3 = (0.0, 0.0, 0.0)
    smoothing_group: int = 1
    group_index: int = 0
    flags: int = 0


@dataclass
class Group:
    name: str | bytes
    triangles: Sequence[int]
    material_index: int = -1
    flags: int = 0


@dataclass
class Material:
    name: str | bytes
    ambient: Vec4 = (0.2, 0.2, 0.2, 1.0)
    diffuse: Vec4 = (0.8, 0.8, 0.8, 1.0)
    specular: Vec4 = (0.0, 0.0, 0.0, 1.0)
    emissive: Vec4 = (0.0, 0.0, 0.0, 1.0)
    shininess: float = 0.0
    transparency: float = 1.0
    mode: int = 0
    texture: str | bytes = ""
    alphamap: str | bytes = ""


@dataclass
class Joint:
    name: str | bytes
    parent: str | bytes = ""
    rotation: Vec3 = (0.0, 0.0, 0.0)
    position: Vec3 = (0.0, 0.0, 0.0)
    rotation_keys: Sequence[tuple[float, Vec3]] = ()
    position_keys: Sequence[tuple[float, Vec3]] = ()
    flags: int = 8


@dataclass
class VertexExtra:
    """One record per vertex; ``extra``/``extra2`` are written only for sub-versions 2/3."""

    bone_ids: tuple[int, int, int] = (-1, -1, -1)
    weights: tuple[int, int, int] = (0, 0, 0)
    extra: int = 0
    extra2: int = 0


@dataclass
class Ms3dSpec:
    vertices: list[Vertex] = field(default_factory=list)
    triangles: list[Triangle] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    joints: list[Joint] = field(default_factory=list)
    version: int = 4
    magic: bytes = b"MS3D000000"
    fps: float = 24.0
    current_time: float = 0.0
    total_frames: int = 30
    # Extended blocks, written in file order up to the last one that is not None.
    comments: dict[str, list[tuple[int, str | bytes]]] | None = None  # keys: group/material/joint
    model_comment: str | bytes | None = None
    comments_sub_version: int = 1
    vertex_extra: list[VertexExtra] | None = None
    vertex_extra_sub_version: int = 2
    joint_colors: list[Vec3] | None = None
    joint_extra_sub_version: int = 1
    model_extra: tuple[float, int, float] | None = None  # joint size, transparency mode, alpha ref
    model_extra_sub_version: int = 1


def write_ms3d(spec: Ms3dSpec) -> bytes:
    out = bytearray(spec.magic)
    out += struct.pack("<i", spec.version)
    out += struct.pack("<H", len(spec.vertices))
    for v in spec.vertices:
        out += struct.pack("<B3fbB", v.flags, *v.position, v.bone_id, v.ref_count)
    out += struct.pack("<H", len(spec.triangles))
    for t in spec.triangles:
        normals = [c for n in t.normals for c in n]
        out += struct.pack("<H3H9f3f3fBB", t.flags, *t.indices, *normals, *t.s, *t.t, t.smoothing_group, t.group_index)
    out += struct.pack("<H", len(spec.groups))
    for g in spec.groups:
        out += struct.pack("<B", g.flags) + _name(g.name, 32) + struct.pack("<H", len(g.triangles))
        out += struct.pack(f"<{len(g.triangles)}H", *g.triangles) + struct.pack("<b", g.material_index)
    out += struct.pack("<H", len(spec.materials))
    for m in spec.materials:
        out += _name(m.name, 32)
        out += struct.pack("<16f", *m.ambient, *m.diffuse, *m.specular, *m.emissive)
        out += struct.pack("<ffB", m.shininess, m.transparency, m.mode)
        out += _name(m.texture, 128) + _name(m.alphamap, 128)
    out += struct.pack("<ffi", spec.fps, spec.current_time, spec.total_frames)
    out += struct.pack("<H", len(spec.joints))
    for j in spec.joints:
        out += struct.pack("<B", j.flags) + _name(j.name, 32) + _name(j.parent, 32)
        out += struct.pack("<6fHH", *j.rotation, *j.position, len(j.rotation_keys), len(j.position_keys))
        for time, value in (*j.rotation_keys, *j.position_keys):
            out += struct.pack("<4f", time, *value)
    _write_extended(spec, out)
    return bytes(out)


def _text(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


def _write_extended(spec: Ms3dSpec, out: bytearray) -> None:
    blocks = [
        spec.comments is not None or spec.model_comment is not None,
        spec.vertex_extra is not None,
        spec.joint_colors is not None,
        spec.model_extra is not None,
    ]
    last = max((i for i, present in enumerate(blocks) if present), default=-1)
    if last < 0:
        return
    out += struct.pack("<i", spec.comments_sub_version)
    comments = spec.comments or {}
    for kind in ("group", "material", "joint"):
        entries = comments.get(kind, [])
        out += struct.pack("<i", len(entries))
        for index, text in entries:
            raw = _text(text)
            out += struct.pack("<ii", index, len(raw)) + raw
    if spec.model_comment is None:
        out += struct.pack("<i", 0)
    else:
        raw = _text(spec.model_comment)
        out += struct.pack("<ii", 1, len(raw)) + raw
    if last < 1:
        return
    sv = spec.vertex_extra_sub_version
    out += struct.pack("<i", sv)
    for rec in spec.vertex_extra or [VertexExtra() for _ in spec.vertices]:
        out += struct.pack("<3b3B", *rec.bone_ids, *rec.weights)
        if sv >= 2:
            out += struct.pack("<I", rec.extra)
        if sv >= 3:
            out += struct.pack("<I", rec.extra2)
    if last < 2:
        return
    out += struct.pack("<i", spec.joint_extra_sub_version)
    for color in spec.joint_colors or [(1.0, 1.0, 0.0) for _ in spec.joints]:
        out += struct.pack("<3f", *color)
    if last < 3:
        return
    out += struct.pack("<i", spec.model_extra_sub_version)
    out += struct.pack("<fif", *(spec.model_extra or (1.0, 0, 0.5)))


# --- ready-made shapes ---------------------------------------------------------------------------------------


def quad_spec(**overrides: object) -> Ms3dSpec:
    """Two triangles forming a unit square in the XY plane, one group, one material, UVs covering 0..1."""
    spec = Ms3dSpec(
        vertices=[Vertex((0, 0, 0)), Vertex((1, 0, 0)), Vertex((1, 1, 0)), Vertex((0, 1, 0))],
        triangles=[
            Triangle((0, 1, 2), s=(0, 1, 1), t=(1, 1, 0)),
            Triangle((0, 2, 3), s=(0, 1, 0), t=(1, 0, 0)),
        ],
        groups=[Group("quad", [0, 1], material_index=0)],
        materials=[Material("red", diffuse=(1.0, 0.0, 0.0, 1.0))],
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def box_spec(size: float = 2.0) -> Ms3dSpec:
    """A closed box with per-face normals, a smoothing group per face pair and two groups (top half / bottom half)."""
    h = size / 2
    corners = [(x, y, z) for x in (-h, h) for y in (-h, h) for z in (-h, h)]
    faces = [  # (quad corner indices CCW seen from outside, normal)
        ((0, 1, 3, 2), (-1, 0, 0)),
        ((4, 6, 7, 5), (1, 0, 0)),
        ((0, 4, 5, 1), (0, -1, 0)),
        ((2, 3, 7, 6), (0, 1, 0)),
        ((0, 2, 6, 4), (0, 0, -1)),
        ((1, 5, 7, 3), (0, 0, 1)),
    ]
    tris: list[Triangle] = []
    for f, (quad, n) in enumerate(faces):
        a, b, c, d = quad
        for tri in ((a, b, c), (a, c, d)):
            tris.append(
                Triangle(
                    tri,
                    normals=(n, n, n),
                    s=(0, 1, 1),
                    t=(0, 0, 1),
                    smoothing_group=f + 1,
                    group_index=0 if f < 3 else 1,
                )
            )
    return Ms3dSpec(
        vertices=[Vertex(c) for c in corners],
        triangles=tris,
        groups=[Group("low", list(range(0, 6)), 0), Group("high", list(range(6, 12)), 1)],
        materials=[Material("blue", diffuse=(0, 0, 1, 1)), Material("glass", transparency=0.5)],
    )
