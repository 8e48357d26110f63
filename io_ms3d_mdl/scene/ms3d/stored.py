"""The ``ms3d_*`` custom properties an import keeps (and an export writes back), checked before they are used.

Anyone can set them to anything (in the properties panel, a script, a stranger's .blend): a string where a number
belongs, two numbers where a colour's four do, a number past the file's field. Each is checked against the field it
returns to, and a wrong one is an :class:`ExportError` naming its owner, the property and what it must be (not a
``ValueError`` or ``struct.error`` from deep in the writer). Values a file can really hold (NaN, infinities) pass:
they are written back as they were read. No ``bpy``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..types import SceneData
from .limits import ExportError

FLOAT32_MAX = float(np.finfo(np.float32).max)
INT32 = (-(2**31), 2**31 - 1)
BYTE = (0, 255)

# property: ("int", low, high) | ("float",) | ("str",) | ("floats", count)
_NUMBER = ("float",)
_TEXT = ("str",)
MODEL = {
    "ms3d_fps": _NUMBER,
    "ms3d_current_time": _NUMBER,
    "ms3d_total_frames": ("int", *INT32),
    "ms3d_vertex_extra": ("int", 0, 3),
    "ms3d_extended_blocks": ("int", 0, 4),
    "ms3d_model_comment": _TEXT,
    "ms3d_joint_size": _NUMBER,
    "ms3d_transparency_mode": ("int", *INT32),
    "ms3d_alpha_ref": _NUMBER,
}
OBJECT = {"ms3d_group_index": _NUMBER, "ms3d_group_flags": ("int", *BYTE), "ms3d_comment": _TEXT}
MATERIAL = {
    "ms3d_material_index": _NUMBER,
    "ms3d_ambient": ("floats", 4),
    "ms3d_diffuse": ("floats", 4),
    "ms3d_specular": ("floats", 4),
    "ms3d_emissive": ("floats", 4),
    "ms3d_shininess": _NUMBER,
    "ms3d_transparency": _NUMBER,
    "ms3d_mode": ("int", *BYTE),
    "ms3d_texture": _TEXT,
    "ms3d_alphamap": _TEXT,
    "ms3d_comment": _TEXT,
}
BONE = {
    "ms3d_name": _TEXT,
    "ms3d_missing_parent": _TEXT,
    "ms3d_flags": ("int", *BYTE),
    "ms3d_rotation": ("floats", 3),
    "ms3d_position": ("floats", 3),
    "ms3d_color": ("floats", 3),
    "ms3d_comment": _TEXT,
}


def check_stored(scene: SceneData) -> None:
    """Refuse the first stored value of the wrong kind, naming where it is."""
    _check(scene.props, MODEL, f"the model '{scene.name}' (its collection)")
    for obj in scene.objects:
        _check(obj.props, OBJECT, f"object '{obj.name}'")
    for mat in scene.materials:
        _check(mat.props, MATERIAL, f"material '{mat.name}'")
    for bone in scene.skeleton.bones if scene.skeleton is not None else ():
        _check(bone.props, BONE, f"bone '{bone.name}'")


def _check(props: dict, kinds: dict[str, tuple], owner: str) -> None:
    for key, kind in kinds.items():
        if key in props and not _fits(props[key], kind):
            raise ExportError(
                f"{owner}: its custom property '{key}' is {_shown(props[key])}; the export needs "
                f"{_wanted(kind)} there (correct it, or delete the property)"
            )


def _fits(value, kind: tuple) -> bool:
    if kind[0] == "str":
        return isinstance(value, str)
    if kind[0] == "int":
        return _is_number(value) and kind[1] <= value <= kind[2] and float(value).is_integer()
    if kind[0] == "float":
        return _is_float32(value)
    sequence = isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1)  # "floats"
    return sequence and len(value) == kind[1] and all(_is_float32(v) for v in value)


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, str)


def _is_float32(value) -> bool:
    """A number a 32-bit float field holds (NaN and infinities are numbers a file may really have)."""
    if not _is_number(value):
        return False
    return abs(value) <= FLOAT32_MAX or (isinstance(value, (float, np.floating)) and not math.isfinite(value))


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'…' if len(text) > 60 else ''}"


def _wanted(kind: tuple) -> str:
    if kind[0] == "str":
        return "text"
    if kind[0] == "int":
        return f"a whole number from {kind[1]:,} to {kind[2]:,}"
    if kind[0] == "float":
        return "a number (a 32-bit float)"
    return f"a list of {kind[1]} numbers"
