"""Armatures from :class:`SkeletonData`, and skinning (vertex groups + Armature modifier) from :class:`SkinData`."""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

from ..scene.types import SkeletonData, SkinData
from .operator_call import operator_scope, run_operator
from .weights import fill_groups

MIN_BONE_LENGTH = 1e-4  # Blender deletes zero-length bones when leaving edit mode
# The bones' rest matrices (armature space, as Blender stores them) and names at import: an export tells a bone
# the user moved from one left as imported, and takes a moved bone's change to the file's own bone frame.
REST_PROPERTY = "io_ms3d_mdl_rest"
REST_BONES = "io_ms3d_mdl_rest_bones"  # (in the file's order since bones carry BONE_INDEX)
# Each bone's index in the file (and in REST_BONES): a custom property, which Blender keeps when the bone is renamed,
# so an export writes a renamed bone as the file's bone under its new name.
BONE_INDEX = "io_ms3d_mdl_index"


def _drawable_length(bone) -> float:
    """A length Blender keeps: edit bones are float32, so far from the origin a short bone's tail rounds onto its
    head and Blender deletes it; a millionth of the distance is always distinct."""
    return max(bone.length, MIN_BONE_LENGTH, float(np.abs(bone.matrix[:3, 3]).max()) * 2.0**-20)


def _mode_set(mode: str) -> None:
    """Until the import's operator ends, the new pose's matrices are not evaluated: nothing in the import reads
    them, so the switch skips ``bpy.ops``' view-layer updates."""
    if not run_operator("object.mode_set", mode=mode):
        raise RuntimeError(f"Blender could not switch the armature to {mode.lower()} mode")


def build_armature(
    context: bpy.types.Context, collection: bpy.types.Collection, skeleton: SkeletonData, name: str | None = None
) -> bpy.types.Object:
    """The armature object (named ``name``, else the skeleton's) with its bones, in ``collection``."""
    armature = bpy.data.armatures.new(skeleton.name)
    obj = bpy.data.objects.new(name or skeleton.name, armature)
    collection.objects.link(obj)
    armature.display_type = "STICK"
    obj.show_in_front = True

    # Bone rest matrices can only be written in edit mode, which needs the object active and visible.
    with operator_scope(obj, active=True):
        _mode_set("EDIT")
        try:
            names = _edit_bones(armature, skeleton)
        finally:
            _mode_set("OBJECT")

    for i, (data, name) in enumerate(zip(skeleton.bones, names, strict=True)):
        bone = armature.bones[name]
        bone[BONE_INDEX] = i
        for key, value in data.props.items():
            bone[key] = value
        if data.color is not None:
            bone.color.palette = "CUSTOM"
            bone.color.custom.normal = data.color
            bone.color.custom.select = tuple(min(1.0, c * 0.5 + 0.5) for c in data.color)
            bone.color.custom.active = (1.0, 1.0, 1.0)
    rest = np.empty(len(armature.bones) * 16, np.float32)
    armature.bones.foreach_get("matrix_local", rest)
    order = {b.name: k for k, b in enumerate(armature.bones)}  # (Blender lists bones parent by parent)
    armature[REST_PROPERTY] = rest.reshape(-1, 16)[[order[n] for n in names]].ravel().tolist()
    armature[REST_BONES] = names
    return obj


def imported_rest(armature: bpy.types.Armature) -> dict[str, np.ndarray]:
    """Each bone's rest matrix (armature space) as the import made it, by the bone's name at import."""
    names = [str(n) for n in armature.get(REST_BONES, [])]
    flat = np.asarray(armature.get(REST_PROPERTY, []), np.float64)
    if len(flat) != 16 * len(names):
        return {}
    # foreach_get gives each matrix column by column (Blender's column-major storage)
    return dict(zip(names, flat.reshape(-1, 4, 4).transpose(0, 2, 1), strict=True))


def _edit_bones(armature: bpy.types.Armature, skeleton: SkeletonData) -> list[str]:
    """Make the bones (in edit mode) and return the names Blender gave them. The scene layer already chose names
    Blender keeps; should one still differ, the skeleton takes Blender's, so curves and groups find the bone."""
    edit_bones = []
    for bone in skeleton.bones:
        eb = armature.edit_bones.new(bone.name)
        eb.head = (0.0, 0.0, 0.0)
        eb.tail = (0.0, _drawable_length(bone), 0.0)
        eb.matrix = Matrix(bone.matrix.tolist())
        if bone.parent >= 0:
            eb.parent = edit_bones[bone.parent]
        edit_bones.append(eb)
    names = [eb.name for eb in edit_bones]
    for bone, name in zip(skeleton.bones, names, strict=True):
        bone.name = name
    return names


def apply_skin(obj: bpy.types.Object, skin: SkinData, skeleton: SkeletonData, armature: bpy.types.Object) -> None:
    """One vertex group per bone the mesh uses (see :mod:`.weights`). Influences naming no bone of the skeleton are
    ignored; a vertex left without any stays unweighted."""
    fill_groups(obj, [bone.name for bone in skeleton.bones], skin.bone_indices, skin.weights)
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    obj.parent = armature
