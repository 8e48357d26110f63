"""Read an MS3D file into an :class:`Ms3dModel`.

The base data (header to joints) is mandatory and read strictly: anything missing there is a
:class:`FormatError` naming the block and offset. Everything after the joints is optional (notes §0.1):
a file that ends before or inside an extended block keeps what was read, with a warning.
"""

from __future__ import annotations

import os

import numpy as np

from ...access import read_file
from ..binary import Cursor, Truncated
from ..text import decode_text, fixed_string
from . import structs
from .model import Ms3dGroup, Ms3dJoint, Ms3dMaterial, Ms3dModel, Ms3dModelExtra, Ms3dVertexExtra

# Limits from the 1.8 spec; counts above them are read anyway (the stored width is 16 bits) but warned about.
MAX_GROUPS = 255
MAX_MATERIALS = 128
MAX_JOINTS = 128


def read_ms3d(path: str | os.PathLike[str]) -> Ms3dModel:
    """Read a file from disk. Raises :class:`FormatError` (with file, offset and reason) for unreadable input."""
    path = os.fspath(path)
    return read_ms3d_bytes(read_file(path), path)


def read_ms3d_bytes(data: bytes | bytearray | memoryview, path: str | None = None) -> Ms3dModel:
    cur = Cursor(data, path)
    version = _read_header(cur)
    vertices = _read_vertices(cur)
    triangles = _read_triangles(cur, len(vertices))
    groups = _read_groups(cur, len(triangles))
    materials = _read_materials(cur)
    with cur.section("keyframer data"):
        fps, current_time, total_frames = cur.unpack("ffi", "animation fps, current time and total frames")
    joints = _read_joints(cur)
    model = Ms3dModel(
        path=path,
        version=version,
        vertices=vertices,
        triangles=triangles,
        groups=groups,
        materials=materials,
        fps=float(fps),
        current_time=float(current_time),
        total_frames=int(total_frames),
        joints=joints,
    )
    _check_counts(model)
    _read_extended(cur, model)
    return model


def _read_header(cur: Cursor) -> int:
    with cur.section("header"):
        if cur.size < 14:
            raise cur.error(
                f"not a MilkShape 3D file: {cur.size} bytes is shorter than the 14-byte header "
                f"('{structs.MAGIC.decode()}' + version)",
                0,
            )
        magic = cur.bytes(10, "identifier")
        if magic != structs.MAGIC:
            raise cur.error(
                f"not a MilkShape 3D file: expected identifier '{structs.MAGIC.decode()}', found {magic!r}", 0
            )
        version = cur.i32("version")
        if version not in structs.SUPPORTED_VERSIONS:
            raise cur.error(f"unsupported MilkShape 3D version {version} (versions 3 and 4 are supported)", 10)
    return version


def _read_vertices(cur: Cursor) -> np.ndarray:
    with cur.section("vertices block"):
        count = cur.u16("vertex count")
        return cur.array(structs.VERTEX, count, "vertices")


def _read_triangles(cur: Cursor, num_vertices: int) -> np.ndarray:
    with cur.section("triangles block"):
        start = cur.pos + 2
        count = cur.u16("triangle count")
        triangles = cur.array(structs.TRIANGLE, count, "triangles")
        if count:
            bad = np.nonzero((triangles["indices"] >= num_vertices).any(axis=1))[0]
            if len(bad):
                first = int(bad[0])
                raise cur.error(
                    f"triangle {first} uses vertex {int(triangles['indices'][first].max())} "
                    f"but the file has {num_vertices} vertices",
                    start + first * structs.TRIANGLE.itemsize + 2,
                )
    return triangles


def _read_groups(cur: Cursor, num_triangles: int) -> list[Ms3dGroup]:
    groups = []
    with cur.section("groups block"):
        count = cur.u16("group count")
        for g in range(count):
            flags, raw_name, tri_count = cur.unpack(f"B{structs.NAME_SIZE}sH", f"group {g} header")
            where = cur.pos
            tris = cur.array(np.dtype("<u2"), tri_count, f"triangle indices of group {g}")
            (material_index,) = cur.unpack("b", f"material index of group {g}")
            if tri_count and int(tris.max()) >= num_triangles:
                raise cur.error(
                    f"group {g} uses triangle {int(tris.max())} but the file has {num_triangles} triangles", where
                )
            groups.append(Ms3dGroup(fixed_string(raw_name), flags, tris, material_index))
    return groups


def _read_materials(cur: Cursor) -> list[Ms3dMaterial]:
    with cur.section("materials block"):
        count = cur.u16("material count")
        records = cur.array(structs.MATERIAL, count, "materials")
    return [
        Ms3dMaterial(
            name=fixed_string(r["name"].tobytes()),
            ambient=r["ambient"].copy(),
            diffuse=r["diffuse"].copy(),
            specular=r["specular"].copy(),
            emissive=r["emissive"].copy(),
            shininess=float(r["shininess"]),
            transparency=float(r["transparency"]),
            mode=int(r["mode"]),
            texture=fixed_string(r["texture"].tobytes()),
            alphamap=fixed_string(r["alphamap"].tobytes()),
        )
        for r in records
    ]


