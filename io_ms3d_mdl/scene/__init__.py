"""The neutral scene description between format readers and Blender builders. No ``bpy``.

Readers' records are converted here into what Blender needs (compacted vertices, per-corner data, axis
conversion and scale already applied, materials as plain values), so builders only copy arrays.
"""

from .types import (
    ActionData,
    BoneChannels,
    BoneData,
    ClipData,
    CollectionData,
    EmptyData,
    ImageRef,
    MaterialData,
    MeshData,
    ObjectData,
    SceneData,
    SkeletonData,
    SkinData,
)

__all__ = [
    "ActionData",
    "BoneChannels",
    "BoneData",
    "ClipData",
    "CollectionData",
    "EmptyData",
    "ImageRef",
    "MaterialData",
    "MeshData",
    "ObjectData",
    "SceneData",
    "SkeletonData",
    "SkinData",
]
