"""Armatures from :class:`SkeletonData`, and skinning (vertex groups + Armature modifier) from :class:`SkinData`."""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

from ..scene.types import SkeletonData, SkinData

try:  # what bpy.ops calls, minus its view-layer updates (see _mode_set)
    from _bpy import ops as _ops

    _op_call = _ops.call
except (ImportError, AttributeError):  # pragma: no cover - every Blender from 2.80 to 5.0 has it
    _op_call = None

MIN_BONE_LENGTH = 1e-4  # Blender deletes zero-length bones when leaving edit mode


def _drawable_length(bone) -> float:
    """A length Blender keeps: edit bones are float32, so far from the origin a short bone's tail rounds onto its
    head and Blender deletes it; a millionth of the distance is always distinct."""
    return max(bone.length, MIN_BONE_LENGTH, float(np.abs(bone.matrix[:3, 3]).max()) * 2.0**-20)


def _mode_set(mode: str) -> None:
    """``bpy.ops.object.mode_set`` without the two view-layer updates Python's ``bpy.ops`` wraps around every call:
    they are 85 % of an edit-mode round trip (0.55 → 0.08 ms), and the import's own operator updates the view
    layer once when it ends (until then the new pose's matrices are not evaluated: nothing in the import reads
    them). Through ``bpy.ops`` should Blender ever drop its internal call."""
    if _op_call is None:
        bpy.ops.object.mode_set(mode=mode)
    elif "FINISHED" not in _op_call("object.mode_set", {"mode": mode}):
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
    layer = context.view_layer
    previous = layer.objects.active
    layer.objects.active = obj
    _mode_set("EDIT")
    try:
        names = _edit_bones(armature, skeleton)
    finally:
        try:
            _mode_set("OBJECT")
        finally:
            layer.objects.active = previous

    for data, name in zip(skeleton.bones, names, strict=True):
        bone = armature.bones[name]
        for key, value in data.props.items():
            bone[key] = value
        if data.color is not None:
            bone.color.palette = "CUSTOM"
            bone.color.custom.normal = data.color
            bone.color.custom.select = tuple(min(1.0, c * 0.5 + 0.5) for c in data.color)
            bone.color.custom.active = (1.0, 1.0, 1.0)
    return obj


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
    """One vertex group per bone the mesh uses, filled with one ``VertexGroup.add`` per distinct (bone, weight):
    MilkShape weights are whole percentages, so that is a handful of calls instead of one per vertex. Influences
    naming no bone of the skeleton are ignored; a vertex left without any stays unweighted."""
    ids = skin.bone_indices.ravel().astype(np.int64)
    weights = skin.weights.ravel()
    vertices = np.repeat(np.arange(len(skin.bone_indices), dtype=np.int64), skin.bone_indices.shape[1])
    used = (ids >= 0) & (ids < len(skeleton.bones))
    ids, weights, vertices = ids[used], weights[used], vertices[used]
    if len(ids):
        _fill_groups(obj, skeleton, ids, weights, vertices)
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    obj.parent = armature


def _fill_groups(
    obj: bpy.types.Object, skeleton: SkeletonData, ids: np.ndarray, weights: np.ndarray, vertices: np.ndarray
) -> None:
    """Groups in bone order, so each vertex lists its groups by bone. Every ``add`` costs about a microsecond of
    Blender's time: the runs are turned into plain lists in bulk first, so the loop adds little of its own (numpy
    scalars and per-run ``tolist`` cost more than the call)."""
    bones = np.unique(ids).tolist()
    made = [obj.vertex_groups.new(name=skeleton.bones[b].name) for b in bones]
    adds = {bone: group.add for bone, group in zip(bones, made, strict=True)}  # bound once: 12 % of each call
    order = np.lexsort((vertices, weights, ids))
    ids, weights, vertices = ids[order], weights[order], vertices[order]
    starts = np.flatnonzero(np.r_[True, (ids[1:] != ids[:-1]) | (weights[1:] != weights[:-1])])
    members = vertices.tolist()
    bounds = [*starts.tolist(), len(members)]
    run_adds = [adds[b] for b in ids[starts].tolist()]
    for add, weight, start, end in zip(run_adds, weights[starts].tolist(), bounds[:-1], bounds[1:], strict=True):
        add(members[start:end], weight, "REPLACE")