def _read_joints(cur: Cursor) -> list[Ms3dJoint]:
    joints = []
    with cur.section("joints block"):
        count = cur.u16("joint count")
        for j in range(count):
            (head,) = cur.array(structs.JOINT_HEADER, 1, f"joint {j}")
            rot_keys = cur.array(structs.KEY, int(head["num_rot"]), f"rotation keys of joint {j}")
            pos_keys = cur.array(structs.KEY, int(head["num_pos"]), f"position keys of joint {j}")
            joints.append(
                Ms3dJoint(
                    name=fixed_string(head["name"].tobytes()),
                    parent_name=fixed_string(head["parent"].tobytes()),
                    flags=int(head["flags"]),
                    rotation=head["rotation"].copy(),
                    position=head["position"].copy(),
                    rotation_keys=rot_keys,
                    position_keys=pos_keys,
                )
            )
    return joints


def _check_counts(model: Ms3dModel) -> None:
    for what, count, limit in (
        ("groups", len(model.groups), MAX_GROUPS),
        ("materials", len(model.materials), MAX_MATERIALS),
        ("joints", len(model.joints), MAX_JOINTS),
    ):
        if count > limit:
            model.warnings.add(f"{count} {what} exceed MilkShape's limit of {limit}; reading them anyway")


# --- extended blocks (MilkShape 1.7/1.8): each optional, each stops reading cleanly at EOF ---------------------


def _read_extended(cur: Cursor, model: Ms3dModel) -> None:
    blocks = (
        ("comments", _read_comments),
        ("vertex extra", _read_vertex_extra),
        ("joint extra", _read_joint_extra),
        ("model extra", _read_model_extra),
    )
    for name, read in blocks:
        if cur.remaining == 0:
            return
        start = cur.pos
        try:
            with cur.section(f"{name} block"):
                sub_version = cur.i32("subVersion")
                if not read(cur, model, sub_version):
                    model.warnings.add(
                        f"unknown {name} subVersion {sub_version} at byte offset {start}; "
                        "the rest of the extended data was skipped"
                    )
                    return
        except Truncated as exc:
            model.warnings.add(f"{exc.reason} (at byte offset {exc.offset}); kept what was read before it")
            return
        model.extended_blocks.append(name)
    if cur.remaining:
        model.warnings.add(f"{cur.remaining} unknown bytes after the model extra block were ignored")


def _read_comment_text(cur: Cursor, what: str) -> str:
    length = cur.i32(f"length of {what}")
    if length < 0:
        raise Truncated(cur.path, cur.pos - 4, f"negative length {length} for {what}")
    return fixed_string(cur.bytes(length, what)) if length else ""


def _read_comments(cur: Cursor, model: Ms3dModel, sub_version: int) -> bool:
    if sub_version != 1:
        return False
    targets: tuple[tuple[str, list], ...] = (
        ("group", model.groups),
        ("material", model.materials),
        ("joint", model.joints),
    )
    for kind, items in targets:
        count = cur.i32(f"{kind} comment count")
        if count < 0 or count * 8 > cur.remaining:
            raise Truncated(cur.path, cur.pos - 4, f"{kind} comment count {count} does not fit in the file")
        for _ in range(count):
            index = cur.i32(f"{kind} comment index")
            text = _read_comment_text(cur, f"{kind} comment")
            if 0 <= index < len(items):
                items[index].comment = text
            else:
                model.warnings.add(f"comment for {kind} {index} ignored: the file has {len(items)} {kind}s")
    # The model comment has no index field (notes §1.2, settled by dwarf.ms3d).
    if cur.i32("model comment flag"):
        model.model_comment = _read_comment_text(cur, "model comment")
    return True


def _read_vertex_extra(cur: Cursor, model: Ms3dModel, sub_version: int) -> bool:
    dtype = structs.VERTEX_EXTRA.get(sub_version)
    if dtype is None:
        return False
    records = cur.array(dtype, len(model.vertices), "vertex extra records")
    names = dtype.names or ()
    model.vertex_extra = Ms3dVertexExtra(
        sub_version=sub_version,
        bone_ids=bone_indices(records["bone_ids"]),
        weights=records["weights"].copy(),
        extra=records["extra"].copy() if "extra" in names else None,
        extra2=records["extra2"].copy() if "extra2" in names else None,
    )
    return True


def _read_joint_extra(cur: Cursor, model: Ms3dModel, sub_version: int) -> bool:
    # 1.8.2's text claims subVersion 2, every real file writes 1; the layout is the same.
    if sub_version not in (1, 2):
        return False
    colors = cur.array(structs.JOINT_COLOR, len(model.joints), "joint colors")
    for joint, color in zip(model.joints, colors["color"], strict=False):
        joint.color = color.copy()
    return True


def _read_model_extra(cur: Cursor, model: Ms3dModel, sub_version: int) -> bool:
    if sub_version not in (1, 2):
        return False
    joint_size, transparency_mode, alpha_ref = cur.unpack("fif", "joint size, transparency mode and alpha ref")
    model.model_extra = Ms3dModelExtra(float(joint_size), int(transparency_mode), float(alpha_ref))
    return True


def bone_indices(raw: np.ndarray) -> np.ndarray:
    """Joint indices from stored bytes, read unsigned so rigs over 128 joints work; 255 (i.e. -1) means none."""
    out = np.asarray(raw, dtype=np.uint8).astype(np.int16)
    out[out == 255] = -1
    return out


__all__ = ["bone_indices", "decode_text", "read_ms3d", "read_ms3d_bytes"]
