"""What the real-Blender scripts report about a scene's skin weights, so the lane compares both imports (in the
background and in the window) with the wheel's figures in one form."""

from __future__ import annotations

import bpy


def weight_summary() -> list:
    """Meshes with vertex groups, their groups, weight entries, and the weights' sum (rounded to 1e-3)."""
    skinned = [o for o in bpy.data.objects if o.type == "MESH" and o.vertex_groups]
    entries = [g for o in skinned for v in o.data.vertices for g in v.groups]
    return [
        len(skinned),
        sum(len(o.vertex_groups) for o in skinned),
        len(entries),
        round(sum(g.weight for g in entries), 3),
    ]
