"""What a Source and a GoldSrc import share around their own assembly: the properties a later animation build
reads, and the finishing steps every studio model's scene gets."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .axes import axis_conversion_matrix
from .finite import replace_non_finite
from .slots import cap_material_slots
from .types import SceneData

if TYPE_CHECKING:
    from .source.convert import SourceOptions


def rebuild_props(path: str | None, options: SourceOptions, scene: SceneData) -> dict:
    """What building one more animation later needs (``scene.load.load_source_animation``)."""
    if not scene.animations or not path:
        return {}
    return {
        "source_path": os.path.abspath(path),
        "source_scale": options.scale,
        "source_bone_orientation": options.bone_orientation,
        "source_fps": scene.fps or next((a.fps for a in scene.animations if a.fps > 0), 30.0),
    }


def finish_scene(scene: SceneData, options: SourceOptions) -> None:
    """Turned to the asked axes, its degenerate triangles counted, its material slots capped, and any NaN or
    infinity replaced (and reported)."""
    if (options.axis_forward, options.axis_up) != ("Y", "Z"):
        scene.root_matrix = axis_conversion_matrix(options.axis_forward, options.axis_up)
    if scene.degenerate_triangles:
        scene.props["source_degenerate_triangles"] = scene.degenerate_triangles
    cap_material_slots(scene)
    replace_non_finite(scene)
