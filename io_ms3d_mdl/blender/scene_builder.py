"""Turn a :class:`SceneData` into Blender objects inside one new collection."""

from __future__ import annotations

import bpy

from ..scene.types import SceneData
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
    return collection, objects
