"""Turn a :class:`SceneData` into Blender objects inside one new collection."""

from __future__ import annotations

import bpy

from ..scene.types import SceneData
from .animation import add_clip_markers, add_clip_strips, build_action, set_scene_timing
from .armature import apply_skin, build_armature
from .material import ImageLoader, build_material
from .mesh import build_mesh


def build_scene(context: bpy.types.Context, scene: SceneData) -> tuple[bpy.types.Collection, list[bpy.types.Object]]:
    collection = bpy.data.collections.new(scene.name)
    (context.collection or context.scene.collection).children.link(collection)
    for key, value in scene.props.items():
        collection[key] = value

    images = ImageLoader(scene.warnings)
    materials = [build_material(m, images) for m in scene.materials]
    objects = []
    for data in scene.objects:
        mesh = build_mesh(data.mesh)
        for slot in data.mesh.materials:
            mesh.materials.append(materials[slot] if slot is not None else None)
        obj = bpy.data.objects.new(data.name, mesh)
        for key, value in data.props.items():
            obj[key] = value
        collection.objects.link(obj)
        objects.append(obj)

    if scene.skeleton is not None:
        armature = build_armature(context, collection, scene.skeleton)
        for data, obj in zip(scene.objects, objects, strict=True):
            if data.skin is not None:
                apply_skin(obj, data.skin, scene.skeleton, armature)
        actions = [build_action(armature, a, scene.skeleton) for a in scene.actions]
        if actions and scene.clips:
            add_clip_strips(armature, actions[0], scene.clips)
        # Scene-wide settings last, so a failure above leaves the scene untouched.
        if scene.fps is not None and scene.frame_range is not None:
            set_scene_timing(context.scene, scene.fps, scene.frame_range)
        if actions:
            add_clip_markers(context.scene, scene.clips)
        objects.insert(0, armature)
    return collection, objects
