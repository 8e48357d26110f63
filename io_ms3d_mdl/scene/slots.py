"""Blender's limit on material slots per object, applied to the scene description. No ``bpy``.

An object holds at most 32,767 material slots (``MAXMAT``). With one more, Blender cannot allocate the slot array,
and the next read of the mesh's materials crashes it. A file from a stranger can name that many materials for one
object (each Source mesh, each MilkShape group, has its own); the faces of the last ones then share one empty slot.
"""

from __future__ import annotations

import numpy as np

from .types import SceneData

MAX_MATERIAL_SLOTS = 32_767


def cap_material_slots(scene: SceneData) -> None:
    for obj in scene.objects:
        mesh = obj.mesh
        count = len(mesh.materials)
        if count <= MAX_MATERIAL_SLOTS:
            continue
        last = MAX_MATERIAL_SLOTS - 1
        mesh.materials = [*mesh.materials[:last], None]
        if mesh.material_refs is not None:
            mesh.material_refs = [*mesh.material_refs[:last], -1]  # shows no skin-table column
        if mesh.material_indices is not None:
            mesh.material_indices = np.minimum(mesh.material_indices, last).astype(np.int32)
        scene.warnings.add(
            f"'{obj.name}' uses {count:,} material slots, more than the {MAX_MATERIAL_SLOTS:,} Blender gives an "
            f"object; the faces of the last {count - last:,} share one empty slot"
        )
