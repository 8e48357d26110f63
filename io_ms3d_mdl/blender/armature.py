"""Armatures from :class:`SkeletonData`, and skinning (vertex groups + Armature modifier) from :class:`SkinData`."""

from __future__ import annotations

import bpy
import numpy as np
from mathutils import Matrix

from ..scene.types import SkeletonData, SkinData

MIN_BONE_LENGTH = 1e-4  # Blender deletes zero-length bones when leaving edit mode


def build_armature(
    context: bpy.types.Context, collection: bpy.types.Collection, skeleton: SkeletonData
) -> bpy.types.Object:
    armature = bpy.data.armatures.new(skeleton.name)
    obj = bpy.data.objects.new(skeleton.name, armature)
    collection.objects.link(obj)
    armature.display_type = "STICK"
    obj.show_in_front = True

    # Bone rest matrices can only be written in edit mode, which needs the object active and visible.
    layer = context.view_layer
    previous = layer.objects.active
    layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        edit_bones = []
        for bone in skeleton.bones:
            eb = armature.edit_bones.new(bone.name)
            eb.head = (0.0, 0.0, 0.0)
            eb.tail = (0.0, max(bone.length, MIN_BONE_LENGTH), 0.0)
            eb.matrix = Matrix(bone.matrix.tolist())
            if bone.parent >= 0:
                eb.parent = edit_bones[bone.parent]
            edit_bones.append(eb)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        layer.objects.active = previous

    for data in skeleton.bones:
        bone = armature.bones[data.name]
        for key, value in data.props.items():
            bone[key] = value
        if data.color is not None:
            bone.color.palette = "CUSTOM"
            bone.color.custom.normal = data.color
            bone.color.custom.select = tuple(min(1.0, c * 0.5 + 0.5) for c in data.color)
            bone.color.custom.active = (1.0, 1.0, 1.0)
    return obj


def apply_skin(obj: bpy.types.Object, skin: SkinData, skeleton: SkeletonData, armature: bpy.types.Object) -> None:
    """One vertex group per bone the mesh uses, filled with one ``VertexGroup.add`` per distinct (bone, weight):
    MilkShape weights are whole percentages, so that is a handful of calls instead of one per vertex."""
    ids = skin.bone_indices.ravel().astype(np.int64)
    weights = skin.weights.ravel()
    vertices = np.repeat(np.arange(len(skin.bone_indices), dtype=np.int64), skin.bone_indices.shape[1])
    used = ids >= 0
    ids, weights, vertices = ids[used], weights[used], vertices[used]
    groups = {int(b): obj.vertex_groups.new(name=skeleton.bones[int(b)].name) for b in np.unique(ids)}
    order = np.lexsort((vertices, weights, ids))
    ids, weights, vertices = ids[order], weights[order], vertices[order]
    breaks = np.flatnonzero((ids[1:] != ids[:-1]) | (weights[1:] != weights[:-1])) + 1
    for start, end in zip(np.r_[0, breaks], np.r_[breaks, len(ids)], strict=True):
        groups[int(ids[start])].add(vertices[start:end].tolist(), float(weights[start]), "REPLACE")
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    obj.parent = armature
