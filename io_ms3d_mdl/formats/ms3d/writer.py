"""Write an :class:`Ms3dModel` as a version 4 MilkShape 3D file, the exact inverse of :mod:`.reader`.

Records go out through the reader's own numpy dtypes (:mod:`.structs`), so a layout is defined once. The extended
blocks (comments, vertex extra, joint colours, model extra) are written as far as ``model.extended_blocks`` asks
(a file read with only some of them is written back with the same ones); each needs the ones before it. Names
that do not fit their fixed field are a :class:`ValueError` naming the item: the caller checks them first.
No ``bpy``.
"""

from __future__ import annotations

import struct

import numpy as np

from ..text import encode_text
from . import structs
from .model import Ms3dJoint, Ms3dModel

EXTENDED_BLOCKS = ("comments", "vertex extra", "joint extra", "model extra")


def fixed_field(text: str, size: int, what: str) -> bytes:
    """A ``char[size]`` field: the encoded text, zero-padded; exactly ``size`` bytes needs no terminator."""
    raw = encode_text(text)
    if len(raw) > size:
        raise ValueError(f"{what} is {len(raw)} bytes long; MilkShape 3D holds at most {size}")
    return raw.ljust(size, b"\0")


def write_ms3d_bytes(model: Ms3dModel) -> bytes:
    return b"".join(ms3d_chunks(model))


def ms3d_chunks(model: Ms3dModel) -> list[bytes | memoryview]:
    """The file's bytes in order, in pieces: the record arrays as views of their memory, not copies (a 64,800-triangle
    model's 4.5 MB of triangles would be copied twice, to bytes and into the joined file), for a writer that takes
    them one after another (:func:`..filesystem.replace_file.replace_file`)."""
    parts: list[bytes | memoryview] = [structs.MAGIC, struct.pack("<i", model.version)]
    parts += [struct.pack("<H", len(model.vertices)), _records(model.vertices, structs.VERTEX)]
    parts += [struct.pack("<H", len(model.triangles)), _records(model.triangles, structs.TRIANGLE)]
    parts.append(struct.pack("<H", len(model.groups)))
    for gi, group in enumerate(model.groups):
        tris = np.ascontiguousarray(group.triangle_indices, dtype="<u2")
        name = fixed_field(group.name, structs.NAME_SIZE, f"group {gi} name '{group.name}'")
        parts += [struct.pack("<B", group.flags & 0xFF), name, struct.pack("<H", len(tris)), _view(tris)]
        parts.append(struct.pack("<b", group.material_index))
    parts += [struct.pack("<H", len(model.materials)), _materials(model)]
    parts.append(struct.pack("<ffi", model.fps, model.current_time, model.total_frames))
    parts.append(struct.pack("<H", len(model.joints)))
    parts += [_joint(j, i) for i, j in enumerate(model.joints)]
    wanted = [b for b in EXTENDED_BLOCKS if b in model.extended_blocks]
    count = max((EXTENDED_BLOCKS.index(b) + 1 for b in wanted), default=0)
    writers = (_comments, _vertex_extra, _joint_extra, _model_extra)
    for write in writers[:count]:
        parts += write(model)
    return parts


def _records(array: np.ndarray, dtype: np.dtype) -> memoryview:
    if array.dtype != dtype:
        raise TypeError(f"records must have the dtype {dtype}, not {array.dtype}")
    return _view(array)


def _view(array: np.ndarray) -> memoryview:
    """The array's bytes, without a copy when it is contiguous already."""
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _materials(model: Ms3dModel) -> bytes:
    records = np.zeros(len(model.materials), dtype=structs.MATERIAL)
    for mi, mat in enumerate(model.materials):
        r = records[mi]
        r["name"] = np.void(fixed_field(mat.name, structs.NAME_SIZE, f"material {mi} name '{mat.name}'"))
        for key in ("ambient", "diffuse", "specular", "emissive"):
            r[key] = getattr(mat, key)
        r["shininess"], r["transparency"], r["mode"] = mat.shininess, mat.transparency, mat.mode & 0xFF
        r["texture"] = np.void(fixed_field(mat.texture, structs.PATH_SIZE, f"material '{mat.name}' texture path"))
        r["alphamap"] = np.void(fixed_field(mat.alphamap, structs.PATH_SIZE, f"material '{mat.name}' alpha map"))
    return records.tobytes()


def _joint(joint: Ms3dJoint, index: int) -> bytes:
    head = np.zeros(1, dtype=structs.JOINT_HEADER)
    head["flags"] = joint.flags & 0xFF
    head["name"] = np.void(fixed_field(joint.name, structs.NAME_SIZE, f"joint {index} name '{joint.name}'"))
    head["parent"] = np.void(fixed_field(joint.parent_name, structs.NAME_SIZE, f"parent of joint '{joint.name}'"))
    head["rotation"], head["position"] = joint.rotation, joint.position
    rot = _keys(joint.rotation_keys)
    pos = _keys(joint.position_keys)
    if max(len(rot), len(pos)) > 0xFFFF:
        raise ValueError(f"joint '{joint.name}' has more than 65,535 keys in one channel")
    head["num_rot"], head["num_pos"] = len(rot), len(pos)
    return head.tobytes() + rot.tobytes() + pos.tobytes()


def _keys(keys: np.ndarray) -> np.ndarray:
    if keys.dtype == structs.KEY:
        return np.ascontiguousarray(keys)
    return np.ascontiguousarray(keys, dtype=structs.KEY)


def _comment_list(items: list) -> bytes:
    out = []
    noted = [(i, item.comment) for i, item in enumerate(items) if item.comment is not None]
    for index, text in noted:
        raw = encode_text(text)
        out += [struct.pack("<ii", index, len(raw)), raw]
    return struct.pack("<i", len(noted)) + b"".join(out)


def _comments(model: Ms3dModel) -> list[bytes | memoryview]:
    parts: list[bytes | memoryview] = [struct.pack("<i", 1)]
    parts += [_comment_list(model.groups), _comment_list(model.materials), _comment_list(model.joints)]
    if model.model_comment is None:
        parts.append(struct.pack("<i", 0))
    else:
        raw = encode_text(model.model_comment)  # no index field (notes §1.2)
        parts += [struct.pack("<ii", 1, len(raw)), raw]
    return parts


def _vertex_extra(model: Ms3dModel) -> list[bytes | memoryview]:
    extra = model.vertex_extra
    count = len(model.vertices)
    sub_version = extra.sub_version if extra is not None else 2
    records = np.zeros(count, dtype=structs.VERTEX_EXTRA[sub_version])
    if extra is None:
        records["bone_ids"] = 255
    else:
        records["bone_ids"] = np.asarray(extra.bone_ids).astype(np.int64) & 0xFF  # -1 is stored as 255
        records["weights"] = extra.weights
        names = records.dtype.names or ()
        if "extra" in names and extra.extra is not None:
            records["extra"] = extra.extra
        if "extra2" in names and extra.extra2 is not None:
            records["extra2"] = extra.extra2
    return [struct.pack("<i", sub_version), _view(records)]


def _joint_extra(model: Ms3dModel) -> list[bytes | memoryview]:
    colors = np.zeros(len(model.joints), dtype=structs.JOINT_COLOR)
    for i, joint in enumerate(model.joints):
        if joint.color is not None:
            colors[i]["color"] = joint.color
    return [struct.pack("<i", 1), colors.tobytes()]


def _model_extra(model: Ms3dModel) -> list[bytes | memoryview]:
    extra = model.model_extra
    if extra is None:
        return [struct.pack("<ifif", 1, 1.0, 0, 0.5)]
    return [struct.pack("<ifif", 1, extra.joint_size, extra.transparency_mode, extra.alpha_ref)]
